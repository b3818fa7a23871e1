"""The mixture alone: `hf_pgen`'s vectorised mixture functions against the loop reference (`benchmarks/reference.py`).

Per target length T (1 = one generation step, 64 = a training batch), on random logits, attention and switch logits
(batch `--batch`, 32 by default; source length 256, vocab 32K + 10 extended slots, float32, forward only under no_grad):

* (a) the copy step given the same precomputed log P_vocab (log_softmax untimed): `mix_into_log_probs` against the
  (example, source position) loop (the target: >= 100x), a tuned loop, the loop's dense part alone and the common
  probability-space vectorisation;
* (b) the full mixture from raw logits (`extended_log_probs`, log_softmax included), `gold_log_probs` against a loop
  over (example, target position), and the loss' forward + backward next to the base's cross-entropy.

Every result is checked against the reference before anything is timed (`check_close`). Each function is timed on
its own with `torch.utils.benchmark.Timer` (`harness.time_call`); speed-ups are ratios of the medians.
"""

from __future__ import annotations

import gc
from typing import Any

import torch
import torch.nn.functional as F

from hf_pgen.mixture_pointer_generator import gold_log_probs

from .harness import log, speedup, time_call, time_fresh
from .reference import (
    extended_log_probs,
    mix_into_log_probs,
    padded_log_softmax,
    reference_copy_step,
    reference_copy_step_tuned,
    reference_full,
    reference_gold,
)
from .report import COPY_LOOP, COPY_LOOP_DENSE, COPY_LOOP_TUNED, COPY_OURS, COPY_OURS_CLONE, COPY_VEC
from .workloads import UNK, mixture_inputs

__all__ = ["CHECK_TOLERANCE", "bench_mixture", "check_close"]

CHECK_TOLERANCE = {"rtol": 1e-5, "atol": 1e-5}


# -- what else the copy step and the full mixture are compared with -------------------------------------------------


def _dense_part(log_p_vocab: torch.Tensor, switch_logit: torch.Tensor) -> torch.Tensor:
    """The loop reference without its loop, only its dense passes (p_gen * exp(.), log): how much of the reference's
    time is Python-loop overhead and how much vocab-wide work."""
    p_gen = torch.sigmoid(switch_logit.float()).unsqueeze(-1)
    return (p_gen * log_p_vocab.exp()).log()


def _vectorized_copy_step(log_p_vocab, pointer_attention, extended_input_ids, switch_logit) -> torch.Tensor:
    """The common vectorised copy step in probability space: p_gen * exp, one dense scatter_add over (B, T, S), log."""
    target_len = log_p_vocab.shape[1]
    p_gen = torch.sigmoid(switch_logit.float()).unsqueeze(-1)
    dist = p_gen * log_p_vocab.exp()
    index = extended_input_ids.unsqueeze(1).expand(-1, target_len, -1)
    dist.scatter_add_(-1, index, (1 - p_gen) * pointer_attention)
    return dist.log()


def _dense_vectorized(vocab_logits, pointer_attention, extended_input_ids, switch_logit, num_oov_slots) -> torch.Tensor:
    """The common vectorised full mixture: softmax, a zero-filled (B, T, V + N) buffer, scatter_add, log."""
    batch, target_len, vocab = vocab_logits.shape
    p_gen = torch.sigmoid(switch_logit).unsqueeze(-1)
    dist = torch.zeros(batch, target_len, vocab + num_oov_slots, device=vocab_logits.device)
    dist[..., :vocab] = p_gen * torch.softmax(vocab_logits, dim=-1)
    index = extended_input_ids.unsqueeze(1).expand(-1, target_len, -1)
    dist.scatter_add_(-1, index, (1 - p_gen) * pointer_attention)
    return dist.log()


