#!/usr/bin/env python
"""Train and evaluate a pointer-generator (or, with --no_copy_mechanism, the plain base) for translation.

Adapted from 🤗 Transformers' `examples/pytorch/translation/run_translation.py`: the same flags where they exist,
plus the copy mechanism (`--copy_mechanism/--no_copy_mechanism`, `--pointer`, `--coverage`, `--coverage_weight`),
a tokenizer trained on the training data (`--train_tokenizer --tokenizer_type --tokenizer_vocab_size`), and
copy-aware metrics (placeholder preservation, OOV copy rate, mean p_gen).

Train a small BART-shaped pointer-generator from scratch on the embedded English->German corpus:

    python training/run_translation.py --model_type bart \
        --config_overrides "d_model=256,encoder_layers=3,decoder_layers=3,encoder_attention_heads=4,decoder_attention_heads=4,encoder_ffn_dim=1024,decoder_ffn_dim=1024" \
        --train_tokenizer --tokenizer_type wordlevel --tokenizer_vocab_size 8000 \
        --do_train --do_eval --do_predict --predict_with_generate \
        --max_source_length 64 --max_target_length 64 --output_dir outputs/pgen

or wrap a pretrained encoder-decoder: `--model_name_or_path Helsinki-NLP/opus-mt-en-de`. Data: the embedded corpus
(default), `--train_file/--validation_file/--test_file` (JSON lines `{"translation": {"en": ..., "de": ...}}` or flat
`{"en": ..., "de": ...}`, CSV or TSV with one column per language, optionally gzipped) or `--dataset_name`.

Writes into --output_dir: checkpoints, the final model with its tokenizer and a rendered model card (README.md),
`all_results.json` (train_*/eval_*/predict_* metrics), `generated_predictions.txt` (one line per test example, in
order; newlines inside a prediction are written as the two characters `\\n`) and `data_stats.json` (skipped and
truncated examples).
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import logging
import math
import os
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import transformers
from transformers import (
    CONFIG_MAPPING,
    AutoConfig,
    AutoModelForSeq2SeqLM,
    AutoTokenizer,
    DataCollatorForSeq2Seq,
    HfArgumentParser,
    PreTrainedTokenizerFast,
    Seq2SeqTrainer,
    Seq2SeqTrainingArguments,
    set_seed,
)
from torch.utils.data import SequentialSampler
from transformers.trainer_utils import get_last_checkpoint, has_length

import hf_pgen
from hf_pgen import PointerGeneratorForConditionalGeneration
from hf_pgen.data_collator import DataCollatorForPointerGenerator
from hf_pgen.metrics import translation_metrics
from hf_pgen.tokenization_pointer_generator import batch_decode_with_oovs, encode_with_oovs

# Run as a script (python training/run_translation.py), the repository root is not on the path.
_REPO_ROOT = Path(__file__).resolve().parents[1]
if str(_REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(_REPO_ROOT))

logger = logging.getLogger(__name__)

TOKENIZER_TYPES = ("wordpiece", "unigram", "bpe", "wordlevel")
POINTER_CHOICES = ("dedicated", "cross_attention")
PAD, EOS, UNK, BOS = "<pad>", "</s>", "<unk>", "<s>"
# Model families whose decoder starts from the pad token; others start from eos (BART style) or bos.
_DECODER_START_PAD = {"marian", "t5", "mt5", "umt5", "pegasus", "pegasus_x", "longt5", "switch_transformers"}
_DECODER_START_EOS = {"bart", "mbart", "plbart", "fsmt", "blenderbot", "blenderbot-small", "mvp"}
EMBEDDED_CORPUS = "en_de_messages"


# ---------------------------------------------------------------------------------------------------------------------
# Arguments
# ---------------------------------------------------------------------------------------------------------------------


@dataclass
class ModelArguments:
    """Which model/config/tokenizer to fine-tune or train from scratch, and the copy mechanism's settings."""

    model_name_or_path: str | None = field(
        default=None,
        metadata={"help": "Pretrained encoder-decoder (Hub id or local folder) to wrap; leave unset to train a model "
                          "from scratch with --model_type."},
    )
    model_type: str | None = field(
        default=None,
        metadata={"help": "Model family to train from scratch (e.g. bart, marian, t5): " + ", ".join(
            sorted(k for k in CONFIG_MAPPING.keys() if k in _DECODER_START_PAD | _DECODER_START_EOS))},
    )
    config_overrides: str | None = field(
        default=None,
        metadata={"help": "With --model_type: override default config settings, e.g. "
                          "'d_model=256,encoder_layers=3,decoder_layers=3'."},
    )
    config_name: str | None = field(default=None, metadata={"help": "Config name or path if not the model's."})
    tokenizer_name: str | None = field(default=None, metadata={"help": "Tokenizer name or path if not the model's."})
    cache_dir: str | None = field(default=None, metadata={"help": "Where to store downloaded models."})
    use_fast_tokenizer: bool = field(
        default=True, metadata={"help": "Use a fast tokenizer (required: OOV words are found through offsets)."}
    )
    model_revision: str = field(default="main", metadata={"help": "Model version (branch, tag or commit)."})
    token: str | None = field(default=None, metadata={"help": "Hub token for remote files."})
    trust_remote_code: bool = field(default=False, metadata={"help": "Allow custom code from the Hub."})
    # -- copy mechanism --
    copy_mechanism: bool = field(
        default=True,
        metadata={"help": "Add the pointer-generator copy mechanism. --no_copy_mechanism trains the plain base "
                          "with the same architecture and tokenizer (the baseline)."},
    )
    pointer: str = field(
        default="dedicated",
        metadata={"help": "Pointer distribution: a dedicated attention or the base's cross-attention.",
                  "choices": list(POINTER_CHOICES)},
    )
    coverage: bool = field(default=False, metadata={"help": "Coverage mechanism and loss (See et al. 2017)."})
    coverage_weight: float = field(default=1.0, metadata={"help": "Weight of the coverage loss."})
    p_gen_bias_init: float | None = field(
        default=None,
        metadata={"help": "Initial bias of the copy switch (p_gen = sigmoid(bias) at start). Defaults to the "
                          "config's 10.0 when wrapping a pretrained model and 0.0 for a model trained from scratch."},
    )
    # -- tokenizer training --
    train_tokenizer: bool = field(
        default=False,
        metadata={"help": "Train a shared source-target tokenizer on the training data with 🤗 tokenizers."},
    )
    tokenizer_type: str = field(
        default="wordlevel",
        metadata={"help": "Model of the trained tokenizer. wordlevel leaves rare words unknown (copying matters "
                          "most); wordpiece/unigram leave only unseen characters unknown; bpe is byte-level "
                          "(no unknown words).", "choices": list(TOKENIZER_TYPES)},
    )
    tokenizer_vocab_size: int = field(default=8000, metadata={"help": "Vocabulary size of the trained tokenizer."})
    tokenizer_min_frequency: int = field(
        default=2, metadata={"help": "Minimum count of a token in the training data to enter the trained vocabulary."}
    )
    model_license: str = field(default="apache-2.0", metadata={"help": "Licence written into the model card."})

    def __post_init__(self):
        if self.model_name_or_path is None and self.model_type is None:
            raise ValueError("Pass --model_name_or_path (a pretrained encoder-decoder) or --model_type (from scratch).")
        if self.config_overrides is not None and (self.config_name is not None or self.model_name_or_path is not None):
            raise ValueError("--config_overrides can't be used in combination with --config_name or "
                             "--model_name_or_path")
        if self.pointer not in POINTER_CHOICES:
            raise ValueError(f"--pointer must be one of {POINTER_CHOICES}, got {self.pointer!r}.")
        if self.tokenizer_type not in TOKENIZER_TYPES:
            raise ValueError(f"--tokenizer_type must be one of {TOKENIZER_TYPES}, got {self.tokenizer_type!r}.")
        if not self.use_fast_tokenizer:
            raise ValueError("The pointer-generator needs a fast tokenizer (offset mappings locate OOV words).")
        if (self.model_type is not None and self.model_name_or_path is None and not self.train_tokenizer
                and self.tokenizer_name is None):
            raise ValueError("Training from scratch (--model_type) needs a tokenizer: --train_tokenizer or "
                             "--tokenizer_name.")


