"""hf_pgen.word_dropout and the trainer's word_dropout: dropped tokens become unknown to the encoder and to copying
alike, labels that can no longer be copied become unknown, and evaluation never drops anything."""

import pytest
import torch
from testing_utils import UNK, VOCAB, corpus_texts, source_batch, tiny_base

from hf_pgen import PointerGeneratorForConditionalGeneration, PointerGeneratorSeq2SeqTrainer, encode_with_oovs
from hf_pgen.word_dropout import drop_words

PAD, EOS = 1, 2
SPECIALS = (PAD, EOS, UNK)

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def copy_batch():
    """source_batch()'s three sources with labels naming their OOV slots (row 2's first slot stands twice)."""
    input_ids, attention_mask, extended = source_batch()
    labels = torch.tensor(
        [
            [10, 11, 2, -100],
            [VOCAB, 20, 2, -100],  # copies the OOV word at position 2
            [VOCAB, VOCAB + 1, 30, 2],  # slot 0 stands at positions 1 and 5, slot 1 at position 3
        ]
    )
    decoder_input_ids = torch.cat([torch.full((3, 1), EOS), labels[:, :-1].clamp_min(PAD)], dim=1)
    return dict(
        input_ids=input_ids,
        attention_mask=attention_mask,
        extended_input_ids=extended,
        labels=labels,
        decoder_input_ids=decoder_input_ids,
    )


@pytest.mark.parametrize("seed", range(40))
def test_a_dropped_source_token_is_unknown_to_the_encoder_and_to_copying(seed):
    batch = copy_batch()
    out = drop_words(
        batch,
        0.5,
        unk_token_id=UNK,
        vocab_size=VOCAB,
        special_ids=SPECIALS,
        generator=torch.Generator().manual_seed(seed),
    )
    dropped = out["extended_input_ids"] != batch["extended_input_ids"]  # in-vocabulary and OOV words alike
    assert torch.equal(out["input_ids"] != batch["input_ids"], dropped & (batch["input_ids"] != UNK))
    assert (out["input_ids"][dropped] == UNK).all() and (out["extended_input_ids"][dropped] == UNK).all()
    structural = ~batch["attention_mask"].bool() | torch.isin(batch["input_ids"], torch.tensor((PAD, EOS)))
    assert not (dropped & structural).any()  # padding and end of sequence are never touched
    # a copied label whose word stands nowhere in its source any more is unknown; the others stay
    for row in range(3):
        for col, label in enumerate(batch["labels"][row].tolist()):
            expected = label
            if label >= VOCAB and label not in out["extended_input_ids"][row].tolist():
                expected = UNK
            assert int(out["labels"][row, col]) == expected
    assert torch.equal(out["decoder_input_ids"], batch["decoder_input_ids"])  # no target dropout asked for


def test_out_of_vocabulary_words_are_dropped_like_the_others():
    """Their input_ids already hold the unknown token: dropping one is dropping its extended id."""
    batch = copy_batch()
    oov = batch["extended_input_ids"] >= VOCAB
    rates = (
        torch.stack(
            [
                drop_words(batch, 0.5, UNK, VOCAB, SPECIALS, generator=torch.Generator().manual_seed(seed))[
                    "extended_input_ids"
                ]
                != batch["extended_input_ids"]
                for seed in range(200)
            ]
        )
        .float()
        .mean(0)
    )
    assert 0.4 < float(rates[oov].mean()) < 0.6 and 0.4 < float(rates[~oov & (batch["input_ids"] > EOS)].mean()) < 0.6


def test_a_repeated_oov_word_stays_copyable_while_one_of_its_positions_remains():
    batch = copy_batch()
    seen = set()
    for seed in range(200):
        out = drop_words(batch, 0.5, UNK, VOCAB, SPECIALS, generator=torch.Generator().manual_seed(seed))
        at_1, at_5 = int(out["extended_input_ids"][2, 1]), int(out["extended_input_ids"][2, 5])
        label = int(out["labels"][2, 0])
        assert label == (VOCAB if VOCAB in (at_1, at_5) else UNK)
        seen.add((at_1 == VOCAB, at_5 == VOCAB))
    assert seen == {(True, True), (True, False), (False, True), (False, False)}  # every case was drawn


