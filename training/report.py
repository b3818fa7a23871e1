"""The main job's report: which score differences are beyond noise, the markdown table and the results figure.

Pure functions of the main job's results (nothing is trained or decoded here):

>>> from training.report import significance, markdown_table, goals_table, plot_results
>>> sig = significance(references, {"copy-source": sources, "pgen-word": outputs}, baseline="copy-source")
>>> sig["comparisons"]["pgen-word"]["copy-source"]["bleu"]["significant"]
True
>>> comparison["significance"] = sig     # comparison.json, as written by training/main.py
>>> print(markdown_table(comparison))
>>> print(goals_table(comparison))
>>> plot_results(comparison, "outputs/main/results.png")

`comparison` is the main job's comparison.json:

    {"date": str, "machine": str, "sacrebleu_signature": str, "chrf_signature": str,
     "systems": [{"name": str, "label": str, "trained": bool, "protect": bool,
                  "metrics": {"bleu", "chrf", "placeholders_kept", "placeholders_invented", "unseen_term_copy",
                              "mean_p_gen", "train_tokens_per_second", "wall_s"},   # None (or NaN) when n/a
                  "log_history": [...] | None},                                     # trainer_state.json's
                 ...],
     "significance": <what significance() returns> | None,
     "goals": [{"goal": str, "met": bool, "detail": str}, ...]}

`placeholders_kept`, `placeholders_invented` and `unseen_term_copy` are shares of outputs (or of unseen terms) in
[0, 1]; the table and the figure show them as percentages.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

__all__ = [
    "significance",
    "significance_of_means",
    "markdown_table",
    "goals_table",
    "plot_results",
    "format_duration",
    "readme_results_table",
]

_METRICS = ("bleu", "chrf")
_METRIC_NAMES = {"bleu": "sacreBLEU", "chrf": "chrF"}
_MARKS = ("†", "‡", "§", "¶")


# ---------------------------------------------------------------------------------------------------------------------
# Paired bootstrap resampling
# ---------------------------------------------------------------------------------------------------------------------


def significance(
    references: Sequence[str],
    hypotheses_by_system: Mapping[str, Sequence[str]],
    baseline: str,
    n_samples: int = 1000,
    seed: int = 12345,
    alpha: float = 0.05,
) -> dict:
    """Paired bootstrap resampling (Koehn, 2004) of corpus sacreBLEU and chrF, for every pair of systems.

    Every resample draws the test sentences with replacement once, and every system is scored on that same draw,
    so differences between systems are paired. A resample's corpus score comes from the sentences' sufficient
    statistics (n-gram match counts, as sacreBLEU extracts them with its default BLEU and chrF settings, those of
    `hf_pgen.metrics.corpus_bleu` / `corpus_chrf`), all resamples summed in one matrix product and scored in
    vectorised numpy. Counting the n-grams, once per system as for a plain corpus score, is most of the cost: about
    0.4 s per system for the 1.4k test sentences, the 1000 resamples a few milliseconds.

    For a difference `d = score(system) - score(versus)` the p-value is two-sided: under the null hypothesis (no
    true difference) the resampled differences `d_i`, shifted to centre on 0, reach `|d|` or beyond with
    probability `p = (1 + #{|d_i - d| >= |d|}) / (n_samples + 1)`. Outputs identical to the other system's get
    p = 1. Intervals are percentile intervals of the resampled scores (and differences). Over many pairs, about
    `alpha` of the truly equal ones come out "significant" anyway.

    sacreBLEU's own `PairedTest` (`sacrebleu --paired-bs`) is not used: it compares against one baseline only,
    takes its seed from the `SACREBLEU_SEED` environment variable, scores each resample in a Python loop, and
    reports p = 1 / (n_samples + 1), "significant", for a system whose outputs equal the baseline's.

    Args:
        references: one reference per test sentence.
        hypotheses_by_system: each system's outputs, one per test sentence, in the same order.
        baseline: the system the report compares against first (must be a key of `hypotheses_by_system`).
        n_samples: bootstrap resamples.
        seed: seed of the resampling (numpy's default generator): the same seed gives the same result.
        alpha: significance level; `significant` is `p_value < alpha`, intervals cover `1 - alpha`.

    Returns:
        A JSON-serialisable dict:

            {"method": str, "n_samples": int, "seed": int, "alpha": float, "sentences": int, "baseline": str,
             "signatures": {"bleu": str, "chrf": str},      # sacreBLEU signatures, with bs:<n_samples>|seed:<seed>
             "systems": {name: {"bleu": {"score", "mean", "ci": [low, high]}, "chrf": {...}}},
             "comparisons": {name: {other: {"bleu": {"difference", "mean", "ci": [low, high], "p_value",
                                                     "significant"}, "chrf": {...}}}}}

        where `comparisons[a][b]` describes `a - b`, for every ordered pair of distinct systems.

    Example:

    >>> sig = significance(refs, {"copy-source": srcs, "model": outputs}, baseline="copy-source", n_samples=1000)
    >>> sig["systems"]["model"]["bleu"]["ci"]
    [21.3, 25.0]
    >>> sig["comparisons"]["model"]["copy-source"]["chrf"]["p_value"]
    0.000999000999000999
    """
    references = list(references)
    systems = {name: list(hypotheses) for name, hypotheses in hypotheses_by_system.items()}
    _check_inputs(references, systems, baseline, n_samples, alpha)
    n = len(references)
    weights = _resample_weights(n, n_samples, seed)  # (n_samples, n)

    result = {
        "method": "paired bootstrap resampling over sentences; two-sided p-values, percentile intervals",
        "n_samples": int(n_samples),
        "seed": int(seed),
        "alpha": float(alpha),
        "sentences": n,
        "baseline": baseline,
        "signatures": {},
        "systems": {name: {} for name in systems},
        "comparisons": {name: {other: {} for other in systems if other != name} for name in systems},
    }
    for key, metric in _sacrebleu_metrics(references).items():
        statistics = {name: _sentence_statistics(metric, hypotheses) for name, hypotheses in systems.items()}
        per_system, per_pair = _paired_bootstrap(metric, _SCORERS[key], statistics, weights, alpha)
        for name in systems:
            result["systems"][name][key] = per_system[name]
            for other, entry in per_pair[name].items():
                result["comparisons"][name][other][key] = entry
        signature = metric.get_signature()
        signature.update("bs", int(n_samples))
        signature.update("seed", int(seed))
        result["signatures"][key] = signature.format()
    return result


def significance_of_means(
    scores_by_system: Mapping[str, Mapping[str, Sequence[float]]],
    baseline: str,
    n_samples: int = 1000,
    seed: int = 12345,
    alpha: float = 0.05,
) -> dict:
    """`significance` for metrics whose corpus score is the mean of per-example scores (ROUGE F1, say).

    The same paired bootstrap (every system scored on the same resamples of the examples, two-sided p-values,
    percentile intervals); a resample's score is the weighted mean of the per-example scores, all resamples in one
    matrix product.

    Args:
        scores_by_system: `{system: {metric: per-example scores}}`, every system with the same metrics and one score
            per example, in the same order (scale them as the report shows them: ROUGE x 100).
        baseline, n_samples, seed, alpha: as `significance`.

    Returns:
        What `significance` returns, for these metrics (no `signatures`): `systems[name][metric]` holds `score`,
        `mean` and `ci`; `comparisons[a][b][metric]` holds `difference`, `mean`, `ci`, `p_value`, `significant`.
    """
    systems = {
        name: {key: np.asarray(values, dtype=np.float64) for key, values in metrics.items()}
        for name, metrics in scores_by_system.items()
    }
    if baseline not in systems:
        raise ValueError(f"The baseline {baseline!r} is not one of the systems {sorted(systems)}.")
    keys = list(systems[baseline])
    lengths = {(name, key): len(values) for name, metrics in systems.items() for key, values in metrics.items()}
    n = lengths[(baseline, keys[0])] if keys else 0
    if (
        not keys
        or n == 0
        or any(set(metrics) != set(keys) for metrics in systems.values())
        or set(lengths.values()) != {n}
    ):
        raise ValueError(
            f"Every system needs the same metrics with one score per example: got {lengths} (the baseline has {keys})."
        )
    if n_samples < 1 or not 0 < alpha < 1:
        raise ValueError(f"n_samples must be at least 1 and alpha between 0 and 1, got {n_samples} and {alpha}.")
    weights = _resample_weights(n, n_samples, seed)  # (n_samples, n)
    result = {
        "method": "paired bootstrap resampling over examples (means of per-example scores); two-sided p-values, "
        "percentile intervals",
        "n_samples": int(n_samples),
        "seed": int(seed),
        "alpha": float(alpha),
        "sentences": n,
        "baseline": baseline,
        "systems": {name: {} for name in systems},
        "comparisons": {name: {other: {} for other in systems if other != name} for name in systems},
    }
    for key in keys:
        # (n, 2) each: [score, 1], so that a resample's sums give its total and its count of draws
        statistics = {name: np.stack([m[key], np.ones(n)], axis=1) for name, m in systems.items()}
        per_system, per_pair = _paired_bootstrap(None, _mean_scores, statistics, weights, alpha)
        for name in systems:
            result["systems"][name][key] = per_system[name]
            for other, entry in per_pair[name].items():
                result["comparisons"][name][other][key] = entry
    return result


def _mean_scores(_, stats: np.ndarray) -> np.ndarray:
    """(S, 2) summed [score, count] -> (S,) means."""
    return stats[:, 0] / stats[:, 1]


def _check_inputs(references: list, systems: dict, baseline: str, n_samples: int, alpha: float) -> None:
    if not references:
        raise ValueError("significance() needs at least one reference sentence, got none.")
    if not systems:
        raise ValueError("significance() needs at least one system in `hypotheses_by_system`, got none.")
    if baseline not in systems:
        raise ValueError(
            f"The baseline {baseline!r} is not one of the systems {sorted(systems)}; pass the name of "
            f"the system to compare against, e.g. baseline={next(iter(systems))!r}."
        )
    wrong = {name: len(h) for name, h in systems.items() if len(h) != len(references)}
    if wrong:
        raise ValueError(
            f"Every system needs one output per reference ({len(references)} references), but got "
            f"{wrong}: score all systems on the same test sentences, in the same order."
        )
    for name, hypotheses in [("references", references), *systems.items()]:
        bad = next((i for i, h in enumerate(hypotheses) if not isinstance(h, str)), None)
        if bad is not None:
            raise TypeError(
                f"{name}[{bad}] is {type(hypotheses[bad]).__name__}, not str: pass decoded text "
                "(an empty output is '')."
            )
    if n_samples < 1:
        raise ValueError(f"n_samples must be at least 1, got {n_samples} (1000 is usual).")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be between 0 and 1, got {alpha} (0.05 is usual).")


def _resample_weights(n: int, n_samples: int, seed: int) -> np.ndarray:
    """(n_samples, n): how often each resample draws each sentence (n draws with replacement)."""
    draws = np.random.default_rng(seed).integers(0, n, size=(n_samples, n))  # (n_samples, n) sentence indices
    # one bincount for all resamples: resample s counts into bins [s * n, (s + 1) * n)
    flat = (draws + n * np.arange(n_samples)[:, None]).ravel()
    return np.bincount(flat, minlength=n_samples * n).reshape(n_samples, n).astype(np.float64)


def _paired_bootstrap(
    metric, scorer, statistics: Mapping[str, np.ndarray], weights: np.ndarray, alpha: float
) -> tuple[dict, dict]:
    """One metric's bootstrap: per system {score, mean, ci}; per ordered pair (a, b) the statistics of a - b.

    `statistics[name]` is (n, k) per-sentence sufficient statistics; every system is scored on the same resamples.
    """
    n_samples = len(weights)
    quantiles = [100 * alpha / 2, 100 * (1 - alpha / 2)]
    observed = {
        name: _checked_score(metric, scorer, stats.sum(0))
        if metric is not None
        else float(scorer(None, stats.sum(0)[None])[0])
        for name, stats in statistics.items()
    }
    resampled = {name: scorer(metric, weights @ stats) for name, stats in statistics.items()}  # (n_samples,) each
    per_system = {
        name: {
            "score": observed[name],
            "mean": float(resampled[name].mean()),
            "ci": [float(q) for q in np.percentile(resampled[name], quantiles)],
        }
        for name in statistics
    }
    per_pair = {name: {} for name in statistics}
    for name in statistics:
        for other in statistics:
            if other == name:
                continue
            observed_difference = observed[name] - observed[other]
            differences = resampled[name] - resampled[other]  # (n_samples,)
            # Shifted by the observed difference, the resampled differences show how far an observed difference
            # strays from the true one; under the null hypothesis the true difference is 0.
            extreme = np.abs(differences - observed_difference) >= abs(observed_difference)
            p_value = (1 + int(extreme.sum())) / (n_samples + 1)
            per_pair[name][other] = {
                "difference": observed_difference,
                "mean": float(differences.mean()),
                "ci": [float(q) for q in np.percentile(differences, quantiles)],
                "p_value": p_value,
                "significant": p_value < alpha,
            }
    return per_system, per_pair


def _sacrebleu_metrics(references: list[str]) -> dict:
    """sacreBLEU's BLEU and chrF with their default settings, the references pre-processed once for all systems."""
    try:
        from sacrebleu.metrics import BLEU, CHRF
    except ImportError as error:
        raise ImportError(
            "significance() needs sacrebleu: pip install 'sacrebleu>=2.4' (or hf_pgen[training])"
        ) from error
    return {"bleu": BLEU(references=[references]), "chrf": CHRF(references=[references])}


def _sentence_statistics(metric, hypotheses: list[str]) -> np.ndarray:
    """(n, k) per-sentence sufficient statistics against the metric's cached references.

    This is the (private) extraction step that sacreBLEU's own paired tests use; `_checked_score` guards against a
    sacreBLEU version that changes its layout.
    """
    # float64 sums of integer counts stay exact far beyond any test set's size
    return np.asarray(metric._extract_corpus_statistics(hypotheses, None), dtype=np.float64)


def _checked_score(metric, scorer, total: np.ndarray) -> float:
    """The corpus score from summed statistics, checked against sacreBLEU's own computation from the same sums."""
    ours = float(scorer(metric, total[None])[0])
    theirs = float(metric._compute_score_from_stats(total.tolist()).score)
    if not math.isclose(ours, theirs, rel_tol=1e-9, abs_tol=1e-9):
        import sacrebleu

        raise RuntimeError(
            f"The vectorised {type(metric).__name__} gives {ours} where sacrebleu "
            f"{sacrebleu.__version__} gives {theirs} for the same statistics: this sacrebleu version "
            "computes scores differently; pin sacrebleu to 2.4-2.6 or update training/report.py."
        )
    return ours


def _bleu_scores(metric, stats: np.ndarray) -> np.ndarray:
    """(S, 2 + 2 * max_order) summed statistics [sys_len, ref_len, correct..., total...] -> (S,) corpus BLEU.

    sacreBLEU's default: exponential smoothing (the k-th n-gram order without a match counts as 1 / 2^k matches), no
    effective order; no match at all, or an order without any n-gram, scores 0.
    """
    if metric.smooth_method != "exp" or metric.effective_order:
        raise ValueError("The vectorised BLEU supports sacreBLEU's default smoothing only (exp, no effective order).")
    order = metric.max_ngram_order
    sys_len, ref_len = stats[:, 0], stats[:, 1]
    correct, total = stats[:, 2 : 2 + order], stats[:, 2 + order : 2 + 2 * order]  # (S, order) each
    valid = (correct.sum(1) > 0) & (total > 0).all(1)
    halvings = np.cumsum(correct == 0, axis=1)  # (S, order)
    safe_total = np.where(total > 0, total, 1.0)
    precision = np.where(correct > 0, correct, 1.0 / 2.0**halvings) / safe_total
    log_brevity = np.where(sys_len < ref_len, 1.0 - ref_len / np.maximum(sys_len, 1.0), 0.0)
    score = 100.0 * np.exp(log_brevity + np.log(precision).mean(1))
    return np.where(valid, score, 0.0)


def _chrf_scores(metric, stats: np.ndarray) -> np.ndarray:
    """(S, 3 * order) summed statistics [hyp, ref, match] per n-gram order -> (S,) corpus chrF.

    sacreBLEU's default: precision and recall averaged over the orders that both sides have, then the F-beta score.
    """
    if metric.eps_smoothing:
        raise ValueError("The vectorised chrF supports sacreBLEU's default (eps_smoothing=False) only.")
    hyp, ref, match = stats[:, 0::3], stats[:, 1::3], stats[:, 2::3]  # (S, order) each
    both = (hyp > 0) & (ref > 0)
    orders = np.maximum(both.sum(1), 1)
    precision = np.where(both, match / np.where(hyp > 0, hyp, 1.0), 0.0).sum(1) / orders  # (S,)
    recall = np.where(both, match / np.where(ref > 0, ref, 1.0), 0.0).sum(1) / orders
    factor = metric.beta**2
    denominator = factor * precision + recall
    score = 100.0 * (1 + factor) * precision * recall / np.where(denominator > 0, denominator, 1.0)
    return np.where(denominator > 0, score, 0.0)


_SCORERS = {"bleu": _bleu_scores, "chrf": _chrf_scores}


# ---------------------------------------------------------------------------------------------------------------------
# Markdown
# ---------------------------------------------------------------------------------------------------------------------


def _share(value: float) -> str:
    return f"{100 * value:.1f}%"


def format_duration(seconds: float) -> str:
    """How long, as the main job's table and run_translation's card say it: "4.2 s", "7 min 02 s", "1 h 05 min"."""
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes, seconds = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


# (header, metrics key, formatter) of the columns after sacreBLEU and chrF
_COLUMNS = (
    ("placeholders kept", "placeholders_kept", _share),
    ("placeholders invented", "placeholders_invented", _share),
    ("unseen-term copy", "unseen_term_copy", _share),
    ("unseen kept where the reference keeps it", "unseen_kept", _share),
    ("term success rate", "term_success_rate", lambda v: f"{v:.3f}"),
    ("mean p_gen", "mean_p_gen", lambda v: f"{v:.2f}"),
    ("training tokens/s", "train_tokens_per_second", lambda v: f"{v:,.0f}"),
    ("wall time", "wall_s", format_duration),
)


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def markdown_table(comparison: Mapping, versus: Sequence[str] | None = None) -> str:
    """The main job's results as one markdown table (a row per system), footnotes and sacreBLEU signatures under it.

    BLEU and chrF cells show the score, its bootstrap interval (95% by default) and a mark (†, then ‡, ...) for
    each system of `versus` it differs from beyond noise (p < alpha); `versus` defaults to the significance
    baseline. Missing values are "n/a".

    Example:

    >>> print(markdown_table(comparison, versus=["copy-source", "subword-nocopy"]))
    | system | sacreBLEU | chrF | ... |
    |---|---:|---:|...|
    | copy the source verbatim | 32.3 (30.1–34.5) | 30.5 (29.5–31.5) | ... |
    | pointer-generator, word-level vocabulary | 35.0 (32.9–37.1) †‡ | ... |
    """
    systems = comparison.get("systems") or []
    if not systems:
        raise ValueError("comparison['systems'] is empty: nothing to tabulate.")
    sig = comparison.get("significance") or None
    names = {s["name"]: s.get("label") or s["name"] for s in systems}
    if versus is None:
        versus = [sig["baseline"]] if sig else []
    elif versus and not sig:
        raise ValueError(f"versus={list(versus)} needs comparison['significance'] (what significance() returns).")
    if len(versus) > len(_MARKS):
        raise ValueError(f"markdown_table marks significance against at most {len(_MARKS)} systems, got {versus}.")
    unknown = [v for v in versus if v not in names or (sig and v not in sig["systems"])]
    if unknown:
        raise ValueError(
            f"versus={unknown} are not systems of the comparison (and of its significance test): "
            f"choose among {list(names)}."
        )
    marks = dict(zip(versus, _MARKS))

    header = ["system", "sacreBLEU", "chrF"] + [column for column, _, _ in _COLUMNS]
    lines = ["| " + " | ".join(header) + " |", "|---" + "|---:" * (len(header) - 1) + "|"]
    for system in systems:
        metrics = system.get("metrics") or {}
        cells = [_escape(names[system["name"]])]
        for key in _METRICS:
            cells.append(_score_cell(system["name"], key, metrics.get(key), sig, marks))
        for _, key, formatter in _COLUMNS:
            value = metrics.get(key)
            cells.append("n/a" if _missing(value) else formatter(value))
        lines.append("| " + " | ".join(cells) + " |")

    notes = []
    if sig:
        notes.append(
            f"sacreBLEU and chrF: score ({100 * (1 - sig['alpha']):g}% confidence interval, paired "
            f"bootstrap resampling of the {sig['sentences']} test sentences, {sig['n_samples']} resamples, "
            f"seed {sig['seed']})."
        )
        for name, mark in marks.items():
            notes.append(f"{mark} differs from *{_escape(names[name])}* beyond noise (two-sided p < {sig['alpha']}).")
    for key, field in (("bleu", "sacrebleu_signature"), ("chrf", "chrf_signature")):
        signature = comparison.get(field) or (sig or {}).get("signatures", {}).get(key)
        if signature:
            notes.append(f"{_METRIC_NAMES[key]} signature: `{signature}`")
    when = ", ".join(str(comparison[k]) for k in ("date", "machine") if comparison.get(k))
    if when:
        notes.append(f"Measured {when}.")
    return "\n\n".join(["\n".join(lines), *notes]) + "\n"


def _score_cell(name: str, key: str, value, sig: Mapping | None, marks: Mapping[str, str]) -> str:
    if _missing(value):
        return "n/a"
    cell = f"{value:.1f}"
    if sig and name in sig["systems"]:
        low, high = sig["systems"][name][key]["ci"]
        cell += f" ({low:.1f}–{high:.1f})"
        flags = "".join(
            mark
            for other, mark in marks.items()
            if other != name and sig["comparisons"][name][other][key]["significant"]
        )
        cell += f" {flags}" if flags else ""
    return cell


def _escape(text: str) -> str:
    return str(text).replace("|", "\\|")


def goals_table(comparison: Mapping) -> str:
    """The goals the main job measured, as a markdown list: a line per goal, met or missed, and a count.

    Example:

    >>> print(goals_table({"goals": [{"goal": "beats copy-source on BLEU", "met": True, "detail": "35.0 vs 32.3"}]}))
    **1 of 1 goals met.**
    <BLANKLINE>
    - **met**: beats copy-source on BLEU (35.0 vs 32.3)
    """
    goals = comparison.get("goals") or []
    if not goals:
        return "No goals were measured.\n"
    met = sum(bool(goal["met"]) for goal in goals)
    lines = [f"**{met} of {len(goals)} goals met.**", ""]
    for goal in goals:
        detail = f" ({goal['detail']})" if goal.get("detail") else ""
        lines.append(f"- **{'met' if goal['met'] else 'missed'}**: {goal['goal']}{detail}")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------------------------------
# The README's tables: a few systems of comparison.json, one number per cell
# ---------------------------------------------------------------------------------------------------------------------

# Which systems and columns the README shows, and the notes under its tables: decided here and nowhere else. A main
# job with other systems changes these lines, then `make readme-tables` rewrites the README; tests/test_readme_tables.py
# fails while the README and docs/main-job/headline/comparison.json (the last `make main`) disagree.
# (system name in comparison.json, the label the README gives it)
README_SYSTEMS = (
    ("copy-source", "copy the source verbatim"),
    ("subword-nocopy", "no-copy Transformer, unigram subwords, tuned"),
    ("subword-nocopy+protect", '↳ + `protect="placeholders"`'),
    ("pgen-word-sr-cn-ca", "pointer-generator, word-level"),
    ("pgen-subword-sr-ca", "pointer-generator, unigram subwords"),
    ("pgen-subword-sr-ca+protect", '↳ + `protect="placeholders"`'),
)
# (metrics key, header); BLEU and chrF carry a mark where they differ from the significance baseline beyond noise
README_COLUMNS = (
    ("bleu", "BLEU"),
    ("chrf", "chrF"),
    ("placeholders_kept", "placeholders kept"),
    ("unseen_kept", "unseen terms kept"),
)
README_NOTES = (
    "The no-copy Transformer has the low-resource sweep's settings ([tuning](docs/main-job/tuning.md)); at this "
    "budget it reads little of its source ([why](docs/main-job/README.md#what-it-shows)). *Unseen terms kept*: of "
    "the unseen words the reference keeps, the share the output keeps.",
)


def readme_results_table(
    comparison: Mapping, systems: Sequence = README_SYSTEMS, columns: Sequence = README_COLUMNS
) -> str:
    """The README's results table: `systems` as rows, `columns` of their metrics, one number per cell.

    Args:
        comparison: the main job's comparison.json.
        systems: `(name, label)` per row; `columns`: `(metrics key, header)` per column.

    Returns:
        Markdown: the table, the mark's meaning and `README_NOTES`.

    Raises:
        ValueError: for a system or metric the comparison lacks (name it in `README_SYSTEMS` / `README_COLUMNS`).
    """
    by_name = _systems_by_name(comparison, [name for name, _ in systems])
    sig = comparison.get("significance") or None
    baseline = sig["baseline"] if sig else None
    recipe = comparison.get("recipe") or {}
    arguments = recipe.get("run_translation_args") or []
    steps = arguments[arguments.index("--max_steps") + 1] if "--max_steps" in arguments else None
    heading = "**The main job** (`make main`" + (f", {comparison['date']})" if comparison.get("date") else ")")
    if sig:
        heading += f": {sig['sentences']:,} held-out test messages of projects unseen in training"
    if steps and recipe.get("cpu_cores"):
        heading += (
            f"; each trained system is one small Transformer trained from scratch for {int(steps):,} steps on "
            f"{recipe['cpu_cores']} CPU cores"
        )
    heading += " ([details](docs/main-job/README.md))."
    lines = [
        _wrapped(heading),
        "",
        "| system | " + " | ".join(header for _, header in columns) + " |",
        "|---" + "|---:" * len(columns) + "|",
    ]
    for name, label in systems:
        metrics = by_name[name].get("metrics") or {}
        cells = [label]
        for key, _ in columns:
            if key not in metrics:
                raise ValueError(f"{name!r} has no metric {key!r} in comparison.json: change README_COLUMNS.")
            value = metrics[key]
            if _missing(value):
                cells.append("n/a")
            elif key in _METRICS:
                differs = bool(sig) and name != baseline and sig["comparisons"][name][baseline][key]["significant"]
                cells.append(f"{value:.1f}" + (" †" if differs else ""))
            else:
                cells.append(_share(value))
        lines.append("| " + " | ".join(cells) + " |")
    notes = []
    if sig:
        baseline_label = dict(systems).get(baseline) or by_name.get(baseline, {}).get("label", baseline)
        notes.append(f"† differs from *{baseline_label}* beyond noise (paired bootstrap, p < {sig['alpha']}).")
    return "\n".join(lines) + "\n\n" + _wrapped(" ".join([*notes, *README_NOTES])) + "\n"


def _wrapped(paragraph: str) -> str:
    """A Markdown paragraph in lines of at most 120 characters (the page's source stays readable)."""
    return textwrap.fill(paragraph, 120, break_long_words=False, break_on_hyphens=False)


def _systems_by_name(comparison: Mapping, wanted: Sequence[str]) -> dict[str, Mapping]:
    by_name = {system["name"]: system for system in comparison.get("systems") or []}
    missing = [name for name in wanted if name not in by_name]
    if missing:
        raise ValueError(
            f"comparison.json has no system {missing}: change README_SYSTEMS in training/report.py (it has "
            f"{list(by_name)})."
        )
    return by_name


def replace_generated_block(text: str, name: str, block: str) -> str:
    """`text` with what stands between `<!-- generated: name -->` and `<!-- end: name -->` replaced by `block`.

    Raises:
        ValueError: when the markers are not there exactly once, in that order.
    """
    start, end = f"<!-- generated: {name} -->\n", f"<!-- end: {name} -->"
    if text.count(start) != 1 or text.count(end) != 1 or text.index(start) > text.index(end):
        raise ValueError(f"expected one {start.strip()} ... {end} block")
    head, rest = text.split(start)
    return head + start + block + end + rest.split(end, 1)[1]


def generated_block(text: str, name: str) -> str:
    """What stands between the markers of `replace_generated_block`."""
    start, end = f"<!-- generated: {name} -->\n", f"<!-- end: {name} -->"
    if text.count(start) != 1 or text.count(end) != 1:
        raise ValueError(f"expected one {start.strip()} ... {end} block")
    return text.split(start, 1)[1].split(end, 1)[0]


README_BLOCKS = {"main-job-results": readme_results_table}


def main(argv: Sequence[str] | None = None) -> None:
    """`python -m training.report --readme README.md`: rewrite the README's main-job table from comparison.json."""
    import argparse
    import json

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--comparison", type=Path, default=Path("docs/main-job/headline/comparison.json"))
    parser.add_argument("--readme", type=Path, required=True, help="the page whose generated blocks are rewritten")
    args = parser.parse_args(argv)
    comparison = json.loads(args.comparison.read_text(encoding="utf-8"))
    text = args.readme.read_text(encoding="utf-8")
    for name, table in README_BLOCKS.items():
        text = replace_generated_block(text, name, table(comparison))
    args.readme.write_text(text, encoding="utf-8")
    print(f"{args.readme}: {', '.join(README_BLOCKS)} from {args.comparison}")


# ---------------------------------------------------------------------------------------------------------------------
# Figure
# ---------------------------------------------------------------------------------------------------------------------


def plot_results(comparison: Mapping, path: str | Path) -> Path:
    """One PNG: the scores per system as grouped bars (left), the training curves of the trained systems (right).

    Left: sacreBLEU, chrF and placeholders kept (%), a bar per system (the same colour for a model with and without
    protected placeholders, hatched with), bootstrap intervals as error bars where `comparison["significance"]`
    has them. Right: train loss (solid) and eval loss (dashed) against the step, from each trained system's
    `log_history`. Drawn with matplotlib's Agg canvas on a `Figure` of its own (no pyplot state is touched).

    Example:

    >>> plot_results(json.load(open("outputs/main/comparison.json")), "outputs/main/results.png")
    PosixPath('outputs/main/results.png')
    """
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as error:
        raise ImportError(
            "plot_results() needs matplotlib: pip install 'matplotlib>=3.8' (or hf_pgen[benchmarks])"
        ) from error

    systems = comparison.get("systems") or []
    if not systems:
        raise ValueError("comparison['systems'] is empty: nothing to plot.")
    sig = comparison.get("significance") or None
    colours = _system_colours(systems)

    figure = Figure(figsize=(15, 6.2), dpi=130, layout="constrained")
    FigureCanvasAgg(figure)
    bars_axes, curves_axes = figure.subplots(1, 2, width_ratios=[1.25, 1])
    _plot_bars(bars_axes, systems, sig, colours)
    _plot_curves(curves_axes, systems, colours)

    title = "Held-out test split"
    if sig:
        title += f" ({sig['sentences']} messages)"
    when = ", ".join(str(comparison[k]) for k in ("date", "machine") if comparison.get(k))
    figure.suptitle(title + (f" · {when}" if when else ""), fontsize=13)
    handles, labels = bars_axes.get_legend_handles_labels()
    columns = 3 if max(map(len, labels), default=0) <= 60 else 2  # three long labels a row run off the figure
    figure.legend(
        handles, labels, loc="outside lower center", ncol=min(len(labels), columns), fontsize=10, frameon=False
    )

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, format="png")
    return path


