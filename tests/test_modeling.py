import math

import pytest
import torch
from conftest import UNK, VOCAB, source_batch, tiny_base

from hf_pgen import PointerGeneratorConfig, PointerGeneratorForConditionalGeneration
from hf_pgen.modeling_pointer_generator import _word_mass, extended_log_probs, first_occurrence, gold_log_probs


def wrap(family, **settings):
    settings.setdefault("unk_token_id", UNK)
    return PointerGeneratorForConditionalGeneration.from_base(tiny_base(family), **settings).eval()


# -- the mixture ------------------------------------------------------------------------------------------------------


def test_worked_example_nakamura():
    """Source "the president Nakamura said"; "Nakamura" is out of vocabulary (extended id V)."""
    vocab = {"<unk>": 0, "the": 1, "president": 2, "said": 3, "today": 4}
    V = len(vocab)
    source = torch.tensor([[1, 2, V, 3]])  # (1, S=4)
    vocab_logits = torch.randn(1, 1, V)
    p_vocab = vocab_logits.softmax(-1)[0, 0]
    pointer = torch.tensor([[[0.1, 0.3, 0.4, 0.2]]])
    switch_logit = torch.full((1, 1), math.log(0.3 / 0.7))  # p_gen = 0.3

    log_p = extended_log_probs(vocab_logits, pointer, source, switch_logit, num_extended_slots=1)[0, 0]
    p = log_p.exp()
    assert p.shape == (V + 1,)
    assert p[V].item() == pytest.approx(0.28, abs=1e-6)  # P(Nakamura) = 0.7 * 0.4
    assert p[3].item() == pytest.approx(0.3 * p_vocab[3].item() + 0.14, abs=1e-6)  # P(said)
    assert p[4].item() == pytest.approx(0.3 * p_vocab[4].item(), abs=1e-6)  # not in the source: vocabulary only
    assert p.sum().item() == pytest.approx(1.0, abs=1e-6)
    # The training path (gold ids only) computes the same numbers.
    gold = gold_log_probs(vocab_logits, pointer, source, switch_logit, torch.tensor([[V]]))
    assert gold.exp().item() == pytest.approx(0.28, abs=1e-6)
    gold = gold_log_probs(vocab_logits, pointer, source, switch_logit, torch.tensor([[3]]))
    assert gold.item() == pytest.approx(log_p[3].item(), abs=1e-6)


def test_word_mass_sums_attention_over_repeated_words():
    torch.manual_seed(0)
    ids = torch.randint(0, 6, (4, 12))  # many repeats per row
    attention = torch.rand(4, 3, 12).softmax(-1)
    same_word = (ids.unsqueeze(2) == ids.unsqueeze(1)).float()  # (B, S, S): the naive definition
    torch.testing.assert_close(_word_mass(attention, first_occurrence(ids)), torch.bmm(attention, same_word))


def test_distributions_sum_to_one_and_gold_path_matches_full(family):
    model = wrap(family, p_gen_bias_init=0.0)
    input_ids, attention_mask, extended = source_batch()
    labels = torch.tensor([[10, 11, 2, -100], [VOCAB, 20, 5, 2], [VOCAB + 1, VOCAB, 31, 2]])
    out = model(input_ids=input_ids, attention_mask=attention_mask, extended_input_ids=extended, labels=labels)
    assert out.logits.shape == (3, 4, VOCAB + 2)
    torch.testing.assert_close(out.logits.exp().sum(-1), torch.ones(3, 4), atol=1e-5, rtol=0)
    gathered = out.logits.gather(-1, labels.clamp_min(0).unsqueeze(-1)).squeeze(-1)
    mask = labels != -100
    assert out.loss.item() == pytest.approx(-gathered[mask].mean().item(), rel=1e-5)
    # Row 0 owns no slot, row 1 only the first: those probabilities are exactly zero.
    assert torch.isneginf(out.logits[0, :, VOCAB:]).all()
    assert torch.isneginf(out.logits[1, :, VOCAB + 1]).all()


