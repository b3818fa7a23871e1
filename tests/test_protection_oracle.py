"""Protection against an oracle of the correct output: a perfect copier must come out unchanged.

A model whose next-token choice is always the source's next token returns its source exactly. Every protected span
of a source is then already in that output exactly as often as in the source, so protection (any mode, any spans:
repeated, adjacent, prefix-related, at the edges) must change nothing, for every tokenizer family and decoding
setting. A protected output that differs from the unprotected one is protection corrupting what it protects.
"""

import random
import warnings

import pytest
import torch
from testing_oracles import CopyTheSource, oracle_copy_model
from testing_utils import corpus_texts
from transformers import LogitsProcessorList

from hf_pgen import PointerGeneratorProcessor

FAMILIES = ("wordlevel", "unigram", "wordpiece", "bpe")
# Text that begins like a span, spans whose tokens begin other spans', spans next to each other and at the edges.
TRICKY = [
    ("Nakamura said Nakamura-Øresund is near", ["Nakamura-Øresund"]),
    ("Python is installed, install Python 3.12 now", r"Python \d+\.\d+"),
    ("Open the file and the file list", ["file list"]),
    ("Rate is 50% for %s", "placeholders"),
    ("Press { then {key}", "placeholders"),
    ("Page 1 of 12", r"\d+"),
    ("Copy %10 to %1", "placeholders"),
    ("See https://x.org or https://x.org/docs", "placeholders"),
    ("{0}{1} and {1}{0}", "placeholders"),
    ("%s", "placeholders"),
    ("Delete %(name)s from {folder}? %(name)s stays", "placeholders"),
    ("Zyxwvut Qqq Zyxwvut and Qqqq", "oov"),
    ("Open 3 of 33 then 333", r"\d+"),
    ("Save as v2.3 or v2.3.1", r"v[\d.]+\d"),
    ("Send Anna Anna-Maria and Maria", ["Anna", "Maria"]),
    ("Open Cafe\u0301 now", ["Cafe\u0301"]),  # decomposed text (macOS file names): the span ends in a mark
    ("Open Cafe\u0301-12 now", r"[A-Z]\w+\u0301-\d+"),
    # An escaped percent beside a placeholder: "%" + "%" is the escape, not the start of "%d".
    ("Progress 100%% of %d files", "placeholders"),
    ("Use %%s to print %s", "placeholders"),
    # A free "%" before a copied word: the word comes out spaced as in the source ("% discount"), not glued ("%d").
    ("Get 50% discount on %s", "placeholders"),
    ("Save 20% discount now", "placeholders"),
    ("50% done, %d left", "placeholders"),
    ("Only 5% disk space left on {drive}", "placeholders"),
    # Two protected spans inside one source token (a word the vocabulary lacks): each counts once.
    ("Chart http://x.org/a?b=1&c=2 parameters {} 12", r"\d+"),
    ("%-5d Change %.2f http order of {0:>8} Nakamura-Øresund columns.", r"\d+"),
    # A literal whose first word occurs alone before it.
    ("Select Tools, then Tools > Options", ["Tools > Options"]),
]
INSERTS = [
    "%s",
    "%d",
    "%(count)d",
    "{name}",
    "{0}",
    "{}",
    "<b>",
    "</b>",
    "%1",
    "%10",
    "1",
    "12",
    "121",
    "https://x.org",
    "https://x.org/docs",
    "Nakamura",
    "Nakamura-Øresund",
    "Zyxwvut",
    "v2.3",
]


@pytest.fixture(scope="module", params=FAMILIES)
def family_tokenizer(request):
    from hf_pgen.tokenizer_training import train_shared_tokenizer

    texts = corpus_texts("train", limit=1500) + [" ".join(INSERTS[:9])] * 3
    return request.param, train_shared_tokenizer(
        texts, request.param, vocab_size=400 if request.param == "wordlevel" else 700
    )


