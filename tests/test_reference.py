"""hf_pgen's mixture functions against the loop reference of `benchmarks/reference.py`, the slow, obviously correct
form of P(w) = p_gen * P_vocab(w) + (1 - p_gen) * sum_{i : x_i = w} a_i, on random inputs: several shapes, OOV
slots, padding, repeated source words, p_gen near and at 0 and 1.

hf_pgen gets float32 inputs; the reference gets the same values in float64, so that its probability-space loops
stay exact where p_gen saturates (float32 rounds sigmoid(20) to 1, which would erase the copy side; float64 keeps
1 - sigmoid(20) = 2e-9 to 1e-7, while at logit 30 its 1 - p_gen would be off by 1e-3).
"""

import math

import pytest
import torch
from testing_utils import VOCAB, source_batch

from benchmarks.reference import (
    extended_log_probs,
    mix_into_log_probs,
    padded_log_softmax,
    reference_copy_step,
    reference_full,
    reference_gold,
    reference_smoothed,
)
from hf_pgen.mixture_pointer_generator import (
    copy_side_of_mixture,
    count_oov_slots,
    first_occurrence,
    gold_log_probs,
    mix_vocab_logits,
    smoothed_log_probs,
)

PAD = 1
LOG_FLOOR = math.log(1e-30)  # hf_pgen floors copy mass at 1e-30: a source word with zero attention

# (batch, target positions, source positions, vocabulary, most distinct OOV words per row)
SHAPES = [(1, 1, 1, 5, 0), (2, 3, 7, 11, 2), (4, 5, 16, 50, 4), (3, 1, 32, 40, 6), (2, 4, 9, 30, 0)]
# How p_gen is drawn: logit(p_gen) per (example, target position).
SWITCHES = {
    "random": lambda g, shape: torch.randn(shape, generator=g) * 2,
    "near_0": lambda g, shape: -14 + torch.randn(shape, generator=g),  # p_gen ~ 1e-6
    "near_1": lambda g, shape: 14 + torch.randn(shape, generator=g),
    "saturated": lambda g, shape: torch.where(torch.rand(shape, generator=g) < 0.5, -20.0, 20.0),  # 1 in float32
    "forced": lambda g, shape: torch.where(torch.rand(shape, generator=g) < 0.5, -torch.inf, torch.inf),
}
CASES = [
    pytest.param(shape, switch, id=f"B{shape[0]}-T{shape[1]}-S{shape[2]}-V{shape[3]}-N{shape[4]}-{switch}")
    for shape in SHAPES
    for switch in SWITCHES
]


