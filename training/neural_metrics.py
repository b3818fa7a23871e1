"""Neural metrics from a model the user already has: BERTScore (`bert-score`) or COMET (`unbabel-comet`).

After BLEU and chrF the field reports BERTScore (Zhang et al. 2020) and COMET (Rei et al. 2020). Both score with a
neural model, which nothing here downloads: the user points `--metric_model` at a local folder (a BERT-like encoder
for BERTScore, e.g. a saved `roberta-large` or `xlm-roberta-large`; a COMET checkpoint folder for COMET, e.g.
`wmt22-comet-da` with its `checkpoints/model.ckpt`, whose encoder must be in the local Hugging Face cache), and the
packages users have for them do the scoring:

>>> from training.neural_metrics import neural_scores
>>> neural_scores("bertscore", "models/xlm-roberta-large", sources, predictions, references, num_layers=17)
{'bertscore_precision': 0.87, 'bertscore_recall': 0.86, 'bertscore_f1': 0.86}

Every load runs with `HF_HUB_OFFLINE=1`, so a model that needs something from the Hub fails at once with the
library's own error instead of hanging offline; a missing folder or package is named with the command that fixes it
before any model work (`check_metric`).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
from collections.abc import Sequence
from pathlib import Path

__all__ = ["NEURAL_METRICS", "check_metric", "neural_scores"]

# metric -> (module to import, package to install)
NEURAL_METRICS = {"bertscore": ("bert_score", "bert-score"), "comet": ("comet", "unbabel-comet")}


@contextlib.contextmanager
def _offline():
    """Offline Hub mode for the duration: no download is ever attempted. `huggingface_hub` reads HF_HUB_OFFLINE once,
    at import, into `constants.HF_HUB_OFFLINE` (what its requests check), so both are set."""
    import huggingface_hub.constants as hub

    previous, previous_constant = os.environ.get("HF_HUB_OFFLINE"), hub.HF_HUB_OFFLINE
    os.environ["HF_HUB_OFFLINE"], hub.HF_HUB_OFFLINE = "1", True
    try:
        yield
    finally:
        hub.HF_HUB_OFFLINE = previous_constant
        if previous is None:
            os.environ.pop("HF_HUB_OFFLINE", None)
        else:
            os.environ["HF_HUB_OFFLINE"] = previous


def _comet_checkpoint(path: Path) -> Path:
    """The `.ckpt` file of a COMET model: the path itself, or `checkpoints/model.ckpt` (or the one `.ckpt`) below it."""
    if path.is_file():
        return path
    for candidate in (path / "checkpoints" / "model.ckpt", path / "model.ckpt"):
        if candidate.is_file():
            return candidate
    found = sorted(path.rglob("*.ckpt"))
    if len(found) == 1:
        return found[0]
    raise ValueError(
        f"--metric_model {path}: no COMET checkpoint there (looked for checkpoints/model.ckpt, model.ckpt and a single "
        "*.ckpt). Point it at a COMET model folder as `comet-score` downloads it, or at its .ckpt file."
    )


def check_metric(metric: str, model_path: str | os.PathLike) -> Path:
    """That `metric` can be computed with the model at `model_path`: a known metric, its package installed, and a
    local model in the form the package reads. Returns the path to load.

    Raises:
        ValueError: an unknown metric, a path that does not exist, or a folder that holds no such model.
        ImportError: the metric's package is not installed (the message says which to install).
    """
    if metric not in NEURAL_METRICS:
        raise ValueError(f"Unknown neural metric {metric!r}: use one of {sorted(NEURAL_METRICS)}.")
    module, package = NEURAL_METRICS[metric]
    if importlib.util.find_spec(module) is None:
        raise ImportError(
            f"The {metric} metric needs the {package} package: pip install {package} (or hf_pgen[neural-metrics])."
        )
    path = Path(model_path)
    if not path.exists():
        raise ValueError(
            f"--metric_model {path} does not exist: it must be a local model folder (nothing is downloaded)."
        )
    if metric == "comet":
        return _comet_checkpoint(path)
    if not (path / "config.json").is_file():
        raise ValueError(
            f"--metric_model {path} holds no config.json: BERTScore needs a local Transformers encoder folder "
            "(save_pretrained of e.g. roberta-large or xlm-roberta-large, with its tokenizer)."
        )
    return path


def _bertscore(path: Path, predictions, references, batch_size: int, num_layers: int | None) -> dict[str, float]:
    import torch
    from bert_score import BERTScorer
    from bert_score.utils import model2layers
    from transformers import AutoConfig

    if num_layers is None:
        # The layer BERTScore's authors chose for a model of this name, else the last one.
        num_layers = model2layers.get(path.name) or AutoConfig.from_pretrained(path).num_hidden_layers
    scorer = BERTScorer(model_type=str(path), num_layers=num_layers, batch_size=batch_size, device="cpu")
    # bert-score truncates to the tokenizer's model_max_length, which a folder saved without one sets to 1e30 (an
    # overflow): the encoder's positions are the real limit.
    positions = getattr(AutoConfig.from_pretrained(path), "max_position_embeddings", None)
    if positions and scorer._tokenizer.model_max_length > positions:
        scorer._tokenizer.model_max_length = positions
    # An empty output (or reference) has no token to match: it scores 0. bert-score itself would ask the tokenizer for
    # build_inputs_with_special_tokens([]), which Transformers 5's fast tokenizers no longer have.
    scored = [i for i, (p, r) in enumerate(zip(predictions, references)) if p.strip() and r.strip()]
    totals = torch.zeros(3, len(predictions))
    if scored:
        found = scorer.score([predictions[i] for i in scored], [references[i] for i in scored])
        totals[:, scored] = torch.stack(found)
    precision, recall, f1 = totals.mean(-1).tolist()
    return {
        "bertscore_precision": precision,
        "bertscore_recall": recall,
        "bertscore_f1": f1,
        "bertscore_layer": num_layers,
        "bertscore_empty": len(predictions) - len(scored),
    }


def _comet(checkpoint: Path, sources, predictions, references, batch_size: int) -> dict[str, float]:
    from comet import load_from_checkpoint

    model = load_from_checkpoint(str(checkpoint))
    data = [{"src": s, "mt": p, "ref": r} for s, p, r in zip(sources, predictions, references)]
    output = model.predict(data, batch_size=batch_size, gpus=0, progress_bar=False)
    return {"comet": float(output.system_score)}


def neural_scores(
    metric: str,
    model_path: str | os.PathLike,
    sources: Sequence[str],
    predictions: Sequence[str],
    references: Sequence[str],
    *,
    batch_size: int = 32,
    num_layers: int | None = None,
) -> dict[str, float]:
    """Corpus-level BERTScore or COMET of `predictions` against `references` (COMET also reads the `sources`).

    Args:
        metric: `"bertscore"` or `"comet"`.
        model_path: the local model (see the module docstring).
        sources, predictions, references: one text per test sentence, aligned.
        batch_size: sentences per forward pass.
        num_layers: BERTScore's layer (default: the one its authors chose for a model folder of that name, e.g.
            17 for `roberta-large`, else the model's last layer).

    Returns:
        `{"bertscore_precision", "bertscore_recall", "bertscore_f1"}` (means over sentences, in [0, 1]; a sentence
        whose output or reference is empty scores 0, `bertscore_empty` counts them), with `"bertscore_layer"`; or
        `{"comet": system score}`.

    Raises:
        ValueError, ImportError: as `check_metric`; ValueError also for texts of unequal counts.
    """
    if not len(predictions) == len(references) == len(sources):
        raise ValueError(
            f"{len(sources)} sources, {len(predictions)} predictions and {len(references)} references: one each per "
            "test sentence."
        )
    path = check_metric(metric, model_path)
    with _offline():
        if metric == "bertscore":
            return _bertscore(path, predictions, references, batch_size, num_layers)
        return _comet(path, sources, predictions, references, batch_size)
