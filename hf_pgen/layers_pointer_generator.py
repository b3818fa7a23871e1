"""The pointer-generator's own layers, the parts a base model lacks: the pointer (`PointerAttention`), the copy
switch (`CopySwitch`), and the two copy aids, CopyNet's selective read (`SelectiveRead`) and sequential copying
(`CopyNext`). Each is a plain `nn.Module` over tensors; `modeling_pointer_generator.py` wires them to a base.

Shapes: B = batch, T = target positions in this call, S = source positions, A = pointer attention width, E = decoder
input embedding width, D_enc / D_dec = encoder / decoder hidden sizes.

This file is saved next to the model as remote code (see `hf_pgen.SAVED_WITH_MODEL`): it imports only `torch`.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["CopyNext", "CopySwitch", "PointerAttention", "SelectiveRead"]


class PointerAttention(nn.Module):
    """Single-head bilinear attention from decoder states over encoder states, with optional coverage.

    score(t, i) = q_t . (W_k h_i) / sqrt(A) + c_i^t * w(q_t), where c^t is the sum of earlier attentions. The keys
    W_k h_i depend on the source only: generation projects them once (`keys`) and reuses them at every step.
    """

    def __init__(self, decoder_dim: int, encoder_dim: int, attention_dim: int, coverage: bool):
        super().__init__()
        self.query = nn.Linear(decoder_dim, attention_dim)
        self.key = nn.Linear(encoder_dim, attention_dim, bias=False)
        self.scale = 1.0 / math.sqrt(attention_dim)
        # Per-query weight of the coverage feature; zero-initialised so coverage starts neutral and learns its sign.
        self.coverage_weight = nn.Linear(decoder_dim, 1) if coverage else None

    def keys(self, encoder_states: torch.Tensor) -> torch.Tensor:
        """(B, S, D_enc) -> (B, A, S): the keys, laid out as the right operand of the scores' bmm."""
        return self.key(encoder_states).transpose(1, 2)

    def decoding_query(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The query projection with the key projection and the scale folded in: weight (D_enc, D_dec), bias (D_enc,).

            scale * (W_q s + b_q) . (W_k h_i) = (M s + c) . h_i,   M = scale * W_k^T W_q,  c = scale * W_k^T b_q

        Generation forms them once and scores each step's decoder states s against the encoder states h themselves, so
        no keys are projected for a source (kept because projected keys made every decoding step measurably slower at
        opus-mt size, see benchmarks/README.md "Speed work paid back"). The scores equal those from `keys` up to float
        rounding.
        """
        weight = (self.key.weight.t() @ self.query.weight) * self.scale  # (D_enc, D_dec)
        bias = (self.key.weight.t() @ self.query.bias) * self.scale  # (D_enc,)
        return weight, bias

    def forward(
        self,
        decoder_states: torch.Tensor,
        keys: torch.Tensor,
        source_padding: torch.Tensor | None,
        coverage: torch.Tensor | None,
        query: tuple[torch.Tensor, torch.Tensor] | None = None,
        bias: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """
        Args:
            decoder_states: (B, T, D_dec).
            keys: (B / r, A, S) from `keys(encoder_states)`; or, with `query` from `decoding_query`, the encoder states
                themselves (B / r, S, D_enc) (source-major: a step reads them as a matrix-vector product per row,
                which streams them from memory faster than a strided layout). One row per source, where each source
                is decoded by r consecutive rows of `decoder_states` (r = 1 in training; beam search's hypotheses
                share a source).
            source_padding: (B, 1, S) bool, True where a row has no source token; or None.
            coverage: (B, S) attention summed over the target positions before this call, or None (zeros).
            bias: (B, T, S) float32 added to the scores (`CopyNext.bias`), or None.
        Returns:
            attention (B, T, S) float32, and the per-step coverage before each step (B, T, S) (None without coverage).
        """
        batch, target_len, _ = decoder_states.shape
        queries = self.query(decoder_states) if query is None else F.linear(decoder_states, *query)  # (B, T, A | D_enc)
        num_sources = keys.shape[0]
        if num_sources != batch:
            # Each source's keys are read once for all r of its rows: (B / r, r * T, K) x (B / r, K, S). Reading them
            # per row would stream r copies of the largest per-step operand (beam search: 4 x (S, K) per source).
            queries = queries.reshape(num_sources, -1, queries.shape[-1])
        if query is None:
            scores = torch.bmm(queries, keys).view(batch, target_len, -1)  # (B, T, S)
        else:
            scores = torch.bmm(keys, queries.transpose(1, 2))  # (B / r, S, r * T), scaled already
            scores = scores.transpose(1, 2).reshape(batch, target_len, -1)  # (B, T, S); a view when r * T = 1
        if scores.dtype != torch.float32:
            scores = scores.float()
        if query is None:
            scores = scores.mul_(self.scale)  # (B, T, S); in place: the bmm's backward does not read its output
        if bias is not None:
            scores = scores + bias
        if source_padding is not None:
            scores = scores.masked_fill(source_padding, torch.finfo(scores.dtype).min)
        if self.coverage_weight is None:
            return scores.softmax(-1), None
        weight = self.coverage_weight(decoder_states).float()  # (B, T, 1)
        if coverage is None:
            coverage = scores.new_zeros(scores.shape[0], scores.shape[2])
        # Coverage is recurrent by definition (step t attends given the attention of steps < t): loop over the T
        # positions of this call; every step is vectorised over batch and source.
        attentions, coverages = [], []
        for t in range(scores.shape[1]):
            coverages.append(coverage)
            step = (scores[:, t] + weight[:, t] * coverage).softmax(-1)  # (B, S)
            attentions.append(step)
            coverage = coverage + step
        return torch.stack(attentions, 1), torch.stack(coverages, 1)


class CopySwitch(nn.Linear):
    """p_gen logit from [pointer context; decoder state; decoder input embedding] (one linear layer).

    The context is the pointer-weighted sum of encoder states, so its term w_c . sum_i a_i h_i equals
    sum_i a_i (w_c . h_i): the per-source scores `context_scores(encoder_states)` are computed once per source and each
    step only mixes them with the attention, instead of building the (B, T, D_enc) context.
    """

    def __init__(self, context_dim: int, state_dim: int, embed_dim: int):
        super().__init__(context_dim + state_dim + embed_dim, 1)
        self.context_dim = context_dim

    def context_scores(self, encoder_states: torch.Tensor) -> torch.Tensor:
        """(B, S, D_enc) -> (B, S, 1) float32."""
        return F.linear(encoder_states, self.weight[:, : self.context_dim]).float()

    def forward(
        self,
        attention: torch.Tensor,
        context_scores: torch.Tensor,
        decoder_states: torch.Tensor,
        input_embeds: torch.Tensor,
    ) -> torch.Tensor:
        """attention (B, T, S) float32, context_scores (B, S, 1), decoder_states (B, T, D_dec), input_embeds (B, T, E)
        -> the p_gen logit (B, T, 1) float32 (the trailing 1 is what the mixture broadcasts over words)."""
        context_term = torch.bmm(attention, context_scores)  # (B, T, 1)
        rest = torch.cat([decoder_states, input_embeds], dim=-1)  # (B, T, D_dec + E)
        logit = F.linear(rest, self.weight[:, self.context_dim :], self.bias)  # (B, T, 1)
        if logit.dtype != torch.float32:  # half-precision models and autocast: sum the two terms in float32
            logit, context_term = logit.float(), context_term.float()
        return logit + context_term


class SelectiveRead(nn.Module):
    """CopyNet's selective read (Gu et al. 2016): the decoder input embedding of the token y fed at a step gets

        W_r * mean_{i : x_i = y} h_i

    added, the mean encoder state of the source positions that hold y (extended ids, so a copied out-of-vocabulary
    word finds its own positions although it is embedded as the unknown token). A token absent from the source gets
    nothing. W_r starts at zero.
    """

    def __init__(self, encoder_dim: int, embed_dim: int):
        super().__init__()
        self.proj = nn.Linear(encoder_dim, embed_dim, bias=False)

    def forward(
        self,
        decoder_ids: torch.Tensor,
        source_ids: torch.Tensor,
        source_mask: torch.Tensor | None,
        encoder_states: torch.Tensor,
    ) -> torch.Tensor:
        """decoder_ids (B, T) and source_ids (B, S) extended ids, source_mask (B, S) or None, encoder_states
        (B, S, D_enc) -> (B, T, E) to add to the decoder input embeddings."""
        match = _matches(decoder_ids, source_ids, source_mask).to(encoder_states.dtype)  # (B, T, S)
        match = match / match.sum(-1, keepdim=True).clamp_min(1.0)
        return self.proj(torch.bmm(match, encoder_states))


class CopyNext(nn.Module):
    """Sequential copying (after Zhou et al. 2018): continuing a copy from source position i at i + 1 is one feature.

    Where the token y fed at step t stands at source position i - 1, position i "continues" it. The pointer's score
    of a continuing position gets the bonus g(s_t) (a linear function of the decoder state, so the model decides when
    a run goes on), and the copy switch gets w * (pointer mass on continuing positions). Both start at zero.
    """

    def __init__(self, decoder_dim: int):
        super().__init__()
        self.gate = nn.Linear(decoder_dim, 1)
        self.switch_weight = nn.Parameter(torch.zeros(()))

    @staticmethod
    def continuing(
        decoder_ids: torch.Tensor, source_ids: torch.Tensor, source_mask: torch.Tensor | None
    ) -> torch.Tensor:
        """(B, T), (B, S), (B, S) or None -> (B, T, S) bool: position i follows a position holding the fed token."""
        previous = F.pad(source_ids[:, :-1], (1, 0), value=-1)  # x_{i-1}; nothing precedes position 0
        return _matches(decoder_ids, previous, source_mask)

    def bias(self, decoder_states: torch.Tensor, continuing: torch.Tensor) -> torch.Tensor:
        """(B, T, D_dec), (B, T, S) bool -> the pointer scores' bonus (B, T, S) float32."""
        return self.gate(decoder_states).float() * continuing

    def switch_term(self, attention: torch.Tensor, continuing: torch.Tensor) -> torch.Tensor:
        """(B, T, S) float32, (B, T, S) bool -> the switch logit's term (B, T, 1) float32."""
        return self.switch_weight.float() * (attention * continuing).sum(-1, keepdim=True)


def _matches(decoder_ids: torch.Tensor, source_ids: torch.Tensor, source_mask: torch.Tensor | None) -> torch.Tensor:
    """(B, T), (B, S), (B, S) or None -> (B, T, S) bool: the source position holds the decoder's token."""
    match = decoder_ids.unsqueeze(-1) == source_ids.unsqueeze(1)
    return match if source_mask is None else match & source_mask.bool().unsqueeze(1)
