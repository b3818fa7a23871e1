"""What the pointer-generator's forward and generate() return: the base's output classes plus the copy decisions.

This file is saved next to the model as remote code (see `hf_pgen.SAVED_WITH_MODEL`): it imports only `torch` and
`transformers`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from transformers.generation.utils import GenerateBeamEncoderDecoderOutput, GenerateEncoderDecoderOutput
from transformers.modeling_outputs import Seq2SeqLMOutput


@dataclass
class PointerGeneratorSeq2SeqLMOutput(Seq2SeqLMOutput):
    """`Seq2SeqLMOutput` whose `logits` are log-probabilities over the extended vocabulary (B, T, V + N).

    With copying switched off (`force_p_gen=1.0`) `logits` are the base's own (unnormalised) logits, padded with -inf
    over the copy slots. With labels in evaluation mode (the Trainer's evaluate/predict) they are padded with -inf to a
    fixed width, vocab_size + the base's longest source, so that batches concatenate.

    Extra fields (with `output_pointer=True`): `p_gen` (B, T), `pointer_attentions` (B, T, S); `coverage_loss` when
    coverage is on and labels are given.
    """

    p_gen: torch.FloatTensor | None = None
    pointer_attentions: torch.FloatTensor | None = None
    coverage_loss: torch.FloatTensor | None = None


@dataclass
class PointerGeneratorGenerateOutput(GenerateEncoderDecoderOutput):
    """What `generate(..., return_dict_in_generate=True, output_copy_info=True)` returns for greedy search and
    sampling: `GenerateEncoderDecoderOutput` plus the copy decisions behind each returned sequence.

    Extra fields, for the G = sequences.shape[1] - (decoder prompt length) generated positions, aligned with
    `sequences[:, -G:]` (and with `scores`); NaN / 0 after a sequence ended:
        p_gen (num_sequences, G): the copy switch (1 = generate from the vocabulary, 0 = copy).
        pointer_attentions (num_sequences, G, S): the pointer's distribution over source positions.
        copy_shares (num_sequences, G): the share of the chosen token's probability that came from copying,
            (1 - p_gen) * sum_{i: x_i = w} a_i / P(w).
    They are those of a teacher-forced forward of the returned sequences (`forward(output_pointer=True)`).
    """

    p_gen: torch.FloatTensor | None = None
    pointer_attentions: torch.FloatTensor | None = None
    copy_shares: torch.FloatTensor | None = None


@dataclass
class PointerGeneratorGenerateBeamOutput(GenerateBeamEncoderDecoderOutput):
    """`GenerateBeamEncoderDecoderOutput` plus the copy decisions of each returned hypothesis (beam search): the
    fields of `PointerGeneratorGenerateOutput`, aligned with `sequences` (hypotheses as the beams returned them)."""

    p_gen: torch.FloatTensor | None = None
    pointer_attentions: torch.FloatTensor | None = None
    copy_shares: torch.FloatTensor | None = None


__all__ = [
    "PointerGeneratorGenerateBeamOutput",
    "PointerGeneratorGenerateOutput",
    "PointerGeneratorSeq2SeqLMOutput",
]
