"""What run_translation and run_summarization measure beyond the Trainer's metrics, and how they write predictions.

Decoding with copies and the metrics themselves live in the library (`hf_pgen.build_compute_metrics`,
`hf_pgen.metrics`); this module adds the teacher-forced mean p_gen, the prediction file and the copy records.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from hf_pgen import batch_decode_with_oovs, is_pointer_generator
from hf_pgen.trainer_pointer_generator import EXAMPLE_INDEX

__all__ = ["mean_p_gen", "decode_predictions", "write_predictions", "write_copy_records"]


@torch.no_grad()
def mean_p_gen(trainer, dataset) -> float | None:
    """Mean p_gen over the reference tokens of `dataset`, teacher-forced; None for a model without a copy head.

    Under DDP every process scores its shard and the sums are added up (the few examples that pad the last
    distributed batch count twice).
    """
    model = trainer.model
    if not is_pointer_generator(model):
        return None
    model.eval()
    total = torch.zeros(2, dtype=torch.float64, device=trainer.args.device)  # (sum of p_gen, tokens)
    for batch in trainer.get_test_dataloader(dataset):
        batch.pop(EXAMPLE_INDEX, None)
        batch = trainer._prepare_inputs(batch)
        outputs = model(**batch, output_pointer=True)
        mask = batch["labels"] != -100  # (B, T)
        total[0] += outputs.p_gen[mask].double().sum()
        total[1] += mask.sum()
    total = trainer.accelerator.reduce(total, reduction="sum") if trainer.args.world_size > 1 else total
    return float(total[0] / total[1]) if total[1] > 0 else None


def decode_predictions(
    predictions: np.ndarray,
    oov_words: list[list[str]] | None,
    tokenizer,
    vocab_size: int,
    oov_spacing: list[list[dict]] | None = None,
) -> list[str]:
    """Generated ids (rows in dataset order, -100 padded) as text, copied words spliced in from each row's table
    (and spaced by its `oov_spacing` records, when given)."""
    if isinstance(predictions, tuple):
        predictions = predictions[0]
    spacing = oov_spacing if oov_words is not None else None
    if oov_words is None:
        oov_words = [None] * len(predictions)
    return [
        text.strip()
        for text in batch_decode_with_oovs(
            tokenizer, predictions, oov_words, vocab_size=vocab_size, oov_spacing=spacing
        )
    ]


def write_predictions(path: str | Path, predictions: list[str]) -> None:
    """One prediction per line, in dataset order; a line break inside a prediction is written as the two characters
    `\\n`, so line i is example i."""
    lines = [p.replace("\r\n", "\\n").replace("\n", "\\n").replace("\r", "\\n") for p in predictions]
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_copy_records(
    output_dir: str | Path,
    model,
    tokenizer,
    sources: list[str],
    *,
    task: str = "translation",
    prefix: str = "",
    num_beams: int = 1,
    max_length: int | None = None,
    protect=None,
) -> list[dict]:
    """Run `sources` through `pipeline(task)` ("translation", "summarization") with `return_copy_info=True`, as a
    user would, and write the records to `copy_records.jsonl` (one per line) and `copies.html`
    (`hf_pgen.visualize.to_html`)."""
    import json

    from transformers import pipeline

    from hf_pgen import visualize

    pipe = pipeline(task, model=model, tokenizer=tokenizer, prefix=prefix)
    options = {"num_beams": num_beams, "return_copy_info": True, "batch_size": 16}
    if max_length is not None:
        options["max_length"] = max_length
    if protect is not None:
        options["protect"] = protect
    model.eval()
    records = pipe(list(sources), **options)
    output_dir = Path(output_dir)
    with open(output_dir / "copy_records.jsonl", "w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    visualize.to_html(records, output_dir / "copies.html")
    return records
