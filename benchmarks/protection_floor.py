"""What a protection engine pays a row and step before it decides any rule: the floor under `engine_ms_per_step`.

Any logits processor that bans tokens pays, per decoding step:

* **its output**: a new scores tensor. Transformers' processors return new scores rather than write into theirs,
  because generate() keeps the tensor it passed in as the raw logits (`output_logits=True`); one vocabulary-wide
  out-of-place op (a copy, a `where`) is the least that does it;
* **the check for rows left with no token**: an earlier processor (forced EOS, n-gram blocking, top-k) may have left a
  row only tokens the rules ban; finding those rows takes a reduction over the vocabulary (`amax`);
* **the bans**: one `index_put_` of every row's banned ids (`--bans` a row: the benchmark model's rows ban up to about
  250: 135 extension ids, 94 stray marks, 14 forbidden ids, EOS);
* **the state**: the fewest small ops a tensor engine that derives each row's state from `input_ids` needs (beam
  search reorders rows without parent indices): hash each row's ids but the last to find its parent, gather the
  parent's state, look up the transition by the new token, look up the decision. Ten ops; real rules need more.

The times are medians of `torch.utils.benchmark`, one thread, float32 scores, at the recipe model's vocabulary (8,000)
and opus-mt's (58,101). Compare them with the engine's target (4 us a row and step at 16 x 4 and 64 x 4 beams):

    python -m benchmarks.protection_floor                       # about 30 s
    python -m benchmarks.protection_floor --vocab 8000 --rows 64 256 --bans 250
"""

from __future__ import annotations

import argparse

import torch
import torch.utils.benchmark as benchmark

_LENGTH = 40  # generated ids a row holds (a mid-generation step)


def _state_step(ids, powers, last_hashes, last_states, keys, next_states, decisions):
    """The minimal state machine step (see the module docstring); every tensor is (rows,) or a small table."""
    hashes = (ids[:, :-1] * powers[: ids.shape[1] - 1]).sum(-1)  # each row's ids but the last
    order = torch.argsort(last_hashes)
    parents = order[torch.searchsorted(last_hashes[order], hashes).clamp_(max=len(order) - 1)]
    transitions = last_states[parents] * 100_003 + ids[:, -1]
    found = torch.searchsorted(keys, transitions).clamp_(max=len(keys) - 1)
    return decisions[next_states[found]]


def measure(vocab: int, rows: int, bans: int, min_run_time: float) -> dict[str, float]:
    """Microseconds a step of each part of the floor, for `rows` rows of `vocab` scores."""
    scores = torch.randn(rows, vocab)
    ban_rows = torch.arange(rows).repeat_interleave(bans)
    ban_ids = torch.randint(0, vocab, (rows * bans,))
    states = 100
    names = {
        "scores": scores,
        "ban_rows": ban_rows,
        "ban_ids": ban_ids,
        "minus_inf": torch.tensor(-float("inf")),
        "step": _state_step,
        "ids": torch.randint(0, vocab, (rows, _LENGTH)),
        "powers": torch.randint(1, 1 << 20, (_LENGTH,)),
        "last_hashes": torch.randint(0, 1 << 40, (rows,)),
        "last_states": torch.randint(0, states, (rows,)),
        "keys": torch.sort(torch.randint(0, 1 << 40, (5_000,))).values,
        "next_states": torch.randint(0, states, (5_000,)),
        "decisions": torch.randint(0, 50, (states,)),
    }
    statements = {
        "new scores (clone)": "scores.clone()",
        "rows left with no token (amax)": "scores.amax(-1)",
        "bans (index_put_)": "scores.index_put_((ban_rows, ban_ids), minus_inf)",
        "state step (10 small ops)": "step(ids, powers, last_hashes, last_states, keys, next_states, decisions)",
    }
    return {
        name: 1e6 * benchmark.Timer(statement, globals=names).blocked_autorange(min_run_time=min_run_time).median
        for name, statement in statements.items()
    }


def table(vocabs: list[int], row_counts: list[int], bans: int, min_run_time: float) -> str:
    """A Markdown table: per vocabulary and rows, each part's microseconds a row, and their sum."""
    lines = []
    for vocab in vocabs:
        for rows in row_counts:
            times = measure(vocab, rows, bans, min_run_time)
            if not lines:
                lines += [
                    "| V | rows | " + " | ".join(f"{name}, us a row" for name in times) + " | floor, us a row |",
                    "|---:|---:|" + "---:|" * (len(times) + 1),
                ]
            per_row = [t / rows for t in times.values()]
            cells = " | ".join(f"{t:.2f}" for t in per_row)
            lines.append(f"| {vocab:,} | {rows} | {cells} | **{sum(per_row):.2f}** |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vocab", type=int, nargs="+", default=[8000, 58101], help="vocabulary sizes")
    parser.add_argument("--rows", type=int, nargs="+", default=[1, 64, 256], help="rows a step (batch x beams)")
    parser.add_argument("--bans", type=int, default=250, help="banned ids a row")
    parser.add_argument("--min-run-time", type=float, default=0.5, help="seconds of timing per measurement")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    print(table(args.vocab, args.rows, args.bans, args.min_run_time))


if __name__ == "__main__":
    main()
