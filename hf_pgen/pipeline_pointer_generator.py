"""Translation, summarization and text2text-generation pipelines that copy out-of-vocabulary words.

Transformers 5 removed these three tasks. This module brings them back, with Transformers 4's semantics
(`TranslationPipeline` / `SummarizationPipeline` / `Text2TextGenerationPipeline`), for pointer-generators and for plain
encoder-decoders alike:

```python
import hf_pgen  # registers the tasks, see below
from transformers import pipeline

translator = pipeline("translation", model="folder-or-hub-id")             # or model=model, tokenizer=tokenizer
translator("Open Nakamura-Øresund")            # [{'translation_text': ...}]
translator(["Delete %(name)s?", "Open"], num_beams=4, batch_size=2)       # one dict per input
pipeline("translation_en_to_de", model=t5)     # T5's task prefix from task_specific_params, as in v4
```

Each example is encoded by `PointerGeneratorProcessor` with its own OOV table, which travels with it through
batching; copied words are decoded back to their source text. A plain base is encoded and decoded as v4 did.

How the tasks come back (`register_pipeline_tasks`, called once by `import hf_pgen`):

- `PIPELINE_REGISTRY.register_pipeline` (public API) registers `PointerGeneratorText2TextPipeline` for the three tasks.
- Registering is not enough: `pipeline()` rejects a task listed in `transformers.pipelines.REMOVED_TASKS` before it
  looks at the registry. So the three tasks this module serves, and only those, are taken out of that dict. Any other
  removed task keeps its error.
- Transformers 4's registry resolved `"translation_XX_to_YY"` to the translation pipeline; Transformers 5's lost that
  rule along with the task. `PIPELINE_REGISTRY.check_task` is wrapped to apply it again, for names of exactly that
  shape only; everything else goes to the original method unchanged.

Nothing else in Transformers is touched, and nothing at all happens in a Python that does not import hf_pgen (the
copy of this file inside a saved folder registers nothing). There, a saved pointer-generator folder still serves the
tasks through its `config.custom_pipelines` with `trust_remote_code=True`.

With hf_pgen imported, `pipeline(task, model=folder)` on a saved pointer-generator folder runs this installed class
(not the folder's copy, which may be older) and needs no `trust_remote_code` once the loaded config no longer lists
the folder's own copy in `custom_pipelines` (see `PointerGeneratorConfig`).

This file is saved next to the model as remote code (see `hf_pgen.SAVED_WITH_MODEL`): it imports only the standard
library, `torch`, `transformers` and its hf_pgen siblings (relative imports; `import hf_pgen` above is in the example
only).
"""

from __future__ import annotations

import collections.abc
import types
import warnings
from typing import Any

import torch
from transformers import GenerationConfig, Pipeline
from transformers.utils import logging

from .configuration_pointer_generator import is_pointer_generator, max_source_positions, max_target_positions
from .glossary import apply_glossaries, glossaries_for, term_base_summary, unapplied_entries, unapplied_message
from .logits_process_pointer_generator import protection_processors, warn_missing_spans
from .processing_pointer_generator import PointerGeneratorProcessor
from .protection_pointer_generator import (
    PROTECTED_SPANS_KEY,
    check_protect,
    warn_missing_literals,
)
from .tokenization_encode_pointer_generator import continues_previous, tokenizer_width

logger = logging.get_logger(__name__)

# task -> v4's `return_name`: outputs are `{return_name}_text` and, with return_tensors=True, `{return_name}_token_ids`.
_RETURN_NAMES = {"translation": "translation", "summarization": "summary", "text2text-generation": "generated"}


