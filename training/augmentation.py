"""Augmentations that teach a model to copy what it has never seen: placeholders, and words (`augment_unseen_words`).

Placeholder augmentation: extra training pairs that teach a model to copy placeholders it has never seen.

The embedded corpus holds few named placeholders in training (`%(name)s` 162 times, most names once or never) and
the test split is full of them (`%(path)s`, `%(rev)s`, `%(cnum)s`: projects unseen in training). A model learns the
names it saw as words of its vocabulary and writes them where an unseen one stands. Each extra pair is a training
pair whose placeholders are renamed consistently in source and target, or, for a pair without placeholders, whose
word that the source and target share verbatim (a name, a number, a product) becomes a named placeholder:

>>> import random
>>> from training.augmentation import placeholder_variant
>>> placeholder_variant("Delete %(count)d files?", "%(count)d Dateien löschen?", random.Random(0), ["rev", "path"])
('Delete %(path)d files?', '%(path)d Dateien löschen?')

Only what a message's format call reads changes, in source and target alike: the name inside `%(...)`, `{...}`,
`${...}`; a bare `%s` / `%d` / `{}` / `{0}` becomes named half of the time. Tags, URLs, ICU heads and the text around
them stay as they are, so the pair remains a correct translation.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Sequence

from hf_pgen.placeholders import PLACEHOLDER_PATTERN, PLACEHOLDER_STARTS, placeholder_spans

__all__ = ["augment_placeholders", "augment_unseen_words", "placeholder_variant", "respelled_variant"]

_FIELD_NAME = re.compile(r"\w*")  # what follows "{" in a brace field: its name or index, maybe empty
# A word stands free where it does not follow a word character, a character a placeholder begins with
# (PLACEHOLDER_STARTS) or one that goes on inside a placeholder, path or URL ("(" of "%(name)s", "/", ".", "-"), and
# is not followed by one that goes on or closes one.
_FREE_BEFORE = r"(?<![\w" + re.escape("".join(start for start in PLACEHOLDER_STARTS if len(start) == 1)) + r"(/.-])"
_FREE_AFTER = r"(?![\w}>)/-])"
# A word both texts hold verbatim that may stand for a value: capitalised, or holding a digit (names, versions).
_SHARED_WORD = re.compile(_FREE_BEFORE + r"(?:[A-Z][\w-]*\d*|[\w-]*\d[\w.-]*\w|\d)" + _FREE_AFTER)


def _renamed(placeholder: str, name: str, rng: random.Random) -> str | None:
    """`placeholder` with its name replaced by `name`, or None when it holds nothing a format call names.

    Which kind of placeholder it is comes from hf_pgen's grammar (`PLACEHOLDER_PATTERN`'s group names); here only
    the name is cut out of it."""
    match = PLACEHOLDER_PATTERN.fullmatch(placeholder)
    kind = match.lastgroup if match else None
    if kind == "pynamed":  # %(name) + flags, width, conversion
        return f"%({name}){placeholder[placeholder.index(')') + 1 :]}"
    if kind == "brace":  # {name}, {0}, {}, {x:.2f}, {x!r}; not {obj.attr} or {items[0]}
        field = _FIELD_NAME.match(placeholder, 1)
        rest = placeholder[field.end() :]
        if rest[0] not in "!:}":
            return None
        if not field.group() and rng.random() < 0.5:
            return None  # a bare {} stays bare half of the time: models must keep those too
        return "{" + name + rest
    if kind == "dollar":  # ${NAME}, #{NAME}, %{NAME}
        return f"{placeholder[0]}{{{name.upper()}}}"
    if placeholder in ("%s", "%d") and rng.random() < 0.5:
        return f"%({name}){placeholder[1]}"
    return None


def _replace(text: str, spans: list[tuple[int, int]], mapping: dict[str, str]) -> str:
    pieces, last = [], 0
    for start, end in spans:
        replacement = mapping.get(text[start:end])
        if replacement is not None:
            pieces += [text[last:start], replacement]
            last = end
    return "".join(pieces) + text[last:]


def _fresh_name(rng: random.Random, names: Sequence[str]) -> str:
    if rng.random() < 0.3:
        return f"{rng.choice(names)}_{rng.choice(names)}"
    return rng.choice(names)


def placeholder_variant(source: str, target: str, rng: random.Random, names: Sequence[str]) -> tuple[str, str] | None:
    """A new (source, target) pair with fresh placeholder names (drawn from `names`), or None when the pair has
    nothing to rename and no word to turn into a placeholder.

    Placeholders are renamed only when the target holds each of them exactly as often as the source (a pair whose
    translator dropped or changed one would teach the wrong lesson); a pair without placeholders gets one word that
    both texts hold exactly once, verbatim, replaced by `%(name)s`.
    """
    source_spans, target_spans = placeholder_spans(source), placeholder_spans(target)
    if source_spans:
        counts = Counter(source[a:b] for a, b in source_spans)
        if counts != Counter(target[a:b] for a, b in target_spans):
            return None
        mapping, used = {}, set(counts)
        for placeholder in counts:
            name = _fresh_name(rng, names)
            new = _renamed(placeholder, name, rng)
            if new is not None and new not in used:
                mapping[placeholder] = new
                used.add(new)
        if not mapping:
            return None
        return _replace(source, source_spans, mapping), _replace(target, target_spans, mapping)
    if target_spans:
        return None
    source_words = Counter(m.group() for m in _SHARED_WORD.finditer(source))
    target_words = Counter(m.group() for m in _SHARED_WORD.finditer(target))
    shared = sorted(w for w, n in source_words.items() if n == 1 and target_words.get(w) == 1)
    if not shared:
        return None
    word = rng.choice(shared)
    placeholder = f"%({_fresh_name(rng, names)})s"
    pattern = re.compile(_FREE_BEFORE + re.escape(word) + _FREE_AFTER)
    return pattern.sub(placeholder, source, count=1), pattern.sub(placeholder, target, count=1)


def augment_placeholders(sources: Sequence[str], targets: Sequence[str], seed: int) -> tuple[list[str], list[str]]:
    """The extra pairs for a training split: one `placeholder_variant` per pair that has one, with names drawn from
    the split's own lower-case source words (what real placeholders are named after)."""
    names = sorted({w for s in sources for w in re.findall(r"\b[a-z]{2,12}\b", s)})
    if not names:
        return [], []
    rng = random.Random(seed)
    extra_sources, extra_targets = [], []
    for source, target in zip(sources, targets):
        variant = placeholder_variant(source, target, rng, names)
        if variant is not None:
            extra_sources.append(variant[0])
            extra_targets.append(variant[1])
    return extra_sources, extra_targets


