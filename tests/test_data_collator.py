"""Tests for hf_pgen.data_collator.DataCollatorForPointerGenerator (a DataCollatorForSeq2Seq plus extended ids)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from testing_utils import corpus_texts, tiny_base, word_level_tokenizer
from transformers import DataCollatorForSeq2Seq

from hf_pgen import PointerGeneratorForConditionalGeneration
from hf_pgen.data_collator import DataCollatorForPointerGenerator
from hf_pgen.tokenization_pointer_generator import decode_with_oovs, encode_with_oovs

SOURCES = ["Zyxwvut", "the file Qwzxy is Zyxwvut .", "", "the file"]
TARGETS = ["Zyxwvut file", "x", "the Qwzxy file", "file"]


@pytest.fixture(scope="module")
def tok():
    return word_level_tokenizer(corpus_texts("train", limit=2000), vocab_size=1000)


@pytest.fixture(scope="module")
def vocab_size(tok):
    return len(tok) + 8  # model output width larger than the tokenizer


@pytest.fixture()
def features(tok, vocab_size):
    enc = encode_with_oovs(tok, SOURCES, TARGETS, vocab_size=vocab_size)
    return [{k: enc[k][i] for k in enc.keys()} for i in range(len(SOURCES))]


@pytest.fixture(scope="module")
def pointer_generator(tok, vocab_size):
    base = tiny_base("bart", vocab_size=vocab_size)
    return PointerGeneratorForConditionalGeneration.from_base(base, unk_token_id=tok.unk_token_id).eval()


def test_is_data_collator_for_seq2seq_plus_extended_ids(tok, features):
    """Regression: the collator re-implemented padding instead of extending DataCollatorForSeq2Seq."""
    assert issubclass(DataCollatorForPointerGenerator, DataCollatorForSeq2Seq)
    ours = DataCollatorForPointerGenerator(tok, pad_to_multiple_of=4)(features)
    stock = DataCollatorForSeq2Seq(tok, pad_to_multiple_of=4)(
        [{k: f[k] for k in ("input_ids", "attention_mask", "labels")} for f in features]
    )
    assert set(ours) == set(stock) | {"extended_input_ids"}
    for key in stock:
        assert torch.equal(ours[key], stock[key]), key


@pytest.mark.parametrize("side", ["right", "left"])
def test_pads_each_key(tok, features, side, vocab_size):
    old = tok.padding_side
    tok.padding_side = side
    try:
        batch = DataCollatorForPointerGenerator(tok)(features)
    finally:
        tok.padding_side = old
    assert "oov_words" not in batch and "oov_spacing" not in batch
    assert set(batch) == {"input_ids", "attention_mask", "extended_input_ids", "labels"}
    src_len = [len(f["input_ids"]) for f in features]
    tgt_len = [len(f["labels"]) for f in features]
    assert batch["input_ids"].shape == batch["extended_input_ids"].shape == (4, max(src_len))
    assert batch["extended_input_ids"].dtype == torch.long
    assert batch["labels"].shape == (4, max(tgt_len))
    assert batch["attention_mask"].sum(1).tolist() == src_len
    for i, f in enumerate(features):
        n, m = src_len[i], tgt_len[i]
        real = slice(0, n) if side == "right" else slice(max(src_len) - n, None)
        pad = slice(n, None) if side == "right" else slice(0, max(src_len) - n)
        assert batch["input_ids"][i, real].tolist() == f["input_ids"]
        assert batch["extended_input_ids"][i, real].tolist() == f["extended_input_ids"]
        assert (batch["input_ids"][i, pad] == tok.pad_token_id).all()
        assert (batch["attention_mask"][i, pad] == 0).all() and (batch["attention_mask"][i, real] == 1).all()
        lreal = slice(0, m) if side == "right" else slice(max(tgt_len) - m, None)
        lpad = slice(m, None) if side == "right" else slice(0, max(tgt_len) - m)
        assert batch["labels"][i, lreal].tolist() == f["labels"]
        assert (batch["labels"][i, lpad] == -100).all()
    # the model checks that extended ids repeat input_ids wherever there is no OOV word, padding included
    padded = batch["attention_mask"] == 0
    assert padded.any() and torch.equal(batch["extended_input_ids"][padded], batch["input_ids"][padded])
    # extended ids survive collation and still decode through each example's own table
    assert batch["labels"][0].tolist().count(vocab_size) == 1
    text = decode_with_oovs(tok, batch["labels"][0], features[0]["oov_words"], vocab_size=vocab_size)
    assert text == "Zyxwvut file"


def test_pad_to_multiple_of_and_max_length(tok, features):
    batch = DataCollatorForPointerGenerator(tok, pad_to_multiple_of=8, label_pad_token_id=-7)(features)
    assert batch["input_ids"].shape[1] % 8 == 0 and batch["labels"].shape[1] % 8 == 0
    assert batch["input_ids"].shape[1] == batch["extended_input_ids"].shape[1] == 8
    assert (batch["labels"] == -7).sum() == batch["labels"].numel() - sum(len(f["labels"]) for f in features)
    fixed = DataCollatorForPointerGenerator(tok, padding="max_length", max_length=12)(features)
    assert fixed["input_ids"].shape == fixed["extended_input_ids"].shape == fixed["labels"].shape == (4, 12)
    with pytest.raises(ValueError, match="longer than max_length=3"):
        DataCollatorForPointerGenerator(tok, padding="max_length", max_length=3)(features)
    with pytest.raises(ValueError, match="padding=False"):
        DataCollatorForPointerGenerator(tok, padding=False)(features)
    same = [features[0], features[0]]
    assert DataCollatorForPointerGenerator(tok, padding=False)(same)["extended_input_ids"].shape == (2, 2)


def test_decoder_input_ids_come_from_the_model(tok, features, vocab_size, pointer_generator):
    """Regression: the collator mapped extended ids to unk itself. Decoder inputs are the model's business: its
    prepare_decoder_input_ids_from_labels (DataCollatorForSeq2Seq calls it) keeps copied words' extended ids, which
    selective read needs and forward embeds as the unknown token; the collator adds nothing of its own."""
    batch = DataCollatorForPointerGenerator(tok, model=pointer_generator)(features)
    labels, dec = batch["labels"], batch["decoder_input_ids"]
    assert (labels >= vocab_size).any() and torch.equal(
        dec[:, 1:][labels[:, :-1] >= vocab_size], labels[:, :-1][labels[:, :-1] >= vocab_size]
    )
    assert torch.equal(dec, pointer_generator.prepare_decoder_input_ids_from_labels(labels))
    assert (dec[:, 0] == pointer_generator.config.decoder_start_token_id).all()
    with torch.no_grad():
        out = pointer_generator(**batch)
    assert torch.isfinite(out.loss)
    # A model without a mapping of its own gets exactly what its method returns: no second mapping here.
    plain = tiny_base("bart", vocab_size=vocab_size)
    plain_batch = DataCollatorForPointerGenerator(tok, model=plain)(features)
    assert torch.equal(plain_batch["decoder_input_ids"], plain.prepare_decoder_input_ids_from_labels(labels=labels))


def test_numpy_tensors_and_clear_errors(tok, features):
    batch = DataCollatorForPointerGenerator(tok, return_tensors="np")(features)
    keys = ("input_ids", "attention_mask", "extended_input_ids", "labels")
    assert all(isinstance(batch[key], np.ndarray) for key in keys)
    assert batch["extended_input_ids"].shape == batch["input_ids"].shape
    assert batch["extended_input_ids"][1].tolist()[: len(features[1]["input_ids"])] == features[1]["extended_input_ids"]
    with pytest.raises(TypeError, match="strings"):
        DataCollatorForPointerGenerator(tok)([dict(f, note="text") for f in features])
    with pytest.raises(ValueError, match="empty"):
        DataCollatorForPointerGenerator(tok)([])
    with pytest.raises(ValueError, match="Feature 1: `extended_input_ids` has"):
        DataCollatorForPointerGenerator(tok)([features[0], dict(features[1], extended_input_ids=[5])])


def test_dataloader_over_mapped_dataset(tok, vocab_size, pointer_generator):
    import datasets

    raw = datasets.Dataset.from_dict({"src": SOURCES, "tgt": TARGETS})

    def preprocess(batch):
        return encode_with_oovs(tok, batch["src"], batch["tgt"], vocab_size=vocab_size)

    mapped = raw.map(preprocess, batched=True, batch_size=3, remove_columns=["src", "tgt"])
    mapped = mapped.add_column("num_truncated_tokens", [0, 0, 0, 0])  # decoding-only keys are dropped as well
    assert mapped["oov_words"] == [["Zyxwvut"], ["Qwzxy", "Zyxwvut"], [], []]
    assert [len(records) for records in mapped["oov_spacing"]] == [1, 2, 0, 0]  # the spacing column travels along
    loader = torch.utils.data.DataLoader(
        mapped,
        batch_size=3,
        collate_fn=DataCollatorForPointerGenerator(tok, model=pointer_generator, pad_to_multiple_of=4),
    )
    batches = list(loader)
    assert [b["input_ids"].shape[0] for b in batches] == [3, 1]
    for b in batches:
        assert not {"oov_words", "oov_spacing", "num_truncated_tokens"} & set(b) and b["input_ids"].shape[1] % 4 == 0
        assert b["extended_input_ids"].dtype == torch.long and "decoder_input_ids" in b
        with torch.no_grad():
            assert torch.isfinite(pointer_generator(**b).loss)
    first = batches[0]
    assert first["extended_input_ids"][1].tolist().count(vocab_size + 1) == 1  # Zyxwvut is slot 1 there
    decoded = decode_with_oovs(tok, first["labels"][2], mapped[2]["oov_words"], vocab_size=vocab_size)
    assert decoded == "the file"  # target OOVs absent from an empty source stay unknown (skipped)
