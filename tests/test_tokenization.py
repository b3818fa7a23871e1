"""Tests for extended-vocabulary encode / decode (hf_pgen.tokenization_encode_pointer_generator and
tokenization_decode_pointer_generator, re-exported by tokenization_pointer_generator).

Real tokenizer families (word-level, WordPiece, Unigram, byte-level BPE, and the variants that once
broke: Metaspace word-level as in the main job, SentencePiece-style BPE, subword-nmt BPE with an end-of-word
suffix) are trained once per module on real text nobody on the team wrote (see `_real_text`), with small
vocabularies so that unknown words exist. The slow SentencePiece tokenizers of Marian and M2M100 are stand-ins built
by tests/testing_tokenizers.py.
"""

from __future__ import annotations

import functools
import gzip
import importlib
import inspect
import json
import unicodedata
from pathlib import Path

import pytest
import torch
from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
from transformers import PreTrainedTokenizerFast

from hf_pgen.tokenization_decode_pointer_generator import batch_decode_with_oovs, decode_with_oovs
from hf_pgen.tokenization_encode_pointer_generator import encode_with_oovs

REPO = Path(__file__).resolve().parents[1]
SPECIALS = ["<pad>", "<unk>", "</s>"]
UNK_FAMILIES = ("wordlevel", "wordpiece", "unigram")
FAMILIES = UNK_FAMILIES + ("bytelevel_bpe",)

_CORPUS_CHARS = 250_000
# Stdlib modules whose docstrings serve as fallback English corpus (always installed with Python).
_DOC_MODULES = (
    "argparse collections json logging subprocess textwrap email.message http.client unittest.case "
    "pathlib datetime re os shutil tarfile zipfile csv configparser smtplib ftplib imaplib functools "
    "itertools threading socket ssl urllib.request"
).split()


@functools.lru_cache(maxsize=None)
def _real_text(langs: str = "en de") -> tuple[str, ...]:
    """Real sentences for training: the project's en/de message corpus when present, else the
    English docstrings of the Python standard library."""
    corpus = REPO / "hf_pgen" / "en_de_messages"
    train = corpus / "train.jsonl.gz"
    files = [train] if train.exists() else sorted(corpus.glob("*.jsonl.gz"))
    lines: list[str] = []
    size = 0
    for path in files:
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            for line in fh:
                pair = json.loads(line).get("translation", {})
                for key in langs.split():
                    text = " ".join(str(pair.get(key) or "").split())
                    if text:
                        lines.append(text)
                        size += len(text)
                if size >= _CORPUS_CHARS:  # enough for small vocabularies; keeps training fast
                    break
    if len(lines) >= 500:
        return tuple(dict.fromkeys(lines))
    for name in _DOC_MODULES:
        module = importlib.import_module(name)
        docs = [module.__doc__ or ""]
        for attr, obj in vars(module).items():
            if attr.startswith("_") or not (inspect.isfunction(obj) or inspect.isclass(obj)):
                continue
            docs.append(obj.__doc__ or "")
            if inspect.isclass(obj):
                docs += [m.__doc__ or "" for n, m in vars(obj).items() if not n.startswith("_") and callable(m)]
        for doc in docs:
            if not isinstance(doc, str):
                continue
            for para in inspect.cleandoc(doc).split("\n\n"):
                text = " ".join(para.split())
                if len(text) > 20:
                    lines.append(text)
    return tuple(dict.fromkeys(lines))


def _wrap(tok: Tokenizer) -> PreTrainedTokenizerFast:
    eos = tok.token_to_id("</s>")
    tok.post_processor = processors.TemplateProcessing(
        single="$A </s>", pair="$A </s> $B </s>", special_tokens=[("</s>", eos)]
    )
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>", eos_token="</s>")


@functools.lru_cache(maxsize=None)
def _build(family: str, langs: str = "en de") -> PreTrainedTokenizerFast:
    lines = _real_text(langs)
    if family == "wordlevel":
        tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
        tok.pre_tokenizer = pre_tokenizers.Whitespace()
        trainer = trainers.WordLevelTrainer(vocab_size=1000, special_tokens=SPECIALS)
    elif family == "wordpiece":  # BERT-like (cased): a word with an unknown piece becomes one <unk>
        tok = Tokenizer(models.WordPiece(unk_token="<unk>", max_input_chars_per_word=100))
        tok.normalizer = normalizers.BertNormalizer(lowercase=False, strip_accents=False)
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tok.decoder = decoders.WordPiece(prefix="##")
        trainer = trainers.WordPieceTrainer(vocab_size=1000, special_tokens=SPECIALS, limit_alphabet=80)
    elif family == "unigram":  # SentencePiece-style: unknown chars fuse into one <unk>
        tok = Tokenizer(models.Unigram())
        tok.normalizer = normalizers.NFC()
        tok.pre_tokenizer = pre_tokenizers.Metaspace()
        tok.decoder = decoders.Metaspace()
        trainer = trainers.UnigramTrainer(vocab_size=800, special_tokens=SPECIALS, unk_token="<unk>")
    elif family in ("metaspace_wordlevel", "metaspace_wordpiece"):
        # the recipe of hf_pgen/tokenizer_training.py's train_shared_tokenizer (the main job's tokenizer): "▁" for
        # every space, line breaks and punctuation as tokens of their own, NFC; an unknown word swallows its "▁"
        word_split = pre_tokenizers.Sequence(
            [
                pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True),
                pre_tokenizers.Split(Regex(r"[\n\r\t]"), behavior="isolated"),
                pre_tokenizers.Punctuation(behavior="isolated"),
            ]
        )
        if family == "metaspace_wordlevel":
            tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
            tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always", split=True)
            trainer = trainers.WordLevelTrainer(vocab_size=600, special_tokens=SPECIALS)
        else:
            tok = Tokenizer(models.WordPiece(unk_token="<unk>", continuing_subword_prefix="##"))
            tok.decoder = decoders.Sequence([decoders.Replace("##", ""), decoders.Metaspace(prepend_scheme="always")])
            trainer = trainers.WordPieceTrainer(vocab_size=600, special_tokens=SPECIALS, limit_alphabet=70)
        tok.normalizer = normalizers.NFC()
        tok.pre_tokenizer = word_split
    elif family == "spm_bpe":  # SentencePiece-BPE style (Marian/mBART-like): NFKC, Metaspace, fused unknowns
        tok = Tokenizer(models.BPE(unk_token="<unk>", fuse_unk=True))
        tok.normalizer = normalizers.NFKC()
        tok.pre_tokenizer = pre_tokenizers.Metaspace()
        tok.decoder = decoders.Metaspace()
        trainer = trainers.BpeTrainer(vocab_size=800, special_tokens=SPECIALS, limit_alphabet=60)
    elif family == "bpe_suffix":  # subword-nmt style: end-of-word suffix, unknown characters
        tok = Tokenizer(models.BPE(unk_token="<unk>", end_of_word_suffix="</w>"))
        tok.pre_tokenizer = pre_tokenizers.Whitespace()
        tok.decoder = decoders.BPEDecoder(suffix="</w>")
        trainer = trainers.BpeTrainer(
            vocab_size=800, special_tokens=SPECIALS, limit_alphabet=60, end_of_word_suffix="</w>"
        )
    elif family == "bert_wordpiece_no_bang":  # BERT-like, trained on text without "!": a copied "!" needs cleanup
        tok = Tokenizer(models.WordPiece(unk_token="<unk>"))
        tok.normalizer = normalizers.BertNormalizer(lowercase=False, strip_accents=False)
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tok.decoder = decoders.WordPiece(prefix="##")
        trainer = trainers.WordPieceTrainer(vocab_size=1000, special_tokens=SPECIALS, limit_alphabet=80)
        lines = tuple(line.replace("!", ".") for line in lines)
    elif family == "bytelevel_bpe":
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(
            vocab_size=1000, special_tokens=SPECIALS, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
        )
    else:
        raise KeyError(family)
    tok.train_from_iterator(lines, trainer)
    return _wrap(tok)


