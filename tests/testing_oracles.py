"""Oracles for decoding guarantees: a tiny copy model whose scores a scripted processor decides, so the output that
decoding should give is known in advance (a perfect copier returns its source; a perfect translator its reference),
and anything a rule of ours changes shows as a difference."""

from __future__ import annotations

import torch
from testing_utils import tiny_base
from transformers import LogitsProcessor

from hf_pgen import PointerGeneratorForConditionalGeneration


class CopyTheSource(LogitsProcessor):
    """A scripted model's scores: at step t the row's target token t (an extended id where copied) at 0, every other
    token far below, at random (so that whatever a rule bans, the row takes something else and the difference shows).

    `targets` holds one token list per source (the source's own `extended_input_ids` for a perfect copier)."""

    def __init__(self, targets: list[list[int]], eos: int, seed: int = 0):
        self.targets, self.eos = targets, eos
        self.generator = torch.Generator().manual_seed(seed)

    def __call__(self, input_ids, scores):
        rows, width = scores.shape
        per = rows // len(self.targets)
        step = input_ids.shape[1] - 1  # after the decoder start token
        out = -40.0 + 10.0 * torch.rand(rows, width, generator=self.generator)
        for row in range(rows):
            target = self.targets[row // per]
            out[row, target[step] if step < len(target) else self.eos] = 0.0
        return out


def oracle_copy_model(tokenizer) -> PointerGeneratorForConditionalGeneration:
    """A one-layer BART pointer-generator over `tokenizer` (no <s>, 256 positions): the oracle replaces its scores, so
    its weights only give the shapes."""
    base = tiny_base(
        "bart",
        tokenizer=tokenizer,
        d_model=16,
        layers=1,
        heads=2,
        max_position_embeddings=256,
        bos_token_id=None,
        decisive_init=False,
    )
    return PointerGeneratorForConditionalGeneration.from_base(base, unk_token_id=tokenizer.unk_token_id).eval()
