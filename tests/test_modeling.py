import math
from pathlib import Path

import pytest
import torch
from testing_utils import UNK, VOCAB, source_batch, tiny_base

from benchmarks.reference import extended_log_probs
from hf_pgen import PointerGeneratorConfig, PointerGeneratorForConditionalGeneration
from hf_pgen.configuration_pointer_generator import max_source_positions
from hf_pgen.mixture_pointer_generator import (
    count_oov_slots,
    first_occurrence,
    gold_log_probs,
    repeated_source_rows,
    source_word_mass,
)
from hf_pgen.modeling_pointer_generator import PointerGeneratorSeq2SeqLMOutput


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

    log_p = extended_log_probs(vocab_logits, pointer, source, switch_logit, num_oov_slots=1)[0, 0]
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
    torch.testing.assert_close(source_word_mass(attention, first_occurrence(ids)), torch.bmm(attention, same_word))


def test_distributions_sum_to_one_and_gold_path_matches_full(case_model):
    model = case_model
    input_ids, attention_mask, extended = source_batch()
    labels = torch.tensor([[10, 11, 2, -100], [VOCAB, 20, 5, 2], [VOCAB + 1, VOCAB, 31, 2]])
    out = model(input_ids=input_ids, attention_mask=attention_mask, extended_input_ids=extended, labels=labels)
    # With labels in evaluation mode the logits have one fixed width (vocabulary + one slot per source position), so
    # that the Trainer can concatenate batches; the columns past this batch's slots are impossible.
    assert out.logits.shape == (3, 4, VOCAB + max_source_positions(model.config))
    assert torch.isneginf(out.logits[..., VOCAB + 2 :]).all()
    torch.testing.assert_close(out.logits.exp().sum(-1), torch.ones(3, 4), atol=1e-5, rtol=0)
    gathered = out.logits.gather(-1, labels.clamp_min(0).unsqueeze(-1)).squeeze(-1)
    mask = labels != -100
    nll = out.loss - (model.config.coverage_weight * out.coverage_loss if model.config.coverage else 0.0)
    assert nll.item() == pytest.approx(-gathered[mask].mean().item(), rel=1e-5)
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


@pytest.mark.parametrize("frozen_base", [False, True])
def test_the_full_mixture_backpropagates_like_the_gold_path(frozen_base):
    """Logits built with autograd on (a forward without labels in training mode, as custom losses do) backpropagate,
    with only the copy layers trainable too, and give the gradients of the gold-label path."""
    input_ids, attention_mask, extended = source_batch()
    labels = torch.tensor([[10, 11, 2], [VOCAB, 20, 2], [VOCAB + 1, VOCAB, 2]])
    grads = []
    for through_logits in (True, False):
        model = wrap("bart", p_gen_bias_init=0.0).train()
        model.base.requires_grad_(not frozen_base)
        inputs = dict(input_ids=input_ids, attention_mask=attention_mask, extended_input_ids=extended)
        torch.manual_seed(0)  # the same dropout masks in both paths
        if through_logits:
            out = model(**inputs, decoder_input_ids=model.prepare_decoder_input_ids_from_labels(labels))
            loss = -out.logits.gather(-1, labels.unsqueeze(-1)).mean()
        else:
            loss = model(**inputs, labels=labels).loss
        loss.backward()
        grads.append({name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None})
    assert grads[0].keys() == grads[1].keys() and "copy_switch.weight" in grads[0]
    assert frozen_base == (not any(name.startswith("base.") for name in grads[0]))
    for name, grad in grads[0].items():
        torch.testing.assert_close(grad, grads[1][name], atol=1e-5, rtol=1e-4)


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
    assert new == {
        "copy_switch.weight",
        "copy_switch.bias",
        "pointer.query.weight",
        "pointer.query.bias",
        "pointer.key.weight",
    }
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
        base_log_p = base(
            input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=decoder_input_ids
        ).logits.log_softmax(-1)
        ours = model(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=decoder_input_ids).logits
    top = base_log_p.argmax(-1, keepdim=True)
    torch.testing.assert_close(ours.gather(-1, top), base_log_p.gather(-1, top), atol=1e-3, rtol=0)


@pytest.mark.parametrize("other_family", ["mbart", "pegasus", "m2m_100"])
def test_other_families_follow_from_the_same_code(other_family):
    base = tiny_base(other_family)
    model = PointerGeneratorForConditionalGeneration.from_base(base, unk_token_id=UNK, coverage=True).eval()
    input_ids, attention_mask, extended = source_batch()
    expected = base.generate(input_ids=input_ids, attention_mask=attention_mask, num_beams=3, max_new_tokens=6)
    assert torch.equal(
        model.generate(input_ids=input_ids, attention_mask=attention_mask, num_beams=3, max_new_tokens=6), expected
    )
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
    ids = model.generate(
        input_ids=input_ids, attention_mask=attention_mask, extended_input_ids=extended, max_new_tokens=5
    )
    assert ids.shape[0] == 3


# -- selective read and copy-next -------------------------------------------------------------------------------------