@pytest.fixture(scope="module")
def toks() -> dict[str, PreTrainedTokenizerFast]:
    return {family: _build(family) for family in FAMILIES}


def _word_level_expected(tok: PreTrainedTokenizerFast, text: str) -> str:
    """What the tokenizer's own decoder makes of `text` if every word were in the vocabulary."""
    backend = tok.backend_tokenizer
    normalized = backend.normalizer.normalize_str(text) if backend.normalizer else text
    words = [w for w, _ in backend.pre_tokenizer.pre_tokenize_str(normalized)]
    return backend.decoder.decode(words) if backend.decoder else " ".join(words)


def _squash(text: str) -> str:
    return "".join(text.split())


def _unknown_char(tok: PreTrainedTokenizerFast, candidates: str = "ßꙮǂᚠ") -> str:
    for ch in candidates:
        if tok.unk_token_id in tok(f"a{ch}b", add_special_tokens=False)["input_ids"]:
            return ch
    pytest.fail(f"none of {candidates!r} is unknown to the tokenizer")


OOV_SENTENCE = "Dr. Zyxwvut Nakamura-Øresund reported 𝔘nicode errors 😀 in the file."


# --------------------------------------------------------------------------- round trips
@pytest.mark.parametrize("family", FAMILIES)
def test_round_trip_with_oovs(toks, family):
    tok = toks[family]
    V = len(tok)
    enc = encode_with_oovs(tok, [OOV_SENTENCE], [OOV_SENTENCE], vocab_size=V)
    ext, labels, oovs = enc["extended_input_ids"][0], enc["labels"][0], enc["oov_words"][0]
    assert labels == ext  # same text on both sides: every target OOV is copyable
    decoded = decode_with_oovs(tok, labels, oovs, vocab_size=V)
    if family == "bytelevel_bpe":
        assert oovs == [] and ext == enc["input_ids"][0]
        assert decoded == OOV_SENTENCE
        return
    assert oovs, "the test sentence must contain OOV words"
    assert not {"<unk>", "[UNK]", ""} & set(oovs)
    assert all(w in OOV_SENTENCE for w in oovs)  # original surface strings
    assert tok.unk_token_id not in labels
    assert [i - V for i in ext if i >= V] == [oovs.index(w) for w in _oov_sequence(tok, OOV_SENTENCE)]
    assert "😀" in oovs
    assert "😀" not in tok.decode(enc["input_ids"][0], skip_special_tokens=True)  # plain decode loses it
    if family == "unigram":
        assert decoded == OOV_SENTENCE
    else:
        assert "𝔘nicode" in oovs  # whole unknown word, original spelling
        assert decoded == _word_level_expected(tok, OOV_SENTENCE)
        assert _squash(decoded) == _squash(OOV_SENTENCE)
        assert "𝔘nicode" in decoded.split()


def _oov_sequence(tok, text):
    """Surfaces of the unknown tokens of `text`, in order (independent re-derivation for checks)."""
    enc = tok(text, return_offsets_mapping=True)
    return [text[s:e] for i, (s, e) in zip(enc["input_ids"], enc["offset_mapping"]) if i == tok.unk_token_id]


def test_unigram_fused_oov_stays_glued(toks):
    tok = toks["unigram"]
    ch = _unknown_char(tok)
    source = f"Die Stra{ch}e ist nicht breit."
    enc = encode_with_oovs(tok, source, source, vocab_size=len(tok))
    assert enc["oov_words"] == [ch]
    decoded = decode_with_oovs(tok, enc["labels"], enc["oov_words"], vocab_size=len(tok))
    assert decoded == source
    assert f"Stra{ch}e" in decoded and f"Stra {ch}" not in decoded


def test_unigram_word_initial_oov_keeps_space(toks):
    tok = toks["unigram"]
    source = "the 𝔘nicode value and 😀😀 here"
    enc = encode_with_oovs(tok, source, vocab_size=len(tok))
    assert "😀😀" in enc["oov_words"]  # consecutive unknown chars are one fused slot
    assert decode_with_oovs(tok, enc["extended_input_ids"], enc["oov_words"], vocab_size=len(tok)) == source


# --------------------------------------------------------------------------- slot tables
@pytest.mark.parametrize("family", UNK_FAMILIES)
def test_same_oov_twice_shares_one_slot(toks, family):
    tok = toks[family]
    word = "Ωmega" if family != "unigram" else "😀"
    V = len(tok) + 5
    enc = encode_with_oovs(tok, f"{word} is {word} .", vocab_size=V)
    assert enc["oov_words"] == [word]
    ext = enc["extended_input_ids"]
    assert ext.count(V) == 2 and max(ext) == V
    assert [i for i, t in enumerate(enc["input_ids"]) if t == tok.unk_token_id] == [
        i for i, t in enumerate(ext) if t == V
    ]


