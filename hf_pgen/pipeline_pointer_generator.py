"""Text-to-text pipelines (translation, summarization, text2text-generation) that copy out-of-vocabulary words.

Transformers 5 removed these three tasks. A saved pointer-generator folder brings them back through
`config.custom_pipelines`, so that, even in a Python without hf_pgen,

    pipeline("translation", model=folder_or_hub_id, trust_remote_code=True)

returns `[{"translation_text": ...}]` as v4 did. Each example is encoded with its own OOV table, and copied words are
decoded back to their source text.
"""

from __future__ import annotations

import torch
from transformers import Pipeline
from transformers.utils import logging

from .tokenization_pointer_generator import batch_decode_with_oovs, encode_with_oovs

logger = logging.get_logger(__name__)

OUTPUT_KEYS = {"translation": "translation_text", "summarization": "summary_text", "text2text-generation": "generated_text"}

# What `config.custom_pipelines` holds for a saved folder (impl is resolved inside the folder's own code).
CUSTOM_PIPELINES = {
    task: {
        "impl": "pipeline_pointer_generator.PointerGeneratorText2TextPipeline",
        "pt": ["AutoModelForSeq2SeqLM"],
        "tf": [],
        "type": "text",
    }
    for task in OUTPUT_KEYS
}


class PointerGeneratorText2TextPipeline(Pipeline):
    """Translation / summarization / text2text-generation with a pointer-generator (or any seq2seq model).

    In-memory use (hf_pgen imported):

    ```python
    pipe = PointerGeneratorText2TextPipeline(model=model, tokenizer=tokenizer, task="translation")
    pipe(["Delete %(name)s?", "Open Nakamura-Øresund"], num_beams=4, batch_size=2)
    ```

    Call arguments: `prefix` (prepended to every input; defaults to the base config's `task_specific_params` prefix
    for the task, e.g. T5's "translate English to German: "), `src_lang` / `tgt_lang` (language codes for multilingual
    bases such as mBART or M2M100: the tokenizer's source language, and the forced first generated token),
    `max_length` (source truncation; a warning names truncated inputs), `clean_up_tokenization_spaces`, and any
    `generate()` keyword (`num_beams`, `max_new_tokens`, `do_sample`, ...).
    """

    _load_processor = False
    _load_image_processor = False
    _load_feature_extractor = False
    _load_tokenizer = True
    _pipeline_calls_generate = True

    def __init__(self, *args, task: str = "translation", **kwargs):
        super().__init__(*args, task=task, **kwargs)
        base_task = _base_task(self.task)
        if base_task not in OUTPUT_KEYS:
            raise ValueError(f"Unsupported task {self.task!r}: use one of {sorted(OUTPUT_KEYS)}.")
        self.output_key = OUTPUT_KEYS[base_task]

    def _sanitize_parameters(
        self, prefix=None, src_lang=None, tgt_lang=None, max_length=None, clean_up_tokenization_spaces=None, **generate_kwargs
    ):
        preprocess = {"prefix": prefix if prefix is not None else self._default_prefix(), "max_length": max_length}
        if src_lang is not None:
            preprocess["src_lang"] = src_lang
        if tgt_lang is not None:
            generate_kwargs.setdefault("forced_bos_token_id", self._language_token_id(tgt_lang))
        postprocess = {}
        if clean_up_tokenization_spaces is not None:
            postprocess["clean_up_tokenization_spaces"] = clean_up_tokenization_spaces
        return preprocess, generate_kwargs, postprocess

    def __call__(self, inputs, *args, **kwargs):
        """Generate for one string or a list of strings; returns one dict (or a list of dicts) per input."""
        if isinstance(inputs, (list, tuple)):
            for i, text in enumerate(inputs):
                if not isinstance(text, str):
                    raise ValueError(f"Input {i} is {type(text).__name__}, not a string: every input must be text.")
        elif not isinstance(inputs, str):
            raise ValueError(f"The input is {type(inputs).__name__}, not a string (or a list of strings).")
        return super().__call__(inputs, *args, **kwargs)

    # -- the three stages ------------------------------------------------------------------------------------------

    def preprocess(self, text: str, prefix: str = "", max_length: int | None = None, src_lang: str | None = None):
        if src_lang is not None:
            self.tokenizer.src_lang = src_lang  # mBART/M2M100 tokenizers add the language code from this
        max_length = max_length or self._max_source_length()
        source = prefix + text
        encoding = encode_with_oovs(
            self.tokenizer, [source], vocab_size=self.model.config.vocab_size, max_length=max_length,
            truncation=True, return_tensors="pt",
        )
        if encoding["input_ids"].shape[1] >= max_length and len(self.tokenizer(source)["input_ids"]) > max_length:
            logger.warning(f"Input of {len(source)} characters was truncated to {max_length} tokens: {source[:40]!r}...")
        return {
            "input_ids": encoding["input_ids"],
            "attention_mask": encoding["attention_mask"],
            "extended_input_ids": encoding["extended_input_ids"],
            "oov_words": encoding["oov_words"],  # [[str, ...]]: one table, kept as a list through batching
            "is_blank": torch.tensor([not text.strip()]),
        }

    def _forward(self, model_inputs, **generate_kwargs):
        input_ids, attention_mask = model_inputs["input_ids"], model_inputs["attention_mask"]
        # Batching pads extra keys with 0; padded positions must repeat input_ids (the model checks they agree).
        extended = torch.where(attention_mask.bool(), model_inputs["extended_input_ids"], input_ids)
        generate_kwargs = {k: v for k, v in generate_kwargs.items() if v is not None}
        kwargs = {"extended_input_ids": extended} if _is_pointer_generator(self.model) else {}
        output_ids = self.model.generate(input_ids=input_ids, attention_mask=attention_mask, **kwargs, **generate_kwargs)
        batch_size = input_ids.shape[0]
        per_input = output_ids.shape[0] // batch_size  # num_return_sequences
        return {
            "output_ids": output_ids.reshape(batch_size, per_input, -1),
            "oov_words": _one_table_per_example(model_inputs["oov_words"]),
            "is_blank": model_inputs["is_blank"],
        }

    def postprocess(self, model_outputs, clean_up_tokenization_spaces: bool | None = None):
        output_ids = model_outputs["output_ids"][0]  # (num_return_sequences, L)
        tables = model_outputs["oov_words"]  # unbatched from a batch: one table (of str); batch of one: [table]
        table = tables[0] if tables and isinstance(tables[0], list) else tables
        if bool(model_outputs["is_blank"].reshape(-1)[0]):
            texts = [""] * output_ids.shape[0]  # nothing to translate: no hallucinated output
        else:
            texts = batch_decode_with_oovs(
                self.tokenizer, output_ids, [table] * output_ids.shape[0], vocab_size=self.model.config.vocab_size,
                skip_special_tokens=True, clean_up_tokenization_spaces=clean_up_tokenization_spaces,
            )
        records = [{self.output_key: text.strip()} for text in texts]
        return records if len(records) > 1 else records[0]

    # -- helpers ---------------------------------------------------------------------------------------------------

    def _base_config(self):
        return getattr(self.model.config, "base_config", self.model.config)

    def _default_prefix(self) -> str:
        params = getattr(self._base_config(), "task_specific_params", None) or {}
        return (params.get(self.task) or params.get(_base_task(self.task)) or {}).get("prefix", "")

    def _max_source_length(self) -> int:
        limits = [getattr(self._base_config(), "max_position_embeddings", None)]
        model_max = getattr(self.tokenizer, "model_max_length", None)
        limits.append(model_max if model_max and model_max < 1_000_000 else None)
        limits = [limit for limit in limits if limit]
        return min(limits) if limits else 512

    def _language_token_id(self, language: str) -> int:
        if hasattr(self.tokenizer, "get_lang_id"):  # M2M100
            return self.tokenizer.get_lang_id(language)
        token_id = self.tokenizer.convert_tokens_to_ids(language)
        if token_id is None or token_id == self.tokenizer.unk_token_id:
            raise ValueError(f"tgt_lang={language!r} is not a token of this tokenizer; pass a language code it knows.")
        return token_id


def _base_task(task: str) -> str:
    return "translation" if task.startswith("translation") else task


def _is_pointer_generator(model) -> bool:
    return getattr(model.config, "model_type", None) == "pointer_generator"


def _one_table_per_example(oov_words) -> list[list[str]]:
    """Batching wraps each example's [table] in another list; unwrap to one table per example."""
    if oov_words and isinstance(oov_words[0], list) and oov_words[0] and isinstance(oov_words[0][0], list):
        return [tables[0] for tables in oov_words]
    return list(oov_words)


__all__ = ["PointerGeneratorText2TextPipeline", "CUSTOM_PIPELINES"]
