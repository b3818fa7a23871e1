"""A decoding step of this checkout's pointer-generator against another revision's, and both against the base.

Whole generate() calls on a shared machine scatter by 5-20%, and a run's absolute step times move by ~15% with the
machine's state, so a change worth 0.1 ms a step cannot be read off two benchmark runs. This puts three models in
one process (the base, the copy model from `--against`'s `hf_pgen`, the copy model from the working tree; the same
config and weights) and times one forward step of each in rotation, the cache cropped back after every step, as
`benchmarks.run --only step` does for two. Run from the repository root:

    python -m benchmarks.ab_step --against HEAD                  # uncommitted changes vs the last commit
    python -m benchmarks.ab_step --against HEAD~1 --batch 16 --beams 4 --steps 200

The other revision's package is extracted with `git archive` into a temporary folder and imported under another
name (`hf_pgen` imports its own modules relatively). It also reports whether the two copy models' logits agree.
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
from pathlib import Path  # noqa: E402

import torch  # noqa: E402

from .measure_models import decoding_step_states, time_steps_in_rotation  # noqa: E402
from .workloads import bart_config, build  # noqa: E402

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
    parser.add_argument("--size", default="small", choices=["small", "medium"])
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--beams", type=int, default=1, help="rows per source, laid out as beam search lays them")
    parser.add_argument("--steps", type=int, default=400, help="measured steps per model")
    parser.add_argument("--vocab", type=int, default=32768)
    parser.add_argument("--source-length", type=int, default=256)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)

    with tempfile.TemporaryDirectory() as folder:
        other = import_revision(args.against, Path(folder))
        config = bart_config(args.size, args.vocab, args.source_length)
        models = {
            "base": build("base", config, "cpu").eval(),
            args.against: build("pg", config, "cpu", wrapper=other.PointerGeneratorForConditionalGeneration).eval(),
            "working tree": build("pg", config, "cpu").eval(),
        }
        # A mid-generation step, as the step section measures.
        states, next_token = decoding_step_states(
            models, config, args.batch, args.beams, args.source_length, "cpu", warm_steps=16
        )
        with torch.no_grad():
            last_logits = {name: m(**inputs, decoder_input_ids=next_token, use_cache=True, cache=cache).logits
                           for name, (m, inputs, cache) in states.items()}
        for _, _, cache in states.values():
            cache.crop(-1)
        times = time_steps_in_rotation(states, next_token, args.steps, "cpu")

    copy_models = [name for name in models if name != "base"]
    a, b = (last_logits[name] for name in copy_models)
    finite = torch.isfinite(a)
    agree = torch.equal(torch.isfinite(b), finite)
    difference = (a[finite] - b[finite]).abs().max().item() if agree else float("inf")
    base = statistics.median(times["base"])
    result = {"rows": f"{args.batch} x {args.beams}", "max_logit_difference": difference, "steps_ms": {}}
    print(f"{args.size}, batch {args.batch} x {args.beams} rows per source, {args.steps} steps each (median):")
    for name, values in times.items():
        median = statistics.median(values)
        result["steps_ms"][name] = median * 1e3
        extra = "" if name == "base" else f"   extra {(median - base) * 1e3:.3f} ms"
        print(f"  {name:>14}: {median * 1e3:8.3f} ms{extra}")
    print(f"  the copy models' log-probabilities differ by at most {difference:.3g}")
    return result


if __name__ == "__main__":
    main()