class PointerGeneratorText2TextPipeline(Pipeline):
    """Translation / summarization / text2text-generation with a pointer-generator (or any seq2seq model).

    Made by `transformers.pipeline("translation" | "translation_xx_to_yy" | "summarization" | "text2text-generation",
    model=..., ...)` once hf_pgen is imported, or directly:

    ```python
    pipe = PointerGeneratorText2TextPipeline(model=model, tokenizer=tokenizer, task="translation")
    pipe(["Delete %(name)s?", "Open Nakamura-Øresund"], num_beams=4, batch_size=2)
    ```

    Args:
        model ([`PreTrainedModel`]):
            A pointer-generator, or any encoder-decoder loaded with `AutoModelForSeq2SeqLM` (served as v4 served it).
        tokenizer ([`PreTrainedTokenizerBase`]):
            Its tokenizer.
        task (`str`, defaults to `"translation"`):
            `"translation"`, `"translation_xx_to_yy"`, `"summarization"` or `"text2text-generation"`: the outputs'
            key (`translation_text`, `summary_text`, `generated_text`) and the `task_specific_params` entry read.
        **kwargs:
            The other arguments of `transformers.Pipeline` (`device`, `batch_size`, generation defaults, ...).

    Inputs: a string (returns a list of dicts, as v4 did), a list or tuple of strings (one dict per input, or one list
    of `num_return_sequences` dicts per input), or a stream for `batch_size` batching: a generator, a
    `KeyDataset(dataset, "column")`, any torch `Dataset` of strings (an iterator of per-input lists is returned, as
    v4 did). A blank input gives `""`.

    Call arguments (as v4):
    - `max_length` / `max_new_tokens` and every other `generate()` keyword (`num_beams`, `num_return_sequences`,
      `do_sample`, ...). When neither the call nor the model's generation config sets a length, the output may be as
      long as the decoder takes (`max_target_positions` of `hf_pgen.configuration_pointer_generator`: the config's
      positions, capped by `tokenizer.model_max_length`), not the 20 tokens `generate()` defaults to.
    - `prefix`: prepended to every input. Defaults to the base's `task_specific_params` prefix for the task (looked up
      as "translation_en_to_de", then "translation"), e.g. T5's "translate English to German: "; the other entries
      there (`num_beams`, `max_length`, ...) become generation defaults, as in v4.
    - `truncation`: sources longer than the model takes (`max_source_positions`: the smaller of the encoder's positions
      and `tokenizer.model_max_length`) are truncated, with a warning naming the input; `truncation=True` truncates
      without the warning, `truncation=False` never truncates.
    - `return_tensors=True`: adds `{task}_token_ids` (e.g. `translation_token_ids`; ids >= `vocab_size` are copied
      words); the text is then left out unless `return_text=True`. `return_text=False` drops the text.
    - `src_lang` / `tgt_lang`: language codes for multilingual bases (mBART, M2M100): the tokenizer's source language,
      and the forced first generated token. With such a tokenizer, `translation_en_to_fr` sets them, as in v4.
    - `clean_up_tokenization_spaces` (default False, as v4).
    - `protect`: guaranteed copies (off by default): `"placeholders"`, `"oov"` (copying models only), a regular
      expression or a list of literal strings; every protected span of a source comes out exactly as often as the
      source holds it (see `hf_pgen.protection_pointer_generator`). Works for plain encoder-decoders too.
    - `glossary`: a term base (a dict of source term -> target term, a `hf_pgen.Glossary`, or the path of a
      two-column TSV/CSV; a list of them gives one per input). Each entry whose source term occurs in an input as
      whole words puts its target term in the output, verbatim, at least once
      (`glossary_mode="guarantee"`, the default); `glossary_mode="hint"` only writes the terms into the source
      for a model trained to read them (`config.glossary_annotation`). `glossary_ignore_case=True` matches source
      terms in any case. With `protect=` too, a protected span may not overlap a source term. See `hf_pgen.glossary`.
    - `return_copy_info=True` (pointer-generators): each result is a *copy record*, the text plus what was copied:
      `source`, `source_tokens` (`[{"text", "span"}]`, span = character offsets in the input, None for special
      tokens and the prefix), `tokens` (one per output token, none for a blank input: `text` — they join to the
      translation —, `token_id`, `p_gen`, `copy_share` (the share of the token's probability that came from
      copying), `source_span` (offsets of the source token it was copied from: the most attended one holding it,
      when copying gave at least half of its probability; else None), `attention` (the pointer over
      `source_tokens`), `protected`) and `protected_spans`. `hf_pgen.visualize.to_html(records, "copies.html")`
      draws them.

    Raises:
        ValueError: at construction, for a task it does not serve, a model that is not an encoder-decoder or a missing
            tokenizer; at a call, for an input that is not a string (naming its index), options a plain base cannot
            serve (`return_copy_info=True`, `protect="oov"`), a bad `protect=` pattern, a list of glossaries for a
            stream, or a `tgt_lang` the tokenizer does not know.
    """

    _load_processor = False
    _load_image_processor = False
    _load_feature_extractor = False
    _load_tokenizer = True
    _pipeline_calls_generate = True

    def __init__(self, *args, task: str = "translation", **kwargs):
        super().__init__(*args, task=task or "translation", **kwargs)
        if self._base_task not in _RETURN_NAMES:
            raise ValueError(
                f"Unsupported task {self.task!r}: use one of {sorted(_RETURN_NAMES)} (or translation_xx_to_yy)."
            )
        if not getattr(self.model.config, "is_encoder_decoder", False):
            raise ValueError(
                f"The {self.task} pipeline needs an encoder-decoder (loaded with AutoModelForSeq2SeqLM); got "
                f"{type(self.model).__name__}."
            )
        if self.tokenizer is None:
            raise ValueError(f"The {self.task} pipeline needs a tokenizer: pass tokenizer=... with the model.")
        self._copies = is_pointer_generator(self.model)
        self.return_name = _RETURN_NAMES[self._base_task]
        # Encodes each source with its own OOV table, decodes copies. A plain base never sees extended ids: any width
        # past the tokenizer's ids will do (M2M100's language codes lie beyond len(tokenizer)).
        vocab_size = self.model.config.vocab_size
        if not self._copies:
            vocab_size = max(vocab_size, tokenizer_width(self.tokenizer))
        self._processor = PointerGeneratorProcessor(
            self.tokenizer,
            vocab_size=vocab_size,
            glossary_annotation=getattr(self.model.config, "glossary_annotation", None),  # set by training, any model
            copies=self._copies,
        )

        # v4: the task's `task_specific_params` give the prefix and generation defaults (below the user's own).
        self.task, params = self._task_specific_params()
        params = dict(params)
        model_prefix = getattr(self.model.config, "prefix", None) or getattr(self._base_config(), "prefix", None)
        self.prefix = params.pop("prefix", None) or model_prefix or ""
        generation_keys = {key for key in vars(GenerationConfig()) if not key.startswith("_")}
        task_generation = {key: value for key, value in params.items() if key in generation_keys}
        self._generate_kwargs = {**task_generation, **self._generate_kwargs}

        # v4: "translation_en_to_fr" names the languages of a multilingual tokenizer (M2M100); the call's win.
        languages = _languages(self.task)
        if languages and hasattr(self.tokenizer, "_build_translation_inputs"):
            self._preprocess_params.setdefault("src_lang", languages[0])
            self._forward_params.setdefault("forced_bos_token_id", self._language_token_id(languages[1]))

    @property
    def _base_task(self) -> str:
        return "translation" if self.task.startswith("translation") else self.task

    def _sanitize_parameters(
        self,
        prefix: str | None = None,
        src_lang: str | None = None,
        tgt_lang: str | None = None,
        truncation: bool | str | None = None,
        return_tensors: bool | None = None,
        return_text: bool | None = None,
        clean_up_tokenization_spaces: bool | None = None,
        protect: Any = None,
        return_copy_info: bool | None = None,
        glossary: Any = None,
        glossary_mode: str | None = None,
        glossary_ignore_case: bool | None = None,
        glossary_match: str | None = None,
        **generate_kwargs,
    ):
        preprocess, postprocess = {}, {}
        if any(v is not None for v in (glossary, glossary_mode, glossary_ignore_case, glossary_match)):
            preprocess.update(self._glossary_parameters(glossary, glossary_mode, glossary_ignore_case, glossary_match))
        if return_copy_info:
            if not self._copies:
                raise ValueError(
                    "return_copy_info=True needs a pointer-generator: this model has no copy switch. Wrap it with "
                    "PointerGeneratorForConditionalGeneration.from_base(...) and fine-tune it, or drop the option."
                )
            preprocess["return_copy_info"] = postprocess["return_copy_info"] = True
            generate_kwargs["output_copy_info"] = True
        if protect is not None:
            check_protect(protect)  # a bad pattern fails before any work
            if protect == "oov" and not self._copies:
                raise ValueError(
                    'protect="oov" needs a copying model (a pointer-generator): out-of-vocabulary words can only come '
                    'out by copying. Use protect="placeholders", a regular expression or literal strings.'
                )
            preprocess["protect"] = protect
        if prefix is not None:
            preprocess["prefix"] = prefix
        if truncation is not None:
            preprocess["truncation"] = truncation
        if src_lang is not None:
            preprocess["src_lang"] = src_lang
        if tgt_lang is not None:
            generate_kwargs.setdefault("forced_bos_token_id", self._language_token_id(tgt_lang))
        if return_tensors is not None:
            postprocess["return_tensors"] = bool(return_tensors)
        if return_text is not None:
            postprocess["return_text"] = bool(return_text)
        if return_tensors is None:  # set at init, if at all (this runs for the init's own arguments too)
            return_tensors = getattr(self, "_postprocess_params", {}).get("return_tensors")
        if return_text is False and not return_tensors:
            raise ValueError("return_text=False leaves nothing to return: also pass return_tensors=True for the ids.")
        if clean_up_tokenization_spaces is not None:
            postprocess["clean_up_tokenization_spaces"] = clean_up_tokenization_spaces
        return preprocess, generate_kwargs, postprocess

    def _glossary_parameters(
        self, glossary: Any, mode: str | None, ignore_case: bool | None, match: str | None
    ) -> dict[str, Any]:
        """preprocess's glossary keywords, checked (and a file read) once per call, before any input is encoded."""
        mode = "guarantee" if mode is None else mode
        self._processor.check_glossary_mode(mode)
        if glossary is not _PER_INPUT:
            glossary = glossaries_for(glossary, None, bool(ignore_case), match)  # (also checks `match`)
        return {
            "glossary": glossary,
            "glossary_mode": mode,
            "glossary_ignore_case": bool(ignore_case),
            "glossary_match": match,
        }

    @staticmethod
    def _glossary_matching(kwargs: dict[str, Any]) -> tuple[bool, str | None]:
        return bool(kwargs.get("glossary_ignore_case")), kwargs.get("glossary_match")

    def _per_input_glossaries(self, texts: list[str], kwargs: dict[str, Any]) -> list[Any]:
        """A call's per-input glossaries (the list form), each read once; entries that apply nowhere in their input
        are named in a warning (the user said they apply there)."""
        glossaries = glossaries_for(list(kwargs["glossary"]), len(texts), *self._glossary_matching(kwargs))
        missing = unapplied_entries(glossaries, apply_glossaries(texts, glossaries, None)[2])
        if missing:
            warnings.warn(unapplied_message(missing, glossaries), UserWarning, stacklevel=4)
        return glossaries

    def __call__(self, inputs: str | collections.abc.Iterable[str], *args, **kwargs) -> Any:
        """Generate for one text, a list/tuple of texts, or a stream of texts (generator, `KeyDataset`).

        Returns a list of dicts for a text; for a list, one dict per text (a list of dicts per text with
        `num_return_sequences` > 1); for a stream, an iterator of per-text lists.
        """
        per_input = isinstance(kwargs.get("glossary"), (list, tuple))
        if isinstance(inputs, str):
            warn_missing_literals([inputs], kwargs.get("protect"), stacklevel=3)
            if per_input:  # one input: a list of one term base
                [glossary] = self._per_input_glossaries([inputs], kwargs)
                kwargs = {**kwargs, "glossary": glossary}
            return super().__call__(inputs, *args, **kwargs)
        if isinstance(inputs, (bytes, bytearray, collections.abc.Mapping)):
            _check_text(inputs)
        if isinstance(inputs, collections.abc.Sequence) and not isinstance(inputs, torch.utils.data.Dataset):
            texts = list(inputs)  # tuples and list-likes (a datasets Column) behave as lists, as v4's lists did
            for index, text in enumerate(texts):
                _check_text(text, index)
            if not texts:
                return []
            warn_missing_literals(texts, kwargs.get("protect"), stacklevel=3)
            if per_input:  # each text carries its own term base through the pipeline's batching
                glossaries = self._per_input_glossaries(texts, kwargs)
                texts = [_TextWithGlossary(text, glossary) for text, glossary in zip(texts, glossaries)]
                kwargs = {**kwargs, "glossary": _PER_INPUT}
            elif kwargs.get("glossary") is not None and len(texts) > 1:
                glossary = glossaries_for(kwargs["glossary"], None, *self._glossary_matching(kwargs))
                kwargs = {**kwargs, "glossary": glossary}  # read once
                logger.info(term_base_summary(glossary, apply_glossaries(texts, glossary, None)[2]))
            results = super().__call__(texts, *args, **kwargs)
            # v4: one dict per input unless num_return_sequences > 1
            return [result[0] for result in results] if all(len(result) == 1 for result in results) else results
        if per_input:
            raise ValueError(
                "A list of glossaries gives one per input, which needs a list of texts; for a stream (a generator, a "
                "KeyDataset) pass one term base for every input (a dict, a Glossary or a file path)."
            )
        if isinstance(inputs, torch.utils.data.Dataset) and isinstance(inputs, collections.abc.Sized):
            return super().__call__(_CheckedTexts(inputs), *args, **kwargs)  # streamed: an iterator comes back
        if isinstance(inputs, collections.abc.Iterable):
            return super().__call__(_checked_texts(inputs), *args, **kwargs)
        raise ValueError(
            f"The input is {type(inputs).__name__}, not a string (or a list of strings, a generator of strings or a "
            "KeyDataset)."
        )

    # -- the three stages ------------------------------------------------------------------------------------------

    def preprocess(
        self,
        text: str,
        prefix: str | None = None,
        truncation: bool | str | None = None,
        src_lang: str | None = None,
        protect: Any = None,
        return_copy_info: bool = False,
        glossary: Any = None,
        glossary_mode: str = "guarantee",
        glossary_ignore_case: bool = False,
        glossary_match: str | None = None,
    ) -> dict[str, Any]:
        _check_text(text)
        per_input = glossary is _PER_INPUT
        if per_input:
            glossary = getattr(text, "glossary", None)
        if src_lang is not None:
            self.tokenizer.src_lang = src_lang  # mBART/M2M100 tokenizers add the language code from this
        prefix = self.prefix if prefix is None else prefix
        source = prefix + text
        # The prefix is the model's to read, not the user's text: the processor puts it before `text` and protects
        # what it finds in `text` only. Literals missing from every input are warned about once per call (see
        # __call__), not once per input.
        encoded, protection = str(text), {"source_prefix": prefix}
        if protect is not None:
            protection["protect"] = protect
        if glossary is not None:
            protection.update(
                glossary=glossary,
                glossary_mode=glossary_mode,
                glossary_ignore_case=glossary_ignore_case,
                glossary_match=glossary_match,
            )
        if return_copy_info:
            protection["return_offsets_mapping"] = True
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Protected literal", category=UserWarning)
            if truncation is False:
                encoding, oov_words, spacing = self._encode(encoded, truncation=False, **protection)
            else:
                limit = max_source_positions(self.model.config, self.tokenizer)
                encoding, oov_words, spacing = self._encode(
                    encoded,
                    truncation=True if truncation is None else truncation,
                    max_length=limit,
                    return_num_truncated_tokens=True,
                    **protection,
                )
        if truncation is not False:
            removed = encoding["num_truncated_tokens"][0]  # counted by the same tokenization
            if removed and truncation is None:
                logger.warning(
                    f"Input {source[:60]!r}{'...' if len(source) > 60 else ''} has {limit + removed} tokens, more "
                    f"than the {limit} this model takes: it was truncated to {limit} (pass truncation=True to "
                    "truncate without this warning)."
                )
        keys = ("input_ids", "attention_mask", "extended_input_ids")
        model_inputs = {key: encoding[key] for key in keys if key in encoding}  # (1, S) each
        model_inputs["oov_words"] = oov_words  # a tuple: batching gathers one per example (see _one_table_per_example)
        model_inputs["oov_spacing"] = spacing  # the same
        model_inputs["is_blank"] = torch.tensor([not text.strip()])
        if PROTECTED_SPANS_KEY in encoding:
            model_inputs[PROTECTED_SPANS_KEY] = encoding[PROTECTED_SPANS_KEY][0]  # a dict: batching makes a list
        elif (
            per_input and glossary_mode == "guarantee"
        ):  # an input without a term base, batched with some that have one
            model_inputs[PROTECTED_SPANS_KEY] = {"spans": [], "forbidden_ids": []}
        if return_copy_info:  # a dict too
            if glossary is not None:  # the record shows what the model read
                text = self._processor.glossary_sources(
                    [str(text)], glossary, glossary_ignore_case, glossary_match=glossary_match
                )[0]
            model_inputs["copy_source"] = self._copy_source(
                str(text), prefix, encoding, PROTECTED_SPANS_KEY in encoding
            )
        return model_inputs

    def _forward(self, model_inputs: dict[str, Any], **generate_kwargs) -> dict[str, Any]:
        input_ids, attention_mask = model_inputs["input_ids"], model_inputs["attention_mask"]  # (B, S)
        inputs = {"input_ids": input_ids, "attention_mask": attention_mask}
        if self._copies:
            # Batching pads extra keys with 0; padded positions must repeat input_ids (the model checks they agree).
            inputs["extended_input_ids"] = torch.where(
                attention_mask.bool(), model_inputs["extended_input_ids"], input_ids
            )
        defaults = self._length_defaults(generate_kwargs, input_ids)
        generate_kwargs = self._prepare_generate_kwargs(generate_kwargs, **defaults)
        protected = model_inputs.get(PROTECTED_SPANS_KEY)
        if protected is not None:
            protected = [protected] if isinstance(protected, dict) else list(protected)
            if self._copies:
                inputs[PROTECTED_SPANS_KEY] = protected  # the model installs the logits processor
            else:  # a plain base: the same processor, with the span's own (in-vocabulary) tokens only
                generate_kwargs["logits_processor"] = protection_processors(
                    protected,
                    self.model.generation_config,
                    generate_kwargs,
                    width=self.model.config.vocab_size,
                    batch_size=input_ids.shape[0],
                )
        output = self.model.generate(**inputs, **generate_kwargs)  # (B * num_return_sequences, L)
        output_ids = output.sequences if generate_kwargs.get("output_copy_info") else output
        if protected is not None and not self._copies:
            warn_missing_spans(generate_kwargs["logits_processor"], output_ids)
        batch_size = input_ids.shape[0]
        per_source = output_ids.shape[0] // batch_size
        outputs = {
            "output_ids": output_ids.reshape(batch_size, per_source, -1),  # (B, k, L)
            "oov_words": _one_table_per_example(model_inputs["oov_words"]),
            "oov_spacing": _one_table_per_example(model_inputs["oov_spacing"]),
            "is_blank": model_inputs["is_blank"],  # (B,)
        }
        if generate_kwargs.get("output_copy_info"):
            sources = model_inputs["copy_source"]
            outputs["copy_source"] = [sources] if isinstance(sources, dict) else list(sources)
            for key in ("p_gen", "copy_shares", "pointer_attentions"):  # (B, k, G) / (B, k, G, S)
                value = getattr(output, key)
                outputs[key] = value.reshape(batch_size, per_source, *value.shape[1:])
            outputs["extended_input_ids"] = inputs.get("extended_input_ids", input_ids)  # (B, S)
            outputs["attention_mask"] = attention_mask
        return outputs

    def postprocess(
        self,
        model_outputs: dict[str, Any],
        return_text: bool | None = None,
        return_tensors: bool = False,
        clean_up_tokenization_spaces: bool = False,
        return_copy_info: bool = False,
    ) -> list[dict[str, Any]]:
        output_ids = model_outputs["output_ids"][0]  # (k, L): one input's num_return_sequences outputs
        # Unbatched from a batch, the entry is this input's table (a tuple); from a batch of one, a list of one table.
        gathered, spacings = model_outputs["oov_words"], model_outputs["oov_spacing"]
        oov_words = list(gathered if isinstance(gathered, tuple) else gathered[0])
        spacing = list(spacings if isinstance(spacings, tuple) else spacings[0])
        if return_text is None:
            return_text = not return_tensors  # v4: return_tensors=True alone gives the ids only
        texts = [None] * output_ids.shape[0]
        blank = bool(model_outputs["is_blank"].reshape(-1)[0])
        if return_text:
            if blank:
                texts = [""] * output_ids.shape[0]  # nothing to translate: no hallucinated output
            else:
                texts = self._decode(output_ids, oov_words, spacing, clean_up_tokenization_spaces)
        records = []
        for j, (ids, text) in enumerate(zip(output_ids, texts)):
            record = {}
            if return_text:
                record[f"{self.return_name}_text"] = text
            if return_tensors:
                record[f"{self.return_name}_token_ids"] = ids
            if return_copy_info:
                record.update(
                    self._copy_record(model_outputs, j, ids, oov_words, spacing, clean_up_tokenization_spaces, blank)
                )
            records.append(record)
        return records

    # -- copy records ----------------------------------------------------------------------------------------------

    def _copy_source(self, text: str, prefix: str, encoding: dict[str, Any], protected: bool) -> dict[str, Any]:
        """What a copy record needs of one source: its tokens' texts and character spans in `text` (the input)."""
        ids = encoding["input_ids"][0].tolist()
        mask = encoding["attention_mask"][0].tolist()
        source, prefix_len = prefix + text, len(prefix)
        raw_offsets = encoding["offset_mapping"][0].tolist()
        offsets = [(start, end) if m else (0, 0) for (start, end), m in zip(raw_offsets, mask)]
        # An NFC/NFKC normalizer composes "e" + U+0301 into one "é" whose offsets end before the mark, which then
        # belongs to no token: a token takes in the marks after it up to the next token, as its copied word does.
        starts = [start for start, end in offsets if end > start] + [len(source)]
        following = iter(starts[1:])
        for position, (start, end) in enumerate(offsets):
            if end > start:
                limit = next(following)
                while end < limit and continues_previous(source[end]):
                    end += 1
                offsets[position] = (start, end)
        tokens = []
        for position, (token_id, (start, end)) in enumerate(zip(ids, offsets)):
            if not mask[position]:
                continue
            if end > start and start >= prefix_len:
                tokens.append(
                    {
                        "text": text[start - prefix_len : end - prefix_len],
                        "span": [start - prefix_len, end - prefix_len],
                    }
                )
            else:  # a special token, or a piece of the task prefix
                piece = source[start:end] if end > start else None
                tokens.append({"text": piece or self.tokenizer.convert_ids_to_tokens(token_id), "span": None})
        spans = [entry["text"] for entry in encoding[PROTECTED_SPANS_KEY][0]["spans"]] if protected else []
        return {"source": text, "source_tokens": tokens, "protected_spans": spans}

    def _copy_record(
        self,
        model_outputs: dict[str, Any],
        j: int,
        ids: torch.Tensor,
        oov_words: list[str],
        spacing: list[dict[str, Any]],
        clean_up: bool,
        blank: bool,
    ) -> dict[str, Any]:
        """The copy record of output `j` of this input (see the class docstring)."""
        source = model_outputs["copy_source"]  # unbatched from a batch: this input's dict; from a batch of one: [dict]
        source = source if isinstance(source, dict) else source[0]
        if blank:  # the translation is "" whatever was generated: no token is part of it
            return {**source, "tokens": []}
        keep = model_outputs["attention_mask"][0].bool()  # (S,)
        source_ids = model_outputs["extended_input_ids"][0][keep]  # (S_i,)
        p_gen = model_outputs["p_gen"][0, j]  # (G,)
        shares = model_outputs["copy_shares"][0, j]  # (G,)
        attention = model_outputs["pointer_attentions"][0, j][:, keep]  # (G, S_i)
        generated = ids[ids.shape[0] - p_gen.shape[0] :].tolist()  # the tokens those decisions chose
        special = set(self.tokenizer.all_special_ids)
        tokens, previous = [], ""
        for t, token_id in enumerate(generated):
            if bool(p_gen[t].isnan()):
                break  # the sequence ended
            if token_id in special:
                continue
            # Each token's text is what it adds to the decoded prefix, so the texts join to the translation.
            text = self._processor.decode(
                generated[: t + 1], oov_words, clean_up_tokenization_spaces=clean_up, oov_spacing=spacing
            )
            common = len(previous) if text.startswith(previous) else _trim_to_common_prefix(tokens, previous, text)
            share = float(shares[t])
            span = None
            holds = (source_ids == token_id).nonzero().flatten()
            if share >= 0.5 and len(holds):
                best = int(holds[attention[t, holds].argmax()])
                span = source["source_tokens"][best]["span"]
            tokens.append(
                {
                    "text": text[common:],
                    "token_id": int(token_id),
                    "p_gen": float(p_gen[t]),
                    "copy_share": share,
                    "source_span": span,
                    "attention": [round(float(a), 6) for a in attention[t]],
                    "protected": False,
                }
            )
            previous = text
        translation = "".join(token["text"] for token in tokens)
        _mark_protected(tokens, translation, source["protected_spans"])
        return {**source, "tokens": tokens}

    # -- encoding and decoding -------------------------------------------------------------------------------------

    def _encode(self, source: str, **kwargs) -> tuple[dict[str, Any], tuple[str, ...], tuple[dict[str, Any], ...]]:
        """Encode one source; returns (1, S) tensors, its OOV table and the table's spacing records (both empty for a
        model that cannot copy).

        The ids are the tokenizer's own (`tokenizer([source])`), for a plain base too, so it translates as in v4.
        """
        encoding = self._processor([source], return_tensors="pt", **kwargs)
        if not self._copies:
            del encoding["extended_input_ids"]
            return encoding, (), ()
        return encoding, tuple(encoding["oov_words"][0]), tuple(encoding["oov_spacing"][0])

    def _decode(
        self, output_ids: torch.Tensor, oov_words: list[str], spacing: list[dict[str, Any]], clean_up: bool
    ) -> list[str]:
        """Decode (k, L) outputs of one input; its table (and its spacing records) serve all k."""
        if self._copies:
            return self._processor.batch_decode(
                output_ids,
                [oov_words],
                skip_special_tokens=True,
                clean_up_tokenization_spaces=clean_up,
                oov_spacing=[spacing],
            )
        # A plain base decodes exactly as v4's pipeline did.
        return self.tokenizer.batch_decode(output_ids, skip_special_tokens=True, clean_up_tokenization_spaces=clean_up)

    # -- helpers ---------------------------------------------------------------------------------------------------

    def _base_config(self):
        return getattr(self.model.config, "base_config", self.model.config)

    def _task_specific_params(self) -> tuple[str, dict[str, Any]]:
        """The task and the base config's `task_specific_params` entry for it, looked up as v4 did."""
        params = getattr(self._base_config(), "task_specific_params", None) or {}
        if self._base_task != "translation":
            return self.task, params.get(self.task) or {}
        if self.task != "translation":  # translation_xx_to_yy, then the generic entry
            return self.task, params.get(self.task) or params.get("translation") or {}
        if "translation" in params:
            return self.task, params["translation"]
        pairs = [key for key in params if key.startswith("translation_")]
        if pairs:
            # v4's pipeline() did the same: T5 lists translation_en_to_de, _en_to_fr, _en_to_ro.
            logger.warning(
                f'"translation" task was used, instead of "translation_XX_to_YY", defaulting to "{pairs[0]}".'
            )
            return pairs[0], params[pairs[0]]
        return self.task, {}

    def _length_defaults(self, generate_kwargs: dict[str, Any], input_ids: torch.Tensor) -> dict[str, Any]:
        """`max_new_tokens` for generate() when nothing sets a length, and v4's warning for a short `max_length`."""
        # As _prepare_generate_kwargs merges them: a call's generation_config replaces the init's parameters.
        merged = generate_kwargs
        if "generation_config" not in generate_kwargs:
            merged = {**self._generate_kwargs, **generate_kwargs}
        lengths = {key: value for key, value in self._get_set_generation_params(merged).items() if value is not None}
        if "max_new_tokens" not in lengths and "max_length" not in lengths:
            # generate() would stop at 20 tokens (its model-agnostic default), cutting most real outputs short.
            # Stopping at EOS, the output may be as long as the decoder's positions allow; one limit per model
            # (not per source) keeps batched outputs equal to one-by-one ones.
            return {"max_new_tokens": max_target_positions(self.model.config, self.tokenizer)}
        if self._base_task == "translation" and "max_new_tokens" not in lengths:
            input_length = input_ids.shape[1]
            if input_length > 0.9 * lengths["max_length"]:
                logger.warning(
                    f"Your input_length: {input_length} is bigger than 0.9 * max_length: {lengths['max_length']}. You "
                    "might consider increasing your max_length manually, e.g. translator('...', max_length=400)"
                )
        return {}

    def _language_token_id(self, language: str) -> int:
        if hasattr(self.tokenizer, "get_lang_id"):  # M2M100
            return self.tokenizer.get_lang_id(language)
        token_id = self.tokenizer.convert_tokens_to_ids(language)
        if token_id is None or token_id == self.tokenizer.unk_token_id:
            raise ValueError(
                f"tgt_lang={language!r} is not a token of this tokenizer; pass a language code it knows (mBART: "
                "tgt_lang='de_DE', M2M100: tgt_lang='de')."
            )
        return token_id


