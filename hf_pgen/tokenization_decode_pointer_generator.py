"""Extended-vocabulary decoding for pointer-generator models: generated ids, copies included, back to text.

An id `vocab_size + k` is slot `k` of its example's OOV table (`oov_words`, from `encode_with_oovs`); the copied word
comes out exactly as the source wrote it, and the spacing around it comes from the tokenizer's own decoder (see
`decode_with_oovs` for the rules per tokenizer family), with the source's own spacing where `oov_spacing` recorded it.

Public API: `decode_with_oovs`, `batch_decode_with_oovs` (also `hf_pgen.decode_with_oovs`, ...).

This file is saved next to the model as remote code (see `hf_pgen.SAVED_WITH_MODEL`): it imports only the standard
library, `torch`, `transformers` and its hf_pgen siblings (relative imports); see `hf_pgen.SAVED_WITH_MODEL`.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from transformers import PreTrainedTokenizerBase

from .deprecation import renamed_keywords
from .tokenization_encode_pointer_generator import check_tokenizer, check_vocab_size, tokenizer_width

__all__ = ["decode_with_oovs", "batch_decode_with_oovs"]

# decoder joins the in-vocabulary tokens; the first one absent from the tokens is used.
_SENTINEL_CANDIDATES = ("\ue000", "\U000f0000", "\U00100000", "\ufdd0")

# Word-level tokenizers whose unknown token swallows the word-start marker ("▁Zyxwvut" is one unknown token) cannot
# say whether a copied word starts a new word: one slot serves "open Zyxwvut" and "%(Zyxwvut)s". The copy starts a
# word after a letter/digit, after the characters of _SPACE_AFTER, after a closing quote, and at the start of the
# text; it is glued after any other character (brackets, opening quotes, "_", "-", "/", "%", "<", ">", line breaks:
# placeholders and markup), and a copied closing punctuation mark (_ATTACHES_LEFT) is glued to what precedes it.
# Measured on the embedded corpus (validation + test, 8K word-level vocabulary): 2,776/2,776 OOV words after a letter
# or digit start a word; after "(", "-", "_", "/", '"', ">", "{", "<" 1,787 of 1,798 are glued.
_SPACE_AFTER = frozenset(".,;:!?…}]»”“‘–—|")
_ATTACHES_LEFT = frozenset(".,;:!?…)]}»”’%")
_SYMMETRIC_QUOTES = frozenset("\"'`")


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
            raise ValueError(
                f"decode_with_oovs takes one sequence, got {len(ids)}; use batch_decode_with_oovs(tokenizer, ids, "
                "oov_words, vocab_size=...) for a batch."
            )
    return [int(i) for i in ids]


def _check_oov_words(oov_words: Any) -> list[str]:
    if oov_words is None:
        return []
    if isinstance(oov_words, str):
        raise TypeError(
            f"oov_words must be this example's list of OOV words (batch['oov_words'][i]), got the string {oov_words!r}."
        )
    words = list(oov_words)
    for word in words:
        if not isinstance(word, str):
            what = type(word).__name__
            if isinstance(word, (list, tuple)):
                what = "a list of tables (the whole batch's oov_words)"
            raise TypeError(
                f"oov_words must be ONE example's table, a list of str (batch['oov_words'][i]); got {what}. Pass "
                "batch['oov_words'][i] to decode_with_oovs, or decode the whole batch with "
                "batch_decode_with_oovs(tokenizer, ids, batch['oov_words'], vocab_size=...)."
            )
    return words


def _check_spacing(oov_spacing: Any, oov_words: list[str]) -> list[Mapping[str, Any]] | None:
    """One example's `oov_spacing` as a list of records (None: not given), checked against its OOV words."""
    if oov_spacing is None:
        return None
    records = list(oov_spacing)
    if any(not isinstance(record, Mapping) for record in records):
        what = next(type(record).__name__ for record in records if not isinstance(record, Mapping))
        if any(isinstance(record, (list, tuple)) for record in records):
            what = "a list of lists (the whole batch's oov_spacing)"
        raise TypeError(
            f"oov_spacing must be ONE example's spacing records, a list of dicts (batch['oov_spacing'][i]); got "
            f"{what}. Pass batch['oov_spacing'][i] with batch['oov_words'][i]."
        )
    if len(records) != len(oov_words):
        raise ValueError(
            f"oov_spacing has {len(records)} record(s) but oov_words has {len(oov_words)} word(s): pass the two from the "
            "same example of the same encode_with_oovs / processor output (batch['oov_words'][i] and "
            "batch['oov_spacing'][i])."
        )
    return records


