"""The English->German software-message corpus that ships with hf_pgen (see en_de_messages/ATTRIBUTION.md).

>>> from hf_pgen.corpus import load_en_de_messages
>>> ds = load_en_de_messages()            # DatasetDict: train / validation / test / heldout_tools
>>> ds["test"][0]["translation"]          # {"en": ..., "de": ...}, as run_translation reads it

Each record also carries `origin` ("package==version") and `license` (SPDX id); `en_de_messages/stats.json`
counts pairs per split and per source package. Loading needs 🤗 datasets (the `training` extra). The repository
rebuilds the files with `training/data/build_corpus.py`.

Splits are by origin package, and no English source occurs in two splits:

- `train`, `validation`, `test`: catalogues of applications, almost all of them web applications (Django sites,
  OpenStack dashboards, Superset, Indico, ...; validation Wagtail, allauth, filer; test Trac, Sphinx, Django REST
  framework). Train on `train`, tune on `validation`, report on `test`.
- `heldout_tools`: a second held-out set, never used for training or tuning; a different kind of project than the
  training catalogues: command-line tools, libraries and Sphinx documentation themes (udiskie, Nikola, MkDocs,
  FormEncode, WTForms, humanize, cron-descriptor, Flask-Security-Too, OpenStack oslo libraries, ...). It measures, once
  a model is final, whether what was learnt on application catalogues carries over. Code that trains or tunes on
  "everything but test" takes `TRAINING_SPLITS`, not every split of the DatasetDict.
"""

from __future__ import annotations

from pathlib import Path

CORPUS_DIR = Path(__file__).resolve().parent / "en_de_messages"
SPLITS = ("train", "validation", "test", "heldout_tools")
TRAINING_SPLITS = ("train", "validation")  # what training and tuning may read; test and heldout_tools are held out

__all__ = ["CORPUS_DIR", "SPLITS", "TRAINING_SPLITS", "load_en_de_messages"]


def load_en_de_messages(split: str | None = None):
    """Load the shipped corpus with `datasets.load_dataset("json", ...)`.

    With `split=None` returns a `datasets.DatasetDict` with every split in `SPLITS`; with
    `split="train"|"validation"|"test"|"heldout_tools"` returns that `datasets.Dataset`.
    """
    import datasets

    data_files = {name: str(CORPUS_DIR / f"{name}.jsonl.gz") for name in SPLITS}
    if split is None:
        return datasets.load_dataset("json", data_files=data_files)
    if split not in data_files:
        raise ValueError(f"unknown split {split!r}; expected one of {SPLITS}")
    return datasets.load_dataset("json", data_files={split: data_files[split]}, split=split)
