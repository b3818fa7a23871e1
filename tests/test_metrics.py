"""hf_pgen.metrics: placeholder extraction, placeholder preservation, OOV copy rate, BLEU/chrF."""

import math
import random
import sys
from pathlib import Path

import pytest

from hf_pgen.corpus import load_en_de_messages
from hf_pgen.metrics import (
    corpus_bleu,
    corpus_chrf,
    extract_placeholders,
    oov_copy_rate,
    placeholder_preservation,
    placeholders_preserved,
    summarization_metrics,
    translation_metrics,
)
from hf_pgen.placeholders import PERCENT_PREFIX, PLACEHOLDER_PATTERN, PLACEHOLDER_STARTS, placeholder_spans


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Delete %s?", ["%s"]),
        ("%d of %d files", ["%d", "%d"]),
        ("%(name)s was deleted", ["%(name)s"]),
        ("%(count)d items, %(size).1f MB", ["%(count)d", "%(size).1f"]),
        ("%1 of %2", ["%1", "%2"]),
        ("%1$s and %2$d, %-5.2f, %lu, %5s", ["%1$s", "%2$d", "%-5.2f", "%lu", "%5s"]),
        ("Hello {name}, you have {0} messages", ["{name}", "{0}"]),
        (
            "{} and {0:.2f} and {name!r} and {obj.attr} and {items[0]}",
            ["{}", "{0:.2f}", "{name!r}", "{obj.attr}", "{items[0]}"],
        ),
        ("{n, number} of {d, date, short}", ["{n, number}", "{d, date, short}"]),
        ("{count,number,integer} left", ["{count,number,integer}"]),
        ("Welcome {{ user }} to ${site} and %{place}", ["{{ user }}", "${site}", "%{place}"]),
        ("<b>bold</b> and <br/> and <br /> and <BR>", ["<b>", "</b>", "<br/>", "<br />", "<BR>"]),
        ('Click <a href="%(url)s" target="_blank">here</a>', ['<a href="%(url)s" target="_blank">', "</a>"]),
        ("<0>Sign in</0> or <1/>", ["<0>", "</0>", "<1/>"]),
        ("See https://example.org/docs?x=1. Or www.example.com!", ["https://example.org/docs?x=1", "www.example.com"]),
        ("(http://example.org/a)", ["http://example.org/a"]),
    ],
)
def test_extract_placeholders(text, expected):
    assert extract_placeholders(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "50% off",  # a space flag would read "% o" as a conversion
        "100%% sure",  # escaped percent
        "<new column>",  # an angle-bracketed label to translate, not markup
        "<enter SQL expression here>",
        "a scheme such as “https://”.",  # no host: not a URL
        "Progress: 100 %",
        "",
    ],
)
def test_not_placeholders(text):
    assert extract_placeholders(text) == []


def test_escaped_percent_does_not_hide_the_next_conversion_but_is_not_one():
    assert extract_placeholders("100%% of %s") == ["%s"]
    assert extract_placeholders("%%s") == []  # "%%" + "s": a literal "%s" in the output, no argument


def test_icu_plural_keeps_head_and_inner_placeholders_but_not_submessage_braces():
    text = "{count, plural, one {# file in {folder}} other {# files}} selected"
    assert extract_placeholders(text) == ["{count, plural,", "{folder}"]
    # The translated sub-messages change; the placeholders must not.
    german = "{count, plural, one {# Datei in {folder}} other {# Dateien}} ausgewählt"
    assert placeholders_preserved(text, german)
    assert not placeholders_preserved(text, "{count, plural, one {# Datei} other {# Dateien}} ausgewählt")


def test_every_proper_prefix_of_a_percent_placeholder_is_a_percent_prefix():
    """Protected decoding takes a "%" text that `PERCENT_PREFIX` does not match for one that nothing appended makes a
    placeholder begun at its "%" (and skips it): every proper prefix of each such placeholder must match it."""
    rng = random.Random(0)
    alphabet = list("%%%%(()){}sdSfalLhIqjzt6432$1205-#+'.*x_ ") + ["name", "I64", "ll", "hh", "%("]
    found = 0
    for _ in range(30000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(2, 14)))
        for start, end in placeholder_spans(text):
            if text[start] == "%":
                found += 1
                for k in range(start + 1, end):
                    assert PERCENT_PREFIX.fullmatch(text[start:k]), (text[start:end], text[start:k])
    assert found > 5000
    # what it rules out: a placeholder complete before the text's end, or a mark no placeholder goes on with
    for dead in ("%s</h1>", "%d%", "%(name)s", "%5.2fx", "% o", "%{a}", "%1$sx"):
        assert not PERCENT_PREFIX.fullmatch(dead), dead