def random_mixture(shape, switch, seed=0):
    """float32 inputs of the mixture functions, for one row of SHAPES and one way of drawing p_gen.

    Rows have random lengths (the rest is padding: the pad id, zero attention), source ids from a small pool (so
    words repeat), and OOV words `V + k`, k = 0 .. N_b - 1 as encode_with_oovs numbers them, some repeated. Labels
    mix vocabulary words, the row's own source words and OOV slots, slots only another row has, and -100.
    """
    batch, target_len, source_len, vocab, max_oovs = shape
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, source_len + 1, (batch,), generator=g)
    lengths[0] = source_len
    real = torch.arange(source_len) < lengths.unsqueeze(1)  # (B, S)
    ids = torch.randint(4, min(vocab, 4 + max(source_len // 2, 1)), (batch, source_len), generator=g)
    for b in range(batch):
        num_oovs = int(torch.randint(0, max_oovs + 1, (), generator=g)) if b else max_oovs
        for k in range(min(num_oovs, int(lengths[b]))):
            positions = torch.randint(0, int(lengths[b]), (1 + k % 2,), generator=g)  # every other word twice
            ids[b, positions] = vocab + k
    extended = torch.where(real, ids, PAD)
    scores = (torch.randn(batch, target_len, source_len, generator=g) * 2).masked_fill(~real.unsqueeze(1), -torch.inf)
    pointer_attention = scores.softmax(-1)  # exactly 0 on padding
    vocab_logits = torch.randn(batch, target_len, vocab, generator=g) * 3
    switch_logit = SWITCHES[switch](g, (batch, target_len)).float()
    num_oov_slots = count_oov_slots(extended, vocab)
    labels = torch.randint(4, vocab, (batch, target_len), generator=g)
    picks = torch.randint(0, source_len, (batch, target_len), generator=g) % lengths.unsqueeze(1)  # real positions
    from_source = extended.gather(1, picks)
    kind = torch.rand(batch, target_len, generator=g)
    labels = torch.where(kind < 0.4, from_source, labels)
    if num_oov_slots:
        any_slot = vocab + torch.randint(0, num_oov_slots, (batch, target_len), generator=g)
        labels = torch.where((kind > 0.75) & (kind < 0.9), any_slot, labels)
    labels = labels.masked_fill(kind >= 0.9, -100)
    return vocab_logits, pointer_attention, extended, switch_logit, labels, num_oov_slots


def as_float64(*tensors):
    return [t.double() if t.is_floating_point() else t for t in tensors]


def assert_matches_reference(ours: torch.Tensor, ref: torch.Tensor) -> None:
    """float32 log-probabilities `ours` against the float64 reference `ref`."""
    ours = ours.double()
    assert not ours.isnan().any() and not (ours == torch.inf).any()
    # As probabilities, everywhere.
    torch.testing.assert_close(ours.exp(), ref.exp(), atol=1e-6, rtol=1e-5)
    # As log-probabilities, wherever the probability is not negligible (down to 1e-13).
    visible = ref > -30
    torch.testing.assert_close(ours[visible], ref[visible], atol=1e-5, rtol=1e-5)
    # Impossible words: -inf, or the copy-mass floor for a source word with zero attention when p_gen is exactly 0.
    assert (ours[torch.isneginf(ref)] <= LOG_FLOOR + 1e-4).all()


def lacking_slots(extended: torch.Tensor, vocab: int, num_oov_slots: int) -> torch.Tensor:
    """(B, N) True where row b's source lacks the batch's slot V + k: those columns must be exactly -inf."""
    slots = vocab + torch.arange(num_oov_slots)
    return ~(extended.unsqueeze(-1) == slots).any(1)


def test_reference_is_the_formula():
    """The oracle on a case worked by hand: V = 3, source (1, OOV, 1), p_gen = 0.25."""
    vocab_logits = torch.log(torch.tensor([[[0.5, 0.3, 0.2]]], dtype=torch.float64))
    pointer_attention = torch.tensor([[[0.2, 0.5, 0.3]]], dtype=torch.float64)
    extended = torch.tensor([[1, 3, 1]])
    switch_logit = torch.full((1, 1), math.log(0.25 / 0.75), dtype=torch.float64)
    p = reference_full(vocab_logits, pointer_attention, extended, switch_logit, num_oov_slots=1)[0, 0].exp()
    expected = torch.tensor([0.25 * 0.5, 0.25 * 0.3 + 0.75 * (0.2 + 0.3), 0.25 * 0.2, 0.75 * 0.5], dtype=torch.float64)
    torch.testing.assert_close(p, expected)
    labels = torch.tensor([[3]])
    gold = reference_gold(vocab_logits, pointer_attention, extended, switch_logit, labels, num_oov_slots=1)
    torch.testing.assert_close(gold.exp(), torch.tensor([[0.375]], dtype=torch.float64))
    smoothed = reference_smoothed(vocab_logits, pointer_attention, extended, switch_logit)
    torch.testing.assert_close(smoothed, expected.log().mean().view(1, 1))


@pytest.mark.parametrize("shape, switch", CASES)
def test_mix_into_log_probs_matches_loop(shape, switch):
    vocab_logits, attention, extended, switch_logit, _, num_oov_slots = random_mixture(shape, switch)
    ref = reference_copy_step(
        padded_log_softmax(vocab_logits.double(), num_oov_slots), *as_float64(attention, extended, switch_logit)
    )
    log_p_vocab = padded_log_softmax(vocab_logits, num_oov_slots)
    with torch.no_grad():  # in place
        ours = mix_into_log_probs(log_p_vocab.clone(), attention, extended, switch_logit)
    assert_matches_reference(ours, ref)
    lacking = lacking_slots(extended, shape[3], num_oov_slots).unsqueeze(1).expand(-1, shape[1], -1)  # (B, T, N)
    assert torch.isneginf(ours[..., shape[3] :][lacking]).all()
    # The grouping of repeated words passed in, and the out-of-place path a backward pass takes, agree.
    grouped = mix_into_log_probs(log_p_vocab.clone(), attention, extended, switch_logit, first_occurrence(extended))
    torch.testing.assert_close(grouped, ours, atol=0, rtol=0)
    leaf = log_p_vocab.clone().requires_grad_(True)
    torch.testing.assert_close(mix_into_log_probs(leaf, attention, extended, switch_logit).detach(), ours)


@pytest.mark.parametrize("shape, switch", CASES)
def test_extended_log_probs_matches_loop(shape, switch):
    vocab_logits, attention, extended, switch_logit, _, num_oov_slots = random_mixture(shape, switch, seed=1)
    ref = reference_full(*as_float64(vocab_logits, attention, extended, switch_logit), num_oov_slots)
    with torch.no_grad():
        ours = extended_log_probs(vocab_logits, attention, extended, switch_logit, num_oov_slots)
    assert ours.shape == (*shape[:2], shape[3] + num_oov_slots) and ours.dtype == torch.float32
    assert_matches_reference(ours, ref)


@pytest.mark.parametrize("shape, switch", CASES)
def test_mix_vocab_logits_paths_agree(shape, switch):
    """The mixture from raw logits takes three paths: without autograd it normalises into a fresh buffer, or into
    the caller's logits when they are scratch (generation's decoding step), and with autograd it pads first. All
    three give the same values, and only the scratch path may touch the caller's logits."""
    vocab_logits, attention, extended, switch_logit, _, num_oov_slots = random_mixture(shape, switch, seed=4)
    copy_side = copy_side_of_mixture(attention, switch_logit.unsqueeze(-1), first_occurrence(extended))
    kept = vocab_logits.clone()
    with torch.no_grad():
        fresh = mix_vocab_logits(vocab_logits, extended, copy_side, num_oov_slots)
        assert torch.equal(vocab_logits, kept)
        scratch = vocab_logits.clone()
        in_place = mix_vocab_logits(scratch, extended, copy_side, num_oov_slots, logits_are_scratch=True)
        half = vocab_logits.bfloat16()
        from_half = mix_vocab_logits(half, extended, copy_side, num_oov_slots)
        assert torch.equal(half, kept.bfloat16())  # its float32 copy is the one normalised
    assert fresh.shape == (*shape[:2], shape[3] + num_oov_slots) and fresh.dtype == from_half.dtype == torch.float32
    torch.testing.assert_close(in_place, fresh, atol=0, rtol=0)
    if num_oov_slots:
        assert in_place.data_ptr() != scratch.data_ptr()  # wider than the logits: a new buffer
    leaf = vocab_logits.clone().requires_grad_(True)
    torch.testing.assert_close(mix_vocab_logits(leaf, extended, copy_side, num_oov_slots).detach(), fresh)
    ref = reference_full(*as_float64(vocab_logits, attention, extended, switch_logit), num_oov_slots)
    assert_matches_reference(fresh, ref)
    assert_matches_reference(
        from_half, reference_full(*as_float64(half.float(), attention, extended, switch_logit), num_oov_slots)
    )


@pytest.mark.parametrize("shape, switch", CASES)
def test_gold_log_probs_matches_loop(shape, switch):
    vocab_logits, attention, extended, switch_logit, labels, num_oov_slots = random_mixture(shape, switch, seed=2)
    counted = labels >= 0  # ignored positions (-100) give arbitrary values
    ref = reference_gold(
        *as_float64(vocab_logits, attention, extended, switch_logit), labels.clamp_min(0), num_oov_slots
    )
    with torch.no_grad():
        ours = gold_log_probs(vocab_logits, attention, extended, switch_logit, labels)
    assert ours.shape == shape[:2]
    assert_matches_reference(ours[counted], ref[counted])
    # With a backward pass ahead, impossible words take another path (no NaN gradient): same values.
    logits = vocab_logits.clone().requires_grad_(True)
    training = gold_log_probs(logits, attention, extended, switch_logit, labels)
    torch.testing.assert_close(training.detach()[counted], ours[counted])


@pytest.mark.parametrize("shape, switch", CASES)
def test_smoothed_log_probs_matches_loop(shape, switch):
    vocab_logits, attention, extended, switch_logit, _, _ = random_mixture(shape, switch, seed=3)
    ref = reference_smoothed(*as_float64(vocab_logits, attention, extended, switch_logit))
    with torch.no_grad():
        ours = smoothed_log_probs(vocab_logits, attention, extended, switch_logit).double()
    assert ours.shape == shape[:2]
    assert not ours.isnan().any()
    both_impossible = torch.isneginf(ref) & torch.isneginf(ours)  # p_gen = 0: some vocabulary word has P = 0
    torch.testing.assert_close(ours[~both_impossible], ref[~both_impossible], atol=1e-5, rtol=1e-5)


def test_forward_logits_are_the_reference_mixture_of_its_own_pointer(case_model):
    """The model's logits equal the reference mixture of its own P_vocab (the base's logits), pointer attention and
    p_gen (forward(output_pointer=True)), for every family, pointer and coverage setting."""
    model = case_model
    input_ids, attention_mask, extended = source_batch()
    decoder_input_ids = torch.tensor([[2, 10, 11, 12], [2, 20, VOCAB, 21], [2, 30, VOCAB + 1, VOCAB]])
    base_logits = []
    hook = model.base.register_forward_hook(lambda module, args, output: base_logits.append(output.logits))
    try:
        with torch.no_grad():
            out = model(
                input_ids=input_ids,
                attention_mask=attention_mask,
                extended_input_ids=extended,
                decoder_input_ids=decoder_input_ids,
                output_pointer=True,
            )
    finally:
        hook.remove()
    (vocab_logits,) = base_logits
    p_gen = out.p_gen.double()
    ref = reference_full(
        vocab_logits.double(),
        out.pointer_attentions.double(),
        extended,
        p_gen.log() - (-p_gen).log1p(),
        count_oov_slots(extended, VOCAB),
    )
    assert out.logits.shape == ref.shape
    assert_matches_reference(out.logits, ref)
