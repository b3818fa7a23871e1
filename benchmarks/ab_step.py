"""A decoding step of this checkout's pointer-generator against another revision's, and both against the base.

Whole generate() calls on a shared machine scatter by 5-20%, and a run's absolute step times move by ~15% with the
machine's state, so a change worth 0.1 ms a step cannot be read off two benchmark runs. This puts three models in
one process (the base, the copy model from `--against`'s `hf_pgen`, the copy model from the working tree; the same
config and weights) and times one forward step of each in rotation, the cache cropped back after every step, as
`benchmarks.run --only step` does for two. Run from the repository root:

    python -m benchmarks.ab_step --against HEAD                  # uncommitted changes vs the last commit
    python -m benchmarks.ab_step --against HEAD~1 --batch 16 --beams 4 --steps 200
    python -m benchmarks.ab_step --against HEAD --size opus-mt --rounds 4  # the size users wrap (Marian, V = 58K)

The other revision's package is extracted with `git archive` into a temporary folder and imported under another
name (`hf_pgen` imports its own modules relatively). It also reports whether the two copy models' logits agree.

Where a model sits in the build order moves its step time: with the working tree identical to HEAD, the copy model
built last read 0.36-0.57 ms faster at batch 16 (memory placement; the timing order already rotates). So the models
are built afresh for each of `--rounds` rounds, the two copy models in alternating order, and the extras are averaged
over the rounds; each round's own difference is printed too, so a bias shows as rounds that disagree in sign.

`--generate N` times whole generate() calls of exactly N new tokens instead of one step (greedy, or beam search
with --beams), for what only generate() exercises (its per-step input preparation, the first step's per-source
work); the source is encoded inside each call.
"""

from __future__ import annotations

import sys

if __package__ in (None, ""):
    sys.exit("Run from the repository root as a module: python -m benchmarks.ab_step [options]")

import argparse  # noqa: E402
import importlib  # noqa: E402
import io  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tarfile  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402

from hf_pgen import PointerGeneratorForConditionalGeneration  # noqa: E402

from .measure_models import decoding_step_states, time_steps_in_rotation  # noqa: E402
from .workloads import CHECKPOINTS, SIZES, build, make_source, model_config  # noqa: E402

_OTHER_PACKAGE = "hf_pgen_against"


