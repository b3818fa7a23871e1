"""What run_translation and run_summarization report about how a model was made: its settings, and the model card's
"Training details".

>>> from training.run_details import collect_settings, training_details
>>> settings = collect_settings(model_args, data_args, training_args, model, tokenizer, origin, stats)
>>> markdown = training_details(settings, results)    # results: the script's metrics

The card itself is the library's (`hf_pgen.modelcard.render_model_card`, written through the Trainer's
`create_model_card`); this module only says what the library cannot know: the data and its checks, the recipe,
the hardware and the versions.
"""

from __future__ import annotations

import json
from collections import Counter
from importlib import metadata
from pathlib import Path

import torch
import transformers

import hf_pgen
from hf_pgen import is_pointer_generator
from hf_pgen.corpus import CORPUS_DIR
from training.data.files import EMBEDDED_CORPUS
from training.report import format_duration

__all__ = ["collect_settings", "training_details", "dataset_name"]

LANGUAGE_NAMES = {
    "en": "English",
    "de": "German",
    "fr": "French",
    "es": "Spanish",
    "it": "Italian",
    "nl": "Dutch",
    "pt": "Portuguese",
    "ru": "Russian",
    "zh": "Chinese",
    "ja": "Japanese",
    "ro": "Romanian",
}


def collect_settings(
    model_args, data_args, training_args, model, tokenizer, data_origin, data_stats, task: str = "translation"
) -> dict:
    """How the model was made (also returned by the scripts' `main`, as `results["settings"]`). `task`:
    "translation" (run_translation: `data_args` has the language pair) or "summarization" (run_summarization:
    the text and summary columns)."""
    copy = is_pointer_generator(model)
    base = model.base if copy else model
    threads = torch.get_num_threads()
    on_gpu = torch.cuda.is_available() and not training_args.use_cpu
    if task == "translation":
        columns = {
            "source_lang": data_args.source_lang.split("_")[0],
            "target_lang": data_args.target_lang.split("_")[0],
        }
    else:
        columns = {"text_column": data_args.text_column, "summary_column": data_args.summary_column}
    return {
        "task": task,
        "script": f"run_{task}.py",
        "copy_mechanism": copy,
        "pointer": model.config.pointer if copy else None,
        "coverage": bool(model.config.coverage) if copy else False,
        "coverage_weight": model.config.coverage_weight if copy else None,
        "selective_read": bool(getattr(model.config, "selective_read", False)) if copy else False,
        "copy_next": bool(getattr(model.config, "copy_next", False)) if copy else False,
        "copy_augmentation": getattr(data_args, "copy_augmentation", False),
        "base_model": model_args.model_name_or_path,
        "model_type": base.config.model_type,
        "config_overrides": model_args.config_overrides,
        "parameters": sum(p.numel() for p in model.parameters()),
        "d_model": getattr(base.config, "d_model", None),
        "encoder_layers": getattr(base.config, "encoder_layers", getattr(base.config, "num_layers", None)),
        "decoder_layers": getattr(base.config, "decoder_layers", getattr(base.config, "num_decoder_layers", None)),
        "tokenizer_type": _tokenizer_kind(tokenizer),
        "trained_tokenizer": model_args.train_tokenizer,
        "tokenizer_source": None
        if model_args.train_tokenizer
        else (model_args.tokenizer_name or model_args.model_name_or_path),
        "vocab_size": len(tokenizer),
        **columns,
        "data_origin": data_origin,
        "data_files": {
            k: getattr(data_args, k) for k in ("train_file", "validation_file", "test_file") if getattr(data_args, k)
        },
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
        "dropout": getattr(base.config, "dropout", None),
        "word_dropout": data_args.word_dropout,
        "target_word_dropout": data_args.target_word_dropout,
        "seed": training_args.seed,
        "model_license": model_args.model_license,
        "output_dir": training_args.output_dir,
        "hardware": f"{torch.cuda.get_device_name() if on_gpu else 'CPU'}, {threads} thread"
        + ("s" if threads != 1 else ""),
        "versions": {
            "transformers": transformers.__version__,
            "torch": torch.__version__,
            "hf_pgen": hf_pgen.__version__,
            "sacrebleu": _version("sacrebleu"),
        },
    }


