"""What generate() options cost on the pointer-generator itself: protected spans and copy info.

Each option is measured on one model, option on against option off, interleaved (`harness.interleaved`, ABBA) with
the same inputs and exactly the same number of new tokens; the ratio is the median of the per-repeat paired ratios
of wall time (on / off).

* Protection: `processor(texts, protect="placeholders", return_tensors="pt", padding=True)`, then
  `model.generate(**batch)` against the same batch without its `protected_spans` key. Real messages (the embedded
  corpus' test split, those holding a placeholder), the main job's word-level tokenizer, an untrained model. Target:
  time ratio <= 1.10 (`TARGETS["protection_time"]`). The share of outputs that keep every placeholder is recorded
  for both, to show the protection was at work in what was timed. The encode side is timed too (single calls).
* Copy info: `model.generate(**inputs, return_dict_in_generate=True, output_copy_info=True)` against the same call
  without `output_copy_info`, on the synthetic inputs of the generation throughput benchmark. Measured, no
  target. Reported as not available when the installed hf_pgen does not accept the option.
* Copy options (`selective_read`, `copy_next`, both): a training step (forward, backward, AdamW) and greedy / beam
  generate() of the copy model with the option against the same model without it (the same base and copy weights;
  the option's own weights random, as after training). Targets: training step <= 1.05x, generation
  throughput >= 0.95x, i.e. time ratio <= 1/0.95.
"""

from __future__ import annotations

import gc
import warnings
from typing import Any

import torch

from hf_pgen import PointerGeneratorProcessor
from hf_pgen.metrics import placeholder_preservation

from .harness import interleaved, log, paired_ratio, summary, time_call
from .workloads import bart_config, build, make_labels, make_source, protection_workload

__all__ = ["COPY_OPTIONS", "bench_copy_info", "bench_copy_options", "bench_protection", "copy_info_support"]

COPY_OPTIONS = {
    "selective_read": {"selective_read": True},
    "copy_next": {"copy_next": True},
    "both": {"selective_read": True, "copy_next": True},
}

PROTECTION_VOCAB = 8000  # the main job's word-level vocabulary
PROTECTION_TOKENS = (8, 48)  # source lengths (tokens) of the messages used: typical messages, none truncated


def _generated(new_tokens: int):
    def check(name: str, output: Any) -> None:
        sequences = getattr(output, "sequences", output)
        if sequences.shape[1] - 1 != new_tokens:  # minus the decoder start token
            raise RuntimeError(f"{name}: generated {sequences.shape[1] - 1} tokens, expected {new_tokens}")

    return check


