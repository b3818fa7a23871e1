"""Extended-vocabulary encoding and decoding for pointer-generator models (See et al., 2017).

A pointer-generator model predicts a distribution over ``vocab_size + N`` ids, where
``vocab_size`` is the *model's* output width (``model.config.vocab_size``, which may be larger
than ``len(tokenizer)``: T5 pads 32100 to 32128) and ``N`` is the number of distinct
out-of-vocabulary (OOV) source words of an example. Source tokens that the tokenizer maps to
its unknown token get the extended id ``vocab_size + k``, ``k = 0, 1, ...`` in order of first
appearance in *that* example; the model can then copy them by pointing, and generated ids
``>= vocab_size`` are turned back into the source's surface strings by :func:`decode_with_oovs`.

This file is saved next to the model as remote code: it imports only the standard library,
``torch`` and ``transformers``.

Public API: :func:`encode_with_oovs`, :func:`decode_with_oovs`, :func:`batch_decode_with_oovs`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from transformers import BatchEncoding, PreTrainedTokenizerBase

__all__ = ["encode_with_oovs", "decode_with_oovs", "batch_decode_with_oovs"]

# Keyword arguments that would break the one-row-per-example / char-offset bookkeeping.
_UNSUPPORTED_KWARGS = ("return_overflowing_tokens", "is_split_into_words", "text_pair", "text_pair_target")

# Private-use code points used as placeholders for copied words while the tokenizer's own
# decoder joins the in-vocabulary tokens; the first one absent from the tokens is used.
_SENTINEL_CANDIDATES = ("\ue000", "\U000f0000", "\U00100000", "\ufdd0")


def _check_tokenizer(tokenizer: PreTrainedTokenizerBase) -> None:
    if not getattr(tokenizer, "is_fast", False) or not hasattr(tokenizer, "backend_tokenizer"):
        raise TypeError(
            "encode_with_oovs/decode_with_oovs need a fast (🤗 tokenizers-backed) tokenizer, because OOV surface "
            f"strings are recovered through offset mappings; got {type(tokenizer).__name__}."
        )


def _check_vocab_size(tokenizer: PreTrainedTokenizerBase, vocab_size: int) -> int:
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int):
        raise TypeError(f"vocab_size must be an int (the model's output width), got {vocab_size!r}.")
    if vocab_size < len(tokenizer):
        raise ValueError(
            f"vocab_size={vocab_size} is smaller than len(tokenizer)={len(tokenizer)}: extended ids would collide "
            "with real token ids. Pass the model's output width (model.config.vocab_size)."
        )
    return vocab_size


def _as_text_batch(text: Any, name: str) -> tuple[list[str], bool]:
    """Return ``(texts, is_batched)``; raise a ValueError naming the index of a bad example."""
    if text is None:
        raise ValueError(f"`{name}` is None; expected a string or a list of strings.")
    if isinstance(text, str):
        return [text], False
    if not isinstance(text, Sequence):
        raise TypeError(f"`{name}` must be a str or a list of str, got {type(text).__name__}.")
    texts = list(text)
    for i, item in enumerate(texts):
        if item is None:
            raise ValueError(f"`{name}[{i}]` is None; every example must be a string (use '' for an empty text).")
        if not isinstance(item, str):
            raise ValueError(f"`{name}[{i}]` must be a str, got {type(item).__name__}: {item!r}.")
    return texts, True


def _extend_row(
    ids: list[int],
    offsets: list[tuple[int, int]],
    text: str,
    unk_id: int | None,
    vocab_size: int,
    table: dict[str, int],
    grow: bool,
) -> list[int]:
    """Copy of ``ids`` where unknown tokens carry ``vocab_size + slot``.

    ``table`` maps surface string -> slot. With ``grow`` new surfaces get new slots (source side);
    without it, unknown surfaces absent from the table keep the unknown id (target side).
    Zero-width unknown tokens (no recoverable surface) keep the unknown id.
    """
    out = list(ids)
    if unk_id is None:
        return out
    for i, tok_id in enumerate(ids):
        if tok_id != unk_id:
            continue
        start, end = offsets[i]
        if end <= start:
            continue
        surface = text[start:end]
        slot = table.get(surface)
        if slot is None:
            if not grow:
                continue
            slot = table[surface] = len(table)
        out[i] = vocab_size + slot
    return out


def encode_with_oovs(
    tokenizer: PreTrainedTokenizerBase,
    text: str | list[str],
    text_target: str | list[str] | None = None,
    *,
    vocab_size: int,
    max_length: int | None = None,
    max_target_length: int | None = None,
    truncation: bool | str = True,
    padding: bool | str = False,
    return_tensors: str | None = None,
    label_pad_token_id: int = -100,
    **tokenizer_kwargs: Any,
) -> BatchEncoding:
    """Tokenize sources (and targets) and assign per-example extended ids to OOV source words.

    Args:
        tokenizer: a fast tokenizer (offset mappings are needed). Tokenizers without an unknown
            token, or that never produce it (byte-level BPE), yield no OOV slots.
        text: one source string or a list of ``B`` source strings. ``None`` entries raise a
            ``ValueError`` naming the index; ``""`` encodes to the special tokens only.
        text_target: optional target string(s), same number as ``text``.
        vocab_size: the model's output width (``model.config.vocab_size``, ``>= len(tokenizer)``);
            extended ids start here.
        max_length / max_target_length: truncation lengths for sources / targets
            (``max_target_length`` defaults to ``max_length``).
        truncation, padding, return_tensors: as for the tokenizer's ``__call__``.
        label_pad_token_id: value written into padded label positions (default -100).
        **tokenizer_kwargs: forwarded to the tokenizer (``return_token_type_ids`` defaults to False).

    Returns:
        ``BatchEncoding`` with, for ``B`` examples of (padded) source length ``S`` / target length ``T``:

        - ``input_ids``, ``attention_mask``: ``(B, S)`` as the tokenizer returns them.
        - ``extended_input_ids``: ``(B, S)``; equal to ``input_ids`` except that unknown-token
          positions carry ``vocab_size + k`` (padding positions keep the pad id).
        - ``oov_words``: ``list[list[str]]`` (length ``B``); ``oov_words[b][k]`` is the original
          source text (via offsets) of slot ``k``. The same surface twice shares one slot.
        - ``labels`` (only with ``text_target``): ``(B, T)`` target ids where an unknown target token
          whose surface is one of *its own source's* OOV words gets that extended id (otherwise the
          unknown id); padded positions hold ``label_pad_token_id``.

        A single ``str`` input without ``return_tensors`` gives un-batched lists (``oov_words`` is then
        a ``list[str]``), like the tokenizer does; with ``return_tensors`` tensors keep the batch axis
        and ``oov_words`` stays a (non-tensor) list of lists.
    """
    _check_tokenizer(tokenizer)
    vocab_size = _check_vocab_size(tokenizer, vocab_size)
    for key in _UNSUPPORTED_KWARGS:
        if tokenizer_kwargs.get(key):
            raise ValueError(f"encode_with_oovs does not support `{key}`.")
        tokenizer_kwargs.pop(key, None)
    keep_offsets = bool(tokenizer_kwargs.pop("return_offsets_mapping", False))
    tokenizer_kwargs.setdefault("return_token_type_ids", False)
    tokenizer_kwargs.pop("return_attention_mask", None)

    texts, is_batched = _as_text_batch(text, "text")
    targets = None
    if text_target is not None:
        targets, target_batched = _as_text_batch(text_target, "text_target")
        if target_batched != is_batched or len(targets) != len(texts):
            raise ValueError(
                f"`text` and `text_target` must have the same number of examples, got {len(texts)} and {len(targets)}."
            )
    if max_target_length is None:
        max_target_length = max_length

    common = dict(truncation=truncation, padding=padding, return_offsets_mapping=True, return_attention_mask=True)
    enc = tokenizer(texts, max_length=max_length, **common, **tokenizer_kwargs)
    unk_id = tokenizer.unk_token_id

    tables: list[dict[str, int]] = []
    extended: list[list[int]] = []
    for ids, offs, src in zip(enc["input_ids"], enc["offset_mapping"], texts):
        table: dict[str, int] = {}
        extended.append(_extend_row(ids, offs, src, unk_id, vocab_size, table, grow=True))
        tables.append(table)

    data: dict[str, Any] = {k: v for k, v in enc.items() if k != "offset_mapping" or keep_offsets}
    data["extended_input_ids"] = extended

    if targets is not None:
        tgt = tokenizer(text_target=targets, max_length=max_target_length, **common, **tokenizer_kwargs)
        labels = []
        for ids, offs, mask, tgt_text, table in zip(
            tgt["input_ids"], tgt["offset_mapping"], tgt["attention_mask"], targets, tables
        ):
            row = _extend_row(ids, offs, tgt_text, unk_id, vocab_size, table, grow=False)
            labels.append([t if m else label_pad_token_id for t, m in zip(row, mask)])
        data["labels"] = labels

    oov_words = [list(table) for table in tables]  # dicts keep insertion order = slot order
    if not is_batched and return_tensors is None:
        data = {k: v[0] for k, v in data.items()}
        out = BatchEncoding(data)
        out["oov_words"] = oov_words[0]
        return out
    out = BatchEncoding(data, tensor_type=return_tensors)
    out["oov_words"] = oov_words
    return out


def _to_id_list(token_ids: Any) -> list[int]:
    if isinstance(token_ids, int):
        return [token_ids]
    if hasattr(token_ids, "tolist"):  # torch / numpy
        token_ids = token_ids.tolist()
        if isinstance(token_ids, int):
            return [token_ids]
    ids = list(token_ids)
    if ids and isinstance(ids[0], (list, tuple)):
        if len(ids) == 1:
            ids = list(ids[0])
        else:
            raise ValueError("decode_with_oovs takes one sequence; use batch_decode_with_oovs for a batch.")
    return [int(i) for i in ids]


def _special_ids(tokenizer: PreTrainedTokenizerBase) -> set[int]:
    ids = {i for i, tok in tokenizer.added_tokens_decoder.items() if getattr(tok, "special", False)}
    ids.update(tokenizer.all_special_ids)
    return ids


def _clean_up(tokenizer: PreTrainedTokenizerBase, text: str, clean_up_tokenization_spaces: bool | None) -> str:
    """Apply the tokenizer's ``clean_up_tokenization`` exactly when its own ``decode`` would."""
    flag = (
        clean_up_tokenization_spaces
        if clean_up_tokenization_spaces is not None
        else getattr(tokenizer, "clean_up_tokenization_spaces", False)
    )
    if not flag:
        return text
    if type(tokenizer.backend_tokenizer.model).__name__ == "BPE" and not getattr(
        tokenizer, "clean_up_tokenization_spaces_for_bpe_even_though_it_will_corrupt_output", False
    ):
        return text
    return tokenizer.clean_up_tokenization(text)