@dataclass
class DataTrainingArguments:
    """What data to train and evaluate on, and how to cut it."""

    source_lang: str = field(default="en", metadata={"help": "Source language id (key / column name)."})
    target_lang: str = field(default="de", metadata={"help": "Target language id (key / column name)."})
    dataset_name: str | None = field(
        default=None,
        metadata={"help": "A `datasets` dataset (Hub id or local folder). Default when neither this nor data files "
                          "are given: the embedded English->German software-message corpus."},
    )
    dataset_config_name: str | None = field(default=None, metadata={"help": "The dataset's configuration."})
    train_file: str | None = field(default=None, metadata={"help": "Training data: JSON lines, CSV or TSV."})
    validation_file: str | None = field(default=None, metadata={"help": "Validation data (same formats)."})
    test_file: str | None = field(default=None, metadata={"help": "Test data (same formats)."})
    overwrite_cache: bool = field(default=False, metadata={"help": "Redo the preprocessing (no cached map)."})
    preprocessing_num_workers: int | None = field(default=None, metadata={"help": "Processes for preprocessing."})
    max_source_length: int = field(
        default=1024, metadata={"help": "Longest source in tokens; longer ones are truncated (and counted)."}
    )
    max_target_length: int = field(
        default=128, metadata={"help": "Longest target in tokens; longer ones are truncated (and counted)."}
    )
    val_max_target_length: int | None = field(
        default=None,
        metadata={"help": "Longest target for evaluation and the generation length limit. Defaults to "
                          "max_target_length."},
    )
    pad_to_max_length: bool = field(default=False, metadata={"help": "Pad to the maximum lengths (else per batch)."})
    max_train_samples: int | None = field(default=None, metadata={"help": "Use only the first N training pairs."})
    max_eval_samples: int | None = field(default=None, metadata={"help": "Use only the first N validation pairs."})
    max_predict_samples: int | None = field(default=None, metadata={"help": "Use only the first N test pairs."})
    num_beams: int | None = field(default=None, metadata={"help": "Beams for evaluation/prediction."})
    ignore_pad_token_for_loss: bool = field(default=True, metadata={"help": "Ignore padded label positions."})
    source_prefix: str | None = field(default=None, metadata={"help": "Text prepended to every source (T5)."})
    forced_bos_token: str | None = field(default=None, metadata={"help": "Token forced first (mBART)."})
    skip_bad_lines: bool = field(
        default=False,
        metadata={"help": "Skip (and count) lines of data files that are not valid UTF-8 or not valid JSON instead "
                          "of stopping with an error naming the file and line."},
    )
    overwrite_output_dir: bool = field(
        default=False, metadata={"help": "Start over even if --output_dir holds checkpoints (default: resume)."}
    )

    def __post_init__(self):
        if self.val_max_target_length is None:
            self.val_max_target_length = self.max_target_length
        for name in ("train_file", "validation_file", "test_file"):
            path = getattr(self, name)
            if path is not None and _file_format(path) is None:
                raise ValueError(f"--{name} {path}: unsupported extension; use .json/.jsonl, .csv or .tsv "
                                 "(optionally .gz).")


# ---------------------------------------------------------------------------------------------------------------------
# Data: reading with checks (missing columns, empty text, undecodable bytes)
# ---------------------------------------------------------------------------------------------------------------------


class DataError(ValueError):
    """A data file or dataset that cannot be used as it is; the message names the file, line and columns."""


def _file_format(path: str) -> str | None:
    name = path.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    for suffix, kind in ((".jsonl", "json"), (".json", "json"), (".csv", "csv"), (".tsv", "tsv"), (".txt", "tsv")):
        if name.endswith(suffix):
            return kind
    return None


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


