"""`Seq2SeqTrainer` for pointer-generators: evaluation that keeps copied words, and label smoothing that works.

The stock recipe loses copies twice over:

- `compute_metrics` decodes with `tokenizer.batch_decode`, which silently drops every id >= `len(tokenizer)`, i.e.
  every copied word; decoding a copy needs the example's OOV table (`oov_words` from the processor /
  `encode_with_oovs`), and the Trainer hands `compute_metrics` arrays only, in sampler order (length-grouped,
  sharded over processes, padded with duplicates under DDP).
- `label_smoothing_factor` makes the Trainer compute the loss from the logits with its `LabelSmoother`, which
  averages `-log p` over all `V + N` columns: a row lacks the other rows' OOV slots (p = 0 there), so the loss is inf.

`PointerGeneratorSeq2SeqTrainer` fixes both: every evaluation / prediction example carries its index through the
data loader and the cross-process gather, predictions come back in dataset order (duplicates dropped), and
`compute_metrics` receives a `PointerGeneratorEvalPrediction` whose `oov_words` (and any requested text columns)
are aligned with its rows; `label_smoothing_factor` goes to the model's own support-aware loss
(`model.config.label_smoothing`, set for the duration of each loss computation). With a plain base (no copy head)
it behaves like the stock trainer.

>>> trainer = PointerGeneratorSeq2SeqTrainer(
...     model=model, args=Seq2SeqTrainingArguments("out", predict_with_generate=True, label_smoothing_factor=0.1),
...     train_dataset=train, eval_dataset=validation, processing_class=tokenizer,
...     compute_metrics=build_compute_metrics(tokenizer, vocab_size=model.config.vocab_size,
...                                           source_column="en", reference_column="de"),
... )
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from transformers import Seq2SeqTrainer
from transformers.trainer_utils import EvalLoopOutput, EvalPrediction, has_length
from transformers.utils import logging

from .configuration_pointer_generator import is_pointer_generator, without_peft
from .logits_process_pointer_generator import protection_processors
from .processing_pointer_generator import PointerGeneratorProcessor
from .protection_pointer_generator import PROTECTED_SPANS_KEY, check_protect
from .tokenization_decode_pointer_generator import batch_decode_with_oovs

logger = logging.get_logger(__name__)

__all__ = ["PointerGeneratorSeq2SeqTrainer", "PointerGeneratorEvalPrediction", "build_compute_metrics"]

# The column each evaluation example's position in its dataset travels in (data loader -> prediction_step -> gather).
EXAMPLE_INDEX = "pg_example_index"


class PointerGeneratorEvalPrediction(EvalPrediction):
    """An `EvalPrediction` (unpacks as `predictions, label_ids[, inputs, losses]`) with per-row example data. The
    Trainer builds it for `compute_metrics`; each argument is kept as the attribute of the same name.

    Args:
        predictions, label_ids, inputs, losses:
            As for `EvalPrediction`, rows in the evaluated dataset's order.
        oov_words: `list[list[str]]`, one OOV table per row of `predictions` (None when the dataset has no
            `oov_words` column): decode with `hf_pgen.batch_decode_with_oovs(tokenizer, ids, eval_pred.oov_words,
            vocab_size=model.config.vocab_size, oov_spacing=eval_pred.oov_spacing)` or
            `processor.batch_decode(ids, eval_pred.oov_words, oov_spacing=eval_pred.oov_spacing)`.
        oov_spacing: `list[list[dict]]`, the rows' spacing records (the dataset's `oov_spacing` column, None when it
            has none), which space some copies as the source did (`v2.3`, not `v2. 3`, with a word-level vocabulary).
        columns: `{name: list}` of the other requested dataset columns (e.g. raw source / reference texts), per row.
        example_indices: `(rows,)` position of each row in the evaluated dataset.
    """

    def __init__(
        self,
        predictions,
        label_ids,
        inputs=None,
        losses=None,
        *,
        oov_words: list[list[str]] | None = None,
        columns: dict[str, list] | None = None,
        example_indices: np.ndarray | None = None,
        oov_spacing: list[list[dict]] | None = None,
    ):
        super().__init__(predictions=predictions, label_ids=label_ids, inputs=inputs, losses=losses)
        self.oov_words = oov_words
        self.oov_spacing = oov_spacing
        self.columns = columns or {}
        self.example_indices = example_indices


class PointerGeneratorSeq2SeqTrainer(Seq2SeqTrainer):
    """`Seq2SeqTrainer` that evaluates pointer-generators with their copies and routes label smoothing to the model.

    Takes `Seq2SeqTrainer`'s arguments, plus:

    Args:
        oov_words_column: the evaluation dataset column holding each example's OOV table (what
            `PointerGeneratorProcessor` / `encode_with_oovs` return as `oov_words`).
        oov_spacing_column: the column holding each example's spacing records (`oov_spacing` from the same call);
            without it copies are spaced by the output's context alone.
        example_columns: more dataset columns to hand `compute_metrics` row-aligned in `eval_pred.columns` (raw
            source and reference texts, say). A `compute_metrics` built by `build_compute_metrics` asks for its own.
        protect: protected spans for generated predictions (`predict_with_generate`), as in
            `PointerGeneratorProcessor(..., protect=...)`: `"placeholders"`, `"oov"`, a regular expression or literal
            strings. Each example's source text (the dataset column `source_column`, after `source_prefix`, truncated
            to `max_source_length` tokens as the inputs were) is encoded with the protection and its spans go to
            `generate()`; a plain base gets the same guarantee through the logits processor.
        glossary: a term base for generated predictions, as in `PointerGeneratorProcessor(..., glossary=...)` (a dict,
            a `hf_pgen.Glossary` or a TSV/CSV path; one for every example): with `glossary_mode="guarantee"` (the
            default) each example's applied target terms go to `generate()` like protected spans. A model with a
            `glossary_annotation` must get evaluation inputs encoded with the annotation (the processor with the
            same `glossary`, as `run_translation --glossary` does): every row is checked against its re-encoding.
        glossary_column: instead of `glossary`, a dataset column holding each example's own term base (a list of
            `[source term, target term]` pairs, or a dict), as WMT gives terms per sentence. A dataset without the
            column (a validation set, say) is decoded without terms.
        glossary_match: how source terms match (`"inflected"`, the default for dicts, files and the column, or
            `"exact"`; see `hf_pgen.Glossary`).
        word_dropout: chance that a source token of a training batch becomes the unknown token
            (`hf_pgen.word_dropout.drop_words`: a copy model's extended ids and labels follow). Evaluation and
            prediction batches are never touched.
        target_word_dropout: the same for the decoder's input tokens (its history); the labels stay.
        source_column, source_prefix, max_source_length: where the source texts that `protect` and `glossary`
            re-encode come from, and how the inputs were made from them.
        model, args, data_collator, ...: as for `Seq2SeqTrainer` (`data_collator` defaults to the copy-aware one).

    Raises:
        ValueError: at construction, for a bad `protect` (or `"oov"` with a plain base), an unknown `glossary_mode`,
            `glossary` with `glossary_column`, or `label_smoothing_factor > 0` for a model that cannot smooth its own
            loss; at evaluation, when the source texts that `protect` or `glossary` need are missing or do not encode
            to the batch's inputs.
        TypeError: for a list of glossaries (the Trainer takes one term base).
        KeyError: when `compute_metrics` asks for a dataset column the evaluation dataset lacks.

    Differences from the stock trainer, for a model with a copy head (`hf_pgen.is_pointer_generator(model)`):

    - `args.label_smoothing_factor` goes to the model's own loss (as `model.config.label_smoothing` while the loss is
      computed; the saved config keeps its value), which smooths over each row's own classes (its vocabulary plus
      its own OOV slots); the stock `LabelSmoother` is not used. With `label_smoothing_factor=0` the model's
      `config.label_smoothing` applies as it is.
    - Predictions without `predict_with_generate` are the log-probabilities only, (rows, T, V + P) with every batch
      padded to the same width (-inf), so they concatenate.
    - `data_collator` defaults to `DataCollatorForPointerGenerator`.

    For any model: evaluation/prediction examples carry their index, so `compute_metrics` gets a
    `PointerGeneratorEvalPrediction` with `oov_words` and `columns` aligned with its rows under any sampler and
    under DDP, and `predict()` returns rows in dataset order without the duplicates that pad the last distributed
    batch. When copied ids reach `tokenizer.decode` / `batch_decode` inside `compute_metrics`, a warning says so.
    """

    def __init__(
        self,
        model=None,
        args=None,
        data_collator=None,
        *more,
        oov_words_column: str = "oov_words",
        oov_spacing_column: str = "oov_spacing",
        example_columns: Sequence[str] = (),
        protect: Any = None,
        glossary: Any = None,
        glossary_mode: str = "guarantee",
        glossary_column: str | None = None,
        glossary_match: str | None = None,
        source_column: str = "source",
        source_prefix: str = "",
        max_source_length: int | None = None,
        word_dropout: float = 0.0,
        target_word_dropout: float = 0.0,
        **kwargs,
    ):
        processing_class = kwargs.get("processing_class", more[2] if len(more) > 2 else None)
        if data_collator is None and is_pointer_generator(model) and processing_class is not None:
            from .data_collator import DataCollatorForPointerGenerator

            tokenizer = getattr(processing_class, "tokenizer", processing_class)
            data_collator = DataCollatorForPointerGenerator(tokenizer, model=model)
        super().__init__(model, args, data_collator, *more, **kwargs)
        self.oov_words_column = oov_words_column
        self.oov_spacing_column = oov_spacing_column
        self.example_columns = tuple(example_columns)
        if protect is not None:
            check_protect(protect)  # a bad pattern fails before any training
            if protect == "oov" and not is_pointer_generator(self.model):
                raise ValueError('protect="oov" needs a copying model: out-of-vocabulary words can only be copied.')
        self.protect = protect
        if glossary is not None or glossary_column is not None:
            from .glossary import GLOSSARY_MODES, glossaries_for

            if glossary_mode not in GLOSSARY_MODES:
                raise ValueError(f"glossary_mode={glossary_mode!r} is not one of {GLOSSARY_MODES}.")
        if glossary is not None:
            # a file is read (and checked) once, before any training
            glossary = glossaries_for(glossary, None, match=glossary_match)
            if isinstance(glossary, list):
                raise TypeError(
                    "The Trainer's glossary is one term base for every example: a dict, a Glossary or a TSV/CSV path."
                )
        if glossary is not None and glossary_column is not None:
            raise ValueError(
                "Pass glossary (one term base for every example) or glossary_column (one per example), not both."
            )
        self.glossary, self.glossary_mode, self.glossary_column = glossary, glossary_mode, glossary_column
        self.glossary_match = glossary_match
        self._protection = dict(
            source_column=source_column, source_prefix=source_prefix, max_source_length=max_source_length
        )
        self._examples: _ExampleIndexDataset | None = None  # the dataset being evaluated (for protected spans)
        for name, value in (("word_dropout", word_dropout), ("target_word_dropout", target_word_dropout)):
            if not 0.0 <= value < 1.0:
                raise ValueError(f"{name} must lie in [0, 1), got {value}.")
        if (word_dropout or target_word_dropout) and processing_class is None:
            raise ValueError("word_dropout needs processing_class (the tokenizer): it names the unknown token.")
        self.word_dropout, self.target_word_dropout = float(word_dropout), float(target_word_dropout)
        self.label_smoothing = 0.0
        if self.label_smoother is not None and is_pointer_generator(self.model):
            _check_accepts_label_smoothing(self.model)
            # The model smooths over each row's own classes; the stock smoother would average over all V + N columns.
            self.label_smoothing = float(self.args.label_smoothing_factor)
            self.label_smoother = None
        self.data_collator = _ExampleIndexCollator(self.data_collator)
        self._gathered_indices: list[np.ndarray] = []
        self._evaluation_rows: np.ndarray | None = None

    # -- loss -----------------------------------------------------------------------------------------------------

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        if model.training and (self.word_dropout or self.target_word_dropout):
            inputs = self._drop_words(model, inputs)
        with self._model_label_smoothing(model):
            return super().compute_loss(
                model, inputs, return_outputs=return_outputs, num_items_in_batch=num_items_in_batch
            )

    def _drop_words(self, model, inputs: dict) -> dict:
        from .word_dropout import drop_words

        tokenizer = getattr(self.processing_class, "tokenizer", self.processing_class)
        if tokenizer.unk_token_id is None:
            raise ValueError("word_dropout replaces tokens by the unknown token, but the tokenizer has none.")
        return drop_words(
            inputs,
            self.word_dropout,
            unk_token_id=tokenizer.unk_token_id,
            vocab_size=without_peft(self.accelerator.unwrap_model(model)).config.vocab_size,
            special_ids=tokenizer.all_special_ids,
            target_probability=self.target_word_dropout,
        )

    @contextlib.contextmanager
    def _model_label_smoothing(self, model):
        """`config.label_smoothing = args.label_smoothing_factor` while the model computes a loss.

        Not a forward argument: the Trainer would take any forward argument whose name holds "label" for a label
        column. Set per call (not once) so the saved config keeps the user's value; the generate path of
        `Seq2SeqTrainer.prediction_step` computes its loss with `model(**inputs)`, hence the same context there.
        """
        if not self.label_smoothing:
            yield
            return
        config = without_peft(self.accelerator.unwrap_model(model)).config
        previous = getattr(config, "label_smoothing", 0.0)
        config.label_smoothing = self.label_smoothing
        try:
            yield
        finally:
            config.label_smoothing = previous

    # -- data: every evaluation example carries its index ---------------------------------------------------------

    def _set_signature_columns_if_needed(self):
        super()._set_signature_columns_if_needed()
        if EXAMPLE_INDEX not in self._signature_columns:
            self._signature_columns.append(EXAMPLE_INDEX)  # kept by remove_unused_columns, popped before forward

    def get_eval_dataloader(self, eval_dataset=None):
        if isinstance(eval_dataset, str):
            eval_dataset = self.eval_dataset[eval_dataset]
        elif eval_dataset is None and self.eval_dataset is not None and not isinstance(self.eval_dataset, dict):
            eval_dataset = self.eval_dataset
        return super().get_eval_dataloader(_ExampleIndexDataset.wrap(eval_dataset))

    def get_test_dataloader(self, test_dataset):
        return super().get_test_dataloader(_ExampleIndexDataset.wrap(test_dataset))

    def _get_eval_sampler(self, eval_dataset):
        # Any order is fine now (rows are matched by index): let the stock sampler see the dataset itself, so that a
        # length-grouped sampler reads a `datasets` length column instead of iterating the examples.
        inner = eval_dataset.dataset if isinstance(eval_dataset, _ExampleIndexDataset) else eval_dataset
        return super()._get_eval_sampler(inner)

    # -- evaluation -----------------------------------------------------------------------------------------------

    def oov_tables(self, dataset) -> tuple[list[list[str]] | None, list[list[dict]] | None]:
        """The OOV tables (and spacing records) that decode the last evaluation's or prediction's generated ids of
        `dataset`, in its order: its `oov_words` column, with the slots a glossary gave target words only copies spell
        (see `glossary`) added. `(None, None)` without the column."""
        return self._tables(_ExampleIndexDataset(dataset), range(len(dataset)))

    def _tables(self, examples, indices) -> tuple[list[list[str]] | None, list[list[dict]] | None]:
        tables = examples.column(self.oov_words_column)
        if tables is None:
            return None, None
        records = examples.column(self.oov_spacing_column)
        extra = getattr(self, "_extra_oov", {})
        oov_words = [list(tables[i] or ()) + list(extra.get(i, ((), ()))[0]) for i in indices]
        if records is None:
            return oov_words, None
        return oov_words, [list(records[i] or ()) + list(extra.get(i, ((), ()))[1]) for i in indices]

    def prediction_step(self, model, inputs, prediction_loss_only, ignore_keys=None, **gen_kwargs):
        indices = inputs.pop(EXAMPLE_INDEX, None)  # (B,)
        copy_head = is_pointer_generator(self.model)
        guarded = self.protect is not None or self.glossary is not None or self.glossary_column is not None
        if guarded and self.args.predict_with_generate and not prediction_loss_only:
            # The stock step only reads its own generation settings when it gets no keyword at all: merge them.
            gen_kwargs = {**getattr(self, "_gen_kwargs", {}), **gen_kwargs}
            gen_kwargs.update(self._protection_kwargs(inputs, indices, gen_kwargs))
        if copy_head and not self.args.predict_with_generate and ignore_keys is None:
            # Keep the log-probabilities only: the encoder states and the scalar coverage loss do not concatenate.
            ignore_keys = [
                *getattr(self.model.config, "keys_to_ignore_at_inference", ["cache"]),
                "cache",
                "past_key_values",
                "encoder_last_hidden_state",
                "coverage_loss",
            ]
        with self._model_label_smoothing(model):
            loss, predictions, labels = super().prediction_step(
                model, inputs, prediction_loss_only, ignore_keys=ignore_keys, **gen_kwargs
            )
        if predictions is not None and indices is not None:
            # Gathered like the predictions (same step, same function), so row r of both comes from one example.
            gathered = self.gather_function(indices.to(self.args.device))
            self._gathered_indices.append(gathered.cpu().numpy())
        if copy_head and predictions is not None and not self.args.predict_with_generate:
            # Without labels the model returns V + N wide logits; pad them to the width it pads labelled batches to.
            predictions = _pad_to_evaluation_width(without_peft(self.model), predictions)
        return loss, predictions, labels

    def evaluation_loop(
        self, dataloader, description, prediction_loss_only=None, ignore_keys=None, metric_key_prefix="eval"
    ) -> EvalLoopOutput:
        examples = getattr(dataloader, "dataset", None)
        examples = examples if isinstance(examples, _ExampleIndexDataset) else None
        self._gathered_indices, self._evaluation_rows, self._examples = [], None, examples
        self._extra_oov: dict[int, tuple[list[str], list[dict]]] = {}  # see oov_tables
        compute_metrics = self.compute_metrics
        if compute_metrics is not None and examples is not None:
            self.compute_metrics = functools.partial(self._compute_metrics_with_examples, compute_metrics, examples)
        try:
            output = super().evaluation_loop(
                dataloader,
                description,
                prediction_loss_only=prediction_loss_only,
                ignore_keys=ignore_keys,
                metric_key_prefix=metric_key_prefix,
            )
        finally:
            self.compute_metrics = compute_metrics
        if examples is None or not self._gathered_indices or not self.args.eval_do_concat_batches:
            return output
        rows = self._rows_in_dataset_order(output.predictions)
        if rows is None:
            return output
        return output._replace(predictions=_take(output.predictions, rows), label_ids=_take(output.label_ids, rows))

    def _protection_kwargs(self, inputs: dict, indices: torch.Tensor | None, gen_kwargs: dict) -> dict:
        """generate() keywords that protect the spans of this batch's sources (see `protect`)."""
        column = self._protection["source_column"]
        texts = self._examples.column(column) if self._examples is not None and indices is not None else None
        if texts is None:
            raise ValueError(
                f"{self._guard_name()} needs each evaluation example's source text: keep the column {column!r} "
                "in the evaluation dataset (or name yours with source_column=...)."
            )
        glossary = self.glossary
        if self.glossary_column is not None:
            pairs = self._examples.column(self.glossary_column) if self._examples is not None else None
            if pairs is None and self.protect is None:
                return {}  # this dataset has no terms: decoded as it is
            glossary = (
                None
                if pairs is None
                else [
                    dict(pairs[i]) if isinstance(pairs[i], dict) else {s: t for s, t in pairs[i]}
                    for i in indices.tolist()
                ]
            )
        model = without_peft(self.model)
        tokenizer = getattr(self.processing_class, "tokenizer", self.processing_class)
        processor = self.__dict__.get("_protection_processor")
        if processor is None:  # one per trainer: it caches what it learns about the vocabulary
            processor = self._protection_processor = PointerGeneratorProcessor(
                tokenizer,
                model.config.vocab_size,
                glossary_annotation=getattr(model.config, "glossary_annotation", None),
                copies=is_pointer_generator(model),
            )
        # The prefix is read by the model, never protected: only the column's own text is searched.
        batch = processor(
            [texts[i] for i in indices.tolist()],
            max_length=self._protection["max_source_length"],
            truncation=True,
            protect=self.protect,
            source_prefix=self._protection["source_prefix"],
            glossary=glossary,
            glossary_mode=self.glossary_mode,
            glossary_match=self.glossary_match,
        )
        for row, (ids, mask) in enumerate(zip(inputs["input_ids"], inputs["attention_mask"])):
            if batch["input_ids"][row] != ids[mask.bool()].tolist():  # every row: any may be the one cut shorter
                raise ValueError(
                    f"{self._guard_name()}: the text of column {column!r} for example {int(indices[row])} does not "
                    "encode to the "
                    f"batch's input_ids (with source_prefix={self._protection['source_prefix']!r} and "
                    f"max_source_length={self._protection['max_source_length']}): pass the prefix and length the "
                    "dataset was encoded with (and, for a model with a glossary_annotation, encode it with the "
                    "same glossary)."
                )
        spans = batch.get(PROTECTED_SPANS_KEY)
        if spans is None:  # a glossary hint: the annotation is in the inputs already, nothing is forced
            return {}
        if is_pointer_generator(model):
            # Glossary target words only copies spell got slots past the source's own: decoding needs them too.
            tables = self._examples.column(self.oov_words_column) if self._examples is not None else None
            for row, index in enumerate(indices.tolist()):
                known = len(tables[index] or ()) if tables is not None else len(batch["oov_words"][row])
                if len(batch["oov_words"][row]) > known:
                    self._extra_oov[index] = (batch["oov_words"][row][known:], batch["oov_spacing"][row][known:])
            return {PROTECTED_SPANS_KEY: spans}  # the model installs the logits processor
        return {
            "logits_processor": protection_processors(
                spans,
                model.generation_config,
                gen_kwargs,
                width=model.config.vocab_size,
                batch_size=inputs["input_ids"].shape[0],
            )
        }

    def _guard_name(self) -> str:
        return f"protect={self.protect!r}" if self.protect is not None else "glossary"

    def _rows_in_dataset_order(self, predictions) -> np.ndarray | None:
        """Rows that put the gathered predictions in dataset order, each example once (DDP pads with duplicates)."""
        if self._evaluation_rows is not None:
            return self._evaluation_rows
        indices = np.concatenate(self._gathered_indices)
        if _num_rows(predictions) != len(indices):
            return None
        _, first = np.unique(indices, return_index=True)  # sorted by example index
        self._evaluation_rows = first
        return first

    def _compute_metrics_with_examples(
        self, compute_metrics: Callable, examples: "_ExampleIndexDataset", eval_pred: EvalPrediction, **kwargs
    ):
        predictions, label_ids = eval_pred.predictions, eval_pred.label_ids
        inputs, losses = eval_pred.inputs, eval_pred.losses
        if self.args.batch_eval_metrics:  # called once per batch: the rows are this step's
            indices = self._gathered_indices[-1]
        elif self.args.eval_do_concat_batches and (rows := self._rows_in_dataset_order(predictions)) is not None:
            gathered = np.concatenate(self._gathered_indices)
            indices = gathered[rows]
            predictions, label_ids, inputs = _take(predictions, rows), _take(label_ids, rows), _take(inputs, rows)
            # Losses are one per row only when every batch was full; otherwise they cannot be matched to rows.
            losses = _take(losses, rows) if losses is not None and _num_rows(losses) == len(gathered) else None
        else:
            indices = np.concatenate(self._gathered_indices)
        indices = [int(i) for i in indices]
        oov_words, oov_spacing = self._tables(examples, indices)
        wanted = [*self.example_columns, *getattr(compute_metrics, "example_columns", ())]
        columns = {}
        for name in dict.fromkeys(wanted):
            values = examples.column(name)
            if values is None:
                raise KeyError(
                    f"compute_metrics asks for the dataset column {name!r}, but the evaluation dataset has "
                    f"no such column. Keep it when mapping the dataset (do not remove_columns it)."
                )
            columns[name] = [values[i] for i in indices]
        vocab_size = _model_vocab_size(self.model)
        if oov_words is None and vocab_size is not None and _count_copies(predictions, vocab_size):
            logger.warning(
                "Predictions hold copied words (ids >= vocab_size=%d) but the evaluation dataset has no %r column, so "
                "no decoder can turn them back into text. Keep the processor's / encode_with_oovs' `oov_words` in the "
                "evaluation dataset.",
                vocab_size,
                self.oov_words_column,
            )
        eval_pred = PointerGeneratorEvalPrediction(
            predictions,
            label_ids,
            inputs,
            losses,
            oov_words=oov_words,
            columns=columns,
            example_indices=np.asarray(indices),
            oov_spacing=oov_spacing,
        )
        tokenizer = getattr(self.processing_class, "tokenizer", self.processing_class)
        with _warn_on_lossy_decode(tokenizer, vocab_size if is_pointer_generator(self.model) else None):
            return compute_metrics(eval_pred, **kwargs)

    # -- model card -----------------------------------------------------------------------------------------------

    def create_model_card(
        self,
        language=None,
        license=None,
        tags=None,
        model_name=None,
        finetuned_from=None,
        tasks=None,
        dataset_tags=None,
        dataset=None,
        dataset_args=None,
        *,
        results=None,
        dataset_name=None,
        repo_id=None,
        example=None,
        max_new_tokens=None,
        training_details=None,
    ):
        """Write README.md with `hf_pgen.modelcard.render_model_card` (task, tags, usage snippets that run, evaluation
        results, copy settings) for a pointer-generator, and for any model given `training_details` (the no-copy
        baseline of a comparison); a plain base otherwise gets the stock card.

        The stock arguments come first (`push_to_hub(**kwargs)` passes them on, and these too). `results` defaults to
        the latest evaluation in the log history, `repo_id` (where the usage snippets load the model from) to the
        Hub repository, `max_new_tokens` to `args.generation_max_length`; `dataset_name`, `example` and
        `training_details` (Markdown on how the model was made) go to `render_model_card` as they are."""
        if not self.is_world_process_zero():
            return
        if not is_pointer_generator(self.model) and training_details is None:
            return super().create_model_card(
                language=language,
                license=license,
                tags=tags,
                model_name=model_name,
                finetuned_from=finetuned_from,
                tasks=tasks,
                dataset_tags=dataset_tags,
                dataset=dataset,
                dataset_args=dataset_args,
            )
        from pathlib import Path

        from .modelcard import render_model_card

        if results is None:
            results = {}
            for entry in self.state.log_history:  # the latest evaluation
                if any(key.startswith("eval_") for key in entry):
                    results = {k: v for k, v in entry.items() if k.startswith("eval_")}
        task = tasks[0] if isinstance(tasks, (list, tuple)) and tasks else tasks
        card = render_model_card(
            without_peft(self.model),
            base_model=finetuned_from,
            tokenizer=self.processing_class,
            results=results or None,
            task=task,
            language=language,
            license=license,
            dataset=dataset or dataset_tags,
            dataset_name=dataset_name,
            repo_id=repo_id or self.hub_model_id,
            model_name=model_name,
            tags=[tags] if isinstance(tags, str) else tags,
            example=example,
            max_new_tokens=max_new_tokens or self.args.generation_max_length,
            training_details=training_details,
        )
        Path(self.args.output_dir).mkdir(parents=True, exist_ok=True)
        Path(self.args.output_dir, "README.md").write_text(str(card), encoding="utf-8")


