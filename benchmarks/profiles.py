"""torch.profiler op tables, for analysing a missed target (`--only profile`; not part of the default run).

Profiles one training step of base and pointer-generator (first size, largest length and vocab of the run),
generate() of each (batch 1 greedy, 5 calls; batch 16 beam 4, 1 call), and the mixture functions at each mixture
target length (the copy step on a fresh clone vs the loop reference; extended_log_probs; gold_log_probs). Written to
`profile.txt` in the output folder.
"""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import torch

from hf_pgen.mixture_pointer_generator import gold_log_probs

from .harness import log
from .reference import extended_log_probs, mix_into_log_probs, padded_log_softmax, reference_copy_step
from .workloads import UNK, bart_config, build, make_labels, make_source, mixture_inputs

__all__ = ["bench_profile"]


def _profile_table(fn, calls: int, rows: int = 25) -> str:
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
    with profile(activities=activities) as prof:
        for _ in range(calls):
            fn()
    sort = "self_cuda_time_total" if torch.cuda.is_available() else "self_cpu_time_total"
    return f"({calls} call(s); divide totals by {calls} for one call)\n" + prof.key_averages().table(
        sort_by=sort, row_limit=rows
    )


def bench_profile(args: Any) -> Path:
    """Write the op tables to `args.out / "profile.txt"` and return its path."""
    size, length, vocab, dev = args.sizes[0], max(args.lengths), max(args.vocabs), args.device
    config = bart_config(size, vocab, length)
    input_ids, extended = make_source(args.batch, length, vocab, seed=1)
    labels = make_labels(extended, length, vocab, seed=1)
    input_ids, extended, labels = input_ids.to(dev), extended.to(dev), labels.to(dev)
    inputs = {
        "base": dict(input_ids=input_ids, labels=labels.masked_fill(labels >= vocab, UNK)),
        "pg": dict(input_ids=input_ids, extended_input_ids=extended, labels=labels),
    }
    sections = []
    for kind in ("base", "pg"):
        model = build(kind, config, dev).train()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

        def step():
            model(**inputs[kind]).loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)

        step()
        sections.append(
            (
                f"training step: {kind}, {size}, length {length}, vocab {vocab}, batch {args.batch}",
                _profile_table(step, 1, rows=30),
            )
        )
        log(f"profiled training step {kind}")
        del model, opt
        gc.collect()
    gen_config = bart_config(size, args.gen_vocab, args.gen_source_length)
    gen_models = {kind: build(kind, gen_config, dev).eval() for kind in ("base", "pg")}
    for gen_batch, beams, calls in ((1, 1, 5), (16, 4, 1)):  # the cheapest setting (where fixed costs weigh most)
        gen_ids, gen_ext = make_source(gen_batch, args.gen_source_length, args.gen_vocab, seed=2)
        gen_ids, gen_ext = gen_ids.to(dev), gen_ext.to(dev)
        gen_inputs = {"base": dict(input_ids=gen_ids), "pg": dict(input_ids=gen_ids, extended_input_ids=gen_ext)}
        settings = dict(
            max_new_tokens=args.new_tokens, min_new_tokens=args.new_tokens, num_beams=beams, do_sample=False
        )
        for kind, model in gen_models.items():
            model.generate(**gen_inputs[kind], **settings)
            sections.append(
                (
                    f"generation: {kind}, {size}, batch {gen_batch}, beams {beams}, {args.new_tokens} new "
                    f"tokens, source {args.gen_source_length}, vocab {args.gen_vocab}",
                    _profile_table(lambda: model.generate(**gen_inputs[kind], **settings), calls, rows=30),
                )
            )
            log(f"profiled generation {kind} batch {gen_batch} beams {beams}")
    del gen_models
    gc.collect()
    for target_len in args.mixture_target_lengths:
        vl, at, ext, sw, lab, slots = mixture_inputs(args.batch, target_len, dev)
        calls = 20 if target_len == 1 else 3
        with torch.no_grad():
            lp = padded_log_softmax(vl, slots)
            fresh = [lp.clone() for _ in range(calls + 1)]  # mix_into_log_probs works in place: one clone per call
            # The loop issues ~1M tiny ops per call: one call keeps the profiler's event list (and memory) small.
            for name, fn, n_calls in (
                (
                    "copy step: mix_into_log_probs (on a fresh clone, clone not profiled)",
                    lambda: mix_into_log_probs(fresh.pop(), at, ext, sw),
                    calls,
                ),
                (
                    "copy step: loop reference over (example, source position)",
                    lambda: reference_copy_step(lp, at, ext, sw),
                    1,
                ),
                (
                    "full: extended_log_probs (log_softmax included)",
                    lambda: extended_log_probs(vl, at, ext, sw, slots),
                    calls,
                ),
                ("full: gold_log_probs", lambda: gold_log_probs(vl, at, ext, sw, lab), calls),
            ):
                fn()
                title = f"mixture {name}, batch {args.batch}, T {target_len}, S {ext.shape[1]}, V {vl.shape[-1]}"
                sections.append((title, _profile_table(fn, n_calls, rows=14)))
            del lp, fresh
        log(f"profiled mixture T={target_len}")
    path = args.out / "profile.txt"
    args.out.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, device {dev}\n\n"
        + "\n\n".join(f"=== {title}\n{table}" for title, table in sections)
    )
    return path