@pytest.mark.parametrize("pointer", ["dedicated", "cross_attention"])
def test_selective_read_and_copy_next_start_exactly_as_the_model_without_them(family, pointer):
    """Both options start at zero: wrapping a checkpoint with them changes no output, loss or generated token."""
    settings = dict(unk_token_id=UNK, p_gen_bias_init=0.0, pointer=pointer)
    plain = PointerGeneratorForConditionalGeneration.from_base(tiny_base(family), **settings).eval()
    model = PointerGeneratorForConditionalGeneration.from_base(
        tiny_base(family), selective_read=True, copy_next=True, **settings
    ).eval()
    new = {n for n, _ in model.named_parameters()} - {n for n, _ in plain.named_parameters()}
    assert new == {
        "selective_read.proj.weight",
        "copy_next.gate.weight",
        "copy_next.gate.bias",
        "copy_next.switch_weight",
    }
    assert all(not model.get_parameter(name).any() for name in new)
    model.load_state_dict(plain.state_dict(), strict=False)  # the same pointer and switch weights
    input_ids, attention_mask, extended = source_batch()
    batch = dict(input_ids=input_ids, attention_mask=attention_mask, extended_input_ids=extended)
    labels = torch.tensor([[10, 11, 2], [VOCAB, 20, 2], [VOCAB + 1, VOCAB, 2]])
    with torch.no_grad():
        assert torch.equal(model(**batch, labels=labels).loss, plain(**batch, labels=labels).loss)
    for kwargs in ({}, {"num_beams": 3}):
        assert torch.equal(
            model.generate(**batch, max_new_tokens=8, **kwargs), plain.generate(**batch, max_new_tokens=8, **kwargs)
        ), kwargs


def test_selective_read_tells_the_decoder_which_copied_word_it_was_fed():
    """Without it a copied word is fed back as the bare unknown token (see test_extended_decoder_inputs_are_embedded_as
    _unknown); with it the decoder sees the encoder states of that word's source positions, and a token absent from the
    source still gets nothing."""
    model = wrap("bart", p_gen_bias_init=0.0, selective_read=True)
    torch.nn.init.normal_(model.selective_read.proj.weight)
    input_ids, attention_mask, extended = source_batch()
    batch = dict(input_ids=input_ids, attention_mask=attention_mask, extended_input_ids=extended)

    def step_logits(fed):
        with torch.no_grad():
            return model(**batch, decoder_input_ids=torch.tensor([[2, fed]] * 3)).logits[:, 1]

    copied, unknown = step_logits(VOCAB), step_logits(UNK)
    # Rows 1 and 2 hold the word with extended id VOCAB; row 0 has no out-of-vocabulary word.
    assert not torch.allclose(copied[1:, :VOCAB], unknown[1:, :VOCAB])
    torch.testing.assert_close(copied[0], unknown[0])
    absent = torch.tensor([[59, 60]] * 3)  # in no source (the start token </s> is: rows 0 and 1 end with it)
    with torch.no_grad():
        reference = PointerGeneratorForConditionalGeneration.from_base(
            tiny_base("bart"), unk_token_id=UNK, p_gen_bias_init=0.0
        ).eval()
        reference.load_state_dict(model.state_dict(), strict=False)
        torch.testing.assert_close(
            model(**batch, decoder_input_ids=absent).logits, reference(**batch, decoder_input_ids=absent).logits
        )


@pytest.mark.parametrize("pointer", ["dedicated", "cross_attention"])
def test_copy_next_moves_the_pointer_to_the_position_after_the_fed_token(pointer):
    model = wrap("bart", p_gen_bias_init=0.0, copy_next=True, pointer=pointer)
    with torch.no_grad():
        model.copy_next.gate.bias.fill_(30.0)  # a strong "continue the copy"
    input_ids, attention_mask, extended = source_batch()
    fed = torch.tensor([[2, 12], [2, VOCAB], [2, 31]])  # source positions 2, 2 and 2: continuing means position 3
    with torch.no_grad():
        out = model(
            input_ids=input_ids,
            attention_mask=attention_mask,
            extended_input_ids=extended,
            decoder_input_ids=fed,
            output_pointer=True,
        )
    assert out.pointer_attentions[:, 1].argmax(-1).tolist() == [3, 3, 3]
    assert (out.pointer_attentions[:, 1, 3] > 0.99).all()
    # The first step was fed the start token (</s>, at the end of rows 0 and 1): nothing follows it in those sources.
    assert torch.allclose(out.pointer_attentions[:, 1].sum(-1), torch.ones(3))


def test_selective_read_and_copy_next_need_decoder_ids():
    model = wrap("bart", selective_read=True)
    input_ids, attention_mask, _ = source_batch()
    embeds = model.get_input_embeddings()(torch.full((3, 1), 2))
    with pytest.raises(ValueError, match="pass decoder_input_ids"):
        model(input_ids=input_ids, attention_mask=attention_mask, decoder_inputs_embeds=embeds)


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
        input_ids=input_ids,
        attention_mask=attention_mask,
        extended_input_ids=extended,
        max_new_tokens=6,
        min_new_tokens=6,
        **kwargs,
    )
    per_example = out.shape[0] // 3
    if kwargs.get("do_sample"):  # sampling from a pure copy distribution over 7 words reaches the OOV slots
        assert (out >= VOCAB).any(), "no extended id was generated at all"
    for row, sequence in enumerate(out):
        example = row // per_example
        allowed = set(extended[example][attention_mask[example].bool()].tolist())
        generated = set(sequence[1:].tolist()) - {model.config.pad_token_id}
        assert generated <= allowed, (row, generated - allowed)


def test_batched_generation_equals_one_by_one(case_model):
    model = case_model
    input_ids, attention_mask, extended = source_batch()
    batched = model.generate(
        input_ids=input_ids, attention_mask=attention_mask, extended_input_ids=extended, num_beams=3, max_new_tokens=7
    )
    for i in range(3):
        keep = attention_mask[i].bool()
        single = model.generate(
            input_ids=input_ids[i : i + 1, keep],
            extended_input_ids=extended[i : i + 1, keep],
            num_beams=3,
            max_new_tokens=7,
        )
        length = single.shape[1]
        assert torch.equal(batched[i, :length], single[0])
        assert (batched[i, length:] == model.config.pad_token_id).all()


