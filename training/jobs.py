"""Runs of `run_translation.main` side by side, one process and one torch thread each, with progress on the console.

The main job and the tuning sweep run their systems through `run_jobs`: each job is `(name, run_translation argv,
name of the job it needs first or None)`, or with a fourth item, the module whose `main(argv)` runs instead
(`"training.backtranslate"`, say); a job starts once what it needs has finished, `workers` at a time. Each
child writes its own log (`<out>/<name>.log`); the console gets the steps of every running job and an estimate of
the time left.
"""

from __future__ import annotations

import math
import os
import re
import sys
import time
from pathlib import Path

__all__ = ["run_jobs", "clock", "trainer_progress"]


def _run_child(argv: list[str], log_path: str, queue, entry: str = "training.run_translation") -> None:
    """`<entry>.main(argv)` (run_translation's by default) in a child process with one torch thread, its output going
    to log_path."""
    import importlib
    import traceback

    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    sys.stdout = open(1, "w", buffering=1, encoding="utf-8", closefd=False)
    sys.stderr = open(2, "w", buffering=1, encoding="utf-8", closefd=False)
    try:
        import torch

        torch.set_num_threads(1)
        results = dict(importlib.import_module(entry).main(argv) or {})
        results.pop("settings", None)
        # This process' own CPU time: what the job costs on a machine of its own, however many shared this one.
        results["cpu_seconds"] = round(time.process_time(), 1)
        queue.put(("ok", results))
    except BaseException:  # noqa: BLE001 - reported to the parent, which raises
        queue.put(("error", traceback.format_exc()))
        raise


# The Trainer's bar: unlabelled (not "Writing model shards: ... 1/1") and in it/s (not datasets' examples/s).
_STEP = re.compile(r"(?:^|\r) *\d+%\|[^|\r\n]*\| *(\d+)/(\d+) \[[^\]]*(?:it/s|s/it)\]", re.MULTILINE)


def trainer_progress(log_path: Path) -> tuple[int, int] | None:
    """The latest `step/total` of the Trainer's training progress bar in a child's log. Evaluations during training
    print bars of their own (`2/17` batches) between the training bar's updates: the bar with the largest total
    is the training one."""
    try:
        with open(log_path, "rb") as handle:
            handle.seek(max(0, os.path.getsize(log_path) - 65536))
            tail = handle.read().decode("utf-8", "replace")
    except OSError:
        return None
    found = [(int(step), int(total)) for step, total in _STEP.findall(tail)]
    if not found:
        return None
    longest = max(total for _, total in found)
    return [bar for bar in found if bar[1] == longest][-1]


def run_jobs(jobs: list[tuple], out: Path, workers: int, started: float, done: dict | None = None) -> tuple[dict, dict]:
    """Run `(name, argv, name of the job it needs first or None[, entry module])` jobs, `workers` at a time, in
    order as their needs are met, printing progress; returns their results (with those of `done`, finished before)
    and wall times. The entry module defaults to `training.run_translation`."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    pending, running, results, walls = list(jobs), {}, dict(done or {}), {}
    last_report = 0.0
    while pending or running:
        ready = [job for job in pending if job[2] is None or job[2] in results]
        while ready and len(running) < workers:
            job = ready.pop(0)
            name, argv, entry = job[0], job[1], (job[3] if len(job) > 3 else "training.run_translation")
            pending.remove(job)
            queue = context.Queue()
            log = out / f"{name}.log"
            log.parent.mkdir(parents=True, exist_ok=True)
            process = context.Process(target=_run_child, args=(argv, str(log), queue, entry), daemon=True)
            process.start()
            running[name] = (process, queue, log, time.perf_counter())
            print(f"  started {name} (log: {log})", flush=True)
        time.sleep(2)
        for name, (process, queue, log, t0) in list(running.items()):
            if process.is_alive() and queue.empty():
                continue
            status, payload = queue.get()
            process.join()
            del running[name]
            walls[name] = round(time.perf_counter() - t0, 1)
            if status != "ok":
                for other, *_ in running.values():
                    other.terminate()
                raise RuntimeError(f"{name} failed (log: {log}):\n{payload}")
            results[name] = payload
            print(
                f"  finished {name} in {clock(walls[name])}: BLEU {payload.get('predict_bleu', float('nan')):.1f}, "
                f"chrF {payload.get('predict_chrf', float('nan')):.1f}",
                flush=True,
            )
        if running and time.perf_counter() - last_report > 30:
            last_report = time.perf_counter()
            parts, fractions = [], []
            for name, (_, _, log, t0) in running.items():
                step = trainer_progress(log)
                if step:
                    parts.append(f"{name} {step[0]}/{step[1]}")
                    fractions.append((step[0] / max(step[1], 1), time.perf_counter() - t0))
                else:
                    parts.append(f"{name} starting")
            estimate = ""
            if fractions and all(f > 0.05 for f, _ in fractions):
                left = max(elapsed * (1 - f) / f for f, elapsed in fractions)
                more = math.ceil(sum(j[2] is None for j in pending) / workers) * max(
                    elapsed / f for f, elapsed in fractions
                )
                estimate = f"; about {clock(left + more)} left in this phase"
            print(f"  [{clock(time.perf_counter() - started)}] " + ", ".join(parts) + estimate, flush=True)
    return results, walls


def clock(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 60}m{seconds % 60:02d}s"
