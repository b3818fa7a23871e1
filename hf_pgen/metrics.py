"""Translation metrics for copy-heavy text: placeholder preservation, OOV copy rate, sacreBLEU and chrF.

Software messages carry tokens that a translation must reproduce verbatim: printf / Python / ICU / brace
placeholders, HTML tags and URLs. `extract_placeholders` finds them; `placeholder_preservation` scores
whether outputs keep exactly the source's multiset of them; `oov_copy_rate` scores whether words outside the
tokenizer's vocabulary (which only a copy mechanism can produce) reach the output when the reference has them.

Only the standard library is needed; `sacrebleu` is imported by `corpus_bleu` / `corpus_chrf` when called:

>>> from hf_pgen import metrics
>>> metrics.placeholder_preservation(["Delete %(name)s?"], ["%(name)s löschen?"])
1.0

Empty aggregates (no source with a placeholder, no copyable OOV word) are `nan`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence

# The grammar lives in hf_pgen.placeholders (standard library only), shared with protected decoding: one pattern.
from .deprecation import renamed_keywords
from .placeholders import PLACEHOLDER_PATTERN, extract_placeholders

__all__ = [
    "PLACEHOLDER_PATTERN",
    "extract_placeholders",
    "placeholders_preserved",
    "placeholder_preservation",
    "oov_copy_rate",
    "term_success_rate",
    "corpus_bleu",
    "corpus_chrf",
    "translation_metrics",
]


def placeholders_preserved(source: str, prediction: str) -> bool | None:
    """Whether `prediction` holds exactly the source's placeholders (same multiset); None if the source has none."""
    expected = Counter(extract_placeholders(source))
    if not expected:
        return None
    return Counter(extract_placeholders(prediction)) == expected


def placeholder_preservation(sources: Sequence[str], predictions: Sequence[str]) -> float:
    """Share of outputs that keep every source placeholder exactly as often as the source has it, and invent none.

    Only examples whose source holds at least one placeholder count; `nan` when there are none.
    """
    _check_lengths(sources=sources, predictions=predictions)
    verdicts = [placeholders_preserved(s, p) for s, p in zip(sources, predictions)]
    verdicts = [v for v in verdicts if v is not None]
    return sum(verdicts) / len(verdicts) if verdicts else math.nan


@renamed_keywords(oov_words_per_example="oov_words")
def oov_copy_rate(
    oov_words: Sequence[Sequence[str] | None],
    references: Sequence[str],
    predictions: Sequence[str],
) -> float:
    """Share of copyable OOV words that the output contains.

    A source OOV word (`oov_words` from `hf_pgen.encode_with_oovs`; surrounding whitespace, which the
    surface strings carry, is stripped) is copyable when the reference contains it (substring test); it is copied
    when the prediction contains it too. Each distinct word counts once per example. `nan` when no word is copyable.
    """
    _check_lengths(oov_words=oov_words, references=references, predictions=predictions)
    copyable = copied = 0
    for words, reference, prediction in zip(oov_words, references, predictions):
        for word in {w.strip() for w in (words or ()) if w and w.strip()}:
            if word in reference:
                copyable += 1
                copied += word in prediction
    return copied / copyable if copyable else math.nan


def term_success_rate(
    sources: Sequence[str], predictions: Sequence[str], term_bases: Sequence[Mapping[str, str] | None]
) -> float:
    """The WMT terminology task's term success rate: over every (source term, target term) entry of an example's term
    base whose source term occurs in its source, the share whose target term occurs in the prediction (lower-cased
    substring, as WMT counts it). `nan` when no entry applies.

    >>> term_success_rate(["Free storage"], ["Speicher freigeben"], [{"storage": "Speicher"}])
    1.0
    """
    _check_lengths(sources=sources, predictions=predictions, term_bases=term_bases)
    applied = found = 0
    for source, prediction, terms in zip(sources, predictions, term_bases):
        for source_term, target_term in (terms or {}).items():
            if source_term.lower() in source.lower():
                applied += 1
                found += target_term.lower() in prediction.lower()
    return found / applied if applied else math.nan


def corpus_bleu(predictions: Sequence[str], references: Sequence[str], **kwargs) -> float:
    """sacreBLEU (default 13a tokenisation) of `predictions` against one reference each, 0-100."""
    import sacrebleu

    _check_lengths(predictions=predictions, references=references)
    return float(sacrebleu.corpus_bleu(list(predictions), [list(references)], **kwargs).score)


def corpus_chrf(predictions: Sequence[str], references: Sequence[str], **kwargs) -> float:
    """sacreBLEU's chrF (character n-grams up to 6, beta 2), 0-100. Pass `word_order=2` for chrF++."""
    import sacrebleu

    _check_lengths(predictions=predictions, references=references)
    return float(sacrebleu.corpus_chrf(list(predictions), [list(references)], **kwargs).score)


@renamed_keywords(oov_words_per_example="oov_words")
def translation_metrics(
    sources: Sequence[str] | None,
    predictions: Sequence[str],
    references: Sequence[str],
    oov_words: Sequence[Sequence[str] | None] | None = None,
) -> dict[str, float]:
    """All of the above in one dict: bleu, chrf, placeholder_preservation (with `sources`) and oov_copy_rate (with
    OOV tables). How hf_pgen scores a system everywhere: `build_compute_metrics` and the main job call this."""
    results = {
        "bleu": corpus_bleu(predictions, references),
        "chrf": corpus_chrf(predictions, references),
    }
    if sources is not None:
        results["placeholder_preservation"] = placeholder_preservation(sources, predictions)
    if oov_words is not None:
        results["oov_copy_rate"] = oov_copy_rate(oov_words, references, predictions)
    return results


def _check_lengths(**columns: Sequence) -> None:
    lengths = {name: len(column) for name, column in columns.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"All inputs need one entry per example, got lengths {lengths}.")
