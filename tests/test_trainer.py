"""hf_pgen.PointerGeneratorSeq2SeqTrainer and build_compute_metrics: copies survive evaluation under any sampler,
label smoothing goes to the model's own loss, and everything else is the stock Seq2SeqTrainer."""

import logging
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from datasets import Dataset
from testing_docs import RECIPES_PAGE, section_block
from testing_utils import corpus_texts, tiny_base
from transformers import Seq2SeqTrainer, Seq2SeqTrainingArguments

from hf_pgen import (
    PointerGeneratorForConditionalGeneration,
    PointerGeneratorSeq2SeqTrainer,
    batch_decode_with_oovs,
    build_compute_metrics,
    encode_with_oovs,
)
from hf_pgen.metrics import oov_copy_rate

ROOT = Path(__file__).resolve().parent.parent
MODEL_COLUMNS = ("input_ids", "attention_mask", "extended_input_ids", "labels")


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def tokenizer():
    from hf_pgen.tokenizer_training import train_shared_tokenizer

    return train_shared_tokenizer(corpus_texts("train", limit=400), "wordlevel", vocab_size=150, min_frequency=1)


def tiny_model(tokenizer, copy=True, seed=0):
    """A one-layer BART over `tokenizer`, without dropout, generating up to 16 tokens; wrapped when `copy`."""
    base = tiny_base(
        "bart",
        seed=seed,
        tokenizer=tokenizer,
        d_model=16,
        layers=1,
        heads=2,
        max_position_embeddings=64,
        dropout=0.0,
        decisive_init=False,
        generation={"max_length": 16, "num_beams": 1},
    )
    if not copy:
        return base
    return PointerGeneratorForConditionalGeneration.from_base(
        base, unk_token_id=tokenizer.unk_token_id, p_gen_bias_init=0.0
    )


def copy_task(tokenizer, texts, vocab_size):
    """Source = target (so copying is the task), with the raw texts and each example's OOV table kept."""

    def encode(batch):
        return encode_with_oovs(tokenizer, batch["en"], text_target=batch["de"], vocab_size=vocab_size, max_length=32)

    return Dataset.from_dict({"en": texts, "de": texts}).map(encode, batched=True)


def training_args(tmp_path, **kwargs):
    defaults = dict(
        per_device_train_batch_size=16,
        per_device_eval_batch_size=8,
        max_steps=3,
        learning_rate=3e-3,
        report_to="none",
        use_cpu=True,
        save_strategy="no",
        disable_tqdm=True,
        dataloader_pin_memory=False,
    )
    return Seq2SeqTrainingArguments(str(tmp_path / "out"), **{**defaults, **kwargs})


def collate(trainer, dataset, rows):
    return trainer.data_collator([{k: dataset[i][k] for k in MODEL_COLUMNS if k in dataset.column_names} for i in rows])


# ---------------------------------------------------------------------------------------------------------------------
# Label smoothing
# ---------------------------------------------------------------------------------------------------------------------


def support_aware_smoothed_nll(model, batch, epsilon):
    """Reference: from the full distribution (B, T, V + P) of an eval-mode forward, smooth over each row's own
    classes, i.e. its V words and its own N_b OOV slots (the other columns are -inf for that row)."""
    vocab_size = model.config.vocab_size
    with torch.no_grad():
        log_probs = model.eval()(**batch).logits.double()  # (B, T, V + P)
    own_slots = (batch["extended_input_ids"].max(-1).values + 1 - vocab_size).clamp_min(0)  # (B,)
    columns = torch.arange(log_probs.shape[-1])
    support = columns < (vocab_size + own_slots)[:, None, None]  # (B, 1, V + P)
    assert torch.isinf(log_probs.masked_select(~support.expand_as(log_probs))).all()
    smooth = -torch.where(support, log_probs, 0.0).sum(-1) / support.sum(-1)  # (B, T)
    gold = batch["labels"] != -100
    nll = -log_probs.gather(-1, batch["labels"].clamp_min(0).unsqueeze(-1)).squeeze(-1)  # (B, T)
    return float(((1 - epsilon) * nll + epsilon * smooth)[gold].mean())