def decode_with_oovs(
    tokenizer: PreTrainedTokenizerBase,
    token_ids: Sequence[int] | torch.Tensor,
    oov_words: Sequence[str] | None,
    *,
    vocab_size: int,
    skip_special_tokens: bool = True,
    clean_up_tokenization_spaces: bool | None = None,
) -> str:
    """Decode one sequence of (possibly extended) ids, splicing in copied source words.

    Args:
        token_ids: ``(L,)`` ids (list, tuple, 1-D tensor/array). ``-100`` is treated as padding and
            skipped; ids in ``[len(tokenizer), vocab_size)`` (model padding rows) are skipped; an id
            ``vocab_size + k`` becomes ``oov_words[k]``.
        oov_words: this example's OOV table from :func:`encode_with_oovs` (``None`` = no OOVs).
        vocab_size: the model's output width used at encode time.
        skip_special_tokens, clean_up_tokenization_spaces: as for ``tokenizer.decode``.

    Returns:
        The text. Spacing around copied words comes from the tokenizer's own decoder: each copied word
        is a placeholder token while the whole sequence is decoded, so word-level families separate it
        with spaces and Metaspace/Unigram keep it glued unless a ``▁`` token precedes it.

    Raises:
        ValueError: for an id ``>= vocab_size + len(oov_words)`` (no such OOV slot) or a negative id
            other than -100.
    """
    _check_tokenizer(tokenizer)
    vocab_size = _check_vocab_size(tokenizer, vocab_size)
    oov_words = [] if oov_words is None else list(oov_words)
    n_real = len(tokenizer)

    items: list[tuple[bool, int]] = []  # (is_copy, id or slot)
    for pos, tok_id in enumerate(_to_id_list(token_ids)):
        if tok_id == -100:
            continue
        if tok_id < 0:
            raise ValueError(f"Invalid token id {tok_id} at position {pos} (only -100 is allowed as padding).")
        if tok_id >= vocab_size:
            slot = tok_id - vocab_size
            if slot >= len(oov_words):
                raise ValueError(
                    f"Token id {tok_id} at position {pos} refers to OOV slot {slot} (vocab_size={vocab_size}), but "
                    f"this example has only {len(oov_words)} OOV word(s): {oov_words!r}."
                )
            items.append((True, slot))
        elif tok_id >= n_real:
            continue  # padding rows of the model's output layer: no token
        else:
            items.append((False, tok_id))

    if not any(is_copy for is_copy, _ in items):
        return tokenizer.decode(
            [i for _, i in items],
            skip_special_tokens=skip_special_tokens,
            clean_up_tokenization_spaces=clean_up_tokenization_spaces,
        )
    return _decode_spliced(tokenizer, items, oov_words, skip_special_tokens, clean_up_tokenization_spaces)


