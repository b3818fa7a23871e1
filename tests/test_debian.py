"""Debian's index reader (training/data/debian.py) and the summarisation corpus built from it
(training/data/debian_summaries.py), on files written here in the index formats: no network."""

from __future__ import annotations

import gzip
import hashlib
import json
import lzma

import pytest

from training.data import debian
from training.data.debian import (
    DebianIndexError,
    fetch_indexes,
    parse_stanzas,
    parse_translation,
    read_index,
    source_packages,
)

# Made-up packages in the Translation-<lang> format: several paragraphs, ` .` separators, verbatim lines (two leading
# spaces), a wrapped line after a verbatim block, and a package with no long description.
TRANSLATION_EN = """\
Package: frobnicate
Description-md5: 0123456789abcdef0123456789abcdef
Description-en: tool to frobnicate widgets over HTTP/2
 Frobnicate reads widget files and rewrites
 them in place.
 .
 It understands:
   * the WDG-3 format
   * libwidget 1.2+ archives
 and nothing else.
 .
 This package holds the command-line tool.

Package: libfrob0
Description-md5: fedcba9876543210fedcba9876543210
Description-en: frobnication library (runtime)

Package: frob-doc
Description-md5: 00000000000000000000000000000001
Description-en: documentation for frobnicate
 Examples:
 .
    $ frobnicate --all
 .
"""

TRANSLATION_DE = """\
Package: libfrob0
Description-md5: fedcba9876543210fedcba9876543210
Description-de: Frobnikationsbibliothek (Laufzeit)
 Sie wird von frobnicate benutzt.
"""

PACKAGES = """\
Package: frobnicate
Version: 1.2-1
Architecture: amd64
Description-md5: 0123456789abcdef0123456789abcdef

Package: libfrob0
Source: frobnicate (1.2-1)
Version: 1.2-1+b1
Description: frobnication library (runtime)
 Sie wird benutzt.

Package: frob-doc
Source: frobnicate
"""


def test_translation_paragraphs_verbatim_and_empty_long_description():
    records = list(parse_translation(TRANSLATION_EN, "en"))
    assert [r.package for r in records] == ["frobnicate", "libfrob0", "frob-doc"]
    tool, lib, doc = records
    assert tool.md5 == "0123456789abcdef0123456789abcdef"
    assert tool.synopsis == "tool to frobnicate widgets over HTTP/2"
    assert tool.paragraphs == (
        "Frobnicate reads widget files and rewrites them in place.",
        "It understands:\n  * the WDG-3 format\n  * libwidget 1.2+ archives\nand nothing else.",
        "This package holds the command-line tool.",
    )
    assert tool.long_description.count("\n\n") == 2
    assert lib.synopsis == "frobnication library (runtime)" and lib.paragraphs == () and lib.long_description == ""
    # A trailing ` .` closes the last paragraph; it does not add an empty one.
    assert doc.paragraphs == ("Examples:", "   $ frobnicate --all")


def test_translation_other_language_and_errors():
    (record,) = parse_translation(TRANSLATION_DE, "de")
    assert record.synopsis == "Frobnikationsbibliothek (Laufzeit)"
    assert record.paragraphs == ("Sie wird von frobnicate benutzt.",)
    with pytest.raises(ValueError, match=r"line 1: the stanza has no Description-en field"):
        list(parse_translation(TRANSLATION_DE, "en"))
    with pytest.raises(ValueError, match=r"line 2: a continuation line before any field"):
        list(parse_stanzas("\n continued\n"))
    with pytest.raises(ValueError, match=r"line 2: not a 'Field: value' line"):
        list(parse_stanzas("Package: a\nno colon here\n"))


def test_source_packages():
    assert source_packages(PACKAGES) == {"frobnicate": "frobnicate", "libfrob0": "frobnicate", "frob-doc": "frobnicate"}