@pytest.mark.slow  # runs Trainer.train()
def test_label_smoothing_goes_to_the_models_support_aware_loss(tokenizer, tmp_path):
    model = tiny_model(tokenizer)
    data = copy_task(tokenizer, corpus_texts("train", limit=64), model.config.vocab_size)
    args = training_args(tmp_path, label_smoothing_factor=0.1, max_steps=4, eval_strategy="steps", eval_steps=2)
    trainer = PointerGeneratorSeq2SeqTrainer(
        model=model, args=args, train_dataset=data, eval_dataset=data.select(range(16)), processing_class=tokenizer
    )
    assert trainer.label_smoother is None and trainer.label_smoothing == 0.1

    batch = collate(trainer, data, range(16))
    assert int(batch["extended_input_ids"].max()) >= model.config.vocab_size  # rows with OOV slots, unequal counts
    reference = support_aware_smoothed_nll(model, batch, 0.1)
    loss = trainer.compute_loss(model.train(), batch).detach()
    assert torch.isfinite(loss) and float(loss) == pytest.approx(reference, rel=1e-4)
    assert model.config.label_smoothing == 0.0  # set for the loss only: the saved config keeps its value

    # The stock trainer's LabelSmoother averages over columns a row lacks: the model refuses (it would be inf).
    stock = Seq2SeqTrainer(
        model=model, args=args, train_dataset=data, eval_dataset=data, data_collator=trainer.data_collator.data_collator
    )
    gold = int((batch["labels"] != -100).sum())
    with pytest.raises(ValueError, match="label_smoothing"):
        stock.compute_loss(model.train(), dict(batch), num_items_in_batch=gold)  # as in its training step

    trainer.train()
    losses = [entry for entry in trainer.state.log_history if "eval_loss" in entry]
    assert len(losses) == 2 and all(np.isfinite(entry["eval_loss"]) for entry in losses)
    assert np.isfinite(trainer.state.log_history[-1]["train_loss"])


def test_a_plain_base_gets_the_stock_trainer(tokenizer, tmp_path):
    model = tiny_model(tokenizer, copy=False)
    data = copy_task(tokenizer, corpus_texts("train", limit=32), model.config.vocab_size)
    data = data.map(
        lambda b: {
            "labels": [[t if t < len(tokenizer) else tokenizer.unk_token_id for t in row] for row in b["labels"]]
        },
        batched=True,
    )
    from transformers import DataCollatorForSeq2Seq

    args = training_args(tmp_path, label_smoothing_factor=0.1)
    collator = DataCollatorForSeq2Seq(tokenizer, model=model)
    ours = PointerGeneratorSeq2SeqTrainer(
        model=model, args=args, train_dataset=data, processing_class=tokenizer, data_collator=collator
    )
    stock = Seq2SeqTrainer(
        model=model, args=args, train_dataset=data, processing_class=tokenizer, data_collator=collator
    )
    assert type(ours.label_smoother) is type(stock.label_smoother) and ours.label_smoothing == 0.0
    assert ours.label_smoother is not None
    batch = collator([{k: data[i][k] for k in ("input_ids", "attention_mask", "labels")} for i in range(16)])
    model.eval()
    with torch.no_grad():
        assert float(ours.compute_loss(model, dict(batch))) == pytest.approx(
            float(stock.compute_loss(model, dict(batch)))
        )


# ---------------------------------------------------------------------------------------------------------------------
# Predictions and metrics
# ---------------------------------------------------------------------------------------------------------------------


def test_predict_with_and_without_generate(tokenizer, tmp_path):
    model = tiny_model(tokenizer)
    data = copy_task(tokenizer, corpus_texts("validation", limit=20), model.config.vocab_size)
    generated = PointerGeneratorSeq2SeqTrainer(
        model=model,
        args=training_args(tmp_path, predict_with_generate=True, generation_max_length=7),
        processing_class=tokenizer,
    ).predict(data)
    lengths = (generated.predictions != tokenizer.pad_token_id).sum(-1)  # padded to the model's max_length (16)
    assert generated.predictions.shape[0] == 20 and lengths.max() == 7  # generation_max_length holds
    assert np.isfinite(generated.metrics["test_loss"])

    forced = PointerGeneratorSeq2SeqTrainer(
        model=model, args=training_args(tmp_path), processing_class=tokenizer
    ).predict(data)
    log_probs = forced.predictions  # (rows, T, V + positions): one width for every batch, so they concatenate
    assert log_probs.ndim == 3 and log_probs.shape[0] == 20
    assert log_probs.shape[-1] == model.config.vocab_size + model.config.base_config.max_position_embeddings
    assert np.isfinite(forced.metrics["test_loss"])
    probabilities = np.exp(log_probs[forced.label_ids != -100])  # (gold tokens, V + positions)
    assert np.allclose(probabilities.sum(-1), 1.0, atol=1e-4)


