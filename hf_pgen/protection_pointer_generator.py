"""Guaranteed copies: protected spans of the source that generation must reproduce, token for token.

A learned copy switch makes copying likely, not certain. Protection makes it certain for chosen spans of each source:

```python
batch = processor(["Delete %(count)d files from {folder}?"], protect="placeholders", return_tensors="pt")
ids = model.generate(**batch, num_beams=4)         # every placeholder comes out exactly as often as in the source
pipe(texts, protect="placeholders")                 # the same through the pipelines, for plain bases too
```

Two halves:

- Encode side (`_protected_spans_for_batch`, called by `PointerGeneratorProcessor(..., protect=...)`): finds the spans
  (`find_protected_spans`) and writes, per example, each distinct span's text, how often the source holds it, and the
  token sequences that spell it (the batch key `protected_spans`, read by `generate()`). What the rules read from the
  vocabulary (each token's text, the tokens that could complete a placeholder, ...) is one `VocabularyIndex` per
  tokenizer, which every example's entry references.
- Decode side (`ProtectedSpansLogitsProcessor`, `logits_process_pointer_generator.py`): a `LogitsProcessor` that
  keys every hypothesis' state by its own `input_ids`: a row carries on its parent's (the same ids without the last
  one), so beam reordering, sampling, `num_return_sequences` and the KV cache need nothing special. A row whose new
  token is calm (it starts, continues and ends no span and holds no placeholder mark) keeps its parent's rules and
  only looks again at what changes each step (`_carry_on`). A row's bans or forced tokens are a cached (V,) ceiling
  plus a few single ids; a step applies them all at once.

The token sequences of a span ("variants"):

1. the source's own ids at the span (extended ids included, so with the copy head a span of characters the
   vocabulary lacks still comes out), when the tokens there start and end at the span (whitespace a token folded in,
   a leading "▁", is allowed) and the model read all of it (a span that truncation cut off, wholly or in part, is
   spelled by 2 and 3 only, with a warning);
2. the tokenization of the span text alone, with and without a leading space, where it holds no unknown token and
   decodes back to the span text;
3. each of these without leading tokens that are only whitespace ("▁").

A variant that contains another variant of the same span is dropped (emitting it emits the shorter one too). Where
the source's tokens at a span also hold text around it ("for" inside "▁information", "1" inside "%1"), they are a
*context variant*: a copy of them holds the span and counts as an occurrence, but no rule forces them.

The rules, per hypothesis, from its generated ids `g` (the decoder prompt included):

- *Occurrences*: `g` is scanned left to right; at each position the longest variant (of any span) that matches there
  counts one occurrence of each span it holds (two spans inside one source token a copy reproduces both: "1" and "2"
  of `protect="[0-9]+"` in a URL the vocabulary lacks) and the scan jumps past it. Where the rules read the output's
  text (placeholders, glossary terms) a variant counts only for spans that read as themselves after the text before
  it (*Neighbours*): `%` `d` after `100%` is the escape `%%` and a letter, not span `%d`; a term glued to the word
  before it is not the term. At the end of `g`, a position where a longer variant still matches everything that
  follows is *pending*: the next tokens decide what occurs there (`1` is span "1" or the start of `1 2`, span "12"),
  so nothing from there on is counted yet. `emitted[s]` is the count, `remaining[s] = count[s] - emitted[s]`.
- *No span too often*: a token is forbidden when, with it, the row could no longer end without some span emitted more
  often than the source holds it (whatever it leaves pending resolved as if the row ended there, or completed into
  a span that remains). Only tokens of variants can do that: each is tried once per pending tail and counts.
- *Started span*: a pending tail is the model's to finish or leave. The output is forced to finish it only when
  leaving it would emit a span too often, or leave a token outside every span that only a span may hold (*Stray
  marks*: `%(` or `{` in a source whose text has no such mark elsewhere), or when the budget is tight. Text that only
  begins like a span (`Nakamura` before `Nakamura-Øresund`, `50%` before `%s`) stays the model's own. The tokens
  that start, go on with or complete a span that remains are exempt from every other ban of this module.
- *Budget*: with `R` tokens left before `max_length` / `max_new_tokens` (one less with `forced_eos_token_id`) and
  `need` the fewest tokens that place every remaining span, a start that commits the row may only be made with a
  variant that still fits, and when `R <= need + slack` (`slack`: where the rules read the text, one token per
  remaining span, see *Neighbours*; else 0) the hypothesis finishes the span its tail started, or starts a span that
  reads cleanly there, or, when none does, takes one space token (`"▁"`/`"Ġ"`) to keep the next one apart. A span
  is placed whole and reading as itself, or not at all: when no remaining span fits whole in `R`, or none would read
  as itself there, none is started and the row may end (the check after generation names what is missing).
- *End*: EOS is forbidden while a span remains. When EOS is a row's top token, the row starts a span there (the
  model chooses which among those that read as themselves there; a space first where none does), places every span
  that remains the same way, and then ends, as it chose to (unless a
  processor before this one bans EOS then); in any other row every allowed start scores at least what EOS did. For
  beams the rows that place spans where they wanted to end get their scores as log probabilities over what they may
  choose, so a hypothesis is not charged for the rule's choice. Beams and samples too place the spans where the model
  would have ended rather than wander on through text it did not want until the budget forces the spans in.
- *Exhausted*: a span emitted as often as the source holds it cannot be emitted again (*No span too often*), and
  tokens whose text starts with the text of the token that would complete it are forbidden too ("sa" for "s").
- *Neighbours* (`protect="placeholders"`): the decoded text must read as the same placeholders, so right after a
  span, tokens (and copies) with which the grammar would read it differently are forbidden ("%1" + "s" is "%1s", a
  URL goes on through "/"), and a span does not occur where the text generated since the last span would swallow it
  ("%" + "%(n)d" is an escaped percent, "www.x" + "{0}" a longer URL): its tokens there are text, the model's own.
  A glossary term reads as a word of its own: not glued to the word, symbol or punctuation before it ("now" +
  "jetzt"), nor run into by a placeholder begun before it ("%" + "dateien"). The rules read a copy as the decoder
  spaces it (its `oov_spacing`): "50%" + a copy of "discount" reads "50% discount", not "%d".
- *Invented placeholders* (`protect="placeholders"`, sources without placeholders included): every vocabulary token
  whose own text holds a placeholder (per `hf_pgen.placeholders`) is forbidden unless it is a token of one of the
  example's own spans, and so is every token (or copy) that would complete a placeholder begun in the free text
  since the last span (`{` `foo` + `}`, `%(` `n` + `)s`, `ht` + `tps://x`), or begun in the 256 tokens before the last
  span and still open across it (`<b class="` + span `%s` + `">`, which reads the span as part of a tag): outside
  its spans the decoded text holds no placeholder at all, however many tokens one runs over. The heads where one may
  have begun are few (`protection_rules_pointer_generator._live_heads`: the grammar rules most out), and the tokens
  that complete each are looked up once per head text.
  With a regex, literals or `"oov"`, an example without spans is left alone entirely.
- *Stray marks* (`protect="placeholders"`): a token (or copy) whose text holds one of "%{}<>" that the source holds
  nowhere outside its placeholders is forbidden, except as a token of a span that remains (one that starts it
  commits the row to finishing it, see *Started span*): `%(resourced`, `{count, {count` and a stray `<` break a format
  call or markup as an invented placeholder does, whether or not the grammar reads them as one.
- Nothing else is forced. When a processor that runs before this one (forced EOS, no-repeat n-grams, the caller's
  own; generate() runs the sampling warpers after it) has removed every token a rule allows, the rule wins (its
  tokens get score 0), and a row its bans would leave with no token starts a span (or keeps its scores).

Glossary target terms (`hf_pgen.glossary`) are spans whose count is a minimum (at least once). One the source does
not hold is spelled from the vocabulary, or by copying the source where it holds the target's text; with a copy head,
words of it the vocabulary lacks get slots of their own, which the example's `oov_words` table gains and which the
rules alone place (the model gives them no probability; `generate()` widens its scores to hold them).

What is guaranteed: every span the model can spell (see the variants; a span that it cannot, e.g. one of unknown
characters without the copy head, gets a warning naming it) is emitted exactly `count` times as a token sequence,
provided the length limit leaves room for all of them; otherwise a warning after generation names the outputs and
the spans they lack. With `protect="placeholders"` the decoded text also reads as the same placeholders around them
(*Neighbours*). That the decoded text holds a span byte for byte also needs a decoder that gives the span text back
in context: Metaspace/SentencePiece/byte-level decoders do; a Whitespace pre-tokenizer without a decoder does not.
With a word-level vocabulary, whose unknown token swallows the space before it, `decode_with_oovs` spaces a copied
piece as the source did after the same character (`v2.3` with `3` unknown comes back as `v2.3`) as long as the decoder gets the batch's
`oov_spacing` with its `oov_words` (plain strings and booleans, which JSON and `datasets` keep;
`processor.batch_decode(ids, batch)` passes both); given `oov_words` alone, a copy after "." gets a space (`v2. 3`).

This file is saved next to the model as remote code: it imports only the standard library, `torch`,
`transformers` and its hf_pgen siblings (relative imports).
"""

