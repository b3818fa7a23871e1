#!/usr/bin/env python
"""The summarisation job: does a pointer-generator beat the lead baselines and a plain Transformer at summarising
Debian's package descriptions, and what does coverage buy?

    python -m training.summarise              # what `make summarise` runs (docs/summarise/README.md: the timings)
    python -m training.summarise --large      # twice the steps and a wider model (about twice as long)
    python -m training.summarise --smoke      # a few steps on a small slice: checks that the job runs (CI)
    python -m training.summarise --fresh      # retrain, ignoring the folders of an earlier (interrupted) run

The data: each package's long description (the text) and its synopsis (the summary), from Debian's `Translation-en`
index (`training/data/debian_summaries.py`; fetched by apt into ~/.cache/hf_pgen/debian when the corpus folder is
empty, or read from `--lists_dir`). Split by source family; the test split is a fixed 1,000 descriptions.

Systems, all scored on the test split:

    lead-1      the first sentence of the description: the trivial extract
    lead-N      its first N words, N chosen on the validation split (ROUGE-L)
    nocopy      a plain Transformer (mBART-shaped, 3+3 layers, width 128), trained from scratch
    pgen        the same Transformer with the pointer-generator copy mechanism, the same training budget
    pgen-cov    pgen with coverage (See et al. 2017), trained with it from the start: on the validation split this
                measured better than See et al.'s final coverage phase (docs/summarise/README.md has the trials)

Every trained system is trained by `python -m training.run_summarization` (its flags are in `recipe`) with the same
architecture, vocabulary, steps, batch, schedule and decoding; each system's learning rate is the best of the same
trials on the validation split (`RECIPES`; docs/summarise/README.md has what was tried).

Trained systems run two at a time (one process and one torch thread per core): pgen beside pgen-cov, so that their
training and decoding times compare, then nocopy. Progress goes to the console (steps of each running system and an
estimate of what is left), each run's own output to `logs/<system>.log`. Writes under
--output_dir (default outputs/summarise):

    data/                       the corpus (train/validation/test JSON lines, stats.json with the index's sha256)
    <system>/                   each trained system: a folder pipeline("summarization") loads (with hf_pgen
                                imported), with its all_results.json and generated_predictions.txt
    results.json, results.md    every system's scores, significance, the goals, the settings and timings
    copies.html, copies.png     what the pointer-generator copied in a few test summaries (hf_pgen.visualize)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from datetime import date
from pathlib import Path

from training.jobs import trainer_progress

ROOT = Path(__file__).resolve().parent.parent

# The model every trained system shares: the main job's mBART shape (pre-layer-norm: stable at a high learning rate
# from scratch), 3+3 layers of width 128.
MODEL_TYPE = "mbart"
# Descriptions: median 45 words, 95th percentile 129 (about 1.3 tokens a word with punctuation); synopses: at most
# 52 words, 95% within 10.
MAX_SOURCE_LENGTH, MAX_TARGET_LENGTH = 128, 32


def config_overrides(width: int, layers: int) -> str:
    return (
        f"d_model={width},encoder_layers={layers},decoder_layers={layers},encoder_attention_heads=4,"
        f"decoder_attention_heads=4,encoder_ffn_dim={4 * width},decoder_ffn_dim={4 * width},"
        f"max_position_embeddings={MAX_SOURCE_LENGTH}"
    )


@dataclass(frozen=True)
class Settings:
    """What one run of the job trains: the same for every trained system."""

    max_steps: int = 2400
    batch_size: int = 32
    width: int = 128
    layers: int = 3
    num_beams: int = 4
    max_train_samples: int | None = None
    max_predict_samples: int | None = None
    max_eval_samples: int | None = None
    learning_rate: float | None = None  # one rate for every trained system instead of each one's RECIPES rate


DEFAULT = Settings()
LARGE = replace(DEFAULT, max_steps=4800, width=192)
SMOKE = replace(
    DEFAULT,
    max_steps=16,
    width=32,
    layers=1,
    num_beams=2,
    max_train_samples=512,
    max_predict_samples=48,
    max_eval_samples=48,
)


@dataclass(frozen=True)
class Recipe:
    """A trained system's own settings, each chosen on the validation split with the same effort (README)."""

    copy: bool
    coverage: bool
    tokenizer: str
    vocab_size: int
    learning_rate: float
    label: str


