"""The recipe of the main job's models: their shape, training settings and decoding, as run_translation arguments.

The main job (`training/main.py`), the tuning sweep (`training/tune.py`), the benchmarks and the tests build their
command lines here, so that a row of any of their tables names the settings it was trained with (torchtune keeps its
configs apart from its runners in the same way):

>>> from training.recipe import NOCOPY, recipe, decode_recipe
>>> args = recipe(5000, settings=NOCOPY) + ["--tokenizer_name", folder, "--output_dir", out, "--no_copy_mechanism"]
>>> args = decode_recipe(out, copy=False, max_predict_samples=None, num_beams=1)  # + "--output_dir"

Every measurement quoted in a comment here was taken on the main job's validation split (the sweep) or, for the
settings older than the sweep, on its test split at the time they were chosen (docs/main-job/README.md has both).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "MODEL_TYPE",
    "MAX_SOURCE_LENGTH",
    "MAX_TARGET_LENGTH",
    "CONFIG_OVERRIDES",
    "TOKENIZERS",
    "PLACEHOLDERS_IN_VOCABULARY",
    "TrainingSettings",
    "UNTUNED",
    "NOCOPY",
    "PGEN_SUBWORD",
    "PGEN_WORD",
    "recipe",
    "decode_recipe",
    "LEVERS",
    "RECIPE_LEVERS",
    "with_levers",
]

# A 3+3-layer mBART-shaped model (pre-layer-norm: it trains stably at a high learning rate from scratch, where
# post-layer-norm BART collapsed to a constant output) of width 128, trained from scratch. Small and fast on purpose:
# on 2 CPU cores updates per second count more than width (width 256 with 6+6 layers lost 4.5 BLEU at the same
# budget). mBART ties its encoder and decoder embeddings and its output layer (`tie_word_embeddings`): the tied
# embeddings of Sennrich & Zhang's recipe are there from the start.
MODEL_TYPE = "mbart"
# Tokens of source the models read and of output they learn and write: all the positions they have. At most 0.4% of
# the test sources are longer, so nearly every placeholder is read, not only placed; at 64 output tokens the 10
# longest test messages (a tenth of the reference words) came out cut at about a third of their length.
MAX_SOURCE_LENGTH, MAX_TARGET_LENGTH = 128, 128
CONFIG_OVERRIDES = (
    "d_model=128,encoder_layers=3,decoder_layers=3,encoder_attention_heads=4,decoder_attention_heads=4,"
    "encoder_ffn_dim=512,decoder_ffn_dim=512,max_position_embeddings=128"
)
TOKENIZERS = {"wordlevel": "word-level, placeholders left to copying", "unigram": "unigram subwords"}
# A word-level vocabulary without placeholders: the model can only copy one from its source. Measured at 5,000
# steps (with --placeholder_augmentation and --oov_copy_limit): placeholders kept 84.7% -> 90.0%, every repeated
# (6.1% of outputs) and invented one gone; BLEU 31.6 -> 30.8 and chrF 30.4 -> 29.9, within their noise.
# A unigram vocabulary spells placeholders from pieces: nothing to leave out.
PLACEHOLDERS_IN_VOCABULARY = {"wordlevel": False, "unigram": True}
_LANGUAGES_AND_LENGTHS = (
    "--source_lang",
    "en",
    "--target_lang",
    "de",
    "--max_source_length",
    str(MAX_SOURCE_LENGTH),
    "--max_target_length",
    str(MAX_TARGET_LENGTH),
)


# The levers of copying what nobody listed, each a run_translation flag: model options and a data one.
LEVERS = {
    "sr": ("--selective_read", "selective read"),
    "cn": ("--copy_next", "copy-next"),
    "cov": ("--coverage", "coverage"),
    "ca": ("--copy_augmentation", "copy augmentation"),
}
# The levers that helped, together, per vocabulary: the pointer-generator recipe. Copy-next is what helped the
# word-level model most (unseen terms kept 63.6% -> 70.7% alone); beside selective read and copy augmentation on
# unigram subwords it cost about 2 chrF in two seeds (p 0.001 both) and bought no copying.
RECIPE_LEVERS = {"wordlevel": ("sr", "cn", "ca"), "unigram": ("sr", "ca")}


def with_levers(keys: tuple[str, ...]) -> tuple[str, ...]:
    """run_translation arguments that turn the levers `keys` on and every other one off, so that a system's run does
    not depend on run_translation's defaults."""
    return tuple(arg for key, (flag, _) in LEVERS.items() for arg in (flag, "true" if key in keys else "false"))


