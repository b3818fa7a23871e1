"""The pointer-generator's input checks: what `forward` and `generate()` refuse, each error naming the cell, the value
and the fix (kept apart from the model so that its file holds the layers and the forward pass).

This file is saved next to the model as remote code (see `hf_pgen.SAVED_WITH_MODEL`): it imports only `torch`.
"""

from __future__ import annotations

import torch


def check_source_ids(config, input_ids: torch.Tensor | None, extended_input_ids: torch.Tensor | None) -> None:
    """That `input_ids` (B, S) lie in the base vocabulary and `extended_input_ids` (B, S) agree with them below it."""
    if input_ids is None:
        return
    vocab_size = config.vocab_size
    if int(input_ids.max()) >= vocab_size or int(input_ids.min()) < 0:
        raise ValueError(
            f"input_ids must lie in the base vocabulary [0, {vocab_size}); out-of-vocabulary words belong in "
            "extended_input_ids (input_ids carries the unknown token there)."
        )
    if extended_input_ids is None:
        return
    if extended_input_ids.shape != input_ids.shape:
        raise ValueError(
            f"extended_input_ids has shape {tuple(extended_input_ids.shape)} but input_ids has "
            f"{tuple(input_ids.shape)}: they must describe the same source positions. Build both with "
            "hf_pgen.encode_with_oovs."
        )
    mismatch = (extended_input_ids < vocab_size) & (extended_input_ids != input_ids)
    if config.unk_token_id is not None:
        # A piece whose text an OOV slot at another position spells whole (one character that a slow SentencePiece
        # normalizer expanded into several pieces, "½" -> "1" "⁄" "2") copies as the unknown token: nothing.
        mismatch &= extended_input_ids != config.unk_token_id
    if mismatch.any():
        row, col = mismatch.nonzero()[0].tolist()
        raise ValueError(
            f"extended_input_ids[{row}, {col}] = {int(extended_input_ids[row, col])} is below vocab_size "
            f"({vocab_size}) but input_ids there is {int(input_ids[row, col])}: below vocab_size both must hold the "
            "same id (or extended_input_ids the unknown token); only out-of-vocabulary words take extended ids "
            "(>= vocab_size). Build both with hf_pgen.encode_with_oovs."
        )


def check_labels(config, labels: torch.Tensor, source_ids: torch.Tensor) -> None:
    """That `labels` (B, T) name, beyond the vocabulary, only out-of-vocabulary words of their own row's source (B, S)."""
    if labels.shape[0] != source_ids.shape[0]:
        raise ValueError(f"labels has batch size {labels.shape[0]} but the source has {source_ids.shape[0]}.")
    extended = labels >= config.vocab_size  # (B, T)
    if not extended.any():
        return
    present = (labels.unsqueeze(-1) == source_ids.unsqueeze(1)).any(-1)  # (B, T)
    bad = extended & ~present
    if bad.any():
        row, col = bad.nonzero()[0].tolist()
        raise ValueError(
            f"labels[{row}, {col}] = {int(labels[row, col])} lies beyond the extended vocabulary of example {row}: "
            f"ids >= vocab_size ({config.vocab_size}) must name an out-of-vocabulary word of that example's "
            "own source (as in its extended_input_ids). Build labels with hf_pgen.encode_with_oovs."
        )


def check_trainer_label_smoothing(config, source_ids: torch.Tensor, num_oov_slots: int) -> None:
    """That a loss the Trainer computes from the logits is finite: every row of extended source ids (B, S) holds all
    `num_oov_slots` of the batch's out-of-vocabulary slots.

    The Trainer calls forward without labels but with num_items_in_batch only when it computes the loss itself from
    the logits (label_smoothing_factor, compute_loss_func). Its LabelSmoother averages -log p over every column, and a
    row that lacks some of the batch's slots has p = 0 there: the loss would be inf (logged as 0).
    """
    if num_oov_slots == 0:
        return
    slots_per_row = (source_ids.max(-1).values + 1 - config.vocab_size).clamp_min(0)  # (B,)
    if bool((slots_per_row < num_oov_slots).any()):
        raise ValueError(
            "Seq2SeqTrainer computes this loss from the logits (label_smoothing_factor > 0 or compute_loss_func), "
            "but the pointer-generator's logits give probability 0 to out-of-vocabulary slots an example lacks, so "
            "a smoothed loss over all columns is infinite. Smooth over each example's own classes instead: set "
            "model.config.label_smoothing = <factor> and label_smoothing_factor=0 in the training arguments, or "
            "use hf_pgen.PointerGeneratorSeq2SeqTrainer, which passes label_smoothing_factor to the model."
        )
