"""Transformers' own ModelTesterMixin and ConfigTester, run over the pointer-generator as model contributors do.

The mixins come from the sdist of exactly the installed Transformers release (fetched and cached by
`upstream_sources`, never copied into this repository). Three settings run the whole mixin:

* `PointerGeneratorModelTest`: dedicated pointer, `extended_input_ids` left out (no copy slots: logits V wide);
* `PointerGeneratorOOVModelTest`: dedicated pointer, 2 out-of-vocabulary source words per row (`<unk>` in
  `input_ids`, ids V and V + 1 in `extended_input_ids`): logits V + 2 wide;
* `PointerGeneratorCrossAttentionCoverageModelTest`: pointer = the base's cross-attention, coverage on, 2 OOV words.

Every upstream test passes, or is skipped by upstream's own conditions (accelerator, flash attention, deepspeed, ...),
or is overridden here by a skip with a one-line reason that a copy model needs.
"""

import unittest

import pytest
import torch
from testing_utils import tiny_config
from transformers import BartConfig, BartForConditionalGeneration
from upstream_sources import UpstreamTestsUnavailable, import_upstream

from hf_pgen import PointerGeneratorConfig, PointerGeneratorForConditionalGeneration

try:
    _modeling_common = import_upstream("test_modeling_common")
    ModelTesterMixin, ids_tensor = _modeling_common.ModelTesterMixin, _modeling_common.ids_tensor
    ConfigTester = import_upstream("test_configuration_common").ConfigTester
    UPSTREAM_ERROR = None
except UpstreamTestsUnavailable as error:
    # Then the classes below are plain objects (not collected) and test_upstream_mixins_are_available fails with the
    # reason: raising here would stop the whole test session at collection, and a skip would let CI pass without them.
    ModelTesterMixin, ids_tensor, ConfigTester, UPSTREAM_ERROR = object, None, None, error
_TestCaseIfAvailable = unittest.TestCase if UPSTREAM_ERROR is None else object

# Tests of this file, not overrides of upstream ones.
OWN_TESTS = {"test_config", "test_tester_config_matches_from_base", "test_skips_name_upstream_tests"}

NO_GENERATION_MIXIN = "the sdist ships no GenerationTesterMixin (tests/generation/); test_modeling.py tests generate()"
LOSS_NOT_FROM_LOGITS = "the loss is the mixture's NLL of the gold ids, computed without output.logits (V + N wide)"
NEEDS_SOURCE_IDS = "the pointer needs source ids and inputs_embeds has none (the OOV classes pass extended_input_ids)"
FIXED_OOV_IDS = "resizing moves vocab_size past the tester's fixed OOV ids 99/100 (PointerGeneratorModelTest resizes)"
EAGER_ONLY = "pointer='cross_attention' reads the base's attention weights, so it runs eager attention only"


def test_upstream_mixins_are_available():
    """The sdist of the installed Transformers was fetched and its mixins imported: without them nothing below runs."""
    if UPSTREAM_ERROR is not None:
        pytest.fail(str(UPSTREAM_ERROR), pytrace=False)
    assert ModelTesterMixin.__module__ == "transformers_upstream_tests.test_modeling_common"


