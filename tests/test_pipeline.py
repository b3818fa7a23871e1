import json
import logging

import pytest
import torch
from conftest import run_without_hf_pgen, tiny_base, word_level_tokenizer, corpus_texts

from hf_pgen import PointerGeneratorForConditionalGeneration, PointerGeneratorText2TextPipeline

NAMES = ["Open Nakamura now", "Delete Zyxwvut and Qwerfdsa", "Close the file"]


@pytest.fixture(scope="module")
def saved_copier(trained_copier, tmp_path_factory):
    model, tokenizer, _ = trained_copier
    folder = tmp_path_factory.mktemp("copier")
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def test_in_memory_pipeline_copies_each_inputs_own_words(trained_copier):
    model, tokenizer, _ = trained_copier
    pipe = PointerGeneratorText2TextPipeline(model=model, tokenizer=tokenizer, task="translation")
    one_by_one = [pipe(text)["translation_text"] for text in NAMES]
    batched = [out["translation_text"] for out in pipe(NAMES, batch_size=3, num_beams=3)]
    assert "Nakamura" in batched[0] and "Zyxwvut" in batched[1] and "Qwerfdsa" in batched[1]
    assert "Nakamura" not in batched[1] + batched[2] and "Zyxwvut" not in batched[0] + batched[2]
    assert "<unk>" not in " ".join(batched)
    assert one_by_one == [out["translation_text"] for out in pipe(NAMES, batch_size=2)]
    several = pipe(NAMES[0], num_beams=3, num_return_sequences=2)
    assert len(several) == 2 and all("translation_text" in item for item in several)


def test_saved_folder_serves_all_three_tasks_without_hf_pgen(trained_copier, saved_copier):
    model, tokenizer, _ = trained_copier
    config = json.loads((saved_copier / "config.json").read_text())
    assert set(config["custom_pipelines"]) == {"translation", "summarization", "text2text-generation"}
    assert {"pipeline_pointer_generator.py", "tokenization_pointer_generator.py", "modeling_pointer_generator.py"} <= {
        p.name for p in saved_copier.iterdir()
    }
    expected = PointerGeneratorText2TextPipeline(model=model, tokenizer=tokenizer)(NAMES, num_beams=2)
    stdout = run_without_hf_pgen(f"""
import json, torch
from transformers import pipeline, AutoModelForSeq2SeqLM
folder = {str(saved_copier)!r}
result = {{}}
for task in ["translation", "summarization", "text2text-generation"]:
    pipe = pipeline(task, model=folder, trust_remote_code=True)
    result[task] = pipe({NAMES!r}, num_beams=2, batch_size=2)
model = AutoModelForSeq2SeqLM.from_pretrained(folder, trust_remote_code=True)
result["class"] = type(model).__name__
ids = torch.tensor([[5, 6, 7, 2]])
result["logits_sum"] = float(model(input_ids=ids, decoder_input_ids=ids[:, :2]).logits.exp().sum())
print(json.dumps(result))
""")
    result = json.loads(stdout.strip().splitlines()[-1])
    assert result["class"] == "PointerGeneratorForConditionalGeneration"
    assert [r["translation_text"] for r in result["translation"]] == [r["translation_text"] for r in expected]
    assert [r["summary_text"] for r in result["summarization"]] == [r["translation_text"] for r in expected]
    assert [r["generated_text"] for r in result["text2text-generation"]] == [r["translation_text"] for r in expected]
    assert "Nakamura" in result["translation"][0]["translation_text"]
    with torch.no_grad():
        ids = torch.tensor([[5, 6, 7, 2]])
        ours = float(model(input_ids=ids, decoder_input_ids=ids[:, :2]).logits.exp().sum())
    assert result["logits_sum"] == pytest.approx(ours, abs=1e-5)


def test_bad_inputs_keep_every_example_in_place(trained_copier, caplog):
    model, tokenizer, _ = trained_copier
    pipe = PointerGeneratorText2TextPipeline(model=model, tokenizer=tokenizer)
    with pytest.raises(ValueError, match="Input 1 is NoneType"):
        pipe(["fine", None])
    with pytest.raises(ValueError, match="not a string"):
        pipe(42)
    inputs = ["", "   ", "Open Nakamura now", "emoji 😀 and \x07 bell", "Mischung aus Schriften 日本語 Ελληνικά"]
    outputs = pipe(inputs, batch_size=4)
    assert len(outputs) == len(inputs)
    assert outputs[0]["translation_text"] == "" and outputs[1]["translation_text"] == ""
    assert "Nakamura" in outputs[2]["translation_text"]
    assert all(isinstance(o["translation_text"], str) for o in outputs)
    with caplog.at_level(logging.WARNING):
        long_out = pipe("word " * 200)
    assert isinstance(long_out["translation_text"], str)
    assert "truncated" in caplog.text


def test_task_prefix_and_language_codes():
    tokenizer = word_level_tokenizer(corpus_texts("train", limit=200) + ["translate English to German:"], 120)
    base = tiny_base("t5", vocab_size=128)
    base.config.task_specific_params = {"translation_en_to_de": {"prefix": "translate English to German: "}}
    model = PointerGeneratorForConditionalGeneration.from_base(base, unk_token_id=tokenizer.unk_token_id).eval()
    pipe = PointerGeneratorText2TextPipeline(model=model, tokenizer=tokenizer, task="translation_en_to_de")
    with_prefix = pipe.preprocess("Save", **pipe._sanitize_parameters()[0])
    prefix_ids = tokenizer("translate English to German: Save")["input_ids"]
    assert with_prefix["input_ids"][0].tolist() == prefix_ids
    explicit = pipe.preprocess("Save", **pipe._sanitize_parameters(prefix="")[0])
    assert explicit["input_ids"][0].tolist() == tokenizer("Save")["input_ids"]
    _, generate_kwargs, _ = pipe._sanitize_parameters(tgt_lang="Save")
    assert generate_kwargs["forced_bos_token_id"] == tokenizer.convert_tokens_to_ids("Save")
    with pytest.raises(ValueError, match="tgt_lang"):
        pipe._sanitize_parameters(tgt_lang="xx_NOT_A_TOKEN")
