"""training/data/ddtp.py: descriptions joined on Description-md5, synopsis and paragraph pairs, a split by source
package, and every dropped pair counted (a handful of made-up descriptions in the index's own format)."""

import pytest

from training.data.ddtp import SPLITS, build_pairs, corpus_files, pair_descriptions, split_of
from training.data.debian import Description, parse_translation

ENGLISH = """Package: vim
Description-md5: aaa
Description-en: Vi IMproved - enhanced vi editor
 Vim is an almost compatible version of the UNIX editor Vi.
 .
 Many new features have been added.

Package: vim-doc
Description-md5: bbb
Description-en: Vi IMproved - documentation
 This package contains the HTML documentation.

Package: libfoo1
Description-md5: ccc
Description-en: foo library
 First paragraph.
 .
 Second paragraph.

Package: libfoo-doc
Description-md5: ddd
Description-en: foo library - documentation
 This package contains the HTML documentation.
"""

GERMAN = """Package: vim
Description-md5: aaa
Description-de: Vi IMproved - verbesserter vi-Editor
 Vim ist eine fast kompatible Version des UNIX-Editors Vi.
 .
 Viele neue Funktionen wurden hinzugefügt.

Package: vim-doc
Description-md5: bbb
Description-de: Vi IMproved - Dokumentation
 Dieses Paket enthält die HTML-Dokumentation.

Package: libfoo1
Description-md5: ccc
Description-de: foo library
 Ein einziger Absatz.

Package: libfoo-doc
Description-md5: ddd
Description-de: foo-Bibliothek - Dokumentation
 Dieses Paket enthält die HTML-Dokumentation.

Package: gone
Description-md5: zzz
Description-de: nicht mehr da
"""


def _build(sources, max_words=100):
    english = parse_translation(ENGLISH, "en")
    german = parse_translation(GERMAN, "de")
    return build_pairs(english, german, sources, max_words=max_words)


def _pairs(splits):
    return {(r["translation"]["en"], r["translation"]["de"]): split for split in SPLITS for r in splits[split]}


def _source_in(split: str) -> str:
    return next(name for name in (f"source{i}" for i in range(1000)) if split_of(name) == split)


def test_descriptions_are_joined_on_their_md5_and_paired_by_paragraph():
    everything_in_train = {p: _source_in("train") for p in ("vim", "vim-doc", "libfoo1", "libfoo-doc")}
    splits, counts = _build(everything_in_train)
    pairs = _pairs(splits)
    assert ("Vi IMproved - enhanced vi editor", "Vi IMproved - verbesserter vi-Editor") in pairs
    assert ("Many new features have been added.", "Viele neue Funktionen wurden hinzugefügt.") in pairs
    # libfoo1: two English paragraphs, one German one: the alignment is unknown, only the synopsis pair is kept ...
    assert not any(en == "First paragraph." for en, _ in pairs)
    assert counts["paragraph_counts_differ"] == 1
    # ... and that synopsis is untranslated (German equals English): dropped
    assert counts["dropped_untranslated"] == 1 and not any(en == "foo library" for en, _ in pairs)
    # the documentation paragraph of two packages is one pair, kept once
    assert counts["dropped_repeated"] == 1
    assert counts["dropped_no_english_description"] == 1  # "gone" translates a description no longer there
    assert counts["german_descriptions"] == 5 and counts["joined_descriptions"] == 4
    records = splits["train"]
    assert {r["kind"] for r in records} == {"synopsis", "paragraph"}
    assert all(set(r) == {"translation", "package", "source", "kind"} for r in records)


def test_the_split_follows_the_source_package_and_evaluation_keeps_what_it_shares():
    test_source, train_source = _source_in("test"), _source_in("train")
    sources = {"vim": test_source, "vim-doc": test_source, "libfoo1": train_source, "libfoo-doc": train_source}
    splits, counts = _build(sources)
    pairs = _pairs(splits)
    assert pairs[("Vi IMproved - enhanced vi editor", "Vi IMproved - verbesserter vi-Editor")] == "test"
    assert pairs[("foo library - documentation", "foo-Bibliothek - Dokumentation")] == "train"
    # libfoo-doc's documentation paragraph repeats vim-doc's (test): it stays in test only
    assert pairs[("This package contains the HTML documentation.", "Dieses Paket enthält die HTML-Dokumentation.")] == (
        "test"
    )
    assert {r["source"] for r in splits["test"]} == {test_source}
    assert split_of("vim") == split_of("vim")  # a fixed hash: the same split on every machine


def test_long_texts_are_dropped_and_counted():
    splits, counts = _build({}, max_words=5)
    assert counts["dropped_too_long"] > 0
    assert all(
        len(r["translation"][lang].split()) <= 5 for split in SPLITS for r in splits[split] for lang in "en de".split()
    )


def test_a_corpus_not_built_says_how_to_build_it(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"run `python -m training.data.ddtp`"):
        corpus_files(tmp_path)
    for split in SPLITS:
        (tmp_path / f"{split}.jsonl.gz").write_bytes(b"")
    assert corpus_files(tmp_path)["test"] == tmp_path / "test.jsonl.gz"


def test_a_description_kind_is_all_a_pair_knows_of_its_origin():
    description = Description("p", "m", "a synopsis", ("one", "two"))
    assert pair_descriptions(description, Description("p", "m", "eine Kurzbeschreibung", ("eins", "zwei"))) == [
        ("synopsis", "a synopsis", "eine Kurzbeschreibung"),
        ("paragraph", "one", "eins"),
        ("paragraph", "two", "zwei"),
    ]