def build_compute_metrics(
    processor_or_tokenizer,
    *,
    vocab_size: int | None = None,
    source_column: str | None = None,
    reference_column: str | None = None,
    metrics: Callable[..., dict[str, float]] | None = None,
) -> Callable[[EvalPrediction], dict[str, float]]:
    """A `compute_metrics` for `PointerGeneratorSeq2SeqTrainer` that decodes predictions with their copies.

    Args:
        processor_or_tokenizer: a `PointerGeneratorProcessor` (its tokenizer and vocab_size are used) or a fast
            tokenizer together with `vocab_size`.
        vocab_size: the model's output width (`model.config.vocab_size`); extended (copied) ids start there.
        source_column: dataset column with the raw source texts; needed for placeholder preservation.
        reference_column: dataset column with the raw reference texts; default: the labels, decoded with copies.
        metrics: `metrics(sources, predictions, references, oov_words) -> dict`, where `sources` is None without
            `source_column` and `oov_words` None when the dataset has no `oov_words` column; default
            `hf_pgen.metrics.translation_metrics` (sacreBLEU, chrF, placeholder preservation, OOV copy rate).

    Returns:
        A callable of one `EvalPrediction` giving `{name: value}` rounded to 4 digits (nan values are left out), plus
        `gen_len`, the mean number of non-pad predicted tokens. Predictions may be generated ids (B, L) or
        log-probabilities (B, T, V + P), which are reduced with argmax.

    Raises:
        ValueError: for a tokenizer without `vocab_size` (the model's width cannot be guessed from a tokenizer).
    """
    tokenizer = getattr(processor_or_tokenizer, "tokenizer", processor_or_tokenizer)
    if vocab_size is None and tokenizer is not processor_or_tokenizer:  # a processor knows the model's width
        vocab_size = getattr(processor_or_tokenizer, "vocab_size", None)
    if vocab_size is None:  # not tokenizer.vocab_size: the model's output width may be larger (T5: 32128)
        raise ValueError(
            "build_compute_metrics needs the model's vocab_size with a tokenizer: pass "
            "vocab_size=model.config.vocab_size, or pass a PointerGeneratorProcessor."
        )

    def compute_metrics(eval_pred: EvalPrediction) -> dict[str, float]:
        from .metrics import translation_metrics

        predictions = eval_pred.predictions[0] if isinstance(eval_pred.predictions, tuple) else eval_pred.predictions
        predictions = np.asarray(predictions)
        if predictions.ndim == 3:  # log-probabilities (predict_with_generate off)
            predictions = predictions.argmax(-1)
        oov_words = getattr(eval_pred, "oov_words", None)
        spacing = getattr(eval_pred, "oov_spacing", None) if oov_words is not None else None
        per_row = oov_words if oov_words is not None else [None] * len(predictions)
        columns = getattr(eval_pred, "columns", {})
        decoded = [
            text.strip()
            for text in batch_decode_with_oovs(
                tokenizer, predictions, per_row, vocab_size=vocab_size, oov_spacing=spacing
            )
        ]
        if reference_column is not None:
            references = [str(text).strip() for text in columns[reference_column]]
        else:
            references = [
                text.strip()
                for text in batch_decode_with_oovs(
                    tokenizer,
                    np.asarray(eval_pred.label_ids),
                    per_row,
                    vocab_size=vocab_size,
                    oov_spacing=spacing,
                )
            ]
        sources = [str(text) for text in columns[source_column]] if source_column is not None else None
        score = metrics if metrics is not None else translation_metrics
        result = score(sources, decoded, references, oov_words)
        pad = tokenizer.pad_token_id
        kept = (predictions >= 0) & (predictions != pad) if pad is not None else predictions >= 0
        result["gen_len"] = float(kept.sum(-1).mean()) if len(predictions) else 0.0
        return {k: round(float(v), 4) for k, v in result.items() if not (isinstance(v, float) and math.isnan(v))}

    compute_metrics.example_columns = tuple(c for c in (source_column, reference_column) if c is not None)
    return compute_metrics