def _base_name(name: str) -> str:
    return name.split("+")[0]


def _system_colours(systems: Sequence[Mapping]) -> dict[str, str]:
    """A colour per model (a system and its +protect variant share one); the floor (untrained copy) is grey."""
    palette = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"]
    trained = [_base_name(s["name"]) for s in systems if s.get("trained")]
    models = list(dict.fromkeys(trained))  # in table order, each once
    return {
        s["name"]: palette[models.index(_base_name(s["name"])) % len(palette)]
        if _base_name(s["name"]) in models
        else "#7f7f7f"
        for s in systems
    }


def _plot_bars(axes, systems: Sequence[Mapping], sig: Mapping | None, colours: Mapping[str, str]) -> None:
    groups = (("sacreBLEU", "bleu", 1.0), ("chrF", "chrf", 1.0), ("placeholders kept (%)", "placeholders_kept", 100.0))
    width = 0.84 / len(systems)
    top = 0.0
    for index, system in enumerate(systems):
        metrics = system.get("metrics") or {}
        offsets = np.arange(len(groups)) + (index - (len(systems) - 1) / 2) * width
        label = system.get("label") or system["name"]  # on the first bar drawn: the figure legend lists it once
        for offset, (_, key, scale) in zip(offsets, groups):
            value = metrics.get(key)
            if _missing(value):
                axes.text(offset, 1, "n/a", ha="center", va="bottom", rotation=90, fontsize=8, color="0.3")
                continue
            value = value * scale
            error, bar_top = None, value
            if sig and key in _METRICS and system["name"] in sig["systems"]:
                low, high = sig["systems"][system["name"]][key]["ci"]
                error, bar_top = [[max(value - low, 0.0)], [max(high - value, 0.0)]], max(high, value)
            axes.bar(
                offset,
                value,
                width * 0.92,
                yerr=error,
                capsize=2,
                color=colours[system["name"]],
                hatch="//" if system.get("protect") else None,
                edgecolor="white",
                linewidth=0.5,
                error_kw={"elinewidth": 1, "ecolor": "0.15"},
                label=label,
            )
            label = None
            axes.text(offset, bar_top + 0.8, f"{value:.0f}", ha="center", va="bottom", fontsize=7.5)
            top = max(top, bar_top)
    axes.set_xticks(np.arange(len(groups)), [label for label, _, _ in groups], fontsize=11)
    axes.set_ylim(0, max(top * 1.1, 1.0))
    axes.set_ylabel("score (higher is better)")
    interval = f" with {100 * (1 - sig['alpha']):g}% bootstrap intervals" if sig else ""
    axes.set_title(f"Scores{interval}", fontsize=11)
    axes.grid(axis="y", alpha=0.3)
    axes.set_axisbelow(True)


