"""The pointer-generator's mixture, in log space: one definition for the training loss (gold ids only) and for
generation and evaluation (every id of the extended vocabulary).

    log P(w) = log(p_gen * P_vocab(w) + (1 - p_gen) * sum_{i : x_i = w} a_i)

Shapes: B = batch, T = target positions, S = source positions, V = base vocabulary (output width), N = extended
(copy-only) slots in the batch.

This file is saved next to the model as remote code (see `hf_pgen.SAVED_WITH_MODEL`): it imports only `torch`.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

# The smallest copy mass a log is taken of: a word the pointer gives no attention gets log(1e-30), not -inf, so that
# the mixture's gradient stays finite.
COPY_MASS_FLOOR = 1e-30


def mix_log_probs(log_p_vocab: torch.Tensor, log_copy_mass: torch.Tensor, switch_logit: torch.Tensor) -> torch.Tensor:
    """log(p_gen * P_vocab(w) + (1 - p_gen) * copy_mass(w)), computed in log space.

    Mixing in log space keeps the result finite when p_gen saturates at 0 or 1 (where the probability-space form takes
    log(0)). All arguments broadcast against each other; `switch_logit` is logit(p_gen) (+inf/-inf force generate/copy).
    """
    return _log_add(F.logsigmoid(switch_logit) + log_p_vocab, F.logsigmoid(-switch_logit) + log_copy_mass)


def _log_add(generated: torch.Tensor, copied: torch.Tensor) -> torch.Tensor:
    """log(exp(generated) + exp(copied)): the two halves of the mixture, log p_gen + log P_vocab(w) and
    log(1 - p_gen) + log copy_mass(w)."""
    if not (torch.is_grad_enabled() and (generated.requires_grad or copied.requires_grad)):
        return torch.logaddexp(generated, copied)  # no backward: -inf stays -inf, nothing to guard (generation)
    # A word neither side can produce is -inf, but logaddexp(-inf, -inf)'s gradient is NaN, and NaN times the zero
    # gradient of an ignored label stays NaN: give those entries finite inputs and put -inf back afterwards.
    impossible = torch.isneginf(generated) & torch.isneginf(copied)
    mixed = torch.logaddexp(generated.masked_fill(impossible, 0.0), copied.masked_fill(impossible, 0.0))
    return mixed.masked_fill(impossible, -torch.inf)


def _log_copy_mass(copy_mass: torch.Tensor) -> torch.Tensor:
    # The floor keeps log finite (and its gradient free of inf * 0) for a source word that receives no attention;
    # it adds at most S * 1e-30 to a distribution.
    return copy_mass.clamp_min(COPY_MASS_FLOOR).log()


def gold_log_probs(
    vocab_logits: torch.Tensor,
    pointer_attention: torch.Tensor,
    extended_input_ids: torch.Tensor,
    switch_logit: torch.Tensor,
    labels: torch.Tensor,
) -> torch.Tensor:
    """log P(labels) under the mixture, without building the (B, T, V + N) distribution.

    Args:
        vocab_logits: (B, T, V) raw LM-head scores.
        pointer_attention: (B, T, S) pointer distribution over source positions.
        extended_input_ids: (B, S) source ids in the extended vocabulary.
        switch_logit: (B, T) logit(p_gen).
        labels: (B, T) extended ids; negative entries (ignored positions) give arbitrary values.
    Returns:
        (B, T) float32 log-probabilities.
    """
    batch_size, target_len, vocab_size = vocab_logits.shape
    labels = labels.clamp_min(0)
    in_vocab = labels < vocab_size
    # The fused cross-entropy kernel the base's own loss uses: no (B, T, V) temporaries beyond its own, unlike
    # logsumexp + gather, whose backward allocates several.
    vocab_nll = F.cross_entropy(
        vocab_logits.float().reshape(-1, vocab_size), torch.where(in_vocab, labels, -100).reshape(-1), reduction="none"
    ).view(batch_size, target_len)
    log_p_vocab = torch.where(in_vocab, -vocab_nll, -torch.inf)  # (B, T)
    # Copy mass of the gold word: attention summed over the source positions holding it.
    is_gold = extended_input_ids.unsqueeze(1) == labels.unsqueeze(-1)  # (B, T, S)
    copy_mass = (pointer_attention.float() * is_gold).sum(-1)  # (B, T)
    # A word absent from the source has no copy term at all (as in mix_vocab_logits), not a floored one.
    log_copy_mass = torch.where(is_gold.any(-1), _log_copy_mass(copy_mass), -torch.inf)
    return mix_log_probs(log_p_vocab, log_copy_mass, switch_logit.float())


def smoothed_log_probs(
    vocab_logits: torch.Tensor,
    pointer_attention: torch.Tensor,
    extended_input_ids: torch.Tensor,
    switch_logit: torch.Tensor,
    source_first_occurrence: torch.Tensor | None = None,
) -> torch.Tensor:
    """Mean log-probability over the classes each row really has (its V words plus its own OOV slots): (B, T).

    The label-smoothing term of the loss, equal to averaging the full mixture over columns [0, V + N_b) of row b,
    without building the (B, T, V + N) mixture: words outside the source get log p_gen + log P_vocab, so their sum
    follows from the log-softmax's sum; only the distinct source words are mixed one by one.
    """
    vocab_size = vocab_logits.shape[-1]
    logits = vocab_logits.float()
    log_normalizer = logits.logsumexp(-1, keepdim=True)  # (B, T, 1)
    sum_log_p_vocab = logits.sum(-1) - vocab_size * log_normalizer.squeeze(-1)  # (B, T)
    if source_first_occurrence is None:
        source_first_occurrence = first_occurrence(extended_input_ids)
    positions = torch.arange(extended_input_ids.shape[-1], device=extended_input_ids.device)
    is_first = source_first_occurrence == positions  # (B, S): one position per distinct source word
    in_vocab = extended_input_ids < vocab_size  # (B, S)
    source_ids = torch.where(in_vocab, extended_input_ids, 0).unsqueeze(1).expand(-1, logits.shape[1], -1)
    log_p_at_source = torch.where(
        in_vocab.unsqueeze(1), logits.gather(-1, source_ids) - log_normalizer, -torch.inf
    )  # (B, T, S)
    word_mass = source_word_mass(pointer_attention.float(), source_first_occurrence)  # (B, T, S)
    mixed_at_source = mix_log_probs(log_p_at_source, _log_copy_mass(word_mass), switch_logit.float().unsqueeze(-1))
    first_in_vocab = (is_first & in_vocab).unsqueeze(1)  # (B, 1, S)
    # Words of the vocabulary that are not in the source: generated only.
    num_generated_only = vocab_size - first_in_vocab.sum(-1)  # (B, 1)
    sum_generated_only = sum_log_p_vocab - torch.where(first_in_vocab, log_p_at_source, 0.0).sum(-1)
    log_p_gen = F.logsigmoid(switch_logit.float())
    # (-inf) * 0 would be NaN when p_gen = 0 and the source holds every word.
    generated_only = torch.where(num_generated_only > 0, log_p_gen * num_generated_only, 0.0) + torch.where(
        num_generated_only > 0, sum_generated_only, 0.0
    )
    total = generated_only + torch.where(is_first.unsqueeze(1), mixed_at_source, 0.0).sum(-1)  # (B, T)
    num_classes = vocab_size + (is_first & ~in_vocab).sum(-1, keepdim=True)  # (B, 1): V + N_b
    return total / num_classes


def count_oov_slots(extended_input_ids: torch.Tensor, vocab_size: int) -> int:
    """Extended slots a batch spans: the logits' width is vocab_size + this. One device sync."""
    return max(int(extended_input_ids.max()) + 1 - vocab_size, 0)