def import_revision(revision: str, into: Path):
    """`hf_pgen` as of `revision`, imported as the package `hf_pgen_against`."""
    archive = subprocess.run(["git", "archive", revision, "hf_pgen"], check=True, capture_output=True).stdout
    package = into / _OTHER_PACKAGE
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        for member in tar.getmembers():
            if member.isfile():
                target = package / Path(member.name).relative_to("hf_pgen")
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(tar.extractfile(member).read())
    sys.path.insert(0, str(into))
    return importlib.import_module(_OTHER_PACKAGE)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", default="HEAD", help="git revision to compare the working tree with")
    parser.add_argument(
        "--size",
        default="small",
        choices=[*SIZES, *CHECKPOINTS],
        help="BART shapes of benchmarks.workloads.SIZES, or a checkpoint's shape (opus-mt: Helsinki-NLP/opus-mt-en-de's "
        "Marian; t5-small; bart-base; --vocab is ignored), built from a config",
    )
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--beams", type=int, default=1, help="rows per source, laid out as beam search lays them")
    parser.add_argument("--steps", type=int, default=400, help="measured steps per model")
    parser.add_argument("--vocab", type=int, default=32768)
    parser.add_argument("--source-length", type=int, default=256)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=2, help="fresh builds, the copy models' order alternating")
    parser.add_argument(
        "--generate",
        type=int,
        default=0,
        metavar="N",
        help="time generate() of N new tokens (--steps calls per model) instead of one step",
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    config = model_config(args.size, args.vocab, args.source_length)

    rounds = []  # per round: {name: median seconds}
    with tempfile.TemporaryDirectory() as folder:
        wrappers = {
            args.against: import_revision(args.against, Path(folder)).PointerGeneratorForConditionalGeneration,
            "working tree": PointerGeneratorForConditionalGeneration,  # this checkout's
        }
        for round_index in range(args.rounds):
            order = list(wrappers) if round_index % 2 == 0 else list(wrappers)[::-1]
            models = {"base": build("base", config, "cpu").eval()}
            models.update((name, build("pg", config, "cpu", wrapper=wrappers[name]).eval()) for name in order)
            if args.generate:
                times = _time_generate_in_rotation(models, config, args)
                difference = float("nan")
            else:
                # A mid-generation step, as the step section measures.
                states, next_token = decoding_step_states(
                    models, config, args.batch, args.beams, args.source_length, "cpu", warm_steps=16
                )
                if round_index == 0:
                    difference = _max_logit_difference(states, next_token, list(wrappers))
                times = time_steps_in_rotation(states, next_token, args.steps, "cpu")
                del states
            rounds.append({name: statistics.median(values) for name, values in times.items()})
            del models

    names = ["base", *wrappers]
    mean = {name: statistics.fmean(r[name] for r in rounds) for name in names}
    median_difference = statistics.median(r["working tree"] - r[args.against] for r in rounds)
    result = {
        "rows": f"{args.batch} x {args.beams}",
        "max_logit_difference": difference,
        "steps_ms": {},
        "rounds_ms": [{name: r[name] * 1e3 for name in names} for r in rounds],
    }
    what = f"generate({args.generate} new tokens) calls" if args.generate else "steps"
    print(
        f"{args.size}, batch {args.batch} x {args.beams} rows per source, {args.steps} {what} each (median), "
        f"mean of {args.rounds} rounds:"
    )
    for name in names:
        result["steps_ms"][name] = mean[name] * 1e3
        extra = "" if name == "base" else f"   extra {(mean[name] - mean['base']) * 1e3:.3f} ms"
        print(f"  {name:>14}: {mean[name] * 1e3:8.3f} ms{extra}")
    per_round = ", ".join(f"{(r['working tree'] - r[args.against]) * 1e3:+.3f}" for r in rounds)
    print(
        f"  working tree - {args.against}, per round (the working tree built last in rounds 1, 3, ...): {per_round} ms"
    )
    print(f"  working tree - {args.against}, median over rounds: {median_difference * 1e3:+.3f} ms")
    result["median_difference_ms"] = median_difference * 1e3
    print(f"  the copy models' log-probabilities differ by at most {difference:.3g}")
    return result


def _time_generate_in_rotation(models: dict, config, args) -> dict:
    """generate() of exactly `args.generate` new tokens by each model in turn, the order rotating: {name: [seconds]}
    after 2 warm-up rounds."""
    input_ids, extended = make_source(args.batch, args.source_length, config.vocab_size, seed=2)
    source = {"input_ids": input_ids, "attention_mask": torch.ones_like(input_ids)}
    settings = dict(
        max_new_tokens=args.generate,
        min_new_tokens=args.generate,
        num_beams=args.beams,
        do_sample=False,
        use_cache=True,
    )
    names = list(models)
    times = {name: [] for name in names}
    with torch.no_grad():
        for r in range(args.steps + 2):
            shift = r % len(names)
            for name in names[shift:] + names[:shift]:
                extra = {} if name == "base" else {"extended_input_ids": extended}
                start = time.perf_counter()
                models[name].generate(**source, **extra, **settings)
                if r >= 2:
                    times[name].append(time.perf_counter() - start)
    return times


def _max_logit_difference(states: dict, next_token: torch.Tensor, copy_models: list[str]) -> float:
    """Largest difference between the two copy models' log-probabilities at the same step (inf if -inf differs)."""
    logits = []
    with torch.no_grad():
        for name in copy_models:
            model, inputs, cache = states[name]
            logits.append(model(**inputs, decoder_input_ids=next_token, use_cache=True, cache=cache).logits)
            cache.crop(-1)
    a, b = logits
    finite = torch.isfinite(a)
    if not torch.equal(torch.isfinite(b), finite):
        return float("inf")
    return (a[finite] - b[finite]).abs().max().item()


if __name__ == "__main__":
    main()
