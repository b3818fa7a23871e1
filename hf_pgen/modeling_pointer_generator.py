"""Pointer-generator (See et al. 2017) around any encoder-decoder of 🤗 Transformers.

    P(w) = p_gen * P_vocab(w) + (1 - p_gen) * sum_{i : x_i = w} a_i

P_vocab comes from the base's LM head, a (the pointer distribution over source positions) from a dedicated attention
or from the base's cross-attention, and p_gen from a copy switch. Source words outside the vocabulary carry extended
ids `vocab_size + k` (k = index of that distinct word in its example) and can only be copied.

Shapes: B = batch, T = target positions in this call, S = source positions, V = base vocabulary (output width),
N = extended (copy-only) slots in the batch, D = hidden sizes.

This file wires the copy layers to a base: the model, its decoder hooks and its forward. Its siblings: the layers
(`layers_pointer_generator.py`), the mixture (`mixture_pointer_generator.py`), the cache and `generate()`
(`generation_pointer_generator.py`), the input checks (`input_checks_pointer_generator.py`), the output classes
(`modeling_outputs_pointer_generator.py`).
"""

from __future__ import annotations

import contextlib
import copy
import math
from collections.abc import Iterator
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn
from transformers import AutoModelForSeq2SeqLM, PreTrainedModel
from transformers.cache_utils import DynamicCache, EncoderDecoderCache
from transformers.modeling_outputs import Seq2SeqLMOutput
from transformers.utils import logging

from .configuration_pointer_generator import CUSTOM_PIPELINES, PointerGeneratorConfig, _first_int
from .generation_pointer_generator import OOV_COPY_LIMIT_KEY, PointerGeneratorCache, PointerGeneratorGenerationMixin
from .input_checks_pointer_generator import check_labels, check_source_ids, check_trainer_label_smoothing
from .layers_pointer_generator import CopyNext, CopySwitch, PointerAttention, SelectiveRead
from .mixture_pointer_generator import (
    _pad_with_impossible_slots,
    _rows_per_source,
    copy_side_of_mixture,
    first_occurrence,
    gold_log_probs,
    mix_vocab_logits,
    num_oov_slots,
    smoothed_log_probs,
)
from .modeling_outputs_pointer_generator import PointerGeneratorSeq2SeqLMOutput
from .tokenization_pointer_generator import _DECODING_ONLY_KEYS  # forward drops them, as generate() does

logger = logging.get_logger(__name__)

# 5.24 renamed the cache argument and output field from `past_key_values` to `cache`; support both releases.
_CACHE_FIELD = "cache" if "cache" in Seq2SeqLMOutput.__dataclass_fields__ else "past_key_values"

# Longest source assumed for bases without position limits (T5): it fixes the width of evaluation logits.
_DEFAULT_MAX_SOURCE_POSITIONS = 512


class PointerGeneratorPreTrainedModel(PreTrainedModel):
    config_class = PointerGeneratorConfig
    base_model_prefix = "base"
    supports_gradient_checkpointing = True
    _supports_sdpa = True
    _supports_flash_attn = True
    _supports_flex_attn = True
    _can_compile_fullgraph = False

    @classmethod
    def _can_set_attn_implementation(cls) -> bool:
        # Transformers guesses this from the module's source (an `*Attention(nn.Module)` class must use its attention
        # interface). The base sets its own implementation, and the pointer is not such a layer: say so, not guess.
        return True

    @torch.no_grad()
    def _init_weights(self, module: nn.Module):
        # Only our own layers reach this: the wrapped base is a PreTrainedModel and initialises itself.
        if isinstance(module, CopySwitch):
            # Zero weights: p_gen starts at sigmoid(p_gen_bias_init) everywhere.
            module.weight.zero_()
            module.bias.fill_(self.config.p_gen_bias_init)
        elif (self.pointer is not None and module is self.pointer.coverage_weight) or (
            self.copy_next is not None and module is self.copy_next.gate
        ):
            module.weight.zero_()
            module.bias.zero_()
        elif self.selective_read is not None and module is self.selective_read.proj:
            module.weight.zero_()
        elif isinstance(module, CopyNext):
            module.switch_weight.zero_()
        elif isinstance(module, nn.Linear):
            module.weight.normal_(0.0, getattr(self.config.base_config, "init_std", None) or 0.02)
            if module.bias is not None:
                module.bias.zero_()