class ReversedOrder(PointerGeneratorSeq2SeqTrainer):
    """A custom evaluation sampler: the examples backwards."""

    def _get_eval_sampler(self, eval_dataset):
        return list(range(len(eval_dataset)))[::-1]


@pytest.fixture(scope="module")
def copier_eval(trained_copier):
    model, tokenizer, texts = trained_copier
    return model, tokenizer, copy_task(tokenizer, texts, model.config.vocab_size)


@pytest.mark.parametrize(
    "trainer_class, strategy",
    [
        (PointerGeneratorSeq2SeqTrainer, "random"),
        (PointerGeneratorSeq2SeqTrainer, "group_by_length"),
        (ReversedOrder, "random"),
    ],
)
def test_compute_metrics_sees_copied_words_in_dataset_order(copier_eval, tmp_path, trainer_class, strategy):
    model, tokenizer, data = copier_eval
    vocab_size = model.config.vocab_size
    seen = {}

    def compute_metrics(eval_pred):
        seen["predictions"] = batch_decode_with_oovs(
            tokenizer, eval_pred.predictions, eval_pred.oov_words, vocab_size=vocab_size
        )
        seen["sources"] = eval_pred.columns["en"]
        seen["indices"] = eval_pred.example_indices.tolist()
        return {}

    args = training_args(
        tmp_path, predict_with_generate=True, train_sampling_strategy=strategy, per_device_eval_batch_size=5
    )
    trainer = trainer_class(
        model=model, args=args, processing_class=tokenizer, compute_metrics=compute_metrics, example_columns=["en"]
    )
    output = trainer.predict(data)
    texts, oov_words = data["en"][:], data["oov_words"][:]
    assert seen["indices"] == list(range(len(texts))) and seen["sources"] == texts
    assert sum(map(len, oov_words)) > 20  # plenty of copies to get right
    assert oov_copy_rate(oov_words, texts, seen["predictions"]) > 0.8  # the copier copies its own source's words
    # Every copied word comes from its own row's table (a misaligned table would splice in another source's words).
    all_oov = {w for words in oov_words for w in words}
    for source, prediction, words in zip(texts, seen["predictions"], oov_words):
        assert {w for w in prediction.split() if w in all_oov} <= set(words) | set(source.split())
    # predict() hands back the rows in dataset order too.
    decoded = batch_decode_with_oovs(tokenizer, output.predictions, oov_words, vocab_size=vocab_size)
    assert decoded == seen["predictions"]


def test_a_decoder_that_drops_copies_is_named(copier_eval, tmp_path, caplog):
    model, tokenizer, data = copier_eval

    def stock_recipe(eval_pred):
        predictions = np.where(eval_pred.predictions != -100, eval_pred.predictions, tokenizer.pad_token_id)
        return {"n": len(tokenizer.batch_decode(predictions, skip_special_tokens=True))}

    trainer = PointerGeneratorSeq2SeqTrainer(
        model=model,
        args=training_args(tmp_path, predict_with_generate=True),
        processing_class=tokenizer,
        compute_metrics=stock_recipe,
    )
    with caplog.at_level(logging.WARNING, logger="hf_pgen.trainer_pointer_generator"):
        trainer.predict(data.select(range(10)))
    warnings = [r.message for r in caplog.records if "drops them silently" in r.message]
    assert len(warnings) == 1 and "batch_decode_with_oovs" in warnings[0]
    assert "batch_decode" not in vars(tokenizer)  # the guard is gone after compute_metrics

    # Without the OOV tables in the dataset, the copies cannot be decoded at all: said too.
    caplog.clear()
    bare = data.select(range(10)).remove_columns("oov_words")
    trainer.compute_metrics = lambda eval_pred: {}
    with caplog.at_level(logging.WARNING, logger="hf_pgen.trainer_pointer_generator"):
        trainer.predict(bare)
    assert any("has no 'oov_words' column" in r.message for r in caplog.records)


