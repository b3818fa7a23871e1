"""Benchmark the pointer-generator against its plain base encoder-decoder, and what its generate() options cost.

One run measures, with the same config, weights and inputs for both models, interleaving them repeat by repeat (ABBA
order) so that machine noise hits both alike:

* training: one step (forward + backward + AdamW step), time and peak memory;
* generation: throughput (greedy and beam 4, batch 1 and 16, KV cache, fixed number of new tokens);
* step: one decoding step's forward (the same batches and beams), step by step, to read what the copy model adds to
  a step in milliseconds (diagnostic, no target);
* protection: generate() with protected placeholders against without, on real messages, an untrained model forced to
  a fixed length: the per-step overhead;
* protection_trained (only on request; needs a trained model: --train or --model DIR): the same comparison with a
  trained model on held-out messages, stopping by itself: time, output lengths, outputs at the length limit,
  placeholders kept and chrF, with and without (`benchmarks/protection.py`);
* copy_info: generate(output_copy_info=True) against without (measured, no target);
* copy_options (only on request): selective_read, copy_next and both against the default copy model, a training
  step and generate() (targets: training <= 1.05x, generation throughput >= 0.95x);
* mixture: the copy step (`mix_into_log_probs`) against a Python loop over (example, source position), and, as
  context, the full mixture (`extended_log_probs`, log_softmax included) and `gold_log_probs` (single-call timings);
* profile (only on request): torch.profiler op tables, written to profile.txt.

Writes `latest.json` (everything measured), `latest.md` and `latest.png` (`benchmarks/report.py`) under `--out`
(default `benchmarks/results/`). Run from the repository root:

    python -m benchmarks.run --threads 1           # CPU default grid (small size; ~15 minutes on 2 busy cores)
    python -m benchmarks.run --quick               # smoke run of every section (~2-3 min), to benchmarks/results/quick/
    python -m benchmarks.run --sizes small,medium  # the full 16-configuration training grid (long on CPU)
    python -m benchmarks.run --device cuda         # GPU: full grid by default
    python -m benchmarks.run --only protection,copy_info --quick
    python -m benchmarks.run --only protection_trained --train --threads 1   # trains its model once (~6-9 min)
"""

from __future__ import annotations

import os
import sys

if __package__ in (None, ""):
    sys.exit("Run the benchmarks from the repository root as a module: python -m benchmarks.run [options]")

import argparse  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
warnings.filterwarnings("ignore")

import torch  # noqa: E402
import transformers  # noqa: E402

from .harness import MEMORY_METHOD, log, machine  # noqa: E402
from .measure_mixture import bench_mixture  # noqa: E402
from .measure_models import bench_decoding_step, bench_generation, bench_training  # noqa: E402
from .measure_options import bench_copy_info, bench_copy_options, bench_protection  # noqa: E402
from .profiles import bench_profile  # noqa: E402
from .protection import DEFAULT_STEPS, bench_glossary_trained, bench_protection_trained  # noqa: E402
from .report import write  # noqa: E402
from .workloads import CHECKPOINTS, SIZES, model_config  # noqa: E402

transformers.logging.set_verbosity_error()