class PointerGeneratorModelTester:
    """A tiny BART base of upstream's BartModelTester sizes, wrapped with the copy settings of the test class."""

    def __init__(
        self,
        parent,
        batch_size=13,
        seq_length=7,
        is_training=True,
        vocab_size=99,
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=4,
        hidden_act="gelu",
        hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1,
        max_position_embeddings=50,
        eos_token_id=2,
        pad_token_id=1,
        bos_token_id=0,
        unk_token_id=3,
        num_oov_words=0,
        pointer="dedicated",
        coverage=False,
    ):
        self.parent = parent
        self.batch_size = batch_size
        self.seq_length = seq_length
        self.is_training = is_training
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.num_hidden_layers = num_hidden_layers
        self.num_attention_heads = num_attention_heads
        self.intermediate_size = intermediate_size
        self.hidden_act = hidden_act
        self.hidden_dropout_prob = hidden_dropout_prob
        self.attention_probs_dropout_prob = attention_probs_dropout_prob
        self.max_position_embeddings = max_position_embeddings
        self.eos_token_id = eos_token_id
        self.pad_token_id = pad_token_id
        self.bos_token_id = bos_token_id
        self.unk_token_id = unk_token_id
        self.num_oov_words = num_oov_words
        self.pointer = pointer
        self.coverage = coverage

    def get_base_config(self) -> BartConfig:
        return tiny_config(
            "bart",
            self.vocab_size,
            d_model=self.hidden_size,
            layers=self.num_hidden_layers,
            heads=self.num_attention_heads,
            ffn_dim=self.intermediate_size,
            decisive_init=False,
            activation_function=self.hidden_act,
            dropout=self.hidden_dropout_prob,
            attention_dropout=self.attention_probs_dropout_prob,
            max_position_embeddings=self.max_position_embeddings,
            eos_token_id=self.eos_token_id,
            bos_token_id=self.bos_token_id,
            pad_token_id=self.pad_token_id,
            unk_token_id=self.unk_token_id,
        )

    def get_copy_settings(self) -> dict:
        # p_gen_bias_init=0.0: p_gen starts at 0.5, so the copy distribution weighs in every output the tests compare.
        return {"pointer": self.pointer, "coverage": self.coverage, "unk_token_id": self.unk_token_id,
                "p_gen_bias_init": 0.0}  # fmt: skip

    def get_config(self) -> PointerGeneratorConfig:
        # Built from the base config directly, not read back from an instantiated model: that one carries
        # _attn_implementation="sdpa", and the mixin's `config.output_attentions = True` then raises.
        return PointerGeneratorConfig(base_config=self.get_base_config(), **self.get_copy_settings())

    def prepare_config_and_inputs(self):
        # Ids above <unk>, so that <unk> marks exactly the out-of-vocabulary positions set below.
        input_ids = ids_tensor([self.batch_size, self.seq_length], self.vocab_size).clamp(self.unk_token_id + 1)
        input_ids[:, -1] = self.eos_token_id
        decoder_input_ids = ids_tensor([self.batch_size, self.seq_length], self.vocab_size)
        inputs_dict = {
            "input_ids": input_ids,  # (B, S)
            "attention_mask": input_ids.ne(self.pad_token_id),
            "decoder_input_ids": decoder_input_ids,  # (B, T)
            "decoder_attention_mask": torch.ones_like(decoder_input_ids, dtype=torch.bool),
        }
        if self.num_oov_words:
            # Word k is out of vocabulary at source position 2k + 1 of every row: <unk> in input_ids, the extended
            # id V + k in extended_input_ids.
            extended_input_ids = input_ids.clone()
            for k in range(self.num_oov_words):
                input_ids[:, 2 * k + 1] = self.unk_token_id
                extended_input_ids[:, 2 * k + 1] = self.vocab_size + k
            inputs_dict["extended_input_ids"] = extended_input_ids
        return self.get_config(), inputs_dict

    def prepare_config_and_inputs_for_common(self):
        return self.prepare_config_and_inputs()


