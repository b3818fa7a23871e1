"""The steps that run_translation and run_summarization share, in the order a run takes them.

Each script reads its own data (language pairs, text/summary columns) into splits with the columns "source" and
"target", builds its model, and leaves the rest to these steps:

>>> model_args, copy_args, data_args, training_args = parse_args(DataTrainingArguments, argv)
>>> setup_logging(training_args); check_request(data_args, training_args, copy_args)
>>> checkpoint = find_checkpoint(data_args, training_args)
>>> raw_splits = limit_splits(raw_splits, needed_splits(training_args), data_args)
>>> tokenizer = load_tokenizer(model_args, checkpoint, raw_splits, copy)
>>> model = build_model(...); check_model(model, tokenizer, model_args, copy_args, data_args, training_args, checkpoint)
>>> datasets = tokenize_splits(raw_splits, tokenizer, model, data_args, training_args, data_stats, copy)
>>> trainer = build_trainer(model, tokenizer, data_args, training_args, datasets, copy, metrics=...)
>>> results = train_evaluate_predict(trainer, datasets, data_args, training_args, checkpoint, data_stats, task=...)
>>> write_card(trainer, results, settings, ...)

Writes into --output_dir: checkpoints, the final model with its tokenizer, the model card (README.md, written by
every run), `all_results.json` (train_*/eval_*/predict_* metrics), `generated_predictions.txt` (one line per test
example, in order; newlines inside a prediction are written as the two characters `\\n`) and `data_stats.json`
(skipped and truncated examples).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
import transformers
from transformers import (
    AutoTokenizer,
    DataCollatorForSeq2Seq,
    EarlyStoppingCallback,
    HfArgumentParser,
    Seq2SeqTrainingArguments,
)
from transformers.trainer_utils import get_last_checkpoint

from hf_pgen.data_collator import DataCollatorForPointerGenerator
from hf_pgen.tokenization_pointer_generator import encode_with_oovs
from hf_pgen.tokenizer_training import train_shared_tokenizer
from hf_pgen.trainer_pointer_generator import PointerGeneratorSeq2SeqTrainer, build_compute_metrics
from training.arguments import ModelArguments, PointerGeneratorArguments, copy_settings
from training.evaluation import decode_predictions, mean_p_gen, write_copy_records, write_predictions
from training.model import check_lengths

logger = logging.getLogger(__name__)

__all__ = [
    "parse_args",
    "setup_logging",
    "check_request",
    "find_checkpoint",
    "needed_splits",
    "limit_splits",
    "load_tokenizer",
    "warn_ignored_copy_settings",
    "check_checkpoint_settings",
    "check_model",
    "tokenize_splits",
    "build_trainer",
    "train_evaluate_predict",
    "write_card",
    "leave_process_group",
]

SPLIT_FLAGS = (("train", "--do_train"), ("validation", "--do_eval"), ("test", "--do_predict"))


def parse_args(data_arguments: type, args: list[str] | None = None):
    """`(model_args, copy_args, data_args, training_args)` from the command line `args` (default: `sys.argv`, or one
    JSON file of them), with the script's own data arguments class."""
    parser = HfArgumentParser((ModelArguments, PointerGeneratorArguments, data_arguments, Seq2SeqTrainingArguments))
    if args is None and len(sys.argv) == 2 and sys.argv[1].endswith(".json"):
        return parser.parse_json_file(json_file=os.path.abspath(sys.argv[1]))
    return parser.parse_args_into_dataclasses(args=args)


def setup_logging(training_args: Seq2SeqTrainingArguments) -> None:
    import datasets

    logging.basicConfig(
        format="%(asctime)s - %(levelname)s - %(name)s - %(message)s",
        datefmt="%m/%d/%Y %H:%M:%S",
        handlers=[logging.StreamHandler(sys.stdout)],
    )
    if training_args.should_log:
        # The default of training_args.log_level is passive: INFO on the main process, as upstream.
        transformers.utils.logging.set_verbosity_info()
    log_level = training_args.get_process_log_level()
    logging.getLogger("training").setLevel(log_level)
    datasets.utils.logging.set_verbosity(log_level)
    transformers.utils.logging.set_verbosity(log_level)
    transformers.utils.logging.enable_default_handler()
    transformers.utils.logging.enable_explicit_format()
    logger.info("Training/evaluation parameters %s", training_args)