def test_gradients_reach_switch_and_pointer(family):
    model = wrap(family, p_gen_bias_init=0.0, coverage=True).train()
    input_ids, attention_mask, extended = source_batch()
    labels = torch.tensor([[10, 11, 2], [VOCAB, 20, 2], [VOCAB + 1, VOCAB, 2]])
    out = model(input_ids=input_ids, attention_mask=attention_mask, extended_input_ids=extended, labels=labels)
    assert out.logits is None  # training builds no (B, T, V + N) mixture
    out.loss.backward()
    for name in ["copy_switch.weight", "copy_switch.bias", "pointer.query.weight", "pointer.key.weight"]:
        grad = model.get_parameter(name).grad
        assert grad is not None and grad.abs().sum() > 0, name
    assert model.pointer.coverage_weight.weight.grad is not None


def test_bf16_autocast_saturated_switch_stays_finite(family):
    input_ids, attention_mask, extended = source_batch()
    labels = torch.tensor([[10, 11, 2], [VOCAB, 20, 2], [VOCAB + 1, VOCAB, 2]])
    for bias in (40.0, -40.0):  # p_gen saturated at 1 and at 0
        model = wrap(family, p_gen_bias_init=bias, coverage=True).train()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = model(input_ids=input_ids, attention_mask=attention_mask, extended_input_ids=extended, labels=labels)
        assert torch.isfinite(out.loss), bias
        out.loss.backward()
        for name, param in model.named_parameters():
            assert param.grad is None or torch.isfinite(param.grad).all(), (bias, name)


# -- from_base --------------------------------------------------------------------------------------------------------


def test_from_base_reuses_weights_and_generates_like_the_base(family):
    base = tiny_base(family)
    model = PointerGeneratorForConditionalGeneration.from_base(base, unk_token_id=UNK).eval()
    new = {n for n, _ in model.named_parameters() if not n.startswith("base.")}
    assert new == {"copy_switch.weight", "copy_switch.bias", "pointer.query.weight", "pointer.query.bias", "pointer.key.weight"}
    for name, param in base.named_parameters():
        assert torch.equal(model.get_parameter(f"base.{name}"), param)
    input_ids, attention_mask, _ = source_batch()
    for kwargs in ({}, {"num_beams": 4}, {"num_beams": 3, "num_return_sequences": 2}):
        expected = base.generate(input_ids=input_ids, attention_mask=attention_mask, max_new_tokens=8, **kwargs)
        got = model.generate(input_ids=input_ids, attention_mask=attention_mask, max_new_tokens=8, **kwargs)
        assert torch.equal(got, expected), kwargs
    # The distribution itself barely moves: p_gen starts at sigmoid(10).
    with torch.no_grad():
        decoder_input_ids = torch.full((3, 1), base.config.decoder_start_token_id)
        base_log_p = base(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=decoder_input_ids).logits.log_softmax(-1)
        ours = model(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=decoder_input_ids).logits
    top = base_log_p.argmax(-1, keepdim=True)
    torch.testing.assert_close(ours.gather(-1, top), base_log_p.gather(-1, top), atol=1e-3, rtol=0)


@pytest.mark.parametrize("other_family", ["mbart", "pegasus", "m2m_100"])
def test_other_families_follow_from_the_same_code(other_family):
    base = tiny_base(other_family)
    model = PointerGeneratorForConditionalGeneration.from_base(base, unk_token_id=UNK, coverage=True).eval()
    input_ids, attention_mask, extended = source_batch()
    expected = base.generate(input_ids=input_ids, attention_mask=attention_mask, num_beams=3, max_new_tokens=6)
    assert torch.equal(model.generate(input_ids=input_ids, attention_mask=attention_mask, num_beams=3, max_new_tokens=6), expected)
    labels = torch.tensor([[10, 11, 2], [VOCAB, 20, 2], [VOCAB + 1, VOCAB, 2]])
    out = model.train()(input_ids=input_ids, attention_mask=attention_mask, extended_input_ids=extended, labels=labels)
    out.loss.backward()
    assert torch.isfinite(out.loss) and model.copy_switch.weight.grad.abs().sum() > 0


