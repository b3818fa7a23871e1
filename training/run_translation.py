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
(skipped and truncated examples).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import transformers
from transformers import (
    CONFIG_MAPPING,
    AutoTokenizer,
    DataCollatorForSeq2Seq,
    EarlyStoppingCallback,
    HfArgumentParser,
    Seq2SeqTrainingArguments,
    set_seed,
)
from transformers.trainer_utils import get_last_checkpoint

from hf_pgen import PointerGeneratorConfig
from hf_pgen.data_collator import DataCollatorForPointerGenerator
from hf_pgen.glossary import Glossary
from hf_pgen.processing_pointer_generator import PointerGeneratorProcessor
from hf_pgen.tokenization_pointer_generator import encode_with_oovs
from hf_pgen.tokenizer_training import TOKENIZER_TYPES, train_shared_tokenizer
from hf_pgen.trainer_pointer_generator import PointerGeneratorSeq2SeqTrainer, build_compute_metrics
from training.data.files import EMBEDDED_CORPUS, SUPPORTED, file_format, load_translation_splits
from training.evaluation import decode_predictions, mean_p_gen, write_copy_records, write_predictions
from training.model import MODEL_TYPES, build_model, check_lengths, set_language_codes
from training.run_details import collect_settings, dataset_name, training_details
from training.terminology import FREEDICT_ENG_DEU

logger = logging.getLogger(__name__)

# ---------------------------------------------------------------------------------------------------------------------
# Arguments
# ---------------------------------------------------------------------------------------------------------------------


@dataclass
class ModelArguments:
    """Which model/config/tokenizer to fine-tune or train from scratch."""

    model_name_or_path: str | None = field(
        default=None,
        metadata={
            "help": "Pretrained encoder-decoder (Hub id or local folder) to wrap; leave unset to train a model "
            "from scratch with --model_type."
        },
    )
    model_type: str | None = field(
        default=None,
        metadata={
            "help": "Model family to train from scratch (e.g. bart, marian, t5): "
            + ", ".join(sorted(k for k in CONFIG_MAPPING.keys() if k in MODEL_TYPES))
        },
    )
    config_overrides: str | None = field(
        default=None,
        metadata={
            "help": "With --model_type: override default config settings, e.g. "
            "'d_model=256,encoder_layers=3,decoder_layers=3'."
        },
    )
    config_name: str | None = field(default=None, metadata={"help": "Config name or path if not the model's."})
    tokenizer_name: str | None = field(default=None, metadata={"help": "Tokenizer name or path if not the model's."})
    cache_dir: str | None = field(default=None, metadata={"help": "Where to store downloaded models and datasets."})
    use_fast_tokenizer: bool = field(default=True, metadata={"help": "Use a fast tokenizer when there is one."})
    model_revision: str = field(default="main", metadata={"help": "Model version (branch, tag or commit)."})
    token: str | None = field(default=None, metadata={"help": "Hub token for remote files."})
    trust_remote_code: bool = field(default=False, metadata={"help": "Allow custom code from the Hub."})
    train_tokenizer: bool = field(
        default=False,
        metadata={"help": "Train a shared source-target tokenizer on the training data with 🤗 tokenizers."},
    )
    tokenizer_type: str = field(
        default="wordlevel",
        metadata={
            "help": "Model of the trained tokenizer. wordlevel leaves rare words unknown (copying matters "
            "most); wordpiece/unigram leave only unseen characters unknown; bpe is byte-level "
            "(no unknown words).",
            "choices": list(TOKENIZER_TYPES),
        },
    )
    tokenizer_vocab_size: int = field(default=8000, metadata={"help": "Vocabulary size of the trained tokenizer."})
    tokenizer_min_frequency: int = field(
        default=2, metadata={"help": "Minimum count of a token in the training data to enter the trained vocabulary."}
    )
    tokenizer_copy_placeholders: bool = field(
        default=False,
        metadata={
            "help": "With --train_tokenizer --tokenizer_type wordlevel: keep placeholders (%%(name)s, {0}, <b>) "
            "out of the vocabulary, so that a copy model can only copy them from the source."
        },
    )
    model_license: str = field(default="apache-2.0", metadata={"help": "Licence written into the model card."})

    def __post_init__(self):
        if self.model_name_or_path is None and self.model_type is None:
            raise ValueError("Pass --model_name_or_path (a pretrained encoder-decoder) or --model_type (from scratch).")
        if self.config_overrides is not None and (self.config_name is not None or self.model_name_or_path is not None):
            raise ValueError(
                "--config_overrides can't be used in combination with --config_name or --model_name_or_path"
            )
        if self.tokenizer_type not in TOKENIZER_TYPES:
            raise ValueError(f"--tokenizer_type must be one of {TOKENIZER_TYPES}, got {self.tokenizer_type!r}.")
        if self.tokenizer_copy_placeholders and not (self.train_tokenizer and self.tokenizer_type == "wordlevel"):
            raise ValueError(
                "--tokenizer_copy_placeholders shapes the vocabulary of a trained word-level tokenizer: "
                "add --train_tokenizer --tokenizer_type wordlevel (or drop it)."
            )
        if (
            self.model_type is not None
            and self.model_name_or_path is None
            and not self.train_tokenizer
            and self.tokenizer_name is None
        ):
            raise ValueError(
                "Training from scratch (--model_type) needs a tokenizer: --train_tokenizer or --tokenizer_name."
            )


