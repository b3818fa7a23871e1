"""The English->German software-message corpus that ships with hf_pgen (see en_de_messages/ATTRIBUTION.md).

>>> from hf_pgen.corpus import load_en_de_messages
>>> ds = load_en_de_messages()            # DatasetDict: train / validation / test
>>> ds["test"][0]["translation"]          # {"en": ..., "de": ...}, as run_translation reads it

Each record also carries ``origin`` ("package==version") and ``license`` (SPDX id); ``en_de_messages/stats.json``
counts pairs per split and per source package. Loading needs 🤗 datasets (the ``training`` extra). The repository
rebuilds the files with ``training/data/build_corpus.py``.
"""

from __future__ import annotations

from pathlib import Path

CORPUS_DIR = Path(__file__).resolve().parent / "en_de_messages"
SPLITS = ("train", "validation", "test")

__all__ = ["CORPUS_DIR", "SPLITS", "load_en_de_messages"]


def load_en_de_messages(split: str | None = None):
    """Load the shipped corpus with ``datasets.load_dataset("json", ...)``.

    With ``split=None`` returns a ``datasets.DatasetDict`` with the three
    splits; with ``split="train"|"validation"|"test"`` returns that
    ``datasets.Dataset``.
    """
    import datasets

    data_files = {name: str(CORPUS_DIR / f"{name}.jsonl.gz") for name in SPLITS}
    if split is None:
        return datasets.load_dataset("json", data_files=data_files)
    if split not in data_files:
        raise ValueError(f"unknown split {split!r}; expected one of {SPLITS}")
    return datasets.load_dataset("json", data_files={split: data_files[split]}, split=split)
