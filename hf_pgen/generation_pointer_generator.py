"""Copy-aware decoding rules for `generate()`: logits processors that only a copy model needs.

`OOVCopyLimitLogitsProcessor` keeps each out-of-vocabulary source word (an extended id, which only copying can
produce) to as many occurrences in the output as the source has. `generate(oov_copy_limit=True)`, or
`model.generation_config.oov_copy_limit = True` (saved with the model, so pipelines follow it), installs it.
"""

from __future__ import annotations

from typing import Any

import torch
from transformers import LogitsProcessor, LogitsProcessorList

from .logits_process_pointer_generator import ProtectedSpansLogitsProcessor

OOV_COPY_LIMIT_KEY = "oov_copy_limit"


def _slot_counts(ids: torch.Tensor, vocab_size: int, num_slots: int) -> torch.Tensor:
    """How often each extended slot occurs in each row: (R, L) ids -> (R, N) counts. Vocabulary ids count nowhere."""
    bucket = (ids - vocab_size + 1).clamp(0, num_slots)  # (R, L): 0 for vocabulary ids, k + 1 for slot k
    counts = torch.zeros(ids.shape[0], num_slots + 1, dtype=torch.long, device=ids.device)
    return counts.scatter_add_(1, bucket, torch.ones_like(bucket))[:, 1:]  # (R, N)


class OOVCopyLimitLogitsProcessor(LogitsProcessor):
    """An out-of-vocabulary source word appears in the output at most as often as in its source.

    An extended id (`vocab_size + k`) is a word the vocabulary lacks: only copying produces it, so an output holding it
    more often than the source repeats a copy, the typical error of an undertrained copy model (`"%(path)s von
    %(path)s"`, `"Nakamura Nakamura"`). Once a row has emitted a slot as often as its source holds it, the slot gets
    -inf and the step takes its next best word. Words of the vocabulary are not limited: they may be translations.

    Args:
        extended_input_ids: (B, S) the sources in the extended vocabulary. The scores' rows are B * r consecutive
            hypotheses, r per source (beam search's num_beams, num_return_sequences).
        vocab_size: the model's vocabulary size V (extended slots start there).
    """

    def __init__(self, extended_input_ids: torch.Tensor, vocab_size: int) -> None:
        self.vocab_size = vocab_size
        self.num_slots = max(int(extended_input_ids.max()) + 1 - vocab_size, 0)
        self.source_counts = _slot_counts(extended_input_ids, vocab_size, self.num_slots)  # (B, N)

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        """input_ids (R, L) the outputs so far, scores (R, V + N) -> (R, V + N)."""
        width = min(self.num_slots, scores.shape[-1] - self.vocab_size)
        if width <= 0:
            return scores  # nothing to copy, or copying switched off (scores as wide as the vocabulary)
        rows, sources = input_ids.shape[0], self.source_counts.shape[0]
        if rows % sources:
            raise ValueError(
                f"OOVCopyLimitLogitsProcessor got {rows} rows of scores for {sources} sources: each source must have "
                "the same number of consecutive rows (num_beams x num_return_sequences)."
            )
        allowed = self.source_counts.to(input_ids.device).repeat_interleave(rows // sources, dim=0)  # (R, N)
        used = _slot_counts(input_ids, self.vocab_size, self.num_slots)  # (R, N)
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
    processors.insert(protection[0] if protection else len(processors),
                      OOVCopyLimitLogitsProcessor(extended_input_ids, vocab_size))
    return processors