def _special_ids(tokenizer: PreTrainedTokenizerBase) -> set[int]:
    ids = {i for i, tok in tokenizer.added_tokens_decoder.items() if getattr(tok, "special", False)}
    ids.update(tokenizer.all_special_ids)
    # M2M100's language codes are not registered as special tokens in Transformers 5, yet they are: the forced first
    # token of every generated sequence.
    lang_ids = getattr(tokenizer, "lang_token_to_id", None)
    if isinstance(lang_ids, dict):
        ids.update(lang_ids.values())
    return ids


def _cleans_up(tokenizer: PreTrainedTokenizerBase, clean_up_tokenization_spaces: bool | None) -> bool:
    """Whether the tokenizer's own `decode` applies `clean_up_tokenization` (fast BPE models never do)."""
    flag = (
        clean_up_tokenization_spaces
        if clean_up_tokenization_spaces is not None
        else getattr(tokenizer, "clean_up_tokenization_spaces", False)
    )
    if not flag:
        return False
    if (
        getattr(tokenizer, "is_fast", False)
        and type(tokenizer.backend_tokenizer.model).__name__ == "BPE"
        and not getattr(tokenizer, "clean_up_tokenization_spaces_for_bpe_even_though_it_will_corrupt_output", False)
    ):
        return False
    return True


def decode_with_oovs(
    tokenizer: PreTrainedTokenizerBase,
    token_ids: Sequence[int] | torch.Tensor,
    oov_words: Sequence[str] | None,
    *,
    vocab_size: int,
    skip_special_tokens: bool = True,
    clean_up_tokenization_spaces: bool | None = None,
    oov_spacing: Sequence[Mapping[str, Any]] | None = None,
) -> str:
    """Decode one sequence of (possibly extended) ids, splicing in copied source words.

    Args:
        token_ids: `(L,)` ids (list, tuple, 1-D tensor/array). `-100` is treated as padding and
            skipped; ids in `[len(tokenizer), vocab_size)` (model padding rows) are skipped; an id
            `vocab_size + k` becomes `oov_words[k]`.
        oov_words: this example's OOV table from `encode_with_oovs` (`batch["oov_words"][i]`;
            `None` = no OOVs).
        vocab_size: the model's output width used at encode time.
        skip_special_tokens, clean_up_tokenization_spaces: as for `tokenizer.decode`.
        oov_spacing: this example's spacing records from `encode_with_oovs` (`batch["oov_spacing"][i]`,
            one per OOV word; `None`: the output's context alone spaces the copies, see below).

    Returns:
        The text. Every copied word comes out exactly as it stood in the source; the spacing around it
        comes from the tokenizer's own decoder, which sees a placeholder token where the word was:

        - SentencePiece-style (Unigram/BPE with Metaspace, Marian, M2M100): like any piece, the copy
          is glued to what precedes it unless a `▁` token precedes it ("Stra" + "ß" + "e").
        - word-level / WordPiece with a Metaspace pre-tokenizer (one unknown token swallows the `▁`, so
          one slot serves "open Zyxwvut" and "%(Zyxwvut)s"): after a character that it followed in the
          source, the copy is spaced as it was there ("v2.3" stays "v2.3", "Done. Zyxwvut" keeps its space;
          `oov_spacing` records it). Elsewhere it starts a new word at the start,
          after a letter or digit, after `. , ; : ! ?` and closing brackets / quotes, and is glued after
          opening brackets and quotes, `_ - / % < >` and line breaks (inside `%(name)s`, `{count}`,
          `<b>name</b>`); a copied `. , ) ...` is glued to what precedes it. On real messages this
          gives the source's spacing back for 98% of the sentences with a copy.
        - BERT-style WordPiece: a copy is a word (spaced) and gets the decoder's punctuation cleanup.
        - BPE with an end-of-word suffix (`</w>`): a copy ends its word where the source's copies of it
          did ("Cafe" + U+0301 + " vs" keeps its space; `oov_spacing` records it);
          elsewhere a copied symbol or emoji ends its word, and a copied letter run ends its word when
          punctuation or the end follows.
        - no decoder (e.g. a `Whitespace` pre-tokenizer alone): tokens and copies are joined with single
          spaces, as `tokenizer.decode` joins tokens; give such a tokenizer a decoder (Metaspace) to get
          the source's spacing back.

    Raises:
        ValueError: for an id `>= vocab_size + len(oov_words)` (no such OOV slot) or a negative id
            other than -100.
        TypeError: when `oov_words` (`oov_spacing`) is not one example's table (e.g. the batch's list of tables).
    """
    check_tokenizer(tokenizer)
    vocab_size = check_vocab_size(tokenizer, vocab_size)
    context = _DecodeContext(tokenizer, vocab_size, skip_special_tokens, clean_up_tokenization_spaces)
    oov_words = _check_oov_words(oov_words)
    return context.decode(token_ids, oov_words, _check_spacing(oov_spacing, oov_words))


