#!/usr/bin/env python
"""Train and evaluate a pointer-generator (or, with --no_copy_mechanism, the plain base) for translation.

Adapted from 🤗 Transformers' `examples/pytorch/translation/run_translation.py`: the same flags where they exist,
plus the copy mechanism (`PointerGeneratorArguments`: `--copy_mechanism/--no_copy_mechanism`, `--pointer`,
`--coverage`, ... mirroring `PointerGeneratorConfig`), a tokenizer trained on the training data
(`--train_tokenizer --tokenizer_type --tokenizer_vocab_size`), strict data checks, and copy-aware metrics
(placeholder preservation, OOV copy rate, mean p_gen). Run it as a module from the repository root:

    python -m training.run_translation --model_type bart \\
        --config_overrides "d_model=256,encoder_layers=3,decoder_layers=3,encoder_attention_heads=4,decoder_attention_heads=4,encoder_ffn_dim=1024,decoder_ffn_dim=1024,max_position_embeddings=128" \\
        --train_tokenizer --tokenizer_type wordlevel --tokenizer_vocab_size 8000 \\
        --do_train --do_eval --do_predict --predict_with_generate \\
        --max_source_length 64 --max_target_length 64 --output_dir outputs/pgen

    torchrun --nproc_per_node 8 -m training.run_translation ...      # DDP; accelerate launch -m works the same way

or wrap a pretrained encoder-decoder: `--model_name_or_path facebook/bart-base` (mBART / M2M100: language codes
as upstream, `--source_lang en_XX --target_lang de_DE`). Data: the embedded corpus (default),
`--train_file/--validation_file/--test_file` (JSON lines `{"translation": {"en": ..., "de": ...}}` or flat
`{"en": ..., "de": ...}`, CSV or TSV with one column per language, each optionally gzipped; Parquet; Arrow) or
`--dataset_name` (a Hub dataset, a local folder, or a DatasetDict saved with `save_to_disk`).

Writes into --output_dir: checkpoints, the final model with its tokenizer, the model card (README.md, written by
every run), `all_results.json` (train_*/eval_*/predict_* metrics), `generated_predictions.txt` (one line per test
example, in order; newlines inside a prediction are written as the two characters `\\n`) and `data_stats.json`
(skipped and truncated examples). The steps it shares with `training/run_summarization.py` are in
`training/seq2seq.py`, the arguments in `training/arguments.py`.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

from transformers import set_seed

from hf_pgen.glossary import Glossary
from hf_pgen.processing_pointer_generator import PointerGeneratorProcessor
from training.arguments import Seq2SeqDataArguments, copy_settings
from training.data.files import EMBEDDED_CORPUS, load_translation_splits
from training.model import build_model, set_language_codes
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
from training.terminology import FREEDICT_ENG_DEU

logger = logging.getLogger(__name__)


@dataclass
class DataTrainingArguments(Seq2SeqDataArguments):
    """What data to train and evaluate on (a language pair), how to cut it, and translation's own data levers."""

    source_lang: str = field(
        default="en",
        metadata={
            "help": "Source language: data key / column, or a language "
            "code such as en_XX (mBART) whose part before '_' is "
            "the key."
        },
    )
    target_lang: str = field(default="de", metadata={"help": "Target language (as --source_lang)."})
    dataset_name: str | None = field(
        default=None,
        metadata={
            "help": "A `datasets` dataset: Hub id, local folder, or a DatasetDict saved with save_to_disk. "
            "Default when neither this nor data files are given: the embedded English->German "
            "software-message corpus."
        },
    )
    placeholder_augmentation: bool = field(
        default=False,
        metadata={
            "help": "Add to the training data a copy of each pair with its placeholders renamed (source and "
            "target alike), or, without placeholders, a word both hold verbatim made a named "
            "placeholder: teaches copying placeholders never seen in training "
            "(training/augmentation.py)."
        },
    )
    metric_model: str | None = field(
        default=None,
        metadata={
            "help": "A local model folder for a neural metric of the test predictions (--neural_metric): a "
            "Transformers encoder for BERTScore, a COMET checkpoint folder for COMET. Nothing is downloaded "
            "(training/neural_metrics.py); needs the bert-score or unbabel-comet package."
        },
    )
    neural_metric: str = field(
        default="bertscore", metadata={"help": "bertscore or comet: what --metric_model computes."}
    )
    metric_layers: int | None = field(
        default=None,
        metadata={
            "help": "BERTScore's layer (default: its authors' choice for the folder's model name, else the last)."
        },
    )
    copy_augmentation: bool = field(
        default=False,
        metadata={
            "help": "Add to the training data a copy of each pair that holds a word verbatim in source and "
            "target (capitalised or with a digit: a name, a product, a version), that word respelled "
            "alike in both as a new word of the same shape (Trac -> Qvem, utf8_bin -> kqx3_wod): "
            "teaches copying words never seen in training (training/augmentation.py)."
        },
    )

    glossary: str | None = field(
        default=None,
        metadata={
            "help": "A term base for generated evaluation/test outputs (--predict_with_generate): two columns "
            "per line, source term and target term (TSV, or CSV for a .csv file). Where a source term "
            "occurs as whole words, its target term comes out at least once (--glossary_mode "
            "guarantee), or is only written into the source for a model trained with "
            "--glossary_augmentation (hint). A .jsonl file gives the test split one term base per "
            "example instead (line i: a JSON object of source term -> target term for test pair i), as "
            "WMT gives terms per sentence."
        },
    )
    glossary_mode: str = field(
        default="guarantee", metadata={"help": "guarantee (the terms are placed) or hint (annotation only)."}
    )
    glossary_match: str = field(
        default="inflected",
        metadata={
            "help": "How --glossary's source terms match: inflected (also their inflected forms and the capitals a "
            "text brings: server matches Servers) or exact (only as written).",
            "choices": ["inflected", "exact"],
        },
    )
    glossary_augmentation: bool = field(
        default=False,
        metadata={
            "help": "Write dictionary terms that a training pair supports (source term in the source, target "
            "term in the reference) into about half of the training sources, so that the model learns "
            "to use annotated terms (a pointer-generator copies them; a plain model, with "
            "--no_copy_mechanism, spells them); saves the annotation format in the config "
            "(glossary_annotation), which the pipeline then applies (training/terminology.py). The "
            "format: --glossary_annotation, by default '{target}' (the target term in place of the "
            "source term; '{source} [ {target} ]' keeps both)."
        },
    )
    glossary_dictionary: str = field(
        default=FREEDICT_ENG_DEU,
        metadata={
            "help": "The bilingual dictionary --glossary_augmentation draws terms from: Debian's FreeDict "
            "(apt-get install dict-freedict-eng-deu) or a two-column TSV."
        },
    )


