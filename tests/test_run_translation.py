"""training/run_translation.py end to end on a slice of the embedded corpus, plus bad input, resuming and parity
with Transformers' example script (lengths checked first, language codes, logging, output folders, data formats).

A tiny BART-shaped model (width 16, one layer each side) trains for a few dozen steps on 200 pairs, with and without
the copy mechanism; the checks are on what the script writes, not on translation quality.
"""

import dataclasses
import gzip
import json
import logging
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from testing_utils import (
    PREDICT_SAMPLES,
    corpus_texts,
    run_without_hf_pgen,
    tiny_args,
    tiny_base,
    tiny_encoder_folder,
)

import hf_pgen  # noqa: F401  (registers the pointer-generator with the Auto classes)
from hf_pgen import PointerGeneratorProcessor
from hf_pgen.corpus import load_en_de_messages
from hf_pgen.glossary import Glossary
from training import run_translation
from training.data.files import DataError, load_translation_splits, read_translation_file

ROOT = Path(__file__).resolve().parent.parent


def predict_args(model_dir, output_dir, *extra):
    """Predict-only with a model the `runs` fixture trained (64 positions)."""
    return [
        "--model_name_or_path",
        str(model_dir),
        "--do_predict",
        "--predict_with_generate",
        "--max_predict_samples",
        "8",
        "--max_source_length",
        "24",
        "--max_target_length",
        "12",
        "--per_device_eval_batch_size",
        "8",
        "--report_to",
        "none",
        "--disable_tqdm",
        "true",
        "--dataloader_pin_memory",
        "false",
        "--output_dir",
        str(output_dir),
        *extra,
    ]


