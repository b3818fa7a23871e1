"""Configuration of the pointer-generator: a base encoder-decoder's config plus the copy settings, and the position
limits every part of hf_pgen reads (`max_source_positions`, `max_target_positions`).

This file is saved next to the model as remote code (see `hf_pgen.SAVED_WITH_MODEL`): it imports only the standard
library, `transformers` and its hf_pgen siblings (relative imports).
"""

from __future__ import annotations

import sys
from typing import Any, Literal

from transformers import AutoConfig, PreTrainedConfig
from transformers.configuration_utils import SubConfigSpec

from .glossary import check_annotation

POINTER_SOURCES = ("dedicated", "cross_attention")
_SPECIAL_TOKEN_FIELDS = ("pad_token_id", "bos_token_id", "eos_token_id", "decoder_start_token_id", "unk_token_id")

# What `config.custom_pipelines` holds in a saved folder: Transformers 5 removed these three tasks, and a folder's
# custom pipelines bring them back (`pipeline("translation", model=folder, trust_remote_code=True)`). The impl is
# resolved inside the folder's own copy of the pipeline module. Written at save time, never by a constructor.
CUSTOM_PIPELINES = {
    task: {
        "impl": "pipeline_pointer_generator.PointerGeneratorText2TextPipeline",
        "pt": ["AutoModelForSeq2SeqLM"],
        "tf": [],
        "type": "text",
    }
    for task in ("translation", "summarization", "text2text-generation")
}


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
            Coverage (See et al. 2017): the loss adds `coverage_weight * sum_i min(a_i^t, c_i^t)` per target token,
            c^t being the sum of earlier pointer attentions. With the dedicated pointer c^t also enters the pointer
            scores; with `pointer="cross_attention"` the base's attention scores cannot take it, so it is a loss term
            only.
        coverage_weight (`float`, defaults to 1.0):
            Weight of the coverage loss.
        selective_read (`bool`, defaults to `False`):
            CopyNet's selective read (Gu et al. 2016): the decoder input of each step also carries the mean encoder
            state of the source positions that hold the token fed at that step (through a learned projection). After
            copying, the decoder then knows which word it copied, which an out-of-vocabulary word fed back as the bare
            unknown token cannot tell it, and where in the source that word stands. The projection starts at zero, so
            a freshly wrapped base generates exactly as without it.
        copy_next (`bool`, defaults to `False`):
            Sequential copying (after Zhou et al. 2018): where the token fed at a step stands at source position i, the
            pointer's score of position i + 1 gets a learned, state-dependent bonus, and the copy switch sees the
            pointer's mass on such continuing positions. A name or identifier split into several pieces is then copied
            as one run rather than piece by piece. Its weights start at zero (exact at the start, as above).
        force_p_gen (`float`, *optional*):
            Fix p_gen instead of predicting it: 1.0 switches copying off (the model then returns the base's own logits,
            so every `generate()` option behaves exactly as on the base), 0.0 always copies.
        label_smoothing (`float`, defaults to 0.0):
            Label smoothing of the model's own loss, spread over the classes each example really has (its vocabulary
            plus its own out-of-vocabulary slots). `Seq2SeqTrainer`'s `label_smoothing_factor` cannot do this (it
            smooths over every column, including slots an example lacks): set this field instead, or use
            `hf_pgen.PointerGeneratorSeq2SeqTrainer`, which passes the factor through.
        p_gen_bias_init (`float`, defaults to 10.0):
            Initial bias of the copy switch. The switch's weights start at zero, so p_gen starts at
            `sigmoid(p_gen_bias_init)`: with the default, 0.99995, a freshly wrapped base generates what it generated
            before; the switch still learns fast because copying an out-of-vocabulary word gives it a gradient of
            order one.
        unk_token_id (`int`, *optional*):
            The unknown token. An extended (copied) id fed back to the decoder is embedded as this token. Defaults to
            the base config's `unk_token_id`.
        glossary_annotation (`str`, *optional*):
            How a glossary's target term is written into the source for this model to copy, a format string with
            `{target}` and optionally `{source}` (e.g. `"{source} [ {target} ]"`, `hf_pgen.glossary`). Set by
            `run_translation --glossary_augmentation`, which trains the model to read it; the processor and the
            pipeline apply it to every `glossary=` call. `None`: the model was not trained with an annotation, and
            glossary terms are placed (`glossary_mode="guarantee"`) without one.

    Raises:
        ValueError: when the base is not an encoder-decoder, or has separate source and target vocabularies (a copied
            source id would name another target token); when a setting lies outside its range (`pointer`,
            `force_p_gen`, `coverage_weight`, `label_smoothing`, the cross-attention pointer's `pointer_layer` and
            `pointer_heads`), or `glossary_annotation` is not a format string holding `{target}` once (a non-string
            one raises `TypeError`). Each message names the value and the fix.
    """

    model_type = "pointer_generator"
    # Trainer.predict()/evaluate() return the logits alone (not a tuple with the encoder states), so that
    # `predictions.argmax(-1)` and preprocess_logits_for_metrics work as users write them.
    keys_to_ignore_at_inference = ["cache", "past_key_values", "encoder_last_hidden_state"]
    sub_configs_defaults = {"base_config": SubConfigSpec(config_class=AutoConfig, model_type="bart")}

    base_config: PreTrainedConfig | dict | None = None
    pointer: Literal["dedicated", "cross_attention"] = "dedicated"
    pointer_attention_dim: int | None = None
    pointer_layer: int = -1
    pointer_heads: list[int] | None = None
    coverage: bool = False
    coverage_weight: float = 1.0
    selective_read: bool = False
    copy_next: bool = False
    force_p_gen: float | None = None
    label_smoothing: float = 0.0
    p_gen_bias_init: float = 10.0
    glossary_annotation: str | None = None
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
            raise ValueError(
                f"force_p_gen={self.force_p_gen} must lie in [0, 1] (1.0 = never copy, 0.0 = always copy)."
            )
        if self.coverage_weight < 0:
            raise ValueError(f"coverage_weight={self.coverage_weight} must be >= 0.")
        if not 0.0 <= self.label_smoothing < 1.0:
            raise ValueError(f"label_smoothing={self.label_smoothing} must lie in [0, 1).")
        if self.glossary_annotation is not None:
            check_annotation(self.glossary_annotation)
        _check_shared_vocabulary(self.base_config)
        if self.pointer == "cross_attention":
            self._check_cross_attention_pointer()
        # generate() and the Trainer read special tokens from the top-level config: mirror the base's.
        for name in _SPECIAL_TOKEN_FIELDS:
            if getattr(self, name) is None:
                setattr(self, name, getattr(self.base_config, name, None))
        self.custom_pipelines = _without_installed_pipelines(getattr(self, "custom_pipelines", None))

    def _check_cross_attention_pointer(self) -> None:
        layers = first_int(self.base_config, "decoder_layers", "num_decoder_layers", "num_hidden_layers")
        heads = first_int(self.base_config, "decoder_attention_heads", "num_heads", "num_attention_heads")
        if layers is not None and not -layers <= self.pointer_layer < layers:
            raise ValueError(
                f"pointer_layer={self.pointer_layer} does not name a decoder layer: the base has {layers} "
                f"(use 0..{layers - 1}, or -1 for the last)."
            )
        if self.pointer_heads is not None:
            if len(self.pointer_heads) == 0:
                raise ValueError(
                    "pointer_heads=[] selects no head: pass None for all heads, or a list of head indices."
                )
            if heads is not None and any(not 0 <= head < heads for head in self.pointer_heads):
                raise ValueError(
                    f"pointer_heads={self.pointer_heads} must be head indices in 0..{heads - 1}: the base's decoder "
                    f"cross-attention has {heads} heads."
                )
            if len(set(self.pointer_heads)) != len(self.pointer_heads):
                raise ValueError(f"pointer_heads={self.pointer_heads} names a head twice.")

    def get_text_config(self, decoder=None, encoder=None) -> PreTrainedConfig:
        # Caches, resize_token_embeddings and generate() size themselves from the text config: that is the base's
        # (its decoder may have more layers than its encoder, which the wrapper's own fields cannot say).
        return self.base_config.get_text_config(decoder=decoder, encoder=encoder)

    @classmethod
    def from_dict(cls, config_dict: dict, **kwargs) -> "PointerGeneratorConfig":
        # A plain base checkpoint (`PointerGeneratorForConditionalGeneration.from_pretrained("Helsinki-NLP/opus-mt-en-de")`)
        # holds the base's own config: it becomes the base config of a freshly initialised copy head.
        if config_dict.get("model_type") not in (None, cls.model_type) and "base_config" not in config_dict:
            config_dict = {"base_config": dict(config_dict)}
        return super().from_dict(config_dict, **kwargs)

    @property
    def vocab_size(self) -> int:
        """Width of the base's output layer; extended (copy-only) ids start here."""
        return self.base_config.vocab_size

    @vocab_size.setter
    def vocab_size(self, value: int) -> None:
        # resize_token_embeddings and generic code write the width here; the base's config is the one that holds it.
        self.base_config.vocab_size = value

    @property
    def hidden_size(self) -> int:
        return self.base_config.hidden_size

    @property
    def num_hidden_layers(self) -> int:
        return self.base_config.num_hidden_layers

    @property
    def num_attention_heads(self) -> int:
        return self.base_config.num_attention_heads


