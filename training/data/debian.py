"""Debian's package-description indexes: one fetch for every corpus built from them, and their parsers.

Debian's archive publishes, per suite and component, a `Translation-<lang>` index (each binary package's synopsis and
long description, in that language) and a `Packages` index per architecture (which source package each binary
package was built from). apt fetches them on request; this module asks it to, into a private lists folder, so the
machine's own apt state (`/var/lib/apt/lists`, its lock, its sources) is left alone:

>>> from training.data.debian import fetch_indexes, read_index, parse_translation, source_packages
>>> indexes = fetch_indexes(languages=("en", "de"))          # apt-get update into ~/.cache/hf_pgen/debian
>>> indexes.translations["en"].sha256                        # of the uncompressed file, checked against InRelease
>>> records = list(parse_translation(read_index(indexes.translations["en"]), "en"))
>>> sources = source_packages(read_index(indexes.packages))  # binary package -> source package

The fetch uses its own sources list (one line: mirror, suite, component, signed by Debian's archive keyring), so a
host running another release or other mirrors fetches the same index. apt checks the `InRelease` signature and the
files' hashes; `read_index` checks the sha256 of the uncompressed text again against the `InRelease` beside it, so a
lists folder copied from elsewhere (`lists_dir=`, for offline reruns) is held to the same standard. A corpus built from
these indexes names the files and their sha256 (`DebianIndexes.describe`): the same index gives the same corpus.

The texts carry their packages' licences (each comes from its package's `debian/control`): corpora built from them are
built on the user's machine and never committed.

`python -m training.data.debian --languages en de` fetches and prints the files and their sha256.
"""

from __future__ import annotations

import argparse
import bz2
import dataclasses
import gzip
import hashlib
import json
import lzma
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

__all__ = [
    "DebianIndexError",
    "Description",
    "IndexFile",
    "DebianIndexes",
    "default_cache_dir",
    "fetch_indexes",
    "read_index",
    "parse_translation",
    "parse_stanzas",
    "source_packages",
]

DEFAULT_MIRROR = "http://deb.debian.org/debian"
DEFAULT_SUITE = "bookworm"
DEFAULT_COMPONENT = "main"
# Arch-all packages are listed in every architecture's Packages index; pinning one keeps the package -> source map the
# same on any host.
DEFAULT_ARCHITECTURE = "amd64"
DEFAULT_KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
APT_HELPER = "/usr/lib/apt/apt-helper"


class DebianIndexError(RuntimeError):
    """The indexes cannot be fetched, found or trusted. The message is one line that says what to do."""


# ---------------------------------------------------------------------------------------------------------------------
# Fetching
# ---------------------------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class IndexFile:
    """One index as apt stored it.

    Attributes:
        name (`str`): its name in the release file, e.g. `"main/i18n/Translation-en"`.
        path (`Path`): the file in the lists folder (apt may store it compressed: `.lz4`, `.xz`, `.gz`, ...).
        sha256 (`str`): the release file's sha256 of the uncompressed index; `read_index` checks the text against it.
        size (`int`): the uncompressed size in bytes, from the release file.
    """

    name: str
    path: Path
    sha256: str
    size: int

    def describe(self) -> dict:
        return {"name": self.name, "file": self.path.name, "sha256": self.sha256, "bytes": self.size}


@dataclasses.dataclass(frozen=True)
class DebianIndexes:
    """What `fetch_indexes` found.

    Attributes:
        lists_dir (`Path`): the lists folder holding the files (pass it as `lists_dir=` to rerun offline).
        release (`dict[str, str]`): `Origin`, `Suite`, `Codename`, `Version` and `Date` of the release file.
        release_file (`Path`): the `InRelease` file the hashes come from.
        translations (`dict[str, IndexFile]`): one `Translation-<lang>` index per requested language.
        packages (`IndexFile`): the `Packages` index of the pinned architecture (binary package -> source package).
    """

    lists_dir: Path
    release: dict
    release_file: Path
    translations: dict
    packages: IndexFile

    def describe(self) -> dict:
        """The release and every file with its sha256, for a corpus' stats: enough to tell whether two builds read the
        same index."""
        return {
            "release": dict(self.release),
            "release_file": self.release_file.name,
            "release_sha256": _sha256_file(self.release_file),
            "translations": {lang: index.describe() for lang, index in self.translations.items()},
            "packages": self.packages.describe(),
        }