def parse_args(args: list[str] | None = None):
    """`(model_args, copy_args, data_args, training_args)` from the command line (default: `sys.argv`)."""
    return _parse_args(DataTrainingArguments, args)


# ---------------------------------------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------------------------------------


def main(args: list[str] | None = None) -> dict[str, Any]:
    """Run training/evaluation/prediction as the command line `args` say; return the results dict."""
    model_args, copy_args, data_args, training_args = parse_args(args)
    setup_logging(training_args)
    check_request(data_args, training_args, copy_args)
    if data_args.glossary is not None and not training_args.predict_with_generate:
        raise ValueError(
            f"--glossary {data_args.glossary} places terms in generated outputs: add "
            "--predict_with_generate (or drop --glossary)."
        )
    if data_args.glossary_mode not in ("guarantee", "hint"):
        raise ValueError(f"--glossary_mode {data_args.glossary_mode}: use guarantee or hint.")
    if data_args.glossary_augmentation and not training_args.do_train:
        raise ValueError("--glossary_augmentation teaches a model to use annotated terms: it needs --do_train.")
    glossary, per_example_terms = None, None
    if data_args.glossary is not None:  # read (and checked) before any work
        if data_args.glossary.endswith(".jsonl"):
            per_example_terms = read_term_lines(data_args.glossary)
            if not training_args.do_predict:
                raise ValueError(f"--glossary {data_args.glossary} holds a term base per test pair: add --do_predict.")
        else:
            glossary = Glossary.from_file(data_args.glossary, match=data_args.glossary_match)
    if data_args.metric_model is not None:
        from training.neural_metrics import check_metric

        if not (training_args.do_predict and training_args.predict_with_generate):
            raise ValueError(
                f"--metric_model {data_args.metric_model} scores generated test predictions: add --do_predict "
                "--predict_with_generate (or drop --metric_model)."
            )
        check_metric(data_args.neural_metric, data_args.metric_model)  # before any training
    checkpoint = find_checkpoint(data_args, training_args)
    set_seed(training_args.seed)
    copy = copy_args.copy_mechanism

    # -- data --
    needed = needed_splits(training_args)
    source_key, target_key = data_args.source_lang.split("_")[0], data_args.target_lang.split("_")[0]
    raw_splits, data_stats, data_origin = load_translation_splits(
        source_key,
        target_key,
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
    )
    raw_splits = limit_splits(raw_splits, needed, data_args)

    if per_example_terms is not None:
        test = raw_splits["test"]
        if len(per_example_terms) < len(test):
            raise ValueError(
                f"--glossary {data_args.glossary} has {len(per_example_terms)} lines for {len(test)} test "
                "pairs: one line (a JSON object, {} for none) per test pair, in order."
            )
        raw_splits["test"] = test.add_column(
            "glossary", [[[s, t] for s, t in terms.items()] for terms in per_example_terms[: len(test)]]
        )

    # -- tokenizer (a resumed run reuses the checkpoint's, so ids keep their meaning) --
    tokenizer = load_tokenizer(model_args, checkpoint, raw_splits, copy)
    trained_tokenizer = model_args.train_tokenizer

    augmentations = {"Placeholder": data_args.placeholder_augmentation, "Copy": data_args.copy_augmentation}
    if any(augmentations.values()) and "train" in raw_splits:  # after the tokenizer: it learns real text only
        from datasets import Dataset, concatenate_datasets

        from training.augmentation import augment_placeholders, augment_unseen_words

        train = raw_splits["train"].select_columns(["source", "target"])
        seed = training_args.data_seed if training_args.data_seed is not None else training_args.seed
        parts = [train]
        for name, augment in (("Placeholder", augment_placeholders), ("Copy", augment_unseen_words)):
            if augmentations[name]:  # each from the original pairs, not from another augmentation's
                extra_sources, extra_targets = augment(train["source"][:], train["target"][:], seed)
                parts.append(
                    Dataset.from_dict({"source": extra_sources, "target": extra_targets}, features=train.features)
                )
                logger.info("%s augmentation: %d extra training pairs.", name, len(extra_sources))
        raw_splits["train"] = concatenate_datasets(parts)
        data_stats["train"]["augmented"] = len(raw_splits["train"]) - len(train)

    model = build_model(model_args, data_args, tokenizer, trained_tokenizer, copy_settings(copy_args) if copy else None)
    if data_args.glossary_augmentation and "train" in raw_splits:  # after the tokenizer: it learns real text only
        from hf_pgen.glossary import check_annotation
        from training.terminology import TRAINING_ANNOTATION, TermIndex, augment_with_terms, load_dictionary

        # Train with the annotation the model is saved with, which the pipeline then applies: the model's own (a
        # wrapped pointer-generator's), else --glossary_annotation, else the target term in place of the source's.
        own, asked = getattr(model.config, "glossary_annotation", None), copy_args.glossary_annotation
        if own is not None and asked is not None and own != asked:
            raise ValueError(
                f"--glossary_annotation {asked!r}, but {model_args.model_name_or_path} reads its terms "
                f"as {own!r}: drop the flag, or wrap its base model instead."
            )
        annotation = check_annotation(own or asked or TRAINING_ANNOTATION)
        model.config.glossary_annotation = annotation  # saved: the pipeline applies the same one
        seed = training_args.data_seed if training_args.data_seed is not None else training_args.seed
        train = raw_splits["train"]
        sources, annotated = augment_with_terms(
            train["source"][:],
            train["target"][:],
            TermIndex(load_dictionary(data_args.glossary_dictionary)),
            annotation,
            seed=seed,
        )
        raw_splits["train"] = train.remove_columns("source").add_column("source", sources)
        data_stats["train"]["glossary_annotated"] = annotated
        logger.info(
            "Glossary augmentation: dictionary terms annotated in %d of %d training sources (%r).",
            annotated,
            len(sources),
            annotation,
        )
    set_language_codes(tokenizer, model, data_args)
    check_model(
        model, tokenizer, model_args, copy_args, data_args, training_args, checkpoint, "translate English to German: "
    )

    # -- preprocessing: one tokenization per split, cached by Dataset.map --
    prefix = data_args.source_prefix or ""
    # What the model reads with --glossary (the annotation written in): the Trainer checks every row against it. A
    # plain model without an annotation reads its sources as they are.
    annotation = getattr(model.config, "glossary_annotation", None)
    reader = (
        PointerGeneratorProcessor(tokenizer, model.config.vocab_size, annotation, copies=copy)
        if copy or annotation
        else None
    )

    def sources(batch, split):
        annotate = reader is not None and (
            (split != "train" and glossary is not None) or (split == "test" and per_example_terms is not None)
        )
        if not annotate:
            return [prefix + s for s in batch["source"]]
        terms = glossary
        if "glossary" in batch:  # one term base per example
            terms = [
                Glossary([tuple(pair) for pair in pairs], match=data_args.glossary_match) for pairs in batch["glossary"]
            ]
        return reader.glossary_sources(batch["source"], terms, source_prefix=prefix)

    datasets_by_split = tokenize_splits(
        raw_splits, tokenizer, model, data_args, training_args, data_stats, copy, sources
    )
    trainer = build_trainer(
        model,
        tokenizer,
        data_args,
        training_args,
        datasets_by_split,
        copy,
        glossary=glossary,
        glossary_mode=data_args.glossary_mode,
        glossary_column="glossary" if per_example_terms is not None else None,
        glossary_match=data_args.glossary_match,
    )
    score_predictions = None
    if data_args.metric_model is not None:
        from training.neural_metrics import neural_scores

        def score_predictions(dataset, predictions):
            return neural_scores(
                data_args.neural_metric,
                data_args.metric_model,
                dataset["source"],
                predictions,
                dataset["target"],
                num_layers=data_args.metric_layers,
            )

    results = train_evaluate_predict(
        trainer,
        datasets_by_split,
        data_args,
        training_args,
        checkpoint,
        data_stats,
        task="translation",
        score_predictions=score_predictions,
    )

    # -- data checks, model card (every run), push --
    settings = collect_settings(model_args, data_args, training_args, model, tokenizer, data_origin, data_stats)
    write_card(
        trainer,
        results,
        data_stats,
        model_args,
        training_args,
        tasks="translation",
        language=[source_key, target_key],
        dataset_name=dataset_name(settings),
        dataset=data_origin if data_origin not in ("files", EMBEDDED_CORPUS) else None,
        training_details=training_details(settings, results),
    )
    results["settings"] = settings
    return results


def read_term_lines(path: str) -> list[dict[str, str]]:
    """A term base per example: line i of the JSONL file, a JSON object of source term -> target term."""
    terms = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            try:
                entry = json.loads(line)
            except json.JSONDecodeError as error:
                raise ValueError(f"--glossary {path}, line {number} is not JSON: {error}.") from None
            if not isinstance(entry, dict) or not all(
                isinstance(k, str) and isinstance(v, str) and k.strip() and v.strip() for k, v in entry.items()
            ):
                raise ValueError(
                    f"--glossary {path}, line {number} must be a JSON object of non-empty source term -> "
                    f"target term strings, got {line.strip()[:80]!r}."
                )
            terms.append(entry)
    return terms


def _mp_fn(index):  # for xla_spawn (TPUs)
    main()


if __name__ == "__main__":
    main()
    leave_process_group()
