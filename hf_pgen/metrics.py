"""Metrics for copy-heavy text. Translation: placeholder preservation, OOV copy rate, sacreBLEU and chrF.
Summarisation: ROUGE (offline), names kept, repeated bigrams, novel n-grams.

Software messages carry tokens that a translation must reproduce verbatim: printf / Python / ICU / brace
placeholders, HTML tags and URLs. `extract_placeholders` finds them; `placeholder_preservation` scores
whether outputs keep exactly the source's multiset of them; `oov_copy_rate` scores whether words outside the
tokenizer's vocabulary (which only a copy mechanism can produce) reach the output when the reference has them.

Only the standard library is needed; `sacrebleu` is imported by `corpus_bleu` / `corpus_chrf` when called:

>>> from hf_pgen import metrics
>>> metrics.placeholder_preservation(["Delete %(name)s?"], ["%(name)s löschen?"])
1.0

Summaries are scored with `rouge_score` (Google's reference implementation, which `evaluate.load("rouge")` wraps
after a Hub download) called directly, and sentences are split for ROUGE-Lsum by `split_sentences` (a rule, no punkt
download):

>>> metrics.rouge(["Fast compiler. Small library."], ["Small library. Fast compiler."])  # order: only L differs
{'rouge1': 100.0, 'rouge2': 66.6667, 'rougeL': 50.0, 'rougeLsum': 100.0}

Empty aggregates (no source with a placeholder, no copyable OOV word, no name to keep) are `nan`.
"""

from __future__ import annotations

import math
import re
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
    "words",
    "split_sentences",
    "rouge",
    "rouge_per_example",
    "names_kept",
    "name_like",
    "repeated_bigram_share",
    "novel_ngram_share",
    "summarization_metrics",
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


# ---------------------------------------------------------------------------------------------------------------------
# Summarisation
# ---------------------------------------------------------------------------------------------------------------------

ROUGE_TYPES = ("rouge1", "rouge2", "rougeL", "rougeLsum")
# A word: letters and digits with inner ".", "+" or "-" kept (v1.2.3, utf-8, x86-64), and a trailing "+" (C++, g++).
_WORD = re.compile(r"\w[\w.+\-]*\w\+*|\w\+*")
# A sentence ends at ".", "!" or "?" (and closing quotes or brackets) before white space and a capital, a digit or an
# opening quote or bracket; not after a single letter ("J. Smith") or a common abbreviation.
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")
_ABBREVIATIONS = {"e.g", "i.e", "etc", "vs", "cf", "approx", "incl", "no", "nr", "dr", "mr", "mrs", "ms", "st", "jr"}


def words(text: str) -> list[str]:
    """The words of `text`, as the summarisation metrics count them (case kept).

    >>> words("Fast C++ compiler (v1.2-rc3), for x86-64.")
    ['Fast', 'C++', 'compiler', 'v1.2-rc3', 'for', 'x86-64']
    """
    return _WORD.findall(text)


def split_sentences(text: str) -> list[str]:
    """Split `text` into sentences without a model or a download (ROUGE-Lsum's newline-separated input).

    Line breaks always end a sentence; within a line, a sentence ends at ".", "!" or "?" followed by white space and
    an upper-case letter or a digit, unless the full stop ends a single letter or a common abbreviation ("e.g.").

    >>> split_sentences("It reads WDG-3 files, e.g. Foo. It writes v1.2 files! Done")
    ['It reads WDG-3 files, e.g. Foo.', 'It writes v1.2 files!', 'Done']
    """
    sentences = []
    for line in text.splitlines():
        start = 0
        for match in _SENTENCE_END.finditer(line):
            before = line[start : match.start()].rstrip("\"')]").rsplit(None, 1)
            last = before[-1].rstrip(".!?").lower() if before else ""
            if line[match.start() - 1] == "." and (len(last) == 1 or last in _ABBREVIATIONS):
                continue
            sentences.append(line[start : match.start()].strip())
            start = match.end()
        sentences.append(line[start:].strip())
    return [sentence for sentence in sentences if sentence]


def _rouge_scorer(use_stemmer: bool):
    try:
        from rouge_score import rouge_scorer
    except ImportError as error:
        raise ImportError("ROUGE needs rouge-score: pip install rouge-score (or hf_pgen[training]).") from error
    return rouge_scorer.RougeScorer(list(ROUGE_TYPES), use_stemmer=use_stemmer, split_summaries=False)