def default_cache_dir() -> Path:
    """`$HF_PGEN_CACHE/debian`, else `$XDG_CACHE_HOME/hf_pgen/debian`, else `~/.cache/hf_pgen/debian`."""
    if os.environ.get("HF_PGEN_CACHE"):
        return Path(os.environ["HF_PGEN_CACHE"]) / "debian"
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "hf_pgen" / "debian"


def _check_languages(languages: Iterable[str]) -> tuple[str, ...]:
    if isinstance(languages, str):
        raise ValueError(
            f"languages must be a sequence of language codes such as ('en', 'de'), not the string {languages!r}."
        )
    languages = tuple(languages)
    if not languages:
        raise ValueError(
            f"languages must be a non-empty sequence of language codes such as ('en', 'de'), not {languages!r}."
        )
    for lang in languages:
        if not re.fullmatch(r"[a-z]{2,3}(?:_[A-Z]{2})?", lang):
            raise ValueError(f"{lang!r} is not a Debian translation language code (like 'en', 'de' or 'pt_BR').")
    return languages


def _apt_update(
    lists_dir: Path,
    languages: tuple[str, ...],
    mirror: str,
    suite: str,
    component: str,
    architecture: str,
    keyring: str,
) -> None:
    """`apt-get update` with a private sources list, lists folder and cache; raise DebianIndexError on failure."""
    apt_get = shutil.which("apt-get")
    if apt_get is None:
        raise DebianIndexError(
            "apt-get was not found: fetching Debian's indexes needs Debian's apt; on another system, copy an apt lists "
            "folder holding them and pass it as the lists folder (lists_dir=, --lists_dir)."
        )
    if not Path(keyring).is_file():
        raise DebianIndexError(
            f"Debian's archive keyring {keyring} is missing: install it (`apt-get install debian-archive-keyring`) "
            "or point at another keyring."
        )
    root = lists_dir.parent
    (lists_dir / "partial").mkdir(parents=True, exist_ok=True)
    (root / "apt-cache").mkdir(parents=True, exist_ok=True)
    (root / "sources.list.d").mkdir(parents=True, exist_ok=True)
    sources = root / "sources.list"
    sources.write_text(f"deb [signed-by={keyring}] {mirror} {suite} {component}\n", encoding="utf-8")
    command = [
        apt_get,
        "update",
        "-q",
        "-o", f"Dir::State::Lists={lists_dir}",
        "-o", f"Dir::Cache={root / 'apt-cache'}",
        "-o", f"Dir::Etc::SourceList={sources}",
        "-o", f"Dir::Etc::SourceParts={root / 'sources.list.d'}",
        "-o", f"Acquire::Languages={','.join(languages)}",
        "-o", f"APT::Architecture={architecture}",
        "-o", f"APT::Architectures={architecture}",
        # Keep the index files apt-get would otherwise skip off, and never take the machine's apt lock.
        "-o", "Acquire::IndexTargets::deb::DEP-11::DefaultEnabled=false",
        "-o", "Acquire::IndexTargets::deb::Contents-deb::DefaultEnabled=false",
        "-o", "Debug::NoLocking=1",
    ]  # fmt: skip
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=900)
    except subprocess.TimeoutExpired as error:
        raise DebianIndexError(
            f"apt-get update did not finish in {error.timeout:.0f} s: is {mirror} reachable?"
        ) from error
    problems = [line for line in (result.stderr + result.stdout).splitlines() if line.startswith(("E:", "W:", "Err:"))]
    # apt-get update exits 0 when only some files failed; the files themselves are checked afterwards.
    failed = [line for line in problems if line.startswith(("E:", "Err:")) or "Failed to fetch" in line]
    if result.returncode != 0 or failed:
        detail = (failed or problems or [f"exit status {result.returncode}"])[0]
        raise DebianIndexError(f"apt-get update could not fetch Debian's indexes from {mirror} ({suite}): {detail}")


def _lists_prefix(mirror: str) -> str:
    """apt's file-name prefix for a mirror: the URI without its scheme, `/` turned into `_`."""
    uri = re.sub(r"^[a-z+]+://", "", mirror.rstrip("/"))
    return uri.replace("/", "_")