from __future__ import annotations

import bisect
import functools
import re
import unicodedata
import warnings
from collections.abc import Sequence
from typing import Any

from transformers import PreTrainedTokenizerBase, PreTrainedTokenizerFast

from .placeholders import PLACEHOLDER_MARKS, placeholder_end_at_start, placeholder_spans
from .tokenization_decode_pointer_generator import copy_starts_word, decode_with_oovs, decoder_layout
from .tokenization_encode_pointer_generator import encode_with_oovs

__all__ = ["find_protected_spans", "PROTECTED_SPANS_KEY"]

# The batch key the processor writes and generate() reads.
PROTECTED_SPANS_KEY = "protected_spans"
# An entry's out-of-vocabulary words of glossary targets its source lacks, moved into the batch's tables on encoding.
_EXTRA_SLOTS_KEY = "extra_oov_words"

_NAMED_MODES = ("placeholders", "oov")


# ------------------------------------------------------------------------------------------------------ spans
def check_protect(protect: Any) -> Any:
    """Validate `protect` once per call; returns the mode name, a compiled pattern, or a tuple of literals."""
    if isinstance(protect, str) and protect in _NAMED_MODES:
        return protect
    if isinstance(protect, re.Pattern):
        pattern = protect
    elif isinstance(protect, str):
        if not protect:
            raise ValueError(
                'protect="" is an empty pattern: pass "placeholders", "oov", a regular expression or a list of '
                "literal strings."
            )
        try:
            pattern = re.compile(protect)
        except re.error as error:
            raise ValueError(f"protect={protect!r} is not a valid regular expression: {error}.") from error
    elif isinstance(protect, (list, tuple, set, frozenset)):
        literals = list(protect)
        if not literals:
            raise ValueError("protect=[] lists no literal: pass at least one string to protect, or protect=None.")
        for index, literal in enumerate(literals):
            if not isinstance(literal, str):
                raise TypeError(f"protect[{index}] must be a str, got {type(literal).__name__}: {literal!r}.")
            if not literal:
                raise ValueError(f"protect[{index}] is the empty string: every literal to protect needs a character.")
        return tuple(dict.fromkeys(literals))  # keep order, drop repeats
    else:
        raise TypeError(
            f'protect must be "placeholders", "oov", a regular expression (str or compiled) or a list of literal '
            f"strings, got {type(protect).__name__}."
        )
    if pattern.fullmatch("") is not None or pattern.pattern == "":
        raise ValueError(
            f"protect={pattern.pattern!r} matches the empty string, so it would protect nothing: make every match "
            "hold at least one character (e.g. '+' instead of '*')."
        )
    return pattern


