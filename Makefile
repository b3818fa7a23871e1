# One command for the main job, one for the tests; each sets itself up on a fresh machine.
PYTHON ?= python3
VENV ?= .venv
VENV_523 ?= .venv-523
PIP_QUIET ?= -q
TORCH ?= torch==2.13.0

.PHONY: setup main test test-compat benchmark browser clean
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# torch first and pinned: a plain `torch` (or a dependency asking for it) pulls a multi-GB CUDA build.
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install $(PIP_QUIET) --upgrade pip
	$(VENV)/bin/pip install $(PIP_QUIET) "$(TORCH)"
	$(VENV)/bin/pip install $(PIP_QUIET) -e ".[dev]"
	touch $@

# The oldest supported Transformers (5.23: `past_key_values` instead of 5.24's `cache`).
$(VENV_523)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV_523)
	$(VENV_523)/bin/pip install $(PIP_QUIET) --upgrade pip
	$(VENV_523)/bin/pip install $(PIP_QUIET) "$(TORCH)"
	$(VENV_523)/bin/pip install $(PIP_QUIET) -e ".[dev]" "transformers==5.23.0"
	touch $@

setup: $(VENV)/.installed

main: setup
	$(VENV)/bin/python -m training.main

# tests/test_visualize.py drives a real headless Chromium: Debian's packages (selenium comes with the dev extra).
browser:
	@test -x /usr/bin/chromium -a -x /usr/bin/chromedriver || \
	  ($(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q chromium chromium-driver)

test: setup $(VENV_523)/.installed browser
	$(VENV)/bin/python -m pytest -q
	$(VENV_523)/bin/python -m pytest -q tests/test_modeling.py tests/test_configuration.py tests/test_modeling_upstream.py tests/test_tokenization.py tests/test_processing.py tests/test_data_collator.py tests/test_pipeline.py

benchmark: setup
	$(VENV)/bin/python -m benchmarks.run

clean:
	rm -rf $(VENV) $(VENV_523) outputs
