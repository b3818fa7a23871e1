"""Extended-vocabulary encoding for pointer-generator models (See et al., 2017): text -> ids with OOV slots.

A pointer-generator model predicts a distribution over `vocab_size + N` ids, where `vocab_size` is the *model's*
output width (`model.config.vocab_size`, which may be larger than `len(tokenizer)`: T5 pads 32100 to 32128) and `N` is
the number of distinct out-of-vocabulary (OOV) source words of an example. Source tokens that the tokenizer maps to its
unknown token get the extended id `vocab_size + k`, `k = 0, 1, ...` in order of first appearance in *that* example;
the model can then copy them by pointing, and generated ids `>= vocab_size` are turned back into the source's text by
`hf_pgen.tokenization_decode_pointer_generator.decode_with_oovs`.

Tokenizers: any fast (🤗 tokenizers) tokenizer, and the slow SentencePiece tokenizers that Transformers 5
still ships without a fast twin (`MarianTokenizer`, `M2M100Tokenizer`): their OOV surfaces come from
SentencePiece's own piece offsets (and its normalizer's, for characters NFKC expands into several pieces), and the
ids are always the tokenizer's own (`tokenizer(text)`).

What an OOV word's text is: the source characters its unknown token covers, without the whitespace a
pre-tokenizer folded into it (Metaspace turns " Zyxwvut" into "▁Zyxwvut"), and with the combining marks /
Hangul jamo that a normalizer composed into it (a decomposed "u" + U+0308 under an NFC normalizer), so a copy is the
source's text byte for byte. `oov_spacing` records, per slot, whether the source had a space before the word, per
character it followed, and after it (for tokenizers whose unknown token swallows the space or the end-of-word
suffix, see `decode_with_oovs`).

Public API: `encode_with_oovs` (also `hf_pgen.encode_with_oovs`). The tokenizer checks and `DECODING_ONLY_KEYS` serve
the package's other modules and stay out of `__all__`.

This file is saved next to the model as remote code (see `hf_pgen.SAVED_WITH_MODEL`): it imports only the standard
library, `torch`, `transformers` and its hf_pgen siblings (relative imports); see `hf_pgen.SAVED_WITH_MODEL`.
"""

from __future__ import annotations

import unicodedata
import warnings
from collections.abc import Sequence
from typing import Any, NamedTuple

from transformers import BatchEncoding, PreTrainedTokenizerBase

__all__ = ["encode_with_oovs"]

# Keys of `encode_with_oovs`'s output that only decoding needs (per-example lists of words / counts, not tensors): the
# collator, forward and generate() drop them, so that a batch goes to the model as it is.
DECODING_ONLY_KEYS = ("oov_words", "oov_spacing", "num_truncated_tokens")

# Keyword arguments that would break the one-row-per-example / char-offset bookkeeping.
_UNSUPPORTED_KWARGS = ("return_overflowing_tokens", "is_split_into_words", "text_pair", "text_pair_target")


# ----------------------------------------------------------------------------------------------------- tokenizers
def _sentencepiece_of(tokenizer: PreTrainedTokenizerBase) -> Any:
    """The SentencePiece processor a slow tokenizer tokenizes with now (Marian switches source/target)."""
    for name in ("current_spm", "sp_model", "spm_source"):
        processor = getattr(tokenizer, name, None)
        if processor is not None and hasattr(processor, "encode"):
            return processor
    return None


def check_tokenizer(tokenizer: PreTrainedTokenizerBase) -> None:
    if getattr(tokenizer, "is_fast", False) and hasattr(tokenizer, "backend_tokenizer"):
        return
    if _sentencepiece_of(tokenizer) is None:
        raise TypeError(
            f"encode_with_oovs/decode_with_oovs need a fast (🤗 tokenizers-backed) tokenizer or a slow SentencePiece "
            f"tokenizer (MarianTokenizer, M2M100Tokenizer): OOV words are located through offset mappings or "
            f"SentencePiece's piece offsets. {type(tokenizer).__name__} has neither; load its fast version "
            "(AutoTokenizer.from_pretrained(..., use_fast=True)) or convert it with PreTrainedTokenizerFast."
        )


