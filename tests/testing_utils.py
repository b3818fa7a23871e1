"""Shared test helpers (fixtures live in conftest.py): tiny encoder-decoders built from configs (no Hub access),
a batch with out-of-vocabulary slots, corpus text, a word-level tokenizer, a Python without hf_pgen, and the table of
model cases (family x pointer x coverage) that the shared model tests run over, as PEFT's TEST_CASES."""

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

FAMILIES = ("bart", "marian", "t5", "mbart", "pegasus", "m2m_100")
POINTERS = ("dedicated", "cross_attention")
# Every base family with each pointer, with and without coverage: the cases the shared model tests run over.
TEST_CASES = [
    pytest.param((family, pointer, coverage), id=f"{family}-{pointer}{'-coverage' if coverage else ''}")
    for family in FAMILIES
    for pointer in POINTERS
    for coverage in (False, True)
]


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
    elif family in ("mbart", "pegasus", "m2m_100"):
        from transformers import AutoConfig, AutoModelForSeq2SeqLM

        config = AutoConfig.for_model(
            family, vocab_size=vocab_size, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
            decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=128,
            init_std=0.2, pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2,
        )
        model = AutoModelForSeq2SeqLM.from_config(config)
    else:
        raise ValueError(family)
    model.generation_config.update(num_beams=1, max_length=20, bad_words_ids=None, forced_eos_token_id=None)
    return model.eval()




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



def corpus_texts(split: str, min_words: int = 3, max_words: int = 8, limit: int | None = None) -> list[str]:
    """English messages of the embedded corpus (real text from software catalogues), short ones only."""
    from hf_pgen.corpus import load_en_de_messages

    texts = []
    for record in load_en_de_messages(split):
        text = " ".join(record["translation"]["en"].split())
        if min_words <= len(text.split()) <= max_words and text not in texts:
            texts.append(text)
        if limit and len(texts) >= limit:
            break
    return texts


def corpus_pairs(split: str, limit: int | None = None) -> list[tuple[str, str]]:
    """(English, German) message pairs of the embedded corpus, as they are."""
    from hf_pgen.corpus import load_en_de_messages

    pairs = []
    for record in load_en_de_messages(split):
        pairs.append((record["translation"]["en"], record["translation"]["de"]))
        if limit and len(pairs) >= limit:
            break
    return pairs


def word_level_tokenizer(texts: list[str], vocab_size: int):
    """The project's one tokenizer builder (`hf_pgen.tokenizer_training.train_shared_tokenizer`), word-level: what the
    main job and `run_translation --train_tokenizer` use. Special ids: <pad>=0, </s>=1, <unk>=2, <s>=3."""
    from hf_pgen.tokenizer_training import train_shared_tokenizer

    return train_shared_tokenizer(texts, "wordlevel", vocab_size)


# -- a Python where hf_pgen cannot be imported ------------------------------------------------------------------------

_BLOCK_HF_PGEN = """
import sys
class _NoHfPgen:
    def find_spec(self, name, path=None, target=None):
        if name == "hf_pgen" or name.startswith("hf_pgen."):
            raise ImportError("hf_pgen is not installed in this Python")
sys.meta_path.insert(0, _NoHfPgen())
"""


def run_without_hf_pgen(code: str, env: dict | None = None, timeout: int = 300) -> str:
    """Run `code` in a fresh interpreter in which `import hf_pgen` fails; returns stdout, raises on failure."""
    import os
    import subprocess
    import sys
    import tempfile

    check = "\nassert not any(m == 'hf_pgen' or m.startswith('hf_pgen.') for m in sys.modules), 'hf_pgen was imported'\n"
    full_env = {**os.environ, "PYTHONPATH": "", **(env or {})}
    result = subprocess.run(
        [sys.executable, "-c", _BLOCK_HF_PGEN + code + check], capture_output=True, text=True, timeout=timeout,
        env=full_env, cwd=tempfile.gettempdir(),
    )
    if result.returncode != 0:
        raise AssertionError(f"subprocess failed ({result.returncode}):\n{result.stderr[-4000:]}")
    return result.stdout