def _find_one(lists_dir: Path, prefix: str, stem: str, allow_missing: bool = False) -> Path | None:
    """The file `<prefix>_dists_<stem>[.compression]` in the lists folder; any mirror prefix when the pinned one is
    absent (a folder copied from another machine), but never two candidates."""
    for pattern in (f"{prefix}_dists_{stem}", f"*_dists_{stem}"):
        found = sorted(
            path
            for path in lists_dir.glob(pattern + "*")
            if path.is_file()
            and re.fullmatch(re.escape(stem) + r"(\.(lz4|gz|xz|bz2|zst|lzma))?", path.name.split("_dists_", 1)[1])
        )
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            raise DebianIndexError(
                f"{lists_dir} holds {len(found)} candidates for {stem} ({', '.join(p.name for p in found)}): "
                "pass the mirror they came from, or a lists folder with one copy."
            )
    if allow_missing:
        return None
    raise DebianIndexError(
        f"{lists_dir} holds no {stem.replace('_', '/')} index: fetch it (leave the lists folder unset) or point at a "
        "lists folder that apt filled with it."
    )


def _parse_release(path: Path) -> tuple[dict, dict]:
    """The release fields and `{name: (sha256, size)}` of its SHA256 section (the signature around it is ignored: apt
    checked it when it fetched the file)."""
    fields: dict[str, str] = {}
    hashes: dict[str, tuple[str, int]] = {}
    section = None
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("-----BEGIN PGP SIGNATURE"):
            break
        if line.startswith(" "):
            if section == "SHA256":
                parts = line.split()
                if len(parts) == 3:
                    hashes[parts[2]] = (parts[0], int(parts[1]))
            continue
        key, sep, value = line.partition(":")
        if sep:
            section = key
            if value.strip():
                fields[key] = value.strip()
    if not hashes:
        raise DebianIndexError(f"{path} has no SHA256 section: it is not a Debian release file.")
    keep = ("Origin", "Suite", "Codename", "Version", "Date")
    return {key: fields[key] for key in keep if key in fields}, hashes


def _locate(
    lists_dir: Path, languages: tuple[str, ...], mirror: str, suite: str, component: str, architecture: str
) -> DebianIndexes:
    prefix = _lists_prefix(mirror)
    release_file = _find_one(lists_dir, prefix, f"{suite}_InRelease")
    release, hashes = _parse_release(release_file)

    def index(name: str) -> IndexFile:
        path = _find_one(lists_dir, prefix, f"{suite}_{name.replace('/', '_')}")
        if name not in hashes:
            raise DebianIndexError(f"{release_file.name} lists no sha256 for {name}: the file cannot be checked.")
        sha, size = hashes[name]
        return IndexFile(name=name, path=path, sha256=sha, size=size)

    translations = {lang: index(f"{component}/i18n/Translation-{lang}") for lang in languages}
    packages = index(f"{component}/binary-{architecture}/Packages")
    return DebianIndexes(lists_dir, release, release_file, translations, packages)


def fetch_indexes(
    languages: Iterable[str] = ("en",),
    cache_dir: str | os.PathLike | None = None,
    lists_dir: str | os.PathLike | None = None,
    mirror: str = DEFAULT_MIRROR,
    suite: str = DEFAULT_SUITE,
    component: str = DEFAULT_COMPONENT,
    architecture: str = DEFAULT_ARCHITECTURE,
    keyring: str = DEFAULT_KEYRING,
    refresh: bool = False,
) -> DebianIndexes:
    """Fetch (or find) the `Translation-<lang>` indexes and the `Packages` index of one Debian suite and component.

    Args:
        languages (`Iterable[str]`, defaults to `("en",)`):
            The translation languages, e.g. `("en",)` or `("en", "de")`.
        cache_dir (`str` or `os.PathLike`, *optional*):
            Where apt's private state goes (`<cache_dir>/lists`, its sources list and cache); defaults to
            `default_cache_dir()`. A cache that already holds every file is used without a network call.
        lists_dir (`str` or `os.PathLike`, *optional*):
            An apt lists folder that already holds the files (one filled by this function, or `/var/lib/apt/lists`
            after an `apt-get update` with these languages): it is read, never updated. For offline reruns.
        mirror, suite, component, architecture (`str`):
            Which index: by default `http://deb.debian.org/debian bookworm main`, `amd64` for the Packages index.
        keyring (`str`):
            The keyring apt checks the release file with.
        refresh (`bool`, defaults to `False`):
            Run `apt-get update` even when the cache holds every file (a newer point release changes the index and so
            the corpus built from it).

    Returns:
        `DebianIndexes`: the lists folder, the release's fields, and one `IndexFile` per index.

    Raises:
        `DebianIndexError`: apt is missing, the mirror cannot be reached, or a file is absent from the lists folder or
            the release file. The message is one line.
        `ValueError`: a language is not a language code.
    """
    languages = _check_languages(languages)
    if lists_dir is not None:
        lists_dir = Path(lists_dir)
        if not lists_dir.is_dir():
            raise DebianIndexError(f"The lists folder {lists_dir} does not exist.")
        return _locate(lists_dir, languages, mirror, suite, component, architecture)
    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    lists = root / "lists"
    if not refresh and lists.is_dir():
        try:
            return _locate(lists, languages, mirror, suite, component, architecture)
        except DebianIndexError:
            pass  # something is missing: fetch
    _apt_update(lists, languages, mirror, suite, component, architecture, keyring)
    return _locate(lists, languages, mirror, suite, component, architecture)