def _text_pair(values: dict, source_lang: str, target_lang: str, where: str, what: str) -> tuple[Any, Any]:
    """`values[source_lang], values[target_lang]`, or a DataError naming the missing one and what was found.

    `what` names the missing thing: "key in 'translation'", "key (nor a 'translation' object)" or "column".
    """
    for lang in (source_lang, target_lang):
        if lang not in values:
            found = "columns" if what.startswith("column") else "keys"
            raise DataError(
                f"{where}: no '{lang}' {what}; {found} found: {sorted(map(str, values))}. Each example needs both "
                f"'{source_lang}' and '{target_lang}' (set --source_lang/--target_lang to match the data)."
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


def read_translation_file(path: str, source_lang: str, target_lang: str, skip_bad_lines: bool = False):
    """Read (source, target) pairs from a JSON-lines / JSON / CSV / TSV file (optionally gzipped).

    Empty lines and examples with an empty source or target are skipped and counted. A missing language key or
    column raises a `DataError` naming it and the keys/columns found; so do undecodable bytes and malformed JSON
    (file and line), unless `skip_bad_lines`, which skips and counts them.

    Returns:
        `(sources, targets, stats)` with `stats` a `Counter` of skipped lines by reason and `pairs` read.
    """
    kind = _file_format(path)
    if kind is None:
        raise DataError(f"{path}: unsupported extension; use .json/.jsonl, .csv or .tsv (optionally .gz).")
    raw = _read_bytes(path)
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    stats: Counter = Counter()
    sources: list[str] = []
    targets: list[str] = []

    if kind == "json":
        if raw.lstrip()[:1] == b"[":  # one JSON array instead of JSON lines
            try:
                records = json.loads(raw.decode("utf-8"))
            except UnicodeDecodeError as error:
                line = raw[: error.start].count(b"\n") + 1
                start = raw.rfind(b"\n", 0, error.start) + 1
                raise _undecodable(path, line, UnicodeDecodeError(
                    error.encoding, error.object, error.start - start, error.end - start, error.reason),
                    raw[start : raw.find(b"\n", error.start)]) from error
            except json.JSONDecodeError as error:
                raise DataError(f"{path}, line {error.lineno}: malformed JSON ({error.msg}).") from error
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
                    raise DataError(f"{path}, line {number}: malformed JSON ({error.msg} at column {error.colno}); "
                                    "pass --skip_bad_lines to skip such lines.") from error
        for number, record in numbered:
            where = f"{path}, {unit} {number}"
            if not isinstance(record, dict):
                raise DataError(f"{where}: expected a JSON object, got {type(record).__name__}.")
            if "translation" in record:
                values = record["translation"]
                if not isinstance(values, dict):
                    raise DataError(f"{where}: 'translation' must be an object with one key per language, got "
                                    f"{type(values).__name__}.")
                source, target = _text_pair(values, source_lang, target_lang, where, "key in 'translation'")
            else:
                source, target = _text_pair(record, source_lang, target_lang, where,
                                            "key (nor a 'translation' object)")
            if _keep_pair(source, target, stats, where):
                sources.append(source)
                targets.append(target)
    else:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            if not skip_bad_lines:
                line = raw[: error.start].count(b"\n") + 1
                start = raw.rfind(b"\n", 0, error.start) + 1
                end = raw.find(b"\n", error.start)
                raise _undecodable(path, line, UnicodeDecodeError(
                    error.encoding, error.object, error.start - start, error.end - start, error.reason),
                    raw[start : end if end >= 0 else len(raw)]) from error
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
                f"row needs a '{source_lang}' and a '{target_lang}' column (set --source_lang/--target_lang to match)."
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


def _log_skip(stats: Counter, key: str, message: str) -> None:
    if stats[key] <= 5:
        logger.warning("%s: skipped%s", message, " (further such lines are counted, not logged)" if stats[key] == 5
                       else "")


def _pairs_from_dataset(dataset, source_lang: str, target_lang: str, name: str):
    """(sources, targets, stats) from a `datasets.Dataset` with a 'translation' column or one column per language."""
    stats: Counter = Counter()
    columns = list(dataset.column_names)
    if "translation" in columns:
        records = dataset["translation"]
        found = "key in 'translation'"
        rows = ((i, r) for i, r in enumerate(records))
    else:
        missing = [lang for lang in (source_lang, target_lang) if lang not in columns]
        if missing:
            raise DataError(f"{name}: no column named {', '.join(repr(m) for m in missing)} (nor a 'translation' "
                            f"column); columns found: {columns}.")
        src, tgt = dataset[source_lang], dataset[target_lang]
        found = "column"
        rows = ((i, {source_lang: s, target_lang: t}) for i, (s, t) in enumerate(zip(src, tgt)))
    sources, targets = [], []
    for index, record in rows:
        where = f"{name}, row {index}"
        if record is None:
            stats["skipped_empty_text"] += 1
            continue
        source, target = _text_pair(record, source_lang, target_lang, where, found)
        if _keep_pair(source, target, stats, where):
            sources.append(source)
            targets.append(target)
    stats["pairs"] = len(sources)
    return sources, targets, stats


def load_raw_splits(data_args: DataTrainingArguments, model_args: ModelArguments, needed: list[str]):
    """Load the splits in `needed` ("train"/"validation"/"test") as `{split: (sources, targets)}` plus stats."""
    files = {"train": data_args.train_file, "validation": data_args.validation_file, "test": data_args.test_file}
    splits, stats, origin = {}, {}, None
    if any(files.values()):
        origin = "files"
        for split in needed:
            if files[split] is None:
                continue
            sources, targets, split_stats = read_translation_file(
                files[split], data_args.source_lang, data_args.target_lang, data_args.skip_bad_lines
            )
            splits[split], stats[split] = (sources, targets), split_stats
    else:
        import datasets

        if data_args.dataset_name is None:
            from training.data import load_en_de_messages

            if (data_args.source_lang, data_args.target_lang) not in (("en", "de"), ("de", "en")):
                raise DataError(f"The embedded corpus is English-German; --source_lang {data_args.source_lang} "
                                f"--target_lang {data_args.target_lang} needs --dataset_name or data files.")
            raw = load_en_de_messages()
            origin = EMBEDDED_CORPUS
        else:
            raw = datasets.load_dataset(
                data_args.dataset_name, data_args.dataset_config_name, cache_dir=model_args.cache_dir,
                token=model_args.token,
            )
            origin = data_args.dataset_name
        for split in needed:
            if split not in raw:
                continue
            sources, targets, split_stats = _pairs_from_dataset(
                raw[split], data_args.source_lang, data_args.target_lang, f"{origin}[{split}]"
            )
            splits[split], stats[split] = (sources, targets), split_stats
    for split, split_stats in stats.items():
        skipped = {k: v for k, v in split_stats.items() if k.startswith("skipped") and v}
        if skipped:
            logger.warning("%s data: kept %d pairs, skipped %s", split, split_stats["pairs"], skipped)
        else:
            logger.info("%s data: %d pairs", split, split_stats["pairs"])
        if split_stats["pairs"] == 0:
            raise DataError(f"The {split} data holds no usable pair (skipped: {dict(split_stats)}).")
    return splits, stats, origin


# ---------------------------------------------------------------------------------------------------------------------
# Tokenizer
# ---------------------------------------------------------------------------------------------------------------------


def train_shared_tokenizer(
    texts: list[str], tokenizer_type: str, vocab_size: int, min_frequency: int = 2, model_max_length: int | None = None
) -> PreTrainedTokenizerFast:
    """A source-target tokenizer trained on `texts` with 🤗 tokenizers, wrapped in `PreTrainedTokenizerFast`.

    Special tokens: `<pad>`=0, `</s>`=1 (appended to every sequence), `<unk>`=2, `<s>`=3. Except for byte-level BPE,
    text is pre-split at spaces (kept as "▁", so decoding restores the spacing exactly), punctuation and line breaks,
    which makes placeholders such as `%(name)s` sequences of small tokens. `wordlevel` keeps the
    `vocab_size` most frequent words and leaves the rest unknown, which only a copy mechanism can produce.
    """
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

    if tokenizer_type not in TOKENIZER_TYPES:
        raise ValueError(f"tokenizer_type must be one of {TOKENIZER_TYPES}, got {tokenizer_type!r}.")
    specials = [PAD, EOS, UNK, BOS]
    metaspace = dict(replacement="▁", prepend_scheme="always", split=True)
    # Metaspace first (one "▁" per space, so decoding restores the text exactly), then line breaks and tabs, then
    # punctuation, each as tokens of their own.
    word_split = pre_tokenizers.Sequence([
        pre_tokenizers.Metaspace(**metaspace),
        pre_tokenizers.Split(Regex(r"[\n\r\t]"), behavior="isolated"),
        pre_tokenizers.Punctuation(behavior="isolated"),
    ])
    if tokenizer_type == "bpe":
        tokenizer = Tokenizer(models.BPE())
        tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
        tokenizer.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=specials,
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    elif tokenizer_type == "wordpiece":
        tokenizer = Tokenizer(models.WordPiece(unk_token=UNK, continuing_subword_prefix="##"))
        tokenizer.pre_tokenizer = word_split
        tokenizer.decoder = decoders.Sequence([decoders.Replace("##", ""), decoders.Metaspace(**metaspace)])
        trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, min_frequency=min_frequency,
                                            special_tokens=specials, continuing_subword_prefix="##")
    elif tokenizer_type == "unigram":
        tokenizer = Tokenizer(models.Unigram())
        tokenizer.pre_tokenizer = word_split
        tokenizer.decoder = decoders.Metaspace(**metaspace)
        trainer = trainers.UnigramTrainer(vocab_size=vocab_size, special_tokens=specials, unk_token=UNK)
    else:
        tokenizer = Tokenizer(models.WordLevel(unk_token=UNK))
        tokenizer.pre_tokenizer = word_split
        tokenizer.decoder = decoders.Metaspace(**metaspace)
        trainer = trainers.WordLevelTrainer(vocab_size=vocab_size, min_frequency=min_frequency,
                                            special_tokens=specials)
    tokenizer.normalizer = normalizers.NFC()
    tokenizer.train_from_iterator(texts, trainer=trainer, length=len(texts))
    for index, token in enumerate(specials):
        if tokenizer.token_to_id(token) != index:
            raise RuntimeError(f"Trained tokenizer put {token} at {tokenizer.token_to_id(token)}, expected {index}.")
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"$A {EOS}", pair=f"$A {EOS} $B {EOS}", special_tokens=[(EOS, 1)]
    )
    kwargs = {"model_max_length": model_max_length} if model_max_length else {}
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, pad_token=PAD, eos_token=EOS, unk_token=UNK, bos_token=BOS,
        clean_up_tokenization_spaces=False, **kwargs,
    )


