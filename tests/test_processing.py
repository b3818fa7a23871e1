"""Tests for hf_pgen.processing_pointer_generator (PointerGeneratorProcessor: tokenizer + the model's output width).

Tokenizers are trained on the embedded corpus; models are tiny and built from configs. The Marian / M2M100 stand-ins
(slow SentencePiece tokenizers, laid out like the Hub checkpoints) come from tests/testing_tokenizers.py.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
import torch
from testing_utils import corpus_texts, tiny_base, word_level_tokenizer

from hf_pgen import PointerGeneratorForConditionalGeneration, PointerGeneratorProcessor
from hf_pgen.tokenization_pointer_generator import batch_decode_with_oovs, decode_with_oovs, encode_with_oovs

REPO = Path(__file__).resolve().parents[1]
PADDING_ROWS = 8  # the model is wider than the tokenizer (T5 pads 32100 to 32128)


@pytest.fixture(scope="module")
def tokenizer():
    return word_level_tokenizer(corpus_texts("train", limit=2000), vocab_size=200)


@pytest.fixture(scope="module")
def model(tokenizer):
    base = tiny_base("bart", vocab_size=len(tokenizer) + PADDING_ROWS)
    return PointerGeneratorForConditionalGeneration.from_base(base, unk_token_id=tokenizer.unk_token_id).eval()


SOURCES = ["Delete Zyxwvut now", "Open Nakamura and Øresund", "the file"]


def test_call_is_the_functional_layer_with_the_models_width(tokenizer, model):
    processor = PointerGeneratorProcessor(tokenizer, vocab_size=model.config.vocab_size)
    assert processor.tokenizer is tokenizer and processor.vocab_size == len(tokenizer) + PADDING_ROWS
    batch = processor(SOURCES, text_target=SOURCES, padding=True, return_tensors="pt")
    expected = encode_with_oovs(
        tokenizer, SOURCES, SOURCES, vocab_size=model.config.vocab_size, padding=True, return_tensors="pt"
    )
    assert (
        set(batch)
        == set(expected)
        == {"input_ids", "attention_mask", "extended_input_ids", "labels", "oov_words", "oov_spacing"}
    )
    for key in ("input_ids", "attention_mask", "extended_input_ids", "labels"):
        assert torch.equal(batch[key], expected[key])
    assert batch["oov_words"] == expected["oov_words"] and "Zyxwvut" in batch["oov_words"][0]
    assert (batch["extended_input_ids"] >= len(tokenizer) + PADDING_ROWS).any()  # extended ids start at the width
    with pytest.raises(ValueError, match="smaller than len"):
        PointerGeneratorProcessor(tokenizer, vocab_size=len(tokenizer) - 1)


def test_generate_and_batch_decode_with_num_return_sequences(tokenizer, model):
    processor = PointerGeneratorProcessor.from_model(model, tokenizer)
    batch = processor(SOURCES, padding=True, return_tensors="pt", return_num_truncated_tokens=True)
    ids = model.generate(**batch, num_beams=2, num_return_sequences=2, max_new_tokens=6)  # the whole batch splats in
    assert ids.shape[0] == 2 * len(SOURCES)
    texts = processor.batch_decode(ids, batch)
    tables = [batch["oov_words"][r // 2] for r in range(ids.shape[0])]
    V = processor.vocab_size
    assert texts == [decode_with_oovs(tokenizer, row, table, vocab_size=V) for row, table in zip(ids, tables)]
    assert processor.batch_decode(ids, batch["oov_words"]) == texts  # the list of tables works the same
    assert processor.decode(ids[0], batch["oov_words"][0]) == texts[0]
    with pytest.raises(ValueError, match="multiple of the number of examples"):
        processor.batch_decode(ids[:5], batch)
    with pytest.raises(KeyError, match="oov_words"):
        processor.batch_decode(ids, {"input_ids": batch["input_ids"]})


def test_batch_decode_reads_the_spacing_records_of_a_batch_even_through_json(tokenizer, model):
    """The word-level unknown token swallows the space before "3"; the batch's `oov_spacing` says
    how the source spaced it, survives JSON, and is repeated per row like the tables."""
    import json

    processor = PointerGeneratorProcessor.from_model(model, tokenizer)
    texts = ["Update to v2.3 now", "Open the file.3 now"]
    batch = processor(texts)
    assert all("3" in table for table in batch["oov_words"])
    ids = batch["extended_input_ids"]  # a perfect copy
    back = json.loads(json.dumps(dict(batch)))
    assert processor.batch_decode(ids, batch) == processor.batch_decode(ids, back) == texts
    assert processor.batch_decode(ids, batch["oov_words"], oov_spacing=batch["oov_spacing"]) == texts
    assert [
        processor.decode(row, table, oov_spacing=spacing)
        for row, table, spacing in zip(ids, batch["oov_words"], batch["oov_spacing"])
    ] == texts
    twice = [row for row in ids for _ in range(2)]  # num_return_sequences=2: each example's records serve 2 rows
    assert processor.batch_decode(twice, back) == [text for text in texts for _ in range(2)]
    assert processor.batch_decode(ids, batch["oov_words"])[0] == "Update to v2. 3 now"  # words only: by context
    with pytest.raises(ValueError, match="oov_spacing does not match"):
        processor.batch_decode(ids, batch["oov_words"], oov_spacing=batch["oov_spacing"][:1])


def test_batch_decode_repeats_each_table_for_its_rows(tokenizer, model):
    """Row r of k * B generated rows belongs to example r // k: its copy ids mean that example's words."""
    processor = PointerGeneratorProcessor.from_model(model, tokenizer)
    batch = processor(["the Zyxwvut", "the Qwzxy"], return_tensors="pt")
    assert batch["oov_words"] == [["Zyxwvut"], ["Qwzxy"]]
    V = processor.vocab_size
    the = tokenizer.convert_tokens_to_ids("▁the")  # Metaspace: a word after a space (or first) carries "▁"
    ids = torch.tensor([[the, V], [V, the], [the, V], [V, the]])  # slot 0 in every row
    assert processor.batch_decode(ids, batch) == ["the Zyxwvut", "Zyxwvut the", "the Qwzxy", "Qwzxy the"]
    # one un-batched example's table (a single string encoded without return_tensors)
    single = processor("the Zyxwvut")
    assert processor.batch_decode(ids[:2], single) == ["the Zyxwvut", "Zyxwvut the"]
    assert processor.batch_decode(ids[[0], :1], None) == ["the"]  # None: no example has OOV words
    with pytest.raises(ValueError, match="OOV slot 0"):
        processor.batch_decode(ids, None)


