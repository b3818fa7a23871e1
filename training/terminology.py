"""Term pairs a translation pair supports, from a real bilingual dictionary, for glossary training and test term bases.

The dictionary is Debian's FreeDict English-German (`dict-freedict-eng-deu`, GPL-3+, about 464k entries), read at
run time and never committed: `apt-get install dict-freedict-eng-deu` puts it at `FREEDICT_ENG_DEU`. A TSV of
two columns (source term, target term) works as well.

A dictionary entry is *supported* by a pair when its source term occurs in the source as whole words and one of its
target terms occurs in the reference as whole words (WMT builds its terminology test sets the same way: a term
counts where the reference uses it). `--glossary_augmentation` annotates some of these in training sources
(`hf_pgen.glossary.annotate`), so that the model learns to copy an annotated term (Dinu et al. 2019).
"""

from __future__ import annotations

import gzip
import os
import random
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

from hf_pgen.glossary import Glossary, annotate
from hf_pgen.placeholders import placeholder_spans

FREEDICT_ENG_DEU = "/usr/share/dictd/freedict-eng-deu.dict.dz"
# The annotation `--glossary_augmentation` trains with: the target term in place of the source term (Song et al.
# 2019's code-switching, which they paired with a pointer network). Against Dinu et al.'s append format, `"{source} [
# {target} ]"` (the library's DEFAULT_GLOSSARY_ANNOTATION), on the main job's glossary model, seeds 42 / 43: hint TSR
# 0.789 / 0.773 against 0.764 / 0.778, BLEU with hints 36.9 / 36.6 against 34.0 / 33.2, chrF 44.5 / 45.1 against
# 42.2 / 41.7.
TRAINING_ANNOTATION = "{target}"
_HEADWORD = re.compile(r"^(?P<term>[^\n/{}]+?) /[^/\n]*/\n(?P<targets>[^\n]+)", re.MULTILINE)
_TAGS = re.compile(r"<[^>]*>|\[[^\]]*\]|\([^)]*\)")


def load_dictionary(path: str | os.PathLike = FREEDICT_ENG_DEU) -> dict[str, list[str]]:
    """Source term -> target terms, from a FreeDict dictd file (`.dict.dz` or `.dict`) or a two-column TSV.

    FreeDict writes each entry as a headword line `term /IPA/` and a line of targets `Lager <neut>, Speicher
    <masc>`; grammatical tags, notes in brackets and targets with a placeholder (`etw.`, `jdn.`) are dropped."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(
            f"No dictionary at {str(path)!r}. Install Debian's English-German dictionary (apt-get install "
            f"dict-freedict-eng-deu puts it at {FREEDICT_ENG_DEU}), or pass a two-column TSV (source term, target term)."
        )
    entries: dict[str, list[str]] = defaultdict(list)
    if path.suffix in (".tsv", ".txt"):
        for source, target in Glossary.from_file(path).items():
            entries[source].append(target)
        return dict(entries)
    opener = gzip.open if path.suffix == ".dz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        text = handle.read()
    for match in _HEADWORD.finditer(text):
        term = match["term"].strip()
        if not term or term.startswith("00"):  # the database's own header entries
            continue
        for target in _TAGS.sub("", match["targets"]).split(","):
            target = " ".join(target.split())
            if target and not any(marker in target for marker in ("etw.", "jdn.", "jdm.", "jds.", "sth.", "so.")):
                if target not in entries[term]:
                    entries[term].append(target)
    return dict(entries)


class TermIndex:
    """Finds the dictionary entries a (source, reference) pair supports: entries indexed by their first word."""

    def __init__(self, dictionary: dict[str, list[str]], max_words: int = 3):
        self._by_first: dict[str, list[tuple[tuple[str, ...], str, list[str]]]] = defaultdict(list)
        for term, targets in dictionary.items():
            words = tuple(term.split())
            # Content words only: a one-word term of five letters or more, a longer one with such a word and no
            # word under three letters ("the" -> "die", "a few" -> "einige" are grammar, not terminology).
            content = all(w.isalpha() and len(w) >= 3 for w in words) and max(map(len, words), default=0) >= 5
            targets = [t for t in targets if len(t) >= 3]
            if 0 < len(words) <= max_words and content and targets:
                self._by_first[words[0]].append((words, term, targets))

    def supported(self, source: str, reference: str) -> list[tuple[str, str]]:
        """`(source term, target term)` pairs: the source term in `source`, the target term in `reference`, both as
        whole words (case-sensitive), the longest source term first where two start at one word."""
        source, reference = without_placeholders(source), without_placeholders(reference)
        words = re.findall(r"\w+", source)
        reference_words = set(re.findall(r"\w+", reference))
        found: dict[str, str] = {}
        for position, word in enumerate(words):
            for candidate in sorted(self._by_first.get(word, ()), key=lambda entry: -len(entry[0])):
                term_words, term, targets = candidate
                if tuple(words[position : position + len(term_words)]) != term_words or term in found:
                    continue
                for target in targets:
                    if all(w in reference_words for w in target.split()) and _whole(target, reference):
                        found[term] = target
                        break
        return list(found.items())


def without_placeholders(text: str) -> str:
    """`text` with its placeholders blanked out: `date` in `%(date)s` is the code's, not a term."""
    for start, end in placeholder_spans(text):
        text = text[:start] + " " * (end - start) + text[end:]
    return text


def _whole(term: str, text: str) -> bool:
    return re.search(r"(?<!\w)" + re.escape(term) + r"(?!\w)", text) is not None


def augment_with_terms(
    sources: Sequence[str],
    references: Sequence[str],
    index: TermIndex,
    annotation: str,
    rate: float = 0.5,
    seed: int = 0,
) -> tuple[list[str], int]:
    """Training sources with supported terms annotated, in `rate` of the pairs that support any (the others stay as
    they are, so the model keeps translating sources without annotation). Returns the sources and how many were
    annotated.

    An annotated pair gets between one and all of its supported terms, as many as a test term base can list: trained
    on at most two, the main job's model used hints for 86% of the terms of one-term sources but 33% of those of
    sources with six or more (all terms: 0.745 -> 0.761 and 0.764 overall, with and without copy-next)."""
    rng = random.Random(seed)
    out, annotated = [], 0
    for source, reference in zip(sources, references):
        terms = index.supported(source, reference)
        if terms and rng.random() < rate:
            chosen = rng.sample(terms, rng.randint(1, len(terms)))
            matches = Glossary(dict(chosen)).find(source)
            if matches:
                source = annotate(source, matches, annotation)[0]
                annotated += 1
        out.append(source)
    return out, annotated


def test_term_base(sources: Iterable[str], references: Iterable[str], index: TermIndex) -> list[dict[str, str]]:
    """Per test pair, the entries it supports: a term base built as WMT builds its test terms."""
    return [dict(index.supported(source, reference)) for source, reference in zip(sources, references)]