def check_request(data_args, training_args: Seq2SeqTrainingArguments, copy_args) -> None:
    """Refuse, before any work, a run with nothing to do or options that need others."""
    if not (training_args.do_train or training_args.do_eval or training_args.do_predict):
        raise ValueError("There is nothing to do: pass --do_train, --do_eval and/or --do_predict.")
    if data_args.copy_records and not (training_args.do_predict and copy_args.copy_mechanism):
        raise ValueError(
            "--copy_records writes what a pointer-generator copied in test outputs: it needs --do_predict "
            "and the copy mechanism (drop --no_copy_mechanism)."
        )
    if data_args.protect is not None and not training_args.predict_with_generate:
        raise ValueError(
            f"--protect {data_args.protect} protects spans in generated outputs: add "
            "--predict_with_generate (or drop --protect)."
        )
    if data_args.early_stopping_patience is not None and not (
        training_args.do_train
        and training_args.do_eval
        and training_args.eval_strategy != "no"
        and training_args.load_best_model_at_end
    ):
        raise ValueError(
            f"--early_stopping_patience {data_args.early_stopping_patience} stops training when the validation "
            "loss stops improving: add --do_train --do_eval --eval_strategy steps --eval_steps K --save_strategy "
            "steps --save_steps K --load_best_model_at_end (the best checkpoint is the one kept)."
        )


def find_checkpoint(data_args, training_args: Seq2SeqTrainingArguments) -> str | None:
    """--resume_from_checkpoint, else the last checkpoint of a non-empty --output_dir (upstream's rule: a non-empty
    folder without one is refused unless --overwrite_output_dir)."""
    last_checkpoint = None
    output_dir = training_args.output_dir
    if os.path.isdir(output_dir) and training_args.do_train and not data_args.overwrite_output_dir:
        last_checkpoint = get_last_checkpoint(output_dir)
        if last_checkpoint is None and os.listdir(output_dir) and training_args.resume_from_checkpoint is None:
            raise ValueError(
                f"Output directory ({output_dir}) already exists and is not empty. Use "
                "--overwrite_output_dir to overcome."
            )
    checkpoint = training_args.resume_from_checkpoint or last_checkpoint
    if checkpoint is not None:
        if not os.path.isdir(checkpoint):
            raise ValueError(f"--resume_from_checkpoint {checkpoint} is not a folder.")
        logger.warning(
            "Resuming training from the checkpoint %s. To train from scratch instead, change --output_dir "
            "or pass --overwrite_output_dir.",
            checkpoint,
        )
    return checkpoint


def needed_splits(training_args: Seq2SeqTrainingArguments) -> list[str]:
    """The splits the run reads: train (--do_train), validation (--do_eval), test (--do_predict)."""
    flags = {"train": training_args.do_train, "validation": training_args.do_eval, "test": training_args.do_predict}
    return [split for split, _ in SPLIT_FLAGS if flags[split]]


def limit_splits(raw_splits: dict, needed: list[str], data_args) -> dict:
    """Check that every needed split is there and keep the first --max_{train,eval,predict}_samples of each."""
    for split, flag in SPLIT_FLAGS:
        if split in needed and split not in raw_splits:
            raise ValueError(f"{flag} requires a {split} dataset.")
    limits = {
        "train": data_args.max_train_samples,
        "validation": data_args.max_eval_samples,
        "test": data_args.max_predict_samples,
    }
    for split, limit in limits.items():
        if split in raw_splits and limit is not None:
            raw_splits[split] = raw_splits[split].select(range(min(limit, len(raw_splits[split]))))
    return raw_splits


