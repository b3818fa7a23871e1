"""A benchmark run's JSON -> markdown tables and a PNG of the ratios against their targets.

Pure functions of the JSON that `benchmarks/run.py` writes (targets included), so a report can be rebuilt from a
saved run without measuring anything:

    python -m benchmarks.report benchmarks/results/latest.json          # rewrites latest.md and latest.png beside it
    python -m benchmarks.report --readme README.md                      # the README's cost table (README_COST)
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["markdown", "plot", "write", "readme_cost_table"]

# The copy step's timed entries: the keys measure_mixture writes them under.
COPY_OURS = "mix_into_log_probs"
COPY_OURS_CLONE = "mix_into_log_probs incl. the clone"
COPY_LOOP = "loop reference"
COPY_LOOP_TUNED = "tuned loop (hoisted)"
COPY_LOOP_DENSE = "loop reference, dense part only"
COPY_VEC = "vectorized (prob space, scatter_add)"


def _time(seconds: float) -> str:
    return f"{seconds * 1e3:.0f} ms" if seconds >= 0.01 else f"{seconds * 1e3:.2f} ms"


def _spread(s: dict, digits: int = 3) -> str:
    return f"[{s['q1']:.{digits}f}, {s['q3']:.{digits}f}]"


def _per_step(result: dict) -> str:
    """ " (0.20 ms)": the protection engine's milliseconds per decoding step (runs before it was recorded: "")."""
    return f" ({result['engine_ms_per_step']:.2f} ms)" if "engine_ms_per_step" in result else ""


def _verdict(value: float, target: float, higher_is_better: bool) -> str:
    ok = value >= target if higher_is_better else value <= target
    return "met" if ok else "**missed**"


def _header(report: dict) -> list[str]:
    m = report["machine"]
    return [
        f"# Pointer-generator vs base: benchmark ({report['finished']})",
        "",
        f"Machine: {m['cpu']}, {m['cores_available']} cores available ({m['logical_cores']} logical), "
        f"{m['memory_gib']} GiB RAM, torch {m['torch']} ({m['torch_threads']} threads), transformers "
        f"{m['transformers']}, Python {m['python']}, device `{m['device']}`"
        + (f" ({m['gpu']})" if "gpu" in m else "")
        + f". Load average at start {', '.join(f'{x:.2f}' for x in m['load_average_at_start'])}; "
        f"at end {', '.join(f'{x:.2f}' for x in report['load_average_at_end'])}.",
        "",
        f"Command: `{report['command']}`; run time {report['run_time_s'] / 60:.1f} min."
        + (
            f" {report['settings']['repeats']} measured repeats after {report['settings']['warmup']} warm-up steps, "
            "base and pointer-generator interleaved (ABBA). Ratios are medians of the per-repeat paired ratios "
            "(pointer-generator / base), spread = [Q1, Q3] of those ratios."
            if any(report.get(k) for k in ("training", "generation", "protection", "copy_info"))
            else ""
        ),
        "",
        f"Peak memory method: {report['memory_method']}.",
        "",
    ]