class PointerGeneratorTesterMixin(ModelTesterMixin):
    """The harness the three settings share (not a TestCase itself, so it is not collected on its own)."""

    all_model_classes = (PointerGeneratorForConditionalGeneration,)
    is_encoder_decoder = True
    # Upstream runs this only for model files with a "# Copyright 2023+" header, which ours lack; _init_weights must
    # cover every weight of our own layers, so run it.
    test_can_init_all_missing_weights_before_2023 = True
    tester_settings: dict = {}

    def setUp(self):
        self.model_tester = PointerGeneratorModelTester(self, **self.tester_settings)
        self.config_tester = ConfigTester(
            self,
            config_class=PointerGeneratorConfig,
            # The copy settings only: the base's serialised form is a diff against PreTrainedConfig, not the input
            # dict, so it would not round-trip key by key; the composite checks round-trip it.
            **self.model_tester.get_copy_settings(),
            # A composite config: upstream checks no common properties unless asked; generic code reads these.
            common_properties=["hidden_size", "num_attention_heads", "num_hidden_layers"],
        )

    def _prepare_for_class(self, inputs_dict, model_class, return_labels=False):
        inputs_dict = super()._prepare_for_class(inputs_dict, model_class, return_labels=return_labels)
        # Upstream adds labels only for classes named in MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES, a static table
        # that AutoModelForSeq2SeqLM.register does not reach; without them the training tests get loss=None.
        if return_labels:
            labels = torch.zeros(
                (self.model_tester.batch_size, self.model_tester.seq_length), dtype=torch.long,
                device=inputs_dict["input_ids"].device,
            )  # fmt: skip
            if self.model_tester.num_oov_words:
                labels[:, 0] = self.model_tester.vocab_size  # a copy-only word: its loss goes through the pointer
            inputs_dict["labels"] = labels
        return inputs_dict

    def test_config(self):
        self.config_tester.run_common_tests()

    def test_tester_config_matches_from_base(self):
        """The tester's config is the one users get from `from_base`, so the mixin tests what users run."""
        config = self.model_tester.get_config()
        wrapped = PointerGeneratorForConditionalGeneration.from_base(
            BartForConditionalGeneration(self.model_tester.get_base_config()), **self.model_tester.get_copy_settings()
        )
        ignored = {"_attn_implementation_internal", "custom_pipelines", "transformers_version"}

        def comparable(config_dict):
            config_dict = {key: value for key, value in config_dict.items() if key not in ignored}
            config_dict["base_config"] = {
                key: value for key, value in config_dict["base_config"].items() if key not in ignored
            }
            return config_dict

        self.assertEqual(comparable(wrapped.config.to_dict()), comparable(config.to_dict()))

    def test_skips_name_upstream_tests(self):
        """Every test this file overrides (with a skip) exists upstream: a renamed upstream test must not slip by."""
        for cls in type(self).__mro__:
            if cls.__module__ == __name__:
                overrides = {name for name in vars(cls) if name.startswith("test_")} - OWN_TESTS
                self.assertEqual(sorted(name for name in overrides if not hasattr(ModelTesterMixin, name)), [])

    # -- upstream tests whose premise a copy model does not meet -------------------------------------------------

    def test_generation_tester_mixin_inheritance(self):
        self.skipTest(NO_GENERATION_MIXIN)

    def test_encoder_decoder_loss_no_double_shift(self):
        # Upstream skips it too (our class is not in its seq2seq table); this says the reason that holds.
        self.skipTest(LOSS_NOT_FROM_LOGITS)


class PointerGeneratorModelTest(PointerGeneratorTesterMixin, _TestCaseIfAvailable):
    def test_inputs_embeds(self):
        self.skipTest(NEEDS_SOURCE_IDS)


class PointerGeneratorOOVTesterMixin(PointerGeneratorTesterMixin):
    tester_settings = {"num_oov_words": 2}
    additional_model_inputs = ["extended_input_ids"]

    def test_resize_tokens_embeddings(self):
        self.skipTest(FIXED_OOV_IDS)

    def test_resize_embeddings_untied(self):
        self.skipTest(FIXED_OOV_IDS)


class PointerGeneratorOOVModelTest(PointerGeneratorOOVTesterMixin, _TestCaseIfAvailable):
    pass


class PointerGeneratorCrossAttentionCoverageModelTest(PointerGeneratorOOVTesterMixin, _TestCaseIfAvailable):
    tester_settings = {"num_oov_words": 2, "pointer": "cross_attention", "coverage": True}

    def test_sdpa_can_dispatch_non_composite_models(self):
        self.skipTest(EAGER_ONLY)

    def test_can_set_attention_dynamically(self):
        # The model says True itself (_can_set_attn_implementation); the test's eager-only reason is what holds.
        self.skipTest(EAGER_ONLY)


pytestmark = pytest.mark.slow  # left out by `make test-fast`