def test_from_base_rejects_non_seq2seq():
    from transformers import GPT2Config, GPT2LMHeadModel

    gpt2 = GPT2LMHeadModel(GPT2Config(n_embd=16, n_layer=1, n_head=2, vocab_size=50))
    with pytest.raises(ValueError, match="encoder-decoder"):
        PointerGeneratorForConditionalGeneration.from_base(gpt2)
    with pytest.raises(ValueError, match="encoder-decoder"):
        PointerGeneratorConfig(base_config=gpt2.config)


def test_random_init_from_config():
    config = PointerGeneratorConfig(base_config=tiny_base("bart").config, unk_token_id=UNK, coverage=True)
    model = PointerGeneratorForConditionalGeneration(config).eval()
    assert torch.sigmoid(model.copy_switch.bias).item() > 0.999
    assert torch.all(model.copy_switch.weight == 0)
    input_ids, attention_mask, extended = source_batch()
    ids = model.generate(input_ids=input_ids, attention_mask=attention_mask, extended_input_ids=extended, max_new_tokens=5)
    assert ids.shape[0] == 3


# -- generation with copies -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("pointer", ["dedicated", "cross_attention"])
@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"num_beams": 4},
        {"num_beams": 4, "num_return_sequences": 3},
        {"do_sample": True, "num_return_sequences": 2, "top_k": 5},
        {"num_beams": 2, "use_cache": False},
    ],
)
def test_always_copy_emits_only_each_examples_own_source(family, pointer, kwargs):
    """With p_gen forced to 0 every token is copied: each must come from ITS OWN source, in any decoding mode."""
    model = wrap(family, force_p_gen=0.0, pointer=pointer, coverage=pointer == "dedicated")
    input_ids, attention_mask, extended = source_batch()
    torch.manual_seed(0)
    out = model.generate(
        input_ids=input_ids, attention_mask=attention_mask, extended_input_ids=extended, max_new_tokens=6,
        min_new_tokens=6, **kwargs,
    )
    per_example = out.shape[0] // 3
    if kwargs.get("do_sample"):  # sampling from a pure copy distribution over 7 words reaches the OOV slots
        assert (out >= VOCAB).any(), "no extended id was generated at all"
    for row, sequence in enumerate(out):
        example = row // per_example
        allowed = set(extended[example][attention_mask[example].bool()].tolist())
        generated = set(sequence[1:].tolist()) - {model.config.pad_token_id}
        assert generated <= allowed, (row, generated - allowed)


def test_batched_generation_equals_one_by_one(family):
    model = wrap(family, p_gen_bias_init=0.0, coverage=True)
    input_ids, attention_mask, extended = source_batch()
    batched = model.generate(
        input_ids=input_ids, attention_mask=attention_mask, extended_input_ids=extended, num_beams=3, max_new_tokens=7
    )
    for i in range(3):
        keep = attention_mask[i].bool()
        single = model.generate(
            input_ids=input_ids[i : i + 1, keep], extended_input_ids=extended[i : i + 1, keep], num_beams=3,
            max_new_tokens=7,
        )
        length = single.shape[1]
        assert torch.equal(batched[i, :length], single[0])
        assert (batched[i, length:] == model.config.pad_token_id).all()


def test_beam_scores_match_teacher_forced_recomputation(family):
    """Transition scores from beam search (coverage carried and reordered in the cache) equal a fresh forward pass."""
    model = wrap(family, p_gen_bias_init=0.0, coverage=True)
    input_ids, attention_mask, extended = source_batch()
    out = model.generate(
        input_ids=input_ids, attention_mask=attention_mask, extended_input_ids=extended, num_beams=4,
        num_return_sequences=2, max_new_tokens=6, min_new_tokens=6, return_dict_in_generate=True, output_scores=True,
        length_penalty=0.0,
    )
    transition = model.compute_transition_scores(out.sequences, out.scores, out.beam_indices)
    rows = torch.arange(6).div(2, rounding_mode="floor")
    with torch.no_grad():
        log_p = model(
            input_ids=input_ids[rows], attention_mask=attention_mask[rows], extended_input_ids=extended[rows],
            decoder_input_ids=out.sequences[:, :-1],
        ).logits
    expected = log_p.gather(-1, out.sequences[:, 1:].unsqueeze(-1)).squeeze(-1)
    steps = transition.shape[1]
    torch.testing.assert_close(transition, expected[:, :steps], atol=1e-4, rtol=0)
    torch.testing.assert_close(out.sequences_scores, transition.sum(-1), atol=1e-4, rtol=0)


