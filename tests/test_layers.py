"""The copy layers on their own (`hf_pgen/layers_pointer_generator.py`), each against its definition written out
directly: what the model's tests exercise through a base, checked here without one."""

import pytest
import torch
import torch.nn.functional as F

from hf_pgen.layers_pointer_generator import CopyNext, CopySwitch, PointerAttention, SelectiveRead


@pytest.mark.parametrize("rows_per_source", [1, 3])
def test_decoding_query_scores_the_encoder_states_as_the_keys_do(rows_per_source):
    """Generation folds the key projection and the scale into the query and scores the encoder states themselves:
    the attention is the same, up to rounding (a query bias, a query size unlike the decoder's and the encoder's,
    and beam-grouped rows included)."""
    torch.manual_seed(0)
    pointer = PointerAttention(decoder_dim=24, encoder_dim=16, attention_dim=8, coverage=False)
    torch.nn.init.normal_(pointer.query.bias)
    encoder_states = torch.randn(2, 7, 16)  # (sources, S, D_enc)
    decoder_states = torch.randn(2 * rows_per_source, 3, 24)  # (B, T, D_dec): r consecutive rows per source
    padding = torch.zeros(2 * rows_per_source, 1, 7, dtype=torch.bool)
    padding[-1, 0, -2:] = True
    with torch.no_grad():
        per_row_keys = pointer.keys(encoder_states).repeat_interleave(rows_per_source, dim=0)
        expected, _ = pointer(decoder_states, per_row_keys, padding, None)
        weight, bias = pointer.decoding_query()
        folded, _ = pointer(decoder_states, encoder_states, padding, None, (weight, bias))
        one_step, _ = pointer(decoder_states[:, :1], encoder_states, padding, None, (weight, bias))
    assert weight.shape == (16, 24) and bias.shape == (16,)
    torch.testing.assert_close(folded, expected, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(one_step, expected[:, :1], atol=1e-6, rtol=1e-5)
    assert (folded[-1, :, -2:] == 0).all()


def test_copy_switch_mixes_per_source_scores_as_the_context_vector_would():
    """w . [sum_i a_i h_i; s; e] + b, computed from per-source scores: the same logit as the concatenated input."""
    torch.manual_seed(0)
    switch = CopySwitch(context_dim=6, state_dim=5, embed_dim=4)
    attention = torch.randn(2, 3, 7).softmax(-1)  # (B, T, S)
    encoder_states, decoder_states, embeds = torch.randn(2, 7, 6), torch.randn(2, 3, 5), torch.randn(2, 3, 4)
    with torch.no_grad():
        logit = switch(attention, switch.context_scores(encoder_states), decoder_states, embeds)
        context = torch.bmm(attention, encoder_states)  # (B, T, D_enc)
        expected = F.linear(torch.cat([context, decoder_states, embeds], -1), switch.weight, switch.bias)
    torch.testing.assert_close(logit, expected, atol=1e-6, rtol=1e-5)


def test_selective_read_is_the_projected_mean_of_the_matching_positions():
    """Each fed token gets W_r times the mean encoder state of the source positions holding it (padding excluded);
    a token the source lacks gets exactly zero."""
    torch.manual_seed(0)
    layer = SelectiveRead(encoder_dim=6, embed_dim=4)
    source = torch.tensor([[5, 9, 5, 2], [7, 7, 8, 7]])
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 1, 0]])  # the last 7 of row 1 is padding
    fed = torch.tensor([[5, 9, 3], [7, 8, 5]])
    states = torch.randn(2, 4, 6)
    with torch.no_grad():
        out = layer(fed, source, mask, states)
        for b in range(2):
            for t in range(3):
                where = [i for i in range(4) if source[b, i] == fed[b, t] and mask[b, i]]
                expected = layer.proj(states[b, where].mean(0)) if where else torch.zeros(4)
                torch.testing.assert_close(out[b, t], expected, atol=1e-6, rtol=1e-5)
    assert torch.equal(out[0, 2], torch.zeros(4)) and torch.equal(out[1, 2], torch.zeros(4))


def test_copy_next_marks_the_position_after_each_occurrence_of_the_fed_token():
    """Position i continues the fed token where x_{i-1} holds it; position 0 never does, and padding never does."""
    source = torch.tensor([[4, 6, 4, 8, 1]])
    mask = torch.tensor([[1, 1, 1, 1, 0]])
    fed = torch.tensor([[4, 8, 6]])
    continuing = CopyNext.continuing(fed, source, mask)
    assert continuing[0, 0].tolist() == [False, True, False, True, False]  # after both 4s
    assert continuing[0, 1].tolist() == [False] * 5  # 8 is followed only by padding
    assert continuing[0, 2].tolist() == [False, False, True, False, False]
