"""What copying buys with pretrained-checkpoint tokenizers: stand-ins of T5, Marian, mBART-50 and BART, offline.

Two measurements, written to `benchmarks/results/copy_by_family.md` and `.json`:

1. **Tokenization (every family, no training).** On probe strings holding `🗑️`, `{count}`, a word with `é` and a word
   with `Ø`: what the processor marks as out of vocabulary (OOV), whether the tokenizer alone gives the probe back
   (`tokenizer.decode(input_ids)`: the best any model without copying can do) and whether a perfect copy does
   (`processor.decode(extended_input_ids)`: the best a pointer-generator can do).
2. **Training (the T5 stand-in's tokenizer).** Its vocabulary has no braces (as t5-small's has none) and was
   trained with `character_coverage < 1`. A copier (`PointerGeneratorForConditionalGeneration.from_base`) and its
   no-copy twin (the plain base, same initial weights) train for the same steps on the same batches of a copying task (source = target, corpus
   messages), then copy the probes greedily. Reported per feature: how often the probe comes back exactly, copier vs
   twin, and the twin against its own ceiling (the probe with the unknown characters gone). Two bases over the same
   tokenizer: a small BART-shaped model (learned positions) and the stand-in's own T5. Trained from scratch, T5
   (relative positions only) learns to copy far more slowly: at this budget neither of its two models copies. That
   measures the budget, not the copy mechanism, and says nothing about fine-tuning a pretrained t5-small.

The stand-ins are the tests' own, from `tests/testing_checkpoints.py` (the real tokenizer and model classes,
vocabularies trained on the embedded corpus): this script puts `tests/` on its path (the tests never import
experiments/). Not a test; a few CPU minutes, from the repository root:

    python -m experiments.copy_by_family                                  # 300 steps, batch 32, d_model 64
    python -m experiments.copy_by_family --steps 30 --out /tmp/smoke      # smoke run
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import random
import string
import sys
import tempfile
import time
import warnings
from pathlib import Path

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
warnings.filterwarnings("ignore")

import torch  # noqa: E402
import transformers  # noqa: E402
from transformers import (  # noqa: E402
    AutoModelForSeq2SeqLM,
    AutoTokenizer,
    BartConfig,
    BartForConditionalGeneration,
    DataCollatorForSeq2Seq,
)

import hf_pgen  # noqa: E402, F401
from hf_pgen import (  # noqa: E402
    DataCollatorForPointerGenerator,
    PointerGeneratorForConditionalGeneration,
    PointerGeneratorProcessor,
)

# The stand-in builders are the tests' fixtures (tests/ is no package: its helpers import each other by name).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from testing_checkpoints import CHECKPOINTS, build_checkpoint, t5_checkpoint  # noqa: E402
from testing_tokenizers import corpus_lines  # noqa: E402

transformers.logging.set_verbosity_error()

# The features the README's table names; the é / Ø words rotate so no single word is memorised.
FEATURES = {
    "🗑️": ["🗑️"],
    "{count}": ["{count}"],
    "é": ["Café", "résumé", "Pokémon", "Beyoncé", "Renée"],
    "Ø": ["Øresund", "Ørsted", "Østfold", "Øystein", "Ødegaard"],
}


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def probe_strings(per_feature: int, seed: int = 0) -> list[tuple[str, str]]:
    """(feature, probe): held-out (test split) messages of 3-8 words with the feature inserted at a random word."""
    rng = random.Random(seed)
    # Plain characters only, so that the inserted feature is the probe's only out-of-vocabulary text.
    plain = set(string.ascii_letters + string.digits + " .,:;!?'\"()%-/")
    bases = [t for t in corpus_lines("en", 3000, split="test") if 3 <= len(t.split()) <= 8 and set(t) <= plain][
        :per_feature
    ]
    probes = []
    for feature, words in FEATURES.items():
        for i, base in enumerate(bases):
            tokens = base.split()
            tokens.insert(rng.randrange(len(tokens) + 1), words[i % len(words)])
            probes.append((feature, " ".join(tokens)))
    return probes


def tokenization_table(probes: list[tuple[str, str]], folder: Path) -> dict:
    """Per family: OOV slots, and how many probes the tokenizer alone / a perfect copy give back exactly."""
    results = {}
    for name, (hub_id, _) in CHECKPOINTS.items():
        path = build_checkpoint(name, folder / name)
        tokenizer = AutoTokenizer.from_pretrained(path)
        width = AutoModelForSeq2SeqLM.from_pretrained(path).config.vocab_size
        processor = PointerGeneratorProcessor(tokenizer, vocab_size=width)
        texts = [text for _, text in probes]
        batch = processor(texts)
        plain = tokenizer.batch_decode(batch["input_ids"], skip_special_tokens=True)
        copied = processor.batch_decode(batch["extended_input_ids"], batch)
        per_feature = {}
        for feature in FEATURES:
            rows = [i for i, (f, _) in enumerate(probes) if f == feature]
            per_feature[feature] = {
                "probes": len(rows),
                "oov_slots": sorted({w for i in rows for w in batch["oov_words"][i]}),
                "without_copy_exact": sum(plain[i] == texts[i] for i in rows),
                "perfect_copy_exact": sum(copied[i] == texts[i] for i in rows),
            }
        results[name] = {"stands_in_for": hub_id, "tokenizer": type(tokenizer).__name__, "features": per_feature}
        log(f"tokenization {name}: {per_feature}")
    return results


def copy_task_rows(processor, texts: list[str]) -> tuple[list[dict], list[dict]]:
    """Training rows for the copier (extended ids, copy labels) and for the twin (the tokenizer's own ids)."""
    features = processor(texts, text_target=texts, max_length=64)
    copier = [
        {k: features[k][i] for k in ("input_ids", "attention_mask", "extended_input_ids", "labels")}
        for i in range(len(texts))
    ]
    plain = processor.tokenizer(texts, text_target=texts, max_length=64, truncation=True)
    twin = [{k: plain[k][i] for k in ("input_ids", "attention_mask", "labels")} for i in range(len(texts))]
    return copier, twin


def train(model, rows, collate, order: list[list[int]], lr: float) -> float:
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    model.train()
    start = time.perf_counter()
    for step, indices in enumerate(order):
        loss = model(**collate([rows[i] for i in indices])).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if step % 100 == 0 or step == len(order) - 1:
            log(f"  {type(model).__name__} step {step}: loss {loss.item():.3f}")
    model.eval()
    return time.perf_counter() - start


def _base_model(architecture: str, path: Path, width: int, d_model: int, seed: int = 0):
    """The encoder-decoder both models start from: the T5 stand-in's own T5, or a BART-shaped model of the same size
    (learned absolute positions) over the same T5 tokenizer ids (pad 0, eos 1, decoder start 0)."""
    torch.manual_seed(seed)
    if architecture == "t5":
        return AutoModelForSeq2SeqLM.from_pretrained(path)
    config = BartConfig(
        vocab_size=width,
        d_model=d_model,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=2 * d_model,
        decoder_ffn_dim=2 * d_model,
        max_position_embeddings=128,
        pad_token_id=0,
        eos_token_id=1,
        bos_token_id=None,
        decoder_start_token_id=0,
        forced_eos_token_id=None,
    )
    return BartForConditionalGeneration(config)


def training_comparison(
    probes,
    folder: Path,
    architecture: str,
    steps: int,
    batch_size: int,
    d_model: int,
    lr: float,
    max_words: int,
    p_gen_bias_init: float,
) -> dict:
    path = t5_checkpoint(folder / f"t5-{architecture}", d_model=d_model)
    tokenizer = AutoTokenizer.from_pretrained(path)
    width = AutoModelForSeq2SeqLM.from_pretrained(path).config.vocab_size  # 1024 rows for 1004 tokens, as T5 pads
    texts = [t for t in corpus_lines("en", 8000) if 3 <= len(t.split()) <= max_words]
    twin = _base_model(architecture, path, width, d_model)  # both start from the same weights
    copier = PointerGeneratorForConditionalGeneration.from_base(
        _base_model(architecture, path, width, d_model),
        unk_token_id=tokenizer.unk_token_id,
        p_gen_bias_init=p_gen_bias_init,
    )  # a base trained from scratch: start the switch undecided (quick start too)
    processor = PointerGeneratorProcessor.from_model(copier, tokenizer)
    copier_rows, twin_rows = copy_task_rows(processor, texts)
    generator = torch.Generator().manual_seed(0)
    order = [torch.randint(len(texts), (batch_size,), generator=generator).tolist() for _ in range(steps)]

    log(f"training, {architecture}")
    torch.manual_seed(0)
    copier_seconds = train(copier, copier_rows, DataCollatorForPointerGenerator(tokenizer, model=copier), order, lr)
    torch.manual_seed(0)
    twin_seconds = train(twin, twin_rows, DataCollatorForSeq2Seq(tokenizer, model=twin), order, lr)

    sources = [text for _, text in probes]
    batch = processor(sources, padding=True, return_tensors="pt")
    with torch.no_grad():
        copier_out = processor.batch_decode(copier.generate(**batch, max_new_tokens=64, num_beams=1), batch)
        twin_ids = twin.generate(
            input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], max_new_tokens=64, num_beams=1
        )
    twin_out = tokenizer.batch_decode(twin_ids, skip_special_tokens=True)
    ceiling = tokenizer.batch_decode(batch["input_ids"], skip_special_tokens=True)  # the probe, unknowns gone

    per_feature = {}
    for feature, words in FEATURES.items():
        rows = [i for i, (f, _) in enumerate(probes) if f == feature]
        inserted = [words[k % len(words)] for k in range(len(rows))]  # the feature's text in each probe
        per_feature[feature] = {
            "probes": len(rows),
            "copier_exact": sum(copier_out[i] == sources[i] for i in rows),
            "twin_exact": sum(twin_out[i] == sources[i] for i in rows),
            "copier_keeps_feature": sum(word in copier_out[i] for i, word in zip(rows, inserted)),
            "twin_keeps_feature": sum(word in twin_out[i] for i, word in zip(rows, inserted)),
            "twin_matches_its_ceiling": sum(twin_out[i] == ceiling[i] for i in rows),
        }
    log(f"training {architecture}: {per_feature}")
    # The first two probes of each feature.
    step = max(1, len(probes) // len(FEATURES))
    examples = [
        {"feature": probes[i][0], "probe": sources[i], "copier": copier_out[i], "twin": twin_out[i]}
        for start in range(0, len(probes), step)
        for i in range(start, min(start + 2, len(probes)))
    ]
    return {
        "architecture": type(twin).__name__,
        "tokenizer": type(tokenizer).__name__,
        "len_tokenizer": len(tokenizer),
        "model_width": width,
        "d_model": d_model,
        "layers": 2,
        "steps": steps,
        "batch_size": batch_size,
        "learning_rate": lr,
        "train_texts": len(texts),
        "max_words": max_words,
        "p_gen_bias_init": p_gen_bias_init,
        "train_seconds": {"copier": round(copier_seconds, 1), "twin": round(twin_seconds, 1)},
        "features": per_feature,
        "examples": examples,
    }


def write_markdown(result: dict, path: Path) -> None:
    lines = [
        "# What copying buys, per tokenizer family (stand-ins, offline)",
        "",
        f"`python -m experiments.copy_by_family` on {result['date']}: {result['platform']}, torch {result['torch']}, "
        f"transformers {result['transformers']}, {result['threads']} thread(s), {result['seconds']:.0f} s in all. "
        f"Probes: {result['probes_per_feature']} held-out test messages (plain ASCII) per feature, the feature inserted "
        "at a random word (the `é` and `Ø` words rotate over five names each). Stand-ins: "
        "`tests/testing_checkpoints.py` (the real tokenizer classes, vocabularies trained on the embedded corpus).",
        "",
        "## 1. Tokenization: the best possible with and without copying (probes given back exactly)",
        "",
        "| stand-in for | tokenizer | feature | OOV slots | without copying (`tokenizer.decode`) | perfect copy "
        "(`processor.decode`) |",
        "|---|---|---|---|---:|---:|",
    ]
    for family in result["tokenization"].values():
        for feature, row in family["features"].items():
            slots = ", ".join(f"`{s}`" for s in row["oov_slots"]) or "none"
            lines.append(
                f"| `{family['stands_in_for']}` | {family['tokenizer']} | `{feature}` | {slots} | "
                f"{row['without_copy_exact']}/{row['probes']} | {row['perfect_copy_exact']}/{row['probes']} |"
            )
    lines += [
        "",
        "## 2. Training: the T5 stand-in's tokenizer, copier vs no-copy twin, same budget",
        "",
        "The twin is the plain base; both start from the same weights and see the same batches of a copying task "
        "(source = target). Greedy decoding. *exact*: the probe comes back byte for byte; *keeps*: the inserted "
        "feature text appears in the output; *twin = ceiling*: the twin gives back the probe minus its unknown "
        "characters, the best it can do.",
    ]
    for training in result["training"].values():
        lines += [
            "",
            f"### {training['architecture']} (d_model {training['d_model']}, {training['layers']}+{training['layers']} "
            f"layers), {training['steps']} steps",
            "",
            f"{training['tokenizer']} ({training['len_tokenizer']} tokens, model width {training['model_width']}, no "
            f"`{{` `}}` in the vocabulary); {training['steps']} batches of {training['batch_size']} from "
            f"{training['train_texts']:,} corpus messages of 3-{training['max_words']} words; AdamW lr "
            f"{training['learning_rate']}; copier `p_gen_bias_init={training['p_gen_bias_init']}`. Training time: "
            f"copier {training['train_seconds']['copier']} s, twin {training['train_seconds']['twin']} s.",
            "",
            "| feature | probes | copier: exact | twin: exact | copier: keeps | twin: keeps | twin = ceiling |",
            "|---|---:|---:|---:|---:|---:|---:|",
        ]
        for feature, row in training["features"].items():
            lines.append(
                f"| `{feature}` | {row['probes']} | {row['copier_exact']} | {row['twin_exact']} | "
                f"{row['copier_keeps_feature']} | {row['twin_keeps_feature']} | "
                f"{row['twin_matches_its_ceiling']} |"
            )
        lines += ["", "| probe | copier | twin |", "|---|---|---|"]
        for example in training["examples"]:
            cells = [example[k].replace("|", "\\|") for k in ("probe", "copier", "twin")]
            lines.append("| " + " | ".join(f"`{c}`" for c in cells) + " |")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--architectures",
        default="bart,t5",
        help="comma-separated: bart (learned positions) and/or t5 (the stand-in's own model)",
    )
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--d-model", type=int, default=64)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--max-words", type=int, default=8, help="longest training message, in words")
    parser.add_argument("--p-gen-bias-init", type=float, default=0.0)
    parser.add_argument("--probes-per-feature", type=int, default=10)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    start = time.perf_counter()
    probes = probe_strings(args.probes_per_feature)
    with tempfile.TemporaryDirectory() as tmp:
        tokenization = tokenization_table(probes, Path(tmp))
        training = {
            architecture: training_comparison(
                probes,
                Path(tmp),
                architecture,
                args.steps,
                args.batch,
                args.d_model,
                args.lr,
                args.max_words,
                args.p_gen_bias_init,
            )
            for architecture in args.architectures.split(",")
        }
    result = {
        "date": datetime.date.today().isoformat(),
        "platform": platform.processor() or platform.machine(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "threads": args.threads,
        "probes_per_feature": args.probes_per_feature,
        "seconds": time.perf_counter() - start,
        "tokenization": tokenization,
        "training": training,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "copy_by_family.json").write_text(json.dumps(result, ensure_ascii=False, indent=2), encoding="utf-8")
    write_markdown(result, args.out / "copy_by_family.md")
    log(f"wrote {args.out / 'copy_by_family.md'} ({result['seconds']:.0f} s)")


if __name__ == "__main__":
    main()
