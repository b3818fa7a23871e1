"""`PointerGeneratorProcessor`: a tokenizer plus the model's output width, for extended-vocabulary encode / decode.

The functional layer (`encode_with_oovs`, `decode_with_oovs`, `batch_decode_with_oovs`) needs the model's output width
(`vocab_size=model.config.vocab_size`) at every call. The processor holds it, so the round trip reads like any
Transformers processor::

    processor = PointerGeneratorProcessor.from_pretrained(folder)     # tokenizer + config's vocab_size
    batch = processor(texts, padding=True, return_tensors="pt")
    ids = model.generate(**batch, num_beams=4, num_return_sequences=2)
    processor.batch_decode(ids, batch)                                 # copies spliced back in, tables repeated

This file is saved next to the model as remote code (see `hf_pgen.SAVED_WITH_MODEL`): it imports only the standard
library, `torch`, `transformers` and its hf_pgen siblings (relative imports).
"""

from __future__ import annotations

import functools
import os
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from transformers import AutoConfig, AutoTokenizer, BatchEncoding, PreTrainedConfig, PreTrainedTokenizerBase
from transformers.utils import logging

from .configuration_pointer_generator import PointerGeneratorConfig
from .deprecation import renamed_keywords
from .glossary import (
    GLOSSARY_MODES,
    apply_glossaries,
    check_annotation,
    glossaries_for,
    term_base_summary,
    unapplied_entries,
    unapplied_message,
)
from .protection_pointer_generator import VocabularyIndex, add_protected_spans
from .tokenization_decode_pointer_generator import batch_decode_with_oovs, decode_with_oovs
from .tokenization_encode_pointer_generator import check_tokenizer, check_vocab_size, encode_with_oovs

__all__ = ["PointerGeneratorProcessor"]

logger = logging.get_logger(__name__)

# from_pretrained keyword arguments that locate files, so they apply to the config as well as the tokenizer.
_HUB_KWARGS = ("cache_dir", "force_download", "local_files_only", "token", "revision", "subfolder", "proxies")