@pytest.mark.parametrize("family", ("wordlevel", "wordpiece"))
def test_batch_examples_have_own_tables(toks, family):
    tok = toks[family]
    V = len(tok) + 37  # model output width larger than the tokenizer (T5-style padding rows)
    texts = ["the file", "Ωmega is the file", "Øyvind and Ωmega"]
    enc = encode_with_oovs(tok, texts, texts, vocab_size=V)
    assert enc["oov_words"] == [[], ["Ωmega"], ["Øyvind", "Ωmega"]]
    assert [sorted({i for i in row if i >= V}) for row in enc["extended_input_ids"]] == [[], [V], [V, V + 1]]
    assert enc["extended_input_ids"][0] == enc["input_ids"][0]
    decoded = batch_decode_with_oovs(tok, enc["labels"], enc["oov_words"], vocab_size=V)
    assert [_squash(d) for d in decoded] == [_squash(t) for t in texts]
    # slot V+0 means a different word in examples 1 and 2
    assert decoded[1].split()[0] == "Ωmega" and decoded[2].split()[0] == "Øyvind"
    with pytest.raises(ValueError, match="OOV tables"):
        batch_decode_with_oovs(tok, enc["labels"], enc["oov_words"][:2], vocab_size=V)


def test_extended_ids_start_at_model_vocab_size_and_padding_rows_skipped(toks):
    tok = toks["wordlevel"]
    V = len(tok) + 28
    enc = encode_with_oovs(tok, "the Zyxwvut file", vocab_size=V)
    unk_pos = enc["input_ids"].index(tok.unk_token_id)
    assert enc["extended_input_ids"][unk_pos] == V
    ids = list(enc["extended_input_ids"])
    ids.insert(1, len(tok) + 3)  # a model padding row, not a token
    assert decode_with_oovs(tok, ids, enc["oov_words"], vocab_size=V) == "the Zyxwvut file"
    with pytest.raises(ValueError, match="smaller than len"):
        encode_with_oovs(tok, "x", vocab_size=len(tok) - 1)


@pytest.mark.parametrize("family", ("wordlevel", "wordpiece"))
def test_target_oov_not_in_source_is_unk(toks, family):
    tok = toks[family]
    V = len(tok)
    enc = encode_with_oovs(tok, "Ωmega and Øyvind", "Øyvind is Ωmega and Ꙭlga", vocab_size=V)
    assert enc["oov_words"] == ["Ωmega", "Øyvind"]
    labels = enc["labels"]
    # Ꙭlga cannot be copied from this source: it stays the unknown id
    assert [t for t in labels if t >= V or t == tok.unk_token_id] == [V + 1, V, tok.unk_token_id]
    assert labels[0] == V + 1 and labels[-1] == tok.eos_token_id
    assert decode_with_oovs(tok, labels, enc["oov_words"], vocab_size=V) == "Øyvind is Ωmega and"
    kept = decode_with_oovs(tok, labels, enc["oov_words"], vocab_size=V, skip_special_tokens=False)
    assert kept == "Øyvind is Ωmega and <unk> </s>"


def test_byte_level_bpe_has_no_slots(toks):
    tok = toks["bytelevel_bpe"]
    texts = [OOV_SENTENCE, "Zyxwvut \x07 Привет 你好"]
    enc = encode_with_oovs(tok, texts, texts, vocab_size=len(tok) + 10)
    assert enc["oov_words"] == [[], []]
    assert enc["extended_input_ids"] == enc["input_ids"]
    assert enc["labels"] == tok(text_target=texts)["input_ids"]
    assert batch_decode_with_oovs(tok, enc["labels"], enc["oov_words"], vocab_size=len(tok) + 10) == texts


# --------------------------------------------------------------------------- padding / truncation / specials
@pytest.mark.parametrize("side", ["right", "left"])
def test_padding_positions(toks, side):
    tok = toks["wordlevel"]
    V = len(tok)
    texts = ["Zyxwvut", "the file Qwzxy is Zyxwvut ."]
    targets = ["Zyxwvut file", "x"]
    old = tok.padding_side
    tok.padding_side = side
    try:
        enc = encode_with_oovs(tok, texts, targets, vocab_size=V, padding=True, return_tensors="pt")
    finally:
        tok.padding_side = old
    ids, mask, ext, labels = enc["input_ids"], enc["attention_mask"], enc["extended_input_ids"], enc["labels"]
    assert isinstance(ext, torch.Tensor) and ext.shape == ids.shape == (2, 7)
    assert enc["oov_words"] == [["Zyxwvut"], ["Qwzxy", "Zyxwvut"]]
    assert mask[0].sum() == 2 and (mask[0, :5] == 0).all() == (side == "left")
    assert (ext[mask == 0] == tok.pad_token_id).all()
    assert (ext[mask == 1] >= V).sum() == 3
    assert labels.shape == (2, 3) and (labels == -100).sum() == 1
    assert labels[1, 0 if side == "left" else 2] == -100
    assert decode_with_oovs(tok, labels[0], enc["oov_words"][0], vocab_size=V) == "Zyxwvut file"


def test_truncation_drops_late_oovs(toks):
    tok = toks["wordlevel"]
    enc = encode_with_oovs(
        tok, "Zyxwvut is the file Qwzxy", "the Qwzxy file", vocab_size=len(tok), max_length=4, max_target_length=2
    )
    assert len(enc["input_ids"]) == 4 and enc["input_ids"][-1] == tok.eos_token_id
    assert enc["oov_words"] == ["Zyxwvut"]
    assert len(enc["labels"]) == 2 and enc["labels"][-1] == tok.eos_token_id


def test_special_tokens_and_task_prefix(toks):
    tok = toks["unigram"]
    text = "translate English to German: 😀 ok"
    enc = encode_with_oovs(tok, text, vocab_size=len(tok))
    assert enc["oov_words"] == ["😀"]
    assert enc["extended_input_ids"][-1] == tok.eos_token_id  # post-processor token untouched
    assert decode_with_oovs(tok, enc["extended_input_ids"], enc["oov_words"], vocab_size=len(tok)) == text


@pytest.mark.parametrize("family", FAMILIES)
def test_empty_string_and_none(toks, family):
    tok = toks[family]
    enc = encode_with_oovs(tok, ["", "Zyxwvut"], vocab_size=len(tok))
    assert enc["input_ids"][0] == [tok.eos_token_id] and enc["oov_words"][0] == []
    with pytest.raises(ValueError, match=r"text\[1\]"):
        encode_with_oovs(tok, ["fine", None, "x"], vocab_size=len(tok))
    with pytest.raises(ValueError, match=r"text_target\[0\]"):
        encode_with_oovs(tok, ["fine"], [None], vocab_size=len(tok))


@pytest.mark.parametrize("family", FAMILIES)
def test_mixed_scripts_emoji_control_chars(toks, family):
    tok = toks[family]
    text = "Привет мир\x07 — 你好 \u200b tab\there 𝔘 😀 Ωmega"
    enc = encode_with_oovs(tok, [text, "ok"], [text, "ok"], vocab_size=len(tok))
    oovs = enc["oov_words"][0]
    assert "<unk>" not in oovs and all(w and w in text for w in oovs)
    decoded = decode_with_oovs(tok, enc["labels"][0], oovs, vocab_size=len(tok))
    assert all(w in decoded for w in oovs)
    if family in ("unigram", "bytelevel_bpe"):
        assert decoded == text
    else:
        assert _squash(decoded) == _squash(_word_level_expected(tok, text))


