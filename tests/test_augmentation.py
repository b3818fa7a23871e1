"""Placeholder and copy augmentation (training/augmentation.py): extra pairs stay correct translations of each other."""

import random
import re
from collections import Counter

from testing_utils import corpus_pairs

from hf_pgen.placeholders import extract_placeholders, placeholder_spans
from training.augmentation import augment_placeholders, augment_unseen_words, placeholder_variant, respelled_variant

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


def _shape(word: str) -> str:
    return re.sub(r"[A-Z]", "A", re.sub(r"[a-z]", "a", re.sub(r"\d", "0", word)))


def test_respelled_words_are_new_the_same_in_source_and_target_and_keep_their_shape():
    pairs = corpus_pairs("train", limit=6000)
    rng, respelled = random.Random(0), 0
    for source, target in pairs:
        variant = respelled_variant(source, target, rng)
        if variant is None:
            continue
        new_source, new_target = variant
        assert extract_placeholders(new_source) == extract_placeholders(source)  # placeholders untouched
        assert extract_placeholders(new_target) == extract_placeholders(target)
        old_words, new_words = re.findall(r"\S+", source), re.findall(r"\S+", new_source)
        changed = {}
        for old, new in zip(old_words, new_words):
            for a, b in zip(re.findall(r"\w+|\W+", old), re.findall(r"\w+|\W+", new)):
                if a != b:
                    assert _shape(a) == _shape(b), (a, b)
                    changed[b] = a
        # Undoing the source's respellings in both texts gives the original pair back: the target was respelled
        # exactly as the source, and nothing else changed.
        collides = any(re.search(rf"(?<!\w){re.escape(new)}(?!\w)", source + " " + target) for new in changed)
        # (a respelled "10" may be "56", which the pair may hold already: short words can collide)
        if changed and not collides and min(map(len, changed.values())) >= 3:
            words = "|".join(map(re.escape, sorted(changed, key=len, reverse=True)))
            undo = re.compile(rf"(?<!\w)(?:{words})(?!\w)")
            assert undo.sub(lambda m: changed[m.group()], new_source) == source
            assert undo.sub(lambda m: changed[m.group()], new_target) == target
            respelled += 1
    assert respelled > 100
    assert respelled_variant("Delete the file?", "Datei löschen?", rng) is None  # nothing held verbatim by both
    assert respelled_variant("%(name)s saved", "%(name)s gespeichert", rng) is None  # a placeholder is not a word


def test_copy_augmentation_is_deterministic():
    sources, targets = map(list, zip(*corpus_pairs("train", limit=3000)))
    first = augment_unseen_words(sources, targets, seed=42)
    assert first == augment_unseen_words(sources, targets, seed=42)
    assert 0 < len(first[0]) == len(first[1]) < len(sources)


def test_the_module_example_runs_as_written():
    import doctest

    import training.augmentation

    assert doctest.testmod(training.augmentation).failed == 0