def _decode(model, processor, sources, protect, settings, **encode):
    batch = processor(sources, protect=protect, return_tensors="pt", padding=True, **encode)
    targets = [ids[mask.bool()].tolist() for ids, mask in zip(batch["extended_input_ids"], batch["attention_mask"])]
    plain = {k: v for k, v in batch.items() if k != "protected_spans"}
    outputs = []
    for inputs in (plain, batch):
        oracle = CopyTheSource(targets, model.config.eos_token_id)
        ids = model.generate(
            **inputs,
            logits_processor=LogitsProcessorList([oracle]),
            max_new_tokens=batch["input_ids"].shape[1] + 16,
            **settings,
        )  # room for the whole copy
        per = ids.shape[0] // len(sources)
        outputs.append(processor.batch_decode(ids[::per], batch))
    return outputs


SETTINGS = [
    {},
    {"num_beams": 3},
    {"num_beams": 3, "num_return_sequences": 2},
    {"do_sample": True, "num_return_sequences": 2},
]


@pytest.mark.parametrize("settings", SETTINGS, ids=["greedy", "beam3", "beam3-2returns", "sample-2returns"])
def test_a_perfect_copy_comes_out_unchanged_on_tricky_sources(family_tokenizer, settings):
    family, tokenizer = family_tokenizer
    model = oracle_copy_model(tokenizer)
    processor = PointerGeneratorProcessor.from_model(model, tokenizer)
    torch.manual_seed(0)
    for source, protect in TRICKY:
        if protect == "oov" and family == "bpe":
            continue  # byte-level BPE has no out-of-vocabulary words
        plain, protected = _decode(model, processor, [source], protect, settings)
        assert protected == plain, (family, source, protect)


def _random_case(rng: random.Random, base: list[str]):
    words = rng.choice(base).split()[:12]
    for _ in range(rng.randint(1, 4)):
        words.insert(rng.randint(0, len(words)), rng.choice(INSERTS))
    source = " ".join(words)
    mode = rng.choice(["placeholders", r"\d+", r"[A-Z]\w+", "literals", "oov"])
    if mode == "literals":
        candidates = sorted({w for w in words if w.strip(".,!?")})
        protect = rng.sample(candidates, min(len(candidates), rng.randint(1, 3)))
    else:
        protect = mode
    return source, protect


@pytest.mark.parametrize("settings", SETTINGS[:2] + SETTINGS[3:], ids=["greedy", "beam3", "sample-2returns"])
def test_a_perfect_copy_comes_out_unchanged_on_random_sources_and_spans(family_tokenizer, settings):
    family, tokenizer = family_tokenizer
    model = oracle_copy_model(tokenizer)
    processor = PointerGeneratorProcessor.from_model(model, tokenizer)
    rng = random.Random(family)  # a str seed is stable across processes (hash() is not)
    base = corpus_texts("test", limit=300)
    checked = 0
    while checked < 12:
        sources, protects = zip(*[_random_case(rng, base) for _ in range(3)])
        protect = protects[0]
        if protect == "oov" and family == "bpe":
            continue
        try:
            plain, protected = _decode(model, processor, list(sources), protect, settings)
        except ValueError as error:  # literals that overlap in a source: a clear error, nothing to decode
            assert "overlap" in str(error)
            continue
        assert protected == plain, (family, sources, protect)
        checked += 1


@pytest.mark.parametrize("settings", [{}, {"do_sample": True, "num_return_sequences": 3}], ids=["greedy", "sample"])
def test_a_budget_too_short_for_the_spans_places_whole_spans_never_a_fragment(family_tokenizer, settings):
    """With fewer tokens left than the spans need, the spans that fit come out whole, the others not at all: a broken
    placeholder ("{fol", "%(name)") is worse than a missing one. The check after generation says they are missing."""
    from hf_pgen.placeholders import placeholder_spans

    family, tokenizer = family_tokenizer
    model = oracle_copy_model(tokenizer)
    processor = PointerGeneratorProcessor.from_model(model, tokenizer)
    source = "Delete %(name)s from {folder} and {x}"
    allowed = {source[a:b] for a, b in placeholder_spans(source)}
    batch = processor([source], protect="placeholders", return_tensors="pt")
    target = batch["extended_input_ids"][0].tolist()
    placed_any = False
    for budget in range(1, 9):
        torch.manual_seed(budget)
        oracle = CopyTheSource([target], model.config.eos_token_id)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ids = model.generate(
                **batch, max_new_tokens=budget, logits_processor=LogitsProcessorList([oracle]), **settings
            )
        for text in processor.batch_decode(ids, batch):
            spans = placeholder_spans(text)
            marks = [i for i, char in enumerate(text) if char in "%{}"]
            assert all(any(a <= i < b for a, b in spans) for i in marks), (budget, text)  # no loose fragment
            assert all(text[a:b] in allowed for a, b in spans), (budget, text)
            if len(spans) < len(allowed):
                assert any("missing from" in str(w.message) for w in caught), (budget, text)
            placed_any |= bool(spans)
    assert placed_any