RECIPES = {
    "nocopy": Recipe(False, False, "wordlevel", 10000, 1e-3, "Transformer without copying"),
    "pgen": Recipe(True, False, "wordlevel", 10000, 1e-3, "pointer-generator"),
    "pgen-cov": Recipe(True, True, "wordlevel", 10000, 1e-3, "pointer-generator with coverage"),
}
LEAD_LABELS = {"lead-1": "first sentence (lead-1)", "lead-N": "first N words (lead-N)"}


def _flags(options: dict) -> list[str]:
    """`{"--flag": value}` as an argument list (a value of None: a bare flag)."""
    args = []
    for flag, value in options.items():
        args += [flag] if value is None else [flag, str(value)]
    return args


def _common(settings: Settings, data: dict[str, Path], output_dir: Path) -> dict:
    """What every trained run of the job passes to run_summarization: data, lengths, decoding, batch, regularisation."""
    options = {
        "--train_file": data["train"],
        "--test_file": data["test"],
        "--text_column": "text",
        "--summary_column": "summary",
        "--lang": "en",
        "--max_source_length": MAX_SOURCE_LENGTH,
        "--max_target_length": MAX_TARGET_LENGTH,
        "--do_train": None,
        "--do_predict": None,
        "--predict_with_generate": None,
        "--num_beams": settings.num_beams,
        "--per_device_train_batch_size": settings.batch_size,
        "--per_device_eval_batch_size": 64,
        "--label_smoothing_factor": 0.1,
        "--weight_decay": 0.01,
        "--max_grad_norm": 1.0,
        "--logging_steps": 50,
        # One checkpoint, at the end of the run: an interrupted job retrains that system.
        "--save_strategy": "no",
        "--seed": 42,
        "--data_seed": 42,
        "--report_to": "none",
        "--dataloader_pin_memory": "false",
        "--train_sampling_strategy": "group_by_length",
        "--output_dir": output_dir,
        "--overwrite_output_dir": None,
    }
    for flag, value in (
        ("--max_train_samples", settings.max_train_samples),
        ("--max_predict_samples", settings.max_predict_samples),
    ):
        if value is not None:
            options[flag] = value
    return options


def recipe(name: str, settings: Settings, data: dict[str, Path], output_dir: Path) -> list[str]:
    """run_summarization arguments of a trained system (a key of `RECIPES`)."""
    chosen = RECIPES[name]
    options = {
        "--model_type": MODEL_TYPE,
        "--config_overrides": config_overrides(settings.width, settings.layers),
        "--train_tokenizer": None,
        "--tokenizer_type": chosen.tokenizer,
        "--tokenizer_vocab_size": chosen.vocab_size,
        "--copy_mechanism" if chosen.copy else "--no_copy_mechanism": None,
        **_common(settings, data, output_dir),
        "--learning_rate": settings.learning_rate if settings.learning_rate is not None else chosen.learning_rate,
        "--lr_scheduler_type": "linear",
        "--warmup_steps": max(settings.max_steps // 12, 1),
        "--max_steps": settings.max_steps,
    }
    if chosen.coverage:
        options["--coverage"] = None
    return _flags(options)


# -- running the trained systems --------------------------------------------------------------------------------------

# The Trainer's progress bar in a run's log: " 37%|███▋      | 890/2400 [05:01<08:31,  2.95it/s]"; unlabelled, unlike
# the bars of loading ("Loading weights: 100%|...| 147/147") and preprocessing.


def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 60}m{seconds % 60:02d}s"


