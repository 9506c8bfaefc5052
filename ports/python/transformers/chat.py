"""Hugging Face transformers' chat templating as the port's chat program: ``./chat --vocab V`` (runs this file).

The tokenizer is ``serve``'s: ``AutoTokenizer.from_pretrained(dir, gguf_file=name)`` (the GGUF's
``tokenizer.chat_template`` becomes ``tokenizer.chat_template``). The ``chat`` op is answered with
``apply_chat_template`` as transformers' chat-templating docs show it, and nothing else:

==========================  ==================================================
chat request                transformers 5.24.0
==========================  ==================================================
text                        ``tokenizer.apply_chat_template(messages, tools=tools,
                            add_generation_prompt=..., tokenize=False, **kwargs)``
                            (Jinja2 sandbox, ``trim_blocks``/``lstrip_blocks``;
                            ``bos_token``, ``eos_token``, ... from the tokenizer)
ids                         the same call with ``tokenize=True, return_dict=False``:
                            transformers tokenizes the prompt with
                            ``add_special_tokens=False``
template                    null: the tokenizer's own; else ``chat_template=template``
kwargs                      ``**kwargs``: template variables (``enable_thinking``)
raised                      ``jinja2.TemplateError`` (``raise_exception``),
                            ``ValueError``, or a ``TypeError`` the template's own
                            operations raise (``"<|user|>" + content`` where the
                            content is a list of parts)
builtin                     unsupported: transformers renders with Jinja2 only
==========================  ==================================================

The tokenizer ops are ``serve``'s; this program answers them unsupported.
"""

from __future__ import annotations

import sys
from pathlib import Path

from harness.protocol.chat import ChatAnswer
from harness.protocol.server import run_adapter

NOT_HERE = "the chat program answers chat only (serve answers the tokenizer ops)"


class HFChat:
    """One vocab converted by transformers, rendering chats with its ``apply_chat_template``."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self.n_vocab = len(tokenizer)

    @classmethod
    def load(cls, path: Path) -> "HFChat":
        import transformers.modeling_gguf_pytorch_utils as gguf_utils
        # As serve.py: load_gguf_checkpoint(return_tensors=False) reads metadata only, but refuses
        # without torch; torchless/ stands in for the import.
        gguf_utils.is_torch_available = lambda: True
        from transformers import AutoTokenizer
        path = Path(path).resolve()
        return cls(AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name))

    def chat(self, template, messages, *, tools=None, add_generation_prompt=False, kwargs=None,
             builtin=False) -> ChatAnswer:
        import jinja2
        if builtin:
            raise NotImplementedError("builtin: transformers renders chat templates with Jinja2 only")
        if template is None and self.tokenizer.chat_template is None:
            raise NotImplementedError("the converted tokenizer has no chat_template")
        options = dict(tools=tools, add_generation_prompt=add_generation_prompt, **(kwargs or {}))
        if template is not None:
            options["chat_template"] = template
        try:
            text = self.tokenizer.apply_chat_template(messages, tokenize=False, **options)
            ids = self.tokenizer.apply_chat_template(messages, tokenize=True, return_dict=False, **options)
        except (ValueError, TypeError, jinja2.TemplateError) as e:
            # the template failed to render: apply_chat_template raises this to its caller
            return ChatAnswer(raised=f"{type(e).__name__}: {e}")
        return ChatAnswer(text.encode("utf-8"), [int(i) for i in ids])

    def encode(self, text, **flags):
        raise NotImplementedError(NOT_HERE)

    def decode(self, ids, **flags):
        raise NotImplementedError(NOT_HERE)

    def token_to_piece(self, id, **flags):
        raise NotImplementedError(NOT_HERE)


def _check_library() -> None:
    import gguf  # noqa: F401
    import jinja2  # noqa: F401
    import transformers  # noqa: F401


def main(argv: list[str] | None = None) -> int:
    return run_adapter(argv, name="transformers chat", check_library=_check_library, load=HFChat.load)


if __name__ == "__main__":
    sys.exit(main())