def tokenizer_width(tokenizer: PreTrainedTokenizerBase) -> int:
    """One past the largest id the tokenizer can produce (M2M100's language codes lie beyond len(tokenizer))."""
    width = len(tokenizer)
    for name in ("lang_token_to_id", "lang_code_to_id"):
        ids = getattr(tokenizer, name, None)
        if isinstance(ids, dict) and ids:
            width = max(width, 1 + max(ids.values()))
    return width


def check_vocab_size(tokenizer: PreTrainedTokenizerBase, vocab_size: int) -> int:
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int):
        raise TypeError(f"vocab_size must be an int (the model's output width), got {vocab_size!r}.")
    width = tokenizer_width(tokenizer)
    if vocab_size < width:
        what = (
            f"len(tokenizer)={width}"
            if width == len(tokenizer)
            else (f"the tokenizer's {width} ids (len(tokenizer)={len(tokenizer)} plus its language codes)")
        )
        raise ValueError(
            f"vocab_size={vocab_size} is smaller than {what}: extended ids would collide with real token ids. Pass "
            "the model's output width (model.config.vocab_size)."
        )
    return vocab_size


def _as_text_batch(text: Any, name: str) -> tuple[list[str], bool]:
    """Return `(texts, is_batched)`; raise a ValueError naming the index of a bad example."""
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


# ------------------------------------------------------------------------------------------------------- surfaces
def continues_previous(char: str) -> bool:
    """Characters that a normalizer composes into the character before them (NFD -> NFC/NFKC)."""
    code = ord(char)
    # combining marks (incl. variation selectors), Hangul medial vowels / final consonants (conjoining jamo)
    return unicodedata.category(char)[0] == "M" or 0x1160 <= code <= 0x11FF or 0xD7B0 <= code <= 0xD7FF


def _surface(
    text: str, offsets: Sequence[tuple[int, int]], i: int, joins: Sequence[bool] | None = None
) -> tuple[str | None, int]:
    """The source text of token `i` (None when it covers no character), and how many following tokens it took in.

    The end is moved over combining characters that no later token covers (an NFC/NFKC normalizer maps "u" + U+0308
    to one "ü" whose offsets end before the mark), and over following tokens `j` with `joins[j]` that hold
    nothing but such characters (a Whitespace pre-tokenizer splits the U+FE0F of "🗑️" from its emoji). Whitespace
    that a pre-tokenizer folded into the token (the Metaspace "▁" of a mid-sentence word) is dropped, so the same
    word has the same surface everywhere.
    """
    start, end = offsets[i]
    if end <= start:
        return None, 0
    taken = 0
    for j in range(i + 1, len(offsets)):
        next_start, next_end = offsets[j]
        if next_end <= next_start:
            continue
        if not (joins and joins[j] and next_start == end and all(map(continues_previous, text[next_start:next_end]))):
            break
        end, taken = next_end, j - i
    limit = len(text)
    for next_start, next_end in offsets[i + taken + 1 :]:
        if next_end > next_start:
            limit = min(limit, max(next_start, end))
            break
    while end < limit and continues_previous(text[end]):
        end += 1
    raw = text[start:end]
    return raw.strip() or raw, taken


def _match_key(surface: str) -> str:
    # A target spelled in another normalization form (NFC target, NFD source) still matches its source slot.
    return unicodedata.normalize("NFC", surface)


def _target_slot(slot_of: dict[str, int], surface: str) -> int | None:
    """The source slot a target's unknown `surface` copies: the one with its exact text, else the first one that
    differs only in normalization form (the source wrote "Cafe" + U+0301, the target "Café")."""
    slot = slot_of.get(surface)
    if slot is None:
        key = _match_key(surface)
        slot = next((s for text, s in slot_of.items() if _match_key(text) == key), None)
    return slot


