"""llama-cpp-python's chat rendering as the port's chat program: ``./chat --vocab V`` (runs this file).

``Llama(model_path)`` turns the GGUF's ``tokenizer.chat_template`` into a
``Jinja2ChatFormatter`` (llama_cpp/llama.py, ``Llama.__init__``: ``eos_token`` and
``bos_token`` are the texts of the EOS and BOS tokens, ``stop_token_ids=[eos]``), and
``create_chat_completion`` renders the conversation with it, then tokenizes the prompt with
``llama.tokenize(prompt.encode("utf-8"), add_bos=not result.added_special, special=True)``
(llama_cpp/llama_chat_format.py, ``chat_formatter_to_chat_completion_handler``). This
program answers the ``chat`` op with those calls and nothing else:

==========================  ==================================================
chat request                llama-cpp-python
==========================  ==================================================
template (null: the GGUF's) ``Jinja2ChatFormatter(template=..., eos_token=...,
                            bos_token=..., add_generation_prompt=...,
                            stop_token_ids=[eos])``, as ``Llama.__init__`` builds it
                            (``create_chat_completion`` always passes True)
messages, tools, kwargs     ``formatter(messages=..., tools=..., **kwargs)``; kwargs
                            become template variables (``enable_thinking``)
ids                         ``Llama.tokenize(prompt, add_bos=not added_special,
                            special=True)``: ``added_special`` is always True
raised                      ``raise_exception`` (ValueError), any Jinja2
                            ``TemplateError``, or a ``TypeError`` the template's
                            own operations raise (``"<|user|>" + content`` where
                            the content is a list of parts)
builtin                     unsupported: the binding renders GGUF templates with
                            Jinja2 only (its ``chat_format`` names are its own)
==========================  ==================================================

The tokenizer ops are ``serve``'s; this program answers them unsupported.
"""

from __future__ import annotations

import sys
from pathlib import Path

from harness.protocol.chat import ChatAnswer
from harness.protocol.server import run_adapter

NOT_HERE = "the chat program answers chat only (serve answers the tokenizer ops)"


class LlamaCppPythonChat:
    """One vocab's chat rendering, as ``Llama(model_path)`` sets it up."""

    def __init__(self, llama):
        self.llama = llama
        self.n_vocab = llama.n_vocab()

    @classmethod
    def load(cls, path: Path) -> "LlamaCppPythonChat":
        from llama_cpp import Llama
        return cls(Llama(model_path=str(path), vocab_only=True, verbose=False))

    def _token_text(self, token: int) -> str:
        # Llama.__init__: the token's text, "" when the vocab has no such token.
        return self.llama._model.token_get_text(token) if token != -1 else ""

    def chat(self, template, messages, *, tools=None, add_generation_prompt=False, kwargs=None,
             builtin=False) -> ChatAnswer:
        import jinja2
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter
        if builtin:
            raise NotImplementedError("builtin: llama-cpp-python renders GGUF chat templates with Jinja2 only")
        source = template if template is not None else self.llama.metadata.get("tokenizer.chat_template")
        if source is None:
            raise NotImplementedError("the GGUF has no tokenizer.chat_template")
        eos, bos = self.llama.token_eos(), self.llama.token_bos()
        try:
            formatter = Jinja2ChatFormatter(template=source, eos_token=self._token_text(eos),
                                            bos_token=self._token_text(bos),
                                            add_generation_prompt=add_generation_prompt, stop_token_ids=[eos])
            result = formatter(messages=messages, tools=tools, **(kwargs or {}))
        except (ValueError, TypeError, jinja2.TemplateError) as e:
            # the template failed to render: create_chat_completion raises this to its caller
            return ChatAnswer(raised=f"{type(e).__name__}: {e}")
        prompt = result.prompt.encode("utf-8")
        return ChatAnswer(prompt, list(self.llama.tokenize(prompt, add_bos=not result.added_special, special=True)))

    def encode(self, text, **flags):
        raise NotImplementedError(NOT_HERE)

    def decode(self, ids, **flags):
        raise NotImplementedError(NOT_HERE)

    def token_to_piece(self, id, **flags):
        raise NotImplementedError(NOT_HERE)


def _check_library() -> None:
    import jinja2  # noqa: F401
    import llama_cpp  # noqa: F401


def main(argv: list[str] | None = None) -> int:
    return run_adapter(argv, name="llama-cpp-python chat", check_library=_check_library,
                       load=LlamaCppPythonChat.load)


if __name__ == "__main__":
    sys.exit(main())
