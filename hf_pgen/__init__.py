"""hf_pgen: the pointer-generator copy mechanism for any 🤗 Transformers encoder-decoder.

Importing the package registers `PointerGeneratorConfig` / `PointerGeneratorForConditionalGeneration` with
AutoConfig, AutoModel and AutoModelForSeq2SeqLM (model_type "pointer_generator").
"""

from transformers import AutoConfig, AutoModel, AutoModelForSeq2SeqLM

from .configuration_pointer_generator import PointerGeneratorConfig, is_pointer_generator
from .data_collator import DataCollatorForPointerGenerator
from .generation_pointer_generator import OOVCopyLimitLogitsProcessor
from .glossary import Glossary
from .logits_process_pointer_generator import ProtectedSpansLogitsProcessor
from .modeling_outputs_pointer_generator import (
    PointerGeneratorGenerateBeamOutput,
    PointerGeneratorGenerateOutput,
    PointerGeneratorSeq2SeqLMOutput,
)
from .modeling_pointer_generator import PointerGeneratorForConditionalGeneration, PointerGeneratorPreTrainedModel
from .pipeline_pointer_generator import PointerGeneratorText2TextPipeline, register_pipeline_tasks
from .processing_pointer_generator import PointerGeneratorProcessor
from .protection_pointer_generator import find_protected_spans
from .tokenization_decode_pointer_generator import batch_decode_with_oovs, decode_with_oovs
from .tokenization_encode_pointer_generator import encode_with_oovs

__version__ = "0.1.0"

# The modules every saved model folder holds, so that a Python with only torch and transformers (trust_remote_code=True)
# runs the model, its pipelines and its processor: the modeling and configuration modules, all they import relatively,
# and what modeling imports only to have it copied (modeling_pointer_generator.COPIED_BY_IMPORT). Each imports only the
# standard library, torch, transformers (modelcard: huggingface_hub too) and its siblings here, relatively, and says so
# in its docstring. A change to this list changes every saved folder: tests/test_modeling.py saves one and compares.
SAVED_WITH_MODEL = (
    "configuration_pointer_generator",
    "deprecation",
    "generation_pointer_generator",
    "glossary",
    "input_checks_pointer_generator",
    "layers_pointer_generator",
    "logits_process_pointer_generator",
    "mixture_pointer_generator",
    "modelcard",
    "modeling_outputs_pointer_generator",
    "modeling_pointer_generator",
    "pipeline_pointer_generator",
    "placeholders",
    "processing_pointer_generator",
    "protection_pointer_generator",
    "protection_rules_pointer_generator",
    "tokenization_decode_pointer_generator",
    "tokenization_encode_pointer_generator",
)

# The Trainer side imports Transformers' whole training stack (accelerate, ...): loaded on first use, so that
# `import hf_pgen` for generation, pipelines and the command line stays light.
_LAZY = {
    name: ".trainer_pointer_generator"
    for name in ("PointerGeneratorSeq2SeqTrainer", "PointerGeneratorEvalPrediction", "build_compute_metrics")
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


AutoConfig.register(PointerGeneratorConfig.model_type, PointerGeneratorConfig, exist_ok=True)
AutoModel.register(PointerGeneratorConfig, PointerGeneratorForConditionalGeneration, exist_ok=True)
AutoModelForSeq2SeqLM.register(PointerGeneratorConfig, PointerGeneratorForConditionalGeneration, exist_ok=True)
# save_pretrained writes auto_map and copies the defining modules with everything they import relatively
# (SAVED_WITH_MODEL), so a Python without hf_pgen loads the folder with trust_remote_code=True.
PointerGeneratorConfig.register_for_auto_class()
PointerGeneratorForConditionalGeneration.register_for_auto_class("AutoModelForSeq2SeqLM")
# transformers.pipeline("translation" | "translation_xx_to_yy" | "summarization" | "text2text-generation", ...) runs
# the installed PointerGeneratorText2TextPipeline (Transformers 5 removed these tasks; see that module's docstring).
register_pipeline_tasks()

__all__ = [
    "PointerGeneratorConfig",
    "is_pointer_generator",
    "PointerGeneratorForConditionalGeneration",
    "PointerGeneratorPreTrainedModel",
    "PointerGeneratorSeq2SeqLMOutput",
    "PointerGeneratorGenerateOutput",
    "PointerGeneratorGenerateBeamOutput",
    "PointerGeneratorText2TextPipeline",
    "DataCollatorForPointerGenerator",
    "encode_with_oovs",
    "decode_with_oovs",
    "batch_decode_with_oovs",
    "PointerGeneratorProcessor",
    "ProtectedSpansLogitsProcessor",
    "OOVCopyLimitLogitsProcessor",
    "find_protected_spans",
    "Glossary",
    "PointerGeneratorSeq2SeqTrainer",
    "PointerGeneratorEvalPrediction",
    "build_compute_metrics",
]
