"""The pointer-generator against its base, step for step: training step time and peak memory, generation throughput,
and (diagnostic) the cost of one decoding step.

Both models are built from the same config and seed, sit in one process and run interleaved (`harness.interleaved`,
ABBA); the ratios (pointer-generator / base) are the medians of the per-repeat paired ratios. These are the numbers
the speed and memory targets apply to (`TARGETS` in `benchmarks/run.py`).
"""

from __future__ import annotations

import gc
import statistics
import time
from typing import Any

import torch
from transformers.modeling_outputs import Seq2SeqLMOutput

from .harness import PeakMemory, interleaved, log, paired_ratio, summary, sync
from .workloads import UNK, build, make_labels, make_source, model_config

__all__ = ["bench_decoding_step", "bench_generation", "bench_training"]

# 5.24 renamed the cache argument and output field from `past_key_values` to `cache`.
_CACHE_FIELD = "cache" if "cache" in Seq2SeqLMOutput.__dataclass_fields__ else "past_key_values"


def bench_training(size: str, length: int, vocab: int, args: Any) -> dict:
    """One training step (forward + backward + AdamW step + zero_grad) of each model at batch `args.batch`, source
    = target length `length`: wall time per step, and the peak memory from model construction through the warm-up
    steps."""
    config = model_config(size, vocab, length)
    vocab = config.vocab_size  # a checkpoint's shape brings its own
    input_ids, extended = make_source(args.batch, length, vocab, seed=1)
    labels = make_labels(extended, length, vocab, seed=1)
    dev = args.device
    input_ids, extended, labels = input_ids.to(dev), extended.to(dev), labels.to(dev)
    attention_mask = torch.ones_like(input_ids)
    base_labels = labels.masked_fill(labels >= vocab, UNK)
    inputs = {
        # The base cannot predict or copy OOV words: its labels carry unk there (same positions, same cost).
        "base": dict(input_ids=input_ids, attention_mask=attention_mask, labels=base_labels),
        "pg": dict(input_ids=input_ids, attention_mask=attention_mask, extended_input_ids=extended, labels=labels),
    }
    models, optimizers, memory = {}, {}, {}

    def step(kind):
        loss = models[kind](**inputs[kind]).loss
        loss.backward()
        optimizers[kind].step()
        optimizers[kind].zero_grad(set_to_none=True)

    for kind in ("base", "pg"):
        with PeakMemory(dev) as mem:
            models[kind] = build(kind, config, dev).train()
            optimizers[kind] = torch.optim.AdamW(models[kind].parameters(), lr=1e-4)
            for _ in range(args.warmup):
                step(kind)
            sync(dev)
        memory[kind] = mem.peak_bytes
    # The warm-up steps ran above, inside the memory measurement.
    times = interleaved({kind: (lambda kind=kind: step(kind)) for kind in ("base", "pg")}, args.repeats, 0, dev)
    n_params = {k: sum(p.numel() for p in m.parameters()) for k, m in models.items()}
    del models, optimizers
    gc.collect()
    return {
        "size": size,
        "length": length,
        "vocab": vocab,
        "batch": args.batch,
        "params": n_params,
        "time_s": {k: summary(v) for k, v in times.items()},
        "time_raw_s": times,
        "time_ratio": paired_ratio(times["pg"], times["base"]),
        "peak_memory_bytes": memory,
        "memory_ratio": memory["pg"] / memory["base"],
    }


def _check_length(new_tokens: int):
    def check(name: str, sequences: torch.Tensor) -> None:
        generated = sequences.shape[1] - 1  # minus the decoder start token
        if generated != new_tokens:
            raise RuntimeError(f"{name} generated {generated} tokens, expected {new_tokens}")

    return check


def bench_generation(size: str, args: Any) -> list[dict]:
    """generate() throughput of each model, greedy and beam 4, each batch of `args.gen_batches`: exactly
    `args.new_tokens` new tokens (min_new_tokens = max_new_tokens), KV cache, untrained weights.

    With `args.control`, a second copy of the base (same weights, its own memory) is timed in the same rotation and
    its ratio to the base reported: what the instrument reads when nothing differs, in this very run."""
    source_len, new_tokens = args.gen_source_length, args.new_tokens
    config = model_config(size, args.gen_vocab, source_len)
    vocab = config.vocab_size  # a checkpoint's shape brings its own
    dev = args.device
    models = {kind: build(kind, config, dev).eval() for kind in ("base", "pg")}
    if args.control:
        models["control"] = build("base", config, dev).eval()
    results = []
    for batch in args.gen_batches:
        input_ids, extended = make_source(batch, source_len, vocab, seed=2)
        input_ids, extended = input_ids.to(dev), extended.to(dev)
        attention_mask = torch.ones_like(input_ids)
        inputs = {
            "base": dict(input_ids=input_ids, attention_mask=attention_mask),
            "pg": dict(input_ids=input_ids, attention_mask=attention_mask, extended_input_ids=extended),
        }
        if args.control:
            inputs["control"] = inputs["base"]
        for beams in (1, 4):
            settings = dict(
                max_new_tokens=new_tokens, min_new_tokens=new_tokens, num_beams=beams, do_sample=False, use_cache=True
            )
            times = interleaved(
                {kind: (lambda kind=kind: models[kind].generate(**inputs[kind], **settings)) for kind in models},
                args.repeats,
                args.warmup_gen,
                dev,
                check=_check_length(new_tokens),
            )
            rates = {kind: [batch * new_tokens / t for t in v] for kind, v in times.items()}
            results.append(
                {
                    "size": size,
                    "vocab": vocab,
                    "source_length": source_len,
                    "new_tokens": new_tokens,
                    "batch": batch,
                    "num_beams": beams,
                    "tokens_per_s": {k: summary(v) for k, v in rates.items()},
                    "throughput_ratio": paired_ratio(rates["pg"], rates["base"]),
                }
            )
            r = results[-1]
            control = ""
            if args.control:
                r["control_ratio"] = paired_ratio(rates["control"], rates["base"])
                control = f", base copy / base {r['control_ratio']['median']:.3f}"
            log(
                f"generation {size} batch {batch} beams {beams}: base {r['tokens_per_s']['base']['median']:.0f} "
                f"tok/s, pg {r['tokens_per_s']['pg']['median']:.0f} tok/s, ratio {r['throughput_ratio']['median']:.3f}"
                f"{control}"
            )
    del models
    gc.collect()
    return results


