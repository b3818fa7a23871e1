"""training/neural_metrics.py: BERTScore from a local encoder folder (a tiny BERT built here, its tokenizer trained on
real text), clear errors for a missing model, package or checkpoint, and no download ever attempted."""

import importlib.util
import os

import huggingface_hub.constants as hub
import pytest
from testing_utils import corpus_pairs, tiny_encoder_folder

from training import neural_metrics
from training.neural_metrics import check_metric, neural_scores

pytestmark = pytest.mark.usefixtures("one_torch_thread")

PAIRS = corpus_pairs("validation", limit=40)


@pytest.fixture(scope="module")
def encoder_folder(tmp_path_factory):
    return tiny_encoder_folder(tmp_path_factory.mktemp("tiny-bert"))


@pytest.mark.slow
def test_bertscore_from_a_local_folder(encoder_folder):
    sources = [en for en, _ in PAIRS]
    references = [de for _, de in PAIRS]
    perfect = neural_scores("bertscore", encoder_folder, sources, references, references, num_layers=2)
    assert perfect["bertscore_f1"] == pytest.approx(1.0, abs=1e-4) and perfect["bertscore_layer"] == 2
    shuffled = references[1:] + references[:1]
    worse = neural_scores("bertscore", encoder_folder, sources, shuffled, references)
    assert worse["bertscore_layer"] == 2  # the model's last layer when its name is not one BERTScore knows
    assert 0 < worse["bertscore_f1"] < perfect["bertscore_f1"] - 0.01
    assert 0 < worse["bertscore_precision"] < 1 and 0 < worse["bertscore_recall"] < 1
    with_empty = neural_scores("bertscore", encoder_folder, sources, ["", *references[1:]], references, num_layers=2)
    assert with_empty["bertscore_empty"] == 1  # scores 0: the mean over all sentences loses one in 40
    assert with_empty["bertscore_f1"] == pytest.approx(
        perfect["bertscore_f1"] * (len(PAIRS) - 1) / len(PAIRS), abs=1e-4
    )


def test_scoring_runs_offline_and_restores_the_setting(encoder_folder, monkeypatch):
    seen = []

    def spy(path, predictions, references, batch_size, num_layers):
        seen.append(hub.HF_HUB_OFFLINE)
        return {"bertscore_f1": 1.0}

    monkeypatch.setattr(neural_metrics, "_bertscore", spy)
    monkeypatch.setattr(hub, "HF_HUB_OFFLINE", False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    neural_scores("bertscore", encoder_folder, ["a"], ["b"], ["c"])
    assert seen == [True]
    assert hub.HF_HUB_OFFLINE is False and "HF_HUB_OFFLINE" not in os.environ


def test_a_missing_model_or_package_is_named_before_any_work(encoder_folder, tmp_path, monkeypatch):
    with pytest.raises(ValueError, match=r"--metric_model .*nowhere does not exist: it must be a local model folder"):
        check_metric("bertscore", tmp_path / "nowhere")
    with pytest.raises(ValueError, match="holds no config.json"):
        check_metric("bertscore", tmp_path)
    with pytest.raises(ValueError, match=r"Unknown neural metric 'bleurt'"):
        check_metric("bleurt", encoder_folder)
    with pytest.raises(ValueError, match="3 sources, 2 predictions and 2 references"):
        neural_scores("bertscore", encoder_folder, ["a", "b", "c"], ["a", "b"], ["a", "b"])

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "comet" else real(name, *a))
    with pytest.raises(ImportError, match=r"needs the unbabel-comet package: pip install unbabel-comet"):
        check_metric("comet", tmp_path)


def test_a_comet_checkpoint_is_found_in_its_folder_or_named_missing(tmp_path, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object() if name == "comet" else real(name, *a))
    with pytest.raises(ValueError, match="no COMET checkpoint there"):
        check_metric("comet", tmp_path)
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "checkpoints" / "model.ckpt").write_bytes(b"")
    assert check_metric("comet", tmp_path) == tmp_path / "checkpoints" / "model.ckpt"
    assert check_metric("comet", tmp_path / "checkpoints" / "model.ckpt") == tmp_path / "checkpoints" / "model.ckpt"
