"""The measuring instruments: single-call timers, the interleaved A/B runner, statistics, peak memory, the machine.

Two ways to time, for two questions:

* `time_call` / `time_fresh` (`torch.utils.benchmark.Timer`): how long one call of a function takes (the mixture
  functions, the loop reference). Each function is measured on its own.
* `interleaved`: how two variants of the same model step compare (pointer-generator vs base, an option on vs off).
  Repeat i runs A then B, repeat i + 1 B then A (ABBA), so drift and the neighbours' load hit both alike, and the
  ratio of the two is taken repeat by repeat (`paired_ratio`).
"""

from __future__ import annotations

import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import transformers
from torch.utils.benchmark import Measurement, Timer

import hf_pgen

__all__ = [
    "MEMORY_METHOD",
    "PeakMemory",
    "interleaved",
    "interleaved_parts",
    "log",
    "machine",
    "paired_ratio",
    "speedup",
    "summary",
    "sync",
    "time_call",
    "time_fresh",
]


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


# ---------------------------------------------------------------------------------------------------------------------
# Statistics
# ---------------------------------------------------------------------------------------------------------------------


def summary(values: list[float]) -> dict:
    """Median, quartiles (inclusive method), extremes and count of raw values (seconds, rates or ratios)."""
    values = sorted(values)
    if len(values) >= 2:
        q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
    else:
        q1 = q3 = values[0]
    return {
        "median": statistics.median(values),
        "q1": q1,
        "q3": q3,
        "min": values[0],
        "max": values[-1],
        "n": len(values),
    }


def paired_ratio(numerators: list[float], denominators: list[float]) -> dict:
    """Per-repeat ratios (repeat i of one variant against repeat i of the other, measured back to back)."""
    return summary([a / b for a, b in zip(numerators, denominators)])


def speedup(slow: dict, fast: dict) -> dict:
    """slow / fast for two independently timed functions (`summary` dicts of seconds): the ratio of the medians,
    with the range the two interquartile ranges allow ([slow Q1 / fast Q3, slow Q3 / fast Q1])."""
    return {"median": slow["median"] / fast["median"], "q1": slow["q1"] / fast["q3"], "q3": slow["q3"] / fast["q1"]}


# ---------------------------------------------------------------------------------------------------------------------
# Timers
# ---------------------------------------------------------------------------------------------------------------------


def _timer(stmt: str, setup: str = "pass", **names: Any) -> Timer:
    # Timer runs with one thread unless told otherwise: keep the process's setting (--threads).
    return Timer(stmt=stmt, setup=setup, globals=names, num_threads=torch.get_num_threads())


def _measured(measurement: Measurement) -> dict:
    return summary(measurement.times) | {"calls_per_measurement": measurement.number_per_run}


def time_call(fn: Callable[[], Any], min_run_time: float) -> dict:
    """Seconds per call of `fn()`: `Timer.blocked_autorange` (blocks of calls, at least `min_run_time` in all).

    The Timer synchronises CUDA around each block. Returns `summary` of the per-call times of the blocks, plus
    `calls_per_measurement`.
    """
    return _measured(_timer("fn()", fn=fn).blocked_autorange(min_run_time=min_run_time))


def time_fresh(fn: Callable[[Any], Any], make_input: Callable[[], Any], min_run_time: float) -> dict:
    """Seconds per call of `fn(make_input())`, `make_input` untimed: for a function that consumes its input (works in
    place), so that every timed call gets a fresh one.

    `Timer.timeit(1)` runs its setup before its one timed call (and two untimed warm-up calls on one input); repeated
    until `min_run_time` of timed calls, at least 5 times and at most 100. `blocked_autorange` would time a whole
    block of calls on one setup's input.
    """
    timer = _timer("fn(argument)", "argument = make_input()", fn=fn, make_input=make_input)
    measurements = []
    while len(measurements) < 5 or (
        sum(m.raw_times[0] for m in measurements) < min_run_time and len(measurements) < 100
    ):
        measurements.append(timer.timeit(1))
    return _measured(Measurement.merge(measurements)[0])


def interleaved(
    calls: dict[str, Callable[[], Any]],
    repeats: int,
    warmup: int,
    device: str,
    check: Callable[[str, Any], None] | None = None,
) -> dict[str, list[float]]:
    """Wall seconds of each call, `warmup` + `repeats` rounds, the order rotating every round (ABBA for two).

    `check(name, result)` runs untimed after each call (e.g. that a generation has the expected length). Returns the
    `repeats` measured times of each name, in round order, so that `paired_ratio` can pair them.
    """
    names = list(calls)
    times = {name: [] for name in names}
    for r in range(warmup + repeats):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            sync(device)
            start = time.perf_counter()
            result = calls[name]()
            sync(device)
            elapsed = time.perf_counter() - start
            if check is not None:
                check(name, result)
            if r >= warmup:
                times[name].append(elapsed)
            del result
    return times