def _without_installed_pipelines(custom_pipelines: dict | None) -> dict | None:
    # With hf_pgen imported, transformers.pipeline serves these tasks with the installed pipeline; a loaded config that
    # still named the folder's copy would demand trust_remote_code=True and run that (maybe older) copy instead.
    # save_pretrained writes the entries again. In a Python without hf_pgen nothing is registered and they stay.
    pipelines = sys.modules.get("transformers.pipelines")
    if not custom_pipelines or pipelines is None:
        return custom_pipelines
    supported = pipelines.PIPELINE_REGISTRY.supported_tasks
    return {
        task: info
        for task, info in custom_pipelines.items()
        if not (
            info.get("impl") == CUSTOM_PIPELINES.get(task, {}).get("impl")
            and getattr(supported.get(task, {}).get("impl"), "__name__", None) == "PointerGeneratorText2TextPipeline"
        )
    }


def without_peft(model):
    """The model a PEFT wrapper holds (`PeftModel.get_base_model()`), or `model` itself when it is not one."""
    get_base_model = getattr(model, "get_base_model", None)
    return get_base_model() if callable(get_base_model) else model


def is_pointer_generator(model_or_config) -> bool:
    """Whether `model_or_config` has the copy head: a `PointerGeneratorConfig`, a model whose config is one, or a
    PEFT model around such a model. A plain base (BART, Marian, ...) gives False.

    Args:
        model_or_config (`PreTrainedModel`, `PeftModel` or `PreTrainedConfig`):
            What to ask about; anything else (None, a string) gives False.

    Returns:
        `bool`: whether its config's `model_type` is `"pointer_generator"`.

    >>> is_pointer_generator(PointerGeneratorForConditionalGeneration.from_base(base))
    True
    >>> is_pointer_generator(base), is_pointer_generator(base.config)
    (False, False)
    """
    unwrapped = without_peft(model_or_config)
    config = getattr(unwrapped, "config", unwrapped)
    return getattr(config, "model_type", None) == PointerGeneratorConfig.model_type