def bench_protection(args: Any) -> list[dict]:
    """Protected-span generation against unprotected, batch 1 and 16, greedy and beam 4, `args.new_tokens` new tokens
    (forced with min_new_tokens = max_new_tokens, so both sides run the same number of steps)."""
    size, dev, new_tokens = args.sizes[0], args.device, args.new_tokens
    model, tokenizer, texts = protection_workload(size, PROTECTION_VOCAB, *PROTECTION_TOKENS, dev)
    processor = PointerGeneratorProcessor.from_model(model, tokenizer)
    results = []
    for batch_size in args.gen_batches:
        sources = texts[:batch_size]
        encode = {
            "without": lambda: processor(sources, return_tensors="pt", padding=True),
            "with": lambda: processor(sources, protect="placeholders", return_tensors="pt", padding=True),
        }
        protected = encode["with"]().to(dev)  # the first call also fills the processor's per-vocabulary cache
        plain = {key: value for key, value in protected.items() if key != "protected_spans"}
        encode_s = {name: time_call(fn, args.min_run_time) for name, fn in encode.items()}
        for beams in (1, 4):
            settings = dict(max_new_tokens=new_tokens, min_new_tokens=new_tokens, num_beams=beams, do_sample=False)
            calls = {
                "without": lambda: model.generate(**plain, **settings),
                "with": lambda: model.generate(**protected, **settings),
            }
            with warnings.catch_warnings(record=True) as caught:  # run.py ignores warnings; these are results
                warnings.simplefilter("always")
                times = interleaved(calls, args.repeats, args.warmup_gen, dev, check=_generated(new_tokens))
            kept = {
                name: placeholder_preservation(sources, processor.batch_decode(call(), protected))
                for name, call in calls.items()
            }
            results.append(
                {
                    "size": size,
                    "vocab": model.config.vocab_size,
                    "batch": batch_size,
                    "num_beams": beams,
                    "new_tokens": new_tokens,
                    "source_tokens": int(protected["attention_mask"].sum(-1).max()),
                    "spans": sum(len(entry["spans"]) for entry in protected["protected_spans"]),
                    "time_s": {name: summary(v) for name, v in times.items()},
                    "time_ratio": paired_ratio(times["with"], times["without"]),
                    "placeholders_kept": kept,
                    "span_warnings": sorted(
                        {str(w.message)[:200] for w in caught if "protected span" in str(w.message).lower()}
                    ),
                    "encode_s": encode_s,
                }
            )
            r = results[-1]
            log(
                f"protection batch {batch_size} beams {beams}: without {r['time_s']['without']['median'] * 1e3:.0f} "
                f"ms, with {r['time_s']['with']['median'] * 1e3:.0f} ms, ratio {r['time_ratio']['median']:.3f}; "
                f"placeholders kept {kept['without']:.2f} -> {kept['with']:.2f}"
            )
    del model
    gc.collect()
    return results


def copy_info_support(model: torch.nn.Module, inputs: dict) -> str | None:
    """None when `generate(..., return_dict_in_generate=True, output_copy_info=True)` returns the copy info
    (`p_gen`, `pointer_attentions`, `copy_shares`); otherwise why not, in one line."""
    try:
        out = model.generate(**inputs, max_new_tokens=1, return_dict_in_generate=True, output_copy_info=True)
    except (TypeError, ValueError) as error:
        if "output_copy_info" not in str(error):
            raise
        return f"this hf_pgen's generate() does not accept output_copy_info ({type(error).__name__})"
    lacking = [f for f in ("p_gen", "pointer_attentions", "copy_shares") if getattr(out, f, None) is None]
    return f"generate(output_copy_info=True) returned no {', '.join(lacking)}" if lacking else None


def bench_copy_info(size: str, args: Any) -> dict:
    """generate() with `output_copy_info=True` against without (both `return_dict_in_generate=True`), batch 1 and
    16, greedy and beam 4, on the generation benchmark's synthetic sources."""
    vocab, source_len, new_tokens, dev = args.gen_vocab, args.gen_source_length, args.new_tokens, args.device
    model = build("pg", bart_config(size, vocab, source_len), dev).eval()
    input_ids, extended = make_source(1, source_len, vocab, seed=2)
    reason = copy_info_support(model, dict(input_ids=input_ids.to(dev), extended_input_ids=extended.to(dev)))
    report = {"available": reason is None, "reason": reason, "results": []}
    if reason is not None:
        log(f"copy info: not available: {reason}")
        return report
    for batch in args.gen_batches:
        input_ids, extended = make_source(batch, source_len, vocab, seed=2)
        inputs = dict(
            input_ids=input_ids.to(dev),
            attention_mask=torch.ones_like(input_ids).to(dev),
            extended_input_ids=extended.to(dev),
        )
        for beams in (1, 4):
            settings = dict(
                max_new_tokens=new_tokens,
                min_new_tokens=new_tokens,
                num_beams=beams,
                do_sample=False,
                return_dict_in_generate=True,
            )
            calls = {
                "off": lambda: model.generate(**inputs, **settings),
                "on": lambda: model.generate(**inputs, **settings, output_copy_info=True),
            }
            times = interleaved(calls, args.repeats, args.warmup_gen, dev, check=_generated(new_tokens))
            report["results"].append(
                {
                    "size": size,
                    "vocab": vocab,
                    "source_length": source_len,
                    "new_tokens": new_tokens,
                    "batch": batch,
                    "num_beams": beams,
                    "time_s": {name: summary(v) for name, v in times.items()},
                    "time_ratio": paired_ratio(times["on"], times["off"]),
                }
            )
            r = report["results"][-1]
            log(
                f"copy info {size} batch {batch} beams {beams}: off {r['time_s']['off']['median'] * 1e3:.0f} ms, "
                f"on {r['time_s']['on']['median'] * 1e3:.0f} ms, ratio {r['time_ratio']['median']:.3f}"
            )
    del model
    gc.collect()
    return report


