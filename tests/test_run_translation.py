"""training/run_translation.py end to end on a slice of the embedded corpus, plus bad input and resuming.

A tiny BART-shaped model (width 16, one layer each side) trains for a few dozen steps on 200 pairs, with and without
the copy mechanism; the checks are on what the script writes, not on translation quality.
"""

import gzip
import json
import shutil
from pathlib import Path

import pytest
import torch


import hf_pgen  # noqa: F401  (registers the pointer-generator with the Auto classes)
from training import run_translation
from training.run_translation import DataError, read_translation_file

TINY = (
    "d_model=16,encoder_layers=1,decoder_layers=1,encoder_attention_heads=2,decoder_attention_heads=2,"
    "encoder_ffn_dim=32,decoder_ffn_dim=32,max_position_embeddings=64"
)
PREDICT_SAMPLES = 24


def tiny_args(output_dir, *extra, steps=24, save_steps=12):
    return [
        "--model_type", "bart", "--config_overrides", TINY,
        "--train_tokenizer", "--tokenizer_type", "wordlevel", "--tokenizer_vocab_size", "600",
        "--max_train_samples", "200", "--max_eval_samples", "16", "--max_predict_samples", str(PREDICT_SAMPLES),
        "--max_source_length", "24", "--max_target_length", "24", "--val_max_target_length", "12",
        "--do_train", "--do_eval", "--do_predict", "--predict_with_generate",
        "--max_steps", str(steps), "--save_steps", str(save_steps), "--logging_steps", "6",
        "--per_device_train_batch_size", "16", "--per_device_eval_batch_size", "32", "--learning_rate", "3e-3",
        "--report_to", "none", "--dataloader_pin_memory", "false", "--disable_tqdm", "true",
        "--output_dir", str(output_dir), *extra,
    ]


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny models: threads only add synchronisation
    yield
    torch.set_num_threads(threads)


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
        "train_loss", "train_runtime", "train_samples", "train_tokens_per_second", "train_truncated_sources",
        "eval_loss", "eval_bleu", "eval_chrf", "eval_samples",
        "predict_bleu", "predict_chrf", "predict_placeholder_preservation", "predict_samples", "predict_gen_len",
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


@pytest.mark.parametrize("name, class_name", [("copy", "PointerGeneratorForConditionalGeneration"),
                                              ("baseline", "BartForConditionalGeneration")])
def test_model_folder_reloads_and_translates(runs, name, class_name):
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    folder, _ = runs[name]
    model = AutoModelForSeq2SeqLM.from_pretrained(folder)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    assert type(model).__name__ == class_name
    assert model.config.vocab_size == len(tokenizer) <= 600  # min_frequency 2 on 200 pairs: fewer words
    assert model.generation_config.max_length == 12
    encoded = hf_pgen.encode_with_oovs(tokenizer, ["Delete Nakamura now"], vocab_size=model.config.vocab_size,
                                       return_tensors="pt")
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
    assert "BSD-3-Clause" in card and "Apache-2.0" in card and "MIT" in card  # licences of the corpus
    assert "{{" not in card and "{%" not in card
    from huggingface_hub import ModelCard

    data = ModelCard(card).data.to_dict()
    metric_types = {m["type"] for m in data["model-index"][0]["results"][0]["metrics"]}
    assert {"bleu", "chrf", "placeholder_preservation"} <= metric_types

    baseline_card = (runs["baseline"][0] / "README.md").read_text(encoding="utf-8")
    assert "without a copy mechanism" in baseline_card and "- pointer-generator" not in baseline_card


def test_resume_from_last_checkpoint(runs, tmp_path):
    """An interrupted run (its last checkpoint lost) resumes from the one before, with the same tokenizer."""
    source, _ = runs["copy"]
    folder = tmp_path / "resumed"
    folder.mkdir()
    shutil.copytree(source / "checkpoint-12", folder / "checkpoint-12")
    results = run_translation.main(tiny_args(folder, "--do_eval", "false", "--max_predict_samples", "4"))
    assert results["train_resumed_from_step"] == 12
    state = json.loads((folder / "trainer_state.json").read_text())
    assert state["global_step"] == 24
    # The tokenizer came from the checkpoint, not from training a new one.
    assert json.loads((folder / "tokenizer.json").read_text()) == json.loads(
        (source / "checkpoint-12" / "tokenizer.json").read_text()
    )


# ---------------------------------------------------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------------------------------------------------


def _jsonl(path: Path, records, raw_lines=()):
    lines = [json.dumps(r, ensure_ascii=False).encode() for r in records] + list(raw_lines)
    path.write_bytes(b"\n".join(lines) + b"\n")
    return str(path)


def test_missing_language_key_names_it_and_the_keys_found(tmp_path):
    path = _jsonl(tmp_path / "train.jsonl", [{"translation": {"en": "Open", "de": "Öffnen"}},
                                             {"translation": {"en": "Close", "fr": "Fermer"}}])
    with pytest.raises(DataError, match=r"line 2: no 'de' key in 'translation'; keys found.*\['en', 'fr'\]"):
        read_translation_file(path, "en", "de")


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

    tsv = tmp_path / "train.tsv.gz"
    tsv.write_bytes(gzip.compress("en\tde\nOpen\tÖffnen\n\t\nClose\t\n".encode()))
    sources, targets, stats = read_translation_file(str(tsv), "en", "de")
    assert sources == ["Open"] and stats["skipped_empty_lines"] == 1 and stats["skipped_empty_text"] == 1


