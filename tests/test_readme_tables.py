"""The README's results, terms and cost tables are what the reports' JSON says (`make readme-tables` writes them)."""

import json

import pytest
from testing_docs import README, ROOT

from benchmarks.report import README_COST, readme_cost_table
from training.report import (
    README_BLOCKS,
    README_SYSTEMS,
    generated_block,
    readme_results_table,
    replace_generated_block,
)

COMPARISON = ROOT / "docs" / "main-job" / "headline" / "comparison.json"
RESULTS = ROOT / "benchmarks" / "results"


def test_the_readme_tables_are_the_jsons():
    comparison = json.loads(COMPARISON.read_text(encoding="utf-8"))
    page = README.read_text(encoding="utf-8")
    expected = {name: table(comparison) for name, table in README_BLOCKS.items()}
    expected["cost"] = readme_cost_table(RESULTS)
    for name, block in expected.items():
        assert generated_block(page, name) == block, (
            f"README.md's {name!r} table differs from the JSON it is made from: run `make readme-tables` "
            "(and change the declarations in training/report.py or benchmarks/report.py, not the README)"
        )


def test_one_number_per_cell_and_the_trivial_system_first():
    comparison = json.loads(COMPARISON.read_text(encoding="utf-8"))
    rows = [line for line in readme_results_table(comparison).splitlines() if line.startswith("| ")][1:]  # no header
    assert len(rows) == len(README_SYSTEMS) and rows[0].startswith("| copy the source verbatim |")
    for row in rows + [line for line in readme_cost_table(RESULTS).splitlines() if line.startswith("| ")][1:]:
        for cell in row.strip("|").split("|")[1:]:
            assert len(cell.replace(" of ", " ").split()) <= 2, row  # a number, and a mark or a bound at most
    assert {row.folder for row in README_COST} <= {path.name for path in RESULTS.iterdir()}


def test_a_declared_system_the_job_lacks_is_named():
    comparison = json.loads(COMPARISON.read_text(encoding="utf-8"))
    with pytest.raises(ValueError, match=r"no system \['pgen-renamed'\].*README_SYSTEMS"):
        readme_results_table(comparison, systems=[("pgen-renamed", "a system the job no longer has")])


def test_only_the_marked_block_is_rewritten():
    page = "before\n<!-- generated: cost -->\nold\n<!-- end: cost -->\nafter\n"
    assert replace_generated_block(page, "cost", "new\n") == page.replace("old", "new")
    with pytest.raises(ValueError, match="expected one"):
        replace_generated_block(page, "terms", "new\n")