def bench_copy_options(size: str, args: Any) -> list[dict]:
    """Each copy option against the default copy model: one training step at batch `args.batch` (source = target
    length 64), and generate() of `args.new_tokens` tokens at batch 1 and 16, greedy and beam 4."""
    vocab, source_len, new_tokens, dev = args.gen_vocab, args.gen_source_length, args.new_tokens, args.device
    config = bart_config(size, vocab, max(source_len, 64))
    input_ids, extended = make_source(args.batch, 64, vocab, seed=1)
    labels = make_labels(extended, 64, vocab, seed=1)
    train_inputs = dict(
        input_ids=input_ids.to(dev),
        attention_mask=torch.ones_like(input_ids).to(dev),
        extended_input_ids=extended.to(dev),
        labels=labels.to(dev),
    )
    results = []
    for option, settings in COPY_OPTIONS.items():
        models = {"off": build("pg", config, dev), "on": build("pg", config, dev, **settings)}
        generator = torch.Generator().manual_seed(0)
        with torch.no_grad():
            for name, param in models["on"].named_parameters():
                if name.startswith(("selective_read.", "copy_next.")):
                    param.copy_(torch.randn(param.shape, generator=generator) * 0.02)
        optimizers = {k: torch.optim.AdamW(m.parameters(), lr=1e-4) for k, m in models.items()}

        def train_step(kind):
            models[kind].train()
            models[kind](**train_inputs).loss.backward()
            optimizers[kind].step()
            optimizers[kind].zero_grad(set_to_none=True)

        times = interleaved({k: (lambda k=k: train_step(k)) for k in models}, args.repeats, args.warmup, dev)
        results.append(
            {
                "option": option,
                "what": "training step",
                "batch": args.batch,
                "num_beams": None,
                "time_s": {k: summary(v) for k, v in times.items()},
                "time_ratio": paired_ratio(times["on"], times["off"]),
            }
        )
        for model in models.values():
            model.eval()
        for batch in args.gen_batches:
            input_ids, extended = make_source(batch, source_len, vocab, seed=2)
            inputs = dict(
                input_ids=input_ids.to(dev),
                attention_mask=torch.ones_like(input_ids).to(dev),
                extended_input_ids=extended.to(dev),
            )
            for beams in (1, 4):
                settings_ = dict(max_new_tokens=new_tokens, min_new_tokens=new_tokens, num_beams=beams, do_sample=False)
                calls = {k: (lambda k=k: models[k].generate(**inputs, **settings_)) for k in models}
                times = interleaved(calls, args.repeats, args.warmup_gen, dev, check=_generated(new_tokens))
                results.append(
                    {
                        "option": option,
                        "what": "generate()",
                        "batch": batch,
                        "num_beams": beams,
                        "time_s": {k: summary(v) for k, v in times.items()},
                        "time_ratio": paired_ratio(times["on"], times["off"]),
                    }
                )
        for r in results[-5:]:
            log(
                f"copy option {option} {size} {r['what']} batch {r['batch']} beams {r['num_beams']}: "
                f"ratio {r['time_ratio']['median']:.3f}"
            )
        del models, optimizers
        gc.collect()
    for r in results:
        r["size"], r["vocab"], r["source_length"], r["new_tokens"] = size, vocab, source_len, new_tokens
    return results