# ---------------------------------------------------------------------------------------------------------------------
# Model
# ---------------------------------------------------------------------------------------------------------------------


def _decoder_start(model_type: str, tokenizer) -> int:
    if model_type in _DECODER_START_PAD:
        return tokenizer.pad_token_id
    if model_type in _DECODER_START_EOS:
        return tokenizer.eos_token_id
    return tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.pad_token_id


def _set_special_ids(config, tokenizer, model_type: str) -> None:
    for name in ("pad", "eos", "bos"):
        value = getattr(tokenizer, f"{name}_token_id")
        if value is not None:
            setattr(config, f"{name}_token_id", value)
    config.decoder_start_token_id = _decoder_start(model_type, tokenizer)
    for name in ("forced_bos_token_id", "forced_eos_token_id"):
        if hasattr(config, name):
            setattr(config, name, None)


def build_model(model_args: ModelArguments, data_args: DataTrainingArguments, tokenizer, trained_tokenizer: bool):
    """The base encoder-decoder (pretrained or from --model_type), wrapped with the copy mechanism when asked."""
    wrapped = None
    if model_args.model_name_or_path is not None:
        common = dict(cache_dir=model_args.cache_dir, revision=model_args.model_revision, token=model_args.token,
                      trust_remote_code=model_args.trust_remote_code)
        config = AutoConfig.from_pretrained(model_args.config_name or model_args.model_name_or_path, **common)
        model = AutoModelForSeq2SeqLM.from_pretrained(model_args.model_name_or_path, config=config, **common)
        if isinstance(model, PointerGeneratorForConditionalGeneration):
            wrapped, base = model, model.base
        else:
            base = model
        model_type = base.config.model_type
        if trained_tokenizer:
            logger.warning("A newly trained tokenizer on a pretrained model: its embeddings are resized and the "
                           "special token ids reset; the pretrained embeddings no longer match the token ids.")
            _set_special_ids(base.config, tokenizer, model_type)
        from_scratch = False
    else:
        if model_args.config_name:
            config = AutoConfig.from_pretrained(model_args.config_name, cache_dir=model_args.cache_dir)
        else:
            if model_args.model_type not in CONFIG_MAPPING:
                raise ValueError(f"Unknown --model_type {model_args.model_type!r}.")
            config = CONFIG_MAPPING[model_args.model_type]()
            if model_args.config_overrides:
                logger.info("Overriding config: %s", model_args.config_overrides)
                config.update_from_string(model_args.config_overrides)
        model_type = config.model_type
        if not getattr(config, "is_encoder_decoder", False):
            raise ValueError(f"--model_type {model_type} is not an encoder-decoder.")
        config.vocab_size = len(tokenizer)
        if hasattr(config, "decoder_vocab_size"):
            config.decoder_vocab_size = len(tokenizer)
        _set_special_ids(config, tokenizer, model_type)
        max_positions = getattr(config, "max_position_embeddings", None)
        needed = max(data_args.max_source_length, data_args.max_target_length, data_args.val_max_target_length) + 2
        if max_positions is not None and max_positions < needed:
            logger.info("max_position_embeddings %d -> %d to fit the length limits.", max_positions, needed)
            config.max_position_embeddings = needed
        base = AutoModelForSeq2SeqLM.from_config(config)
        from_scratch = True
    embeddings = base.get_input_embeddings().weight.shape[0]
    if len(tokenizer) > embeddings:
        base.resize_token_embeddings(len(tokenizer))

    generation = base.generation_config
    generation.update(max_length=data_args.val_max_target_length, num_beams=data_args.num_beams or 1)
    if from_scratch or trained_tokenizer:
        generation.update(decoder_start_token_id=base.config.decoder_start_token_id, bos_token_id=tokenizer.bos_token_id,
                          eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
                          forced_bos_token_id=None, forced_eos_token_id=None, bad_words_ids=None)
    if data_args.forced_bos_token is not None:
        generation.forced_bos_token_id = tokenizer.convert_tokens_to_ids(data_args.forced_bos_token)

    if not model_args.copy_mechanism:
        return base
    if wrapped is not None and not trained_tokenizer:
        wrapped.generation_config = generation
        return wrapped
    copy_settings = dict(pointer=model_args.pointer, coverage=model_args.coverage,
                         coverage_weight=model_args.coverage_weight, unk_token_id=tokenizer.unk_token_id)
    p_gen_bias = model_args.p_gen_bias_init
    if p_gen_bias is None and from_scratch:
        p_gen_bias = 0.0
    if p_gen_bias is not None:
        copy_settings["p_gen_bias_init"] = p_gen_bias
    model = PointerGeneratorForConditionalGeneration.from_base(base, **copy_settings)
    model.generation_config = generation
    return model


