"""The pointer-generator mixture written the slow, obviously correct way: Python loops in probability space.

    P(w) = p_gen * P_vocab(w) + (1 - p_gen) * sum_{i : x_i = w} a_i

Source words outside the vocabulary carry extended ids `V + k` (columns past the vocabulary that only copying
reaches). These loops are the benchmark's baseline (`benchmarks/measure_mixture.py` times `hf_pgen`'s vectorised
mixture against them) and the oracle the tests check `hf_pgen`'s mixture functions against
(`tests/test_reference.py`):

>>> from benchmarks.reference import reference_full
>>> log_p = reference_full(vocab_logits, pointer_attention, extended_input_ids, switch_logit, num_oov_slots)

Every function computes in the dtype of its inputs and reads `switch_logit` = logit(p_gen), as `hf_pgen` does
(+inf / -inf: always generate / always copy). The benchmark passes float32; the tests pass float64, in which
1 - p_gen keeps about 1e-16 / (1 - p_gen) relative precision: exact enough up to |logit| ~ 20 (float32 rounds
sigmoid(20) to 1 and loses the copy side altogether).

Shapes: B = batch, T = target positions, S = source positions, V = vocabulary, N = extended slots.

The last two functions are the other side of those comparisons: `hf_pgen`'s vectorised mixture composed whole
(`extended_log_probs`, `mix_into_log_probs`). The library itself never needs them in one piece (forward and
generation call its parts), so they live here with their only callers, the benchmarks and the tests.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from hf_pgen.mixture_pointer_generator import copy_side_of_mixture, first_occurrence, mix_copy_side, mix_vocab_logits

__all__ = [
    "extended_log_probs",
    "mix_into_log_probs",
    "padded_log_softmax",
    "reference_copy_step",
    "reference_copy_step_tuned",
    "reference_full",
    "reference_gold",
    "reference_smoothed",
]


def padded_log_softmax(vocab_logits: torch.Tensor, num_oov_slots: int) -> torch.Tensor:
    """log P_vocab over V + N, the extended (copy-only) slots at -inf: (B, T, V + N)."""
    return F.log_softmax(F.pad(vocab_logits, (0, num_oov_slots), value=-torch.inf), dim=-1)


def reference_copy_step(
    log_p_vocab: torch.Tensor,
    pointer_attention: torch.Tensor,
    extended_input_ids: torch.Tensor,
    switch_logit: torch.Tensor,
) -> torch.Tensor:
    """The copy step, given log P_vocab (B, T, V + N): a Python loop over every (example, SOURCE position) pair that
    adds that position's copy mass into the distribution at the position's id, then the log: (B, T, V + N).

        dist = p_gen * exp(log P_vocab)
        for b, s: dist[b, :, ids[b, s]] += (1 - p_gen[b]) * a[b, :, s]
        return log(dist)

    What `mix_into_log_probs` computes; `log_p_vocab` is not modified. The ids are
    read as Python ints (`tolist()`): indexing with the 0-dim tensor `ids[b, s]` instead is ~10% slower.
    """
    batch, source_len = extended_input_ids.shape
    p_gen = torch.sigmoid(switch_logit.to(log_p_vocab.dtype))  # (B, T)
    dist = p_gen.unsqueeze(-1) * log_p_vocab.exp()  # (B, T, V + N)
    ids = extended_input_ids.tolist()
    for b in range(batch):
        for s in range(source_len):
            dist[b, :, ids[b][s]] += (1 - p_gen[b]) * pointer_attention[b, :, s]
    return dist.log()


def reference_copy_step_tuned(
    log_p_vocab: torch.Tensor,
    pointer_attention: torch.Tensor,
    extended_input_ids: torch.Tensor,
    switch_logit: torch.Tensor,
) -> torch.Tensor:
    """`reference_copy_step` with the obvious hoists (per-example row views, 1 - p_gen computed once): fewer tensor
    ops per iteration, same arithmetic. The benchmark's check of how much its headline depends on how the loop is
    written."""
    batch, source_len = extended_input_ids.shape
    p_gen = torch.sigmoid(switch_logit.to(log_p_vocab.dtype))
    copy_weight = 1 - p_gen
    dist = p_gen.unsqueeze(-1) * log_p_vocab.exp()
    ids = extended_input_ids.tolist()
    for b in range(batch):
        row_ids, row_dist, row_attention, row_weight = ids[b], dist[b], pointer_attention[b], copy_weight[b]
        for s in range(source_len):
            row_dist[:, row_ids[s]] += row_weight * row_attention[:, s]
    return dist.log()


def reference_full(
    vocab_logits: torch.Tensor,
    pointer_attention: torch.Tensor,
    extended_input_ids: torch.Tensor,
    switch_logit: torch.Tensor,
    num_oov_slots: int,
) -> torch.Tensor:
    """The whole mixture from raw logits (B, T, V): log_softmax over V + N, then the (example, source position) loop
    of `reference_copy_step`. What `extended_log_probs` computes: (B, T, V + N)."""
    return reference_copy_step(
        padded_log_softmax(vocab_logits, num_oov_slots), pointer_attention, extended_input_ids, switch_logit
    )


def _row_distribution(vocab_logits, pointer_attention, extended_input_ids, switch_logit, b, t, width):
    # One (example, target position)'s distribution over `width` >= V + (its own slots) columns.
    p_gen = torch.sigmoid(switch_logit[b, t])
    dist = vocab_logits.new_zeros(width)
    dist[: vocab_logits.shape[-1]] = p_gen * torch.softmax(vocab_logits[b, t], dim=-1)
    dist.scatter_add_(0, extended_input_ids[b], (1 - p_gen) * pointer_attention[b, t])
    return dist


def reference_gold(
    vocab_logits: torch.Tensor,
    pointer_attention: torch.Tensor,
    extended_input_ids: torch.Tensor,
    switch_logit: torch.Tensor,
    labels: torch.Tensor,
    num_oov_slots: int,
) -> torch.Tensor:
    """log P(label) with a loop over (example, TARGET position): each row's distribution over V + N, its source
    attention added in, the label's entry kept. What `gold_log_probs` computes (labels >= 0): (B, T)."""
    batch, target_len, vocab = vocab_logits.shape
    out = vocab_logits.new_empty(batch, target_len)
    for b in range(batch):
        for t in range(target_len):
            dist = _row_distribution(
                vocab_logits, pointer_attention, extended_input_ids, switch_logit, b, t, vocab + num_oov_slots
            )
            out[b, t] = dist[labels[b, t]].log()
    return out


