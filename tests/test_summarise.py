"""The summarisation job's own parts (training/summarise.py): the lead baselines, the recipes it hands
run_summarization, its goals and its report. The job itself runs in CI (`.ci/run`: `make summarise --smoke`)."""

from dataclasses import replace

from training import summarise
from training.summarise import DEFAULT, evaluate_goals, lead_sentence, lead_words, recipe, tune_lead_n


def test_lead_baselines():
    text = "Zyxwvut converts WDG-3 files, e.g. old ones. It keeps every field.\nSecond paragraph."
    assert lead_sentence(text) == "Zyxwvut converts WDG-3 files, e.g. old ones."
    assert lead_words(text, 4) == "Zyxwvut converts WDG-3 files,"
    texts = ["alpha beta gamma delta epsilon zeta", "one two three four five six"]
    summaries = ["alpha beta gamma", "one two three"]
    n, scores = tune_lead_n(texts, summaries, candidates=range(1, 6))
    assert n == 3 and scores[3] == 100.0 and scores[2] < 100.0


def _options(args: list[str]) -> dict:
    options, flag = {}, None
    for arg in args:
        if arg.startswith("--"):
            flag = arg
            options[flag] = None
        else:
            options[flag] = arg
    return options


def test_the_trained_systems_differ_only_in_copying_and_coverage(tmp_path):
    """Every trained system gets the same architecture, vocabulary, budget, schedule and decoding; pgen adds the copy
    mechanism, pgen-cov coverage on top (from the start)."""
    data = {split: tmp_path / f"{split}.jsonl" for split in ("train", "validation", "test")}
    runs = {name: _options(recipe(name, DEFAULT, data, tmp_path / name)) for name in ("nocopy", "pgen", "pgen-cov")}
    assert "--no_copy_mechanism" in runs["nocopy"] and "--copy_mechanism" in runs["pgen"]
    assert "--coverage" in runs["pgen-cov"] and "--coverage" not in runs["pgen"]
    assert {name: int(options["--max_steps"]) for name, options in runs.items()} == dict.fromkeys(
        runs, DEFAULT.max_steps
    )
    differ = {"--copy_mechanism", "--no_copy_mechanism", "--coverage", "--output_dir", "--learning_rate"}
    shared = {flag: value for flag, value in runs["nocopy"].items() if flag not in differ}
    for options in runs.values():
        assert {flag: value for flag, value in options.items() if flag not in differ} == shared
    assert shared["--num_beams"] == str(DEFAULT.num_beams) and shared["--tokenizer_type"] == "wordlevel"
    tried = _options(recipe("pgen", replace(DEFAULT, learning_rate=2e-3), data, tmp_path / "x"))
    assert float(tried["--learning_rate"]) == 2e-3  # --learning_rate: one rate for every system, for trials


def _metrics(rouge_l, names, repeats):
    return {"rougeL": rouge_l, "names_kept": names, "bigram_repeats": repeats}


def _comparison(difference, p_value):
    return {"rougeL": {"difference": difference, "p_value": p_value, "significant": p_value < 0.05}}


def test_goals_are_met_or_missed_by_the_numbers():
    systems = {
        "lead-N": _metrics(25.0, 0.4, 0.0),
        "nocopy": _metrics(28.0, 0.5, 0.2),
        "pgen": _metrics(33.0, 0.9, 0.10),
        "pgen-cov": _metrics(33.2, 0.91, 0.04),
    }
    sig = {
        "alpha": 0.05,
        "comparisons": {
            "pgen-cov": {
                "lead-N": _comparison(8.2, 0.001),
                "nocopy": _comparison(5.2, 0.001),
                "pgen": _comparison(0.2, 0.4),
            }
        },
    }
    timings = {"pgen": {"train": 1000.0, "generate": 50.0}, "pgen-cov": {"train": 1050.0, "generate": 56.0}}
    goals = evaluate_goals(systems, sig, timings)
    met = {goal["goal"].split(" (")[0]: goal["met"] for goal in goals}
    assert len(goals) == 6 and sum(met.values()) == 5
    assert not met["coverage costs at most 1.10x in generation time"]  # 56 / 50 = 1.12
    assert "pgen-cov 0.910, nocopy 0.500" in goals[2]["detail"]
    systems["pgen-cov"]["bigram_repeats"] = 0.06  # not half of 0.10
    assert not evaluate_goals(systems, sig, timings)[3]["met"]


def test_the_report_is_a_table_with_its_notes_and_goals():
    metrics = {
        "rouge1": 40.0,
        "rouge2": 20.0,
        "rougeL": 35.0,
        "names_kept": 0.9,
        "bigram_repeats": 0.05,
        "novel_unigrams": 0.1,
        "novel_bigrams": 0.3,
        "words": 6.5,
    }
    interval = {"score": 35.0, "mean": 35.0, "ci": [33.0, 37.0]}
    sig = {
        "alpha": 0.05,
        "sentences": 1000,
        "n_samples": 1000,
        "seed": 12345,
        "systems": {name: {k: interval for k in ("rouge1", "rouge2", "rougeL")} for name in ("lead-N", "pgen")},
        "comparisons": {
            "pgen": {"lead-N": {k: {"significant": True} for k in ("rouge1", "rouge2", "rougeL")}},
            "lead-N": {"pgen": {k: {"significant": True} for k in ("rouge1", "rouge2", "rougeL")}},
        },
    }
    results = {
        "systems": [
            {"name": "lead-N", "label": "first N words (lead-N)", "metrics": metrics},
            {"name": "pgen", "label": "pointer-generator", "metrics": metrics, "train_s": 900.0, "generate_s": 30.0},
        ],
        "reference": metrics,
        "significance": sig,
        "lead_n": 9,
        "date": "2026-01-01",
        "machine": "2 CPU cores",
        "wall_s": 1800.0,
        "goals": [{"goal": "a goal", "met": True, "detail": "why"}],
    }
    report = summarise.markdown_report(results)
    table = [line for line in report.splitlines() if line.startswith("|")]
    assert len(table) == 2 + 2 + 1 and all(line.count("|") == table[0].count("|") for line in table)
    assert "| pointer-generator | 40.0 (33.0–37.0) † |" in report and "15 min 00 s" in report
    assert "N = 9 words" in report and "**1 of 1 goals met.**" in report
