"""run_translation under torchrun with two processes (DDP over gloo on CPU) trains a working model."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from test_run_translation import tiny_args

ROOT = Path(__file__).resolve().parent.parent


def test_torchrun_two_processes(tmp_path):
    output_dir = tmp_path / "ddp"
    command = [
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
        str(ROOT / "training" / "run_translation.py"),
        *tiny_args(output_dir, "--copy_mechanism", "--use_cpu", steps=12, save_steps=12),
        # 3 per rank: the last global batch is partial, so the sharded evaluation pads with duplicates.
        "--per_device_eval_batch_size", "3",
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    result = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    log = result.stdout + result.stderr
    assert result.returncode == 0, log[-4000:]
    results = json.loads((output_dir / "all_results.json").read_text())
    # 200 examples over two ranks of 16: 7 steps an epoch (one process would need 13), so 12 steps = 12/7 epochs.
    assert results["epoch"] == pytest.approx(12 / 7, rel=1e-3), results["epoch"]
    assert torch.isfinite(torch.tensor(results["train_loss"]))
    assert results["eval_samples"] == 16 and results["predict_samples"] == 24
    lines = (output_dir / "generated_predictions.txt").read_text().splitlines()
    assert len(lines) == results["predict_samples"]
