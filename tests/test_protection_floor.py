"""benchmarks/protection_floor.py: the ops it times do what its docstring says they do, and its table adds them up."""

import torch

from benchmarks.protection_floor import _LENGTH, _state_step, table


def test_the_state_step_finds_each_rows_parent_after_beam_search_reordered_them():
    torch.manual_seed(0)
    rows, vocab = 8, 50
    ids = torch.randint(0, vocab, (rows, _LENGTH))
    powers = torch.randint(1, 1 << 20, (_LENGTH,))
    last_ids = ids[:, :-1][torch.randperm(rows)]  # the last step's rows, in another order
    last_hashes = (last_ids * powers[: _LENGTH - 1]).sum(-1)
    last_states = torch.arange(rows) * 3  # a state per last row
    parent = [next(p for p in range(rows) if torch.equal(last_ids[p], ids[r, :-1])) for r in range(rows)]
    # Every (parent state, token) has its transition: to the parent's index, so the decision names the parent.
    keys = last_states[parent] * 100_003 + ids[:, -1]
    order = torch.argsort(keys)
    next_states = torch.tensor(parent)[order]
    decisions = torch.arange(rows)
    found = _state_step(ids, powers, last_hashes, last_states, keys[order], next_states, decisions)
    assert found.tolist() == parent


def test_the_table_has_a_row_per_setting_and_the_floor_is_the_sum_of_its_parts():
    lines = table([100, 300], [1, 4], bans=5, min_run_time=0.001).splitlines()
    assert len(lines) == 2 + 4 and lines[0].startswith("| V | rows |")
    for line in lines[2:]:
        cells = [cell.strip(" *") for cell in line.strip("|").split("|")]
        parts, floor = [float(c) for c in cells[2:-1]], float(cells[-1])
        assert len(parts) == 4 and all(p > 0 for p in parts)
        assert abs(sum(parts) - floor) < 0.01 * len(parts)
