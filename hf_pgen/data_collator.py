"""Batch collation for pointer-generator training: `DataCollatorForSeq2Seq` plus the `extended_input_ids` key."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from transformers import DataCollatorForSeq2Seq
from transformers.utils import PaddingStrategy

from .tokenization_encode_pointer_generator import DECODING_ONLY_KEYS

__all__ = ["DataCollatorForPointerGenerator"]


@dataclass
class DataCollatorForPointerGenerator(DataCollatorForSeq2Seq):
    """`DataCollatorForSeq2Seq` for features made by `hf_pgen.encode_with_oovs` (or the processor).

    Everything `DataCollatorForSeq2Seq` does is unchanged (same arguments, same padding of `input_ids`,
    `attention_mask`, `labels` with `label_pad_token_id`, `decoder_input_ids` from
    `model.prepare_decoder_input_ids_from_labels` when `model` is given). On top of it:

    - `extended_input_ids` is padded to the padded `input_ids` width, on `tokenizer.padding_side`, with the pad id,
      so that padded positions agree with `input_ids` (the model checks that they do).
    - `oov_words`, `oov_spacing` and `num_truncated_tokens` (needed only to decode) are dropped: keep the OOV tables
      on the side, e.g. in the dataset, for decoding.

    Labels may hold extended ids (copied words). The decoder's *inputs* are the model's job:
    `PointerGeneratorForConditionalGeneration.prepare_decoder_input_ids_from_labels` makes them (keeping extended ids,
    which its forward embeds as the unknown token), and this collator calls it when `model=` is given, as
    `DataCollatorForSeq2Seq` does.

    Args:
        tokenizer ([`PreTrainedTokenizerBase`]):
            The tokenizer the features were encoded with; its pad id and `padding_side` pad `extended_input_ids` too.
        model ([`PreTrainedModel`], *optional*), padding, max_length, pad_to_multiple_of, label_pad_token_id,
        return_tensors (`"pt"` or `"np"`):
            As for `DataCollatorForSeq2Seq`.

    Raises:
        ValueError: for an empty list of features, features without `input_ids`, an `extended_input_ids` row whose
            length differs from its `input_ids`, rows of different lengths with `padding=False`, rows longer than
            `max_length` with `padding="max_length"`, or a tokenizer without a pad token.
        TypeError: for a feature that holds strings (a text column left in the dataset).

    ```python
    features = encode_with_oovs(tokenizer, sources, text_target=targets, vocab_size=model.config.vocab_size)
    collator = DataCollatorForPointerGenerator(tokenizer, model=model, pad_to_multiple_of=8)
    batch = collator([{key: features[key][i] for key in features} for i in range(len(sources))])
    loss = model(**batch).loss
    ```
    """

    def __call__(self, features: list[dict[str, Any]], return_tensors: str | None = None) -> dict[str, Any]:
        return_tensors = return_tensors or self.return_tensors
        if return_tensors not in ("pt", "np"):
            raise ValueError(f"return_tensors must be 'pt' or 'np', got {return_tensors!r}.")
        if not features:
            raise ValueError("Cannot collate an empty list of features.")
        extended = None
        if "extended_input_ids" in features[0]:
            extended = [feature["extended_input_ids"] for feature in features]
        features = [
            {key: value for key, value in feature.items() if key not in (*DECODING_ONLY_KEYS, "extended_input_ids")}
            for feature in features
        ]
        self._check(features, extended)

        batch = super().__call__(features, return_tensors=return_tensors)
        if extended is not None:
            batch["extended_input_ids"] = self._pad_like_input_ids(extended, batch["input_ids"])
        return batch

    def _pad_like_input_ids(self, extended: list[Any], input_ids: torch.Tensor | np.ndarray):
        """Pad the rows of `extended` to `input_ids`' (B, S) layout, through one boolean mask (no per-row loop)."""
        rows = [np.asarray(row, dtype=np.int64).reshape(-1) for row in extended]
        lengths = np.array([len(row) for row in rows])
        batch_size, width = input_ids.shape
        positions = np.arange(width)[None, :]  # (1, S)
        if self.tokenizer.padding_side == "left":
            real = positions >= (width - lengths)[:, None]  # (B, S)
        else:
            real = positions < lengths[:, None]
        padded = np.full((batch_size, width), self.tokenizer.pad_token_id, dtype=np.int64)
        padded[real] = np.concatenate(rows)  # row-major mask order matches the concatenation order
        return torch.from_numpy(padded) if isinstance(input_ids, torch.Tensor) else padded

    def _check(self, features: list[dict[str, Any]], extended: list[Any] | None) -> None:
        """Say what is wrong before `tokenizer.pad` fails with a generic tensor-conversion error."""
        for key, value in features[0].items():
            if isinstance(value, str) or (isinstance(value, (list, tuple)) and value and isinstance(value[0], str)):
                raise TypeError(
                    f"Feature `{key}` holds strings; DataCollatorForPointerGenerator returns tensors only. Remove "
                    f"that column (only {', '.join(DECODING_ONLY_KEYS)} are dropped automatically)."
                )
        if "input_ids" not in features[0]:
            raise ValueError("Every feature needs `input_ids` (encode the sources with hf_pgen.encode_with_oovs).")
        if extended is not None and self.tokenizer.pad_token_id is None:
            raise ValueError(
                "The tokenizer has no pad token, needed to pad `extended_input_ids`; set tokenizer.pad_token first."
            )
        lengths = {"input_ids": [len(feature["input_ids"]) for feature in features]}
        if extended is not None:
            extended_lengths = [len(row) for row in extended]
            for row, (n, m) in enumerate(zip(lengths["input_ids"], extended_lengths)):
                if n != m:
                    raise ValueError(
                        f"Feature {row}: `extended_input_ids` has {m} ids but `input_ids` has {n}; build both with "
                        "hf_pgen.encode_with_oovs (extended_input_ids repeats input_ids except at OOV positions)."
                    )
        if "labels" in features[0] and features[0]["labels"] is not None:
            lengths["labels"] = [len(feature["labels"]) for feature in features]

        padding = self.padding if isinstance(self.padding, bool) else PaddingStrategy(self.padding)
        if padding is False or padding == PaddingStrategy.DO_NOT_PAD:
            for key, key_lengths in lengths.items():
                if len(set(key_lengths)) > 1:
                    raise ValueError(
                        f"padding=False but `{key}` has different lengths {key_lengths}; enable padding (padding=True)."
                    )
        elif padding == PaddingStrategy.MAX_LENGTH and self.max_length is not None:
            for key, key_lengths in lengths.items():
                if max(key_lengths) > self.max_length:
                    raise ValueError(
                        f"A `{key}` sequence of length {max(key_lengths)} is longer than max_length={self.max_length}; "
                        "truncate when encoding (encode_with_oovs(..., max_length=...)) or raise max_length."
                    )