# -- inputs ---------------------------------------------------------------------------------------------------------


class _TextWithGlossary(str):
    """An input text that carries its own term base through the pipeline's batching (`glossary=[...]`)."""

    glossary: Any = None

    def __new__(cls, text: str, glossary: Any):
        self = super().__new__(cls, text)
        self.glossary = glossary
        return self


_PER_INPUT = object()  # preprocess's `glossary` when each text carries its own


def _check_text(text: Any, index: int | None = None) -> None:
    if isinstance(text, str):
        return
    where = "The input" if index is None else f"Input {index}"
    hint = (
        ' (for a dataset of rows, pass KeyDataset(dataset, "text") from transformers.pipelines.pt_utils)'
        if isinstance(text, collections.abc.Mapping)
        else ""
    )
    raise ValueError(f"{where} is {type(text).__name__}, not a string: every input must be text{hint}.")


def _checked_texts(items) -> types.GeneratorType:
    """A generator over `items` that names the index of a non-string item when it is reached."""
    for index, item in enumerate(items):
        _check_text(item, index)
        yield item


class _CheckedTexts(torch.utils.data.Dataset):
    """A map-style dataset (e.g. `KeyDataset`) whose items are checked to be strings when read."""

    def __init__(self, dataset: torch.utils.data.Dataset):
        self.dataset = dataset

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, index: int) -> str:
        text = self.dataset[index]
        _check_text(text, index)
        return text