# ---------------------------------------------------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------------------------------------------------


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _decompress(path: Path) -> bytes:
    suffix = path.suffix
    openers = {".gz": gzip.open, ".xz": lzma.open, ".lzma": lzma.open, ".bz2": bz2.open}
    if suffix in openers:
        with openers[suffix](path, "rb") as handle:
            return handle.read()
    if suffix not in (".lz4", ".zst"):
        return path.read_bytes()
    # The standard library reads neither lz4 nor zstd; apt's own helper reads whatever apt wrote.
    if not os.access(APT_HELPER, os.X_OK):
        raise DebianIndexError(
            f"{path.name} is {suffix[1:]}-compressed and {APT_HELPER} (from apt) is not there to read it."
        )
    result = subprocess.run([APT_HELPER, "cat-file", str(path)], capture_output=True)
    if result.returncode != 0:
        message = result.stderr.decode("utf-8", "replace").strip().splitlines()
        raise DebianIndexError(
            f"{APT_HELPER} cat-file {path.name} failed: {message[-1] if message else result.returncode}"
        )
    return result.stdout


def read_index(index: IndexFile) -> str:
    """The uncompressed text of an index, after checking its sha256 against the release file.

    Raises:
        `DebianIndexError`: the text's sha256 or size is not the release file's (a corrupt or foreign file).
    """
    data = _decompress(index.path)
    digest = hashlib.sha256(data).hexdigest()
    if digest != index.sha256 or len(data) != index.size:
        raise DebianIndexError(
            f"{index.path.name}: sha256 {digest} ({len(data)} bytes) is not the release file's {index.sha256} "
            f"({index.size} bytes) for {index.name}: delete the lists folder and fetch again."
        )
    return data.decode("utf-8")


# ---------------------------------------------------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Description:
    """One package's description from a `Translation-<lang>` index.

    Attributes:
        package (`str`): the binary package.
        md5 (`str`): `Description-md5`, the md5 of the English description (the same in every language's index).
        synopsis (`str`): the short description (the first line of the `Description-<lang>` field).
        paragraphs (`tuple[str, ...]`): the long description's paragraphs, empty when it has none. Wrapped lines are
            joined with single spaces; a verbatim line (two or more leading spaces in the index: lists, code) keeps
            its own line and its indentation beyond the field's one space.
    """

    package: str
    md5: str
    synopsis: str
    paragraphs: tuple[str, ...]

    @property
    def long_description(self) -> str:
        """The paragraphs joined by blank lines (`""` when there is no long description)."""
        return "\n\n".join(self.paragraphs)


def parse_stanzas(text: str, source: str = "<index>") -> Iterator[tuple[int, dict[str, list[str]]]]:
    """Split a Debian control-format text into stanzas.

    Args:
        text (`str`): the index text (stanzas separated by blank lines).
        source (`str`): a name for error messages.

    Returns:
        An iterator of `(line_number, fields)`: the stanza's first line (1-based) and, per field, its lines: the text
        after `Field:` first (stripped), then each continuation line without its first space.

    Raises:
        `ValueError`: a continuation line before any field, or a line that is neither `Field: value` nor a
            continuation; the message names the line.
    """
    fields: dict[str, list[str]] = {}
    start = 0
    current: list[str] | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            if fields:
                yield start, fields
            fields, current = {}, None
            continue
        if line[0] in " \t":
            if current is None:
                raise ValueError(f"{source}, line {number}: a continuation line before any field: {line[:60]!r}")
            current.append(line[1:])
            continue
        name, sep, value = line.partition(":")
        if not sep or not name or " " in name:
            raise ValueError(f"{source}, line {number}: not a 'Field: value' line: {line[:60]!r}")
        if not fields:
            start = number
        current = fields[name] = [value.strip()]
    if fields:
        yield start, fields