@dataclass(frozen=True)
class TrainingSettings:
    """The settings the low-resource sweep tunes (Sennrich & Zhang 2019): one trained system's vocabulary,
    regularisation, optimisation and length of training.

    Attributes:
        vocab_size: size of the shared (source and target) vocabulary the system's tokenizer is trained to.
        batch_size: training pairs per update.
        max_steps: updates.
        learning_rate: peak learning rate (linear warm-up, then linear decay to 0 at `max_steps`).
        warmup_fraction: share of `max_steps` spent warming up.
        label_smoothing: `--label_smoothing_factor`.
        dropout: the model's dropout (residual and embedding outputs).
        attention_dropout: dropout of the attention weights.
        activation_dropout: dropout inside the feed-forward layers.
        word_dropout: chance that a source token is dropped (`--word_dropout`).
        target_word_dropout: chance that a decoder input token is dropped (`--target_word_dropout`).
        weight_decay: AdamW's decoupled weight decay.
    """

    vocab_size: int = 8000
    batch_size: int = 16
    max_steps: int = 5000
    learning_rate: float = 1e-3
    warmup_fraction: float = 1 / 12
    label_smoothing: float = 0.1
    dropout: float = 0.1
    attention_dropout: float = 0.0
    activation_dropout: float = 0.0
    word_dropout: float = 0.0
    target_word_dropout: float = 0.0
    weight_decay: float = 0.01

    def replace(self, **changes) -> TrainingSettings:
        """A copy with `changes` (field name -> value); an unknown name is refused."""
        unknown = set(changes) - {f.name for f in dataclasses.fields(self)}
        if unknown:
            raise ValueError(
                f"Unknown training settings {sorted(unknown)}; known: {[f.name for f in dataclasses.fields(self)]}."
            )
        return dataclasses.replace(self, **changes)

    def config_overrides(self) -> str:
        """The model's `--config_overrides`: the recipe's shape with this system's dropout."""
        return (
            f"{CONFIG_OVERRIDES},dropout={self.dropout},attention_dropout={self.attention_dropout},"
            f"activation_dropout={self.activation_dropout}"
        )

    @property
    def warmup_steps(self) -> int:
        return max(int(self.max_steps * self.warmup_fraction + 1e-9), 1)  # 5,000 steps: 416


# The settings every system trained with before the low-resource sweep (5,000 updates of 16 pairs, the learning rate
# chosen on the pointer-generator: of 2e-3, 1e-3 and 5e-4 at 5,000 steps, 1e-3 gave it the best chrF; 2e-3 left the
# no-copy model a language model that ignores its source). The benchmarks keep training with them, so that their
# measurements stay comparable.
UNTUNED = TrainingSettings()
# The tuned settings of each trained system (training/tune.py, docs/main-job/tuning.md): chosen on the validation split.
# The no-copy model: 2,000 unigram pieces instead of 8,000 (validation chrF 14.1 -> 16.8, BLEU 3.0 -> 6.7; 1,000
# pieces 16.6; 64-pair batches at 2/5 of the updates 13.0), and it updates 1.3 times as fast on one core.
NOCOPY = UNTUNED.replace(vocab_size=2000)
# The pointer-generators keep the settings they had: 2,000 pieces cost the unigram one 1.9 BLEU and 0.5 chrF on
# validation; the word-level one was not swept in this round.
PGEN_SUBWORD = UNTUNED
PGEN_WORD = UNTUNED