class _DecodeContext:
    """What decoding needs from the tokenizer, looked up once per batch (Transformers' attribute access is slow)."""

    def __init__(
        self,
        tokenizer: PreTrainedTokenizerBase,
        vocab_size: int,
        skip_special_tokens: bool,
        clean_up_tokenization_spaces: bool | None,
    ) -> None:
        self.tokenizer = tokenizer
        self.vocab_size = vocab_size
        self.skip_special_tokens = skip_special_tokens
        self.clean_up_tokenization_spaces = clean_up_tokenization_spaces
        self.n_real = tokenizer_width(tokenizer)
        self.special = _special_ids(tokenizer) if skip_special_tokens else set()
        self.is_fast = getattr(tokenizer, "is_fast", False)
        self.clean_up = _cleans_up(tokenizer, clean_up_tokenization_spaces)
        self._layout: dict[str, Any] | None = None

    @property
    def layout(self) -> dict[str, Any]:
        if self._layout is None:
            self._layout = decoder_layout(self.tokenizer)
        return self._layout

    def decode(self, token_ids: Any, oov_words: list[str], spacing: list[Mapping[str, Any]] | None) -> str:
        vocab_size = self.vocab_size
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
            elif tok_id >= self.n_real:
                continue  # padding rows of the model's output layer: no token
            elif tok_id not in self.special:
                items.append((False, tok_id))

        if not any(is_copy for is_copy, _ in items):
            return self.tokenizer.decode(
                [i for _, i in items],
                skip_special_tokens=self.skip_special_tokens,
                clean_up_tokenization_spaces=self.clean_up_tokenization_spaces,
            )
        if self.is_fast:
            return _decode_fast(self.tokenizer, items, oov_words, spacing, self.clean_up, self.layout)
        return _decode_slow(self.tokenizer, items, oov_words, spacing, self.clean_up)


def _splice(parts: list[str], surfaces: list[str], clean_up: bool) -> str:
    """`parts[0] + surfaces[0] + parts[1] + ...`; with `clean_up`, a copied `!`/`,`/`'s` loses the space
    before it as the tokenizer's cleanup takes it from an in-vocabulary one. Copied text is never changed."""
    out = parts[0]
    for surface, part in zip(surfaces, parts[1:]):
        if clean_up and out.endswith(" ") and _clean_up_tokenization(" " + surface) == surface:
            out = out[:-1]
        out += surface + part
    return out


def _clean_up_tokenization(text: str) -> str:
    # transformers' PreTrainedTokenizerBase.clean_up_tokenization (the same rules as the Rust WordPiece decoder's)
    for before, after in (
        (" .", "."),
        (" ?", "?"),
        (" !", "!"),
        (" ,", ","),
        (" ' ", "'"),
        (" n't", "n't"),
        (" 'm", "'m"),
        (" 's", "'s"),
        (" 've", "'ve"),
        (" 're", "'re"),
    ):
        text = text.replace(before, after)
    return text