def rouge_per_example(
    predictions: Sequence[str], references: Sequence[str], use_stemmer: bool = True
) -> dict[str, list[float]]:
    """ROUGE-1/2/L/Lsum F1 of each prediction against its reference, 0-1.

    `rouge_score`'s default tokenizer (lower-cased, every character but a-z and 0-9 a space: Latin-script text
    only), with the Porter stemmer by default, as Transformers' summarisation example scores. For ROUGE-Lsum both
    sides are split into sentences by `split_sentences`.

    Returns:
        `{"rouge1": [...], "rouge2": [...], "rougeL": [...], "rougeLsum": [...]}`, one score per example.
    """
    _check_lengths(predictions=predictions, references=references)
    scorer = _rouge_scorer(use_stemmer)
    scores: dict[str, list[float]] = {kind: [] for kind in ROUGE_TYPES}
    for prediction, reference in zip(predictions, references):
        result = scorer.score(
            "\n".join(split_sentences(reference)) or reference, "\n".join(split_sentences(prediction)) or prediction
        )
        for kind in ROUGE_TYPES:
            scores[kind].append(result[kind].fmeasure)
    return scores


def rouge(predictions: Sequence[str], references: Sequence[str], use_stemmer: bool = True) -> dict[str, float]:
    """Mean ROUGE-1/2/L/Lsum F1 over the examples, x 100 and rounded to 4 digits (what `evaluate.load("rouge")`
    gives without its bootstrap aggregator, and Transformers' summarisation example reports). See
    `rouge_per_example`."""
    scores = rouge_per_example(predictions, references, use_stemmer)
    return {kind: round(100 * sum(values) / len(values), 4) if values else math.nan for kind, values in scores.items()}


def name_like(word: str, position: int) -> bool:
    """Whether a word looks like a name: capitalised after the first word of its text, holding a digit, or holding an
    inner ".", "+" or "-" (`libfoo-dev`, `C++` counts: its first "+" is inner)."""
    return (
        (position > 0 and word[:1].isupper())
        or any(ch.isdigit() for ch in word)
        or any(ch in ".+-" for ch in word[1:-1])
    )


def names_kept(sources: Sequence[str], predictions: Sequence[str], references: Sequence[str]) -> float:
    """Of the reference words that come from the source and look like names (`name_like`), the share the prediction
    holds (case-sensitive, whole words; each distinct word once per example); `nan` when no reference has one."""
    _check_lengths(sources=sources, predictions=predictions, references=references)
    names = kept = 0
    for source, prediction, reference in zip(sources, predictions, references):
        in_source, in_prediction = set(words(source)), set(words(prediction))
        wanted = {word for i, word in enumerate(words(reference)) if word in in_source and name_like(word, i)}
        names += len(wanted)
        kept += len(wanted & in_prediction)
    return kept / names if names else math.nan


def _ngrams(tokens: list[str], n: int) -> list[tuple[str, ...]]:
    return list(zip(*(tokens[i:] for i in range(n))))


def repeated_bigram_share(predictions: Sequence[str]) -> float:
    """The share of predictions in which some word bigram (lower-cased) occurs more than once; `nan` for none."""
    repeats = 0
    for prediction in predictions:
        bigrams = _ngrams([w.lower() for w in words(prediction)], 2)
        repeats += len(set(bigrams)) < len(bigrams)
    return repeats / len(predictions) if len(predictions) else math.nan


def novel_ngram_share(sources: Sequence[str], predictions: Sequence[str], n: int = 2) -> float:
    """The share of the predictions' word n-grams (lower-cased, counted with repeats over all predictions) that their
    source does not hold: 0 for an extract, higher for an abstract (See et al. 2017 report it per n)."""
    _check_lengths(sources=sources, predictions=predictions)
    novel = total = 0
    for source, prediction in zip(sources, predictions):
        in_source = set(_ngrams([w.lower() for w in words(source)], n))
        grams = _ngrams([w.lower() for w in words(prediction)], n)
        total += len(grams)
        novel += sum(gram not in in_source for gram in grams)
    return novel / total if total else math.nan


@renamed_keywords(oov_words_per_example="oov_words")
def summarization_metrics(
    sources: Sequence[str] | None,
    predictions: Sequence[str],
    references: Sequence[str],
    oov_words: Sequence[Sequence[str] | None] | None = None,
) -> dict[str, float]:
    """How hf_pgen scores summaries (`build_compute_metrics(..., metrics=summarization_metrics)`): ROUGE-1/2/L/Lsum
    (x 100), the share of outputs repeating a bigram, and, with `sources`, names kept and the shares of novel
    unigrams and bigrams; with OOV tables, the OOV copy rate."""
    results: dict[str, float] = dict(rouge(predictions, references))
    results["bigram_repeats"] = repeated_bigram_share(predictions)
    if sources is not None:
        results["names_kept"] = names_kept(sources, predictions, references)
        results["novel_unigrams"] = novel_ngram_share(sources, predictions, 1)
        results["novel_bigrams"] = novel_ngram_share(sources, predictions, 2)
    if oov_words is not None:
        results["oov_copy_rate"] = oov_copy_rate(oov_words, references, predictions)
    return results


def _check_lengths(**columns: Sequence) -> None:
    lengths = {name: len(column) for name, column in columns.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"All inputs need one entry per example, got lengths {lengths}.")