def _first_characters(parsed) -> tuple[set[str], bool]:
    """The characters a parsed regular expression's matches can begin with, and whether it can match nothing."""
    try:
        from re import _constants as ops
    except ImportError:  # Python 3.10
        import sre_constants as ops
    first: set[str] = set()
    for op, arg in parsed:
        if op is ops.LITERAL:
            chars, empty = {chr(arg)}, False
        elif op is ops.IN:
            chars, empty = set(), False
            for kind, value in arg:
                assert kind in (ops.LITERAL, ops.RANGE), f"a class the test does not read: {kind}"
                chars |= {chr(value)} if kind is ops.LITERAL else {chr(c) for c in range(value[0], value[1] + 1)}
        elif op is ops.BRANCH:
            chars, empty = set(), False
            for alternative in arg[1]:
                alternative_chars, alternative_empty = _first_characters(alternative)
                chars, empty = chars | alternative_chars, empty or alternative_empty
        elif op is ops.SUBPATTERN:
            chars, empty = _first_characters(arg[-1])
        elif op in (ops.MAX_REPEAT, ops.MIN_REPEAT):
            chars, empty = _first_characters(arg[2])
            empty = empty or arg[0] == 0
        elif op in (ops.AT, ops.ASSERT, ops.ASSERT_NOT):
            chars, empty = set(), True
        else:
            raise AssertionError(f"an operator before the first character that the test does not read: {op}")
        first |= chars
        if not empty:
            return first, False
    return first, True


def test_placeholder_starts_are_where_the_grammar_begins():
    """PLACEHOLDER_STARTS, read off the grammar: its first characters, and its URL prefixes."""
    try:
        from re import _parser as parser
    except ImportError:  # Python 3.10
        import sre_parse as parser

    first, empty = _first_characters(parser.parse(PLACEHOLDER_PATTERN.pattern))
    assert not empty and first == {start[0] for start in PLACEHOLDER_STARTS}, first
    # The ICU heads the grammar finds apart from the pattern begin at a start too.
    icu = "{count, plural, one {# file in %(folder)s} other {# files}} {n, select, a {x} other {y}}"
    assert len(placeholder_spans(icu)) == 3
    assert all(icu.startswith(PLACEHOLDER_STARTS, start) for start, _ in placeholder_spans(icu))
    # The starts of more than one character are the URL alternative's prefixes: each begins a URL...
    for start in PLACEHOLDER_STARTS:
        if len(start) > 1:
            assert PLACEHOLDER_PATTERN.match(start + "example.org/a").lastgroup == "url", start
    # ... and nothing else the URL alternative's first characters begin is a placeholder.
    for near in ("http:/example.org", "https//example.org", "ftps://example.org", "ww.example.org", "file://a/b"):
        assert placeholder_spans(near) == [], near
    # A text with none of the starts holds no placeholder; one with a start is scanned like the plain pattern.
    texts = [pair["en"] for pair in load_en_de_messages("validation")["translation"][:3000]]
    scanned = 0
    for text in texts:
        plain = [m.span() for m in PLACEHOLDER_PATTERN.finditer(text) if m.lastgroup != "escaped"]
        if not any(start in text for start in PLACEHOLDER_STARTS):
            assert plain == [] and placeholder_spans(text) == [], text
        elif "{" not in text:  # ICU blocks aside, the spans are the plain pattern's
            scanned += bool(plain)
            assert placeholder_spans(text) == plain, text
    assert scanned > 100, scanned


def test_placeholders_preserved_is_a_multiset_comparison():
    assert placeholders_preserved("Delete %(name)s?", "%(name)s löschen?") is True
    assert placeholders_preserved("no placeholder", "kein Platzhalter") is None
    assert placeholders_preserved("%s and %s", "%s und") is False  # one dropped
    assert placeholders_preserved("%s", "%s %s") is False  # duplicated
    assert placeholders_preserved("%(name)s", "%(Name)s") is False  # changed
    assert placeholders_preserved("%s", "%s %d") is False  # invented
    assert placeholders_preserved("<b>%s</b>", "</b>%s<b>") is True  # order is free (German reorders)


