"""Glossaries: the target terms a user's term base prescribes, annotated into the source and guaranteed in the output.

A term base says `storage` is `Speicher`; every translation of a source that holds `storage` must say `Speicher`:

```python
pipe(texts, glossary={"storage": "Speicher", "space": "Space"})     # one term base for every input
pipe(texts, glossary="terms.tsv")                                   # two columns, source term first (TSV or CSV)
pipe(texts, glossary=[{"storage": "Speicher"}, None])               # one per input
batch = processor(texts, glossary="terms.tsv", return_tensors="pt"); model.generate(**batch)
```

An entry *applies* where its source term occurs in the text as whole words (case-sensitive unless
`ignore_case=True`; where two matches overlap, the longer wins, then the earlier), outside placeholders (`date` in
`%(date)s` is a name the code uses, not a word to translate). Two steps use the matches:

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

A model without the annotation (a plain base, a copy model not trained with it) reads the source unchanged and the
term is spelled from the vocabulary. A term the vocabulary cannot spell is written into the source of a copy model all
the same (with `DEFAULT_GLOSSARY_ANNOTATION`: copying is then its only way out), and named in a warning for a plain
base.

This file is saved next to the model as remote code: it imports only the standard library and its hf_pgen
siblings (relative imports).
"""

from __future__ import annotations

import csv
import io
import os
import re
import string
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from .placeholders import placeholder_spans

__all__ = ["Glossary", "GlossaryMatch", "DEFAULT_GLOSSARY_ANNOTATION", "GLOSSARY_MODES", "annotate", "apply_glossaries"]

