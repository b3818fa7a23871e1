"""Checks on the embedded English->German software-message corpus (hf_pgen.corpus; files in hf_pgen/en_de_messages)."""

from __future__ import annotations

import json
import random
import re

import datasets
import pytest

from hf_pgen.corpus import CORPUS_DIR, SPLITS, TRAINING_SPLITS, load_en_de_messages
from hf_pgen.placeholders import extract_placeholders
from training.data.build_corpus import PACKAGES

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
        for b in SPLITS[i + 1 :]:
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


# ---- heldout_tools: a second held-out set, of command-line tools, libraries and documentation themes ----

HELDOUT = "heldout_tools"


def test_heldout_tools_loads_alone_and_in_the_dataset_dict(corpus, stats):
    heldout = load_en_de_messages(HELDOUT)
    assert isinstance(heldout, datasets.Dataset)
    assert heldout.column_names == corpus["train"].column_names == corpus[HELDOUT].column_names
    assert len(heldout) == len(corpus[HELDOUT]) == stats["splits"][HELDOUT]["pairs"] >= 300
    assert 0.2 < stats["splits"][HELDOUT]["placeholder_share"] < 0.8  # placeholders, but not only placeholders


def test_heldout_tools_shares_no_english_source_with_any_other_split(corpus):
    heldout = {p["en"] for p in corpus[HELDOUT]["translation"]}
    others = {p["en"] for split in SPLITS if split != HELDOUT for p in corpus[split]["translation"]}
    assert heldout and not heldout & others, sorted(heldout & others)[:5]
    assert len(heldout) == len(corpus[HELDOUT])


def test_heldout_tools_licences_are_allowed_and_origins_are_the_pinned_packages(corpus, stats):
    pinned = {pkg.origin: pkg for pkg in PACKAGES if pkg.split == HELDOUT}
    assert set(corpus[HELDOUT]["origin"]) == set(pinned)  # every pinned package contributes, nothing else does
    for origin, licence in zip(corpus[HELDOUT]["origin"], corpus[HELDOUT]["license"]):
        assert licence in ALLOWED_LICENSES and licence == pinned[origin].license, (origin, licence)
    for pkg in pinned.values():  # pinned with its wheel's digest, which stats.json records from the build
        row = stats["packages"][pkg.name]
        assert pkg.sha256 and row["sha256"] == pkg.sha256 and row["split"] == HELDOUT, pkg.name
    training_origins = {pkg.name for pkg in PACKAGES if pkg.split != HELDOUT}
    assert not {pkg.name for pkg in pinned.values()} & training_origins


def test_nothing_trains_or_tunes_on_the_held_out_splits(corpus):
    """TRAINING_SPLITS is what training and tuning may read; the model card of a run_translation model names only the
    packages of the splits a run reads, not heldout_tools' (no run reads it)."""
    from training.run_details import corpus_packages

    assert set(TRAINING_SPLITS) == {"train", "validation"} and set(SPLITS) == set(corpus)
    card = corpus_packages()
    assert {row["split"] for row in card} == {"train", "validation", "test"}
    assert {row["package"] for row in card} == {pkg.name for pkg in PACKAGES if pkg.split != HELDOUT}


def test_a_rebuild_refuses_a_wheel_other_than_the_pinned_one(tmp_path):
    """Every package is pinned with its wheel's sha256: a cached or downloaded archive with other bytes stops the build."""
    from training.data.build_corpus import download

    pkg = next(p for p in PACKAGES if p.split == HELDOUT)
    wheel = tmp_path / f"{pkg.name}-{pkg.version}-py3-none-any.whl"
    wheel.write_bytes(b"not the pinned wheel")
    assert all(p.sha256 for p in PACKAGES)
    with pytest.raises(ValueError, match="not the pinned"):
        download(pkg, tmp_path)