class _Slot:
    """One OOV slot while a source is encoded: the copied word's source text and how the source spaced it.

    A word-level unknown token swallows the "▁" it starts with, so the ids alone cannot say whether "3" in "v2.3"
    followed the "." with a space; the decoder asks the record this keeps (`spacing`, the batch's
    `oov_spacing`).
    """

    def __init__(self, text: str) -> None:
        self.text = text
        # spaced_after[c]: whether whitespace stood between the character c and the word where the source has the
        # word after c (None where its occurrences there disagree)
        self.spaced_after: dict[str, bool | None] = {}
        # Whether whitespace (or the end of the text) followed the word in the source (None: its occurrences
        # disagree, or none is recorded): an end-of-word suffix decoder ("</w>") asks, since the unknown token
        # carries no suffix.
        self.ends_word: bool | None = None
        self._ends_seen = False
        # Whether every occurrence's word-start marker went into another piece of the same character (slow
        # SentencePiece: " ǅ" is "▁D" + unknown "ž", and the "▁D" position copies as nothing, see _expansion_groups)
        self.starts_word: bool | None = None

    def note(self, text: str, start: int, starts_word: bool = False) -> None:
        """Record the occurrence of the word in `text` whose token starts at `start` (whitespace folded in);
        `starts_word`: its word-start marker went into a piece that copies as nothing."""
        self.starts_word = starts_word if self.starts_word is None else self.starts_word and starts_word
        while start < len(text) and text[start].isspace():
            start += 1
        if text.startswith(self.text, start):
            end = start + len(self.text)
            ends = end >= len(text) or text[end].isspace()
            self.ends_word = ends if not self._ends_seen or self.ends_word == ends else None
            self._ends_seen = True
        before = start
        while before > 0 and text[before - 1].isspace():
            before -= 1
        if before > 0:  # at the start of the text there is nothing to follow
            spaced = before < start
            if self.spaced_after.setdefault(text[before - 1], spaced) != spaced:
                self.spaced_after[text[before - 1]] = None

    def spacing(self) -> dict[str, Any]:
        """This slot's entry of `oov_spacing`: plain strings and a boolean, so that JSON and Arrow keep it.

        - `spaced_after`: the characters after which the source had whitespace before the word;
        - `glued_after`: the characters right after which it stood (a character in neither: no occurrence after
          it, or occurrences that disagree);
        - `ends_word`: whether whitespace or the end of the text followed every occurrence (None: they disagree);
        - `starts_word` (slow SentencePiece tokenizers): the copy brings the space before it, because the "▁" of
          every occurrence went into a piece of the same character that copies as nothing (" ǅ": "▁D" + "ž").
        """
        return {
            "spaced_after": "".join(c for c, spaced in self.spaced_after.items() if spaced is True),
            "glued_after": "".join(c for c, spaced in self.spaced_after.items() if spaced is False),
            "ends_word": self.ends_word,
            "starts_word": bool(self.starts_word),
        }


def _extend_row(
    ids: list[int],
    offsets: Sequence[tuple[int, int]] | None,
    text: str,
    unk_id: int | None,
    vocab_size: int,
    slot_of: dict[str, int],
    slots: list[_Slot],
    grow: bool,
    expansions: dict[int, _Expansion] | None = None,
) -> list[int]:
    """Copy of `ids` where unknown tokens carry `vocab_size + slot`.

    `slot_of` maps a source surface -> slot and `slots[slot]` holds it. With `grow` new surfaces get new slots
    (source side: one per exact text, so a word the source writes in NFD and in NFC comes back in each form); without
    it, unknown surfaces that match no slot (`_target_slot`) keep the unknown id (target side). Unknown tokens with no recoverable surface (zero width, or offsets unavailable) keep the unknown id.
    `expansions` (slow SentencePiece, see `_expansion_groups`): when the unknown token at `i` gets a slot,
    the other pieces of its character, `expansions[i].others`, get the unknown id: the slot holds their text.
    """
    out = list(ids)
    if unk_id is None or offsets is None:
        return out
    is_unk = [tok_id == unk_id for tok_id in ids]
    skip_to = -1
    for i in [i for i, unk in enumerate(is_unk) if unk]:
        if i <= skip_to:
            continue  # a lone combining mark folded into the unknown token before it: keeps the unknown id
        surface, taken = _surface(text, offsets, i, is_unk)
        skip_to = i + taken
        if surface is None:
            continue
        slot = slot_of.get(surface) if grow else _target_slot(slot_of, surface)
        if slot is None:
            if not grow:
                continue
            slot = slot_of[surface] = len(slots)
            slots.append(_Slot(surface))
        expansion = expansions.get(i) if expansions else None
        if grow:
            slots[slot].note(text, offsets[i][0], starts_word=expansion is not None and expansion.starts_word)
        out[i] = vocab_size + slot
        for j in expansion.others if expansion is not None else ():
            out[j] = unk_id  # a copy of it would repeat part of the character the slot spells whole
    return out


