"""`--help` of every command line the repository has: each must exit 0 and print its usage.

The commands are found in the files, so a new one is covered without touching this test: every module under
training/, benchmarks/ and experiments/ with a `__main__` block, every `python -m training.X` / `benchmarks.X` /
`experiments.X` the documentation tells users to run (a script that runs at import, without a `__main__` block, is
caught by that), and the console scripts of pyproject.toml with each of their subcommands. Each runs in its own interpreter from the repository root,
with nothing but the root on PYTHONPATH (as a user runs it: no `tests/` helpers), all of them at once.
"""

import argparse
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("training", "benchmarks", "experiments")
_MAIN_BLOCK = re.compile(r"^if __name__ == ['\"]__main__['\"]:", re.MULTILINE)
_DOCUMENTED = re.compile(r"python3? -m ((?:training|benchmarks|experiments)(?:\.\w+)+)")


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def _text_files():
    yield from ROOT.glob("*.md")
    yield ROOT / "Makefile"
    for folder in ("docs", *PACKAGES):
        yield from (ROOT / folder).rglob("*.md")
    for folder in PACKAGES:
        yield from (ROOT / folder).rglob("*.py")


def _modules() -> list[str]:
    found = set()
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if _MAIN_BLOCK.search(path.read_text(encoding="utf-8")):
                found.add(_module_name(path))
    for path in _text_files():
        if path.is_file():
            found.update(_DOCUMENTED.findall(path.read_text(encoding="utf-8")))
    return sorted(found)


def _console_scripts() -> dict[str, str]:
    """pyproject's [project.scripts]: name -> "module:function"."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")
    with open(ROOT / "pyproject.toml", "rb") as file:
        return tomllib.load(file)["project"].get("scripts", {})


def _subcommands(target: str) -> list[str]:
    """The subcommands of a console script whose module builds its parser in `_build_parsers()` (hf_pgen.cli)."""
    import importlib

    module = importlib.import_module(target.split(":")[0])
    build = getattr(module, "_build_parsers", None)
    if build is None:
        return []
    parser = build()[0]
    return [
        name for action in parser._actions if isinstance(action, argparse._SubParsersAction) for name in action.choices
    ]


def _commands() -> dict[str, list[str]]:
    """A readable name -> the command line that shows its help."""
    commands = {f"python -m {module}": ["-m", module] for module in _modules()}
    for name, target in _console_scripts().items():
        module, function = target.split(":")
        # what the installed script runs, without needing it installed
        launcher = ["-c", f"import sys; from {module} import {function}; sys.exit({function}())"]
        commands[name] = launcher
        for subcommand in _subcommands(target):
            commands[f"{name} {subcommand}"] = [*launcher, subcommand]
    return {name: [sys.executable, *args, "--help"] for name, args in commands.items()}


COMMANDS = _commands()


@pytest.fixture(scope="module")
def helps():
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env.update(
        PYTHONPATH=str(ROOT),
        OMP_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
        TOKENIZERS_PARALLELISM="false",
        HF_HUB_OFFLINE="1",
    )

    def run(command):
        return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)

    # Each one spends its time importing torch and Transformers: run them side by side.
    with ThreadPoolExecutor(max_workers=4) as pool:
        return dict(zip(COMMANDS, pool.map(run, COMMANDS.values())))


def test_the_known_commands_are_found():
    assert {
        "python -m training.run_translation",
        "python -m training.main",
        "python -m benchmarks.run",
        "python -m experiments.oov_by_tokenizer",
        "hf-pgen",
        "hf-pgen translate",
    } <= set(COMMANDS)


@pytest.mark.parametrize("name", COMMANDS)
def test_help_exits_0_and_prints_usage(helps, name):
    result = helps[name]
    assert result.returncode == 0, f"{name} --help exited {result.returncode}:\n{result.stderr[-3000:]}"
    assert result.stdout.startswith("usage: "), f"{name} --help printed no usage:\n{result.stdout[:1000]}"
    if name.startswith("hf-pgen"):
        assert result.stdout.startswith(f"usage: {name} ")
    assert "Traceback" not in result.stderr


pytestmark = pytest.mark.slow  # subprocesses (a Python per command): left out by `make test-fast`