def _trim_to_common_prefix(tokens: list[dict[str, Any]], previous: str, text: str) -> int:
    """A decoder that rewrote earlier text once more tokens came (rare: clean-up rules): cut the earlier tokens'
    texts back to what `previous` and `text` share, so the texts still join to the decoded output. Returns its length."""
    common = 0
    while common < min(len(previous), len(text)) and previous[common] == text[common]:
        common += 1
    excess = len(previous) - common
    for token in reversed(tokens):
        if excess <= 0:
            break
        cut = min(excess, len(token["text"]))
        token["text"] = token["text"][: len(token["text"]) - cut]
        excess -= cut
    return common


def _mark_protected(tokens: list[dict[str, Any]], translation: str, span_texts: list[str]) -> None:
    """Set `protected` on the tokens that overlap an occurrence of a protected span in the translation."""
    covered = [False] * len(translation)
    for span_text in span_texts:
        start = translation.find(span_text)
        while span_text and start >= 0:
            covered[start : start + len(span_text)] = [True] * len(span_text)
            start = translation.find(span_text, start + len(span_text))
    position = 0
    for token in tokens:
        end = position + len(token["text"])
        token["protected"] = any(covered[position:end])
        position = end


def _one_table_per_example(oov_words) -> list[tuple[Any, ...]]:
    """Unbatched, preprocess's table (a tuple; its spacing records too) arrives as is; batched, as a list of tables."""
    return [oov_words] if isinstance(oov_words, tuple) else list(oov_words)