def load_tokenizer(model_args: ModelArguments, checkpoint: str | None, raw_splits: dict, copy: bool):
    """The tokenizer: a resumed run's (so ids keep their meaning), one trained on the training sources and targets
    (--train_tokenizer), or the pretrained one."""
    if (
        checkpoint is not None
        and model_args.train_tokenizer
        and os.path.isfile(os.path.join(checkpoint, "tokenizer.json"))
    ):
        tokenizer = AutoTokenizer.from_pretrained(checkpoint)
        logger.info("Reusing the tokenizer saved in %s.", checkpoint)
    elif model_args.train_tokenizer:
        if "train" not in raw_splits:
            raise ValueError(
                "--train_tokenizer trains on the training data: it needs --do_train (or pass "
                "--tokenizer_name / --model_name_or_path to evaluate with an existing tokenizer)."
            )
        started = time.perf_counter()
        train = raw_splits["train"]
        tokenizer = train_shared_tokenizer(
            train["source"][:] + train["target"][:],
            model_args.tokenizer_type,
            model_args.tokenizer_vocab_size,
            model_args.tokenizer_min_frequency,
            placeholders_in_vocabulary=not model_args.tokenizer_copy_placeholders,
        )
        logger.info(
            "Trained a %s tokenizer of %d tokens in %.1fs.",
            model_args.tokenizer_type,
            len(tokenizer),
            time.perf_counter() - started,
        )
    else:
        tokenizer = AutoTokenizer.from_pretrained(
            model_args.tokenizer_name or model_args.model_name_or_path,
            cache_dir=model_args.cache_dir,
            use_fast=model_args.use_fast_tokenizer,
            revision=model_args.model_revision,
            token=model_args.token,
            trust_remote_code=model_args.trust_remote_code,
        )
    if tokenizer.unk_token_id is None and copy:
        logger.warning(
            "The tokenizer has no unknown token: nothing is out of vocabulary, so only in-vocabulary tokens are copied."
        )
    return tokenizer


def warn_ignored_copy_settings(copy_args, model, model_name_or_path: str | None, allowed: tuple[str, ...] = ()) -> None:
    """A saved pointer-generator keeps its own copy settings (its weights were trained with them): say so where flags
    ask for others (a value other than the script's default), rather than ignore them silently. `allowed`: settings
    the run did apply (--add_coverage's)."""
    defaults = {f.name: f.default for f in dataclasses.fields(copy_args)}
    asked = {k: v for k, v in copy_settings(copy_args).items() if v != defaults.get(k) and k not in allowed}
    differ = [
        f"--{k} {v!r} (the model's: {getattr(model.config, k, None)!r})"
        for k, v in asked.items()
        if getattr(model.config, k, None) != v
    ]
    if differ:
        logger.warning(
            "%s is a pointer-generator: its own copy settings are kept, not %s. To train other settings, "
            "wrap its base model instead.",
            model_name_or_path,
            ", ".join(differ),
        )


def check_checkpoint_settings(checkpoint: str | None, model) -> None:
    """Refuse to resume a checkpoint saved by a run with other model settings: the Trainer would fail deep in the
    optimizer state (a lever's weights added or gone) or, for a setting without weights (the glossary annotation),
    silently go on training another model."""
    if checkpoint is None or not os.path.isfile(os.path.join(checkpoint, "config.json")):
        return
    saved, current = json.loads(Path(checkpoint, "config.json").read_text()), model.config.to_dict()
    keys = [
        "model_type",
        *(f.name for f in dataclasses.fields(PointerGeneratorArguments) if f.name != "copy_mechanism"),
    ]
    differ = [f"{k} {saved.get(k)!r} there, {current.get(k)!r} here" for k in keys if saved.get(k) != current.get(k)]
    if differ:
        raise ValueError(
            f"The checkpoint {checkpoint} was saved by a run with other model settings ({'; '.join(differ)}). Pass "
            "the flags it was trained with to resume it, or --overwrite_output_dir to train from scratch "
            "(python -m training.main: --fresh)."
        )