def test_placeholder_preservation_counts_only_sources_with_placeholders():
    sources = ["Delete %(name)s?", "Hello", "%d of %d", "<b>Warning</b>: %s"]
    predictions = ["%(name)s löschen?", "Hallo %s", "%d von", "<b>Warnung</b>: %s"]
    # Eligible: 0, 2, 3 -> kept by 0 and 3. Example 1 invents "%s" but has no source placeholder: not counted.
    assert placeholder_preservation(sources, predictions) == pytest.approx(2 / 3)
    assert math.isnan(placeholder_preservation(["Hello"], ["Hallo"]))
    with pytest.raises(ValueError, match="lengths"):
        placeholder_preservation(["a", "b"], ["a"])


def test_oov_copy_rate():
    oov = [[" Nakamura", "Zyx"], ["Qwerty"], [], None, ["Foo"]]
    references = ["Nakamura öffnen", "Qwerty löschen", "nichts", "nichts", "Bar"]
    predictions = ["Nakamura öffnen", "löschen", "nichts", "nichts", "Foo"]
    # Copyable: Nakamura (ex 0; "Zyx" is not in the reference), Qwerty (ex 1); "Foo" is not in its reference.
    # Copied: Nakamura only.
    assert oov_copy_rate(oov, references, predictions) == pytest.approx(1 / 2)
    assert math.isnan(oov_copy_rate([[]], ["x"], ["x"]))
    # A word repeated in one example's table counts once.
    assert oov_copy_rate([["Zed", "Zed "]], ["Zed"], ["Zed"]) == 1.0
    with pytest.raises(ValueError, match="lengths"):
        oov_copy_rate([[]], ["a", "b"], ["a", "b"])


def test_oov_copy_rate_takes_the_keyword_of_earlier_versions_with_a_warning():
    words, references, predictions = [["Zzz"], []], ["Zzz löschen", "Hallo"], ["Zzz", "Hallo"]
    with pytest.warns(FutureWarning, match="oov_copy_rate\\(oov_words_per_example=...\\) is renamed oov_words="):
        old = oov_copy_rate(oov_words_per_example=words, references=references, predictions=predictions)
    assert old == oov_copy_rate(oov_words=words, references=references, predictions=predictions) == 1.0
    with pytest.warns(FutureWarning, match="translation_metrics"):
        scores = translation_metrics(None, predictions, references, oov_words_per_example=words)
    assert scores["oov_copy_rate"] == 1.0


def test_summarization_metrics_with_an_oov_table_and_the_keyword_of_translation_metrics():
    """summarization_metrics takes OOV tables as `oov_words`, as translation_metrics does (old keyword: a warning)."""
    sources = ["Ada Lovelace wrote the first program for the Analytical Engine in 1843."]
    predictions, references = ["Ada Lovelace wrote a program in 1843."], ["A program by Lovelace, 1843."]
    words = [["Lovelace"]]
    scores = summarization_metrics(sources, predictions, references, oov_words=words)
    assert scores["oov_copy_rate"] == 1.0 and scores["names_kept"] == 1.0  # "Lovelace" and "1843", both kept
    assert summarization_metrics(sources, ["A program."], references)["names_kept"] == 0.0
    assert 0 < scores["rougeL"] < 100 and scores["bigram_repeats"] == 0.0
    with pytest.warns(FutureWarning, match="summarization_metrics"):
        assert summarization_metrics(sources, predictions, references, oov_words_per_example=words) == scores


def test_bleu_and_chrf():
    references = ["Die Datei wurde gelöscht.", "Öffnen Sie die Einstellungen."]
    assert corpus_bleu(references, references) == pytest.approx(100.0)
    assert corpus_chrf(references, references) == pytest.approx(100.0)
    worse = ["Die Datei.", "Einstellungen."]
    assert corpus_bleu(worse, references) < 50
    assert 0 < corpus_chrf(worse, references) < 100
    results = translation_metrics(
        ["Delete %s", "Open settings"], ["%s löschen", "Einstellungen"], references, [["Zzz"], []]
    )
    assert set(results) == {"bleu", "chrf", "placeholder_preservation", "oov_copy_rate"}
    assert results["placeholder_preservation"] == 1.0