def _decode_spliced(
    tokenizer: PreTrainedTokenizerBase,
    items: list[tuple[bool, int]],
    oov_words: list[str],
    skip_special_tokens: bool,
    clean_up_tokenization_spaces: bool | None,
) -> str:
    backend = tokenizer.backend_tokenizer
    special = _special_ids(tokenizer) if skip_special_tokens else set()
    tokens: list[str | None] = []  # None marks a copied word
    surfaces: list[str] = []
    for is_copy, value in items:
        if is_copy:
            tokens.append(None)
            surfaces.append(oov_words[value])
        elif value not in special:
            tok = backend.id_to_token(value)
            if tok is not None:
                tokens.append(tok)

    joined = "".join(t for t in tokens if t is not None) + "".join(surfaces)
    sentinel = next((s for s in _SENTINEL_CANDIDATES if s not in joined), None)
    if sentinel is not None:
        filled = [sentinel if t is None else t for t in tokens]
        text = backend.decoder.decode(filled) if backend.decoder is not None else " ".join(filled)
        text = _clean_up(tokenizer, text, clean_up_tokenization_spaces)
        parts = text.split(sentinel)
        if len(parts) == len(surfaces) + 1:
            pieces = [parts[0]]
            for surface, part in zip(surfaces, parts[1:]):
                pieces += [surface, part]
            return "".join(pieces)

    # Fallback for decoders that do not pass placeholders through: decode the in-vocab runs
    # separately and join everything with single spaces.
    chunks: list[str] = []
    run: list[str] = []

    def flush() -> None:
        if run:
            text = backend.decoder.decode(run) if backend.decoder is not None else " ".join(run)
            text = _clean_up(tokenizer, text, clean_up_tokenization_spaces).strip()
            if text:
                chunks.append(text)
            run.clear()

    surface_iter = iter(surfaces)
    for tok in tokens:
        if tok is None:
            flush()
            chunks.append(next(surface_iter))
        else:
            run.append(tok)
    flush()
    return " ".join(chunks)