# Generation >= 0.95x the base (>= 0.97x at the checkpoints' shapes: opus-mt, t5-small, bart-base), training time
# and memory no worse than 1.05x and 1.03x; protected generation no slower than 1.10x unprotected; the copy step >= 100x faster than the loop reference. A trained model on held-out
# messages: protected decoding <= 1.10x the time, outputs within 5% of the unprotected length, chrF not lower
# (protection_chrf: the least chrF difference, with - without).
TARGETS = {
    "train_time": 1.05,
    "train_memory": 1.03,
    "generation": 0.95,
    "generation_checkpoints": 0.97,
    "protection_time": 1.10,
    "protection_trained_time": 1.10,
    "protection_length": 1.05,
    "protection_chrf": 0.0,
    "mixture_speedup": 100.0,
}
SECTIONS = (
    "training",
    "generation",
    "step",
    "protection",
    "copy_info",
    "mixture",
    "profile",
    "protection_trained",
    "glossary_trained",
    "copy_options",
)
DEFAULT_SECTIONS = "training,generation,step,protection,copy_info,mixture"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    from training.terminology import FREEDICT_ENG_DEU

    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.run", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--quick", action="store_true", help="small smoke run of every section (~2-3 min on CPU)")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="output folder (default benchmarks/results/; --quick: benchmarks/results/quick/; with "
        "--only, a subfolder named for the sections, e.g. results/copy_info+protection/)",
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=None,
        help="measured interleaved repeats per model or option (default 5; quick 2)",
    )
    parser.add_argument("--warmup", type=int, default=None, help="warm-up training steps per model (default 2)")
    parser.add_argument(
        "--step-repeats",
        type=int,
        default=None,
        help="measured decoding steps per model in the step section (default 400; quick 20)",
    )
    parser.add_argument(
        "--min-run-time",
        type=float,
        default=None,
        help="seconds of timed calls per mixture function (Timer.blocked_autorange; default 2, quick 0.2)",
    )
    parser.add_argument(
        "--sizes",
        default=None,
        help="comma list of BART shapes (small, medium) or checkpoints' shapes (opus-mt, t5-small, "
        "bart-base: their own vocabularies, --vocabs and --gen-vocab ignored) (default: small on CPU, "
        "small,medium on CUDA)",
    )
    parser.add_argument("--lengths", default="64,256", help="source = target lengths for training")
    parser.add_argument("--vocabs", default="8192,32768", help="vocabulary sizes for training")
    parser.add_argument("--batch", type=int, default=32, help="training and mixture batch size")
    parser.add_argument(
        "--only",
        default=DEFAULT_SECTIONS,
        help=f"comma list of sections: {', '.join(SECTIONS)} (default: all but profile and "
        "protection_trained; profile writes profile.txt: op tables of one training step at the largest "
        "length/vocab, of generate() and of the mixture)",
    )
    parser.add_argument("--new-tokens", type=int, default=None, help="generated tokens (default 32 on CPU, 64 on CUDA)")
    parser.add_argument(
        "--control",
        action="store_true",
        help="generation: also time a second copy of the base and report its ratio to the base (what "
        "the instrument reads when nothing differs, in the same run); 1.5x the section's time",
    )
    parser.add_argument("--gen-source-length", type=int, default=256)
    parser.add_argument("--gen-batches", default="1,16", help="comma list of generation (and step) batch sizes")
    parser.add_argument("--gen-vocab", type=int, default=32768)
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's choice)")
    trained = parser.add_argument_group("protection_trained (benchmarks/protection.py)")
    trained.add_argument(
        "--model",
        default=None,
        help="a trained pointer-generator folder to decode with (e.g. outputs/main/pgen-subword); "
        "default: the section's own model in outputs/benchmarks/",
    )
    trained.add_argument(
        "--train",
        action="store_true",
        help="train the section's own model first if it is not there yet (~6-9 min on one core)",
    )
    trained.add_argument(
        "--protection-train-steps",
        type=int,
        default=DEFAULT_STEPS,
        help=f"training steps of the section's own model (default {DEFAULT_STEPS}; each value is "
        "its own cached folder)",
    )
    trained.add_argument(
        "--protection-messages",
        type=int,
        default=None,
        help="held-out messages decoded at batch 16 (default 160; quick 32); batch 1 decodes every fifth",
    )
    trained.add_argument(
        "--protection-repeats",
        type=int,
        default=None,
        help="interleaved passes over the messages per setting and side (default 3; quick 1)",
    )
    trained.add_argument(
        "--dictionary",
        default=FREEDICT_ENG_DEU,
        help="glossary_trained: the dictionary the test term bases come from (make dictionary)",
    )
    trained.add_argument(
        "--protection-decodings",
        default="plain,saved",
        help="comma list: plain (no n-gram blocking nor OOV copy limit), saved (the model's own generation config)",
    )
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda but CUDA is not available")
    if args.threads:
        torch.set_num_threads(args.threads)
    args.sizes = (args.sizes or ("small" if args.device == "cpu" else "small,medium")).split(",")
    for size in args.sizes:
        if size not in (*SIZES, *CHECKPOINTS):
            parser.error(f"unknown size {size!r}; choose from {', '.join((*SIZES, *CHECKPOINTS))}")
    args.only = set(args.only.split(","))
    if args.only - set(SECTIONS):
        parser.error(
            f"unknown section(s) {', '.join(sorted(args.only - set(SECTIONS)))}; choose from {', '.join(SECTIONS)}"
        )
    args.lengths = [int(x) for x in args.lengths.split(",")]
    args.vocabs = [int(x) for x in args.vocabs.split(",")]
    args.gen_batches = [int(x) for x in args.gen_batches.split(",")]
    args.mixture_target_lengths = [1, 64]
    args.warmup_gen = 1
    if args.quick:
        args.sizes, args.lengths, args.vocabs = ["small"], [64], [8192]
        args.repeats = args.repeats or 2
        args.warmup = args.warmup or 1
        args.new_tokens = args.new_tokens or 8
        args.min_run_time = args.min_run_time or 0.2
        args.gen_source_length = 64
        args.mixture_target_lengths = [1]
        args.step_repeats = args.step_repeats or 20
        args.protection_messages = args.protection_messages or 32
        args.protection_repeats = args.protection_repeats or 1
    args.repeats = args.repeats or 5
    args.protection_messages = args.protection_messages or 160
    args.protection_repeats = args.protection_repeats or 3
    args.protection_decodings = args.protection_decodings.split(",")
    if set(args.protection_decodings) - {"plain", "saved"}:
        parser.error(f"unknown --protection-decodings {args.protection_decodings}; choose from plain, saved")
    args.step_repeats = args.step_repeats or 400
    args.min_run_time = args.min_run_time or 2.0
    results = Path(__file__).resolve().parent / "results"
    default_out = results / "quick" if args.quick else results
    measured = args.only - {"profile"}
    if measured and measured != set(DEFAULT_SECTIONS.split(",")) | (
        measured & {"protection_trained", "glossary_trained", "copy_options"}
    ):
        # A partial run must not overwrite the full run's latest.* with a report of a few sections.
        default_out = default_out / "+".join(sorted(measured))
    args.out = args.out or default_out
    args.warmup = args.warmup if args.warmup is not None else 2
    args.new_tokens = args.new_tokens or (32 if args.device == "cpu" else 64)
    return args


