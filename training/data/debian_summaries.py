"""The Debian package-description summarisation corpus: each package's long description -> its synopsis.

Built on the user's machine from Debian's `Translation-en` index (the texts carry their packages' licences, so none is
committed), with `Packages` to tell each binary package's source package:

    python -m training.data.debian_summaries --out outputs/summarise/data      # fetches the index (apt) if needed

>>> from training.data.debian_summaries import ensure_corpus
>>> files = ensure_corpus("outputs/summarise/data")    # builds when the folder is empty, else checks and reuses it
>>> files["test"]                                       # JSON lines: {"text", "summary", "package", "source"}

Steps:

1. read every description of the index (`training.data.debian`), in the index's order;
2. drop what cannot make a pair, each counted in `stats.json`: packages missing from the `Packages` index (no
   source package to split by), long descriptions of fewer than `min_words` words (near-empty: nothing to summarise),
   and every repeat of a long description already seen (identical texts with different synopses, `-dev` / `-doc`
   siblings say, cannot be told apart; the first package in index order keeps it);
3. split by *family*: the source package with every run of digits made one mark (`gcc-12-cross` and `gcc-11-cross`,
   `llvm-toolchain-15` and `-16` are one family), so no family, nor two versions of one, spans two splits. Families
   are ordered by the sha256 of their name (not by the index, so a package's split does not move when others come
   or go) and fill the test split, then the validation split, up to a fixed size each; the rest is training data;
4. in the test and validation splits, at most `max_per_family` pairs of one family (the first in index order): a
   family of hundreds of near-identical packages (cross compilers) would otherwise weigh hundreds of times in the
   scores. The rest of such a family is dropped (counted), never moved to another split;
5. write `train.jsonl`, `validation.jsonl`, `test.jsonl` and `stats.json`: counts, lengths, the share of synopsis
   words found in their description, what was dropped and why, and the index files with their sha256 (the same
   index gives the same files, byte for byte: `stats.json` holds their sha256 too).

The text keeps the description's paragraphs, one per line (a verbatim line, a list item, on a line of its own); the
summary is the synopsis as written.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import statistics
import sys
from collections import Counter, defaultdict
from pathlib import Path

from training.data.debian import (
    DEFAULT_MIRROR,
    DEFAULT_SUITE,
    DebianIndexError,
    fetch_indexes,
    parse_translation,
    read_index,
    source_packages,
)

__all__ = ["SPLITS", "build", "ensure_corpus", "family_of", "copy_share", "CorpusError"]

SPLITS = ("train", "validation", "test")
# What fixes the splits: changing any of these gives another corpus (stats.json records them).
TEST_SIZE, VALIDATION_SIZE = 1000, 500
MAX_PER_FAMILY = 3
MIN_WORDS = 8
SPLIT_SALT = "hf_pgen debian summaries v1"
_WORDS = re.compile(r"\w[\w.+\-]*\w\+*|\w\+*")


class CorpusError(RuntimeError):
    """The corpus folder holds something else than this builder writes (or a part is missing)."""


def family_of(source: str) -> str:
    """A source package's family: digit runs made one mark, so versions of one package are one family.

    >>> family_of("gcc-12-cross"), family_of("llvm-toolchain-16"), family_of("python3-defaults")
    ('gcc-#-cross', 'llvm-toolchain-#', 'python#-defaults')
    """
    return re.sub(r"\d+", "#", source)


def words(text: str) -> list[str]:
    """Lower-cased words (letters/digits, inner `.`, `+`, `-` kept, trailing `+` too: `c++`, `utf-8`, `1.2.3`)."""
    return _WORDS.findall(text.lower())


def copy_share(pairs: list[tuple[str, str]]) -> float:
    """The share of summary words (lower-cased, counted with repeats) that also occur in their text."""
    found = total = 0
    for text, summary in pairs:
        seen = set(words(text))
        summary_words = words(summary)
        total += len(summary_words)
        found += sum(word in seen for word in summary_words)
    return found / total if total else float("nan")


def _flatten(paragraphs: tuple[str, ...]) -> str:
    """One line per paragraph; a paragraph's verbatim lines (lists, code) stay lines of their own, spaces squeezed."""
    lines = [" ".join(line.split()) for paragraph in paragraphs for line in paragraph.split("\n")]
    return "\n".join(line for line in lines if line)


