"""training/data_conditions.py and training/data/mix.py: the data experiment's job graph (each condition adds one
thing to the previous; backtranslation waits for the reverse model, a condition's model for its data) and the
training files it mixes."""

import gzip
import json
from pathlib import Path

import pytest

from training import run_translation
from training.data.mix import mix
from training.data_conditions import BT_TAG, CONDITIONS, REVERSE, condition_jobs
from training.recipe import UNTUNED


def _write(path: Path, pairs, gz=False):
    lines = "".join(json.dumps({"translation": {"en": en, "de": de}, "extra": 1}) + "\n" for en, de in pairs)
    if gz:
        with gzip.open(path, "wt", encoding="utf-8") as handle:
            handle.write(lines)
    else:
        path.write_text(lines, encoding="utf-8")
    return path


def test_mix_keeps_every_pair_in_order_and_counts_them(tmp_path):
    first = _write(tmp_path / "a.jsonl.gz", [("Open", "Öffnen"), ("Save", "Speichern")], gz=True)
    second = _write(tmp_path / "b.jsonl", [("Close", "Schließen")])
    counts = mix([first, second], tmp_path / "out.jsonl.gz")
    assert counts == {str(first): 2, str(second): 1}
    with gzip.open(tmp_path / "out.jsonl.gz", "rt", encoding="utf-8") as handle:
        records = [json.loads(line) for line in handle]
    assert [r["translation"]["en"] for r in records] == ["Open", "Save", "Close"]
    assert all(set(r) == {"translation"} for r in records)
    (tmp_path / "bad.jsonl").write_text('{"en": "x"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.jsonl, line 1 has no 'translation' object"):
        mix([tmp_path / "bad.jsonl"], tmp_path / "never.jsonl")


def test_a_tagged_copy_differs_by_the_tag_alone(tmp_path):
    from training.data.mix import main as mix_main

    plain = _write(tmp_path / "bt.jsonl", [("Open the file", "Datei öffnen"), ("Save", "Speichern")])
    counts = mix_main(["--output", str(tmp_path / "tag.jsonl"), "--inputs", str(plain), "--tag", BT_TAG])
    assert counts == {str(plain): 2}
    tagged = [json.loads(line)["translation"] for line in (tmp_path / "tag.jsonl").read_text("utf-8").splitlines()]
    assert tagged == [{"en": "<BT> Open the file", "de": "Datei öffnen"}, {"en": "<BT> Save", "de": "Speichern"}]
    (tmp_path / "de-only.jsonl").write_text('{"translation": {"de": "x"}}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"de-only.jsonl, line 1 has no 'en' text to tag"):
        mix([tmp_path / "de-only.jsonl"], tmp_path / "never.jsonl", tag=BT_TAG)
    with pytest.raises(SystemExit):
        mix_main(["--output", str(tmp_path / "x.jsonl"), "--inputs", str(plain), "--tag", " "])


def test_each_condition_adds_one_thing_and_waits_for_what_it_needs(tmp_path):
    messages = {s: tmp_path / f"messages-{s}.jsonl.gz" for s in ("train", "test", "heldout_tools")}
    ddtp = {s: tmp_path / f"ddtp-{s}.jsonl.gz" for s in ("train", "validation", "test")}
    jobs = condition_jobs(tmp_path, UNTUNED, tmp_path / "tok", messages, ddtp, None, 1, bt_samples=100)
    by_name = {job[0]: job for job in jobs}
    entry = {name: (job[3] if len(job) > 3 else "training.run_translation") for name, job in by_name.items()}
    assert [c.parts for c in CONDITIONS] == [
        ("messages",),
        ("messages", "ddtp"),
        ("messages", "ddtp", "bt"),
        ("messages", "ddtp", "bt-tag"),
    ]
    # the reverse model trains de -> en on the messages and DDTP pairs, then backtranslates DDTP's German side
    reverse = by_name[REVERSE][1]
    assert reverse[len(reverse) - 1 - reverse[::-1].index("--source_lang") + 1] == "de"
    assert by_name[REVERSE][2] == "data/mix-ddtp" and entry["data/bt"] == "training.backtranslate"
    assert by_name["data/bt"][2] == REVERSE and "100" in by_name["data/bt"][1]
    assert str(ddtp["train"]) in by_name["data/bt"][1] and "--tag" not in by_name["data/bt"][1]
    # the tagged sources are the untagged ones with the tag in front (one backtranslation, not two samples)
    tagged = by_name["data/bt-tag"]
    assert tagged[2] == "data/bt" and entry["data/bt-tag"] == "training.data.mix"
    assert tagged[1][tagged[1].index("--inputs") + 1] == str(tmp_path / "data" / "bt.jsonl")
    assert tagged[1][tagged[1].index("--tag") + 1] == BT_TAG
    assert by_name["data/mix-data-ddtp-bt"][2] == "data/bt" and by_name["data/mix-data-ddtp-bt-tag"][2] == "data/bt-tag"
    for condition in CONDITIONS:
        argv = by_name[condition.name][1]
        _, _, data_args, training_args = run_translation.parse_args(argv)  # a valid run_translation command
        assert data_args.train_file.endswith(f"train-{condition.name}.jsonl.gz") and training_args.do_predict
        assert argv[argv.index("--tokenizer_name") + 1] == str(tmp_path / "tok")  # one tokenizer for all four
        for evaluation in ("heldout_tools", "ddtp_test"):
            assert by_name[f"{evaluation}/{condition.name}"][2] == condition.name
    mixes = [entry[n] for n in by_name if n.startswith("data/mix")]
    assert set(mixes) == {"training.data.mix"}


def test_each_condition_is_scored_on_every_set_against_the_previous_one(tmp_path):
    from testing_utils import corpus_pairs

    from training.data_conditions import EVALUATIONS, conditions_table, score_conditions
    from training.evaluation import write_predictions

    pairs = corpus_pairs("validation", limit=30)
    sources, references = [en for en, _ in pairs], [de for _, de in pairs]
    # messages alone copies the source; each later condition gets one more reference sentence right
    for rank, condition in enumerate(CONDITIONS):
        outputs = [ref if i < 5 * rank else src for i, (src, ref) in enumerate(zip(sources, references))]
        for evaluation in EVALUATIONS:
            folder = tmp_path / condition.name if evaluation == "test" else tmp_path / evaluation / condition.name
            folder.mkdir(parents=True, exist_ok=True)
            write_predictions(folder / "generated_predictions.txt", outputs)
    scores = score_conditions(tmp_path, {e: (sources, references) for e in EVALUATIONS}, [])
    assert set(scores) == set(EVALUATIONS)
    steps = scores["ddtp_test"]["steps"]
    assert [(s["condition"], s["versus"]) for s in steps] == [
        (later.name, earlier.name) for earlier, later in zip(CONDITIONS, CONDITIONS[1:])
    ]
    assert all(s["chrf"]["difference"] > 0 and s["chrf"]["ci"][0] <= s["chrf"]["difference"] for s in steps)
    copy = scores["test"]["systems"]["copy-source"]
    assert (
        copy["placeholders_kept"] == 1.0
        and copy["chrf"]["score"] == scores["test"]["systems"]["data-messages"]["chrf"]["score"]
    )
    table = conditions_table(scores)
    assert table.count("#### ") == 3 and "| + the <BT> tag |" in table


def test_the_evaluation_sets_are_the_messages_and_the_ddtp_test_split_cut_alike(tmp_path):
    from training.data_conditions import evaluation_sets

    ddtp = {"test": _write(tmp_path / "test.jsonl.gz", [("Open", "Öffnen"), ("Save", "Speichern")], gz=True)}
    messages = {"test": [{"en": "a", "de": "b"}, {"en": "c", "de": "d"}], "heldout_tools": [{"en": "e", "de": "f"}]}
    assert evaluation_sets(messages, ddtp, None) == {
        "test": (["a", "c"], ["b", "d"]),
        "heldout_tools": (["e"], ["f"]),
        "ddtp_test": (["Open", "Save"], ["Öffnen", "Speichern"]),
    }
    cut = evaluation_sets(messages, ddtp, 1)
    assert cut["test"] == (["a"], ["b"]) and cut["ddtp_test"] == (["Open"], ["Öffnen"])


def test_run_alone_without_the_corpus_says_how_to_build_it_before_anything_runs(tmp_path):
    from training.data_conditions import main

    with pytest.raises(FileNotFoundError, match=r"python -m training.data.ddtp"):
        main(["--ddtp_dir", str(tmp_path / "none"), "--output_dir", str(tmp_path / "out")])
    assert not (tmp_path / "out").exists()


def test_a_set_without_placeholders_reads_n_a_in_the_table_not_nan(tmp_path):
    from training.data_conditions import conditions_table, score_conditions
    from training.evaluation import write_predictions

    sources, references = ["Open the file", "Save it"], ["Datei öffnen", "Speichern"]
    for condition in CONDITIONS:
        folder = tmp_path / "ddtp_test" / condition.name
        folder.mkdir(parents=True)
        write_predictions(folder / "generated_predictions.txt", references)
    table = conditions_table(score_conditions(tmp_path, {"ddtp_test": (sources, references)}, []))
    assert "nan" not in table and "| copy the source verbatim |" in table and "| n/a |" in table


def test_a_rerun_reuses_what_an_earlier_run_finished(tmp_path):
    from training.data_conditions import finished_jobs

    messages = {s: tmp_path / f"messages-{s}.jsonl.gz" for s in ("train", "test", "heldout_tools")}
    ddtp = {s: tmp_path / f"ddtp-{s}.jsonl.gz" for s in ("train", "validation", "test")}
    jobs = condition_jobs(tmp_path, UNTUNED, tmp_path / "tok", messages, ddtp, None, 1)
    assert finished_jobs(tmp_path, jobs) == {}
    (tmp_path / REVERSE).mkdir()
    (tmp_path / REVERSE / "all_results.json").write_text('{"train_loss": 3.0}', encoding="utf-8")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "bt.jsonl").write_text("", encoding="utf-8")
    assert finished_jobs(tmp_path, jobs) == {REVERSE: {"train_loss": 3.0}}  # an output without its stats: unfinished
    (tmp_path / "data" / "bt.jsonl.stats.json").write_text('{"written": 0}', encoding="utf-8")
    assert set(finished_jobs(tmp_path, jobs)) == {REVERSE, "data/bt"}
