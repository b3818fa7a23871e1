"""training/tune.py: every trial is a valid run_translation command scored on the validation split (never the test
split), the table says what each trial changed, and the final check decodes test and heldout_tools only."""

import json
from dataclasses import asdict

from training import run_translation
from training.terminology import FREEDICT_ENG_DEU
from training.tune import GLOSSARY_TRAINING, TRIALS, final_jobs, finished, model_folder, report, trial_args


def test_every_trial_trains_and_scores_on_the_validation_split_only(tmp_path):
    for trial in TRIALS:
        argv = trial_args(trial, tmp_path)
        model_args, copy_args, data_args, training_args = run_translation.parse_args(argv)
        assert training_args.do_train and training_args.do_eval and not training_args.do_predict
        assert data_args.test_file is None and data_args.max_predict_samples is None
        assert training_args.max_steps == trial.settings.max_steps
        assert training_args.per_device_train_batch_size == trial.settings.batch_size
        assert model_args.tokenizer_name.endswith(f"-{trial.settings.vocab_size}")
        assert copy_args.copy_mechanism == trial.name.startswith("p")
    assert len({t.name for t in TRIALS}) == len(TRIALS)
    assert all(t.base is None or t.base in {u.name for u in TRIALS[: TRIALS.index(t)]} for t in TRIALS)


def test_the_table_says_what_each_trial_changed_and_skips_what_has_not_run(tmp_path):
    first, second = TRIALS[0], next(t for t in TRIALS if t.base == TRIALS[0].name)
    folder = tmp_path / second.name
    folder.mkdir()
    results = {"eval_loss": 3.9, "eval_bleu": 6.7, "eval_chrf": 16.8, "train_runtime": 600.0, "cpu_seconds": 300.0}
    (folder / "trial.json").write_text(json.dumps({"settings": asdict(second.settings), "results": results}))
    assert finished(second, tmp_path) and not finished(first, tmp_path)
    table = report(TRIALS, tmp_path)
    rows = [line for line in table.splitlines() if line.startswith(f"| {second.name} ")]
    assert len(rows) == 1 and "| 6.7 | 16.8 |" in rows[0] and "10m00s (5m00s)" in rows[0]
    assert "vocabulary 8000 -> 2000" in rows[0]
    assert "| copy the source verbatim |" in table
    assert not any(line.startswith(f"| {first.name} |") for line in table.splitlines())
    stale = dict(asdict(second.settings), vocab_size=123)  # a trial whose settings changed since it ran is not "run"
    (folder / "trial.json").write_text(json.dumps({"settings": stale, "results": results}))
    assert not finished(second, tmp_path)


def test_the_final_check_decodes_test_and_heldout_tools_greedy_and_protected(tmp_path):
    names = [TRIALS[0].name]
    (tmp_path / names[0]).mkdir()
    (tmp_path / names[0] / "config.json").write_text("{}")  # a trained model
    jobs = final_jobs(names, tmp_path)
    assert [job[0] for job in jobs] == [
        f"final/{split}/{names[0]}{suffix}" for split in ("test", "heldout_tools") for suffix in ("", "+protect")
    ]
    for name, argv, needs in jobs:
        _, _, data_args, training_args = run_translation.parse_args(argv)
        assert not training_args.do_train and training_args.do_predict and needs is None
        assert data_args.test_file.endswith(f"{name.split('/')[1]}.jsonl.gz")
        assert (data_args.protect == "placeholders") == name.endswith("+protect")


def test_the_glossary_trial_trains_annotated_and_reads_the_test_terms_as_hints(tmp_path):
    trial = next(t for t in TRIALS if t.extra == GLOSSARY_TRAINING)
    _, copy_args, data_args, _ = run_translation.parse_args(trial_args(trial, tmp_path))
    assert data_args.glossary_augmentation and data_args.glossary_dictionary == FREEDICT_ENG_DEU
    (tmp_path / trial.name).mkdir()
    (tmp_path / trial.name / "config.json").write_text("{}")
    terms = tmp_path / "test_terms.jsonl"
    terms.write_text('{"file": "Datei"}\n')  # written by the main job's term-base builder when missing
    jobs = {name: argv for name, argv, _ in final_jobs([trial.name], tmp_path)}
    hint = f"final/test/{trial.name}+hint"
    plain = {
        f"final/{split}/{trial.name}{suffix}" for split in ("test", "heldout_tools") for suffix in ("", "+protect")
    }
    assert set(jobs) == plain | {hint}
    _, _, data_args, _ = run_translation.parse_args(jobs[hint])
    assert data_args.glossary == str(terms) and data_args.glossary_mode == "hint" and data_args.protect is None


def test_a_convergence_trial_stopped_early_is_decoded_from_its_best_checkpoint(tmp_path):
    trial = next(t for t in TRIALS if t.converge)
    folder = tmp_path / trial.name
    for step in (500, 1000, 1500):  # the Trainer keeps the best checkpoint and the last (save_total_limit 1)
        (folder / f"checkpoint-{step}").mkdir(parents=True)
        state = {"best_model_checkpoint": str(folder / "checkpoint-1000"), "global_step": step}
        (folder / f"checkpoint-{step}" / "trainer_state.json").write_text(json.dumps(state))
    assert model_folder(trial.name, tmp_path) == folder / "checkpoint-1000"
    model_args, _, _, _ = run_translation.parse_args(final_jobs([trial.name], tmp_path)[0][1])
    assert model_args.model_name_or_path == str(folder / "checkpoint-1000")
    (folder / "config.json").write_text("{}")  # once the run has finished, its own folder
    assert model_folder(trial.name, tmp_path) == folder