def decoder_layout(tokenizer: PreTrainedTokenizerBase) -> dict[str, Any]:
    """How the fast tokenizer's decoder marks word boundaries, read from its serialized decoder."""
    backend = tokenizer.backend_tokenizer
    decoder = backend.decoder
    layout: dict[str, Any] = {
        "marker": None,
        "suffix": None,
        "cleanup": False,
        "swallows_marker": False,
        "punctuation_apart": False,
    }
    if decoder is None:
        return layout
    try:
        state = json.loads(decoder.__getstate__())
    except Exception:  # a custom Python decoder: treat copies as plain pieces
        return layout
    stack = [state]
    while stack:
        node = stack.pop()
        kind = node.get("type")
        if kind == "Sequence":
            stack.extend(node.get("decoders", []))
        elif kind == "Metaspace":
            layout["marker"] = node.get("replacement", "▁")
        elif kind == "Replace" and node.get("content") == " " and isinstance(node.get("pattern"), dict):
            layout["marker"] = layout["marker"] or node["pattern"].get("String")
        elif kind == "BPEDecoder":
            layout["suffix"] = node.get("suffix") or None
        elif kind in ("WordPiece", "CTC") and node.get("cleanup"):
            layout["cleanup"] = True
    model = backend.model
    model_kind = type(model).__name__
    # The marker is part of the unknown token when the model maps a whole pre-token to it (word-level, WordPiece)
    # or has no piece for the bare marker; SentencePiece-style models keep "▁" as a piece of its own.
    layout["swallows_marker"] = layout["marker"] is not None and (
        model_kind in ("WordLevel", "WordPiece") or backend.token_to_id(layout["marker"]) is None
    )
    # A pre-tokenizer that isolates punctuation leaves the marker of " !" as a "▁" token of its own: a copied "!"
    # then never needs one.
    if layout["swallows_marker"] and backend.pre_tokenizer is not None:
        pieces = [piece for piece, _ in backend.pre_tokenizer.pre_tokenize_str("a !")]
        layout["punctuation_apart"] = bool(pieces) and pieces[-1] == "!"
    # subword-nmt style BPE: the unknown token swallows the end-of-word suffix ("😀</w>") that the decoder turns
    # into a space.
    if model_kind != "BPE" or not getattr(model, "end_of_word_suffix", None):
        layout["suffix"] = None
    return layout


def _is_punctuation(char: str) -> bool:
    # what the Punctuation / BERT pre-tokenizers isolate: Unicode punctuation and any ASCII non-alphanumeric
    return unicodedata.category(char)[0] == "P" or (char.isascii() and not char.isalnum() and not char.isspace())


def copy_starts_word(
    texts: list[str], i: int, marker: str, punctuation_apart: bool = False, spacing: Mapping[str, Any] | None = None
) -> bool:
    """Whether the copy at `texts[i]` starts a new word, from the items before it (raw tokens or copied words) and
    the copy's spacing record (`oov_spacing`), if any."""
    first = texts[i][:1]
    if first in _ATTACHES_LEFT or first.isspace() or (punctuation_apart and _is_punctuation(first)):
        return False  # "Saving" + "…", "Zyxwvut" + ")", a copied line break, a "▁" token of its own before "<"
    if i == 0 or not texts[i - 1]:
        return True
    last = texts[i - 1][-1]
    if last == marker or last.isspace():
        return False  # the space is already there ("▁" token, line break)
    if spacing is not None:  # after the same character as in the source: its spacing ("v2.3" has no space after ".")
        if last in (spacing.get("spaced_after") or ""):
            return True
        if last in (spacing.get("glued_after") or ""):
            return False
    if last.isalnum() or unicodedata.category(last)[0] == "M":
        return True
    if last in _SYMMETRIC_QUOTES and len(texts[i - 1]) == 1:
        # A quote right after a word or a placeholder closes a quotation ('"%(name)s" under'); after a space or
        # "=" it opens one ('class="w-sr-only"'). An apostrophe after a letter is a contraction ("you've") unless the
        # letter ends a placeholder ("'%(name)s' copied").
        before = texts[i - 2] if i >= 2 else ""
        if not before:
            return False
        if before[-1] in ")]}":
            return True
        after_placeholder = i >= 3 and texts[i - 3][-1:] == ")"
        return before[-1].isalnum() and (last != "'" or after_placeholder)
    return last in _SPACE_AFTER