# The copy settings, declared once: the fields of PointerGeneratorConfig itself (types, defaults and help from its
# docstring), parsed like PEFT scripts parse their config dataclasses, and handed back to `from_base(**settings)`.
# Not here: what the script sets from elsewhere (special tokens from the tokenizer, the base config) and
# label smoothing (`--label_smoothing_factor` goes to the model's own loss through PointerGeneratorSeq2SeqTrainer).
_NOT_COPY_SETTINGS = {
    "base_config",
    "is_encoder_decoder",
    "tie_word_embeddings",
    "label_smoothing",
    "pad_token_id",
    "bos_token_id",
    "eos_token_id",
    "decoder_start_token_id",
    "unk_token_id",
}
_STARTS_AT_ZERO = (
    " It starts at zero, so a wrapped checkpoint still generates exactly as before training; --{} false "
    "turns it off (docs/main-job/README.md has the measurements)."
)
_SCRIPT_DEFAULTS = {
    "p_gen_bias_init": (
        float | None,
        None,
        " Default: the config's 10.0 when wrapping a pretrained model, 0.0 for a model trained from scratch.",
    ),
    "selective_read": (bool, True, " On by default in this script." + _STARTS_AT_ZERO.format("selective_read")),
    # Three states: unset means "decide from the tokenizer" (training/model.py).
    "copy_next": (
        bool | None,
        None,
        " Default in this script: on for a word-level tokenizer (a word is "
        "one token), off for subword tokenizers, where the main job measured it costing about "
        "2 chrF beside selective read." + _STARTS_AT_ZERO.format("copy_next"),
    ),
}


def _config_field_help(name: str) -> str:
    """The `Args:` entry of `name` in PointerGeneratorConfig's docstring, on one line."""
    lines = (PointerGeneratorConfig.__doc__ or "").splitlines()
    for i, line in enumerate(lines):
        if line.strip().startswith(f"{name} ("):
            indent = len(line) - len(line.lstrip())
            text = []
            for follow in lines[i + 1 :]:
                if follow.strip() and len(follow) - len(follow.lstrip()) <= indent:
                    break
                text.append(follow.strip())
            return " ".join(t for t in text if t)
    return f"PointerGeneratorConfig.{name}."


def _copy_settings_dataclass() -> type:
    # Resolve the config's own (string) annotations in its module; typing.get_type_hints would also resolve the
    # inherited PreTrainedConfig ones, some of which name types imported only for type checking.
    namespace = vars(sys.modules[PointerGeneratorConfig.__module__])
    hints = {
        name: eval(hint, namespace) if isinstance(hint, str) else hint  # noqa: S307 - our own annotations
        for name, hint in PointerGeneratorConfig.__annotations__.items()
    }
    fields = [
        (
            "copy_mechanism",
            bool,
            field(
                default=True,
                metadata={
                    "help": "Add the pointer-generator copy mechanism. --no_copy_mechanism trains the plain base with the same "
                    "architecture and tokenizer (the baseline)."
                },
            ),
        )
    ]
    for config_field in dataclasses.fields(PointerGeneratorConfig):
        name = config_field.name
        if name not in PointerGeneratorConfig.__annotations__ or name in _NOT_COPY_SETTINGS:
            continue  # inherited from PreTrainedConfig, or not a copy setting
        kind, default, note = _SCRIPT_DEFAULTS.get(name, (hints[name], config_field.default, ""))
        default_kwargs = (
            {"default_factory": config_field.default_factory}
            if default is dataclasses.MISSING
            else {"default": default}
        )
        metadata = {"help": _config_field_help(name) + note}
        if kind == bool | None:
            metadata.update(nargs="?", const=True)  # a bare --copy_next still means true
        fields.append((name, kind, field(**default_kwargs, metadata=metadata)))
    cls = dataclasses.make_dataclass("PointerGeneratorArguments", fields)
    cls.__doc__ = "The copy mechanism's settings: PointerGeneratorConfig's fields, plus whether to add it at all."
    cls.__module__ = __name__
    return cls


