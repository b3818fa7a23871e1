"""Word dropout for training batches: whole source (or decoder input) tokens replaced by the unknown token.

Sennrich & Zhang (2019, "Revisiting Low-Resource Neural Machine Translation") count word dropout among the settings
that make a small-data model learn: a model that cannot count on every word of its source (or of its own history) must
spread what it reads over the rest. Here a dropped token becomes the unknown token (Bowman et al. 2016), so the batch
keeps its shape and any encoder-decoder reads it unchanged.

For a pointer-generator the copy inputs must say the same thing as the encoder's: a dropped source token is unknown
to the copy distribution too. Its `extended_input_ids` entry becomes the unknown token, so attention on that
position copies nothing the model could not have read; and a label naming an out-of-vocabulary word (an extended id)
that no longer stands anywhere in its source becomes the unknown token, as it is for a model without copying (the
word cannot be copied from a source that no longer holds it; leaving the label would ask the model for a class of
probability zero).

>>> from hf_pgen.word_dropout import drop_words
>>> batch = drop_words(batch, source_probability=0.1, unk_token_id=tokenizer.unk_token_id,
...                    vocab_size=model.config.vocab_size, special_ids=tokenizer.all_special_ids)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import torch

__all__ = ["drop_words"]


def _droppable(ids: torch.Tensor, mask: torch.Tensor | None, special_ids: torch.Tensor) -> torch.Tensor:
    """Positions of `ids` (B, L) holding a real token: not padding (`mask` 0) and not a special token."""
    keep = ~torch.isin(ids, special_ids)
    return keep if mask is None else keep & mask.bool()


def drop_words(
    batch: Mapping[str, Any],
    source_probability: float,
    unk_token_id: int,
    vocab_size: int,
    special_ids: Iterable[int],
    target_probability: float = 0.0,
    generator: torch.Generator | None = None,
) -> dict[str, Any]:
    """A copy of a training `batch` with tokens dropped: each real source token with probability
    `source_probability`, each decoder input token with `target_probability`.

    Args:
        batch: collated tensors: `input_ids` (B, S) with `attention_mask` (B, S); optionally `extended_input_ids`
            (B, S) and `labels` (B, T) of a pointer-generator (extended ids >= `vocab_size` name the row's own
            out-of-vocabulary source words), and `decoder_input_ids` (B, T).
        source_probability: chance that a source token is dropped, in [0, 1).
        unk_token_id: the token a dropped one becomes.
        vocab_size: the base vocabulary size: ids at or above it are extended (copied) ids.
        special_ids: ids never dropped (padding, end and start of sequence; `tokenizer.all_special_ids` will do: the
            unknown token among them is dropped like a word, being one in a copy model's source).
        target_probability: chance that a decoder input token other than the first (the start token) is dropped.
            The labels stay: the model still learns to write the word, from a history that lacks it.
        generator: random source (`torch.Generator`); the default generator otherwise.

    Returns:
        A new dict with the same keys; the tensors it changes are new ones, the others are the batch's own.

    Raises:
        ValueError: a probability outside [0, 1), or a batch without `input_ids`.
    """
    for name, value in (("source_probability", source_probability), ("target_probability", target_probability)):
        if not 0.0 <= value < 1.0:
            raise ValueError(f"{name} must lie in [0, 1), got {value}.")
    if "input_ids" not in batch:
        raise ValueError("drop_words needs the batch's input_ids (B, S).")
    out = dict(batch)
    input_ids = batch["input_ids"]
    # The unknown token is droppable: in a copy model's source it stands for an out-of-vocabulary word, which
    # `extended_input_ids` names (dropping it there is what drops the word); elsewhere dropping it changes nothing.
    specials = torch.tensor(sorted(set(special_ids) - {unk_token_id}), device=input_ids.device)

    if source_probability > 0:
        draw = torch.rand(input_ids.shape, generator=generator, device=input_ids.device)
        dropped = (draw < source_probability) & _droppable(input_ids, batch.get("attention_mask"), specials)
        out["input_ids"] = input_ids.masked_fill(dropped, unk_token_id)
        extended = batch.get("extended_input_ids")
        if extended is not None:
            extended = extended.masked_fill(dropped, unk_token_id)
            out["extended_input_ids"] = extended
            labels = batch.get("labels")
            if labels is not None:
                # (B, T, S) membership: which extended labels still stand somewhere in their own source.
                copied = labels >= vocab_size
                present = (labels.unsqueeze(-1) == extended.unsqueeze(1)).any(-1)
                out["labels"] = labels.masked_fill(copied & ~present, unk_token_id)

    decoder_input_ids = batch.get("decoder_input_ids")
    if target_probability > 0 and decoder_input_ids is not None:
        draw = torch.rand(decoder_input_ids.shape, generator=generator, device=decoder_input_ids.device)
        dropped = (draw < target_probability) & _droppable(
            decoder_input_ids, batch.get("decoder_attention_mask"), specials
        )
        dropped[:, 0] = False  # the start token tells the decoder where it is
        out["decoder_input_ids"] = decoder_input_ids.masked_fill(dropped, unk_token_id)
    return out
