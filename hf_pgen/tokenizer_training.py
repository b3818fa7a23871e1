"""The one tokenizer builder of hf_pgen: a shared source/target tokenizer trained with 🤗 tokenizers.

Used by `training/run_translation.py --train_tokenizer`, the main job, the tests and the README:

>>> from hf_pgen.tokenizer_training import train_shared_tokenizer
>>> tokenizer = train_shared_tokenizer(texts, "wordlevel", vocab_size=8000)
>>> tokenizer.pad_token_id, tokenizer.eos_token_id, tokenizer.unk_token_id, tokenizer.bos_token_id
(0, 1, 2, 3)
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

from transformers import PreTrainedTokenizerFast

from .placeholders import PLACEHOLDER_PATTERN, placeholder_spans

__all__ = ["TOKENIZER_TYPES", "SPECIAL_TOKENS", "train_shared_tokenizer"]

TOKENIZER_TYPES = ("wordlevel", "wordpiece", "unigram", "bpe")
PAD, EOS, UNK, BOS = "<pad>", "</s>", "<unk>", "<s>"
SPECIAL_TOKENS = (PAD, EOS, UNK, BOS)  # ids 0, 1, 2, 3


def _oniguruma(pattern: str) -> str:
    """A Python regular expression in the dialect of 🤗 tokenizers' `Regex` (Oniguruma): named groups become plain
    groups and `\\uXXXX` escapes the characters themselves; the rest of the syntax the two engines share."""
    pattern = re.sub(r"\(\?P<\w+>", "(?:", pattern)
    return re.sub(r"\\u([0-9a-fA-F]{4})", lambda match: chr(int(match.group(1), 16)), pattern)


# hf_pgen's one placeholder grammar (hf_pgen.placeholders, which the metrics and protection use), for the
# pre-tokenizer: a placeholder without spaces (`%(name)s`, `{0}`, `${VAR}`, `<b>`, a URL) is one pre-token, so a piece
# never holds a placeholder with text around it (a copy of it would bring the placeholder along unseen). Placeholders
# with spaces (`{n, number}`, `<a href="...">`) reach this pattern already cut at the spaces and fall apart into
# punctuation and words. On the embedded corpus both engines find the same spans in every text.
PLACEHOLDER_PIECE = _oniguruma(PLACEHOLDER_PATTERN.pattern)


def train_shared_tokenizer(
    texts: Iterable[str],
    tokenizer_type: str = "wordlevel",
    vocab_size: int = 8000,
    min_frequency: int = 2,
    model_max_length: int | None = None,
    placeholders_in_vocabulary: bool = True,
) -> PreTrainedTokenizerFast:
    """A tokenizer trained on `texts` (sources and targets together), wrapped in `PreTrainedTokenizerFast`.

    Args:
        texts: the training texts.
        tokenizer_type: `"wordlevel"` keeps the `vocab_size` most frequent words and leaves the rest unknown, which
            only a copy mechanism can produce; `"wordpiece"` / `"unigram"` leave only unseen characters unknown;
            `"bpe"` is byte-level (nothing is unknown: only in-vocabulary pieces are copied).
        vocab_size: size of the vocabulary, special tokens included.
        min_frequency: a word (or merge) must occur this often to enter the vocabulary (not used by unigram).
        model_max_length: recorded on the tokenizer (what `truncation=True` cuts to by default).
        placeholders_in_vocabulary: `False` (word-level only) keeps every placeholder (`hf_pgen.placeholders`) out of
            the vocabulary, which holds `vocab_size` other words instead: a copy model can then only copy a
            placeholder from its source, never write one from the vocabulary (no `%(name)s` where the source has
            `%(user)s`), and `oov_copy_limit` keeps it from repeating one.

    Special tokens: `<pad>`=0, `</s>`=1 (appended to every sequence), `<unk>`=2, `<s>`=3. Except for byte-level BPE,
    text is NFC-normalised and split at spaces (kept as "▁", so decoding restores the text exactly), line breaks,
    tabs and punctuation; a placeholder without spaces (`%(name)s`, `%d`, `{0}`, `${VAR}`, `<b>`, a URL) is one
    pre-token, so a word-level vocabulary holds it whole (or copies it whole: one decision, not five) and a subword
    vocabulary spells it from pieces of placeholders, never merged with the words around it.
    """
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

    if tokenizer_type not in TOKENIZER_TYPES:
        raise ValueError(f"tokenizer_type must be one of {TOKENIZER_TYPES}, got {tokenizer_type!r}.")
    texts = list(texts)
    specials = list(SPECIAL_TOKENS)
    metaspace = dict(replacement="▁", prepend_scheme="always", split=True)
    # Metaspace first (one "▁" per space), then one split that isolates placeholders, line breaks and tabs, and
    # single punctuation characters (one regex: a second splitter would cut the placeholders it kept whole).
    word_split = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Metaspace(**metaspace),
            pre_tokenizers.Split(Regex(PLACEHOLDER_PIECE + r"|[\n\r\t]|\p{P}|[$+<=>^`|~]"), behavior="isolated"),
        ]
    )
    if tokenizer_type == "bpe":
        tokenizer = Tokenizer(models.BPE())
        tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
        tokenizer.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(
            vocab_size=vocab_size,
            min_frequency=min_frequency,
            special_tokens=specials,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        )
    elif tokenizer_type == "wordpiece":
        tokenizer = Tokenizer(models.WordPiece(unk_token=UNK, continuing_subword_prefix="##"))
        tokenizer.pre_tokenizer = word_split
        tokenizer.decoder = decoders.Sequence([decoders.Replace("##", ""), decoders.Metaspace(**metaspace)])
        trainer = trainers.WordPieceTrainer(
            vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=specials, continuing_subword_prefix="##"
        )
    elif tokenizer_type == "unigram":
        tokenizer = Tokenizer(models.Unigram())
        tokenizer.pre_tokenizer = word_split
        tokenizer.decoder = decoders.Metaspace(**metaspace)
        trainer = trainers.UnigramTrainer(vocab_size=vocab_size, special_tokens=specials, unk_token=UNK)
    else:
        tokenizer = Tokenizer(models.WordLevel(unk_token=UNK))
        tokenizer.pre_tokenizer = word_split
        tokenizer.decoder = decoders.Metaspace(**metaspace)
        trainer = trainers.WordLevelTrainer(vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=specials)
    tokenizer.normalizer = normalizers.NFC()
    tokenizer.train_from_iterator(texts, trainer=trainer, length=len(texts))
    if tokenizer_type == "unigram":
        tokenizer = _canonical_unigram(tokenizer, len(specials))
    if not placeholders_in_vocabulary:
        if tokenizer_type != "wordlevel":
            raise ValueError(
                "placeholders_in_vocabulary=False is for word-level vocabularies, where a placeholder is "
                f"one word; a {tokenizer_type} vocabulary spells placeholders from pieces."
            )
        tokenizer = _without_placeholders(tokenizer, texts, vocab_size, min_frequency)
    for index, token in enumerate(specials):
        if tokenizer.token_to_id(token) != index:
            raise RuntimeError(
                f"The trained tokenizer put {token} at {tokenizer.token_to_id(token)}, expected {index}."
            )
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"$A {EOS}", pair=f"$A {EOS} $B {EOS}", special_tokens=[(EOS, 1)]
    )
    kwargs = {"model_max_length": model_max_length} if model_max_length else {}
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        pad_token=PAD,
        eos_token=EOS,
        unk_token=UNK,
        bos_token=BOS,
        clean_up_tokenization_spaces=False,
        **kwargs,
    )


# Decimals a unigram piece's log probability keeps: the trainer's own scores differ by about 1e-11 from process to
# process (floating-point sums in another order), far below what changes a segmentation.
_SCORE_DECIMALS = 6
# The step between the scores the Unigram trainer gives the characters it must keep but did not choose (each one
# this much below the one before, starting at the lowest score of the pieces it chose).
_REQUIRED_STEP = 1e-4


def _canonical_unigram(tokenizer, n_specials: int):
    """`tokenizer` (a trained Unigram) with its pieces in one order and its scores rounded, so that the same texts
    give the same tokenizer in every process. tokenizers' Unigram trainer chooses the same pieces each time, but
    orders pieces of equal score, and so numbers them, differently from process to process; it gives the characters
    it must keep but did not choose their scores in a hash set's order (Q one time -11.88192 and J -11.88202, the
    next time the other way round); and its scores differ in the last digits. A model trained on such a tokenizer
    starts from another embedding of each id, and its numbers moved from run to run. Here the special tokens keep
    their ids; the other pieces follow by score, highest first, then by text; and the kept characters (the last run
    of single characters whose scores step down by `_REQUIRED_STEP` or not at all) take their scores in the order of
    their text."""
    from tokenizers import Tokenizer

    state = json.loads(tokenizer.to_str())
    vocab = state["model"]["vocab"]
    pieces = sorted(
        ((piece, round(score, _SCORE_DECIMALS)) for piece, score in vocab[n_specials:]),
        key=lambda entry: (-entry[1], entry[0]),
    )
    start = len(pieces) - 1  # where the kept characters begin
    while (
        start > 0
        and len(pieces[start][0]) == len(pieces[start - 1][0]) == 1
        and min(abs(pieces[start - 1][1] - pieces[start][1] - step) for step in (0, _REQUIRED_STEP))
        < 2 * 10**-_SCORE_DECIMALS
    ):
        start -= 1
    kept = pieces[start:]
    pieces[start:] = zip(sorted(piece for piece, _ in kept), (score for _, score in kept))
    state["model"]["vocab"] = vocab[:n_specials] + [list(entry) for entry in pieces]
    return Tokenizer.from_str(json.dumps(state))


def _without_placeholders(tokenizer, texts: list[str], vocab_size: int, min_frequency: int):
    """The word-level `tokenizer` retrained with room for the placeholders it learned, and then without them."""
    from tokenizers import models, trainers

    def is_placeholder(word: str) -> bool:  # (the special tokens read as tags: "</s>" is a strikethrough's end)
        return word not in SPECIAL_TOKENS and placeholder_spans(word) == [(0, len(word))]

    found = sum(is_placeholder(word) for word in tokenizer.get_vocab())
    if found:  # the same words again, plus as many as the placeholders take up
        trainer = trainers.WordLevelTrainer(
            vocab_size=vocab_size + found, min_frequency=min_frequency, special_tokens=list(SPECIAL_TOKENS)
        )
        tokenizer.train_from_iterator(texts, trainer=trainer, length=len(texts))
    kept = [w for w, _ in sorted(tokenizer.get_vocab().items(), key=lambda item: item[1]) if not is_placeholder(w)]
    tokenizer.model = models.WordLevel({w: i for i, w in enumerate(kept[:vocab_size])}, unk_token=UNK)
    return tokenizer
