"""Generation for the pointer-generator: the cache it decodes with, the `generate()` hooks, and copy-aware decoding rules.

* `PointerGeneratorCache`: the base's encoder-decoder cache plus the pointer's state (coverage, the source's layout).
* `PointerGeneratorGenerationMixin`: `generate()` with the source's extended ids passed to every step, copy
  information on request (`output_copy_info=True`), assisted decoding and transition scores over the extended
  vocabulary. Mixed into `PointerGeneratorForConditionalGeneration`.
* `OOVCopyLimitLogitsProcessor` keeps each out-of-vocabulary source word (an extended id, which only copying can
  produce) to as many occurrences in the output as the source has. `generate(oov_copy_limit=True)`, or
  `model.generation_config.oov_copy_limit = True` (saved with the model, so pipelines follow it), installs it.

This file is saved next to the model as remote code (see `hf_pgen.SAVED_WITH_MODEL`): it imports only `torch`,
`transformers` and its hf_pgen siblings (relative imports; not the modeling module, which imports this one).
"""

from __future__ import annotations

import inspect
from typing import Any

import torch
from transformers import GenerationMixin, LogitsProcessor, LogitsProcessorList
from transformers.cache_utils import EncoderDecoderCache
from transformers.generation.candidate_generator import AssistedCandidateGenerator, PromptLookupCandidateGenerator
from transformers.generation.utils import GenerateBeamEncoderDecoderOutput
from transformers.modeling_outputs import BaseModelOutput

from .input_checks_pointer_generator import check_source_ids
from .logits_process_pointer_generator import (
    ProtectedSpansLogitsProcessor,
    protection_processors,
    warn_missing_spans,
)
from .mixture_pointer_generator import COPY_MASS_FLOOR, count_oov_slots, pad_with_impossible_slots
from .modeling_outputs_pointer_generator import PointerGeneratorGenerateBeamOutput, PointerGeneratorGenerateOutput
from .protection_pointer_generator import PROTECTED_SPANS_KEY
from .tokenization_encode_pointer_generator import DECODING_ONLY_KEYS  # generate() drops them

OOV_COPY_LIMIT_KEY = "oov_copy_limit"

# generate(output_copy_info=True) re-reads the returned sequences in chunks of at most this many logits (floats).
_COPY_INFO_CHUNK_FLOATS = 2**26