# ---------------------------------------------------------------------------------------------------------------------
# Metrics with per-example OOV tables
# ---------------------------------------------------------------------------------------------------------------------


class EvalSide:
    """Raw sources/references and OOV tables, aligned with a tokenized eval or test dataset's order."""

    def __init__(self, sources: list[str], references: list[str], oov_words: list[list[str]]):
        self.sources, self.references, self.oov_words = sources, references, oov_words
        self.predictions: list[str] | None = None


class TranslationMetrics:
    """`compute_metrics` for Seq2SeqTrainer: decodes predictions with the OOV tables of the split being scored.

    Eval and predict datasets share the Trainer, so the caller selects the split with `use(name)` before
    `trainer.predict`; evaluation during training uses the "eval" side.
    """

    def __init__(self, tokenizer, vocab_size: int, copy_mechanism: bool):
        self.tokenizer, self.vocab_size, self.copy_mechanism = tokenizer, vocab_size, copy_mechanism
        self.sides: dict[str, EvalSide] = {}
        self.current = "eval"

    def use(self, name: str) -> "TranslationMetrics":
        self.current = name
        return self

    def decode(self, predictions: np.ndarray, side: EvalSide) -> list[str]:
        if isinstance(predictions, tuple):
            predictions = predictions[0]
        predictions = np.where(predictions >= 0, predictions, self.tokenizer.pad_token_id)
        tables = side.oov_words if self.copy_mechanism else [None] * len(predictions)
        texts = batch_decode_with_oovs(self.tokenizer, predictions, tables, vocab_size=self.vocab_size)
        return [text.strip() for text in texts]

    def __call__(self, eval_preds) -> dict[str, float]:
        side = self.sides[self.current]
        predictions = eval_preds.predictions
        if isinstance(predictions, tuple):
            predictions = predictions[0]
        if len(predictions) > len(side.sources) and _world_size() > 1:
            # Distributed evaluation fills the last global batch by wrapping around to the first examples, and these
            # duplicates come back appended after the real predictions, which stay in dataset order.
            predictions = predictions[: len(side.sources)]
        if len(predictions) != len(side.sources):
            raise RuntimeError(f"{len(predictions)} predictions for {len(side.sources)} {self.current} examples: the "
                               "side list is not aligned with the dataset.")
        side.predictions = self.decode(predictions, side)
        metrics = translation_metrics(side.sources, side.predictions, side.references, side.oov_words)
        lengths = (predictions >= 0) & (predictions != self.tokenizer.pad_token_id)
        metrics["gen_len"] = float(np.mean(lengths.sum(-1)))
        return {k: round(v, 4) for k, v in metrics.items() if not (isinstance(v, float) and math.isnan(v))}


def _world_size() -> int:
    return torch.distributed.get_world_size() if torch.distributed.is_initialized() else 1


@torch.no_grad()
def mean_p_gen(trainer: Seq2SeqTrainer, dataset) -> float | None:
    """Mean p_gen over the target tokens of `dataset`, teacher-forced on the references."""
    model = trainer.model
    if not isinstance(model, PointerGeneratorForConditionalGeneration):
        return None
    model.eval()
    total, count = 0.0, 0
    for batch in trainer.get_test_dataloader(dataset):
        batch = trainer._prepare_inputs(batch)
        outputs = model(**batch, output_pointer=True)
        mask = batch["labels"] != -100
        total += float(outputs.p_gen[mask].double().sum())
        count += int(mask.sum())
    return total / count if count else None