def test_build_compute_metrics(copier_eval, tmp_path):
    model, tokenizer, data = copier_eval
    compute_metrics = build_compute_metrics(
        tokenizer, vocab_size=model.config.vocab_size, source_column="en", reference_column="de"
    )
    assert compute_metrics.example_columns == ("en", "de")
    generated = (
        PointerGeneratorSeq2SeqTrainer(
            model=model,
            args=training_args(tmp_path, predict_with_generate=True),
            processing_class=tokenizer,
            compute_metrics=compute_metrics,
        )
        .predict(data)
        .metrics
    )
    assert {"test_bleu", "test_chrf", "test_placeholder_preservation", "test_oov_copy_rate", "test_gen_len"} <= set(
        generated
    )
    assert generated["test_oov_copy_rate"] > 0.8 and generated["test_chrf"] > 50
    # Teacher-forced log-probabilities (predict_with_generate off) are reduced with argmax: the copies are there too.
    forced = PointerGeneratorSeq2SeqTrainer(
        model=model,
        args=training_args(tmp_path),
        processing_class=tokenizer,
        compute_metrics=build_compute_metrics(tokenizer, vocab_size=model.config.vocab_size),
    ).evaluate(data)
    assert forced["eval_oov_copy_rate"] > 0.8
    with pytest.raises(ValueError, match="vocab_size"):
        build_compute_metrics(tokenizer)


def test_compute_metrics_spaces_copies_as_the_source_did(tokenizer, tmp_path):
    """The word-level unknown token swallows the space before "3", and the spacing the table kept
    was lost on the dataset's Arrow round trip, so compute_metrics read "v2. 3". The `oov_spacing` column keeps it
    and reaches `eval_pred.oov_spacing`."""
    model = tiny_model(tokenizer)
    vocab_size = model.config.vocab_size
    texts = ["Update to v2.3 now", "Open the file.3 now", "Open the file"]
    data = copy_task(tokenizer, texts, vocab_size)
    assert "3" in data[0]["oov_words"] and "oov_spacing" in data.column_names
    seen = {}

    def metrics(sources, predictions, references, oov_words):
        seen["references"] = references
        return {}

    def compute_metrics(eval_pred):
        seen["spacing"] = eval_pred.oov_spacing
        return build_compute_metrics(tokenizer, vocab_size=vocab_size, metrics=metrics)(eval_pred)

    trainer = PointerGeneratorSeq2SeqTrainer(
        model=model, args=training_args(tmp_path), processing_class=tokenizer, compute_metrics=compute_metrics
    )
    trainer.evaluate(data)
    assert seen["references"] == texts  # decoded from the labels, with the copies spaced as in the source
    assert seen["spacing"] == list(data["oov_spacing"])
    # Without the column, the output's context alone spaces the copies (and nothing breaks).
    trainer.evaluate(data.remove_columns("oov_spacing"))
    assert seen["spacing"] is None and seen["references"][0] == "Update to v2. 3 now"


@pytest.mark.slow  # runs Trainer.train()
def test_early_stopping_and_the_best_model_on_eval_loss(tokenizer, tmp_path):
    from transformers import EarlyStoppingCallback

    model = tiny_model(tokenizer)
    data = copy_task(tokenizer, corpus_texts("train", limit=64), model.config.vocab_size)
    args = training_args(
        tmp_path,
        max_steps=40,
        eval_strategy="steps",
        eval_steps=2,
        save_strategy="steps",
        save_steps=2,
        load_best_model_at_end=True,
        metric_for_best_model="eval_loss",
        label_smoothing_factor=0.1,
        predict_with_generate=True,
        generation_max_length=8,
    )
    # No evaluation can beat the first by 100: training stops after patience (1) more.
    trainer = PointerGeneratorSeq2SeqTrainer(
        model=model,
        args=args,
        train_dataset=data,
        eval_dataset=data.select(range(16)),
        processing_class=tokenizer,
        compute_metrics=build_compute_metrics(tokenizer, vocab_size=model.config.vocab_size),
        callbacks=[EarlyStoppingCallback(early_stopping_patience=1, early_stopping_threshold=100.0)],
    )
    trainer.train()
    evaluations = [e for e in trainer.state.log_history if "eval_loss" in e]
    assert trainer.state.global_step == 4 and [e["step"] for e in evaluations] == [2, 4]
    assert all("eval_oov_copy_rate" in e or "eval_chrf" in e for e in evaluations)
    best = min(evaluations, key=lambda e: e["eval_loss"])
    assert trainer.state.best_metric == pytest.approx(best["eval_loss"])
    assert trainer.state.best_model_checkpoint.endswith(f"checkpoint-{best['step']}")
    from safetensors.torch import load_file

    saved = load_file(str(Path(trainer.state.best_model_checkpoint) / "model.safetensors"))
    name = (
        "copy_switch.linear.weight"
        if "copy_switch.linear.weight" in saved
        else next(k for k in saved if k.startswith("copy_switch"))
    )
    assert torch.equal(saved[name], model.state_dict()[name])  # the best checkpoint's weights were loaded