def find_protected_spans(text: str, protect: Any) -> list[tuple[int, int]]:
    """Character spans `(start, end)` of `text` to protect, in order.

    Args:
        text (`str`): the source text.
        protect (`str`, `re.Pattern` or list of `str`): `"placeholders"` (the project's placeholder grammar,
            `hf_pgen.placeholders`), a regular expression (str or compiled; its non-empty matches), or a list of
            literal strings (every occurrence). `"oov"` is token-level: the processor handles it.

    Raises:
        `ValueError`: for `protect="oov"`, an empty or invalid pattern or literal, or spans that overlap (two
            literals that overlap in the text). `TypeError`: for a `protect` of another type.

    Example:

    ```python
    >>> find_protected_spans("Delete %(name)s from {folder}?", "placeholders")
    [(7, 15), (21, 29)]
    ```
    """
    mode = check_protect(protect)
    if mode == "oov":
        raise ValueError(
            'protect="oov" works on tokens, not characters: use the processor (processor(texts, protect="oov")).'
        )
    if mode == "placeholders":
        spans = placeholder_spans(text)
    elif isinstance(mode, re.Pattern):
        matches = [match.span() for match in mode.finditer(text)]
        spans = [(start, end) for start, end in matches if end > start]
        if matches and not spans:
            warnings.warn(
                f"protect={mode.pattern!r} matches only empty strings in {text[:60]!r}: nothing is protected there. "
                "Make every match hold at least one character.",
                UserWarning,
                stacklevel=2,
            )
    else:
        spans = []
        for literal in mode:
            start = text.find(literal)
            while start >= 0:
                spans.append((start, start + len(literal)))
                start = text.find(literal, start + len(literal))
        spans.sort()
    for (start, end), (next_start, next_end) in zip(spans, spans[1:]):
        if next_start < end:
            raise ValueError(
                f"Protected spans overlap in {text!r}: {text[start:end]!r} at {start}-{end} and "
                f"{text[next_start:next_end]!r} at {next_start}-{next_end}. Protect one of them, or one literal "
                "that covers both."
            )
    return spans


def _row_list(value: Any, index: int) -> list:
    row = value[index]
    return row.tolist() if hasattr(row, "tolist") else list(row)


def _prune(variants: list[tuple[int, ...]]) -> list[tuple[int, ...]]:
    """Unique variants, without those that contain another one (emitting them emits the shorter one too)."""
    unique = sorted(set(v for v in variants if v), key=len)
    kept: list[tuple[int, ...]] = []
    for variant in unique:
        if not any(_contains(variant, shorter) for shorter in kept):
            kept.append(variant)
    return kept


def _contains(sequence: tuple[int, ...], part: tuple[int, ...]) -> bool:
    n = len(part)
    return any(sequence[i : i + n] == part for i in range(len(sequence) - n + 1))