class PointerGeneratorSeq2SeqTrainer(Seq2SeqTrainer):
    """Seq2SeqTrainer whose `create_model_card` writes our rendered card (the stock one drops translation results),
    so `push_to_hub()` uploads it."""

    rendered_model_card: str | None = None

    def _get_eval_sampler(self, eval_dataset):
        # Predictions are decoded with OOV tables kept in dataset order: never reorder evaluation data (the stock
        # sampler groups it by length when train_sampling_strategy="group_by_length").
        if eval_dataset is None or not has_length(eval_dataset):
            return super()._get_eval_sampler(eval_dataset)
        if self.args.world_size <= 1:
            return SequentialSampler(eval_dataset)
        # Distributed: no sampler, so Accelerate shards in order and gather_for_metrics restores the order and drops
        # the padding duplicates (a length-grouped sampler would be re-sharded and come back misaligned).
        return None

    def create_model_card(self, *args, **kwargs):
        if self.rendered_model_card is None:
            return super().create_model_card(*args, **kwargs)
        if self.is_world_process_zero():
            Path(self.args.output_dir, "README.md").write_text(self.rendered_model_card, encoding="utf-8")


# ---------------------------------------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------------------------------------


def parse_args(args: list[str] | None = None):
    parser = HfArgumentParser((ModelArguments, DataTrainingArguments, Seq2SeqTrainingArguments))
    if args is None and len(sys.argv) == 2 and sys.argv[1].endswith(".json"):
        return parser.parse_json_file(json_file=os.path.abspath(sys.argv[1]))
    return parser.parse_args_into_dataclasses(args=args)