def test_beam_scores_match_teacher_forced_recomputation(case_model):
    """Transition scores from beam search (coverage carried and reordered in the cache) equal a fresh forward pass."""
    model = case_model
    input_ids, attention_mask, extended = source_batch()
    out = model.generate(
        input_ids=input_ids,
        attention_mask=attention_mask,
        extended_input_ids=extended,
        num_beams=4,
        num_return_sequences=2,
        max_new_tokens=6,
        min_new_tokens=6,
        return_dict_in_generate=True,
        output_scores=True,
        length_penalty=0.0,
    )
    transition = model.compute_transition_scores(out.sequences, out.scores, out.beam_indices)
    rows = torch.arange(6).div(2, rounding_mode="floor")
    with torch.no_grad():
        log_p = model(
            input_ids=input_ids[rows],
            attention_mask=attention_mask[rows],
            extended_input_ids=extended[rows],
            decoder_input_ids=out.sequences[:, :-1],
        ).logits
    expected = log_p.gather(-1, out.sequences[:, 1:].unsqueeze(-1)).squeeze(-1)
    steps = transition.shape[1]
    torch.testing.assert_close(transition, expected[:, :steps], atol=1e-4, rtol=0)
    torch.testing.assert_close(out.sequences_scores, transition.sum(-1), atol=1e-4, rtol=0)


def test_repeated_source_rows_groups_only_rows_with_the_same_source():
    torch.manual_seed(0)
    states = torch.randn(3, 5, 4)  # (B, S, D)
    mask = torch.ones(3, 5, dtype=torch.long)
    assert repeated_source_rows(states.repeat_interleave(4, 0), mask.repeat_interleave(4, 0)) == 4
    assert repeated_source_rows(states, mask) == 1
    assert repeated_source_rows(states[:1].expand(6, -1, -1), None) == 6  # one source decoded six times
    # Equal states but another padding: not the same source.
    other_mask = mask.repeat_interleave(2, 0)
    other_mask[3, -1] = 0
    assert repeated_source_rows(states.repeat_interleave(2, 0), other_mask) == 1
    # Runs of unequal length (a source repeated in the batch, then a different one) are not a grouping.
    uneven = torch.cat([states[:1], states[:1], states[1:2]])
    assert repeated_source_rows(uneven, mask) == 1
    # Rows that agree on their first position (which suggests the run length) but differ later: not grouped.
    late_difference = states.repeat_interleave(4, 0)
    late_difference[5, 3, 1] += 1.0
    assert repeated_source_rows(late_difference, mask.repeat_interleave(4, 0)) == 1
    late_padding = mask.repeat_interleave(4, 0)
    late_padding[6, -1] = 0
    assert repeated_source_rows(states.repeat_interleave(4, 0), late_padding) == 1


def test_beam_search_shares_each_sources_pointer_keys_and_scores_as_per_row_keys(monkeypatch):
    """The hypotheses of a source read its pointer keys once per step; the result equals giving every row its own."""
    model = wrap("bart", p_gen_bias_init=0.0, coverage=True)
    input_ids, attention_mask, extended = source_batch()
    settings = dict(
        input_ids=input_ids,
        attention_mask=attention_mask,
        extended_input_ids=extended,
        num_beams=3,
        num_return_sequences=3,
        max_new_tokens=6,
        return_dict_in_generate=True,
        output_scores=True,
    )
    shared = model.generate(**settings)
    cache = shared.past_key_values
    assert cache.rows_per_source == 3 and cache.pointer_keys.shape[0] == 3  # one set of keys per source
    import hf_pgen.modeling_pointer_generator as modeling

    monkeypatch.setattr(modeling, "repeated_source_rows", lambda *args: 1)
    per_row = model.generate(**settings)
    assert per_row.past_key_values.pointer_keys.shape[0] == 9
    assert torch.equal(shared.sequences, per_row.sequences)
    torch.testing.assert_close(shared.sequences_scores, per_row.sequences_scores, atol=1e-5, rtol=0)


def test_row_selection_gives_every_row_its_own_keys_again():
    model = wrap("bart")
    input_ids, attention_mask, extended = source_batch()
    out = model.generate(
        input_ids=input_ids,
        attention_mask=attention_mask,
        extended_input_ids=extended,
        num_beams=2,
        max_new_tokens=3,
        return_dict_in_generate=True,
    )
    cache = out.past_key_values
    keys_of_source_1, query = cache.pointer_keys[1], cache.pointer_query
    cache.batch_select_indices(torch.tensor([3, 0]))  # row 3 decodes source 1, row 0 source 0
    assert cache.rows_per_source == 1 and cache.pointer_keys.shape[0] == 2
    assert torch.equal(cache.pointer_keys[0], keys_of_source_1)
    assert cache.pointer_query is query  # the model's, not a row's


def test_lm_output_is_a_model_output_whatever_fields_are_set():
    """Its faster attribute path keeps ModelOutput's behaviour: only set fields are keys, in field order."""
    logits, pointer = torch.zeros(1, 2, 5), torch.ones(1, 2, 3)
    out = PointerGeneratorSeq2SeqLMOutput(logits=logits, pointer_attentions=pointer)
    assert list(out.keys()) == ["logits", "pointer_attentions"]
    assert out[0] is logits and out["pointer_attentions"] is pointer and out.to_tuple() == (logits, pointer)
    assert out.loss is None and out.p_gen is None
    out.p_gen = torch.ones(1, 2)  # set later: becomes a key, as on any ModelOutput
    out.logits = None  # set to None later: stays a key with its value, as on any ModelOutput
    assert list(out.keys()) == ["logits", "pointer_attentions", "p_gen"] and out["logits"] is logits