# ---------------------------------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------------------------------


class _ExampleIndexDataset(torch.utils.data.Dataset):
    """A map-style dataset whose examples also carry their position (`EXAMPLE_INDEX`); columns read back by index."""

    def __init__(self, dataset):
        self.dataset = dataset
        self._columns: dict[str, list | None] = {}

    @classmethod
    def wrap(cls, dataset):
        if (
            dataset is None
            or isinstance(dataset, (cls, dict, torch.utils.data.IterableDataset))
            or not has_length(dataset)
            or len(dataset) == 0
            or not isinstance(dataset[0], Mapping)
        ):
            return dataset
        return cls(dataset)

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, index: int) -> dict:
        return {**self.dataset[index], EXAMPLE_INDEX: int(index)}

    def __getitems__(self, indices: list[int]) -> list[dict]:
        getitems = getattr(self.dataset, "__getitems__", None)
        examples = getitems(indices) if getitems is not None else [self.dataset[i] for i in indices]
        return [{**example, EXAMPLE_INDEX: int(i)} for example, i in zip(examples, indices)]

    def column(self, name: str) -> list | None:
        """The dataset's column `name` as a list (None if it has none), read once."""
        if name not in self._columns:
            names = getattr(self.dataset, "column_names", None)
            if names is not None:  # a `datasets.Dataset`: read the column, not the rows
                values = list(self.dataset[name]) if name in names else None
            elif name in self.dataset[0]:
                values = [self.dataset[i][name] for i in range(len(self.dataset))]
            else:
                values = None
            self._columns[name] = values
        return self._columns[name]


