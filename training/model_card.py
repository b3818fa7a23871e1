"""The model card run_translation writes (README.md of the output folder), and what it reports about the run.

>>> from training.model_card import collect_settings, render_training_card
>>> settings = collect_settings(model_args, data_args, training_args, model, tokenizer, origin, stats,
...                             repo_id="you/pg")
>>> text = render_training_card(results, settings)   # results: run_translation's metrics

The Jinja2 template is `model_card.md.j2` beside this file. The YAML header comes from
`huggingface_hub.ModelCardData` with `EvalResult`s, which renders a valid model-index (`Trainer.create_model_card`
drops the results of translation models); the usage snippet is `hf_pgen.modelcard.usage_snippet`'s, which runs
for the copy model (through its own pipeline code) and for a plain baseline (generate + batch_decode) alike.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path
from typing import Any

import torch
import transformers

import hf_pgen
from hf_pgen import is_pointer_generator
from hf_pgen.modelcard import is_hub_id, usage_snippet

TEMPLATE_PATH = Path(__file__).resolve().parent / "model_card.md.j2"
CORPUS_DIR = Path(__file__).resolve().parent / "data" / "en_de_messages"
EMBEDDED_CORPUS = "en_de_messages"
LANGUAGE_NAMES = {"en": "English", "de": "German", "fr": "French", "es": "Spanish", "it": "Italian", "nl": "Dutch",
                  "pt": "Portuguese", "ru": "Russian", "zh": "Chinese", "ja": "Japanese", "ro": "Romanian"}

MODEL_TYPE_LABELS = {"bart": "BART", "mbart": "mBART", "t5": "T5", "mt5": "mT5", "marian": "Marian",
                     "pegasus": "Pegasus", "m2m_100": "M2M100", "fsmt": "FSMT", "led": "LED", "prophetnet": "ProphetNet"}

# (result key suffix, label in the table, metric type in the model-index, metric name, digits)
METRICS = (
    ("bleu", "sacreBLEU", "bleu", "sacreBLEU", 2),
    ("chrf", "chrF", "chrf", "chrF", 2),
    ("placeholder_preservation", "placeholder preservation", "placeholder_preservation", "Placeholder preservation", 3),
    ("oov_copy_rate", "OOV copy rate", "oov_copy_rate", "OOV copy rate", 3),
    ("mean_p_gen", "mean p_gen", "mean_p_gen", "Mean p_gen", 3),
)


def _number(value: Any, digits: int) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if isinstance(value, (int, float)):
        return f"{value:.{digits}f}"
    return str(value)


def _integral(value: Any) -> Any:
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _duration(seconds: Any) -> str:
    if not isinstance(seconds, (int, float)):
        return "a short time"
    return f"{seconds / 60:.0f} minutes" if seconds >= 90 else f"{seconds:.0f} seconds"


def _corpus_packages() -> list[dict]:
    stats_path = CORPUS_DIR / "stats.json"
    if not stats_path.is_file():
        return []
    stats = json.loads(stats_path.read_text(encoding="utf-8"))
    return [
        {"package": name, "version": info.get("version", ""), "license": info.get("license", "unknown"),
         "pairs": info.get("pairs", 0), "split": info.get("split", "")}
        for name, info in stats.get("packages", {}).items()
    ]


def _prefix(results: dict) -> tuple[str, str]:
    """Which results the card reports: the test split (predict_*) if present, else validation (eval_*)."""
    if any(key.startswith("predict_") for key in results):
        return "predict", "test"
    return "eval", "validation"


def render_training_card(
    results: dict,
    settings: dict,
    *,
    baseline_results: dict | None = None,
    model_name: str | None = None,
    repo_id: str | None = None,
    template_path: str | Path | None = None,
) -> str:
    """The model card as Markdown with a YAML header (metadata and model-index).

    Args:
        results: metrics as run_translation returns them (`train_*`, `eval_*`, `predict_*` keys).
        settings: how the model was made (run_translation's `collect_settings`): copy settings, model shape,
            tokenizer, data origin and checks, optimisation, hardware and versions.
        baseline_results: the same metrics of a comparison model (e.g. the no-copy baseline), shown side by side.
        model_name: title of the card; defaults to the output folder's name.
        repo_id: where the usage snippet loads the model from; defaults to `settings["repo_id"]` (run_translation:
            the pushed repository, else the output folder of a training run, else the evaluated model).
        template_path: a Jinja2 template; defaults to `model_card.md.j2` beside this file.
    """
    from huggingface_hub import EvalResult, ModelCard, ModelCardData

    import sacrebleu

    prefix, split = _prefix(results)
    copy = bool(settings.get("copy_mechanism"))
    output_dir = settings.get("output_dir") or "model"
    model_name = model_name or Path(output_dir).name
    repo_id = repo_id or settings.get("repo_id") or settings.get("hub_model_id") or output_dir
    source_lang, target_lang = settings.get("source_lang", "en"), settings.get("target_lang", "de")
    origin = settings.get("data_origin")
    embedded = origin == EMBEDDED_CORPUS

    # -- results table and model-index --
    rows, eval_results = [], []
    dataset_type = EMBEDDED_CORPUS if embedded else str(origin or "custom")
    dataset_name = (
        f"{LANGUAGE_NAMES.get(source_lang, source_lang)}→{LANGUAGE_NAMES.get(target_lang, target_lang)} software "
        "messages (hf_pgen embedded corpus)" if embedded else str(origin or "custom data")
    )
    if origin == "files":
        dataset_name = ", ".join(Path(p).name for p in settings.get("data_files", {}).values()) or "local files"
        dataset_type = "local-files"
    for suffix, label, metric_type, metric_name, digits in METRICS:
        value = results.get(f"{prefix}_{suffix}")
        base_value = (baseline_results or {}).get(f"{prefix}_{suffix}")
        if value is None and base_value is None:
            continue
        rows.append({"label": label, "value": _number(value, digits), "baseline": _number(base_value, digits)})
        if value is not None and not (isinstance(value, float) and math.isnan(value)) and suffix != "mean_p_gen":
            eval_results.append(EvalResult(
                task_type="translation", task_name="Translation", dataset_type=dataset_type,
                dataset_name=dataset_name, dataset_config=f"{source_lang}-{target_lang}", dataset_split=split,
                metric_type=metric_type, metric_name=metric_name, metric_value=round(float(value), 4),
            ))
    speed = results.get("train_tokens_per_second")
    base_speed = (baseline_results or {}).get("train_tokens_per_second")
    if speed is not None or base_speed is not None:
        rows.append({"label": "training tokens/s", "value": _number(speed, 0), "baseline": _number(base_speed, 0)})
    if results.get("train_runtime") is not None:
        rows.append({"label": "training time (s)", "value": _number(results["train_runtime"], 0),
                     "baseline": _number((baseline_results or {}).get("train_runtime"), 0)})

    # -- data --
    data_stats = settings.get("data_stats") or {}
    packages = _corpus_packages() if embedded else []
    if embedded:
        pairs = {s: data_stats[s].get("used", data_stats[s].get("pairs")) for s in ("train", "validation", "test")
                 if s in data_stats}
        data_description = (
            "The English→German software-message corpus shipped with hf_pgen (`hf_pgen/en_de_messages`, loaded by `hf_pgen.corpus`): "
            "user-interface strings and their German translations, taken verbatim from the message catalogues in "
            f"the PyPI wheels of {len(packages)} open-source projects. Splits are by project, so test messages come "
            "from projects never seen in training. Pairs used: "
            + ", ".join(f"{s} {n}" for s, n in pairs.items() if n is not None) + "."
        )
        licenses = Counter()
        for package in packages:
            licenses[package["license"]] += package["pairs"]
        data_licenses = ", ".join(f"{name} ({count} pairs)" for name, count in licenses.most_common())
    elif origin == "files":
        files = settings.get("data_files", {})
        data_description = "Local data files: " + ", ".join(f"`{Path(p).name}` ({k.split('_')[0]})"
                                                              for k, p in files.items()) + \
            ". Their origin and licence were not recorded by the training script."
        data_licenses = ""
    else:
        data_description = f"The `datasets` dataset `{origin}`; see its own card for origin and licence."
        data_licenses = ""
    stats_rows = []
    for split_name, stats in data_stats.items():
        row = {"split": split_name}
        for key in ("pairs", "used", "skipped_empty_lines", "skipped_empty_text", "skipped_undecodable_lines",
                    "truncated_sources", "truncated_targets"):
            row[key] = stats.get(key, "–" if key == "used" else 0)
        stats_rows.append(row)

    # -- settings table --
    shape = ", ".join(
        f"{k.replace('_', ' ')} {settings[k]}" for k in ("d_model", "encoder_layers", "decoder_layers")
        if settings.get(k) is not None
    )
    augmented = (settings.get("data_stats") or {}).get("train", {}).get("augmented")  # --placeholder_augmentation
    settings_rows = [
        ("architecture", f"{settings.get('model_type')} ({shape}; {settings.get('parameters', 0) / 1e6:.1f}M "
                         "parameters)"),
        ("copy mechanism", f"pointer-generator, {settings.get('pointer')} pointer"
                           + (f", coverage (weight {settings.get('coverage_weight')})" if settings.get("coverage")
                              else ", no coverage") if copy else "none (baseline)"),
        ("initialisation", f"from `{settings['base_model']}`" if settings.get("base_model") else "random (from scratch)"),
        ("config overrides", f"`{settings['config_overrides']}`" if settings.get("config_overrides") else "none"),
        ("tokenizer", f"{settings.get('tokenizer_type')}, {settings.get('vocab_size')} tokens, "
         + ("trained on the training data (shared source/target)" if settings.get("trained_tokenizer")
            else f"from `{settings.get('tokenizer_source')}`")),
        ("max source / target length", f"{settings.get('max_source_length')} / {settings.get('max_target_length')} "
                                       "tokens"),
        ("optimiser", f"AdamW, learning rate {settings.get('learning_rate')}, {settings.get('lr_scheduler_type')} "
                      f"schedule, {_integral(settings.get('warmup_steps'))} warm-up steps, weight decay "
                      f"{settings.get('weight_decay')}"),
        ("batch size", f"{settings.get('per_device_train_batch_size')} × {settings.get('gradient_accumulation_steps')} "
                       "accumulation"),
        ("training length", f"{results.get('train_samples', '?')} pairs, "
                            + (f"{augmented} of them placeholder-augmented copies, " if augmented else "")
                            + (f"{settings['max_steps']} steps" if (settings.get("max_steps") or -1) > 0
                               else f"{settings.get('num_train_epochs')} epochs")
                            + (f" (epoch {results['epoch']:.2f} reached)" if isinstance(results.get("epoch"), float)
                               else "")),
        ("label smoothing", settings.get("label_smoothing_factor")),
        ("decoding", f"{'greedy' if settings.get('num_beams', 1) == 1 else str(settings.get('num_beams')) + ' beams'}, "
                     f"at most {settings.get('generation_max_length')} tokens"),
        ("seed", settings.get("seed")),
        ("hardware", settings.get("hardware")),
    ]

    tags = ["translation", "pointer-generator", "copy-mechanism", "hf_pgen", "seq2seq"]
    if settings.get("model_type"):
        tags.append(str(settings["model_type"]))
    if not copy:
        tags.remove("pointer-generator")
        tags.remove("copy-mechanism")
        tags.append("baseline")
    card_data = ModelCardData(
        model_name=model_name,
        language=[source_lang, target_lang],
        license=settings.get("model_license") or None,
        library_name="transformers",
        pipeline_tag="translation",
        tags=tags,
        # `datasets:` names Hub datasets only: not the embedded corpus, local files or a local folder.
        datasets=[str(origin)] if origin not in (None, "files", EMBEDDED_CORPUS) and is_hub_id(str(origin)) else None,
        metrics=[m for m in ("bleu", "chrf", "placeholder_preservation", "oov_copy_rate")
                 if any(r.metric_type == m for r in eval_results)],
        base_model=settings.get("base_model") if is_hub_id(settings.get("base_model") or "") else None,
        eval_results=eval_results or None,
    )
    example = "Delete the file %(name)s?" if source_lang == "en" else "Hello world"
    versions = settings.get("versions") or {}
    card = ModelCard.from_template(
        card_data,
        template_path=str(template_path or TEMPLATE_PATH),
        model_name=model_name,
        copy_mechanism=copy,
        model_type_label=MODEL_TYPE_LABELS.get(str(settings.get("model_type")), str(settings.get("model_type"))),
        source_language=LANGUAGE_NAMES.get(source_lang, source_lang),
        target_language=LANGUAGE_NAMES.get(target_lang, target_lang),
        eval_split=split,
        eval_samples=results.get(f"{prefix}_samples", "?"),
        eval_origin="projects unseen in training" if embedded and split == "test" else "",
        decoding="greedy decoding" if settings.get("num_beams", 1) == 1 else f"beam search ({settings.get('num_beams')} beams)",
        model_column="this model" if baseline_results is None else ("pointer-generator" if copy else "this model"),
        baseline_column="baseline (no copy)",
        baseline=baseline_results is not None,
        result_rows=rows,
        sacrebleu_version=sacrebleu.__version__,
        has_p_gen=results.get(f"{prefix}_mean_p_gen") is not None,
        hardware=settings.get("hardware", "unknown hardware"),
        usage=usage_snippet(repo_id, copy_mechanism=copy, task="translation", example=example,
                            max_new_tokens=int(settings.get("generation_max_length") or 64)),
        data_description=data_description,
        data_table=packages,
        data_licenses=data_licenses,
        data_stats_rows=stats_rows,
        settings_rows=[(k, v) for k, v in settings_rows if v is not None],
        base_model=settings.get("base_model"),
        train_duration=_duration(results.get("train_runtime")),
        train_pairs=(data_stats.get("train") or {}).get("used", (data_stats.get("train") or {}).get("pairs", "?")),
        versions=", ".join(f"{k} {v}" for k, v in versions.items()),
    )
    return str(card)



def collect_settings(model_args, data_args, training_args, model, tokenizer, data_origin, data_stats,
                     *, repo_id: str | None = None) -> dict:
    """What the model card reports about how the model was made (also returned by run_translation.main)."""
    copy = is_pointer_generator(model)
    base = model.base if copy else model
    parameters = sum(p.numel() for p in model.parameters())
    threads = torch.get_num_threads()
    on_gpu = torch.cuda.is_available() and not training_args.use_cpu
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
        "source_lang": data_args.source_lang.split("_")[0],
        "target_lang": data_args.target_lang.split("_")[0],
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
        "repo_id": repo_id,
        "model_license": model_args.model_license,
        "output_dir": training_args.output_dir,
        "hardware": f"{torch.cuda.get_device_name() if on_gpu else 'CPU'}, {threads} thread"
                    + ("s" if threads != 1 else ""),
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


__all__ = ["render_training_card", "collect_settings", "TEMPLATE_PATH"]