def _rank(family: str) -> str:
    return hashlib.sha256(f"{SPLIT_SALT}:{family}".encode()).hexdigest()


def _lengths(values: list[int]) -> dict:
    if not values:
        return {"median": None, "mean": None, "p95": None, "max": None}
    ordered = sorted(values)
    return {
        "median": statistics.median(ordered),
        "mean": round(statistics.fmean(ordered), 1),
        "p95": ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))],
        "max": ordered[-1],
    }


def build(
    out: str | Path,
    cache_dir: str | Path | None = None,
    lists_dir: str | Path | None = None,
    suite: str = DEFAULT_SUITE,
    mirror: str = DEFAULT_MIRROR,
    test_size: int = TEST_SIZE,
    validation_size: int = VALIDATION_SIZE,
    max_per_family: int = MAX_PER_FAMILY,
    min_words: int = MIN_WORDS,
) -> dict:
    """Build the corpus into `out` from the Debian indexes (fetched into `cache_dir`, or read from `lists_dir`).

    Args:
        out (`str` or `Path`): the folder for the three JSON-lines files and `stats.json`.
        cache_dir, lists_dir, suite, mirror: where the indexes are fetched to, or an apt lists folder to read
            offline, and which suite (`training.data.debian.fetch_indexes`).
        test_size, validation_size (`int`): pairs in the test and validation splits (whole families are added while
            they fit; a family's pairs beyond `max_per_family` are dropped first).
        max_per_family (`int`): most pairs of one family in the test and validation splits.
        min_words (`int`): long descriptions of fewer words are dropped as near-empty.

    Returns:
        `dict`: what `stats.json` holds.

    Raises:
        `DebianIndexError`: the index cannot be fetched or checked (one line, say what to do).
    """
    indexes = fetch_indexes(("en",), cache_dir=cache_dir, lists_dir=lists_dir, mirror=mirror, suite=suite)
    sources = source_packages(read_index(indexes.packages))
    dropped: Counter = Counter()
    seen_texts: set[str] = set()
    by_family: dict[str, list[dict]] = defaultdict(list)
    read = 0
    for description in parse_translation(read_index(indexes.translations["en"]), "en"):
        read += 1
        source = sources.get(description.package)
        text, summary = _flatten(description.paragraphs), " ".join(description.synopsis.split())
        if source is None:
            dropped["no_source_package"] += 1
        elif not summary:
            dropped["empty_synopsis"] += 1
        elif len(text.split()) < min_words:
            dropped["near_empty_description"] += 1
        elif text in seen_texts:
            dropped["repeated_description"] += 1
        else:
            seen_texts.add(text)
            by_family[family_of(source)].append(
                {"text": text, "summary": summary, "package": description.package, "source": source}
            )

    splits: dict[str, list[dict]] = {name: [] for name in SPLITS}
    families: dict[str, int] = Counter()
    sizes = {"test": test_size, "validation": validation_size}
    for family in sorted(by_family, key=_rank):
        pairs = by_family[family]
        target = "train"
        for name in ("test", "validation"):
            kept = pairs[:max_per_family]
            if len(splits[name]) + len(kept) <= sizes[name]:
                target = name
                dropped[f"family_cap_{name}"] += len(pairs) - len(kept)
                pairs = kept
                break
        splits[target].extend(pairs)
        families[target] += 1
    # The index's order within each split (families were visited in hash order).
    order = {id(pair): n for n, pair in enumerate(pair for pairs in by_family.values() for pair in pairs)}
    for name in SPLITS:
        splits[name].sort(key=lambda pair: order[id(pair)])

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    files = {}
    for name in SPLITS:
        data = "".join(json.dumps(pair, ensure_ascii=False) + "\n" for pair in splits[name]).encode("utf-8")
        (out / f"{name}.jsonl").write_bytes(data)
        files[name] = {"file": f"{name}.jsonl", "sha256": hashlib.sha256(data).hexdigest(), "pairs": len(splits[name])}
    stats = {
        "corpus": "Debian package descriptions: long description (text) -> synopsis (summary)",
        "index": indexes.describe(),
        "parameters": {
            "test_size": test_size,
            "validation_size": validation_size,
            "max_per_family": max_per_family,
            "min_words": min_words,
            "split_salt": SPLIT_SALT,
        },
        "descriptions_read": read,
        "dropped": dict(sorted(dropped.items())),
        "files": files,
        "splits": {
            name: {
                "pairs": len(pairs),
                "families": families[name],
                "source_packages": len({pair["source"] for pair in pairs}),
                "text_words": _lengths([len(pair["text"].split()) for pair in pairs]),
                "summary_words": _lengths([len(pair["summary"].split()) for pair in pairs]),
                "summary_words_in_text": round(copy_share([(p["text"], p["summary"]) for p in pairs]), 4),
            }
            for name, pairs in splits.items()
        },
        "licence": "Each text is its package's own (from its debian/control): build on your machine, do not "
        "redistribute the corpus.",
    }
    (out / "stats.json").write_text(json.dumps(stats, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return stats


def ensure_corpus(out: str | Path, **build_args) -> dict[str, Path]:
    """The corpus' split files, built first when `out` holds no `stats.json`; an existing corpus is checked against
    its `stats.json` (every file there, with its sha256) and reused.

    Returns:
        `{split: path}` of the JSON-lines files.

    Raises:
        `CorpusError`: a file is missing or is not the one `stats.json` names (delete the folder to rebuild).
        `DebianIndexError`: building needs the index and it cannot be fetched.
    """
    out = Path(out)
    stats_path = out / "stats.json"
    if not stats_path.is_file():
        build(out, **build_args)
    stats = json.loads(stats_path.read_text(encoding="utf-8"))
    paths = {}
    for name in SPLITS:
        entry = stats.get("files", {}).get(name)
        path = out / f"{name}.jsonl"
        if entry is None or not path.is_file():
            raise CorpusError(f"{out} has no {name} split that its stats.json names: delete the folder to rebuild it.")
        if hashlib.sha256(path.read_bytes()).hexdigest() != entry["sha256"]:
            raise CorpusError(f"{path} is not the file {stats_path} names (sha256 differs): delete {out} to rebuild.")
        paths[name] = path
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build the Debian package-description summarisation corpus.")
    parser.add_argument("--out", type=Path, default=Path("outputs/summarise/data"), help="the corpus folder")
    parser.add_argument("--cache_dir", type=Path, help="where apt fetches the index (default: ~/.cache/hf_pgen/debian)")
    parser.add_argument("--lists_dir", type=Path, help="an apt lists folder that holds the index: read it offline")
    parser.add_argument("--test_size", type=int, default=TEST_SIZE)
    parser.add_argument("--validation_size", type=int, default=VALIDATION_SIZE)
    parser.add_argument("--max_per_family", type=int, default=MAX_PER_FAMILY)
    parser.add_argument("--min_words", type=int, default=MIN_WORDS)
    args = parser.parse_args(argv)
    try:
        stats = build(
            args.out,
            cache_dir=args.cache_dir,
            lists_dir=args.lists_dir,
            test_size=args.test_size,
            validation_size=args.validation_size,
            max_per_family=args.max_per_family,
            min_words=args.min_words,
        )
    except DebianIndexError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(json.dumps({name: entry["pairs"] for name, entry in stats["splits"].items()}), "->", args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
