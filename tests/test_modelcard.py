"""hf_pgen.modelcard.render_model_card: Hub metadata, a model-index, usage snippets that run, limitations."""

import re
from pathlib import Path

import pytest
from huggingface_hub import ModelCard
from testing_utils import run_without_hf_pgen, tiny_base

import hf_pgen
from hf_pgen.modelcard import pipeline_task, render_model_card

ROOT = Path(__file__).resolve().parent.parent


def test_metadata_and_results(trained_copier):
    model, tokenizer, _ = trained_copier
    results = {
        "eval_bleu": 10.0,
        "eval_chrf": 20.0,
        "predict_bleu": 30.5,
        "predict_chrf": 40.25,
        "predict_oov_copy_rate": 0.9,
        "predict_loss": 1.0,
        "predict_runtime": 3.0,
        "predict_mean_p_gen": 0.75,
        "predict_samples": 24,
    }
    card = render_model_card(
        model,
        base_model="facebook/bart-base",
        tokenizer=tokenizer,
        results=results,
        task="translation_en_to_de",
        language=["en", "de"],
        repo_id="you/copier",
        license="apache-2.0",
        dataset_name="support tickets",
    )
    data = ModelCard(str(card)).data.to_dict()  # what the Hub reads back
    assert data["pipeline_tag"] == "translation" and data["library_name"] == "transformers"
    assert data["base_model"] == "facebook/bart-base" and data["language"] == ["en", "de"]
    assert {"hf_pgen", "pointer-generator", "copy-mechanism", "translation", "bart"} <= set(data["tags"])
    assert "datasets" not in data  # none named: nothing that is not a Hub dataset id
    (result,) = data["model-index"][0]["results"]
    assert result["dataset"]["split"] == "test"  # the test split's results win over validation's
    assert {m["type"]: m["value"] for m in result["metrics"]} == {"bleu": 30.5, "chrf": 40.25, "oov_copy_rate": 0.9}
    text = str(card)
    assert "## Limitations" in text and "trust_remote_code=True" in text and "| `pointer` | `'dedicated'` |" in text
    # The table has what the model-index cannot hold (mean p_gen), each metric says what it measures.
    assert "The test split of support tickets (24 examples)." in text
    assert "| sacreBLEU | 30.50 |" in text and "| Mean p_gen | 0.750 |" in text and "- **OOV copy rate**: " in text
    assert "## Training details" not in text  # only when the caller says how the model was made


def test_training_details_come_under_their_own_heading_and_plain_models_get_the_same_card():
    """One template for every card: run_translation's (with its run's details) and a plain baseline's alike."""
    details = "### Data\n\nTen pairs.\n\n### Procedure\n\n| setting | value |\n|---|---|\n| seed | 42 |"
    plain = render_model_card(tiny_base("bart"), repo_id="you/plain", training_details=details)
    text = str(plain)
    headings = [line for line in text.splitlines() if line.startswith("#")]
    assert headings == [
        "# plain",
        "## How to use",
        "## Training details",
        "### Data",
        "### Procedure",
        "## Limitations",
        "## Citation",
    ]
    assert "| seed | 42 |\n\n## Limitations" in text and "{{" not in text and "{%" not in text
    assert ModelCard(text).data.pipeline_tag == "text2text-generation"


def test_local_paths_stay_out_of_the_metadata(tmp_path):
    model = hf_pgen.PointerGeneratorForConditionalGeneration.from_base(tiny_base("bart"), unk_token_id=3)
    card = render_model_card(model, base_model=str(tmp_path), dataset=["./data", "wmt16"], repo_id="you/pg")
    data = card.data.to_dict()
    assert "base_model" not in data and data["datasets"] == ["wmt16"]
    assert f"`{tmp_path}`" in str(card)  # still said in the text


def test_pipeline_task():
    bart = tiny_base("bart")
    assert pipeline_task(bart) == "text2text-generation"
    assert pipeline_task(bart, "summarization") == "summarization"
    t5 = tiny_base("t5")
    t5.config.task_specific_params = {"summarization": {}, "translation_en_to_de": {}}
    assert pipeline_task(t5) == "text2text-generation"  # T5 names several tasks
    t5.config.task_specific_params = {"translation_en_to_de": {}}
    assert pipeline_task(t5) == "translation"
    with pytest.raises(ValueError, match="not one of"):
        pipeline_task(bart, "question-answering")


@pytest.mark.slow  # runs the card's snippets in a Python without hf_pgen
def test_usage_snippets_run(trained_copier, tmp_path):
    """The card's code runs as printed: the pipeline snippet in a Python without hf_pgen, the hf_pgen one here; and
    a plain model's card shows generate + batch_decode (Transformers 5 has no translation pipeline of its own)."""
    model, tokenizer, _ = trained_copier
    folder = tmp_path / "copier"
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    card = render_model_card(
        model, tokenizer=tokenizer, repo_id=str(folder), task="translation", example="Delete Zyxwvut now"
    )
    without, with_hf_pgen = re.findall(r"```python\n(.*?)```", str(card), re.S)[:2]
    assert "import hf_pgen" not in without and "import hf_pgen" in with_hf_pgen
    assert "Zyxwvut" in run_without_hf_pgen(without)
    printed = []
    exec(with_hf_pgen, {"print": printed.append})  # noqa: S102 - the card's own code
    assert "Zyxwvut" in printed[0][0]  # copied, and decoded with the input's table

    plain = render_model_card(tiny_base("bart"), repo_id="you/plain")
    (snippet,) = re.findall(r"```python\n(.*?)```", str(plain), re.S)[:1]
    assert "pipeline(" not in snippet and "batch_decode" in snippet
    assert "pointer-generator" not in plain.data.tags