class PointerGeneratorCache(EncoderDecoderCache):
    """The base's encoder-decoder cache plus per-hypothesis pointer state, reordered with it during beam search.

    Holds the coverage after each consumed decoder position (B, T, S), so that assisted decoding can crop it with the
    key/value cache, and, fixed for a generation, the OOV slot count and the grouping of repeated source words (B, S).
    """

    # Beam search only permutes hypotheses within each example, so what depends on the source alone needs no
    # reordering; contrastive search and assisted decoding select and repeat rows, which moves everything.
    _PER_HYPOTHESIS_STATE = ("coverage_history",)
    _SOURCE_STATE = ("source_first_occurrence", "source_padding", "pointer_keys", "switch_context_scores")

    def __init__(self, *caches):
        super().__init__(*caches)
        self.coverage_history: torch.Tensor | None = None  # (B, T_done, S)
        self.num_oov_slots: int | None = None
        self.source_first_occurrence: torch.Tensor | None = None  # (B, S)
        self.source_padding: torch.Tensor | None = None  # (B, 1, S) bool: True where a row has no source token
        # The dedicated pointer's keys: the encoder states, one per source (B / r, S, D_enc); and its `decoding_query`.
        self.pointer_keys: torch.Tensor | None = None
        self.pointer_query: tuple[torch.Tensor, torch.Tensor] | None = None
        self.rows_per_source = 1  # r: consecutive rows decoding the same source (beam search's hypotheses)
        self.switch_context_scores: torch.Tensor | None = None  # (B, S, 1): the switch's weight on each source state

    @property
    def pointer_coverage(self) -> torch.Tensor | None:
        """Attention summed over every consumed decoder position: (B, S), or None before the first."""
        return None if self.coverage_history is None else self.coverage_history[:, -1]

    def append_coverage(self, coverage_after: torch.Tensor) -> None:
        """Record the coverage after each position of this call: (B, T, S)."""
        history = self.coverage_history
        self.coverage_history = coverage_after if history is None else torch.cat([history, coverage_after], dim=1)

    def crop(self, tokens_to_remove: int) -> None:
        super().crop(tokens_to_remove)
        if self.coverage_history is not None:
            kept = self.get_seq_length()
            self.coverage_history = self.coverage_history[:, :kept] if kept > 0 else None

    @classmethod
    def wrap(cls, cache: EncoderDecoderCache) -> "PointerGeneratorCache":
        wrapped = cls(cache.self_attention_cache, cache.cross_attention_cache)
        wrapped.is_updated = dict(cache.is_updated)
        return wrapped

    def _map_rows(self, fn, names) -> None:
        for name in names:
            value = getattr(self, name)
            if value is not None:
                setattr(self, name, fn(value))

    def reorder_cache(self, beam_idx: torch.LongTensor):
        super().reorder_cache(beam_idx)
        self._map_rows(lambda value: value.index_select(0, beam_idx.to(value.device)), self._PER_HYPOTHESIS_STATE)

    def _keys_per_row(self) -> None:
        # Row selection and repetition move rows across sources: give every row its own keys first.
        if self.pointer_keys is not None and self.rows_per_source > 1:
            self.pointer_keys = self.pointer_keys.repeat_interleave(self.rows_per_source, dim=0)
        self.rows_per_source = 1

    def batch_repeat_interleave(self, repeats: int):
        super().batch_repeat_interleave(repeats)
        self._keys_per_row()
        self._map_rows(
            lambda value: value.repeat_interleave(repeats, dim=0), self._PER_HYPOTHESIS_STATE + self._SOURCE_STATE
        )

    def batch_select_indices(self, indices: torch.Tensor):
        super().batch_select_indices(indices)
        self._keys_per_row()
        self._map_rows(lambda value: value[indices], self._PER_HYPOTHESIS_STATE + self._SOURCE_STATE)

    def reset(self):
        super().reset()
        self.coverage_history = self.num_oov_slots = self.pointer_query = None
        self.rows_per_source = 1
        for name in self._SOURCE_STATE:
            setattr(self, name, None)