# --------------------------------------------------------------------------- decode edge cases
def test_invalid_slot_and_minus_100(toks):
    tok = toks["wordlevel"]
    V = len(tok)
    enc = encode_with_oovs(tok, "Zyxwvut is the file", vocab_size=V)
    ids = enc["extended_input_ids"]
    with pytest.raises(ValueError, match="OOV slot 1"):
        decode_with_oovs(tok, ids + [V + 1], enc["oov_words"], vocab_size=V)
    with pytest.raises(ValueError, match="OOV slot 0"):
        decode_with_oovs(tok, ids, [], vocab_size=V)
    padded = torch.tensor(ids + [-100, -100])
    assert decode_with_oovs(tok, padded, enc["oov_words"], vocab_size=V) == "Zyxwvut is the file"
    assert decode_with_oovs(tok, [-100, *tok("is the file")["input_ids"]], None, vocab_size=V) == "is the file"


# --------------------------------------------------------------------------------------------------------------------
# Word-level tokenizers with a Metaspace pre-tokenizer (the main job's kind): the unknown token swallows the "▁"
# --------------------------------------------------------------------------------------------------------------------
METASPACE_WORD_FAMILIES = ("metaspace_wordlevel", "metaspace_wordpiece")


def _in_vocab(tok, text: str) -> bool:
    return tok.unk_token_id not in tok(text)["input_ids"]


# A word out of each vocabulary, and a second one marking where a copy goes in COPY_CONTEXTS (WordPiece spells
# any word of known letters: its unknown words hold an unknown character).
OOV_PAIRS = {"metaspace_wordlevel": ("Zyxwvut", "Qqqq"), "metaspace_wordpiece": ("Ωmega", "Ꙭqqq")}


@pytest.mark.parametrize("family", METASPACE_WORD_FAMILIES)
def test_metaspace_oov_surface_has_no_marker_and_one_slot(family):
    tok = _build(family)
    word, _ = OOV_PAIRS[family]
    V = len(tok) + 3
    assert _in_vocab(tok, "the file is and to")
    # at the start (no space before it) and mid-sentence (its token holds the space): one word, one slot
    enc = encode_with_oovs(tok, f"{word} is the file and {word}", vocab_size=V)
    assert enc["oov_words"] == [word]
    assert [i for i, t in enumerate(enc["extended_input_ids"]) if t >= V] == [
        i for i, t in enumerate(enc["input_ids"]) if t == tok.unk_token_id
    ]
    assert set(t for t in enc["extended_input_ids"] if t >= V) == {V}
    # mid-sentence in the source, at the start of the target (and the other way round): the target gets the copy
    pairs = ((f"the file is {word}", f"{word} is the file"), (f"{word} is the file", f"the file is {word}"))
    for source, target in pairs:
        enc = encode_with_oovs(tok, source, target, vocab_size=V)
        assert enc["oov_words"] == [word]
        assert tok.unk_token_id not in enc["labels"]
        assert enc["labels"].count(V) == 1
        assert decode_with_oovs(tok, enc["labels"], enc["oov_words"], vocab_size=V) == target


# Outputs that place a copied word somewhere else than the source did; "Qqqq" marks where the copy goes.
COPY_CONTEXTS = (
    "the Qqqq file",
    "Qqqq is the file",
    "the file, Qqqq.",
    "Delete %(Qqqq)s to the file",
    "the {Qqqq} file",
    "<b>Qqqq</b> is the file",
    "the file (Qqqq)",
    "Qqqq's file",
    "the file\nQqqq",
    'the "Qqqq" file',
)


@pytest.mark.parametrize("family", METASPACE_WORD_FAMILIES)
@pytest.mark.parametrize("source", ["W is the file", "the file is W", "Delete %(W)s"])
def test_metaspace_copy_spacing_follows_the_output_context(family, source):
    """A copied word is not glued to the word before it ('theZyxwvut file' before), and not spaced inside a
    placeholder ('%( Zyxwvut)s'), whatever position it had in the source."""
    tok = _build(family)
    word, marker = OOV_PAIRS[family]
    V = len(tok)
    table = encode_with_oovs(tok, source.replace("W", word), vocab_size=V)["oov_words"]
    assert table == [word]
    for context in COPY_CONTEXTS:
        context = context.replace("Qqqq", marker)
        out = encode_with_oovs(tok, context, vocab_size=V)
        assert marker in out["oov_words"], context
        # the output copies `word` where the marker was (other unknown pieces of the context are copies too)
        copies = [word if w == marker else w for w in out["oov_words"]]
        decoded = decode_with_oovs(tok, out["extended_input_ids"], copies, vocab_size=V)
        assert decoded == context.replace(marker, word)


def test_metaspace_corpus_copies_at_other_positions():
    """Real messages, target = the source's words in reverse order (every OOV word moves): each target OOV word gets
    its source slot, and the decoded labels give the target back (the old code: 2,180 <unk> labels, 453/2,005 exact)."""
    tok = _build("metaspace_wordlevel")
    V = len(tok)
    sources = [" ".join(t.split()) for t in _validation_text()]
    targets = [" ".join(reversed(s.split())) for s in sources]
    enc = encode_with_oovs(tok, sources, targets, vocab_size=V)
    with_oov = [i for i, table in enumerate(enc["oov_words"]) if table]
    assert len(with_oov) > 1000
    assert sum(row.count(tok.unk_token_id) for row in enc["labels"]) == 0
    assert all(len(set(table)) == len(table) and all(w == w.strip() for w in table) for table in enc["oov_words"])
    decoded = batch_decode_with_oovs(
        tok, [enc["labels"][i] for i in with_oov], [enc["oov_words"][i] for i in with_oov], vocab_size=V
    )
    exact = sum(d == targets[i] for d, i in zip(decoded, with_oov))
    assert exact / len(with_oov) >= 0.97  # measured 1,963 / 2,005; misses are e.g. "</b> pages" -> "</b>pages"
    assert all(_squash(d) == _squash(targets[i]) for d, i in zip(decoded, with_oov))


@functools.lru_cache(maxsize=1)
def _validation_text() -> tuple[str, ...]:
    with gzip.open(REPO / "hf_pgen" / "en_de_messages" / "validation.jsonl.gz", "rt", encoding="utf-8") as fh:
        return tuple(dict.fromkeys(json.loads(line)["translation"]["en"] for line in fh))


