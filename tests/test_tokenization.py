"""Tests for hf_pgen.tokenization_pointer_generator (extended-vocabulary encode / decode).

Four real tokenizer families are trained once per module on real text nobody on the team wrote
(see `_real_text`), with small vocabularies so that unknown words exist.
"""

from __future__ import annotations

import ast
import functools
import gzip
import importlib
import inspect
import json
from pathlib import Path

import pytest
import torch
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
from transformers import PreTrainedTokenizerFast

from hf_pgen.tokenization_pointer_generator import (
    batch_decode_with_oovs,
    decode_with_oovs,
    encode_with_oovs,
)

REPO = Path(__file__).resolve().parents[1]
MODULE_PATH = REPO / "hf_pgen" / "tokenization_pointer_generator.py"
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


@functools.lru_cache(maxsize=1)
def _real_text() -> tuple[str, ...]:
    """Real sentences for training: the project's en/de message corpus when present, else the
    English docstrings of the Python standard library."""
    corpus = REPO / "training" / "data" / "en_de_messages"
    train = corpus / "train.jsonl.gz"
    files = [train] if train.exists() else sorted(corpus.glob("*.jsonl.gz"))
    lines: list[str] = []
    size = 0
    for path in files:
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            for line in fh:
                pair = json.loads(line).get("translation", {})
                for key in ("en", "de"):
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
def _build(family: str) -> PreTrainedTokenizerFast:
    lines = _real_text()
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


def test_module_imports_only_stdlib_torch_transformers():
    tree = ast.parse(MODULE_PATH.read_text(encoding="utf-8"))
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            roots.add(node.module.split(".")[0])
    import sys

    assert roots - set(sys.stdlib_module_names) <= {"torch", "transformers"}
