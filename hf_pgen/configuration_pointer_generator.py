"""Configuration of the pointer-generator: a base encoder-decoder's config plus the copy settings."""

from __future__ import annotations

from typing import Literal

from transformers import AutoConfig, PreTrainedConfig
from transformers.configuration_utils import SubConfigSpec

POINTER_SOURCES = ("dedicated", "cross_attention")
_SPECIAL_TOKEN_FIELDS = ("pad_token_id", "bos_token_id", "eos_token_id", "decoder_start_token_id", "unk_token_id")


class PointerGeneratorConfig(PreTrainedConfig):
    r"""
    Configuration of a [`PointerGeneratorForConditionalGeneration`]: any encoder-decoder of 🤗 Transformers (BART,
    Marian, T5, mBART, Pegasus, M2M100, ...) plus a copy switch and a pointer distribution over the source
    (See et al. 2017).

    Args:
        base_config (`PreTrainedConfig` or `dict`):
            Config of the wrapped encoder-decoder (its `is_encoder_decoder` must be true).
        pointer (`"dedicated"` or `"cross_attention"`, defaults to `"dedicated"`):
            Where the pointer distribution comes from. `"dedicated"`: a new single-head attention from the final
            decoder state over the encoder output; the base keeps SDPA/flash attention. `"cross_attention"`: the mean
            of the chosen heads of one decoder layer's cross-attention; no new attention parameters, but the base
            must run eager attention to expose its weights.
        pointer_attention_dim (`int`, *optional*):
            Width of the dedicated pointer's query/key projection. Defaults to the decoder's hidden size.
        pointer_layer (`int`, defaults to -1):
            With `pointer="cross_attention"`: the decoder layer whose cross-attention is used (negative counts from
            the end).
        pointer_heads (`list[int]`, *optional*):
            With `pointer="cross_attention"`: the heads to average. Defaults to all heads.
        coverage (`bool`, defaults to `False`):
            Coverage (See et al. 2017): the sum of earlier pointer attentions enters the pointer scores and the loss
            adds `coverage_weight * sum_i min(a_i^t, c_i^t)` per target token.
        coverage_weight (`float`, defaults to 1.0):
            Weight of the coverage loss.
        force_p_gen (`float`, *optional*):
            Fix p_gen instead of predicting it: 1.0 never copies (the base model's distribution), 0.0 always copies.
        p_gen_bias_init (`float`, defaults to 10.0):
            Initial bias of the copy switch. The switch's weights start at zero, so p_gen starts at
            `sigmoid(p_gen_bias_init)`: with the default, 0.99995, a freshly wrapped base generates what it generated
            before; the switch still learns fast because copying an out-of-vocabulary word gives it a gradient of
            order one.
        unk_token_id (`int`, *optional*):
            The unknown token. An extended (copied) id fed back to the decoder is embedded as this token. Defaults to
            the base config's `unk_token_id`.
    """

    model_type = "pointer_generator"
    sub_configs_defaults = {"base_config": SubConfigSpec(config_class=AutoConfig, model_type="bart")}

    base_config: PreTrainedConfig | dict | None = None
    pointer: Literal["dedicated", "cross_attention"] = "dedicated"
    pointer_attention_dim: int | None = None
    pointer_layer: int = -1
    pointer_heads: list[int] | None = None
    coverage: bool = False
    coverage_weight: float = 1.0
    force_p_gen: float | None = None
    p_gen_bias_init: float = 10.0
    is_encoder_decoder: bool = True
    pad_token_id: int | None = None
    bos_token_id: int | None = None
    eos_token_id: int | list[int] | None = None
    decoder_start_token_id: int | None = None
    unk_token_id: int | None = None
    tie_word_embeddings: bool = False

    def __post_init__(self, **kwargs):
        super().__post_init__(**kwargs)
        if not getattr(self.base_config, "is_encoder_decoder", False):
            raise ValueError(
                f"The base model must be an encoder-decoder, but its config ({type(self.base_config).__name__}) has "
                "is_encoder_decoder=False. Wrap a sequence-to-sequence model such as BART, Marian, T5, mBART, Pegasus "
                "or M2M100."
            )
        if self.pointer not in POINTER_SOURCES:
            raise ValueError(f"pointer={self.pointer!r} is not one of {POINTER_SOURCES}.")
        if self.force_p_gen is not None and not 0.0 <= self.force_p_gen <= 1.0:
            raise ValueError(f"force_p_gen={self.force_p_gen} must lie in [0, 1] (1.0 = never copy, 0.0 = always copy).")
        if self.coverage_weight < 0:
            raise ValueError(f"coverage_weight={self.coverage_weight} must be >= 0.")
        # generate() and the Trainer read special tokens from the top-level config: mirror the base's.
        for name in _SPECIAL_TOKEN_FIELDS:
            if getattr(self, name) is None:
                setattr(self, name, getattr(self.base_config, name, None))

    @property
    def vocab_size(self) -> int:
        """Width of the base's output layer; extended (copy-only) ids start here."""
        return self.base_config.vocab_size

    @property
    def hidden_size(self) -> int:
        return self.base_config.hidden_size

    @property
    def num_hidden_layers(self) -> int:
        return self.base_config.num_hidden_layers


__all__ = ["PointerGeneratorConfig"]