class _SpanSpeller:
    """Token sequences that spell a span text alone, and whitespace-only tokens, looked up once per text."""

    def __init__(self, tokenizer: Any):
        self.tokenizer = tokenizer
        self.unk = tokenizer.unk_token_id
        self._alone: dict[str, list[tuple[int, ...]]] = {}
        self._blank: dict[int, bool] = {}

    def is_blank(self, token_id: int) -> bool:
        """Whether the token decodes to whitespace only (a "▁" piece)."""
        if token_id not in self._blank:
            text = self.tokenizer.decode([token_id], skip_special_tokens=False, clean_up_tokenization_spaces=False)
            self._blank[token_id] = not text.strip() and token_id != self.unk
        return self._blank[token_id]

    def strip(self, variant: tuple[int, ...]) -> tuple[int, ...]:
        start = 0
        while start < len(variant) - 1 and variant[start] < len(self.tokenizer) and self.is_blank(variant[start]):
            start += 1
        return variant[start:]

    def with_copies(
        self, text: str, oov_words: Sequence[str], vocab_size: int
    ) -> tuple[tuple[int, ...], list[tuple[str, dict]]] | None:
        """A spelling of `text` (as a word after a space) whose pieces the vocabulary lacks are copies: of the
        example's own out-of-vocabulary words (`oov_words`) where one is the piece's text, else of new slots, which
        the example's table gains (returned: each new word with its spacing record). None where the tokenizer has
        nothing out of vocabulary in `text`, or the spelling does not decode back to it."""
        encoded = encode_with_oovs(self.tokenizer, " " + text, vocab_size=vocab_size, add_special_tokens=False)
        ids, words, spacing = encoded["extended_input_ids"], encoded["oov_words"], encoded["oov_spacing"]
        if not words:
            return None
        table, records, new = list(oov_words), [None] * len(oov_words), []
        slots = []
        for word, record in zip(words, spacing):
            if word in table:
                slots.append(vocab_size + table.index(word))
            else:
                slots.append(vocab_size + len(table))
                table.append(word)
                records.append(record)
                new.append((word, record))
        variant = tuple(slots[t - vocab_size] if t >= vocab_size else t for t in ids)
        decoded = decode_with_oovs(
            self.tokenizer,
            list(variant),
            table,
            vocab_size=vocab_size,
            skip_special_tokens=False,
            oov_spacing=[r or {} for r in records],
        )
        return (variant, new) if _nfc(decoded.strip()) == _nfc(text.strip()) else None

    def alone(self, text: str) -> list[tuple[int, ...]]:
        if text not in self._alone:
            found = []
            for candidate in (text, " " + text):
                ids = self.tokenizer(candidate, add_special_tokens=False)["input_ids"]
                if not ids or self.unk in ids:
                    continue
                decoded = self.tokenizer.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)
                if _nfc(decoded.strip()) == _nfc(text.strip()):  # NFD text comes back composed
                    found.append(tuple(ids))
            self._alone[text] = found
        return self._alone[text]


def _nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def _decode_each(tokenizer: Any, sequences: list[list[int]]) -> list[str]:
    """`tokenizer.batch_decode(sequences)` with special tokens and spaces kept as they are; straight through the Rust
    tokenizer when the tokenizer's own decode is the stock fast one (Transformers' per-sequence loop around it is 30x
    slower, and a vocabulary is a lot of sequences)."""
    if (
        getattr(tokenizer, "is_fast", False)
        and type(tokenizer).decode is PreTrainedTokenizerBase.decode
        and type(tokenizer)._decode is PreTrainedTokenizerFast._decode
    ):
        return tokenizer.backend_tokenizer.decode_batch(sequences, skip_special_tokens=False)
    return tokenizer.batch_decode(sequences, skip_special_tokens=False, clean_up_tokenization_spaces=False)