def test_project_tokenizer_copy_round_trip():
    """The main job's own tokenizer (hf_pgen.tokenizer_training.train_shared_tokenizer, word-level)."""
    from hf_pgen.tokenizer_training import train_shared_tokenizer

    tok = train_shared_tokenizer(list(_real_text()[:3000]), "wordlevel", 600)
    V = len(tok)
    enc = encode_with_oovs(tok, "Open Zyxwvut now", "Zyxwvut opens", vocab_size=V)
    assert "Zyxwvut" in enc["oov_words"] and " Zyxwvut" not in enc["oov_words"]
    assert enc["labels"][0] == V + enc["oov_words"].index("Zyxwvut")
    the, file = tok.convert_tokens_to_ids(["▁the", "▁file"])
    assert tok.unk_token_id not in (the, file)
    table = encode_with_oovs(tok, "Zyxwvut is the file", vocab_size=V)["oov_words"]
    assert decode_with_oovs(tok, [the, V, file, tok.eos_token_id], table, vocab_size=V) == "the Zyxwvut file"


# --------------------------------------------------------------------------------------------------------------------
# Decomposed (NFD) input under NFC / NFKC normalizers
# --------------------------------------------------------------------------------------------------------------------
NFD_WORDS = ("Zürich", "한국어", "Ελληνικά")


@pytest.mark.parametrize("family", ("metaspace_wordlevel", "metaspace_wordpiece", "unigram", "spm_bpe"))
@pytest.mark.parametrize("word", NFD_WORDS)
def test_nfd_copy_is_the_source_text(family, word):
    """The normalizer composes "u" + U+0308 into one "ü" whose offsets end before the mark: the copied word must
    still be the source's exact text (before: 'Zurich', '한국ᄋ', 'Ελληνικα')."""
    tok = _build(family, "en")  # trained on English: no umlauts
    V = len(tok)
    nfd = unicodedata.normalize("NFD", word)
    assert nfd != word
    source = f"the {nfd} file"
    enc = encode_with_oovs(tok, [source], [source], vocab_size=V)
    table = enc["oov_words"][0]
    assert table, "the word must be out of vocabulary"
    for surface in table:
        at = source.index(surface)
        assert source[at + len(surface) : at + len(surface) + 1] in ("", " ") or not unicodedata.combining(
            source[at + len(surface)]
        ), f"{surface!r} was cut before a combining mark"
    decoded = decode_with_oovs(tok, enc["extended_input_ids"][0], table, vocab_size=V)
    _assert_copied_back(decoded, source, table)
    assert decode_with_oovs(tok, enc["labels"][0], table, vocab_size=V) == decoded


@pytest.mark.parametrize("family", UNK_FAMILIES)
def test_a_word_written_in_nfd_and_in_nfc_comes_back_in_each_form(toks, family):
    """The slot was keyed by the NFC form, so a source holding "Cafe" + U+0301 and "Café"
    came back with both in the first one's form. Each exact text has its own slot; a target in the other form than
    its source still copies the source's word."""
    tok = toks[family]
    V = len(tok)
    nfd, nfc = "Cafe\u0301", "Caf\u00e9"
    source = f"{nfd} and {nfc}"
    enc = encode_with_oovs(tok, [source, f"the {nfd} file"], [f"{nfc} and {nfd}", f"the {nfc} file"], vocab_size=V)
    table = enc["oov_words"][0]
    assert len(table) == 2 and unicodedata.normalize("NFC", table[0]) == unicodedata.normalize("NFC", table[1])
    copied = decode_with_oovs(tok, enc["extended_input_ids"][0], table, vocab_size=V, oov_spacing=enc["oov_spacing"][0])
    assert copied == source
    # each form of the target takes the slot of the same form
    target = decode_with_oovs(tok, enc["labels"][0], table, vocab_size=V, oov_spacing=enc["oov_spacing"][0])
    assert target == f"{nfc} and {nfd}"
    # a source with the NFD form only: the NFC target copies it (in the source's form)
    [word] = enc["oov_words"][1]
    assert V in enc["labels"][1] and nfd.endswith(word)


def _assert_copied_back(decoded: str, source: str, table: list[str]) -> None:
    """Copies come back byte for byte; in-vocabulary pieces may come back normalized (NFKC)."""
    assert unicodedata.normalize("NFKC", decoded) == unicodedata.normalize("NFKC", source)
    assert all(w in decoded for w in table)
    if all(ch.isascii() or any(ch in w for w in table) for ch in source):
        assert decoded == source  # every non-ASCII character was copied


# --------------------------------------------------------------------------------------------------------------------
# BPE with an end-of-word suffix; WordPiece punctuation cleanup; a batched table by mistake
# --------------------------------------------------------------------------------------------------------------------
def test_bpe_end_of_word_suffix_keeps_the_space_after_a_copy():
    tok = _build("bpe_suffix")
    V = len(tok)
    for text in ("Emoji 😀 and more", "the 😀 file", "😀 is the file"):
        enc = encode_with_oovs(tok, text, vocab_size=V)
        assert "😀" in enc["oov_words"]
        assert decode_with_oovs(tok, enc["extended_input_ids"], enc["oov_words"], vocab_size=V) == text  # was '😀and'
    # an unknown letter or mark ends its word where the source's did (the unknown token carries no "</w>")
    for text in ("Cafe\u0301 vs cafe", "Zaz\u0307 ok", "na\u0308ive or Cafe\u0301s"):
        enc = encode_with_oovs(tok, text, vocab_size=V)
        assert enc["oov_words"], text
        decoded = decode_with_oovs(
            tok, enc["extended_input_ids"], enc["oov_words"], vocab_size=V, oov_spacing=enc["oov_spacing"]
        )
        assert decoded == text  # 'Cafévs'


def test_wordpiece_copied_punctuation_gets_the_decoders_cleanup():
    tok = _build("bert_wordpiece_no_bang")
    V = len(tok)
    assert tok.convert_tokens_to_ids("!") == tok.unk_token_id and _in_vocab(tok, "Open the file.")
    # in-vocabulary punctuation: the WordPiece decoder removes the space before it
    assert tok.decode(tok("Open the file.")["input_ids"], skip_special_tokens=True) == "Open the file."
    enc = encode_with_oovs(tok, "Open the file!", vocab_size=V)
    assert enc["oov_words"] == ["!"]
    assert decode_with_oovs(tok, enc["extended_input_ids"], enc["oov_words"], vocab_size=V) == "Open the file!"
    # a copied word keeps its own text: cleanup only ever removes the space before a copy
    enc = encode_with_oovs(tok, "Zyxwvut! Is it Zyxwvut", vocab_size=V)
    assert decode_with_oovs(tok, enc["extended_input_ids"], enc["oov_words"], vocab_size=V) == "Zyxwvut! Is it Zyxwvut"


