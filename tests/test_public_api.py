"""hf_pgen's public names (`hf_pgen.__all__`): each documents its arguments, and what it raises where it raises."""

from __future__ import annotations

import ast
import inspect
import textwrap

import pytest

import hf_pgen

# Sections still missing in modules whose rewrite is under way (protection_pointer_generator.py, glossary.py). The
# test fails once a section lands, so that its entry is deleted here.
NOT_YET: dict[str, set[str]] = {}  # a name whose docstring still lacks a section, and which sections


def _raises_itself(obj) -> bool:
    """Whether the function, or the class's `__init__` / `__post_init__` / `__call__`, holds a `raise` statement."""
    if inspect.isclass(obj):
        tree = ast.parse(textwrap.dedent(inspect.getsource(obj)))
        methods = [
            node
            for node in tree.body[0].body
            if isinstance(node, ast.FunctionDef) and node.name in ("__init__", "__post_init__", "__call__")
        ]
    else:
        methods = [ast.parse(textwrap.dedent(inspect.getsource(inspect.unwrap(obj))))]
    return any(isinstance(node, ast.Raise) for method in methods for node in ast.walk(method))


@pytest.mark.parametrize("name", hf_pgen.__all__)
def test_every_public_name_documents_its_arguments_and_what_it_raises(name):
    obj = getattr(hf_pgen, name)
    doc = inspect.getdoc(obj) or ""
    wanted = {"Args:"} | ({"Raises:"} if _raises_itself(obj) else set())
    missing = {section for section in wanted if section not in doc}
    assert missing == NOT_YET.get(name, set()), (
        f"hf_pgen.{name}: its docstring lacks {sorted(missing)}"
        if missing - NOT_YET.get(name, set())
        else f"hf_pgen.{name} now has {sorted(NOT_YET[name] - missing)}: delete it from NOT_YET"
    )


def test_a_name_another_module_imports_has_no_underscore():
    """Inside hf_pgen an underscore means "this file only": a name that a sibling imports is package-internal API, and
    reads as such (it stays out of `__all__`), so that a newcomer knows which names other files depend on."""
    from pathlib import Path

    crossing = []
    for path in sorted(Path(hf_pgen.__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level:
                names = [
                    alias.name for alias in node.names if alias.name.startswith("_") and not alias.name.endswith("__")
                ]
                crossing += [f"{path.name}: {name}" for name in names]
    assert crossing == [], crossing
