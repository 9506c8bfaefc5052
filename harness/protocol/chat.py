"""The ``chat`` op of the port protocol: a conversation through a chat template, both ends.

An engine renders a conversation through the model's chat template, then tokenizes the
prompt; ``chat`` asks a port for both::

    {"op":"chat","template":S|null,"messages":[...],"tools":[...],"add_generation_prompt":B,
     "kwargs":{...},"builtin":B}
        -> {"text":S,"ids":[...]}        the rendered prompt and its ids ("ids" may be left out)
        -> {"text_hex":H,"ids":[...]}    the same, for a prompt whose bytes are not UTF-8
        -> {"raised":S}                  the template raised (raise_exception, a refused conversation)
        -> {"error":"unsupported: ..."}  the port does not render chat templates

- ``template``: the Jinja template source; null or absent means the vocab's own
  (``tokenizer.chat_template``).
- ``messages``: OpenAI-style objects (``role``, ``content``, and where the template uses
  them ``tool_calls``, ``reasoning_content``, ``name``, ``tool_call_id``); ``tools``:
  ``[{"type":"function","function":{...}}]`` or absent.
- ``add_generation_prompt`` and ``builtin`` default to false like every protocol flag;
  ``builtin`` asks for llama.cpp's built-in formats instead of Jinja (llama-server's
  ``--no-jinja``: ``llama_chat_apply_template`` on the template).
- ``kwargs``: the template kwargs (e.g. ``{"enable_thinking": false}``).
- ``ids``: the prompt's ids as llama-server makes them: the whole rendered prompt
  tokenized with add_special and parse_special both true (``reference/chat_shim.cpp``
  names the llama.cpp lines that decide it).
- ``raised``: llama.cpp raises for this conversation, and so does the port; the message is
  the port's own (only the fact that it raised is compared).

:func:`chat_arguments` checks a request (server side) and gives the backend call's
arguments; :class:`ChatAnswer` is the answer both sides share.

>>> chat_arguments({"op": "chat", "messages": [{"role": "user", "content": "hi"}]})["add_generation_prompt"]
False
>>> ChatAnswer.from_json({"text": "a", "ids": [1]}, n_vocab=10).to_json()
{'text': 'a', 'ids': [1]}
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.errors import HarnessError


class BadChatRequest(HarnessError):
    """A ``chat`` request with a missing or mistyped field (the message names it and the fix)."""


class BadChatAnswer(HarnessError):
    """A ``chat`` answer that is not one of the protocol's shapes (the message says which)."""


class ChatIdOutOfRange(BadChatAnswer):
    """A well-formed ``chat`` answer holding an id no token has: that request's error alone."""


def _flag(req: dict, name: str) -> bool:
    v = req.get(name, False)
    if not isinstance(v, bool):
        raise BadChatRequest(f"{name!r} must be true or false, got {v!r}")
    return v


def chat_arguments(req: dict) -> dict:
    """The keyword arguments of ``backend.chat(...)`` for one ``chat`` request; BadChatRequest
    naming the field if the request is malformed.

    >>> chat_arguments({"op": "chat", "messages": "hi"})
    Traceback (most recent call last):
    ...
    harness.protocol.chat.BadChatRequest: 'messages' must be a list of message objects with a string 'role', got 'hi'
    """
    template = req.get("template")
    if template is not None and not isinstance(template, str):
        raise BadChatRequest(f"'template' must be a string (the template source) or null (the vocab's own), "
                             f"got {type(template).__name__}")
    messages = req.get("messages")
    if not isinstance(messages, list) or not all(isinstance(m, dict) and isinstance(m.get("role"), str)
                                                 for m in messages):
        raise BadChatRequest(f"'messages' must be a list of message objects with a string 'role', got {messages!r:.200}")
    tools = req.get("tools")
    if tools is not None and not (isinstance(tools, list) and all(isinstance(t, dict) for t in tools)):
        raise BadChatRequest(f"'tools' must be a list of tool objects or absent, got {tools!r:.200}")
    kwargs = req.get("kwargs", {})
    if not isinstance(kwargs, dict):
        raise BadChatRequest(f"'kwargs' must be an object of template kwargs, got {kwargs!r:.200}")
    return {"template": template, "messages": messages, "tools": tools,
            "add_generation_prompt": _flag(req, "add_generation_prompt"), "kwargs": kwargs,
            "builtin": _flag(req, "builtin")}


@dataclass(frozen=True)
class ChatAnswer:
    """One ``chat`` answer: the prompt's bytes and ids (``ids`` None when not given), or
    ``raised``, the message of a template that raised."""

    data: bytes | None = None
    ids: list[int] | None = None
    raised: str | None = None

    def to_json(self) -> dict:
        """The answer line's object (``text`` when the prompt is UTF-8, else ``text_hex``)."""
        if self.raised is not None:
            return {"raised": self.raised}
        try:
            out: dict = {"text": self.data.decode("utf-8")}
        except UnicodeDecodeError:
            out = {"text_hex": self.data.hex()}
        return out if self.ids is None else {**out, "ids": list(self.ids)}

    @classmethod
    def from_json(cls, answer: dict, n_vocab: int = 0) -> "ChatAnswer":
        """An answer object read back; BadChatAnswer naming what is wrong.

        >>> ChatAnswer.from_json({"raised": "Conversation roles must alternate"}).raised
        'Conversation roles must alternate'
        >>> ChatAnswer.from_json({"text": "a", "ids": [10]}, n_vocab=10)
        Traceback (most recent call last):
        ...
        harness.protocol.chat.ChatIdOutOfRange: answered id 10 out of range [0, 10) in chat ids
        """
        shapes = [k for k in ("text", "text_hex", "raised") if k in answer]
        if len(shapes) != 1:
            raise BadChatAnswer(f"a chat answer holds exactly one of 'text', 'text_hex' or 'raised', got "
                                f"{sorted(answer)}")
        if "raised" in answer:
            if not isinstance(answer["raised"], str):
                raise BadChatAnswer(f"'raised' must be a string (the template's error), got {answer['raised']!r:.100}")
            return cls(raised=answer["raised"])
        return cls(data=_prompt_bytes(answer), ids=_ids(answer.get("ids"), n_vocab))


def _prompt_bytes(answer: dict) -> bytes:
    if "text" in answer:
        if not isinstance(answer["text"], str):
            raise BadChatAnswer(f"'text' must be a string, got {type(answer['text']).__name__}")
        try:
            return answer["text"].encode("utf-8")
        except UnicodeEncodeError:
            raise BadChatAnswer("'text' holds a lone surrogate; send the bytes as 'text_hex'") from None
    value = answer["text_hex"]
    try:
        if not isinstance(value, str) or len(value) % 2 or " " in value:
            raise ValueError
        return bytes.fromhex(value)
    except ValueError:
        raise BadChatAnswer(f"'text_hex' must be pairs of hex digits, got {str(value)[:100]!r}") from None


def _ids(ids, n_vocab: int) -> list[int] | None:
    if ids is None:
        return None
    if not isinstance(ids, list) or not all(type(i) is int for i in ids):
        raise BadChatAnswer(f"'ids' must be a list of integers, got {str(ids)[:200]}")
    bad = next((i for i in ids if not 0 <= i < n_vocab), None) if n_vocab else None
    if bad is not None:
        raise ChatIdOutOfRange(f"answered id {bad} out of range [0, {n_vocab}) in chat ids")
    return ids