class _ExampleIndexCollator:
    """Collates with the wrapped collator, then puts the examples' indices back as a (B,) tensor."""

    def __init__(self, data_collator: Callable):
        self.data_collator = data_collator

    def __call__(self, features, *args, **kwargs):
        if not features or not isinstance(features[0], Mapping) or EXAMPLE_INDEX not in features[0]:
            return self.data_collator(features, *args, **kwargs)
        indices = torch.tensor([feature[EXAMPLE_INDEX] for feature in features], dtype=torch.long)
        features = [{k: v for k, v in feature.items() if k != EXAMPLE_INDEX} for feature in features]
        batch = self.data_collator(features, *args, **kwargs)
        batch[EXAMPLE_INDEX] = indices
        return batch

    def __getattr__(self, name: str):
        if name == "data_collator":  # not set yet (unpickling in a data loader worker)
            raise AttributeError(name)
        return getattr(self.data_collator, name)


def _check_accepts_label_smoothing(model) -> None:
    if not hasattr(without_peft(model).config, "label_smoothing"):
        raise ValueError(
            f"label_smoothing_factor > 0, but this {type(without_peft(model)).__name__} has no support-aware label "
            "smoothing of its own (its config has no `label_smoothing`), and the stock LabelSmoother gives an "
            "infinite loss on pointer-generator logits. Upgrade hf_pgen (and re-save the model), or set "
            "label_smoothing_factor=0."
        )