class VocabularyIndex:
    """What the rules read from a tokenizer's vocabulary, built once per tokenizer (a processor keeps one) and shared
    by every example of every batch it encodes: each example's `protected_spans` entry holds one reference to it
    (`"vocabulary"`). Every table is computed on first use."""

    def __init__(self, tokenizer: Any):
        self.tokenizer = tokenizer
        self.speller = _SpanSpeller(tokenizer)
        # head text -> ids completing a placeholder begun there (filled by `ExampleRules.inventing`, the decode side)
        self.inventions: dict[str, list[int]] = {}
        self._extensions: dict[int, list[int]] = {}
        self._not_after: dict[str, list[int]] = {}

    @functools.cached_property
    def vocabulary_texts(self) -> list[str]:
        """Each id's own decoded text ("" for special tokens)."""
        special = set(self.tokenizer.all_special_ids)
        texts = _decode_each(self.tokenizer, [[i] for i in range(len(self.tokenizer))])
        return ["" if i in special else text for i, text in enumerate(texts)]

    @functools.cached_property
    def placeholder_ids(self) -> list[int]:
        """Vocabulary ids whose own text holds a placeholder (a token that would invent one on its own)."""
        return [i for i, text in enumerate(self.vocabulary_texts) if text and placeholder_spans(text)]

    @functools.cached_property
    def _sorted_texts(self) -> tuple[list[int], list[str]]:
        """The ids in the order of their texts, and those texts: the texts that start with a text are one run."""
        texts = self.vocabulary_texts
        order = sorted(range(len(texts)), key=texts.__getitem__)
        return order, [texts[i] for i in order]

    def extensions(self, token_id: int) -> list[int]:
        """Ids whose text starts with token `token_id`'s text and goes on ("sa" for "s"): after a span's other tokens
        they would spell the span's text too, so an exhausted span forbids them as well (none for a copy)."""
        table = self._extensions
        if token_id not in table:
            table[token_id] = []
            if token_id < len(self.tokenizer):
                order, ordered = self._sorted_texts
                text = self.vocabulary_texts[token_id]
                position = bisect.bisect_left(ordered, text) if text else len(ordered)
                while position < len(ordered) and ordered[position].startswith(text):
                    if ordered[position] != text:
                        table[token_id].append(order[position])
                    position += 1
                table[token_id].sort()
        return table[token_id]

    @functools.cached_property
    def _not_after_candidates(self) -> list[tuple[int, str]]:
        # A text that starts with whitespace ends every placeholder of the grammar (none holds a space after a
        # complete match: printf flags exclude it, URLs end there, the rest close with "}", ")" or ">"): only the
        # other tokens (a small part of a vocabulary: most are "▁word", "Ġword") can follow wrongly.
        return [(i, text) for i, text in enumerate(self.context_texts) if text and not text[0].isspace()]

    def not_after(self, span_text: str) -> list[int]:
        """Ids that must not follow the placeholder `span_text`: the grammar would read it differently with them
        ("%1" + "s" is "%1s"), or with anything after them (a URL goes on through "/" or "}")."""
        if span_text not in self._not_after:
            self._not_after[span_text] = [i for i, text in self._not_after_candidates if _changes(span_text, text)]
        return self._not_after[span_text]

    @functools.cached_property
    def context_texts(self) -> list[str]:
        """Each id's text as it reads after a word (decoders drop a leading space at the start of the text, not
        there: a lone "▁" reads as nothing at the start and as a space here); special tokens read as nothing."""
        alone = self.vocabulary_texts
        word = next((i for i, text in enumerate(alone) if text.isalpha()), None)
        if word is None:
            return list(alone)
        special = set(self.tokenizer.all_special_ids)
        pairs = _decode_each(self.tokenizer, [[word, i] for i in range(len(alone))])
        head = alone[word]
        return [
            "" if i in special else (pair[len(head) :] if pair.startswith(head) else text)
            for i, (text, pair) in enumerate(zip(alone, pairs))
        ]

    @functools.cached_property
    def copy_spacing(self) -> tuple[str | None, bool] | None:
        """(word-start marker, whether the pre-tokenizer isolates punctuation) where the decoder puts the space before
        a copy itself, because the unknown token swallows the marker (word-level, WordPiece) or nothing marks word
        starts (no decoder: tokens are joined with spaces); None where a copy's space is a token of its own ("▁",
        "Ġ") or SentencePiece's slow decoder spaces it (see `decode_with_oovs`)."""
        if not getattr(self.tokenizer, "is_fast", False):
            return None
        if self.tokenizer.backend_tokenizer.decoder is None:
            return (None, False)
        layout = decoder_layout(self.tokenizer)
        return (layout["marker"], layout["punctuation_apart"]) if layout["swallows_marker"] else None

    def copy_reading(self, word: str, record: dict | None, before: str) -> str:
        """The text a copy of `word` (its `oov_spacing` record) adds after the text `before`."""
        if word and before and self.copy_spacing is not None:
            marker, apart = self.copy_spacing
            if marker is None or copy_starts_word([before, word], 1, marker, apart, record):
                return " " + word
        return word

    @functools.cached_property
    def separator(self) -> int | None:
        """A token that reads as one space after a word ("▁", "Ġ"): what keeps a span apart when the budget is
        tight."""
        return next((i for i, t in enumerate(self.context_texts) if t == " "), None)

    @functools.cached_property
    def completers(self) -> dict[str, list[int]]:
        """Per kind of placeholder head (see `_live_heads`), the ids that could complete a placeholder begun before
        them: none of the grammar's placeholders holds whitespace after "%", "$", "#" or in a URL, brace fields and
        ICU arguments end with "}" (an ICU head with ","), tags with ">", a named printf field ("%(name") only
        through the ")" that closes its name, and a URL scheme goes on only through ":", "/" or ".". Any other id is
        never one that completes a head of that kind, so only these are tried."""
        texts = self.context_texts
        glued = [i for i, text in enumerate(texts) if text and not text[0].isspace()]
        return {
            "glued": glued,
            "brace": [i for i, text in enumerate(texts) if "}" in text or "," in text],
            "angle": [i for i, text in enumerate(texts) if ">" in text],
            "scheme": [i for i in glued if any(c in texts[i] for c in ":/.")],
            "named": [i for i in glued if ")" in texts[i]],
        }

    @functools.cached_property
    def calm_ids(self) -> frozenset[int]:
        """Ids whose text is not empty and holds none of the marks that may begin a placeholder or swallow one
        placed after it ("%{<$#", "://", "www."): a row that goes on with one of them keeps its last step's rules
        (see `ProtectedSpansLogitsProcessor._carry_on`)."""
        return frozenset(i for i, text in enumerate(self.context_texts) if text and not UNCALM_RE.search(text))

    @functools.cached_property
    def _mark_ids(self) -> dict[str, list[int]]:
        """Per mark of `_STRAY_MARKS`, the ids whose text holds it."""
        return {mark: [i for i, t in enumerate(self.context_texts) if mark in t] for mark in _STRAY_MARKS}

    def stray_ids(
        self, text: str, spans: list[tuple[int, int]], oov_words: Sequence[str], vocab_size: int
    ) -> list[int]:
        """Ids (vocabulary and this source's copies) whose text holds a mark of `_STRAY_MARKS` that `text` holds
        nowhere outside its placeholder `spans`: a stray "%" or "{" that no placeholder closes breaks `str % args`
        and `str.format` as an invented placeholder does, and a stray "<" breaks markup."""
        free, last = [], 0
        for start, end in spans:
            free.append(text[last:start])
            last = end
        free.append(text[last:])
        free_text = "".join(free)
        lacking = [mark for mark in _STRAY_MARKS if mark not in free_text]
        ids = {i for mark in lacking for i in self._mark_ids[mark]}
        ids.update(vocab_size + slot for slot, word in enumerate(oov_words) if any(mark in word for mark in lacking))
        return sorted(ids)


def _changes(span_text: str, text: str) -> bool:
    """Whether the grammar reads placeholder `span_text` differently when `text` follows it, or when anything
    follows `text` (tried with "x": a letter continues every placeholder that letters continue).

    Only the second needs trying: the grammar has no anchors or lookbehinds, so a match at the start that ends
    within `span_text + text` with "x" after it ends there without the "x" too."""
    return placeholder_end_at_start(span_text + text + "x") != len(span_text)