def reference_smoothed(
    vocab_logits: torch.Tensor,
    pointer_attention: torch.Tensor,
    extended_input_ids: torch.Tensor,
    switch_logit: torch.Tensor,
) -> torch.Tensor:
    """Mean log-probability over the classes each row has, its V words and the distinct extended ids of its own
    source, with a loop over (example, target position). What `smoothed_log_probs` computes: (B, T)."""
    batch, target_len, vocab = vocab_logits.shape
    width = max(int(extended_input_ids.max()) + 1, vocab)
    out = vocab_logits.new_empty(batch, target_len)
    for b in range(batch):
        own_slots = sorted({i for i in extended_input_ids[b].tolist() if i >= vocab})
        classes = list(range(vocab)) + own_slots
        for t in range(target_len):
            dist = _row_distribution(vocab_logits, pointer_attention, extended_input_ids, switch_logit, b, t, width)
            out[b, t] = dist[classes].log().mean()
    return out


# -- hf_pgen's vectorised mixture, composed whole -----------------------------------------------------------------


def extended_log_probs(
    vocab_logits: torch.Tensor,
    pointer_attention: torch.Tensor,
    extended_input_ids: torch.Tensor,
    switch_logit: torch.Tensor,
    num_oov_slots: int,
    source_first_occurrence: torch.Tensor | None = None,
) -> torch.Tensor:
    """The full mixture: (B, T, V + N) float32 log-probabilities. Slots a row does not have stay at -inf.

    `source_first_occurrence` (from `first_occurrence`) may be passed when the same sources are mixed repeatedly.
    """
    if source_first_occurrence is None:
        source_first_occurrence = first_occurrence(extended_input_ids)
    copy_side = copy_side_of_mixture(pointer_attention, switch_logit.unsqueeze(-1), source_first_occurrence)
    return mix_vocab_logits(vocab_logits, extended_input_ids, copy_side, num_oov_slots)


def mix_into_log_probs(
    log_p_vocab: torch.Tensor,
    pointer_attention: torch.Tensor,
    extended_input_ids: torch.Tensor,
    switch_logit: torch.Tensor,
    source_first_occurrence: torch.Tensor | None = None,
) -> torch.Tensor:
    """The copy step of the mixture, given log P_vocab (B, T, V + N) (-inf on extended slots): (B, T, V + N).

    Without autograd `log_p_vocab` is updated in place and returned.
    """
    if source_first_occurrence is None:
        source_first_occurrence = first_occurrence(extended_input_ids)
    copy_side = copy_side_of_mixture(pointer_attention, switch_logit.unsqueeze(-1), source_first_occurrence)
    return mix_copy_side(log_p_vocab, extended_input_ids, copy_side)
