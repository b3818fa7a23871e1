"""The per-example rules of protection's decoding half: what a row of one example may emit next, read from its
generated ids. `ProtectedSpansLogitsProcessor` (`logits_process_pointer_generator.py`) keeps one `ExampleRules` per
example, asks it for each row's decision and writes the decisions into the scores; the rules themselves are specified
in the docstring of `hf_pgen.protection_pointer_generator`, the encode half.

- `ExampleRules`: one example's spans and the token sequences that spell them, and the rules for a row of it:
  occurrences (`scan`, `advance`), what a pending tail allows (`tail_rules`), the budget (`budget_rule`), stray marks
  (`stray_starts`, `calm_bans`) and invented placeholders (`inventing`).
- The grammar read on the free text before a span (*Neighbours*): `_live_heads` (where a placeholder may have begun),
  `_completes`, `_glued` (a glossary term glued to the word before it); the grammar's own facts (where a placeholder
  may begin: `PLACEHOLDER_MARKS`, `URL_PREFIXES`) come from `placeholders.py`, and `SWALLOWING_RE` (a text after
  which every span reads as itself) from `protection_pointer_generator.py`.

This file is saved next to the model as remote code: it imports only the standard library and its hf_pgen siblings
(relative imports).
"""

from __future__ import annotations

import re
import unicodedata
import warnings
from collections.abc import Sequence
from typing import Any, NamedTuple

from .placeholders import PERCENT_PREFIX, URL_PREFIXES, placeholder_spans
from .protection_pointer_generator import SWALLOWING_RE, UNCALM_RE

__all__: list[str] = []  # used by logits_process_pointer_generator; nothing here is public API


_URL_START = re.compile("|".join(map(re.escape, URL_PREFIXES)))
_LAST_SPACE = re.compile(r"\s(?=\S*\Z)")
_SCHEME_STARTS = frozenset(prefix[:k] for prefix in URL_PREFIXES for k in range(1, len(prefix)))  # "h" ... "https:/"
# A Python named field's name, open or closed, made only of characters that begin no placeholder of the grammar: the
# grammar reads any such name alike (`[^()\s]+`), and no other placeholder starts inside it.
_NAMED_HEAD = re.compile(r"^%\([\w.\-]+(?=\)|$)")
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
    """What the next token may do after a row's pending tail (see `ExampleRules.tail_rules`)."""

    after: tuple[int, ...]  # remaining per span once the tail resolves as if the row ended there
    must_continue: bool  # leaving the tail would emit a span too often or leave a placeholder mark loose
    banned: list[int]  # tokens that would do that, or emit a span too often themselves
    passing: list[int]  # the tokens tried that may come next: all a row that must continue may choose
    opening: frozenset[int]  # of those, the ones that start, go on with or complete a span that remains
    continuations: list[tuple[int, int, int]]  # (next token, tokens the variant still needs, span) of the tail
    last_span: int | None  # the span of an occurrence ending at the tail's end when it resolves


class ExampleRules:
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
        # The tokenizer's VocabularyIndex (protection_pointer_generator), with which the rules read the output's text:
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
        # The last component: stray marks (see VocabularyIndex.stray_ids), except the first tokens of spans, which
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
            if kind == "glued" and head[0] == "%" and not PERCENT_PREFIX.fullmatch(head):
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
        if not (self.has_neighbours and SWALLOWING_RE.search(before)):
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
        return bool(text) and not UNCALM_RE.search(text)

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
            elif self.has_neighbours and SWALLOWING_RE.search(context):
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