def check_model(model, tokenizer, model_args, copy_args, data_args, training_args, checkpoint, t5_prefix: str) -> None:
    """Before any work: flags a saved pointer-generator does not take, a checkpoint of other settings, lengths beyond
    the positions, a vocabulary narrower than the tokenizer; a T5 without a task prefix (`t5_prefix`: an example)."""
    if copy_args.copy_mechanism:
        allowed = ("coverage", "coverage_weight") if model_args.add_coverage else ()
        warn_ignored_copy_settings(copy_args, model, model_args.model_name_or_path, allowed)
    check_checkpoint_settings(checkpoint, model)
    check_lengths(model, data_args, training_args)
    vocab_size = model.config.vocab_size  # the output width; extended (copy-only) ids start here
    if vocab_size < len(tokenizer):
        raise ValueError(f"The model's vocabulary ({vocab_size}) is smaller than the tokenizer's ({len(tokenizer)}).")
    if data_args.source_prefix is None and model.config.get_text_config().model_type in ("t5", "mt5", "umt5"):
        logger.warning(
            "You're running a T5 model but didn't provide a source prefix, which is the expected, e.g. "
            "with `--source_prefix '%s'`.",
            t5_prefix,
        )


def tokenize_splits(
    raw_splits: dict,
    tokenizer,
    model,
    data_args,
    training_args: Seq2SeqTrainingArguments,
    data_stats: dict,
    copy: bool,
    sources: Callable[[dict, str], list[str]] | None = None,
) -> dict:
    """Each needed split tokenized once (cached by `Dataset.map`), with its OOV tables; truncations counted.

    Args:
        sources: `(batch, split) -> texts` the model reads (default: `--source_prefix` + the "source" column), for a
            script that writes something into them (run_translation's glossary annotation).

    Returns:
        `{split: Dataset}` with the model's inputs, labels (-100 padded; a plain model's copy-only words made the
        unknown token), `oov_words`/`oov_spacing` and the raw "source"/"target" columns, which compute_metrics reads
        back by example index. `data_stats[split]` gets `used`, `truncated_sources` and `truncated_targets`.
    """
    padding = "max_length" if data_args.pad_to_max_length else False
    prefix = data_args.source_prefix or ""
    unk_id, pad_id = tokenizer.unk_token_id, tokenizer.pad_token_id
    vocab_size = model.config.vocab_size

    def preprocess(batch, split, max_target_length):
        texts = sources(batch, split) if sources is not None else [prefix + s for s in batch["source"]]
        encoded = encode_with_oovs(
            tokenizer,
            texts,
            batch["target"],
            vocab_size=vocab_size,
            max_length=data_args.max_source_length,
            max_target_length=max_target_length,
            truncation=True,
            padding=padding,
            return_num_truncated_tokens=True,
        )
        labels = encoded["labels"]
        if not copy:  # the plain base cannot emit extended ids: a copied word is just unknown to it
            labels = [[unk_id if t >= vocab_size else t for t in row] for row in labels]
        if not data_args.ignore_pad_token_for_loss:
            labels = [[pad_id if t == -100 else t for t in row] for row in labels]
        truncated_targets = encoded.get("num_truncated_target_tokens")
        if truncated_targets is None:
            # encode_with_oovs counts what truncation cut from the sources only: the targets are tokenized a second
            # time, untruncated. (Remove this once it returns `num_truncated_target_tokens` too.)
            full = tokenizer(text_target=batch["target"], truncation=False)["input_ids"]
            truncated_targets = [max(len(ids) - max_target_length, 0) for ids in full]
        out = {
            "input_ids": encoded["input_ids"],
            "attention_mask": encoded["attention_mask"],
            "labels": labels,
            "oov_words": encoded["oov_words"],
            "oov_spacing": encoded["oov_spacing"],
            "source_truncated": [n > 0 for n in encoded["num_truncated_tokens"]],
            "target_truncated": [n > 0 for n in truncated_targets],
            "num_tokens": [
                sum(m) + sum(1 for t in row if t != -100)
                for m, row in zip(encoded["attention_mask"], encoded["labels"])
            ],
        }
        if copy:
            out["extended_input_ids"] = encoded["extended_input_ids"]
        return out

    datasets_by_split: dict[str, Any] = {}
    first = True
    for split, description in (("train", "train"), ("validation", "validation"), ("test", "prediction")):
        if split not in raw_splits:
            continue
        max_target_length = data_args.max_target_length if split == "train" else data_args.val_max_target_length
        with training_args.main_process_first(desc=f"{split} dataset map pre-processing"):
            dataset = raw_splits[split].map(
                preprocess,
                batched=True,
                fn_kwargs={"split": split, "max_target_length": max_target_length},
                num_proc=data_args.preprocessing_num_workers,
                load_from_cache_file=not data_args.overwrite_cache,
                desc=f"Running tokenizer on {description} dataset",
            )  # keeps "source" / "target": compute_metrics reads them back by example index
        stats = data_stats[split]
        stats["used"] = len(dataset)
        stats["truncated_sources"] = int(sum(dataset["source_truncated"]))
        stats["truncated_targets"] = int(sum(dataset["target_truncated"]))
        if stats["truncated_sources"] or stats["truncated_targets"]:
            logger.warning(
                "%s: truncated %d sources to %d tokens and %d targets to %d tokens.",
                split,
                stats["truncated_sources"],
                data_args.max_source_length,
                stats["truncated_targets"],
                max_target_length,
            )
        if copy and first and not any(len(words) for words in dataset["oov_words"]):
            logger.warning(
                "No source word of the %s data is out of the tokenizer's vocabulary (%s): the copy mechanism can "
                "only copy in-vocabulary tokens, and no OOV copy rate can be reported. A word-level tokenizer "
                "(--train_tokenizer --tokenizer_type wordlevel) leaves rare words to copying.",
                split,
                type(tokenizer.backend_tokenizer.model).__name__
                if hasattr(tokenizer, "backend_tokenizer")
                else type(tokenizer).__name__,
            )
        first = False
        datasets_by_split[split] = dataset
    return datasets_by_split


