"""Glossaries: the target terms a user's term base prescribes, annotated into the source and guaranteed in the output.

A term base says `storage` is `Speicher`; every translation of a source that holds `storage` must say `Speicher`:

```python
pipe(texts, glossary={"storage": "Speicher", "space": "Space"})     # one term base for every input
pipe(texts, glossary="terms.tsv")                                   # two columns, source term first (TSV or CSV)
pipe(texts, glossary=[{"storage": "Speicher"}, None])               # one per input
batch = processor(texts, glossary="terms.tsv", return_tensors="pt"); model.generate(**batch)
```

An entry *applies* where its source term occurs in the text as whole words, in the forms a text brings (the
default, `match="inflected"`): each word of the entry inflected (`server` -> `servers`, `upload` -> `uploads`,
`uploaded`, `uploading`, `index` -> `indices`: the forms of the `lemminflect` dictionary, or the usual spelling rules
for a lower-case word it lacks), capitalised as a text capitalises it (a sentence start or a title, `Create a
folder`, `Access Points`; all capitals, `SERVER`), whitespace as any whitespace, and NFC and NFD text as the same
text. A term base gives lemmas (`access point`); a text inflects them, and a translator expects the entry to apply.
`match="exact"` applies an entry only where it is written as it stands (NFC and NFD still alike); `ignore_case=True`
matches in any case. Where two matches overlap, the longer wins, then the earlier, then the one written as the entry
stands. Nothing applies inside placeholders (`date` in `%(date)s` is a name the code uses, not a word to translate).
The target term is placed verbatim whatever the form matched: the model may inflect the words around it.
Two steps use the matches:

- *Annotation* (models trained with it: `config.glossary_annotation`, set by `run_translation
  --glossary_augmentation`): each match is rewritten with the model's annotation format, so the model reads the
  prescribed term and a copy model copies it. `"{target}"` writes the target term in place of the source term (`storage`
  -> `Speicher`: Song et al. 2019's code-switching, what run_translation trains with); `"{source} [ {target} ]"`
  (`DEFAULT_GLOSSARY_ANNOTATION`) keeps the source term before it (`storage [ Speicher ]`: Dinu et al. 2019). The
  spaces inside the brackets keep the term's tokens the ones it has after a word, as in the output.
- *Guarantee* (`glossary_mode="guarantee"`, the default): each applied entry's target term comes out verbatim, at
  least once, by the protected-spans engine (`hf_pgen.protection_pointer_generator`): the model still chooses where,
  and may use the term more often. Not "as often as the source term occurs": a translation may merge two occurrences
  (`the extension ... the extension author` -> `Erweiterung ... Erweiterungsautor`), and an exact count would force
  the second one in and ban a second use the model chose itself. With `glossary_mode="hint"` nothing is forced
  (annotation only; needs an annotated model).

A model without the annotation (a plain base, a copy model not trained with it) reads the source unchanged (a model
not trained on it would read the annotation as text, and a copy model would copy it out) and the term is spelled
from the vocabulary, or, where the source holds the same text, from the source's own ids (a copy of it). A term
that cannot be spelled either way is named in a warning.

Entries of a per-input glossary (the list form) that apply nowhere in their input are named in a warning: the user
said they apply there. A term base shared by every input mostly does not apply to a given text, which is normal.

This file is saved next to the model as remote code: it imports only the standard library and its hf_pgen
siblings (relative imports).
"""

from __future__ import annotations

import csv
import functools
import io
import os
import re
import string
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .placeholders import placeholder_spans

__all__ = [
    "Glossary",
    "GlossaryMatch",
    "DEFAULT_GLOSSARY_ANNOTATION",
    "GLOSSARY_MATCHES",
    "GLOSSARY_MODES",
    "annotate",
    "apply_glossaries",
]

# The annotation a model trained with `--glossary_augmentation` reads; saved as `config.glossary_annotation`.
DEFAULT_GLOSSARY_ANNOTATION = "{source} [ {target} ]"
GLOSSARY_MODES = ("guarantee", "hint")
GLOSSARY_MATCHES = ("inflected", "exact")  # see the module docstring

# What entries and texts are matched in: runs of word characters, runs of whitespace, and any other character alone.
# Word runs are maximal, so a whole-word match needs no lookaround (only entries that begin or end with a symbol,
# "C++", ".NET", check the character beside them).
_TOKEN = re.compile(r"\w+|\s+|[^\w\s]")
_END = None  # the trie key of a node where an entry ends