PointerGeneratorArguments = _copy_settings_dataclass()


def copy_settings(copy_args) -> dict[str, Any]:
    """`PointerGeneratorArguments` as keyword arguments of `PointerGeneratorForConditionalGeneration.from_base`."""
    settings = dataclasses.asdict(copy_args)
    settings.pop("copy_mechanism")
    return {name: value for name, value in settings.items() if not (name in _SCRIPT_DEFAULTS and value is None)}


@dataclass
class DataTrainingArguments:
    """What data to train and evaluate on, and how to cut it."""

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
    dataset_config_name: str | None = field(default=None, metadata={"help": "The dataset's configuration."})
    train_file: str | None = field(default=None, metadata={"help": f"Training data: {SUPPORTED}."})
    validation_file: str | None = field(default=None, metadata={"help": "Validation data (same formats)."})
    test_file: str | None = field(default=None, metadata={"help": "Test data (same formats)."})
    overwrite_cache: bool = field(default=False, metadata={"help": "Redo the cached preprocessing (Dataset.map)."})
    preprocessing_num_workers: int | None = field(default=None, metadata={"help": "Processes for preprocessing."})
    max_source_length: int = field(
        default=1024, metadata={"help": "Longest source in tokens; longer ones are truncated (and counted)."}
    )
    max_target_length: int = field(
        default=128, metadata={"help": "Longest target in tokens; longer ones are truncated (and counted)."}
    )
    val_max_target_length: int | None = field(
        default=None,
        metadata={
            "help": "Longest target for evaluation and the generation length limit. Defaults to max_target_length."
        },
    )
    pad_to_max_length: bool = field(default=False, metadata={"help": "Pad to the maximum lengths (else per batch)."})
    max_train_samples: int | None = field(default=None, metadata={"help": "Use only the first N training pairs."})
    max_eval_samples: int | None = field(default=None, metadata={"help": "Use only the first N validation pairs."})
    max_predict_samples: int | None = field(default=None, metadata={"help": "Use only the first N test pairs."})
    num_beams: int | None = field(default=None, metadata={"help": "Beams for evaluation/prediction."})
    no_repeat_ngram_size: int | None = field(
        default=None,
        metadata={
            "help": "In evaluation/prediction outputs an n-gram of this many tokens occurs at most once "
            "(generate()'s no_repeat_ngram_size); saved in the model's generation config."
        },
    )
    oov_copy_limit: bool = field(
        default=False,
        metadata={
            "help": "Pointer-generator: in evaluation/prediction outputs an out-of-vocabulary source word occurs "
            "at most as often as in its source (generate()'s oov_copy_limit); saved in the model's "
            "generation config."
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
    copy_augmentation: bool = field(
        default=False,
        metadata={
            "help": "Add to the training data a copy of each pair that holds a word verbatim in source and "
            "target (capitalised or with a digit: a name, a product, a version), that word respelled "
            "alike in both as a new word of the same shape (Trac -> Qvem, utf8_bin -> kqx3_wod): "
            "teaches copying words never seen in training (training/augmentation.py)."
        },
    )
    word_dropout: float = field(
        default=0.0,
        metadata={
            "help": "Chance that a source token of a training batch becomes the unknown token (Sennrich & Zhang "
            "2019's word dropout; a pointer-generator's copy inputs and labels follow, so a dropped word is "
            "unknown to copying too: hf_pgen/word_dropout.py)."
        },
    )
    target_word_dropout: float = field(
        default=0.0,
        metadata={"help": "The same for the decoder's input tokens (its own history); the labels stay."},
    )
    early_stopping_patience: int | None = field(
        default=None,
        metadata={
            "help": "With --eval_strategy steps: stop once the validation loss has not improved for this many "
            "evaluations, and keep the best checkpoint (training to convergence). Evaluations during "
            "training compute the loss only; --predict_with_generate applies to the final evaluation."
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
    ignore_pad_token_for_loss: bool = field(default=True, metadata={"help": "Ignore padded label positions."})
    source_prefix: str | None = field(default=None, metadata={"help": "Text prepended to every source (T5)."})
    forced_bos_token: str | None = field(
        default=None,
        metadata={
            "help": "Token forced first in the output (mBART-50, M2M100: the target language "
            "code, which is the default for them)."
        },
    )
    protect: str | None = field(
        default=None,
        metadata={
            "help": "Guaranteed copies in generated evaluation/test outputs (--predict_with_generate): "
            "'placeholders', 'oov' (copying models) or a regular expression. Every protected span of a "
            "source comes out exactly as often as the source holds it."
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
    copy_records: int = field(
        default=0,
        metadata={
            "help": "With --do_predict: also translate the first N test sources through pipeline('translation') "
            "with return_copy_info=True and write copy_records.jsonl and copies.html (hf_pgen.visualize) "
            "to --output_dir. Pointer-generators only."
        },
    )
    skip_bad_lines: bool = field(
        default=False,
        metadata={
            "help": "Skip (and count) lines of data files that are not valid UTF-8 or not valid JSON instead "
            "of stopping with an error naming the file and line."
        },
    )
    overwrite_output_dir: bool = field(
        default=False,
        metadata={
            "help": "Train from scratch in a non-empty --output_dir (default: resume from its "
            "last checkpoint; a non-empty folder without one is refused)."
        },
    )

    def __post_init__(self):
        if self.val_max_target_length is None:
            self.val_max_target_length = self.max_target_length
        for name in ("train_file", "validation_file", "test_file"):
            path = getattr(self, name)
            if path is not None and file_format(path) is None:
                raise ValueError(f"--{name} {path}: unsupported file type; use {SUPPORTED}.")


def parse_args(args: list[str] | None = None):
    parser = HfArgumentParser(
        (ModelArguments, PointerGeneratorArguments, DataTrainingArguments, Seq2SeqTrainingArguments)
    )
    if args is None and len(sys.argv) == 2 and sys.argv[1].endswith(".json"):
        return parser.parse_json_file(json_file=os.path.abspath(sys.argv[1]))
    return parser.parse_args_into_dataclasses(args=args)


# ---------------------------------------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------------------------------------


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
    logger.setLevel(log_level)
    logging.getLogger("training").setLevel(log_level)
    datasets.utils.logging.set_verbosity(log_level)
    transformers.utils.logging.set_verbosity(log_level)
    transformers.utils.logging.enable_default_handler()
    transformers.utils.logging.enable_explicit_format()


def find_checkpoint(data_args: DataTrainingArguments, training_args: Seq2SeqTrainingArguments) -> str | None:
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


def warn_ignored_copy_settings(copy_args, model, model_name_or_path: str | None) -> None:
    """A saved pointer-generator keeps its own copy settings (its weights were trained with them): say so where flags
    ask for others (a value other than the script's default), rather than ignore them silently."""
    defaults = {f.name: f.default for f in dataclasses.fields(copy_args)}
    asked = {k: v for k, v in copy_settings(copy_args).items() if v != defaults.get(k)}
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


def main(args: list[str] | None = None) -> dict[str, Any]:
    """Run training/evaluation/prediction as the command line `args` say; return the results dict."""
    model_args, copy_args, data_args, training_args = parse_args(args)
    setup_logging(training_args)
    logger.info("Training/evaluation parameters %s", training_args)
    if not (training_args.do_train or training_args.do_eval or training_args.do_predict):
        raise ValueError("There is nothing to do: pass --do_train, --do_eval and/or --do_predict.")
    if data_args.copy_records and not (training_args.do_predict and copy_args.copy_mechanism):
        raise ValueError(
            "--copy_records writes what a pointer-generator copied in test outputs: it needs --do_predict "
            "and the copy mechanism (drop --no_copy_mechanism)."
        )
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
    if data_args.metric_model is not None:
        from training.neural_metrics import check_metric

        if not (training_args.do_predict and training_args.predict_with_generate):
            raise ValueError(
                f"--metric_model {data_args.metric_model} scores generated test predictions: add --do_predict "
                "--predict_with_generate (or drop --metric_model)."
            )
        check_metric(data_args.neural_metric, data_args.metric_model)  # before any training
    if data_args.protect is not None and not training_args.predict_with_generate:
        raise ValueError(
            f"--protect {data_args.protect} protects spans in generated outputs: add "
            "--predict_with_generate (or drop --protect)."
        )
    checkpoint = find_checkpoint(data_args, training_args)
    set_seed(training_args.seed)
    copy = copy_args.copy_mechanism

    # -- data --
    needed = [
        s
        for s, flag in (
            ("train", training_args.do_train),
            ("validation", training_args.do_eval),
            ("test", training_args.do_predict),
        )
        if flag
    ]
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
    for split, flag in (("train", "--do_train"), ("validation", "--do_eval"), ("test", "--do_predict")):
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
    trained_tokenizer = model_args.train_tokenizer
    if checkpoint is not None and trained_tokenizer and os.path.isfile(os.path.join(checkpoint, "tokenizer.json")):
        tokenizer = AutoTokenizer.from_pretrained(checkpoint)
        logger.info("Reusing the tokenizer saved in %s.", checkpoint)
    elif trained_tokenizer:
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
    if copy:
        warn_ignored_copy_settings(copy_args, model, model_args.model_name_or_path)
    check_checkpoint_settings(checkpoint, model)
    check_lengths(model, data_args, training_args)
    vocab_size = model.config.vocab_size  # the output width; extended (copy-only) ids start here
    if vocab_size < len(tokenizer):
        raise ValueError(f"The model's vocabulary ({vocab_size}) is smaller than the tokenizer's ({len(tokenizer)}).")
    if data_args.source_prefix is None and model.config.get_text_config().model_type in ("t5", "mt5", "umt5"):
        logger.warning(
            "You're running a T5 model but didn't provide a source prefix, which is the expected, e.g. "
            "with `--source_prefix 'translate English to German: '`."
        )

    # -- preprocessing: one tokenization per split, cached by Dataset.map --
    padding = "max_length" if data_args.pad_to_max_length else False
    prefix = data_args.source_prefix or ""
    unk_id, pad_id = tokenizer.unk_token_id, tokenizer.pad_token_id

    # What the model reads with --glossary (the annotation written in): the Trainer checks every row against it. A
    # plain model without an annotation reads its sources as they are.
    annotation = getattr(model.config, "glossary_annotation", None)
    reader = PointerGeneratorProcessor(tokenizer, vocab_size, annotation, copies=copy) if copy or annotation else None

    def preprocess(batch, max_target_length, annotate):
        sources = [prefix + s for s in batch["source"]]
        if annotate:
            terms = glossary
            if "glossary" in batch:  # one term base per example
                terms = [
                    Glossary([tuple(pair) for pair in pairs], match=data_args.glossary_match)
                    for pairs in batch["glossary"]
                ]
            sources = reader.glossary_sources(batch["source"], terms, source_prefix=prefix)
        encoded = encode_with_oovs(
            tokenizer,
            sources,
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
    for split, description in (("train", "train"), ("validation", "validation"), ("test", "prediction")):
        if split not in needed:
            continue
        max_target_length = data_args.max_target_length if split == "train" else data_args.val_max_target_length
        with training_args.main_process_first(desc=f"{split} dataset map pre-processing"):
            dataset = raw_splits[split].map(
                preprocess,
                batched=True,
                fn_kwargs={
                    "max_target_length": max_target_length,
                    "annotate": reader is not None
                    and (
                        (split != "train" and glossary is not None)
                        or (split == "test" and per_example_terms is not None)
                    ),
                },
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
        if copy and split == needed[0] and not any(len(words) for words in dataset["oov_words"]):
            logger.warning(
                "No source word of the %s data is out of the tokenizer's vocabulary (%s): the copy mechanism can "
                "only copy in-vocabulary tokens, and no OOV copy rate can be reported. A word-level tokenizer "
                "(--train_tokenizer --tokenizer_type wordlevel) leaves rare words to copying.",
                split,
                type(tokenizer.backend_tokenizer.model).__name__
                if hasattr(tokenizer, "backend_tokenizer")
                else type(tokenizer).__name__,
            )
        datasets_by_split[split] = dataset
    train_dataset = datasets_by_split.get("train")
    eval_dataset = datasets_by_split.get("validation")
    predict_dataset = datasets_by_split.get("test")

    label_pad_token_id = -100 if data_args.ignore_pad_token_for_loss else pad_id
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
        train_dataset=train_dataset,
        eval_dataset=eval_dataset,
        processing_class=tokenizer,
        data_collator=data_collator,
        compute_metrics=build_compute_metrics(
            tokenizer, vocab_size=vocab_size, source_column="source", reference_column="target"
        )
        if training_args.predict_with_generate
        else None,
        protect=data_args.protect,
        glossary=glossary,
        glossary_mode=data_args.glossary_mode,
        glossary_column="glossary" if per_example_terms is not None else None,
        glossary_match=data_args.glossary_match,
        source_column="source",
        source_prefix=prefix,
        max_source_length=data_args.max_source_length,
        word_dropout=data_args.word_dropout,
        target_word_dropout=data_args.target_word_dropout,
    )
    if data_args.early_stopping_patience is not None:
        trainer.add_callback(EarlyStoppingCallback(early_stopping_patience=data_args.early_stopping_patience))

    results: dict[str, Any] = {}
    output_dir = Path(training_args.output_dir)

    # -- train --
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
            for key in (
                "skipped_empty_lines",
                "skipped_empty_text",
                "skipped_undecodable_lines",
                "skipped_malformed_lines",
                "truncated_sources",
                "truncated_targets",
                "augmented",
                "glossary_annotated",
            ):
                metrics[f"train_{key}"] = int(data_stats["train"].get(key, 0))
            trainer.log_metrics("train", metrics)
            trainer.save_metrics("train", metrics)
            trainer.save_state()
            results.update(metrics)

    # -- evaluate --
    max_length, num_beams = training_args.generation_max_length, training_args.generation_num_beams
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
            if data_args.metric_model is not None:
                from training.neural_metrics import neural_scores

                scores = neural_scores(
                    data_args.neural_metric,
                    data_args.metric_model,
                    predict_dataset["source"],
                    predictions,
                    predict_dataset["target"],
                    num_layers=data_args.metric_layers,
                )
                metrics.update({f"predict_{k}": v for k, v in scores.items()})
                trainer.log_metrics("predict", metrics)
                trainer.save_metrics("predict", metrics)
                results.update(metrics)
        if trainer.is_world_process_zero() and data_args.copy_records:
            write_copy_records(
                output_dir,
                trainer.model,
                tokenizer,
                predict_dataset["source"][: data_args.copy_records],
                prefix=prefix,
                num_beams=num_beams,
                max_length=max_length,
                protect=data_args.protect,
            )

    # -- data checks, model card (every run), push --
    if training_args.push_to_hub:
        repo_id = trainer.hub_model_id  # the full id, also without --hub_model_id (derived from --output_dir)
    else:
        repo_id = str(output_dir) if training_args.do_train else (model_args.model_name_or_path or str(output_dir))
    settings = collect_settings(model_args, data_args, training_args, model, tokenizer, data_origin, data_stats)
    if trainer.is_world_process_zero():
        output_dir.mkdir(parents=True, exist_ok=True)
        (output_dir / "data_stats.json").write_text(
            json.dumps({split: dict(stats) for split, stats in data_stats.items()}, indent=2) + "\n", encoding="utf-8"
        )
    # The library's card (as upstream's script, through the Trainer), with what only this run knows.
    card = dict(
        finetuned_from=model_args.model_name_or_path,
        tasks="translation",
        language=[source_key, target_key],
        license=model_args.model_license,
        model_name=output_dir.name,
        results=results,
        repo_id=repo_id,
        dataset_name=dataset_name(settings),
        dataset=data_origin if data_origin not in ("files", EMBEDDED_CORPUS) else None,
        max_new_tokens=training_args.generation_max_length,
        training_details=training_details(settings, results),
    )
    if training_args.push_to_hub:
        trainer.push_to_hub(**card)
    else:
        try:
            trainer.create_model_card(**card)
        except Exception as error:  # noqa: BLE001 - a card must never cost the trained model
            logger.error("Could not write the model card: %s", error)

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


def _leave_process_group() -> None:
    """Under torchrun, wait for every rank and leave the process group before the interpreter exits. A rank that exits
    with the group still open (rank 1 while rank 0 writes the predictions) can abort in gloo's threads with "terminate
    called without an active exception", failing the launch after the job itself succeeded."""
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        torch.distributed.barrier()
        torch.distributed.destroy_process_group()


def _mp_fn(index):  # for xla_spawn (TPUs)
    main()


if __name__ == "__main__":
    main()
    _leave_process_group()
