#!/usr/bin/env python
"""The main job: a pointer-generator against the same model without copying, on the embedded corpus.

    python -m training.main                 # what `make main` runs (about 15 minutes on 2 CPU cores)
    python -m training.main --fresh         # ignore checkpoints of an earlier (interrupted) run
    python -m training.main --max_steps 50 --max_predict_samples 100   # a quick look

Both models are trained by `run_translation.main` with the same recipe (architecture, data, steps, optimiser, seed)
and the same word-level tokenizer (trained once on the training split and saved to `tokenizer/`); only
`--no_copy_mechanism` differs. With 2+ cores they train side by side, one process and half the cores each (the
baseline's progress goes to `baseline.log`). Both are scored on the held-out test split (projects unseen in
training). Writes under --output_dir (default outputs/main):

    pointer-generator/   the model folder with its tokenizer, rendered model card (README.md), all_results.json,
                         generated_predictions.txt
    baseline/            the same for the baseline (and baseline.log, its console output)
    tokenizer/           the shared tokenizer
    comparison.json      the side-by-side table, the recipe, wall times and pipeline examples

and finally translates a few unseen test messages with
`pipeline("translation", model="outputs/main/pointer-generator", trust_remote_code=True)`.
Extra arguments after `--` go to run_translation for both runs.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import time
from pathlib import Path

# The recipe: a 3+3-layer mBART-shaped model (pre-layer-norm: it trains stably at a high learning rate from scratch,
# where post-layer-norm BART collapsed to a constant output) of width 128, trained from scratch with a word-level
# vocabulary of 8K words shared by English and German (rare words, names and identifiers stay unknown: only copying
# can produce them). Small and fast on purpose: a plain Transformer needs thousands of updates before its
# cross-attention starts to matter, so updates per second count more than width here.
MODEL_TYPE = "mbart"
CONFIG_OVERRIDES = (
    "d_model=128,encoder_layers=3,decoder_layers=3,encoder_attention_heads=4,decoder_attention_heads=4,"
    "encoder_ffn_dim=512,decoder_ffn_dim=512,max_position_embeddings=128"
)


def recipe(max_steps: int, max_predict_samples: int | None, num_beams: int, batch_size: int) -> list[str]:
    args = [
        "--model_type", MODEL_TYPE,
        "--config_overrides", CONFIG_OVERRIDES,
        "--source_lang", "en", "--target_lang", "de",
        "--max_source_length", "64", "--max_target_length", "64",
        "--do_train", "--do_predict", "--predict_with_generate",
        "--num_beams", str(num_beams),
        "--per_device_train_batch_size", str(batch_size), "--per_device_eval_batch_size", "128",
        "--learning_rate", "2e-3", "--lr_scheduler_type", "linear", "--warmup_steps", str(max(max_steps // 12, 1)),
        "--weight_decay", "0.01", "--max_grad_norm", "1.0",
        "--max_steps", str(max_steps),
        "--logging_steps", "100", "--save_steps", "500", "--save_total_limit", "1",
        "--seed", "42", "--data_seed", "42",
        "--report_to", "none", "--dataloader_pin_memory", "false",
        "--train_sampling_strategy", "group_by_length",
    ]
    if max_predict_samples is not None:
        args += ["--max_predict_samples", str(max_predict_samples)]
    return args


ROWS = (
    ("sacreBLEU", "predict_bleu", 2),
    ("chrF", "predict_chrf", 2),
    ("placeholder preservation", "predict_placeholder_preservation", 3),
    ("OOV copy rate", "predict_oov_copy_rate", 3),
    ("mean p_gen", "predict_mean_p_gen", 3),
    ("training tokens/s", "train_tokens_per_second", 0),
    ("training time (s)", "train_runtime", 0),
    ("test decoding time (s)", "predict_runtime", 0),
)


def _fmt(value, digits: int) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.{digits}f}"


def comparison_table(pgen: dict, baseline: dict) -> tuple[str, list[dict]]:
    rows = []
    for label, key, digits in ROWS:
        rows.append({"metric": label, "key": key, "pointer_generator": pgen.get(key), "baseline": baseline.get(key)})
    width = max(len(r["metric"]) for r in rows)
    lines = [f"{'metric':<{width}} | {'pointer-generator':>17} | {'baseline (no copy)':>18}",
             f"{'-' * width}-+-{'-' * 17}-+-{'-' * 18}"]
    for (label, key, digits), row in zip(ROWS, rows):
        lines.append(f"{label:<{width}} | {_fmt(row['pointer_generator'], digits):>17} | "
                     f"{_fmt(row['baseline'], digits):>18}")
    return "\n".join(lines), rows


def pick_examples(sources: list[str], count: int) -> list[int]:
    """Indices of short test messages with a placeholder (what copying is for), spread over the split."""
    from hf_pgen.metrics import extract_placeholders

    candidates = [i for i, s in enumerate(sources) if extract_placeholders(s) and len(s) < 90 and "\n" not in s]
    if len(candidates) <= count:
        return candidates
    step = len(candidates) / count
    return [candidates[int(k * step)] for k in range(count)]


def _run_child(argv: list[str], log_path: str, threads: int, queue) -> None:
    """Run run_translation.main(argv) in a child process, its output (tqdm included) going to log_path."""
    import traceback

    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    sys.stdout = open(1, "w", buffering=1, encoding="utf-8", closefd=False)
    sys.stderr = open(2, "w", buffering=1, encoding="utf-8", closefd=False)
    try:
        import torch

        torch.set_num_threads(threads)
        from training import run_translation

        queue.put(("ok", run_translation.main(argv)))
    except BaseException:  # noqa: BLE001 - reported to the parent, which raises
        queue.put(("error", traceback.format_exc()))
        raise


def run_both(pgen_args: list[str], baseline_args: list[str], out: Path, threads: int, parallel: bool):
    """Train and score both models: side by side (one process each, `threads` torch threads apiece) or in turn."""
    import torch

    from training import run_translation

    walls = {}
    if not parallel:
        torch.set_num_threads(threads)
        print(f"\n=== 1/2 pointer-generator ({threads} threads) ===", flush=True)
        t0 = time.perf_counter()
        pgen = run_translation.main(pgen_args)
        walls["pointer_generator_s"] = round(time.perf_counter() - t0, 1)
        print("\n=== 2/2 baseline without copy mechanism (same tokenizer, architecture and budget) ===", flush=True)
        t0 = time.perf_counter()
        baseline = run_translation.main(baseline_args)
        walls["baseline_s"] = round(time.perf_counter() - t0, 1)
        return pgen, baseline, walls

    import multiprocessing

    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    log_path = out / "baseline.log"
    child = context.Process(target=_run_child, args=(baseline_args, str(log_path), threads, queue), daemon=True)
    t0 = time.perf_counter()
    child.start()
    print(f"\n=== pointer-generator here, baseline (no copy mechanism) alongside in process {child.pid}: "
          f"{threads} torch thread(s) each; the baseline's progress goes to {log_path} ===", flush=True)
    torch.set_num_threads(threads)
    try:
        pgen = run_translation.main(pgen_args)
    except BaseException:
        child.terminate()
        raise
    walls["pointer_generator_s"] = round(time.perf_counter() - t0, 1)
    if child.is_alive():
        print(f"\nWaiting for the baseline (tail -f {log_path}) ...", flush=True)
    status, payload = queue.get()
    child.join()
    walls["baseline_s"] = round(time.perf_counter() - t0, 1)
    if status != "ok":
        raise RuntimeError(f"The baseline run failed (log: {log_path}):\n{payload}")
    return pgen, payload, walls


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output_dir", default="outputs/main")
    parser.add_argument("--max_steps", type=int, default=4000, help="Training steps of each model.")
    parser.add_argument("--batch_size", type=int, default=16)
    parser.add_argument("--num_beams", type=int, default=1)
    parser.add_argument("--max_predict_samples", type=int, default=None, help="Default: the whole test split.")
    parser.add_argument("--vocab_size", type=int, default=8000, help="Size of the shared word-level vocabulary.")
    parser.add_argument("--sequential", action="store_true",
                        help="Train the models one after the other with all cores, instead of side by side with "
                             "half the cores each (the default with 2+ cores: small models scale poorly across "
                             "threads, and two processes keep both cores busy).")
    parser.add_argument("--fresh", action="store_true", help="Delete an earlier run's folders first (default: "
                                                             "resume from their last checkpoints).")
    parser.add_argument("--examples", type=int, default=5, help="Test messages to translate through the pipeline.")
    args, extra = parser.parse_known_args(argv)
    if extra and extra[0] == "--":
        extra = extra[1:]

    cores = os.cpu_count() or 1
    parallel = not args.sequential and cores >= 2
    threads = max(cores // 2, 1) if parallel else cores
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if parallel:
        os.environ["OMP_NUM_THREADS"] = str(threads)  # inherited by the spawned baseline process

    out = Path(args.output_dir)
    pgen_dir, baseline_dir, tokenizer_dir = out / "pointer-generator", out / "baseline", out / "tokenizer"
    if args.fresh:
        for folder in (pgen_dir, baseline_dir, tokenizer_dir):
            shutil.rmtree(folder, ignore_errors=True)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()

    # One tokenizer for both (trained here, on the training split, as run_translation --train_tokenizer does), so
    # both models see the same ids; an interrupted run resumes with the tokenizer it started with.
    if not (tokenizer_dir / "tokenizer.json").is_file():
        from training.data import load_en_de_messages
        from training.tokenizer import train_shared_tokenizer

        train = load_en_de_messages("train")["translation"]
        tokenizer = train_shared_tokenizer([p["en"] for p in train] + [p["de"] for p in train], "wordlevel",
                                           args.vocab_size)
        tokenizer.save_pretrained(tokenizer_dir)

    common = recipe(args.max_steps, args.max_predict_samples, args.num_beams, args.batch_size) + [
        "--tokenizer_name", str(tokenizer_dir)] + extra
    pgen, baseline, walls = run_both(
        common + ["--output_dir", str(pgen_dir), "--copy_mechanism"],
        common + ["--output_dir", str(baseline_dir), "--no_copy_mechanism"],
        out, threads, parallel,
    )

    pgen_settings, baseline_settings = pgen.pop("settings"), baseline.pop("settings")
    table, rows = comparison_table(pgen, baseline)

    # Re-render both cards: the tokenizer was trained here on the training split (what --train_tokenizer does), and
    # the pointer-generator's card shows the baseline beside it.
    from training.model_card import render_training_card

    for settings in (pgen_settings, baseline_settings):
        settings["trained_tokenizer"] = True
    (pgen_dir / "README.md").write_text(render_training_card(pgen, pgen_settings, baseline_results=baseline),
                                        encoding="utf-8")
    (baseline_dir / "README.md").write_text(render_training_card(baseline, baseline_settings), encoding="utf-8")

    # A few unseen test messages through the saved folder's pipeline.
    t0 = time.perf_counter()
    examples = translate_examples(pgen_dir, baseline_dir, args.examples, args.max_predict_samples)
    walls["pipeline_s"] = round(time.perf_counter() - t0, 1)
    walls["total_s"] = round(time.perf_counter() - started, 1)

    comparison = {
        "table": rows,
        "pointer_generator": pgen,
        "baseline": baseline,
        "recipe": {"run_translation_args": common, "config_overrides": CONFIG_OVERRIDES,
                   "tokenizer": f"word-level, {args.vocab_size} tokens, trained on the training split (shared en/de)",
                   "processes": 2 if parallel else 1, "torch_threads_per_process": threads, "cpu_cores": cores},
        "wall_seconds": walls,
        "pipeline_examples": examples,
        "settings": {"pointer_generator": pgen_settings, "baseline": baseline_settings},
    }
    (out / "comparison.json").write_text(json.dumps(comparison, indent=2, ensure_ascii=False, default=str) + "\n",
                                         encoding="utf-8")

    print("\n=== Held-out test split (projects unseen in training) ===")
    print(table)
    if examples.get("error"):
        print(f"\npipeline failed: {examples['error']}")
    for example in examples.get("items", []):
        print(f"\n  source:            {example['source']}")
        print(f"  reference:         {example['reference']}")
        print(f"  pointer-generator: {example['pointer_generator']}")
        print(f"  baseline:          {example['baseline']}")
    print(f"\nWall time: {walls['total_s']:.0f}s (pointer-generator {walls['pointer_generator_s']:.0f}s, baseline "
          f"{walls['baseline_s']:.0f}s{', side by side' if parallel else ''}, pipeline {walls['pipeline_s']:.0f}s). "
          f"Wrote {out / 'comparison.json'} and {pgen_dir}/ (model, tokenizer, README.md).")
    return comparison


def translate_examples(pgen_dir: Path, baseline_dir: Path, count: int, max_predict_samples: int | None) -> dict:
    """Translate a few test messages with `pipeline("translation", model=folder, trust_remote_code=True)`; the
    baseline's output for the same messages is read from its generated_predictions.txt."""
    from training.data import load_en_de_messages

    test = load_en_de_messages("test")["translation"]
    if max_predict_samples is not None:
        test = test[:max_predict_samples]
    sources = [pair["en"] for pair in test]
    indices = pick_examples(sources, count)
    baseline_lines = (baseline_dir / "generated_predictions.txt").read_text(encoding="utf-8").split("\n")
    result: dict = {"items": []}
    try:
        from transformers import pipeline

        translator = pipeline("translation", model=str(pgen_dir), trust_remote_code=True)
        outputs = translator([sources[i] for i in indices], batch_size=len(indices) or 1)
    except Exception as error:  # reported, not fatal: the models and scores are already saved
        result["error"] = f"{type(error).__name__}: {error}"
        outputs = [{"translation_text": None} for _ in indices]
    for i, output in zip(indices, outputs):
        if isinstance(output, list):
            output = output[0]
        result["items"].append({
            "index": i, "source": sources[i], "reference": test[i]["de"],
            "pointer_generator": output.get("translation_text"),
            "baseline": baseline_lines[i].replace("\\n", "\n") if i < len(baseline_lines) else None,
        })
    return result


if __name__ == "__main__":
    main()