class GlossaryMatch(tuple):
    """One applied entry: `(start, end, source, target)`, `text[start:end]` being the source term as written."""

    __slots__ = ()

    def __new__(cls, start: int, end: int, source: str, target: str):
        return super().__new__(cls, (start, end, source, target))

    start = property(lambda self: self[0])
    end = property(lambda self: self[1])
    source = property(lambda self: self[2])
    target = property(lambda self: self[3])


class Glossary:
    r"""
    A term base: source terms and the target term each prescribes.

    Args:
        entries (`Mapping[str, str]` or iterable of `(source, target)` pairs):
            The terms. A source term listed twice must prescribe the same target.
        ignore_case (`bool`, defaults to `False`):
            Whether a source term matches whatever its case in the text (`Storage`, `STORAGE`, `sToRaGe`). Without
            it, the capitals a text brings (a sentence start, a title, all capitals) still match a lower-case entry.
            The target term is placed as written either way.
        match (`str`, defaults to `"inflected"`):
            `"inflected"`: an entry also applies to the inflected forms of its words (`server` to `servers`,
            `upload` to `uploading`), which needs the `lemminflect` package (a dependency of hf_pgen). `"exact"`:
            only where it is written as it stands. See the module docstring.

    Raises:
        `TypeError` or `ValueError`: for an entry that is not a pair of non-empty strings, a source term given two
            targets, or an unknown `match`.

    Example:

    ```python
    >>> glossary = Glossary({"storage": "Speicher", "storage space": "Speicherplatz", "server": "Server"})
    >>> [tuple(m) for m in glossary.find("Free up storage space on all servers.")]
    [(8, 21, 'storage space', 'Speicherplatz'), (29, 36, 'server', 'Server')]
    >>> Glossary.from_file("terms.tsv", match="exact")  # two columns, source first; TSV or CSV
    ```
    """

    def __init__(
        self,
        entries: Mapping[str, str] | Iterable[tuple[str, str]],
        ignore_case: bool = False,
        match: str = "inflected",
    ) -> None:
        if match not in GLOSSARY_MATCHES:
            raise ValueError(f"Glossary match={match!r} is not one of {GLOSSARY_MATCHES}.")
        self.ignore_case = bool(ignore_case)
        self.match = match
        pairs = entries.items() if isinstance(entries, Mapping) else entries
        self._entries: dict[str, tuple[str, str]] = {}  # match key -> (source, target)
        for index, pair in enumerate(pairs):
            if not (isinstance(pair, tuple) and len(pair) == 2):
                raise TypeError(f"Glossary entry {index} must be a (source, target) pair of strings, got {pair!r}.")
            self._add(*pair, where=f"entry {index}")
        self._index: tuple[dict, dict[str, set[str]]] | None = None  # see _matcher

    @classmethod
    def from_file(
        cls,
        path: str | os.PathLike,
        ignore_case: bool = False,
        delimiter: str | None = None,
        match: str = "inflected",
    ) -> Glossary:
        """Read a two-column term base: one entry per line, source term first, no header (DeepL's and Google's
        format). `delimiter` defaults to a tab for `.tsv` and `.txt` files and a comma for `.csv` (quoted fields as
        the `csv` module reads them); blank lines are skipped; `ignore_case` and `match` as for `Glossary`.

        Raises:
            `FileNotFoundError`: no such file. `ValueError`: a line that is not two non-empty terms (naming the
                line), or a file that is not UTF-8 text.
        """
        path = os.fspath(path)
        if not os.path.isfile(path):
            what = "is a folder" if os.path.isdir(path) else "does not exist"
            raise FileNotFoundError(f"Glossary file {path!r} {what} (pass a TSV/CSV file, a dict or a Glossary).")
        if delimiter is None:
            delimiter = "," if path.lower().endswith(".csv") else "\t"
        with open(path, encoding="utf-8-sig", newline="") as handle:
            try:
                text = handle.read()
            except UnicodeDecodeError as error:
                raise ValueError(f"Glossary file {path!r} is not UTF-8 text ({error}).") from None
        return cls._from_lines(text, delimiter, ignore_case, name=path, match=match)

    @classmethod
    def _from_lines(cls, text: str, delimiter: str, ignore_case: bool, name: str, match: str = "inflected") -> Glossary:
        glossary = cls({}, ignore_case=ignore_case, match=match)
        # Old Mac files end lines with a bare CR, which the csv module refuses outside universal-newline mode.
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        reader = csv.reader(
            io.StringIO(text),
            delimiter=delimiter,
            quoting=csv.QUOTE_MINIMAL if delimiter == "," else csv.QUOTE_NONE,
            strict=True,
        )
        try:
            for row in reader:
                where = f"{name}, line {reader.line_num}"
                if not row or all(not cell.strip() for cell in row):
                    continue
                if len(row) != 2:
                    column = "tab" if delimiter == "\t" else repr(delimiter)
                    raise ValueError(
                        f"Glossary {where} has {len(row)} column(s) ({delimiter.join(row)[:80]!r}): each line needs two, "
                        f"the source term and the target term, separated by a {column}."
                    )
                glossary._add(row[0].strip(), row[1].strip(), where=where)
        except csv.Error as error:
            raise ValueError(f"Glossary {name}, line {reader.line_num} is not valid CSV: {error}.") from None
        return glossary

    def _add(self, source: Any, target: Any, where: str) -> None:
        for role, term in (("source", source), ("target", target)):
            if not isinstance(term, str):
                raise TypeError(f"Glossary {where}: the {role} term must be a string, got {type(term).__name__}.")
            if not term.strip():
                raise ValueError(f"Glossary {where} has an empty {role} term ({source!r} -> {target!r}).")
            if "\x00" in term:
                raise ValueError(f"Glossary {where}: the {role} term {term!r} holds a NUL character.")
        key = _nfc(source).casefold() if self.ignore_case else _nfc(source)
        known = self._entries.get(key)
        if known is not None and known[1] != target:
            raise ValueError(
                f"Glossary {where} gives {source!r} a second target term: {known[1]!r} (for {known[0]!r}) and "
                f"{target!r}. A source term prescribes one target term: keep one of the two lines"
                + (" (ignore_case=True matches both spellings)." if known[0] != source else ".")
            )
        self._entries[key] = (source, target)
        self._index = None

    def __len__(self) -> int:
        return len(self._entries)

    def items(self) -> list[tuple[str, str]]:
        """The `(source, target)` entries, in the order given."""
        return list(self._entries.values())

    def __repr__(self) -> str:
        shown = ", ".join(f"{s!r}: {t!r}" for s, t in self.items()[:3])
        more = ", ..." if len(self) > 3 else ""
        return (
            f"Glossary({{{shown}{more}}}, ignore_case={self.ignore_case}, match={self.match!r})  # {len(self)} entries"
        )

    def find(self, text: str, start: int = 0) -> list[GlossaryMatch]:
        """The entries that apply to `text[start:]`, in order: whole-word occurrences of source terms in the forms
        `match` allows, the longer of two overlapping matches kept (then the earlier, then the one written as the
        entry stands). Offsets are `text`'s own, NFD text included."""
        if not self._entries:
            return []
        trie, forms = self._matcher()
        normal, spans = _nfc_with_spans(text[start:])
        tokens = [(m.group(), m.start(), m.end()) for m in _TOKEN.finditer(normal)]
        keys = [self._token_keys(token, forms) for token, _, _ in tokens]
        candidates = []  # (length, start, inexact words, end, source, target)
        for first in range(len(tokens)):
            if tokens[first][0][0].isspace():
                continue
            stack = [(trie, first, 0)]
            while stack:
                node, position, inexact = stack.pop()
                entry = node.get(_END)
                if entry is not None and position > first:
                    source, target, symbol_first, symbol_last = entry
                    begin, end = tokens[first][1], tokens[position - 1][2]
                    if not (symbol_first and begin and _is_word_char(normal[begin - 1])) and not (
                        symbol_last and end < len(normal) and _is_word_char(normal[end])
                    ):
                        candidates.append((end - begin, begin, inexact, end, source, target))
                if position == len(tokens):
                    continue
                written, allowed = keys[position]
                for key in allowed:
                    child = node.get(key)
                    if child is not None:
                        stack.append((child, position + 1, inexact + (key != written)))
        candidates.sort(key=lambda c: (-c[0], c[1], c[2]))  # longest, then earliest, then as written
        taken: list[tuple[int, int, str, str]] = []
        for _, begin, _, end, source, target in candidates:
            if all(end <= s or begin >= e for s, e, _, _ in taken):
                taken.append((begin, end, source, target))
        return [
            GlossaryMatch(start + spans[begin][0], start + spans[end - 1][1], source, target)
            for begin, end, source, target in sorted(taken)
        ]

    def _matcher(self) -> tuple[dict, dict[str, set[str]]]:
        """The entries as a trie over their tokens' keys, and (`match="inflected"`) each form's entry words."""
        if self._index is None:
            trie: dict = {}
            forms: dict[str, set[str]] = {}
            for source, target in self._entries.values():
                tokens = _TOKEN.findall(_nfc(source))
                node = trie
                for token in tokens:
                    key = self._entry_key(token)
                    node = node.setdefault(key, {})
                    if self.match == "inflected" and _is_word_char(token[0]):
                        for form in _word_forms(token):
                            forms.setdefault(form.casefold() if self.ignore_case else form, set()).add(key)
                node[_END] = (source, target, not _is_word_char(tokens[0][0]), not _is_word_char(tokens[-1][-1]))
            self._index = (trie, forms)
        return self._index

    def _entry_key(self, token: str) -> str:
        if token[0].isspace():
            return " "  # any whitespace
        return token.casefold() if self.ignore_case else token

    def _token_keys(self, token: str, forms: dict[str, set[str]]) -> tuple[str, tuple[str, ...] | set[str]]:
        """(the key of the token as written, the trie keys it may stand for)."""
        written = self._entry_key(token)
        if self.match == "exact" or not _is_word_char(token[0]):
            return written, (written,)
        if self.ignore_case:
            return written, forms.get(written, ())
        allowed: set[str] = set()
        for variant in _case_variants(token):
            allowed |= forms.get(variant, set())
        return written, allowed