def _release(files: dict[str, bytes]) -> str:
    lines = [" %s %d %s" % (hashlib.sha256(data).hexdigest(), len(data), name) for name, data in files.items()]
    return "Origin: Debian\nSuite: stable\nCodename: testsuite\nVersion: 0.1\nSHA256:\n" + "\n".join(lines) + "\n"


def write_lists(folder, translation_en: str, packages: str, translation_de: str | None = None, suite="testsuite"):
    """An apt lists folder as apt leaves it: the release file, Translation-en xz-compressed, Translation-de gzipped,
    Packages plain."""
    files = {"main/i18n/Translation-en": translation_en.encode(), "main/binary-amd64/Packages": packages.encode()}
    if translation_de is not None:
        files["main/i18n/Translation-de"] = translation_de.encode()
    prefix = f"mirror.example_debian_dists_{suite}_"
    (folder / f"{prefix}InRelease").write_text(_release(files))
    (folder / f"{prefix}main_i18n_Translation-en.xz").write_bytes(lzma.compress(files["main/i18n/Translation-en"]))
    if translation_de is not None:
        (folder / f"{prefix}main_i18n_Translation-de.gz").write_bytes(gzip.compress(translation_de.encode()))
    (folder / f"{prefix}main_binary-amd64_Packages").write_bytes(files["main/binary-amd64/Packages"])
    return folder


@pytest.fixture
def lists_dir(tmp_path):
    return write_lists(tmp_path, TRANSLATION_EN, PACKAGES, TRANSLATION_DE)


def test_lists_folder_is_read_offline_and_checked(lists_dir):
    indexes = fetch_indexes(("en", "de"), lists_dir=lists_dir, suite="testsuite")
    assert read_index(indexes.translations["en"]) == TRANSLATION_EN
    assert read_index(indexes.translations["de"]) == TRANSLATION_DE
    assert source_packages(read_index(indexes.packages))["libfrob0"] == "frobnicate"
    described = indexes.describe()
    assert described["release"]["Codename"] == "testsuite"
    assert described["translations"]["en"]["sha256"] == hashlib.sha256(TRANSLATION_EN.encode()).hexdigest()
    assert described["packages"]["file"].endswith("_Packages")

    # A file that is not the release file's: refused, with what to do.
    (lists_dir / "mirror.example_debian_dists_testsuite_main_binary-amd64_Packages").write_text(PACKAGES + "\n")
    with pytest.raises(DebianIndexError, match="is not the release file's .* fetch again"):
        read_index(indexes.packages)
    with pytest.raises(DebianIndexError, match="holds no testsuite/main/i18n/Translation-fr index"):
        fetch_indexes(("en", "fr"), lists_dir=lists_dir, suite="testsuite")


def test_language_codes_checked():
    with pytest.raises(ValueError, match="not the string 'en'"):
        fetch_indexes("en")
    with pytest.raises(ValueError, match="not a Debian translation language code"):
        fetch_indexes(("english",))


def test_missing_apt_is_one_clear_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))  # no apt-get on it
    assert debian.main(["--cache_dir", str(tmp_path / "cache")]) == 1
    error = capsys.readouterr().err
    assert error.startswith("error: apt-get was not found") and error.count("\n") == 1


# ---------------------------------------------------------------------------------------------------------------------
# The summarisation corpus
# ---------------------------------------------------------------------------------------------------------------------