# The annotation a model trained with `--glossary_augmentation` reads; saved as `config.glossary_annotation`.
DEFAULT_GLOSSARY_ANNOTATION = "{source} [ {target} ]"
GLOSSARY_MODES = ("guarantee", "hint")


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
            Whether a source term matches whatever its case in the text (`Storage`, `STORAGE`). The target term is
            placed as written either way.

    Example:

    ```python
    >>> glossary = Glossary({"storage": "Speicher", "storage space": "Speicherplatz"})
    >>> [tuple(m) for m in glossary.find("Free up storage space in storage.")]
    [(8, 21, 'storage space', 'Speicherplatz'), (25, 32, 'storage', 'Speicher')]
    >>> Glossary.from_file("terms.tsv", ignore_case=True)  # two columns, source first; TSV or CSV
    ```
    """

    def __init__(self, entries: Mapping[str, str] | Iterable[tuple[str, str]], ignore_case: bool = False) -> None:
        self.ignore_case = bool(ignore_case)
        pairs = entries.items() if isinstance(entries, Mapping) else entries
        self._entries: dict[str, tuple[str, str]] = {}  # match key -> (source, target)
        for index, pair in enumerate(pairs):
            if not (isinstance(pair, tuple) and len(pair) == 2):
                raise TypeError(f"Glossary entry {index} must be a (source, target) pair of strings, got {pair!r}.")
            self._add(*pair, where=f"entry {index}")
        self._pattern = None

    @classmethod
    def from_file(cls, path: str | os.PathLike, ignore_case: bool = False, delimiter: str | None = None) -> Glossary:
        """Read a two-column term base: one entry per line, source term first, no header (DeepL's and Google's
        format). `delimiter` defaults to a tab for `.tsv` and `.txt` files and a comma for `.csv` (quoted fields as
        the `csv` module reads them); blank lines are skipped. Errors name the line."""
        path = os.fspath(path)
        if not os.path.isfile(path):
            raise FileNotFoundError(
                f"Glossary file {path!r} does not exist (pass a TSV/CSV file, a dict or a Glossary)."
            )
        if delimiter is None:
            delimiter = "," if path.lower().endswith(".csv") else "\t"
        with open(path, encoding="utf-8-sig", newline="") as handle:
            try:
                text = handle.read()
            except UnicodeDecodeError as error:
                raise ValueError(f"Glossary file {path!r} is not UTF-8 text ({error}).") from None
        return cls._from_lines(text, delimiter, ignore_case, name=path)

    @classmethod
    def _from_lines(cls, text: str, delimiter: str, ignore_case: bool, name: str) -> Glossary:
        glossary = cls({}, ignore_case=ignore_case)
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
        key = source.casefold() if self.ignore_case else source
        known = self._entries.get(key)
        if known is not None and known[1] != target:
            raise ValueError(
                f"Glossary {where} gives {source!r} a second target term: {known[1]!r} (for {known[0]!r}) and "
                f"{target!r}. A source term prescribes one target term: keep one of the two lines"
                + (" (ignore_case=True matches both spellings)." if known[0] != source else ".")
            )
        self._entries[key] = (source, target)
        self._pattern = None

    def __len__(self) -> int:
        return len(self._entries)

    def items(self) -> list[tuple[str, str]]:
        """The `(source, target)` entries, in the order given."""
        return list(self._entries.values())

    def __repr__(self) -> str:
        shown = ", ".join(f"{s!r}: {t!r}" for s, t in self.items()[:3])
        more = ", ..." if len(self) > 3 else ""
        return f"Glossary({{{shown}{more}}}, ignore_case={self.ignore_case})  # {len(self)} entries"

    def find(self, text: str, start: int = 0) -> list[GlossaryMatch]:
        """The entries that apply to `text[start:]`, in order: whole-word occurrences of source terms, the longer of
        two overlapping matches kept (then the earlier)."""
        if not self._entries:
            return []
        if self._pattern is None:
            # Longest first: at each position the alternation then takes the longest term that starts there. The
            # lookahead finds a match at every position, overlapping ones included; the choice among them is below.
            terms = sorted((re.escape(source) for source, _ in self._entries.values()), key=len, reverse=True)
            flags = re.IGNORECASE if self.ignore_case else 0
            self._pattern = re.compile(r"(?=(?<!\w)(" + "|".join(terms) + r")(?!\w))", flags)
        candidates = [(m.start(1), m.end(1)) for m in self._pattern.finditer(text, start)]
        candidates.sort(key=lambda span: (span[0] - span[1], span[0]))  # longest first, then earliest
        taken: list[tuple[int, int]] = []
        for begin, end in candidates:
            if all(end <= s or begin >= e for s, e in taken):
                taken.append((begin, end))
        matches = []
        for begin, end in sorted(taken):
            written = text[begin:end]
            source, target = self._entries[written.casefold() if self.ignore_case else written]
            matches.append(GlossaryMatch(begin, end, source, target))
        return matches


def _as_glossary(value: Any, ignore_case: bool, where: str) -> Glossary | None:
    if value is None or isinstance(value, Glossary):
        if isinstance(value, Glossary) and ignore_case and not value.ignore_case:
            return Glossary(value.items(), ignore_case=True)
        return value
    if isinstance(value, Mapping):
        return Glossary(value, ignore_case=ignore_case)
    if isinstance(value, (str, os.PathLike)):
        return Glossary.from_file(value, ignore_case=ignore_case)
    raise TypeError(
        f"{where} must be a dict of source term -> target term, a Glossary, or the path of a TSV/CSV term base; got "
        f"{type(value).__name__}."
    )


def glossaries_for(glossary: Any, num_texts: int | None, ignore_case: bool = False) -> list[Glossary | None] | Glossary:
    """Normalise a call's `glossary=`: one `Glossary` for every input, or (a list) one per input, checked against
    `num_texts` (None: not known yet, e.g. a stream)."""
    if isinstance(glossary, (list, tuple)):
        if num_texts is not None and len(glossary) != num_texts:
            raise ValueError(
                f"glossary is a list of {len(glossary)} term base(s) for {num_texts} input(s): a list gives one per "
                "input (None for an input without one). For one term base for every input pass a dict, a Glossary "
                "or a file path."
            )
        return [_as_glossary(item, ignore_case, f"glossary[{i}]") for i, item in enumerate(glossary)]
    return _as_glossary(glossary, ignore_case, "glossary")


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
    unspellable: Callable[[str], bool] | None = None,
) -> tuple[list[str], list[dict[str, Any] | None]]:
    """Per text (searched from character `skip` on: a task prefix is not the user's), the annotated text (unchanged
    without `annotation`) and what the protected-spans engine needs to place its target terms: `{"targets":
    [(target, start, end)], "added": [...], "sources": [...]}` (see `_protected_spans_for_batch`), or None for a
    text no entry applies to. Without `annotation`, the matches whose target `unspellable(target)` says the model
    cannot spell are annotated with `DEFAULT_GLOSSARY_ANNOTATION` (a copy model copies them from there)."""
    out_texts, terms = [], []
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
        if not matches:
            out_texts.append(text)
            terms.append(None)
            continue
        if annotation is None and unspellable is not None and any(unspellable(m.target) for m in matches):
            written = [m for m in matches if unspellable(m.target)]
            annotated, targets, added, _ = annotate(text, written, DEFAULT_GLOSSARY_ANNOTATION)
            spans, entries, sources, shift = dict(zip(written, targets)), [], [], 0
            for m in matches:  # the others stay where they were, moved by the annotations before them
                sources.append((m.start + shift, m.end + shift))
                entries.append((m.target, *spans[m]) if m in spans else (m.target, None, None))
                if m in spans:
                    shift += len(DEFAULT_GLOSSARY_ANNOTATION.format(source=text[m.start : m.end], target=m.target)) - (
                        m.end - m.start
                    )
            out_texts.append(annotated)
            terms.append({"targets": entries, "added": added, "sources": sources})
            continue
        if annotation is None:
            out_texts.append(text)
            terms.append(
                {
                    "targets": [(m.target, None, None) for m in matches],
                    "added": [],
                    "sources": [(m.start, m.end) for m in matches],
                }
            )
            continue
        annotated, targets, added, sources = annotate(text, matches, annotation)
        out_texts.append(annotated)
        terms.append(
            {"targets": [(m.target, s, e) for m, (s, e) in zip(matches, targets)], "added": added, "sources": sources}
        )
    return out_texts, terms