def test_undecodable_bytes_name_file_and_line_or_are_skipped(tmp_path):
    path = _jsonl(tmp_path / "train.jsonl", [{"translation": {"en": "Open", "de": "Öffnen"}}],
                  [b'{"translation": {"en": "Close", "de": "Schlie\xdfen"}}',  # Latin-1, not UTF-8
                   b'{"translation": {"en": "Save", "de": "Speichern"}}'])
    with pytest.raises(DataError, match=r"train\.jsonl, line 2: not valid UTF-8.*--skip_bad_lines"):
        read_translation_file(path, "en", "de")
    sources, _, stats = read_translation_file(path, "en", "de", skip_bad_lines=True)
    assert sources == ["Open", "Save"] and stats["skipped_undecodable_lines"] == 1

    csv_path = tmp_path / "test.csv"
    csv_path.write_bytes("en,de\nOpen,Öffnen\n".encode() + b"Close,Schlie\xdfen\n")
    with pytest.raises(DataError, match=r"test\.csv, line 3: not valid UTF-8"):
        read_translation_file(str(csv_path), "en", "de")
    sources, _, stats = read_translation_file(str(csv_path), "en", "de", skip_bad_lines=True)
    assert sources == ["Open"] and stats["skipped_undecodable_lines"] == 1


def test_malformed_json_line(tmp_path):
    path = _jsonl(tmp_path / "train.jsonl", [{"translation": {"en": "Open", "de": "Öffnen"}}], [b'{"translation": '])
    with pytest.raises(DataError, match=r"line 2: malformed JSON"):
        read_translation_file(path, "en", "de")


def test_bad_data_stops_the_script_before_training(tmp_path):
    train = _jsonl(tmp_path / "train.jsonl", [{"translation": {"en": "Open", "de": "Öffnen"}}] * 3
                   + [{"translation": {"english": "Close", "de": "Schließen"}}])
    args = tiny_args(tmp_path / "out", "--train_file", train, "--do_eval", "false", "--do_predict", "false")
    with pytest.raises(DataError, match=r"line 4: no 'en' key"):
        run_translation.main(args)
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").glob("checkpoint-*"))


def test_data_files_train_with_skips_and_truncation_counted(tmp_path):
    records = [{"translation": {"en": f"Open the file number {i} " + "very " * (i % 12), "de": f"Datei {i} öffnen"}}
               for i in range(40)]
    train = _jsonl(tmp_path / "train.jsonl", records, [b"", b'{"translation": {"en": "", "de": "x"}}'])
    test = tmp_path / "test.csv"
    test.write_text("en,de\nOpen the file,Datei öffnen\nClose,Schließen\n", encoding="utf-8")
    args = tiny_args(tmp_path / "out", "--train_file", train, "--test_file", str(test), "--do_eval", "false",
                     "--max_source_length", "8", steps=2, save_steps=2)
    results = run_translation.main(args)
    assert results["train_skipped_empty_lines"] == 1 and results["train_skipped_empty_text"] == 1
    assert results["train_truncated_sources"] > 0
    assert results["predict_samples"] == 2
    assert len((tmp_path / "out" / "generated_predictions.txt").read_text().splitlines()) == 2


# ---------------------------------------------------------------------------------------------------------------------
# Push to the Hub (a loopback stand-in; huggingface_hub reads HF_ENDPOINT at import, hence a subprocess)
# ---------------------------------------------------------------------------------------------------------------------


def test_push_to_hub_uploads_the_rendered_card(tmp_path):
    import subprocess
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from hub_server import HubStorage, client_env, hub_server

    records = [{"translation": {"en": f"Delete file {i}", "de": f"Datei {i} löschen"}} for i in range(20)]
    train = _jsonl(tmp_path / "train.jsonl", records)
    test = _jsonl(tmp_path / "test.jsonl", records[:3])
    script = Path(run_translation.__file__)
    args = tiny_args(tmp_path / "out", "--train_file", train, "--test_file", test, "--do_eval", "false",
                     "--push_to_hub", "--hub_model_id", "tester/tiny-pgen", steps=2, save_steps=2)
    with hub_server(tmp_path / "hub") as base_url:
        env = client_env(base_url, tmp_path / "hf_home", OMP_NUM_THREADS="1")
        done = subprocess.run([sys.executable, str(script), *args], env=env, capture_output=True, text=True,
                              timeout=240)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        # Another machine: no hf_pgen, an empty cache, everything through the Hub's download path.
        from conftest import run_without_hf_pgen

        stdout = run_without_hf_pgen(
            """
import json
from transformers import AutoModelForSeq2SeqLM, pipeline
model = AutoModelForSeq2SeqLM.from_pretrained("tester/tiny-pgen", trust_remote_code=True)
out = pipeline("translation", model="tester/tiny-pgen", trust_remote_code=True)(["Delete file 7", "Delete Zyx"])
print(json.dumps({"class": type(model).__name__, "out": out}))
""",
            env=client_env(base_url, tmp_path / "hf_home_download"),
        )
    downloaded = json.loads(stdout.strip().splitlines()[-1])
    assert downloaded["class"] == "PointerGeneratorForConditionalGeneration"
    assert [sorted(item) for item in downloaded["out"]] == [["translation_text"], ["translation_text"]]
    storage = HubStorage(tmp_path / "hub")
    files = storage.list_files("tester/tiny-pgen")
    assert {"README.md", "config.json", "model.safetensors", "tokenizer.json",
            "modeling_pointer_generator.py"} <= set(files)
    assert not any(f.startswith("checkpoint-") for f in files)
    card = storage.read_file("tester/tiny-pgen", "README.md").decode()
    assert card == (tmp_path / "out" / "README.md").read_text(encoding="utf-8")
    assert "model-index:" in card and "pointer-generator" in card and "tester/tiny-pgen" in card