def _copy_ends_word(surface: str, following: str | None, spacing: Mapping[str, Any] | None = None) -> bool:
    if following is None:
        return True
    ends = spacing.get("ends_word") if spacing is not None else None  # how the source spaced it, when recorded
    if ends is not None:
        return bool(ends)
    if not surface[-1].isalnum() and unicodedata.category(surface[-1])[0] != "M":
        return True  # symbols and emoji are pre-tokens of their own
    return following is None or not following[:1].isalnum()


def _decode_fast(
    tokenizer: PreTrainedTokenizerBase,
    items: list[tuple[bool, int]],
    oov_words: list[str],
    spacing: list[Mapping[str, Any]] | None,
    clean_up: bool,
    layout: dict[str, Any],
) -> str:
    backend = tokenizer.backend_tokenizer
    tokens: list[str | None] = []  # None marks a copied word
    surfaces: list[str] = []
    records: list[Mapping[str, Any] | None] = []  # per copied word, its spacing record
    for is_copy, value in items:
        if is_copy:
            tokens.append(None)
            surfaces.append(oov_words[value])
            records.append(spacing[value] if spacing is not None else None)
        else:
            tok = backend.id_to_token(value)
            if tok is not None:
                tokens.append(tok)

    joined = "".join(t for t in tokens if t is not None) + "".join(surfaces)
    sentinel = next((s for s in _SENTINEL_CANDIDATES if s not in joined), None)
    if sentinel is not None:
        # what each item reads as: the token's own string, or the copied word
        copy_iter = iter(surfaces)
        texts = [tok if tok is not None else next(copy_iter) for tok in tokens]
        record_iter = iter(records)
        filled: list[str] = []
        for i, tok in enumerate(tokens):
            if tok is not None:
                filled.append(tok)
                continue
            record = next(record_iter)
            placeholder = sentinel
            if layout["swallows_marker"]:
                if copy_starts_word(texts, i, layout["marker"], layout["punctuation_apart"], record):
                    placeholder = layout["marker"] + sentinel
            elif layout["suffix"]:
                if _copy_ends_word(texts[i], texts[i + 1] if i + 1 < len(texts) else None, record):
                    placeholder = sentinel + layout["suffix"]
            filled.append(placeholder)
        text = backend.decoder.decode(filled) if backend.decoder is not None else " ".join(filled)
        if clean_up:
            text = _clean_up_tokenization(text)
        parts = text.split(sentinel)
        if len(parts) == len(surfaces) + 1:
            return _splice(parts, surfaces, clean_up or layout["cleanup"])

    # Fallback for decoders that do not pass placeholders through: decode the in-vocab runs
    # separately and join everything with single spaces.
    chunks: list[str] = []
    run: list[str] = []

    def flush() -> None:
        if run:
            text = backend.decoder.decode(run) if backend.decoder is not None else " ".join(run)
            text = (_clean_up_tokenization(text) if clean_up else text).strip()
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