def dataset_name(settings: dict) -> str:
    """A readable name of the data the model was evaluated on, for the card's evaluation section and model-index."""
    origin = settings.get("data_origin")
    if origin == EMBEDDED_CORPUS:
        source, target = (LANGUAGE_NAMES.get(settings.get(k), settings.get(k)) for k in ("source_lang", "target_lang"))
        return f"hf_pgen's {source}→{target} software messages"
    if origin == "files":
        return ", ".join(Path(p).name for p in settings.get("data_files", {}).values()) or "local files"
    return str(origin or "custom data")


def training_details(settings: dict, results: dict) -> str:
    """The card's "Training details" as Markdown: the data (with the embedded corpus's packages and licences), what
    the data checks skipped or truncated, and the training procedure."""
    data_stats = settings.get("data_stats") or {}
    origin = settings.get("data_origin")
    lines = ["### Data", ""]
    if origin == EMBEDDED_CORPUS:
        packages = corpus_packages()
        used = {
            s: data_stats[s].get("used", data_stats[s].get("pairs"))
            for s in ("train", "validation", "test")
            if s in data_stats
        }
        lines += [
            "The English→German software-message corpus shipped with hf_pgen (`hf_pgen/en_de_messages`, loaded by "
            "`hf_pgen.corpus`): user-interface strings and their German translations, taken verbatim from the "
            f"message catalogues in the PyPI wheels of {len(packages)} open-source projects. Splits are by project, "
            "so test messages come from projects never seen in training. Pairs used: "
            + ", ".join(f"{s} {n}" for s, n in used.items() if n is not None)
            + ".",
            "",
            "| package | version | licence | pairs | split |",
            "|---|---|---|---:|---|",
            *[f"| {p['package']} | {p['version']} | {p['license']} | {p['pairs']} | {p['split']} |" for p in packages],
            "",
        ]
        licences = Counter()
        for package in packages:
            licences[package["license"]] += package["pairs"]
        lines += [
            "Licences of the data: "
            + ", ".join(f"{name} ({count} pairs)" for name, count in licences.most_common())
            + ". Per-package copyright lines and licence evidence are in the corpus's `ATTRIBUTION.md`; honour "
            "their attribution terms when redistributing the model.",
            "",
        ]
    elif origin == "files":
        files = settings.get("data_files", {})
        lines += [
            "Local data files: "
            + ", ".join(f"`{Path(p).name}` ({k.split('_')[0]})" for k, p in files.items())
            + ". Their origin and licence were not recorded by the training script.",
            "",
        ]
    else:
        lines += [f"The `datasets` dataset `{origin}`; see its own card for origin and licence.", ""]
    if data_stats:
        lines += [
            f"Data checks (examples skipped or truncated by `{settings.get('script', 'run_translation.py')}`):",
            "",
            "| split | pairs read | pairs used | empty lines | empty texts | undecodable lines | sources truncated | "
            "targets truncated |",
            "|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for split, stats in data_stats.items():
            cells = [
                stats.get(key, "–" if key == "used" else 0)
                for key in (
                    "pairs",
                    "used",
                    "skipped_empty_lines",
                    "skipped_empty_text",
                    "skipped_undecodable_lines",
                    "truncated_sources",
                    "truncated_targets",
                )
            ]
            lines.append(f"| {split} | " + " | ".join(map(str, cells)) + " |")
        lines.append("")
    lines += ["### Procedure", "", "| setting | value |", "|---|---|"]
    lines += [f"| {name} | {value} |" for name, value in _procedure(settings, results) if value is not None]
    train_pairs = (data_stats.get("train") or {}).get("used", (data_stats.get("train") or {}).get("pairs", "?"))
    runtime = results.get("train_runtime")
    if settings.get("base_model"):
        lines += ["", f"Fine-tuned from `{settings['base_model']}`."]
    elif isinstance(runtime, (int, float)):
        lines += [
            "",
            f"Trained from scratch on {train_pairs} pairs for {format_duration(runtime)} on "
            f"{settings.get('hardware')}: a small model on a small corpus, whose "
            + ("summaries" if settings.get("task") == "summarization" else "translations")
            + " of general text are poor and whose vocabulary is small on purpose.",
        ]
    return "\n".join(lines)


def _procedure(settings: dict, results: dict) -> list[tuple[str, object]]:
    copy = settings.get("copy_mechanism")
    shape = ", ".join(
        f"{k.replace('_', ' ')} {settings[k]}"
        for k in ("d_model", "encoder_layers", "decoder_layers")
        if settings.get(k) is not None
    )
    augmented = (settings.get("data_stats") or {}).get("train", {}).get("augmented")  # --*_augmentation
    if copy:
        mechanism = f"pointer-generator, {settings.get('pointer')} pointer" + (
            f", coverage (weight {settings.get('coverage_weight')})" if settings.get("coverage") else ", no coverage"
        )
        mechanism += "".join(
            f", {name}"
            for key, name in (("selective_read", "selective read"), ("copy_next", "copy-next"))
            if settings.get(key)
        )
    else:
        mechanism = "none (baseline)"
    tokenizer = f"{settings.get('tokenizer_type')}, {settings.get('vocab_size')} tokens, " + (
        "trained on the training data (shared source/target)"
        if settings.get("trained_tokenizer")
        else f"from `{settings.get('tokenizer_source')}`"
    )
    length = (
        f"{results.get('train_samples', '?')} pairs, "
        + (f"{augmented} of them augmented copies (placeholders renamed, or words respelled), " if augmented else "")
        + (
            f"{settings['max_steps']} steps"
            if (settings.get("max_steps") or -1) > 0
            else f"{settings.get('num_train_epochs')} epochs"
        )
        + (f" (epoch {results['epoch']:.2f} reached)" if isinstance(results.get("epoch"), float) else "")
    )
    runtime, speed = results.get("train_runtime"), results.get("train_tokens_per_second")
    beams = settings.get("num_beams") or 1
    return [
        (
            "architecture",
            f"{settings.get('model_type')} ({shape}; {settings.get('parameters', 0) / 1e6:.1f}M parameters)",
        ),
        ("copy mechanism", mechanism),
        (
            "initialisation",
            f"from `{settings['base_model']}`" if settings.get("base_model") else "random (from scratch)",
        ),
        ("config overrides", f"`{settings['config_overrides']}`" if settings.get("config_overrides") else "none"),
        ("tokenizer", tokenizer),
        (
            "max source / target length",
            f"{settings.get('max_source_length')} / {settings.get('max_target_length')} tokens",
        ),
        (
            "optimiser",
            f"AdamW, learning rate {settings.get('learning_rate')}, {settings.get('lr_scheduler_type')} "
            f"schedule, {_integral(settings.get('warmup_steps'))} warm-up steps, weight decay "
            f"{settings.get('weight_decay')}",
        ),
        (
            "batch size",
            f"{settings.get('per_device_train_batch_size')} × {settings.get('gradient_accumulation_steps')} "
            "accumulation",
        ),
        ("training length", length if "train_samples" in results else None),
        (
            "training time",
            f"{format_duration(runtime)}"
            + (f", {speed:,.0f} tokens/s (source + target, no padding)" if isinstance(speed, (int, float)) else "")
            if isinstance(runtime, (int, float))
            else None,
        ),
        ("label smoothing", settings.get("label_smoothing_factor")),
        (
            "decoding",
            f"{'greedy' if beams == 1 else f'{beams} beams'}, at most {settings.get('generation_max_length')} tokens",
        ),
        ("seed", settings.get("seed")),
        ("hardware", settings.get("hardware")),
        ("framework versions", ", ".join(f"{k} {v}" for k, v in (settings.get("versions") or {}).items() if v)),
    ]


# The corpus splits run_translation can read (--do_train, --do_eval, --do_predict): the card names these packages only,
# not those of the held-out heldout_tools split, which no run reads.
CARD_SPLITS = ("train", "validation", "test")


def corpus_packages() -> list[dict]:
    stats_path = CORPUS_DIR / "stats.json"
    if not stats_path.is_file():
        return []
    stats = json.loads(stats_path.read_text(encoding="utf-8"))
    return [
        {
            "package": name,
            "version": info.get("version", ""),
            "license": info.get("license", "unknown"),
            "pairs": info.get("pairs", 0),
            "split": info.get("split", ""),
        }
        for name, info in stats.get("packages", {}).items()
        if info.get("split") in CARD_SPLITS
    ]


def _integral(value):
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _version(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def _tokenizer_kind(tokenizer) -> str:
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        return type(tokenizer).__name__
    kind = type(backend.model).__name__
    if kind == "BPE" and type(backend.pre_tokenizer).__name__ == "ByteLevel":
        kind = "byte-level BPE"
    return kind
