"""training/report.py: the main job's paired bootstrap, markdown table, goals and figure, on the embedded corpus."""

import json
import struct

import numpy as np
import pytest
import sacrebleu

from hf_pgen import metrics
from hf_pgen.corpus import load_en_de_messages
from training import report
from training.report import goals_table, markdown_table, plot_results, significance


@pytest.fixture(scope="module")
def corpus():
    """(sources, references) of the embedded test split: 1.4k real en->de software messages."""
    pairs = load_en_de_messages("test")["translation"]
    return [p["en"] for p in pairs], [p["de"] for p in pairs]


@pytest.fixture(scope="module")
def outputs(corpus):
    sources, references = corpus
    return {
        "copy-source": sources,
        "oracle": references,  # clearly better than copying
        "copy-again": list(sources),  # equal to the baseline
        # between the two: the reference for every third message, the source elsewhere
        "mixed": [r if i % 3 == 0 else s for i, (s, r) in enumerate(zip(sources, references))],
    }


@pytest.fixture(scope="module")
def sig(corpus, outputs):
    return significance(corpus[1], outputs, baseline="copy-source", n_samples=1000, seed=12345)


# -- significance -----------------------------------------------------------------------------------------------------


def test_clearly_better_system_is_significant(sig):
    for key in ("bleu", "chrf"):
        assert sig["systems"]["oracle"][key]["score"] == pytest.approx(100.0)
        for better in ("oracle", "mixed"):
            entry = sig["comparisons"][better]["copy-source"][key]
            assert entry["significant"] and entry["p_value"] < 0.01, (better, key, entry)
            assert entry["difference"] > 0 and entry["ci"][0] > 0
            # the reverse pair is the mirror image, from the same resamples
            reverse = sig["comparisons"]["copy-source"][better][key]
            assert reverse["difference"] == -entry["difference"] and reverse["p_value"] == entry["p_value"]


def test_system_equal_to_the_baseline_is_not_significant(sig):
    for key in ("bleu", "chrf"):
        entry = sig["comparisons"]["copy-again"]["copy-source"][key]
        assert entry["difference"] == 0 and entry["ci"] == [0.0, 0.0]
        assert entry["p_value"] == 1.0 and not entry["significant"]


def test_p_values_are_calibrated_when_systems_are_equally_good(corpus):
    """Two systems that are each right on a random half of the test set (the reference there, the source elsewhere)
    are equally good: over many such pairs about 5% come out significant, and the p-values are uniform on (0, 1]."""
    sources, references = corpus
    n = len(references)
    weights = report._resample_weights(n, 300, seed=0)
    rng = np.random.default_rng(1)
    for key, metric in report._sacrebleu_metrics(references).items():
        copied = report._sentence_statistics(metric, sources)  # (n, k)
        right = report._sentence_statistics(metric, references)
        p_values = []
        for _ in range(100):
            half = rng.random(n) < 0.5  # (n,)
            statistics = {"a": np.where(half[:, None], right, copied), "b": np.where(half[:, None], copied, right)}
            _, pairs = report._paired_bootstrap(metric, report._SCORERS[key], statistics, weights, alpha=0.05)
            p_values.append(pairs["a"]["b"]["p_value"])
        p_values = np.sort(p_values)
        assert (p_values < 0.05).sum() <= 12, (key, p_values)  # 5 expected
        # Kolmogorov distance to the uniform distribution: below 0.2 for a calibrated test (99.9%); a test whose
        # p-values are twice too large or too small lands above 0.3
        steps = np.arange(len(p_values) + 1) / len(p_values)
        distance = max(np.max(steps[1:] - p_values), np.max(p_values - steps[:-1]))
        assert distance < 0.25, (key, distance, p_values)


def test_same_seed_same_result_other_seed_other_resamples(corpus, outputs):
    references = corpus[1][:150]
    systems = {name: hypotheses[:150] for name, hypotheses in outputs.items() if name in ("copy-source", "mixed")}
    first = significance(references, systems, baseline="copy-source", n_samples=200, seed=7)
    assert significance(references, systems, baseline="copy-source", n_samples=200, seed=7) == first
    other = significance(references, systems, baseline="copy-source", n_samples=200, seed=8)
    assert other["systems"]["mixed"]["bleu"]["score"] == first["systems"]["mixed"]["bleu"]["score"]
    assert other["systems"]["mixed"]["bleu"]["ci"] != first["systems"]["mixed"]["bleu"]["ci"]