# ------------------------------------------------------------------------------- slow SentencePiece tokenizers
def sentencepiece_pieces(processor: Any, text: str) -> list[tuple[str, int, int]]:
    """SentencePiece's pieces of `text` with their character spans in `text` (both sentencepiece APIs)."""
    try:  # sentencepiece >= 0.2.1
        mapping = processor.encode(text, out_type="offset_mapping")
        return [(piece, start, end) for piece, (start, end) in zip(mapping["pieces"], mapping["offsets"])]
    except (ValueError, TypeError, KeyError, RuntimeError):  # older sentencepiece: 'unknown out_type'
        pass
    proto = processor.encode(text, out_type="immutable_proto")  # sentencepiece 0.1.99 - 0.2.0: unicode spans
    return [(p.piece, p.begin, p.end) for p in proto.pieces]


def _expansion_links(processor: Any, text: str, pieces: list[tuple[str, int, int]]) -> list[bool]:
    """`links[k]`: pieces `k` and `k + 1` both hold characters that the normalizer made of one source character.

    NFKC expands some characters into several, and SentencePiece may cut them apart: "½" -> "1" "⁄" "2", "ǅ" -> "▁D"
    "ž" (a "▁" before it joins the first part), "℃" -> "30°" "C" (the first part joins what precedes it). Its spans
    give the whole character to the last piece; the normalizer's own offsets say which pieces share it. All False
    when they cannot be read (sentencepiece < 0.2.0, byte-fallback pieces).
    """
    links = [False] * len(pieces)
    try:
        normalized, origin = processor.normalize(text, with_offsets=True)
    except (AttributeError, TypeError, ValueError, RuntimeError):
        return links
    if "".join(piece for piece, _, _ in pieces) != normalized or len(origin) != len(normalized) + 1:
        return links
    origin = list(origin)
    if normalized[:1] == "▁" and not text[origin[0] : origin[0] + 1].isspace():
        origin[0] = -1  # the dummy-prefix "▁" stands for no character (it maps to the first one's position)
    end = 0
    for k, (piece, _, _) in enumerate(pieces[:-1]):
        end += len(piece)
        links[k] = 0 < end < len(normalized) and origin[end - 1] == origin[end]
    return links


class _Expansion(NamedTuple):
    """A source character that the normalizer expanded into several pieces, one of them unknown (see
    `_expansion_groups`): its other pieces' positions, and whether its first piece folded in the "▁" of a
    space before it."""

    others: tuple[int, ...]
    starts_word: bool