class _CopyInputs(NamedTuple):
    """What `forward` hands the decoder hooks for one call."""

    attention_mask: torch.Tensor | None  # (B, S)
    cache: EncoderDecoderCache | None
    previous_coverage: torch.Tensor | None  # (B, S)
    decoder_input_ids: torch.Tensor | None  # (B, T) in the base vocabulary
    decoder_inputs_embeds: torch.Tensor | None  # (B, T, E)
    mixed_source: torch.Tensor | None  # (B, S) extended source ids when the logits are built, else None
    extended_decoder_ids: torch.Tensor | None  # (B, T) with copied words' extended ids (selective read, copy-next)
    source_ids: torch.Tensor  # (B, S) extended source ids
    min_oov_slots: int  # the logits hold at least this many extended slots (see forward)


class _CopyStep:
    """What `forward` hands the decoder hooks for one call (`inputs`) and what the hook hands back (`outputs`).

    A plain object rather than attributes of the model: nn.Module.__setattr__ costs microseconds at every decoding step.
    """

    __slots__ = ("inputs", "outputs")

    def __init__(self):
        self.inputs: _CopyInputs | None = None
        self.outputs: tuple | None = None


class PointerGeneratorForConditionalGeneration(PointerGeneratorPreTrainedModel, PointerGeneratorGenerationMixin):
    r"""
    A pointer-generator around an encoder-decoder: the base's weights are reused unchanged; a copy switch and (by
    default) a dedicated pointer attention are added.

    ```python
    >>> import hf_pgen
    >>> from transformers import AutoModelForSeq2SeqLM
    >>> base = AutoModelForSeq2SeqLM.from_pretrained("Helsinki-NLP/opus-mt-en-de")
    >>> model = hf_pgen.PointerGeneratorForConditionalGeneration.from_base(base, coverage=True)
    ```
    """

    accepts_loss_kwargs = True

    def __init__(self, config: PointerGeneratorConfig, base_model: PreTrainedModel | None = None):
        super().__init__(config)
        if base_model is None:
            attn = "eager" if config.pointer == "cross_attention" else config.base_config._attn_implementation
            base_model = AutoModelForSeq2SeqLM.from_config(config.base_config, attn_implementation=attn)
        self.base = base_model
        # The pointer and the switch read the decoder's final states: a hook on the decoder computes them there (see
        # `_copy_step_after_decoder`), from what `forward` leaves in `_copy_step.inputs` for the call.
        self._copy_step = _CopyStep()
        decoder = self.base.get_decoder()
        decoder.register_forward_hook(self._copy_step_after_decoder, with_kwargs=True)
        decoder_dim = _hidden_size(config.base_config, "decoder")
        encoder_dim = _hidden_size(config.base_config, "encoder")
        embed_dim = self.base.get_input_embeddings().embedding_dim
        if config.pointer == "dedicated":
            self.pointer = PointerAttention(
                decoder_dim, encoder_dim, config.pointer_attention_dim or decoder_dim, coverage=config.coverage
            )
        else:
            self.pointer = None
        self.copy_switch = CopySwitch(encoder_dim, decoder_dim, embed_dim)
        self.selective_read = SelectiveRead(encoder_dim, embed_dim) if config.selective_read else None
        if self.selective_read is not None:
            decoder.register_forward_pre_hook(self._selective_read_before_decoder, with_kwargs=True)
        self.copy_next = CopyNext(decoder_dim) if config.copy_next else None
        self.post_init()

    # -- construction ---------------------------------------------------------------------------------------------

    @classmethod
    def from_base(
        cls, base_model_or_path: PreTrainedModel | str, base_model_kwargs: dict | None = None, **copy_settings
    ) -> "PointerGeneratorForConditionalGeneration":
        """Wrap a pretrained encoder-decoder; every base weight is reused, only the copy parameters are new.

        Args:
            base_model_or_path: a loaded `*ForConditionalGeneration` model, or a Hub id / local folder to load with
                `AutoModelForSeq2SeqLM.from_pretrained(base_model_or_path, **base_model_kwargs)`.
            copy_settings: fields of [`PointerGeneratorConfig`] (`pointer`, `coverage`, `coverage_weight`,
                `force_p_gen`, `p_gen_bias_init`, `unk_token_id`, ...).
        """
        if isinstance(base_model_or_path, str):
            base_model = AutoModelForSeq2SeqLM.from_pretrained(base_model_or_path, **(base_model_kwargs or {}))
        else:
            base_model = base_model_or_path
        if not isinstance(base_model, PreTrainedModel) or not getattr(base_model.config, "is_encoder_decoder", False):
            raise ValueError(
                f"from_base needs an encoder-decoder such as BART, Marian or T5 loaded with AutoModelForSeq2SeqLM; got "
                f"{type(base_model).__name__}, which is not one."
            )
        if base_model.get_output_embeddings() is None:
            raise ValueError(
                f"{type(base_model).__name__} has no language-model head: load the base with AutoModelForSeq2SeqLM."
            )
        # Read before building the config: the config's initialisation resets its sub-configs' attention setting.
        attn_implementation = base_model.config._attn_implementation
        config = PointerGeneratorConfig(base_config=base_model.config, **copy_settings)
        if config.pointer == "cross_attention":
            attn_implementation = "eager"  # the pointer reads the cross-attention weights
        # The loaded weights must survive post_init's initialisation pass.
        for module in base_model.modules():
            module._is_hf_initialized = True
        model = cls(config, base_model=base_model)
        # Wrapping resets the shared base config's attention implementation; a base left without one loses its
        # causal mask, so set it again.
        model.base.set_attn_implementation(attn_implementation)
        model._sync_attn_implementation()
        model.to(device=base_model.device, dtype=base_model.dtype)
        model.generation_config = copy.deepcopy(base_model.generation_config)  # not shared with the base
        if model.generation_config.max_length in (None, 20) and model.generation_config.max_new_tokens is None:
            # Without a saved length generate() stops at Transformers' default of 20 tokens; bases with learned
            # positions can go as far as their decoder reaches (Marian checkpoints save exactly this).
            positions = _first_int(base_model.config, "max_target_positions", "max_position_embeddings")
            if positions:
                model.generation_config.max_length = positions
        return model

    def post_init(self):
        super().post_init()
        self._sync_attn_implementation()

    def _sync_attn_implementation(self) -> None:
        # generate() builds 4-D masks (static cache) from the wrapper's config: it must name the attention the base
        # really runs, or an eager base receives a boolean SDPA mask and masks nothing.
        self.config._attn_implementation_internal = self.base.config._attn_implementation

    def set_attn_implementation(self, attn_implementation: str | dict, **kwargs):
        requested = attn_implementation if isinstance(attn_implementation, str) else attn_implementation.get("")
        if self.config.pointer == "cross_attention" and requested not in (None, "eager"):
            raise ValueError(
                f"pointer='cross_attention' reads the base's cross-attention weights, which only eager attention returns; "
                f"it cannot run with attn_implementation={requested!r}. Use pointer='dedicated' (a separate attention, "
                "so the base keeps SDPA/flash) or keep 'eager'."
            )
        super().set_attn_implementation(attn_implementation, **kwargs)
        self._sync_attn_implementation()

    @contextlib.contextmanager
    def disable_copy(self) -> Iterator["PointerGeneratorForConditionalGeneration"]:
        """Run as the base model inside the block (`force_p_gen=1.0`): outputs equal the base's exactly.

        ```python
        with model.disable_copy():
            base_ids = model.generate(**batch)
        ```
        """
        previous = self.config.force_p_gen
        self.config.force_p_gen = 1.0
        try:
            yield self
        finally:
            self.config.force_p_gen = previous

    def save_pretrained(self, save_directory, *args, **kwargs):
        """As `PreTrainedModel.save_pretrained`, and the folder serves `pipeline("translation" | "summarization" |
        "text2text-generation", model=folder, trust_remote_code=True)`: Transformers 5 removed those tasks, a folder's
        `custom_pipelines` brings them back. The pipeline module is copied beside the model code by this import."""
        from .pipeline_pointer_generator import PointerGeneratorText2TextPipeline  # noqa: F401  (copied at save time)

        if not getattr(self.config, "custom_pipelines", None):
            self.config.custom_pipelines = copy.deepcopy(CUSTOM_PIPELINES)
        if getattr(self.generation_config, OOV_COPY_LIMIT_KEY, None) is not None:
            # GenerationConfig drops attributes it does not know when loading one marked as derived from the model
            # config: the setting would be saved and silently lost on loading.
            self.generation_config._from_model_config = False
        return super().save_pretrained(save_directory, *args, **kwargs)

    def push_to_hub(self, repo_id: str, *args, tags: list[str] | None = None, **kwargs):
        """As `PreTrainedModel.push_to_hub`; a repository without a model card gets hf_pgen's (pipeline tag, tags,
        base model, usage snippets that run with and without hf_pgen, copy settings, limitations) instead of
        Transformers' empty template. An existing card is kept (and tagged)."""
        from .modelcard import hub_has_model_card, push_model_card

        token = kwargs.get("token")
        had_card = hub_has_model_card(repo_id, token=token)
        tags = list(dict.fromkeys([*(tags or []), "hf_pgen", "pointer-generator"]))
        commit = super().push_to_hub(repo_id, *args, tags=tags, **kwargs)
        if not had_card:
            full_repo_id = getattr(getattr(commit, "repo_url", None), "repo_id", None) or repo_id
            push_model_card(
                self,
                full_repo_id,
                tags=tags,
                token=token,
                revision=kwargs.get("revision"),
                create_pr=kwargs.get("create_pr", False),
            )
        return commit

    def resize_token_embeddings(
        self, new_num_tokens: int | None = None, pad_to_multiple_of: int | None = None, **kwargs
    ):
        """Resize the base's (shared) embeddings and LM head; extended ids then start at the new `vocab_size`."""
        embeddings = self.base.resize_token_embeddings(new_num_tokens, pad_to_multiple_of, **kwargs)
        self.vocab_size = self.config.vocab_size  # as PreTrainedModel.resize_token_embeddings leaves it
        return embeddings

    # -- delegation to the base -----------------------------------------------------------------------------------

    def get_encoder(self):
        return self.base.get_encoder()

    def get_decoder(self):
        return self.base.get_decoder()

    def get_input_embeddings(self):
        return self.base.get_input_embeddings()

    def set_input_embeddings(self, value):
        self.base.set_input_embeddings(value)

    def get_output_embeddings(self):
        return self.base.get_output_embeddings()

    def set_output_embeddings(self, new_embeddings):
        self.base.set_output_embeddings(new_embeddings)

    def _copy_step_after_decoder(self, module, args, kwargs, output) -> None:
        """Forward hook on the base's decoder: the pointer attention and the copy switch, from the decoder's output.

        The one seam between this model and the base: `forward` leaves its inputs in `_copy_step.inputs`, the hook
        leaves its results in `_copy_step.outputs`. A hook reads the decoder's final states and the encoder states
        from any family without asking the base for every layer's hidden states, and it runs the copy step before the
        LM head streams the output embedding through the caches (see benchmarks/README.md "Speed work paid back").
        """
        if self._copy_step.inputs is None:
            return  # the decoder called on its own, not through this model's forward
        (
            attention_mask,
            cache,
            previous_coverage,
            decoder_input_ids,
            decoder_inputs_embeds,
            mixed_source,
            extended_decoder_ids,
            source_ids,
            min_oov_slots,
        ) = self._copy_step.inputs
        encoder_states = self._encoder_states(kwargs)  # (B, S, D_enc)
        # (Indexing a ModelOutput builds the tuple of all its fields: read the attribute where there is one.)
        decoder_states = getattr(output, "last_hidden_state", None)  # (B, T, D_dec)
        if decoder_states is None:
            decoder_states = output[0]
        keys, query, padding, context_scores = self._source_features(encoder_states, attention_mask, cache)
        continuing = bias = None
        if self.copy_next is not None:
            continuing = CopyNext.continuing(extended_decoder_ids, source_ids, attention_mask)  # (B, T, S)
            bias = self.copy_next.bias(decoder_states, continuing)  # (B, T, S)
        pointer_attention, coverage_before = self._pointer_attention(
            decoder_states,
            keys,
            query,
            padding,
            attention_mask,
            getattr(output, "cross_attentions", None),
            previous_coverage,
            bias,
        )  # (B, T, S), (B, T, S)
        if isinstance(cache, PointerGeneratorCache) and self.config.coverage and self.pointer is not None:
            # Only the dedicated pointer's scores read coverage back at later steps.
            cache.append_coverage(coverage_before + pointer_attention)
        switch_logit = self._switch_logit(
            pointer_attention, context_scores, decoder_states, decoder_input_ids, decoder_inputs_embeds
        )  # (B, T, 1)
        if continuing is not None and self.config.force_p_gen is None:
            switch_logit = switch_logit + self.copy_next.switch_term(pointer_attention, continuing)
        mixture = None
        if mixed_source is not None:
            # Everything of the mixture that does not need the vocabulary logits, computed before the LM head.
            num_slots, first = self._source_layout(mixed_source, cache, min_oov_slots)
            copy_side = None  # copying switched off: the base's own logits
            if self.config.force_p_gen != 1.0:
                copy_side = copy_side_of_mixture(pointer_attention, switch_logit, first)
            mixture = (num_slots, copy_side)
        self._copy_step.outputs = (pointer_attention, coverage_before, switch_logit, mixture)

    def _selective_read_before_decoder(self, module, args, kwargs):
        """Forward pre-hook on the base's decoder (with `selective_read`): the decoder gets its input embeddings with
        the selective read added instead of ids. The decoder's own embedding module makes them, so each family scales
        them exactly as it scales ids (BART inside the module, Marian and Pegasus after it)."""
        if self._copy_step.inputs is None:
            return None  # the decoder called on its own, not through this model's forward
        inputs = self._copy_step.inputs
        embeds = module.get_input_embeddings()(kwargs["input_ids"])  # (B, T, E)
        read = self.selective_read(
            inputs.extended_decoder_ids, inputs.source_ids, inputs.attention_mask, self._encoder_states(kwargs)
        )
        return args, {**kwargs, "input_ids": None, "inputs_embeds": embeds + read.to(embeds.dtype)}

    def _encoder_states(self, decoder_kwargs: dict) -> torch.Tensor:
        encoder_states = decoder_kwargs.get("encoder_hidden_states")  # (B, S, D_enc)
        if encoder_states is None:
            raise RuntimeError(
                f"{type(self.base).__name__} called its decoder without encoder_hidden_states as a keyword argument; "
                "the pointer-generator reads the encoder states there. Please report this base model family."
            )
        return encoder_states

    def prepare_decoder_input_ids_from_labels(self, labels: torch.Tensor) -> torch.Tensor:
        """Shift labels right behind the decoder start token; -100 becomes pad. Extended ids (copied words) stay:
        `forward` embeds them as the unknown token, and `selective_read` and `copy_next` read which word it was."""
        labels = labels.masked_fill(labels == -100, self.config.pad_token_id)
        decoder_input_ids = labels.new_full(labels.shape, self.config.decoder_start_token_id)
        decoder_input_ids[:, 1:] = labels[:, :-1]
        return decoder_input_ids

    def _to_base_vocabulary(self, ids: torch.Tensor) -> torch.Tensor:
        """Extended ids (copied words) fed back to the decoder are embedded as the unknown token."""
        unk_token_id = self.config.unk_token_id
        is_extended = ids >= self.config.vocab_size
        if unk_token_id is None:
            if is_extended.any():
                raise ValueError(
                    "Decoder inputs contain extended (copied) ids but config.unk_token_id is not set: set "
                    "model.config.unk_token_id = tokenizer.unk_token_id."
                )
            return ids
        return ids.masked_fill(is_extended, unk_token_id)

    # -- forward --------------------------------------------------------------------------------------------------

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        extended_input_ids: torch.LongTensor | None = None,
        decoder_input_ids: torch.LongTensor | None = None,
        decoder_attention_mask: torch.Tensor | None = None,
        encoder_outputs=None,
        cache: EncoderDecoderCache | None = None,
        past_key_values: EncoderDecoderCache | None = None,
        inputs_embeds: torch.Tensor | None = None,
        decoder_inputs_embeds: torch.Tensor | None = None,
        labels: torch.LongTensor | None = None,
        use_cache: bool | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        output_pointer: bool = False,
        return_dict: bool | None = None,
        num_items_in_batch: int | torch.Tensor | None = None,
        min_oov_slots: int = 0,
        **kwargs,
    ) -> PointerGeneratorSeq2SeqLMOutput | tuple:
        r"""
        Args:
            input_ids (B, S): source ids in the base vocabulary (unknown words as the unknown token).
            extended_input_ids (B, S): the same ids, except that out-of-vocabulary words carry `vocab_size + k` (and
                the other pieces of a character whose slot spells it whole, the unknown token).
                Defaults to `input_ids` (nothing out of vocabulary).
            labels (B, T): target ids in the extended vocabulary; -100 is ignored.
            output_pointer: also return `p_gen` (B, T) and `pointer_attentions` (B, T, S).
            num_items_in_batch: set by the Trainer: the loss becomes the summed NLL divided by it, which keeps gradient
                accumulation exact.
            min_oov_slots: the logits hold at least this many extended slots, beyond those of the source's own
                out-of-vocabulary words: `generate()` sets it for glossary target words only copies spell (slots the
                batch's tables gained, see `hf_pgen.protection_pointer_generator`), which get probability 0 and come
                out only where the rules place them.
            kwargs: go to the base model, except a processor batch's decoding-only keys (`oov_words`, `oov_spacing`,
                `num_truncated_tokens`), which are dropped.
        Returns:
            `logits` (B, T, V + N): log-probabilities of the final distribution (N = extended slots in the batch).
            When training with labels they are not built (None): the loss only needs the gold ids.
        """
        for key in _DECODING_ONLY_KEYS:  # a processor batch goes in as is, as for generate()
            kwargs.pop(key, None)
        config = self.config
        return_dict = return_dict if return_dict is not None else config.return_dict
        output_attentions = output_attentions if output_attentions is not None else config.output_attentions
        output_hidden_states = output_hidden_states if output_hidden_states is not None else config.output_hidden_states
        cache = cache if cache is not None else past_key_values
        source_ids = extended_input_ids if extended_input_ids is not None else input_ids
        # A later decoding step: the cache holds the source's layout, filled by a call that checked this source.
        num_slots_known = cache.num_extended_slots if isinstance(cache, PointerGeneratorCache) else None
        if num_slots_known is None:
            check_source_ids(config, input_ids, extended_input_ids)  # three device syncs: not at every step
        if source_ids is None:
            raise ValueError(
                "The pointer needs the source ids: pass input_ids (or extended_input_ids alongside encoder_outputs)."
            )
        if labels is not None:
            check_labels(config, labels, source_ids)
            use_cache = False
            if decoder_input_ids is None and decoder_inputs_embeds is None:
                decoder_input_ids = self.prepare_decoder_input_ids_from_labels(labels)
        extended_decoder_ids = None
        if self.selective_read is not None or self.copy_next is not None:
            if decoder_input_ids is None:
                raise ValueError(
                    "selective_read and copy_next read which token the decoder is fed: pass decoder_input_ids (or "
                    "labels), not decoder_inputs_embeds."
                )
            extended_decoder_ids = decoder_input_ids
        if decoder_input_ids is not None and num_slots_known != 0:  # sources without OOV words cannot feed one back
            decoder_input_ids = self._to_base_vocabulary(decoder_input_ids)

        use_cache = use_cache if use_cache is not None else config.base_config.use_cache
        if use_cache:
            if cache is None:
                cache = PointerGeneratorCache(DynamicCache(), DynamicCache())
            elif not isinstance(cache, PointerGeneratorCache):
                cache = PointerGeneratorCache.wrap(cache)
        # Coverage carried over from earlier generation steps (None at the first step and without a cache).
        previous_coverage = cache.pointer_coverage if isinstance(cache, PointerGeneratorCache) else None

        need_cross_attentions = self.pointer is None
        build_logits = labels is None or not self.training
        copy_step = self._copy_step
        copy_step.inputs = _CopyInputs(
            attention_mask,
            cache,
            previous_coverage,
            decoder_input_ids,
            decoder_inputs_embeds,
            source_ids if build_logits else None,
            extended_decoder_ids,
            source_ids,
            int(min_oov_slots or 0),
        )
        copy_step.outputs = None
        try:
            base_outputs = self.base(
                input_ids=input_ids,
                attention_mask=attention_mask,
                decoder_input_ids=decoder_input_ids,
                decoder_attention_mask=decoder_attention_mask,
                encoder_outputs=encoder_outputs,
                inputs_embeds=inputs_embeds,
                decoder_inputs_embeds=decoder_inputs_embeds,
                use_cache=use_cache,
                output_attentions=bool(output_attentions) or need_cross_attentions,
                output_hidden_states=bool(output_hidden_states),
                return_dict=True,
                **{_CACHE_FIELD: cache},
                **kwargs,
            )
        finally:
            copy_step.inputs = None
        if copy_step.outputs is None:
            raise RuntimeError(f"{type(self.base).__name__}'s forward did not run its decoder (get_decoder()).")
        (pointer_attention, coverage_before, switch_logit, mixture), copy_step.outputs = copy_step.outputs, None
        switch_logit = switch_logit.squeeze(-1) if labels is not None or output_pointer else None  # (B, T)
        encoder_states = base_outputs.encoder_last_hidden_state  # (B, S, D_enc)

        vocab_logits = base_outputs.logits  # (B, T, V)
        loss = coverage_loss = logits = None
        if labels is not None:
            gold_mask = labels != -100
            per_token = -gold_log_probs(vocab_logits, pointer_attention, source_ids, switch_logit, labels)  # (B, T)
            # Not a forward argument: the Trainer takes every argument whose name holds "label" for a label column.
            label_smoothing = config.label_smoothing
            if label_smoothing > 0:
                smoothing = -smoothed_log_probs(vocab_logits, pointer_attention, source_ids, switch_logit)
                per_token = (1.0 - label_smoothing) * per_token + label_smoothing * smoothing
            denominator = num_items_in_batch if num_items_in_batch is not None else gold_mask.sum().clamp_min(1)
            loss = per_token[gold_mask].sum() / denominator
            if config.force_p_gen in (0.0, 1.0) and torch.isinf(loss):
                logger.warning_once(
                    f"The loss is infinite: with force_p_gen={config.force_p_gen} some labels are impossible "
                    "(1.0 never copies, so an out-of-vocabulary label cannot be produced; 0.0 always copies, so a label "
                    "absent from its source cannot)."
                )
            if config.coverage:
                # See et al.: sum_i min(a_i^t, c_i^t), c^t = attention summed over steps before t.
                per_step = torch.minimum(pointer_attention, coverage_before).sum(-1)  # (B, T)
                coverage_loss = per_step[gold_mask].sum() / denominator
                loss = loss + config.coverage_weight * coverage_loss
        if build_logits:
            num_slots, copy_side = mixture
            if copy_side is None:
                # Copying switched off: the base's own logits, so that every generate() option (repetition
                # penalties included) sees exactly what it sees on the base.
                logits = _pad_with_impossible_slots(vocab_logits, num_slots) if num_slots else vocab_logits
            else:
                # The base's logits are not returned: normalise them in place.
                logits = mix_vocab_logits(vocab_logits, source_ids, copy_side, num_slots, logits_are_scratch=True)
            if labels is not None:
                logits = self._pad_to_evaluation_width(logits)
            elif self.training and num_items_in_batch is not None:
                check_trainer_label_smoothing(self.config, source_ids, num_slots)

        output = PointerGeneratorSeq2SeqLMOutput(
            loss=loss,
            logits=logits,
            decoder_hidden_states=base_outputs.decoder_hidden_states if output_hidden_states else None,
            decoder_attentions=base_outputs.decoder_attentions if output_attentions else None,
            cross_attentions=base_outputs.cross_attentions if output_attentions else None,
            encoder_last_hidden_state=encoder_states,
            encoder_hidden_states=base_outputs.encoder_hidden_states if output_hidden_states else None,
            encoder_attentions=base_outputs.encoder_attentions if output_attentions else None,
            p_gen=torch.sigmoid(switch_logit) if output_pointer else None,
            pointer_attentions=pointer_attention if output_pointer else None,
            coverage_loss=coverage_loss,
            **{_CACHE_FIELD: cache if use_cache else None},
        )
        return output if return_dict else output.to_tuple()

    def _source_features(self, encoder_states: torch.Tensor, attention_mask: torch.Tensor | None, cache):
        """What the copy step reads besides the decoder states, fixed for a source, so that generation computes it once
        and keeps it in the cache: the pointer's keys and query (without a cache `keys(...)` (B, A, S) and None; with
        one the encoder states, one per source (B / r, S, D_enc), and `decoding_query()`; both None for the
        cross-attention pointer), the source padding (B, 1, S) bool or None, the switch's per-source scores
        (B, S, 1)."""
        if isinstance(cache, PointerGeneratorCache) and cache.switch_context_scores is not None:
            return cache.pointer_keys, cache.pointer_query, cache.source_padding, cache.switch_context_scores
        padding = None if attention_mask is None else ~attention_mask.bool().unsqueeze(1)
        rows_per_source = 1
        decoding = isinstance(cache, PointerGeneratorCache)
        if decoding:
            if padding is not None and not bool(padding.any()):
                padding = None  # nothing to mask at any step of this generation (one device sync, here only)
            if self.pointer is not None:
                rows_per_source = _rows_per_source(encoder_states, attention_mask)
        sources = encoder_states[::rows_per_source]  # (B / r, S, D_enc)
        keys = query = None
        if self.pointer is not None:
            # Decoding: no projection of the source at all (a copy of the states only when r > 1).
            keys, query = (
                (sources.contiguous(), self.pointer.decoding_query())
                if decoding
                else (self.pointer.keys(sources), None)
            )
        context_scores = self.copy_switch.context_scores(sources)  # (B / r, S, 1)
        if rows_per_source > 1:
            context_scores = context_scores.repeat_interleave(rows_per_source, dim=0)  # (B, S, 1)
        if decoding:
            cache.pointer_keys, cache.pointer_query, cache.source_padding = keys, query, padding
            cache.switch_context_scores = context_scores
            cache.rows_per_source = rows_per_source
        return keys, query, padding, context_scores

    def _pointer_attention(
        self, decoder_states, keys, query, padding, attention_mask, cross_attentions, coverage, bias=None
    ):
        if self.pointer is not None:
            attention, coverage_before = self.pointer(decoder_states, keys, padding, coverage, query, bias)
        else:
            layer = cross_attentions[self.config.pointer_layer]  # (B, H, T, S)
            heads = self.config.pointer_heads
            attention = (layer if heads is None else layer[:, heads]).float().mean(1)  # (B, T, S)
            # In training the base returns its weights after attention dropout (rows sum to 1 only on average) and in
            # bf16 they are rounded: renormalise in float32 so the pointer is a distribution. A row that dropout
            # zeroed entirely falls back to uniform attention over the real source positions.
            total = attention.sum(-1, keepdim=True)  # (B, T, 1)
            real = attention_mask.float() if attention_mask is not None else attention.new_ones(attention.shape[::2])
            uniform = (real / real.sum(-1, keepdim=True)).unsqueeze(1)  # (B, 1, S)
            attention = torch.where(total > 0, attention / total.clamp_min(torch.finfo(torch.float32).tiny), uniform)
            if bias is not None:
                # The base's scores are out of reach: a * exp(b), renormalised (the row maximum subtracted first, so
                # that exp cannot overflow), is what adding b to them would give.
                weighted = attention * (bias - bias.amax(-1, keepdim=True)).exp()
                total = weighted.sum(-1, keepdim=True)  # 0 only where every weighted position underflowed
                attention = torch.where(
                    total > 0, weighted / total.clamp_min(torch.finfo(torch.float32).tiny), attention
                )
            coverage_before = None
        if self.config.coverage and coverage_before is None:
            # Cross-attention pointer: coverage cannot enter the base's scores, only the loss.
            start = coverage if coverage is not None else attention.new_zeros(attention.shape[0], attention.shape[2])
            coverage_before = start.unsqueeze(1) + attention.cumsum(1) - attention
        return attention, coverage_before

    def _source_layout(self, source_ids: torch.Tensor, cache, min_oov_slots: int = 0) -> tuple[int, torch.Tensor]:
        # The logits' width and the grouping of repeated source words are fixed for a whole generation: computed at
        # the first step (the width needs a device sync) and kept in the cache.
        if isinstance(cache, PointerGeneratorCache) and cache.num_extended_slots is not None:
            return cache.num_extended_slots, cache.source_first_occurrence
        width = max(num_oov_slots(source_ids, self.config.vocab_size), min_oov_slots)
        layout = width, first_occurrence(source_ids)
        if isinstance(cache, PointerGeneratorCache):
            cache.num_extended_slots, cache.source_first_occurrence = layout
        return layout

    def _max_source_positions(self) -> int:
        base = self.config.base_config
        return (
            getattr(base, "max_position_embeddings", None)
            or getattr(base, "n_positions", None)
            or (_DEFAULT_MAX_SOURCE_POSITIONS)
        )

    def _pad_to_evaluation_width(self, logits: torch.Tensor) -> torch.Tensor:
        # The Trainer concatenates evaluation logits across batches, which needs one width: every batch gets the
        # widest the model can produce, one slot per source position.
        width = self.config.vocab_size + self._max_source_positions()
        if logits.shape[-1] > width:
            raise ValueError(
                f"This evaluation batch has {logits.shape[-1] - self.config.vocab_size} out-of-vocabulary slots, more "
                f"than the {self._max_source_positions()} source positions the evaluation logits are padded to. "
                "Truncate sources to the model's max_position_embeddings (or n_positions) when encoding."
            )
        return F.pad(logits, (0, width - logits.shape[-1]), value=-torch.inf)

    def _switch_logit(
        self, pointer_attention, context_scores, decoder_states, decoder_input_ids, decoder_inputs_embeds
    ) -> torch.Tensor:
        if self.config.force_p_gen is not None:
            p = self.config.force_p_gen
            value = math.inf if p == 1.0 else -math.inf if p == 0.0 else math.log(p / (1.0 - p))
            return decoder_states.new_full((*decoder_states.shape[:2], 1), value, dtype=torch.float32)
        if decoder_inputs_embeds is None:
            decoder_inputs_embeds = self.base.get_input_embeddings()(decoder_input_ids)  # (B, T, E)
        return self.copy_switch(pointer_attention, context_scores, decoder_states, decoder_inputs_embeds)


def _hidden_size(config, side: str) -> int:
    size = _first_int(config, f"{side}_hidden_size", "d_model", "hidden_size")
    if size is None:
        raise ValueError(f"Cannot find the {side} hidden size in {type(config).__name__}.")
    return size


__all__ = [
    "PointerGeneratorForConditionalGeneration",
    "PointerGeneratorPreTrainedModel",
    "PointerGeneratorSeq2SeqLMOutput",
]
