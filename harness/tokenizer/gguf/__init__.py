"""GGUF reading and writing: a bounds-checked memmap reader, a writer, and key names.

>>> from harness.tokenizer.gguf import GGUFReader, Keys, GGUFValueType
>>> Keys.Tokenizer.MERGES
'tokenizer.ggml.merges'
"""

from harness.tokenizer.gguf.keys import GGUFValueType, Keys
from harness.tokenizer.gguf.reader import GGUFField, GGUFReader, TensorInfo

__all__ = ["GGUFReader", "GGUFField", "GGUFValueType", "Keys", "TensorInfo"]