def build_trainer(
    model,
    tokenizer,
    data_args,
    training_args: Seq2SeqTrainingArguments,
    datasets_by_split: dict,
    copy: bool,
    metrics: Callable | None = None,
    **trainer_kwargs,
) -> PointerGeneratorSeq2SeqTrainer:
    """The Trainer: the copy-aware collator, generation lengths and beams kept in step with the model's generation
    config, `compute_metrics` from `build_compute_metrics(metrics=...)` (with --predict_with_generate), protection.

    Args:
        metrics: `metrics(sources, predictions, references, oov_words) -> dict` (default: the translation metrics).
        trainer_kwargs: more `PointerGeneratorSeq2SeqTrainer` arguments (a glossary).
    """
    label_pad_token_id = -100 if data_args.ignore_pad_token_for_loss else tokenizer.pad_token_id
    collator = DataCollatorForPointerGenerator if copy else DataCollatorForSeq2Seq
    data_collator = collator(
        tokenizer,
        model=model,
        label_pad_token_id=label_pad_token_id,
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
        train_dataset=datasets_by_split.get("train"),
        eval_dataset=datasets_by_split.get("validation"),
        processing_class=tokenizer,
        data_collator=data_collator,
        compute_metrics=build_compute_metrics(
            tokenizer,
            vocab_size=model.config.vocab_size,
            source_column="source",
            reference_column="target",
            metrics=metrics,
        )
        if training_args.predict_with_generate
        else None,
        protect=data_args.protect,
        source_column="source",
        source_prefix=data_args.source_prefix or "",
        max_source_length=data_args.max_source_length,
        word_dropout=data_args.word_dropout,
        target_word_dropout=data_args.target_word_dropout,
        **trainer_kwargs,
    )
    if data_args.early_stopping_patience is not None:
        trainer.add_callback(EarlyStoppingCallback(early_stopping_patience=data_args.early_stopping_patience))
    return trainer


