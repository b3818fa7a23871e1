# One command for the main job, one for the tests; each sets itself up on a fresh machine.
PYTHON ?= python3
VENV ?= .venv
VENV_523 ?= .venv-523
PIP_QUIET ?= -q
TORCH ?= torch==2.13.0

.PHONY: setup main main-full data-conditions ddtp summarise test test-fast quality benchmark browser dictionary clean model_card.md readme-tables
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

# The README's headline table (18 minutes on 2 idle cores from a fresh clone, set-up included); main-full: every system.
main: setup dictionary
	$(VENV)/bin/python -m training.main $(MAIN_ARGS)

main-full: setup dictionary ddtp
	$(VENV)/bin/python -m training.main --full --output_dir outputs/main-full $(MAIN_ARGS)

# main-full's data experiment alone (messages, + DDTP, + backtranslation, + tag): training/data_conditions.py.
data-conditions: setup ddtp
	$(VENV)/bin/python -m training.data_conditions

# The DDTP English-German corpus (Debian's package descriptions): fetched with apt and built into the user's cache.
ddtp: setup
	$(VENV)/bin/python -m training.data.ddtp

# The summarisation job (docs/summarise/README.md): Debian's package descriptions, fetched by apt into
# ~/.cache/hf_pgen/debian on first use (no root needed); SUMMARISE_ARGS="--smoke" checks that it runs in a few minutes.
summarise: setup
	$(VENV)/bin/python -m training.summarise $(SUMMARISE_ARGS)

# Debian's packages come from apt-get; a machine without it (macOS, say) is told what is left out, and goes on.
HAS_APT := $(shell command -v apt-get >/dev/null 2>&1 && echo yes)

# The main job's term rows draw terms from Debian's FreeDict English-German dictionary (GPL-3+), read at run time.
FREEDICT ?= /usr/share/dictd/freedict-eng-deu.dict.dz
dictionary:
	@if [ -f $(FREEDICT) ]; then :; \
	elif [ -n "$(HAS_APT)" ]; then $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q dict-freedict-eng-deu; \
	else echo "make dictionary: skipped, no apt-get to install dict-freedict-eng-deu with. The main job's term rows read"; \
	  echo "  $(FREEDICT): without it they stop with 'No dictionary'. Pass MAIN_ARGS='--dictionary FILE' with a copy of"; \
	  echo "  it (.dict.dz) or a two-column TSV (source term, target term)."; fi

# tests/test_visualize.py drives a real headless Chromium: Debian's packages (selenium comes with the dev extra).
CHROMIUM ?= /usr/bin/chromium
CHROMEDRIVER ?= /usr/bin/chromedriver
browser:
	@if [ -x $(CHROMIUM) -a -x $(CHROMEDRIVER) ]; then :; \
	elif [ -n "$(HAS_APT)" ]; then $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q chromium chromium-driver; \
	else echo "make browser: skipped, no apt-get to install chromium and chromium-driver with. The page test in"; \
	  echo "  tests/test_visualize.py is skipped; set HF_PGEN_CHROMIUM and HF_PGEN_CHROMEDRIVER to run it."; fi

# The whole suite (`-m ""` overrides pyproject's default of the fast tier), then the core tests on Transformers 5.23.
test: setup $(VENV_523)/.installed browser
	$(VENV)/bin/python -m pytest -q -m "" --durations=15
	$(VENV_523)/bin/python -m pytest -q -m "" tests/test_modeling.py tests/test_layers.py tests/test_configuration.py tests/test_modeling_upstream.py tests/test_tokenization.py tests/test_processing.py tests/test_data_collator.py tests/test_pipeline.py

# model_card.md: an example of the card every run_translation run writes (hf_pgen.modelcard's one template), from a
# short run of the main job's word-level pointer-generator recipe (about 5 minutes on one CPU core).
MODEL_CARD_CONFIG ?= d_model=128,encoder_layers=3,decoder_layers=3,encoder_attention_heads=4,decoder_attention_heads=4,encoder_ffn_dim=512,decoder_ffn_dim=512,max_position_embeddings=128
MODEL_CARD_RUN ?= --model_type mbart --config_overrides $(MODEL_CARD_CONFIG) \
  --train_tokenizer --tokenizer_type wordlevel --tokenizer_vocab_size 8000 --tokenizer_copy_placeholders \
  --placeholder_augmentation --oov_copy_limit --no_repeat_ngram_size 3 --max_source_length 128 --max_target_length 128 \
  --learning_rate 1e-3 --warmup_steps 33 --label_smoothing_factor 0.1 --weight_decay 0.01 --seed 42 \
  --max_steps 400 --per_device_train_batch_size 16 --do_train --do_predict --predict_with_generate \
  --max_predict_samples 200 --per_device_eval_batch_size 64 --save_strategy no --report_to none
model_card.md: setup
	rm -rf outputs/pgen-word
	$(VENV)/bin/python -m training.run_translation $(MODEL_CARD_RUN) --output_dir outputs/pgen-word
	cp outputs/pgen-word/README.md $@

# The short loop for contributors, and a bare `pytest`: the tests not marked slow (pyproject's addopts), under 3 minutes
# on 2 cores (.ci/run holds it to that); the slowest are listed. One torch thread unless OMP_NUM_THREADS says otherwise:
# the tiny models gain nothing from more, and on a busy machine two threads each ran the tier past 3 minutes (116
# tests in 180 s, against all 920 in 168 s with one, at a load of 8 on 2 cores).
test-fast: setup
	OMP_NUM_THREADS=$${OMP_NUM_THREADS:-1} $(VENV)/bin/python -m pytest -q --durations=15

quality: setup
	$(VENV)/bin/ruff check hf_pgen training benchmarks experiments tests
	$(VENV)/bin/ruff format --check hf_pgen training benchmarks experiments tests

benchmark: setup
	$(VENV)/bin/python -m benchmarks.run

# The README's results, terms and cost tables, from docs/main-job/headline/comparison.json and benchmarks/results/*/latest.json
# (which rows and columns: training/report.py's README_* and benchmarks/report.py's README_COST).
readme-tables: setup
	$(VENV)/bin/python -m training.report --readme README.md
	$(VENV)/bin/python -m benchmarks.report --readme README.md

clean:
	rm -rf $(VENV) $(VENV_523) outputs