def _expansion_groups(
    text: str, ids: list[int], offsets: list[tuple[int, int]], positions: list[int], links: list[bool], unk_id: int
) -> dict[int, _Expansion]:
    """Make an expanded character's pieces copy it exactly once; returns them by the position of their unknown piece.

    `positions[k]` is the row position of content piece `k`, `links` as `_expansion_links` (for the same
    pieces). The first unknown piece of a group that holds one gets the group's whole span (its slot then holds the
    source characters, "½" or "30℃"), the other pieces zero-width spans at its edges; encoding gives them the unknown
    id, which copies (and decodes) as nothing, so a copy neither loses the unknown part ("½" -> "12") nor repeats the
    known one ("ǅ" -> "Dǅ"). Groups without an unknown piece are the tokenizer's own normalization ("№" -> "No").
    """
    groups: dict[int, _Expansion] = {}
    first = 0
    for k in range(len(positions)):
        if k + 1 < len(positions) and links[k]:
            continue
        members, first = positions[first : k + 1], k + 1
        unknown = [p for p in members if ids[p] == unk_id]
        if len(members) < 2 or not unknown:
            continue
        carrier = unknown[0]
        begin, end = offsets[members[0]][0], offsets[members[-1]][1]
        for p in members:
            offsets[p] = (begin, begin) if p < carrier else (end, end)
        offsets[carrier] = (begin, end)
        others = tuple(p for p in members if p != carrier)
        groups[carrier] = _Expansion(others, starts_word=text[begin : begin + 1].isspace())
    return groups


def _split_added_tokens(tokenizer: PreTrainedTokenizerBase, text: str) -> list[tuple[str, int, bool]]:
    """`PreTrainedTokenizer.tokenize`'s split on added tokens, as `(chunk, start, is_added_token)`."""
    if getattr(tokenizer, "split_special_tokens", False):
        return [(text, 0, False)]
    pieces = tokenizer.tokens_trie.split(text)
    chunks: list[list[Any]] = []
    position = 0
    for piece in pieces:
        chunks.append([piece, position])
        position += len(piece)
    added = tokenizer._added_tokens_encoder
    for i, (chunk, _) in enumerate(chunks):
        if chunk not in added:
            continue
        token = tokenizer._added_tokens_decoder.get(added[chunk])
        # The same lstrip / rstrip rules as PreTrainedTokenizer.tokenize, keeping track of the start offsets.
        if getattr(token, "rstrip", False) and i + 1 < len(chunks) and chunks[i + 1][0]:
            right = chunks[i + 1][0]
            chunks[i + 1] = [right.lstrip(), chunks[i + 1][1] + len(right) - len(right.lstrip())]
        if getattr(token, "lstrip", False) and i > 0 and chunks[i - 1][0]:
            chunks[i - 1][0] = chunks[i - 1][0].rstrip()
        if getattr(token, "single_word", False):
            return []  # rare; the caller then finds no alignment and leaves the example without OOV slots
    specials = set(tokenizer.all_special_tokens)
    return [(c, s, c in added or c in specials) for c, s in chunks if c]


def _slow_tokens(
    tokenizer: PreTrainedTokenizerBase, text: str
) -> tuple[list[int], list[tuple[int, int]], list[bool]] | None:
    """Ids, character spans and expansion links (see `_expansion_links`) of `tokenizer.tokenize(text)` for a
    slow SentencePiece tokenizer, in one pass.

    Mirrors `PreTrainedTokenizer.tokenize`: split on added tokens, then Marian's language-code prefix and
    SentencePiece on the rest. Returns None when the text would be changed before tokenization.
    """
    prepared, _ = tokenizer.prepare_for_tokenization(text)
    if prepared != text:
        return None
    processor = _sentencepiece_of(tokenizer)
    tokens: list[str] = []
    spans: list[tuple[int, int]] = []
    links: list[bool] = []
    for chunk, start, is_added in _split_added_tokens(tokenizer, text):
        if is_added:
            tokens.append(chunk)
            spans.append((start, start + len(chunk)))
            links.append(False)
            continue
        if hasattr(tokenizer, "remove_language_code"):  # Marian: ">>de<< text"
            code, rest = tokenizer.remove_language_code(chunk)
            for c in code:
                tokens.append(c)
                spans.append((start, start + len(c)))
                links.append(False)
            start += len(chunk) - len(rest)
            chunk = rest
        pieces = sentencepiece_pieces(processor, chunk)
        for piece, begin, end in pieces:
            tokens.append(piece)
            spans.append((start + begin, start + end))
        links.extend(_expansion_links(processor, chunk, pieces))
    return tokenizer.convert_tokens_to_ids(tokens), spans, links