def interleaved_parts(
    calls: dict[str, Callable[[int], Any]],
    parts: int,
    repeats: int,
    device: str,
    check: Callable[[str, int, Any], None] | None = None,
    setup: Callable[[int], None] | None = None,
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """`interleaved` for work that comes in parts (a pass over many batches): one repeat = `calls[name](i)` for every
    part i of every name, and the names alternate *part by part* (repeat r, part i: the order rotated by r + i), so
    each pair is measured seconds apart, not a whole pass apart, and the neighbours' load drifts less between them.

    `check(name, i, result)` runs untimed after each call, `setup(r)` untimed before repeat r. Returns, per name,
    the `repeats` summed wall seconds and summed CPU seconds of this process (`time.process_time`: what the work
    itself took, less sensitive to other processes on a shared machine; the same as wall time with one busy thread
    and a core of its own), in repeat order for `paired_ratio`.
    """
    names = list(calls)
    wall = {name: [0.0] * repeats for name in names}
    cpu = {name: [0.0] * repeats for name in names}
    for r in range(repeats):
        if setup is not None:
            setup(r)
        for i in range(parts):
            k = (r + i) % len(names)
            for name in names[k:] + names[:k]:
                sync(device)
                start, start_cpu = time.perf_counter(), time.process_time()
                result = calls[name](i)
                sync(device)
                wall[name][r] += time.perf_counter() - start
                cpu[name][r] += time.process_time() - start_cpu
                if check is not None:
                    check(name, i, result)
                del result
    return wall, cpu


# ---------------------------------------------------------------------------------------------------------------------
# Memory: peak live tensor bytes inside a block
# ---------------------------------------------------------------------------------------------------------------------


class PeakMemory:
    """Peak bytes of live torch tensors allocated inside the `with` block.

    CUDA: torch.cuda.max_memory_allocated minus what was allocated before the block.
    CPU: the CPU allocator's events recorded by torch.profiler(profile_memory=True) (every allocation and free, in
    time order); the peak of their running sum. Both count the model's parameters, gradients, optimizer state and
    activations created in the block, not tensors that existed before it (e.g. the other model).
    """

    def __init__(self, device: str):
        self.device = device
        self.peak_bytes = None

    def __enter__(self):
        if self.device == "cuda":
            torch.cuda.synchronize()
            self._start = torch.cuda.memory_allocated()
            torch.cuda.reset_peak_memory_stats()
        else:
            from torch.profiler import ProfilerActivity, profile

            self._prof = profile(activities=[ProfilerActivity.CPU], profile_memory=True)
            self._prof.__enter__()
        return self

    def __exit__(self, *exc):
        if self.device == "cuda":
            torch.cuda.synchronize()
            self.peak_bytes = torch.cuda.max_memory_allocated() - self._start
            return False
        self._prof.__exit__(*exc)
        events = [
            (e.start_ns(), e.nbytes())
            for e in self._prof.profiler.kineto_results.events()
            if e.name() == "[memory]" and str(e.device_type()).endswith("CPU")
        ]
        events.sort()
        live = peak = 0
        for _, nbytes in events:
            live += nbytes
            peak = max(peak, live)
        self.peak_bytes = peak
        del self._prof
        return False


MEMORY_METHOD = {
    "cpu": "peak of live torch tensor bytes: running sum of the CPU allocator's allocation/free events recorded by "
    "torch.profiler(profile_memory=True), from model construction through the warm-up steps (parameters, "
    "gradients, AdamW state, activations); the CPU analogue of torch.cuda.max_memory_allocated",
    "cuda": "torch.cuda.max_memory_allocated over model construction and the warm-up steps, minus what was allocated "
    "before (parameters, gradients, AdamW state, activations)",
}


# ---------------------------------------------------------------------------------------------------------------------
# The machine
# ---------------------------------------------------------------------------------------------------------------------


def machine(device: str) -> dict:
    """What the numbers were measured on: CPU, cores, memory, thread count, library versions, load."""
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        cpu = platform.processor() or "unknown"
    try:
        memory_gib = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError):
        memory_gib = None
    info = {
        "cpu": cpu,
        "logical_cores": os.cpu_count(),
        "cores_available": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "memory_gib": memory_gib,
        "torch_threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "hf_pgen": hf_pgen.__version__,
        "python": platform.python_version(),
        "device": device,
        "load_average_at_start": os.getloadavg(),
    }
    if device == "cuda":
        info["gpu"] = torch.cuda.get_device_name()
    return info