def main(args: list[str] | None = None) -> dict[str, Any]:
    """Run training/evaluation/prediction as the command line `args` say; return the results dict."""
    model_args, data_args, training_args = parse_args(args)

    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", datefmt="%m/%d/%Y %H:%M:%S",
                        handlers=[logging.StreamHandler(sys.stdout)])
    log_level = training_args.get_process_log_level()
    logger.setLevel(log_level)
    transformers.utils.logging.set_verbosity(log_level)
    logger.info("Training/evaluation parameters %s", training_args)

    # Resume: an explicit --resume_from_checkpoint, else the last checkpoint found in output_dir.
    last_checkpoint = None
    if os.path.isdir(training_args.output_dir) and training_args.do_train and not data_args.overwrite_output_dir:
        last_checkpoint = get_last_checkpoint(training_args.output_dir)
        if last_checkpoint is not None and training_args.resume_from_checkpoint is None:
            logger.info("Checkpoint detected, resuming training at %s. Pass --overwrite_output_dir to train from "
                        "scratch instead.", last_checkpoint)
    checkpoint = training_args.resume_from_checkpoint or last_checkpoint
    if checkpoint is not None and not os.path.isdir(checkpoint):
        raise ValueError(f"--resume_from_checkpoint {checkpoint} is not a folder.")

    if model_args.copy_mechanism and training_args.label_smoothing_factor > 0:
        raise ValueError("--label_smoothing_factor is not supported with the copy mechanism: the model computes its "
                         "own loss over the mixed distribution. Drop it, or use --no_copy_mechanism.")

    set_seed(training_args.seed)

    # -- data --
    needed = [s for s, flag in (("train", training_args.do_train), ("validation", training_args.do_eval),
                                ("test", training_args.do_predict)) if flag]
    raw_splits, data_stats, data_origin = load_raw_splits(data_args, model_args, needed)
    for split, flag in (("train", "--do_train"), ("validation", "--do_eval"), ("test", "--do_predict")):
        if split in needed and split not in raw_splits:
            raise ValueError(f"{flag} requires a {split} dataset.")

    def head(split: str, limit: int | None):
        sources, targets = raw_splits[split]
        if limit is not None:
            sources, targets = sources[:limit], targets[:limit]
        prefix = data_args.source_prefix or ""
        return [prefix + s for s in sources], targets

    train_pairs = head("train", data_args.max_train_samples) if training_args.do_train else None

    # -- tokenizer (a resumed run reuses the checkpoint's, so ids keep their meaning) --
    trained_tokenizer = False
    if checkpoint is not None and model_args.train_tokenizer and os.path.isfile(os.path.join(checkpoint,
                                                                                            "tokenizer.json")):
        tokenizer = AutoTokenizer.from_pretrained(checkpoint)
        trained_tokenizer = True
        logger.info("Reusing the tokenizer saved in %s.", checkpoint)
    elif model_args.train_tokenizer:
        if train_pairs is None:
            raise ValueError("--train_tokenizer needs training data (--do_train).")
        started = time.perf_counter()
        tokenizer = train_shared_tokenizer(
            train_pairs[0] + train_pairs[1], model_args.tokenizer_type, model_args.tokenizer_vocab_size,
            model_args.tokenizer_min_frequency,
        )
        trained_tokenizer = True
        logger.info("Trained a %s tokenizer of %d tokens in %.1fs.", model_args.tokenizer_type, len(tokenizer),
                    time.perf_counter() - started)
    else:
        tokenizer = AutoTokenizer.from_pretrained(
            model_args.tokenizer_name or model_args.model_name_or_path, cache_dir=model_args.cache_dir,
            revision=model_args.model_revision, token=model_args.token,
            trust_remote_code=model_args.trust_remote_code,
        )
    if not getattr(tokenizer, "is_fast", False):
        raise ValueError("The pointer-generator needs a fast tokenizer (offset mappings locate OOV words).")
    if tokenizer.unk_token_id is None and model_args.copy_mechanism:
        logger.warning("The tokenizer has no unknown token: nothing is out of vocabulary, so only in-vocabulary "
                       "tokens are copied.")

    model = build_model(model_args, data_args, tokenizer, trained_tokenizer)
    vocab_size = model.config.vocab_size  # the output width; extended (copy-only) ids start here
    if vocab_size < len(tokenizer):
        raise ValueError(f"The model's vocabulary ({vocab_size}) is smaller than the tokenizer's ({len(tokenizer)}).")

    # -- preprocessing --
    import datasets

    unk_id = tokenizer.unk_token_id
    copy = model_args.copy_mechanism
    padding = "max_length" if data_args.pad_to_max_length else False

    def preprocess(batch, max_target_length):
        encoded = encode_with_oovs(
            tokenizer, batch["source"], batch["target"], vocab_size=vocab_size,
            max_length=data_args.max_source_length, max_target_length=max_target_length, truncation=True,
            padding=padding,
        )
        full_sources = tokenizer(batch["source"], truncation=False)["input_ids"]
        full_targets = tokenizer(text_target=batch["target"], truncation=False)["input_ids"]
        labels = encoded["labels"]
        if not copy:  # the plain base cannot emit extended ids: a copied word is just unknown to it
            labels = [[unk_id if t >= vocab_size else t for t in row] for row in labels]
        if not data_args.ignore_pad_token_for_loss:
            labels = [[tokenizer.pad_token_id if t == -100 else t for t in row] for row in labels]
        out = {
            "input_ids": encoded["input_ids"],
            "attention_mask": encoded["attention_mask"],
            "labels": labels,
            "oov_words": encoded["oov_words"],
            "source_truncated": [len(f) > data_args.max_source_length for f in full_sources],
            "target_truncated": [len(f) > max_target_length for f in full_targets],
            "num_tokens": [sum(m) + sum(1 for t in row if t != -100)
                           for m, row in zip(encoded["attention_mask"], encoded["labels"])],
        }
        if copy:
            out["extended_input_ids"] = encoded["extended_input_ids"]
        return out

    def tokenize(split: str, limit: int | None, max_target_length: int, description: str):
        sources, targets = head(split, limit)
        dataset = datasets.Dataset.from_dict({"source": sources, "target": targets})
        with training_args.main_process_first(desc=description):
            dataset = dataset.map(
                preprocess, fn_kwargs={"max_target_length": max_target_length}, batched=True,
                num_proc=data_args.preprocessing_num_workers, remove_columns=["source", "target"],
                load_from_cache_file=not data_args.overwrite_cache, desc=description,
            )
        truncated_sources = int(sum(dataset["source_truncated"]))
        truncated_targets = int(sum(dataset["target_truncated"]))
        data_stats[split]["used"] = len(dataset)
        data_stats[split]["truncated_sources"] = truncated_sources
        data_stats[split]["truncated_targets"] = truncated_targets
        if truncated_sources or truncated_targets:
            logger.warning("%s: truncated %d sources to %d tokens and %d targets to %d tokens.", split,
                           truncated_sources, data_args.max_source_length, truncated_targets, max_target_length)
        side = EvalSide(sources, targets, dataset["oov_words"])
        return dataset, side

    train_dataset = eval_dataset = predict_dataset = None
    metric = TranslationMetrics(tokenizer, vocab_size, copy)
    if training_args.do_train:
        train_dataset, _ = tokenize("train", data_args.max_train_samples, data_args.max_target_length,
                                    "Running tokenizer on train dataset")
    if training_args.do_eval:
        eval_dataset, metric.sides["eval"] = tokenize("validation", data_args.max_eval_samples,
                                                      data_args.val_max_target_length,
                                                      "Running tokenizer on validation dataset")
    if training_args.do_predict:
        predict_dataset, metric.sides["predict"] = tokenize("test", data_args.max_predict_samples,
                                                            data_args.val_max_target_length,
                                                            "Running tokenizer on prediction dataset")

    label_pad_token_id = -100 if data_args.ignore_pad_token_for_loss else tokenizer.pad_token_id
    if copy:
        data_collator = DataCollatorForPointerGenerator(
            tokenizer, model=model, label_pad_token_id=label_pad_token_id, vocab_size=vocab_size,
            pad_to_multiple_of=8 if training_args.fp16 else None,
        )
    else:
        data_collator = DataCollatorForSeq2Seq(
            tokenizer, model=model, label_pad_token_id=label_pad_token_id,
            pad_to_multiple_of=8 if training_args.fp16 else None,
        )

    # predict_with_generate pads to the generation length: keep the Trainer's and the model's in step.
    if training_args.generation_max_length is None:
        training_args.generation_max_length = data_args.val_max_target_length
    if training_args.generation_num_beams is None:
        training_args.generation_num_beams = data_args.num_beams or model.generation_config.num_beams or 1
    model.generation_config.max_length = training_args.generation_max_length
    model.generation_config.num_beams = training_args.generation_num_beams

    trainer = PointerGeneratorSeq2SeqTrainer(
        model=model,
        args=training_args,
        train_dataset=train_dataset,
        eval_dataset=eval_dataset,
        processing_class=tokenizer,
        data_collator=data_collator,
        compute_metrics=metric.use("eval") if training_args.predict_with_generate else None,
    )

    results: dict[str, Any] = {}
    output_dir = Path(training_args.output_dir)

    # -- train --
    if training_args.do_train:
        start_step = 0
        if checkpoint is not None and os.path.isfile(os.path.join(checkpoint, "trainer_state.json")):
            start_step = json.loads(Path(checkpoint, "trainer_state.json").read_text())["global_step"]
        train_result = trainer.train(resume_from_checkpoint=checkpoint)
        trainer.save_model()  # also saves the tokenizer (processing_class)
        tokenizer.save_pretrained(training_args.output_dir)
        metrics = dict(train_result.metrics)
        steps_run = trainer.state.global_step - start_step
        samples_run = steps_run * training_args.per_device_train_batch_size * training_args.gradient_accumulation_steps \
            * max(training_args.world_size, 1)
        mean_tokens = float(np.mean(train_dataset["num_tokens"]))
        metrics["train_samples"] = len(train_dataset)
        if start_step:
            metrics["train_resumed_from_step"] = start_step
        if metrics.get("train_runtime"):
            metrics["train_tokens_per_second"] = round(mean_tokens * samples_run / metrics["train_runtime"], 1)
        for key in ("skipped_empty_lines", "skipped_empty_text", "skipped_undecodable_lines",
                    "skipped_malformed_lines", "truncated_sources", "truncated_targets"):
            metrics[f"train_{key}"] = int(data_stats["train"].get(key, 0))
        trainer.log_metrics("train", metrics)
        trainer.save_metrics("train", metrics)
        trainer.save_state()
        results.update(metrics)

    # -- evaluate --
    max_length = training_args.generation_max_length
    num_beams = training_args.generation_num_beams
    if training_args.do_eval:
        logger.info("*** Evaluate ***")
        metrics = trainer.evaluate(max_length=max_length, num_beams=num_beams, metric_key_prefix="eval")
        metrics["eval_samples"] = len(eval_dataset)
        trainer.log_metrics("eval", metrics)
        trainer.save_metrics("eval", metrics)
        results.update(metrics)

    # -- predict --
    if training_args.do_predict:
        logger.info("*** Predict ***")
        metric.use("predict")
        try:
            predict_results = trainer.predict(predict_dataset, metric_key_prefix="predict", max_length=max_length,
                                              num_beams=num_beams)
        finally:
            metric.use("eval")
        metrics = dict(predict_results.metrics)
        metrics["predict_samples"] = len(predict_dataset)
        p_gen = mean_p_gen(trainer, predict_dataset)
        if p_gen is not None:
            metrics["predict_mean_p_gen"] = round(p_gen, 4)
        metrics["predict_truncated_sources"] = int(data_stats["test"].get("truncated_sources", 0))
        trainer.log_metrics("predict", metrics)
        trainer.save_metrics("predict", metrics)
        results.update(metrics)
        if trainer.is_world_process_zero() and training_args.predict_with_generate:
            side = metric.sides["predict"]
            predictions = side.predictions
            if predictions is None:  # no compute_metrics ran: decode here
                predictions = metric.decode(predict_results.predictions, side)
            output_dir.mkdir(parents=True, exist_ok=True)
            with open(output_dir / "generated_predictions.txt", "w", encoding="utf-8") as writer:
                writer.write("\n".join(p.replace("\r\n", "\\n").replace("\n", "\\n").replace("\r", "\\n")
                                       for p in predictions) + "\n")

    if trainer.is_world_process_zero():
        output_dir.mkdir(parents=True, exist_ok=True)
        (output_dir / "data_stats.json").write_text(
            json.dumps({split: dict(stats) for split, stats in data_stats.items()}, indent=2) + "\n", encoding="utf-8"
        )

    # -- model card (after save_model, before push) --
    settings = collect_settings(model_args, data_args, training_args, model, tokenizer, data_origin, data_stats)
    if training_args.do_train and trainer.is_world_process_zero():
        from training.model_card import render_model_card

        try:
            card = render_model_card(results, settings)
        except Exception as error:  # a card must never cost the trained model
            logger.error("Could not render the model card: %s", error)
        else:
            trainer.rendered_model_card = card
            (output_dir / "README.md").write_text(card, encoding="utf-8")

    if training_args.push_to_hub:
        kwargs = {"finetuned_from": model_args.model_name_or_path, "tasks": "translation",
                  "language": [data_args.source_lang, data_args.target_lang]}
        trainer.push_to_hub(**kwargs)

    results["settings"] = settings
    return results


