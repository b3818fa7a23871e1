"""The decoding half of protection: `ProtectedSpansLogitsProcessor`, which makes generate() reproduce each protected
span of a source exactly as often as the source holds it (the rules are specified in the docstring of
`hf_pgen.protection_pointer_generator`, the encode half, which finds the spans and the token sequences that spell them).

```python
batch = processor(["Delete %(count)d files from {folder}?"], protect="placeholders", return_tensors="pt")
ids = model.generate(**batch, num_beams=4)      # generate() installs the processor from the batch's `protected_spans`
base.generate(**batch, logits_processor=LogitsProcessorList([ProtectedSpansLogitsProcessor(
    batch["protected_spans"], eos_token_id=base.config.eos_token_id, max_new_tokens=64)]))  # any encoder-decoder
```

The rules a row obeys are decided per example by `ExampleRules` (`protection_rules_pointer_generator.py`); this
file carries each row's state from step to step, caches the decisions and writes them into the scores.

This file is saved next to the model as remote code: it imports only the standard library, `torch`,
`transformers` and its hf_pgen siblings (relative imports).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import torch
from transformers import LogitsProcessor, LogitsProcessorList

from .protection_pointer_generator import SWALLOWING_RE
from .protection_rules_pointer_generator import ExampleRules

__all__ = ["ProtectedSpansLogitsProcessor"]

_UNDECIDED = object()  # a row not decided yet this step (a decision may be None)


class ProtectedSpansLogitsProcessor(LogitsProcessor):
    r"""
    Makes every protected span of each example appear in its generated ids exactly as often as in its source (rules
    in `hf_pgen.protection_pointer_generator`'s docstring). Built by `generate()` from the batch key
    `protected_spans`; usable with any encoder-decoder's `generate(logits_processor=LogitsProcessorList([...]))`.

    Args:
        protected_spans (`list[dict]`):
            Per example, the processor's `protected_spans` entry.
        eos_token_id (`int` or `list[int]`, *optional*):
            The end-of-sequence id(s): forbidden while spans remain.
        max_length (`int`, *optional*), max_new_tokens (`int`, *optional*):
            The generation's length limit (`max_new_tokens` wins, as in `generate()`), for the budget rule.
        forced_eos_token_id (`int` or `list[int]`, *optional*):
            When set, the last position is taken by EOS: the budget is one token less.
        width (`int`, *optional*):
            Keep only variants whose ids are below it (a model that does not copy: `config.vocab_size`).

    Examples:

    ```python
    >>> batch = processor(["Delete %(count)d files?"], protect="placeholders", return_tensors="pt")
    >>> ids = model.generate(**batch, num_beams=4)  # a pointer-generator installs the processor itself
    >>> # any other encoder-decoder (a plain base: the spans are spelled from its vocabulary):
    >>> protection = ProtectedSpansLogitsProcessor(batch.pop("protected_spans"), eos_token_id=base.config.eos_token_id,
    ...                                            max_new_tokens=64, width=base.config.vocab_size)
    >>> ids = base.generate(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], max_new_tokens=64,
    ...                     logits_processor=LogitsProcessorList([protection]))
    >>> protection.warn_missing(ids)  # names any span the length limit left out
    ```
    """

    def __init__(
        self,
        protected_spans: Sequence[dict[str, Any]],
        eos_token_id: int | Sequence[int] | None = None,
        max_length: int | None = None,
        max_new_tokens: int | None = None,
        forced_eos_token_id: int | Sequence[int] | None = None,
        width: int | None = None,
    ):
        self.examples = [ExampleRules(entry or {}, width) for entry in protected_spans]
        self._ends: tuple[torch.Tensor, list[bool]] | None = None  # see _wants_end
        self._active = [bool(ex) for ex in self.examples]
        if isinstance(eos_token_id, int):
            eos_token_id = [eos_token_id]
        self.eos = [int(t) for t in (eos_token_id if eos_token_id is not None else [])]
        self._eos_set = frozenset(self.eos)
        self._eos_ids: torch.Tensor | None = None  # (E,) the EOS ids on the scores' device (see __call__)
        self.max_length = max_length
        self.max_new_tokens = max_new_tokens
        self.reserve = 1 if forced_eos_token_id is not None else 0
        self._limit: int | None = None
        # (example, ids) -> the scan of those ids as far as it is final (see _state). A state depends on nothing
        # else, so the last step's states serve this step's rows whatever order beam search put them in.
        self._states: dict[tuple[int, tuple[int, ...]], tuple] = {}
        # (example, ids) -> (remaining, end of the last occurrence, its span) of last step's rows whose rules a child
        # may keep (see _carry_on), and this step's
        self._carried: dict[tuple[int, tuple[int, ...]], tuple] = {}
        # Per row (example, ids) of beams and samples, the span starts whose scores were raised to EOS's (__call__): a
        # span started there is the rule's, not the model's, and the row finishes it (see `_rules`), as a row that
        # wanted to end does (`_closing`).
        self._lifted: dict[tuple[int, tuple[int, ...]], set[int]] = {}
        self._carrying: dict[tuple[int, tuple[int, ...]], tuple] = {}
        # Rows (example, ids) that wanted to end while spans remained and their children since, which place the spans
        # and then end: last step's and this step's (see `_decide`).
        self._closing: set[tuple[int, tuple[int, ...]]] = set()
        self._closing_now: set[tuple[int, tuple[int, ...]]] = set()
        self._ceilings: dict[tuple, torch.Tensor | None] = {}  # see _ceiling
        self._ceilings_for: tuple | None = None  # (width, dtype, device) of the scores they were built for
        self._buffer: torch.Tensor | None = None  # (rows, V): this step's ceilings
        # head text -> ids completing a placeholder begun there (see ExampleRules.inventing): the vocabulary index's
        # when the entries have one (it lives as long as the processor that encoded them), else one per processor
        self._inventions: dict[str, list[int]] = next(
            (entry["vocabulary"].inventions for entry in protected_spans if entry and entry.get("vocabulary")), {}
        )

    def is_active(self) -> bool:
        return any(self.examples)

    def _budget(self, length: int) -> int | None:
        if self._limit is None:
            if self.max_new_tokens is not None:
                self._limit = length + self.max_new_tokens  # the first call sees the decoder prompt
            elif self.max_length is not None:
                self._limit = self.max_length
            else:
                return None
        return self._limit - length - self.reserve

    def _state(
        self, index: int, ex: ExampleRules, g: list[int], key: tuple[int, ...], states: dict
    ) -> tuple[tuple[int, ...], int, int | None, int]:
        """(remaining per span, end of the last occurrence, its span, where the pending tail starts (`len(g)` when
        nothing is pending)) for row `g` of example `index` (one that has not ended); records its state for the next
        step in `states`.

        The scan of `g` is its parent's (`g` without its last id, the previous step's row) carried one token on: a
        scan position whose every variant fits before the end of `g` is final (longer ids cannot change what
        matches there), so only the last `max_length` positions are scanned again."""
        parent = self._states.get((index, key[:-1]))
        length = len(g)
        if parent is None:  # the first step, or a row the last step did not see: scan it from the start
            position, emitted, last_end, last_span = 0, [0] * len(ex.texts), 0, None
        else:
            position, emitted, last_end, last_span = parent
            emitted = list(emitted)
        final = length - max(ex.max_length, 1) + 1  # positions before it are final
        position, last_end, last_span, _ = ex.advance(g, position, emitted, last_end, last_span, final)
        states[(index, key)] = (position, tuple(emitted), last_end, last_span)
        reached, last_end, last_span, pending = ex.advance(g, position, emitted, last_end, last_span, length)
        return ex.left(ex.counts, emitted), last_end, last_span, reached if pending else length

    def _rules(
        self,
        ex: ExampleRules,
        g: list[int],
        remaining: tuple[int, ...],
        last_end: int,
        last_span: int | None,
        tail_start: int,
        budget: int | None,
        committed: bool = False,
    ) -> tuple[list[int] | None, set[int], list[int], frozenset[int], list[int], bool]:
        """The rules for one row: (tokens it must choose among or None, ban components (`ExampleRules.components`),
        single tokens it must not choose, tokens no component or invented-placeholder ban may take (a remaining
        span's own next tokens), tokens that start or go on with a span: what it must choose when the bans, EOS
        above all, leave it nothing, e.g. when top-k kept EOS alone; whether a child that goes on calmly keeps these
        rules (see `_carry_on`))."""
        length = len(g)
        tail = tuple(g[tail_start:])
        before = ex.context(g, tail_start, last_end, last_span) if ex.reads_text else ""
        rules = ex.tail_rules(tail, remaining, before)
        if committed and tail and rules.after == remaining and rules.continuations:
            # The span was started where the model wanted to end (see `_decide`): a fragment of it is text the model
            # never chose, and leaving it there would let the row start the span again and again, as it keeps
            # wanting to end, until the budget forces it whole. It finishes the span now.
            fitting = [t for t, still, _ in rules.continuations if budget is None or still <= budget]
            allowed = fitting or [t for t, _, _ in rules.continuations]
            return allowed, set(ex.base_parts), list(rules.banned), rules.opening, [], False
        remaining = rules.after  # once the tail resolves: what the spans still to start need
        parts = set(ex.base_parts)
        hard = list(rules.banned)  # bans that nothing lifts
        for j, left in enumerate(remaining):
            if (
                left <= 0 and not ex.at_least[j]
            ):  # exhausted: tokens that would spell its text again after its other tokens
                for variant in ex.variants[j]:
                    n = len(variant)
                    if n == 1 or (
                        length >= n - 1 and g[-1] == variant[-2] and tuple(g[length - n + 1 :]) == variant[:-1]
                    ):
                        parts.add(1 + 2 * j)
                        break
        if tail:
            if rules.last_span is not None:
                parts.add(2 + 2 * rules.last_span)
        elif last_span is not None and (
            last_end == length or (ex.has_neighbours and ex.reads_as_nothing(g[last_end:]))
        ):
            parts.add(2 + 2 * last_span)  # right after a span (special tokens read as nothing)
        soft = [t for t in ex.stray_starts(remaining) if t not in rules.opening]
        if rules.must_continue:  # leaving the tail would break the guarantee: go on with one of its spans
            allowed = rules.passing
            if budget is not None:
                fitting = [t for t, still, _ in rules.continuations if still <= budget]
                allowed = [t for t in allowed if t in fitting] or allowed
            return allowed, parts, hard + soft, rules.opening, [], False
        if max(remaining, default=0) <= 0:
            return None, parts, hard + soft, rules.opening, [], not tail
        hard += self.eos
        # Spans that may start now: not right after text the grammar would merge them with.
        context = ex.context(g, length, last_end, last_span) if ex.reads_text else ""
        swallowing = ex.has_neighbours and SWALLOWING_RE.search(context) is not None
        if ex.reads_text:
            # Per span, the first tokens of its variants that read as the span after the context, with the whitespace
            # the token itself brings ("Ġ%(" puts a space between a URL and "%(num)s", "▁jetzt" keeps a term apart
            # from the word before it). The others are text here: the scan does not count them as the span
            # (`advance`), so they are the model's as any text is.
            clean = [
                {v[0] for v in ex.variants[j] if ex.reads_cleanly(context + ex.leading_space(v[0], context), j)}
                if left > 0
                else set()
                for j, left in enumerate(remaining)
            ]
        else:  # the rules do not read the text: every remaining span may start
            clean = [{v[0] for v in ex.variants[j]} if left > 0 else set() for j, left in enumerate(remaining)]
        need, slack, tight, too_long = ex.budget_rule(remaining, budget)
        hard += [t for t in too_long if t in ex.stray_tokens]  # a start that commits the row must fit
        continuing = [t for t, still, _ in rules.continuations if budget is None or still <= budget]
        starts = continuing + [t for t in ex.starts(remaining) if any(t in firsts for firsts in clean)]
        if ex.reads_text and not any(clean) and not continuing and max(remaining, default=0) > 0:
            # No span reads as itself right here: where the row would end (or runs out of tokens), a space first.
            sep = ex.separator
            if sep is not None and any(
                remaining[j] > 0 and ex.starts_cleanly(j, g + [sep], length + 1, last_end, last_span)
                for j in range(len(remaining))
            ):
                starts = [sep]
        if tight:
            if continuing:  # finish the span the tail started rather than leave a fragment of it
                return continuing, parts, hard + soft, rules.opening, starts, False
            hard_set = set(hard)
            starts_now = [
                (
                    variant[0],
                    variant[0] in clean[j]
                    and variant[0] not in hard_set
                    and (variant[0] in rules.opening or not ex.bans(variant[0], soft, parts)),
                )
                for j, variants in enumerate(ex.variants)
                if remaining[j] > 0
                for variant in variants
                if len(variant) <= budget and len(variant) + need - ex.min_lengths[j] <= max(budget, need)
            ]
            if not starts_now:
                # No remaining span fits whole in what is left: place none rather than a broken one (the check
                # after generation warns), and let the row end.
                firsts = [v[0] for j, vs in enumerate(ex.variants) if remaining[j] > 0 for v in vs]
                hard = [t for t in hard if t not in self._eos_set] + [t for t in firsts if t in ex.stray_tokens]
                return None, parts, hard + soft, frozenset(), [], False
            fine = [t for t, ok in starts_now if ok]
            if fine:
                return fine, parts, hard + soft, rules.opening, starts, False
            if budget > need:
                # One token to spare before the next span must start: a space keeps it apart (the model's own free
                # choice could leave it glued to the text before it again).
                sep = ex.separator
                if sep is not None and any(
                    remaining[j] > 0 and ex.starts_cleanly(j, g + [sep], length + 1, last_end, last_span)
                    for j in range(len(remaining))
                ):
                    return [sep], parts, hard + soft, rules.opening, starts, False
                return None, parts, hard + soft, rules.opening, starts, False  # a free step: the spans fit after it
            # No room left to keep the next span apart from the text before it, where it would not read as itself:
            # place none rather than a broken one, as when none fits (the check after generation names it).
            firsts = [v[0] for j, vs in enumerate(ex.variants) if remaining[j] > 0 for v in vs]
            hard = [t for t in hard if t not in self._eos_set] + [t for t in firsts if t in ex.stray_tokens]
            return None, parts, hard + soft, frozenset(), [], False
        return None, parts, hard + soft, rules.opening, starts, not swallowing and not tail

    def _decide(
        self,
        index: int,
        ex: ExampleRules,
        g: list[int],
        key: tuple[int, ...],
        budget: int | None,
        scores: torch.Tensor,
        states: dict,
        row: int,
    ) -> tuple[torch.Tensor, list[int], list[int] | None, list[int], list[int], bool] | None:
        """What row `g` (row `row` of `scores`) gets, or None when it is left alone: (its (V,) ceiling (see
        `_ceiling`), single ids banned besides, the tokens it must choose among or None when it is only banned some,
        the span starts a banned row falls back on, ids its ceiling bans that must keep their scores, whether what it
        must choose is the rule's choice rather than the model's (see __call__))."""
        parent_key = (index, key[:-1])  # the row one token shorter, as the last step saw it
        # A row that wanted to end while spans remained places them and then ends, as it chose to: what it would
        # write after them is text it never wanted (a model that did not expect them there often goes on wandering).
        closing = parent_key in self._closing
        carried = self._carried.get(parent_key)
        if carried is not None and not closing and g[-1] not in self._eos_set and ex.goes_on_calmly(g[-1]):
            decision = self._carry_on(index, ex, g, key, parent_key, carried, budget, scores, states, row)
            if decision is not _UNDECIDED:
                return decision
        state = self._state(index, ex, g, key, states)
        width = scores.shape[-1]
        tail_start = state[3]
        committed = False
        if tail_start < len(g):  # a pending tail: did the rule start it?
            prefix = (index, tuple(g[:tail_start]))
            committed = closing or g[tail_start] in self._lifted.get(prefix, ())
        allowed, parts, banned, opening, starts, carries = self._rules(ex, g, *state, budget, committed=committed)
        if carries:
            self._carrying[(index, key)] = state[:3]
        if allowed is None and starts and self.eos and (closing or self._wants_end(scores, row)):
            # EOS is the row's top token (or was, see `closing`) but spans remain: it places one now (the model chooses
            # which; for beams its scores become log probabilities over the starts, see __call__), and finishes it
            # (`_rules`).
            banned_set = set(banned)
            allowed = [t for t in starts if t not in banned_set and (t in opening or not ex.bans(t, (), parts))] or None
            committed = closing = allowed is not None
        elif allowed is None and closing and not starts and tail_start == len(g) and max(state[0], default=0) <= 0:
            # Every span is in: it ends, unless a processor before this one bans EOS now.
            allowed = [t for t in self.eos if t < width and scores[row, t].item() != -float("inf")] or None
            committed = allowed is not None
        if closing:
            self._closing_now.add((index, key))
        if allowed is None and ex.has_neighbours:
            banned = banned + [t for t in ex.inventing(g, state[1], self._inventions, state[2]) if t not in opening]
        if allowed is not None:
            allowed = [t for t in allowed if t < width]
            if not allowed:
                return None
            banned_set = set(banned)
            # (the stray-mark component bans tokens inside spans too: a forced row continues its span regardless)
            kept = [
                t
                for t in allowed
                if t not in banned_set
                and (t in opening or not any(t in ex.components[p] for p in parts if p != ex.stray_part))
            ]
            kept = kept or allowed
            return self._ceiling(ex, None, frozenset(kept), scores), (), kept, [], [], committed
        banned_set = set(banned)
        restore = [
            t for t in opening if t < width and t not in banned_set and any(t in ex.components[p] for p in parts)
        ]
        return self._banned(ex, index, frozenset(parts), banned, starts, scores, restore)

    def _carry_on(
        self,
        index: int,
        ex: ExampleRules,
        g: list[int],
        key: tuple[int, ...],
        parent_key: tuple,
        carried: tuple,
        budget: int | None,
        scores: torch.Tensor,
        states: dict,
        row: int,
    ) -> Any:
        """`_decide` for a row whose parent's rules carry over (`carried`: the parent's (remaining per span, end of
        the last occurrence, its span), with nothing pending) and whose last token goes on calmly
        (`ExampleRules.goes_on_calmly`): that token starts, continues and ends no span, so the scan's state is the
        parent's, and it adds no mark to the text before the next span, so every remaining span may still start.
        Only what changes with each step is looked at again: the budget, whether the model wants to end, the
        invented-placeholder bans. `_UNDECIDED` when the full rules must decide (the budget is tight, or EOS is on
        top and a span must start)."""
        parent = self._states.get(parent_key)
        if parent is None or (ex.reads_text and any(ex.at_least)):
            # (a glossary term starts cleanly only after a character it does not glue to: which starts a row may
            # take changes with each token, and the full rules put a space first where none may)
            return _UNDECIDED
        remaining, last_end, last_span = carried
        banned, parts, restore = ex.calm_bans(remaining)
        starts: list[int] = []
        if remaining and max(remaining) > 0:
            _, _, tight, too_long = ex.budget_rule(remaining, budget)
            starts = ex.starts(remaining)
            if tight or (self.eos and self._wants_end(scores, row)):
                return _UNDECIDED
            too_long = [t for t in too_long if t in ex.stray_tokens]
            banned = banned + self.eos + too_long
            if too_long:
                restore = restore - set(too_long)
        states[(index, key)] = parent  # still a valid scan of `g` (up to a position no later than before)
        self._carrying[(index, key)] = carried
        if ex.has_neighbours:
            opening = ex.tail_rules((), remaining).opening
            banned = banned + [t for t in ex.inventing(g, last_end, self._inventions, last_span) if t not in opening]
        return self._banned(ex, index, parts, banned, starts, scores, [t for t in restore if t < scores.shape[-1]])

    def _banned(
        self,
        ex: ExampleRules,
        index: int,
        parts: frozenset[int],
        banned: list[int],
        starts: list[int],
        scores: torch.Tensor,
        restore: list[int],
    ) -> tuple[torch.Tensor, list[int], None, list[int], list[int], bool] | None:
        """The decision of a row that is only banned ids (ban components `parts`, single ids `banned`, except the ids
        `restore`), or None when that bans nothing below V."""
        width = scores.shape[-1]
        ceiling = self._ceiling(ex, index, parts, scores)
        singles = sorted({t for t in banned if 0 <= t < width})
        if ceiling is None:
            if not singles:
                return None
            ceiling = self._ceilings[("free",)]
            restore = []
        return ceiling, singles, None, [t for t in starts if t < width], restore, False

    def _wants_end(self, scores: torch.Tensor, row: int) -> bool:
        """Whether EOS is row `row`'s highest-scoring token; all rows at once, the first time a step asks."""
        if self._ends is None or self._ends[0] is not scores:
            self._ends = (scores, (scores[:, self.eos].amax(-1) >= scores.amax(-1)).tolist())
        return self._ends[1][row]

    def _ceiling(self, ex: ExampleRules, index: int | None, ids: frozenset[int] | None, scores: torch.Tensor) -> Any:
        """The (V,) ceiling of a decision, built once and kept: `torch.minimum(scores, ceiling)` applies it (float
        ops: masked_fill and bool reductions are ten times slower on CPU). With `index` (a banned row of example
        `index`), `ids` are its ban components: +inf but -inf where they ban (None when they ban nothing below V; the
        row's single banned ids go into the step's stacked ceilings afterwards, see __call__). Without, `ids` are the
        allowed ids: -inf but +inf there."""
        key = (index, ids)  # the cache holds one width, dtype and device (see __call__)
        if key not in self._ceilings:
            if index is None:
                ceiling = _filled(scores, -float("inf"), [t for t in ids if 0 <= t < scores.shape[-1]], float("inf"))
            else:  # the components' own ceilings (large sets, built once each)
                components = [c for c in (self._component(ex, index, part, scores) for part in ids) if c is not None]
                ceiling = components[0] if len(components) == 1 else None
                if len(components) > 1:
                    ceiling = components[0].clone()
                    for component in components[1:]:
                        torch.minimum(ceiling, component, out=ceiling)
            self._ceilings[key] = ceiling
        return self._ceilings[key]

    def _component(self, ex: ExampleRules, index: int, part: int, scores: torch.Tensor) -> torch.Tensor | None:
        """The (V,) ceiling of ban component `part` of example `index` alone (None when it bans nothing below V)."""
        cache_key = ("component", index, part)
        if cache_key not in self._ceilings:
            ids = [t for t in ex.components[part] if 0 <= t < scores.shape[-1]]
            self._ceilings[cache_key] = _filled(scores, float("inf"), ids, -float("inf")) if ids else None
        return self._ceilings[cache_key]

    def warn_missing(self, sequences: Any) -> None:
        """After generation: warn, naming them, when returned sequences lack spans, and say whether the length limit
        cut the output or it ended (EOS) before the limit (an earlier processor forced it, or the spans left did
        not fit whole in what the limit left: a span is placed whole or not at all)."""
        sequences = getattr(sequences, "sequences", sequences)
        if not isinstance(sequences, torch.Tensor) or not self.examples or sequences.dim() != 2:
            return
        per_example = max(sequences.shape[0] // len(self.examples), 1)
        cut, ended = [], []
        for row, g in enumerate(sequences.tolist()):
            ex = self.examples[min(row // per_example, len(self.examples) - 1)]
            if ex.texts:
                remaining, _, _ = ex.scan(g)
                lacking = [text for text, left in zip(ex.texts, remaining) if left > 0]
                if lacking:
                    end = next((i for i, t in enumerate(g) if i and t in self._eos_set), None)
                    early = end is not None and (self._limit is None or end + 1 + self.reserve < self._limit)
                    (ended if early else cut).append(f"output {row}: {lacking}")
        for missing, why in (
            (cut, "the length limit cut them off"),
            (
                ended,
                "it ended before them: the tokens left did not fit them whole, or an earlier "
                "logits processor forced the end",
            ),
        ):
            if missing:
                warnings.warn(
                    f"Protected spans are missing from {len(missing)} output(s) ({why}): "
                    f"{'; '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}. Raise max_new_tokens (or "
                    "max_length) to fit them.",
                    UserWarning,
                    stacklevel=3,
                )

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        # input_ids: (rows, L) with rows = examples * (num_beams or num_return_sequences); scores: (rows, V)
        rows, width = scores.shape
        device = scores.device
        per_example = max(rows // max(len(self.examples), 1), 1)
        budget = self._budget(input_ids.shape[1])
        states: dict[tuple[int, tuple[int, ...]], tuple] = {}
        decisions: dict[tuple[int, tuple[int, ...]], Any] = {}  # beams that share their ids share the decision
        if self._ceilings_for != (width, scores.dtype, device):  # ceilings are built for one kind of scores
            self._ceilings, self._ceilings_for = {}, (width, scores.dtype, device)
        free = ("free",)  # the ceiling of a row left alone: (V,) all +inf
        if free not in self._ceilings:
            self._ceilings[free] = _filled(scores, float("inf"), [], None)
        ceilings = [self._ceilings[free]] * rows
        ban_rows: list[int] = []  # (row, id) pairs banned besides the rows' ceilings
        ban_ids: list[int] = []
        keep_rows: list[int] = []  # (row, id) pairs its ceiling bans that keep their scores (a span's own tokens)
        keep_ids: list[int] = []
        forced: dict[int, list[int]] = {}  # row -> the tokens it must choose among
        fallback: dict[int, list[int]] = {}  # banned row -> the span starts to fall back on
        ruled: list[int] = []  # forced rows whose choice is the rule's, not the model's
        last = len(self.examples) - 1
        for ex in self.examples:
            ex.next_step()
        self._carrying = {}
        row_keys: list[tuple[int, tuple[int, ...]] | None] = [None] * rows
        # Rows that have ended (greedy search and sampling keep padding them; the first id is the decoder start,
        # which may be EOS): left alone, found for all rows at once.
        ended = [False] * rows
        if self.eos and input_ids.shape[1] > 1:
            if self._eos_ids is None or self._eos_ids.device != input_ids.device:
                self._eos_ids = torch.tensor(self.eos, device=input_ids.device)
            ended = torch.isin(input_ids[:, 1:], self._eos_ids).any(-1).tolist()
        for row, g in enumerate(input_ids.tolist()):
            index = min(row // per_example, last)
            ex = self.examples[index]
            if not self._active[index] or ended[row]:
                continue  # nothing protected in this example, or the row has ended: left alone entirely
            key = tuple(g)
            row_keys[row] = (index, key)
            decision = decisions.get((index, key), _UNDECIDED)
            if decision is _UNDECIDED:
                decision = decisions[(index, key)] = self._decide(index, ex, g, key, budget, scores, states, row)
            if decision is None:
                continue
            ceilings[row], singles, allowed, starts, restore, by_rule = decision
            if restore:
                keep_rows += [row] * len(restore)
                keep_ids += restore
            if singles:
                ban_rows += [row] * len(singles)
                ban_ids += singles
            if allowed is not None:
                forced[row] = allowed
                if by_rule:
                    ruled.append(row)
            else:
                fallback[row] = starts
        self._states, self._carried = states, self._carrying
        self._closing, self._closing_now = self._closing_now, set()
        if not forced and not fallback:
            return scores
        # The rows' ceilings go into one buffer kept across steps: a new (rows, V) tensor each step costs more in
        # page faults (glibc maps every large allocation afresh) than the copy itself.
        buffer = self._buffer
        if buffer is None or buffer.shape != scores.shape or buffer.dtype != scores.dtype or buffer.device != device:
            self._buffer = torch.empty_like(scores)
        stacked = torch.stack(ceilings, out=self._buffer)  # (rows, V)
        if ban_rows:  # one write for the whole step: a ceiling per banned set would cost a (V,) tensor each
            stacked[torch.tensor(ban_rows, device=device), torch.tensor(ban_ids, device=device)] = -float("inf")
        out = torch.minimum(scores, stacked)  # (rows, V)
        lift_rows = [row for row, starts in fallback.items() for _ in starts]
        if lift_rows and self.eos:
            # EOS is banned while spans remain: what the model gave ending goes to placing a span there instead (each
            # allowed start scores at least what EOS did), so it places one where it would have ended rather than
            # wander on through text it did not want until the budget forces the spans in.
            rows_, ids_ = (
                torch.tensor(lift_rows, device=device),
                torch.tensor([t for starts in fallback.values() for t in starts], device=device),
            )
            ends = scores[:, self.eos].amax(-1)  # (rows,)
            current = out[rows_, ids_]
            raised = (current != -float("inf")) & (current < ends[rows_])
            out[rows_, ids_] = torch.where(raised, ends[rows_], current)
            # A start taken at a raised score is the rule's choice: the row finishes that span (`_rules`).
            for row, token in zip(rows_[raised].tolist(), ids_[raised].tolist()):
                self._lifted.setdefault(row_keys[row], set()).add(token)
        if keep_rows:
            kept_rows, kept_ids = torch.tensor(keep_rows, device=device), torch.tensor(keep_ids, device=device)
            out[kept_rows, kept_ids] = scores[kept_rows, kept_ids]
        for row, top in enumerate(out.amax(-1).tolist()):
            if top != -float("inf"):
                continue
            if row in forced:  # an earlier processor removed every allowed token (forced EOS, n-grams): the rule wins
                out[row, forced[row]] = 0.0
            elif row in fallback:  # the bans left the row no token
                if fallback[row]:  # spans remain: start one rather than end (an earlier processor kept EOS alone)
                    out[row, fallback[row]] = 0.0
                else:
                    out[row] = scores[row]
        if ruled:
            # A row that must start a span where it wanted to end, or finish one started there, has its scores made log
            # probabilities over what it may choose: placing the span there is the rule's choice, so beam search must
            # not charge it to the hypothesis. Charged, a beam that places the span loses to one wandering on through
            # text the model did not want (which wants to end again, and again) until the length limit forces the
            # spans in. Greedy search and sampling choose as before (a row's argmax and softmax do not change by a
            # constant).
            rows_ = torch.tensor(ruled, device=device)
            out[rows_] = out[rows_] - torch.logsumexp(out[rows_], dim=-1, keepdim=True)
        return out


def _filled(scores: torch.Tensor, fill: float, ids: list[int], value: float | None) -> torch.Tensor:
    """A (V,) tensor like a row of `scores` (V,): `fill` everywhere, `value` at `ids`."""
    row = torch.full(scores.shape[-1:], fill, dtype=scores.dtype, device=scores.device)
    if ids:
        row[torch.tensor(ids, device=scores.device)] = value
    return row


def protection_processors(
    protected_spans: Sequence[dict[str, Any]] | None,
    generation_config: Any,
    kwargs: dict[str, Any],
    width: int | None = None,
    batch_size: int | None = None,
) -> LogitsProcessorList:
    """`kwargs["logits_processor"]` with a `ProtectedSpansLogitsProcessor` for `protected_spans` added (when any
    example has spans). `generation_config` and `kwargs` are generate()'s: lengths and EOS come from them.
    `batch_size`, the number of sources, must equal the number of entries."""
    processors = kwargs.get("logits_processor")
    processors = LogitsProcessorList(list(processors) if processors is not None else [])
    if isinstance(protected_spans, dict):  # one un-batched example's entry
        protected_spans = [protected_spans]
    if not protected_spans:
        return processors
    if batch_size is not None and len(protected_spans) != batch_size:
        raise ValueError(
            f"protected_spans has {len(protected_spans)} entries but input_ids has {batch_size} sources: each source "
            "needs its own entry, in the same order. Build both with one processor call (processor(texts, "
            "protect=...)) and slice them together (batch['protected_spans'][i:j] with batch['input_ids'][i:j])."
        )
    config = kwargs.get("generation_config") or generation_config

    def setting(name: str) -> Any:
        return kwargs[name] if kwargs.get(name) is not None else getattr(config, name, None)

    processor = ProtectedSpansLogitsProcessor(
        list(protected_spans),
        eos_token_id=setting("eos_token_id"),
        max_length=setting("max_length"),
        max_new_tokens=setting("max_new_tokens"),
        forced_eos_token_id=setting("forced_eos_token_id"),
        width=width,
    )
    if processor.is_active():
        processors.append(processor)
    return processors


def warn_missing_spans(processors: Any, sequences: Any) -> None:
    """Run the after-generation check of the `ProtectedSpansLogitsProcessor` among `processors`, if any."""
    for processor in processors or ():
        if isinstance(processor, ProtectedSpansLogitsProcessor):
            processor.warn_missing(sequences)
