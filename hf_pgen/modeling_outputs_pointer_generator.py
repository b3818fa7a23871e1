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

    Args:
        p_gen (`torch.FloatTensor` of shape `(B, T)`, *optional*):
            The copy switch per target position (1 = generate from the vocabulary, 0 = copy); with
            `output_pointer=True`.
        pointer_attentions (`torch.FloatTensor` of shape `(B, T, S)`, *optional*):
            The pointer's distribution over source positions; with `output_pointer=True`.
        coverage_loss (`torch.FloatTensor`, *optional*):
            The coverage term, normalised as the loss is (`loss` holds `coverage_weight` times it), when coverage is
            on and labels are given.
        loss, logits, past_key_values, ... :
            As `Seq2SeqLMOutput`'s (`logits` as above).
    """

    p_gen: torch.FloatTensor | None = None
    pointer_attentions: torch.FloatTensor | None = None
    coverage_loss: torch.FloatTensor | None = None


@dataclass
class PointerGeneratorGenerateOutput(GenerateEncoderDecoderOutput):
    """What `generate(..., return_dict_in_generate=True, output_copy_info=True)` returns for greedy search and
    sampling: `GenerateEncoderDecoderOutput` plus the copy decisions behind each returned sequence.

    The copy fields cover the G = sequences.shape[1] - (decoder prompt length) generated positions, aligned with
    `sequences[:, -G:]` (and with `scores`), NaN / 0 after a sequence ended. They are those of a teacher-forced
    forward of the returned sequences (`forward(output_pointer=True)`).

    Args:
        p_gen (`torch.FloatTensor` of shape `(num_sequences, G)`):
            The copy switch (1 = generate from the vocabulary, 0 = copy).
        pointer_attentions (`torch.FloatTensor` of shape `(num_sequences, G, S)`):
            The pointer's distribution over source positions.
        copy_shares (`torch.FloatTensor` of shape `(num_sequences, G)`):
            The share of the chosen token's probability that came from copying,
            (1 - p_gen) * sum_{i: x_i = w} a_i / P(w).
        sequences, scores, ... :
            As `GenerateEncoderDecoderOutput`'s.
    """

    p_gen: torch.FloatTensor | None = None
    pointer_attentions: torch.FloatTensor | None = None
    copy_shares: torch.FloatTensor | None = None


@dataclass
class PointerGeneratorGenerateBeamOutput(GenerateBeamEncoderDecoderOutput):
    """`GenerateBeamEncoderDecoderOutput` plus the copy decisions of each returned hypothesis (beam search), aligned
    with `sequences` (hypotheses as the beams returned them).

    Args:
        p_gen, pointer_attentions, copy_shares:
            As [`PointerGeneratorGenerateOutput`]'s, per returned hypothesis.
        sequences, sequences_scores, beam_indices, ... :
            As `GenerateBeamEncoderDecoderOutput`'s.
    """

    p_gen: torch.FloatTensor | None = None
    pointer_attentions: torch.FloatTensor | None = None
    copy_shares: torch.FloatTensor | None = None


__all__ = [
    "PointerGeneratorGenerateBeamOutput",
    "PointerGeneratorGenerateOutput",
    "PointerGeneratorSeq2SeqLMOutput",
]