class PointerGeneratorGenerationMixin(GenerationMixin):
    """`GenerationMixin` for a pointer-generator: the source's extended ids reach every step, and every output wider
    than the vocabulary (copied words) is handled.

    The model it is mixed into provides `config` (a `PointerGeneratorConfig`), `generation_config`, `forward` with
    `extended_input_ids` and `output_pointer`, and `_to_base_vocabulary(ids)`.
    """

    def generate(self, inputs: torch.Tensor | None = None, *args, **kwargs):
        """`GenerationMixin.generate`, with the source's extended ids passed to every step.

        Accepts a batch from `PointerGeneratorProcessor` / `encode_with_oovs` as is (`generate(**batch)`): the keys
        only needed for decoding (`oov_words`, `oov_spacing`, `num_truncated_tokens`) are dropped. Rows never emit a
        slot their own source lacks: the mixture gives it probability 0 (-inf) and every logits processor keeps -inf
        at -inf.

        `oov_copy_limit=True` (or `generation_config.oov_copy_limit = True`, saved with the model) keeps each
        out-of-vocabulary source word to as many occurrences as its source has (`OOVCopyLimitLogitsProcessor`).

        `output_copy_info=True` (implies `return_dict_in_generate=True`) adds `p_gen`, `pointer_attentions` and
        `copy_shares` to the output (see `PointerGeneratorGenerateOutput`): one teacher-forced forward of the returned
        sequences after decoding, so every decoding strategy gets exactly the values behind its own outputs, and
        decoding itself costs nothing more.
        """
        for key in DECODING_ONLY_KEYS:
            kwargs.pop(key, None)
        output_copy_info = bool(kwargs.pop("output_copy_info", False))
        if output_copy_info:
            kwargs["return_dict_in_generate"] = True  # the copy information travels on the output object
        protected_spans = kwargs.pop(PROTECTED_SPANS_KEY, None)  # processor(..., protect=...): guaranteed copies
        source_ids = inputs if inputs is not None else kwargs.get("input_ids")
        if protected_spans:
            width = self.config.vocab_size if self.config.force_p_gen == 1.0 else None  # copying off: no copy ids
            if width is None:  # room for slots the tables gained for glossary target words only copies spell
                kwargs["min_oov_slots"] = max(
                    kwargs.get("min_oov_slots") or 0, _slots_spelled(protected_spans, self.config.vocab_size)
                )
            kwargs["logits_processor"] = protection_processors(
                protected_spans,
                self.generation_config,
                kwargs,
                width,
                batch_size=source_ids.shape[0] if source_ids is not None else None,
            )
        if kwargs.get("extended_input_ids") is None:
            # The pointer needs the source ids at every step, but generate() hands forward only the encoder outputs.
            if source_ids is not None:
                kwargs["extended_input_ids"] = source_ids
        elif source_ids is not None:
            check_source_ids(self.config, source_ids, kwargs["extended_input_ids"])
        if kwargs.get("extended_input_ids") is None and kwargs.get("encoder_outputs") is not None:
            raise ValueError(
                "generate() got encoder_outputs without the source ids the pointer copies from: pass "
                "extended_input_ids (or input_ids) as well."
            )
        oov_copy_limit = kwargs.pop(OOV_COPY_LIMIT_KEY, None)
        if oov_copy_limit is None:
            config = kwargs.get("generation_config") or self.generation_config
            oov_copy_limit = getattr(config, OOV_COPY_LIMIT_KEY, False)
        limited = _oov_copy_limit_processors(
            oov_copy_limit, kwargs.get("extended_input_ids"), self.config.vocab_size, kwargs
        )
        if limited is not None:
            kwargs["logits_processor"] = limited
        outputs = super().generate(inputs, *args, **kwargs)
        if protected_spans:
            warn_missing_spans(kwargs["logits_processor"], outputs)  # spans the length limit cut, by name
        if output_copy_info:
            outputs = self._with_copy_info(outputs, source_ids, kwargs)
        return outputs

    @torch.no_grad()
    def _with_copy_info(self, outputs, source_ids: torch.Tensor | None, kwargs: dict):
        """`outputs` as a `PointerGeneratorGenerate*Output` carrying the copy decisions behind its sequences."""
        sequences = outputs.sequences  # (R, L): R = B * num_return_sequences
        extended_ids = kwargs.get("extended_input_ids")  # (B, S)
        if extended_ids is None:
            raise ValueError("output_copy_info=True needs the source ids: pass input_ids (or extended_input_ids).")
        batch_size = extended_ids.shape[0]
        if sequences.shape[0] % batch_size:
            raise ValueError(f"generate() returned {sequences.shape[0]} sequences for {batch_size} sources.")
        per_source = sequences.shape[0] // batch_size
        prompt = kwargs.get("decoder_input_ids")
        prompt_len = prompt.shape[-1] if isinstance(prompt, torch.Tensor) else 1
        generated = sequences[:, prompt_len:]  # (R, G)

        def rows(value):
            return value.repeat_interleave(per_source, dim=0) if per_source > 1 else value

        attention_mask = kwargs.get("attention_mask")
        if attention_mask is None and source_ids is not None:
            attention_mask = torch.ones_like(source_ids)
        encoder_states = kwargs["encoder_outputs"][0] if kwargs.get("encoder_outputs") is not None else None
        source = rows(extended_ids)  # (R, S)

        vocab_size = self.config.vocab_size
        width = vocab_size + max(count_oov_slots(extended_ids, vocab_size), kwargs.get("min_oov_slots") or 0)
        chunk = max(1, _COPY_INFO_CHUNK_FLOATS // max(1, sequences.shape[1] * width))  # bounds the (r, L, V + N)
        steps = slice(prompt_len - 1, None)  # the decoder positions that produced the generated tokens
        p_gen, attention, share = [], [], []
        for start in range(0, sequences.shape[0], chunk):
            part = slice(start, start + chunk)
            if encoder_states is not None:
                source_inputs = {"encoder_outputs": BaseModelOutput(last_hidden_state=rows(encoder_states)[part])}
            else:
                source_inputs = {"input_ids": rows(source_ids)[part]}
            if attention_mask is not None:
                source_inputs["attention_mask"] = rows(attention_mask)[part]
            out = self(
                **source_inputs,
                min_oov_slots=kwargs.get("min_oov_slots", 0),
                extended_input_ids=source[part],
                decoder_input_ids=sequences[part, :-1],
                output_pointer=True,
                use_cache=False,
                return_dict=True,
            )
            chosen = generated[part]  # (r, G)
            log_p = out.logits[:, steps].gather(-1, chosen.unsqueeze(-1)).squeeze(-1).float()  # (r, G)
            if self.config.force_p_gen == 1.0:  # the base's raw logits: normalise the chosen entries only
                log_p = log_p - out.logits[:, steps].float().logsumexp(-1)
            switch = out.p_gen[:, steps].float()  # (r, G)
            pointer = out.pointer_attentions[:, steps].float()  # (r, G, S)
            copy_mass = (pointer * (source[part].unsqueeze(1) == chosen.unsqueeze(-1))).sum(-1)  # (r, G)
            copy_p = (1.0 - switch) * copy_mass
            if self.config.force_p_gen == 1.0:
                copy_p = torch.zeros_like(copy_p)  # copying off: the output is the base's own
            p_gen.append(switch)
            attention.append(pointer)
            share.append((copy_p / log_p.exp().clamp_min(COPY_MASS_FLOOR)).clamp(0.0, 1.0))
        p_gen, attention, share = torch.cat(p_gen), torch.cat(attention), torch.cat(share)

        # Positions after a sequence's end hold padding, not decisions.
        generation_config = kwargs.get("generation_config") or self.generation_config
        eos = kwargs.get("eos_token_id", generation_config.eos_token_id)
        eos = torch.tensor([] if eos is None else [eos] if isinstance(eos, int) else list(eos), device=sequences.device)
        is_eos = torch.isin(generated, eos)  # (R, G)
        ended = (is_eos.cumsum(-1) - is_eos.long()) > 0  # strictly after the first EOS
        p_gen = p_gen.masked_fill(ended, float("nan"))
        share = share.masked_fill(ended, float("nan"))
        attention = attention.masked_fill(ended.unsqueeze(-1), 0.0)

        beams = isinstance(outputs, GenerateBeamEncoderDecoderOutput)
        cls = PointerGeneratorGenerateBeamOutput if beams else PointerGeneratorGenerateOutput
        return cls(**dict(outputs.items()), p_gen=p_gen, pointer_attentions=attention, copy_shares=share)

    def _get_candidate_generator(self, *args, **kwargs):
        generator = super()._get_candidate_generator(*args, **kwargs)
        call = inspect.signature(GenerationMixin._get_candidate_generator).bind(self, *args, **kwargs).arguments
        source_ids = (call.get("model_kwargs") or {}).get("extended_input_ids")
        if isinstance(generator, PromptLookupCandidateGenerator) and generator.vocab_size is not None:
            # Prompt lookup checks candidates against logits processors on a dummy score row as wide as the
            # vocabulary; a copied (extended) id in the output must fit in it too.
            if source_ids is not None:
                generator.vocab_size = self.config.vocab_size + count_oov_slots(source_ids, self.config.vocab_size)
        if isinstance(generator, AssistedCandidateGenerator):
            self._fit_assistant(generator, call["input_ids"], source_ids)
        return generator

    def _fit_assistant(
        self, generator: AssistedCandidateGenerator, input_ids: torch.Tensor, source_ids: torch.Tensor | None
    ) -> None:
        """Lets an assistant model (a pointer-generator or a plain model of the same vocabulary) draft for this one.

        Args:
            generator (`AssistedCandidateGenerator`):
                The candidate generator `generate()` built for `assistant_model`; changed in place.
            input_ids (`torch.LongTensor` of shape `(batch_size, prompt_length)`):
                The decoder prompt assisted decoding starts from.
            source_ids (`torch.LongTensor` of shape `(batch_size, source_length)`, *optional*):
                The source's extended ids (`extended_input_ids`).
        """
        assistant, assistant_kwargs = generator.assistant_model, generator.assistant_kwargs
        if assistant.config.is_encoder_decoder and assistant_kwargs.get("decoder_attention_mask") is None:
            # Transformers 5.25's `GenerationMixin._prefill` cuts the inputs of a generation restarted on a filled
            # cache down to the new tokens only when the decoder mask is as long as the inputs; an encoder-decoder
            # assistant has no decoder mask, so it is fed its whole decoder prefix again every round, on top of its
            # cache, and its positions run past max_position_embeddings (IndexError; plain BART assisted by BART
            # too). A mask of ones, which the candidate generator lengthens with the prefix, makes it take only the
            # new tokens.
            assistant_kwargs["decoder_attention_mask"] = torch.ones(
                input_ids.shape, dtype=torch.long, device=assistant.device
            )
        if "extended_input_ids" in inspect.signature(assistant.forward).parameters:
            return  # a pointer-generator: it copies from the same source, extended ids and all
        # A plain model neither takes the source's extended ids nor embeds copied (extended) ids: it drafts from the
        # prefix with copies read as the unknown token, its scores widened to this model's with impossible slots.
        assistant_kwargs.pop("extended_input_ids", None)
        width = self.config.vocab_size
        if source_ids is not None:
            width += count_oov_slots(source_ids, self.config.vocab_size)
        draft = generator.get_candidates

        def get_candidates(input_ids, *args, **kwargs):
            candidates, logits = draft(self._to_base_vocabulary(input_ids), *args, **kwargs)
            candidates = torch.cat([input_ids.to(candidates.device), candidates[:, input_ids.shape[1] :]], dim=1)
            if logits is not None and logits.shape[-1] < width:  # sampling compares them with this model's scores
                logits = pad_with_impossible_slots(logits, width - logits.shape[-1])
            return candidates, logits

        generator.get_candidates = get_candidates

    def compute_transition_scores(
        self,
        sequences: torch.Tensor,
        scores: tuple[torch.Tensor, ...],
        beam_indices: torch.Tensor | None = None,
        normalize_logits: bool = False,
    ) -> torch.Tensor:
        """As `GenerationMixin.compute_transition_scores`, for scores wider than `config.vocab_size`.

        The stock version indexes a flattened score tensor with `config.vocab_size` as the row width, which is wrong
        once copied words widen the scores to V + N.
        """
        stacked = torch.stack(scores, dim=0)  # (steps, rows, V + N)
        if normalize_logits:
            stacked = stacked.log_softmax(-1)
        if beam_indices is None:
            beam_indices = torch.arange(stacked.shape[1], device=stacked.device).unsqueeze(1).expand(-1, len(scores))
        finished = beam_indices < 0  # (sequences, steps): padding after a hypothesis ended
        length = int((~finished).sum(-1).max())
        beam_indices, finished = beam_indices[:, :length], finished[:, :length]
        tokens = sequences[:, sequences.shape[-1] - length :]  # (sequences, length)
        steps = torch.arange(length, device=stacked.device).unsqueeze(0)  # (1, length)
        picked = stacked[steps, beam_indices.clamp_min(0), tokens]  # (sequences, length)
        return picked.masked_fill(finished, 0.0)


def _slots_spelled(protected_spans: Any, vocab_size: int) -> int:
    """The extended slots the token sequences of `protected_spans` entries reach (0 when they stay in the
    vocabulary)."""
    entries = [protected_spans] if isinstance(protected_spans, dict) else protected_spans
    top = max(
        (t for entry in entries if entry for span in entry.get("spans", ()) for v in span["sequences"] for t in v),
        default=-1,
    )
    return max(top + 1 - vocab_size, 0)


def _slot_occurrences(ids: torch.Tensor, vocab_size: int, num_oov_slots: int) -> torch.Tensor:
    """How often each extended slot occurs in each row: (R, L) ids -> (R, N) counts. Vocabulary ids count nowhere."""
    bucket = (ids - vocab_size + 1).clamp(0, num_oov_slots)  # (R, L): 0 for vocabulary ids, k + 1 for slot k
    counts = torch.zeros(ids.shape[0], num_oov_slots + 1, dtype=torch.long, device=ids.device)
    return counts.scatter_add_(1, bucket, torch.ones_like(bucket))[:, 1:]  # (R, N)


class OOVCopyLimitLogitsProcessor(LogitsProcessor):
    """An out-of-vocabulary source word appears in the output at most as often as in its source.

    An extended id (`vocab_size + k`) is a word the vocabulary lacks: only copying produces it, so an output holding it
    more often than the source repeats a copy, the typical error of an undertrained copy model (`"%(path)s von
    %(path)s"`, `"Nakamura Nakamura"`). Once a row has emitted a slot as often as its source holds it, the slot gets
    -inf and the step takes its next best word. Words of the vocabulary are not limited: they may be translations.

    Args:
        extended_input_ids (`torch.LongTensor` of shape `(B, S)`):
            The sources in the extended vocabulary. The scores' rows are B * r consecutive hypotheses, r per source
            (beam search's num_beams, num_return_sequences).
        vocab_size (`int`):
            The model's vocabulary size V (extended slots start there).

    Raises:
        ValueError: from a call whose number of score rows is not a multiple of the number of sources.

    Examples:

    ```python
    >>> ids = model.generate(**batch, oov_copy_limit=True)  # installed by generate()
    >>> model.generation_config.oov_copy_limit = True  # or saved with the model, so pipelines follow it
    >>> limit = OOVCopyLimitLogitsProcessor(batch["extended_input_ids"], model.config.vocab_size)  # by hand
    ```
    """

    def __init__(self, extended_input_ids: torch.Tensor, vocab_size: int) -> None:
        self.vocab_size = vocab_size
        self.num_oov_slots = count_oov_slots(extended_input_ids, vocab_size)
        self.source_counts = _slot_occurrences(extended_input_ids, vocab_size, self.num_oov_slots)  # (B, N)

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        """input_ids (R, L) the outputs so far, scores (R, V + N) -> (R, V + N)."""
        width = min(self.num_oov_slots, scores.shape[-1] - self.vocab_size)
        if width <= 0:
            return scores  # nothing to copy, or copying switched off (scores as wide as the vocabulary)
        rows, sources = input_ids.shape[0], self.source_counts.shape[0]
        if rows % sources:
            raise ValueError(
                f"OOVCopyLimitLogitsProcessor got {rows} rows of scores for {sources} sources: each source must have "
                "the same number of consecutive rows (num_beams x num_return_sequences)."
            )
        allowed = self.source_counts.to(input_ids.device).repeat_interleave(rows // sources, dim=0)  # (R, N)
        used = _slot_occurrences(input_ids, self.vocab_size, self.num_oov_slots)  # (R, N)
        exhausted = (used >= allowed)[:, :width]  # (R, N')
        # Only the N slot columns can change: one copy of the scores, no (R, V + N) mask.
        limited = scores.clone()
        slots = limited[:, self.vocab_size : self.vocab_size + width]
        slots.masked_fill_(exhausted, -torch.inf)
        return limited


def _oov_copy_limit_processors(
    enabled: Any, extended_input_ids: torch.Tensor | None, vocab_size: int, kwargs: dict[str, Any]
) -> LogitsProcessorList | None:
    """`kwargs["logits_processor"]` with an `OOVCopyLimitLogitsProcessor` added when `enabled`; None otherwise.

    It goes before a `ProtectedSpansLogitsProcessor`: protection must see what the limit removed, so that a protected
    span needing an out-of-vocabulary word whose copies the output already spent outside the span still comes out (the
    span wins; after protection, the limit would leave that row no token at all)."""
    if not enabled:
        return None
    if not isinstance(enabled, bool):
        raise ValueError(f"oov_copy_limit must be True or False, got {enabled!r}.")
    if extended_input_ids is None:
        raise ValueError("oov_copy_limit=True needs the source ids: pass input_ids or extended_input_ids.")
    processors = kwargs.get("logits_processor")
    processors = LogitsProcessorList(list(processors) if processors is not None else [])
    protection = [i for i, p in enumerate(processors) if isinstance(p, ProtectedSpansLogitsProcessor)]
    processors.insert(
        protection[0] if protection else len(processors), OOVCopyLimitLogitsProcessor(extended_input_ids, vocab_size)
    )
    return processors


__all__ = [
    "OOVCopyLimitLogitsProcessor",
    "PointerGeneratorCache",
    "PointerGeneratorGenerationMixin",
]