def _nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def _is_word_char(char: str) -> bool:
    return char.isalnum() or char == "_"  # what `\w` matches


def _nfc_with_spans(text: str) -> tuple[str, list[tuple[int, int]]]:
    """`text` in NFC, and for each of its characters the span of `text` it came from (a composed "é" from "e" and
    U+0301 spans both). Normalised a cluster at a time (a character that starts one and the marks that follow it),
    which is what NFC composes."""
    if unicodedata.is_normalized("NFC", text):
        return text, [(i, i + 1) for i in range(len(text))]
    out: list[str] = []
    spans: list[tuple[int, int]] = []
    begin = 0
    for i in range(1, len(text) + 1):
        if i < len(text) and (unicodedata.combining(text[i]) or "\u1160" <= text[i] <= "\u11ff"):
            continue  # a mark, or a Hangul vowel or final jamo: it composes with what came before
        cluster = unicodedata.normalize("NFC", text[begin:i])
        out.append(cluster)
        spans += [(begin, i)] * len(cluster)
        begin = i
    return "".join(out), spans


def _case_variants(word: str) -> list[str]:
    """The word, and the lower-case word its capitals may stand for in a text: a capital that starts a sentence or a
    title ("Create" for "create"), all capitals ("SERVER" for "server" or "Server")."""
    variants = [word]
    if word[:1].isupper():
        if len(word) == 1 or word[1:].islower() or not any(c.isalpha() for c in word[1:]):
            variants.append(word.lower())
        elif word.isupper():
            variants += [word.lower(), word.capitalize()]
    return variants