class Runs:
    """Runs `python -m training.run_summarization` jobs side by side, one torch thread each, and reports progress."""

    def __init__(self, out: Path, started: float, planned_steps: int):
        self.logs = out / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.started = started
        self.planned_steps = planned_steps  # training steps of the whole job, for the estimate of what is left
        self.done_steps = 0
        self.walls: dict[str, float] = {}
        # CPU seconds of each run (its process and children): what it would take on a core of its own, whatever
        # else shares the machine.
        self.cpu: dict[str, float] = {}

    def run(self, jobs: list[tuple[str, list[str], int]], workers: int = 2) -> None:
        """Run `(name, run_summarization argv, its training steps)` jobs, `workers` at a time in order; raise if one
        fails (the others are stopped)."""
        env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
        pending, running = list(jobs), {}
        last_report = time.perf_counter()
        while pending or running:
            while pending and len(running) < workers:
                name, argv, steps = pending.pop(0)
                log = self.logs / f"{name}.log"
                handle = open(log, "w", encoding="utf-8")
                command = [sys.executable, "-m", "training.run_summarization", *argv]
                process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=handle, stderr=subprocess.STDOUT)
                running[name] = (process, handle, log, time.perf_counter(), steps)
                print(f"  started {name} (log: {log})", flush=True)
            time.sleep(2)
            for name, (process, handle, log, t0, steps) in list(running.items()):
                pid, status, usage = os.wait4(process.pid, os.WNOHANG)
                if pid == 0:
                    continue
                process.returncode = os.waitstatus_to_exitcode(status)
                handle.close()
                del running[name]
                self.walls[name] = round(time.perf_counter() - t0, 1)
                self.cpu[name] = round(usage.ru_utime + usage.ru_stime, 1)
                if process.returncode != 0:
                    for other, *_ in running.values():
                        other.terminate()
                    tail = log.read_text(encoding="utf-8", errors="replace").splitlines()[-15:]
                    raise RuntimeError(f"{name} failed (exit {process.returncode}; log: {log}):\n" + "\n".join(tail))
                self.done_steps += steps
                print(f"  finished {name} in {_clock(self.walls[name])} ({_clock(self.cpu[name])} of CPU)", flush=True)
            if running and time.perf_counter() - last_report > 30:
                last_report = time.perf_counter()
                self._report(running)

    def _report(self, running: dict) -> None:
        parts, rates, steps_now = [], [], 0
        for name, (_, _, log, t0, _) in running.items():
            step = trainer_progress(log)
            if step is None:
                parts.append(f"{name} preparing")
                continue
            parts.append(f"{name} {step[0]}/{step[1]}")
            steps_now += step[0]
            if step[0] > 20:
                rates.append(step[0] / (time.perf_counter() - t0))
        estimate = ""
        if rates:  # steps per second of the whole machine, at the running systems' pace
            left = (self.planned_steps - self.done_steps - steps_now) / (sum(rates) / len(rates) * len(running))
            estimate = f"; about {_clock(left)} of training left, then decoding and scoring"
        print(f"  [{_clock(time.perf_counter() - self.started)}] " + ", ".join(parts) + estimate, flush=True)


def finished(folder: Path) -> bool:
    """A system folder that holds a finished run's results (an interrupted job does not train it again)."""
    results = folder / "all_results.json"
    return results.is_file() and "predict_rouge1" in json.loads(results.read_text(encoding="utf-8"))


# -- baselines and scoring --------------------------------------------------------------------------------------------


def read_split(path: Path) -> tuple[list[str], list[str]]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [row["text"] for row in rows], [row["summary"] for row in rows]


def lead_sentence(text: str) -> str:
    """lead-1: the first sentence (`hf_pgen.metrics.split_sentences`) of the text."""
    from hf_pgen.metrics import split_sentences

    sentences = split_sentences(text)
    return sentences[0] if sentences else ""


def lead_words(text: str, n: int) -> str:
    """lead-N: the first `n` words of the text (white-space separated, as written)."""
    return " ".join(text.split()[:n])


