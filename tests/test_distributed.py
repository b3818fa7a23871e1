"""run_translation under torchrun with two processes (DDP over gloo on CPU) trains a working model, and every
prediction is decoded with its own example's OOV table although the evaluation is sharded and length-grouped."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from testing_utils import PREDICT_SAMPLES, tiny_args

ROOT = Path(__file__).resolve().parent.parent
VERBS = ["Open", "Delete", "Rename", "Move", "Copy", "Share", "Close", "Save"]
NOUNS = ["file", "folder", "page", "image", "document", "user", "group", "link"]


def name(i: int) -> str:
    """A word no other example has, so the trained tokenizer leaves it out of vocabulary."""
    letters = "bcdfghjklmnpqrstvwxz"
    return "Zq" + letters[i % 20] + letters[i // 20 % 20] + letters[i // 400 % 20]


def pairs(start: int, count: int) -> list[dict]:
    """Copy-task pairs of different lengths: "Open the file Zqbcb now now", the target equal to the source."""
    rows = []
    for i in range(start, start + count):
        text = f"{VERBS[i % 8]} the {NOUNS[i // 8 % 8]} {name(i)}" + " now" * (i % 4)
        rows.append({"translation": {"en": text, "de": text}})
    return rows


def torchrun(*args, timeout=600):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"OMP_NUM_THREADS": "1"}
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node",
        "2",
        "-m",
        "training.run_translation",
        *map(str, args),
    ]
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]


def test_torchrun_two_processes(tmp_path):
    files = {}
    for split, start, count in (("train", 0, 200), ("validation", 1000, 16), ("test", 2000, 30)):
        files[split] = tmp_path / f"{split}.jsonl"
        files[split].write_text("\n".join(json.dumps(row) for row in pairs(start, count)) + "\n")
    output_dir = tmp_path / "ddp"
    torchrun(
        *tiny_args(output_dir, "--copy_mechanism", "--use_cpu", steps=12, save_steps=12),
        "--train_file",
        files["train"],
        "--validation_file",
        files["validation"],
        "--test_file",
        files["test"],
        # 3 per rank: the last global batch is partial, so the sharded evaluation pads with duplicates; and the
        # evaluation sampler groups by length, so the examples reach the model out of order.
        "--per_device_eval_batch_size",
        "3",
        "--train_sampling_strategy",
        "group_by_length",
    )
    results = json.loads((output_dir / "all_results.json").read_text())
    # 200 examples over two ranks of 16: 7 steps an epoch (one process would need 13), so 12 steps = 12/7 epochs.
    assert results["epoch"] == pytest.approx(12 / 7, rel=1e-3), results["epoch"]
    assert torch.isfinite(torch.tensor(results["train_loss"]))
    assert results["eval_samples"] == 16 and results["predict_samples"] == PREDICT_SAMPLES
    lines = (output_dir / "generated_predictions.txt").read_text(encoding="utf-8").splitlines()
    assert len(lines) == PREDICT_SAMPLES  # each example once, the padding duplicates dropped

    # Alignment: the same model switched to copying only (force_p_gen=0: every output token is a source token),
    # predicting 23 examples in length-grouped shards of 3 (the last global batch padded with duplicates). Each
    # source has one out-of-vocabulary name of its own: decoded with another example's table, a prediction would
    # show that example's name.
    forced = tmp_path / "copy-only"
    shutil.copytree(output_dir, forced, ignore=shutil.ignore_patterns("checkpoint-*"))
    config = json.loads((forced / "config.json").read_text())
    config["force_p_gen"] = 0.0
    (forced / "config.json").write_text(json.dumps(config))
    torchrun(
        "--model_name_or_path",
        forced,
        "--test_file",
        files["test"],
        "--do_predict",
        "--predict_with_generate",
        "--max_predict_samples",
        "23",
        "--max_source_length",
        "24",
        "--max_target_length",
        "12",
        "--per_device_eval_batch_size",
        "3",
        "--train_sampling_strategy",
        "group_by_length",
        "--use_cpu",
        "--report_to",
        "none",
        "--output_dir",
        tmp_path / "predict",
    )
    lines = (tmp_path / "predict" / "generated_predictions.txt").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 23
    names = [name(2000 + i) for i in range(23)]
    copied = [{word for word in line.split() if word in names} for line in lines]
    assert sum(map(len, copied)) >= 10, lines
    for index, words in enumerate(copied):
        assert words <= {names[index]}, (index, lines[index])


pytestmark = pytest.mark.slow  # left out by `make test-fast`
