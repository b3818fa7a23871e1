"""The command-line arguments that run_translation and run_summarization share.

- `ModelArguments`: which model, config and tokenizer (pretrained or from scratch, a trained tokenizer);
- `PointerGeneratorArguments`: the copy mechanism's settings, generated from `PointerGeneratorConfig`'s own fields
  (`copy_settings` hands them to `from_base`), plus `--copy_mechanism/--no_copy_mechanism`;
- `Seq2SeqDataArguments`: data files or dataset, lengths, sample limits, decoding and what the scripts write; each
  script subclasses it with its own columns (`--source_lang/--target_lang`, `--text_column/--summary_column`).
"""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass, field
from typing import Any

from transformers import CONFIG_MAPPING

from hf_pgen import PointerGeneratorConfig
from hf_pgen.tokenizer_training import TOKENIZER_TYPES
from training.data.files import SUPPORTED, file_format
from training.model import MODEL_TYPES

__all__ = [
    "ModelArguments",
    "PointerGeneratorArguments",
    "Seq2SeqDataArguments",
    "copy_settings",
]


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
    add_coverage: bool = field(
        default=False,
        metadata={
            "help": "With --model_name_or_path a saved pointer-generator trained without coverage: switch coverage "
            "on (weighted by --coverage_weight) and train on, See et al.'s final coverage phase. Its weights start "
            "at zero, so the model starts out generating exactly as before."
        },
    )

    def __post_init__(self):
        if self.model_name_or_path is None and self.model_type is None:
            raise ValueError("Pass --model_name_or_path (a pretrained encoder-decoder) or --model_type (from scratch).")
        if self.config_overrides is not None and (self.config_name is not None or self.model_name_or_path is not None):
            raise ValueError(
                "--config_overrides can't be used in combination with --config_name or --model_name_or_path"
            )
        if self.add_coverage and self.model_name_or_path is None:
            raise ValueError(
                "--add_coverage switches coverage on in a saved pointer-generator: pass it as --model_name_or_path "
                "(to train with coverage from the start, pass --coverage instead)."
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
class Seq2SeqDataArguments:
    """What data to train and evaluate on, how to cut it, how to decode, and what to write. Each script adds its own
    columns (and may say more about `--dataset_name`)."""

    dataset_name: str | None = field(
        default=None,
        metadata={"help": "A `datasets` dataset: Hub id, local folder, or a DatasetDict saved with save_to_disk."},
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
    max_train_samples: int | None = field(default=None, metadata={"help": "Use only the first N training examples."})
    max_eval_samples: int | None = field(default=None, metadata={"help": "Use only the first N validation examples."})
    max_predict_samples: int | None = field(default=None, metadata={"help": "Use only the first N test examples."})
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
    ignore_pad_token_for_loss: bool = field(default=True, metadata={"help": "Ignore padded label positions."})
    source_prefix: str | None = field(
        default=None, metadata={"help": "Text prepended to every source (T5: 'summarize: ', 'translate ...: ')."}
    )
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
    copy_records: int = field(
        default=0,
        metadata={
            "help": "With --do_predict: also run the first N test sources through the task's pipeline "
            "(pipeline('translation'), pipeline('summarization')) with return_copy_info=True and write "
            "copy_records.jsonl and copies.html (hf_pgen.visualize) to --output_dir. Pointer-generators only."
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