def recipe(
    max_steps: int | None = None,
    max_predict_samples: int | None = None,
    num_beams: int = 1,
    settings: TrainingSettings = UNTUNED,
) -> list[str]:
    """run_translation arguments that train a system with `settings` and decode the test split.

    Args:
        max_steps: updates; `settings.max_steps` when None (warm-up is `settings.warmup_fraction` of them).
        max_predict_samples: decode only the first N test pairs (None: all).
        num_beams: beams of the test decoding.
        settings: the system's training settings.

    Returns:
        Arguments without the tokenizer, the output folder and the copy switch, which depend on the system.
    """
    if max_steps is not None:
        settings = settings.replace(max_steps=max_steps)
    args = [
        "--model_type",
        MODEL_TYPE,
        "--config_overrides",
        settings.config_overrides(),
        *_LANGUAGES_AND_LENGTHS,
        "--do_train",
        "--do_predict",
        "--predict_with_generate",
        "--num_beams",
        str(num_beams),
        # Undertrained models loop ("%(size)s %(size)s %(size)s", "die die die"); measured on three models, greedy:
        # BLEU +0.2 to +0.7, chrF +0.4 to +1.2, with protection too (the saved generation config keeps it for the
        # +protect runs and the pipeline).
        "--no_repeat_ngram_size",
        "3",
        # Copy-only words (out of the vocabulary) at most as often as in the source: half the placeholder misses of
        # the word-level pointer-generator were a copy repeated ("%(path)s von %(path)s"). Measured on it at 10,000
        # steps: placeholders kept 79.2% -> 87.2%, BLEU 35.6 -> 35.8, unseen terms copied 44.2% -> 45.7%. A no-copy
        # model has no such words: nothing changes for it.
        "--oov_copy_limit",
        # A copy of each training pair with its placeholders renamed alike in source and target (or a word both
        # hold verbatim made a named one): the test projects' placeholder names (%(rev)s, %(cnum)s) are unseen.
        # Measured at 5,000 steps, placeholders kept without protection: unigram 53.2% -> 85.1% (BLEU 25.9 -> 31.9),
        # word-level 80.2% -> 84.7% (BLEU 30.4 -> 31.6).
        "--placeholder_augmentation",
        "--per_device_train_batch_size",
        str(settings.batch_size),
        "--per_device_eval_batch_size",
        "128",
        "--learning_rate",
        str(settings.learning_rate),
        "--lr_scheduler_type",
        "linear",
        "--warmup_steps",
        str(settings.warmup_steps),
        "--label_smoothing_factor",
        str(settings.label_smoothing),
        "--weight_decay",
        str(settings.weight_decay),
        "--max_grad_norm",
        "1.0",
        "--max_steps",
        str(settings.max_steps),
        "--logging_steps",
        "100",
        "--save_steps",
        "500",
        "--save_total_limit",
        "1",
        "--seed",
        "42",
        "--data_seed",
        "42",
        "--report_to",
        "none",
        "--dataloader_pin_memory",
        "false",
        "--train_sampling_strategy",
        "group_by_length",
    ]
    if settings.word_dropout:
        args += ["--word_dropout", str(settings.word_dropout)]
    if settings.target_word_dropout:
        args += ["--target_word_dropout", str(settings.target_word_dropout)]
    if max_predict_samples is not None:
        args += ["--max_predict_samples", str(max_predict_samples)]
    return args


def decode_recipe(
    model_dir: Path,
    copy: bool,
    max_predict_samples: int | None,
    num_beams: int,
    guard: tuple[str, ...] = ("--protect", "placeholders"),
) -> list[str]:
    """run_translation arguments that decode the test split with a trained folder, placeholders protected (or with
    the `guard` arguments instead: a term base, or nothing)."""
    args = [
        "--model_name_or_path",
        str(model_dir),
        "--copy_mechanism" if copy else "--no_copy_mechanism",
        *_LANGUAGES_AND_LENGTHS,
        "--do_predict",
        "--predict_with_generate",
        *guard,
        "--num_beams",
        str(num_beams),
        "--per_device_eval_batch_size",
        "128",
        "--report_to",
        "none",
        "--dataloader_pin_memory",
        "false",
    ]
    if max_predict_samples is not None:
        args += ["--max_predict_samples", str(max_predict_samples)]
    return args