def _paragraphs(lines: list[str]) -> tuple[str, ...]:
    """The long description's paragraphs from its continuation lines (each without the field's leading space)."""
    paragraphs: list[str] = []
    parts: list[str] = []  # the paragraph being read: wrapped text and verbatim lines, in order
    wrapped: list[str] = []

    def close_wrapped() -> None:
        if wrapped:
            parts.append(" ".join(wrapped))
            wrapped.clear()

    for line in lines:
        if line.rstrip() == ".":
            close_wrapped()
            if parts:
                paragraphs.append("\n".join(parts))
            parts = []
        elif line.startswith((" ", "\t")):
            close_wrapped()
            parts.append(line.rstrip())
        else:
            wrapped.append(line.strip())
    close_wrapped()
    if parts:
        paragraphs.append("\n".join(parts))
    return tuple(paragraphs)


def parse_translation(text: str, language: str, source: str | None = None) -> Iterator[Description]:
    """Parse a `Translation-<lang>` index.

    Args:
        text (`str`): the index text (`read_index`).
        language (`str`): its language: the field read is `Description-<language>`.
        source (`str`, *optional*): a name for error messages (defaults to `Translation-<language>`).

    Returns:
        An iterator of `Description`, in the index's order.

    Raises:
        `ValueError`: a stanza without `Package:`, `Description-md5:` or `Description-<language>:`, or a malformed
            line; the message names the line.
    """
    source = source or f"Translation-{language}"
    field = f"Description-{language}"
    for number, fields in parse_stanzas(text, source):
        missing = [name for name in ("Package", "Description-md5", field) if name not in fields]
        if missing:
            raise ValueError(
                f"{source}, line {number}: the stanza has no {', '.join(missing)} field (it has {', '.join(fields)})."
            )
        lines = fields[field]
        yield Description(
            package=fields["Package"][0],
            md5=fields["Description-md5"][0],
            synopsis=lines[0],
            paragraphs=_paragraphs(lines[1:]),
        )


def source_packages(text: str, source: str = "Packages") -> dict[str, str]:
    """Map each binary package of a `Packages` index to its source package.

    Args:
        text (`str`): the index text (`read_index`).
        source (`str`): a name for error messages.

    Returns:
        `dict[str, str]`: binary package -> source package (`Source:` without its version; the package itself when the
        field is absent, as Debian policy says).
    """
    mapping: dict[str, str] = {}
    for number, fields in parse_stanzas(text, source):
        if "Package" not in fields:
            raise ValueError(f"{source}, line {number}: the stanza has no Package field.")
        package = fields["Package"][0]
        mapping[package] = fields["Source"][0].split()[0] if "Source" in fields else package
    return mapping


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Fetch Debian's translation and Packages indexes; print their sha256.")
    parser.add_argument("--languages", nargs="+", default=["en"], help="translation languages (default: en)")
    parser.add_argument(
        "--cache_dir", type=Path, default=None, help=f"apt's private state (default: {default_cache_dir()})"
    )
    parser.add_argument("--lists_dir", type=Path, default=None, help="read an already filled apt lists folder, offline")
    parser.add_argument("--suite", default=DEFAULT_SUITE)
    parser.add_argument("--mirror", default=DEFAULT_MIRROR)
    parser.add_argument("--refresh", action="store_true", help="run apt-get update even when the cache is complete")
    args = parser.parse_args(argv)
    try:
        indexes = fetch_indexes(
            args.languages, args.cache_dir, args.lists_dir, mirror=args.mirror, suite=args.suite, refresh=args.refresh
        )
        for index in [*indexes.translations.values(), indexes.packages]:
            read_index(index)
    except (DebianIndexError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(json.dumps({"lists_dir": str(indexes.lists_dir), **indexes.describe()}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
