#!/usr/bin/env python
"""Train and evaluate a pointer-generator (or, with --no_copy_mechanism, the plain base) for summarisation.

Adapted from 🤗 Transformers' `examples/pytorch/summarization/run_summarization.py`, with the same flags where they
exist (`--text_column/--summary_column`, `--source_prefix`, `--max_source_length`, `--max_target_length`,
`--val_max_target_length`, `--num_beams`, `--predict_with_generate`, `--max_{train,eval,predict}_samples`, `--lang`,
...), and without its downloads: ROUGE comes from `rouge-score` directly, and sentences are split for ROUGE-Lsum by a
rule (`hf_pgen.metrics.split_sentences`) instead of NLTK's punkt. Run it as a module from the repository root:

    python -m training.run_summarization --model_type mbart \\
        --config_overrides "d_model=128,encoder_layers=3,decoder_layers=3,encoder_attention_heads=4,decoder_attention_heads=4,encoder_ffn_dim=512,decoder_ffn_dim=512,max_position_embeddings=128" \\
        --train_tokenizer --tokenizer_type wordlevel --tokenizer_vocab_size 10000 \\
        --train_file data/train.jsonl --validation_file data/validation.jsonl --test_file data/test.jsonl \\
        --text_column text --summary_column summary --max_source_length 128 --max_target_length 32 \\
        --do_train --do_eval --do_predict --predict_with_generate --output_dir outputs/summariser

or wrap a pretrained encoder-decoder: `--model_name_or_path facebook/bart-base`. The copy mechanism, the tokenizer
training, the data checks, the outputs and the model card are run_translation's (`training/seq2seq.py`,
`training/arguments.py`): `--copy_mechanism/--no_copy_mechanism`, `--coverage`, `--add_coverage` (coverage switched
on in a trained pointer-generator for a final phase, as See et al. did), ...

Data: `--train_file/--validation_file/--test_file` (JSON lines or CSV / TSV, each optionally gzipped; Parquet; Arrow)
or `--dataset_name` (a Hub dataset, a local folder, or a DatasetDict saved with `save_to_disk`). The text and summary
columns default, as upstream, to the dataset's known pair (`cnn_dailymail`: article, highlights) or else to its first
two columns. A missing column is an error naming the columns the data has; empty rows are skipped and counted,
over-long ones truncated and counted (`data_stats.json`). Debian's package descriptions make a corpus that installs
offline: `python -m training.data.debian_summaries --out DIR` (what `make summarise` trains on).

Writes into --output_dir: the model folder (`pipeline("summarization")` loads it once hf_pgen is imported),
`all_results.json` (`predict_rouge1`, `predict_rouge2`, `predict_rougeL`, `predict_rougeLsum`, `predict_names_kept`,
`predict_bigram_repeats`, `predict_novel_bigrams`, `predict_gen_len`, ...), `generated_predictions.txt` (one line per
test example), `data_stats.json` and the model card (README.md) with the summarisation results; `--push_to_hub`
pushes the folder with its card.
"""

from __future__ import annotations

import gzip
import json
import logging
import os
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from transformers import set_seed

from hf_pgen.metrics import summarization_metrics
from training.arguments import Seq2SeqDataArguments, copy_settings
from training.data.files import DataError, file_format, load_translation_splits
from training.model import build_model, has_language_codes, set_language_codes
from training.run_details import collect_settings, dataset_name, training_details
from training.seq2seq import (
    build_trainer,
    check_model,
    check_request,
    find_checkpoint,
    leave_process_group,
    limit_splits,
    load_tokenizer,
    needed_splits,
    setup_logging,
    tokenize_splits,
    train_evaluate_predict,
    write_card,
)
from training.seq2seq import parse_args as _parse_args

logger = logging.getLogger(__name__)

COLUMN_FLAGS = "--text_column/--summary_column"
# Upstream's `summarization_name_mapping`, for the datasets it names: their text and summary columns.
SUMMARIZATION_NAME_MAPPING = {
    "cnn_dailymail": ("article", "highlights"),
    "xsum": ("document", "summary"),
    "samsum": ("dialogue", "summary"),
    "big_patent": ("description", "abstract"),
}


@dataclass
class DataTrainingArguments(Seq2SeqDataArguments):
    """What data to summarise (the text and summary columns), how to cut it, how to decode, and what to write."""

    dataset_name: str | None = field(
        default=None,
        metadata={
            "help": "A `datasets` dataset: Hub id, local folder, or a DatasetDict saved with save_to_disk (or pass "
            "data files). Debian's package descriptions make one offline: python -m training.data.debian_summaries."
        },
    )
    text_column: str | None = field(
        default=None,
        metadata={
            "help": "The column (JSON key) holding the full texts. Default: the dataset's known one (cnn_dailymail, "
            "xsum, samsum, big_patent), else the first column."
        },
    )
    summary_column: str | None = field(
        default=None,
        metadata={"help": "The column (JSON key) holding the summaries. Default: as --text_column, the second column."},
    )
    lang: str | None = field(
        default=None,
        metadata={
            "help": "The language of the data (an ISO code for the model card; a language code such as en_XX "
            "for multilingual tokenizers such as mBART's, which need it)."
        },
    )


def parse_args(args: list[str] | None = None):
    """`(model_args, copy_args, data_args, training_args)` from the command line (default: `sys.argv`)."""
    return _parse_args(DataTrainingArguments, args)


