#!/usr/bin/env python
"""The DDTP English-German corpus: Debian's package descriptions and their German translations, as sentence pairs.

The Debian Description Translation Project translates package descriptions; apt's `Translation-de` index holds about
13,900 of them, each tagged with the `Description-md5` of the English description it translates (the same md5 marks
that description in `Translation-en`). Joining the two indexes on it gives, per package:

- the synopsis pair (the one-line short descriptions);
- the paragraph pairs of the long descriptions, wherever both have the same number of paragraphs (the translators
  keep the paragraphs; where the counts differ the alignment is unknown and the package gives its synopsis only).

Pairs are split by Debian source package (binary packages of one source share wording), with a hash of the source
name, so that the split is the same on every machine and no source package is on both sides. Then:

- pairs whose English text or German text is empty, or whose German equals the English (untranslated), are dropped;
- pairs longer than `max_words` words on either side are dropped (the main job's models read 128 tokens);
- repeated pairs are kept once, and an English text of an evaluation pair never stands in a training pair (the
  evaluation split's copy wins: test over validation over train).

Every drop is counted in `stats.json`, beside the sha256 of each index the corpus was built from (the same index gives
the same corpus). The descriptions carry their packages' licences (each comes from its package's `debian/control`):
the corpus is built on the user's machine, never committed.

    python -m training.data.ddtp                     # fetch (training/data/debian.py) and build into the cache
    python -m training.data.ddtp --output_dir DIR --lists_dir /var/lib/apt/lists   # offline, from apt's own lists

>>> from training.data.ddtp import build_corpus, corpus_files
>>> stats = build_corpus()                          # writes train/validation/test.jsonl.gz and stats.json
>>> corpus_files()["test"]                          # a --test_file for run_translation
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import statistics
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from training.data.debian import Description, default_cache_dir

__all__ = [
    "SPLITS",
    "default_output_dir",
    "corpus_files",
    "pair_descriptions",
    "split_of",
    "build_pairs",
    "build_corpus",
]

SPLITS = ("train", "validation", "test")
# Share of source packages per evaluation split (of 100 hash buckets): about 280 source packages each.
EVALUATION_BUCKETS = {"test": range(0, 3), "validation": range(3, 6)}
MAX_WORDS = 100


def default_output_dir() -> Path:
    """`<the Debian cache's parent>/ddtp-en-de`, e.g. `~/.cache/hf_pgen/ddtp-en-de`."""
    return default_cache_dir().parent / "ddtp-en-de"


def corpus_files(output_dir: str | os.PathLike | None = None) -> dict[str, Path]:
    """The built corpus' file per split (JSON lines `{"translation": {"en", "de"}, "package", "source", "kind"}`).

    Raises:
        FileNotFoundError: the corpus is not built there (the message says how to build it).
    """
    folder = Path(output_dir) if output_dir is not None else default_output_dir()
    files = {split: folder / f"{split}.jsonl.gz" for split in SPLITS}
    missing = [str(path) for path in files.values() if not path.is_file()]
    if missing:
        raise FileNotFoundError(
            f"The DDTP English-German corpus is not built in {folder} ({', '.join(missing)} missing): run "
            "`python -m training.data.ddtp` (it fetches Debian's Translation-en/-de indexes with apt)."
        )
    return files


def pair_descriptions(english: Description, german: Description) -> list[tuple[str, str, str]]:
    """`(kind, English, German)` pairs of one package: its synopses, and its paragraphs when both descriptions have as
    many (kind `"synopsis"` or `"paragraph"`)."""
    pairs = [("synopsis", english.synopsis, german.synopsis)]
    if english.paragraphs and len(english.paragraphs) == len(german.paragraphs):
        pairs += [("paragraph", e, g) for e, g in zip(english.paragraphs, german.paragraphs)]
    return pairs


def split_of(source_package: str) -> str:
    """The split of a source package: a fixed hash of its name, the same on every machine and Python."""
    bucket = int(hashlib.sha256(source_package.encode("utf-8")).hexdigest(), 16) % 100
    for split, buckets in EVALUATION_BUCKETS.items():
        if bucket in buckets:
            return split
    return "train"


def build_pairs(
    english: Iterable[Description],
    german: Iterable[Description],
    sources: dict[str, str],
    max_words: int = MAX_WORDS,
) -> tuple[dict[str, list[dict]], Counter]:
    """Join, pair, split and clean.

    Args:
        english: the `Translation-en` descriptions.
        german: the `Translation-de` descriptions.
        sources: binary package -> source package (`debian.source_packages`); a package missing there is its own
            source.
        max_words: the longest text kept, in whitespace-separated words, on either side.

    Returns:
        `(records per split, counts)`: each record `{"translation": {"en", "de"}, "package", "source", "kind"}`, and
        the counts of what was joined, paired and dropped (by reason).
    """
    by_md5 = {d.md5: d for d in english}
    counts: Counter = Counter()
    candidates: list[tuple[int, dict]] = []
    order = {split: rank for rank, split in enumerate(("test", "validation", "train"))}
    for description in german:
        counts["german_descriptions"] += 1
        original = by_md5.get(description.md5)
        if original is None:
            counts["dropped_no_english_description"] += 1
            continue
        counts["joined_descriptions"] += 1
        if original.paragraphs and len(original.paragraphs) != len(description.paragraphs):
            counts["paragraph_counts_differ"] += 1
        source = sources.get(description.package, description.package)
        split = split_of(source)
        for kind, en, de in pair_descriptions(original, description):
            counts[f"{kind}_pairs"] += 1
            en, de = en.strip(), de.strip()
            if not en or not de:
                counts["dropped_empty"] += 1
            elif en == de:
                counts["dropped_untranslated"] += 1
            elif max(len(en.split()), len(de.split())) > max_words:
                counts["dropped_too_long"] += 1
            else:
                record = {
                    "translation": {"en": en, "de": de},
                    "package": description.package,
                    "source": source,
                    "kind": kind,
                }
                candidates.append((order[split], record))
    # Evaluation splits first, so a repeated pair (or English text) stays in the evaluation split it appears in.
    candidates.sort(key=lambda item: item[0])
    splits: dict[str, list[dict]] = {split: [] for split in SPLITS}
    seen_pairs, evaluation_sources = set(), set()
    for rank, record in candidates:
        en, de = record["translation"]["en"], record["translation"]["de"]
        split = ("test", "validation", "train")[rank]
        if (en, de) in seen_pairs:
            counts["dropped_repeated"] += 1
            continue
        if split == "train" and en in evaluation_sources:
            counts["dropped_english_in_evaluation"] += 1
            continue
        seen_pairs.add((en, de))
        if split != "train":
            evaluation_sources.add(en)
        splits[split].append(record)
    return splits, counts


def _describe(records: list[dict]) -> dict:
    words = [len(r["translation"]["en"].split()) for r in records]
    kinds = Counter(r["kind"] for r in records)
    return {
        "pairs": len(records),
        "synopsis_pairs": kinds["synopsis"],
        "paragraph_pairs": kinds["paragraph"],
        "source_packages": len({r["source"] for r in records}),
        "english_words": sum(words),
        "median_english_words": statistics.median(words) if words else 0,
    }


def build_corpus(
    output_dir: str | os.PathLike | None = None,
    lists_dir: str | os.PathLike | None = None,
    cache_dir: str | os.PathLike | None = None,
    max_words: int = MAX_WORDS,
) -> dict:
    """Fetch (or find) Debian's `Translation-en`, `Translation-de` and `Packages` indexes and write the corpus:
    `<output_dir>/{train,validation,test}.jsonl.gz` and `stats.json`. Returns the stats."""
    from training.data.debian import fetch_indexes, parse_translation, read_index, source_packages

    indexes = fetch_indexes(languages=("en", "de"), cache_dir=cache_dir, lists_dir=lists_dir)
    english = parse_translation(read_index(indexes.translations["en"]), "en")
    german = parse_translation(read_index(indexes.translations["de"]), "de")
    sources = source_packages(read_index(indexes.packages))
    splits, counts = build_pairs(english, german, sources, max_words=max_words)
    folder = Path(output_dir) if output_dir is not None else default_output_dir()
    folder.mkdir(parents=True, exist_ok=True)
    for split, records in splits.items():
        with gzip.open(folder / f"{split}.jsonl.gz", "wt", encoding="utf-8") as handle:
            for record in records:
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    stats = {
        "corpus": "DDTP English-German: Debian package descriptions (synopses, and paragraphs where the counts agree)",
        "indexes": indexes.describe(),
        "max_words": max_words,
        "splits": {split: _describe(records) for split, records in splits.items()},
        "counts": dict(sorted(counts.items())),
        "licence": "each text carries its package's licence (debian/control): built locally, not redistributed",
    }
    (folder / "stats.json").write_text(json.dumps(stats, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return stats


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output_dir", default=None, help=f"Default: {default_output_dir()}.")
    parser.add_argument("--lists_dir", default=None, help="An apt lists folder holding the indexes (no fetch).")
    parser.add_argument("--cache_dir", default=None, help="The private apt cache of the fetch (training/data/debian).")
    parser.add_argument("--max_words", type=int, default=MAX_WORDS, help="Longer texts are dropped (counted).")
    args = parser.parse_args(argv)
    stats = build_corpus(args.output_dir, args.lists_dir, args.cache_dir, args.max_words)
    print(json.dumps({"splits": stats["splits"], "counts": stats["counts"]}, indent=2))
    return stats


if __name__ == "__main__":
    main()