def tune_lead_n(texts: list[str], summaries: list[str], candidates=range(1, 21)) -> tuple[int, dict[int, float]]:
    """N for lead-N: the one with the best ROUGE-L on these (validation) pairs; returns it and every N's score."""
    from hf_pgen.metrics import rouge

    scores = {n: rouge([lead_words(t, n) for t in texts], summaries)["rougeL"] for n in candidates}
    return max(scores, key=lambda n: (scores[n], -n)), scores


def read_predictions(folder: Path) -> list[str]:
    lines = (folder / "generated_predictions.txt").read_text(encoding="utf-8").split("\n")[:-1]
    return [line.replace("\\n", "\n") for line in lines]


def score(sources: list[str], references: list[str], predictions: list[str]) -> tuple[dict, dict]:
    """A system's metrics on the test split, and its per-example ROUGE-1/2/L (x 100, for the bootstrap)."""
    from hf_pgen import metrics

    per_example = metrics.rouge_per_example(predictions, references)
    scaled = {kind: [100 * value for value in per_example[kind]] for kind in ("rouge1", "rouge2", "rougeL")}
    lengths = [len(p.split()) for p in predictions]
    summary = {
        **{kind: sum(values) / len(values) for kind, values in scaled.items()},
        "rougeLsum": 100 * sum(per_example["rougeLsum"]) / len(predictions),
        "names_kept": metrics.names_kept(sources, predictions, references),
        "bigram_repeats": metrics.repeated_bigram_share(predictions),
        "novel_unigrams": metrics.novel_ngram_share(sources, predictions, 1),
        "novel_bigrams": metrics.novel_ngram_share(sources, predictions, 2),
        "words": sum(lengths) / len(lengths),
    }
    return summary, scaled


# -- goals and the report ---------------------------------------------------------------------------------------------

_ROUGE = (("rouge1", "ROUGE-1"), ("rouge2", "ROUGE-2"), ("rougeL", "ROUGE-L"))


def evaluate_goals(systems: dict[str, dict], sig: dict, timings: dict[str, dict]) -> list[dict]:
    """The goals of the job, each met or missed by this run's numbers (see the module docstring for the systems).

    "The best pointer-generator" is pgen or pgen-cov, whichever has the higher ROUGE-L.
    """
    best = max(("pgen", "pgen-cov"), key=lambda name: systems[name]["rougeL"])
    goals = []
    for other in ("lead-N", "nocopy"):
        c = sig["comparisons"][best][other]["rougeL"]
        goals.append(
            {
                "goal": f"the best pointer-generator beats {other} on ROUGE-L beyond noise (p < {sig['alpha']})",
                "met": c["difference"] > 0 and c["significant"],
                "detail": f"{best} {systems[best]['rougeL']:.2f} vs {other} {systems[other]['rougeL']:.2f}, "
                f"difference {c['difference']:+.2f}, p = {c['p_value']:.3f}",
            }
        )
    kept = systems[best]["names_kept"]
    goals.append(
        {
            "goal": "names kept >= 0.85 by the best pointer-generator (the no-copy model beside it)",
            "met": kept >= 0.85,
            "detail": f"{best} {kept:.3f}, nocopy {systems['nocopy']['names_kept']:.3f}",
        }
    )
    repeats, covered = systems["pgen"]["bigram_repeats"], systems["pgen-cov"]["bigram_repeats"]
    c = sig["comparisons"]["pgen-cov"]["pgen"]["rougeL"]
    goals.append(
        {
            "goal": "coverage at least halves the share of outputs repeating a bigram, at a ROUGE-L no lower (beyond "
            "noise)",
            "met": covered <= repeats / 2 and not (c["difference"] < 0 and c["significant"]),
            "detail": f"bigram repeats {repeats:.3f} -> {covered:.3f}; ROUGE-L {c['difference']:+.2f} (p = "
            f"{c['p_value']:.3f})",
        }
    )
    for kind, what in (("train", "training"), ("generate", "generation")):
        ratio = timings["pgen-cov"][kind] / timings["pgen"][kind]
        goals.append(
            {
                "goal": f"coverage costs at most 1.10x in {what} time",
                "met": ratio <= 1.10,
                "detail": f"{ratio:.3f}x ({timings['pgen-cov'][kind]:.0f} s vs {timings['pgen'][kind]:.0f} s)",
            }
        )
    return goals


