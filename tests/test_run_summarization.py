"""training/run_summarization.py: its flags, the text and summary columns of CSV and JSON-lines files, what a run
writes, the data errors, and the models it saves served by pipeline("summarization") (copy records, protection,
glossaries, pictures).

The data: summarisation pairs made from standard-library docstrings (body -> first line; real text, offline). A tiny
BART-shaped model trains for a few steps; the checks are on what the script writes, not on summary quality.
"""

import csv
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from testing_utils import PREDICT_SAMPLES, docstring_pairs, tiny_args

import hf_pgen  # noqa: F401  (registers the pointer-generator and the summarization pipeline)
from hf_pgen.metrics import names_kept
from training import run_summarization
from training.data.files import DataError

ROOT = Path(__file__).resolve().parent.parent


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def write_csv(path, rows, columns):
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    return path


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """Training pairs as JSON lines (one empty text among them), test pairs as CSV with the columns the other way
    round and one more."""
    folder = tmp_path_factory.mktemp("data")
    pairs = docstring_pairs()
    assert len(pairs) >= 240
    train = [{"description": p["text"], "synopsis": p["summary"]} for p in pairs[:200]]
    train.append({"description": "", "synopsis": "An empty text"})
    test = [{"synopsis": p["summary"], "description": p["text"], "origin": "stdlib"} for p in pairs[200:232]]
    return {
        "train": write_jsonl(folder / "train.jsonl", train),
        "test": write_csv(folder / "test.csv", test, ["synopsis", "description", "origin"]),
        "test_pairs": test,
    }


def summarization_args(output_dir, data, *extra):
    """The tests' tiny recipe (`tiny_args`: a width-16 BART, a word-level tokenizer, 24 steps), on these files."""
    files = ["--train_file", str(data["train"]), "--test_file", str(data["test"]), "--do_eval", "false"]
    return tiny_args(output_dir, *files, *extra)


