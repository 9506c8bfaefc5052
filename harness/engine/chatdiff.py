"""The differential ``chat`` check: a port's renderings of fixed conversations vs llama.cpp's.

For a vocab whose GGUF carries ``tokenizer.chat_template``, each conversation of
:data:`CONVERSATIONS` goes through the port's ``chat`` op (the vocab's own template) and
through the chat reference (:func:`reference.chat.render`, llama-server's rendering and
prompt ids). A case agrees when both raise, or both render the same bytes and, if the port
gave ids, the same ids. A port without ``chat`` (or answering ``unsupported``) makes the
case unsupported, never a pass; any other port failure is that case's port error.

>>> [c.name for c in CONVERSATIONS][:3]
['two turns', 'system first', 'special text in a message']
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.errors import ChatTemplateError, PortError, PortUnsupported
from harness.protocol.chat import ChatAnswer


@dataclass(frozen=True)
class Conversation:
    """One fixed chat request (the vocab's own template)."""

    name: str
    messages: list
    add_generation_prompt: bool = True
    tools: list | None = None
    kwargs: dict = field(default_factory=dict)


_USER = {"role": "user", "content": "What is 2+2?"}
_TOOLS = [{"type": "function", "function": {"name": "add", "description": "Add two numbers",
                                            "parameters": {"type": "object", "properties": {
                                                "a": {"type": "number"}, "b": {"type": "number"}}}}}]
CONVERSATIONS = (
    Conversation("two turns", [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."}, _USER]),
    Conversation("system first", [{"role": "system", "content": "Be terse."}, _USER]),
    Conversation("special text in a message", [{"role": "user", "content": "a<|im_end|><eos></s><|end|>b"}]),
    Conversation("assistant last (prefilled)", [_USER, {"role": "assistant", "content": "4"}], add_generation_prompt=False),
    Conversation("whitespace kept", [{"role": "user", "content": "  lead and trail  \n\n"}]),
    Conversation("thinking off", [_USER], kwargs={"enable_thinking": False}),
    Conversation("tools and a tool call", [_USER, {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{\"a\": 2, \"b\": 2}"}}]},
        {"role": "tool", "tool_call_id": "c1", "name": "add", "content": "4"}], tools=_TOOLS),
)


@dataclass
class ChatCase:
    """One conversation's outcome: ``agree``, ``diverge``, ``unsupported`` or ``port error``."""

    vocab: str
    conversation: str
    outcome: str
    detail: str = ""
    #: For a divergent case: (the Conversation, llama.cpp's ChatAnswer, the port's), what the
    #: chat causes (harness/engine/chatcauses.py) explain; left out of :meth:`to_json`.
    evidence: tuple | None = field(default=None, repr=False, compare=False)

    def to_json(self) -> dict:
        """The case as chat-check's --json writes it (no evidence).

        >>> ChatCase("qwen2", "two turns", "agree").to_json()
        {'vocab': 'qwen2', 'conversation': 'two turns', 'outcome': 'agree', 'detail': ''}
        """
        return {"vocab": self.vocab, "conversation": self.conversation, "outcome": self.outcome,
                "detail": self.detail}


def _where(ref: bytes, got: bytes) -> str:
    """Where two renderings part, with a little context each side.

    >>> print(_where(b"abcXdef", b"abcYdef"))
    text differs at byte 3: llama.cpp b'abcXdef', port b'abcYdef'
    """
    i = next((k for k, (a, b) in enumerate(zip(ref, got)) if a != b), min(len(ref), len(got)))
    lo = max(0, i - 24)
    return f"text differs at byte {i}: llama.cpp {ref[lo:i + 24]!r}, port {got[lo:i + 24]!r}"


def compare(expected: ChatAnswer, got: ChatAnswer) -> str:
    """'' when the port's answer agrees with llama.cpp's, else what differs.

    >>> compare(ChatAnswer(b"a", [1]), ChatAnswer(b"a"))
    ''
    >>> compare(ChatAnswer(raised="no"), ChatAnswer(b"a"))
    "llama.cpp raised ('no'), the port rendered b'a'"
    """
    if expected.raised is not None or got.raised is not None:
        if expected.raised is not None and got.raised is not None:
            return ""
        if expected.raised is not None:
            return f"llama.cpp raised ({expected.raised[:200]!r}), the port rendered {got.data[:80]!r}"
        return f"the port raised ({got.raised[:200]!r}), llama.cpp rendered {expected.data[:80]!r}"
    if got.data != expected.data:
        return _where(expected.data, got.data)
    if got.ids is not None and got.ids != expected.ids:
        return where_ids(expected.ids, got.ids) + (" (llama-server tokenizes the prompt with add_special and "
                                                   "parse_special true)")
    return ""


def where_ids(ref: list[int], got: list[int]) -> str:
    """The first divergent token of two id lists, with a few ids of context.

    >>> where_ids([1, 2, 3], [1, 2, 4, 5])
    'ids differ at index 2: llama.cpp [1, 2, 3], port [1, 2, 4, 5]'
    """
    k = next((i for i, (a, b) in enumerate(zip(ref, got)) if a != b), min(len(ref), len(got)))
    return f"ids differ at index {k}: llama.cpp {ref[max(0, k - 2):k + 6]}, port {got[max(0, k - 2):k + 6]}"


def reference_answer(ref, conv: Conversation) -> ChatAnswer:
    """llama.cpp's answer: the chat reference over the vocab ``ref`` (its own template)."""
    from reference.chat import render
    try:
        out = render(None, conv.messages, tools=conv.tools, add_generation_prompt=conv.add_generation_prompt,
                     kwargs=conv.kwargs, vocab=ref)
    except ChatTemplateError as e:
        return ChatAnswer(raised=e.message)
    return ChatAnswer(out.data, out.ids)


def check_one(vocab: str, port, ref, conv: Conversation) -> tuple[ChatCase, ChatAnswer | None, ChatAnswer | None]:
    """One conversation through ``port.chat`` and the reference: its ChatCase, llama.cpp's
    answer and the port's (None when it gave none)."""
    expected = reference_answer(ref, conv)
    chat = getattr(port, "chat", None)
    try:
        if chat is None:
            raise PortUnsupported("chat (this port does not render chat templates)")
        got = chat(None, conv.messages, tools=conv.tools, add_generation_prompt=conv.add_generation_prompt,
                   kwargs=conv.kwargs, builtin=False)
    except (PortUnsupported, NotImplementedError) as e:
        return ChatCase(vocab, conv.name, "unsupported", _line(e)), expected, None
    except PortError as e:
        return ChatCase(vocab, conv.name, "port error", _line(e)), expected, None
    if not isinstance(got, ChatAnswer):
        return (ChatCase(vocab, conv.name, "port error", f"chat returned {type(got).__name__} (expected a ChatAnswer)"),
                expected, None)
    why = compare(expected, got)
    if not why:
        return ChatCase(vocab, conv.name, "agree"), expected, got
    return ChatCase(vocab, conv.name, "diverge", why, (conv, expected, got)), expected, got


def _line(e: Exception) -> str:
    return (str(e).splitlines() or [type(e).__name__])[0][:300]


#: Restarts of a chat port that went down, per vocab, before its later cases are left to it down.
RESTARTS = 10


class Restarting:
    """A chat port opened again after it goes down (a crash, a hang, garbage): that case is
    its port error, and every later case is still asked, so one crash does not hide the
    other outcomes (kherud-llama aborts on an empty message; the cases after it are checked).
    At most :data:`RESTARTS` times; then the port stays down and says so.

    >>> class Dies:
    ...     dead = None
    ...     def chat(self, *a, **k):
    ...         self.dead = "gone"
    ...         raise PortError("crashed")
    >>> r = Restarting(Dies)
    >>> for _ in range(2):
    ...     try:
    ...         r.chat(None, [])
    ...     except PortError as e:
    ...         print(e)
    crashed
    crashed
    >>> r.restarts
    2
    """

    def __init__(self, open_port, port=None):
        # ``port``: the first one, opened by the caller (a port that cannot start at all is
        # the check's error, not each case's)
        self._open, self._port, self.restarts = open_port, port, 0

    def chat(self, *args, **kwargs):
        if self._port is None:
            self._port = self._open()
        chat = getattr(self._port, "chat", None)
        if chat is None:
            raise PortUnsupported("chat (this port does not render chat templates)")
        try:
            return chat(*args, **kwargs)
        except PortError:
            if getattr(self._port, "dead", None) is not None and self.restarts < RESTARTS:
                self.close()
                self.restarts += 1
            raise

    def close(self) -> None:
        if self._port is not None:
            getattr(self._port, "close", lambda: None)()
            self._port = None


def check_vocab(vocab: str, port, ref, conversations=CONVERSATIONS) -> list[ChatCase]:
    """Every conversation through ``port.chat`` and the reference; one ChatCase each."""
    return [check_one(vocab, port, ref, conv)[0] for conv in conversations]
