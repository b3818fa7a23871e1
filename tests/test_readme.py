"""The code blocks of the README and of docs/recipes.md run as printed and do what their comments say.

- Quick start: the block, verbatim, in a Python started outside the repository with PYTHONPATH empty (hf_pgen, with
  its corpus and tokenizer builder, comes from the installed package, as after the README's install line; the
  repository's training/ is not installed). It must copy the out-of-vocabulary words, keep `%(name)s` intact and
  print whole translations (not cut at 20 tokens).
- docs/recipes.md, "Pretrained checkpoints": the shared fine-tune block plus each family's block, with the Hub id
  replaced by a stand-in folder built from the same model and tokenizer classes (tests/testing_checkpoints.py) and the
  training shrunk through the block's `NUM_TRAIN_EXAMPLES, NUM_EVAL_EXAMPLES, MAX_STEPS` line.
- The README's feature sections (any checkpoint, wrap, Trainer, save, protect, glossaries, copy records, command line):
  one after another in one namespace, as a user pastes them, against the opus-mt stand-in, with the corpus and the
  training cut small; what they write goes to the temporary directory, never to the working directory. The Hub block
  runs in a fresh Python against the loopback Hub (tests/hub_server.py), on the folder the save block wrote.
- docs/recipes.md's Trainer example runs, as printed, in tests/test_trainer.py.
- Every ```python block of these pages is one of the above (`test_every_python_block_is_executed`).
"""

from __future__ import annotations

import ast
import contextlib
import io
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path
from unittest import mock

import pytest
import torch
from testing_docs import README, RECIPES_PAGE, ROOT, doc_section, section_block

# Pages with ```python blocks, all of which some test executes; and the pages that must have none (prose and bash).
CODE_PAGES = (README, RECIPES_PAGE)
PROSE_PAGES = (
    ROOT / "docs" / "usage.md",
    ROOT / "docs" / "main-job" / "README.md",
    ROOT / "docs" / "summarise" / "README.md",
    ROOT / "training" / "README.md",
    ROOT / "benchmarks" / "README.md",
    ROOT / "experiments" / "README.md",
)

# The quick start's promises (its `sources` and the comment under them).
QUICK_START_COPIES = ("Nakamura-Øresund", "Zyxwvut", "Øresund")
PLACEHOLDERS = ("%(name)s", "%(filename)s")

# The recipes: marker -> (Hub id in the block, stand-in builder name in testing_checkpoints).
RECIPES = ("opus-mt", "t5-small", "bart-base", "mbart-50")
PROBE = "Delete 🗑️ {count} files from Café Øresund"
SIZES = "NUM_TRAIN_EXAMPLES, NUM_EVAL_EXAMPLES, MAX_STEPS"
TEST_SIZES = f"{SIZES} = 32, 16, 4"
# What each stand-in's vocabulary lacks in PROBE (T5 and the Marian stand-in have no braces; BART is byte-level).
EXPECTED_OOV = {
    "opus-mt": [["🗑️", "{", "}", "é", "Ø"]],
    "t5-small": [["🗑️", "{", "}", "é", "Ø"]],
    "bart-base": [[]],
    "mbart-50": [["🗑️", "é", "Ø"]],
}
BASE_MODEL_TYPE = {"opus-mt": "marian", "t5-small": "t5", "bart-base": "bart", "mbart-50": "mbart"}


def readme_section(title: str) -> str:
    return doc_section(README, title)


def python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, re.S)


def recipe_block(marker: str) -> str:
    """The ```python block of docs/recipes.md's 'Pretrained checkpoints' section whose first line is
    `# recipe: <marker>`."""
    blocks = re.findall(
        r"```python\n(# recipe: (\S+)\n.*?)```", doc_section(RECIPES_PAGE, "Pretrained checkpoints"), re.S
    )
    found = [code for code, name in blocks if name == marker]
    assert len(found) == 1, (
        f"expected one '# recipe: {marker}' block, found {len(found)} (markers: {[n for _, n in blocks]})"
    )
    return found[0]