# What the training metrics count from data_stats (train_<key>).
TRAIN_STATS = (
    "skipped_empty_lines",
    "skipped_empty_text",
    "skipped_undecodable_lines",
    "skipped_malformed_lines",
    "truncated_sources",
    "truncated_targets",
    "augmented",
    "glossary_annotated",
)


def train_evaluate_predict(
    trainer: PointerGeneratorSeq2SeqTrainer,
    datasets_by_split: dict,
    data_args,
    training_args: Seq2SeqTrainingArguments,
    checkpoint: str | None,
    data_stats: dict,
    task: str,
    score_predictions: Callable[[Any, list[str]], dict[str, float]] | None = None,
) -> dict[str, Any]:
    """--do_train, --do_eval, --do_predict: metrics saved (`all_results.json`), test predictions written
    (`generated_predictions.txt`) and, with --copy_records, copy records through `pipeline(task)`.

    Args:
        score_predictions: `score_predictions(test dataset, decoded predictions) -> {name: score}`, saved as
            `predict_<name>` (run_translation's --metric_model).

    Returns:
        `dict`: every train_*/eval_*/predict_* metric.
    """
    results: dict[str, Any] = {}
    output_dir = Path(training_args.output_dir)
    tokenizer = trainer.processing_class
    vocab_size = trainer.model.config.vocab_size
    train_dataset = datasets_by_split.get("train")

    if training_args.do_train:
        start_step = 0
        if checkpoint is not None and os.path.isfile(os.path.join(checkpoint, "trainer_state.json")):
            start_step = json.loads(Path(checkpoint, "trainer_state.json").read_text())["global_step"]
        if training_args.max_steps > 0 and start_step >= training_args.max_steps:
            # A finished run's command run again: the Trainer (Transformers 5.25) would train one step past
            # --max_steps from its last checkpoint and save that model instead. Nothing is left to train.
            logger.warning(
                "The checkpoint %s is at step %d of --max_steps %d: nothing is left to train; its weights "
                "are evaluated and predicted with.",
                checkpoint,
                start_step,
                training_args.max_steps,
            )
            trainer._load_from_checkpoint(checkpoint)
            trainer.save_model()
            if (output_dir / "train_results.json").is_file():  # the finished run's, kept
                results.update(json.loads((output_dir / "train_results.json").read_text()))
        else:
            # Evaluations during training (early stopping) need the validation loss only: generating the whole
            # validation split at each would cost more than the training between them.
            loss_only = training_args.prediction_loss_only
            training_args.prediction_loss_only = loss_only or data_args.early_stopping_patience is not None
            train_result = trainer.train(resume_from_checkpoint=checkpoint)
            training_args.prediction_loss_only = loss_only
            trainer.save_model()  # also saves the tokenizer (processing_class)
            metrics = dict(train_result.metrics)
            steps_run = trainer.state.global_step - start_step
            samples_run = (
                steps_run
                * training_args.per_device_train_batch_size
                * training_args.gradient_accumulation_steps
                * max(training_args.world_size, 1)
            )
            metrics["train_samples"] = len(train_dataset)
            metrics["train_steps"] = trainer.state.global_step
            if data_args.early_stopping_patience is not None and trainer.state.best_model_checkpoint:
                # the weights kept: those of the best validation loss, not of the last step
                metrics["train_best_step"] = int(trainer.state.best_model_checkpoint.rsplit("-", 1)[-1])
                metrics["train_best_eval_loss"] = trainer.state.best_metric
            if start_step:
                metrics["train_resumed_from_step"] = start_step
            if metrics.get("train_runtime"):
                mean_tokens = float(np.mean(train_dataset["num_tokens"]))
                metrics["train_tokens_per_second"] = round(mean_tokens * samples_run / metrics["train_runtime"], 1)
            for key in TRAIN_STATS:
                metrics[f"train_{key}"] = int(data_stats["train"].get(key, 0))
            trainer.log_metrics("train", metrics)
            trainer.save_metrics("train", metrics)
            trainer.save_state()
            results.update(metrics)

    max_length, num_beams = training_args.generation_max_length, training_args.generation_num_beams
    if training_args.do_eval:
        logger.info("*** Evaluate ***")
        metrics = trainer.evaluate(max_length=max_length, num_beams=num_beams, metric_key_prefix="eval")
        metrics["eval_samples"] = len(datasets_by_split["validation"])
        trainer.log_metrics("eval", metrics)
        trainer.save_metrics("eval", metrics)
        results.update(metrics)

    if training_args.do_predict:
        logger.info("*** Predict ***")
        predict_dataset = datasets_by_split["test"]
        predict_results = trainer.predict(
            predict_dataset, metric_key_prefix="predict", max_length=max_length, num_beams=num_beams
        )
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
            output_dir.mkdir(parents=True, exist_ok=True)
            tables, spacing = trainer.oov_tables(predict_dataset)  # with any slots a glossary's terms gained
            predictions = decode_predictions(predict_results.predictions, tables, tokenizer, vocab_size, spacing)
            write_predictions(output_dir / "generated_predictions.txt", predictions)
            if score_predictions is not None:  # more scores of the decoded predictions (a neural metric)
                metrics.update({f"predict_{k}": v for k, v in score_predictions(predict_dataset, predictions).items()})
                trainer.log_metrics("predict", metrics)
                trainer.save_metrics("predict", metrics)
                results.update(metrics)
        if trainer.is_world_process_zero() and data_args.copy_records:
            write_copy_records(
                output_dir,
                trainer.model,
                tokenizer,
                predict_dataset["source"][: data_args.copy_records],
                task=task,
                prefix=data_args.source_prefix or "",
                num_beams=num_beams,
                max_length=max_length,
                protect=data_args.protect,
            )
    return results


