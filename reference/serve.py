"""``python -m reference serve --pin P --vocab V``: a pinned llama.cpp build as a JSON-lines port.

It answers the port protocol (README, "The port protocol") through the one server
loop, :mod:`harness.protocol.server`, with libllama of pin ``P`` loaded in this
process. Two libllama builds in one process may clash, so another pin always runs in
its own process: this is what ``PORT=llama.cpp@<pin>`` starts, and what
``make pin-diff`` checks pins with.

A request that makes llama.cpp throw gets ``{"error": ...}``; one that makes it
abort ends the process, as it would end any program linking that libllama. A vocab
this pin cannot load is served as ``unsupported`` on every request, so the client
sees why.
"""

from __future__ import annotations

import os
import sys


class PinnedLlama:
    """The oracle of pin ``pin`` as a protocol backend: its calls, plus ``info`` and ``chat``."""

    def __init__(self, ref, pin: str):
        self.ref, self.pin, self.n_vocab = ref, pin, ref.n_vocab
        self.encode, self.decode, self.token_to_piece = ref.encode, ref.decode, ref.token_to_piece

    def info(self) -> dict:
        return {"vocab_type": f"llama.cpp@{self.pin}", "pre_type": None}

    def chat(self, template, messages, *, tools=None, add_generation_prompt=False, kwargs=None, builtin=False):
        """The ``chat`` op from :func:`reference.chat.render` over this vocab: the prompt as
        llama-server renders it and its ids; a template that raises in llama.cpp is answered
        ``raised`` with llama.cpp's message."""
        from harness.errors import ChatTemplateError
        from harness.protocol.chat import ChatAnswer

        from .chat import render

        try:
            out = render(template, messages, tools=tools, add_generation_prompt=add_generation_prompt,
                         kwargs=kwargs, builtin=builtin, vocab=self.ref)
        except ChatTemplateError as e:
            return ChatAnswer(raised=e.message)
        return ChatAnswer(data=out.data, ids=out.ids)


def main(pin: str, vocab: str) -> int:
    """Select ``pin`` for this process, load its libllama and the vocab, then serve stdin."""
    from harness.errors import HarnessError
    from harness.protocol.server import UNSUPPORTED, refuse, serve

    from . import lock

    os.environ["PIN"] = lock.load(pin=pin).name  # before anything reads the selected pin
    try:
        from .inproc import load_reference
        from .vocabs import vocab_path

        backend = PinnedLlama(load_reference(vocab_path(vocab)), os.environ["PIN"])
    except HarnessError as e:
        print(f"reference serve: cannot load vocab {vocab!r} at pin {pin}: {e}", file=sys.stderr)
        refuse(f"{UNSUPPORTED}{e}", sys.stdin.buffer, sys.stdout.buffer)
        return 2
    serve(backend, sys.stdin.buffer, sys.stdout.buffer)
    return 0
