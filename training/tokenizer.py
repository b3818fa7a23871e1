"""`from training.tokenizer import train_shared_tokenizer`, kept for the README's snippets run from the repository.

The builder ships with the library: new code imports `hf_pgen.tokenizer_training`.
"""

from hf_pgen.tokenizer_training import SPECIAL_TOKENS, TOKENIZER_TYPES, train_shared_tokenizer

__all__ = ["TOKENIZER_TYPES", "SPECIAL_TOKENS", "train_shared_tokenizer"]