def test_batched_table_gives_a_clear_error(toks):
    tok = toks["wordlevel"]
    V = len(tok)
    enc = encode_with_oovs(tok, ["Zyxwvut is the file"], vocab_size=V, return_tensors="pt")
    with pytest.raises(TypeError, match=r"batch\['oov_words'\]\[i\].*batch_decode_with_oovs"):
        decode_with_oovs(tok, enc["extended_input_ids"][0], enc["oov_words"], vocab_size=V)
    decoded = decode_with_oovs(tok, enc["extended_input_ids"][0], enc["oov_words"][0], vocab_size=V)
    assert decoded == "Zyxwvut is the file"


# --------------------------------------------------------------------------------------------------------------------
# num_truncated_tokens (fast tokenizers: read from the Rust encodings' overflow, no second tokenization)
# --------------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("side", ["right", "left"])
@pytest.mark.parametrize("stride", [0, 2])
def test_num_truncated_tokens_fast(toks, monkeypatch, side, stride):
    tok = toks["unigram"]
    texts = list(_real_text()[:40])
    full = [len(ids) for ids in tok(texts)["input_ids"]]
    calls = []
    original = tok._encode_plus
    monkeypatch.setattr(tok, "_encode_plus", lambda *a, **k: calls.append(1) or original(*a, **k))
    monkeypatch.setattr(tok, "truncation_side", side)
    enc = encode_with_oovs(
        tok, texts, vocab_size=len(tok), max_length=12, stride=stride, return_num_truncated_tokens=True
    )
    assert len(calls) == 1  # one tokenization of the sources
    assert enc["num_truncated_tokens"] == [max(0, n - 12) for n in full]
    assert any(enc["num_truncated_tokens"]) and 0 in enc["num_truncated_tokens"]
    assert enc["input_ids"] == tok(texts, max_length=12, truncation=True)["input_ids"]
    single = encode_with_oovs(tok, texts[0], vocab_size=len(tok), max_length=5, return_num_truncated_tokens=True)
    assert single["num_truncated_tokens"] == max(0, full[0] - 5)
    assert "num_truncated_tokens" not in encode_with_oovs(tok, texts[:2], vocab_size=len(tok), max_length=5)


# --------------------------------------------------------------------------------------------------------------------
# Slow SentencePiece tokenizers: MarianTokenizer, M2M100Tokenizer (Transformers 5 has no fast version of either)
# --------------------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def slow_toks(tmp_path_factory):
    pytest.importorskip("sentencepiece")
    import warnings

    from testing_tokenizers import m2m100_tokenizer_folder, marian_tokenizer_folder
    from transformers import AutoTokenizer, M2M100Tokenizer, MarianTokenizer

    root = tmp_path_factory.mktemp("slow_tokenizers")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Recommended: pip install sacremoses."
        marian = MarianTokenizer.from_pretrained(marian_tokenizer_folder(root / "marian"))
        m2m100 = M2M100Tokenizer.from_pretrained(m2m100_tokenizer_folder(root / "m2m100"))
        auto = [AutoTokenizer.from_pretrained(root / name) for name in ("marian", "m2m100")]
    assert [type(t) for t in auto] == [MarianTokenizer, M2M100Tokenizer]
    return {"marian": marian, "m2m100": m2m100}


def _width(tok) -> int:
    ids = getattr(tok, "lang_token_to_id", None) or {}
    return max([len(tok)] + [i + 1 for i in ids.values()]) + 8  # M2M100: language codes + made-up words


SLOW = ("marian", "m2m100")


@pytest.mark.parametrize("name", SLOW)
def test_slow_ids_identical_to_the_tokenizer(slow_toks, name):
    tok = slow_toks[name]
    V = _width(tok)
    sources = [" ".join(t.split()) for t in _validation_text()[:400]]
    with gzip.open(REPO / "hf_pgen" / "en_de_messages" / "validation.jsonl.gz", "rt", encoding="utf-8") as fh:
        targets = [" ".join(json.loads(line)["translation"]["de"].split()) for line in fh][: len(sources)]
    for kwargs in ({}, {"max_length": 10, "padding": True}, {"max_length": 7, "padding": "max_length"}):
        enc = encode_with_oovs(tok, sources, targets, vocab_size=V, return_num_truncated_tokens=True, **kwargs)
        ref = tok(sources, text_target=targets, truncation=True, **kwargs)
        assert enc["input_ids"] == ref["input_ids"] and enc["attention_mask"] == ref["attention_mask"]
        assert [[t if t < V else tok.unk_token_id for t in row] for row in enc["labels"]] == [
            [t if m else -100 for t, m in zip(row, mask)]
            for row, mask in zip(ref["labels"], tok(text_target=targets, truncation=True, **kwargs)["attention_mask"])
        ]
        # every unknown source token got a slot, with a non-empty surface taken from the source
        n_unk = sum(row.count(tok.unk_token_id) for row in ref["input_ids"])
        assert n_unk > 50 and sum(t >= V for row in enc["extended_input_ids"] for t in row) == n_unk
        assert all(w and w in src for table, src in zip(enc["oov_words"], sources) for w in table)
        full = [len(ids) for ids in tok(sources)["input_ids"]]
        limit = kwargs.get("max_length")
        assert enc["num_truncated_tokens"] == [max(0, n - limit) if limit else 0 for n in full]


SLOW_ROUND_TRIPS = (
    "Delete {count} files now",
    "Öffne Zürich 😀 and the file",
    unicodedata.normalize("NFD", "the Zürich 한국어 Ελληνικά file"),
    "Delete %(name)s 🗑️ from the {count} files",
)


@pytest.mark.parametrize("name", SLOW)
def test_slow_copy_round_trip(slow_toks, name):
    tok = slow_toks[name]
    V = _width(tok)
    enc = encode_with_oovs(tok, list(SLOW_ROUND_TRIPS), list(SLOW_ROUND_TRIPS), vocab_size=V)
    assert "{" in enc["oov_words"][0] and "😀" in enc["oov_words"][1] and "🗑️" in enc["oov_words"][3]
    for text, ext, table in zip(SLOW_ROUND_TRIPS, enc["extended_input_ids"], enc["oov_words"]):
        _assert_copied_back(decode_with_oovs(tok, ext, table, vocab_size=V), text, table)
        plain = tok.decode([t for t in ext if t < V], skip_special_tokens=True)
        assert unicodedata.normalize("NFC", plain) != unicodedata.normalize("NFC", text)  # the tokenizer loses them
    # copies placed elsewhere: the pieces' own "▁" decide the spacing
    table = enc["oov_words"][1]
    ids = tok("the file", add_special_tokens=False)["input_ids"]
    space = tok.convert_tokens_to_ids("▁")
    smile = V + table.index("😀")
    assert decode_with_oovs(tok, [smile, *ids], table, vocab_size=V) == "😀 the file"
    assert decode_with_oovs(tok, [*ids, space, smile], table, vocab_size=V) == "the file 😀"
    assert decode_with_oovs(tok, [*ids, smile], table, vocab_size=V) == "the file😀"


