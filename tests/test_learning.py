"""The copy mechanism learns: a tiny model copies words its vocabulary lacks; the same base without copying cannot."""

import re

import pytest
import torch
from testing_utils import corpus_texts

from hf_pgen import batch_decode_with_oovs, encode_with_oovs


def _holds(text: str, word: str) -> bool:
    """`word` (a token: a word, a punctuation mark or a whole placeholder) stands in `text` as a token of its own."""
    return re.search(r"(?<!\w)" + re.escape(word) + r"(?!\w)", text) is not None


def test_copies_out_of_vocabulary_words_it_never_saw(trained_copier):
    model, tokenizer, test_texts = trained_copier
    batch = encode_with_oovs(
        tokenizer, test_texts, vocab_size=model.config.vocab_size, padding=True, return_tensors="pt"
    )
    oov_words = batch.pop("oov_words")
    assert sum(map(len, oov_words)) >= 50, "the test set must exercise copying"
    train_words = {w for text in corpus_texts("train", limit=3000) for w in text.split()}
    assert any(w not in train_words for words in oov_words for w in words), "some copied words are unseen in training"

    with torch.no_grad():
        generated = model.generate(**batch, num_beams=2)
    outputs = batch_decode_with_oovs(tokenizer, generated, oov_words, vocab_size=model.config.vocab_size)
    copied = sum(_holds(output, word) for words, output in zip(oov_words, outputs) for word in words)
    rate = copied / sum(map(len, oov_words))
    assert rate >= 0.9, (rate, list(zip(test_texts, outputs))[:5])

    # The same base alone can only name words through its vocabulary: none of the OOV words can appear.
    with torch.no_grad():
        base_ids = model.base.generate(
            input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], num_beams=2
        )
    assert int(base_ids.max()) < model.config.vocab_size
    base_outputs = tokenizer.batch_decode(base_ids, skip_special_tokens=True)
    base_copied = sum(_holds(output, word) for words, output in zip(oov_words, base_outputs) for word in words)
    assert base_copied == 0


def test_switch_learned_to_copy_unknown_words(trained_copier):
    model, tokenizer, test_texts = trained_copier
    batch = encode_with_oovs(
        tokenizer,
        test_texts,
        text_target=test_texts,
        vocab_size=model.config.vocab_size,
        padding=True,
        return_tensors="pt",
    )
    batch.pop("oov_words")
    with torch.no_grad():
        out = model(**batch, output_pointer=True)
    labels = batch["labels"]
    copy_only = labels >= model.config.vocab_size
    in_vocab = (labels >= 4) & (labels < model.config.vocab_size)
    # p_gen is low where the gold word can only be copied, and higher where the vocabulary has it.
    assert out.p_gen[copy_only].mean() < 0.2
    assert out.p_gen[copy_only].mean() < out.p_gen[in_vocab].mean()


pytestmark = pytest.mark.slow  # left out by `make test-fast`