# A placeholder that begins in a text and runs on into a span placed after it begins with one of "%{<$#", or is a URL
# whose "://" or "www." is in that text: after a text with none of these every span reads as itself, which spares the
# grammar's scan on most steps (SWALLOWING_RE: one search instead of seven).
SWALLOWING = (*PLACEHOLDER_MARKS, "://", "www.")
SWALLOWING_RE = re.compile("|".join(map(re.escape, SWALLOWING)))
# A token none of whose characters is one of these adds nothing that could complete one of SWALLOWING ("w" alone does
# not make "www.": its "." does) (calm_ids): "%{<$#:/.".
UNCALM_RE = re.compile("[" + re.escape("".join(sorted({c for s in SWALLOWING for c in s if not c.isalpha()}))) + "]")

_STRAY_MARKS = "%{}<>"  # what a format call or markup reads as the start or end of a placeholder


def _protected_spans_for_batch(
    vocabulary: VocabularyIndex,
    texts: Sequence[str],
    encoding: Any,
    protect: Any,
    vocab_size: int,
    skip: int = 0,
    terms: Sequence[dict[str, Any] | None] | None = None,
    copies: bool = True,
) -> list[dict[str, Any]]:
    """Per example, `{"spans": [{"text", "count", "sequences"}], "forbidden_ids": [...]}` for `generate()`; with
    `protect="placeholders"` also the example's `stray_ids`, `oov_words` and `vocab_size`, and `vocabulary`, the
    tokenizer's `VocabularyIndex` (one object, shared by every example).

    `encoding` is `encode_with_oovs`' output for `texts` with `offset_mapping` (lists or tensors, batched). Spans are
    searched from character `skip` of each text on: a task prefix before it is read by the model, never protected.
    `protect` may be None when only glossary terms are placed.

    `terms` (glossaries, `hf_pgen.glossary`): per example, `{"targets": [(target, start, end)], "added": [(start,
    end)], "sources": [(start, end)]}` or None. A target with a `start` stands at `text[start:end]` (the annotation
    wrote it there) and is spelled like a protected span, the source's own ids included; one with `start=None` is
    not in the source and is spelled from the vocabulary. Each target counts one occurrence. Protected spans are
    not searched in the `added` ranges (the annotation, not the user's text) and may not overlap a `sources` range
    (the source term a target replaces). With `copies` (the model has a copy head), a target with pieces the
    vocabulary lacks, and that the source does not hold, is spelled with new slots for them; the entry lists them
    under `_EXTRA_SLOTS_KEY` (see `add_protected_spans`).
    """
    mode = check_protect(protect) if protect is not None else None
    speller = vocabulary.speller
    can_copy = copies
    forbidden: list[int] = []
    if mode == "placeholders":
        forbidden = vocabulary.placeholder_ids
    results = []
    for index, text in enumerate(texts):
        ids = _row_list(encoding["extended_input_ids"], index)
        mask = _row_list(encoding["attention_mask"], index)
        oov_words = encoding["oov_words"][index]
        spacing = list(encoding["oov_spacing"][index]) if encoding.get("oov_spacing") is not None else []
        by_text: dict[str, dict[str, Any]] = {}
        extra: list[tuple[str, dict]] = []  # out-of-vocabulary words of target terms the source does not hold
        term = terms[index] if terms is not None else None
        added = term["added"] if term else []
        offsets = (
            [tuple(pair) for pair in _row_list(encoding["offset_mapping"], index)] if mode != "oov" or term else []
        )

        def new_entry(is_term: bool) -> dict[str, Any]:
            return {"count": 0, "variants": [], "context": [], "cut": False, "follows": set(), "term": is_term,
                    "covered": set()}  # fmt: skip

        # Where a span or term occurs in the source: spans (what protect= finds, or an annotated target term).
        kinds: dict[tuple[int, int], str] = {}
        if mode == "oov":
            for position, token_id in enumerate(ids):
                if added and _overlaps(offsets[position], added):
                    continue  # a target term the annotation wrote: the glossary places it
                if mask[position] and token_id >= vocab_size:
                    entry = by_text.setdefault(oov_words[token_id - vocab_size], new_entry(False))
                    entry["count"] += 1
                    entry["protected"] = True
                    entry["variants"].append((token_id,))
        elif mode is not None:
            found = [(start + skip, end + skip) for start, end in find_protected_spans(text[skip:], mode)]
            kinds = {span: "span" for span in found if not _overlaps(span, added)}
            if term:
                _check_no_conflict(text, list(kinds), term["sources"], index)
            if mode == "placeholders":  # marks the source's text around its placeholders lacks stay out of the output's
                stray = vocabulary.stray_ids(text, sorted([*kinds, *added]), oov_words, vocab_size)
        unplaced = []  # target terms the source does not hold where the annotation would have written them
        for target, start, end in term["targets"] if term else ():
            if start is None:
                unplaced.append(target)
            else:
                kinds[(start, end)] = "term"
        for start, end in sorted(kinds):
            span_text = text[start:end]
            what = "Glossary term" if kinds[(start, end)] == "term" else "Protected span"
            variants = list(speller.alone(span_text))
            own, aligned, cut, covering = _source_spelling(text, (start, end), ids, mask, offsets)
            if cut and variants:
                warnings.warn(
                    f"{what} {span_text!r} of source {index} lies past the truncation: the model did not "
                    "read it, but it is still placed in the output, spelled from the vocabulary. Raise max_length "
                    "to let the model read it.",
                    UserWarning,
                    stacklevel=4,
                )
            # The source's own ids spell the span when its tokens start and end there (folded-in whitespace
            # aside). When they also hold text around it ("for" in "▁information", "1" in "%1"), they are a
            # *context* variant: a copy of them holds the span and counts as one, but the rules never force
            # them (they would force the text around the span too).
            context = []
            if not cut and speller.unk not in own:
                (variants if aligned else context).append(own)
            variants += [speller.strip(v) for v in variants]
            entry = by_text.setdefault(span_text, new_entry(kinds[(start, end)] == "term"))
            # Occurrences are counted in tokens: two inside one source token ("1" twice in "121") are one
            # occurrence of its copy, which is all the output scan can count.
            if not (context and tuple(covering) in entry["covered"]):
                entry["count"] += 1
            entry["covered"].add(tuple(covering))
            entry["protected"] = entry.get("protected", False) or kinds[(start, end)] == "span"
            if covering and covering[-1] + 1 < len(ids) and mask[covering[-1] + 1]:
                entry["follows"].add(ids[covering[-1] + 1])  # the source reads the span as itself before it
            entry["variants"] += variants
            entry["context"] += context
            entry["cut"] = entry["cut"] or cut
        for target in unplaced:
            if target in by_text:
                # Already a span or a term: a protected span's exact count holds it at least once, as a term needs.
                by_text[target]["term"] = True
                continue
            entry = by_text[target] = new_entry(True)
            entry["count"] = 1
            alone = speller.alone(target)
            # Where the source holds the target's text as it stands (an identity entry, a name), its own ids
            # there spell it too: a copy model copies it, characters its vocabulary lacks included.
            copies = []
            for at in _whole_occurrences(text, target, skip):
                if not _overlaps(at, added):
                    own, aligned, cut, _ = _source_spelling(text, at, ids, mask, offsets)
                    if aligned and not cut and speller.unk not in own:
                        copies.append(own)
            if not alone and not copies and can_copy:
                # Pieces no vocabulary token spells: copies of slots the example's table gains. The model gives them
                # no probability (no source position holds them), so only the rules place them: once, where the
                # model would end (a model trained with the glossary annotation reads the term and copies it where
                # it belongs instead).
                spelled = speller.with_copies(target, [*oov_words, *(word for word, _ in extra)], vocab_size)
                if spelled is not None:
                    copies.append(spelled[0])
                    extra += spelled[1]
            entry["variants"] += alone + copies + [speller.strip(v) for v in alone + copies]
        spans = []
        for span_text, entry in by_text.items():
            variants = _prune(entry["variants"]) or _prune(entry["context"])
            context = [list(v) for v in dict.fromkeys(entry["context"]) if v not in variants]
            if not variants:
                why = (
                    "lies past the truncation (raise max_length to let the model read it), and the span alone has "
                    "unknown tokens"
                    if entry.get("cut")
                    else "its tokens there also cover text outside the span, and the span alone has unknown tokens"
                )
                if entry.get("term") and not entry["variants"] and not entry["context"] and not entry.get("cut"):
                    why = (
                        "the vocabulary spells it only with unknown tokens and the source does not hold it to copy; a "
                        "copy model trained with the glossary annotation (run_translation --glossary_augmentation) "
                        "reads it in its source and copies it"
                    )
                warnings.warn(
                    f"{'Glossary term' if entry.get('term') else 'Protected span'} {span_text!r} of source {index} "
                    f"cannot be spelled by the model ({why}): it is not "
                    f"{'guaranteed' if entry.get('term') else 'protected'}.",
                    UserWarning,
                    stacklevel=4,
                )
                continue
            extensions = sorted({e for v in variants for e in vocabulary.extensions(v[-1])})
            after = []
            if mode == "placeholders" and not entry.get("term"):  # and this example's copies that would change it
                after = vocabulary.not_after(span_text) + [
                    vocab_size + slot
                    for slot, word in enumerate(oov_words)
                    if _changes(span_text, vocabulary.copy_reading(word, _record(spacing, slot), span_text))
                ]
                # (a token that follows the span in the source keeps its reading there: the decoder spaces a copy
                # as the source did, which its bare text does not show)
                after = [t for t in after if t not in entry["follows"]]
            # A glossary term must come out at least once: a translation may well use it fewer times than its source
            # term occurs ("the extension ... the extension author": "Erweiterung ... Erweiterungsautor"), or more.
            least = bool(entry.get("term")) and not entry.get("protected")
            spans.append(
                {
                    "text": span_text,
                    "count": 1 if least else entry["count"],
                    "at_least": least,
                    "sequences": [list(v) for v in variants],
                    "context_sequences": context,
                    "extensions": extensions,
                    "not_after": after,
                }
            )
        result = {"spans": spans, "forbidden_ids": forbidden}
        if extra:  # (the caller adds them to the example's table; generate() widens its scores to hold them)
            result[_EXTRA_SLOTS_KEY] = extra
            oov_words = [*oov_words, *(word for word, _ in extra)]
            spacing = [*spacing, *(record for _, record in extra)]
        if mode == "placeholders" or any(span["at_least"] for span in spans):
            # What the rules need to read the output's text: the grammar around placeholders, and a glossary term
            # reading as a word of its own.
            result.update(oov_words=list(oov_words), oov_spacing=spacing, vocab_size=vocab_size, vocabulary=vocabulary)
        if mode == "placeholders":  # the stray marks
            result["stray_ids"] = stray
        results.append(result)
    if isinstance(mode, tuple):
        warn_missing_literals(texts, mode, stacklevel=5, skip=skip)
    return results