@pytest.mark.slow
def test_help_lists_the_upstream_flags():
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    env.pop("PYTHONPATH", None)  # run as a module from the repository root, as a user does
    done = subprocess.run(
        [sys.executable, "-m", "training.run_summarization", "--help"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    for flag in (
        "--dataset_name",
        "--train_file",
        "--validation_file",
        "--test_file",
        "--text_column",
        "--summary_column",
        "--source_prefix",
        "--max_source_length",
        "--max_target_length",
        "--val_max_target_length",
        "--num_beams",
        "--predict_with_generate",
        "--max_train_samples",
        "--max_eval_samples",
        "--max_predict_samples",
        "--model_name_or_path",
        "--push_to_hub",
        "--copy_mechanism",
        "--coverage",
        "--add_coverage",
    ):
        assert f"{flag} " in done.stdout or f"{flag}\n" in done.stdout, flag


@pytest.fixture(scope="module")
def run(data, tmp_path_factory, one_torch_thread):
    folder = tmp_path_factory.mktemp("summariser")
    results = run_summarization.main(
        summarization_args(
            folder, data, "--text_column", "description", "--summary_column", "synopsis", "--copy_records", "3"
        )
    )
    return folder, results


@pytest.mark.slow
def test_a_run_writes_rouge_predictions_stats_and_card(run, data):
    folder, results = run
    written = json.loads((folder / "all_results.json").read_text())
    for key in ("rouge1", "rouge2", "rougeL", "rougeLsum", "bigram_repeats", "novel_bigrams", "gen_len"):
        assert f"predict_{key}" in written, key
        assert written[f"predict_{key}"] == pytest.approx(results[f"predict_{key}"])
    assert 0 <= written["predict_rouge1"] <= 100 and 0 < written["predict_mean_p_gen"] < 1
    # Names kept is left out (as every nan metric) when no reference holds a name from its source.
    test = data["test_pairs"][:PREDICT_SAMPLES]
    has_names = not math.isnan(
        names_kept([p["description"] for p in test], [""] * len(test), [p["synopsis"] for p in test])
    )
    assert ("predict_names_kept" in written) == has_names
    assert written["predict_samples"] == PREDICT_SAMPLES  # --max_predict_samples of the 32 test pairs
    lines = (folder / "generated_predictions.txt").read_text(encoding="utf-8").split("\n")
    assert len(lines) - 1 == PREDICT_SAMPLES and lines[-1] == ""

    stats = json.loads((folder / "data_stats.json").read_text())
    assert stats["train"]["skipped_empty_text"] == 1 and stats["train"]["used"] == 200  # the empty text, counted
    assert stats["train"]["truncated_sources"] > 0 and stats["test"]["truncated_sources"] > 0  # over 24 tokens
    assert results["settings"]["text_column"] == "description" and results["settings"]["task"] == "summarization"

    card = (folder / "README.md").read_text(encoding="utf-8")
    header = card.split("---")[1]
    assert "pipeline_tag: summarization" in header and "type: summarization" in header
    assert f"value: {results['predict_rougeL']}" in header and "name: ROUGE-Lsum" in header
    assert "| ROUGE-L |" in card and "| Outputs repeating a bigram |" in card and "`run_summarization.py`" in card
    assert "summaries of general text" in card


@pytest.mark.slow
def test_the_saved_folder_serves_the_summarization_pipeline(run, data, tmp_path):
    """return_copy_info, protect= and glossary= through pipeline("summarization"), and the pictures of its records."""
    from transformers import pipeline

    from hf_pgen import visualize

    folder, _ = run
    summarizer = pipeline("summarization", model=str(folder))
    text = data["test_pairs"][0]["description"]
    (record,) = summarizer([text], max_new_tokens=8, return_copy_info=True)
    assert record["source"] == text and record["summary_text"] == "".join(t["text"] for t in record["tokens"])
    assert all(0 <= t["p_gen"] <= 1 for t in record["tokens"])
    page = visualize.to_html([record], tmp_path / "copies.html")
    assert "Summary 1" in page.read_text(encoding="utf-8") and "1 summary" in page.read_text(encoding="utf-8")
    visualize.plot(record, tmp_path / "copies.png")
    assert (tmp_path / "copies.png").stat().st_size > 0

    # protect=: a literal of the source comes out verbatim; glossary=: a term's target is placed.
    word = next(w for w in text.split() if w.isalpha() and len(w) > 5)
    (protected,) = summarizer([text], max_new_tokens=12, protect=[word])
    assert word in protected["summary_text"]
    (placed,) = summarizer([text], max_new_tokens=12, glossary={word: "Zyxwvut"})
    assert "Zyxwvut" in placed["summary_text"]

    # The run's own copy records went through the same pipeline.
    records = [json.loads(line) for line in (folder / "copy_records.jsonl").read_text().splitlines()]
    assert len(records) == 3 and all("summary_text" in r for r in records)
    assert (folder / "copies.html").is_file()


@pytest.mark.slow
def test_add_coverage_switches_it_on_neutrally(run, tmp_path):
    """--add_coverage loads a pointer-generator trained without coverage with coverage on (See et al.'s final phase):
    its coverage weights start at zero, so it generates exactly as before."""
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    from training.model import build_model

    folder, _ = run
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model_args, copy_args, data_args, _ = run_summarization.parse_args(
        ["--model_name_or_path", str(folder), "--add_coverage", "--coverage_weight", "0.5", "--output_dir", "x"]
    )
    covered = build_model(model_args, data_args, tokenizer, False, run_summarization.copy_settings(copy_args)).eval()
    plain = AutoModelForSeq2SeqLM.from_pretrained(folder).eval()
    assert covered.config.coverage and covered.config.coverage_weight == 0.5 and not plain.config.coverage
    assert not covered.pointer.coverage_weight.weight.any() and not covered.pointer.coverage_weight.bias.any()
    batch = hf_pgen.PointerGeneratorProcessor(tokenizer, covered.config.vocab_size)(
        ["Return true if the object is a module of the given name."], return_tensors="pt"
    )
    with torch.no_grad():
        a = covered.generate(**batch, max_new_tokens=8, num_beams=2)
        b = plain.generate(**batch, max_new_tokens=8, num_beams=2)
    assert torch.equal(a, b)
    with pytest.raises(ValueError, match="has coverage already"):
        model_args.model_name_or_path = str(tmp_path / "covered")
        covered.save_pretrained(tmp_path / "covered")
        build_model(model_args, data_args, tokenizer, False, run_summarization.copy_settings(copy_args))


def test_a_missing_column_names_the_columns_the_data_has(data, tmp_path):
    for split_file, columns in ((data["train"], "['description', 'synopsis']"), (data["test"], "synopsis")):
        flag = "--train_file" if split_file == data["train"] else "--test_file"
        args = [
            "--model_name_or_path",
            "unused",
            flag,
            str(split_file),
            "--text_column",
            "body",
            "--summary_column",
            "synopsis",
            "--do_train" if flag == "--train_file" else "--do_predict",
            "--output_dir",
            str(tmp_path / "out"),
            "--report_to",
            "none",
        ]
        with pytest.raises(DataError, match=r"no .*'body'") as error:
            run_summarization.main(args)
        message = str(error.value)
        assert columns in message and "--text_column/--summary_column" in message


def test_columns_default_to_the_first_two_as_upstream(data):
    _, _, data_args, _ = run_summarization.parse_args(
        [
            "--model_name_or_path",
            "m",
            "--train_file",
            str(data["train"]),
            "--test_file",
            str(data["test"]),
            "--output_dir",
            "x",
        ]
    )
    assert run_summarization.resolve_columns(data_args, ["train"]) == ("description", "synopsis")  # JSON keys
    assert run_summarization.resolve_columns(data_args, ["test"]) == ("synopsis", "description")  # the CSV header
    data_args.summary_column = "synopsis"
    assert run_summarization.resolve_columns(data_args, ["test"]) == ("description", "synopsis")
    _, _, data_args, _ = run_summarization.parse_args(
        ["--model_name_or_path", "m", "--dataset_name", "cnn_dailymail", "--output_dir", "x"]
    )
    assert run_summarization.resolve_columns(data_args, ["test"]) == ("article", "highlights")
    _, _, data_args, _ = run_summarization.parse_args(["--model_name_or_path", "m", "--output_dir", "x"])
    with pytest.raises(DataError, match="No data: pass --train_file"):
        run_summarization.resolve_columns(data_args, ["train"])