def test_the_decoder_called_on_its_own_runs_no_copy_step():
    model = wrap("bart")
    input_ids, attention_mask, _ = source_batch()
    with torch.no_grad():
        encoder_states = model.get_encoder()(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        decoder_out = model.get_decoder()(
            input_ids=input_ids[:, :2], encoder_hidden_states=encoder_states, encoder_attention_mask=attention_mask
        )
    assert decoder_out.last_hidden_state.shape == (3, 2, 32)
    assert model._copy_step.outputs is None


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"num_beams": 4, "num_return_sequences": 2}, {"do_sample": True, "num_return_sequences": 3}],
    ids=["greedy", "beams", "sampling"],
)
def test_copy_info_equals_teacher_forcing_of_each_returned_sequence(case_model, kwargs):
    """generate(output_copy_info=True): row r of p_gen / pointer_attentions / copy_shares belongs to sequences[r] (of
    source r // k), equals a forward of that sequence alone on its own unpadded source, and is empty after its end."""
    model = case_model
    input_ids, attention_mask, extended = source_batch()
    torch.manual_seed(0)
    out = model.generate(
        input_ids=input_ids,
        attention_mask=attention_mask,
        extended_input_ids=extended,
        max_new_tokens=6,
        output_copy_info=True,
        **kwargs,
    )
    k = kwargs.get("num_return_sequences", 1)
    generated = out.sequences[:, 1:]  # (R, G)
    assert out.p_gen.shape == generated.shape and out.copy_shares.shape == generated.shape
    assert out.pointer_attentions.shape == (*generated.shape, input_ids.shape[1])
    eos = model.generation_config.eos_token_id
    for r, sequence in enumerate(out.sequences):
        i, keep = r // k, attention_mask[r // k].bool()
        ends = (generated[r] == eos).nonzero()
        length = int(ends[0]) + 1 if len(ends) else generated.shape[1]  # generated tokens up to and with EOS
        with torch.no_grad():
            single = model(
                input_ids=input_ids[i : i + 1, keep],
                extended_input_ids=extended[i : i + 1, keep],
                decoder_input_ids=sequence[None, :length],
                output_pointer=True,
            )
        chosen = generated[r, :length]
        p_gen, pointer = single.p_gen[0], single.pointer_attentions[0]  # (length,), (length, S_i)
        # Padding a batch moves T5's masked attention by float noise (~1e-4), nothing more.
        torch.testing.assert_close(out.p_gen[r, :length], p_gen, atol=5e-4, rtol=0)
        torch.testing.assert_close(out.pointer_attentions[r, :length][:, keep], pointer, atol=5e-4, rtol=0)
        assert (out.pointer_attentions[r, :length][:, ~keep].abs() < 1e-6).all()
        copy_mass = (pointer * (extended[i, keep][None, :] == chosen[:, None])).sum(-1)
        probability = single.logits[0].exp().gather(-1, chosen[:, None]).squeeze(-1)
        torch.testing.assert_close(
            out.copy_shares[r, :length], (1 - p_gen) * copy_mass / probability, atol=5e-4, rtol=1e-3
        )
        assert out.p_gen[r, length:].isnan().all() and out.copy_shares[r, length:].isnan().all()
        assert (out.pointer_attentions[r, length:] == 0).all()
    copied = generated >= VOCAB  # an out-of-vocabulary word can only have been copied
    assert torch.allclose(out.copy_shares[copied], torch.ones(()), atol=1e-5)


def test_copy_info_is_off_by_default_and_zero_without_copying():
    model = wrap("bart", p_gen_bias_init=0.0)
    input_ids, attention_mask, extended = source_batch()
    batch = dict(input_ids=input_ids, attention_mask=attention_mask, extended_input_ids=extended, max_new_tokens=4)
    plain = model.generate(**batch, return_dict_in_generate=True)
    assert not hasattr(plain, "p_gen") and type(plain).__name__ == "GenerateEncoderDecoderOutput"
    with model.disable_copy():
        out = model.generate(**batch, output_copy_info=True)
    finished = out.copy_shares.isnan()
    assert (out.copy_shares[~finished] == 0).all() and (out.p_gen[~finished] == 1).all()


def test_extended_decoder_inputs_are_embedded_as_unknown():
    model = wrap("bart", p_gen_bias_init=0.0)
    input_ids, attention_mask, extended = source_batch()
    with torch.no_grad():
        copied = model(
            input_ids=input_ids,
            attention_mask=attention_mask,
            extended_input_ids=extended,
            decoder_input_ids=torch.tensor([[2, VOCAB]] * 3),
        ).logits
        unknown = model(
            input_ids=input_ids,
            attention_mask=attention_mask,
            extended_input_ids=extended,
            decoder_input_ids=torch.tensor([[2, UNK]] * 3),
        ).logits
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
    # The unknown token is allowed anywhere: a piece whose text another position's OOV slot spells whole (as a
    # slow SentencePiece tokenizer spells "ǅ": "▁D" + an unknown "ž") copies as nothing.
    absorbed = extended.clone()
    absorbed[1, 1] = UNK
    model(input_ids=input_ids, extended_input_ids=absorbed, decoder_input_ids=input_ids[:, :2])
    labels = torch.tensor([[VOCAB, 2], [5, 2], [5, 2]])  # row 0 owns no extended slot
    with pytest.raises(ValueError, match=r"labels\[0, 0\].*beyond the extended vocabulary"):
        model(input_ids=input_ids, extended_input_ids=extended, labels=labels)
    with pytest.raises(ValueError, match="base vocabulary"):
        model(input_ids=extended, decoder_input_ids=input_ids[:, :2])
    model.config.unk_token_id = None
    with pytest.raises(ValueError, match="unk_token_id"):
        model(input_ids=input_ids, extended_input_ids=extended, decoder_input_ids=torch.tensor([[2, VOCAB]] * 3))