def test_intervals_contain_the_point_estimates(sig):
    for name, per_metric in sig["systems"].items():
        for key, entry in per_metric.items():
            low, high = entry["ci"]
            assert low <= entry["score"] <= high and low <= entry["mean"] <= high, (name, key, entry)
            assert high > low or name == "oracle"  # every resample of the oracle scores 100
    for name, others in sig["comparisons"].items():
        for other, per_metric in others.items():
            for key, entry in per_metric.items():
                assert entry["ci"][0] <= entry["difference"] <= entry["ci"][1], (name, other, key, entry)


def test_scores_are_sacrebleus_corpus_scores(sig, corpus, outputs):
    references = corpus[1]
    for name in ("copy-source", "mixed"):  # (the oracle's 100 is checked above)
        bleu = sacrebleu.corpus_bleu(outputs[name], [references]).score
        chrf = sacrebleu.corpus_chrf(outputs[name], [references]).score
        assert sig["systems"][name]["bleu"]["score"] == pytest.approx(bleu, abs=1e-9)
        assert sig["systems"][name]["chrf"]["score"] == pytest.approx(chrf, abs=1e-9)
    # and so the project's own metric, which the main job's table reports
    assert metrics.corpus_bleu(outputs["mixed"], references) == pytest.approx(sig["systems"]["mixed"]["bleu"]["score"])


def test_vectorised_scores_match_sacrebleu_on_resamples(corpus):
    """Small resamples hit the edge cases: n-gram orders without a match (smoothing), short outputs (brevity
    penalty), empty outputs, repeated sentences."""
    sources, references = corpus[0][:300], corpus[1][:300]
    first_words = [s.split()[0] if s.split() else "" for s in sources]  # short: brevity penalty, few 4-grams
    hypotheses = [[s, r, w, ""][i % 4] for i, (s, r, w) in enumerate(zip(sources, references, first_words))]
    rng = np.random.default_rng(3)
    scorers = report._sacrebleu_metrics(references)
    statistics = {key: report._sentence_statistics(metric, hypotheses) for key, metric in scorers.items()}
    samples = [rng.integers(0, len(references), size) for size in (1, 1, 2, 3, 5, 20, 200) for _ in range(3)]
    samples.append(np.array([3, 3, 3]))  # an empty output, thrice: no n-gram at all
    for indices in samples:
        picked_hyps, picked_refs = [hypotheses[i] for i in indices], [[references[i] for i in indices]]
        expected = {
            "bleu": sacrebleu.corpus_bleu(picked_hyps, picked_refs).score,
            "chrf": sacrebleu.corpus_chrf(picked_hyps, picked_refs).score,
        }
        weights = np.bincount(indices, minlength=len(references)).astype(np.float64)[None]  # (1, n)
        for key, metric in scorers.items():
            ours = report._SCORERS[key](metric, weights @ statistics[key])[0]
            assert ours == pytest.approx(expected[key], abs=1e-9), (key, indices, picked_hyps)


def test_significance_is_json_and_covers_every_pair(sig):
    assert json.loads(json.dumps(sig)) == sig
    assert sig["baseline"] == "copy-source" and sig["sentences"] == 1357 and sig["n_samples"] == 1000
    names = list(sig["systems"])
    assert names == ["copy-source", "oracle", "copy-again", "mixed"]
    for name in names:
        assert sorted(sig["comparisons"][name]) == sorted(set(names) - {name})
    for key in ("bleu", "chrf"):
        assert "bs:1000" in sig["signatures"][key] and "seed:12345" in sig["signatures"][key]
    assert "tok:13a" in sig["signatures"]["bleu"] and "nc:6" in sig["signatures"]["chrf"]


def test_bad_inputs_are_explained(corpus):
    sources, references = corpus[0][:5], corpus[1][:5]
    with pytest.raises(ValueError, match="one output per reference"):
        significance(references, {"copy-source": sources, "short": sources[:4]}, baseline="copy-source")
    with pytest.raises(ValueError, match="baseline 'copy' is not one of the systems"):
        significance(references, {"copy-source": sources}, baseline="copy")
    with pytest.raises(TypeError, match=r"model\[2\] is NoneType, not str"):
        significance(
            references, {"copy-source": sources, "model": sources[:2] + [None] + sources[3:]}, baseline="copy-source"
        )