def test_extended_decoder_inputs_are_embedded_as_unknown():
    model = wrap("bart", p_gen_bias_init=0.0)
    input_ids, attention_mask, extended = source_batch()
    with torch.no_grad():
        copied = model(input_ids=input_ids, attention_mask=attention_mask, extended_input_ids=extended,
                       decoder_input_ids=torch.tensor([[2, VOCAB]] * 3)).logits
        unknown = model(input_ids=input_ids, attention_mask=attention_mask, extended_input_ids=extended,
                        decoder_input_ids=torch.tensor([[2, UNK]] * 3)).logits
    torch.testing.assert_close(copied, unknown)


# -- bad input --------------------------------------------------------------------------------------------------------


def test_bad_inputs_get_clear_errors():
    model = wrap("bart")
    input_ids, attention_mask, extended = source_batch()
    with pytest.raises(ValueError, match="shape"):
        model(input_ids=input_ids, extended_input_ids=extended[:, :5], decoder_input_ids=input_ids[:, :2])
    wrong = extended.clone()
    wrong[0, 0] = 40
    with pytest.raises(ValueError, match=r"extended_input_ids\[0, 0\] = 40"):
        model(input_ids=input_ids, extended_input_ids=wrong, decoder_input_ids=input_ids[:, :2])
    labels = torch.tensor([[VOCAB, 2], [5, 2], [5, 2]])  # row 0 owns no extended slot
    with pytest.raises(ValueError, match=r"labels\[0, 0\].*beyond the extended vocabulary"):
        model(input_ids=input_ids, extended_input_ids=extended, labels=labels)
    with pytest.raises(ValueError, match="base vocabulary"):
        model(input_ids=extended, decoder_input_ids=input_ids[:, :2])
    model.config.unk_token_id = None
    with pytest.raises(ValueError, match="unk_token_id"):
        model(input_ids=input_ids, extended_input_ids=extended, decoder_input_ids=torch.tensor([[2, VOCAB]] * 3))


def test_generate_installs_the_oov_slot_processor(monkeypatch):
    from hf_pgen import ExtendedVocabularyLogitsProcessor

    calls = []
    original = ExtendedVocabularyLogitsProcessor.__call__

    def spy(self, input_ids, scores):
        calls.append(self.allowed_slots.clone())
        return original(self, input_ids, scores)

    monkeypatch.setattr(ExtendedVocabularyLogitsProcessor, "__call__", spy)
    model = wrap("bart")
    input_ids, attention_mask, extended = source_batch()
    model.generate(input_ids=input_ids, attention_mask=attention_mask, extended_input_ids=extended, num_beams=2,
                   max_new_tokens=2)
    assert calls, "generate() did not run the processor"
    # Beam-expanded rows: example 0 owns no slot, example 1 only slot 0, example 2 slots 0 and 1.
    expected = torch.tensor([[False, False], [True, False], [True, True]]).repeat_interleave(2, dim=0)
    assert torch.equal(calls[0], expected)
    scores = torch.zeros(6, VOCAB + 2)
    masked = ExtendedVocabularyLogitsProcessor(extended.repeat_interleave(2, dim=0), VOCAB)(None, scores)
    assert torch.isneginf(masked[:2, VOCAB:]).all() and torch.isneginf(masked[2:4, VOCAB + 1]).all()
    assert (masked[:, :VOCAB] == 0).all() and (masked[4:, VOCAB:] == 0).all()