def _record(spacing: list[dict], slot: int) -> dict | None:
    return spacing[slot] if slot < len(spacing) else None


def _overlaps(span: tuple[int, int], ranges: Sequence[tuple[int, int]]) -> bool:
    start, end = span
    return any(start < e and s < end for s, e in ranges)


def _source_spelling(
    text: str, span: tuple[int, int], ids: list[int], mask: list[int], offsets: list[tuple[int, int]]
) -> tuple[tuple[int, ...], bool, bool, list[int]]:
    """The source's own ids at `span` of `text`: (those ids, whether they start and end there (whitespace a token
    folded in aside), whether truncation cut the span (wholly or in part), the positions)."""
    start, end = span
    covering = [p for p, (s, e) in enumerate(offsets) if mask[p] and e > s and s < end and e > start]
    first, last = (offsets[covering[0]][0], offsets[covering[-1]][1]) if covering else (end, start)
    while start < last < end and unicodedata.combining(text[last]):
        last += 1  # a normalizer's offsets of a composed character leave out its combining marks
    cut = first > start or last < end  # (partly) past the truncation: the model did not read it
    aligned = not text[min(first, start) : start].strip() and not text[end : max(last, end)].strip()
    return tuple(ids[p] for p in covering), aligned, cut, covering


def _whole_occurrences(text: str, term: str, skip: int) -> list[tuple[int, int]]:
    """The spans where `term` stands in `text[skip:]` not glued to a word character on either side."""
    found, at = [], text.find(term, skip)
    while at >= 0:
        end = at + len(term)
        if not (at > skip and _word(text[at - 1]) and _word(term[0])) and not (
            end < len(text) and _word(text[end]) and _word(term[-1])
        ):
            found.append((at, end))
        at = text.find(term, at + 1)
    return found


