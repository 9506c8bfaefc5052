"""Chat ports with a bug the fixed conversations of the chat check do not show.

Each answers llama.cpp's own rendering and ids (:func:`reference.chat.render` on the vocab)
of a conversation it first changes, as a port with that bug would:

- ``PORT=py:tests.ports.chatbug:rstrip_assistant``: trailing whitespace of every assistant
  message's content is stripped (the fixed assistant contents, "Hello." and "4", end in none);
- ``PORT=py:tests.ports.chatbug:crlf``: CRLF in any content is read as LF (no fixed content
  holds a CR).

Only the generated phase of ``chat-check`` meets these; ``tests/test_chatgen.py`` checks it
catches them and shrinks each to a conversation of a message or two.
"""

from __future__ import annotations

from harness.errors import ChatTemplateError
from harness.protocol.chat import ChatAnswer


class BuggyChat:
    """The chat reference over one vocab, after ``change(message)`` rewrote each message."""

    def __init__(self, vocab_path: str, change):
        from reference.inproc import load_reference
        self.ref, self.change = load_reference(vocab_path), change

    def chat(self, template, messages, *, tools=None, add_generation_prompt=False, kwargs=None, builtin=False):
        from reference.chat import render
        try:
            out = render(template, [self.change(dict(m)) for m in messages], tools=tools,
                         add_generation_prompt=add_generation_prompt, kwargs=kwargs, builtin=builtin, vocab=self.ref)
        except ChatTemplateError as e:
            return ChatAnswer(raised=e.message)
        return ChatAnswer(out.data, out.ids)


def _rstrip_assistant(m: dict) -> dict:
    if m.get("role") == "assistant" and isinstance(m.get("content"), str):
        m["content"] = m["content"].rstrip()
    return m


def _crlf(m: dict) -> dict:
    if isinstance(m.get("content"), str):
        m["content"] = m["content"].replace("\r\n", "\n")
    return m


def rstrip_assistant(vocab_path: str) -> BuggyChat:
    return BuggyChat(vocab_path, _rstrip_assistant)


def crlf(vocab_path: str) -> BuggyChat:
    return BuggyChat(vocab_path, _crlf)