def _model_vocab_size(model) -> int | None:
    return getattr(getattr(without_peft(model), "config", None), "vocab_size", None)


def _pad_to_evaluation_width(model, logits):
    if isinstance(logits, (tuple, list)):
        return type(logits)(_pad_to_evaluation_width(model, x) if i == 0 else x for i, x in enumerate(logits))
    if not torch.is_tensor(logits) or logits.dim() != 3:
        return logits
    return model._pad_to_evaluation_width(logits)


def _num_rows(array) -> int:
    if isinstance(array, (tuple, list)):
        return _num_rows(array[0]) if array else 0
    return len(array)


def _take(array, rows: np.ndarray):
    if array is None:
        return None
    if isinstance(array, (tuple, list)):
        return type(array)(_take(x, rows) for x in array)
    return array[rows]


def _count_copies(ids, vocab_size: int) -> int:
    """How many ids >= vocab_size `ids` holds (a tensor, an array or nested lists, possibly ragged)."""
    if isinstance(ids, tuple) and ids and not isinstance(ids[0], (int, np.integer)):
        ids = ids[0]
    if torch.is_tensor(ids):
        return int((ids >= vocab_size).sum())
    try:
        array = np.asarray(ids)
    except ValueError:  # ragged
        return sum(_count_copies(row, vocab_size) for row in ids)
    if array.dtype == object:
        return sum(_count_copies(row, vocab_size) for row in ids)
    if not np.issubdtype(array.dtype, np.integer):
        return 0  # log-probabilities, not ids
    return int((array >= vocab_size).sum())