def test_imports_only_the_standard_library_and_its_grammar_at_module_level():
    """`sacrebleu` loads when a BLEU or chrF is computed, never on import: scoring placeholders needs nothing more."""
    import ast

    import hf_pgen.metrics

    tree = ast.parse(Path(hf_pgen.metrics.__file__).read_text(encoding="utf-8"))
    roots = set()
    for node in tree.body:  # module level only: the imports inside corpus_bleu / corpus_chrf are lazy on purpose
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            roots.add(node.module.split(".")[0])
    assert roots <= set(sys.stdlib_module_names) | {"__future__"}, roots
    assert "sacrebleu" in {
        alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names
    }  # the lazy imports are still there for the scorers


def test_translation_metrics_without_sources_or_tables_leaves_those_scores_out():
    """What build_compute_metrics gets without a source column and without OOV tables."""
    references = ["Die Datei wurde gelöscht."]
    assert set(translation_metrics(None, references, references)) == {"bleu", "chrf"}


# ---------------------------------------------------------------------------------------------------------------------
# Summarisation
# ---------------------------------------------------------------------------------------------------------------------


def test_rouge_on_cases_worked_out_by_hand():
    from hf_pgen.metrics import rouge, rouge_per_example

    # "the cat sat on the mat" vs "the cat lay on the mat": 5 of 6 unigrams (the x2, cat, on, mat), 3 of 5 bigrams
    # (the cat, on the, the mat), a longest common subsequence of 5 ("the cat on the mat"): F1 = 5/6, 3/5, 5/6.
    assert rouge(["the cat sat on the mat"], ["the cat lay on the mat"]) == {
        "rouge1": 83.3333,
        "rouge2": 60.0,
        "rougeL": 83.3333,
        "rougeLsum": 83.3333,
    }
    # Two sentences in the other order: every unigram matches; bigrams "fast compil" and "small librari" of 3 each
    # side; one order shares 2 of 4 tokens (L = 1/2), but each reference sentence is in the output (Lsum = 1).
    # "compiler"/"library" stem to "compil"/"librari" (Porter).
    assert rouge(["Fast compiler. Small library."], ["Small library. Fast compiler."]) == {
        "rouge1": 100.0,
        "rouge2": 66.6667,
        "rougeL": 50.0,
        "rougeLsum": 100.0,
    }
    # The mean over examples, not a pooled score: 1.0 and 0.0 average to 50. An empty output scores 0.
    scores = rouge_per_example(["library", ""], ["library", "library"])
    assert scores["rouge1"] == [1.0, 0.0] and rouge(["library", ""], ["library", "library"])["rouge1"] == 50.0


def test_sentences_split_without_a_download():
    from hf_pgen.metrics import split_sentences

    assert split_sentences("It reads WDG-3 files, e.g. Foo. It writes v1.2 files! Done") == [
        "It reads WDG-3 files, e.g. Foo.",
        "It writes v1.2 files!",
        "Done",
    ]
    assert split_sentences('Written by J. Smith. Version 2.0 ("Kestrel") is out.\nA list:\n- one') == [
        "Written by J. Smith.",
        'Version 2.0 ("Kestrel") is out.',
        "A list:",
        "- one",
    ]


def test_names_kept_repeats_and_novel_ngrams():
    from hf_pgen.metrics import name_like, names_kept, novel_ngram_share, repeated_bigram_share, words

    assert words("Fast C++ compiler (v1.2-rc3), for x86-64.") == [
        "Fast",
        "C++",
        "compiler",
        "v1.2-rc3",
        "for",
        "x86-64",
    ]
    assert [name_like(w, i) for i, w in enumerate(["Library", "for", "GTK", "libfoo-dev", "version", "3"])] == [
        False,  # capitalised, but the first word
        False,
        True,
        True,
        False,
        True,
    ]
    source = "Zyxwvut converts WDG-3 files with GTK and Qt."
    references = ["tool for WDG-3 files using GTK", "converter for Zorblax files"]
    # Names from the source in the references: WDG-3 and GTK (Zorblax is not in the source, "tool" is no name).
    assert names_kept([source, source], ["WDG-3 converter", "converter"], references) == 0.5
    assert math.isnan(names_kept([source], ["x"], ["converter for files"]))
    assert repeated_bigram_share(["the tool the tool", "a tool for the files", "Files files"]) == pytest.approx(1 / 3)
    # "converts WDG-3" is in the source, "WDG-3 viewer" is not: half the bigrams are novel; "viewer" is the one new word.
    assert novel_ngram_share([source], ["converts WDG-3 viewer"], 2) == 0.5
    assert novel_ngram_share([source], ["converts WDG-3 viewer"], 1) == pytest.approx(1 / 3)