def collect_settings(model_args, data_args, training_args, model, tokenizer, data_origin, data_stats) -> dict:
    """What the model card reports about how the model was made."""
    base = model.base if isinstance(model, PointerGeneratorForConditionalGeneration) else model
    parameters = sum(p.numel() for p in model.parameters())
    copy = isinstance(model, PointerGeneratorForConditionalGeneration)
    return {
        "copy_mechanism": copy,
        "pointer": model.config.pointer if copy else None,
        "coverage": bool(model.config.coverage) if copy else False,
        "coverage_weight": model.config.coverage_weight if copy else None,
        "base_model": model_args.model_name_or_path,
        "model_type": base.config.model_type,
        "config_overrides": model_args.config_overrides,
        "parameters": parameters,
        "d_model": getattr(base.config, "d_model", None),
        "encoder_layers": getattr(base.config, "encoder_layers", getattr(base.config, "num_layers", None)),
        "decoder_layers": getattr(base.config, "decoder_layers", getattr(base.config, "num_decoder_layers", None)),
        "tokenizer_type": _tokenizer_kind(tokenizer),
        "trained_tokenizer": model_args.train_tokenizer,
        "tokenizer_source": None if model_args.train_tokenizer else (model_args.tokenizer_name
                                                                     or model_args.model_name_or_path),
        "vocab_size": len(tokenizer),
        "source_lang": data_args.source_lang,
        "target_lang": data_args.target_lang,
        "data_origin": data_origin,
        "data_files": {k: getattr(data_args, k) for k in ("train_file", "validation_file", "test_file")
                       if getattr(data_args, k)},
        "data_stats": {split: dict(stats) for split, stats in data_stats.items()},
        "max_source_length": data_args.max_source_length,
        "max_target_length": data_args.max_target_length,
        "num_beams": training_args.generation_num_beams,
        "generation_max_length": training_args.generation_max_length,
        "learning_rate": training_args.learning_rate,
        "lr_scheduler_type": str(getattr(training_args.lr_scheduler_type, "value", training_args.lr_scheduler_type)),
        "warmup_steps": training_args.warmup_steps,
        "per_device_train_batch_size": training_args.per_device_train_batch_size,
        "gradient_accumulation_steps": training_args.gradient_accumulation_steps,
        "num_train_epochs": training_args.num_train_epochs,
        "max_steps": training_args.max_steps,
        "weight_decay": training_args.weight_decay,
        "label_smoothing_factor": training_args.label_smoothing_factor,
        "seed": training_args.seed,
        "hub_model_id": training_args.hub_model_id,
        "model_license": model_args.model_license,
        "output_dir": training_args.output_dir,
        "hardware": f"{'CPU' if not torch.cuda.is_available() or training_args.use_cpu else torch.cuda.get_device_name()}"
                    f", {torch.get_num_threads()} thread{'s' if torch.get_num_threads() != 1 else ''}",
        "versions": {"transformers": transformers.__version__, "torch": torch.__version__,
                     "hf_pgen": hf_pgen.__version__},
    }


def _tokenizer_kind(tokenizer) -> str:
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        return type(tokenizer).__name__
    kind = type(backend.model).__name__
    if kind == "BPE" and type(backend.pre_tokenizer).__name__ == "ByteLevel":
        kind = "byte-level BPE"
    return kind


def _mp_fn(index):  # for xla_spawn (TPUs)
    main()


if __name__ == "__main__":
    main()