def _word(char: str) -> bool:
    return char.isalnum() or char == "_"


def _check_no_conflict(text: str, found: list[tuple[int, int]], sources: Sequence[tuple[int, int]], index: int) -> None:
    """A protected span inside a glossary match would have to come out as itself and as the target term: refuse."""
    for start, end in found:
        for s, e in sources:
            if start < e and s < end:
                raise ValueError(
                    f"Protected span {text[start:end]!r} of source {index} overlaps the glossary's source term "
                    f"{text[s:e]!r}: the span must come out as written, the term as its target term. Drop the term "
                    "from the glossary, or the span from protect=."
                )


def warn_missing_literals(texts: Sequence[str], protect: Any, stacklevel: int = 2, skip: int = 0) -> None:
    """Warn once when literals of `protect` (a list of them; anything else is left alone) occur in none of `texts`
    (each searched from character `skip` on)."""
    if not isinstance(protect, (list, tuple, set, frozenset)):
        return
    missing = [literal for literal in dict.fromkeys(protect) if not any(literal in text[skip:] for text in texts)]
    if missing:
        warnings.warn(
            f"Protected literal(s) {missing} occur in none of the {len(texts)} source(s): nothing to protect for them "
            "(the match is exact and case-sensitive).",
            UserWarning,
            stacklevel=stacklevel,
        )


def add_protected_spans(
    batch: Any,
    text: str | Sequence[str],
    protect: Any,
    vocabulary: VocabularyIndex,
    vocab_size: int,
    keep_offsets: bool,
    skip: int = 0,
    terms: Sequence[dict[str, Any] | None] | None = None,
    copies: bool = True,
) -> Any:
    """Write `batch["protected_spans"]` (per example; one dict for an un-batched example) from an `encode_with_oovs`
    batch made with `return_offsets_mapping=True` by `vocabulary`'s tokenizer; drop the offsets unless the caller
    asked for them."""
    single = (
        isinstance(text, str)
        and not hasattr(batch["input_ids"], "dim")
        and (not batch["input_ids"] or not isinstance(batch["input_ids"][0], list))
    )
    texts = [text] if isinstance(text, str) else list(text)
    keys = ("extended_input_ids", "attention_mask", "offset_mapping")
    view = {key: [batch[key]] if single else batch[key] for key in keys}
    view["oov_words"] = [batch["oov_words"]] if single else batch["oov_words"]
    if "oov_spacing" in batch:
        view["oov_spacing"] = [batch["oov_spacing"]] if single else batch["oov_spacing"]
    entries = _protected_spans_for_batch(vocabulary, texts, view, protect, vocab_size, skip, terms, copies)
    for row, entry in enumerate(entries):
        extra = entry.pop(_EXTRA_SLOTS_KEY, ())
        if extra:  # the tables decoding reads gain the words of target terms only copies spell
            for key, values in (("oov_words", [w for w, _ in extra]), ("oov_spacing", [r for _, r in extra])):
                if key in batch:
                    table = batch[key] if single else batch[key][row]
                    table += values
    if not keep_offsets:
        del batch["offset_mapping"]
    batch[PROTECTED_SPANS_KEY] = entries[0] if single else entries
    return batch
