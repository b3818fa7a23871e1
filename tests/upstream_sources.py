"""Transformers' own model test mixins, taken from the sdist of exactly the installed Transformers release.

The mixins (`tests/test_modeling_common.py`, `tests/test_configuration_common.py`) are not part of the installed
package, only of its source distribution. Rather than vendoring a copy that drifts from the installed version, the
sdist is fetched at test time with pip, cached, and only the files the mixins need are extracted:

    <cache>/transformers-X.Y.Z.tar.gz                                the sdist, as pip downloaded it
    <cache>/transformers-X.Y.Z-<key>/transformers_upstream_tests/...  the extracted tests package (plus stubs)

(<key> hashes what this module extracts and stubs, so editing it re-extracts.)

<cache> is `$HF_PGEN_TESTS_CACHE`, else `$XDG_CACHE_HOME/hf_pgen-tests`, else `~/.cache/hf_pgen-tests`. Both are
reused when present; delete the folder to refetch. Without network access to PyPI, place the sdist there by hand.

The package is named `transformers_upstream_tests` (not `tests`) so that it cannot shadow this repository's `tests`
folder; its modules use relative imports only, so the name is free.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path, PurePosixPath
from types import ModuleType

import transformers

PACKAGE = "transformers_upstream_tests"
ENTRY_MODULES = ("test_modeling_common.py", "test_configuration_common.py")

# Modules the entry modules import from upstream's tests/ package that the sdist does not ship. Each stub is the
# least that lets the import succeed; what it leaves out is not run, and the comment says why that is acceptable.
STUBS = {
    # ModelTesterMixin derives from ExportTesterMixin (torch.export tests, tests/exporters/): empty, so no export
    # tests run (hf_pgen sets _can_compile_fullgraph = False; export is not a supported path).
    "exporters/test_export.py": "class ExportTesterMixin:\n    pass\n",
    # Only `issubclass(self.__class__, GenerationTesterMixin)` in test_generation_tester_mixin_inheritance uses it;
    # the real mixin (tests/generation/) is not in the sdist and is not ported. Nothing derives from this stub.
    "generation/test_utils.py": "class GenerationTesterMixin:\n    pass\n",
    # Read by ConfigTester.check_config_arguments_init, which returns before using it for configs with sub-configs
    # (PointerGeneratorConfig has base_config).
    "utils/test_configuration_utils.py": "config_common_kwargs = {}\n",
}


class UpstreamTestsUnavailable(RuntimeError):
    """The upstream test mixins could not be fetched, extracted or imported; the message says how to fix it."""


def cache_dir() -> Path:
    if os.environ.get("HF_PGEN_TESTS_CACHE"):
        return Path(os.environ["HF_PGEN_TESTS_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "hf_pgen-tests"


def _download_sdist(version: str, cache: Path) -> Path:
    sdist = cache / f"transformers-{version}.tar.gz"
    if sdist.is_file():
        return sdist
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        command = [
            sys.executable, "-m", "pip", "download", f"transformers=={version}", "--no-binary", ":all:", "--no-deps",
            "--disable-pip-version-check", "-q", "-d", tmp,
        ]  # fmt: skip
        try:
            result = subprocess.run(command, capture_output=True, text=True, timeout=600)
        except subprocess.TimeoutExpired as error:
            result = subprocess.CompletedProcess(command, -1, "", f"timed out after {error.timeout} s")
        downloaded = Path(tmp) / sdist.name
        if result.returncode != 0 or not downloaded.is_file():
            # Fail rather than skip: a skipped suite on CI would look like a passing one.
            raise UpstreamTestsUnavailable(
                f"Could not download the transformers {version} sdist, which holds Transformers' model test mixins "
                f"(`{' '.join(command)}` exited with {result.returncode}):\n{result.stderr[-2000:]}\n"
                f"These tests need PyPI. Without network access, put transformers-{version}.tar.gz (from "
                f"https://pypi.org/project/transformers/{version}/#files) into {cache} (or point HF_PGEN_TESTS_CACHE "
                "at a folder that holds it)."
            )
        os.replace(downloaded, sdist)  # atomic: a concurrent run sees the whole file or none
    return sdist


def _relative_imports(source: str, module: PurePosixPath) -> set[PurePosixPath]:
    """The package-relative module files that `from .x import y` statements in `module` (a path in tests/) name."""
    files = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = module.parent
            for _ in range(node.level - 1):
                base = base.parent
            if not node.module:
                raise UpstreamTestsUnavailable(f"tests/{module}: `from {'.' * node.level} import ...` is not handled.")
            files.add(base.joinpath(*node.module.split(".")).with_suffix(".py"))
    return files


def _extract(sdist: Path, version: str, target: Path) -> None:
    """Write the entry modules and, transitively, the tests/ modules they import (stubbing those not shipped)."""
    prefix = f"transformers-{version}/tests/"
    try:
        with tarfile.open(sdist) as archive:
            shipped = {
                member.name[len(prefix) :]: archive.extractfile(member).read().decode()
                for member in archive.getmembers()
                if member.name.startswith(prefix) and member.name.endswith(".py") and member.isfile()
            }  # only tests/*.py: a few MB of text
    except (tarfile.TarError, OSError) as error:
        raise UpstreamTestsUnavailable(f"{sdist} is not a readable sdist ({error}): delete it to download it again.")
    package = target / PACKAGE
    pending, written = [PurePosixPath(name) for name in ENTRY_MODULES], set()
    while pending:
        module = pending.pop()
        if module in written:
            continue
        key = module.as_posix()
        if key in shipped:
            source = shipped[key]
            pending.extend(_relative_imports(source, module))
        elif key in STUBS:
            source = "# Stub written by hf_pgen's tests/upstream_sources.py: the sdist does not ship this module.\n"
            source += STUBS[key]
        else:
            raise UpstreamTestsUnavailable(
                f"The transformers {version} sdist lacks tests/{key}, which its model test mixins import. Add a "
                "minimal stub for it to STUBS in tests/upstream_sources.py."
            )
        path = package / module
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
        written.add(module)
    # Every folder becomes a regular package so that relative imports resolve inside it.
    for folder in [package, *(p for p in package.rglob("*") if p.is_dir())]:
        (folder / "__init__.py").touch()


def upstream_tests_root(version: str | None = None) -> Path:
    """Folder holding the `transformers_upstream_tests` package for `version` (default: the installed release)."""
    version = version or transformers.__version__
    cache = cache_dir()
    key = hashlib.sha256(repr((PACKAGE, ENTRY_MODULES, sorted(STUBS.items()))).encode()).hexdigest()[:10]
    root = cache / f"transformers-{version}-{key}"
    if (root / PACKAGE / "__init__.py").is_file():
        return root
    sdist = _download_sdist(version, cache)
    staging = Path(tempfile.mkdtemp(prefix=f"{root.name}.", dir=cache))
    try:
        _extract(sdist, version, staging)
        os.rename(staging, root)  # atomic; fails if a concurrent run got there first, whose copy is as good
    except OSError as error:
        if not (root / PACKAGE / "__init__.py").is_file():
            raise UpstreamTestsUnavailable(f"Could not extract {sdist} into {root}: {error}") from error
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return root


def import_upstream(name: str) -> ModuleType:
    """Import `transformers_upstream_tests.<name>` (e.g. "test_modeling_common") of the installed Transformers."""
    try:
        import parameterized  # noqa: F401  (test_modeling_common imports it)
    except ImportError:
        raise UpstreamTestsUnavailable(
            "Transformers' test_modeling_common needs the `parameterized` package: pip install -e '.[dev]'."
        ) from None
    root = str(upstream_tests_root())
    # On sys.path only for the import: the package's own modules import each other relatively.
    sys.path.insert(0, root)
    try:
        return importlib.import_module(f"{PACKAGE}.{name}")
    finally:
        sys.path.remove(root)
