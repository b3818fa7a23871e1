"""What the benchmarks run on: model sizes and configs, synthetic sources and targets, the models, and a real
tokenizer with real messages for the options that need text (protected spans).

Synthetic sources (`make_source`) carry 5% out-of-vocabulary words: the unknown token in `input_ids`, `vocab + k`
(k < 10) in `extended_input_ids`. The base and the pointer-generator get the same config, the same initial weights
(same seed) and the same inputs.
"""

from __future__ import annotations

import torch
from transformers import (
    AutoModelForSeq2SeqLM,
    BartConfig,
    MarianConfig,
    PretrainedConfig,
    PreTrainedModel,
    PreTrainedTokenizerBase,
    T5Config,
)

from hf_pgen import PointerGeneratorForConditionalGeneration, find_protected_spans
from hf_pgen.mixture_pointer_generator import count_oov_slots

__all__ = [
    "CHECKPOINTS",
    "SIZES",
    "UNK",
    "bart_config",
    "build",
    "checkpoint_config",
    "make_labels",
    "make_source",
    "model_config",
    "mixture_inputs",
    "protection_workload",
]

SIZES = {
    # name: (d_model, encoder layers = decoder layers, heads, ffn)
    "small": (256, 3, 4, 1024),
    "medium": (512, 6, 8, 2048),
}
# The checkpoints users wrap, as shapes (`checkpoint_config`): where the generation and training targets apply.
CHECKPOINTS = ("opus-mt", "t5-small", "bart-base")
UNK = 3


def bart_config(size: str, vocab: int, max_len: int, **special_ids: int) -> BartConfig:
    """A randomly initialised BART shape of `SIZES[size]` (unknown token `UNK` unless `special_ids` say otherwise)."""
    d_model, layers, heads, ffn = SIZES[size]
    return BartConfig(
        vocab_size=vocab,
        d_model=d_model,
        encoder_layers=layers,
        decoder_layers=layers,
        encoder_attention_heads=heads,
        decoder_attention_heads=heads,
        encoder_ffn_dim=ffn,
        decoder_ffn_dim=ffn,
        max_position_embeddings=max(512, max_len + 8),
        **({"unk_token_id": UNK} | special_ids),
    )


def checkpoint_config(name: str, max_len: int) -> PretrainedConfig:
    """The shape of a checkpoint users wrap (`CHECKPOINTS`), randomly initialised, built from a config (no download):

    * `opus-mt`: Helsinki-NLP/opus-mt-en-de's Marian (d_model 512, 6 + 6 layers, 8 heads, ffn 2048, vocabulary 58,101,
      tied embeddings, static positions);
    * `t5-small`: d_model 512, 6 + 6 layers, 8 heads, ffn 2048, relative positions, vocabulary 32,128;
    * `bart-base`: d_model 768, 6 + 6 layers, 12 heads, ffn 3072, vocabulary 50,265.

    The unknown token is `UNK` in all three (the synthetic sources put it at their OOV words).
    """
    if name == "opus-mt":
        return MarianConfig(
            vocab_size=58101,
            d_model=512,
            encoder_layers=6,
            decoder_layers=6,
            encoder_attention_heads=8,
            decoder_attention_heads=8,
            encoder_ffn_dim=2048,
            decoder_ffn_dim=2048,
            scale_embedding=True,
            max_position_embeddings=max(512, max_len + 8),
            pad_token_id=58100,
            decoder_start_token_id=58100,
            eos_token_id=0,
            unk_token_id=UNK,
        )
    if name == "t5-small":
        return T5Config(
            vocab_size=32128,
            d_model=512,
            d_kv=64,
            d_ff=2048,
            num_layers=6,
            num_heads=8,
            pad_token_id=0,
            eos_token_id=1,
            decoder_start_token_id=0,
            unk_token_id=UNK,
        )
    if name == "bart-base":
        return BartConfig(
            vocab_size=50265,
            d_model=768,
            encoder_layers=6,
            decoder_layers=6,
            encoder_attention_heads=12,
            decoder_attention_heads=12,
            encoder_ffn_dim=3072,
            decoder_ffn_dim=3072,
            max_position_embeddings=max(1024, max_len + 8),
            unk_token_id=UNK,
        )
    raise ValueError(f"unknown checkpoint shape {name!r}; choose from {', '.join(CHECKPOINTS)}")


def model_config(size: str, vocab: int, max_len: int) -> PretrainedConfig:
    """A BART shape of `SIZES[size]` over `vocab` words, or a checkpoint's shape (`CHECKPOINTS`, its own vocabulary)."""
    return bart_config(size, vocab, max_len) if size in SIZES else checkpoint_config(size, max_len)


