"""Placeholder augmentation (training/augmentation.py): extra pairs stay correct translations of each other."""

import random
import re
from collections import Counter

from testing_utils import corpus_pairs

from hf_pgen.placeholders import extract_placeholders, placeholder_spans
from training.augmentation import augment_placeholders, placeholder_variant

NAMES = ["rev", "path", "user", "size"]


def _outside(text: str) -> str:
    """The text with every placeholder replaced by one mark: what augmentation must leave as it was."""
    pieces, last = [], 0
    for start, end in placeholder_spans(text):
        pieces += [text[last:start], "\0"]
        last = end
    return "".join(pieces) + text[last:]


def test_renamed_placeholders_match_between_source_and_target_and_nothing_else_changes():
    pairs = [(s, t) for s, t in corpus_pairs("train", limit=8000) if placeholder_spans(s)]
    rng, renamed = random.Random(0), 0
    for source, target in pairs:
        variant = placeholder_variant(source, target, rng, NAMES)
        if Counter(extract_placeholders(source)) != Counter(extract_placeholders(target)):
            assert variant is None, (source, target)  # a translator's dropped placeholder teaches the wrong lesson
            continue
        if variant is None:
            continue
        new_source, new_target = variant
        renamed += 1
        assert Counter(extract_placeholders(new_source)) == Counter(extract_placeholders(new_target))
        assert _outside(new_source) == _outside(source) and _outside(new_target) == _outside(target)
        # one consistent renaming: the k-th placeholder of a text maps to the same new one in both texts
        mapping = dict(zip(extract_placeholders(source), extract_placeholders(new_source)))
        assert [mapping[p] for p in extract_placeholders(target)] == extract_placeholders(new_target)
        assert len(set(mapping.values())) == len(mapping)  # two placeholders never merge into one
    assert renamed > 0.5 * len(pairs)


def test_a_pair_without_placeholders_gets_a_shared_word_as_a_named_placeholder():
    rng = random.Random(1)
    variant = placeholder_variant("Open Firefox now", "Firefox jetzt öffnen", rng, NAMES)
    assert variant is not None
    (placeholder,) = extract_placeholders(variant[0])
    assert re.fullmatch(r"%\((rev|path|user|size)(_(rev|path|user|size))?\)s", placeholder)
    assert variant == (f"Open {placeholder} now", f"{placeholder} jetzt öffnen")
    # a word each side holds twice, or in another case, or only in part, is no value to stand in for
    assert placeholder_variant("Open Firefox, Firefox", "Firefox öffnen", rng, NAMES) is None
    assert placeholder_variant("Open the file", "Die Datei öffnen", rng, NAMES) is None
    # tags and URLs keep their text: a pair that holds only those has nothing to rename
    assert placeholder_variant("Click <b>here</b>", "<b>Hier</b> klicken", rng, NAMES) is None


def test_augmentation_is_deterministic_and_keeps_the_split():
    sources, targets = map(list, zip(*corpus_pairs("train", limit=3000)))
    first = augment_placeholders(sources, targets, seed=42)
    assert first == augment_placeholders(sources, targets, seed=42)
    assert first != augment_placeholders(sources, targets, seed=43)
    extra_sources, extra_targets = first
    assert 0 < len(extra_sources) == len(extra_targets) < len(sources)
    assert all(extract_placeholders(s) for s in extra_sources)


def test_the_module_example_runs_as_written():
    import doctest

    import training.augmentation

    assert doctest.testmod(training.augmentation).failed == 0
