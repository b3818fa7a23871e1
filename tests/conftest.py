"""Shared fixtures: tiny encoder-decoders of three families, built from configs (no Hub access here)."""

import pytest
import torch
from transformers import (
    BartConfig,
    BartForConditionalGeneration,
    MarianConfig,
    MarianMTModel,
    T5Config,
    T5ForConditionalGeneration,
)

VOCAB = 64
UNK = 3


def tiny_base(family: str, vocab_size: int = VOCAB, seed: int = 0):
    """A small randomly initialised base. Larger init std makes its logits decisive, as a trained model's are."""
    torch.manual_seed(seed)
    if family == "bart":
        config = BartConfig(
            vocab_size=vocab_size, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
            decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=128,
            init_std=0.2, pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2,
            forced_eos_token_id=None,
        )
        model = BartForConditionalGeneration(config)
    elif family == "marian":
        config = MarianConfig(
            vocab_size=vocab_size, decoder_vocab_size=vocab_size, d_model=32, encoder_layers=2, decoder_layers=2,
            encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64,
            max_position_embeddings=128, init_std=0.2, pad_token_id=1, eos_token_id=2, decoder_start_token_id=1,
        )
        model = MarianMTModel(config)
    elif family == "t5":
        config = T5Config(
            vocab_size=vocab_size, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2, num_heads=4,
            initializer_factor=8.0, pad_token_id=0, eos_token_id=1, decoder_start_token_id=0,
        )
        model = T5ForConditionalGeneration(config)
    else:
        raise ValueError(family)
    model.generation_config.update(num_beams=1, max_length=20, bad_words_ids=None, forced_eos_token_id=None)
    return model.eval()


@pytest.fixture(params=["bart", "marian", "t5"])
def family(request):
    return request.param


def source_batch(vocab_size: int = VOCAB, unk: int = UNK):
    """Three sources with 0, 1 and 2 distinct out-of-vocabulary words (one of them twice); row 2 is padded.

    Returns input_ids, attention_mask, extended_input_ids, each (3, 8).
    """
    input_ids = torch.tensor(
        [
            [10, 11, 12, 13, 14, 15, 16, 2],
            [20, 21, unk, 22, 23, 24, 25, 2],
            [30, unk, 31, unk, 32, unk, 2, 1],
        ]
    )
    extended = input_ids.clone()
    extended[1, 2] = vocab_size
    extended[2, 1] = vocab_size
    extended[2, 3] = vocab_size + 1
    extended[2, 5] = vocab_size  # the same word again: same slot
    attention_mask = torch.ones_like(input_ids)
    attention_mask[2, 7] = 0
    return input_ids, attention_mask, extended