def write_card(
    trainer: PointerGeneratorSeq2SeqTrainer,
    results: dict,
    data_stats: dict,
    model_args,
    training_args: Seq2SeqTrainingArguments,
    **card,
) -> None:
    """`data_stats.json`, then the model card (README.md, every run) or, with --push_to_hub, the push with it.

    Args:
        card: `create_model_card` arguments only the script knows (task, language, dataset names, training details).
    """
    output_dir = Path(training_args.output_dir)
    if training_args.push_to_hub:
        repo_id = trainer.hub_model_id  # the full id, also without --hub_model_id (derived from --output_dir)
    else:
        repo_id = str(output_dir) if training_args.do_train else (model_args.model_name_or_path or str(output_dir))
    if trainer.is_world_process_zero():
        output_dir.mkdir(parents=True, exist_ok=True)
        (output_dir / "data_stats.json").write_text(
            json.dumps({split: dict(stats) for split, stats in data_stats.items()}, indent=2) + "\n", encoding="utf-8"
        )
    # The library's card (as upstream's scripts, through the Trainer), with what only this run knows.
    card = dict(
        finetuned_from=model_args.model_name_or_path,
        license=model_args.model_license,
        model_name=output_dir.name,
        results=results,
        repo_id=repo_id,
        max_new_tokens=training_args.generation_max_length,
        **card,
    )
    if training_args.push_to_hub:
        trainer.push_to_hub(**card)
    else:
        try:
            trainer.create_model_card(**card)
        except Exception as error:  # noqa: BLE001 - a card must never cost the trained model
            logger.error("Could not write the model card: %s", error)


def leave_process_group() -> None:
    """Under torchrun, wait for every rank and leave the process group before the interpreter exits. A rank that exits
    with the group still open (rank 1 while rank 0 writes the predictions) can abort in gloo's threads with "terminate
    called without an active exception", failing the launch after the job itself succeeded."""
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        torch.distributed.barrier()
        torch.distributed.destroy_process_group()