def first_int(config: PreTrainedConfig, *names: str) -> int | None:
    """The first of `config`'s attributes `names` that holds a positive int (configs name one size differently)."""
    for name in names:
        value = getattr(config, name, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


# How long a sequence is taken to be allowed where neither the config nor the tokenizer says (T5's relative positions
# with a tokenizer that states no limit): T5's own training length, and what Transformers 4's pipelines cut to.
DEFAULT_MAX_POSITIONS = 512
# PreTrainedTokenizerBase's model_max_length when the checkpoint states none (transformers' VERY_LARGE_INTEGER).
_NO_TOKENIZER_LIMIT = 1_000_000


def max_source_positions(
    config: PreTrainedConfig, tokenizer: Any = None, *, default: int | None = DEFAULT_MAX_POSITIONS
) -> int | None:
    """How many source tokens the model's encoder takes: the one rule the model, the pipeline and the scripts share.

    The rule: the positions the config states (`max_source_positions`, else `max_position_embeddings`, else
    `n_positions`), capped by the tokenizer's `model_max_length` where the tokenizer states one; the tokenizer's alone
    where the config states none (relative positions: T5); else `default`.

    Args:
        config (`PreTrainedConfig`):
            A base model's config, or a `PointerGeneratorConfig` (its `base_config` is read).
        tokenizer (`PreTrainedTokenizerBase`, *optional*):
            The model's tokenizer; its `model_max_length` caps the limit when it states one.
        default (`int`, *optional*, defaults to `DEFAULT_MAX_POSITIONS`, 512):
            What to return where neither states a limit. `None` tells a caller that nothing bounds the length (a
            check that refuses too long inputs then has nothing to refuse).

    Returns:
        `int` (or `default`): the number of source positions.
    """
    return _max_positions(config, tokenizer, "max_source_positions", default)


def max_target_positions(
    config: PreTrainedConfig, tokenizer: Any = None, *, default: int | None = DEFAULT_MAX_POSITIONS
) -> int | None:
    """How many target tokens the model's decoder takes (labels and generated ids): `max_source_positions`' rule, its
    arguments and its return value, with `max_target_positions` read first."""
    return _max_positions(config, tokenizer, "max_target_positions", default)


def _max_positions(config: PreTrainedConfig, tokenizer: Any, side: str, default: int | None) -> int | None:
    config = getattr(config, "base_config", None) or config
    limits = [first_int(config, side, "max_position_embeddings", "n_positions")]
    stated = getattr(tokenizer, "model_max_length", None)
    if isinstance(stated, int) and 0 < stated < _NO_TOKENIZER_LIMIT:
        limits.append(stated)
    limits = [limit for limit in limits if limit]
    return min(limits) if limits else default


def _check_shared_vocabulary(base_config: PreTrainedConfig) -> None:
    # The pointer copies a source id x_i as the target id x_i: that only means something when both sides share one
    # vocabulary (Marian can be configured with two).
    decoder_vocab_size = getattr(base_config, "decoder_vocab_size", None)
    separate = getattr(base_config, "share_encoder_decoder_embeddings", True) is False or (
        decoder_vocab_size is not None and decoder_vocab_size != base_config.vocab_size
    )
    if separate:
        raise ValueError(
            f"The base has separate source and target vocabularies (share_encoder_decoder_embeddings="
            f"{getattr(base_config, 'share_encoder_decoder_embeddings', None)}, vocab_size={base_config.vocab_size}, "
            f"decoder_vocab_size={decoder_vocab_size}). A copied source id would name a different target token: the "
            "pointer-generator needs one vocabulary shared by source and target (share_encoder_decoder_embeddings=True, "
            "decoder_vocab_size == vocab_size)."
        )


__all__ = [
    "PointerGeneratorConfig",
    "CUSTOM_PIPELINES",
    "is_pointer_generator",
    "max_source_positions",
    "max_target_positions",
]