def test_keywords_of_earlier_versions_still_work_with_a_warning(tokenizer, model):
    """OOV tables are `oov_words` everywhere now; a caller passing the old keyword names gets the same result."""
    processor = PointerGeneratorProcessor.from_model(model, tokenizer)
    batch = processor(["the Zyxwvut", "the Qwzxy"], return_tensors="pt")
    the, V = tokenizer.convert_tokens_to_ids("▁the"), processor.vocab_size
    ids = torch.tensor([[the, V], [V, the]])
    expected = processor.batch_decode(ids, oov_words=batch)
    with pytest.warns(FutureWarning, match=r"batch_or_tables=\.\.\.\) is renamed oov_words="):
        assert processor.batch_decode(ids, batch_or_tables=batch) == expected
    with pytest.warns(FutureWarning, match="oov_words_per_example=.*renamed oov_words="):
        old = batch_decode_with_oovs(
            tokenizer,
            ids,
            oov_words_per_example=batch["oov_words"],
            oov_spacing_per_example=batch["oov_spacing"],
            vocab_size=V,
        )
    assert old == expected == ["the Zyxwvut", "Qwzxy the"]
    with pytest.raises(TypeError, match="got both batch_or_tables= and oov_words="):
        processor.batch_decode(ids, batch_or_tables=batch, oov_words=batch)


def test_num_truncated_tokens_from_one_tokenization(tokenizer, model, monkeypatch):
    processor = PointerGeneratorProcessor.from_model(model, tokenizer)
    texts = corpus_texts("validation", min_words=1, max_words=40, limit=50)
    full = [len(ids) for ids in tokenizer(texts)["input_ids"]]
    calls = []
    original = tokenizer._encode_plus
    monkeypatch.setattr(tokenizer, "_encode_plus", lambda *a, **k: calls.append(1) or original(*a, **k))
    batch = processor(texts, max_length=6, padding=True, return_tensors="pt", return_num_truncated_tokens=True)
    assert len(calls) == 1
    assert batch["num_truncated_tokens"] == [max(0, n - 6) for n in full]
    assert isinstance(batch["num_truncated_tokens"], list) and batch["input_ids"].shape == (len(texts), 6)


