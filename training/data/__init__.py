"""run_translation's data: `files.py` loads and checks translation files and datasets; `build_corpus.py` rebuilds the
embedded corpus, which ships with the library as `hf_pgen.corpus` (the files under hf_pgen/en_de_messages/).

`from training.data import load_en_de_messages` is kept for the README's snippets run from the repository; new code
imports `hf_pgen.corpus`.
"""

from hf_pgen.corpus import CORPUS_DIR, SPLITS, load_en_de_messages

__all__ = ["CORPUS_DIR", "SPLITS", "load_en_de_messages"]
