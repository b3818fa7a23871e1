"""training/backtranslate.py: a reverse model's translations of monolingual text become training pairs that
run_translation reads, tagged when asked, with skipped texts counted; sampling is reproducible by its seed."""

import gzip
import json

import pytest
from testing_utils import corpus_pairs, tiny_base

from hf_pgen import PointerGeneratorForConditionalGeneration
from hf_pgen.tokenizer_training import train_shared_tokenizer
from training import backtranslate
from training.data.files import read_translation_file

pytestmark = pytest.mark.usefixtures("one_torch_thread")

PAIRS = corpus_pairs("train", limit=400)


@pytest.fixture(scope="module", params=["plain", "pointer-generator"])
def reverse_model(request, tmp_path_factory):
    """A tiny untrained de->en model folder (random weights translate into something: enough for the plumbing)."""
    tokenizer = train_shared_tokenizer([de for _, de in PAIRS] + [en for en, _ in PAIRS], "unigram", vocab_size=300)
    model = tiny_base(
        "bart", tokenizer=tokenizer, d_model=16, layers=1, heads=2, generation={"max_length": 12, "num_beams": 1}
    )
    if request.param == "pointer-generator":
        model = PointerGeneratorForConditionalGeneration.from_base(model, unk_token_id=tokenizer.unk_token_id)
    folder = tmp_path_factory.mktemp(request.param)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def _write_input(path, texts):
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        for text in texts:
            handle.write(json.dumps({"translation": {"de": text, "en": "ignored"}}) + "\n")


@pytest.mark.slow
def test_backtranslated_pairs_are_training_data(reverse_model, tmp_path):
    texts = [de for _, de in PAIRS[:20]] + ["", "Wort " * 300]  # an empty text and one too long for 128 tokens
    source = tmp_path / "mono.jsonl.gz"
    _write_input(source, texts)
    out = tmp_path / "bt.jsonl"
    stats = backtranslate.main(
        [
            "--model_name_or_path",
            str(reverse_model),
            "--input",
            str(source),
            "--output",
            str(out),
            "--sampling",
            "--tag",
            "<BT>",
            "--max_length",
            "12",
            "--batch_size",
            "8",
        ]
    )
    assert stats["texts"] == 22 and stats["skipped_empty"] == 1 and stats["skipped_too_long"] == 1
    assert stats["written"] + stats["empty_translations"] == 20 and stats["written"] > 0
    records = [json.loads(line)["translation"] for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(records) == stats["written"]
    assert all(r["en"].startswith("<BT> ") and len(r["en"]) > len("<BT> ") for r in records)
    originals = [r["de"] for r in records]
    assert originals == [t for t in texts[:20] if t in originals]  # the German side as it was, in order
    assert json.loads((tmp_path / "bt.jsonl.stats.json").read_text())["method"].startswith("sampling")
    # run_translation reads it as a training file, the synthetic side as the English source
    sources, targets, counts = read_translation_file(str(out), "en", "de")
    assert sources == [r["en"] for r in records] and targets == originals
    assert all(not value for key, value in counts.items() if key != "pairs")  # nothing skipped

    again = tmp_path / "again.jsonl"
    common = ["--model_name_or_path", str(reverse_model), "--input", str(source), "--max_length", "12"]
    backtranslate.main([*common, "--output", str(again), "--sampling", "--tag", "<BT>", "--batch_size", "8"])
    assert again.read_text() == out.read_text()  # the same seed draws the same samples
    beam = tmp_path / "beam.jsonl"
    stats = backtranslate.main([*common, "--output", str(beam), "--num_beams", "2"])
    assert stats["method"] == "beam search (2 beams)"
    assert not any(json.loads(line)["translation"]["en"].startswith("<BT>") for line in beam.read_text().splitlines())


@pytest.mark.slow
def test_each_text_gets_its_own_translation_back_in_order(reverse_model):
    """Texts are translated longest first in chunks (less padding); each output must still be its own text's."""
    from transformers import pipeline

    texts = [de for _, de in PAIRS[:20]]  # more than one chunk of 16 at batch size 1
    translator = pipeline("translation", model=str(reverse_model))
    alone = [translator(text, max_length=12)[0]["translation_text"] for text in texts]
    assert len(set(alone)) > len(texts) // 2  # distinct enough that a mix-up would show
    assert backtranslate.backtranslate(translator, texts, max_length=12, batch_size=1) == alone


def test_a_plain_text_file_is_read_line_by_line(tmp_path):
    path = tmp_path / "mono.txt"
    path.write_text("Datei öffnen\n\nSpeichern\n", encoding="utf-8")
    assert list(backtranslate.read_monolingual(path, "de")) == ["Datei öffnen", "", "Speichern"]


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("mono.csv", "de\nx\n", "must be .txt"),
        ("mono.jsonl", '{"de": "x"}\nnot json\n', r"mono.jsonl, line 2 is not JSON"),
        ("mono.jsonl", '{"fr": "x"}\n', r"line 1 has no 'de' text .* pass --source_lang"),
    ],
)
def test_bad_input_is_named(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        list(backtranslate.read_monolingual(path, "de"))


def test_options_that_cannot_work_are_refused_before_any_work(tmp_path):
    args = ["--model_name_or_path", str(tmp_path), "--input", "x.txt", "--output", str(tmp_path / "o.jsonl")]
    with pytest.raises(SystemExit, match="not a model folder"):
        backtranslate.main(args)
    with pytest.raises(SystemExit):
        backtranslate.main([*args, "--sampling", "--num_beams", "4"])
    with pytest.raises(SystemExit):
        backtranslate.main([*args, "--tag", " "])