def test_the_model_accepts_a_dropped_batch_and_refuses_the_labels_left_alone():
    torch.manual_seed(0)
    model = PointerGeneratorForConditionalGeneration.from_base(
        tiny_base("bart", dropout=0.0, decisive_init=False), unk_token_id=UNK, p_gen_bias_init=0.0
    )
    batch = copy_batch()
    generator = torch.Generator().manual_seed(3)
    out = drop_words(batch, 0.6, UNK, VOCAB, SPECIALS, generator=generator)
    assert (out["labels"] != batch["labels"]).any()  # this draw dropped a copied word everywhere
    assert torch.isfinite(model(**out).loss)
    stale = dict(out, labels=batch["labels"])  # the dropped word is still asked for: no source position holds it
    with pytest.raises(ValueError, match="beyond the extended vocabulary"):
        model(**stale)


def test_target_word_dropout_keeps_the_start_token_and_the_labels():
    batch = copy_batch()
    out = drop_words(
        batch, 0.0, UNK, VOCAB, SPECIALS, target_probability=0.9, generator=torch.Generator().manual_seed(0)
    )
    assert torch.equal(out["input_ids"], batch["input_ids"]) and torch.equal(out["labels"], batch["labels"])
    changed = out["decoder_input_ids"] != batch["decoder_input_ids"]
    assert changed.any() and not changed[:, 0].any()
    assert (out["decoder_input_ids"][changed] == UNK).all()
    assert not changed[batch["decoder_input_ids"] == PAD].any()


@pytest.mark.parametrize("probability", [-0.1, 1.0])
def test_probabilities_outside_zero_to_one_are_refused(probability):
    with pytest.raises(ValueError, match="must lie in"):
        drop_words(copy_batch(), probability, UNK, VOCAB, SPECIALS)
    with pytest.raises(ValueError, match="target_probability"):
        drop_words(copy_batch(), 0.1, UNK, VOCAB, SPECIALS, target_probability=probability)


def test_the_trainer_drops_words_while_training_only(tmp_path):
    from transformers import Seq2SeqTrainingArguments

    from hf_pgen.tokenizer_training import train_shared_tokenizer

    texts = corpus_texts("train", limit=64)
    tokenizer = train_shared_tokenizer(texts, "wordlevel", vocab_size=120, min_frequency=1)
    base = tiny_base("bart", tokenizer=tokenizer, d_model=16, layers=1, heads=2, dropout=0.0, decisive_init=False)
    model = PointerGeneratorForConditionalGeneration.from_base(
        base, unk_token_id=tokenizer.unk_token_id, p_gen_bias_init=0.0
    )
    encoded = encode_with_oovs(tokenizer, texts[:16], text_target=texts[:16], vocab_size=model.config.vocab_size)
    args = Seq2SeqTrainingArguments(str(tmp_path), report_to="none", use_cpu=True, disable_tqdm=True)
    trainers = {
        p: PointerGeneratorSeq2SeqTrainer(model=model, args=args, processing_class=tokenizer, word_dropout=p)
        for p in (0.0, 0.5)
    }
    features = [
        {k: encoded[k][i] for k in ("input_ids", "attention_mask", "extended_input_ids", "labels")} for i in range(16)
    ]
    batch = trainers[0.0].data_collator(features)
    batch.pop("example_index", None)
    with torch.no_grad():
        model.eval()
        assert float(trainers[0.5].compute_loss(model, dict(batch))) == float(
            trainers[0.0].compute_loss(model, dict(batch))
        )
        model.train()
        torch.manual_seed(0)
        plain = float(trainers[0.0].compute_loss(model, dict(batch)))
        dropped = float(trainers[0.5].compute_loss(model, dict(batch)))
    assert dropped != plain and torch.isfinite(torch.tensor(dropped))
    with pytest.raises(ValueError, match="word_dropout must lie in"):
        PointerGeneratorSeq2SeqTrainer(model=model, args=args, processing_class=tokenizer, word_dropout=1.5)