def _first_columns(path: str) -> list[str]:
    """The columns of a data file in order: its header (CSV, TSV) or its first JSON object's keys."""
    kind = file_format(path)
    opener = gzip.open if path.lower().endswith(".gz") else open
    if kind in ("csv", "tsv"):
        import csv

        with opener(path, "rt", encoding="utf-8", newline="") as handle:
            return next(csv.reader(handle, delimiter="," if kind == "csv" else "\t"), [])
    if kind == "json":
        with opener(path, "rt", encoding="utf-8") as handle:
            head = handle.read(1)
            if head == "[":  # one JSON array
                handle.seek(0)
                records = json.load(handle)
                return list(records[0]) if records and isinstance(records[0], dict) else []
            for line in (head + handle.readline(), *handle):
                if line.strip():
                    record = json.loads(line)
                    return list(record) if isinstance(record, dict) else []
        return []
    import datasets

    builder = {"parquet": "parquet", "arrow": "arrow"}[kind]
    return list(datasets.load_dataset(builder, data_files={"data": path}, split="data").column_names)


def resolve_columns(data_args, needed: list[str], cache_dir: str | None = None, token: str | None = None):
    """`(text_column, summary_column)`: the flags, else the dataset's known pair, else the data's first two columns
    (as upstream). Raises `DataError` when the data has fewer than two columns to take."""
    text, summary = data_args.text_column, data_args.summary_column
    if text is not None and summary is not None:
        return text, summary
    name = data_args.dataset_name
    known = SUMMARIZATION_NAME_MAPPING.get(os.path.basename(name.rstrip("/"))) if name else None
    if known is not None:
        columns, where = list(known), name
    else:
        files = {"train": data_args.train_file, "validation": data_args.validation_file, "test": data_args.test_file}
        path = next((files[s] for s in needed if files[s]), None) or next((p for p in files.values() if p), None)
        if path is not None:
            columns, where = _first_columns(path), path
        elif name is not None:
            from training.data.files import _load_named_dataset

            raw = _load_named_dataset(name, data_args.dataset_config_name, cache_dir, token)
            split = next((s for s in needed if s in raw), next(iter(raw)))
            columns, where = list(raw[split].column_names), f"{name}[{split}]"
        else:
            raise DataError(
                "No data: pass --train_file/--validation_file/--test_file or --dataset_name (Debian's package "
                "descriptions make a corpus offline: python -m training.data.debian_summaries --out DIR)."
            )
    if text is None:  # the first column that is not the summary's
        text = next((c for c in columns if c != summary), None)
    if summary is None:
        rest = [c for c in columns if c != text]
        summary = rest[0] if rest else None
    if text is None or summary is None:
        raise DataError(
            f"{where}: cannot take the text and summary columns from its columns {columns}: pass {COLUMN_FLAGS}."
        )
    logger.info("Summarising the column %r into %r (%s).", text, summary, where)
    return text, summary


# ---------------------------------------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------------------------------------


def main(args: list[str] | None = None) -> dict[str, Any]:
    """Run training/evaluation/prediction as the command line `args` say; return the results dict."""
    model_args, copy_args, data_args, training_args = parse_args(args)
    setup_logging(training_args)
    check_request(data_args, training_args, copy_args)
    checkpoint = find_checkpoint(data_args, training_args)
    set_seed(training_args.seed)
    copy = copy_args.copy_mechanism

    # -- data: the text and summary columns as "source" and "target" --
    needed = needed_splits(training_args)
    text_column, summary_column = resolve_columns(data_args, needed, model_args.cache_dir, model_args.token)
    data_args.text_column, data_args.summary_column = text_column, summary_column
    raw_splits, data_stats, data_origin = load_translation_splits(
        text_column,
        summary_column,
        needed,
        train_file=data_args.train_file,
        validation_file=data_args.validation_file,
        test_file=data_args.test_file,
        dataset_name=data_args.dataset_name,
        dataset_config_name=data_args.dataset_config_name,
        skip_bad_lines=data_args.skip_bad_lines,
        cache_dir=model_args.cache_dir,
        token=model_args.token,
        num_proc=data_args.preprocessing_num_workers,
        flags=COLUMN_FLAGS,
    )
    raw_splits = limit_splits(raw_splits, needed, data_args)

    tokenizer = load_tokenizer(model_args, checkpoint, raw_splits, copy)
    model = build_model(
        model_args, data_args, tokenizer, model_args.train_tokenizer, copy_settings(copy_args) if copy else None
    )
    # One language for both sides (mBART-style tokenizers need its code), and --forced_bos_token for any tokenizer.
    if has_language_codes(tokenizer) and data_args.lang is None:
        raise ValueError(f"{type(tokenizer).__name__} has language codes: pass --lang (e.g. --lang en_XX).")
    set_language_codes(
        tokenizer,
        model,
        SimpleNamespace(
            source_lang=data_args.lang or "",
            target_lang=data_args.lang or "",
            forced_bos_token=data_args.forced_bos_token,
        ),
    )
    check_model(model, tokenizer, model_args, copy_args, data_args, training_args, checkpoint, "summarize: ")

    datasets_by_split = tokenize_splits(raw_splits, tokenizer, model, data_args, training_args, data_stats, copy)
    trainer = build_trainer(
        model, tokenizer, data_args, training_args, datasets_by_split, copy, metrics=summarization_metrics
    )
    results = train_evaluate_predict(
        trainer, datasets_by_split, data_args, training_args, checkpoint, data_stats, task="summarization"
    )

    settings = collect_settings(
        model_args, data_args, training_args, model, tokenizer, data_origin, data_stats, task="summarization"
    )
    write_card(
        trainer,
        results,
        data_stats,
        model_args,
        training_args,
        tasks="summarization",
        language=[data_args.lang.split("_")[0]] if data_args.lang else None,
        dataset_name=dataset_name(settings),
        dataset=data_origin if data_origin != "files" else None,
        training_details=training_details(settings, results),
    )
    results["settings"] = settings
    return results


def _mp_fn(index):  # for xla_spawn (TPUs)
    main()


if __name__ == "__main__":
    main()
    leave_process_group()