# What `respelled_variant` respells: the shared words of `_SHARED_WORD`, and identifiers such as trac.ini or new_rev.
_COPYABLE_WORD = re.compile(
    _FREE_BEFORE + r"(?:[A-Za-z]\w*(?:[_.]\w+)+|[A-Z][\w-]*\d*|[\w-]*\d[\w.-]*\w|\d)" + _FREE_AFTER
)


def _respelled(word: str, rng: random.Random) -> str:
    """A new word of `word`'s shape: each letter another of the same case, each digit another digit, the rest kept."""
    out = []
    for char in word:
        if char.isascii() and char.isupper():
            out.append(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ"))
        elif char.isascii() and char.islower():
            out.append(rng.choice("abcdefghijklmnopqrstuvwxyz"))
        elif char.isdigit():
            out.append(rng.choice("0123456789"))
        else:
            out.append(char)
    return "".join(out)


def respelled_variant(source: str, target: str, rng: random.Random) -> tuple[str, str] | None:
    """A new (source, target) pair in which every word both texts hold verbatim, equally often (capitalised or
    holding a digit, or an identifier with an inner `_` or `.`: a name, a product, a version, a file; never inside a
    placeholder), is respelled alike in both as a new
    word of the same shape; None when there is no such word.

    >>> respelled_variant("About Trac 1.6, see trac.ini", "Über Trac 1.6, siehe trac.ini", random.Random(0))
    ('About Biqp 6.6, see mzjp.lsg', 'Über Biqp 6.6, siehe mzjp.lsg')

    The pair stays a correct translation, and its respelled words are ones no vocabulary holds: the model can only
    get them right by copying, which is what it must do with the names and identifiers of unseen projects.
    """
    source_words, target_words = _copyable_words(source), _copyable_words(target)
    source_counts = Counter(text for _, _, text in source_words)
    target_counts = Counter(text for _, _, text in target_words)
    shared = sorted(w for w, n in source_counts.items() if target_counts.get(w) == n)
    if not shared:
        return None
    mapping = {word: _respelled(word, rng) for word in shared}
    spans = [
        (source, [(a, b) for a, b, w in source_words if w in mapping]),
        (target, [(a, b) for a, b, w in target_words if w in mapping]),
    ]
    return tuple(_replace(text, found, mapping) for text, found in spans)


def _copyable_words(text: str) -> list[tuple[int, int, str]]:
    """`_COPYABLE_WORD` matches of `text` that touch no placeholder (`%(name)s.attr` holds no word `s.attr`)."""
    edges = [(a, b) for a, b in placeholder_spans(text)]
    return [
        (m.start(), m.end(), m.group())
        for m in _COPYABLE_WORD.finditer(text)
        if not any(a <= m.end() and m.start() <= b for a, b in edges)
    ]


def augment_unseen_words(sources: Sequence[str], targets: Sequence[str], seed: int) -> tuple[list[str], list[str]]:
    """The extra pairs for a training split: one `respelled_variant` per pair that has one."""
    rng = random.Random(seed)
    extra_sources, extra_targets = [], []
    for source, target in zip(sources, targets):
        variant = respelled_variant(source, target, rng)
        if variant is not None:
            extra_sources.append(variant[0])
            extra_targets.append(variant[1])
    return extra_sources, extra_targets
