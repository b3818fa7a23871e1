"""Checks on the embedded English->German software-message corpus (hf_pgen.corpus; files in hf_pgen/en_de_messages)."""

from __future__ import annotations

import json
import random
import re

import datasets
import pytest

from hf_pgen.corpus import CORPUS_DIR, SPLITS, load_en_de_messages
from hf_pgen.placeholders import extract_placeholders

ALLOWED_LICENSES = {"MIT", "BSD-2-Clause", "BSD-3-Clause", "Apache-2.0", "PSF-2.0"}


@pytest.fixture(scope="module")
def corpus():
    return load_en_de_messages()


@pytest.fixture(scope="module")
def stats():
    return json.loads((CORPUS_DIR / "stats.json").read_text(encoding="utf-8"))


def test_splits_and_sizes(corpus, stats):
    assert set(corpus) == set(SPLITS)
    for split in SPLITS:
        assert len(corpus[split]) >= stats["splits"][split]["pairs"] > 0
    assert sum(len(corpus[s]) for s in SPLITS) >= 10_000
    single = load_en_de_messages("test")
    assert isinstance(single, datasets.Dataset) and len(single) == len(corpus["test"])


def test_records_are_non_empty_strings(corpus):
    for split in SPLITS:
        for pair in corpus[split]["translation"]:
            assert isinstance(pair["en"], str) and pair["en"].strip()
            assert isinstance(pair["de"], str) and pair["de"].strip()


def test_splits_share_no_source_and_no_package(corpus):
    sources = {s: {p["en"] for p in corpus[s]["translation"]} for s in SPLITS}
    origins = {s: {o.split("==")[0] for o in corpus[s]["origin"]} for s in SPLITS}
    for i, a in enumerate(SPLITS):
        for b in SPLITS[i + 1:]:
            assert not sources[a] & sources[b], f"{a}/{b} share English sources"
            assert not origins[a] & origins[b], f"{a}/{b} share origin packages"
    for split in SPLITS:  # de-duplicated on the English source
        assert len(sources[split]) == len(corpus[split])


def test_licences_allowed_and_consistent(corpus):
    for split in SPLITS:
        licence_of = {}
        for origin, licence in zip(corpus[split]["origin"], corpus[split]["license"]):
            assert licence in ALLOWED_LICENSES, (origin, licence)
            assert re.fullmatch(r"[\w.-]+==[\w.+-]+", origin), origin
            assert licence_of.setdefault(origin, licence) == licence


def test_placeholder_share_counts_what_the_metrics_count(corpus, stats):
    """stats.json counts the English sources with a placeholder by hf_pgen's own grammar, the one the metrics score."""
    for split in SPLITS:
        english = [p["en"] for p in corpus[split]["translation"]]
        assert stats["splits"][split]["with_placeholders"] == sum(bool(extract_placeholders(t)) for t in english)
    assert stats["placeholder_share"] > 0.10, stats["placeholder_share"]


def test_german_keeps_placeholders(corpus):
    rng = random.Random(0)
    for split in SPLITS:
        pairs = [p for p in corpus[split]["translation"] if extract_placeholders(p["en"])]
        sample = rng.sample(pairs, min(len(pairs), 1000))
        assert len(sample) >= 20, split
        kept = sum(set(extract_placeholders(p["en"])) <= set(extract_placeholders(p["de"])) for p in sample)
        assert kept / len(sample) > 0.80, (split, kept / len(sample))