# -- markdown ---------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def comparison(sig):
    """comparison.json as training/main.py writes it (scores from `sig`; the other metrics made up)."""

    def system(name, label, trained, protect, log_history=None, **metrics):
        scores = (
            {key: sig["systems"][name][key]["score"] for key in ("bleu", "chrf")}
            if name in sig["systems"]
            else {"bleu": 30.0, "chrf": 40.0}
        )
        return {
            "name": name,
            "label": label,
            "trained": trained,
            "protect": protect,
            "metrics": {**scores, **metrics},
            "log_history": log_history,
        }

    history = [{"step": step, "loss": 6.0 / (1 + step / 500), "learning_rate": 1e-3} for step in range(100, 2001, 100)]
    history += [{"step": step, "eval_loss": 6.5 / (1 + step / 500)} for step in (500, 1000, 1500, 2000)]
    history.append({"step": 2000, "train_loss": 3.1, "train_runtime": 400.0})
    return {
        "date": "2026-12-01",
        "machine": "2 CPU cores",
        "sacrebleu_signature": sig["signatures"]["bleu"],
        "chrf_signature": sig["signatures"]["chrf"],
        "systems": [
            system(
                "copy-source",
                "copy the source verbatim",
                False,
                False,
                placeholders_kept=1.0,
                placeholders_invented=0.0,
                unseen_term_copy=1.0,
                mean_p_gen=None,
                train_tokens_per_second=None,
                wall_s=0.1,
            ),
            system("copy-again", "copy | again", False, False, placeholders_kept=float("nan")),  # most keys missing
            system(
                "mixed",
                "pointer-generator, word-level vocabulary",
                True,
                False,
                history,
                placeholders_kept=0.9312,
                placeholders_invented=0.004,
                unseen_term_copy=0.71,
                mean_p_gen=0.6234,
                train_tokens_per_second=2789.3,
                wall_s=754.0,
            ),
            system(
                "mixed+protect",
                "pointer-generator, protected placeholders",
                False,
                True,
                placeholders_kept=1.0,
                placeholders_invented=0.0,
                unseen_term_copy=0.7,
                mean_p_gen=0.61,
                train_tokens_per_second=None,
                wall_s=31.0,
            ),
            system("oracle", "the references", False, False),
        ],
        "significance": sig,
        "goals": [
            {"goal": "best pointer-generator beats copy-source on BLEU", "met": True, "detail": "p = 0.001"},
            {"goal": "placeholders kept in >= 90% without protection", "met": False, "detail": "85.0%"},
        ],
    }


def _rows(table: str) -> list[list[str]]:
    """The cells of each markdown table row (escaped pipes kept inside their cell)."""
    rows = []
    for line in table.splitlines():
        if line.startswith("|"):
            assert line.endswith("|"), line
            cells = line[1:-1].replace("\\|", "\0").split("|")
            rows.append([cell.strip().replace("\0", "|") for cell in cells])
    return rows


def test_markdown_table_parses_and_marks_significance(comparison):
    table = markdown_table(comparison)
    rows = _rows(table)
    header, separator, body = rows[0], rows[1], rows[2:]
    assert header == [
        "system",
        "sacreBLEU",
        "chrF",
        "placeholders kept",
        "placeholders invented",
        "unseen-term copy",
        "unseen kept where the reference keeps it",
        "term success rate",
        "mean p_gen",
        "training tokens/s",
        "wall time",
    ]
    assert all(len(row) == len(header) for row in rows) and set(separator) <= {"---", "---:"}
    cells = {row[0]: dict(zip(header, row)) for row in body}
    assert list(cells) == [s["label"] for s in comparison["systems"]]

    pgen = cells["pointer-generator, word-level vocabulary"]
    bleu = comparison["significance"]["systems"]["mixed"]["bleu"]
    assert pgen["sacreBLEU"] == f"{bleu['score']:.1f} ({bleu['ci'][0]:.1f}–{bleu['ci'][1]:.1f}) †"
    assert pgen["chrF"].endswith("†") and cells["the references"]["sacreBLEU"].endswith("†")
    assert "†" not in cells["copy | again"]["sacreBLEU"] + cells["copy the source verbatim"]["sacreBLEU"]
    assert (pgen["placeholders kept"], pgen["placeholders invented"], pgen["unseen-term copy"]) == (
        "93.1%",
        "0.4%",
        "71.0%",
    )
    assert (pgen["mean p_gen"], pgen["training tokens/s"], pgen["wall time"]) == ("0.62", "2,789", "12 min 34 s")
    # None, NaN and absent metrics are n/a
    assert cells["copy the source verbatim"]["mean p_gen"] == "n/a"
    assert all(cells["copy | again"][column] == "n/a" for column in header[3:])
    # a system outside the significance test: its score, no interval, no mark
    assert cells["pointer-generator, protected placeholders"]["sacreBLEU"] == "30.0"

    notes = table.split("\n\n", 1)[1]
    assert "† differs from *copy the source verbatim* beyond noise (two-sided p < 0.05)" in notes
    assert comparison["sacrebleu_signature"] in notes and comparison["chrf_signature"] in notes
    assert "2026-12-01, 2 CPU cores" in notes