def _training(report: dict, targets: dict) -> list[str]:
    lines = [
        f"## Training step (forward + backward + AdamW), batch {report['settings']['batch']}",
        "",
        f"Targets: time ratio <= {targets['train_time']}, peak memory ratio <= {targets['train_memory']}.",
        "",
        "| size | src=tgt len | vocab | base median [min, max] | PG median [min, max] | time ratio [Q1, Q3] | "
        "base peak MiB | PG peak MiB | memory ratio |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in report["training"]:
        tb, tp, ratio = r["time_s"]["base"], r["time_s"]["pg"], r["time_ratio"]
        mb, mp = r["peak_memory_bytes"]["base"] / 2**20, r["peak_memory_bytes"]["pg"] / 2**20
        lines.append(
            f"| {r['size']} | {r['length']} | {r['vocab'] // 1024}K | {_time(tb['median'])} "
            f"[{_time(tb['min'])}, {_time(tb['max'])}] | {_time(tp['median'])} "
            f"[{_time(tp['min'])}, {_time(tp['max'])}] | {ratio['median']:.3f} {_spread(ratio)} "
            f"{_verdict(ratio['median'], targets['train_time'], False)} | {mb:.0f} | {mp:.0f} | "
            f"{r['memory_ratio']:.3f} {_verdict(r['memory_ratio'], targets['train_memory'], False)} |"
        )
    return lines + [""]


def _generation_target(size: str, targets: dict) -> float:
    # The checkpoints' shapes carry the users' target; the BART sizes (small, medium) the older, looser one.
    return targets["generation"] if size in ("small", "medium") else _checkpoints_target(targets)


def _checkpoints_target(targets: dict) -> float:
    return targets.get("generation_checkpoints", 0.97)  # runs written before the target had its own entry


def _generation(report: dict, targets: dict) -> list[str]:
    g0 = report["generation"][0]
    control = "control_ratio" in g0
    vocabs = {r["vocab"] for r in report["generation"]}
    vocab = f"vocab {g0['vocab'] // 1024}K" if len(vocabs) == 1 else "each shape's own vocabulary"
    wanted = {_generation_target(r["size"], targets) for r in report["generation"]}
    target = (
        f">= {wanted.pop()}"
        if len(wanted) == 1
        else (f">= {targets['generation']} (BART shapes), >= {_checkpoints_target(targets)} (checkpoints)")
    )
    lines = [
        f"## Generation (KV cache, {g0['new_tokens']} new tokens forced with min_new_tokens = max_new_tokens, "
        f"source length {g0['source_length']} with 5% OOV words, {vocab})",
        "",
        f"Target tokens/s = batch x new tokens / wall time. Target: throughput ratio {target}.",
        "",
    ]
    if control:
        lines += [
            "Control (`--control`): a second copy of the base, same weights, timed in the same rotation; its ratio to "
            "the base is what this run reads when nothing differs.",
            "",
        ]
    lines += [
        "| size | batch | beams | base tok/s [Q1, Q3] | PG tok/s [Q1, Q3] | throughput ratio [Q1, Q3] |"
        + (" base copy / base [Q1, Q3] |" if control else ""),
        "|---|---|---|---|---|---|" + ("---|" if control else ""),
    ]
    for r in report["generation"]:
        b, p, ratio = r["tokens_per_s"]["base"], r["tokens_per_s"]["pg"], r["throughput_ratio"]
        row = (
            f"| {r['size']} | {r['batch']} | {r['num_beams']} | {b['median']:.0f} {_spread(b, digits=0)} | "
            f"{p['median']:.0f} {_spread(p, digits=0)} | {ratio['median']:.3f} {_spread(ratio)} "
            f"{_verdict(ratio['median'], _generation_target(r['size'], targets), True)} |"
        )
        if control:
            row += f" {r['control_ratio']['median']:.3f} {_spread(r['control_ratio'])} |"
        lines.append(row)
    return lines + [""]


def _step(report: dict) -> list[str]:
    s0 = report["step"][0]
    lines = [
        f"## One decoding step (forward only, KV cache holding {s0['cached_positions']} positions, source length "
        f"{s0['source_length']}, vocab {s0['vocab'] // 1024}K)",
        "",
        f"Diagnostic, no target: {report['settings'].get('step_repeats', s0['step_s']['base']['n'])} steps of each "
        "model, alternating step by step, the cache cropped back after each. Rows = batch x beams (each source "
        "repeated per beam, as generate() lays out hypotheses). Generation's own per-step work and the first step's "
        "per-source work are not in it.",
        "",
        "| size | batch | beams | base step ms [Q1, Q3] | PG step ms [Q1, Q3] | PG extra ms | step ratio |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in report["step"]:
        b, p = r["step_s"]["base"], r["step_s"]["pg"]
        lines.append(
            f"| {r['size']} | {r['batch']} | {r['num_beams']} | {b['median'] * 1e3:.2f} "
            f"[{b['q1'] * 1e3:.2f}, {b['q3'] * 1e3:.2f}] | {p['median'] * 1e3:.2f} "
            f"[{p['q1'] * 1e3:.2f}, {p['q3'] * 1e3:.2f}] | {r['extra_s'] * 1e3:.2f} | {r['step_ratio']:.3f} |"
        )
    return lines + [""]


def _mixture(report: dict, targets: dict) -> list[str]:
    x0 = report["mixture"][0]
    lines = [
        f"## The mixture alone (batch {x0['batch']}, source length {x0['source_length']}, vocab "
        f"{x0['vocab'] // 1024}K + {x0['extended_slots']} extended slots; float32; forward only, no_grad)",
        "",
        "Each function timed on its own with "
        f"{x0['copy_step']['timer']}. Speed-up = ratio of the median times; its spread is the range the two "
        "interquartile ranges allow ([slow Q1 / fast Q3, slow Q3 / fast Q1]).",
        "",
        "### (a) The copy step - the headline, against the target",
        "",
        "Both sides get the same precomputed log P_vocab (B, T, V + N) (log_softmax over V + N done once, outside "
        "the timing). **Ours**: `mix_into_log_probs` on a fresh clone of it (it works in place; the clone is made "
        "untimed right before each call - in use it writes into log_softmax's fresh output - and the next column "
        "times it too). **Loop reference** (`benchmarks/reference.py`): `dist = p_gen * exp(log P_vocab)`, then a "
        "Python loop over every (example, source position) pair, `dist[b, :, ids[b, s]] += (1 - p_gen[b]) * "
        "a[b, :, s]`, then `log(dist)`. Results agree before timing: identical -inf pattern, `allclose` on every "
        f"finite entry (rtol {x0['copy_step']['checks']['mix_into_log_probs vs loop']['tolerance']['rtol']:g}, "
        f"atol {x0['copy_step']['checks']['mix_into_log_probs vs loop']['tolerance']['atol']:g}; max errors in the "
        "JSON). Tuned loop: the same loop with per-example row views and 1 - p_gen hoisted (a sensitivity check, not "
        f"the target's reference). Target: speed-up over the loop >= {targets['mixture_speedup']:.0f}x.",
        "",
        "| target len | ours | ours incl. clone | loop reference | speed-up [Q1, Q3] | speed-up incl. clone | "
        "tuned loop | speed-up vs tuned loop | loop's dense part alone | vectorized (prob space) | "
        "vectorized speed-up |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in report["mixture"]:
        t, s = r["copy_step"]["time_s"], r["copy_step"]["speedup"]
        head = s[f"{COPY_OURS} vs loop"]
        lines.append(
            f"| {r['target_length']} | {_time(t[COPY_OURS]['median'])} | "
            f"{_time(t[COPY_OURS_CLONE]['median'])} | {_time(t[COPY_LOOP]['median'])} | "
            f"**{head['median']:.0f}x** {_spread(head, digits=0)} "
            f"{_verdict(head['median'], targets['mixture_speedup'], True)} | "
            f"{s[f'{COPY_OURS_CLONE} vs loop']['median']:.0f}x | {_time(t[COPY_LOOP_TUNED]['median'])} | "
            f"{s[f'{COPY_OURS} vs tuned loop']['median']:.0f}x | {_time(t[COPY_LOOP_DENSE]['median'])} | "
            f"{_time(t[COPY_VEC]['median'])} | {s[f'{COPY_VEC} vs loop']['median']:.1f}x |"
        )
    lines += [
        "",
        "### (b) Secondary: the full mixture from raw logits, log_softmax included (not the target's measure)",
        "",
        "What one decoding step pays in all. Every implementation must pay a vocab-wide log_softmax, so these "
        "speed-ups are bounded by it and are not comparable with (a). Loop = log_softmax over V + N, then the "
        "loop of (a). Gold: `gold_log_probs` against a loop over (example, target position) that builds each "
        "row's distribution and keeps the label's entry.",
        "",
        "| target len | extended_log_probs | dense vectorized | log_softmax + loop | ours vs loop | "
        "ours vs dense | log_softmax alone | gold_log_probs | gold loop | gold vs loop |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in report["mixture"]:
        t, s = r["full_mixture"]["time_s"], r["full_mixture"]["speedup"]
        lines.append(
            f"| {r['target_length']} | {_time(t['extended_log_probs']['median'])} | "
            f"{_time(t['dense vectorized']['median'])} | "
            f"{_time(t['log_softmax + loop reference']['median'])} | "
            f"{s['extended_log_probs vs loop']['median']:.1f}x | "
            f"{s['extended_log_probs vs dense vectorized']['median']:.2f}x | "
            f"{_time(t['log_softmax over V + N alone']['median'])} | "
            f"{_time(t['gold_log_probs']['median'])} | "
            f"{_time(t['gold loop reference (example, target position)']['median'])} | "
            f"{s['gold_log_probs vs loop']['median']:.1f}x |"
        )
    lines += [
        "",
        "Training-side cost of the loss on the same logits, forward + backward (what the training step pays):",
        "",
        "| target len | gold_log_probs fwd+bwd | cross_entropy fwd+bwd (the base's loss) | gold / CE |",
        "|---|---|---|---|",
    ]
    for r in report["mixture"]:
        t, s = r["full_mixture"]["time_s"], r["full_mixture"]["speedup"]["gold fwd+bwd / cross_entropy fwd+bwd"]
        lines.append(
            f"| {r['target_length']} | {_time(t['gold_log_probs fwd+bwd']['median'])} | "
            f"{_time(t['cross_entropy fwd+bwd (base)']['median'])} | {1 / s['median']:.2f}x |"
        )
    return lines + [""]


def _protection(report: dict, targets: dict) -> list[str]:
    p0 = report["protection"][0]
    lines = [
        '## Protected spans: generate() with `protect="placeholders"` vs without',
        "",
        f"One untrained pointer-generator ({p0['size']}, word-level vocabulary of {p0['vocab']} trained on the "
        "embedded corpus, as the main job's), real test-split messages that hold placeholders; "
        f'`processor(texts, protect="placeholders", return_tensors="pt", padding=True)`, then '
        f"`model.generate(**batch)` against the same batch without its `protected_spans` key, {p0['new_tokens']} new "
        "tokens forced with min_new_tokens = max_new_tokens, interleaved (ABBA). Time ratio = with / without, "
        f'median of the per-repeat ratios. Target: time ratio <= {targets["protection_time"]}. "Kept": share of '
        "outputs holding exactly the source's placeholders (the protection at work in what was timed). Encode: one "
        "processor call (Timer), without / with `protect`.",
        "",
        "| batch | beams | spans | without [Q1, Q3] | with [Q1, Q3] | time ratio [Q1, Q3] | kept without -> with | "
        "encode without / with |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in report["protection"]:
        a, b, ratio = r["time_s"]["without"], r["time_s"]["with"], r["time_ratio"]
        lines.append(
            f"| {r['batch']} | {r['num_beams']} | {r['spans']} | {_time(a['median'])} "
            f"[{_time(a['q1'])}, {_time(a['q3'])}] | {_time(b['median'])} [{_time(b['q1'])}, {_time(b['q3'])}] | "
            f"{ratio['median']:.3f} {_spread(ratio)} {_verdict(ratio['median'], targets['protection_time'], False)} | "
            f"{r['placeholders_kept']['without']:.2f} -> {r['placeholders_kept']['with']:.2f} | "
            f"{_time(r['encode_s']['without']['median'])} / {_time(r['encode_s']['with']['median'])} |"
        )
    warned = sorted({w for r in report["protection"] for w in r["span_warnings"]})
    if warned:
        lines += ["", "Warnings during protected generation: " + "; ".join(f"`{w}`" for w in warned)]
    return lines + [""]


def _protection_trained(report: dict, targets: dict, key: str = "protection_trained") -> list[str]:
    """The `protection_trained` section, or with `key="glossary_trained"` the glossary one (the same measurement with
    term bases instead of placeholders, and the term success rate)."""
    section, terms = report[key], key == "glossary_trained"
    title = "Glossaries (terms guaranteed)" if terms else "Protected spans"
    lines = [f"## {title} with a trained model on held-out messages", ""]
    if not section["available"]:
        return lines + [f"Not measured: {section['reason']}.", ""]
    m, src = section["model"], section["sources"]
    trained = m.get("trained_by") or {}
    made = (
        f"trained by `python -m benchmarks.protection --train --steps {trained['steps']}` "
        f"(`training.run_translation` with the main job's recipe, {trained['tokenizer_type']} tokenizer; the full "
        f"command is in the JSON; {trained['wall_s'] / 60:.1f} min, commit {trained['git_commit'][:7]})"
        if trained
        else "an existing folder"
    )
    gen = ", ".join(
        f"{k}={v}"
        for k, v in sorted(m["generation_config"].items())
        if k in ("no_repeat_ngram_size", "oov_copy_limit", "repetition_penalty", "length_penalty")
    )
    decodings = {
        "plain": "*plain*: no n-gram blocking nor OOV copy limit (`training.run_translation` without the "
        "main job's decoding flags, where protected outputs loop more)",
        "saved": f"*saved*: the model's own generation config ({gen or 'defaults'})",
    }
    lines += [
        f"Model `{m['folder']}` ({m['parameters']:,} parameters, {m['tokenizer']} vocabulary of {m['vocab_size']}), "
        f"{made}. Decodings: "
        + "; ".join(decodings[d] for d in section.get("decodings", {"saved": None}))
        + f". Sources: {src['messages']} {src['selection']} "
        f"({src['batch1_messages']} at batch 1). `max_new_tokens` = 2 x the chunk's longest source + 10 (capped by "
        "the model's positions), no forced length: each side stops by itself. One pass = every chunk of the "
        f"setting; {section['repeats']} passes, the two sides alternating chunk by chunk (ABBA). Time ratio = with / "
        "without, median of the per-pass ratios of wall time; CPU ratio: the same of the process's CPU time, which "
        "other processes on a shared machine disturb less. Engine = the seconds inside the protection processor's "
        "`__call__` (the rule engine's own per-step work) as a share of the with-side's time, and the time ratio "
        "less them (what protection's change to the outputs costs); steps ratio: the model's forward calls, with / "
        "without. Length = generated tokens up to and including EOS, "
        'mean; "at limit" = outputs without an EOS within max_new_tokens. Kept = outputs holding exactly the '
        "source's placeholders. chrF (sacreBLEU) against the references; copy-source = the sources themselves."
        + (
            ' Both sides read the sources with their terms written in (the model\'s annotation); "with" also '
            "guarantees them. TSR: WMT's term success rate."
            if terms
            else ""
        ),
        "",
        f"Targets: time ratio <= {targets['protection_trained_time']}, mean length within "
        f"{(targets['protection_length'] - 1) * 100:.0f}% of unprotected, chrF with protection not lower than "
        "without.",
        "",
        "| decoding | batch | beams | msgs | without [Q1, Q3] | with [Q1, Q3] | time ratio [Q1, Q3] | CPU ratio | "
        "engine share (ms a step), ratio less it; steps ratio | mean tokens without -> with (ratio) | at limit "
        "without -> with | "
        "kept without -> with | chrF without -> with | copy-source chrF |"
        + (" TSR without -> with |" if terms else ""),
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|" + ("---|" if terms else ""),
    ]
    for r in section["results"]:
        a, b, ratio, o = r["time_s"]["without"], r["time_s"]["with"], r["time_ratio"], r["outputs"]
        w, p = o["without"], o["with"]
        length_ok = abs(r["length_ratio"] - 1) <= targets["protection_length"] - 1
        lines.append(
            f"| {r.get('decoding', 'saved')} | {r['batch']} | {r['num_beams']} | {r['messages']} | "
            f"{a['median']:.2f} s [{a['q1']:.2f}, {a['q3']:.2f}] | "
            f"{b['median']:.2f} s [{b['q1']:.2f}, {b['q3']:.2f}] | {ratio['median']:.2f} {_spread(ratio, 2)} "
            f"{_verdict(ratio['median'], targets['protection_trained_time'], False)} | "
            + (f"{r['cpu_time_ratio']['median']:.2f} | " if "cpu_time_ratio" in r else "- | ")
            + (
                f"{r['engine_share']:.1%}{_per_step(r)}, {r['time_ratio_less_engine']['median']:.2f}; "
                f"{r['steps_ratio']:.2f} | "
                if "engine_share" in r
                else "- | "
            )
            + f"{w['mean_tokens']:.1f} -> "
            f"{p['mean_tokens']:.1f} ({r['length_ratio']:.2f}) {'met' if length_ok else '**missed**'} | "
            f"{w['hit_limit_count']} -> {p['hit_limit_count']} ({w['hit_limit']:.1%} -> {p['hit_limit']:.1%}) | "
            f"{w['placeholders_kept']:.1%} -> {p['placeholders_kept']:.1%} | {w['chrf']:.1f} -> {p['chrf']:.1f} "
            f"({p['chrf'] - w['chrf']:+.2f}) {_verdict(p['chrf'] - w['chrf'], targets['protection_chrf'], True)} | "
            f"{r['copy_source_chrf']:.1f} |"
            + (f" {w['term_success_rate']:.3f} -> {p['term_success_rate']:.3f} |" if terms else "")
        )
    ranked = sorted(
        section["results"], key=lambda r: (r["batch"] != 16, r["num_beams"] != 4, r.get("decoding", "saved") != "plain")
    )
    examples = [(r, e) for r in ranked[:1] for e in r["looping_with_examples"]][:3]
    if examples:
        r = examples[0][0]
        lines += [
            "",
            "Outputs that ran to the limit with protection and stopped without it "
            f"({r.get('decoding', 'saved')}, batch {r['batch']}, beam {r['num_beams']}; the first three):",
            "",
        ]

        def code(text: str) -> str:
            return "`" + text.replace("`", "'").replace("\n", " ") + "`"

        for _, e in examples:
            lines += [
                f"* source: {code(e['source'])}",
                f"  * without ({e['tokens_without']} tokens): {code(e['without'])}",
                f"  * with ({e['tokens_with']} tokens, limit {e['limit']}): {code(e['with'])}",
            ]
    return lines + [""]


def _copy_info(report: dict) -> list[str]:
    info = report["copy_info"]
    lines = ["## Copy info: generate(..., output_copy_info=True) vs without", ""]
    if not info["available"]:
        return lines + [f"Not measured: {info['reason']}.", ""]
    c0 = info["results"][0]
    lines += [
        "Both with `return_dict_in_generate=True`; the generation benchmark's synthetic sources (length "
        f"{c0['source_length']}, 5% OOV words, vocab {c0['vocab'] // 1024}K), {c0['new_tokens']} new tokens forced, "
        "interleaved (ABBA). Time ratio = on / off, median of the per-repeat ratios. Measured, no target.",
        "",
        "| size | batch | beams | off [Q1, Q3] | on [Q1, Q3] | time ratio [Q1, Q3] |",
        "|---|---|---|---|---|---|",
    ]
    for r in info["results"]:
        a, b, ratio = r["time_s"]["off"], r["time_s"]["on"], r["time_ratio"]
        lines.append(
            f"| {r['size']} | {r['batch']} | {r['num_beams']} | {_time(a['median'])} "
            f"[{_time(a['q1'])}, {_time(a['q3'])}] | {_time(b['median'])} [{_time(b['q1'])}, {_time(b['q3'])}] | "
            f"{ratio['median']:.3f} {_spread(ratio)} |"
        )
    return lines + [""]


def _copy_options(report: dict) -> list[str]:
    results = report["copy_options"]
    r0 = results[0]
    lines = [
        "## Copy options: selective_read, copy_next and both, against the default copy model",
        "",
        f"The same base and copy weights, the option's own weights random; training: one step at batch {r0['batch']} "
        f"(64 source and target tokens); generate(): synthetic sources of {r0['source_length']} tokens, "
        f"{r0['new_tokens']} new tokens forced. Interleaved (ABBA); time ratio = on / off, median of the per-repeat "
        "ratios. Targets: training <= 1.05, generation <= 1/0.95 = 1.053.",
        "",
        "| option | size | what | batch | beams | off | on | time ratio [Q1, Q3] |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        a, b, ratio = r["time_s"]["off"], r["time_s"]["on"], r["time_ratio"]
        lines.append(
            f"| {r['option']} | {r['size']} | {r['what']} | {r['batch']} | {r['num_beams'] or ''} | "
            f"{_time(a['median'])} | {_time(b['median'])} | {ratio['median']:.3f} {_spread(ratio)} |"
        )
    return lines + [""]


def markdown(report: dict) -> str:
    """The run's tables, each section present when the run measured it."""
    targets = report["targets"]
    lines = _header(report)
    if report.get("training"):
        lines += _training(report, targets)
    if report.get("generation"):
        lines += _generation(report, targets)
    if report.get("step"):
        lines += _step(report)
    if report.get("protection"):
        lines += _protection(report, targets)
    for key in ("protection_trained", "glossary_trained"):
        if report.get(key):
            lines += _protection_trained(report, targets, key)
    if report.get("copy_info"):
        lines += _copy_info(report)
    if report.get("copy_options"):
        lines += _copy_options(report)
    if report.get("mixture"):
        lines += _mixture(report, targets)
    return "\n".join(lines)


def _panels(report: dict) -> list[tuple]:
    # (title, bar labels, [{"median", "q1", "q3"}], target or None, higher is better)
    targets, panels = report["targets"], []
    if report.get("training"):
        labels = [f"{r['size']}\nL{r['length']} V{r['vocab'] // 1024}K" for r in report["training"]]
        panels.append(
            (
                "Training step time (PG / base)",
                labels,
                [r["time_ratio"] for r in report["training"]],
                targets["train_time"],
                False,
            )
        )
        panels.append(
            (
                "Peak training memory (PG / base)",
                labels,
                [
                    {"median": r["memory_ratio"], "q1": r["memory_ratio"], "q3": r["memory_ratio"]}
                    for r in report["training"]
                ],
                targets["train_memory"],
                False,
            )
        )
    if report.get("generation"):
        labels = [f"{r['size']}\nb{r['batch']} beam{r['num_beams']}" for r in report["generation"]]
        panels.append(
            (
                "Generation throughput (PG / base)",
                labels,
                [r["throughput_ratio"] for r in report["generation"]],
                _generation_target(report["generation"][0]["size"], targets),
                True,
            )
        )
    if report.get("step"):
        labels = [f"{r['size']}\nb{r['batch']} beam{r['num_beams']}" for r in report["step"]]
        panels.append(
            (
                "One decoding step, base time / PG time",
                labels,
                [{"median": r["step_ratio"], "q1": r["step_ratio"], "q3": r["step_ratio"]} for r in report["step"]],
                None,
                True,
            )
        )
    if report.get("protection"):
        labels = [f"b{r['batch']} beam{r['num_beams']}" for r in report["protection"]]
        panels.append(
            (
                "Generation time, protected / unprotected",
                labels,
                [r["time_ratio"] for r in report["protection"]],
                targets["protection_time"],
                False,
            )
        )
    trained = report.get("protection_trained")
    if trained and trained["available"]:
        labels = [f"{r.get('decoding', 'saved')}\nb{r['batch']} beam{r['num_beams']}" for r in trained["results"]]
        panels.append(
            (
                "Trained model, held-out messages:\ngeneration time, protected / unprotected",
                labels,
                [r["time_ratio"] for r in trained["results"]],
                targets["protection_trained_time"],
                False,
            )
        )
        panels.append(
            (
                "Trained model, held-out messages:\nmean output length, protected / unprotected",
                labels,
                [
                    {"median": r["length_ratio"], "q1": r["length_ratio"], "q3": r["length_ratio"]}
                    for r in trained["results"]
                ],
                targets["protection_length"],
                False,
            )
        )
    if report.get("copy_info") and report["copy_info"]["available"]:
        results = report["copy_info"]["results"]
        panels.append(
            (
                "Generation time, copy info on / off",
                [f"b{r['batch']} beam{r['num_beams']}" for r in results],
                [r["time_ratio"] for r in results],
                None,
                False,
            )
        )
    if report.get("mixture"):
        labels = [f"copy step\nT={r['target_length']}" for r in report["mixture"]]
        stats = [r["copy_step"]["speedup"][f"{COPY_OURS} vs loop"] for r in report["mixture"]]
        panels.append(
            (
                "Copy step: mix_into_log_probs speed-up over the\n(example, source position) loop (x)",
                labels,
                stats,
                targets["mixture_speedup"],
                True,
            )
        )
    return panels


def plot(report: dict, path: Path) -> None:
    """Bar charts of every ratio with its [Q1, Q3] spread and target line (green met, red missed), saved to `path`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = _panels(report)
    cols = min(2, len(panels))
    rows = (len(panels) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(6 * cols, 4.2 * rows), squeeze=False)
    for ax in axes.flat[len(panels) :]:
        ax.set_visible(False)
    for ax, (title, labels, stats, target, higher) in zip(axes.flat, panels):
        medians = [s["median"] for s in stats]
        err = [[m - s["q1"] for m, s in zip(medians, stats)], [s["q3"] - m for m, s in zip(medians, stats)]]
        if target is None:
            colors = ["tab:blue"] * len(medians)
        else:
            colors = ["tab:green" if (m >= target if higher else m <= target) else "tab:red" for m in medians]
        ax.bar(range(len(medians)), medians, yerr=err, capsize=3, color=colors)
        for i, m in enumerate(medians):
            ax.annotate(
                f"{m:.0f}x" if "speed-up" in title else f"{m:.3f}",
                (i, m),
                textcoords="offset points",
                xytext=(8, 2),
                fontsize=7,
            )
        if target is not None:
            ax.axhline(target, color="black", linestyle="--", linewidth=1, label=f"target {target:g}")
            ax.legend(fontsize=8)
        if "speed-up" not in title:
            ax.axhline(1.0, color="gray", linewidth=0.8)
        else:
            ax.set_yscale("log")
            ax.set_ylim(bottom=1)
        ax.set_xticks(range(len(labels)))
        ax.set_xticklabels(labels, fontsize=8)
        ax.set_title(title, fontsize=10)
    m = report["machine"]
    fig.suptitle(
        f"{m['cpu']} ({m['cores_available']} cores, torch {m['torch']}, {m['device']}) - {report['finished']}",
        fontsize=9,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write(report: dict, out: Path, name: str = "latest") -> list[Path]:
    """`name`.md and `name`.png in `out` from the run's JSON; returns their paths."""
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{name}.md", out / f"{name}.png"]
    paths[0].write_text(markdown(report))
    if not _panels(report):  # nothing measured (e.g. protection_trained without a model): no picture
        paths[1].unlink(missing_ok=True)
        return paths[:1]
    plot(report, paths[1])
    return paths


# ---------------------------------------------------------------------------------------------------------------------
# The README's cost table: one number per cell, from the result folders' latest.json
# ---------------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CostRow:
    """One row of the README's cost table: the settings' ratios of one result folder, reduced to the worst one.

    `ratios` reads them from the folder's latest.json, `target` the bound from its `targets`; `higher_is_better`
    says which end is the worst. The detail of each row (every setting, the controls, the runs) is in
    benchmarks/README.md."""

    label: str
    folder: str
    ratios: Callable[[dict], list[float]]
    target: Callable[[dict], float]
    higher_is_better: bool = False


# Which measurements the README shows: decided here and nowhere else. `make readme-tables` rewrites the README from
# them; tests/test_readme_tables.py fails while the README and the JSON disagree.
README_COST = (
    CostRow(
        "training step, opus-mt / t5-small / bart-base",
        "checkpoints",
        lambda run: [row["time_ratio"]["median"] for row in run["training"]],
        lambda targets: targets["train_time"],
    ),
    CostRow(
        "generation throughput, the same shapes, batch 1 and 16, greedy / beam 4",
        "checkpoints",
        lambda run: [row["throughput_ratio"]["median"] for row in run["generation"]],
        _checkpoints_target,
        higher_is_better=True,
    ),
    CostRow(
        '`protect="placeholders"` / without, the main job\'s model',
        "protection_trained_recipe",
        lambda run: [row["time_ratio"]["median"] for row in run["protection_trained"]["results"]],
        lambda targets: targets["protection_trained_time"],
    ),
)


def readme_cost_table(results: Path, rows: tuple[CostRow, ...] = README_COST) -> str:
    """The README's cost table: per row, the worst setting's ratio, the target and how many settings meet it.

    Args:
        results: the results folder (`benchmarks/results`), holding `<row.folder>/latest.json`.
        rows: the rows (`README_COST`).

    Returns:
        Markdown: the table and the line naming where its detail is.

    Raises:
        FileNotFoundError: for a row whose folder has no latest.json.
    """
    lines = [
        "| pointer-generator / base | worst setting | target | settings within target |",
        "|---|---:|---:|---:|",
    ]
    for row in rows:
        run = json.loads((results / row.folder / "latest.json").read_text())
        ratios, target = row.ratios(run), row.target(run["targets"])
        met = sum(ratio >= target if row.higher_is_better else ratio <= target for ratio in ratios)
        worst = min(ratios) if row.higher_is_better else max(ratios)
        bound = "≥" if row.higher_is_better else "≤"
        lines.append(f"| {row.label} | {worst:.3f} | {bound} {target:.2f} | {met} of {len(ratios)} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("json", type=Path, nargs="?", help="a run's JSON (benchmarks/results/latest.json)")
    parser.add_argument("--out", type=Path, default=None, help="output folder (default: the JSON's folder)")
    parser.add_argument("--readme", type=Path, help="rewrite this page's cost table (README_COST) instead")
    parser.add_argument("--results", type=Path, default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args(argv)
    if args.readme is not None:
        from training.report import replace_generated_block

        text = replace_generated_block(args.readme.read_text(encoding="utf-8"), "cost", readme_cost_table(args.results))
        args.readme.write_text(text, encoding="utf-8")
        print(f"{args.readme}: cost from {args.results}")
        return
    if args.json is None:
        parser.error("give a run's JSON, or --readme")
    report = json.loads(args.json.read_text())
    for path in write(report, args.out or args.json.parent, args.json.stem):
        print(path)


if __name__ == "__main__":
    main()