def build(
    kind: str,
    config: PretrainedConfig,
    device: str,
    seed: int = 0,
    wrapper: type = PointerGeneratorForConditionalGeneration,
    **copy_settings,
) -> PreTrainedModel:
    """`"base"`: the config's plain model (BART, Marian, T5); `"pg"`: the pointer-generator around it (default copy
    settings, or `copy_settings`). Same seed, same base weights. `wrapper`: the copy model's class (`benchmarks.ab_step`
    passes another revision's)."""
    torch.manual_seed(seed)
    model = AutoModelForSeq2SeqLM.from_config(config)
    if kind == "pg":
        model = wrapper.from_base(model, unk_token_id=config.unk_token_id, **copy_settings)
    return model.to(device)


def make_source(
    batch: int, length: int, vocab: int, seed: int, oov_rate: float = 0.05, max_oovs: int = 10
) -> tuple[torch.Tensor, torch.Tensor]:
    """Source ids in the base vocabulary (unk at OOV words) and the extended ids (OOV words -> vocab + k): (B, S)."""
    g = torch.Generator().manual_seed(seed)
    input_ids = torch.randint(4, vocab, (batch, length), generator=g)
    is_oov = torch.rand(batch, length, generator=g) < oov_rate
    slots = torch.randint(0, max_oovs, (batch, length), generator=g)
    extended = torch.where(is_oov, vocab + slots, input_ids)
    input_ids = input_ids.masked_fill(is_oov, UNK)
    return input_ids, extended


def make_labels(extended: torch.Tensor, length: int, vocab: int, seed: int, copy_rate: float = 0.1) -> torch.Tensor:
    """Targets in the extended vocabulary (B, T): mostly vocabulary words, some copied source words (OOVs too)."""
    g = torch.Generator().manual_seed(seed + 1)
    batch = extended.shape[0]
    labels = torch.randint(4, vocab, (batch, length), generator=g)
    copy = torch.rand(batch, length, generator=g) < copy_rate
    picks = torch.randint(0, extended.shape[1], (batch, length), generator=g)
    return torch.where(copy, extended.gather(1, picks), labels)


def mixture_inputs(
    batch: int,
    target_len: int,
    device: str,
    source_len: int = 256,
    vocab: int = 32768,
    num_oov_slots: int = 10,
    seed: int = 3,
):
    """Random inputs of the mixture functions: vocab_logits (B, T, V) (3 x randn), pointer_attention (B, T, S)
    (softmax of 2 x randn), extended_input_ids (B, S) (5% OOV words over `num_oov_slots` slots), switch_logit (B, T),
    labels (B, T), and the number of slots the batch spans."""
    g = torch.Generator().manual_seed(seed)
    _, extended = make_source(batch, source_len, vocab, seed=seed, max_oovs=num_oov_slots)
    labels = make_labels(extended, target_len, vocab, seed=seed)
    vocab_logits = torch.randn(batch, target_len, vocab, generator=g) * 3
    pointer_attention = torch.randn(batch, target_len, source_len, generator=g).mul(2).softmax(-1)
    switch_logit = torch.randn(batch, target_len, generator=g)
    tensors = [t.to(device) for t in (vocab_logits, pointer_attention, extended, switch_logit, labels)]
    return (*tensors, count_oov_slots(tensors[2], vocab))


def protection_workload(
    size: str, vocab_size: int, min_tokens: int, max_tokens: int, device: str
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase, list[str]]:
    """The main job's tokenizer (word level, `vocab_size` words, trained on the embedded corpus' training split, en
    and de), an untrained pointer-generator of `SIZES[size]` over it, and the test split's English messages that hold
    a placeholder and are `min_tokens` to `max_tokens` tokens long, in corpus order."""
    from hf_pgen.corpus import load_en_de_messages
    from hf_pgen.tokenizer_training import train_shared_tokenizer

    train = load_en_de_messages("train")["translation"]
    tokenizer = train_shared_tokenizer([p["en"] for p in train] + [p["de"] for p in train], "wordlevel", vocab_size)
    texts = [
        p["en"]
        for p in load_en_de_messages("test")["translation"]
        if find_protected_spans(p["en"], "placeholders")
        and min_tokens <= len(tokenizer(p["en"])["input_ids"]) <= max_tokens
    ]
    config = bart_config(
        size,
        len(tokenizer),
        max_tokens,
        unk_token_id=tokenizer.unk_token_id,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=tokenizer.bos_token_id,
        decoder_start_token_id=tokenizer.eos_token_id,
        forced_eos_token_id=None,
    )
    return build("pg", config, device).eval(), tokenizer, texts