def test_rows_never_emit_slots_they_lack_under_boosting_processors(family):
    """The mixture gives a slot the row lacks probability 0 (-inf); processors that add to scores keep it there."""
    model = wrap(family, p_gen_bias_init=0.0)
    input_ids, attention_mask, extended = source_batch()
    # Boost both slots as hard as possible: row 0 owns neither, row 1 only slot 0.
    boost = {(VOCAB,): 100.0, (VOCAB + 1,): 100.0}
    for kwargs in ({}, {"num_beams": 3}, {"do_sample": True, "temperature": 2.0}, {"repetition_penalty": 0.5}):
        torch.manual_seed(0)
        out = model.generate(
            input_ids=input_ids,
            attention_mask=attention_mask,
            extended_input_ids=extended,
            max_new_tokens=4,
            sequence_bias=boost,
            **kwargs,
        )
        assert not (out[0] >= VOCAB).any(), kwargs
        assert not (out[1] == VOCAB + 1).any(), kwargs
        assert (out[2, 1:] >= VOCAB).any(), kwargs  # row 2 owns both: the boost reaches it


# -- regressions: each docstring says what went wrong before the fix ------------------------------------------------


def _support_smoothed_reference(log_p: torch.Tensor, labels: torch.Tensor, extended: torch.Tensor, eps: float):
    """Label smoothing by definition: -(1-eps) log p(gold) - eps * mean over the row's own V + N_b classes."""
    total, count = 0.0, 0
    for b in range(labels.shape[0]):
        width = VOCAB + int((extended[b] >= VOCAB).any() and extended[b].max() - VOCAB + 1)
        for t in range(labels.shape[1]):
            if labels[b, t] == -100:
                continue
            row = log_p[b, t, :width]
            total += -(1 - eps) * row[labels[b, t]] - eps * row.mean()
            count += 1
    return total / count


def test_label_smoothing_is_over_each_rows_own_classes(case_model):
    """Finite, and equal to smoothing over the row's vocabulary plus its own OOV slots (not the batch's)."""
    model = case_model
    model.config.coverage_weight = 0.0  # the coverage term is not part of the smoothed NLL checked here
    input_ids, attention_mask, extended = source_batch()
    labels = torch.tensor([[10, 11, 2, -100], [VOCAB, 20, 5, 2], [VOCAB + 1, VOCAB, 31, 2]])
    with torch.no_grad():
        log_p = model(
            input_ids=input_ids, attention_mask=attention_mask, extended_input_ids=extended, labels=labels
        ).logits
        model.config.label_smoothing = 0.1
        smoothed = model(
            input_ids=input_ids, attention_mask=attention_mask, extended_input_ids=extended, labels=labels
        ).loss
    assert torch.isfinite(smoothed)
    expected = _support_smoothed_reference(log_p, labels, extended, 0.1)
    assert smoothed.item() == pytest.approx(float(expected), rel=1e-5)
    model.train()
    loss = model(input_ids=input_ids, attention_mask=attention_mask, extended_input_ids=extended, labels=labels).loss
    loss.backward()
    assert torch.isfinite(loss) and all(p.grad is None or torch.isfinite(p.grad).all() for p in model.parameters())


@pytest.mark.slow  # runs Trainer.train()
def test_trainer_label_smoothing_over_logits_is_refused_and_the_config_path_trains(tmp_path):
    """Label smoothing through Seq2SeqTrainer: its LabelSmoother would average over slots a row lacks (inf, logged as
    0.0), so it is refused, and the config's smoothing trains."""
    from datasets import Dataset
    from transformers import Seq2SeqTrainer, Seq2SeqTrainingArguments

    model = wrap("bart", p_gen_bias_init=0.0).train()
    input_ids, attention_mask, extended = source_batch()
    labels = [[10, 11, 2], [VOCAB, 20, 2], [VOCAB + 1, VOCAB, 2]]
    rows = Dataset.from_dict(
        {
            "input_ids": input_ids.tolist(),
            "attention_mask": attention_mask.tolist(),
            "extended_input_ids": extended.tolist(),
            "labels": labels,
        }
    )

    def collate(features):
        batch = {key: torch.tensor([f[key] for f in features]) for key in features[0]}
        batch["decoder_input_ids"] = model.prepare_decoder_input_ids_from_labels(batch["labels"])
        return batch

    def trainer(**settings):
        args = Seq2SeqTrainingArguments(
            output_dir=str(tmp_path),
            per_device_train_batch_size=3,
            per_device_eval_batch_size=3,
            max_steps=2,
            report_to=[],
            use_cpu=True,
            save_strategy="no",
            logging_steps=1,
            **settings,
        )
        return Seq2SeqTrainer(model=model, args=args, train_dataset=rows, eval_dataset=rows, data_collator=collate)

    with pytest.raises(ValueError, match="model.config.label_smoothing"):
        trainer(label_smoothing_factor=0.1).train()
    model.config.label_smoothing = 0.1
    run = trainer()
    result = run.train()
    assert math.isfinite(result.training_loss) and result.training_loss > 0
    assert math.isfinite(run.evaluate()["eval_loss"])


@pytest.mark.parametrize("forced", [0.0, 1.0, 0.3])
def test_forced_switch_with_ignored_labels_gives_finite_gradients(family, forced):
    """Logaddexp(-inf, -inf) at an ignored (-100) position must not put NaN into every gradient."""
    model = wrap(family, force_p_gen=forced, coverage=True).train()
    input_ids, attention_mask, extended = source_batch()
    labels = torch.tensor([[10, 11, 2, -100], [VOCAB, 21, 2, -100], [VOCAB + 1, VOCAB, 31, -100]])
    if forced == 1.0:  # never copying: only words of the vocabulary are possible targets
        labels = torch.where(labels >= VOCAB, 5, labels)
    out = model(input_ids=input_ids, attention_mask=attention_mask, extended_input_ids=extended, labels=labels)
    assert torch.isfinite(out.loss)
    out.loss.backward()
    bad = [name for name, p in model.named_parameters() if p.grad is not None and not torch.isfinite(p.grad).all()]
    assert bad == []


