"""training/recipe.py: the command lines every trained system of the main job, the sweep and the benchmarks is built
from parse as run_translation arguments and say what their settings say."""

import pytest

from training import run_translation
from training.recipe import UNTUNED, TrainingSettings, decode_recipe, recipe


def _value(args: list[str], flag: str) -> str:
    return args[args.index(flag) + 1]


def test_the_untuned_settings_are_the_recipe_the_job_trained_with_before_the_sweep():
    args = recipe(5000, None, 1, UNTUNED)
    assert _value(args, "--learning_rate") == "0.001" and _value(args, "--warmup_steps") == "416"
    assert _value(args, "--per_device_train_batch_size") == "16" and _value(args, "--label_smoothing_factor") == "0.1"
    assert "dropout=0.1,attention_dropout=0.0,activation_dropout=0.0" in _value(args, "--config_overrides")
    assert "--word_dropout" not in args and "--target_word_dropout" not in args


def test_settings_reach_run_translation(tmp_path):
    settings = UNTUNED.replace(
        vocab_size=2000,
        batch_size=64,
        max_steps=1200,
        learning_rate=2e-3,
        dropout=0.3,
        attention_dropout=0.1,
        word_dropout=0.1,
        target_word_dropout=0.05,
        label_smoothing=0.2,
    )
    args = recipe(None, 10, 4, settings) + ["--train_tokenizer", "--output_dir", str(tmp_path), "--no_copy_mechanism"]
    model_args, _, data_args, training_args = run_translation.parse_args(args)
    assert training_args.max_steps == 1200 and training_args.warmup_steps == 100
    assert training_args.per_device_train_batch_size == 64 and training_args.learning_rate == 2e-3
    assert training_args.label_smoothing_factor == 0.2
    assert data_args.word_dropout == 0.1 and data_args.target_word_dropout == 0.05
    assert data_args.num_beams == 4 and data_args.max_predict_samples == 10
    assert "dropout=0.3,attention_dropout=0.1" in model_args.config_overrides
    assert recipe(300, settings=settings)[recipe(300, settings=settings).index("--max_steps") + 1] == "300"


def test_decode_recipe_parses(tmp_path):
    args = decode_recipe(tmp_path, copy=True, max_predict_samples=None, num_beams=1) + ["--output_dir", str(tmp_path)]
    _, copy_args, data_args, training_args = run_translation.parse_args(args)
    assert copy_args.copy_mechanism and data_args.protect == "placeholders" and not training_args.do_train


def test_an_unknown_setting_is_refused_by_name():
    with pytest.raises(ValueError, match=r"Unknown training settings \['dropuot'\]"):
        TrainingSettings().replace(dropuot=0.3)
