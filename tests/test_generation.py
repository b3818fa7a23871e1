import pytest
import torch
from testing_utils import UNK, VOCAB, source_batch, tiny_base
from transformers import LogitsProcessor, LogitsProcessorList

from hf_pgen import OOVCopyLimitLogitsProcessor, PointerGeneratorForConditionalGeneration


def slot_occurrences(row: torch.Tensor) -> dict[int, int]:
    ids = row[row >= VOCAB] - VOCAB
    return {int(k): int((ids == k).sum()) for k in ids.unique()}


def test_a_slot_is_blocked_once_emitted_as_often_as_its_source_holds_it():
    _, _, extended = source_batch()  # row 1: slot 0 once; row 2: slot 0 three times, slot 1 once
    processor = OOVCopyLimitLogitsProcessor(extended, VOCAB)
    outputs = torch.tensor([[2, 10, 11], [2, VOCAB, 20], [2, VOCAB, VOCAB + 1]])  # (R, L)
    scores = torch.zeros(3, VOCAB + 2)
    limited = processor(outputs, scores)
    blocked = torch.isneginf(limited)
    assert not blocked[:, :VOCAB].any()  # words of the vocabulary are never limited
    # Row 0 has no OOV word: its slots are blocked from the start (the mixture already gives them -inf).
    assert blocked[0, VOCAB:].all()
    assert blocked[1, VOCAB] and blocked[1, VOCAB + 1]  # slot 0 used up; slot 1 not in its source
    assert not blocked[2, VOCAB] and blocked[2, VOCAB + 1]  # slot 0: 1 of 3 used; slot 1: 1 of 1
    assert torch.equal(scores, torch.zeros(3, VOCAB + 2))  # the input scores are left as they were


def test_hypotheses_of_a_source_share_its_counts_and_bad_layouts_are_refused():
    _, _, extended = source_batch()
    processor = OOVCopyLimitLogitsProcessor(extended, VOCAB)
    outputs = torch.full((6, 2), 2)  # two hypotheses per source
    outputs[5, 1] = VOCAB + 1  # source 2's second hypothesis copied slot 1
    blocked = torch.isneginf(processor(outputs, torch.zeros(6, VOCAB + 2)))
    assert not blocked[4, VOCAB + 1] and blocked[5, VOCAB + 1]
    assert not blocked[2, VOCAB] and blocked[3, VOCAB + 1]  # source 1: slot 0 open, slot 1 never its own
    # Scores as wide as the vocabulary (copying switched off) are passed through.
    plain = torch.zeros(6, VOCAB)
    assert processor(outputs, plain) is plain
    with pytest.raises(ValueError, match="same number of consecutive rows"):
        processor(torch.full((4, 2), 2), torch.zeros(4, VOCAB + 2))


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"num_beams": 3}, {"do_sample": True, "num_return_sequences": 2, "top_k": 8}],
    ids=["greedy", "beams", "sampling"],
)
def test_generate_never_copies_an_oov_word_more_often_than_its_source_has_it(kwargs):
    # p_gen forced to 0: every token is copied from the source, so 12 tokens from 8 positions must repeat.
    model = PointerGeneratorForConditionalGeneration.from_base(tiny_base("bart"), unk_token_id=UNK, force_p_gen=0.0)
    input_ids, attention_mask, extended = source_batch()
    settings = dict(
        input_ids=input_ids,
        attention_mask=attention_mask,
        extended_input_ids=extended,
        max_new_tokens=12,
        min_new_tokens=12,
        **kwargs,
    )

    def excess(out: torch.Tensor) -> int:
        per_source = out.shape[0] // 3
        allowed = [slot_occurrences(extended[row // per_source]) for row in range(out.shape[0])]
        return sum(
            max(n - allowed[row].get(k, 0), 0) for row, seq in enumerate(out) for k, n in slot_occurrences(seq).items()
        )

    torch.manual_seed(0)
    unlimited = model.generate(**settings)
    torch.manual_seed(0)
    limited = model.generate(**settings, oov_copy_limit=True)
    assert excess(unlimited) > 0, "this case no longer repeats a copy without the limit: it tests nothing"
    assert excess(limited) == 0
    assert limited.shape[1] == unlimited.shape[1]  # the step took another word instead


def test_the_limit_saved_in_the_generation_config_applies_after_loading(tmp_path):
    model = PointerGeneratorForConditionalGeneration.from_base(tiny_base("bart"), unk_token_id=UNK, force_p_gen=0.0)
    input_ids, attention_mask, extended = source_batch()
    settings = dict(
        input_ids=input_ids,
        attention_mask=attention_mask,
        extended_input_ids=extended,
        max_new_tokens=12,
        min_new_tokens=12,
    )
    expected = model.generate(**settings, oov_copy_limit=True)
    model.generation_config.oov_copy_limit = True
    model.save_pretrained(tmp_path)
    loaded = PointerGeneratorForConditionalGeneration.from_pretrained(tmp_path)
    assert torch.equal(loaded.generate(**settings), expected)
    assert not torch.equal(loaded.generate(**settings, oov_copy_limit=False), expected)  # the call's value wins


def test_bad_limit_values_get_clear_errors():
    model = PointerGeneratorForConditionalGeneration.from_base(tiny_base("bart"), unk_token_id=UNK)
    input_ids, attention_mask, extended = source_batch()
    with pytest.raises(ValueError, match="oov_copy_limit must be True or False"):
        model.generate(input_ids=input_ids, extended_input_ids=extended, max_new_tokens=2, oov_copy_limit=2)


class _CopySlotFirst(LogitsProcessor):
    """Pushes every row to copy slot 0 at its first step: the output spends the source's one copy of that word."""

    def __call__(self, input_ids, scores):
        if input_ids.shape[1] == 1:
            scores = scores.clone()
            scores[:, VOCAB] = 1e4
        return scores


@pytest.mark.parametrize("kwargs", [{}, {"num_beams": 3}], ids=["greedy", "beams"])
def test_a_protected_span_still_comes_out_when_its_oov_word_was_spent_before_it(kwargs):
    """Row 1's source holds its OOV word (slot 0) once, inside a protected span "21 <slot 0>". The output spends that
    copy first; the limit then forbids the word, but the span needs it: protection, which runs after the limit, places
    the span all the same (found in the main job: the limit ran last and left the row nothing, `<pad>` came out)."""
    model = PointerGeneratorForConditionalGeneration.from_base(tiny_base("bart"), unk_token_id=UNK).eval()
    input_ids, attention_mask, extended = source_batch()
    span = [21, VOCAB]
    spans = [{"spans": []}, {"spans": [{"text": "w", "count": 1, "sequences": [span]}]}, {"spans": []}]
    out = model.generate(
        input_ids=input_ids,
        attention_mask=attention_mask,
        extended_input_ids=extended,
        protected_spans=spans,
        oov_copy_limit=True,
        max_new_tokens=8,
        logits_processor=LogitsProcessorList([_CopySlotFirst()]),
        **kwargs,
    )
    row = out[out.shape[0] // 3].tolist()  # the first hypothesis of source 1
    assert row[1] == VOCAB  # spent at the first step
    assert any(row[i : i + 2] == span for i in range(len(row) - 1)), row
    assert 0 not in row[1:]  # never a row left without a token (padding id 0)