# Characters that NFKC expands into several characters, one of them unknown to the small vocabularies (the
# tokenizer's own "№" -> "No" holds no unknown piece: that is normalization, not copying).
NFKC_EXPANDED = ("Add ½ cup", "It is 30℃ now", "The ǅ letter", "Firma ㈱ Tokyo", "Sign Ⅻ here", "Room №5")


@pytest.fixture(scope="module")
def nfkc_toks(slow_toks, tmp_path_factory):
    """The slow SentencePiece stand-ins (Marian, M2M100, the opus-mt recipe's Marian) and two fast NFKC ones."""
    import warnings

    from testing_checkpoints import build_checkpoint
    from transformers import AutoTokenizer

    toks = dict(slow_toks)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Recommended: pip install sacremoses."
        for name in ("opus-mt", "t5-small", "mbart-50"):
            toks[name] = AutoTokenizer.from_pretrained(build_checkpoint(name, tmp_path_factory.mktemp(name)))
    return toks


@pytest.mark.parametrize("name", ("marian", "m2m100", "opus-mt", "t5-small", "mbart-50"))
def test_a_copy_of_an_nfkc_expanded_character_is_the_source_character(nfkc_toks, name):
    """SentencePiece gives an expanded character to the last of its pieces, so a perfect copy lost
    the unknown part ("½" -> "12", "㈱" -> "()", "30℃" -> "30C", "Ⅻ" -> "II") or repeated the known one ("ǅ" ->
    "Dǅ"). Now the unknown piece's slot holds the whole character and its other pieces copy as nothing."""
    tok = nfkc_toks[name]
    V = _width(tok)
    texts = list(NFKC_EXPANDED)
    enc = encode_with_oovs(tok, texts, texts, vocab_size=V)
    spelled = []
    for text, ids, ext, labels, table, spacing in zip(
        texts, enc["input_ids"], enc["extended_input_ids"], enc["labels"], enc["oov_words"], enc["oov_spacing"]
    ):
        char = next(c for c in text if not c.isascii())
        copied = decode_with_oovs(tok, ext, table, vocab_size=V, oov_spacing=spacing)
        if not any(char in word for word in table):  # no unknown piece: the tokenizer's own normalization stays
            assert copied == text.replace(char, unicodedata.normalize("NFKC", char))
            continue
        spelled.append(text)
        assert copied == text
        assert decode_with_oovs(tok, labels, table, vocab_size=V, oov_spacing=spacing) == text
        # the ids the model reads are the tokenizer's; a copy differs only where it spells or repeats a character
        assert all(e == i or e >= V or e == tok.unk_token_id for e, i in zip(ext, ids))
    # every character above with an unknown piece is spelled (opus-mt's vocabulary spells "Ⅻ" as "XII")
    wanted = {"marian": 5, "m2m100": 5, "opus-mt": 4}.get(name, len(texts))
    assert len(spelled) == wanted and "The ǅ letter" in spelled and "It is 30℃ now" in spelled, spelled
    # Tables from JSON decode the same, and the copied "ǅ" starts a word wherever it goes (its "▁" went into "▁D").
    back = json.loads(json.dumps({key: enc[key] for key in ("extended_input_ids", "oov_words", "oov_spacing")}))
    assert batch_decode_with_oovs(
        tok, back["extended_input_ids"], back["oov_words"], vocab_size=V, oov_spacing=back["oov_spacing"]
    ) == [
        decode_with_oovs(tok, ext, table, vocab_size=V, oov_spacing=spacing)
        for ext, table, spacing in zip(enc["extended_input_ids"], enc["oov_words"], enc["oov_spacing"])
    ]
    if not tok.is_fast:
        table, spacing = enc["oov_words"][2], enc["oov_spacing"][2]
        the = tok("the", add_special_tokens=False)["input_ids"]
        assert decode_with_oovs(tok, [*the, V + table.index("ǅ")], table, vocab_size=V, oov_spacing=spacing) == (
            "the ǅ"
        )


def test_marian_target_side_uses_the_target_model(slow_toks):
    tok = slow_toks["marian"]
    V = _width(tok)
    source, target = "Delete 😀 {count} now", "{count} 😀 löschen"
    enc = encode_with_oovs(tok, source, target, vocab_size=V)
    assert [t if t < V else tok.unk_token_id for t in enc["labels"]] == tok(text_target=target)["input_ids"]
    assert tok(text_target=target)["input_ids"] != tok(target)["input_ids"]  # another SentencePiece model
    slots = {w: V + k for k, w in enumerate(enc["oov_words"])}
    assert {"😀", "{", "}"} <= set(slots) and {slots["😀"], slots["{"], slots["}"]} <= set(enc["labels"])
    assert decode_with_oovs(tok, enc["labels"], enc["oov_words"], vocab_size=V) == target
    # Marian's ">>de<<" language-code prefix is one token of its own (unknown here: this vocabulary has no codes)
    coded = encode_with_oovs(tok, ">>de<< Delete 😀", vocab_size=V)
    assert coded["input_ids"] == tok(">>de<< Delete 😀")["input_ids"] and coded["oov_words"] == [">>de<<", "😀"]


def test_m2m100_language_codes(slow_toks):
    tok = slow_toks["m2m100"]
    V = _width(tok)
    assert V > len(tok) and tok.get_lang_id("de") >= len(tok)  # language codes lie beyond len(tokenizer)
    with pytest.raises(ValueError, match="language codes"):
        encode_with_oovs(tok, "x", vocab_size=len(tok))
    enc = encode_with_oovs(tok, "Delete 😀 now", "😀 now", vocab_size=V)
    assert enc["input_ids"][0] == tok.get_lang_id("en") and enc["labels"][0] == tok.get_lang_id("de")
    assert enc["oov_words"] == ["😀"] and V in enc["labels"]
    assert decode_with_oovs(tok, enc["labels"], enc["oov_words"], vocab_size=V) == "😀 now"  # no "__de__"
    old = tok.src_lang
    try:
        tok.src_lang = "fr"
        enc = encode_with_oovs(tok, "Delete 😀 now", vocab_size=V)
        assert enc["input_ids"] == tok("Delete 😀 now")["input_ids"] and enc["input_ids"][0] == tok.get_lang_id("fr")
        assert enc["oov_words"] == ["😀"]
    finally:
        tok.src_lang = old


