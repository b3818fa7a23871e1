"""What protected placeholders cost a *trained* model decoding real held-out messages.

`measure_options.bench_protection` times an untrained model forced to a fixed number of new tokens: it reads the
per-step overhead of protection and nothing else. A trained model stops by itself, and protection can change *what*
it writes: longer outputs, or outputs that loop to the length limit, cost far more than the per-step overhead. This
section measures that, on the model a user trains:

* **The model**: a small pointer-generator trained by the project's own `python -m training.run_translation` with
  the main job's recipe as it was before the low-resource sweep (`training.recipe.UNTUNED`: mBART shape of width
  128, 3+3 layers, `--no_repeat_ngram_size 3`, `--oov_copy_limit`, `--placeholder_augmentation`, lr 1e-3, seed 42)
  on the embedded English->German corpus, with a
  byte-level BPE tokenizer (`--train_tokenizer --tokenizer_type bpe`, 8000 tokens) for `--protection-train-steps`
  steps (default 3000: about 6 minutes on an idle core, 9 on a shared one). `--train` builds it under
  `outputs/benchmarks/` if it is not there yet (`train_model`); `--model DIR` uses an existing folder instead (e.g.
  the main job's `outputs/main/pgen-subword`).
* **The sources**: test-split messages (projects unseen in training) that hold a placeholder and fit the model's
  source length whole, `--protection-messages` of them (default 160) spread evenly over the split in corpus order;
  batch 1 decodes every fifth of them (32).
* **The decoding**: `processor(chunk, protect="placeholders", return_tensors="pt", padding=True)`, then
  `model.generate(**batch)` against the same batch without its `protected_spans` key, with natural stopping:
  `max_new_tokens = 2 x the chunk's longest source + 10` (capped by the model's positions), no `min_new_tokens`.
  Batch 1 and 16, greedy and beam 4, each in two decodings (`DECODINGS`): *plain* (no n-gram blocking, no OOV copy
  limit: how `training.run_translation` decodes without the main job's flags) and *saved*
  (the model's own generation config: the main job's `no_repeat_ngram_size=3`, `oov_copy_limit=True`).
* **Timing**: one *pass* = every chunk of the setting, with and without protection; the two alternate chunk by chunk
  (`harness.interleaved_parts`: ABBA, each pair seconds apart), after one untimed warm-up chunk each. Each pass
  encodes its chunks (untimed) with a fresh `PointerGeneratorProcessor`: protection fills tables during generate()
  as it meets new text, kept with the processor, so a second pass over the same batches would find them filled
  (measured: the looping chunks of batch 16 beam 4 took 2.5 s and 1.7 s of CPU warm, 11.7 s and 6.3 s the first
  time); each pass costs what one run over these messages costs a fresh process. Per pass, the
  wall time of each side is the sum over its chunks; time ratio = median of the per-pass paired ratios (with /
  without). The same for the process's CPU time (`time.process_time`), which other processes on a shared machine
  disturb less. The outputs of every pass are checked identical to the first one's (the timed work is the same work
  each time).
* **What came out** (from the first pass): mean output length in tokens (EOS included; the ratio is with / without),
  the share of outputs that reached the length limit without an EOS, the share keeping exactly the source's
  placeholders (`hf_pgen.metrics.placeholder_preservation`), chrF and BLEU (sacreBLEU, `hf_pgen.metrics`) against
  the references, and chrF of the sources themselves (copy-the-source, the trivial floor) on the same messages.
* **What the rule engine costs by itself**: the seconds spent inside `ProtectedSpansLogitsProcessor.__call__` during
  each timed pass (`_engine_clock`), as a share of the with-side's time, and the time ratio less them. The time ratio
  mixes two things: what protection changes in the outputs (longer, shorter, looping) and the engine's own per-step
  work; the second is the share, the first is roughly the ratio less it. With it, the decoding steps of each side
  (the model's forward calls, counted by a forward pre-hook): at batch 16 a batch runs until its longest row ends,
  and beam search until its hypotheses are done, so steps can move where mean lengths do not.

Targets: time ratio <= 1.10 in all four settings, mean output length within 5% of unprotected, chrF with
protection not lower than without.

    python -m benchmarks.run --only protection_trained --train --threads 1   # trains once (~6 min on an idle core),
                                                                             # then ~4.5 min (idle core)
    python -m benchmarks.protection --train          # only build (or find) the cached model, print its folder
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import torch

from .harness import interleaved_parts, log, paired_ratio, summary

__all__ = [
    "DEFAULT_STEPS",
    "bench_protection_trained",
    "cached_model_dir",
    "protection_sources",
    "resolve_model",
    "train_command",
    "train_model",
]

REPO = Path(__file__).resolve().parent.parent
CACHE = REPO / "outputs" / "benchmarks"  # /outputs/ is git-ignored
DEFAULT_STEPS = 3000
DEFAULT_TOKENIZER = "bpe"  # byte-level BPE (`--tokenizer_type bpe`)
VOCAB_SIZE = 8000  # the main job's vocabulary size
MARKER = "benchmark_model.json"  # written after a successful training run: the folder is complete
BATCH1_EVERY = 5  # batch 1 decodes every fifth of the messages
# How the model decodes, on top of num_beams and the length limit. "plain": without the main job's two decoding
# flags (no n-gram blocking, no OOV copy limit), as `python -m training.run_translation` decodes unless told
# otherwise: the condition where protected outputs loop. "saved": the model's own generation config, which
# for a model trained with the main job's recipe holds no_repeat_ngram_size=3 and oov_copy_limit=True.
DECODINGS = {"plain": {"no_repeat_ngram_size": 0, "oov_copy_limit": False}, "saved": {}}


# ---------------------------------------------------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------------------------------------------------


def cached_model_dir(steps: int = DEFAULT_STEPS, tokenizer_type: str = DEFAULT_TOKENIZER) -> Path:
    """Where `train_model` puts the model of this recipe (one folder per steps x tokenizer)."""
    return CACHE / f"protection-pgen-{tokenizer_type}-{steps}"


def train_command(output_dir: Path, steps: int = DEFAULT_STEPS, tokenizer_type: str = DEFAULT_TOKENIZER) -> list[str]:
    """The `python -m training.run_translation` argument list: the main job's recipe (`training.recipe.recipe`) with a
    shared `tokenizer_type` tokenizer trained on the training split, the copy mechanism on, `steps` steps, no
    prediction pass and no checkpoints."""
    from training.recipe import UNTUNED, recipe

    args = recipe(steps, None, 1, UNTUNED)
    args = [a for a in args if a not in ("--do_predict", "--predict_with_generate")]
    return [
        sys.executable,
        "-m",
        "training.run_translation",
        *args,
        "--train_tokenizer",
        "--tokenizer_type",
        tokenizer_type,
        "--tokenizer_vocab_size",
        str(VOCAB_SIZE),
        "--copy_mechanism",
        "--save_strategy",
        "no",
        "--disable_tqdm",
        "true",
        "--output_dir",
        str(output_dir),
        "--overwrite_output_dir",
    ]


def train_model(
    steps: int = DEFAULT_STEPS,
    tokenizer_type: str = DEFAULT_TOKENIZER,
    output_dir: Path | None = None,
    force: bool = False,
) -> Path:
    """Train the benchmark's model unless a complete one is already there; returns its folder.

    Runs `train_command` in a child process with one torch thread (OMP_NUM_THREADS=1), its output in
    `<folder>.log`; deterministic (seed 42, one thread), so the same recipe gives the same model. A folder without
    the marker file (an interrupted run) is trained again from scratch.
    """
    output_dir = Path(output_dir or cached_model_dir(steps, tokenizer_type))
    if (output_dir / MARKER).is_file() and not force:
        return output_dir
    output_dir.parent.mkdir(parents=True, exist_ok=True)
    command = train_command(output_dir, steps, tokenizer_type)
    log_path = output_dir.with_name(output_dir.name + ".log")
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
    }
    log(
        f"training the protection benchmark's model ({tokenizer_type}, {steps} steps, one thread) into {output_dir}; "
        f"log: {log_path}"
    )

    def git(*words: str) -> str:
        return subprocess.run(["git", *words], cwd=REPO, capture_output=True, text=True).stdout.strip()

    commit = git("rev-parse", "HEAD")  # what trains it: the library and the training code, changed or not
    changed = bool(git("status", "--porcelain", "--", "hf_pgen", "training"))
    started = time.perf_counter()
    with open(log_path, "w", encoding="utf-8") as handle:
        done = subprocess.run(command, cwd=REPO, env=env, stdout=handle, stderr=subprocess.STDOUT)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"training failed (exit {done.returncode}); see {log_path}")
    metrics = output_dir / "all_results.json"
    results = json.loads(metrics.read_text()) if metrics.is_file() else {}
    (output_dir / MARKER).write_text(
        json.dumps(
            {
                "command": " ".join(["python", *command[1:]]).replace(f"{REPO}{os.sep}", ""),
                "steps": steps,
                "tokenizer_type": tokenizer_type,
                "wall_s": round(wall, 1),
                "git_commit": commit,
                "hf_pgen_or_training_changed_since_commit": changed,
                "torch": torch.__version__,
                "train_loss": results.get("train_loss"),
                "train_runtime_s": results.get("train_runtime"),
            },
            indent=1,
        )
        + "\n"
    )
    log(f"trained in {wall / 60:.1f} min (train loss {results.get('train_loss')})")
    return output_dir


def resolve_model(
    model: str | Path | None, train: bool, steps: int = DEFAULT_STEPS, tokenizer_type: str = DEFAULT_TOKENIZER
) -> tuple[Path | None, str | None]:
    """(folder, None), or (None, why there is no model). `model` wins; else the cached model of the recipe, trained
    first when `train`."""
    if model is not None:
        folder = Path(model)
        if not (folder / "config.json").is_file():
            return None, f"--model {folder}: no config.json there"
        return folder, None
    folder = cached_model_dir(steps, tokenizer_type)
    if (folder / MARKER).is_file():
        return folder, None
    if train:
        return train_model(steps, tokenizer_type), None
    return None, (
        f"no trained model at {folder.relative_to(REPO)}: add --train to build it (~6-9 min on one core) or "
        "pass --model DIR (e.g. outputs/main/pgen-subword after `make main`)"
    )


# ---------------------------------------------------------------------------------------------------------------------
# The sources
# ---------------------------------------------------------------------------------------------------------------------


def protection_sources(tokenizer, max_source_tokens: int, count: int) -> list[dict]:
    """`count` test-split pairs ({"en", "de"}) whose source holds a placeholder and is at most `max_source_tokens`
    tokens long (read whole), spread evenly over the split, in corpus order."""
    from hf_pgen.corpus import load_en_de_messages
    from hf_pgen.metrics import extract_placeholders

    pairs = [p for p in load_en_de_messages("test")["translation"] if extract_placeholders(p["en"])]
    return _read_whole_spread(tokenizer, pairs, max_source_tokens, count)


# ---------------------------------------------------------------------------------------------------------------------
# The measurement
# ---------------------------------------------------------------------------------------------------------------------


def _generated_rows(sequences: torch.Tensor, eos_id: int, pad_id: int) -> tuple[list[int], list[bool]]:
    """Per output row: new tokens up to and including the first EOS (all when none), and whether it has no EOS
    (ran to the length limit). The first column is the decoder start token."""
    lengths, unfinished = [], []
    for row in sequences[:, 1:].tolist():
        if eos_id in row:
            lengths.append(row.index(eos_id) + 1)
            unfinished.append(False)
        else:
            while row and row[-1] == pad_id:
                row.pop()
            lengths.append(len(row))
            unfinished.append(True)
    return lengths, unfinished


def _encode(new_processor, pairs: list[dict], batch_size: int, max_positions: int, device: str) -> list[dict]:
    """The chunks of one pass, encoded by a fresh processor: protection's tables that generate() fills as it meets
    new text (e.g. what may complete the text before a span) start empty, as in a fresh process. Pairs with "terms"
    (the glossary section) are decoded with their term bases, the others with protected placeholders."""
    processor, chunks = new_processor(), []
    for start in range(0, len(pairs), batch_size):
        part = pairs[start : start + batch_size]
        texts = [p["en"] for p in part]
        guard = {"glossary": [p["terms"] for p in part]} if "terms" in part[0] else {"protect": "placeholders"}
        protected = processor(texts, **guard, return_tensors="pt", padding=True).to(device)
        plain = {k: v for k, v in protected.items() if k != "protected_spans"}
        longest = int(protected["attention_mask"].sum(-1).max())
        limit = min(2 * longest + 10, max_positions - 1)
        chunks.append({"texts": texts, "with": protected, "without": plain, "limit": limit})
    return chunks


@contextlib.contextmanager
def _engine_clock():
    """Yields a one-item list holding the seconds spent so far inside `ProtectedSpansLogitsProcessor.__call__` (the
    rule engine's own per-step work), counted while the block runs: every processor generate() builds from
    `protected_spans` is one of these. The clock costs two `perf_counter` calls a step."""
    from hf_pgen.logits_process_pointer_generator import ProtectedSpansLogitsProcessor as Processor

    spent, call = [0.0], Processor.__call__

    def timed(self, input_ids, scores):
        start = time.perf_counter()
        try:
            return call(self, input_ids, scores)
        finally:
            spent[0] += time.perf_counter() - start

    Processor.__call__ = timed
    try:
        yield spent
    finally:
        Processor.__call__ = call


def _measure_setting(
    model,
    new_processor,
    pairs: list[dict],
    batch_size: int,
    beams: int,
    args: Any,
    max_positions: int,
    decoding: str = "saved",
) -> dict:
    dev = args.device
    sources, references = [p["en"] for p in pairs], [p["de"] for p in pairs]
    processor = new_processor()  # decodes (its caches play no part there)
    chunks = _encode(new_processor, pairs, batch_size, max_positions, dev)
    settings = dict(num_beams=beams, do_sample=False, **DECODINGS[decoding])

    def call(name: str):
        return lambda i: model.generate(**chunks[i][name], max_new_tokens=chunks[i]["limit"], **settings)

    calls = {"without": call("without"), "with": call("with")}
    for fn in calls.values():  # warm-up, untimed: one chunk each
        fn(0)

    marks: list[float] = []  # the engine clock at the start of each pass

    def fresh(r: int) -> None:
        marks.append(engine[0])
        chunks[:] = _encode(new_processor, pairs, batch_size, max_positions, dev)

    first: dict[str, list[torch.Tensor]] = {"without": [], "with": []}
    stable = {"without": True, "with": True}
    steps = {"without": 0, "with": 0}  # decoding steps (the model's forward calls; the encoder is called apart)
    forwards = [0]

    def check(name: str, i: int, result: torch.Tensor) -> None:
        steps[name] += forwards[0]
        forwards[0] = 0
        if len(first[name]) <= i:
            first[name].append(result)
        elif not torch.equal(first[name][i], result):
            stable[name] = False

    counting = model.register_forward_pre_hook(lambda module, inputs: forwards.__setitem__(0, forwards[0] + 1))
    try:
        with _engine_clock() as engine:
            times, cpu_times = interleaved_parts(
                calls, len(chunks), args.protection_repeats, dev, check=check, setup=fresh
            )
            marks.append(engine[0])
    finally:
        counting.remove()
    engine_s = [b - a for a, b in zip(marks, marks[1:])]  # per pass (the "without" side builds no processor)

    eos, pad = model.generation_config.eos_token_id, model.generation_config.pad_token_id
    eos = eos[0] if isinstance(eos, list) else eos
    from hf_pgen.metrics import corpus_bleu, corpus_chrf, placeholder_preservation, term_success_rate

    outcome, texts_out = {}, {}
    for name in ("without", "with"):
        lengths, unfinished, decoded = [], [], []
        for chunk, sequences in zip(chunks, first[name]):
            n, u = _generated_rows(sequences.cpu(), eos, pad)
            lengths += n
            unfinished += u
            decoded += processor.batch_decode(sequences, chunk[name])
        texts_out[name] = decoded
        outcome[name] = {
            "mean_tokens": statistics.fmean(lengths),
            "tokens": lengths,
            "hit_limit": sum(unfinished) / len(unfinished),
            "hit_limit_count": sum(unfinished),
            "placeholders_kept": placeholder_preservation(sources, decoded),
            "chrf": corpus_chrf(decoded, references),
            "bleu": corpus_bleu(decoded, references),
            "outputs_identical_every_pass": stable[name],
        }
        if "terms" in pairs[0]:
            outcome[name]["term_success_rate"] = term_success_rate(sources, decoded, [p["terms"] for p in pairs])
    limits = [c["limit"] for c in chunks for _ in c["texts"]]
    unfinished_with = [
        i
        for i, (n, lim) in enumerate(zip(outcome["with"]["tokens"], limits))
        if n >= lim and outcome["with"]["tokens"][i] > outcome["without"]["tokens"][i]
    ]
    looping = [
        {
            "source": sources[i],
            "reference": references[i],
            "without": texts_out["without"][i],
            "with": texts_out["with"][i],
            "tokens_without": outcome["without"]["tokens"][i],
            "tokens_with": outcome["with"]["tokens"][i],
            "limit": limits[i],
        }
        for i in unfinished_with[:5]
    ]
    longer = sum(a > b for a, b in zip(outcome["with"]["tokens"], outcome["without"]["tokens"]))
    return {
        "decoding": decoding,
        "generate_overrides": DECODINGS[decoding],
        "batch": batch_size,
        "num_beams": beams,
        "messages": len(sources),
        "chunks": len(chunks),
        "max_new_tokens": {
            "rule": "min(2 x longest source in the chunk + 10, positions - 1)",
            "min": min(limits),
            "max": max(limits),
        },
        "spans": sum(len(entry["spans"]) for c in chunks for entry in c["with"]["protected_spans"]),
        "time_s": {name: summary(v) for name, v in times.items()},
        "time_s_per_pass": times,
        "cpu_time_s_per_pass": cpu_times,
        "time_ratio": paired_ratio(times["with"], times["without"]),
        "cpu_time_s": {name: summary(v) for name, v in cpu_times.items()},
        "cpu_time_ratio": paired_ratio(cpu_times["with"], cpu_times["without"]),
        "engine_s_per_pass": engine_s,
        "engine_share": statistics.median(e / w for e, w in zip(engine_s, times["with"])),
        # per decoding step: what the engine costs whatever the model (its share falls as the model's step grows)
        "engine_ms_per_step": 1e3 * sum(engine_s) / max(steps["with"], 1),
        "time_ratio_less_engine": paired_ratio([w - e for w, e in zip(times["with"], engine_s)], times["without"]),
        "steps": steps,
        "steps_ratio": steps["with"] / steps["without"],
        "length_ratio": outcome["with"]["mean_tokens"] / outcome["without"]["mean_tokens"],
        "outputs_longer_with": longer / len(sources),
        "outputs": outcome,
        "copy_source_chrf": corpus_chrf(sources, references),
        "copy_source_bleu": corpus_bleu(sources, references),
        "looping_with_examples": looping,
        "predictions": {"without": texts_out["without"], "with": texts_out["with"]},
    }


def _read_whole_spread(tokenizer, pairs: list[dict], max_source_tokens: int, count: int) -> list[dict]:
    """`count` of `pairs` whose source the model reads whole (at most `max_source_tokens`), spread evenly in order."""
    lengths = [len(ids) for ids in tokenizer([p["en"] for p in pairs])["input_ids"]]
    pairs = [p for p, n in zip(pairs, lengths) if n <= max_source_tokens]
    if len(pairs) <= count:
        return pairs
    step = len(pairs) / count
    return [pairs[int(k * step)] for k in range(count)]


def glossary_sources(tokenizer, max_source_tokens: int, count: int, dictionary: str) -> list[dict]:
    """`count` test-split pairs ({"en", "de", "terms"}) that support a FreeDict term (its source term in the source,
    its target term in the reference: the main job's test term base) and are read whole, spread evenly."""
    from hf_pgen.corpus import load_en_de_messages
    from training.terminology import TermIndex, load_dictionary

    index = TermIndex(load_dictionary(dictionary))
    pairs = []
    for pair in load_en_de_messages("test")["translation"]:
        terms = dict(index.supported(pair["en"], pair["de"]))
        if terms:
            pairs.append({**pair, "terms": terms})
    return _read_whole_spread(tokenizer, pairs, max_source_tokens, count)


_HOLDING = {False: "holding a placeholder", True: "that support a FreeDict term (the main job's test term base)"}


def bench_glossary_trained(args: Any) -> dict:
    """The glossary section: the same measurement with each message's test terms guaranteed instead of protected
    placeholders (TSR too). Target: time ratio <= 1.10 at batch 1 and 16, greedy and beam 4."""
    return bench_protection_trained(args, glossary=True)


def bench_protection_trained(args: Any, glossary: bool = False) -> dict:
    """The section: `{"available": False, "reason": ...}` without a model, else the model, the sources and one result
    per (batch, beams) setting."""
    folder, reason = resolve_model(args.model, args.train, args.protection_train_steps)
    if folder is None:
        log(f"protection_trained: not measured: {reason}")
        return {"available": False, "reason": reason, "results": []}
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    from hf_pgen import PointerGeneratorProcessor, is_pointer_generator
    from hf_pgen.configuration_pointer_generator import max_source_positions

    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForSeq2SeqLM.from_pretrained(folder).to(args.device).eval()
    if not is_pointer_generator(model):
        reason = f"{folder} holds a {model.config.model_type} model, not a pointer-generator"
        log(f"protection_trained: not measured: {reason}")
        return {"available": False, "reason": reason, "results": []}

    def new_processor() -> PointerGeneratorProcessor:
        return PointerGeneratorProcessor.from_model(model, tokenizer)

    max_positions = max_source_positions(model.config, tokenizer)
    if glossary:
        pairs = glossary_sources(tokenizer, max_positions, args.protection_messages, args.dictionary)
    else:
        pairs = protection_sources(tokenizer, max_positions, args.protection_messages)
    batch1 = pairs[::BATCH1_EVERY]
    marker = folder / MARKER
    generation = model.generation_config.to_diff_dict()
    report = {
        "available": True,
        "model": {
            "folder": str(folder.resolve().relative_to(REPO)) if folder.resolve().is_relative_to(REPO) else str(folder),
            "trained_by": json.loads(marker.read_text()) if marker.is_file() else None,
            "parameters": sum(p.numel() for p in model.parameters()),
            "vocab_size": model.config.vocab_size,
            "tokenizer": type(tokenizer.backend_tokenizer.model).__name__
            if hasattr(tokenizer, "backend_tokenizer")
            else type(tokenizer).__name__,
            "generation_config": {k: v for k, v in generation.items() if k != "transformers_version"},
        },
        "sources": {
            "messages": len(pairs),
            "batch1_messages": len(batch1),
            "selection": f"test-split messages {_HOLDING[glossary]}, at most {max_positions} tokens, spread "
            f"evenly in corpus order; batch 1: every {BATCH1_EVERY}th of them",
        },
        "repeats": args.protection_repeats,
        "decodings": {name: DECODINGS[name] for name in args.protection_decodings},
        "results": [],
    }
    # Every call gives max_new_tokens: the saved max_length (for calls without a length; the report above keeps it)
    # would only make Transformers warn on every call that both are set. The CLI does the same.
    model.generation_config.max_length = None
    log(
        f"protection_trained: {report['model']['folder']}, {len(pairs)} messages (batch 1: {len(batch1)}), "
        f"{args.protection_repeats} interleaved passes per setting"
    )
    for decoding in args.protection_decodings:
        for batch_size, subset in ((1, batch1), (16, pairs)):
            for beams in (1, 4):
                t0 = time.perf_counter()
                r = _measure_setting(model, new_processor, subset, batch_size, beams, args, max_positions, decoding)
                report["results"].append(r)
                o = r["outputs"]
                tsr = ""
                if glossary:
                    tsr = f"; TSR {o['without']['term_success_rate']:.3f} -> {o['with']['term_success_rate']:.3f}"
                log(
                    f"{'glossary' if glossary else 'protection'}_trained {decoding} batch {batch_size} beams {beams}: "
                    "without "
                    f"{r['time_s']['without']['median']:.2f} s, with {r['time_s']['with']['median']:.2f} s, ratio "
                    f"{r['time_ratio']['median']:.2f} (CPU time {r['cpu_time_ratio']['median']:.2f}; engine "
                    f"{r['engine_share']:.1%} of with, {r['engine_ms_per_step']:.2f} ms a step, ratio less it "
                    f"{r['time_ratio_less_engine']['median']:.2f}); "
                    f"steps ratio {r['steps_ratio']:.2f}; length ratio "
                    f"{r['length_ratio']:.2f}; at the limit "
                    f"{o['without']['hit_limit']:.1%} -> {o['with']['hit_limit']:.1%}; placeholders kept "
                    f"{o['without']['placeholders_kept']:.1%} -> {o['with']['placeholders_kept']:.1%}; chrF "
                    f"{o['without']['chrf']:.1f} -> {o['with']['chrf']:.1f} (copy-source "
                    f"{r['copy_source_chrf']:.1f}){tsr} [{time.perf_counter() - t0:.0f} s]"
                )
    del model
    gc.collect()
    return report


def main(argv: list[str] | None = None) -> None:
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.protection",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--train", action="store_true", help="train the model if it is not cached yet")
    parser.add_argument("--force", action="store_true", help="train again even if it is cached")
    parser.add_argument("--steps", type=int, default=DEFAULT_STEPS)
    parser.add_argument("--tokenizer-type", default=DEFAULT_TOKENIZER, choices=["bpe", "unigram"])
    parser.add_argument("--print-command", action="store_true", help="print the training command and exit")
    args = parser.parse_args(argv)
    folder = cached_model_dir(args.steps, args.tokenizer_type)
    if args.print_command:
        print(" ".join(["python", *train_command(folder, args.steps, args.tokenizer_type)[1:]]))
        return
    if args.train or args.force:
        folder = train_model(args.steps, args.tokenizer_type, force=args.force)
    print(folder if (folder / MARKER).is_file() else f"not trained yet: {folder} (add --train)")


if __name__ == "__main__":
    main()
