import pytest
from testing_utils import UNK, tiny_base, tiny_config

from hf_pgen import PointerGeneratorConfig


def test_marian_with_separate_vocabularies_is_refused():
    """Copying source id x_i as target id x_i is meaningless when the two sides have different vocabularies."""
    for settings in ({"decoder_vocab_size": 80}, {"share_encoder_decoder_embeddings": False}):
        base = tiny_config("marian", d_model=16, layers=1, **settings)
        with pytest.raises(ValueError, match="share_encoder_decoder_embeddings"):
            PointerGeneratorConfig(base_config=base, unk_token_id=UNK)
    PointerGeneratorConfig(base_config=tiny_config("marian", d_model=16), unk_token_id=UNK)  # shared: fine


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"pointer_heads": []}, "selects no head"),  # once gave a NaN pointer
        ({"pointer_heads": [7]}, "0..3"),  # once a bare IndexError deep in forward
        ({"pointer_heads": [1, 1]}, "twice"),
        ({"pointer_layer": 5}, "decoder layer"),
        ({"pointer_layer": -3}, "decoder layer"),
        ({"label_smoothing": 1.0}, r"\[0, 1\)"),
    ],
)
def test_cross_attention_settings_are_checked_when_the_config_is_built(settings, message):
    base = tiny_base("bart").config  # 2 decoder layers, 4 heads
    with pytest.raises(ValueError, match=message):
        PointerGeneratorConfig(base_config=base, pointer="cross_attention", **settings)


def test_t5_layer_and_head_names_are_understood():
    base = tiny_base("t5").config
    PointerGeneratorConfig(base_config=base, pointer="cross_attention", pointer_layer=-2, pointer_heads=[0, 3])
    with pytest.raises(ValueError, match="0..3"):
        PointerGeneratorConfig(base_config=base, pointer="cross_attention", pointer_heads=[4])


def test_base_shape_fields_pass_through():
    """Generic code reads num_attention_heads (and the text config) from the top-level config."""
    base = tiny_base("bart").config
    base.update({"decoder_layers": 3})
    config = PointerGeneratorConfig(base_config=base)
    assert config.num_attention_heads == base.num_attention_heads == 4
    assert config.hidden_size == 32 and config.vocab_size == 64
    assert config.get_text_config(decoder=True).num_hidden_layers == 3  # caches are sized from this


def test_is_pointer_generator_reads_models_configs_and_peft_wrappers():
    from hf_pgen import PointerGeneratorForConditionalGeneration, is_pointer_generator

    base = tiny_base("bart")
    model = PointerGeneratorForConditionalGeneration.from_base(base, unk_token_id=UNK)

    class PeftLike:  # what PEFT's PeftModel offers: the wrapped model behind get_base_model()
        def get_base_model(self):
            return model

    assert is_pointer_generator(model) and is_pointer_generator(model.config) and is_pointer_generator(PeftLike())
    assert not is_pointer_generator(base) and not is_pointer_generator(base.config) and not is_pointer_generator(None)


def test_position_limits_follow_one_rule():
    """The config's positions, capped by a tokenizer that states a limit; the tokenizer's alone for relative positions
    (T5); else the default, or None for a caller that asks whether anything bounds the length."""
    from types import SimpleNamespace

    from hf_pgen.configuration_pointer_generator import (
        DEFAULT_MAX_POSITIONS,
        max_source_positions,
        max_target_positions,
    )

    bart, t5 = tiny_config("bart", max_position_embeddings=96), tiny_config("t5")
    stating, unstated = SimpleNamespace(model_max_length=64), SimpleNamespace(model_max_length=int(1e30))
    for limit in (max_source_positions, max_target_positions):
        assert limit(bart) == limit(bart, unstated) == 96
        assert limit(bart, stating) == 64  # the smaller of the two
        assert limit(PointerGeneratorConfig(base_config=bart, unk_token_id=UNK)) == 96  # the wrapper reads its base
        assert limit(t5) == limit(t5, unstated) == DEFAULT_MAX_POSITIONS
        assert limit(t5, stating) == 64
        assert limit(t5, default=None) is None
    # A config that names each side's positions (FSMT, Speech2Text) is read per side.
    bart.max_source_positions, bart.max_target_positions = 48, 80
    assert (max_source_positions(bart), max_target_positions(bart)) == (48, 80)