def markdown_report(results: dict) -> str:
    """results.md: the table (ROUGE with bootstrap intervals and marks, the copy and repetition shares, length,
    time), its notes, and the goals."""
    from training.report import _score_cell, format_duration, goals_table

    sig = results["significance"]
    marks = {name: mark for name, mark in (("lead-N", "†"), ("nocopy", "‡")) if name in sig["systems"]}
    header = [
        "system",
        *(name for _, name in _ROUGE),
        "names kept",
        "outputs repeating a bigram",
        "novel unigrams / bigrams",
        "words",
        "training",
        "decoding",
    ]
    lines = ["| " + " | ".join(header) + " |", "|---" + "|---:" * (len(header) - 1) + "|"]
    for system in results["systems"]:
        m = system["metrics"]
        cells = [system["label"]]
        cells += [_score_cell(system["name"], key, m[key], sig, marks) for key, _ in _ROUGE]
        cells += [
            _share(m["names_kept"]),
            _share(m["bigram_repeats"]),
            f"{_share(m['novel_unigrams'])} / {_share(m['novel_bigrams'])}",
            f"{m['words']:.1f}",
            format_duration(system["train_s"]) if system.get("train_s") else "–",
            format_duration(system["generate_s"]) if system.get("generate_s") else "–",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    reference = results["reference"]
    lines.append(
        f"| *reference synopses* | | | | | {_share(reference['bigram_repeats'])} | "
        f"{_share(reference['novel_unigrams'])} / {_share(reference['novel_bigrams'])} | {reference['words']:.1f} | | |"
    )
    notes = [
        f"ROUGE F1 x 100 (`rouge-score`, stemmed) on the {sig['sentences']} test descriptions: score "
        f"({100 * (1 - sig['alpha']):g}% interval, paired bootstrap over the descriptions, {sig['n_samples']} "
        f"resamples, seed {sig['seed']}). † differs from *lead-N* and ‡ from *the Transformer without copying* beyond "
        f"noise (two-sided p < {sig['alpha']}).",
        f"lead-N takes N = {results['lead_n']} words (the best ROUGE-L on the validation split). Names kept: of the "
        "reference words taken from the description that look like names, the share the output keeps. Novel n-grams: "
        "the share of output unigrams / bigrams the description does not hold. Training: wall time of the "
        "Trainer's loop; decoding: the test split's.",
        f"Measured {results['date']}, {results['machine']}; the whole job took {format_duration(results['wall_s'])}.",
    ]
    if results.get("run_cpu_s"):  # a resumed job has no CPU times of the runs it reused
        notes[-1] += (
            " CPU time of each run (its time on a core of its own, whatever else ran beside): "
            + ", ".join(f"{name} {format_duration(seconds)}" for name, seconds in results["run_cpu_s"].items())
            + "."
        )
    return "\n\n".join(["\n".join(lines), *notes, goals_table(results)]) + "\n"


def _share(value) -> str:
    return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{100 * value:.1f}%"


# -- copy records -----------------------------------------------------------------------------------------------------


def copy_pictures(model_dir: Path, sources: list[str], out: Path, num_beams: int) -> int:
    """A few test descriptions summarised through `pipeline("summarization")` with `return_copy_info=True`, as a user
    would: copies.jsonl, copies.html and copies.png (the shortest description's record) under `out`."""
    import torch
    from transformers import pipeline

    import hf_pgen  # noqa: F401 - registers the model type and the summarization task
    from hf_pgen import visualize

    torch.set_num_threads(1)
    summarizer = pipeline("summarization", model=str(model_dir))
    records = summarizer(sources, num_beams=num_beams, max_length=MAX_TARGET_LENGTH, return_copy_info=True)
    with open(out / "copies.jsonl", "w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    visualize.to_html(records, out / "copies.html", title="What the pointer-generator copied")
    try:  # the shortest description: its picture stays readable
        visualize.plot(min(records, key=lambda record: len(record["source_tokens"])), out / "copies.png")
    except ImportError:  # matplotlib is optional: the page is enough
        pass
    return len(records)


def served_by_pipeline(folder: Path, text: str, num_beams: int) -> str:
    """What `pipeline("summarization", model=folder)` gives for `text`: each saved system must load and run there."""
    from transformers import pipeline

    import hf_pgen  # noqa: F401 - registers the model type and the summarization task

    summarizer = pipeline("summarization", model=str(folder))
    return summarizer([text], num_beams=num_beams, max_length=MAX_TARGET_LENGTH)[0]["summary_text"]


# -- the job ----------------------------------------------------------------------------------------------------------


def _timings(out: Path) -> dict[str, dict]:
    """Training and decoding seconds of each trained system (the Trainer's loop; the test split's prediction)."""
    timings = {}
    for name in RECIPES:
        results = json.loads((out / name / "all_results.json").read_text(encoding="utf-8"))
        timings[name] = {"train": results["train_runtime"], "generate": results["predict_runtime"]}
    return timings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--output_dir", type=Path, default=Path("outputs/summarise"))
    parser.add_argument("--data_dir", type=Path, help="the corpus folder (default: OUTPUT_DIR/data; built if empty)")
    parser.add_argument("--lists_dir", type=Path, help="an apt lists folder holding the index: no fetch (offline)")
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--large", action="store_true", help=f"{LARGE.max_steps} steps, width {LARGE.width}")
    size.add_argument("--smoke", action="store_true", help="a few steps on a small slice: checks that the job runs")
    parser.add_argument("--max_steps", type=int, help="training steps of every trained system (default: the size's)")
    parser.add_argument(
        "--learning_rate", type=float, help="one learning rate for every trained system (default: each one's RECIPES)"
    )
    parser.add_argument("--fresh", action="store_true", help="retrain every system, even a finished one")
    args = parser.parse_args(argv)

    settings = LARGE if args.large else SMOKE if args.smoke else DEFAULT
    if args.max_steps is not None:
        settings = replace(settings, max_steps=args.max_steps)
    if args.learning_rate is not None:
        settings = replace(settings, learning_rate=args.learning_rate)
    out = args.output_dir
    started = time.perf_counter()
    print(f"Summarisation job: {settings}", flush=True)

    # -- data --
    from training.data.debian import DebianIndexError
    from training.data.debian_summaries import CorpusError, ensure_corpus

    data_dir = args.data_dir or out / "data"
    try:
        data = ensure_corpus(data_dir, lists_dir=args.lists_dir)
    except (DebianIndexError, CorpusError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    corpus = json.loads((data_dir / "stats.json").read_text(encoding="utf-8"))
    print(
        f"  corpus {data_dir}: "
        + ", ".join(f"{split} {info['pairs']}" for split, info in corpus["splits"].items())
        + f" (Translation-en sha256 {corpus['index']['translations']['en']['sha256'][:12]}...)",
        flush=True,
    )
    if settings.max_train_samples is not None:  # a slice: its own files, so the runs read no more than they need
        data = _slice(data, out / "data-slice", settings)

    # -- trained systems: all three side by side (pgen and pgen-cov share the machine alike, so their times compare;
    # three at once on two cores finishes sooner than two rounds of two) --
    if args.fresh:
        for name in RECIPES:
            shutil.rmtree(out / name, ignore_errors=True)
    todo = [name for name in ("pgen", "pgen-cov", "nocopy") if not finished(out / name)]
    if ("pgen" in todo) != ("pgen-cov" in todo):  # one of them alone would run beside another load: redo both
        todo = sorted(set(todo) | {"pgen", "pgen-cov"}, key=["pgen", "pgen-cov", "nocopy"].index)
    runs = Runs(out, started, planned_steps=len(todo) * settings.max_steps)
    if todo:
        runs.run([(name, recipe(name, settings, data, out / name), settings.max_steps) for name in todo], workers=3)

    # -- scoring --
    sources, references = read_split(data["test"])
    val_sources, val_references = read_split(data["validation"])
    if settings.max_predict_samples is not None:
        sources, references = sources[: settings.max_predict_samples], references[: settings.max_predict_samples]
        val_sources = val_sources[: settings.max_eval_samples]
        val_references = val_references[: settings.max_eval_samples]
    lead_n, lead_scores = tune_lead_n(val_sources, val_references)
    outputs = {
        "lead-1": [lead_sentence(t) for t in sources],
        "lead-N": [lead_words(t, lead_n) for t in sources],
        **{name: read_predictions(out / name) for name in ("nocopy", "pgen", "pgen-cov")},
    }
    from training.report import significance_of_means

    timings = _timings(out)
    metrics, per_example = {}, {}
    for name, predictions in outputs.items():
        if len(predictions) != len(references):
            raise RuntimeError(f"{name}: {len(predictions)} predictions for {len(references)} test descriptions.")
        metrics[name], per_example[name] = score(sources, references, predictions)
    sig = significance_of_means(per_example, baseline="lead-N")
    reference_metrics = score(sources, references, references)[0]
    systems = [
        {
            "name": name,
            "label": LEAD_LABELS.get(name) or RECIPES[name].label,
            "trained": name in RECIPES,
            "metrics": metrics[name],
            "train_s": timings.get(name, {}).get("train"),
            "generate_s": timings.get(name, {}).get("generate"),
        }
        for name in outputs
    ]
    best = max(("pgen", "pgen-cov"), key=lambda name: metrics[name]["rougeL"])
    copies = copy_pictures(out / best, sources[:6], out, settings.num_beams)
    served = {name: served_by_pipeline(out / name, sources[0], settings.num_beams) for name in RECIPES}
    cores = os.cpu_count()
    results = {
        "date": date.today().isoformat(),
        "machine": f"{cores} CPU cores, {platform.machine()}, Python {platform.python_version()}",
        "settings": {**settings.__dict__, "recipes": {k: v.__dict__ for k, v in RECIPES.items()}},
        "corpus": {"stats": str(data_dir / "stats.json"), "index": corpus["index"], "files": corpus["files"]},
        "lead_n": lead_n,
        "lead_n_validation_rougeL": lead_scores,
        "systems": systems,
        "reference": reference_metrics,
        "significance": sig,
        "timings": timings,
        "run_walls": runs.walls,
        "run_cpu_s": runs.cpu,
        "copy_records": {"system": best, "records": copies},
        "pipeline_check": served,
        "wall_s": round(time.perf_counter() - started, 1),
    }
    results["goals"] = evaluate_goals(metrics, sig, timings)
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    report = markdown_report(results)
    (out / "results.md").write_text(report, encoding="utf-8")
    print("\n" + report, flush=True)
    print(f"Wrote {out / 'results.md'}, {out / 'results.json'} and {out / 'copies.html'}.", flush=True)
    return 0


def _slice(data: dict[str, Path], folder: Path, settings: Settings) -> dict[str, Path]:
    """The first examples of each split in files of their own (the smoke run's small slice)."""
    folder.mkdir(parents=True, exist_ok=True)
    limits = {
        "train": settings.max_train_samples,
        "validation": settings.max_eval_samples,
        "test": settings.max_predict_samples,
    }
    sliced = {}
    for split, path in data.items():
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)[: limits[split]]
        sliced[split] = folder / path.name
        sliced[split].write_text("".join(lines), encoding="utf-8")
    return sliced


if __name__ == "__main__":
    sys.exit(main())