def check_close(ours: torch.Tensor, ref: torch.Tensor, what: str) -> dict:
    """Same -inf pattern, nothing else non-finite, and allclose on the finite entries (log-probabilities).

    Raises AssertionError (the benchmark stops: a fast wrong answer is not a result); returns the agreement measured.
    """
    same_inf = bool(torch.equal(torch.isneginf(ours), torch.isneginf(ref)))
    finite = torch.isfinite(ref)
    all_finite_elsewhere = bool(torch.equal(torch.isfinite(ours), finite))
    diff = (ours[finite] - ref[finite]).abs()
    max_abs = float(diff.max()) if finite.any() else 0.0
    max_rel = float((diff / ref[finite].abs().clamp_min(1e-30)).max()) if finite.any() else 0.0
    close = bool(torch.allclose(ours[finite], ref[finite], **CHECK_TOLERANCE))
    if not (same_inf and all_finite_elsewhere and close):
        raise AssertionError(
            f"{what}: mismatch (same -inf: {same_inf}, same finite pattern: {all_finite_elsewhere}, "
            f"allclose{CHECK_TOLERANCE}: {close}, max abs err {max_abs}, max rel err {max_rel})"
        )
    return {
        "same_neg_inf": same_inf,
        "finite_entries": int(finite.sum()),
        "neg_inf_entries": int(torch.isneginf(ref).sum()),
        "allclose": close,
        "tolerance": CHECK_TOLERANCE,
        "max_abs_log_error": max_abs,
        "max_rel_log_error": max_rel,
    }


# -- the measurement ------------------------------------------------------------------------------------------------


def _copy_step(log_p_vocab, copy_args, switch_logit, min_run_time: float) -> dict:
    checks = {
        "mix_into_log_probs vs loop": check_close(
            mix_into_log_probs(log_p_vocab.clone(), *copy_args),
            reference_copy_step(log_p_vocab, *copy_args),
            "mix_into_log_probs",
        ),
        "tuned loop vs loop": check_close(
            reference_copy_step_tuned(log_p_vocab, *copy_args),
            reference_copy_step(log_p_vocab, *copy_args),
            "tuned loop",
        ),
        "vectorized vs loop": check_close(
            _vectorized_copy_step(log_p_vocab, *copy_args),
            reference_copy_step(log_p_vocab, *copy_args),
            "vectorized copy step",
        ),
    }
    times = {
        # mix_into_log_probs works in place under no_grad: each timed call gets a fresh clone, made untimed (in use
        # it writes into log_softmax's fresh output) and, in the next entry, timed with the call.
        COPY_OURS: time_fresh(lambda fresh: mix_into_log_probs(fresh, *copy_args), log_p_vocab.clone, min_run_time),
        COPY_OURS_CLONE: time_call(lambda: mix_into_log_probs(log_p_vocab.clone(), *copy_args), min_run_time),
        COPY_LOOP: time_call(lambda: reference_copy_step(log_p_vocab, *copy_args), min_run_time),
        COPY_LOOP_TUNED: time_call(lambda: reference_copy_step_tuned(log_p_vocab, *copy_args), min_run_time),
        COPY_LOOP_DENSE: time_call(lambda: _dense_part(log_p_vocab, switch_logit), min_run_time),
        COPY_VEC: time_call(lambda: _vectorized_copy_step(log_p_vocab, *copy_args), min_run_time),
    }
    return {
        "what": "given the same precomputed log P_vocab (B, T, V + N) (log_softmax untimed): mix_into_log_probs on a "
        "fresh clone (clone untimed; also reported timed) vs a Python loop over every (example, source position) "
        "pair adding (1 - p_gen) * a[b, :, s] into p_gen * exp(log P_vocab), then log",
        "timer": f"torch.utils.benchmark.Timer, blocked_autorange(min_run_time={min_run_time:g}); in-place "
        f"mix_into_log_probs: timeit(1) per fresh clone until {min_run_time:g} s",
        "checks": checks,
        "time_s": times,
        "speedup": {
            f"{name} vs loop": speedup(times[COPY_LOOP], times[name]) for name in (COPY_OURS, COPY_OURS_CLONE, COPY_VEC)
        }
        | {f"{COPY_OURS} vs tuned loop": speedup(times[COPY_LOOP_TUNED], times[COPY_OURS])},
    }


