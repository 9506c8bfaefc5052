"""Chat ports with a bug the fixed conversations of the chat check do not show.

Each answers llama.cpp's own rendering and ids (:func:`reference.chat.render` on the vocab)
of a conversation it first changes, as a port with that bug would:

- ``PORT=py:tests.ports.chatbug:rstrip_assistant``: trailing whitespace of every assistant
  message's content is stripped (the fixed assistant contents, "Hello." and "4", end in none);
- ``PORT=py:tests.ports.chatbug:crlf``: CRLF in any content is read as LF (no fixed content
  holds a CR).

Only the generated phase of ``chat-check`` meets these; ``tests/test_chatgen.py`` checks it
catches them and shrinks each to a conversation of a message or two.

And ports with a defect of the chat causes' catalogue (``tests/test_chatcauses.py``), each
rendering with the harness renderer (:mod:`harness.chat`) under one Jinja2 default, or
changing llama.cpp's answer, then tokenizing with llama.cpp's tokenizer:

- ``jinja2_defaults``: Jinja2's whitespace defaults (``trim_blocks``/``lstrip_blocks`` off);
- ``jinja2_tojson``: Jinja2's own ``tojson`` (keys sorted, ASCII and HTML escaped);
- ``bos_doubled``: the template's BOS text kept in the prompt, so the tokenizer's BOS doubles it;
- ``specials_plain``: the prompt tokenized with parse_special false;
- ``bos_doubled_crlf``: two bugs, the BOS doubled and CRLF read as LF (only behind the BOS).
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


class Jinja2Chat:
    """The harness renderer under a Jinja2 default (``setting``), llama.cpp's tokenizer after it;
    ``template`` replaces the vocab's own when given."""

    def __init__(self, vocab_path: str, template: str | None = None, **setting):
        from harness.tokenizer.facade import Tokenizer
        from reference.inproc import load_reference
        self.tok, self.ref = Tokenizer.from_gguf(vocab_path), load_reference(vocab_path)
        self.template, self.setting = template, setting

    def chat(self, template, messages, *, tools=None, add_generation_prompt=False, kwargs=None, builtin=False):
        from harness.chat.render import ChatRaised, ChatUnsupported, render
        from harness.errors import PortUnsupported
        from harness.tokenizer.serve import TokenizerBackend
        v = self.tok.vocab
        try:
            own = template or self.template or TokenizerBackend(self.tok)._template(None, tools)
            text = render(own, messages, tools=tools,
                          add_generation_prompt=add_generation_prompt, kwargs=kwargs, bos_token=self._text(v.bos),
                          eos_token=self._text(v.eos), add_bos=v.add_bos, add_eos=v.add_eos, **self.setting).text
        except ChatRaised as e:
            return ChatAnswer(raised=str(e))
        except ChatUnsupported as e:
            raise PortUnsupported(str(e)) from None
        data = text.encode("utf-8", "surrogatepass")
        return ChatAnswer(data, self.ref.encode(data, add_special=True, parse_special=True))

    def _text(self, token_id) -> str:
        return "" if token_id is None else self.tok.token_to_piece(token_id, special=True).decode("utf-8", "replace")


class RetokenizedChat(BuggyChat):
    """llama.cpp's rendering, changed by ``text(answer, ref)`` and tokenized by ``ids(data, ref)``."""

    def __init__(self, vocab_path: str, text, ids):
        super().__init__(vocab_path, lambda m: m)
        self.text, self.ids = text, ids

    def chat(self, template, messages, **kw):
        answer = super().chat(template, messages, **kw)
        if answer.raised is not None:
            return answer
        data = self.text(answer.data, self.ref)
        return ChatAnswer(data, self.ids(data, self.ref))


def jinja2_defaults(vocab_path: str) -> Jinja2Chat:
    return Jinja2Chat(vocab_path, jinja2_whitespace=True)


def jinja2_tojson(vocab_path: str, template: str | None = None) -> Jinja2Chat:
    return Jinja2Chat(vocab_path, template, jinja2_json=True)


def _bos_text(ref) -> bytes:
    bos = ref.encode(b"", add_special=True, parse_special=False)
    return ref.token_to_piece(bos[0], special=True) if bos else b""


def bos_doubled(vocab_path: str) -> RetokenizedChat:
    return RetokenizedChat(vocab_path, lambda data, ref: _bos_text(ref) + data,
                           lambda data, ref: ref.encode(data, add_special=True, parse_special=True))


def bos_text_kept(vocab_path: str) -> RetokenizedChat:
    """llama-cpp-python 0.3.36's way: the BOS text kept, the prompt tokenized without adding BOS."""
    return RetokenizedChat(vocab_path, lambda data, ref: _bos_text(ref) + data,
                           lambda data, ref: ref.encode(data, add_special=False, parse_special=True))


def specials_plain(vocab_path: str) -> RetokenizedChat:
    return RetokenizedChat(vocab_path, lambda data, ref: data,
                           lambda data, ref: ref.encode(data, add_special=True, parse_special=False))


def bos_doubled_crlf(vocab_path: str) -> RetokenizedChat:
    """Two bugs: CRLF in a content read as LF, and the BOS doubled; every case shows the BOS."""
    port = bos_doubled(vocab_path)
    port.change = _crlf
    return port
