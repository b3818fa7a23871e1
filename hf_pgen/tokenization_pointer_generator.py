"""Extended-vocabulary encoding and decoding for pointer-generator models: the import path of earlier versions.

The code lives in `tokenization_encode_pointer_generator` (`encode_with_oovs`) and
`tokenization_decode_pointer_generator` (`decode_with_oovs`, `batch_decode_with_oovs`); this module re-exports them,
so that `from hf_pgen.tokenization_pointer_generator import encode_with_oovs, decode_with_oovs,
batch_decode_with_oovs` keeps working in users' code. New code imports them from `hf_pgen`.
"""

from .tokenization_decode_pointer_generator import batch_decode_with_oovs, decode_with_oovs
from .tokenization_encode_pointer_generator import encode_with_oovs

__all__ = ["encode_with_oovs", "decode_with_oovs", "batch_decode_with_oovs"]