def test_static_cache_equals_dynamic_cache(case_model):
    """The wrapper's config named SDPA while the base ran eager, so the static cache's mask masked nothing."""
    model = case_model
    assert model.config._attn_implementation == model.base.config._attn_implementation
    input_ids, attention_mask, extended = source_batch()
    batch = dict(input_ids=input_ids, attention_mask=attention_mask, extended_input_ids=extended, max_new_tokens=6)
    for kwargs in ({}, {"num_beams": 3}):
        assert torch.equal(
            model.generate(**batch, **kwargs), model.generate(**batch, **kwargs, cache_implementation="static")
        )


def test_attention_implementation_survives_save_and_load(tmp_path):
    model = wrap("marian", pointer="cross_attention")
    model.save_pretrained(tmp_path)
    loaded = PointerGeneratorForConditionalGeneration.from_pretrained(tmp_path)
    assert loaded.config._attn_implementation == loaded.base.config._attn_implementation == "eager"
    with pytest.raises(ValueError, match="only eager attention returns"):
        loaded.set_attn_implementation("sdpa")


@pytest.mark.parametrize("settings", [{"coverage": True}, {"selective_read": True, "copy_next": True}])
def test_assisted_and_prompt_lookup_decoding_equal_greedy(settings):
    """Coverage is cropped with the cache when candidates are rejected, and prompt lookup does not index copied ids
    out of bounds; selective read and copy-next read several fed tokens at once (the candidates) as one by one."""
    model = wrap("bart", p_gen_bias_init=0.0, **settings)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name.startswith(("selective_read.", "copy_next.")):
                param.normal_(0.0, 0.5)
    assistant = PointerGeneratorForConditionalGeneration.from_base(
        tiny_base("bart", seed=1), unk_token_id=UNK, p_gen_bias_init=0.0, **settings
    ).eval()
    input_ids, attention_mask, extended = source_batch()
    for i in range(3):  # assisted decoding takes one example at a time
        keep = attention_mask[i].bool()
        batch = dict(
            input_ids=input_ids[i : i + 1, keep], extended_input_ids=extended[i : i + 1, keep], max_new_tokens=10
        )
        greedy = model.generate(**batch)
        assert torch.equal(model.generate(**batch, assistant_model=assistant), greedy), i
        assert torch.equal(model.generate(**batch, prompt_lookup_num_tokens=3), greedy), i


@pytest.mark.parametrize("kind", ["pointer-generator", "plain base"])
def test_assisted_decoding_over_many_rounds_equals_greedy(kind):
    """Transformers 5.25 fed an encoder-decoder assistant its whole decoder prefix again every
    round, until its positions ran out (IndexError); a plain assistant got `extended_input_ids` and copied ids."""
    model = wrap("bart", p_gen_bias_init=0.0, coverage=True)
    assistant = tiny_base("bart", seed=1)
    if kind == "pointer-generator":
        assistant = PointerGeneratorForConditionalGeneration.from_base(assistant, unk_token_id=UNK).eval()
    fed = []  # the decoder inputs of each assistant call
    assistant.register_forward_pre_hook(
        lambda module, args, kwargs: fed.append(kwargs["decoder_input_ids"].shape[1]), with_kwargs=True
    )
    input_ids, attention_mask, extended = source_batch()
    copied = False
    for i in range(3):  # assisted decoding takes one example at a time
        keep = attention_mask[i].bool()
        # 40 new tokens: the prefixes fed again would reach past the assistant's 128 positions within a few rounds
        batch = dict(
            input_ids=input_ids[i : i + 1, keep], extended_input_ids=extended[i : i + 1, keep], max_new_tokens=40
        )
        greedy = model.generate(**batch)
        copied |= bool((greedy >= VOCAB).any())
        assert torch.equal(model.generate(**batch, assistant_model=assistant), greedy), i
    assert copied  # a copied id in the prefix too, which a plain assistant cannot embed
    assert max(fed) <= 2  # each call takes only the new tokens, on top of the assistant's cache
    # sampling compares the assistant's scores with the model's, which are wider by the copy slots
    sampled = model.generate(**batch, assistant_model=assistant, do_sample=True)
    assert sampled.shape[1] > 1 and (sampled < VOCAB + count_oov_slots(batch["extended_input_ids"], VOCAB)).all()


def test_prompt_lookup_over_copied_ids():
    model = wrap("bart", force_p_gen=0.0)  # copies only: the output repeats extended ids, which prompt lookup matches
    input_ids, attention_mask, extended = source_batch()
    copied_any = False
    for i in range(3):
        keep = attention_mask[i].bool()
        batch = dict(
            input_ids=input_ids[i : i + 1, keep], extended_input_ids=extended[i : i + 1, keep], max_new_tokens=12
        )
        greedy = model.generate(**batch)
        copied_any |= bool((greedy >= VOCAB).any())
        assert torch.equal(model.generate(**batch, prompt_lookup_num_tokens=2), greedy), i
    assert copied_any


