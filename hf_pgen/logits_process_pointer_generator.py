"""The decoding half of protection: `ProtectedSpansLogitsProcessor`, which makes generate() reproduce each protected
span of a source exactly as often as the source holds it (the rules are specified in the docstring of
`hf_pgen.protection_pointer_generator`, the encode half, which finds the spans and the token sequences that spell them).

```python
batch = processor(["Delete %(count)d files from {folder}?"], protect="placeholders", return_tensors="pt")
ids = model.generate(**batch, num_beams=4)      # generate() installs the processor from the batch's `protected_spans`
base.generate(**batch, logits_processor=LogitsProcessorList([ProtectedSpansLogitsProcessor(
    batch["protected_spans"], eos_token_id=base.config.eos_token_id, max_new_tokens=64)]))  # any encoder-decoder
```

This file is saved next to the model as remote code: it imports only the standard library, `torch`,
`transformers` and its hf_pgen siblings (relative imports).
"""

from __future__ import annotations

import re
import unicodedata
import warnings
from collections.abc import Sequence
from typing import Any, NamedTuple

import torch
from transformers import LogitsProcessor, LogitsProcessorList

from .placeholders import _PERCENT_PREFIX, placeholder_spans
from .protection_pointer_generator import _UNCALM_RE

__all__ = ["ProtectedSpansLogitsProcessor"]


# --------------------------------------------------------------------------------------------------- decoding
# A placeholder that begins in a text and runs on into a span placed after it begins with one of "%{<$#", or is a URL
# whose "://" or "www." is in that text (no placeholder starts with the rest of one): after a text with none of these
# every span reads as itself, which spares the grammar's scan on most steps.
_SWALLOWING = ("%", "{", "<", "$", "#", "://", "www.")
_SWALLOWING_RE = re.compile("|".join(map(re.escape, _SWALLOWING)))  # one search instead of seven


_URL_START = re.compile(r"(?:https?|ftp)://|www\.")
_URL_PREFIXES = ("https://", "http://", "ftp://", "www.")
_LAST_SPACE = re.compile(r"\s(?=\S*\Z)")
_SCHEME_STARTS = frozenset(prefix[:k] for prefix in _URL_PREFIXES for k in range(1, len(prefix)))  # "h" ... "https:/"
# A Python named field's name, open or closed, made only of characters that begin no placeholder of the grammar: the
# grammar reads any such name alike (`[^()\s]+`), and no other placeholder starts inside it.
_NAMED_HEAD = re.compile(r"^%\([\w.\-]+(?=\)|$)")
_UNDECIDED = object()  # a row not decided yet this step (a decision may be None)
_WINDOW = 32  # tokens of text before a span that may swallow it (placeholders are short; URLs end at a space)
_ACROSS = 256  # tokens before a span's end in which a placeholder around it may have been opened ("{0:" holds any text)


def _live_heads(tail: str) -> list[tuple[str, str]]:
    """(head, kind) for each suffix of `tail` (free text generated since the last span) where a placeholder of the
    grammar may have begun and more text could still complete it: at "%", "$", "#", "{", "<", at a URL's scheme or
    "www.", and a URL scheme still being spelled at the end ("htt"). A head is dropped only where the grammar rules
    it out (whitespace after "%", "$", "#" or in a URL; a "{" form past its first "}"; "<" not followed by a name or
    "/"), so none is missed."""
    heads: list[tuple[str, str]] = []
    marks = "%" in tail or "{" in tail or "<" in tail or "$" in tail or "#" in tail
    url = "://" in tail or "www." in tail
    space = _LAST_SPACE.search(tail) if marks or url else None
    word = space.end() if space else 0  # where the last whitespace-free run of `tail` begins
    if marks:
        escaped = -1  # the second "%" of an escaped "%%" (paired left to right, as the grammar reads them)
        for p, char in enumerate(tail):
            if char not in "%{<$#" or p == escaped:
                continue
            head = tail[p:]
            if head.startswith("%%"):
                escaped = p + 1
                continue
            if char in "%$#":
                if p < word or (char != "%" and len(head) > 1 and head[1] != "{"):
                    continue
                if char != "%":
                    kind = "brace"
                elif head.startswith("%(") and ")" not in head:
                    kind = "named"  # "%(name" is completed only through the ")" that closes the name
                else:
                    kind = "glued"
                heads.append((head, kind))
            elif char == "{":
                if head.startswith("{{"):  # "{{ name }}": at most 80 characters inside, on one line
                    if len(head) <= 84 and "\n" not in head:
                        heads.append((head, "brace"))
                elif "{" not in head[1:] and "}" not in head[1:]:  # every other "{" form ends at its first "}"
                    heads.append((head, "brace"))
            elif len(head) == 1 or head[1].isalnum() or (head[1] == "/" and (len(head) == 2 or head[2].isalnum())):
                # a tag holds no other "<" or ">" (but a quoted value may)
                if ("<" not in head[1:] and ">" not in head) or '"' in head or "'" in head:
                    heads.append((head, "angle"))
    if url:
        for match in _URL_START.finditer(tail, word):
            heads.append((tail[match.start() :], "glued"))
    if tail and tail[-1] in "hftpsw:/":  # the longest end of `tail` that starts a scheme: "h" + "ttps://x"
        for k in range(min(len(tail), 7), 0, -1):
            if tail[-k:] in _SCHEME_STARTS:
                heads.append((tail[-k:], "scheme"))
                break
    return heads


def _is_word(char: str) -> bool:
    return char.isalnum() or char == "_"


# Scripts whose words stand apart with spaces: a glossary term in one of them does not come right after other text.
_SPACED_SCRIPTS = frozenset(["LATIN", "GREEK", "CYRILLIC", "ARMENIAN", "GEORGIAN", "HEBREW", "ARABIC", "DIGIT"])


def _glued(before: str, first: str) -> bool:
    """Whether a term whose text starts with `first` reads glued to the character `before` it ("now" + "jetzt",
    "📁" + "jetzt", "%(name)s" + "Dateien", "now." + "Dateien"): it starts a word of a spaced script, and `before`
    is not whitespace, an opening bracket or quote, a dash, a slash or a sign such as the ">" that ends a tag
    ("<b>" + "Dateien")."""
    if before.isspace() or unicodedata.category(before) in ("Ps", "Pi", "Pd", "Sm") or before in "\"'/\\":
        return False
    return _is_word(first) and unicodedata.name(first, "").split(" ")[0] in _SPACED_SCRIPTS


def _completes(head: str, text: str) -> bool:
    """Whether `text` after `head` completes a placeholder that begins in `head` (one that `text` holds alone is the
    single-token rule's)."""
    n = len(head)
    return any(start < n < end for start, end in placeholder_spans(head + text))


class _TailRules(NamedTuple):
    """What the next token may do after a row's pending tail (see `_Example.tail_rules`)."""

    after: tuple[int, ...]  # remaining per span once the tail resolves as if the row ended there
    must_continue: bool  # leaving the tail would emit a span too often or leave a placeholder mark loose
    banned: list[int]  # tokens that would do that, or emit a span too often themselves
    passing: list[int]  # the tokens tried that may come next: all a row that must continue may choose
    opening: frozenset[int]  # of those, the ones that start, go on with or complete a span that remains
    continuations: list[tuple[int, int, int]]  # (next token, tokens the variant still needs, span) of the tail
    last_span: int | None  # the span of an occurrence ending at the tail's end when it resolves