def decoding_step_states(
    models: dict[str, Any], config: Any, batch: int, beams: int, source_len: int, dev: str, warm_steps: int
) -> tuple[dict[str, tuple], torch.Tensor]:
    """Each model mid-generation on the same sources: {name: (model, inputs, cache)} and the next decoder token.

    Rows = batch x beams, each source repeated per beam as generate() lays out hypotheses (the copy model shares a
    source's pointer keys among them). The cache holds the decoder start token and `warm_steps` earlier steps. A model
    named "base" gets no extended ids; every other one is a copy model.
    """
    input_ids, extended = make_source(batch, source_len, config.vocab_size, seed=2)
    rows = {"input_ids": input_ids, "extended_input_ids": extended, "attention_mask": torch.ones_like(input_ids)}
    rows = {key: value.repeat_interleave(beams, dim=0).to(dev) for key, value in rows.items()}
    decoder_start = torch.full((batch * beams, 1), config.decoder_start_token_id, device=dev)
    next_token = torch.full((batch * beams, 1), 5, device=dev)
    states = {}
    with torch.no_grad():
        for name, model in models.items():
            inputs = {"attention_mask": rows["attention_mask"]}
            if name != "base":
                inputs["extended_input_ids"] = rows["extended_input_ids"]
            inputs["encoder_outputs"] = model.get_encoder()(
                input_ids=rows["input_ids"], attention_mask=rows["attention_mask"]
            )
            cache = model(**inputs, decoder_input_ids=decoder_start, use_cache=True, return_dict=True)[_CACHE_FIELD]
            for _ in range(warm_steps):
                model(**inputs, decoder_input_ids=next_token, use_cache=True, **{_CACHE_FIELD: cache})
            states[name] = (model, inputs, cache)
    return states, next_token


def time_steps_in_rotation(states: dict[str, tuple], next_token: torch.Tensor, steps: int, dev: str) -> dict:
    """One forward step of each model in turn, the order rotating every round, the cache cropped back after each
    step so that every step sees the same state: {name: [seconds] * steps} after 10 warm-up rounds."""
    names = list(states)
    times = {name: [] for name in names}
    with torch.no_grad():
        for r in range(steps + 10):
            shift = r % len(names)
            for name in names[shift:] + names[:shift]:
                model, inputs, cache = states[name]
                sync(dev)
                start = time.perf_counter()
                model(**inputs, decoder_input_ids=next_token, use_cache=True, **{_CACHE_FIELD: cache})
                sync(dev)
                elapsed = time.perf_counter() - start
                cache.crop(-1)
                if r >= 10:
                    times[name].append(elapsed)
    return times


def bench_decoding_step(size: str, args: Any) -> list[dict]:
    """One decoding step of each model (forward only, KV cache), alternating base and pointer-generator step by step.

    `decoding_step_states` sets both up mid-generation (`args.new_tokens // 2` earlier steps) for batch x beams rows;
    `time_steps_in_rotation` times them. Generation's own per-step work (logits processors, beam bookkeeping, cache
    reordering) is not in it, nor the first step's per-source work: this isolates what the copy model adds to the
    forward of a step, with `args.step_repeats` samples per model instead of a few whole generate() calls.
    Diagnostic: no target.
    """
    source_len = args.gen_source_length
    config = model_config(size, args.gen_vocab, source_len)
    vocab = config.vocab_size
    dev = args.device
    models = {kind: build(kind, config, dev).eval() for kind in ("base", "pg")}
    results = []
    for batch in args.gen_batches:
        for beams in (1, 4):
            states, next_token = decoding_step_states(
                models, config, batch, beams, source_len, dev, warm_steps=args.new_tokens // 2
            )
            times = time_steps_in_rotation(states, next_token, args.step_repeats, dev)
            base, pg = statistics.median(times["base"]), statistics.median(times["pg"])
            results.append(
                {
                    "size": size,
                    "vocab": vocab,
                    "source_length": source_len,
                    "cached_positions": args.new_tokens // 2 + 1,
                    "batch": batch,
                    "num_beams": beams,
                    "step_s": {kind: summary(v) for kind, v in times.items()},
                    "extra_s": pg - base,
                    "step_ratio": base / pg,
                }
            )
            log(
                f"decoding step {size} batch {batch} beams {beams}: base {base * 1e3:.2f} ms, pg {pg * 1e3:.2f} ms, "
                f"extra {(pg - base) * 1e3:.2f} ms ({base / pg:.3f})"
            )
    del models
    gc.collect()
    return results