@pytest.mark.parametrize("family_name", ["bart", "t5"])
def test_cross_attention_pointer_is_a_distribution_in_training(family_name):
    """The base hands out attention after dropout; the pointer must still sum to one."""
    base = tiny_base(family_name)
    base.config.update({"attention_dropout": 0.3} if family_name == "bart" else {"dropout_rate": 0.3})
    for module in base.modules():  # dropout everywhere, attention weights included (BART keeps a float `dropout`)
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.3
        elif isinstance(getattr(module, "dropout", None), float):
            module.dropout = 0.3
    model = PointerGeneratorForConditionalGeneration.from_base(
        base, pointer="cross_attention", unk_token_id=UNK, p_gen_bias_init=0.0
    ).train()
    input_ids, attention_mask, extended = source_batch()
    out = model(
        input_ids=input_ids,
        attention_mask=attention_mask,
        extended_input_ids=extended,
        decoder_input_ids=input_ids[:, :5],
        output_pointer=True,
    )
    sums = out.pointer_attentions.sum(-1)
    torch.testing.assert_close(sums, torch.ones_like(sums), atol=1e-5, rtol=0)
    assert (out.pointer_attentions[2, :, 7] == 0).all()  # the padded position stays out


@pytest.mark.parametrize(
    "kwargs",
    [
        {"repetition_penalty": 1.3},
        {"encoder_repetition_penalty": 1.5},
        {"repetition_penalty": 1.3, "do_sample": True, "top_k": 10},
        {"no_repeat_ngram_size": 2, "num_beams": 3},
        {"temperature": 0.7, "do_sample": True},
    ],
)
def test_switched_off_copying_gives_the_bases_exact_output(family, kwargs):
    """With the switch off every generate() option sees the base's own logits."""
    base = tiny_base(family)
    model = PointerGeneratorForConditionalGeneration.from_base(base, unk_token_id=UNK, p_gen_bias_init=0.0).eval()
    input_ids, attention_mask, _ = source_batch()
    torch.manual_seed(0)
    expected = base.generate(input_ids=input_ids, attention_mask=attention_mask, max_new_tokens=8, **kwargs)
    with model.disable_copy():
        torch.manual_seed(0)
        got = model.generate(input_ids=input_ids, attention_mask=attention_mask, max_new_tokens=8, **kwargs)
    assert torch.equal(got, expected)
    assert model.config.force_p_gen is None  # restored after the block


def test_generate_checks_extended_ids_and_takes_encoded_batches():
    """Generate() skipped forward's check (it passes encoder_outputs), silently copying words not in the source."""
    model = wrap("bart", p_gen_bias_init=0.0)
    input_ids, attention_mask, extended = source_batch()
    wrong = extended.clone()
    wrong[0, 0] = 20
    with pytest.raises(ValueError, match=r"extended_input_ids\[0, 0\] = 20"):
        model.generate(input_ids=input_ids, attention_mask=attention_mask, extended_input_ids=wrong, max_new_tokens=3)
    with pytest.raises(ValueError, match="same source positions"):
        model.generate(
            input_ids=input_ids, attention_mask=attention_mask, extended_input_ids=extended[:, :5], max_new_tokens=3
        )
    # A batch as the encode side returns it (with its decoding-only keys) goes straight in, to forward() too.
    spacing = {"spaced_after": "", "glued_after": ".", "ends_word": True}
    batch = dict(
        input_ids=input_ids,
        attention_mask=attention_mask,
        extended_input_ids=extended,
        oov_words=[[], ["x"], ["y", "z"]],
        oov_spacing=[[], [spacing], [spacing, spacing]],
        num_truncated_tokens=[0, 0, 0],
    )
    plain = model.generate(
        input_ids=input_ids, attention_mask=attention_mask, extended_input_ids=extended, max_new_tokens=4
    )
    assert torch.equal(model.generate(**batch, max_new_tokens=4), plain)
    logits = model(
        input_ids=input_ids,
        attention_mask=attention_mask,
        extended_input_ids=extended,
        decoder_input_ids=input_ids[:, :2],
    ).logits
    torch.testing.assert_close(model(**batch, decoder_input_ids=input_ids[:, :2]).logits, logits)


def test_forward_honours_config_output_flags():
    """Config.output_attentions / output_hidden_states apply when the arguments are None."""
    model = wrap("bart")
    input_ids, attention_mask, extended = source_batch()
    model.config.output_hidden_states = True
    out = model(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=input_ids[:, :3])
    assert len(out.encoder_hidden_states) == 3 and len(out.decoder_hidden_states) == 3
    model.config.output_hidden_states = False
    model.set_attn_implementation("eager")
    model.config.output_attentions = True
    out = model(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=input_ids[:, :3])
    assert len(out.encoder_attentions) == 2 and len(out.cross_attentions) == 2 and out.decoder_hidden_states is None
    out = model(
        input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=input_ids[:, :3], output_attentions=False
    )
    assert out.cross_attentions is None


@pytest.mark.parametrize("family_name", ["bart", "mbart", "marian"])
def test_deeper_decoder_than_encoder_generates_like_the_base(family_name):
    """The cache was sized from the wrapper's num_hidden_layers (the encoder's)."""
    base = tiny_base(family_name)
    config = base.config
    config.update({"decoder_layers": 3, "encoder_layers": 1})
    torch.manual_seed(0)
    base = type(base)(config).eval()
    model = PointerGeneratorForConditionalGeneration.from_base(base, unk_token_id=UNK).eval()
    input_ids, attention_mask, _ = source_batch()
    for kwargs in ({}, {"num_beams": 2}):
        expected = base.generate(input_ids=input_ids, attention_mask=attention_mask, max_new_tokens=5, **kwargs)
        assert torch.equal(
            model.generate(input_ids=input_ids, attention_mask=attention_mask, max_new_tokens=5, **kwargs), expected
        )


