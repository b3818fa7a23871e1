#!/usr/bin/env python
"""The low-resource sweep: the main job's systems tuned on the validation split, every trial kept.

Sennrich & Zhang (2019, "Revisiting Low-Resource Neural Machine Translation") showed that a model tuned for small data
(a smaller subword vocabulary, more dropout including word dropout, label smoothing, the learning rate and batch, tied
embeddings, training to convergence) translates where untuned settings give next to nothing. This sweep gives the
no-copy Transformer and the pointer-generators the same levers and the same budget, and scores each trial on the
validation split (never the test split or heldout_tools), greedy, with the job's decoding settings:

    python -m training.tune                       # every trial not yet run, two at a time (one torch thread each)
    python -m training.tune --only nc-v2k nc-b64  # these trials
    python -m training.tune --list                # the trials and whether each has run
    python -m training.tune --report              # writes docs/main-job/tuning.md from what has run

Trials are named `<system>-<what changed>`; each changes one or a few settings of an earlier trial (its `base`), so
the table reads as a path through the settings. Each writes `outputs/tune/<name>/` (the model, `all_results.json`
with the validation loss, BLEU and chrF, `trial.json` with its settings). The convergence trials train until the
validation loss has not improved for 5 evaluations (`--early_stopping_patience`) and keep the best checkpoint.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from training.jobs import clock, run_jobs
from training.recipe import PLACEHOLDERS_IN_VOCABULARY, RECIPE_LEVERS, UNTUNED, TrainingSettings, recipe, with_levers
from training.terminology import FREEDICT_ENG_DEU

OUTPUT_DIR = Path("outputs/tune")
REPORT = Path("docs/main-job/tuning.md")

# The systems the sweep tunes: (tokenizer kind, copy mechanism, the copy levers of its recipe).
SYSTEMS = {
    "nc": ("unigram", False, ()),
    "pg": ("unigram", True, RECIPE_LEVERS["unigram"]),
    "pw": ("wordlevel", True, RECIPE_LEVERS["wordlevel"]),
    # The main job's glossary-annotated model (pgen-subword-gloss): the unigram one with selective read alone.
    "pgl": ("unigram", True, ("sr",)),
}
SYSTEM_LABELS = {
    "nc": "no-copy Transformer, unigram subwords",
    "pg": "pointer-generator, unigram subwords + selective read, copy augmentation",
    "pw": "pointer-generator, word-level + selective read, copy-next, copy augmentation",
    "pgl": "pointer-generator, unigram subwords + selective read, trained with glossary annotation",
}
# What the glossary-annotated trials add to their run_translation arguments (the main job's pgen-subword-gloss).
GLOSSARY_TRAINING = ("--glossary_augmentation", "--glossary_dictionary", FREEDICT_ENG_DEU)
# Convergence trials: an evaluation of the validation loss every this many steps, stopped after this many without a
# better one.
EVAL_EVERY, PATIENCE = 500, 5


@dataclass(frozen=True)
class Trial:
    """One run of the sweep.

    Attributes:
        name: `<system>-<what changed>`, the folder under outputs/tune.
        system: a key of SYSTEMS.
        settings: the trial's training settings.
        base: the trial it changes (None for the first of a system).
        converge: train until the validation loss is flat (`settings.max_steps` is then a ceiling).
        note: why the trial was run, for the table.
    """

    name: str
    system: str
    settings: TrainingSettings
    base: str | None = None
    converge: bool = False
    note: str = ""
    extra: tuple[str, ...] = field(default=())


def _trials() -> list[Trial]:
    """The sweep, in the order it was run: each round changes the best setting so far in one or two ways."""
    trials: list[Trial] = []

    def add(
        name: str,
        base: str | None,
        note: str = "",
        converge: bool = False,
        system: str | None = None,
        extra: tuple[str, ...] = (),
        **changes,
    ):
        parent = next((t for t in trials if t.name == base), None)
        settings = (parent.settings if parent else UNTUNED).replace(**changes)
        trials.append(Trial(name, system or parent.system, settings, base, converge, note, extra))

    # Round 1: the job's settings before the sweep (5,000 updates of 16 pairs, 8,000 unigram pieces), and a smaller
    # vocabulary, Sennrich & Zhang's first lever (and 1.6 times the updates per second on one core).
    add("nc-base", None, "the job's recipe before the sweep", system="nc")
    add("nc-v2k", "nc-base", "smaller vocabulary", vocab_size=2000)
    # Round 2: 4 times the batch at 2/5 of the updates (the same time on one core at 2,000 pieces, 1.6 times the
    # pairs seen): on a CPU an update of 64 pairs costs little more than one of 16.
    add("nc-v2k-b64", "nc-v2k", "more pairs per second", batch_size=64, max_steps=2000)
    # The unigram recipe pointer-generator with the job's settings before the sweep: its validation reference.
    add("pg-base", None, "the job's recipe before the sweep", system="pg")
    # Round 3: 64-pair batches lost to 16-pair ones (updates count, not pairs), so the vocabulary again, smaller still.
    add("nc-v1k", "nc-v2k", "smaller vocabulary still", vocab_size=1000)
    # Round 4: Sennrich & Zhang's regularisation on the best no-copy settings, and the vocabulary that helped the
    # no-copy model given to the pointer-generator (the same lever, the same budget).
    add("nc-v2k-drop", "nc-v2k", "regularisation", dropout=0.3, word_dropout=0.1)
    add("pg-v2k", "pg-base", "the no-copy model's best lever", vocab_size=2000)
    # To convergence: each chosen system until its validation loss has not improved for PATIENCE evaluations of
    # EVAL_EVERY updates (a ceiling of 60,000 updates, 35 epochs; the warm-up stays 417 updates). Not run yet: many
    # hours of CPU.
    add(
        "nc-v2k-converge",
        "nc-v2k",
        "training to convergence",
        converge=True,
        max_steps=60000,
        warmup_fraction=417 / 60000,
    )
    add(
        "pg-converge", "pg-base", "training to convergence", converge=True, max_steps=60000, warmup_fraction=417 / 60000
    )
    # The two goals training longer might still reach: unseen terms kept by the word-level model (85%), and glossary
    # hints read by the annotated model (TSR 0.90). Both with the main job's settings (UNTUNED), to convergence.
    add(
        "pw-converge",
        None,
        "the word-level recipe to convergence",
        converge=True,
        system="pw",
        max_steps=60000,
        warmup_fraction=417 / 60000,
    )
    add(
        "pgl-converge",
        None,
        "the glossary-annotated model to convergence",
        converge=True,
        system="pgl",
        extra=GLOSSARY_TRAINING,
        max_steps=60000,
        warmup_fraction=417 / 60000,
    )
    return trials


TRIALS = _trials()


def _tokenizer_folder(out: Path, kind: str, vocab_size: int) -> Path:
    return out / "tokenizers" / f"{kind}-{vocab_size}"


def trial_args(trial: Trial, out: Path) -> list[str]:
    """run_translation arguments of a trial: the recipe with its settings, trained and scored on the validation split
    (greedy, the job's generation settings), nothing decoded on the test split."""
    kind, copy, levers = SYSTEMS[trial.system]
    args = [a for a in recipe(None, None, 1, trial.settings) if a != "--do_predict"]
    args += [
        "--do_eval",
        "--tokenizer_name",
        str(_tokenizer_folder(out, kind, trial.settings.vocab_size)),
        "--output_dir",
        str(out / trial.name),
        "--overwrite_output_dir",
        "--copy_mechanism" if copy else "--no_copy_mechanism",
        *(with_levers(levers) if copy else ()),
    ]
    if trial.converge:
        args += [
            "--eval_strategy",
            "steps",
            "--eval_steps",
            str(EVAL_EVERY),
            "--save_strategy",
            "steps",
            "--save_steps",
            str(EVAL_EVERY),
            "--load_best_model_at_end",
            "--early_stopping_patience",
            str(PATIENCE),
        ]
    else:
        args += ["--save_strategy", "no"]
    return args + list(trial.extra)


def _train_tokenizers(trials: list[Trial], out: Path) -> None:
    """The shared tokenizers the trials need, trained once on the training split (as the main job trains its own)."""
    from hf_pgen.corpus import load_en_de_messages
    from hf_pgen.tokenizer_training import train_shared_tokenizer

    texts = None
    for kind, size in sorted({(SYSTEMS[t.system][0], t.settings.vocab_size) for t in trials}):
        folder = _tokenizer_folder(out, kind, size)
        if (folder / "tokenizer.json").is_file():
            continue
        if texts is None:
            train = load_en_de_messages("train")["translation"]
            texts = [p["en"] for p in train] + [p["de"] for p in train]
        train_shared_tokenizer(
            texts, kind, size, placeholders_in_vocabulary=PLACEHOLDERS_IN_VOCABULARY[kind]
        ).save_pretrained(folder)


def finished(trial: Trial, out: Path) -> dict | None:
    """The trial's results if it has run with its current settings, else None."""
    path = out / trial.name / "trial.json"
    if not path.is_file():
        return None
    record = json.loads(path.read_text())
    return record if record.get("settings") == asdict(trial.settings) else None


def run(trials: list[Trial], out: Path, workers: int) -> None:
    """Run `trials` (`workers` at a time) and write each one's trial.json."""
    out.mkdir(parents=True, exist_ok=True)
    _train_tokenizers(trials, out)
    jobs = [(t.name, trial_args(t, out), None) for t in trials]
    started = time.perf_counter()
    results, walls = run_jobs(jobs, out, workers, started)
    for trial in trials:
        record = {
            "name": trial.name,
            "system": trial.system,
            "base": trial.base,
            "converge": trial.converge,
            "note": trial.note,
            "settings": asdict(trial.settings),
            "results": results[trial.name],
            "wall_s": walls.get(trial.name),
            "argv": trial_args(trial, out),
        }
        (out / trial.name / "trial.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(f"Ran {len(trials)} trials in {clock(time.perf_counter() - started)}.")


# -- the table ---------------------------------------------------------------------------------------------------------

_SHOWN = {
    "vocab_size": "vocabulary",
    "batch_size": "batch",
    "max_steps": "steps",
    "learning_rate": "lr",
    "warmup_fraction": "warm-up",
    "label_smoothing": "label smoothing",
    "dropout": "dropout",
    "attention_dropout": "attention dropout",
    "activation_dropout": "activation dropout",
    "word_dropout": "word dropout",
    "target_word_dropout": "target word dropout",
    "weight_decay": "weight decay",
}


def _changes(trial: Trial, by_name: dict[str, Trial]) -> str:
    """What the trial changes against its base, e.g. `vocabulary 8000 -> 2000`."""
    if trial.base is None:
        return "(start)"
    before, after = asdict(by_name[trial.base].settings), asdict(trial.settings)
    parts = [f"{_SHOWN[k]} {before[k]:g} -> {after[k]:g}" for k in _SHOWN if before[k] != after[k]]
    if trial.converge:
        parts.append("to convergence")
    return ", ".join(parts) or "(same settings)"


def _copy_source_row() -> str:
    """Copying the source, scored on the validation split as the trials are: the floor in the same table."""
    from hf_pgen.corpus import load_en_de_messages
    from hf_pgen.metrics import translation_metrics

    pairs = load_en_de_messages("validation")["translation"]
    sources = [p["en"] for p in pairs]
    scores = translation_metrics(sources, sources, [p["de"] for p in pairs])
    return f"| copy the source verbatim | | | | | | | | | {scores['bleu']:.1f} | {scores['chrf']:.1f} | | the floor |"


def _train_losses(folder: Path) -> str:
    """The training loss logged halfway and last (from trainer_state.json): whether it was still falling."""
    state = folder / "trainer_state.json"
    if not state.is_file():
        return "n/a"
    losses = [(e["step"], e["loss"]) for e in json.loads(state.read_text())["log_history"] if "loss" in e]
    if not losses:
        return "n/a"
    half = losses[len(losses) // 2]
    return f"{half[1]:.2f} (step {half[0]}) -> {losses[-1][1]:.2f}"


def _cost(record: dict) -> str:
    """Training wall time, and the run's own CPU time where it was measured (the machine was shared)."""
    r = record["results"]
    cpu = r.get("cpu_seconds")
    return clock(r["train_runtime"]) + (f" ({clock(cpu)})" if cpu else "")


def report(trials: list[Trial], out: Path) -> str:
    """The markdown table of every trial that has run: settings, validation scores, time."""
    by_name = {t.name: t for t in trials}
    rows = [_copy_source_row()]
    for trial in trials:
        record = finished(trial, out)
        if record is None:
            continue
        r, s = record["results"], trial.settings
        steps = r.get("train_steps", s.max_steps)
        best = f" (best {r['train_best_step']})" if "train_best_step" in r else ""
        rows.append(
            f"| {trial.name} | {trial.base or ''} | {_changes(trial, by_name)} | {s.vocab_size} | {s.batch_size} | "
            f"{steps}{best} | {steps * s.batch_size / 1000:.0f}k | {_train_losses(out / trial.name)} | "
            f"{r['eval_loss']:.3f} | {r['eval_bleu']:.1f} | {r['eval_chrf']:.1f} | {_cost(record)} | {trial.note} |"
        )
    header = (
        "| trial | base | change | vocabulary | batch | updates | pairs seen | training loss, halfway -> last | "
        "validation loss | BLEU | chrF | training: wall (CPU) | why |\n"
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
    )
    return header + "\n" + "\n".join(rows) + "\n"


# -- the final check: the chosen trials, once, on the test split and heldout_tools ---------------------------------

FINAL_REPORT = Path("docs/main-job/tuned-test.md")


def _test_terms(out: Path) -> Path:
    """The main job's test term base (`training.main.terminology_controls`: per test pair, the FreeDict entries the
    pair supports), written once under `out`: what the glossary trials read as hints."""
    path = out / "test_terms.jsonl"
    if not path.is_file():
        from hf_pgen.corpus import load_en_de_messages
        from training.main import terminology_controls

        pairs = load_en_de_messages("test")["translation"]
        bases, _ = terminology_controls([p["en"] for p in pairs], [p["de"] for p in pairs], FREEDICT_ENG_DEU)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(b, ensure_ascii=False) + "\n" for b in bases), encoding="utf-8")
    return path


def _decodings(name: str, split: str, out: Path) -> list[tuple[str, tuple[str, ...]]]:
    """(suffix, extra run_translation arguments) of each decoding of a trial's model on `split`: greedy, with
    protected placeholders, and for a glossary-annotated model on the test split the test terms as hints (the main
    job's `+hint` row; heldout_tools has no term base)."""
    decodings = [("", ()), ("+protect", ("--protect", "placeholders"))]
    if split == "test" and _trial(name).extra == GLOSSARY_TRAINING:
        decodings.append(("+hint", ("--glossary", str(_test_terms(out)), "--glossary_mode", "hint")))
    return decodings


def model_folder(name: str, out: Path) -> Path:
    """The model a trial's final check decodes: its folder once the run has finished, else (a convergence trial
    stopped before its validation loss was flat) the best checkpoint it saved so far, which the report names."""
    folder = out / name
    if (folder / "config.json").is_file():
        return folder
    checkpoints = sorted(
        folder.glob("checkpoint-*/trainer_state.json"), key=lambda p: int(p.parent.name.removeprefix("checkpoint-"))
    )
    if not checkpoints:
        raise SystemExit(f"{name} has neither a trained model nor a checkpoint in {folder}: run it first (--only).")
    best = json.loads(checkpoints[-1].read_text(encoding="utf-8")).get("best_model_checkpoint")
    return Path(best) if best else checkpoints[-1].parent


def final_jobs(names: list[str], out: Path) -> list[tuple]:
    """Decode each chosen trial's model on the test split and on heldout_tools (`_decodings`) into
    `<out>/final/<split>/<name><suffix>`."""
    from hf_pgen.corpus import CORPUS_DIR
    from training.recipe import decode_recipe

    jobs = []
    for name in names:
        copy = _copies(name)
        for split in ("test", "heldout_tools"):
            for suffix, guard in _decodings(name, split, out):
                folder = out / "final" / split / (name + suffix)
                argv = decode_recipe(model_folder(name, out), copy, None, 1, guard) + ["--output_dir", str(folder)]
                jobs.append(
                    (
                        f"final/{split}/{name}{suffix}",
                        argv + ["--test_file", str(CORPUS_DIR / f"{split}.jsonl.gz")],
                        None,
                    )
                )
    return jobs


def final_report(names: list[str], out: Path) -> str:
    """The chosen trials against copy-source on the test split and heldout_tools, scored as the main job scores
    (`training.main.score`, paired bootstrap), with each pointer-generator's lead over each no-copy model."""
    from hf_pgen.corpus import load_en_de_messages
    from hf_pgen.metrics import term_success_rate
    from training.main import read_predictions, score, unseen_terms
    from training.report import markdown_table, significance

    train = load_en_de_messages("train")["translation"]
    train_texts = [p["en"] for p in train] + [p["de"] for p in train]
    labels = {t.name: f"{SYSTEM_LABELS[t.system]} ({t.name})" for t in TRIALS}
    for name in names:
        model = model_folder(name, out)
        if model.name.startswith("checkpoint-"):
            updates = int(model.name.removeprefix("checkpoint-"))
            labels[name] += f", stopped before its loss was flat: the best checkpoint, {updates:,} updates"
    parts = []
    for split in ("test", "heldout_tools"):
        pairs = load_en_de_messages(split)["translation"]
        sources, references = [p["en"] for p in pairs], [p["de"] for p in pairs]
        outputs = {"copy-source": sources}
        for name in names:
            for suffix, _ in _decodings(name, split, out):
                outputs[name + suffix] = read_predictions(out / "final" / split / (name + suffix))
        bases = None
        if any(key.endswith("+hint") for key in outputs):
            bases = [json.loads(line) for line in _test_terms(out).read_text(encoding="utf-8").splitlines()]
        terms = unseen_terms(sources, train_texts)
        sig = significance(references, outputs, baseline="copy-source")
        systems = [
            {
                "name": key,
                "label": "copy the source verbatim"
                if key == "copy-source"
                else labels[key.split("+")[0]] + _SUFFIX_LABELS.get(key.partition("+")[2], ""),
                "protect": key.endswith("+protect"),
                "metrics": score(sources, references, predictions, terms)
                | ({"term_success_rate": term_success_rate(sources, predictions, bases)} if bases else {}),
            }
            for key, predictions in outputs.items()
        ]
        parts.append(
            f"### {split} ({len(sources)} messages)\n\n" + markdown_table({"systems": systems, "significance": sig})
        )
        leads = []
        for copier in (n for n in names if _copies(n)):
            for plain in (n for n in names if not _copies(n)):
                for suffix in ("", "+protect"):
                    for metric in ("bleu", "chrf"):
                        c = sig["comparisons"][copier + suffix][plain + suffix][metric]
                        leads.append(
                            f"| {copier}{suffix} - {plain}{suffix} | {metric} | {c['difference']:+.1f} | "
                            f"{c['ci'][0]:+.1f} to {c['ci'][1]:+.1f} | {c['p_value']:.3f} |"
                        )
        if leads:
            parts.append(
                "The pointer-generator's lead (paired bootstrap, 95% interval):\n\n"
                "| difference | metric | value | interval | p |\n|---|---|---:|---|---:|\n" + "\n".join(leads)
            )
    return "\n\n".join(parts) + "\n"


_SUFFIX_LABELS = {"protect": " + protected placeholders", "hint": " + test terms as hints"}


def _trial(name: str) -> Trial:
    return next(t for t in TRIALS if t.name == name)


def _copies(name: str) -> bool:
    """Whether the trial's system has the copy mechanism."""
    return SYSTEMS[_trial(name).system][1]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output_dir", type=Path, default=OUTPUT_DIR)
    parser.add_argument("--only", nargs="+", help="Run these trials (default: every trial not yet run).")
    parser.add_argument("--workers", type=int, default=2, help="Trials side by side (one torch thread each).")
    parser.add_argument("--list", action="store_true", help="List the trials and whether each has run.")
    parser.add_argument("--report", action="store_true", help=f"Write the table of the trials run to {REPORT}.")
    parser.add_argument(
        "--final",
        nargs="+",
        help=f"Once the choices are made: decode these trials' models on the test split and heldout_tools and write "
        f"{FINAL_REPORT} (never used to choose).",
    )
    args = parser.parse_args(argv)
    names = {t.name for t in TRIALS}
    unknown = sorted((set(args.only or ()) | set(args.final or ())) - names)
    if unknown:
        raise SystemExit(f"Unknown trials {unknown}; `python -m training.tune --list` lists them.")
    if args.list:
        for trial in TRIALS:
            state = "run" if finished(trial, args.output_dir) else "not run"
            print(f"{trial.name:24} {state:8} {_changes(trial, {t.name: t for t in TRIALS})}")
        return
    if args.final:
        os.environ["OMP_NUM_THREADS"] = "1"
        jobs = [
            job
            for job in final_jobs(args.final, args.output_dir)
            if not (args.output_dir / job[0] / "generated_predictions.txt").is_file()
        ]
        results, walls = run_jobs(jobs, args.output_dir, args.workers, time.perf_counter())
        for name, result in results.items():  # the decoding's cost: its own CPU time and the wall time it took
            record = {"cpu_seconds": result.get("cpu_seconds"), "wall_seconds": walls.get(name)}
            (args.output_dir / name / "job.json").write_text(json.dumps(record) + "\n", encoding="utf-8")
        FINAL_REPORT.write_text(
            "# The tuned systems on the test split and heldout_tools\n\n"
            "Written by `python -m training.tune --final "
            + " ".join(args.final)
            + "`, after every choice was made on the validation split (docs/main-job/tuning.md).\n\n"
            + final_report(args.final, args.output_dir),
            encoding="utf-8",
        )
        print(f"Wrote {FINAL_REPORT}.")
        return
    if args.report:
        REPORT.write_text(
            "# The low-resource sweep: every trial, scored on the validation split\n\n"
            "Written by `python -m training.tune --report`; docs/main-job/README.md says what the sweep found. "
            "Greedy decoding of the 2,069 validation pairs (wagtail, django-allauth, django-filer). Training time: "
            "wall time on the shared 2-core machine (load average 6-14 while these ran), and in brackets the trial "
            "process' own CPU time (training, validation decoding and start-up), where it was measured.\n\n"
            + report(TRIALS, args.output_dir),
            encoding="utf-8",
        )
        print(f"Wrote {REPORT}.")
        return
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ["OMP_NUM_THREADS"] = "1"
    chosen = [t for t in TRIALS if (t.name in args.only if args.only else not finished(t, args.output_dir))]
    run(chosen, args.output_dir, args.workers)


if __name__ == "__main__":
    main()
