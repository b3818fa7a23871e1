"""The main job's controlled data experiment (`python -m training.main --full`): four training-data conditions, each
adding one thing to the previous, for the unigram recipe pointer-generator at the same training settings and steps.

    messages      the message corpus' training split alone
    ddtp          + the DDTP English-German real pairs (training/data/ddtp.py)
    ddtp-bt       + the DDTP German side backtranslated into English by a reverse (de -> en) model, its real English
                  ignored (Sennrich et al. 2016), by sampling (Edunov et al. 2018)
    ddtp-bt-tag   the same synthetic sources with a `<BT>` tag (Caswell et al. 2019)

The reverse model is the same recipe trained de -> en on the `ddtp` condition's data. Every condition shares one
tokenizer, trained on the messages and DDTP training texts, so the conditions differ by their data only. Each model
is scored on the test split, on heldout_tools and on the DDTP test split; `score_conditions` compares each condition
with the previous one (paired bootstrap: the difference with its 95% interval).

`make main-full` runs it beside every other system; it also runs alone (the DDTP corpus built first, `make ddtp`):

    python -m training.data_conditions --output_dir outputs/data-conditions
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path

from training.recipe import RECIPE_LEVERS, TrainingSettings, decode_recipe, recipe, with_levers

__all__ = [
    "CONDITIONS",
    "BT_TAG",
    "condition_jobs",
    "evaluation_sets",
    "finished_jobs",
    "score_conditions",
    "shared_tokenizer",
]

BT_TAG = "<BT>"
REVERSE = "reverse-de-en"


@dataclass(frozen=True)
class Condition:
    name: str
    label: str
    parts: tuple[str, ...]  # training files: "messages", "ddtp", "bt", "bt-tag"


CONDITIONS = (
    Condition("data-messages", "messages alone", ("messages",)),
    Condition("data-ddtp", "+ DDTP real pairs", ("messages", "ddtp")),
    Condition("data-ddtp-bt", "+ DDTP German backtranslated", ("messages", "ddtp", "bt")),
    Condition("data-ddtp-bt-tag", "+ the <BT> tag", ("messages", "ddtp", "bt-tag")),
)
EVALUATIONS = ("test", "heldout_tools", "ddtp_test")


def condition_jobs(
    out: Path,
    settings: TrainingSettings,
    tokenizer: Path,
    messages: dict[str, Path],
    ddtp: dict[str, Path],
    max_predict_samples: int | None,
    num_beams: int,
    bt_samples: int | None = None,
) -> list[tuple]:
    """The jobs of the experiment, for `training.jobs.run_jobs`: mixing the training files, the reverse model, the
    backtranslation (with and without the tag), the four forward models and their decoding of the three evaluation
    sets. `messages` and `ddtp` map split names to files; `bt_samples` backtranslates only the first N German texts
    (default: all)."""
    folder = out / "data"
    files = {"messages": messages["train"], "ddtp": ddtp["train"]}
    files["bt"], files["bt-tag"] = folder / "bt.jsonl", folder / "bt-tag.jsonl"
    levers = with_levers(RECIPE_LEVERS["unigram"])
    train = recipe(None, max_predict_samples, num_beams, settings)
    jobs: list[tuple] = [
        (
            "data/mix-ddtp",
            ["--output", str(folder / "train-ddtp.jsonl.gz"), "--inputs", str(files["messages"]), str(files["ddtp"])],
            None,
            "training.data.mix",
        ),
        (
            REVERSE,
            [a for a in train if a not in ("--do_predict", "--predict_with_generate")]
            + ["--source_lang", "de", "--target_lang", "en", "--train_file", str(folder / "train-ddtp.jsonl.gz")]
            + ["--tokenizer_name", str(tokenizer), "--output_dir", str(out / REVERSE), "--copy_mechanism", *levers],
            "data/mix-ddtp",
        ),
    ]
    argv = ["--model_name_or_path", str(out / REVERSE), "--input", str(ddtp["train"]), "--output", str(files["bt"])]
    argv += ["--source_lang", "de", "--target_lang", "en", "--sampling", "--batch_size", "64"]
    argv += ["--max_samples", str(bt_samples)] if bt_samples is not None else []
    jobs.append(("data/bt", argv, REVERSE, "training.backtranslate"))
    # The tagged condition gets the very same synthetic sources with the tag in front: the tag is all that differs.
    tagged = ["--output", str(files["bt-tag"]), "--inputs", str(files["bt"]), "--tag", BT_TAG, "--source_lang", "en"]
    jobs.append(("data/bt-tag", tagged, "data/bt", "training.data.mix"))
    for condition in CONDITIONS:
        mixed = folder / f"train-{condition.name}.jsonl.gz"
        needs = {"bt": "data/bt", "bt-tag": "data/bt-tag"}.get(condition.parts[-1])
        jobs.append(
            (
                f"data/mix-{condition.name}",
                ["--output", str(mixed), "--inputs", *(str(files[p]) for p in condition.parts)],
                needs,
                "training.data.mix",
            )
        )
        jobs.append(
            (
                condition.name,
                train
                + ["--train_file", str(mixed), "--test_file", str(messages["test"])]
                + ["--tokenizer_name", str(tokenizer), "--output_dir", str(out / condition.name), "--copy_mechanism"]
                + list(levers),
                f"data/mix-{condition.name}",
            )
        )
        for evaluation, test_file in (("heldout_tools", messages["heldout_tools"]), ("ddtp_test", ddtp["test"])):
            jobs.append(
                (
                    f"{evaluation}/{condition.name}",
                    decode_recipe(out / condition.name, True, max_predict_samples, num_beams, ())
                    + ["--test_file", str(test_file), "--output_dir", str(out / evaluation / condition.name)],
                    condition.name,
                )
            )
    return jobs


def shared_tokenizer(out: Path, settings: TrainingSettings, train_texts: list[str], ddtp: dict[str, Path]) -> Path:
    """The conditions' one tokenizer (trained on the messages' and DDTP's training texts, both languages), trained
    into `out/tokenizers` unless an earlier run left it there."""
    folder = out / "tokenizers" / f"unigram-{settings.vocab_size}-messages-ddtp"
    if not (folder / "tokenizer.json").is_file():
        from hf_pgen.tokenizer_training import train_shared_tokenizer
        from training.backtranslate import read_monolingual

        texts = list(train_texts)
        for language in ("en", "de"):
            texts += [t for t in read_monolingual(ddtp["train"], language) if t.strip()]
        train_shared_tokenizer(texts, "unigram", settings.vocab_size).save_pretrained(folder)
    return folder


def evaluation_sets(
    messages: dict[str, list[dict]], ddtp: dict[str, Path], max_predict_samples: int | None
) -> dict[str, tuple[list[str], list[str]]]:
    """`name -> (sources, references)` of the three evaluation sets: `messages` maps "test" and "heldout_tools" to
    their pairs; the DDTP test split is read from its file; each cut to `max_predict_samples` if given."""
    with gzip.open(ddtp["test"], "rt", encoding="utf-8") as handle:
        pairs = {**messages, "ddtp_test": [json.loads(line)["translation"] for line in handle]}
    return {
        name: ([p["en"] for p in rows[:max_predict_samples]], [p["de"] for p in rows[:max_predict_samples]])
        for name, rows in pairs.items()
    }


def finished_jobs(out: Path, jobs: list[tuple]) -> dict[str, dict]:
    """The jobs an earlier run finished (`name -> its results`): a model or decoding whose folder holds
    `all_results.json`, a backtranslation whose output has its `.stats.json`."""
    done = {}
    for name, argv, *rest in jobs:
        entry = rest[1] if len(rest) > 1 else "training.run_translation"
        if entry == "training.run_translation":
            results = out / name / "all_results.json"
        elif entry == "training.backtranslate":
            results = Path(f"{argv[argv.index('--output') + 1]}.stats.json")
        else:
            continue
        if results.is_file():
            done[name] = json.loads(results.read_text(encoding="utf-8"))
    return done


def score_conditions(out: Path, evaluations: dict[str, tuple[list[str], list[str]]], train_texts: list[str]) -> dict:
    """Each condition's scores on each evaluation set (`name -> (sources, references)`), and each condition against
    the previous one (differences with 95% intervals, paired bootstrap)."""
    from training.main import read_predictions, score, unseen_terms
    from training.report import significance

    result: dict = {}
    for evaluation, (sources, references) in evaluations.items():
        terms = unseen_terms(sources, train_texts)
        outputs = {"copy-source": sources}
        for condition in CONDITIONS:
            folder = out / condition.name if evaluation == "test" else out / evaluation / condition.name
            outputs[condition.name] = read_predictions(folder)[: len(sources)]
        sig = significance(references, outputs, baseline="copy-source")
        steps = []
        for previous, condition in zip(CONDITIONS, CONDITIONS[1:]):
            comparison = sig["comparisons"][condition.name][previous.name]
            steps.append(
                {
                    "condition": condition.name,
                    "versus": previous.name,
                    **{m: {k: comparison[m][k] for k in ("difference", "ci", "p_value")} for m in ("bleu", "chrf")},
                }
            )
        result[evaluation] = {
            "sentences": len(sources),
            "systems": {
                name: {**score(sources, references, predictions, terms), **sig["systems"][name]}
                for name, predictions in outputs.items()
            },
            "steps": steps,
        }
    return result


def conditions_table(scores: dict) -> str:
    """Markdown: per evaluation set, BLEU and chrF (with intervals), placeholders and unseen terms kept per
    condition, then each condition's difference from the previous one."""
    labels = {c.name: c.label for c in CONDITIONS} | {"copy-source": "copy the source verbatim"}
    lines = []
    for evaluation, block in scores.items():
        lines += [
            f"#### {evaluation} ({block['sentences']} sentences)",
            "",
            "| condition | BLEU | chrF | placeholders kept | unseen kept |",
            "|---|---:|---:|---:|---:|",
        ]
        for name, m in block["systems"].items():
            kept = "n/a" if m.get("unseen_kept") is None else f"{m['unseen_kept']:.1%}"
            # a set without placeholders (DDTP descriptions) has no share to keep
            placeholders = "n/a" if math.isnan(m["placeholders_kept"]) else f"{m['placeholders_kept']:.1%}"
            lines.append(
                f"| {labels[name]} | {m['bleu']['score']:.1f} ({m['bleu']['ci'][0]:.1f}-{m['bleu']['ci'][1]:.1f}) "
                f"| {m['chrf']['score']:.1f} ({m['chrf']['ci'][0]:.1f}-{m['chrf']['ci'][1]:.1f}) "
                f"| {placeholders} | {kept} |"
            )
        lines += ["", "| step | BLEU difference | chrF difference |", "|---|---:|---:|"]
        for step in block["steps"]:
            cells = [
                f"{step[m]['difference']:+.1f} ({step[m]['ci'][0]:+.1f} to {step[m]['ci'][1]:+.1f}, "
                f"p {step[m]['p_value']:.3f})"
                for m in ("bleu", "chrf")
            ]
            lines.append(f"| {labels[step['condition']]} | {cells[0]} | {cells[1]} |")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    """The experiment alone: its jobs (two at a time per core, one torch thread each), then its tables in
    `OUTPUT_DIR/results.md` and scores in `OUTPUT_DIR/data_conditions.json`."""
    from hf_pgen.corpus import CORPUS_DIR, load_en_de_messages
    from training.data.ddtp import corpus_files
    from training.jobs import clock, run_jobs
    from training.recipe import PGEN_SUBWORD

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output_dir", default="outputs/data-conditions")
    parser.add_argument("--ddtp_dir", default=None, help="Where the DDTP corpus was built (default: its cache).")
    parser.add_argument("--max_steps", type=int, default=None, help="Training steps (default: the recipe's).")
    parser.add_argument("--max_predict_samples", type=int, default=None, help="Default: every evaluation pair.")
    parser.add_argument("--num_beams", type=int, default=1)
    parser.add_argument("--bt_samples", type=int, default=None, help="Backtranslate only the first N German texts.")
    parser.add_argument("--workers", type=int, default=None, help="Runs side by side (default: 2 per core).")
    parser.add_argument(
        "--reuse_finished",
        action="store_true",
        help="Keep the models, decodings and backtranslation an earlier run of the same code finished in "
        "OUTPUT_DIR, running only the rest (the mixing, a few seconds, runs again).",
    )
    args = parser.parse_args(argv)

    ddtp = corpus_files(args.ddtp_dir)  # before anything runs: the error says how to build it
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ["OMP_NUM_THREADS"] = "1"  # inherited by the spawned runs
    out = Path(args.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    settings = PGEN_SUBWORD if args.max_steps is None else PGEN_SUBWORD.replace(max_steps=args.max_steps)
    train_texts = [p[lang] for p in load_en_de_messages("train")["translation"] for lang in ("en", "de")]
    tokenizer = shared_tokenizer(out, settings, train_texts, ddtp)
    files = {split: CORPUS_DIR / f"{split}.jsonl.gz" for split in ("train", "test", "heldout_tools")}
    jobs = condition_jobs(
        out, settings, tokenizer, files, ddtp, args.max_predict_samples, args.num_beams, args.bt_samples
    )
    done = finished_jobs(out, jobs) if args.reuse_finished else {}
    if done:
        print(f"Reusing {len(done)} finished runs: {', '.join(done)}.", flush=True)
    pending = [job for job in jobs if job[0] not in done]
    run_jobs(pending, out, args.workers or 2 * (os.cpu_count() or 1), started, done)

    messages = {split: load_en_de_messages(split)["translation"] for split in ("test", "heldout_tools")}
    scores = score_conditions(out, evaluation_sets(messages, ddtp, args.max_predict_samples), train_texts)
    (out / "data_conditions.json").write_text(json.dumps(scores, indent=2, ensure_ascii=False) + "\n", "utf-8")
    (out / "results.md").write_text(conditions_table(scores), encoding="utf-8")
    print(f"{conditions_table(scores)}\nThe experiment took {clock(time.perf_counter() - started)}.", flush=True)
    return scores


if __name__ == "__main__":
    main()