def test_create_model_card_renders_the_pointer_generator_card(copier_eval, tmp_path):
    model, tokenizer, data = copier_eval
    trainer = PointerGeneratorSeq2SeqTrainer(
        model=model,
        args=training_args(tmp_path, predict_with_generate=True),
        processing_class=tokenizer,
        eval_dataset=data,
        compute_metrics=build_compute_metrics(tokenizer, vocab_size=model.config.vocab_size),
    )
    metrics = trainer.evaluate()
    trainer.create_model_card(finetuned_from="facebook/bart-base", tasks="translation", language=["en", "de"])
    from huggingface_hub import ModelCard

    card = ModelCard.load(tmp_path / "out" / "README.md")
    assert card.data.pipeline_tag == "translation" and card.data.base_model == "facebook/bart-base"
    assert {"hf_pgen", "pointer-generator", "copy-mechanism"} <= set(card.data.tags)
    results = {m["type"]: m["value"] for m in card.data.to_dict()["model-index"][0]["results"][0]["metrics"]}
    assert results["chrf"] == pytest.approx(metrics["eval_chrf"])


# ---------------------------------------------------------------------------------------------------------------------
# docs/recipes.md's Trainer example, as is
# ---------------------------------------------------------------------------------------------------------------------


@pytest.mark.slow  # trains docs/recipes.md's model in a subprocess
def test_readme_trainer_snippet_runs(tmp_path):
    snippet = section_block(RECIPES_PAGE, "Fine-tune with the Trainer")  # the printed block is the one run
    result = subprocess.run(
        [sys.executable, "-c", snippet],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "OMP_NUM_THREADS": "1"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = eval(result.stdout.strip().splitlines()[-1])  # noqa: S307 - the dict the snippet printed
    # (eval_oov_copy_rate too when some reference holds a source word the vocabulary lacks: none here.)
    assert {"eval_loss", "eval_bleu", "eval_chrf", "eval_placeholder_preservation", "eval_gen_len"} <= set(metrics)
    assert np.isfinite(metrics["eval_loss"])


@pytest.mark.slow  # runs Trainer.train()
def test_a_processor_as_processing_class(tokenizer, tmp_path):
    """processing_class may be the PointerGeneratorProcessor: the collator defaults to the copy-aware one, and
    save_model writes the tokenizer files beside the model."""
    from hf_pgen import DataCollatorForPointerGenerator, PointerGeneratorProcessor

    model = tiny_model(tokenizer)
    processor = PointerGeneratorProcessor(tokenizer, vocab_size=model.config.vocab_size)
    data = copy_task(tokenizer, corpus_texts("validation", limit=12), model.config.vocab_size)
    trainer = PointerGeneratorSeq2SeqTrainer(
        model=model,
        args=training_args(tmp_path, predict_with_generate=True),
        train_dataset=data,
        processing_class=processor,
        compute_metrics=build_compute_metrics(processor),
    )
    assert isinstance(trainer.data_collator.data_collator, DataCollatorForPointerGenerator)
    trainer.train()
    assert "test_chrf" in trainer.predict(data).metrics
    trainer.save_model()
    assert (tmp_path / "out" / "tokenizer.json").is_file() and (tmp_path / "out" / "config.json").is_file()


@pytest.mark.slow  # runs Trainer.train()
def test_bf16_mixed_precision_trains_and_evaluates_with_copies(tokenizer, tmp_path):
    """--bf16 (the mixed precision a CPU has; fp16 needs an accelerator): finite smoothed loss, copies in eval."""
    model = tiny_model(tokenizer)
    data = copy_task(tokenizer, corpus_texts("validation", limit=32), model.config.vocab_size)
    trainer = PointerGeneratorSeq2SeqTrainer(
        model=model,
        args=training_args(
            tmp_path, bf16=True, label_smoothing_factor=0.1, max_steps=4, predict_with_generate=True, eval_strategy="no"
        ),
        train_dataset=data,
        eval_dataset=data,
        processing_class=tokenizer,
    )
    result = trainer.train()
    assert np.isfinite(result.training_loss) and result.training_loss > 0
    metrics = trainer.evaluate()
    assert np.isfinite(metrics["eval_loss"])
    assert all(torch.isfinite(p).all() for p in model.parameters())


# ---------------------------------------------------------------------------------------------------------------------
# Protected spans in generated predictions
# ---------------------------------------------------------------------------------------------------------------------


PLACEHOLDER_SOURCES = [
    "Delete %(name)s now",
    "Open {folder} and %s",
    "Save <b>all</b> files",
    "Close the file",
    "%d of %d items",
    "Rename {0} to {1}",
]


@pytest.mark.parametrize("copy", [True, False], ids=["pointer-generator", "plain base"])
def test_predict_with_protect_keeps_every_placeholder(tokenizer, tmp_path, copy):
    """An untrained model drops placeholders; with protect="placeholders" every prediction holds the source's exactly
    (the model's copy head or, for a plain base, the logits processor), in any evaluation order."""
    from transformers import DataCollatorForSeq2Seq

    from hf_pgen.metrics import placeholder_preservation
    from hf_pgen.tokenizer_training import train_shared_tokenizer

    if not copy:  # without copying, only a vocabulary that can spell the placeholders can place them: subwords
        tokenizer = train_shared_tokenizer(corpus_texts("train", limit=400), "unigram", vocab_size=300)
    model = tiny_model(tokenizer, copy=copy)
    data = copy_task(tokenizer, PLACEHOLDER_SOURCES, model.config.vocab_size)
    collator = None
    if not copy:  # as run_translation feeds a plain base: its own ids only
        data = data.remove_columns(["extended_input_ids"]).map(
            lambda b: {
                "labels": [[t if t < len(tokenizer) else tokenizer.unk_token_id for t in row] for row in b["labels"]]
            },
            batched=True,
        )
        collator = DataCollatorForSeq2Seq(tokenizer, model=model)
    args = training_args(tmp_path, predict_with_generate=True, generation_max_length=24, per_device_eval_batch_size=4)

    def predict(**kwargs):
        trainer = PointerGeneratorSeq2SeqTrainer(
            model=model,
            args=args,
            processing_class=tokenizer,
            data_collator=collator,
            source_column="en",
            max_source_length=32,
            **kwargs,
        )
        ids = trainer.predict(data).predictions
        return batch_decode_with_oovs(
            tokenizer,
            np.where(ids < 0, tokenizer.pad_token_id, ids),
            list(data["oov_words"]),
            vocab_size=model.config.vocab_size,
        )

    assert placeholder_preservation(PLACEHOLDER_SOURCES, predict()) < 0.5
    assert placeholder_preservation(PLACEHOLDER_SOURCES, predict(protect="placeholders")) == 1.0
    with pytest.raises(ValueError, match="does not encode to the batch"):
        predict(protect="placeholders", source_prefix="translate: ")  # not the text the inputs were encoded from


def test_protect_options_are_checked_before_any_work(tokenizer, tmp_path):
    args = training_args(tmp_path)
    with pytest.raises(ValueError, match="empty pattern"):
        PointerGeneratorSeq2SeqTrainer(model=tiny_model(tokenizer), args=args, protect="")
    with pytest.raises(ValueError, match="needs a copying model"):
        PointerGeneratorSeq2SeqTrainer(model=tiny_model(tokenizer, copy=False), args=args, protect="oov")


def test_protect_checks_every_row_encodes_as_the_batch(tokenizer, tmp_path):
    """A dataset truncated shorter than the trainer re-encodes: the long row need not be the first of its batch, and
    a span past that truncation would go unplaced with a misleading warning. Every row is compared."""
    model = tiny_model(tokenizer)
    texts = ["Close it", "Please open the list of all the files {folder} now", "Delete %(name)s"]
    data = Dataset.from_dict({"en": texts, "de": texts}).map(
        lambda b: encode_with_oovs(
            tokenizer, b["en"], text_target=b["de"], vocab_size=model.config.vocab_size, max_length=6
        ),
        batched=True,
    )
    args = training_args(tmp_path, predict_with_generate=True, generation_max_length=16, per_device_eval_batch_size=3)
    trainer = PointerGeneratorSeq2SeqTrainer(
        model=model,
        args=args,
        processing_class=tokenizer,
        protect="placeholders",
        source_column="en",
        max_source_length=32,
    )
    with pytest.raises(ValueError, match="for example 1 does not encode to the batch"):
        trainer.predict(data)