class _Example:
    """One example's spans, indexed for the per-step rules."""

    def __init__(self, entry: dict[str, Any], width: int | None):
        self.texts: list[str] = []
        self.counts: list[int] = []
        # Per span: whether its count is a minimum, not an exact number (glossary terms: a translation may use a
        # term more often than the guarantee asks, and nothing bans it then).
        self.at_least: list[bool] = []
        self.variants: list[list[tuple[int, ...]]] = []
        context_variants: list[list[tuple[int, ...]]] = []
        extensions: list[frozenset[int]] = []
        not_after: list[frozenset[int]] = []  # tokens that must not follow the span (they would change its text)
        for span in entry.get("spans", ()):
            variants = [tuple(int(t) for t in v) for v in span["sequences"]]
            if width is not None:
                usable = [v for v in variants if max(v) < width]
                if not usable:
                    what, done = (
                        ("Glossary term", "guaranteed") if span.get("at_least") else ("Protected span", "protected")
                    )
                    warnings.warn(
                        f"{what} {span['text']!r} can only come out by copying (its tokens are out of the "
                        f"vocabulary) and this model does not copy: it is not {done}.",
                        UserWarning,
                        stacklevel=5,
                    )
                    continue
                variants = usable
            context = [tuple(int(t) for t in v) for v in span.get("context_sequences", ())]
            self.texts.append(span["text"])
            self.counts.append(int(span["count"]))
            self.at_least.append(bool(span.get("at_least")))
            self.variants.append(variants)
            context_variants.append([v for v in context if width is None or max(v) < width])
            extensions.append(frozenset(int(t) for t in span.get("extensions", ())))
            not_after.append(frozenset(int(t) for t in span.get("not_after", ())))
        self.min_lengths = [min(len(v) for v in vs) for vs in self.variants]
        self._open_ended = any(self.at_least)
        # What the scan matches: the variants and the context variants (the source's tokens around a span that
        # also hold text around it: a copy of them counts, but no rule forces them).
        scanned = [vs + cs for vs, cs in zip(self.variants, context_variants)]
        # A token sequence counts one occurrence of every span it holds: two spans inside one source token (a URL
        # the vocabulary lacks holds "1" and "2" of protect=r"\d+") are both in a copy of it.
        holders: dict[tuple[int, ...], tuple[int, ...]] = {}
        for j, variants in enumerate(scanned):
            for variant in variants:
                if j not in holders.get(variant, ()):
                    holders[variant] = (*holders.get(variant, ()), j)
        self.by_first: dict[int, list[tuple[tuple[int, ...], tuple[int, ...]]]] = {}
        for variant, js in holders.items():
            self.by_first.setdefault(variant[0], []).append((variant, js))
        self.max_length = max((len(v) for v in holders), default=0)
        self._budgets: dict[tuple[int, ...], tuple[int, int, list[tuple[int, int]]]] = {}  # see budget_rule
        self._starts: dict[tuple[int, ...], list[int]] = {}  # see starts
        # proper prefix -> the variants it starts (with the spans each holds), for the started-span lookup
        self.by_prefix: dict[tuple[int, ...], list[tuple[tuple[int, ...], tuple[int, ...]]]] = {}
        for variant, js in holders.items():
            for t in range(1, len(variant)):
                self.by_prefix.setdefault(variant[:t], []).append((variant, js))
        # Whether each span is a placeholder of the grammar (protected placeholders) rather than text (a glossary
        # term): what reading "as itself" after other text means for it (see reads_cleanly).
        self.placeholder = [placeholder_spans(text) == [(0, len(text))] for text in self.texts]
        self._clean: list[dict[str, bool]] = [{} for _ in self.texts]  # per span: text before -> starts cleanly
        # The tokenizer's _VocabularyIndex (protection_pointer_generator), with which the rules read the output's text:
        # for protect="placeholders" (its rules apply even without spans: no placeholder the source lacks may come
        # out) and for glossary terms (a term reads as a word).
        vocabulary = entry.get("vocabulary")
        self.reads_text = vocabulary is not None
        self.has_neighbours = self.reads_text and "stray_ids" in entry  # protect="placeholders"
        self.context_texts: list[str] | None = vocabulary.context_texts if self.reads_text else None
        self.oov_words: list[str] = list(entry.get("oov_words") or ())
        self.oov_spacing: list[dict] = list(entry.get("oov_spacing") or ())  # how the source spaced each copy
        self.vocab_size = int(entry.get("vocab_size") or 0)  # where copy ids start
        self.vocabulary = vocabulary  # (its copy_reading spaces copies as the decoder does)
        self.separator: int | None = vocabulary.separator if self.reads_text else None
        self.completers: dict[str, list[int]] = vocabulary.completers if self.has_neighbours else {}
        self._copy_inventions: dict[str, list[int]] = {}  # head -> this example's copies that complete it
        # (last span, ids up to its end) -> text of those ids when a placeholder opened before the span is still open
        # after it, else None (see _heads_across)
        self._before_spans: dict[tuple[int, tuple[int, ...]], str | None] = {}
        # ids -> (start, text of the ids from start on): this step's free texts and the last step's, which this
        # step's rows carry on by one token (see free_text; `next_step` turns them over)
        self._texts: dict[tuple[int, ...], tuple[int, str]] = {}
        self._last_texts: dict[tuple[int, ...], tuple[int, str]] = {}
        own_tokens = {t for vs in scanned for v in vs for t in v}
        self.own_tokens = frozenset(own_tokens)
        self.calm: frozenset[int] | None = vocabulary.calm_ids if self.has_neighbours else None
        self._singles: dict[tuple[int, ...], tuple[list[int], frozenset[int], frozenset[int]]] = {}  # calm_bans
        forbidden = frozenset(t for t in entry.get("forbidden_ids", ()) if t not in own_tokens)
        # What a row's bans are made of, besides a few single tokens: component 0 is the forbidden ids, 1 + 2j span
        # j's extensions and 2 + 2j the tokens that must not follow span j (large sets, turned into masks once).
        self.components: list[frozenset[int]] = [forbidden]
        for j in range(len(self.texts)):
            self.components += [extensions[j], not_after[j]]
        # The last component: stray marks (see _VocabularyIndex.stray_ids), except the first tokens of spans, which
        # may start one; an exhausted span's first tokens with such marks are banned one by one (see stray_starts).
        stray = frozenset(entry.get("stray_ids", ()))
        firsts = {v[0] for vs in self.variants for v in vs}
        self.stray_part = len(self.components)
        self.components.append(stray - firsts)
        self._stray_firsts = [sorted({v[0] for v in vs} & stray) for vs in self.variants]
        self._stray_starts: dict[tuple[int, ...], list[int]] = {}
        self.stray_tokens = stray  # tokens only a span may hold: one that starts a span commits the row to it
        self._tail_rules: dict[tuple[tuple[int, ...], tuple[int, ...]], _TailRules] = {}  # see tail_rules
        self.base_parts = frozenset(p for p in (0, self.stray_part) if self.components[p])  # every row's

    def __bool__(self) -> bool:
        return bool(self.texts) or self.has_neighbours

    def inventing(
        self, g: list[int], since: int, inventions: dict[str, list[int]], last_span: int | None = None
    ) -> list[int]:
        """Ids that would complete a placeholder of the grammar begun in the free text of `g` since position `since`
        (the end of the last span, `last_span`), or begun before that span and running on across it: `{` `name` +
        `}`, `%(` `n` + `)s`, `<` `b` + `>`, `<b class="` + span `%s` + `">` (module docstring, *Invented
        placeholders*). `inventions` caches the vocabulary's per head text (shared by the examples)."""
        head_text = self.texts[last_span] if last_span is not None else ""
        tail = self.free_text(g, since, head_text)  # all of it: a placeholder may run on for many tokens ("%(" ...)
        heads = _live_heads(tail)
        if last_span is not None:
            heads += self._heads_across(g, since, last_span, tail)
        banned: list[int] = []
        for head, kind in heads:
            if kind == "glued" and head[0] == "%" and not _PERCENT_PREFIX.fullmatch(head):
                # No placeholder begun at this "%" runs on past the head ("%s</h1>.h"); one begun further in has a head
                # of its own. Most "%" heads are such: this spares trying every glued token on each.
                continue
            # What completes "%(name)" does not depend on the name: one lookup serves every name a model writes.
            head = _NAMED_HEAD.sub("%(x", head, count=1)
            if head not in inventions:
                texts = self.context_texts
                candidates = self.completers.get(kind, range(len(texts)))
                inventions[head] = [i for i in candidates if _completes(head, texts[i])]
            banned += inventions[head]
            if self.oov_words:
                if head not in self._copy_inventions:
                    self._copy_inventions[head] = [
                        self.vocab_size + slot
                        for slot in range(len(self.oov_words))
                        if _completes(head, self.copy_reading(self.vocab_size + slot, head))
                    ]
                banned += self._copy_inventions[head]
        return banned

    def _heads_across(self, g: list[int], since: int, last_span: int, tail: str) -> list[tuple[str, str]]:
        """The live heads (`_live_heads`) of the text since `_ACROSS` tokens before the end of span `last_span` that
        begin before that span: a tag or a brace field opened in the free text before a span and not closed yet
        (`<strong class="` + `%s`), which the free text since the span could close around it."""
        key = (last_span, tuple(g[max(0, since - _ACROSS) : since]))
        if key not in self._before_spans:
            before = self.text_of(list(key[1]))
            span_length = len(self.texts[last_span])  # a head longer than the span's text began before it
            open_before = any(len(head) > span_length for head, _ in _live_heads(before))
            self._before_spans[key] = before if open_before else None
        before = self._before_spans[key]
        if before is None:  # most rows: nothing opened before the span is still open after it
            return []
        reach = len(self.texts[last_span]) + len(tail)
        return [(head, kind) for head, kind in _live_heads(before + tail) if len(head) > reach]

    def advance(
        self,
        g: Sequence[int],
        position: int,
        emitted: list[int],
        last_end: int,
        last_span: int | None,
        stop: int,
        at_end: bool = False,
        free: list[int] | None = None,
        before: str = "",
    ) -> tuple[int, int, int | None, tuple[int, ...]]:
        """Scan `g` on from `position` while it is below `stop`: at each position the longest variant that matches
        there counts one occurrence of each span it holds (into `emitted`) and the scan jumps past it; positions no
        occurrence covers go into `free` when given. Returns (position reached, end of the last occurrence, its
        span, the spans pending there: empty when nothing is).

        Unless `at_end` (the sequence is finished), the scan stops at a *pending* position: one where a variant
        longer than what is left of `g` matches all of it, so the next tokens decide what occurs there (`1` is
        span "1", or the start of `1 2`, span "12"). Nothing from a pending position on is counted.

        Where the rules read the text (placeholders, glossary terms), a variant counts only for the spans that read as
        themselves after the text before it (`reads_cleanly`; `before`: the text before `g[0]` while no occurrence is
        in `g`): `%` `d` after `100%` is text (the escape `%%` and a `d`), not span `%d`; `jetzt` glued to `now` is
        not the term `jetzt`."""
        length = len(g)
        while position < stop:
            best, best_js, pending = 0, (), ()
            context: str | None = None  # the text a span starting here follows (looked up at the first match)
            for variant, js in self.by_first.get(g[position], ()):
                n = len(variant)
                full = position + n <= length
                if full:
                    if n <= best or tuple(g[position : position + n]) != variant:
                        continue
                elif at_end or tuple(g[position:]) != variant[: length - position]:
                    continue
                if self.reads_text:
                    if context is None:
                        context = self._context_at(g, position, last_end, last_span, before)
                    js = tuple(j for j in js if self.reads_cleanly(context, j))
                    if not js:
                        continue
                if full:
                    best, best_js = n, js
                else:
                    pending += js
            if pending:
                return position, last_end, last_span, pending
            if not best_js:
                if free is not None:
                    free.append(position)
                position += 1
            else:
                for j in best_js:
                    emitted[j] += 1
                position += best
                last_end, last_span = position, best_js[-1]
        return position, last_end, last_span, ()

    def _context_at(self, g: Sequence[int], position: int, last_end: int, last_span: int | None, before: str) -> str:
        """The text a span starting at `g[position]` follows, with the whitespace that token brings (see `context`):
        its last token only when only glossary terms are read (what matters is whether a word character is last)."""
        first = max(last_end, position - (_WINDOW if self.has_neighbours else 1))
        head = (self.texts[last_span] if last_span is not None else before) if first == last_end else ""
        text = head + self.text_of(list(g[first:position]), head or "x")
        return text + self.leading_space(g[position], text)

    def scan(self, g: Sequence[int]) -> tuple[tuple[int, ...], int, int | None]:
        """Occurrences in the finished sequence `g`, left to right, longest variant first: (remaining per span, end
        of the last occurrence, its span)."""
        emitted = [0] * len(self.texts)
        _, last_end, last_span, _ = self.advance(g, 0, emitted, 0, None, len(g), at_end=True)
        return self.left(self.counts, emitted), last_end, last_span

    def left(self, counts: Sequence[int], emitted: Sequence[int]) -> tuple[int, ...]:
        """Remaining per span once `emitted` of `counts` came out: below 0 where a span came out too often, never for
        a span whose count is a minimum (it stays at 0)."""
        if not self._open_ended:
            return tuple([c - e for c, e in zip(counts, emitted)])
        return tuple([max(c - e, 0) if least else c - e for c, e, least in zip(counts, emitted, self.at_least)])

    def _resolve(self, sequence: tuple[int, ...], remaining: tuple[int, ...], at_end: bool, before: str = "") -> tuple:
        """`advance` over all of `sequence` (after text `before`): (remaining per span after it, positions outside
        every occurrence, pending position or None, end of the last occurrence, its span, the spans pending)."""
        emitted, free = [0] * len(self.texts), []
        position, last_end, last_span, pending = self.advance(
            sequence, 0, emitted, 0, None, len(sequence), at_end, free, before
        )
        left = self.left(remaining, emitted)
        return left, free, position if pending else None, last_end, last_span, pending

    def _loose(self, sequence: tuple[int, ...], positions: list[int], before: int) -> bool:
        """Whether a token outside every occurrence, before position `before`, holds a mark only a span may hold."""
        return any(sequence[p] in self.stray_tokens for p in positions if p < before)

    def _invents_url(self, tail: tuple[int, ...]) -> bool:
        """Whether the text of `tail` holds a URL: a tail pending as the start of a protected URL ("http://www." of
        "http://www.x.org/a") reads as a URL no span holds ("http://www") once the row leaves it, so a row that began a
        URL completes one of the spans it begins (a URL, unlike a word, is never ordinary text). Only where the entry
        reads the output's text (`has_neighbours`: placeholders, as the other rules on invented ones)."""
        if not tail or not self.has_neighbours:
            return False
        text = self.text_of(list(tail))
        return any(
            _URL_START.match(text, start) and text[start:end] not in self.texts
            for start, end in placeholder_spans(text)
        )

    def tail_rules(self, tail: tuple[int, ...], remaining: tuple[int, ...], before: str = "") -> _TailRules:
        """What the next token may do after `tail`, the pending end of a row (empty when nothing is pending), with
        spans `remaining` after what was counted before it (module docstring, *Occurrences*, *Started span*).

        Every token that may start or go on with a variant is tried: the row with it must still be able to end with
        no span emitted more often than its source holds it and no placeholder mark left outside a span, either as
        it is or by completing what it leaves pending into a span that remains. Any other token resolves the tail as
        if the row ended there. `before`: the text before the tail (placeholders: a span that would not read as
        itself after it does not start there). Looked up once per (tail, remaining, and the text before where it
        holds a mark that could swallow a span): most rows have no tail."""
        if not (self.has_neighbours and _SWALLOWING_RE.search(before)):
            before = "x" if self.reads_text and before[-1:] and _is_word(before[-1]) else ""  # all that can matter
        key = (tail, remaining, before)
        rules = self._tail_rules.get(key)
        if rules is not None:
            return rules
        after, free, _, last_end, last_span, _ = self._resolve(tail, remaining, True, before)
        started = self._resolve(tail, remaining, False, before)[5] if tail else ()  # the spans the tail may start
        leave_ok = min(after, default=0) >= 0 and not self._loose(tail, free, len(tail)) and not self._invents_url(tail)
        banned, passing, opening = [], [], []
        for token in self.own_tokens if tail else self.by_first:
            sequence = (*tail, token)
            counted, free, pending, end, _, pending_spans = self._resolve(sequence, remaining, False, before)
            ok = min(counted, default=0) >= 0 and not self._loose(sequence, free, len(tail))
            opens = False
            if ok and pending is not None:  # what stays pending must still resolve cleanly, or be completable
                rest = sequence[pending:]
                opens = any(counted[j] > 0 for j in pending_spans)
                ahead = before
                if pending and self.reads_text:
                    ahead = before + self.text_of(list(sequence[:pending]), before)
                left, rest_free, _, rest_end, _, _ = self._resolve(rest, counted, True, ahead)
                ok = opens or (min(left, default=0) >= 0 and not self._loose(rest, rest_free, len(rest)))
                opens = opens or (ok and rest_end == len(rest) and left != counted)
            elif ok:
                opens = end == len(sequence)  # it completes an occurrence (of a span that remained)
            if not ok:
                banned.append(token)
            else:
                passing.append(token)
                if opens:
                    opening.append(token)
        continuations = [  # (next token, tokens the variant still needs with it, span), for the budget rule
            (variant[len(tail)], len(variant) - len(tail), j)
            for variant, js in (self.by_prefix.get(tail, ()) if tail else ())
            for j in js
            if j in started and remaining[j] > 0 and variant[len(tail)] in passing
        ]
        rules = _TailRules(
            after=after,
            must_continue=not leave_ok,
            banned=banned,
            passing=passing,
            opening=frozenset(opening),
            continuations=continuations,
            last_span=last_span if tail and last_end == len(tail) else None,
        )
        self._tail_rules[key] = rules
        return rules

    def text_of(self, tokens: list[int], before: str = "x") -> str:
        """What `tokens` read as after `before` (by default a word); special tokens read as nothing. A vocabulary
        token reads as it does after a word; a copy is spaced as the decoder spaces it after what precedes it
        (`copy_reading`), since some vocabularies' unknown token swallows the space before a word."""
        texts, n = self.context_texts, len(self.context_texts)
        if all(t < n for t in tokens):
            return "".join([texts[t] for t in tokens])
        text = before
        for t in tokens:
            text += texts[t] if t < n else self.copy_reading(t, text)
        return text[len(before) :]

    def copy_reading(self, token: int, before: str) -> str:
        """The text copy `token` adds after `before`: the copied word, with the space the decoder puts before it
        where the tokenizer's unknown token swallows the word-start marker (`oov_spacing` decides, as in
        `decode_with_oovs`: "50%" + "discount" reads "50% discount" where the source spaced it so)."""
        word = self._copy_text(token)
        if self.vocabulary is None:
            return word
        slot = token - self.vocab_size
        return self.vocabulary.copy_reading(
            word, self.oov_spacing[slot] if slot < len(self.oov_spacing) else None, before
        )

    def starts(self, remaining: tuple[int, ...]) -> list[int]:
        """The first tokens of every variant of the spans `remaining` still holds."""
        if remaining not in self._starts:
            self._starts[remaining] = [v[0] for j, left in enumerate(remaining) if left > 0 for v in self.variants[j]]
        return self._starts[remaining]

    def budget_rule(self, remaining: tuple[int, ...], budget: int | None) -> tuple[int, int, bool, list[int]]:
        """(need, slack, tight, first tokens of variants too long for the budget) for spans `remaining` and `budget`
        tokens left: `need` the fewest tokens that place every remaining span, `slack` the free tokens kept beside
        them, `tight` whether the budget must start spans now (module docstring, *Budget*)."""
        if remaining not in self._budgets:  # the rows of an example mostly share it; the budget changes every step
            need = sum(left * self.min_lengths[j] for j, left in enumerate(remaining) if left > 0)
            # Where the rules read the text (placeholders, glossary terms), keep one free token per remaining span: a
            # span may have to wait one step (a space) after text the grammar would merge it with, or a term after a
            # word it would glue to, and that step must not break the budget.
            slack = sum(left for left in remaining if left > 0) if self.reads_text else 0
            # Free steps: a span may start only with a variant that still fits, i.e. with a first token some
            # variant of which needs no more than the budget: first token -> the least budget that lets it start.
            least: dict[int, int] = {}
            for j, variants in enumerate(self.variants):
                if remaining[j] > 0:
                    for variant in variants:
                        needs = len(variant) + need - self.min_lengths[j] + slack
                        least[variant[0]] = min(least.get(variant[0], needs), needs)
            self._budgets[remaining] = (need, slack, sorted(least.items(), key=lambda item: -item[1]))
        need, slack, least = self._budgets[remaining]
        if budget is None:
            return need, slack, False, []
        if budget <= need + slack:
            return need, slack, True, []
        too_long = []
        for token, needs in least:  # largest needs first: most steps stop at the first
            if needs <= budget:
                break
            too_long.append(token)
        return need, slack, False, too_long

    def stray_starts(self, remaining: tuple[int, ...]) -> list[int]:
        """First tokens of exhausted spans that hold a stray mark and start no span `remaining` still holds."""
        if remaining not in self._stray_starts:
            open_starts = set(self.starts(remaining))
            self._stray_starts[remaining] = [
                t
                for j, left in enumerate(remaining)
                if left <= 0 and not self.at_least[j]
                for t in self._stray_firsts[j]
                if t not in open_starts
            ]
        return self._stray_starts[remaining]

    def calm_bans(self, remaining: tuple[int, ...]) -> tuple[list[int], frozenset[int], frozenset[int]]:
        """(single ids, ban components, ids no component bans) that `_rules` gives a row with spans `remaining`,
        nothing pending and a last token that is not right after a span: the tokens that would emit an exhausted span
        again, with the extensions of its one-token variants, the forbidden ids and the stray marks."""
        if remaining not in self._singles:
            rules = self.tail_rules((), remaining)
            spans = [
                j
                for j, left in enumerate(remaining)
                if left <= 0 and not self.at_least[j] and any(len(v) == 1 for v in self.variants[j])
            ]
            parts = frozenset([1 + 2 * j for j in spans]) | self.base_parts
            self._singles[remaining] = (
                rules.banned + [t for t in self.stray_starts(remaining) if t not in rules.opening],
                parts,
                frozenset(t for t in rules.opening if any(t in self.components[p] for p in parts)),
            )
        return self._singles[remaining]

    def bans(self, token: int, banned: list[int], parts: Any) -> bool:
        """Whether a row with single bans `banned` and ban components `parts` bans `token` (a few tokens are asked:
        no union of the large components)."""
        return token in banned or any(token in self.components[p] for p in parts)

    def goes_on_calmly(self, token: int) -> bool:
        """Whether a row that ends with `token` (not EOS) keeps the rules its parent had (`token` starts or
        continues no span and, for placeholders, reads as text without a placeholder's marks; see
        `ProtectedSpansLogitsProcessor._carry_on`)."""
        if token in self.own_tokens:
            return False
        if not self.has_neighbours:
            return True  # (EOS, which ends the row, is the processor's to look at)
        if token < self.vocab_size:
            return self.calm is not None and token in self.calm
        text = self._copy_text(token)
        return bool(text) and not _UNCALM_RE.search(text)

    def reads_as_nothing(self, tokens: list[int]) -> bool:
        """Whether `tokens` read as nothing (special tokens), looking no further than the first one that does not."""
        texts, n = self.context_texts, len(self.context_texts)
        return not any(texts[t] if t < n else self._copy_text(t) for t in tokens)

    def _copy_text(self, token: int) -> str:
        slot = token - self.vocab_size  # a copy (padding rows of T5's output layer read as nothing)
        return self.oov_words[slot] if 0 <= slot < len(self.oov_words) else ""

    def context(self, g: list[int], start: int, since: int, last_span: int | None) -> str:
        """The text that a span starting at `g[start]` follows: what was generated since position `since` (the end
        of the last span `last_span`, whose text counts too), at most 32 tokens back (placeholders are short; URLs
        end at the first space)."""
        first = max(since, start - _WINDOW)
        head = self.texts[last_span] if last_span is not None and first == since else ""
        if first == since and start == len(g):
            return head + self.free_text(g, since, head)
        return head + self.text_of(g[first:start], head or "x")

    def free_text(self, g: list[int], since: int, head: str = "") -> str:
        """`text_of(g[since:])` after `head` (the last span's text): its parent's (the row one token shorter, seen
        last step) with the new token's text added when both start at `since`, so a row pays for one token a step,
        not for all of its free text."""
        key = tuple(g)
        known = self._texts.get(key)
        if known is not None and known[0] == since:
            return known[1]
        parent = self._last_texts.get(key[:-1]) if len(g) > since else None
        if parent is not None and parent[0] == since:
            text = parent[1] + self.text_of(g[-1:], head + parent[1])
        else:
            text = self.text_of(g[since:], head)
        self._texts[key] = (since, text)
        return text

    def next_step(self) -> None:
        """Called once a step: the texts of this step become the parents of the next step's."""
        self._last_texts, self._texts = self._texts, {}

    def reads_cleanly(self, context: str, j: int) -> bool:
        """Whether span `j` reads as itself after `context`: a placeholder as that placeholder ("%" + "%(n)d" is an
        escaped percent, "www.x" + "{0}" a longer URL), a glossary term as a word of its own ("now" + "jetzt" would
        read "nowjetzt") that no placeholder begun in `context` runs into ("%" + "dateien" would read "%d")."""
        known = self._clean[j]
        if context not in known:  # beams share their text: look each one up once
            text, ok = self.texts[j], True
            if self.at_least[j] and context and _glued(context[-1], text[0]):
                ok = False  # a glossary term reads as a word of its own, not glued to what comes before it
            elif self.has_neighbours and _SWALLOWING_RE.search(context):
                at, spans = len(context), placeholder_spans(context + text)
                if self.placeholder[j]:
                    ok = (at, at + len(text)) in spans
                else:
                    ok = not any(start < at < end for start, end in spans)
            known[context] = ok
        return known[context]

    def leading_space(self, token: int, before: str = "x") -> str:
        """The whitespace `token` reads as before its other characters after `before` (by default a word: "Ġ%(" ->
        " "; a copy gets what the decoder puts before it there)."""
        text = self.text_of([token], before or "x")
        return text[: len(text) - len(text.lstrip())]

    def starts_cleanly(self, j: int, g: list[int], start: int, since: int, last_span: int | None) -> bool:
        """Whether span `j` starting at `g[start]` reads as itself after the text before it (see `context`)."""
        return self.context_texts is None or self.reads_cleanly(self.context(g, start, since, last_span), j)


