"""hf_pgen: the pointer-generator copy mechanism for any 🤗 Transformers encoder-decoder.

Importing the package registers `PointerGeneratorConfig` / `PointerGeneratorForConditionalGeneration` with
AutoConfig, AutoModel and AutoModelForSeq2SeqLM (model_type "pointer_generator").
"""

from transformers import AutoConfig, AutoModel, AutoModelForSeq2SeqLM

from .configuration_pointer_generator import PointerGeneratorConfig
from .generation_pointer_generator import ExtendedVocabularyLogitsProcessor
from .modeling_pointer_generator import (
    PointerGeneratorForConditionalGeneration,
    PointerGeneratorPreTrainedModel,
    PointerGeneratorSeq2SeqLMOutput,
)

__version__ = "0.1.0"

AutoConfig.register(PointerGeneratorConfig.model_type, PointerGeneratorConfig, exist_ok=True)
AutoModel.register(PointerGeneratorConfig, PointerGeneratorForConditionalGeneration, exist_ok=True)
AutoModelForSeq2SeqLM.register(PointerGeneratorConfig, PointerGeneratorForConditionalGeneration, exist_ok=True)
# save_pretrained writes auto_map and copies the defining modules, so a Python without hf_pgen can load the folder
# with trust_remote_code=True.
PointerGeneratorConfig.register_for_auto_class()
PointerGeneratorForConditionalGeneration.register_for_auto_class("AutoModelForSeq2SeqLM")

__all__ = [
    "PointerGeneratorConfig",
    "PointerGeneratorForConditionalGeneration",
    "PointerGeneratorPreTrainedModel",
    "PointerGeneratorSeq2SeqLMOutput",
    "ExtendedVocabularyLogitsProcessor",
]