def test_markdown_table_against_a_second_system_and_without_significance(comparison):
    rows = _rows(markdown_table(comparison, versus=["copy-source", "oracle"]))
    cells = {row[0]: row for row in rows[2:]}
    assert cells["pointer-generator, word-level vocabulary"][1].endswith("†‡")
    assert cells["copy the source verbatim"][1].endswith("‡") and "†" not in cells["copy the source verbatim"][1]

    plain = markdown_table({**comparison, "significance": None, "chrf_signature": None})
    assert "†" not in plain and "interval" not in plain and "chrF signature" not in plain
    assert "sacreBLEU signature" in plain
    assert _rows(plain)[2][1:3] == [f"{comparison['systems'][0]['metrics'][k]:.1f}" for k in ("bleu", "chrf")]
    with pytest.raises(ValueError, match="not systems of the comparison"):
        markdown_table(comparison, versus=["subword-nocopy"])
    with pytest.raises(ValueError, match="needs comparison\\['significance'\\]"):
        markdown_table({**comparison, "significance": None}, versus=["copy-source"])


def test_goals_table(comparison):
    text = goals_table(comparison)
    assert text.splitlines() == [
        "**1 of 2 goals met.**",
        "",
        "- **met**: best pointer-generator beats copy-source on BLEU (p = 0.001)",
        "- **missed**: placeholders kept in >= 90% without protection (85.0%)",
    ]


# -- figure -----------------------------------------------------------------------------------------------------------


def _png_size(path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", data[:16]
    return struct.unpack(">II", data[16:24])


def test_plot_writes_a_png_and_leaves_pyplot_alone(comparison, tmp_path):
    import sys

    import matplotlib
    import matplotlib.image

    backend, had_pyplot = matplotlib.get_backend(), "matplotlib.pyplot" in sys.modules
    path = plot_results(comparison, tmp_path / "main" / "results.png")
    assert path == tmp_path / "main" / "results.png"
    width, height = _png_size(path)
    assert width > 1000 and height > 500
    pixels = matplotlib.image.imread(path)  # (height, width, 4)
    assert pixels.shape[:2] == (height, width) and pixels[..., :3].std() > 0.05  # not a blank canvas
    assert matplotlib.get_backend() == backend
    assert ("matplotlib.pyplot" in sys.modules) == had_pyplot  # a Figure of its own: pyplot not even imported

    # without intervals and without any training curve it still draws
    bare = {"systems": [dict(s, log_history=None) for s in comparison["systems"]], "significance": None}
    assert _png_size(plot_results(bare, tmp_path / "bare.png"))[0] > 1000
    with pytest.raises(ValueError, match="nothing to plot"):
        plot_results({"systems": []}, tmp_path / "empty.png")


def test_significance_of_means_tells_a_real_difference_from_noise():
    from training.report import significance_of_means

    rng = np.random.default_rng(0)
    base = rng.random(400) * 100
    scores = {
        "lead": {"rougeL": base},
        "better": {"rougeL": base + 3 + rng.normal(0, 5, 400)},
        "same": {"rougeL": base + rng.normal(0, 5, 400)},
    }
    sig = significance_of_means(scores, baseline="lead", n_samples=500)
    assert sig["systems"]["lead"]["rougeL"]["score"] == pytest.approx(base.mean())
    better = sig["comparisons"]["better"]["lead"]["rougeL"]
    assert better["significant"] and better["p_value"] < 0.01 and better["ci"][0] > 0
    assert not sig["comparisons"]["same"]["lead"]["rougeL"]["significant"]
    low, high = sig["systems"]["better"]["rougeL"]["ci"]
    assert low < sig["systems"]["better"]["rougeL"]["score"] < high
    assert sig == significance_of_means(scores, baseline="lead", n_samples=500)  # seeded
    with pytest.raises(ValueError, match="same metrics with one score per example"):
        significance_of_means({"lead": {"rougeL": base}, "short": {"rougeL": base[:10]}}, baseline="lead")