def run_module(args, env=None, timeout=300):
    """`python -m training.run_translation ARGS` from the repository root, as a user runs it; `env` is a whole
    environment (hub_server.client_env leaves HF_HUB_OFFLINE out on purpose), default this process's."""
    env = {**(os.environ if env is None else env), "OMP_NUM_THREADS": "1"}
    env.pop("PYTHONPATH", None)  # run as a module: the repository root (cwd) is on the path, nothing else needed
    done = subprocess.run(
        [sys.executable, "-m", "training.run_translation", *map(str, args)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout + done.stderr


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    results = {}
    for name, flag in (("copy", "--copy_mechanism"), ("baseline", "--no_copy_mechanism")):
        folder = root / name
        results[name] = (folder, run_translation.main(tiny_args(folder, flag)))
    return results


@pytest.mark.parametrize("name", ["copy", "baseline"])
def test_end_to_end_outputs(runs, name):
    folder, results = runs[name]
    written = json.loads((folder / "all_results.json").read_text())
    expected = {
        "train_loss",
        "train_runtime",
        "train_samples",
        "train_tokens_per_second",
        "train_truncated_sources",
        "eval_loss",
        "eval_bleu",
        "eval_chrf",
        "eval_samples",
        "predict_bleu",
        "predict_chrf",
        "predict_placeholder_preservation",
        "predict_samples",
        "predict_gen_len",
    }
    assert expected <= set(written), expected - set(written)
    assert written["train_samples"] == 200 and written["predict_samples"] == PREDICT_SAMPLES
    assert 0 <= written["predict_placeholder_preservation"] <= 1
    assert written["train_tokens_per_second"] > 0
    if name == "copy":
        assert 0 < written["predict_mean_p_gen"] < 1
        assert "predict_oov_copy_rate" in written  # a 600-word vocabulary leaves plenty to copy
    else:
        assert "predict_mean_p_gen" not in written
    for key in expected:
        assert results[key] == pytest.approx(written[key])

    lines = (folder / "generated_predictions.txt").read_text(encoding="utf-8").split("\n")
    assert lines[-1] == "" and len(lines) - 1 == PREDICT_SAMPLES

    checkpoints = sorted(p.name for p in folder.glob("checkpoint-*"))
    assert checkpoints == ["checkpoint-12", "checkpoint-24"]

    stats = json.loads((folder / "data_stats.json").read_text())
    assert stats["train"]["used"] == 200 and stats["test"]["used"] == PREDICT_SAMPLES


@pytest.mark.parametrize(
    "name, class_name",
    [("copy", "PointerGeneratorForConditionalGeneration"), ("baseline", "BartForConditionalGeneration")],
)
def test_model_folder_reloads_and_translates(runs, name, class_name):
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    folder, _ = runs[name]
    model = AutoModelForSeq2SeqLM.from_pretrained(folder)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    assert type(model).__name__ == class_name
    if name == "copy":  # the script's defaults for a word-level tokenizer: the copy levers the main job measured
        assert model.config.selective_read and model.config.copy_next
    assert model.config.vocab_size == len(tokenizer) <= 600  # min_frequency 2 on 200 pairs: fewer words
    assert model.generation_config.max_length == 12
    encoded = hf_pgen.encode_with_oovs(
        tokenizer, ["Delete Nakamura now"], vocab_size=model.config.vocab_size, return_tensors="pt"
    )
    inputs = {"input_ids": encoded["input_ids"], "attention_mask": encoded["attention_mask"]}
    if name == "copy":
        inputs["extended_input_ids"] = encoded["extended_input_ids"]
    generated = model.generate(**inputs, max_new_tokens=5)
    texts = hf_pgen.batch_decode_with_oovs(tokenizer, generated, encoded["oov_words"], vocab_size=len(tokenizer))
    assert len(texts) == 1 and isinstance(texts[0], str)


def test_model_card(runs):
    folder, results = runs["copy"]
    card = (folder / "README.md").read_text(encoding="utf-8")
    header = card.split("---")[1]
    assert "library_name: transformers" in header and "pipeline_tag: translation" in header
    assert "- pointer-generator" in header and "- copy-mechanism" in header
    assert "model-index:" in header and "type: chrf" in header and "split: test" in header
    assert f"value: {results['predict_chrf']}" in header
    assert "datasets:" not in header  # the embedded corpus is no Hub dataset id
    assert "BSD-3-Clause" in card and "Apache-2.0" in card and "MIT" in card  # licences of the corpus
    assert "{{" not in card and "{%" not in card
    from huggingface_hub import ModelCard

    data = ModelCard(card).data.to_dict()
    metric_types = {m["type"] for m in data["model-index"][0]["results"][0]["metrics"]}
    assert {"bleu", "chrf", "placeholder_preservation"} <= metric_types

    # What only the run knows: the data checks, the recipe, the hardware and versions.
    assert "## Training details" in card and "| sources truncated |" in card and "| framework versions |" in card
    assert "| copy mechanism | pointer-generator, dedicated pointer, no coverage, selective read, copy-next |" in card
    assert "## Copy settings" in card and "(24 examples)" in card and "| Mean p_gen |" in card

    baseline_card = (runs["baseline"][0] / "README.md").read_text(encoding="utf-8")
    assert "without a copy mechanism" in baseline_card and "- pointer-generator" not in baseline_card
    assert "| copy mechanism | none (baseline) |" in baseline_card and "## Copy settings" not in baseline_card


def test_card_snippets_run_without_hf_pgen(runs):
    """Both cards' usage code runs as written in a Python without hf_pgen: the baseline's without the translation
    pipeline Transformers 5 removed (it has no pipeline code of its own), the copy model's through its folder's."""
    import re

    code = []
    for name in ("baseline", "copy"):
        card = (runs[name][0] / "README.md").read_text(encoding="utf-8")
        code.append(re.search(r"```python\n(.*?)```", card, re.S).group(1))  # the first snippet
    assert "pipeline(" not in code[0] and "trust_remote_code=True" in code[1]
    stdout = run_without_hf_pgen("\n".join(code))
    assert stdout.count("\n") >= 2  # each snippet printed its translation


def test_model_card_of_a_predict_only_run_points_at_the_evaluated_model(runs, tmp_path):
    model_dir, _ = runs["copy"]
    run_translation.main(predict_args(model_dir, tmp_path / "predict"))
    card = (tmp_path / "predict" / "README.md").read_text(encoding="utf-8")
    assert f'model="{model_dir}"' in card and "model-index:" in card


def test_predict_with_protect_and_copy_records(runs, tmp_path):
    """--protect places every placeholder of every test source; --copy_records N writes N copy records (the
    pipeline's own) and their page."""
    from hf_pgen.metrics import placeholder_preservation

    model_dir, _ = runs["copy"]
    out = tmp_path / "protected"
    results = run_translation.main(
        predict_args(model_dir, out, "--protect", "placeholders", "--copy_records", "3", "--max_target_length", "24")
    )
    sources = [pair["en"] for pair in load_en_de_messages("test")["translation"][:8]]
    predictions = (out / "generated_predictions.txt").read_text(encoding="utf-8").split("\n")[:8]
    assert results["predict_placeholder_preservation"] == 1.0
    assert placeholder_preservation(sources, [p.replace("\\n", "\n") for p in predictions]) == 1.0
    records = [json.loads(line) for line in (out / "copy_records.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["source"] for r in records] == sources[:3]
    assert all("".join(t["text"] for t in r["tokens"]) == r["translation_text"] for r in records)
    assert "pg-out" in (out / "copies.html").read_text(encoding="utf-8")
    with pytest.raises(ValueError, match="needs --do_predict"):
        run_translation.main(
            predict_args(runs["baseline"][0], tmp_path / "b", "--no_copy_mechanism", "--copy_records", "2")
        )
    with pytest.raises(ValueError, match="add --predict_with_generate"):
        run_translation.main(
            [
                a
                for a in predict_args(model_dir, tmp_path / "c", "--protect", "placeholders")
                if a != "--predict_with_generate"
            ]
        )


@pytest.mark.parametrize("name", ["copy", "baseline"])
def test_a_saved_model_decodes_with_its_own_generation_settings(runs, tmp_path, name):
    """A predict-only run of a trained folder decodes as the run that trained it did: same generation settings
    (suppress_tokens=[<unk>] above all, which a pointer-generator's base config lacks), so the same predictions."""
    from transformers import AutoTokenizer, GenerationConfig

    model_dir, _ = runs[name]
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    saved = GenerationConfig.from_pretrained(model_dir)
    assert saved.suppress_tokens == [tokenizer.unk_token_id]
    flag = "--copy_mechanism" if name == "copy" else "--no_copy_mechanism"
    model_args, copy_args, data_args, _ = run_translation.parse_args(predict_args(model_dir, tmp_path / "x", flag))
    settings = run_translation.copy_settings(copy_args) if name == "copy" else None
    model = run_translation.build_model(model_args, data_args, tokenizer, False, settings)
    assert model.generation_config.suppress_tokens == saved.suppress_tokens
    assert model.generation_config.decoder_start_token_id == saved.decoder_start_token_id
    run_translation.main(predict_args(model_dir, tmp_path / "again", flag))
    again = (tmp_path / "again" / "generated_predictions.txt").read_text(encoding="utf-8").split("\n")[:8]
    trained = (model_dir / "generated_predictions.txt").read_text(encoding="utf-8").split("\n")[:8]
    assert again == trained


def test_no_repeat_ngram_size_is_used_and_saved_for_later_runs(runs, tmp_path):
    """--no_repeat_ngram_size reaches generate() (no output repeats a bigram) and the saved generation config, so a
    later predict-only run of the folder decodes the same way without the flag; the flag there overrides it."""
    from transformers import AutoTokenizer, GenerationConfig

    model_dir, _ = runs["copy"]
    first = tmp_path / "first"
    run_translation.main(predict_args(model_dir, first, "--no_repeat_ngram_size", "2"))
    predictions = (first / "generated_predictions.txt").read_text(encoding="utf-8").split("\n")[:-1]
    for text in predictions:
        words = text.split()
        bigrams = list(zip(words, words[1:]))
        assert len(bigrams) == len(set(bigrams)), text
    plain = (model_dir / "generated_predictions.txt").read_text(encoding="utf-8").split("\n")[:8]
    assert predictions != plain  # the tiny model repeats itself: the flag changed something

    # A model trained with the flag keeps it.
    model_args, copy_args, data_args, _ = run_translation.parse_args(
        predict_args(model_dir, tmp_path / "x", "--no_repeat_ngram_size", "2")
    )
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = run_translation.build_model(
        model_args, data_args, tokenizer, False, run_translation.copy_settings(copy_args)
    )
    assert model.generation_config.no_repeat_ngram_size == 2
    model.save_pretrained(tmp_path / "saved")
    tokenizer.save_pretrained(tmp_path / "saved")
    assert GenerationConfig.from_pretrained(tmp_path / "saved").no_repeat_ngram_size == 2
    model_args, copy_args, data_args, _ = run_translation.parse_args(predict_args(tmp_path / "saved", tmp_path / "y"))
    reloaded = run_translation.build_model(
        model_args, data_args, tokenizer, False, run_translation.copy_settings(copy_args)
    )
    assert reloaded.generation_config.no_repeat_ngram_size == 2
    run_translation.main(predict_args(tmp_path / "saved", tmp_path / "again"))
    assert (tmp_path / "again" / "generated_predictions.txt").read_text(encoding="utf-8").split("\n")[
        :-1
    ] == predictions


def test_the_top_level_model_card_is_a_card_of_todays_template(runs):
    """model_card.md at the top of the repository is a card as run_translation writes it today (from the library's
    one template, hf_pgen.modelcard.TEMPLATE): a valid card, not a template, with the sections of a fresh one."""
    from huggingface_hub import ModelCard

    example = ModelCard.load(ROOT / "model_card.md")
    assert example.data.library_name == "transformers" and "pointer-generator" in example.data.tags
    assert "{{" not in example.text and "{%" not in example.text

    def headings(text: str) -> list[str]:
        return [line for line in text.splitlines() if line.startswith("#") and not line.startswith("# ")]

    fresh = ModelCard.load(runs["copy"][0] / "README.md")
    assert headings(example.text) == headings(fresh.text), "regenerate model_card.md: see the Makefile's model_card.md"


def test_resume_says_so_and_logs_at_info(runs, tmp_path):
    """An interrupted run (its last checkpoint lost) resumes from the one before, with the same tokenizer, and says
    so; INFO is on for the main process (the Trainer's progress lines), as in upstream's script."""
    source, _ = runs["copy"]
    folder = tmp_path / "resumed"
    folder.mkdir()
    shutil.copytree(source / "checkpoint-12", folder / "checkpoint-12")
    log = run_module(tiny_args(folder, "--do_eval", "false", "--max_predict_samples", "4"))
    assert "Resuming training from the checkpoint" in log and str(folder / "checkpoint-12") in log
    assert "***** Running training *****" in log  # an INFO line of the Trainer
    results = json.loads((folder / "all_results.json").read_text())
    assert results["train_resumed_from_step"] == 12
    assert json.loads((folder / "trainer_state.json").read_text())["global_step"] == 24
    # The tokenizer came from the checkpoint, not from training a new one.
    assert json.loads((folder / "tokenizer.json").read_text()) == json.loads(
        (source / "checkpoint-12" / "tokenizer.json").read_text()
    )


def test_a_finished_run_run_again_trains_nothing_more(runs, tmp_path):
    """The command of a finished run, run again, finds its last checkpoint at --max_steps: the Trainer (Transformers
    5.25) would train one more step from it and save that model. Nothing is trained; the checkpoint's weights are
    saved and predicted with."""
    from safetensors.torch import load_file

    source, _ = runs["copy"]
    folder = tmp_path / "again"
    folder.mkdir()
    shutil.copytree(source / "checkpoint-24", folder / "checkpoint-24")
    log = run_module(tiny_args(folder, "--do_eval", "false", "--max_predict_samples", "4"))
    assert "is at step 24 of --max_steps 24: nothing is left to train" in log
    assert "***** Running training *****" not in log
    assert sorted(p.name for p in folder.glob("checkpoint-*")) == ["checkpoint-24"]
    saved, trained = load_file(folder / "model.safetensors"), load_file(folder / "checkpoint-24" / "model.safetensors")
    assert saved.keys() == trained.keys() and all(torch.equal(saved[k], trained[k]) for k in saved)
    assert len((folder / "generated_predictions.txt").read_text(encoding="utf-8").split("\n")) == 5


def test_copy_flags_a_saved_pointer_generator_does_not_take_are_named(runs, tmp_path, caplog):
    """Loading a saved pointer-generator keeps its own copy settings: flags asking for others are named in a warning,
    not ignored silently; the script's defaults alone warn about nothing."""
    caplog.set_level(logging.WARNING, logger="training.run_translation")
    model_dir, _ = runs["copy"]
    run_translation.main(predict_args(model_dir, tmp_path / "plain"))
    assert not any("its own copy settings are kept" in r.message for r in caplog.records)
    run_translation.main(predict_args(model_dir, tmp_path / "asked", "--coverage", "--force_p_gen", "1.0"))
    (warning,) = [r.message for r in caplog.records if "its own copy settings are kept" in r.message]
    assert "--coverage True (the model's: False)" in warning and "--force_p_gen 1.0 (the model's: None)" in warning


def test_a_checkpoint_of_other_model_settings_is_refused_before_training(runs, tmp_path):
    """Resuming a checkpoint saved with other copy settings (a lever turned off since, or another glossary annotation)
    would fail deep in the optimizer state, or silently train another model: the script names what differs."""
    source, _ = runs["copy"]  # saved with the script's word-level defaults: selective read and copy-next on
    folder = tmp_path / "stale"
    folder.mkdir()
    shutil.copytree(source / "checkpoint-12", folder / "checkpoint-12")
    with pytest.raises(ValueError, match=r"other model settings \(copy_next True there, False here\)"):
        run_translation.main(tiny_args(folder, "--copy_next", "false", "--do_eval", "false"))
    assert not (folder / "model.safetensors").exists() and not (folder / "checkpoint-24").exists()


def test_non_empty_output_dir_without_checkpoint_is_refused(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "notes.txt").write_text("someone else's work")
    with pytest.raises(ValueError, match="already exists and is not empty. Use --overwrite_output_dir"):
        run_translation.main(tiny_args(folder))
    _, _, data_args, training_args = run_translation.parse_args(tiny_args(folder, "--overwrite_output_dir"))
    assert run_translation.find_checkpoint(data_args, training_args) is None


def test_nothing_to_do(tmp_path):
    args = [a for a in tiny_args(tmp_path) if a not in ("--do_train", "--do_eval", "--do_predict")]
    with pytest.raises(ValueError, match="There is nothing to do: pass --do_train, --do_eval and/or --do_predict"):
        run_translation.main(args)


def test_early_stopping_without_what_it_needs_is_refused_before_any_work(tmp_path):
    with pytest.raises(ValueError, match="--early_stopping_patience 2 stops training .* --load_best_model_at_end"):
        run_translation.main(tiny_args(tmp_path / "out", "--early_stopping_patience", "2"))
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_word_dropout_and_early_stopping_on_the_validation_loss(tmp_path):
    """Word dropout trains (copy inputs and labels kept consistent: the model's checks would refuse them otherwise);
    early stopping evaluates the loss only while training, keeps the best checkpoint and says which step it was; the
    final evaluation still generates."""
    out = tmp_path / "stop"
    results = run_translation.main(
        tiny_args(
            out,
            "--word_dropout",
            "0.3",
            "--target_word_dropout",
            "0.1",
            "--early_stopping_patience",
            "1",
            "--eval_strategy",
            "steps",
            "--eval_steps",
            "4",
            "--save_strategy",
            "steps",
            "--load_best_model_at_end",
            "--learning_rate",
            "3e-2",  # far too high: the validation loss turns up early, so the stop comes before the last step
            "--do_predict",
            "false",
            steps=200,
            save_steps=4,
        )
    )
    history = json.loads((out / "trainer_state.json").read_text())["log_history"]
    evaluations = [entry for entry in history if "eval_loss" in entry and "eval_runtime" in entry]
    assert evaluations and not any("eval_bleu" in entry for entry in evaluations)  # the loss only, while training
    assert results["train_steps"] < 200  # stopped
    losses = {entry["step"]: entry["eval_loss"] for entry in evaluations}
    assert results["train_best_step"] == min(losses, key=losses.get)
    assert results["train_best_eval_loss"] == pytest.approx(min(losses.values()))
    assert "eval_bleu" in results and "eval_chrf" in results  # the final evaluation generates
    assert results["settings"]["word_dropout"] == 0.3


@pytest.mark.slow
def test_a_neural_metric_from_a_local_model_scores_the_test_predictions(tmp_path):
    encoder = tiny_encoder_folder(tmp_path / "encoder")
    results = run_translation.main(
        tiny_args(tmp_path / "out", "--metric_model", str(encoder), "--do_eval", "false", steps=4, save_steps=4)
    )
    assert 0 < results["predict_bertscore_f1"] <= 1 and results["predict_bertscore_layer"] == 2
    written = json.loads((tmp_path / "out" / "all_results.json").read_text())
    assert written["predict_bertscore_f1"] == results["predict_bertscore_f1"]


def test_a_neural_metric_without_its_model_is_refused_before_any_work(tmp_path):
    with pytest.raises(ValueError, match="--metric_model .*absent does not exist"):
        run_translation.main(tiny_args(tmp_path / "out", "--metric_model", str(tmp_path / "absent")))
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------------------------------------------------------------
# Lengths against the model's position embeddings, checked before any work
# ---------------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--max_source_length", "1024"], r"`--max_source_length` is set to 1024, but the model only has 64 position"),
        # The default --max_target_length 128 becomes the generation length of a 64-position model.
        (
            ["--max_target_length", "128"],
            r"`--val_max_target_length` is 128 .*only has 64 position encodings. Pass "
            r"`--val_max_target_length 64`",
        ),
        (["--generation_max_length", "100"], r"`--generation_max_length` is 100"),
    ],
)
def test_lengths_beyond_the_positions_are_refused_before_any_work(runs, tmp_path, extra, message):
    model_dir, _ = runs["copy"]
    with pytest.raises(ValueError, match=message):
        run_translation.main(predict_args(model_dir, tmp_path / "out", *extra))
    assert not (tmp_path / "out" / "generated_predictions.txt").exists()


def test_label_smoothing_and_a_tokenizer_without_oov_words(tmp_path, caplog):
    """--label_smoothing_factor trains the copy model (through the model's own support-aware loss: the stock one
    would be inf); a byte-level BPE tokenizer gets a notice that nothing is out of its vocabulary."""
    from transformers import AutoConfig

    caplog.set_level(logging.WARNING, logger="training.run_translation")
    results = run_translation.main(
        tiny_args(
            tmp_path / "ls",
            "--label_smoothing_factor",
            "0.1",
            "--tokenizer_type",
            "bpe",
            "--do_predict",
            "false",
            steps=4,
            save_steps=4,
        )
    )
    assert torch.isfinite(torch.tensor([results["train_loss"], results["eval_loss"]])).all()
    assert results["settings"]["label_smoothing_factor"] == 0.1
    # The script's copy-next default follows the tokenizer: off for subwords (the word-level run has it on).
    config = AutoConfig.from_pretrained(tmp_path / "ls")
    assert config.selective_read and not config.copy_next
    assert any(
        "No source word of the train data is out of the tokenizer's vocabulary" in r.message for r in caplog.records
    )


def test_copy_settings_are_the_config_fields():

    from hf_pgen import PointerGeneratorConfig, PointerGeneratorForConditionalGeneration
    from training.arguments import _NOT_COPY_SETTINGS, PointerGeneratorArguments

    flags = {f.name for f in dataclasses.fields(PointerGeneratorArguments)}
    own = set(PointerGeneratorConfig.__annotations__) - _NOT_COPY_SETTINGS
    assert flags == own | {"copy_mechanism"}
    assert not hasattr(run_translation, "POINTER_CHOICES")
    _, copy_args, _, _ = run_translation.parse_args(
        tiny_args("out")
        + [
            "--pointer",
            "cross_attention",
            "--pointer_layer",
            "0",
            "--pointer_heads",
            "0",
            "1",
            "--coverage",
            "--coverage_weight",
            "0.5",
            "--force_p_gen",
            "0.25",
        ]
    )
    model = PointerGeneratorForConditionalGeneration.from_base(
        tiny_base("bart"), **run_translation.copy_settings(copy_args)
    )
    config = model.config
    assert (
        config.pointer,
        config.pointer_layer,
        config.pointer_heads,
        config.coverage,
        config.coverage_weight,
        config.force_p_gen,
        config.p_gen_bias_init,
    ) == ("cross_attention", 0, [0, 1], True, 0.5, 0.25, 10.0)
    assert config.selective_read  # on by default in the script, off in the config
    assert not PointerGeneratorConfig(base_config=tiny_base("bart").config).selective_read
    # copy-next left unset is decided from the tokenizer by build_model (word-level: on, subwords: off).
    assert "copy_next" not in run_translation.copy_settings(copy_args)
    _, copy_args, _, _ = run_translation.parse_args(
        tiny_args("out") + ["--selective_read", "false", "--copy_next", "false"]
    )
    assert not any(run_translation.copy_settings(copy_args)[k] for k in ("selective_read", "copy_next"))
    _, copy_args, _, _ = run_translation.parse_args(tiny_args("out") + ["--copy_next"])  # bare: true
    assert run_translation.copy_settings(copy_args)["copy_next"] is True
    with pytest.raises(SystemExit):  # the config's Literal becomes the flag's choices
        run_translation.parse_args(tiny_args("out") + ["--pointer", "nearest"])


# ---------------------------------------------------------------------------------------------------------------------
# mBART / M2M100 language codes, as in upstream's script
# ---------------------------------------------------------------------------------------------------------------------


def _mbart_tokenizer(cls_name="MBartTokenizer"):
    """An mBART tokenizer (the real class, language codes included) over a small Unigram vocabulary trained on the
    corpus."""
    import transformers
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers.models.mbart.tokenization_mbart import FAIRSEQ_LANGUAGE_CODES

    raw = Tokenizer(models.Unigram())
    raw.pre_tokenizer = pre_tokenizers.Metaspace()
    specials = ["<s>", "<pad>", "</s>", "<unk>"]
    raw.train_from_iterator(
        corpus_texts("train", limit=500),
        trainers.UnigramTrainer(vocab_size=300, special_tokens=specials, unk_token="<unk>"),
    )
    pieces = [tuple(p) for p in json.loads(raw.to_str())["model"]["vocab"]][len(specials) :]
    codes = FAIRSEQ_LANGUAGE_CODES if cls_name == "MBartTokenizer" else ["en_XX", "de_DE"]
    vocab = [(s, 0.0) for s in specials] + pieces + [(c, 0.0) for c in codes] + [("<mask>", 0.0)]
    return getattr(transformers, cls_name)(vocab=vocab)


def test_mbart_language_codes(tmp_path):
    tokenizer = _mbart_tokenizer()
    tokenizer.save_pretrained(tmp_path / "tokenizer")
    args = tiny_args(tmp_path / "out", "--do_eval", "false", "--do_predict", "false", steps=2, save_steps=2)
    args = [a for a in args if a not in ("--train_tokenizer",)]
    args[args.index("bart")] = "mbart"
    args += ["--tokenizer_name", str(tmp_path / "tokenizer"), "--source_lang", "en_XX", "--target_lang", "de_DE"]
    results = run_translation.main(args)  # the data keys are "en" and "de"
    assert results["train_samples"] == 200
    saved = json.loads((tmp_path / "out" / "tokenizer_config.json").read_text())
    assert saved.get("src_lang") == "en_XX" and saved.get("tgt_lang") == "de_DE"

    with pytest.raises(ValueError, match="--target_lang 'de_XX' is not a language code of MBartTokenizer"):
        run_translation.main(args[:-1] + ["de_XX", "--overwrite_output_dir"])  # the data key is still "de"


def test_mbart50_forces_the_target_code_first():

    tokenizer = _mbart_tokenizer("MBart50Tokenizer")
    model = tiny_base("bart", tokenizer=tokenizer, d_model=8, layers=1, heads=1)
    data_args = run_translation.DataTrainingArguments(source_lang="en_XX", target_lang="de_DE")
    run_translation.set_language_codes(tokenizer, model, data_args)
    assert tokenizer.src_lang == "en_XX" and tokenizer.tgt_lang == "de_DE"
    assert model.generation_config.forced_bos_token_id == tokenizer.convert_tokens_to_ids("de_DE")
    assert tokenizer("Open", text_target="Öffnen")["labels"][0] == tokenizer.convert_tokens_to_ids("de_DE")


# ---------------------------------------------------------------------------------------------------------------------
# Data: formats, datasets, caching, and bad input
# ---------------------------------------------------------------------------------------------------------------------


def _jsonl(path: Path, records, raw_lines=()):
    lines = [json.dumps(r, ensure_ascii=False).encode() for r in records] + list(raw_lines)
    path.write_bytes(b"\n".join(lines) + b"\n")
    return str(path)


PAIRS = [{"en": f"Delete file number {i}", "de": f"Datei Nummer {i} löschen"} for i in range(12)]


def test_parquet_files_and_local_datasets(tmp_path):
    import datasets

    table = datasets.Dataset.from_list([{"translation": p} for p in PAIRS])
    table.to_parquet(str(tmp_path / "train.parquet"))
    splits, stats, origin = load_translation_splits(
        "en", "de", ["train"], train_file=str(tmp_path / "train.parquet"), cache_dir=str(tmp_path / "cache")
    )
    assert (
        origin == "files"
        and stats["train"]["pairs"] == 12
        and splits["train"][3] == {"source": "Delete file number 3", "target": "Datei Nummer 3 löschen"}
    )

    # A DatasetDict saved with save_to_disk, with one column per language, and an empty text to drop.
    saved = tmp_path / "saved"
    rows = PAIRS + [{"en": "Empty", "de": " "}]
    datasets.DatasetDict(
        {"train": datasets.Dataset.from_list(rows), "test": datasets.Dataset.from_list(PAIRS[:2])}
    ).save_to_disk(str(saved))
    splits, stats, origin = load_translation_splits("en", "de", ["train", "test"], dataset_name=str(saved))
    assert origin == str(saved) and len(splits["train"]) == 12 and len(splits["test"]) == 2
    assert stats["train"]["skipped_empty_text"] == 1

    # A local folder of data files, read by load_dataset.
    folder = tmp_path / "folder"
    folder.mkdir()
    _jsonl(folder / "train.jsonl", [{"translation": p} for p in PAIRS])
    splits, _, _ = load_translation_splits(
        "en", "de", ["train"], dataset_name=str(folder), cache_dir=str(tmp_path / "cache")
    )
    assert splits["train"]["target"][:2] == ["Datei Nummer 0 löschen", "Datei Nummer 1 löschen"]

    with pytest.raises(DataError, match=r"no 'fr' key in 'translation'; keys found: \['de', 'en'\]"):
        load_translation_splits("en", "fr", ["train"], train_file=str(tmp_path / "train.parquet"))


def test_parquet_through_the_script_and_a_cached_tokenization(runs, tmp_path):
    """Tokenization goes through Dataset.map on Arrow-backed data: a second run loads it from the cache, and
    --overwrite_cache redoes it."""
    import datasets

    datasets.Dataset.from_list(PAIRS).to_parquet(str(tmp_path / "test.parquet"))
    model_dir, _ = runs["copy"]
    cache = tmp_path / "cache"
    args = predict_args(
        model_dir, tmp_path / "out", "--test_file", str(tmp_path / "test.parquet"), "--cache_dir", str(cache)
    )

    def tokenized():
        return {p: p.stat().st_mtime_ns for p in cache.rglob("cache-*.arrow")}

    results = run_translation.main(args)
    assert results["predict_samples"] == 8
    first = tokenized()
    assert first, "the tokenized split was not written to the datasets cache"
    run_translation.main(args)
    assert tokenized() == first  # loaded from the cache: nothing rewritten
    run_translation.main(args + ["--overwrite_cache"])
    assert tokenized() != first  # tokenized again and written (datasets gives a forced recomputation a new file)


def test_missing_language_key_names_it_and_the_keys_found(tmp_path):
    path = _jsonl(
        tmp_path / "train.jsonl",
        [{"translation": {"en": "Open", "de": "Öffnen"}}, {"translation": {"en": "Close", "fr": "Fermer"}}],
    )
    with pytest.raises(DataError, match=r"line 2: no 'de' key in 'translation'; keys found.*\['en', 'fr'\]"):
        read_translation_file(path, "en", "de")
    with pytest.raises(DataError, match=r"line 2: no 'de' key in 'translation'"):
        load_translation_splits("en", "de", ["train"], train_file=path, cache_dir=str(tmp_path / "cache"))


def test_missing_csv_column_names_it_and_the_columns_found(tmp_path):
    path = tmp_path / "train.csv"
    path.write_text("english,de\nOpen,Öffnen\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"no column named 'en'; columns found: \['english', 'de'\]"):
        read_translation_file(str(path), "en", "de")


def test_empty_lines_and_empty_texts_are_skipped_and_counted(tmp_path):
    path = tmp_path / "train.jsonl"
    path.write_bytes(
        b'{"translation": {"en": "Open", "de": "\xc3\x96ffnen"}}\n'
        b"\n"
        b"   \n"
        b'{"translation": {"en": "", "de": "Leer"}}\n'
        b'{"translation": {"en": "Close", "de": "  "}}\n'
        b'{"translation": {"en": null, "de": "Nichts"}}\n'
        b'{"en": "Save", "de": "Speichern"}\n'
    )
    sources, targets, stats = read_translation_file(str(path), "en", "de")
    assert sources == ["Open", "Save"] and targets == ["Öffnen", "Speichern"]
    assert stats["skipped_empty_lines"] == 2 and stats["skipped_empty_text"] == 3 and stats["pairs"] == 2
    splits, stats, _ = load_translation_splits(
        "en", "de", ["train"], train_file=str(path), cache_dir=str(tmp_path / "cache")
    )
    assert splits["train"]["source"][:] == ["Open", "Save"] and stats["train"]["skipped_empty_text"] == 3

    tsv = tmp_path / "train.tsv.gz"
    tsv.write_bytes(gzip.compress("en\tde\nOpen\tÖffnen\n\t\nClose\t\nNA\tnull\n".encode()))
    sources, targets, stats = read_translation_file(str(tsv), "en", "de")
    assert sources == ["Open", "NA"] and stats["skipped_empty_lines"] == 1 and stats["skipped_empty_text"] == 1
    splits, _, _ = load_translation_splits(
        "en", "de", ["train"], train_file=str(tsv), cache_dir=str(tmp_path / "cache")
    )
    assert splits["train"]["target"][:] == ["Öffnen", "null"]  # "NA" and "null" are text, not missing values


def test_undecodable_bytes_name_file_and_line_or_are_skipped(tmp_path):
    path = _jsonl(
        tmp_path / "train.jsonl",
        [{"translation": {"en": "Open", "de": "Öffnen"}}],
        [
            b'{"translation": {"en": "Close", "de": "Schlie\xdfen"}}',  # Latin-1, not UTF-8
            b'{"translation": {"en": "Save", "de": "Speichern"}}',
        ],
    )
    with pytest.raises(DataError, match=r"train\.jsonl, line 2: not valid UTF-8.*--skip_bad_lines"):
        load_translation_splits("en", "de", ["train"], train_file=path, cache_dir=str(tmp_path / "cache"))
    splits, stats, _ = load_translation_splits(
        "en", "de", ["train"], train_file=path, skip_bad_lines=True, cache_dir=str(tmp_path / "cache")
    )
    assert splits["train"]["source"][:] == ["Open", "Save"] and stats["train"]["skipped_undecodable_lines"] == 1

    csv_path = tmp_path / "test.csv"
    csv_path.write_bytes("en,de\nOpen,Öffnen\n".encode() + b"Close,Schlie\xdfen\n")
    with pytest.raises(DataError, match=r"test\.csv, line 3: not valid UTF-8"):
        read_translation_file(str(csv_path), "en", "de")
    sources, _, stats = read_translation_file(str(csv_path), "en", "de", skip_bad_lines=True)
    assert sources == ["Open"] and stats["skipped_undecodable_lines"] == 1


def test_malformed_json_line(tmp_path):
    path = _jsonl(
        tmp_path / "train.jsonl",
        [{"translation": {"en": "Open", "de": "Öffnen"}}],
        [b'{"translation": {"en": "Close", "de": "Schlie'],
    )
    with pytest.raises(
        DataError,
        match=r"line 2, column 39: malformed JSON \(Unterminated string starting at\); "
        r"pass --skip_bad_lines",
    ) as error:
        read_translation_file(path, "en", "de")
    assert "at at" not in str(error.value)


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("train.jsonl", b"", r"train\.jsonl: the file is empty"),
        ("train.csv", b"\n", r"train\.csv: the file is empty"),
        (
            "train.jsonl",
            b'{"translation": {"en": "", "de": "x"}}\n',
            r"train\.jsonl: the train data holds no usable "
            r"pair \(skipped: \{'skipped_empty_text': 1\}\)",
        ),
    ],
)
def test_empty_data_names_the_file(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(DataError, match=message):
        load_translation_splits("en", "de", ["train"], train_file=str(path), cache_dir=str(tmp_path / "cache"))


def test_bad_data_stops_the_script_before_training(tmp_path):
    train = _jsonl(
        tmp_path / "train.jsonl",
        [{"translation": {"en": "Open", "de": "Öffnen"}}] * 3
        + [{"translation": {"english": "Close", "de": "Schließen"}}],
    )
    args = tiny_args(tmp_path / "out", "--train_file", train, "--do_eval", "false", "--do_predict", "false")
    with pytest.raises(DataError, match=r"line 4: no 'en' key"):
        run_translation.main(args)
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").glob("checkpoint-*"))


def test_data_files_train_with_skips_and_truncation_counted(tmp_path):
    records = [
        {"translation": {"en": f"Open the file number {i} " + "very " * (i % 12), "de": f"Datei {i} öffnen"}}
        for i in range(40)
    ]
    train = _jsonl(tmp_path / "train.jsonl", records, [b"", b'{"translation": {"en": "", "de": "x"}}'])
    test = tmp_path / "test.csv"
    test.write_text("en,de\nOpen the file,Datei öffnen\nClose,Schließen\n", encoding="utf-8")
    args = tiny_args(
        tmp_path / "out",
        "--train_file",
        train,
        "--test_file",
        str(test),
        "--do_eval",
        "false",
        "--max_source_length",
        "8",
        steps=2,
        save_steps=2,
    )
    results = run_translation.main(args)
    assert results["train_skipped_empty_lines"] == 1 and results["train_skipped_empty_text"] == 1
    assert results["train_truncated_sources"] > 0
    assert results["predict_samples"] == 2
    assert len((tmp_path / "out" / "generated_predictions.txt").read_text().splitlines()) == 2


def test_tokenizer_copy_placeholders_leaves_them_out_of_the_trained_vocabulary(tmp_path):
    from transformers import AutoTokenizer

    from hf_pgen.placeholders import placeholder_spans

    run_translation.main(
        tiny_args(
            tmp_path / "out",
            "--tokenizer_copy_placeholders",
            "--do_eval",
            "false",
            "--do_predict",
            "false",
            steps=2,
            save_steps=2,
        )
    )
    vocabulary = AutoTokenizer.from_pretrained(tmp_path / "out").get_vocab()
    assert not [w for w in vocabulary if placeholder_spans(w) == [(0, len(w))] and w not in ("<s>", "</s>")]
    with pytest.raises(ValueError, match="--tokenizer_copy_placeholders"):
        run_translation.main(tiny_args(tmp_path / "bpe", "--tokenizer_copy_placeholders", "--tokenizer_type", "bpe"))


def test_placeholder_augmentation_adds_renamed_pairs_after_the_tokenizer_learned_the_real_ones(tmp_path):
    from transformers import AutoTokenizer

    from training.augmentation import augment_placeholders

    records = [
        {
            "translation": {
                "en": f"Delete %(count)d files from Server{i}",
                "de": f"%(count)d Dateien von Server{i} löschen",
            }
        }
        for i in range(20)
    ]
    records += [{"translation": {"en": "Close the window", "de": "Das Fenster schließen"}}] * 20
    train = _jsonl(tmp_path / "train.jsonl", records)
    args = tiny_args(
        tmp_path / "out",
        "--train_file",
        train,
        "--do_eval",
        "false",
        "--do_predict",
        "false",
        "--placeholder_augmentation",
        "--data_seed",
        "7",
        steps=2,
        save_steps=2,
    )
    results = run_translation.main(args)
    sources = [r["translation"]["en"] for r in records]
    extra, _ = augment_placeholders(sources, [r["translation"]["de"] for r in records], seed=7)
    assert results["train_augmented"] == len(extra) > 10  # pairs with a placeholder (one drew its own name)
    assert results["train_samples"] == len(records) + len(extra)
    card = (tmp_path / "out" / "README.md").read_text(encoding="utf-8")
    assert f"{len(records) + len(extra)} pairs, {len(extra)} of them augmented copies" in card
    vocabulary = AutoTokenizer.from_pretrained(tmp_path / "out").get_vocab()
    assert "%(count)d" in vocabulary  # the tokenizer learned the corpus as it is, not the renamed copies
    assert not any(w in vocabulary for s in extra for w in re.findall(r"%\([^)]*\)d", s))


# ---------------------------------------------------------------------------------------------------------------------
# Push to the Hub (a loopback stand-in; huggingface_hub reads HF_ENDPOINT at import, hence a subprocess)
# ---------------------------------------------------------------------------------------------------------------------


def test_push_to_hub_uploads_the_rendered_card(tmp_path):
    """Without --hub_model_id the repository is named after --output_dir in the user's namespace; the card's
    snippet names that repository, not the local folder."""
    sys.path.insert(0, str(Path(__file__).parent))
    from hub_server import DEFAULT_USER, HubStorage, client_env, hub_server

    records = [{"translation": {"en": f"Delete file {i}", "de": f"Datei {i} löschen"}} for i in range(20)]
    train = _jsonl(tmp_path / "train.jsonl", records)
    test = _jsonl(tmp_path / "test.jsonl", records[:3])
    args = tiny_args(
        tmp_path / "tiny-pgen",
        "--train_file",
        train,
        "--test_file",
        test,
        "--do_eval",
        "false",
        "--push_to_hub",
        steps=2,
        save_steps=2,
    )
    repo_id = f"{DEFAULT_USER}/tiny-pgen"
    with hub_server(tmp_path / "hub") as base_url:
        run_module(args, env=client_env(base_url, tmp_path / "hf_home"), timeout=240)
        # Another machine: no hf_pgen, an empty cache, everything through the Hub's download path.
        stdout = run_without_hf_pgen(
            f"""
import json
from transformers import AutoModelForSeq2SeqLM, pipeline
model = AutoModelForSeq2SeqLM.from_pretrained({repo_id!r}, trust_remote_code=True)
out = pipeline("translation", model={repo_id!r}, trust_remote_code=True)(["Delete file 7", "Delete Zyx"])
print(json.dumps({{"class": type(model).__name__, "out": out}}))
""",
            env=client_env(base_url, tmp_path / "hf_home_download"),
        )
    downloaded = json.loads(stdout.strip().splitlines()[-1])
    assert downloaded["class"] == "PointerGeneratorForConditionalGeneration"
    assert [sorted(item) for item in downloaded["out"]] == [["translation_text"], ["translation_text"]]
    storage = HubStorage(tmp_path / "hub")
    files = storage.list_files(repo_id)
    assert {"README.md", "config.json", "model.safetensors", "tokenizer.json", "modeling_pointer_generator.py"} <= set(
        files
    )
    assert not any(f.startswith("checkpoint-") for f in files)
    card = storage.read_file(repo_id, "README.md").decode()
    assert card == (tmp_path / "tiny-pgen" / "README.md").read_text(encoding="utf-8")
    assert "model-index:" in card and "pointer-generator" in card
    assert "## Training details" in card  # push_to_hub's create_model_card got the run's details
    assert f'model="{repo_id}"' in card and str(tmp_path) not in card


def test_oov_copy_limit_is_saved_for_later_runs_and_means_nothing_without_copying(runs, tmp_path):
    from transformers import AutoTokenizer, GenerationConfig

    model_dir, _ = runs["copy"]
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model_args, copy_args, data_args, _ = run_translation.parse_args(
        predict_args(model_dir, tmp_path / "x", "--oov_copy_limit")
    )
    model = run_translation.build_model(
        model_args, data_args, tokenizer, False, run_translation.copy_settings(copy_args)
    )
    assert model.generation_config.oov_copy_limit is True
    model.save_pretrained(tmp_path / "saved")
    assert GenerationConfig.from_pretrained(tmp_path / "saved").oov_copy_limit is True
    baseline_dir, _ = runs["baseline"]
    model_args, _, data_args, _ = run_translation.parse_args(
        predict_args(baseline_dir, tmp_path / "y", "--no_copy_mechanism", "--oov_copy_limit")
    )
    baseline = run_translation.build_model(
        model_args, data_args, AutoTokenizer.from_pretrained(baseline_dir), False, None
    )
    assert getattr(baseline.generation_config, "oov_copy_limit", None) is None  # a plain model has nothing to copy


# FreeDict eng-deu entries (the format test: the real dictionary has 464k)
DICTIONARY = (
    "German\tDeutsch\nFrench\tFranzösisch\nadded\thinzugefügt\nversion\tVersion\ntable\tTabelle\n"
    "date\tDatum\nticket\tTicket\nmilestone\tMeilenstein\nreport\tBericht\ndeleted\tgelöscht\n"
)


def test_glossary_augmentation_trains_the_annotation_and_glossary_places_the_terms(tmp_path):
    """--glossary_augmentation annotates dictionary terms in training sources and saves the annotation with the
    model; --glossary then places each test source's terms in its prediction."""
    from transformers import AutoConfig

    from hf_pgen.glossary import Glossary, apply_glossaries
    from training.terminology import TRAINING_ANNOTATION

    dictionary = tmp_path / "dictionary.tsv"
    dictionary.write_text(DICTIONARY, encoding="utf-8")
    model_dir = tmp_path / "glossed"
    results = run_translation.main(
        tiny_args(model_dir, "--glossary_augmentation", "--glossary_dictionary", str(dictionary))
    )
    assert results["train_glossary_annotated"] > 0
    assert AutoConfig.from_pretrained(model_dir).glossary_annotation == TRAINING_ANNOTATION == "{target}"
    out = tmp_path / "predicted"
    run_translation.main(
        predict_args(
            model_dir, out, "--glossary", str(dictionary), "--max_target_length", "32", "--max_source_length", "40"
        )
    )
    sources = [pair["en"] for pair in load_en_de_messages("test")["translation"][:8]]
    predictions = (out / "generated_predictions.txt").read_text(encoding="utf-8").split("\n")[:8]
    glossary, placed = Glossary.from_file(dictionary), 0
    for source, prediction in zip(sources, predictions):
        terms = apply_glossaries([source], glossary, None)[1][0]
        for target in {t for t, _, _ in (terms or {"targets": []})["targets"]}:
            assert re.search(r"(?<!\w)" + re.escape(target) + r"(?!\w)", prediction), (source, prediction)
            placed += 1
    assert placed >= 3
    # one term base per test pair (WMT's way), from a JSONL file: line i for test pair i
    per_pair = tmp_path / "terms.jsonl"
    per_pair.write_text(
        "\n".join(json.dumps({"version": "Fassung"} if "version" in s else {}) for s in sources) + "\n",
        encoding="utf-8",
    )
    out = tmp_path / "per-pair"
    run_translation.main(
        predict_args(
            model_dir, out, "--glossary", str(per_pair), "--max_target_length", "32", "--max_source_length", "40"
        )
    )
    predictions = (out / "generated_predictions.txt").read_text(encoding="utf-8").split("\n")[:8]
    assert [p.count("Fassung") for p in predictions] == [len(re.findall(r"\bversion\b", s)) for s in sources]
    assert any("version" in s for s in sources)
    per_pair.write_text("{}\n", encoding="utf-8")
    with pytest.raises(ValueError, match="has 1 lines for 8 test pairs"):
        run_translation.main(predict_args(model_dir, tmp_path / "z", "--glossary", str(per_pair)))
    with pytest.raises(ValueError, match="needs --do_train"):
        run_translation.main(predict_args(model_dir, tmp_path / "x", "--glossary_augmentation"))
    with pytest.raises(ValueError, match="line 1 has 1 column"):
        (tmp_path / "bad.tsv").write_text("table\n", encoding="utf-8")
        run_translation.main(predict_args(model_dir, tmp_path / "y", "--glossary", str(tmp_path / "bad.tsv")))


def test_glossary_augmentation_trains_with_the_annotation_the_model_is_saved_with(tmp_path, monkeypatch):
    """--glossary_annotation with --glossary_augmentation: the training sources are annotated in that format, the
    one saved in the config (and so applied by the pipeline), not in the default; wrapping a model that reads
    another format is refused."""
    from transformers import AutoConfig

    import training.terminology

    dictionary = tmp_path / "dictionary.tsv"
    dictionary.write_text(DICTIONARY, encoding="utf-8")
    used, augment = [], training.terminology.augment_with_terms

    def recording(sources, references, index, annotation, **kwargs):
        used.append(annotation)
        return augment(sources, references, index, annotation, **kwargs)

    monkeypatch.setattr(training.terminology, "augment_with_terms", recording)
    model_dir = tmp_path / "appended"  # Dinu et al.'s format, not the script's default
    results = run_translation.main(
        tiny_args(
            model_dir,
            "--glossary_augmentation",
            "--glossary_dictionary",
            str(dictionary),
            "--glossary_annotation",
            "{source} [ {target} ]",
            "--do_predict",
            "false",
            steps=4,
            save_steps=4,
        )
    )
    assert results["train_glossary_annotated"] > 0
    assert used == ["{source} [ {target} ]"]
    assert AutoConfig.from_pretrained(model_dir).glossary_annotation == "{source} [ {target} ]"
    with pytest.raises(ValueError, match=r"reads its terms as '\{source\} \[ \{target\} \]'"):
        run_translation.main(
            [
                "--model_name_or_path",
                str(model_dir),
                "--do_train",
                "--max_steps",
                "1",
                "--max_train_samples",
                "16",
                "--glossary_augmentation",
                "--glossary_dictionary",
                str(dictionary),
                "--glossary_annotation",
                "{source} <{target}>",
                "--report_to",
                "none",
                "--output_dir",
                str(tmp_path / "again"),
            ]
        )
    assert not (tmp_path / "again" / "model.safetensors").exists()


def test_glossary_augmentation_trains_a_plain_model_to_read_hints(tmp_path, monkeypatch):
    """Inline annotation (Dinu et al. 2019) needs no copy head: --no_copy_mechanism --glossary_augmentation saves the
    annotation in the plain model's config, and --glossary_mode hint hands generate() the test sources with the terms
    written in exactly as the processor writes them, forcing nothing."""
    from transformers import AutoConfig, AutoTokenizer, BartForConditionalGeneration

    from training.terminology import TRAINING_ANNOTATION

    dictionary = tmp_path / "dictionary.tsv"
    dictionary.write_text(DICTIONARY, encoding="utf-8")
    model_dir = tmp_path / "plain-glossed"
    results = run_translation.main(
        tiny_args(model_dir, "--no_copy_mechanism", "--glossary_augmentation", "--glossary_dictionary", str(dictionary))
    )
    assert results["train_glossary_annotated"] > 0
    config = AutoConfig.from_pretrained(model_dir)
    assert config.model_type == "bart" and config.glossary_annotation == TRAINING_ANNOTATION
    processor = PointerGeneratorProcessor.from_pretrained(model_dir)
    assert processor.glossary_annotation == TRAINING_ANNOTATION  # read from a plain BART config

    read, generate = [], BartForConditionalGeneration.generate

    def recording(self, *args, **kwargs):  # what the model was given to read, and whether anything was forced
        read.extend(
            (ids[mask.bool()].tolist(), "logits_processor" in kwargs)
            for ids, mask in zip(kwargs["input_ids"], kwargs["attention_mask"])
        )
        return generate(self, *args, **kwargs)

    monkeypatch.setattr(BartForConditionalGeneration, "generate", recording)
    run_translation.main(
        predict_args(
            model_dir,
            tmp_path / "hinted",
            "--no_copy_mechanism",
            "--glossary",
            str(dictionary),
            "--glossary_mode",
            "hint",
            "--max_source_length",
            "40",
        )
    )
    sources = [pair["en"] for pair in load_en_de_messages("test")["translation"][:8]]
    expected = processor.glossary_sources(sources, Glossary.from_file(dictionary))
    assert expected != sources  # some test source holds a dictionary term
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    assert read == [(ids, False) for ids in tokenizer(expected, max_length=40, truncation=True)["input_ids"]]


pytestmark = [pytest.mark.usefixtures("one_torch_thread"), pytest.mark.slow]  # slow: left out by `make test-fast`
