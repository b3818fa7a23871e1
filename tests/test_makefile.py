"""The Makefile's Debian packages on a machine without apt-get: `make browser` and `make dictionary` say what is left
out and succeed, and the page test skips naming `make browser`; with apt-get, a missing browser stays a failure."""

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow  # runs make
@pytest.mark.skipif(shutil.which("make") is None, reason="no make on this machine")
def test_without_apt_the_package_targets_say_what_is_left_out_and_succeed(tmp_path):
    missing = tmp_path / "absent"
    result = subprocess.run(
        ["make", "-s", "browser", "dictionary", "HAS_APT=", f"CHROMIUM={missing}", f"CHROMEDRIVER={missing}"]
        + [f"FREEDICT={missing}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "make browser: skipped" in result.stdout and "tests/test_visualize.py is skipped" in result.stdout
    assert "make dictionary: skipped" in result.stdout and "--dictionary FILE" in result.stdout
    assert "apt-get update" not in result.stdout + result.stderr  # nothing was tried


def test_the_page_test_skips_without_apt_and_fails_with_it(monkeypatch, tmp_path):
    import browser

    monkeypatch.setattr(browser, "CHROMIUM", str(tmp_path / "chromium"))
    monkeypatch.setattr(browser, "CHROMEDRIVER", str(tmp_path / "chromedriver"))
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(pytest.skip.Exception, match="make browser"):
        with browser.chromium():
            pass
    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/apt-get")
    with pytest.raises(AssertionError, match="make browser"):
        with browser.chromium():
            pass