def _plot_curves(axes, systems: Sequence[Mapping], colours: Mapping[str, str]) -> None:
    from matplotlib.lines import Line2D

    drawn = False
    for system in systems:
        history = system.get("log_history") or []
        if not system.get("trained") or not history:
            continue
        for key, style in (("loss", "-"), ("eval_loss", "--")):
            points = [(entry["step"], entry[key]) for entry in history if key in entry and "step" in entry]
            if points:
                steps, values = zip(*points)
                axes.plot(
                    steps,
                    values,
                    style,
                    color=colours[system["name"]],
                    linewidth=1.8,
                    marker="o" if key == "eval_loss" else None,
                    markersize=3.5,
                )
                drawn = True
    if not drawn:
        axes.text(
            0.5,
            0.5,
            "no training curves\n(no trained system has a log_history)",
            ha="center",
            va="center",
            transform=axes.transAxes,
            color="0.4",
        )
    axes.set_xlabel("training step")
    axes.set_ylabel("cross-entropy per target token")
    # a word and a subword are different tokens: the levels of two vocabularies do not compare, their shapes do
    axes.set_title("Training curves (per-token loss: compare within one vocabulary)", fontsize=11)
    axes.grid(alpha=0.3)
    axes.legend(
        [
            Line2D([], [], color="0.2", linestyle="-"),
            Line2D([], [], color="0.2", linestyle="--", marker="o", markersize=3.5),
        ],
        ["train loss", "eval loss"],
        loc="upper right",
        fontsize=9,
    )


if __name__ == "__main__":
    main()