# ---------------------------------------------------------------------------------------------------------------------
# Quick start
# ---------------------------------------------------------------------------------------------------------------------


def _outside_env(tmp_path: Path) -> dict[str, str]:
    """A user's shell: no PYTHONPATH (only the installed package), offline, its own HOME and temp folder."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": "",
        "HOME": str(tmp_path / "home"),
        "TMPDIR": str(tmp_path / "tmp"),
        "HF_HUB_OFFLINE": "1",
        "OMP_NUM_THREADS": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }
    for name in ("home", "tmp", "cwd"):
        (tmp_path / name).mkdir()
    return env


def test_quick_start_runs_outside_the_repository(tmp_path):
    code = python_blocks(readme_section("Quick start"))[0]
    env, cwd = _outside_env(tmp_path), tmp_path / "cwd"

    # It imports the library only: training/ is run from the repository and is not installed.
    tree = ast.parse(code)
    imported = {
        alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names
    }
    imported |= {
        node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module
    }
    assert "training" not in imported, (
        "the quick start imports the repository's training/, which is not installed: load the corpus with "
        "hf_pgen.corpus.load_en_de_messages and train the tokenizer with hf_pgen.tokenizer_training"
    )

    # Where the library comes from when the quick start runs: the installed (editable) package of THIS checkout,
    # corpus files included; and no top-level `training` package comes with it.
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import hf_pgen.corpus; print(hf_pgen.__file__); print(hf_pgen.corpus.CORPUS_DIR); "
            "import importlib.util; print(importlib.util.find_spec('training'))",
        ],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert probe.returncode == 0, probe.stderr[-3000:]
    hf_pgen_file, corpus_dir, training_spec = probe.stdout.split("\n")[:3]
    assert Path(hf_pgen_file).resolve().is_relative_to(ROOT), (
        f"the installed hf_pgen is not this checkout's ({hf_pgen_file}): reinstall with pip install -e '.[dev]'"
    )
    assert (Path(corpus_dir) / "train.jsonl.gz").is_file(), corpus_dir
    assert training_spec == "None", (
        f"a top-level `training` package is installed ({training_spec}): the editable install predates the packaging "
        "that leaves training/ out. Reinstall: .venv/bin/pip install -e '.[dev]'"
    )

    # No trust_remote_code: hf_pgen is imported, so pipeline() serves the folder with the installed class.
    calls = [line for line in code.splitlines() if "pipeline(" in line and not line.lstrip().startswith("#")]
    assert calls and not any("trust_remote_code" in line.split("#")[0] for line in calls), calls

    result = subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    output = result.stdout
    lines = output.splitlines()

    sources = ast.literal_eval(re.search(r"^sources = (\[.*?\])$", code, re.S | re.M).group(1))
    # The pipeline's translations (the last lines): every source verbatim, i.e. copied words, placeholders intact...
    assert lines[-len(sources) :] == sources, output
    for text in (*QUICK_START_COPIES, *PLACEHOLDERS):
        assert text in output, (text, output)
    assert "%( name ) s" not in output  # the old tokenizer's decoding (no decoder)
    # ... and whole: the longest has more than generate()'s default 20 tokens (words and punctuation, at least).
    longest = max(sources, key=len)
    assert len(re.findall(r"\w+|[^\w\s]", longest)) > 20 and longest in lines

    # The model went to a temporary folder, not to the working directory.
    assert not any(cwd.iterdir()), list(cwd.iterdir())
    assert list((tmp_path / "tmp").glob("*/config.json")), "no saved model folder under TMPDIR"


# ---------------------------------------------------------------------------------------------------------------------
# Pretrained checkpoints: recipes against offline stand-ins
# ---------------------------------------------------------------------------------------------------------------------


pytestmark = [pytest.mark.usefixtures("one_torch_thread"), pytest.mark.slow]


@pytest.fixture(scope="session")
def stand_in(tmp_path_factory):
    from testing_checkpoints import build_checkpoint

    built: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in built:
            built[name] = build_checkpoint(name, tmp_path_factory.mktemp(f"stand-in-{name}"))
        return built[name]

    return get


def test_every_recipe_block_names_its_checkpoint_and_the_shared_sizes():
    from testing_checkpoints import CHECKPOINTS

    assert set(CHECKPOINTS) == set(RECIPES)
    shared = recipe_block("fine-tune")
    assert len(re.findall(rf"^{SIZES} = .+$", shared, re.M)) == 1, f"the shared block must set `{SIZES} = ...` once"
    for name in RECIPES:
        code = recipe_block(name)
        hub_id = CHECKPOINTS[name][0]
        assert f'"{hub_id}"' in code, f"recipe {name} does not load {hub_id!r}"
        assert PROBE in code and "fine_tune(model, processor" in code and 'pipeline("translation' in code


def _metrics_line(output: str) -> dict:
    line = next(line for line in output.splitlines() if line.startswith("{'eval_loss'"))
    return ast.literal_eval(line)


@pytest.mark.parametrize("name", RECIPES)
def test_recipe_runs_against_a_stand_in(name, stand_in, tmp_path, monkeypatch, capsys):
    from testing_checkpoints import CHECKPOINTS
    from transformers import AutoConfig

    from hf_pgen import PointerGeneratorForConditionalGeneration, PointerGeneratorText2TextPipeline

    hub_id = CHECKPOINTS[name][0]
    folder = stand_in(name)
    code = recipe_block("fine-tune") + "\n" + recipe_block(name)
    code = re.sub(rf"^{SIZES} = .+$", TEST_SIZES, code, flags=re.M)
    code = code.replace(f'"{hub_id}"', repr(str(folder)))
    assert f'"{hub_id}"' not in code  # nothing reaches for the Hub
    monkeypatch.chdir(tmp_path)  # the recipe writes its output folder into the working directory
    namespace: dict = {"__name__": "__readme__"}
    exec(compile(code, f"docs/recipes.md recipe {name}", "exec"), namespace)
    output = capsys.readouterr().out
    lines = output.splitlines()
    tokenizer, processor, batch = namespace["tokenizer"], namespace["processor"], namespace["batch"]
    base_width = AutoConfig.from_pretrained(folder).vocab_size

    # The processor takes the model's width (T5: past the tokenizer), and marks what the vocabulary lacks.
    assert processor.vocab_size == base_width >= len(tokenizer)
    assert batch["oov_words"] == EXPECTED_OOV[name] and str(batch["oov_words"]) in lines
    plain = tokenizer.batch_decode(batch["input_ids"], skip_special_tokens=True)
    assert str(plain) in lines
    if EXPECTED_OOV[name] == [[]]:  # byte-level: exact without copying, nothing to recover
        assert plain == [PROBE]
    else:  # without copying the characters vanish; a perfect copy gives them back byte for byte
        assert not any(slot in plain[0] for slot in EXPECTED_OOV[name][0])
        assert str([PROBE]) in lines

    # Trained and evaluated with the copies decoded; label smoothing went to the model, so the loss is finite.
    metrics = _metrics_line(output)
    for key in ("eval_loss", "eval_bleu", "eval_chrf", "eval_placeholder_preservation", "eval_gen_len"):
        assert key in metrics and math.isfinite(metrics[key]), (key, metrics)

    # Saved as one pointer-generator folder (weights, config with the base's, tokenizer, code), served by pipeline().
    (saved,) = [path for path in tmp_path.iterdir() if path.is_dir()]
    config = json.loads((saved / "config.json").read_text())
    assert config["model_type"] == "pointer_generator"
    assert config["base_config"]["model_type"] == BASE_MODEL_TYPE[name]
    assert (saved / "modeling_pointer_generator.py").exists() and (saved / "tokenizer_config.json").exists()
    translator = namespace["translator"]
    assert isinstance(translator, PointerGeneratorText2TextPipeline)
    assert isinstance(translator.model, PointerGeneratorForConditionalGeneration)
    assert translator.model.config.vocab_size == base_width
    (printed,) = [ast.literal_eval(line) for line in lines if line.startswith("[{'translation_text'")]
    assert len(printed) == 1 and isinstance(printed[0]["translation_text"], str)

    if name == "t5-small":  # the pipeline adds the prefix the model was fine-tuned with
        assert translator.prefix == "translate English to German: "
        assert 'prefix="translate English to German: "' in recipe_block(name)
    if name == "mbart-50":  # en_XX before sources, de_DE before labels and as the first generated token
        en, de = tokenizer.convert_tokens_to_ids("en_XX"), tokenizer.convert_tokens_to_ids("de_DE")
        pair = processor("Open", text_target="Öffnen")
        assert pair["input_ids"][0] == en and pair["labels"][0] == de
        assert json.loads((saved / "generation_config.json").read_text())["forced_bos_token_id"] == de
        (result,) = translator(["Delete files"], return_tensors=True, num_beams=1)
        ids = torch.as_tensor(result["translation_token_ids"]).tolist()
        if ids[0] == translator.model.generation_config.decoder_start_token_id:
            ids = ids[1:]
        assert ids[0] == de, ids[:4]


# ---------------------------------------------------------------------------------------------------------------------
# The README's feature sections, one after another, against the opus-mt stand-in
# ---------------------------------------------------------------------------------------------------------------------

# The sections whose python blocks continue one another (a user pasting them in order), and the command line after.
ANY_CHECKPOINT = "Guaranteed copies with any checkpoint"
WALKTHROUGH = (
    ANY_CHECKPOINT,
    "Wrap a pretrained model",
    "Fine-tune with the Trainer",
    "Save and serve",
    "Guaranteed copies: `protect=`",
    "Glossaries: `glossary=`",
    "See what was copied",
)
HUB_SECTION = "Share on the Hub"
CLI_SECTION = "Command line"
WALKTHROUGH_HUB_ID = "Helsinki-NLP/opus-mt-en-de"
SAVED = "opus-mt-en-de-pg"  # the folder, in the temporary directory, that the save block writes and the CLI reads
# The Trainer block at test size (each must occur: a changed block must not train 500 steps here unnoticed).
TRAINER_AT_TEST_SIZE = {
    "max_steps=500": "max_steps=4",
    'corpus["validation"].select(range(200))': 'corpus["validation"].select(range(8))',
}
PLACEHOLDER_TEXT = "Delete %(count)d files from {folder}?"


@pytest.fixture(scope="module")
def walkthrough(stand_in, tmp_path_factory):
    """Run the WALKTHROUGH blocks in order in one namespace, in a fresh working directory and with a fresh temporary
    directory (what `tempfile.gettempdir()` gives the blocks); the corpus loader returns 64 training and 8 validation
    rows. Returns (namespace, stdout per section, working directory, temporary directory, what was seen right after
    a block: whether the first translator copies, what the wrapped model and its untouched base generated)."""
    import tempfile

    from datasets import DatasetDict

    import hf_pgen.corpus
    from hf_pgen import is_pointer_generator

    folder = stand_in("opus-mt")
    cwd, temporary = tmp_path_factory.mktemp("walkthrough"), tmp_path_factory.mktemp("tmpdir")
    full_corpus = hf_pgen.corpus.load_en_de_messages

    def small_corpus(split=None):
        assert split is None, "the README's Trainer block loads the whole DatasetDict"
        corpus = full_corpus()
        return DatasetDict(train=corpus["train"].select(range(64)), validation=corpus["validation"].select(range(8)))

    namespace: dict = {"__name__": "__readme__"}
    outputs: dict[str, str] = {}
    right_after_wrapping: dict = {}
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with (
            contextlib.chdir(cwd),
            mock.patch.object(hf_pgen.corpus, "load_en_de_messages", small_corpus),
            mock.patch.object(tempfile, "tempdir", str(temporary)),
        ):
            for title in WALKTHROUGH:
                code = section_block(README, title).replace(f'"{WALKTHROUGH_HUB_ID}"', repr(str(folder)))
                if title == "Fine-tune with the Trainer":
                    for printed, small in TRAINER_AT_TEST_SIZE.items():
                        assert printed in code, f"the Trainer block no longer holds {printed!r}: update the test"
                        code = code.replace(printed, small)
                assert WALKTHROUGH_HUB_ID not in code  # nothing reaches for the Hub
                stdout = io.StringIO()
                with contextlib.redirect_stdout(stdout):
                    exec(compile(code, f"README.md: {title}", "exec"), namespace)
                outputs[title] = stdout.getvalue()
                if title == ANY_CHECKPOINT:  # the claim above the block: a plain checkpoint, as it is
                    right_after_wrapping["any_checkpoint_copies"] = is_pointer_generator(namespace["translator"].model)
                if title == "Wrap a pretrained model":  # the claim under the block: it translates as the base
                    batch = namespace["batch"]
                    right_after_wrapping["oov_words"] = batch["oov_words"]
                    right_after_wrapping["model"] = namespace["ids"].tolist()
                    right_after_wrapping["base"] = (
                        namespace["base"]
                        .generate(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], num_beams=4)
                        .tolist()
                    )
    finally:
        torch.set_num_threads(threads)
    return namespace, outputs, cwd, temporary, right_after_wrapping


def _printed(output: str) -> list:
    """Every stdout line that is a Python literal, evaluated."""
    values = []
    for line in output.splitlines():
        with contextlib.suppress(ValueError, SyntaxError):
            values.append(ast.literal_eval(line))
    return values


def test_examples_write_nothing_into_the_working_directory(walkthrough):
    _, _, cwd, temporary, _ = walkthrough
    assert not any(cwd.iterdir()), list(cwd.iterdir())
    assert (temporary / SAVED / "config.json").is_file()


def test_a_plain_checkpoint_keeps_each_placeholder_exactly_once(walkthrough):
    """The stand-in is a plain Marian (no copy head, untrained): protection alone puts each placeholder in."""
    _, outputs, _, _, right_after = walkthrough
    code = section_block(README, ANY_CHECKPOINT)
    (results,) = _printed(outputs[ANY_CHECKPOINT])
    (source,) = ast.literal_eval(re.search(r"translator\((\[.*?\]), protect=", code).group(1))
    placeholders = re.findall(r"%\(\w+\)[ds]|</?b>", source)
    assert len(placeholders) == 4 and right_after["any_checkpoint_copies"] is False
    for placeholder in placeholders:
        assert results[0]["translation_text"].count(placeholder) == 1, (placeholder, results)


def test_wrap_block_marks_what_only_copying_brings_back(walkthrough, stand_in):
    from transformers import AutoConfig

    namespace, outputs, _, _, right_after_wrapping = walkthrough
    processor = namespace["processor"]
    assert processor.vocab_size == AutoConfig.from_pretrained(stand_in("opus-mt")).vocab_size
    oov, decoded = _printed(outputs["Wrap a pretrained model"])
    assert oov == right_after_wrapping["oov_words"] == EXPECTED_OOV["opus-mt"]  # the stand-in lacks 🗑️ { } é Ø
    assert isinstance(decoded, list) and len(decoded) == 1 and isinstance(decoded[0], str)
    # "right after wrapping the model translates exactly as the base"
    assert right_after_wrapping["model"] == right_after_wrapping["base"]


def test_trainer_block_trains_and_scores_with_the_copies(walkthrough):
    namespace, outputs, _, temporary, _ = walkthrough
    metrics = _metrics_line(outputs["Fine-tune with the Trainer"])
    for key in ("eval_loss", "eval_bleu", "eval_chrf", "eval_placeholder_preservation", "eval_gen_len"):
        assert key in metrics and math.isfinite(metrics[key]), (key, metrics)
    assert namespace["trainer"].state.global_step == 4
    assert namespace["folder"] == temporary / SAVED  # checkpoints under it, not in the working directory


def test_save_block_writes_a_folder_the_pipeline_serves(walkthrough):
    from hf_pgen import PointerGeneratorForConditionalGeneration, PointerGeneratorText2TextPipeline

    namespace, outputs, _, temporary, _ = walkthrough
    config = json.loads((temporary / SAVED / "config.json").read_text())
    assert config["model_type"] == "pointer_generator" and config["base_config"]["model_type"] == "marian"
    assert (temporary / SAVED / "modeling_pointer_generator.py").exists()  # the code travels with the weights
    assert (temporary / SAVED / "tokenizer_config.json").exists()
    translator = namespace["translator"]
    assert isinstance(translator, PointerGeneratorText2TextPipeline)
    assert isinstance(translator.model, PointerGeneratorForConditionalGeneration)
    (results,) = _printed(outputs["Save and serve"])
    assert len(results) == 2 and all(isinstance(result["translation_text"], str) for result in results)


def test_protect_block_keeps_each_span_exactly_as_often_as_its_source(walkthrough):
    namespace, outputs, _, _, _ = walkthrough
    texts = namespace["texts"]
    assert texts[0] == PLACEHOLDER_TEXT
    placeholders, literal, generated = _printed(outputs["Guaranteed copies: `protect=`"])
    translations = [result["translation_text"] for result in placeholders]
    for output in (translations[0], generated[0]):
        assert output.count("%(count)d") == 1 and output.count("{folder}") == 1, output
    assert literal[1]["translation_text"].count("Nakamura-Øresund") == 1, literal


def test_glossary_block_places_each_term_of_a_source_that_holds_its_source_term(walkthrough):
    namespace, outputs, _, temporary, _ = walkthrough
    texts, glossary = namespace["texts"], namespace["glossary"]
    (piped,) = _printed(outputs["Glossaries: `glossary=`"])
    assert (temporary / SAVED / "terms.tsv").read_text(encoding="utf-8") == "files\tDateien\n"
    for text, result in zip(texts, piped):
        for source, target in glossary.items():
            if re.search(r"(?<!\w)" + re.escape(source) + r"(?!\w)", text):
                assert target in result["translation_text"], (text, result)
            else:  # nothing forced where no entry applies
                assert target not in result["translation_text"], (text, result)


def test_copy_records_block(walkthrough):
    namespace, outputs, _, temporary, _ = walkthrough
    (token,) = _printed(outputs["See what was copied"])
    assert {"text", "p_gen", "copy_share", "source_span"} <= set(token)
    records = namespace["records"]
    assert len(records) == len(namespace["texts"])
    assert (temporary / SAVED / "copies.html").stat().st_size > 0 and (temporary / SAVED / "copies.png").stat().st_size


def test_hub_block_pushes_what_a_python_without_hf_pgen_loads(walkthrough, tmp_path):
    """The Hub block as printed, in a fresh Python against a loopback Hub, after loading what the save block saved;
    then a Python without hf_pgen loads the repository and translates."""
    from hub_server import HubStorage, client_env, hub_server
    from testing_utils import run_without_hf_pgen

    _, _, _, temporary, _ = walkthrough
    code = section_block(README, HUB_SECTION)
    repo = re.search(r'^repo = "([^"]+)"$', code, re.M).group(1)
    pushed = code.replace(f'"{repo}"', '"tester/opus-mt-en-de-pg"')
    script = (
        "import hf_pgen\n"
        "from transformers import AutoModelForSeq2SeqLM\n"
        f"folder = {str(temporary / SAVED)!r}\n"
        "model = AutoModelForSeq2SeqLM.from_pretrained(folder)\n"
        "processor = hf_pgen.PointerGeneratorProcessor.from_pretrained(folder)\n" + pushed
    )
    with hub_server(tmp_path / "hub") as base_url:
        result = subprocess.run(
            [sys.executable, "-c", script],
            env=client_env(base_url, tmp_path / "home-upload"),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert result.returncode == 0, result.stderr[-3000:]
        files = set(HubStorage(tmp_path / "hub").list_files("tester/opus-mt-en-de-pg"))
        assert {"config.json", "model.safetensors", "modeling_pointer_generator.py", "README.md"} <= files
        assert {"tokenizer_config.json", "source.spm", "vocab.json"} <= files, files  # the Marian tokenizer's files
        loaded = run_without_hf_pgen(
            "import json\nfrom transformers import pipeline\n"
            "translator = pipeline('translation', model='tester/opus-mt-en-de-pg', trust_remote_code=True)\n"
            "print(json.dumps(translator(['Open Nakamura now'])))",
            env=client_env(base_url, tmp_path / "home-download"),
        )
    (result,) = json.loads(loaded.strip().splitlines()[-1])
    assert isinstance(result["translation_text"], str)


def test_command_line_block(walkthrough):
    """The bash block as printed, with `hf-pgen` this checkout's command line, on the folder the save block wrote."""
    _, _, cwd, temporary, _ = walkthrough
    code = section_block(README, CLI_SECTION, "bash")
    assert f'model="${{TMPDIR:-/tmp}}/{SAVED}"' in code and code.count('hf-pgen translate "$model"') == 2
    (temporary / SAVED / "copies.html").unlink(missing_ok=True)  # the copy-records block wrote one: --explain again
    shell = f'hf-pgen() {{ {sys.executable} -m hf_pgen.cli "$@"; }}\nset -eo pipefail\n{code}'
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "HF_HUB_OFFLINE": "1",
        "OMP_NUM_THREADS": "1",
        "TMPDIR": str(temporary),
    }
    result = subprocess.run(["bash", "-c", shell], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert len(result.stdout.splitlines()) == 2  # "a line per text"
    records_file = temporary / SAVED / "records.jsonl"
    records = [json.loads(line) for line in records_file.read_text(encoding="utf-8").splitlines()]
    assert [record["source"] for record in records] == ["Open Zyxwvut now", "Delete %(name)s?"]
    assert "%(name)s" in "".join(token["text"] for token in records[1]["tokens"])  # --protect placeholders
    assert (temporary / SAVED / "copies.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")  # --explain
    assert not any(cwd.iterdir()), list(cwd.iterdir())


# ---------------------------------------------------------------------------------------------------------------------
# Every python block is executed by one of the tests above
# ---------------------------------------------------------------------------------------------------------------------


def executed_blocks() -> list[tuple[str, str]]:
    """(where, code) of every block these tests (and test_trainer's docs/recipes.md example) execute."""
    blocks = [("README.md: Quick start", python_blocks(readme_section("Quick start"))[0])]
    blocks += [(f"README.md: {title}", section_block(README, title)) for title in WALKTHROUGH]
    blocks.append((f"README.md: {HUB_SECTION}", section_block(README, HUB_SECTION)))
    blocks.append((f"README.md: {CLI_SECTION} (bash)", section_block(README, CLI_SECTION, "bash")))
    blocks += [(f"docs/recipes.md: recipe {name}", recipe_block(name)) for name in ("fine-tune", *RECIPES)]
    blocks.append(
        (
            "docs/recipes.md: Fine-tune with the Trainer (tests/test_trainer.py)",
            section_block(RECIPES_PAGE, "Fine-tune with the Trainer"),
        )
    )
    return blocks


def test_every_python_block_is_executed():
    executed = {code for _, code in executed_blocks()}
    for page in CODE_PAGES:
        missed = [code[:80] for code in python_blocks(page.read_text(encoding="utf-8")) if code not in executed]
        assert not missed, f"{page.relative_to(ROOT)} has python blocks no test executes: {missed}"
    for page in PROSE_PAGES:
        assert not python_blocks(page.read_text(encoding="utf-8")), (
            f"{page.relative_to(ROOT)} has a python block: execute it here (CODE_PAGES) or move it to a tested page"
        )
    assert len(executed_blocks()) == len(executed) == 16, [where for where, _ in executed_blocks()]