def _corpus_index() -> tuple[str, str]:
    """A made-up index: 12 one-package families, a family of two versioned sources with three packages each, a repeated
    long description, a near-empty one and a package missing from Packages."""
    stanzas, packages = [], []

    def add(package, source, synopsis, text, in_packages=True):
        body = "\n".join(f" {line}" for line in text.split("\n"))
        stanzas.append(
            f"Package: {package}\nDescription-md5: {hashlib.md5(package.encode()).hexdigest()}\n"
            f"Description-en: {synopsis}\n{body}\n"
        )
        if in_packages:
            packages.append(f"Package: {package}\nSource: {source} (1.0-1)\n")

    names = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima".split()
    for i, name in enumerate(names):
        add(
            f"tool-{name}",
            f"tool-{name}",
            f"utility number {i} for Zorblax files",
            f"Tool {name} converts Zorblax files of version {i}.0 into plain text\nwhile keeping every field intact.\n.\n"
            f"It is part of the made-up suite number {i}.",
        )
    for version in (11, 12):
        for arch in ("arm", "mips", "ppc"):
            add(
                f"cross-{version}-{arch}",
                f"cross-{version}",
                f"cross compiler {version} for {arch}",
                f"This is the cross compiler version {version} that targets the {arch} architecture of the suite.",
            )
    add(
        "tool-alpha-doc",
        "tool-alpha",
        "documentation for tool-alpha",
        "Tool alpha converts Zorblax files of version 0.0 into plain text\nwhile keeping every field intact.\n.\n"
        "It is part of the made-up suite number 0.",
    )  # the same long description as tool0: a repeat
    add("tiny", "tiny", "tiny package", "Too short to summarise.")
    add(
        "orphan",
        "orphan",
        "a package of another architecture",
        "This package is built for another architecture only, so it has no amd64 entry.",
        in_packages=False,
    )
    return "\n".join(stanzas), "\n".join(packages)


def test_summaries_corpus_splits_by_family_drops_and_reproduces(tmp_path):
    from training.data.debian_summaries import CorpusError, build, ensure_corpus, family_of

    translation, packages = _corpus_index()
    (tmp_path / "lists").mkdir()
    lists = write_lists(tmp_path / "lists", translation, packages)
    options = dict(lists_dir=lists, suite="testsuite", test_size=4, validation_size=3, max_per_family=2)
    stats = build(tmp_path / "a", **options)
    again = build(tmp_path / "b", **options)
    assert stats["dropped"] == {
        "no_source_package": 1,
        "near_empty_description": 1,
        "repeated_description": 1,
        **{key: value for key, value in stats["dropped"].items() if key.startswith("family_cap")},
    }
    rows = {
        split: [json.loads(line) for line in (tmp_path / "a" / f"{split}.jsonl").read_text().splitlines()]
        for split in ("train", "validation", "test")
    }
    assert len(rows["test"]) == 4 and len(rows["validation"]) == 3
    assert sum(map(len, rows.values())) + sum(stats["dropped"].values()) == stats["descriptions_read"] == 21
    families = {split: {family_of(row["source"]) for row in split_rows} for split, split_rows in rows.items()}
    assert not families["train"] & families["test"] and not families["validation"] & families["test"]
    assert not families["train"] & families["validation"]
    cross = [row for split in ("test", "validation") for row in rows[split] if row["source"].startswith("cross-")]
    assert len(cross) <= 2  # one family: at most max_per_family pairs in an evaluation split
    some = next(row for split_rows in rows.values() for row in split_rows if row["package"] == "tool-delta")
    assert some["text"] == (
        "Tool delta converts Zorblax files of version 3.0 into plain text while keeping every field intact.\n"
        "It is part of the made-up suite number 3."
    )
    assert stats["splits"]["test"]["summary_words_in_text"] > 0
    # The same index gives the same files, byte for byte, and the stats name them.
    for split in ("train", "validation", "test"):
        assert (tmp_path / "a" / f"{split}.jsonl").read_bytes() == (tmp_path / "b" / f"{split}.jsonl").read_bytes()
    assert stats["files"] == again["files"]
    assert stats["index"]["translations"]["en"]["sha256"] == hashlib.sha256(translation.encode()).hexdigest()

    assert ensure_corpus(tmp_path / "a")["test"] == tmp_path / "a" / "test.jsonl"  # reused, not rebuilt
    (tmp_path / "a" / "test.jsonl").write_text("{}\n")
    with pytest.raises(CorpusError, match="sha256 differs"):
        ensure_corpus(tmp_path / "a")
