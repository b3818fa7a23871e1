"""Batch collation for pointer-generator training (extended-vocabulary inputs and labels)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from transformers import PreTrainedTokenizerBase
from transformers.utils import PaddingStrategy

__all__ = ["DataCollatorForPointerGenerator"]

_LABEL_KEYS = ("labels", "decoder_input_ids", "decoder_attention_mask")
_DROPPED_KEYS = ("oov_words",)


@dataclass
class DataCollatorForPointerGenerator:
    """Pads features produced by ``encode_with_oovs`` for ``Seq2SeqTrainer`` / a ``DataLoader``.

    Each feature is a mapping with ``input_ids``, ``attention_mask``, ``extended_input_ids`` and
    ``labels`` (optionally ``decoder_input_ids`` / ``decoder_attention_mask`` / ``token_type_ids``),
    as lists or 1-D tensors of varying length. Returns a ``dict`` of ``(B, S)`` tensors for the
    source keys and ``(B, T)`` tensors for the label keys:

    - ``input_ids`` / ``extended_input_ids`` / ``decoder_input_ids`` are padded with the tokenizer's
      pad id, ``attention_mask`` / ``decoder_attention_mask`` with 0, ``token_type_ids`` with the
      tokenizer's pad token type id, ``labels`` with ``label_pad_token_id``.
    - Padding is on ``tokenizer.padding_side``. Source keys share one length, label keys another.
    - ``oov_words`` (lists of strings, needed only for decoding) is dropped because the batch holds
      tensors only; keep the OOV tables on the side (e.g. in the dataset) for decoding.
    - If ``model`` has ``prepare_decoder_input_ids_from_labels`` and the features carry no
      ``decoder_input_ids``, it is called with the padded labels to create them. When
      ``map_extended_decoder_inputs_to_unk`` (default), ids ``>= vocab_size`` in the created
      ``decoder_input_ids`` (copied OOV words) are replaced by the unknown id, since they have no
      embedding; ``vocab_size`` defaults to ``model.config.vocab_size``.

    Args follow ``DataCollatorForSeq2Seq``: ``padding`` is ``True``/``"longest"``, ``"max_length"``
    (pads to ``max_length``; longer sequences raise) or ``False``/``"do_not_pad"`` (lengths must
    match); ``pad_to_multiple_of`` rounds the padded length up; ``return_tensors`` is ``"pt"``
    (or ``"np"``).
    """

    tokenizer: PreTrainedTokenizerBase
    model: Any | None = None
    padding: bool | str | PaddingStrategy = True
    max_length: int | None = None
    pad_to_multiple_of: int | None = None
    label_pad_token_id: int = -100
    return_tensors: str = "pt"
    map_extended_decoder_inputs_to_unk: bool = True
    vocab_size: int | None = None

    def _pad_value(self, key: str) -> int:
        if key in ("labels",):
            return self.label_pad_token_id
        if key in ("attention_mask", "decoder_attention_mask"):
            return 0
        if key == "special_tokens_mask":
            return 1
        if key == "token_type_ids":
            return int(getattr(self.tokenizer, "pad_token_type_id", 0) or 0)
        pad_id = self.tokenizer.pad_token_id
        if pad_id is None:
            raise ValueError(
                f"The tokenizer has no pad token, needed to pad `{key}`; set tokenizer.pad_token first."
            )
        return int(pad_id)

    def _strategy(self) -> PaddingStrategy:
        if isinstance(self.padding, bool):
            return PaddingStrategy.LONGEST if self.padding else PaddingStrategy.DO_NOT_PAD
        return PaddingStrategy(self.padding)

    def _width(self, longest: int) -> int:
        strategy = self._strategy()
        width = longest
        if strategy == PaddingStrategy.MAX_LENGTH:
            if self.max_length is None:
                raise ValueError("padding='max_length' needs max_length.")
            if longest > self.max_length:
                raise ValueError(
                    f"A sequence of length {longest} is longer than max_length={self.max_length}; "
                    "truncate when encoding."
                )
            width = self.max_length
        if strategy != PaddingStrategy.DO_NOT_PAD and self.pad_to_multiple_of:
            width = -(-width // self.pad_to_multiple_of) * self.pad_to_multiple_of
        return width

    def _pad_group(self, seqs_by_key: dict[str, list[torch.Tensor]], same_rows: bool) -> dict[str, torch.Tensor]:
        """Pad keys that share one width (source keys, or label keys) into full tensors.

        Builds one ``(B, W)`` tensor per key filled with the key's pad value and writes the
        concatenated sequences through a boolean mask (no per-token Python loop).
        """
        if not seqs_by_key:
            return {}
        lengths = {key: torch.tensor([len(s) for s in seqs], dtype=torch.long) for key, seqs in seqs_by_key.items()}
        if same_rows:
            (ref_key, ref), *rest = lengths.items()
            for key, key_lengths in rest:
                if not torch.equal(ref, key_lengths):
                    raise ValueError(
                        f"`{key}` lengths {key_lengths.tolist()} differ from `{ref_key}` lengths {ref.tolist()}."
                    )
        longest = max(int(l.max()) for l in lengths.values())
        if self._strategy() == PaddingStrategy.DO_NOT_PAD:
            for key, key_lengths in lengths.items():
                if bool((key_lengths != longest).any()):
                    raise ValueError(
                        f"padding=False but `{key}` has different lengths {key_lengths.tolist()}; enable padding."
                    )
        width = self._width(longest)
        positions = torch.arange(width).unsqueeze(0)
        left = self.tokenizer.padding_side == "left"
        out: dict[str, torch.Tensor] = {}
        for key, seqs in seqs_by_key.items():
            key_lengths = lengths[key].unsqueeze(1)
            mask = positions >= (width - key_lengths) if left else positions < key_lengths
            flat = torch.cat(seqs)
            batch = torch.full((len(seqs), width), self._pad_value(key), dtype=flat.dtype)
            batch[mask] = flat  # row-major mask order matches the concatenation order
            out[key] = batch
        return out

    def __call__(self, features: list[dict[str, Any]], return_tensors: str | None = None) -> dict[str, Any]:
        return_tensors = return_tensors or self.return_tensors
        if return_tensors not in ("pt", "np"):
            raise ValueError(f"return_tensors must be 'pt' or 'np', got {return_tensors!r}.")
        if not features:
            raise ValueError("Cannot collate an empty list of features.")

        keys = [k for k in features[0].keys() if k not in _DROPPED_KEYS]
        source: dict[str, list[torch.Tensor]] = {}
        target: dict[str, list[torch.Tensor]] = {}
        scalars: dict[str, torch.Tensor] = {}
        for key in keys:
            values = [f[key] for f in features]
            first = values[0]
            if isinstance(first, (int, float)) or (torch.is_tensor(first) and first.dim() == 0):
                scalars[key] = torch.as_tensor(values)
                continue
            if isinstance(first, str) or (
                isinstance(first, (list, tuple)) and len(first) > 0 and isinstance(first[0], str)
            ):
                raise TypeError(
                    f"Feature `{key}` holds strings; DataCollatorForPointerGenerator returns tensors only. "
                    "Remove that column (only `oov_words` is dropped automatically)."
                )
            seqs = [torch.as_tensor(v, dtype=torch.long).reshape(-1) for v in values]
            (target if key in _LABEL_KEYS else source)[key] = seqs

        batch: dict[str, Any] = {}
        batch.update(self._pad_group(source, same_rows=True))
        batch.update(self._pad_group(target, same_rows=False))
        batch.update(scalars)

        if (
            "labels" in batch
            and "decoder_input_ids" not in batch
            and self.model is not None
            and hasattr(self.model, "prepare_decoder_input_ids_from_labels")
        ):
            decoder_input_ids = self.model.prepare_decoder_input_ids_from_labels(labels=batch["labels"])
            if self.map_extended_decoder_inputs_to_unk:
                decoder_input_ids = self._map_extended_to_unk(decoder_input_ids)
            batch["decoder_input_ids"] = decoder_input_ids

        if return_tensors == "np":
            batch = {k: v.numpy() if torch.is_tensor(v) else v for k, v in batch.items()}
        return batch

    def _map_extended_to_unk(self, ids: torch.Tensor) -> torch.Tensor:
        vocab_size = self.vocab_size
        if vocab_size is None:
            config = getattr(self.model, "config", None)
            if config is not None and hasattr(config, "get_text_config"):
                config = config.get_text_config(decoder=True)
            vocab_size = getattr(config, "vocab_size", None)
        unk_id = self.tokenizer.unk_token_id
        if vocab_size is None or unk_id is None:
            return ids
        return ids.masked_fill(ids >= vocab_size, unk_id)