def _shape(size: str) -> dict:
    if size in SIZES:
        return dict(zip(("d_model", "layers_each_side", "heads", "ffn"), SIZES[size]))
    config = model_config(size, 0, 0)
    return {"model_type": config.model_type, "d_model": config.d_model, "vocab": config.vocab_size}


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    started = time.time()
    report = {
        "command": "python -m benchmarks.run " + " ".join(sys.argv[1:] if argv is None else argv),
        "machine": machine(args.device),
        "memory_method": MEMORY_METHOD[args.device],
        "targets": TARGETS,
        "settings": {
            "repeats": args.repeats,
            "step_repeats": args.step_repeats,
            "warmup": args.warmup,
            "min_run_time_s": args.min_run_time,
            "batch": args.batch,
            "sizes": {s: _shape(s) for s in args.sizes},
            "dtype": "float32",
            "pointer": "dedicated (default copy settings)",
        },
        "training": [],
        "generation": [],
        "step": [],
        "protection": [],
        "protection_trained": None,
        "glossary_trained": None,
        "copy_info": None,
        "copy_options": [],
        "mixture": [],
    }
    log(f"machine: {report['machine']}")
    if "mixture" in args.only:
        report["mixture"] = bench_mixture(args)
    if "generation" in args.only:
        for size in args.sizes:
            report["generation"] += bench_generation(size, args)
    if "step" in args.only:
        for size in args.sizes:
            report["step"] += bench_decoding_step(size, args)
    if "protection" in args.only:
        report["protection"] = bench_protection(args)
    if "protection_trained" in args.only:
        report["protection_trained"] = bench_protection_trained(args)
    if "glossary_trained" in args.only:
        report["glossary_trained"] = bench_glossary_trained(args)
    if "copy_info" in args.only:
        report["copy_info"] = bench_copy_info(args.sizes[0], args)
    if "copy_options" in args.only:
        for size in args.sizes:
            report["copy_options"] += bench_copy_options(size, args)
    if "training" in args.only:
        for size in args.sizes:
            for length in args.lengths:
                for vocab in args.vocabs if size in SIZES else args.vocabs[:1]:  # a checkpoint has one vocabulary
                    t0 = time.time()
                    r = bench_training(size, length, vocab, args)
                    report["training"].append(r)
                    log(
                        f"training {size} L{length} V{r['vocab']}: base {r['time_s']['base']['median']:.3f} s, "
                        f"pg {r['time_s']['pg']['median']:.3f} s, time ratio {r['time_ratio']['median']:.3f}, "
                        f"memory {r['peak_memory_bytes']['base'] / 2**20:.0f} -> "
                        f"{r['peak_memory_bytes']['pg'] / 2**20:.0f} MiB ({r['memory_ratio']:.3f}) "
                        f"[{time.time() - t0:.0f} s]"
                    )
    if "profile" in args.only:
        log(f"wrote {bench_profile(args)}")
        if args.only == {"profile"}:
            return report
    report["run_time_s"] = time.time() - started
    report["load_average_at_end"] = os.getloadavg()
    report["finished"] = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "latest.json").write_text(json.dumps(report, indent=1))
    write(report, args.out)
    log(f"done in {report['run_time_s'] / 60:.1f} min; wrote {args.out}/latest.{{md,json,png}}")
    return report


if __name__ == "__main__":
    main()
