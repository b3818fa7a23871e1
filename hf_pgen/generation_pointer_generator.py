"""Generation support: keep each example off the extended (copy-only) slots it does not have."""

from __future__ import annotations

import torch
from transformers import LogitsProcessor


class ExtendedVocabularyLogitsProcessor(LogitsProcessor):
    """Sets to -inf every extended id `vocab_size + k` that a row's source does not hold.

    A batch is as wide as its example with the most out-of-vocabulary words; an example with fewer must not emit the
    slots it lacks (they would decode to another example's word). `generate()` installs this processor by itself;
    it holds the (beam-expanded) source ids from construction because generate passes processors only
    `(input_ids, scores)`.

    Args:
        extended_input_ids: (rows, S) source ids in the extended vocabulary, one row per generated sequence
            (already repeated for beams / returned sequences).
        vocab_size: the base vocabulary size; extended ids start here.
    """

    def __init__(self, extended_input_ids: torch.Tensor, vocab_size: int):
        self.vocab_size = vocab_size
        num_slots = max(int(extended_input_ids.max()) + 1 - vocab_size, 0)
        slot = extended_input_ids - vocab_size  # (rows, S); negative = in vocabulary
        allowed = torch.zeros(extended_input_ids.shape[0], num_slots + 1, dtype=torch.bool, device=slot.device)
        # Column num_slots is a sink for in-vocabulary positions, dropped below.
        allowed.scatter_(1, torch.where(slot >= 0, slot, num_slots), True)
        self.allowed_slots = allowed[:, :num_slots]  # (rows, N)

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        if scores.shape[0] != self.allowed_slots.shape[0]:
            raise ValueError(
                f"ExtendedVocabularyLogitsProcessor was built for {self.allowed_slots.shape[0]} rows but got scores "
                f"for {scores.shape[0]}: build it from the beam-expanded extended_input_ids."
            )
        extra = scores.shape[-1] - self.vocab_size
        if extra <= 0:
            return scores
        allowed = self.allowed_slots[:, :extra].to(scores.device)
        if allowed.shape[1] < extra:  # scores wider than this batch's slots: nothing there is allowed
            allowed = torch.nn.functional.pad(allowed, (0, extra - allowed.shape[1]), value=False)
        # Only the extended columns can change: mask them in place rather than copying all V + N scores.
        scores[:, self.vocab_size :].masked_fill_(~allowed, -torch.inf)
        return scores

__all__ = ["ExtendedVocabularyLogitsProcessor"]
