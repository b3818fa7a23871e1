"""Where the pointer-generator's generate() time goes: the first token against each further one, base vs copy model.

The generation section times whole generate() calls of N tokens, so its ratio mixes two costs that need different
fixes: the first token (the encoder and the first step, where the copy model also sets up the source) and every
further step (the per-step copy work). This times generate() of 1, 2 and N new tokens on the base and the copy model
in one process, alternating, and reads both off the medians:

    first token = generate(1);   one further step = (generate(N) - generate(2)) / (N - 2)

and says what per-step extra the throughput target (>= 0.95 over N tokens) would allow. Run from the repository root:

    python -m benchmarks.generate_phases                        # batch 1, greedy
    python -m benchmarks.generate_phases --batch 16 --beams 4 --repeats 8
"""

from __future__ import annotations

import sys

if __package__ in (None, ""):
    sys.exit("Run from the repository root as a module: python -m benchmarks.generate_phases [options]")

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402
import transformers  # noqa: E402

from .workloads import bart_config, build, make_source  # noqa: E402

_TARGET_RATIO = 0.95
_WARM_ROUNDS = 2


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="small", choices=["small", "medium"])
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--beams", type=int, default=1)
    parser.add_argument("--new-tokens", type=int, default=32, help="N, the generation section's length (>= 3)")
    parser.add_argument("--repeats", type=int, default=12, help="measured rounds, after two warm-up rounds")
    parser.add_argument("--vocab", type=int, default=32768)
    parser.add_argument("--source-length", type=int, default=256)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    transformers.logging.set_verbosity_error()  # generate()'s note that max_new_tokens overrides max_length
    if args.new_tokens < 3:
        parser.error("--new-tokens must be at least 3: a further step is read off generate(N) - generate(2)")
    torch.set_num_threads(args.threads)
    config = bart_config(args.size, args.vocab, args.source_length)
    models = {kind: build(kind, config, "cpu").eval() for kind in ("base", "pg")}
    input_ids, extended_input_ids = make_source(args.batch, args.source_length, args.vocab, seed=2)
    inputs = {"input_ids": input_ids, "attention_mask": torch.ones_like(input_ids)}
    inputs = {"base": inputs, "pg": {**inputs, "extended_input_ids": extended_input_ids}}

    lengths = (1, 2, args.new_tokens)
    seconds = {(kind, n): [] for kind in models for n in lengths}
    with torch.no_grad():
        for round_index in range(_WARM_ROUNDS + args.repeats):
            for n in lengths:
                for kind in ("base", "pg") if round_index % 2 else ("pg", "base"):
                    start = time.perf_counter()
                    models[kind].generate(
                        **inputs[kind], max_new_tokens=n, min_new_tokens=n, num_beams=args.beams, do_sample=False
                    )
                    if round_index >= _WARM_ROUNDS:
                        seconds[(kind, n)].append(time.perf_counter() - start)

    ms = {key: statistics.median(values) * 1e3 for key, values in seconds.items()}
    n = args.new_tokens
    first = {kind: ms[(kind, 1)] for kind in models}
    step = {kind: (ms[(kind, n)] - ms[(kind, 2)]) / (n - 2) for kind in models}
    allowed = ms[("base", n)] / _TARGET_RATIO - ms[("base", n)]  # what copying may add over N tokens
    # The per-step extra that would meet the target if the first token's extra stayed as it is.
    allowed_step = (allowed - (first["pg"] - first["base"])) / (n - 1)
    result = {
        "rows": f"{args.batch} x {args.beams}",
        "new_tokens": n,
        "generate_ms": {f"{kind}@{tokens}": value for (kind, tokens), value in ms.items()},
        "first_token_ms": first,
        "further_step_ms": step,
        "allowed_extra_ms": allowed,
        "allowed_step_extra_ms": allowed_step,
    }
    print(f"{args.size}, batch {args.batch} x {args.beams} beams, {args.repeats} rounds (medians):")
    print(
        f"  first token:    base {first['base']:8.2f} ms   copy {first['pg']:8.2f} ms   "
        f"extra {first['pg'] - first['base']:+.2f} ms"
    )
    print(
        f"  further step:   base {step['base']:8.2f} ms   copy {step['pg']:8.2f} ms   "
        f"extra {step['pg'] - step['base']:+.3f} ms   ratio {step['base'] / step['pg']:.3f}"
    )
    print(
        f"  {n} tokens:      base {ms[('base', n)]:8.2f} ms   copy {ms[('pg', n)]:8.2f} ms   "
        f"extra {ms[('pg', n)] - ms[('base', n)]:+.2f} ms   ratio {ms[('base', n)] / ms[('pg', n)]:.3f}"
    )
    print(
        f"  for >= {_TARGET_RATIO} over {n} tokens copying may add {allowed:.2f} ms: with the first token's extra "
        f"as it is, at most {allowed_step:.3f} ms per further step"
    )
    return result


if __name__ == "__main__":
    main()