def batch_decode_with_oovs(
    tokenizer: PreTrainedTokenizerBase,
    sequences: Sequence[Sequence[int]] | torch.Tensor,
    oov_words_per_example: Sequence[Sequence[str] | None],
    *,
    vocab_size: int,
    skip_special_tokens: bool = True,
    clean_up_tokenization_spaces: bool | None = None,
) -> list[str]:
    """Decode ``(B, L)`` sequences, each with its own OOV table (``oov_words_per_example[b]``).

    See :func:`decode_with_oovs` for the per-sequence rules. Raises ``ValueError`` when the number
    of sequences and of OOV tables differ.
    """
    if hasattr(sequences, "tolist"):
        sequences = sequences.tolist()
    sequences = list(sequences)
    tables = list(oov_words_per_example)
    if len(sequences) != len(tables):
        raise ValueError(
            f"Got {len(sequences)} sequences but {len(tables)} OOV tables; pass one table per example "
            "(beam outputs with num_return_sequences > 1 need their table repeated)."
        )
    return [
        decode_with_oovs(
            tokenizer,
            seq,
            table,
            vocab_size=vocab_size,
            skip_special_tokens=skip_special_tokens,
            clean_up_tokenization_spaces=clean_up_tokenization_spaces,
        )
        for seq, table in zip(sequences, tables)
    ]
