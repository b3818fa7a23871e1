"""A headless Chromium for page tests: Debian's `chromium` and `chromium-driver`, driven by selenium, offline.

`make test` installs both (`make browser`: `apt-get install -y chromium chromium-driver`) and selenium (the dev
extra). On a machine with apt-get (Debian, Ubuntu, CI) a missing browser fails the test that asks for one, with the
command that installs it: there the page test is never skipped. Without apt-get (macOS, say) `make browser` cannot
install it, and the test is skipped with that reason, unless HF_PGEN_CHROMIUM / HF_PGEN_CHROMEDRIVER name a browser.
"""

import contextlib
import os
import shutil
import tempfile

import pytest

CHROMIUM = os.environ.get("HF_PGEN_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("HF_PGEN_CHROMEDRIVER", "/usr/bin/chromedriver")

# Everything that would reach the network at start-up is off: the page under test is a local file.
FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-dev-shm-usage",
    "--force-device-scale-factor=1",
    "--window-size=1280,900",
)


@contextlib.contextmanager
def chromium():
    """A selenium Chrome `WebDriver` on a fresh profile; quits and removes the profile afterwards.

    Raises AssertionError (a test failure, not a skip) naming the install command when the browser is missing on a
    machine with apt-get; skips the test where there is no apt-get to install it with.
    """
    missing = [path for path in (CHROMIUM, CHROMEDRIVER) if not os.path.exists(path)]
    if missing and shutil.which("apt-get") is None:
        pytest.skip(
            f"no {' and '.join(missing)}, and no apt-get for `make browser` to install Chromium and its driver with: "
            "set HF_PGEN_CHROMIUM / HF_PGEN_CHROMEDRIVER to a Chromium and its chromedriver to run the page test"
        )
    if missing:
        raise AssertionError(
            f"The browser test needs {' and '.join(missing)}: install Chromium and its driver with `make browser` "
            "(apt-get install -y chromium chromium-driver; `make test` does), or set HF_PGEN_CHROMIUM / "
            "HF_PGEN_CHROMEDRIVER to them."
        )
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError as error:
        raise AssertionError(
            f"The browser test needs selenium: `pip install selenium` (in the dev extra) ({error})."
        ) from error

    profile = tempfile.mkdtemp(prefix="hf-pgen-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    # An explicit driver path: selenium-manager (which downloads drivers) never runs.
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