class PointerGeneratorProcessor:
    r"""
    Encodes sources (and targets) with per-example out-of-vocabulary (OOV) tables and decodes generated ids, copies
    included, for a pointer-generator model.

    Args:
        tokenizer ([`PreTrainedTokenizerBase`]):
            A fast tokenizer, or a slow SentencePiece one (`MarianTokenizer`, `M2M100Tokenizer`).
        vocab_size (`int`):
            The model's output width, `model.config.vocab_size` (`>= len(tokenizer)`; T5 pads 32100 to 32128).
            Extended (copy) ids start here.
        glossary_annotation (`str`, *optional*):
            The model's `config.glossary_annotation` (how a glossary's target terms are written into the source);
            `from_pretrained` and `from_model` read it from the model. `None`: sources are not annotated, except
            with a term the vocabulary cannot spell (see `copies`).
        copies (`bool`, defaults to `True`):
            Whether the model has a copy head. The pipeline serves plain bases through this class too (`False`).

    Raises:
        TypeError: for a tokenizer that is neither fast nor a SentencePiece one, or a `vocab_size` that is not an int.
        ValueError: for a `vocab_size` smaller than the tokenizer's ids (extended ids would collide with real ones),
            or a `glossary_annotation` that is not a format string holding `{target}` once.

    Example:

    ```python
    >>> processor = PointerGeneratorProcessor(tokenizer, vocab_size=model.config.vocab_size)
    >>> batch = processor(["Delete %(name)s from Nakamura-Øresund?"], return_tensors="pt")
    >>> batch["oov_words"]
    [['Nakamura', 'Øresund']]
    >>> processor.batch_decode(model.generate(**batch), batch)
    ```
    """

    def __init__(
        self,
        tokenizer: PreTrainedTokenizerBase,
        vocab_size: int,
        glossary_annotation: str | None = None,
        copies: bool = True,
    ) -> None:
        check_tokenizer(tokenizer)
        self.tokenizer = tokenizer
        self.vocab_size = check_vocab_size(tokenizer, vocab_size)
        self.glossary_annotation = None if glossary_annotation is None else check_annotation(glossary_annotation)
        self.copies = copies

    @functools.cached_property
    def _vocabulary_index(self) -> VocabularyIndex:
        """What protected spans and glossary terms read from the tokenizer's vocabulary: built on first use, then
        shared by every batch this processor encodes."""
        return VocabularyIndex(self.tokenizer)

    # ---------------------------------------------------------------------------------------------- construction
    @classmethod
    def from_pretrained(
        cls, pretrained_model_name_or_path: str | os.PathLike, vocab_size: int | None = None, **kwargs: Any
    ) -> PointerGeneratorProcessor:
        """Load the tokenizer with `AutoTokenizer` and the width from the folder's (or Hub repo's) `config.json`.

        Works for a saved pointer-generator folder and for a plain base checkpoint (BART, Marian, T5, M2M100, ...).
        `vocab_size` overrides the config (needed for a tokenizer-only folder). Other keyword arguments go to
        `AutoTokenizer.from_pretrained`; `revision`, `cache_dir`, `token`, `local_files_only`, `subfolder` also to
        the config.
        """
        tokenizer = AutoTokenizer.from_pretrained(pretrained_model_name_or_path, **kwargs)
        annotation = None
        if vocab_size is None:
            hub_kwargs = {k: kwargs[k] for k in _HUB_KWARGS if k in kwargs}
            vocab_size, annotation = _model_width(pretrained_model_name_or_path, **hub_kwargs)
        return cls(tokenizer, vocab_size=vocab_size, glossary_annotation=annotation)

    @classmethod
    def from_model(cls, model: Any, tokenizer: PreTrainedTokenizerBase) -> PointerGeneratorProcessor:
        """The processor for an in-memory model: `vocab_size = model.config.vocab_size`, and its glossary annotation."""
        return cls(
            tokenizer,
            vocab_size=model.config.vocab_size,
            glossary_annotation=getattr(model.config, "glossary_annotation", None),
        )

    def save_pretrained(self, save_directory: str | os.PathLike, **kwargs: Any) -> tuple[str, ...]:
        """Write the tokenizer files (the width lives in the model's config.json). Same arguments as the tokenizer's
        `save_pretrained`, `push_to_hub=True` included."""
        return self.tokenizer.save_pretrained(save_directory, **kwargs)

    def push_to_hub(self, repo_id: str, **kwargs: Any) -> Any:
        """Push the tokenizer files to the Hub, as `tokenizer.push_to_hub`."""
        return self.tokenizer.push_to_hub(repo_id, **kwargs)

    # --------------------------------------------------------------------------------------------------- encode
    def __call__(
        self,
        text: str | list[str],
        text_target: str | list[str] | None = None,
        max_length: int | None = None,
        max_target_length: int | None = None,
        truncation: bool | str = True,
        padding: bool | str = False,
        return_tensors: str | None = None,
        return_num_truncated_tokens: bool = False,
        protect: Any = None,
        source_prefix: str | None = None,
        glossary: Any = None,
        glossary_mode: str = "guarantee",
        glossary_ignore_case: bool = False,
        glossary_match: str | None = None,
        **tokenizer_kwargs: Any,
    ) -> BatchEncoding:
        """Tokenize like `tokenizer(text, text_target=...)` and add the copy inputs.

        Returns a `BatchEncoding` with `input_ids`, `attention_mask` (the tokenizer's own), `extended_input_ids`
        (unknown tokens carry `vocab_size + k`), `labels` (with `text_target`; copyable unknown target words carry
        their source slot), `oov_words` (per example, the source text of each slot), `oov_spacing` (per example and
        slot, how the source spaced the word: plain strings and booleans, kept by JSON and `datasets`) and, with
        `return_num_truncated_tokens=True`, `num_truncated_tokens` (per example, source tokens truncation removed).
        `model.generate(**batch)` accepts the whole batch. See `hf_pgen.encode_with_oovs`.

        `protect` (off by default) adds `protected_spans`: per example, the spans that `generate()` must reproduce
        exactly as often as the source holds them, and the token sequences that spell them. `"placeholders"` (the
        placeholder grammar of `hf_pgen.placeholders`), `"oov"` (every out-of-vocabulary source word), a regular
        expression (str or compiled), or a list of literal strings. See `hf_pgen.protection_pointer_generator`.

        `source_prefix` (e.g. T5's `"translate English to German: "`) is put before every text: the model reads it,
        `protect` never looks in it, so a pattern cannot force the prefix's words into the output.

        `glossary` (a dict of source term -> target term, a `hf_pgen.Glossary`, the path of a two-column TSV/CSV, or a
        list of these, one per text): where a source term occurs as whole words, in its inflected forms and the
        capitals a text brings (`glossary_match="exact"`: only as written; `glossary_ignore_case=True`: in any case),
        the target term is written into the source with `glossary_annotation` (when the model has one) and, with
        `glossary_mode="guarantee"` (the default), added to `protected_spans`: `generate()` puts it in the output at
        least once. `glossary_mode="hint"` annotates only. Entries of a per-text glossary (the list form) that apply
        nowhere in their text are named in a warning. See `hf_pgen.glossary`.

        Example:

        ```python
        >>> batch = processor(["Open {folder}"], protect="placeholders", source_prefix="translate English to German: ")
        >>> [span["text"] for span in batch["protected_spans"][0]["spans"]]
        ['{folder}']
        ```
        """
        skip = len(source_prefix) if source_prefix else 0
        if skip:
            text = source_prefix + text if isinstance(text, str) else [source_prefix + t for t in text]
        terms = None
        if glossary is not None:
            text, terms = self._apply_glossary(
                text, glossary, glossary_mode, glossary_ignore_case, skip, glossary_match
            )
        keep_offsets = bool(tokenizer_kwargs.get("return_offsets_mapping", False))
        if protect is not None or terms is not None:  # spans are found in character offsets
            tokenizer_kwargs = {**tokenizer_kwargs, "return_offsets_mapping": True}
        batch = encode_with_oovs(
            self.tokenizer,
            text,
            text_target,
            vocab_size=self.vocab_size,
            max_length=max_length,
            max_target_length=max_target_length,
            truncation=truncation,
            padding=padding,
            return_tensors=return_tensors,
            return_num_truncated_tokens=return_num_truncated_tokens,
            **tokenizer_kwargs,
        )
        if protect is None and terms is None:
            return batch
        return add_protected_spans(
            batch, text, protect, self._vocabulary_index, self.vocab_size, keep_offsets, skip, terms, self.copies
        )

    def glossary_sources(
        self,
        texts: list[str],
        glossary: Any,
        glossary_ignore_case: bool = False,
        source_prefix: str | None = None,
        glossary_match: str | None = None,
    ) -> list[str]:
        """The sources as the model reads them with `glossary` (`source_prefix` before each, the annotation
        written in): what to encode evaluation data with when a Trainer decodes it with the same glossary.

        ```python
        >>> processor.glossary_sources(["Free storage"], {"storage": "Speicher"})  # a model trained with the annotation
        ['Free storage [ Speicher ]']
        ```
        """
        prefix = source_prefix or ""
        sources, _ = self._apply_glossary(
            [prefix + t for t in texts], glossary, "guarantee", glossary_ignore_case, len(prefix), glossary_match, False
        )
        return sources

    def check_glossary_mode(self, mode: str) -> None:
        """Raise a `ValueError` saying why and what to do when `glossary_mode=mode` cannot work with this model: an
        unknown mode, or `"hint"` for a model that was not trained to read the annotation."""
        if mode not in GLOSSARY_MODES:
            raise ValueError(f"glossary_mode={mode!r} is not one of {GLOSSARY_MODES}.")
        if mode == "hint" and self.glossary_annotation is None:
            raise ValueError(
                'glossary_mode="hint" writes the terms into the source for the model to use, but this model has no '
                'glossary_annotation (it was not trained to read them): use glossary_mode="guarantee" (the default), '
                "or train the model with run_translation --glossary_augmentation."
            )

    def _apply_glossary(
        self,
        text: str | list[str],
        glossary: Any,
        mode: str,
        ignore_case: bool,
        skip: int,
        match: str | None = None,
        report: bool = True,
    ) -> tuple[str | list[str], list[dict[str, Any] | None] | None]:
        """The texts with the annotation written in, and (guarantee mode) the terms to place per text. With `report`,
        entries of per-text glossaries that apply nowhere in their text are warned about, and a term base shared by
        several texts gets a one-line summary (logged at info level)."""
        self.check_glossary_mode(mode)
        texts = [text] if isinstance(text, str) else list(text)
        glossaries = glossaries_for(glossary, len(texts), ignore_case, match)
        annotated, terms, applied = apply_glossaries(texts, glossaries, self.glossary_annotation, skip)
        if report and isinstance(glossaries, list):
            missing = unapplied_entries(glossaries, applied)
            if missing:
                warnings.warn(unapplied_message(missing, glossaries), UserWarning, stacklevel=4)
        elif report and glossaries is not None and len(texts) > 1:
            logger.info(term_base_summary(glossaries, applied))
        return (annotated[0] if isinstance(text, str) else annotated), (terms if mode == "guarantee" else None)

    # --------------------------------------------------------------------------------------------------- decode
    def decode(
        self,
        token_ids: Sequence[int] | torch.Tensor,
        oov_words: Sequence[str] | None = None,
        skip_special_tokens: bool = True,
        clean_up_tokenization_spaces: bool | None = None,
        oov_spacing: Sequence[Mapping[str, Any]] | None = None,
    ) -> str:
        """Decode one sequence `(L,)`; `oov_words` is its example's table (`batch["oov_words"][i]`), `oov_spacing`
        its spacing records (`batch["oov_spacing"][i]`; without them the output's context alone spaces copies)."""
        return decode_with_oovs(
            self.tokenizer,
            token_ids,
            oov_words,
            vocab_size=self.vocab_size,
            skip_special_tokens=skip_special_tokens,
            clean_up_tokenization_spaces=clean_up_tokenization_spaces,
            oov_spacing=oov_spacing,
        )

    @renamed_keywords(batch_or_tables="oov_words")
    def batch_decode(
        self,
        sequences: Sequence[Sequence[int]] | torch.Tensor,
        oov_words: Mapping[str, Any] | Sequence[Sequence[str] | None] | None = None,
        skip_special_tokens: bool = True,
        clean_up_tokenization_spaces: bool | None = None,
        oov_spacing: Sequence[Sequence[Mapping[str, Any]]] | None = None,
    ) -> list[str]:
        """Decode `(R, L)` generated ids with the OOV words of the batch they came from.

        Args:
            sequences (`torch.Tensor` or lists of `int` of shape `(R, L)`):
                `model.generate(**batch, ...)` output.
            oov_words (`BatchEncoding` or `list[list[str] | None]`, *optional*):
                The processor's batch the ids were generated from (its `oov_words` and `oov_spacing` are read), or
                its `oov_words` (one list per example). With `R = k * B` rows for `B` examples
                (`num_return_sequences=k`), each example's words serve its `k` consecutive rows, in generate()'s
                order. `None`: no example has OOV words. Formerly `batch_or_tables=`.
            skip_special_tokens, clean_up_tokenization_spaces:
                As for `tokenizer.batch_decode`.
            oov_spacing (`list[list[dict]]`, *optional*):
                With a list of OOV words, their examples' spacing records (`batch["oov_spacing"]`,
                `eval_pred.oov_spacing`), which space some copies as the source did; a batch brings its own.

        Returns:
            `list[str]`: one text per row, copies spliced back with the source's own text.

        Raises:
            KeyError: for a batch without `oov_words`.
            ValueError: when `R` is not a multiple of the number of examples, or `oov_spacing` does not match.
        """
        if hasattr(sequences, "tolist"):
            sequences = sequences.tolist()
        sequences = list(sequences)
        per_row, spacing = _oov_words_per_row(oov_words, len(sequences), oov_spacing)
        return batch_decode_with_oovs(
            self.tokenizer,
            sequences,
            per_row,
            vocab_size=self.vocab_size,
            skip_special_tokens=skip_special_tokens,
            clean_up_tokenization_spaces=clean_up_tokenization_spaces,
            oov_spacing=spacing,
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(vocab_size={self.vocab_size}, tokenizer={self.tokenizer!r})"


def _oov_words_per_row(
    batch_or_oov_words: Any, n_rows: int, oov_spacing: Any = None
) -> tuple[list[Sequence[str] | None], list[Sequence[Mapping[str, Any]]] | None]:
    """One example's OOV words per generated row, and its spacing records (`oov_spacing`, else the batch's, else
    None): each example's repeated `n_rows // B` times."""
    if batch_or_oov_words is None:
        return [None] * n_rows, None
    oov_words = batch_or_oov_words
    if isinstance(batch_or_oov_words, Mapping):  # BatchEncoding or dict
        if "oov_words" not in batch_or_oov_words:
            raise KeyError(
                "The batch has no 'oov_words': pass the processor's own output (processor(texts, ...)), or the list "
                "of per-example OOV tables."
            )
        oov_words = batch_or_oov_words["oov_words"]
        if oov_spacing is None:
            oov_spacing = batch_or_oov_words.get("oov_spacing")
    if isinstance(oov_words, str):
        raise TypeError("oov_words must be a batch or a list of per-example OOV tables, got a string.")
    oov_words = list(oov_words)
    single = bool(oov_words) and all(isinstance(word, str) for word in oov_words)
    if single:
        oov_words = [oov_words]  # one un-batched example's table
    records = None
    if oov_spacing is not None:
        records = [list(oov_spacing)] if single else list(oov_spacing)
        if len(records) != len(oov_words) or any(len(r or ()) != len(w or ()) for r, w in zip(records, oov_words)):
            raise ValueError(
                f"oov_spacing does not match the OOV tables ({len(records)} example(s) for {len(oov_words)}; one "
                "record per word): pass the oov_spacing of the same batch as the tables (batch['oov_spacing'], "
                "eval_pred.oov_spacing)."
            )
    if not oov_words:
        if n_rows == 0:
            return [], records
        raise ValueError(f"Got {n_rows} sequences but no OOV table; pass the batch the ids were generated from.")
    if n_rows % len(oov_words):
        raise ValueError(
            f"Got {n_rows} sequences for {len(oov_words)} OOV tables: the number of rows must be a multiple of the "
            "number of examples (num_return_sequences=k gives k rows per example). Pass the batch the ids were "
            "generated from."
        )
    repeat = n_rows // len(oov_words)
    if records is not None:
        records = [record for record in records for _ in range(repeat)]
    return [words for words in oov_words for _ in range(repeat)], records


def _model_width(path: str | os.PathLike, **hub_kwargs: Any) -> tuple[int, str | None]:
    """`vocab_size` from the config.json at `path` (a pointer-generator's: its base's output width; or a base's), and
    the model's `glossary_annotation` (`run_translation --glossary_augmentation` saves it in either kind of config)."""
    missing = (
        f"Could not read the model's output width from a config.json at {str(path)!r}. Pass it: "
        "PointerGeneratorProcessor.from_pretrained(path, vocab_size=model.config.vocab_size)."
    )
    try:
        config_dict, _ = PreTrainedConfig.get_config_dict(path, **hub_kwargs)
    except OSError as error:
        raise ValueError(f"{missing} ({error})") from error
    if not config_dict:  # a tokenizer-only folder
        raise ValueError(missing)
    if config_dict.get("model_type") == PointerGeneratorConfig.model_type:
        # No AutoConfig registration needed: this also works in a Python where only the folder's code exists.
        config = PointerGeneratorConfig.from_dict(config_dict)
        return config.vocab_size, config.glossary_annotation
    try:
        config = AutoConfig.from_pretrained(path, **hub_kwargs)
    except (OSError, ValueError) as error:
        raise ValueError(f"{missing} ({error})") from error
    vocab_size = getattr(config, "vocab_size", None)
    if not isinstance(vocab_size, int):
        vocab_size = getattr(config.get_text_config(decoder=True), "vocab_size", None)
    if not isinstance(vocab_size, int):
        raise ValueError(f"{missing} ({type(config).__name__} has no vocab_size.)")
    return vocab_size, getattr(config, "glossary_annotation", None)