@functools.lru_cache(maxsize=65536)
def _word_forms(word: str) -> frozenset[str]:
    """An entry word and its inflected forms, with its own capitals: `lemminflect`'s dictionary forms (`index`:
    `indexes`, `indices`, `indexed`, `indexing`), or, for a lower-case word it lacks, the forms the usual spelling
    rules give (`reboot`: `reboots`, `rebooted`, `rebooting`). An acronym gets its plural (`API`: `APIs`); a word of
    mixed capitals (`iPhone`) and one with digits stand as they are."""
    lower = word.lower()
    if not lower.isalpha():
        return frozenset([word])
    if word.isupper() and len(word) > 1:
        return frozenset([word, word + "s"])
    if not (word.islower() or (word[0].isupper() and word[1:].islower())):
        return frozenset([word])
    try:  # (imported here, in a try: a saved model folder loads without it, and only matching needs it)
        from lemminflect import getAllInflections, getAllInflectionsOOV
    except ImportError as error:
        raise ImportError(
            'Glossary matching of inflected forms (match="inflected", the default) needs the lemminflect package: '
            'pip install lemminflect, or match only where a term stands as written (glossary_match="exact").'
        ) from error
    forms = {form for group in getAllInflections(lower).values() for form in group}
    if not forms and word.islower():  # not in its dictionary: the spelling rules, as noun and as verb
        forms = {
            form for upos in ("NOUN", "VERB") for group in getAllInflectionsOOV(lower, upos).values() for form in group
        }
    forms = {lower} | {form for form in forms if form.isalpha()}
    return frozenset(forms if word.islower() else (form.capitalize() for form in forms))


