"""Upload a pointer-generator to a Hub endpoint on loopback, then load and translate from it elsewhere.

The download side runs in a fresh interpreter without hf_pgen and with an empty HF_HOME, so the model, its code,
the pipeline and the tokenizer all come through huggingface_hub's real download path.
"""

import json
import re
import subprocess
import sys

import pytest
from hub_server import HubStorage, client_env, hub_server
from huggingface_hub import ModelCard
from testing_utils import run_without_hf_pgen

pytestmark = pytest.mark.slow  # a subprocess pushes to a loopback Hub, another loads from it


def test_push_to_hub_then_translate_on_another_machine(trained_copier, tmp_path):
    model, tokenizer, _ = trained_copier
    folder = tmp_path / "local"
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    with hub_server(tmp_path / "hub") as base_url:
        push = f"""
import hf_pgen
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer
model = AutoModelForSeq2SeqLM.from_pretrained({str(folder)!r})
model.push_to_hub("tester/copier")
AutoTokenizer.from_pretrained({str(folder)!r}).push_to_hub("tester/copier")
"""
        env = client_env(base_url, tmp_path / "home-upload")
        result = subprocess.run([sys.executable, "-c", push], env=env, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr[-3000:]
        storage = HubStorage(tmp_path / "hub")
        files = set(storage.list_files("tester/copier"))
        assert {
            "config.json",
            "model.safetensors",
            "modeling_pointer_generator.py",
            "pipeline_pointer_generator.py",
            "tokenization_encode_pointer_generator.py",
            "tokenization_decode_pointer_generator.py",
            "tokenizer.json",
            "README.md",
        } <= files
        # model.push_to_hub uploads a real card, not Transformers' "[More Information Needed]" template.
        card = ModelCard(storage.read_file("tester/copier", "README.md").decode())
        # The base names no task in task_specific_params, so the card serves the generic text2text task.
        assert card.data.pipeline_tag == "text2text-generation" and card.data.library_name == "transformers"
        assert {"hf_pgen", "pointer-generator"} <= set(card.data.tags)
        assert "More Information Needed" not in card.text
        snippet = re.search(r"```python\n(.*?)```", card.text, re.S).group(1)  # the one for a Python without hf_pgen
        assert "trust_remote_code=True" in snippet

        stdout = run_without_hf_pgen(
            """
import json
from transformers import AutoModelForSeq2SeqLM, pipeline
model = AutoModelForSeq2SeqLM.from_pretrained("tester/copier", trust_remote_code=True)
translator = pipeline("translation", model="tester/copier", trust_remote_code=True)
print(json.dumps({"class": type(model).__name__, "out": translator(["Open Nakamura now", "Delete Zyxwvut"])}))
""",
            env=client_env(base_url, tmp_path / "home-download"),
        )
        card_output = run_without_hf_pgen(snippet, env=client_env(base_url, tmp_path / "home-card"))
    assert "Nakamura" in card_output  # the card's example copies the name
    result = json.loads(stdout.strip().splitlines()[-1])
    assert result["class"] == "PointerGeneratorForConditionalGeneration"
    assert "Nakamura" in result["out"][0]["translation_text"]
    assert "Zyxwvut" in result["out"][1]["translation_text"]
    assert any((tmp_path / "home-download").rglob("model.safetensors")), "the download went through the cache"