# ---------------------------------------------------------------------------------------- glossaries with protection
GERMAN = ["Dateien", "Speicher", "Ordner", "jetzt", "Benutzer", "Seite", "Fehler", "Liste"]


def _without_added_terms(output: str, added: list[str]) -> str:
    """`output` with one occurrence of each added target term taken out, with one space beside it."""
    for term in added:
        for piece in (" " + term, term + " ", term):
            at = output.rfind(piece)
            if at >= 0:
                output = output[:at] + output[at + len(piece) :]
                break
    return output


def _glossary_case(rng: random.Random, base: list[str], tokenizer):
    """A source with placeholders and look-alikes inserted, a protection, and a glossary of its words: identity
    entries (must change nothing) and X -> Y entries whose target the vocabulary spells (Y added once, as a word)."""
    words = rng.choice(base).split()[:10]
    for _ in range(rng.randint(1, 3)):
        words.insert(rng.randint(0, len(words)), rng.choice(INSERTS + ["50%", "100%%", "%%s", "{", "www.x.org"]))
    source = " ".join(words)
    candidates = [w for w in dict.fromkeys(source.split()) if w.isalpha()]
    glossary = {}
    for word in rng.sample(candidates, min(len(candidates), rng.randint(1, 3))):
        spellable = [g for g in GERMAN if tokenizer.unk_token_id not in tokenizer(" " + g)["input_ids"]]
        glossary[word] = word if rng.random() < 0.5 or not spellable else rng.choice(spellable)
    protect = rng.choice(["placeholders", "placeholders", r"\d+", "oov", None])
    return source, glossary, protect


@pytest.mark.parametrize("settings", SETTINGS[:2] + SETTINGS[3:], ids=["greedy", "beam3", "sample-2returns"])
def test_a_perfect_copy_with_a_glossary_and_protection_changes_only_by_the_terms_added(family_tokenizer, settings):
    """Glossaries and protection as users combine them: an identity glossary plus any protection must change nothing,
    and X -> Y entries add Y once, as a word, and nothing else (a term after a placeholder mark once ran on as
    garbage to the length limit)."""
    family, tokenizer = family_tokenizer
    model = oracle_copy_model(tokenizer)
    processor = PointerGeneratorProcessor.from_model(model, tokenizer)
    rng = random.Random(f"glossary-{family}")
    base = corpus_texts("test", limit=300)
    fixed = [
        ("Delete %(name)s files from {folder}", {"files": "files"}, "placeholders"),
        ("Delete %(name)s files from {folder}", {"files": "Ordner"}, "placeholders"),
        ("Rate is 50% for the files", {"files": "Speicher"}, "placeholders"),
        ("Save %(count)d files to %(path)s now", {"files": "Dateien", "now": "jetzt"}, "placeholders"),
    ]
    cases = fixed + [_glossary_case(rng, base, tokenizer) for _ in range(16)]
    for source, glossary, protect in cases:
        if protect == "oov" and family == "bpe":
            protect = None  # byte-level BPE has no out-of-vocabulary words
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                plain, protected = _decode(model, processor, [source], protect, settings, glossary=glossary)
            except ValueError as error:  # a protected span inside a source term: a clear error, nothing decoded
                assert "overlaps the glossary's source term" in str(error)
                continue
        unspelled = {t for t in glossary.values() if any(f"Glossary term {t!r}" in str(w.message) for w in caught)}
        added = [t for s_, t in glossary.items() if s_ != t and t not in unspelled and t not in plain[0]]
        assert _without_added_terms(protected[0], added) == plain[0], (family, source, glossary, protect)
        assert all(protected[0].count(t) == plain[0].count(t) + 1 for t in added), (family, source, glossary, protect)


pytestmark = pytest.mark.slow  # left out by `make test-fast`