def _as_glossary(value: Any, ignore_case: bool, match: str | None, where: str) -> Glossary | None:
    if value is None:
        return None
    if isinstance(value, Glossary):
        wanted = (value.ignore_case or ignore_case, match or value.match)
        if wanted != (value.ignore_case, value.match):
            return Glossary(value.items(), ignore_case=wanted[0], match=wanted[1])
        return value
    if isinstance(value, Mapping):
        return Glossary(value, ignore_case=ignore_case, match=match or "inflected")
    if isinstance(value, (str, os.PathLike)):
        return Glossary.from_file(value, ignore_case=ignore_case, match=match or "inflected")
    raise TypeError(
        f"{where} must be a dict of source term -> target term, a Glossary, or the path of a TSV/CSV term base; got "
        f"{type(value).__name__}."
    )


def glossaries_for(
    glossary: Any, num_texts: int | None, ignore_case: bool = False, match: str | None = None
) -> list[Glossary | None] | Glossary:
    """Normalise a call's `glossary=`: one `Glossary` for every input, or (a list) one per input, checked against
    `num_texts` (None: not known yet, e.g. a stream). `match` (None: a `Glossary`'s own, else `"inflected"`) and
    `ignore_case` as for `Glossary`."""
    if match is not None and match not in GLOSSARY_MATCHES:
        raise ValueError(f"glossary_match={match!r} is not one of {GLOSSARY_MATCHES}.")
    if isinstance(glossary, (list, tuple)):
        if num_texts is not None and len(glossary) != num_texts:
            raise ValueError(
                f"glossary is a list of {len(glossary)} term base(s) for {num_texts} input(s): a list gives one per "
                "input (None for an input without one). For one term base for every input pass a dict, a Glossary "
                "or a file path."
            )
        return [_as_glossary(item, ignore_case, match, f"glossary[{i}]") for i, item in enumerate(glossary)]
    return _as_glossary(glossary, ignore_case, match, "glossary")


def check_annotation(annotation: str) -> str:
    """Validate an annotation format: a `str.format` template with a `{target}` field and optionally `{source}`."""
    if not isinstance(annotation, str):
        raise TypeError(f"glossary_annotation must be a str with a {{target}} field, got {type(annotation).__name__}.")
    try:
        fields = [name for _, name, _, _ in string.Formatter().parse(annotation) if name is not None]
    except ValueError as error:
        raise ValueError(f"glossary_annotation={annotation!r} is not a valid format string: {error}.") from None
    if fields.count("target") != 1 or set(fields) - {"source", "target"} or fields.count("source") > 1:
        raise ValueError(
            f"glossary_annotation={annotation!r} must hold {{target}} once and may hold {{source}} once, nothing "
            f"else (e.g. {DEFAULT_GLOSSARY_ANNOTATION!r})."
        )
    return annotation


def annotate(
    text: str, matches: Sequence[GlossaryMatch], annotation: str
) -> tuple[str, list[tuple[int, int]], list[tuple[int, int]], list[tuple[int, int]]]:
    """Rewrite each match of `text` with `annotation`.

    Returns the annotated text, the character spans of the target terms in it (one per match, in order), the spans
    the annotation added (brackets and target terms: not the user's text, so `protect=` does not look there) and
    the spans of the source terms (empty where the annotation drops them).
    """
    pieces = list(string.Formatter().parse(annotation))  # (literal, field or None, spec, conversion)
    parts: list[str] = []
    targets, added, sources, last, length = [], [], [], 0, 0

    def put(piece: str, is_added: bool) -> None:
        nonlocal length
        if piece:
            if is_added:
                added.append((length, length + len(piece)))
            parts.append(piece)
            length += len(piece)

    for match in matches:
        put(text[last : match.start], False)
        for literal, field, _, _ in pieces:
            put(literal, True)
            if field == "source":  # the source term as written stays the user's text
                sources.append((length, length + match.end - match.start))
                put(text[match.start : match.end], False)
            elif field == "target":
                targets.append((length, length + len(match.target)))
                put(match.target, True)
        last = match.end
    put(text[last:], False)
    merged: list[tuple[int, int]] = []
    for begin, end in added:  # adjacent pieces of one annotation make one span
        if merged and merged[-1][1] == begin:
            merged[-1] = (merged[-1][0], end)
        else:
            merged.append((begin, end))
    return "".join(parts), targets, merged, sources