class ProtectedSpansLogitsProcessor(LogitsProcessor):
    r"""
    Makes every protected span of each example appear in its generated ids exactly as often as in its source (rules
    in this module's docstring). Built by `generate()` from the batch key `protected_spans`; usable with any
    encoder-decoder's `generate(logits_processor=LogitsProcessorList([...]))`.

    Args:
        protected_spans (`list[dict]`):
            Per example, the processor's `protected_spans` entry.
        eos_token_id (`int` or `list[int]`, *optional*):
            The end-of-sequence id(s): forbidden while spans remain.
        max_length (`int`, *optional*), max_new_tokens (`int`, *optional*):
            The generation's length limit (`max_new_tokens` wins, as in `generate()`), for the budget rule.
        forced_eos_token_id (`int` or `list[int]`, *optional*):
            When set, the last position is taken by EOS: the budget is one token less.
        width (`int`, *optional*):
            Keep only variants whose ids are below it (a model that does not copy: `config.vocab_size`).

    Examples:

    ```python
    >>> batch = processor(["Delete %(count)d files?"], protect="placeholders", return_tensors="pt")
    >>> ids = model.generate(**batch, num_beams=4)  # a pointer-generator installs the processor itself
    >>> # any other encoder-decoder (a plain base: the spans are spelled from its vocabulary):
    >>> protection = ProtectedSpansLogitsProcessor(batch.pop("protected_spans"), eos_token_id=base.config.eos_token_id,
    ...                                            max_new_tokens=64, width=base.config.vocab_size)
    >>> ids = base.generate(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], max_new_tokens=64,
    ...                     logits_processor=LogitsProcessorList([protection]))
    >>> protection.warn_missing(ids)  # names any span the length limit left out
    ```
    """

    def __init__(
        self,
        protected_spans: Sequence[dict[str, Any]],
        eos_token_id: int | Sequence[int] | None = None,
        max_length: int | None = None,
        max_new_tokens: int | None = None,
        forced_eos_token_id: int | Sequence[int] | None = None,
        width: int | None = None,
    ):
        self.examples = [_Example(entry or {}, width) for entry in protected_spans]
        self._ends: tuple[torch.Tensor, list[bool]] | None = None  # see _wants_end
        self._active = [bool(ex) for ex in self.examples]
        if isinstance(eos_token_id, int):
            eos_token_id = [eos_token_id]
        self.eos = [int(t) for t in (eos_token_id if eos_token_id is not None else [])]
        self._eos_set = frozenset(self.eos)
        self._eos_ids: torch.Tensor | None = None  # (E,) the EOS ids on the scores' device (see __call__)
        self.max_length = max_length
        self.max_new_tokens = max_new_tokens
        self.reserve = 1 if forced_eos_token_id is not None else 0
        self._limit: int | None = None
        # (example, ids) -> the scan of those ids as far as it is final (see _state). A state depends on nothing
        # else, so the last step's states serve this step's rows whatever order beam search put them in.
        self._states: dict[tuple[int, tuple[int, ...]], tuple] = {}
        # (example, ids) -> (remaining, end of the last occurrence, its span) of last step's rows whose rules a child
        # may keep (see _carry_on), and this step's
        self._carried: dict[tuple[int, tuple[int, ...]], tuple] = {}
        # Per row (example, ids) of beams and samples, the span starts whose scores were raised to EOS's (__call__): a
        # span started there is the rule's, not the model's, and the row finishes it (see `_rules`), as a row that
        # wanted to end does (`_closing`).
        self._lifted: dict[tuple[int, tuple[int, ...]], set[int]] = {}
        self._carrying: dict[tuple[int, tuple[int, ...]], tuple] = {}
        # Rows (example, ids) that wanted to end while spans remained and their children since, which place the spans
        # and then end: last step's and this step's (see `_decide`).
        self._closing: set[tuple[int, tuple[int, ...]]] = set()
        self._closing_now: set[tuple[int, tuple[int, ...]]] = set()
        self._ceilings: dict[tuple, torch.Tensor | None] = {}  # see _ceiling
        self._ceilings_for: tuple | None = None  # (width, dtype, device) of the scores they were built for
        self._buffer: torch.Tensor | None = None  # (rows, V): this step's ceilings
        # head text -> ids completing a placeholder begun there (see _Example.inventing): the vocabulary index's when
        # the entries have one (it lives as long as the processor that encoded them), else one per processor
        self._inventions: dict[str, list[int]] = next(
            (entry["vocabulary"].inventions for entry in protected_spans if entry and entry.get("vocabulary")), {}
        )

    def is_active(self) -> bool:
        return any(self.examples)

    def _budget(self, length: int) -> int | None:
        if self._limit is None:
            if self.max_new_tokens is not None:
                self._limit = length + self.max_new_tokens  # the first call sees the decoder prompt
            elif self.max_length is not None:
                self._limit = self.max_length
            else:
                return None
        return self._limit - length - self.reserve

    def _state(
        self, index: int, ex: _Example, g: list[int], key: tuple[int, ...], states: dict
    ) -> tuple[tuple[int, ...], int, int | None, int]:
        """(remaining per span, end of the last occurrence, its span, where the pending tail starts (`len(g)` when
        nothing is pending)) for row `g` of example `index` (one that has not ended); records its state for the next
        step in `states`.

        The scan of `g` is its parent's (`g` without its last id, the previous step's row) carried one token on: a
        scan position whose every variant fits before the end of `g` is final (longer ids cannot change what
        matches there), so only the last `max_length` positions are scanned again."""
        parent = self._states.get((index, key[:-1]))
        length = len(g)
        if parent is None:  # the first step, or a row the last step did not see: scan it from the start
            position, emitted, last_end, last_span = 0, [0] * len(ex.texts), 0, None
        else:
            position, emitted, last_end, last_span = parent
            emitted = list(emitted)
        final = length - max(ex.max_length, 1) + 1  # positions before it are final
        position, last_end, last_span, _ = ex.advance(g, position, emitted, last_end, last_span, final)
        states[(index, key)] = (position, tuple(emitted), last_end, last_span)
        reached, last_end, last_span, pending = ex.advance(g, position, emitted, last_end, last_span, length)
        return ex.left(ex.counts, emitted), last_end, last_span, reached if pending else length

    def _rules(
        self,
        ex: _Example,
        g: list[int],
        remaining: tuple[int, ...],
        last_end: int,
        last_span: int | None,
        tail_start: int,
        budget: int | None,
        committed: bool = False,
    ) -> tuple[list[int] | None, set[int], list[int], frozenset[int], list[int], bool]:
        """The rules for one row: (tokens it must choose among or None, ban components (`_Example.components`),
        single tokens it must not choose, tokens no component or invented-placeholder ban may take (a remaining
        span's own next tokens), tokens that start or go on with a span: what it must choose when the bans, EOS
        above all, leave it nothing, e.g. when top-k kept EOS alone; whether a child that goes on calmly keeps these
        rules (see `_carry_on`))."""
        length = len(g)
        tail = tuple(g[tail_start:])
        before = ex.context(g, tail_start, last_end, last_span) if ex.reads_text else ""
        rules = ex.tail_rules(tail, remaining, before)
        if committed and tail and rules.after == remaining and rules.continuations:
            # The span was started where the model wanted to end (see `_decide`): a fragment of it is text the model
            # never chose, and leaving it there would let the row start the span again and again, as it keeps
            # wanting to end, until the budget forces it whole. It finishes the span now.
            fitting = [t for t, still, _ in rules.continuations if budget is None or still <= budget]
            allowed = fitting or [t for t, _, _ in rules.continuations]
            return allowed, set(ex.base_parts), list(rules.banned), rules.opening, [], False
        remaining = rules.after  # once the tail resolves: what the spans still to start need
        parts = set(ex.base_parts)
        hard = list(rules.banned)  # bans that nothing lifts
        for j, left in enumerate(remaining):
            if (
                left <= 0 and not ex.at_least[j]
            ):  # exhausted: tokens that would spell its text again after its other tokens
                for variant in ex.variants[j]:
                    n = len(variant)
                    if n == 1 or (
                        length >= n - 1 and g[-1] == variant[-2] and tuple(g[length - n + 1 :]) == variant[:-1]
                    ):
                        parts.add(1 + 2 * j)
                        break
        if tail:
            if rules.last_span is not None:
                parts.add(2 + 2 * rules.last_span)
        elif last_span is not None and (
            last_end == length or (ex.has_neighbours and ex.reads_as_nothing(g[last_end:]))
        ):
            parts.add(2 + 2 * last_span)  # right after a span (special tokens read as nothing)
        soft = [t for t in ex.stray_starts(remaining) if t not in rules.opening]
        if rules.must_continue:  # leaving the tail would break the guarantee: go on with one of its spans
            allowed = rules.passing
            if budget is not None:
                fitting = [t for t, still, _ in rules.continuations if still <= budget]
                allowed = [t for t in allowed if t in fitting] or allowed
            return allowed, parts, hard + soft, rules.opening, [], False
        if max(remaining, default=0) <= 0:
            return None, parts, hard + soft, rules.opening, [], not tail
        hard += self.eos
        # Spans that may start now: not right after text the grammar would merge them with.
        context = ex.context(g, length, last_end, last_span) if ex.reads_text else ""
        swallowing = ex.has_neighbours and _SWALLOWING_RE.search(context) is not None
        if ex.reads_text:
            # Per span, the first tokens of its variants that read as the span after the context, with the whitespace
            # the token itself brings ("Ġ%(" puts a space between a URL and "%(num)s", "▁jetzt" keeps a term apart
            # from the word before it). The others are text here: the scan does not count them as the span
            # (`advance`), so they are the model's as any text is.
            clean = [
                {v[0] for v in ex.variants[j] if ex.reads_cleanly(context + ex.leading_space(v[0], context), j)}
                if left > 0
                else set()
                for j, left in enumerate(remaining)
            ]
        else:  # the rules do not read the text: every remaining span may start
            clean = [{v[0] for v in ex.variants[j]} if left > 0 else set() for j, left in enumerate(remaining)]
        need, slack, tight, too_long = ex.budget_rule(remaining, budget)
        hard += [t for t in too_long if t in ex.stray_tokens]  # a start that commits the row must fit
        continuing = [t for t, still, _ in rules.continuations if budget is None or still <= budget]
        starts = continuing + [t for t in ex.starts(remaining) if any(t in firsts for firsts in clean)]
        if ex.reads_text and not any(clean) and not continuing and max(remaining, default=0) > 0:
            # No span reads as itself right here: where the row would end (or runs out of tokens), a space first.
            sep = ex.separator
            if sep is not None and any(
                remaining[j] > 0 and ex.starts_cleanly(j, g + [sep], length + 1, last_end, last_span)
                for j in range(len(remaining))
            ):
                starts = [sep]
        if tight:
            if continuing:  # finish the span the tail started rather than leave a fragment of it
                return continuing, parts, hard + soft, rules.opening, starts, False
            hard_set = set(hard)
            starts_now = [
                (
                    variant[0],
                    variant[0] in clean[j]
                    and variant[0] not in hard_set
                    and (variant[0] in rules.opening or not ex.bans(variant[0], soft, parts)),
                )
                for j, variants in enumerate(ex.variants)
                if remaining[j] > 0
                for variant in variants
                if len(variant) <= budget and len(variant) + need - ex.min_lengths[j] <= max(budget, need)
            ]
            if not starts_now:
                # No remaining span fits whole in what is left: place none rather than a broken one (the check
                # after generation warns), and let the row end.
                firsts = [v[0] for j, vs in enumerate(ex.variants) if remaining[j] > 0 for v in vs]
                hard = [t for t in hard if t not in self._eos_set] + [t for t in firsts if t in ex.stray_tokens]
                return None, parts, hard + soft, frozenset(), [], False
            fine = [t for t, ok in starts_now if ok]
            if fine:
                return fine, parts, hard + soft, rules.opening, starts, False
            if budget > need:
                # One token to spare before the next span must start: a space keeps it apart (the model's own free
                # choice could leave it glued to the text before it again).
                sep = ex.separator
                if sep is not None and any(
                    remaining[j] > 0 and ex.starts_cleanly(j, g + [sep], length + 1, last_end, last_span)
                    for j in range(len(remaining))
                ):
                    return [sep], parts, hard + soft, rules.opening, starts, False
                return None, parts, hard + soft, rules.opening, starts, False  # a free step: the spans fit after it
            # No room left to keep the next span apart from the text before it, where it would not read as itself:
            # place none rather than a broken one, as when none fits (the check after generation names it).
            firsts = [v[0] for j, vs in enumerate(ex.variants) if remaining[j] > 0 for v in vs]
            hard = [t for t in hard if t not in self._eos_set] + [t for t in firsts if t in ex.stray_tokens]
            return None, parts, hard + soft, frozenset(), [], False
        return None, parts, hard + soft, rules.opening, starts, not swallowing and not tail

    def _decide(
        self,
        index: int,
        ex: _Example,
        g: list[int],
        key: tuple[int, ...],
        budget: int | None,
        scores: torch.Tensor,
        states: dict,
        row: int,
    ) -> tuple[torch.Tensor, list[int], list[int] | None, list[int], list[int], bool] | None:
        """What row `g` (row `row` of `scores`) gets, or None when it is left alone: (its (V,) ceiling (see
        `_ceiling`), single ids banned besides, the tokens it must choose among or None when it is only banned some,
        the span starts a banned row falls back on, ids its ceiling bans that must keep their scores, whether what it
        must choose is the rule's choice rather than the model's (see __call__))."""
        parent_key = (index, key[:-1])  # the row one token shorter, as the last step saw it
        # A row that wanted to end while spans remained places them and then ends, as it chose to: what it would
        # write after them is text it never wanted (a model that did not expect them there often goes on wandering).
        closing = parent_key in self._closing
        carried = self._carried.get(parent_key)
        if carried is not None and not closing and g[-1] not in self._eos_set and ex.goes_on_calmly(g[-1]):
            decision = self._carry_on(index, ex, g, key, parent_key, carried, budget, scores, states, row)
            if decision is not _UNDECIDED:
                return decision
        state = self._state(index, ex, g, key, states)
        width = scores.shape[-1]
        tail_start = state[3]
        committed = False
        if tail_start < len(g):  # a pending tail: did the rule start it?
            prefix = (index, tuple(g[:tail_start]))
            committed = closing or g[tail_start] in self._lifted.get(prefix, ())
        allowed, parts, banned, opening, starts, carries = self._rules(ex, g, *state, budget, committed=committed)
        if carries:
            self._carrying[(index, key)] = state[:3]
        if allowed is None and starts and self.eos and (closing or self._wants_end(scores, row)):
            # EOS is the row's top token (or was, see `closing`) but spans remain: it places one now (the model chooses
            # which; for beams its scores become log probabilities over the starts, see __call__), and finishes it
            # (`_rules`).
            banned_set = set(banned)
            allowed = [t for t in starts if t not in banned_set and (t in opening or not ex.bans(t, (), parts))] or None
            committed = closing = allowed is not None
        elif allowed is None and closing and not starts and tail_start == len(g) and max(state[0], default=0) <= 0:
            # Every span is in: it ends, unless a processor before this one bans EOS now.
            allowed = [t for t in self.eos if t < width and scores[row, t].item() != -float("inf")] or None
            committed = allowed is not None
        if closing:
            self._closing_now.add((index, key))
        if allowed is None and ex.has_neighbours:
            banned = banned + [t for t in ex.inventing(g, state[1], self._inventions, state[2]) if t not in opening]
        if allowed is not None:
            allowed = [t for t in allowed if t < width]
            if not allowed:
                return None
            banned_set = set(banned)
            # (the stray-mark component bans tokens inside spans too: a forced row continues its span regardless)
            kept = [
                t
                for t in allowed
                if t not in banned_set
                and (t in opening or not any(t in ex.components[p] for p in parts if p != ex.stray_part))
            ]
            kept = kept or allowed
            return self._ceiling(ex, None, frozenset(kept), scores), (), kept, [], [], committed
        banned_set = set(banned)
        restore = [
            t for t in opening if t < width and t not in banned_set and any(t in ex.components[p] for p in parts)
        ]
        return self._banned(ex, index, frozenset(parts), banned, starts, scores, restore)

    def _carry_on(
        self,
        index: int,
        ex: _Example,
        g: list[int],
        key: tuple[int, ...],
        parent_key: tuple,
        carried: tuple,
        budget: int | None,
        scores: torch.Tensor,
        states: dict,
        row: int,
    ) -> Any:
        """`_decide` for a row whose parent's rules carry over (`carried`: the parent's (remaining per span, end of
        the last occurrence, its span), with nothing pending) and whose last token goes on calmly
        (`_Example.goes_on_calmly`): that token starts, continues and ends no span, so the scan's state is the
        parent's, and it adds no mark to the text before the next span, so every remaining span may still start.
        Only what changes with each step is looked at again: the budget, whether the model wants to end, the
        invented-placeholder bans. `_UNDECIDED` when the full rules must decide (the budget is tight, or EOS is on
        top and a span must start)."""
        parent = self._states.get(parent_key)
        if parent is None or (ex.reads_text and any(ex.at_least)):
            # (a glossary term starts cleanly only after a character it does not glue to: which starts a row may
            # take changes with each token, and the full rules put a space first where none may)
            return _UNDECIDED
        remaining, last_end, last_span = carried
        banned, parts, restore = ex.calm_bans(remaining)
        starts: list[int] = []
        if remaining and max(remaining) > 0:
            _, _, tight, too_long = ex.budget_rule(remaining, budget)
            starts = ex.starts(remaining)
            if tight or (self.eos and self._wants_end(scores, row)):
                return _UNDECIDED
            too_long = [t for t in too_long if t in ex.stray_tokens]
            banned = banned + self.eos + too_long
            if too_long:
                restore = restore - set(too_long)
        states[(index, key)] = parent  # still a valid scan of `g` (up to a position no later than before)
        self._carrying[(index, key)] = carried
        if ex.has_neighbours:
            opening = ex.tail_rules((), remaining).opening
            banned = banned + [t for t in ex.inventing(g, last_end, self._inventions, last_span) if t not in opening]
        return self._banned(ex, index, parts, banned, starts, scores, [t for t in restore if t < scores.shape[-1]])

    def _banned(
        self,
        ex: _Example,
        index: int,
        parts: frozenset[int],
        banned: list[int],
        starts: list[int],
        scores: torch.Tensor,
        restore: list[int],
    ) -> tuple[torch.Tensor, list[int], None, list[int], list[int], bool] | None:
        """The decision of a row that is only banned ids (ban components `parts`, single ids `banned`, except the ids
        `restore`), or None when that bans nothing below V."""
        width = scores.shape[-1]
        ceiling = self._ceiling(ex, index, parts, scores)
        singles = sorted({t for t in banned if 0 <= t < width})
        if ceiling is None:
            if not singles:
                return None
            ceiling = self._ceilings[("free",)]
            restore = []
        return ceiling, singles, None, [t for t in starts if t < width], restore, False

    def _wants_end(self, scores: torch.Tensor, row: int) -> bool:
        """Whether EOS is row `row`'s highest-scoring token; all rows at once, the first time a step asks."""
        if self._ends is None or self._ends[0] is not scores:
            self._ends = (scores, (scores[:, self.eos].amax(-1) >= scores.amax(-1)).tolist())
        return self._ends[1][row]

    def _ceiling(self, ex: _Example, index: int | None, ids: frozenset[int] | None, scores: torch.Tensor) -> Any:
        """The (V,) ceiling of a decision, built once and kept: `torch.minimum(scores, ceiling)` applies it (float
        ops: masked_fill and bool reductions are ten times slower on CPU). With `index` (a banned row of example
        `index`), `ids` are its ban components: +inf but -inf where they ban (None when they ban nothing below V; the
        row's single banned ids go into the step's stacked ceilings afterwards, see __call__). Without, `ids` are the
        allowed ids: -inf but +inf there."""
        key = (index, ids)  # the cache holds one width, dtype and device (see __call__)
        if key not in self._ceilings:
            if index is None:
                ceiling = _filled(scores, -float("inf"), [t for t in ids if 0 <= t < scores.shape[-1]], float("inf"))
            else:  # the components' own ceilings (large sets, built once each)
                components = [c for c in (self._component(ex, index, part, scores) for part in ids) if c is not None]
                ceiling = components[0] if len(components) == 1 else None
                if len(components) > 1:
                    ceiling = components[0].clone()
                    for component in components[1:]:
                        torch.minimum(ceiling, component, out=ceiling)
            self._ceilings[key] = ceiling
        return self._ceilings[key]

    def _component(self, ex: _Example, index: int, part: int, scores: torch.Tensor) -> torch.Tensor | None:
        """The (V,) ceiling of ban component `part` of example `index` alone (None when it bans nothing below V)."""
        cache_key = ("component", index, part)
        if cache_key not in self._ceilings:
            ids = [t for t in ex.components[part] if 0 <= t < scores.shape[-1]]
            self._ceilings[cache_key] = _filled(scores, float("inf"), ids, -float("inf")) if ids else None
        return self._ceilings[cache_key]

    def warn_missing(self, sequences: Any) -> None:
        """After generation: warn, naming them, when returned sequences lack spans, and say whether the length limit
        cut the output or it ended (EOS) before the limit (an earlier processor forced it, or the spans left did
        not fit whole in what the limit left: a span is placed whole or not at all)."""
        sequences = getattr(sequences, "sequences", sequences)
        if not isinstance(sequences, torch.Tensor) or not self.examples or sequences.dim() != 2:
            return
        per_example = max(sequences.shape[0] // len(self.examples), 1)
        cut, ended = [], []
        for row, g in enumerate(sequences.tolist()):
            ex = self.examples[min(row // per_example, len(self.examples) - 1)]
            if ex.texts:
                remaining, _, _ = ex.scan(g)
                lacking = [text for text, left in zip(ex.texts, remaining) if left > 0]
                if lacking:
                    end = next((i for i, t in enumerate(g) if i and t in self._eos_set), None)
                    early = end is not None and (self._limit is None or end + 1 + self.reserve < self._limit)
                    (ended if early else cut).append(f"output {row}: {lacking}")
        for missing, why in (
            (cut, "the length limit cut them off"),
            (
                ended,
                "it ended before them: the tokens left did not fit them whole, or an earlier "
                "logits processor forced the end",
            ),
        ):
            if missing:
                warnings.warn(
                    f"Protected spans are missing from {len(missing)} output(s) ({why}): "
                    f"{'; '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}. Raise max_new_tokens (or "
                    "max_length) to fit them.",
                    UserWarning,
                    stacklevel=3,
                )

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        # input_ids: (rows, L) with rows = examples * (num_beams or num_return_sequences); scores: (rows, V)
        rows, width = scores.shape
        device = scores.device
        per_example = max(rows // max(len(self.examples), 1), 1)
        budget = self._budget(input_ids.shape[1])
        states: dict[tuple[int, tuple[int, ...]], tuple] = {}
        decisions: dict[tuple[int, tuple[int, ...]], Any] = {}  # beams that share their ids share the decision
        if self._ceilings_for != (width, scores.dtype, device):  # ceilings are built for one kind of scores
            self._ceilings, self._ceilings_for = {}, (width, scores.dtype, device)
        free = ("free",)  # the ceiling of a row left alone: (V,) all +inf
        if free not in self._ceilings:
            self._ceilings[free] = _filled(scores, float("inf"), [], None)
        ceilings = [self._ceilings[free]] * rows
        ban_rows: list[int] = []  # (row, id) pairs banned besides the rows' ceilings
        ban_ids: list[int] = []
        keep_rows: list[int] = []  # (row, id) pairs its ceiling bans that keep their scores (a span's own tokens)
        keep_ids: list[int] = []
        forced: dict[int, list[int]] = {}  # row -> the tokens it must choose among
        fallback: dict[int, list[int]] = {}  # banned row -> the span starts to fall back on
        ruled: list[int] = []  # forced rows whose choice is the rule's, not the model's
        last = len(self.examples) - 1
        for ex in self.examples:
            ex.next_step()
        self._carrying = {}
        row_keys: list[tuple[int, tuple[int, ...]] | None] = [None] * rows
        # Rows that have ended (greedy search and sampling keep padding them; the first id is the decoder start,
        # which may be EOS): left alone, found for all rows at once.
        ended = [False] * rows
        if self.eos and input_ids.shape[1] > 1:
            if self._eos_ids is None or self._eos_ids.device != input_ids.device:
                self._eos_ids = torch.tensor(self.eos, device=input_ids.device)
            ended = torch.isin(input_ids[:, 1:], self._eos_ids).any(-1).tolist()
        for row, g in enumerate(input_ids.tolist()):
            index = min(row // per_example, last)
            ex = self.examples[index]
            if not self._active[index] or ended[row]:
                continue  # nothing protected in this example, or the row has ended: left alone entirely
            key = tuple(g)
            row_keys[row] = (index, key)
            decision = decisions.get((index, key), _UNDECIDED)
            if decision is _UNDECIDED:
                decision = decisions[(index, key)] = self._decide(index, ex, g, key, budget, scores, states, row)
            if decision is None:
                continue
            ceilings[row], singles, allowed, starts, restore, by_rule = decision
            if restore:
                keep_rows += [row] * len(restore)
                keep_ids += restore
            if singles:
                ban_rows += [row] * len(singles)
                ban_ids += singles
            if allowed is not None:
                forced[row] = allowed
                if by_rule:
                    ruled.append(row)
            else:
                fallback[row] = starts
        self._states, self._carried = states, self._carrying
        self._closing, self._closing_now = self._closing_now, set()
        if not forced and not fallback:
            return scores
        # The rows' ceilings go into one buffer kept across steps: a new (rows, V) tensor each step costs more in
        # page faults (glibc maps every large allocation afresh) than the copy itself.
        buffer = self._buffer
        if buffer is None or buffer.shape != scores.shape or buffer.dtype != scores.dtype or buffer.device != device:
            self._buffer = torch.empty_like(scores)
        stacked = torch.stack(ceilings, out=self._buffer)  # (rows, V)
        if ban_rows:  # one write for the whole step: a ceiling per banned set would cost a (V,) tensor each
            stacked[torch.tensor(ban_rows, device=device), torch.tensor(ban_ids, device=device)] = -float("inf")
        out = torch.minimum(scores, stacked)  # (rows, V)
        lift_rows = [row for row, starts in fallback.items() for _ in starts]
        if lift_rows and self.eos:
            # EOS is banned while spans remain: what the model gave ending goes to placing a span there instead (each
            # allowed start scores at least what EOS did), so it places one where it would have ended rather than
            # wander on through text it did not want until the budget forces the spans in.
            rows_, ids_ = (
                torch.tensor(lift_rows, device=device),
                torch.tensor([t for starts in fallback.values() for t in starts], device=device),
            )
            ends = scores[:, self.eos].amax(-1)  # (rows,)
            current = out[rows_, ids_]
            raised = (current != -float("inf")) & (current < ends[rows_])
            out[rows_, ids_] = torch.where(raised, ends[rows_], current)
            # A start taken at a raised score is the rule's choice: the row finishes that span (`_rules`).
            for row, token in zip(rows_[raised].tolist(), ids_[raised].tolist()):
                self._lifted.setdefault(row_keys[row], set()).add(token)
        if keep_rows:
            kept_rows, kept_ids = torch.tensor(keep_rows, device=device), torch.tensor(keep_ids, device=device)
            out[kept_rows, kept_ids] = scores[kept_rows, kept_ids]
        for row, top in enumerate(out.amax(-1).tolist()):
            if top != -float("inf"):
                continue
            if row in forced:  # an earlier processor removed every allowed token (forced EOS, n-grams): the rule wins
                out[row, forced[row]] = 0.0
            elif row in fallback:  # the bans left the row no token
                if fallback[row]:  # spans remain: start one rather than end (an earlier processor kept EOS alone)
                    out[row, fallback[row]] = 0.0
                else:
                    out[row] = scores[row]
        if ruled:
            # A row that must start a span where it wanted to end, or finish one started there, has its scores made log
            # probabilities over what it may choose: placing the span there is the rule's choice, so beam search must
            # not charge it to the hypothesis. Charged, a beam that places the span loses to one wandering on through
            # text the model did not want (which wants to end again, and again) until the length limit forces the
            # spans in. Greedy search and sampling choose as before (a row's argmax and softmax do not change by a
            # constant).
            rows_ = torch.tensor(ruled, device=device)
            out[rows_] = out[rows_] - torch.logsumexp(out[rows_], dim=-1, keepdim=True)
        return out


def _filled(scores: torch.Tensor, fill: float, ids: list[int], value: float | None) -> torch.Tensor:
    """A (V,) tensor like a row of `scores` (V,): `fill` everywhere, `value` at `ids`."""
    row = torch.full(scores.shape[-1:], fill, dtype=scores.dtype, device=scores.device)
    if ids:
        row[torch.tensor(ids, device=scores.device)] = value
    return row


def _protection_processors(
    protected_spans: Sequence[dict[str, Any]] | None,
    generation_config: Any,
    kwargs: dict[str, Any],
    width: int | None = None,
    batch_size: int | None = None,
) -> LogitsProcessorList:
    """`kwargs["logits_processor"]` with a `ProtectedSpansLogitsProcessor` for `protected_spans` added (when any
    example has spans). `generation_config` and `kwargs` are generate()'s: lengths and EOS come from them.
    `batch_size`, the number of sources, must equal the number of entries."""
    processors = kwargs.get("logits_processor")
    processors = LogitsProcessorList(list(processors) if processors is not None else [])
    if isinstance(protected_spans, dict):  # one un-batched example's entry
        protected_spans = [protected_spans]
    if not protected_spans:
        return processors
    if batch_size is not None and len(protected_spans) != batch_size:
        raise ValueError(
            f"protected_spans has {len(protected_spans)} entries but input_ids has {batch_size} sources: each source "
            "needs its own entry, in the same order. Build both with one processor call (processor(texts, "
            "protect=...)) and slice them together (batch['protected_spans'][i:j] with batch['input_ids'][i:j])."
        )
    config = kwargs.get("generation_config") or generation_config

    def setting(name: str) -> Any:
        return kwargs[name] if kwargs.get(name) is not None else getattr(config, name, None)

    processor = ProtectedSpansLogitsProcessor(
        list(protected_spans),
        eos_token_id=setting("eos_token_id"),
        max_length=setting("max_length"),
        max_new_tokens=setting("max_new_tokens"),
        forced_eos_token_id=setting("forced_eos_token_id"),
        width=width,
    )
    if processor.is_active():
        processors.append(processor)
    return processors


def _warn_missing_spans(processors: Any, sequences: Any) -> None:
    """Run the after-generation check of the `ProtectedSpansLogitsProcessor` among `processors`, if any."""
    for processor in processors or ():
        if isinstance(processor, ProtectedSpansLogitsProcessor):
            processor.warn_missing(sequences)