def _decode_slow(
    tokenizer: PreTrainedTokenizerBase,
    items: list[tuple[bool, int]],
    oov_words: list[str],
    spacing: list[Mapping[str, Any]] | None,
    clean_up: bool,
) -> str:
    """SentencePiece slow tokenizers: decode each run of in-vocabulary ids with the tokenizer itself (its decode
    drops a leading or trailing "▁", so the run's own markers say where the spaces go) and splice the copies in; a
    copy whose "▁" went into another piece of its character (`starts_word`) brings the space itself."""
    parts: list[str] = []
    surfaces: list[str] = []
    text = ""
    run: list[int] = []
    pending_space = False  # a run ended in a bare "▁": the next copy starts a word

    def flush(last: bool) -> None:
        nonlocal text, pending_space
        if not run:
            return
        pieces = tokenizer.convert_ids_to_tokens(run)
        decoded = tokenizer.decode(run, skip_special_tokens=False, clean_up_tokenization_spaces=False)
        if (text or surfaces) and pieces[0].startswith("▁") and decoded:
            decoded = " " + decoded
        text += decoded
        pending_space = pieces[-1].endswith("▁") and not last
        run.clear()

    for is_copy, value in items:
        if is_copy:
            flush(last=False)
            brings_space = spacing is not None and bool(spacing[value].get("starts_word"))
            if pending_space or (brings_space and not text.endswith(" ")):
                text += " "
            pending_space = False
            parts.append(text)
            surfaces.append(oov_words[value])
            text = ""
        else:
            run.append(value)
    flush(last=True)
    parts.append(text)
    if clean_up:
        parts = [_clean_up_tokenization(p) for p in parts]
    parts[0], parts[-1] = parts[0].lstrip(), parts[-1].rstrip()  # as the tokenizer's own decode strips
    return _splice(parts, surfaces, clean_up)


@renamed_keywords(oov_words_per_example="oov_words", oov_spacing_per_example="oov_spacing")
def batch_decode_with_oovs(
    tokenizer: PreTrainedTokenizerBase,
    sequences: Sequence[Sequence[int]] | torch.Tensor,
    oov_words: Sequence[Sequence[str] | None],
    *,
    vocab_size: int,
    skip_special_tokens: bool = True,
    clean_up_tokenization_spaces: bool | None = None,
    oov_spacing: Sequence[Sequence[Mapping[str, Any]] | None] | None = None,
) -> list[str]:
    """Decode `(B, L)` sequences, each with its own example's OOV words; see `decode_with_oovs` for the rules.

    Args:
        tokenizer (`PreTrainedTokenizerBase`):
            The tokenizer the sources were encoded with.
        sequences (`torch.Tensor` or lists of `int` of shape `(B, L)`):
            Generated (or label) ids; `-100` is padding.
        oov_words (`list[list[str] | None]` of length `B`):
            Each example's OOV words (`batch["oov_words"]`). Beam outputs with `num_return_sequences > 1` need each
            repeated (`PointerGeneratorProcessor.batch_decode` does that). Formerly `oov_words_per_example=`.
        vocab_size (`int`):
            The model's output width used at encode time.
        skip_special_tokens, clean_up_tokenization_spaces:
            As for `tokenizer.batch_decode`.
        oov_spacing (`list[list[dict] | None]` of length `B`, *optional*):
            Each example's spacing records (`batch["oov_spacing"]`). Formerly `oov_spacing_per_example=`.

    Returns:
        `list[str]`: one text per sequence.

    Raises:
        ValueError: when the numbers of sequences, of OOV word lists and of spacing records differ, or an id names no
            slot of its example (see `decode_with_oovs`).
        TypeError: when an entry of `oov_words` is not one example's list of words.
    """
    if hasattr(sequences, "tolist"):
        sequences = sequences.tolist()
    sequences = list(sequences)
    oov_words = list(oov_words)
    if len(sequences) != len(oov_words):
        raise ValueError(
            f"Got {len(sequences)} sequences but {len(oov_words)} OOV tables; pass one table per example "
            "(beam outputs with num_return_sequences > 1 need their table repeated; PointerGeneratorProcessor."
            "batch_decode does that)."
        )
    spacings = [None] * len(oov_words) if oov_spacing is None else list(oov_spacing)
    if len(spacings) != len(oov_words):
        raise ValueError(
            f"Got {len(oov_words)} OOV tables but {len(spacings)} oov_spacing entries; pass the oov_spacing of the same "
            "examples as the tables (batch['oov_spacing'] with batch['oov_words'])."
        )
    check_tokenizer(tokenizer)
    vocab_size = check_vocab_size(tokenizer, vocab_size)
    context = _DecodeContext(tokenizer, vocab_size, skip_special_tokens, clean_up_tokenization_spaces)
    decoded = []
    for seq, words, spacing in zip(sequences, oov_words, spacings):
        words = _check_oov_words(words)
        decoded.append(context.decode(seq, words, _check_spacing(spacing, words)))
    return decoded