def _slow_row_offsets(
    tokenizer: PreTrainedTokenizerBase,
    text: str,
    ids: list[int],
    mask: list[int],
    add_special_tokens: bool,
) -> tuple[list[tuple[int, int]] | None, int, dict[int, _Expansion]]:
    """Offsets for one row of a slow tokenizer's output, how many content tokens truncation removed, and the row's
    expanded characters that hold an unknown piece (see `_expansion_groups`, which also sets their offsets).

    The row's ids come from the tokenizer itself; SentencePiece's spans are used only where our own pass gives the
    very same ids (a different result leaves the row without offsets, so without OOV slots, never with wrong ones).
    """
    found = _slow_tokens(tokenizer, text)
    if found is None:
        return None, 0, {}
    content_ids, spans, links = found
    if add_special_tokens:
        layout = tokenizer.build_inputs_with_special_tokens([-1])
        if layout.count(-1) != 1:
            return None, 0, {}
        prefix, n_special = layout.index(-1), len(layout) - 1
    else:
        prefix, n_special = 0, 0
    kept = [i for i, m in enumerate(mask) if m]
    n_keep = len(kept) - n_special
    if n_keep < 0 or n_keep > len(content_ids):
        return None, 0, {}
    left = getattr(tokenizer, "truncation_side", "right") == "left"
    window = slice(len(content_ids) - n_keep, len(content_ids)) if left else slice(0, n_keep)
    row_content = [ids[i] for i in kept[prefix : prefix + n_keep]]
    if row_content != content_ids[window]:
        return None, len(content_ids) - n_keep, {}
    offsets = [(0, 0)] * len(ids)
    positions = kept[prefix : prefix + n_keep]
    for position, span in zip(positions, spans[window]):
        offsets[position] = span
    groups = _expansion_groups(text, ids, offsets, positions, links[window], tokenizer.unk_token_id)
    return offsets, len(content_ids) - n_keep, groups