@contextlib.contextmanager
def _warn_on_lossy_decode(tokenizer, vocab_size: int | None):
    """While compute_metrics runs: warn (once) when `tokenizer.decode` / `batch_decode` get copied ids, which they
    drop without a word."""
    if tokenizer is None or vocab_size is None or not hasattr(tokenizer, "batch_decode"):
        yield
        return
    warned = False

    def guard(method):
        @functools.wraps(method)
        def decode(token_ids, *args, **kwargs):
            nonlocal warned
            if not warned and (copies := _count_copies(token_ids, vocab_size)):
                warned = True
                logger.warning(
                    "compute_metrics passed %d copied word(s) (ids >= vocab_size=%d) to %s.%s, which drops them "
                    "silently: the scores miss every copy. Decode with hf_pgen.batch_decode_with_oovs(tokenizer, ids, "
                    "eval_pred.oov_words, vocab_size=model.config.vocab_size) (or processor.batch_decode(ids, "
                    "eval_pred.oov_words)), or use hf_pgen.build_compute_metrics.",
                    copies,
                    vocab_size,
                    type(tokenizer).__name__,
                    method.__name__,
                )
            return method(token_ids, *args, **kwargs)

        return decode

    own = vars(tokenizer)
    saved = {name: own.get(name) for name in ("decode", "batch_decode")}
    for name in saved:
        setattr(tokenizer, name, guard(getattr(tokenizer, name)))
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                delattr(tokenizer, name)
            else:
                setattr(tokenizer, name, value)
