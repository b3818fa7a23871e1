"""Tests for hf_pgen.data_collator.DataCollatorForPointerGenerator."""

from __future__ import annotations

import pytest
import torch
from transformers import BartConfig, BartForConditionalGeneration

from hf_pgen.data_collator import DataCollatorForPointerGenerator
from hf_pgen.tokenization_pointer_generator import decode_with_oovs, encode_with_oovs
from test_tokenization import _build

SOURCES = ["Zyxwvut", "the file Qwzxy is Zyxwvut .", "", "the file"]
TARGETS = ["Zyxwvut file", "x", "the Qwzxy file", "file"]


@pytest.fixture(scope="module")
def tok():
    return _build("wordlevel")


@pytest.fixture(scope="module")
def vocab_size(tok):
    return len(tok) + 8  # model output width larger than the tokenizer


@pytest.fixture()
def features(tok, vocab_size):
    enc = encode_with_oovs(tok, SOURCES, TARGETS, vocab_size=vocab_size)
    return [{k: enc[k][i] for k in enc.keys()} for i in range(len(SOURCES))]


def _tiny_bart(vocab_size: int, tok) -> BartForConditionalGeneration:
    torch.manual_seed(0)
    config = BartConfig(
        vocab_size=vocab_size,
        d_model=16,
        encoder_layers=1,
        decoder_layers=1,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=32,
        decoder_ffn_dim=32,
        max_position_embeddings=64,
        pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
        bos_token_id=tok.eos_token_id,
        decoder_start_token_id=tok.eos_token_id,
    )
    return BartForConditionalGeneration(config).eval()


@pytest.mark.parametrize("side", ["right", "left"])
def test_pads_each_key(tok, features, side, vocab_size):
    old = tok.padding_side
    tok.padding_side = side
    try:
        batch = DataCollatorForPointerGenerator(tok)(features)
    finally:
        tok.padding_side = old
    assert "oov_words" not in batch
    assert set(batch) == {"input_ids", "attention_mask", "extended_input_ids", "labels"}
    src_len = [len(f["input_ids"]) for f in features]
    tgt_len = [len(f["labels"]) for f in features]
    assert batch["input_ids"].shape == batch["extended_input_ids"].shape == (4, max(src_len))
    assert batch["labels"].shape == (4, max(tgt_len))
    assert batch["attention_mask"].sum(1).tolist() == src_len
    for i, f in enumerate(features):
        n, m = src_len[i], tgt_len[i]
        real = slice(0, n) if side == "right" else slice(max(src_len) - n, None)
        pad = slice(n, None) if side == "right" else slice(0, max(src_len) - n)
        assert batch["input_ids"][i, real].tolist() == f["input_ids"]
        assert batch["extended_input_ids"][i, real].tolist() == f["extended_input_ids"]
        assert (batch["input_ids"][i, pad] == tok.pad_token_id).all()
        assert (batch["extended_input_ids"][i, pad] == tok.pad_token_id).all()
        assert (batch["attention_mask"][i, pad] == 0).all() and (batch["attention_mask"][i, real] == 1).all()
        lreal = slice(0, m) if side == "right" else slice(max(tgt_len) - m, None)
        lpad = slice(m, None) if side == "right" else slice(0, max(tgt_len) - m)
        assert batch["labels"][i, lreal].tolist() == f["labels"]
        assert (batch["labels"][i, lpad] == -100).all()
    # extended ids survive collation and still decode through each example's own table
    assert batch["labels"][0].tolist().count(vocab_size) == 1
    text = decode_with_oovs(tok, batch["labels"][0], features[0]["oov_words"], vocab_size=vocab_size)
    assert text == "Zyxwvut file"


def test_pad_to_multiple_of_and_max_length(tok, features):
    batch = DataCollatorForPointerGenerator(tok, pad_to_multiple_of=8, label_pad_token_id=-7)(features)
    assert batch["input_ids"].shape[1] % 8 == 0 and batch["labels"].shape[1] % 8 == 0
    assert batch["input_ids"].shape[1] == 8
    assert (batch["labels"] == -7).sum() == batch["labels"].numel() - sum(len(f["labels"]) for f in features)
    fixed = DataCollatorForPointerGenerator(tok, padding="max_length", max_length=12)(features)
    assert fixed["input_ids"].shape == fixed["labels"].shape == (4, 12)
    with pytest.raises(ValueError, match="max_length"):
        DataCollatorForPointerGenerator(tok, padding="max_length", max_length=3)(features)
    with pytest.raises(ValueError, match="padding=False"):
        DataCollatorForPointerGenerator(tok, padding=False)(features)
    same = [features[0], features[0]]
    assert DataCollatorForPointerGenerator(tok, padding=False)(same)["input_ids"].shape == (2, 2)


def test_decoder_input_ids_from_model(tok, features, vocab_size):
    model = _tiny_bart(vocab_size, tok)
    collator = DataCollatorForPointerGenerator(tok, model=model)
    batch = collator(features)
    dec = batch["decoder_input_ids"]
    assert dec.shape == batch["labels"].shape
    assert (dec[:, 0] == tok.eos_token_id).all()  # decoder_start_token_id
    labels = batch["labels"]
    shifted = labels[:, :-1].masked_fill(labels[:, :-1] == -100, tok.pad_token_id)
    shifted = shifted.masked_fill(shifted >= vocab_size, tok.unk_token_id)  # copied words have no embedding
    assert torch.equal(dec[:, 1:], shifted)
    assert (labels >= vocab_size).any() and not (dec >= vocab_size).any()
    with torch.no_grad():
        out = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], decoder_input_ids=dec)
    assert out.logits.shape == (*dec.shape, vocab_size)
    # given decoder_input_ids are kept as they are
    given = [dict(f, decoder_input_ids=[tok.eos_token_id] * len(f["labels"])) for f in features]
    assert (collator(given)["decoder_input_ids"][labels != -100] == tok.eos_token_id).all()


def test_rejects_other_string_columns(tok, features):
    with pytest.raises(TypeError, match="strings"):
        DataCollatorForPointerGenerator(tok)([dict(f, note="text") for f in features])


def test_dataloader_over_mapped_dataset(tok, vocab_size):
    import datasets
    raw = datasets.Dataset.from_dict({"src": SOURCES, "tgt": TARGETS})

    def preprocess(batch):
        return encode_with_oovs(tok, batch["src"], batch["tgt"], vocab_size=vocab_size)

    mapped = raw.map(preprocess, batched=True, batch_size=3, remove_columns=["src", "tgt"])
    assert "oov_words" in mapped.column_names
    assert mapped["oov_words"] == [["Zyxwvut"], ["Qwzxy", "Zyxwvut"], [], []]
    model = _tiny_bart(vocab_size, tok)
    loader = torch.utils.data.DataLoader(
        mapped, batch_size=3, collate_fn=DataCollatorForPointerGenerator(tok, model=model, pad_to_multiple_of=4)
    )
    batches = list(loader)
    assert [b["input_ids"].shape[0] for b in batches] == [3, 1]
    for b in batches:
        assert "oov_words" not in b and b["input_ids"].shape[1] % 4 == 0
        assert b["extended_input_ids"].dtype == torch.long and "decoder_input_ids" in b
    first = batches[0]
    assert first["extended_input_ids"][1].tolist().count(vocab_size + 1) == 1  # Zyxwvut is slot 1 there
    decoded = decode_with_oovs(tok, first["labels"][2], mapped[2]["oov_words"], vocab_size=vocab_size)
    assert decoded == "the file"  # target OOVs absent from an empty source stay unknown (skipped)