# --------------------------------------------------------------------------------------------------------- encode
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
    return_num_truncated_tokens: bool = False,
    **tokenizer_kwargs: Any,
) -> BatchEncoding:
    """Tokenize sources (and targets) and assign per-example extended ids to OOV source words.

    Args:
        tokenizer: a fast tokenizer, or a slow SentencePiece one (`MarianTokenizer`, `M2M100Tokenizer`).
            Tokenizers without an unknown token, or that never produce it (byte-level BPE), yield no OOV slots.
        text: one source string or a list of `B` source strings. `None` entries raise a
            `ValueError` naming the index; `""` encodes to the special tokens only.
        text_target: optional target string(s), same number as `text`.
        vocab_size: the model's output width (`model.config.vocab_size`, `>= len(tokenizer)`);
            extended ids start here.
        max_length / max_target_length: truncation lengths for sources / targets
            (`max_target_length` defaults to `max_length`).
        truncation, padding, return_tensors: as for the tokenizer's `__call__`.
        label_pad_token_id: value written into padded label positions (default -100).
        return_num_truncated_tokens: also return `num_truncated_tokens`: per example, how many source
            tokens truncation removed (read from the same tokenization, not a second one).
        **tokenizer_kwargs: forwarded to the tokenizer (`return_token_type_ids` defaults to False).

    Returns:
        `BatchEncoding` with, for `B` examples of (padded) source length `S` / target length `T`:

        - `input_ids`, `attention_mask`: `(B, S)` exactly as `tokenizer(text, ...)` returns them.
        - `extended_input_ids`: `(B, S)`; equal to `input_ids` except that unknown-token
          positions carry `vocab_size + k` (padding positions keep the pad id). Slow SentencePiece
          tokenizers: where the normalizer expanded one character into several pieces, one of them unknown
          ("½" -> "1" "⁄" "2"), that one's slot holds the whole character and the others carry the unknown id,
          so that a copy spells the character once.
        - `oov_words`: `list[list[str]]` (length `B`); `oov_words[b][k]` is the source text of
          slot `k` (without the whitespace a pre-tokenizer folded into the token). The same word twice
          shares one slot, wherever it stands in the sentence; written once in NFD and once in NFC, it gets
          two, so that each comes back as written.
        - `oov_spacing`: `list[list[dict]]` (length `B`); `oov_spacing[b][k]` says how the source spaced
          slot `k`'s word (`{"spaced_after": str, "glued_after": str, "ends_word": bool | None}`, see
          `decode_with_oovs`). Plain strings and booleans: keep it next to `oov_words` (a dataset column, a
          JSON file) and pass it to the decoder, which spaces some copies by it.
        - `labels` (only with `text_target`): `(B, T)` target ids where an unknown target token
          whose text is one of *its own source's* OOV words (in any normalization form) gets that extended id
          (otherwise the unknown id); padded positions hold `label_pad_token_id`.
        - `num_truncated_tokens` (only with `return_num_truncated_tokens`): `list[int]` (length `B`).

        A single `str` input without `return_tensors` gives un-batched lists (`oov_words` is then
        a `list[str]`, `oov_spacing` a `list[dict]`), like the tokenizer does; with `return_tensors`
        tensors keep the batch axis and `oov_words`, `oov_spacing` (and `num_truncated_tokens`) stay
        (non-tensor) lists.

    Raises:
        ValueError: for an example that is `None` or not a string (naming its index), `text` and `text_target` of
            different lengths, a
            `vocab_size` below the tokenizer's ids, or a keyword that would split an example over several rows
            (`return_overflowing_tokens`, `is_split_into_words`, `text_pair`).
        TypeError: for a tokenizer that is neither fast nor a SentencePiece one, a `text` that is neither a string
            nor a list, or a `vocab_size` that is not an int.
    """
    check_tokenizer(tokenizer)
    vocab_size = check_vocab_size(tokenizer, vocab_size)
    for key in _UNSUPPORTED_KWARGS:
        if tokenizer_kwargs.get(key):
            raise ValueError(
                f"encode_with_oovs does not support `{key}`: every example must stay one row with its own OOV table "
                "(use return_num_truncated_tokens=True to see how much truncation removed)."
            )
        tokenizer_kwargs.pop(key, None)
    keep_offsets = bool(tokenizer_kwargs.pop("return_offsets_mapping", False))
    tokenizer_kwargs.setdefault("return_token_type_ids", False)
    tokenizer_kwargs.pop("return_attention_mask", None)
    is_fast = getattr(tokenizer, "is_fast", False)
    add_special_tokens = tokenizer_kwargs.get("add_special_tokens", True)
    stride = int(tokenizer_kwargs.get("stride", 0) or 0)

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

    common: dict[str, Any] = dict(truncation=truncation, padding=padding, return_attention_mask=True)
    if is_fast:
        common["return_offsets_mapping"] = True  # slow tokenizers cannot; SentencePiece's spans stand in
    enc = tokenizer(texts, max_length=max_length, **common, **tokenizer_kwargs)
    unk_id = tokenizer.unk_token_id

    source_offsets, num_truncated, source_groups = _row_offsets(
        tokenizer, enc, texts, is_fast, add_special_tokens, stride, target=False
    )
    slot_of_per_row: list[dict[str, int]] = []  # per row, each OOV surface's slot
    slots_per_row: list[list[_Slot]] = []
    extended: list[list[int]] = []
    for ids, offs, src, groups in zip(enc["input_ids"], source_offsets, texts, source_groups):
        slot_of: dict[str, int] = {}
        slots: list[_Slot] = []
        extended.append(_extend_row(ids, offs, src, unk_id, vocab_size, slot_of, slots, grow=True, expansions=groups))
        slot_of_per_row.append(slot_of)
        slots_per_row.append(slots)
    oov_words = [[slot.text for slot in slots] for slots in slots_per_row]
    oov_spacing = [[slot.spacing() for slot in slots] for slots in slots_per_row]

    data: dict[str, Any] = {k: v for k, v in enc.items() if k != "offset_mapping"}
    if keep_offsets:
        data["offset_mapping"] = [
            offs if offs is not None else [(0, 0)] * len(ids) for offs, ids in zip(source_offsets, enc["input_ids"])
        ]
    data["extended_input_ids"] = extended

    if targets is not None:
        tgt = tokenizer(text_target=targets, max_length=max_target_length, **common, **tokenizer_kwargs)
        target_offsets, _, target_groups = _row_offsets(
            tokenizer, tgt, targets, is_fast, add_special_tokens, stride, target=True
        )
        labels = []
        for ids, offs, mask, tgt_text, slot_of, slots, groups in zip(
            tgt["input_ids"],
            target_offsets,
            tgt["attention_mask"],
            targets,
            slot_of_per_row,
            slots_per_row,
            target_groups,
        ):
            row = _extend_row(ids, offs, tgt_text, unk_id, vocab_size, slot_of, slots, grow=False, expansions=groups)
            labels.append([t if m else label_pad_token_id for t, m in zip(row, mask)])
        data["labels"] = labels

    if not is_batched and return_tensors is None:
        data = {k: v[0] for k, v in data.items()}
        out = BatchEncoding(data)
        out["oov_words"] = oov_words[0]
        out["oov_spacing"] = oov_spacing[0]
        if return_num_truncated_tokens:
            out["num_truncated_tokens"] = num_truncated[0]
        return out
    out = BatchEncoding(data, tensor_type=return_tensors)
    out["oov_words"] = oov_words
    out["oov_spacing"] = oov_spacing
    if return_num_truncated_tokens:
        out["num_truncated_tokens"] = num_truncated
    return out