def test_trainer_evaluate_with_metrics_and_predict_across_batches_of_different_widths(tmp_path):
    """Evaluation logits differed in width (V + N) between batches, and the Trainer could not concatenate them."""
    from datasets import Dataset
    from transformers import Seq2SeqTrainer, Seq2SeqTrainingArguments

    from hf_pgen import DataCollatorForPointerGenerator

    model = wrap("bart", p_gen_bias_init=0.0)
    input_ids, attention_mask, extended = source_batch()
    rows = Dataset.from_dict(
        {
            "input_ids": input_ids.tolist(),
            "attention_mask": attention_mask.tolist(),
            "extended_input_ids": extended.tolist(),
            "labels": [[10, 2], [VOCAB, 2], [VOCAB + 1, 2]],
        }
    )
    seen = []

    def compute_metrics(prediction):
        logits = prediction.predictions  # the logits alone, not a tuple with the encoder states
        seen.append(logits.shape)
        return {"rows": float(logits.shape[0])}

    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer(models.WordLevel({f"w{i}": i for i in range(VOCAB)}, unk_token="w3")),
        pad_token="w1",
        unk_token="w3",
    )
    args = Seq2SeqTrainingArguments(output_dir=str(tmp_path), per_device_eval_batch_size=1, report_to=[], use_cpu=True)
    trainer = Seq2SeqTrainer(
        model=model,
        args=args,
        eval_dataset=rows,
        compute_metrics=compute_metrics,
        data_collator=DataCollatorForPointerGenerator(tokenizer, model=model),
    )
    metrics = trainer.evaluate()
    assert metrics["eval_rows"] == 3 and math.isfinite(metrics["eval_loss"])
    predictions = trainer.predict(rows).predictions
    assert predictions.shape == (3, 2, VOCAB + max_source_positions(model.config)) and seen[0][0] == 3
    # Each row's own slots keep their probabilities; the slots it lacks stay impossible.
    assert math.isfinite(predictions[1, 0, VOCAB]) and predictions[0, 0, VOCAB] == -math.inf


def test_resize_token_embeddings_moves_the_extended_ids():
    """Resize_token_embeddings raised AttributeError."""
    model = wrap("bart", p_gen_bias_init=0.0)
    embeddings = model.resize_token_embeddings(VOCAB + 6)
    assert embeddings.num_embeddings == VOCAB + 6 and model.config.vocab_size == VOCAB + 6
    assert model.get_output_embeddings().out_features == VOCAB + 6
    input_ids, attention_mask, extended = source_batch()
    extended = torch.where(extended >= VOCAB, extended + 6, extended)
    log_p = model(
        input_ids=input_ids,
        attention_mask=attention_mask,
        extended_input_ids=extended,
        decoder_input_ids=input_ids[:, :2],
    ).logits
    assert log_p.shape[-1] == VOCAB + 6 + 2
    torch.testing.assert_close(log_p.exp().sum(-1), torch.ones(3, 2), atol=1e-5, rtol=0)


def test_constructor_leaves_the_config_alone_and_save_serves_the_pipelines(tmp_path):
    import json

    config = PointerGeneratorConfig(base_config=tiny_base("bart").config, unk_token_id=UNK)
    model = PointerGeneratorForConditionalGeneration(config)
    assert not getattr(config, "custom_pipelines", None)
    model.save_pretrained(tmp_path)
    saved = json.loads((tmp_path / "config.json").read_text())
    assert set(saved["custom_pipelines"]) == {"translation", "summarization", "text2text-generation"}
    assert (tmp_path / "pipeline_pointer_generator.py").exists()
    assert (tmp_path / "generation_pointer_generator.py").exists()  # the copy-aware decoding rules generate() uses


def test_a_saved_folder_holds_exactly_the_modules_saved_with_the_model(tmp_path):
    """hf_pgen.SAVED_WITH_MODEL is the folder's code, no more and no less; each of its modules says so in its docstring
    and loads with trust_remote_code in a Python that has only torch and transformers (with huggingface_hub)."""
    import ast
    import sys

    import hf_pgen
    import hf_pgen.modeling_pointer_generator as modeling

    wrap("bart").save_pretrained(tmp_path)
    modules = sorted(tmp_path.glob("*.py"))
    assert sorted(module.stem for module in modules) == sorted(hf_pgen.SAVED_WITH_MODEL)
    # What modeling imports only so that it is copied: a relative import in its source names each.
    modeling_tree = ast.parse(Path(modeling.__file__).read_text(encoding="utf-8"))
    imported = {node.module for node in ast.walk(modeling_tree) if isinstance(node, ast.ImportFrom) and node.level}
    assert set(modeling.COPIED_BY_IMPORT) <= imported <= set(hf_pgen.SAVED_WITH_MODEL)
    for module in modules:
        tree = ast.parse(module.read_text(encoding="utf-8"))
        assert "saved next to the model as remote code" in " ".join(ast.get_docstring(tree).split()), module.name
        roots = set()
        # As Transformers checks a folder's code: an import inside `try` is optional (glossary.py's lemminflect,
        # needed only to match inflected forms, says how to install it where it is missing).
        nodes = [tree]
        while nodes:
            node = nodes.pop()
            if isinstance(node, ast.Try):
                continue
            nodes.extend(ast.iter_child_nodes(node))
            if isinstance(node, ast.Import):
                roots |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                roots.add(node.module.split(".")[0])
            elif isinstance(node, ast.ImportFrom):  # a sibling: it must be in the folder too
                assert f"{node.module}.py" in {m.name for m in modules}, (module.name, node.module)
        # The card module renders with huggingface_hub (which every transformers install has); the rest needs less.
        allowed = {"torch", "transformers"} | ({"huggingface_hub"} if module.name == "modelcard.py" else set())
        assert roots - set(sys.stdlib_module_names) <= allowed, module.name
