"""Debian's index reader (training/data/debian.py) on files written here in the index formats: no network."""

from __future__ import annotations

import gzip
import hashlib
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


@pytest.fixture
def lists_dir(tmp_path):
    """An apt lists folder as apt leaves it: the release file, one index xz-compressed, one gzip, one plain."""
    files = {
        "main/i18n/Translation-en": TRANSLATION_EN.encode(),
        "main/i18n/Translation-de": TRANSLATION_DE.encode(),
        "main/binary-amd64/Packages": PACKAGES.encode(),
    }
    prefix = "mirror.example_debian_dists_testsuite_"
    (tmp_path / f"{prefix}InRelease").write_text(_release(files))
    (tmp_path / f"{prefix}main_i18n_Translation-en.xz").write_bytes(lzma.compress(files["main/i18n/Translation-en"]))
    (tmp_path / f"{prefix}main_i18n_Translation-de.gz").write_bytes(gzip.compress(files["main/i18n/Translation-de"]))
    (tmp_path / f"{prefix}main_binary-amd64_Packages").write_bytes(files["main/binary-amd64/Packages"])
    return tmp_path


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