def vocabulary_log_probs(vocab_logits: torch.Tensor, num_oov_slots: int) -> torch.Tensor:
    """log P_vocab over the extended vocabulary: (B, T, V) raw logits -> (B, T, V + N) float32, -inf on the N slots."""
    logits = vocab_logits.float()
    if num_oov_slots:
        logits = pad_with_impossible_slots(logits, num_oov_slots)  # (B, T, V + N)
    return F.log_softmax(logits, dim=-1)


def mix_vocab_logits(
    vocab_logits: torch.Tensor,
    extended_input_ids: torch.Tensor,
    copy_side: tuple[torch.Tensor, torch.Tensor],
    num_oov_slots: int,
    logits_are_scratch: bool = False,
) -> torch.Tensor:
    """Raw LM-head logits (B, T, V) and `copy_side_of_mixture`'s terms -> the mixture (B, T, V + N) float32.

    Without autograd, two passes over the vocabulary: the log-softmax (in place in `vocab_logits` when the caller says
    they are scratch, i.e. no longer needed) and one write of log p_gen + log P_vocab into the wider result; then the
    S source ids alone are mixed. Padding first and normalising the padded copy, as autograd needs, costs a third pass
    over (B, T, V + N), which measurably slowed beam search's decoding steps at opus-mt size.
    """
    with_grad = torch.is_grad_enabled() and any(t.requires_grad for t in (vocab_logits, *copy_side))
    if with_grad:
        return mix_copy_side(vocabulary_log_probs(vocab_logits, num_oov_slots), extended_input_ids, copy_side)
    log_p_gen, copied = copy_side  # (B, T, 1), (B, T, S)
    logits = vocab_logits.float()  # a copy unless float32 already
    if logits is vocab_logits and not logits_are_scratch:
        log_p_vocab = F.log_softmax(logits, dim=-1)
    else:
        log_p_vocab = torch.log_softmax(logits, dim=-1, out=logits)  # (B, T, V)
    if num_oov_slots:
        vocab_size = log_p_vocab.shape[-1]
        generated = log_p_vocab.new_empty(*log_p_vocab.shape[:-1], vocab_size + num_oov_slots)  # (B, T, V + N)
        torch.add(log_p_vocab, log_p_gen, out=generated[..., :vocab_size])
        generated[..., vocab_size:] = -torch.inf
    else:
        generated = log_p_vocab.add_(log_p_gen)
    return _mix_at_source_ids(generated, extended_input_ids, copied)