def _languages(task: str) -> tuple[str, str] | None:
    parts = task.split("_")
    if len(parts) == 4 and parts[0] == "translation" and parts[2] == "to":
        return parts[1], parts[3]
    return None


# -- registration with transformers.pipeline (see the module docstring) --------------------------------------------


def register_pipeline_tasks() -> None:
    """Serve the three tasks from `transformers.pipeline` in this Python. Idempotent; `import hf_pgen` calls it."""
    from transformers import AutoModelForSeq2SeqLM
    from transformers import pipelines as transformers_pipelines

    registry = transformers_pipelines.PIPELINE_REGISTRY
    removed = transformers_pipelines.REMOVED_TASKS
    for task in _RETURN_NAMES:
        if task in registry.supported_tasks and task not in removed:
            impl = registry.supported_tasks[task]["impl"]
            if impl is not PointerGeneratorText2TextPipeline:
                continue  # a Transformers that serves the task itself keeps its own pipeline
        removed.pop(task, None)
        if registry.supported_tasks.get(task, {}).get("impl") is not PointerGeneratorText2TextPipeline:
            registry.register_pipeline(
                task, pipeline_class=PointerGeneratorText2TextPipeline, pt_model=AutoModelForSeq2SeqLM, type="text"
            )
    # register_pipeline remembers only the last task; Pipeline.save_pretrained writes these to custom_pipelines.
    PointerGeneratorText2TextPipeline._registered_impl = {
        task: registry.supported_tasks[task]
        for task in _RETURN_NAMES
        if registry.supported_tasks.get(task, {}).get("impl") is PointerGeneratorText2TextPipeline
    }
    if not getattr(registry.check_task, "_resolves_translation_pairs", False):
        registry.check_task = _resolving_translation_pairs(registry, registry.check_task)


def _resolving_translation_pairs(registry, check_task):
    """`check_task` that also resolves "translation_XX_to_YY" to the translation pipeline, as v4's registry did."""

    def check_task_with_translation_pairs(task: str):
        try:
            return check_task(task)
        except KeyError:
            languages = _languages(task)
            translation = registry.supported_tasks.get("translation")
            if languages is None or translation is None or translation["impl"] is not PointerGeneratorText2TextPipeline:
                raise
            return "translation", translation, languages

    check_task_with_translation_pairs._resolves_translation_pairs = True
    return check_task_with_translation_pairs


__all__ = ["PointerGeneratorText2TextPipeline"]