def test_sentencepiece_without_offset_mapping():
    """sentencepiece 0.1.99 - 0.2.0 has no out_type='offset_mapping', only 'immutable_proto' (unicode spans)."""
    from types import SimpleNamespace

    from hf_pgen.tokenization_encode_pointer_generator import sentencepiece_pieces

    class OldProcessor:
        def encode(self, text, out_type=int):
            if out_type != "immutable_proto":
                raise RuntimeError(f"unknown out_type={out_type}")
            pieces = [SimpleNamespace(piece="▁a", begin=0, end=1), SimpleNamespace(piece="😀", begin=2, end=3)]
            return SimpleNamespace(pieces=pieces)

    assert sentencepiece_pieces(OldProcessor(), "a 😀") == [("▁a", 0, 1), ("😀", 2, 3)]


def test_unsupported_slow_tokenizer_error():
    from transformers import PreTrainedTokenizer

    class Plain(PreTrainedTokenizer):
        pass

    with pytest.raises(TypeError, match="fast .*SentencePiece"):
        encode_with_oovs(object.__new__(Plain), "x", vocab_size=10)


def test_no_decoder_tokenizer_keeps_copied_words_whole(toks):
    """A Whitespace pre-tokenizer without a decoder (the old quick start's): tokens and copies are joined with single
    spaces, as tokenizer.decode joins tokens, and a copied emoji keeps its variation selector (was '🗑 ️')."""
    tok = toks["wordlevel"]
    assert tok.backend_tokenizer.decoder is None
    V = len(tok)
    text = "Delete 🗑️ Zyxwvut and 👍🏽 the file"
    enc = encode_with_oovs(tok, text, text, vocab_size=V)
    assert "🗑️" in enc["oov_words"] and "👍🏽" in enc["oov_words"] and "\ufe0f" not in enc["oov_words"]
    assert decode_with_oovs(tok, enc["extended_input_ids"], enc["oov_words"], vocab_size=V) == text
    assert decode_with_oovs(tok, enc["labels"], enc["oov_words"], vocab_size=V) == text


@pytest.mark.parametrize("family", METASPACE_WORD_FAMILIES)
def test_metaspace_copy_after_a_full_stop_keeps_the_sources_spacing(family):
    """The unknown token swallows the "▁", so the ids cannot say whether "v2.W" had a space after the ".":
    `oov_spacing` records how the source spaced the word, per character it followed ("file.W" came back as
    "file. W", so "v2.3" with "3" unknown as "v2. 3")."""
    tok = _build(family)
    word, _ = OOV_PAIRS[family]
    V = len(tok)
    for text in (f"the file.{word} is the file", f"the file. {word} is the file"):
        enc = encode_with_oovs(tok, text, vocab_size=V)
        assert enc["oov_words"] == [word]
        spacing = enc["oov_spacing"]
        decoded = decode_with_oovs(tok, enc["extended_input_ids"], enc["oov_words"], vocab_size=V, oov_spacing=spacing)
        assert decoded == text
    # Elsewhere the output's context decides (the source had the word after ".", the output after "the")
    the = tok.convert_tokens_to_ids("▁the")
    assert decode_with_oovs(tok, [the, V], enc["oov_words"], vocab_size=V, oov_spacing=spacing) == f"the {word}"
    # Without the records (an older table: words only), the context alone: a space after "."
    glued = encode_with_oovs(tok, f"the file.{word} is the file", vocab_size=V)
    assert decode_with_oovs(tok, glued["extended_input_ids"], glued["oov_words"], vocab_size=V) == (
        f"the file. {word} is the file"
    )


@pytest.mark.parametrize("family", METASPACE_WORD_FAMILIES)
def test_spacing_survives_dataset_map_and_json(family):
    """The spacing lived in a str subclass that Arrow and JSON drop, so after `Dataset.map` (the
    Trainer's path) "v2.3" with "3" unknown decoded as "v2. 3". `oov_spacing` is plain data: both keep it."""
    from datasets import Dataset

    tok = _build(family)
    V = len(tok)
    texts = ["Update to v2.3 now", "the file. 3 is", "Open it"]
    mapped = Dataset.from_dict({"text": texts}).map(
        lambda batch: encode_with_oovs(tok, batch["text"], vocab_size=V), batched=True
    )
    assert "3" in mapped[0]["oov_words"] and "3" in mapped[1]["oov_words"]
    keys = ("extended_input_ids", "oov_words", "oov_spacing")
    in_memory = encode_with_oovs(tok, texts, vocab_size=V)
    from_json = json.loads(json.dumps({key: in_memory[key] for key in keys}))
    for columns in ({key: mapped[key] for key in keys}, from_json):
        decoded = batch_decode_with_oovs(
            tok,
            columns["extended_input_ids"],
            columns["oov_words"],
            vocab_size=V,
            oov_spacing=columns["oov_spacing"],
        )
        assert decoded == texts
        one = decode_with_oovs(
            tok,
            columns["extended_input_ids"][0],
            columns["oov_words"][0],
            vocab_size=V,
            oov_spacing=columns["oov_spacing"][0],
        )
        assert one == "Update to v2.3 now"
    # oov_words alone still decode, by the output's context (as before the records existed)
    assert batch_decode_with_oovs(tok, mapped["extended_input_ids"], mapped["oov_words"], vocab_size=V)[0] == (
        "Update to v2. 3 now"
    )
    with pytest.raises(ValueError, match="oov_spacing has 0 record"):
        decode_with_oovs(tok, mapped["extended_input_ids"][0], mapped["oov_words"][0], vocab_size=V, oov_spacing=[])
    with pytest.raises(TypeError, match=r"batch\['oov_spacing'\]\[i\]"):
        decode_with_oovs(
            tok,
            mapped["extended_input_ids"][0],
            mapped["oov_words"][0],
            vocab_size=V,
            oov_spacing=mapped["oov_spacing"],
        )


def test_the_import_path_of_earlier_versions_still_serves_the_three_functions():
    """Users' code (and saved folders of earlier versions) import these from tokenization_pointer_generator."""
    import hf_pgen
    from hf_pgen import tokenization_pointer_generator as earlier

    assert earlier.__all__ == ["encode_with_oovs", "decode_with_oovs", "batch_decode_with_oovs"]
    for name in earlier.__all__:
        assert getattr(earlier, name) is getattr(hf_pgen, name) is globals()[name]
