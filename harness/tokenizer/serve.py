"""``python -m harness serve --vocab PATH``: the harness tokenizer as a JSON-lines port.

The protocol and its one server loop are :mod:`harness.protocol.server`; this module
only loads the vocab file. Pinned vocab names (``--vocab qwen2``) are resolved to
paths by the command line (``python -m harness serve``, ``llama-conformance serve``).

>>> TokenizerBackend.__name__
'TokenizerBackend'
"""

from __future__ import annotations

import argparse
import sys

from harness.errors import HarnessError
from harness.protocol.server import serve
from harness.tokenizer.facade import Tokenizer


class TokenizerBackend:
    """A :class:`Tokenizer` as a protocol backend: its calls, plus ``info``."""

    def __init__(self, tok: Tokenizer):
        self.tok = tok
        self.encode, self.decode, self.token_to_piece = tok.encode, tok.decode, tok.token_to_piece
        self.n_vocab = tok.n_vocab

    def info(self) -> dict:
        return {"vocab_type": self.tok.vocab.vocab_type, "pre_type": self.tok.vocab.pre_type}

    def chat(self, template, messages, *, tools=None, add_generation_prompt=False, kwargs=None, builtin=False):
        """The ``chat`` op: the harness renderer (:mod:`harness.chat.render`, llama-server's
        ``common_chat_templates_apply`` in Python; with ``builtin``, its ``--no-jinja`` route,
        :func:`harness.chat.builtin.render_legacy`: llama.cpp's built-in formats), then llama-server's
        prompt ids: the whole prompt tokenized with add_special and parse_special true. A request
        llama.cpp refuses answers ``raised``; what the renderer does not cover raises
        NotImplementedError (``unsupported``), naming it.

        >>> no_vocab = TokenizerBackend.__new__(TokenizerBackend)
        >>> no_vocab.chat("INVALID", [{"role": "user", "content": "hi"}], builtin=True).raised
        'this custom template is not supported, try using --jinja'
        """
        from harness.chat.builtin import render_legacy
        from harness.chat.render import ChatRaised, ChatUnsupported, render
        from harness.protocol.chat import ChatAnswer
        try:
            if builtin:  # the built-in route strips no BOS/EOS text (common_chat_templates_apply_legacy)
                prompt = render_legacy(self._template(template, None), messages, tools=tools,
                                       add_generation_prompt=add_generation_prompt, kwargs=kwargs)
            else:
                v = self.tok.vocab
                prompt = render(self._template(template, tools), messages, tools=tools,
                                add_generation_prompt=add_generation_prompt, kwargs=kwargs,
                                bos_token=self._text(v.bos), eos_token=self._text(v.eos), add_bos=v.add_bos,
                                add_eos=v.add_eos)
        except ChatRaised as e:
            return ChatAnswer(raised=str(e))
        except ChatUnsupported as e:
            raise NotImplementedError(str(e)) from None
        data = prompt.text.encode("utf-8", "surrogatepass")
        return ChatAnswer(data, self.tok.encode(data, add_special=True, parse_special=True))

    def _text(self, token_id) -> str:
        """A special token's text as ``common_token_to_piece(vocab, id, true)``; "" without the token."""
        return "" if token_id is None else self.tok.token_to_piece(token_id, special=True).decode("utf-8", "replace")

    def _template(self, template: str | None, tools) -> str:
        """The request's template, else the vocab's (its ``tool_use`` variant when tools are given), as
        ``common_chat_templates_init`` and ``common_chat_templates_apply_jinja`` choose; "" is chatml."""
        if template:
            return template
        from harness.tokenizer.gguf.reader import GGUFReader
        with GGUFReader(self.tok.vocab.path) as reader:
            default = reader.fields.get("tokenizer.chat_template") or ""
            tool_use = reader.fields.get("tokenizer.chat_template.tool_use") or ""
        if tools and tool_use:
            return tool_use
        return default or tool_use


def main(argv: list[str] | None = None) -> int:
    """Serve one ``.gguf`` file on stdin/stdout; returns the exit status (2: it cannot load)."""
    ap = argparse.ArgumentParser(prog="python -m harness serve",
                                 description="serve the harness tokenizer over the JSON-lines port protocol")
    ap.add_argument("--vocab", required=True, help="a .gguf file (a pinned name, e.g. qwen2, on the command line)")
    args = ap.parse_args(argv)
    try:
        tok = Tokenizer.from_gguf(args.vocab)
    except (HarnessError, OSError) as e:
        print(f"serve: cannot load vocab {args.vocab!r}: {e}", file=sys.stderr)
        return 2
    serve(TokenizerBackend(tok), sys.stdin.buffer, sys.stdout.buffer)
    return 0