def test_from_pretrained_reads_the_width_from_the_config(tmp_path, tokenizer, model):
    saved = tmp_path / "pointer-generator"
    model.save_pretrained(saved)
    processor_files = PointerGeneratorProcessor.from_model(model, tokenizer).save_pretrained(saved)
    assert any(str(f).endswith("tokenizer.json") for f in processor_files)
    processor = PointerGeneratorProcessor.from_pretrained(saved)
    assert processor.vocab_size == model.config.vocab_size == len(tokenizer) + PADDING_ROWS
    assert (
        processor(SOURCES)["extended_input_ids"]
        == encode_with_oovs(tokenizer, SOURCES, vocab_size=model.config.vocab_size)["extended_input_ids"]
    )
    # a plain base checkpoint works too
    base_folder = tmp_path / "base"
    model.base.save_pretrained(base_folder)
    tokenizer.save_pretrained(base_folder)
    assert PointerGeneratorProcessor.from_pretrained(base_folder).vocab_size == model.base.config.vocab_size
    # a tokenizer-only folder needs the width
    tokenizer_only = tmp_path / "tokenizer"
    tokenizer.save_pretrained(tokenizer_only)
    with pytest.raises(ValueError, match=r"vocab_size=model.config.vocab_size"):
        PointerGeneratorProcessor.from_pretrained(tokenizer_only)
    assert PointerGeneratorProcessor.from_pretrained(tokenizer_only, vocab_size=len(tokenizer) + 3).vocab_size == (
        len(tokenizer) + 3
    )


# ------------------------------------------------------------------------------------- slow SentencePiece tokenizers
@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    pytest.importorskip("sentencepiece")
    from testing_tokenizers import m2m100_checkpoint, marian_checkpoint

    root = tmp_path_factory.mktemp("checkpoints")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {"marian": marian_checkpoint(root / "marian"), "m2m100": m2m100_checkpoint(root / "m2m100")}


@pytest.mark.parametrize("name", ["marian", "m2m100"])
def test_slow_sentencepiece_checkpoint_end_to_end(checkpoints, name, tmp_path):
    from transformers import AutoModelForSeq2SeqLM, M2M100Tokenizer, MarianTokenizer

    folder = checkpoints[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        processor = PointerGeneratorProcessor.from_pretrained(folder)
    tokenizer = processor.tokenizer
    assert type(tokenizer) is {"marian": MarianTokenizer, "m2m100": M2M100Tokenizer}[name]
    base = AutoModelForSeq2SeqLM.from_pretrained(folder)
    assert processor.vocab_size == base.config.vocab_size  # M2M100's includes the language codes
    model = PointerGeneratorForConditionalGeneration.from_base(base, unk_token_id=tokenizer.unk_token_id).eval()

    sources = ["Delete {count} files 😀", "Open Ωmega now", "%(name)s is missing " + "and so is the file " * 3]
    batch = processor(
        sources, text_target=sources, padding=True, max_length=24, return_tensors="pt", return_num_truncated_tokens=True
    )
    reference = tokenizer(
        sources, text_target=sources, padding=True, max_length=24, truncation=True, return_tensors="pt"
    )
    assert torch.equal(batch["input_ids"], reference["input_ids"])
    assert ["{", "}", "😀"] == [w for w in batch["oov_words"][0] if w in "{}😀"]
    full = [len(ids) for ids in tokenizer(sources)["input_ids"]]
    assert batch["num_truncated_tokens"] == [max(0, n - 24) for n in full] and batch["num_truncated_tokens"][2] > 0
    # the source decodes back with its copies; the labels copy the same words
    assert processor.batch_decode(batch["extended_input_ids"], batch)[:2] == sources[:2]
    assert "😀" in processor.batch_decode(batch["labels"], batch)[0]
    V = processor.vocab_size
    assert (batch["labels"][0] >= V).sum() == (batch["extended_input_ids"][0] >= V).sum() > 0
    ids = model.generate(
        **{k: v for k, v in batch.items() if k != "labels"}, num_beams=2, num_return_sequences=2, max_new_tokens=5
    )
    assert len(processor.batch_decode(ids, batch)) == 2 * len(sources)
    # a made-up output that copies: "😀" then the tokenizer's own pieces
    table = batch["oov_words"][0]
    smile = V + table.index("😀")
    pieces = tokenizer("now", add_special_tokens=False)["input_ids"]
    prefix = [tokenizer.get_lang_id("de")] if name == "m2m100" else []  # the forced first token
    assert processor.decode([*prefix, smile, *pieces, tokenizer.eos_token_id], table) == "😀 now"
    # save_pretrained writes the tokenizer's own files (SentencePiece models included)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        processor.save_pretrained(tmp_path)
        again = PointerGeneratorProcessor.from_pretrained(tmp_path, vocab_size=V)
    assert again(sources)["extended_input_ids"] == processor(sources)["extended_input_ids"]