def copy_side_of_mixture(
    pointer_attention: torch.Tensor, switch_logit: torch.Tensor, source_first_occurrence: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """What the mixture needs besides the vocabulary distribution, from the pointer and the switch alone:
    log p_gen (B, T, 1) and log((1 - p_gen) * copy mass of the word at each source position) (B, T, S).

    Args: pointer_attention (B, T, S) float32, switch_logit (B, T, 1) float32, source_first_occurrence (B, S).

    Separate from `mix_copy_side` so that generation can compute it before the base's LM head runs (see
    `PointerGeneratorForConditionalGeneration._copy_step_after_decoder`).
    """
    word_mass = source_word_mass(pointer_attention, source_first_occurrence)  # (B, T, S)
    return F.logsigmoid(switch_logit), F.logsigmoid(-switch_logit) + _log_copy_mass(word_mass)


def mix_copy_side(
    log_p_vocab: torch.Tensor, extended_input_ids: torch.Tensor, copy_side: tuple[torch.Tensor, torch.Tensor]
) -> torch.Tensor:
    """log P_vocab (B, T, V + N) and `copy_side_of_mixture`'s terms -> the mixture (B, T, V + N).

    Every word gets log p_gen + log P_vocab; only the S source ids also get copy mass, so they alone are recomputed.
    Without autograd `log_p_vocab` is updated in place and returned.
    """
    log_p_gen, copied = copy_side  # (B, T, 1), (B, T, S)
    with_grad = torch.is_grad_enabled() and any(t.requires_grad for t in (log_p_vocab, log_p_gen, copied))
    if not with_grad:
        return _mix_at_source_ids(log_p_vocab.add_(log_p_gen), extended_input_ids, copied)
    source_ids = _per_target_position(extended_input_ids, log_p_vocab.shape[1])  # (B, T, S)
    generated = log_p_vocab + log_p_gen
    # (Gathered from log_p_vocab: gather keeps its input for the backward pass, and `generated` is scattered into.)
    generated_at_source = log_p_vocab.gather(-1, source_ids) + log_p_gen  # (B, T, S)
    mixed_at_source = _log_add(generated_at_source, copied)  # (B, T, S)
    # Positions holding the same word write the same value, so the scatter order does not matter. But scatter_'s
    # backward hands each of them the word's whole gradient (a word twice in the source would count twice): an amax
    # over the equal values shares it among them instead.
    return generated.scatter_reduce_(-1, source_ids, mixed_at_source, reduce="amax", include_self=False)


def _mix_at_source_ids(generated: torch.Tensor, extended_input_ids: torch.Tensor, copied: torch.Tensor) -> torch.Tensor:
    """Without autograd: log p_gen + log P_vocab (B, T, V + N) -> the mixture, in place, by recomputing only the
    entries of the S source ids with their copy terms `copied` (B, T, S) (a sparse update: no zero-filled
    (B, T, V + N) buffer, no dense scatter_add)."""
    source_ids = _per_target_position(extended_input_ids, generated.shape[1])  # (B, T, S)
    mixed_at_source = _log_add(generated.gather(-1, source_ids), copied)  # the two halves of `mix_log_probs`
    # Positions holding the same word write the same value, so the scatter order does not matter.
    return generated.scatter_(-1, source_ids, mixed_at_source)


def pad_with_impossible_slots(logits: torch.Tensor, num_oov_slots: int) -> torch.Tensor:
    """(..., V) -> (..., V + num_oov_slots), the new slots at -inf. One write of the result, where F.pad fills it with
    the value first and then copies the logits over it."""
    return torch.cat([logits, logits.new_full((*logits.shape[:-1], num_oov_slots), -torch.inf)], dim=-1)


def first_occurrence(extended_input_ids: torch.Tensor) -> torch.Tensor:
    """For each source position, the position where its word first occurs in the row: (B, S).

    Found with one stable sort per row, so grouping repeated words costs O(S log S), not an S x S comparison.
    """
    source_len = extended_input_ids.shape[-1]
    sorted_ids, order = extended_input_ids.sort(dim=-1, stable=True)  # (B, S)
    starts_group = torch.ones_like(sorted_ids, dtype=torch.bool)
    starts_group[:, 1:] = sorted_ids[:, 1:] != sorted_ids[:, :-1]
    positions = torch.arange(source_len, device=sorted_ids.device).expand_as(sorted_ids)
    group_start = torch.where(starts_group, positions, 0).cummax(dim=-1).values  # (B, S), in sorted order
    first_of_sorted = order.gather(-1, group_start)  # stable sort: the group's smallest original position
    return torch.empty_like(order).scatter_(-1, order, first_of_sorted)  # (B, S), in original order


def repeated_source_rows(encoder_states: torch.Tensor, attention_mask: torch.Tensor | None) -> int:
    """r such that rows come in runs of r identical sources (beam search and num_return_sequences repeat each source
    r times), read off the rows themselves; 1 when they are not grouped. Once per generation.

    The run length is guessed from each row's first state and padding, then checked on every state with
    `torch.equal`, which builds no (B, S * D) comparison tensor.
    """
    rows = encoder_states.shape[0]
    same_as_first = (encoder_states[:, 0] == encoder_states[:1, 0]).all(-1)  # (B,)
    if attention_mask is not None:
        same_as_first &= (attention_mask == attention_mask[:1]).all(-1)
    run = rows if bool(same_as_first.all()) else int(same_as_first.int().argmin())
    if run <= 1 or rows % run:
        return 1
    for rows_of_sources in (encoder_states, attention_mask):
        if rows_of_sources is None:
            continue
        grouped = rows_of_sources.reshape(rows // run, run, -1)
        if not torch.equal(grouped, grouped[:, :1].expand_as(grouped)):
            return 1
    return run


def source_word_mass(pointer_attention: torch.Tensor, first: torch.Tensor) -> torch.Tensor:
    """Attention summed over every source position holding the same word, read back at each position: (B, T, S).

    `first` is `first_occurrence(extended_input_ids)`: a scatter_add over S slots, O(B T S).
    """
    index = _per_target_position(first, pointer_attention.shape[1])  # (B, T, S)
    grouped = torch.zeros_like(pointer_attention).scatter_add_(-1, index, pointer_attention)
    return grouped.gather(-1, index)


def _per_target_position(source_index: torch.Tensor, target_len: int) -> torch.Tensor:
    """(B, S) -> (B, T, S), a view. (A decoding step, T = 1, skips the expand: every op counts there.)"""
    source_index = source_index.unsqueeze(1)
    return source_index if target_len == 1 else source_index.expand(-1, target_len, -1)