def apply_glossaries(
    texts: Sequence[str],
    glossaries: Glossary | Sequence[Glossary | None] | None,
    annotation: str | None,
    skip: int = 0,
) -> tuple[list[str], list[dict[str, Any] | None], list[list[GlossaryMatch]]]:
    """Per text (searched from character `skip` on: a task prefix is not the user's): the annotated text (unchanged
    without `annotation`), what the protected-spans engine needs to place its target terms (`{"targets": [(target,
    start, end)], "added": [...], "sources": [...]}`, see `_protected_spans_for_batch`; None for a text no entry
    applies to) and the matches that apply (outside placeholders)."""
    out_texts, terms, applied = [], [], []
    for index, text in enumerate(texts):
        glossary = glossaries[index] if isinstance(glossaries, (list, tuple)) else glossaries
        matches = (
            [GlossaryMatch(m.start + skip, m.end + skip, m.source, m.target) for m in glossary.find(text[skip:])]
            if glossary is not None
            else []
        )
        if matches:  # a word inside a placeholder is the code's, not the text's
            code = [(a + skip, b + skip) for a, b in placeholder_spans(text[skip:])]
            matches = [m for m in matches if not any(m.start < b and a < m.end for a, b in code)]
        applied.append(matches)
        if not matches:
            out_texts.append(text)
            terms.append(None)
        elif annotation is None:  # the model reads the source as it is; the engine spells the targets
            out_texts.append(text)
            terms.append(
                {
                    "targets": [(m.target, None, None) for m in matches],
                    "added": [],
                    "sources": [(m.start, m.end) for m in matches],
                }
            )
        else:
            annotated, targets, added, sources = annotate(text, matches, annotation)
            out_texts.append(annotated)
            terms.append(
                {
                    "targets": [(m.target, s, e) for m, (s, e) in zip(matches, targets)],
                    "added": added,
                    "sources": sources,
                }
            )
    return out_texts, terms, applied


def unapplied_entries(
    glossaries: Sequence[Glossary | None], applied: Sequence[Sequence[GlossaryMatch]]
) -> list[tuple[int, str]]:
    """(input index, source term) of each entry of a per-input glossary that applies nowhere in its input."""
    missing = []
    for index, (glossary, matches) in enumerate(zip(glossaries, applied)):
        if glossary is not None:
            found = {m.source for m in matches}
            missing += [(index, source) for source, _ in glossary.items() if source not in found]
    return missing


def unapplied_message(missing: Sequence[tuple[int, str]], glossaries: Sequence[Glossary | None]) -> str:
    """The warning for `unapplied_entries`: names the first entries and says how entries match."""
    shown = "; ".join(f"input {index}: {source!r}" for index, source in missing[:8])
    more = f" ... ({len(missing)} in all)" if len(missing) > 8 else ""
    exact = any(g is not None and g.match == "exact" for g in glossaries)
    how = (
        'as written (glossary_match="exact")'
        if exact
        else "as whole words, in inflected forms and the capitals a text brings"
    )
    return (
        f"Glossary entries that apply nowhere in their input, so they are not placed: {shown}{more}. Entries match "
        f"{how}, never inside placeholders; check the term's spelling against the text."
    )


def term_base_summary(glossary: Glossary, applied: Sequence[Sequence[GlossaryMatch]]) -> str:
    """One line on a term base shared by several inputs: how many entries applied, to how many inputs."""
    used = {m.source for matches in applied for m in matches}
    inputs = sum(1 for matches in applied if matches)
    return (
        f"Term base: {len(used)} of its {len(glossary)} entries apply to {inputs} of the {len(applied)} inputs "
        f"({sum(len(m) for m in applied)} occurrences); an entry whose source term is in no input is not placed."
    )
