"""Training data: `files.py` loads and checks translation files and datasets; `build_corpus.py` rebuilds the embedded
corpus, which ships with the library as `hf_pgen.corpus` (the files under hf_pgen/en_de_messages/); `debian.py`
fetches and parses Debian's package-description indexes, which corpora are built from on the user's machine."""