def _row_offsets(
    tokenizer: PreTrainedTokenizerBase,
    enc: BatchEncoding,
    texts: list[str],
    is_fast: bool,
    add_special_tokens: bool,
    stride: int,
    target: bool,
) -> tuple[list[Any], list[int], list[dict[int, _Expansion]]]:
    """Per row: character offsets of the tokens (None = unknown), the number of tokens truncation removed, and (slow
    SentencePiece tokenizers) its expanded characters that hold an unknown piece (see `_expansion_groups`)."""
    if is_fast:
        # The Rust encodings keep what truncation cut off (always, requested or not): count its non-special
        # tokens; with a stride each overflow window repeats `stride` tokens of the one before.
        truncated = [
            sum(o.special_tokens_mask.count(0) - stride for o in encoding.overflowing) for encoding in enc.encodings
        ]
        return list(enc["offset_mapping"]), truncated, [{}] * len(truncated)
    if target and hasattr(tokenizer, "_switch_to_target_mode"):
        tokenizer._switch_to_target_mode()  # Marian: target SentencePiece model; M2M100: target language code
    try:
        rows = [
            _slow_row_offsets(tokenizer, text, ids, mask, add_special_tokens)
            for text, ids, mask in zip(texts, enc["input_ids"], enc["attention_mask"])
        ]
    finally:
        if target and hasattr(tokenizer, "_switch_to_input_mode"):
            tokenizer._switch_to_input_mode()
    unk_id = tokenizer.unk_token_id
    unaligned = [i for i, (offs, _, _) in enumerate(rows) if offs is None and unk_id in enc["input_ids"][i]]
    if unaligned:
        warnings.warn(
            f"{type(tokenizer).__name__}: could not align the SentencePiece pieces of example(s) {unaligned[:5]} with "
            "the tokenizer's ids (sp_model_kwargs with sampling, or a custom tokenize()); their unknown tokens get no "
            "copy slot. The ids themselves are the tokenizer's own.",
            stacklevel=3,
        )
    return [offs for offs, _, _ in rows], [n for _, n, _ in rows], [groups for _, _, groups in rows]