def _full_mixture(vocab_logits, pointer_attention, extended, switch_logit, labels, slots, min_run_time) -> dict:
    common = (vocab_logits, pointer_attention, extended, switch_logit)
    with torch.no_grad():
        checks = {
            "extended_log_probs vs loop": check_close(
                extended_log_probs(*common, slots), reference_full(*common, slots), "extended_log_probs"
            ),
            "dense vectorized vs loop": check_close(
                _dense_vectorized(*common, slots), reference_full(*common, slots), "dense vectorized"
            ),
            "gold_log_probs vs loop": check_close(
                gold_log_probs(*common, labels), reference_gold(*common, labels, slots), "gold_log_probs"
            ),
        }
        forward = {
            "extended_log_probs": lambda: extended_log_probs(*common, slots),
            "dense vectorized": lambda: _dense_vectorized(*common, slots),
            "log_softmax + loop reference": lambda: reference_full(*common, slots),
            "log_softmax over V + N alone": lambda: padded_log_softmax(vocab_logits, slots),
            "gold_log_probs": lambda: gold_log_probs(*common, labels),
            "gold loop reference (example, target position)": lambda: reference_gold(*common, labels, slots),
        }
        times = {name: time_call(fn, min_run_time) for name, fn in forward.items()}
    # Training cost of the gold-only loss against what the base's loss pays (cross-entropy), forward + backward.
    logits_leaf = vocab_logits.clone().requires_grad_(True)
    ce_labels = labels.masked_fill(labels >= vocab_logits.shape[-1], UNK)

    def ours_train():
        (-gold_log_probs(logits_leaf, pointer_attention, extended, switch_logit, labels).sum()).backward()
        logits_leaf.grad = None

    def ce_train():
        F.cross_entropy(logits_leaf.flatten(0, 1), ce_labels.flatten(), reduction="sum").backward()
        logits_leaf.grad = None

    times["gold_log_probs fwd+bwd"] = time_call(ours_train, min_run_time)
    times["cross_entropy fwd+bwd (base)"] = time_call(ce_train, min_run_time)
    return {
        "what": "from raw logits, log_softmax included; forward only, no_grad (gold fwd+bwd with grad)",
        "timer": f"torch.utils.benchmark.Timer, blocked_autorange(min_run_time={min_run_time:g})",
        "checks": checks,
        "time_s": times,
        "speedup": {
            "extended_log_probs vs loop": speedup(times["log_softmax + loop reference"], times["extended_log_probs"]),
            "extended_log_probs vs dense vectorized": speedup(times["dense vectorized"], times["extended_log_probs"]),
            "gold_log_probs vs loop": speedup(
                times["gold loop reference (example, target position)"], times["gold_log_probs"]
            ),
            "gold fwd+bwd / cross_entropy fwd+bwd": speedup(
                times["cross_entropy fwd+bwd (base)"], times["gold_log_probs fwd+bwd"]
            ),
        },
    }


def bench_mixture(args: Any) -> list[dict]:
    """Both measurements at each of `args.mixture_target_lengths`, batch `args.batch`, on `args.device`,
    `args.min_run_time` seconds of timed calls per function."""
    results = []
    for target_len in args.mixture_target_lengths:
        vocab_logits, pointer_attention, extended, switch_logit, labels, slots = mixture_inputs(
            args.batch, target_len, args.device
        )
        with torch.no_grad():
            log_p_vocab = padded_log_softmax(vocab_logits, slots)  # (B, T, V + N)
            copy_step = _copy_step(
                log_p_vocab, (pointer_attention, extended, switch_logit), switch_logit, args.min_run_time
            )
            del log_p_vocab
        full = _full_mixture(vocab_logits, pointer_attention, extended, switch_logit, labels, slots, args.min_run_time)
        results.append(
            {
                "batch": args.batch,
                "source_length": extended.shape[1],
                "vocab": vocab_logits.shape[-1],
                "extended_slots": slots,
                "target_length": target_len,
                "copy_step": copy_step,
                "full_mixture": full,
            }
        )
        log(
            f"mixture T={target_len}: copy step "
            + ", ".join(f"{k} {v['median'] * 1e3:.2f} ms" for k, v in copy_step["time_s"].items())
            + f"; speed-up {copy_step['speedup'][COPY_OURS + ' vs loop']['median']:.1f}x; full "
            + ", ".join(f"{k} {v['median'] * 1e3:.1f} ms" for k, v in full["time_s"].items())
        )
        del vocab_logits, pointer_attention, full, copy_step
        gc.collect()
    return results
