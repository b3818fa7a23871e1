"""Translation data for run_translation: loaded with 🤗 datasets, checked strictly, normalised to source/target.

>>> from training.data.files import load_translation_splits
>>> splits, stats, origin = load_translation_splits(
...     "en", "de", needed=["train", "test"], train_file="train.jsonl.gz", test_file="test.csv")
>>> splits["train"]          # datasets.Dataset with columns "source" and "target" (non-blank strings)

Data comes from `--train_file/--validation_file/--test_file` (JSON lines / JSON, CSV, TSV, each optionally
gzipped; Parquet; Arrow), from `--dataset_name` (a Hub dataset, a local folder or a dataset saved with
`save_to_disk`), or by default from the embedded English-German corpus. Every split is read by
`datasets.load_dataset` (Arrow-backed, memory-mapped, cached: later `map` calls are cached too), then checked:

- text files pass through the strict reader (`read_translation_file`), which names the file, line and bytes of
  anything wrong (undecodable bytes, malformed JSON, a missing language key or column) and counts what it skips
  (empty lines, empty texts; with `skip_bad_lines` also undecodable and malformed lines);
- datasets are checked column by column (the language columns or a `translation` column must be there and hold
  text); rows with an empty source or target are dropped and counted.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import logging
import os
from collections import Counter
from typing import Any

logger = logging.getLogger(__name__)

__all__ = ["DataError", "EMBEDDED_CORPUS", "file_format", "read_translation_file", "load_translation_splits"]

EMBEDDED_CORPUS = "en_de_messages"
TEXT_FORMATS = ("json", "csv", "tsv")
_SUFFIXES = (
    (".jsonl", "json"),
    (".json", "json"),
    (".csv", "csv"),
    (".tsv", "tsv"),
    (".parquet", "parquet"),
    (".arrow", "arrow"),
)
SUPPORTED = ".json/.jsonl, .csv, .tsv (each optionally .gz), .parquet or .arrow"
# The flags that name the two columns, for error messages: run_summarization passes its own.
LANGUAGE_FLAGS = "--source_lang/--target_lang"


class DataError(ValueError):
    """A data file or dataset that cannot be used as it is; the message names the file, line and columns."""


def file_format(path: str) -> str | None:
    """ "json", "csv", "tsv", "parquet" or "arrow" from the file name (a ".gz" suffix is looked through), else None."""
    name = path.lower()
    compressed = name.endswith(".gz")
    if compressed:
        name = name[:-3]
    for suffix, kind in _SUFFIXES:
        if name.endswith(suffix):
            return None if compressed and kind not in TEXT_FORMATS else kind
    return None


# ---------------------------------------------------------------------------------------------------------------------
# The strict reader
# ---------------------------------------------------------------------------------------------------------------------


def _read_bytes(path: str) -> bytes:
    if not os.path.isfile(path):
        raise FileNotFoundError(f"Data file {path} does not exist.")
    with open(path, "rb") as handle:
        data = handle.read()
    if path.lower().endswith(".gz"):
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as error:
            raise DataError(f"{path}: not a valid gzip file ({error}).") from error
    return data


def _undecodable(path: str, line_number: int, error: UnicodeDecodeError, raw: bytes) -> DataError:
    snippet = raw[max(error.start - 10, 0) : error.end + 10]
    return DataError(
        f"{path}, line {line_number}: not valid UTF-8 ({error.reason} at byte {error.start} of the line, near "
        f"{snippet!r}). Re-encode the file as UTF-8, or pass --skip_bad_lines to skip such lines."
    )


def _undecodable_in_file(path: str, raw: bytes, error: UnicodeDecodeError) -> DataError:
    """The same message for an error found decoding the whole file: line number and offset within that line."""
    line = raw[: error.start].count(b"\n") + 1
    start = raw.rfind(b"\n", 0, error.start) + 1
    end = raw.find(b"\n", error.start)
    return _undecodable(
        path,
        line,
        UnicodeDecodeError(error.encoding, error.object, error.start - start, error.end - start, error.reason),
        raw[start : end if end >= 0 else len(raw)],
    )


def _text_pair(
    values: dict, source_lang: str, target_lang: str, where: str, what: str, flags: str = LANGUAGE_FLAGS
) -> tuple[Any, Any]:
    """`values[source_lang], values[target_lang]`, or a DataError naming the missing one and what was found.

    `what` names the missing thing: "key in 'translation'", "key (nor a 'translation' object)" or "column".
    """
    for lang in (source_lang, target_lang):
        if lang not in values:
            found = "columns" if what.startswith("column") else "keys"
            raise DataError(
                f"{where}: no '{lang}' {what}; {found} found: {sorted(map(str, values))}. Each example needs both "
                f"'{source_lang}' and '{target_lang}' (set {flags} to match the data)."
            )
    return values[source_lang], values[target_lang]


def _keep_pair(source: Any, target: Any, stats: Counter, where: str) -> bool:
    for text in (source, target):
        if text is None or (isinstance(text, str) and not text.strip()):
            stats["skipped_empty_text"] += 1
            return False
        if not isinstance(text, str):
            raise DataError(f"{where}: expected text, got {type(text).__name__} {text!r}.")
    return True


def _log_skip(stats: Counter, key: str, message: str) -> None:
    if stats[key] <= 5:
        logger.warning(
            "%s: skipped%s", message, " (further such lines are counted, not logged)" if stats[key] == 5 else ""
        )


def read_translation_file(
    path: str, source_lang: str, target_lang: str, skip_bad_lines: bool = False, *, flags: str = LANGUAGE_FLAGS
):
    """Read (source, target) pairs from a JSON-lines / JSON / CSV / TSV file (optionally gzipped).

    Empty lines and examples with an empty source or target are skipped and counted. A missing language key or
    column raises a `DataError` naming it and the keys/columns found; so do undecodable bytes and malformed JSON
    (file and line), unless `skip_bad_lines`, which skips and counts them.

    Returns:
        `(sources, targets, stats)` with `stats` a `Counter` of skipped lines by reason and `pairs` read.
    """
    kind = file_format(path)
    if kind not in TEXT_FORMATS:
        raise DataError(
            f"{path}: not a text data file; the strict reader reads .json/.jsonl, .csv or .tsv (optionally .gz)."
        )
    raw = _read_bytes(path)
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    if not raw.strip():
        raise DataError(f"{path}: the file is empty.")
    stats: Counter = Counter()
    sources: list[str] = []
    targets: list[str] = []

    if kind == "json":
        if raw.lstrip()[:1] == b"[":  # one JSON array instead of JSON lines
            try:
                records = json.loads(raw.decode("utf-8"))
            except UnicodeDecodeError as error:
                raise _undecodable_in_file(path, raw, error) from error
            except json.JSONDecodeError as error:
                raise DataError(
                    f"{path}, line {error.lineno}, column {error.colno}: malformed JSON ({error.msg})."
                ) from error
            numbered = [(i + 1, record) for i, record in enumerate(records)]
            unit = "record"
        else:
            numbered = []
            unit = "line"
            lines = raw.split(b"\n")
            if lines and not lines[-1].strip():
                lines.pop()  # the newline that ends the file does not start an empty line
            for number, line in enumerate(lines, start=1):
                if not line.strip():
                    stats["skipped_empty_lines"] += 1
                    continue
                try:
                    text = line.decode("utf-8")
                except UnicodeDecodeError as error:
                    if skip_bad_lines:
                        stats["skipped_undecodable_lines"] += 1
                        _log_skip(stats, "skipped_undecodable_lines", f"{path}, line {number}: not valid UTF-8")
                        continue
                    raise _undecodable(path, number, error, line) from error
                try:
                    numbered.append((number, json.loads(text)))
                except json.JSONDecodeError as error:
                    if skip_bad_lines:
                        stats["skipped_malformed_lines"] += 1
                        _log_skip(stats, "skipped_malformed_lines", f"{path}, line {number}: malformed JSON")
                        continue
                    raise DataError(
                        f"{path}, line {number}, column {error.colno}: malformed JSON ({error.msg}); "
                        "pass --skip_bad_lines to skip such lines."
                    ) from error
        for number, record in numbered:
            where = f"{path}, {unit} {number}"
            if not isinstance(record, dict):
                raise DataError(f"{where}: expected a JSON object, got {type(record).__name__}.")
            if "translation" in record:
                values = record["translation"]
                if not isinstance(values, dict):
                    raise DataError(
                        f"{where}: 'translation' must be an object with one key per language, got "
                        f"{type(values).__name__}."
                    )
                source, target = _text_pair(values, source_lang, target_lang, where, "key in 'translation'", flags)
            else:
                source, target = _text_pair(
                    record, source_lang, target_lang, where, "key (nor a 'translation' object)", flags
                )
            if _keep_pair(source, target, stats, where):
                sources.append(source)
                targets.append(target)
    else:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            if not skip_bad_lines:
                raise _undecodable_in_file(path, raw, error) from error
            kept = []
            for number, line in enumerate(raw.split(b"\n"), start=1):
                try:
                    kept.append(line.decode("utf-8"))
                except UnicodeDecodeError:
                    stats["skipped_undecodable_lines"] += 1
                    _log_skip(stats, "skipped_undecodable_lines", f"{path}, line {number}: not valid UTF-8")
            text = "\n".join(kept)
        reader = csv.DictReader(io.StringIO(text, newline=""), delimiter="," if kind == "csv" else "\t")
        columns = reader.fieldnames or []
        missing = [lang for lang in (source_lang, target_lang) if lang not in columns]
        if missing:
            raise DataError(
                f"{path}: no column named {', '.join(repr(m) for m in missing)}; columns found: {columns}. The header "
                f"row needs a '{source_lang}' and a '{target_lang}' column (set {flags} to match)."
            )
        for row in reader:
            where = f"{path}, line {reader.line_num}"
            if all(value in (None, "") for value in row.values()):
                stats["skipped_empty_lines"] += 1
                continue
            source, target = row.get(source_lang), row.get(target_lang)
            if _keep_pair(source, target, stats, where):
                sources.append(source)
                targets.append(target)
    stats["pairs"] = len(sources)
    return sources, targets, stats


# ---------------------------------------------------------------------------------------------------------------------
# Loading through 🤗 datasets
# ---------------------------------------------------------------------------------------------------------------------


def _load_file(path: str, kind: str, cache_dir: str | None):
    import datasets

    builder = {"tsv": "csv"}.get(kind, kind)
    kwargs: dict[str, Any] = {}
    if kind in ("csv", "tsv"):
        # Text stays text: no "NA"/"null" -> missing, no number parsing surprises, empty cells are "".
        kwargs = dict(delimiter="," if kind == "csv" else "\t", keep_default_na=False, na_filter=False)
    return datasets.load_dataset(builder, data_files={"data": path}, split="data", cache_dir=cache_dir, **kwargs)


def _language_columns(
    dataset, source_lang: str, target_lang: str, name: str, flags: str = LANGUAGE_FLAGS
) -> tuple[str, str] | str:
    """The layout of `dataset`: "translation" (a struct column with one key per language) or the two columns."""
    import datasets

    columns = list(dataset.column_names)
    features = dataset.features
    if "translation" in columns:
        feature = features["translation"]
        keys = list(feature) if isinstance(feature, dict) else getattr(feature, "languages", None)
        if keys is None:
            raise DataError(f"{name}: the 'translation' column must hold one text per language, got {feature}.")
        missing = [lang for lang in (source_lang, target_lang) if lang not in keys]
        if missing:
            raise DataError(
                f"{name}: no {', '.join(repr(m) for m in missing)} key in 'translation'; keys found: "
                f"{sorted(keys)}. Set {flags} to match the data."
            )
        return "translation"
    missing = [lang for lang in (source_lang, target_lang) if lang not in columns]
    if missing:
        raise DataError(
            f"{name}: no column named {', '.join(repr(m) for m in missing)} (nor a 'translation' "
            f"column); columns found: {columns}. Set {flags} to match the data."
        )
    for lang in (source_lang, target_lang):
        feature = features[lang]
        if not (isinstance(feature, datasets.Value) and feature.dtype in ("string", "large_string")):
            raise DataError(f"{name}: column '{lang}' holds {feature}, not text.")
    return source_lang, target_lang


def _normalise(
    dataset, source_lang: str, target_lang: str, name: str, num_proc: int | None, flags: str = LANGUAGE_FLAGS
):
    """`dataset` as columns "source" and "target", rows with an empty side dropped; returns it and the stats."""
    layout = _language_columns(dataset, source_lang, target_lang, name, flags)

    def pairs(batch):
        if layout == "translation":
            rows = [row or {} for row in batch["translation"]]
            sources, targets = [row.get(source_lang) for row in rows], [row.get(target_lang) for row in rows]
        else:
            sources, targets = batch[source_lang], batch[target_lang]
        return {"source": sources, "target": targets}

    normalised = dataset.map(
        pairs, batched=True, remove_columns=dataset.column_names, num_proc=num_proc, desc=f"Reading {name}"
    )
    for column, lang in (("source", source_lang), ("target", target_lang)):
        dtype = getattr(normalised.features[column], "dtype", None)
        if dtype not in ("string", "large_string", "null"):
            raise DataError(f"{name}: the '{lang}' texts must be strings, but they are {dtype}.")
    kept = normalised.filter(
        lambda batch: [bool(s and s.strip() and t and t.strip()) for s, t in zip(batch["source"], batch["target"])],
        batched=True,
        num_proc=num_proc,
        desc=f"Checking {name}",
    )
    stats: Counter = Counter()
    if len(kept) < len(normalised):
        stats["skipped_empty_text"] = len(normalised) - len(kept)
    stats["pairs"] = len(kept)
    return kept, stats


def load_translation_file(
    path: str,
    source_lang: str,
    target_lang: str,
    *,
    skip_bad_lines: bool = False,
    cache_dir: str | None = None,
    num_proc: int | None = None,
    flags: str = LANGUAGE_FLAGS,
):
    """One data file as a `datasets.Dataset` of "source"/"target" pairs, plus the stats of the strict checks."""
    import datasets

    kind = file_format(path)
    if kind is None:
        raise DataError(f"{path}: unsupported file type; use {SUPPORTED}.")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"Data file {path} does not exist.")
    try:
        loaded = _load_file(path, kind, cache_dir)
    except Exception as error:  # noqa: BLE001 - the strict reader below says what is wrong, with line and bytes
        if kind not in TEXT_FORMATS:
            raise DataError(f"{path}: cannot be read as {kind} ({type(error).__name__}: {error}).") from error
        logger.info("%s: datasets could not load it (%s); reading it with the strict reader.", path, error)
        loaded = None
    if kind not in TEXT_FORMATS:
        return _normalise(loaded, source_lang, target_lang, path, num_proc, flags)

    # The validation pass: exact errors (file, line, bytes) and counts of what is skipped.
    sources, targets, stats = read_translation_file(path, source_lang, target_lang, skip_bad_lines, flags=flags)
    if loaded is not None:
        try:
            dataset, _ = _normalise(loaded, source_lang, target_lang, path, num_proc, flags)
        except Exception:  # noqa: BLE001 - e.g. bytes --skip_bad_lines skipped: the strict reader's pairs are right
            dataset = None
        # The same pairs as the strict reader's (the csv module and pandas could disagree on quoting): use the
        # Arrow-backed, cached dataset.
        if dataset is not None and dataset["source"][:] == sources and dataset["target"][:] == targets:
            return dataset, stats
    # Lines datasets could not parse were skipped: build the split from the strict reader's pairs.
    return datasets.Dataset.from_dict({"source": sources, "target": targets}), stats


def _load_named_dataset(name: str, config_name: str | None, cache_dir: str | None, token: str | None):
    """A Hub dataset or a local folder (data files or a dataset script) with `load_dataset`; a folder written by
    `save_to_disk` with `load_from_disk`."""
    import datasets

    if os.path.isdir(name) and any(os.path.isfile(os.path.join(name, f)) for f in ("dataset_dict.json", "state.json")):
        loaded = datasets.load_from_disk(name)
        if isinstance(loaded, datasets.Dataset):
            raise DataError(
                f"{name} holds a single Dataset, not splits: save a DatasetDict (DatasetDict({{'train': "
                "ds, 'validation': ..., 'test': ...}).save_to_disk(...)), or pass it as --train_file."
            )
        return loaded
    return datasets.load_dataset(name, config_name, cache_dir=cache_dir, token=token)


def load_translation_splits(
    source_lang: str,
    target_lang: str,
    needed: list[str],
    *,
    train_file: str | None = None,
    validation_file: str | None = None,
    test_file: str | None = None,
    dataset_name: str | None = None,
    dataset_config_name: str | None = None,
    skip_bad_lines: bool = False,
    cache_dir: str | None = None,
    token: str | None = None,
    num_proc: int | None = None,
    flags: str = LANGUAGE_FLAGS,
):
    """The splits in `needed` ("train" / "validation" / "test") as `{split: Dataset(source, target)}`.

    Returns `(splits, stats, origin)`: `stats[split]` counts pairs and skipped lines by reason; `origin` is
    "files", the dataset name, or `EMBEDDED_CORPUS`. `flags` names the options that choose the two columns, for
    error messages (default: the language flags; run_summarization's `--text_column/--summary_column`). A split not available is left out (the caller says which
    flag needed it). A split without a single usable pair raises a `DataError` naming its file.
    """
    files = {"train": train_file, "validation": validation_file, "test": test_file}
    splits, stats, names = {}, {}, {}
    if any(files.values()):
        origin = "files"
        for split in needed:
            if files[split] is not None:
                splits[split], stats[split] = load_translation_file(
                    files[split],
                    source_lang,
                    target_lang,
                    skip_bad_lines=skip_bad_lines,
                    cache_dir=cache_dir,
                    num_proc=num_proc,
                    flags=flags,
                )
                names[split] = files[split]
    else:
        if dataset_name is None:
            from hf_pgen.corpus import load_en_de_messages

            if (source_lang, target_lang) not in (("en", "de"), ("de", "en")):
                raise DataError(
                    f"The embedded corpus is English-German; --source_lang {source_lang} --target_lang "
                    f"{target_lang} needs --dataset_name or data files."
                )
            raw, origin = load_en_de_messages(), EMBEDDED_CORPUS
        else:
            raw, origin = _load_named_dataset(dataset_name, dataset_config_name, cache_dir, token), dataset_name
        for split in needed:
            if split in raw:
                names[split] = f"{origin}[{split}]"
                splits[split], stats[split] = _normalise(
                    raw[split], source_lang, target_lang, names[split], num_proc, flags
                )
    for split, split_stats in stats.items():
        skipped = {k: v for k, v in split_stats.items() if k.startswith("skipped") and v}
        if skipped:
            logger.warning(
                "%s data (%s): kept %d pairs, skipped %s", split, names[split], split_stats["pairs"], skipped
            )
        else:
            logger.info("%s data (%s): %d pairs", split, names[split], split_stats["pairs"])
        if split_stats["pairs"] == 0:
            reasons = f" (skipped: {skipped})" if skipped else ""
            raise DataError(f"{names[split]}: the {split} data holds no usable pair{reasons}.")
    return splits, stats, origin
