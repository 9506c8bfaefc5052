"""A stand-in for torch, for transformers' GGUF tokenizer conversion only (see ../../README.md).

transformers' GGUF reader (integrations/gguf/reader.py, dequant.py) imports torch at module level
for its dtype tables and type annotations, and load_gguf_checkpoint refuses to run without
torch even with return_tensors=False (metadata only). The tokenizer conversion itself never
calls torch. This module gives the names those imports and annotations touch; calling
anything, or reading any other attribute's members, raises, so a real use of torch shows up
as an error, never as a silently wrong tokenizer.
"""

__version__ = "0.0.0+torchless"


class _Name:
    """A named placeholder (a dtype, a device class): usable as a dict key or in an annotation."""

    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return f"torch.{self._name} (torchless stand-in)"

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"torch.{self._name} called: this port runs transformers without torch "
                           "(torchless stand-in); the tokenizer conversion must not need it")

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Name(f"{self._name}.{attr}")

    def __getitem__(self, item):
        return self


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return _Name(name)
