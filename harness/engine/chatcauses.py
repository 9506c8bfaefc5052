"""Chat causes: the chat check's divergent cases explained by named port defects.

A chat variant (:data:`CATALOGUE`) turns llama.cpp's answer for a conversation (or a
re-rendering with the harness renderer, :mod:`harness.chat`, under one changed setting) into
what a port with that one defect would answer. A divergent case is explained by the first
variant that reproduces the port's answer exactly (raised when it raised; the same bytes;
the same ids when the port gave ids); cases with the same explanation are one cause. Cases no
variant explains are grouped by the edit at the first divergent byte (:func:`edit`) as
``unexplained (chat): ...``.

>>> edit(ChatAnswer(b"ab\\n"), ChatAnswer(b"ab"))
'bytes dropped (whitespace)'
>>> reproduces(ChatAnswer(b"x", [1]), ChatAnswer(b"x"))
True
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from harness.errors import HarnessError
from harness.protocol.chat import ChatAnswer


class ChatCauseError(HarnessError):
    """A chat cause could not be computed (the message says which case and why)."""


@dataclass(frozen=True)
class ChatVocab:
    """What the variants need of one vocab: its template and BOS/EOS texts and flags (as
    llama-server reads them), and ``encode(data, add_special, parse_special)``: llama.cpp's
    tokenizer on that vocab."""

    template: str
    bos_text: str
    eos_text: str
    add_bos: bool
    add_eos: bool
    bos_id: int | None
    encode: Callable[[bytes, bool, bool], list]
    tool_template: str = ""

    def template_for(self, conv) -> str:
        """The template llama-server renders ``conv`` with: the ``tool_use`` one when tools are given."""
        return self.tool_template if conv.tools and self.tool_template else self.template or self.tool_template

    def prompt_ids(self, data: bytes) -> list:
        """llama-server's ids for a prompt: add_special and parse_special true."""
        return self.encode(data, True, True)


@dataclass(frozen=True)
class Variant:
    """One port defect: ``answer(vocab, conversation, llama.cpp's answer)`` is what a port with
    it answers (None where the defect changes nothing or cannot be computed)."""

    name: str
    title: str
    rule: str
    answer: Callable


def _rerender(v: ChatVocab, conv, **setting) -> ChatAnswer | None:
    """The harness renderer's answer under ``setting`` (None where it does not cover the request)."""
    from harness.chat.render import ChatRaised, ChatUnsupported, render
    try:
        text = render(v.template_for(conv), conv.messages, tools=conv.tools,
                      add_generation_prompt=conv.add_generation_prompt, kwargs=conv.kwargs, bos_token=v.bos_text,
                      eos_token=v.eos_text, add_bos=v.add_bos, add_eos=v.add_eos, **setting).text
    except ChatRaised as e:
        return ChatAnswer(raised=str(e))
    except (ChatUnsupported, RecursionError):
        return None
    data = text.encode("utf-8", "surrogatepass")
    return ChatAnswer(data, v.prompt_ids(data))


def _rerendered(**setting) -> Callable:
    """A variant's answer: the re-rendering under ``setting``, trusted only where the harness
    renderer with llama.cpp's settings gives llama.cpp's answer for this conversation."""
    def answer(v: ChatVocab, conv, expected: ChatAnswer) -> ChatAnswer | None:
        same = _rerender(v, conv)
        if same is None or not reproduces(expected, same):
            return None
        return _rerender(v, conv, **setting)
    return answer


def bos_text_kept(v: ChatVocab, conv, expected: ChatAnswer) -> ChatAnswer | None:
    """The template's BOS text kept in the rendering, and no second BOS added: llama.cpp's ids,
    the rendering with the BOS text llama-server strips. (A port that answers text only shows
    no more than this, so it comes before ``bos_doubled``.)

    >>> from types import SimpleNamespace as Conversation
    >>> v = ChatVocab("{{ bos_token }}", "<s>", "", True, False, 1, None)
    >>> bos_text_kept(v, Conversation(tools=None), ChatAnswer(b"hi", [1, 5]))
    ChatAnswer(data=b'<s>hi', ids=[1, 5], raised=None)
    """
    if expected.raised is not None or not v.add_bos or "bos_token" not in v.template_for(conv):
        return None
    return ChatAnswer(v.bos_text.encode() + expected.data, expected.ids)


def bos_doubled(v: ChatVocab, conv, expected: ChatAnswer) -> ChatAnswer | None:
    """The template's BOS text kept in the prompt, and the tokenizer adds BOS again.

    >>> from types import SimpleNamespace as Conversation
    >>> v = ChatVocab("{{ bos_token }}", "<s>", "", True, False, 1, None)
    >>> bos_doubled(v, Conversation(tools=None), ChatAnswer(b"hi", [1, 5]))
    ChatAnswer(data=b'<s>hi', ids=[1, 1, 5], raised=None)
    """
    if expected.raised is not None or not v.add_bos or v.bos_id is None or \
            "bos_token" not in v.template_for(conv):
        return None
    return ChatAnswer(v.bos_text.encode() + expected.data, [v.bos_id] + list(expected.ids or []))


def bos_missing(v: ChatVocab, conv, expected: ChatAnswer) -> ChatAnswer | None:
    """The same prompt, tokenized without the BOS llama.cpp adds.

    >>> bos_missing(ChatVocab("", "<s>", "", True, False, 1, None), None, ChatAnswer(b"hi", [1, 5]))
    ChatAnswer(data=b'hi', ids=[5], raised=None)
    """
    if expected.raised is not None or not expected.ids or expected.ids[0] != v.bos_id:
        return None
    return ChatAnswer(expected.data, expected.ids[1:])


def specials_as_text(v: ChatVocab, conv, expected: ChatAnswer) -> ChatAnswer | None:
    """The same prompt tokenized with parse_special false: special-token texts (the template's
    and the messages') read as plain text."""
    if expected.raised is not None:
        return None
    return ChatAnswer(expected.data, v.encode(expected.data, True, False))


def _last_content_ends_in_space(conv) -> bool:
    content = conv.messages[-1].get("content") if conv.messages else None
    if isinstance(content, list):
        content = "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return isinstance(content, str) and content != content.rstrip()


def trailing_newline_kept(v: ChatVocab, conv, expected: ChatAnswer) -> ChatAnswer | None:
    """The template source's last newline kept (llama.cpp drops one).

    >>> from types import SimpleNamespace as Conversation
    >>> v = ChatVocab("x\\n", "", "", False, False, None, lambda d, a, p: list(d))
    >>> trailing_newline_kept(v, Conversation(tools=None), ChatAnswer(b"x", [120])).data
    b'x\\n'
    """
    if expected.raised is not None or not v.template_for(conv).endswith("\n"):
        return None
    data = expected.data + b"\n"
    return ChatAnswer(data, v.prompt_ids(data))


def trailing_space_dropped(v: ChatVocab, conv, expected: ChatAnswer) -> ChatAnswer | None:
    """The prompt's trailing whitespace (the template's, not a message's) stripped."""
    if expected.raised is not None or _last_content_ends_in_space(conv) or expected.data == expected.data.rstrip():
        return None
    data = expected.data.rstrip()
    return ChatAnswer(data, v.prompt_ids(data))


_LEXER = "trim_blocks and lstrip_blocks on (common/jinja/lexer.cpp, \"default config for chat template\")"
CATALOGUE = (
    Variant("jinja2-whitespace", "Jinja2's whitespace defaults: trim_blocks and lstrip_blocks off", _LEXER,
            _rerendered(jinja2_whitespace=True)),
    Variant("bos-text-kept", "the rendering keeps the template's leading BOS text (the prompt ids are "
            "llama.cpp's: no second BOS)", "a leading bos_token text is stripped when the vocab adds BOS "
            "(common/chat.cpp, common_chat_template_direct_apply_impl)", bos_text_kept),
    Variant("bos-doubled", "BOS doubled: the rendering's BOS text kept and BOS added again by the tokenizer",
            "a leading bos_token text is stripped when the vocab adds BOS (common/chat.cpp, "
            "common_chat_template_direct_apply_impl)", bos_doubled),
    Variant("bos-missing", "BOS missing: the prompt tokenized without the BOS llama.cpp adds",
            "the prompt is tokenized with add_special true (tools/server/server-context.cpp, "
            "handle_completions_impl)", bos_missing),
    Variant("specials-as-text", "special-token text read as plain text (the prompt tokenized with parse_special "
            "false)", "the whole prompt, message text included, is tokenized with parse_special true "
            "(tools/server/server-context.cpp, tokenize_input_prompts)", specials_as_text),
    Variant("jinja2-tojson", "tojson as Jinja2's: keys sorted, non-ASCII and <>&' escaped (json.dumps defaults)",
            "insertion order, nothing escaped, separators \", \"/\": \" (common/jinja/value.cpp, tojson)",
            _rerendered(jinja2_json=True)),
    Variant("trailing-newline-kept", "the template source's trailing newline kept",
            "one trailing newline of the source dropped (common/jinja/lexer.cpp)", trailing_newline_kept),
    Variant("trailing-space-dropped", "the prompt's trailing whitespace stripped",
            "the rendering is kept as the template wrote it (common/chat.cpp)", trailing_space_dropped),
)


def reproduces(candidate: ChatAnswer | None, got: ChatAnswer) -> bool:
    """Whether a variant's answer is the port's exactly: both raised, or the same bytes and
    (when the port gave ids) the same ids."""
    if candidate is None:
        return False
    if candidate.raised is not None or got.raised is not None:
        return candidate.raised is not None and got.raised is not None
    return candidate.data == got.data and (got.ids is None or got.ids == candidate.ids)


def explain(v: ChatVocab, conv, expected: ChatAnswer, got: ChatAnswer) -> Variant | None:
    """The first variant of :data:`CATALOGUE` that reproduces the port's answer, else None."""
    return next((var for var in CATALOGUE if reproduces(var.answer(v, conv, expected), got)), None)


#: Variants about the prompt's start (a BOS text or id): a port that has one meets every case
#: with it, so its other defects show only behind it.
ENDS = ("bos-text-kept", "bos-doubled", "bos-missing")


def explain_first(v: ChatVocab, conv, expected: ChatAnswer, got: ChatAnswer) -> tuple[Variant, ChatAnswer] | None:
    """For a case no variant reproduces alone: the first :data:`ENDS` variant that accounts for
    where the port's answer first parts from llama.cpp's, with its answer. It must move the
    first divergence later in the text or the ids and earlier in neither (the one that moves it
    furthest in both, when several do: a doubled BOS also keeps its text), and leave one; what it
    leaves is a second defect, named by its edit (:func:`edit`) as an unexplained cause; the case
    counts for both (:func:`causes`). node-llama-cpp on gemma-4 keeps the ``<bos>`` text *and*
    puts a newline after ``<|think|>``: the BOS explains byte 1, the newline is what is left.

    >>> v = ChatVocab("{{ bos_token }}", "<s>", "", True, False, 1, lambda d, a, p: list(d))
    >>> from types import SimpleNamespace as Conversation
    >>> var, left = explain_first(v, Conversation(tools=None), ChatAnswer(b"hi", [1, 5]), ChatAnswer(b"<s>hi\\n", [1, 5, 6]))
    >>> var.name, edit(left, ChatAnswer(b"<s>hi\\n", [1, 5, 6]))
    ('bos-text-kept', 'bytes added (whitespace)')
    """
    if expected.raised is not None or got.raised is not None:
        return None
    here = _divergence(expected, got)
    best = None  # the one that takes the divergence furthest in both, when two qualify
    for var in CATALOGUE:
        if var.name not in ENDS:
            continue
        answer = var.answer(v, conv, expected)
        if answer is None or answer.raised is not None:
            continue
        there = _divergence(answer, got)
        if all(b >= a for a, b in zip(here, there)) and there != here and not reproduces(answer, got):
            key = (min(there), sum(there))
            if best is None or key > best[0]:
                best = (key, var, answer)
    return None if best is None else best[1:]


def _divergence(a: ChatAnswer, b: ChatAnswer) -> tuple[int, int]:
    """Where two answers first part: (text byte, prompt id index); past the end where they agree."""
    text = _first(a.data, b.data) if a.data != b.data else 1 << 62
    ids_a, ids_b = list(a.ids or []), list(b.ids or [])
    ids = 1 << 62 if b.ids is None or ids_a == ids_b else \
        next((i for i, (x, y) in enumerate(zip(ids_a, ids_b)) if x != y), min(len(ids_a), len(ids_b)))
    return text, ids


def _first(a: bytes, b: bytes) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def _first_edit(a: bytes, b: bytes, window: int = 256) -> tuple[bytes, bytes]:
    """The first edit (old bytes, new bytes) turning ``a`` into ``b``, in a window at the first
    divergent byte.

    >>> _first_edit(b"a\\r\\nb\\r\\n", b"a\\nb\\n")
    (b'\\r', b'')
    """
    from difflib import SequenceMatcher
    i = _first(a, b)
    x, y = a[i:i + window], b[i:i + window]
    op = next((o for o in SequenceMatcher(None, x, y, autojunk=False).get_opcodes() if o[0] != "equal"), None)
    return (x, y) if op is None else (x[op[1]:op[2]], y[op[3]:op[4]])


def _kind(data: bytes) -> str:
    """Whether edited bytes are whitespace (Unicode's, as Python's ``str.isspace``), none, or mixed.

    >>> _kind("\\u3000\\n".encode()), _kind(b"ab"), _kind(b"a ")
    ('whitespace', 'no whitespace', 'mixed')
    """
    text = data.decode("utf-8", "replace")
    spaces = [c.isspace() for c in text]
    return "whitespace" if all(spaces) else "no whitespace" if not any(spaces) else "mixed"


def edit(expected: ChatAnswer, got: ChatAnswer) -> str:
    """The edit at the first divergent byte, what unexplained cases are grouped by.

    >>> edit(ChatAnswer(b"abc"), ChatAnswer(b"aXbc")), edit(ChatAnswer(b"a", [1]), ChatAnswer(b"a", [2]))
    ('bytes added (no whitespace)', 'ids differ, the text the same')
    """
    if expected.raised is not None or got.raised is not None:
        return "llama.cpp raised, the port rendered" if expected.raised is not None else "the port raised"
    a, b = expected.data, got.data
    if a == b:
        return "ids differ, the text the same"
    old, new = _first_edit(a, b)
    if not old:
        return f"bytes added ({_kind(new)})"
    if not new:
        return f"bytes dropped ({_kind(old)})"
    return f"bytes replaced ({_kind(old)} by {_kind(new)})"


@dataclass
class ChatCause:
    """Cases with one explanation: a variant's, or an unexplained edit. ``cases`` counts the
    cases met with another defect too (``with_another`` of them): a case with two defects
    belongs to both causes, not to a third."""

    title: str
    rule: str = ""
    cases: list = field(default_factory=list)
    with_another: list = field(default_factory=list)

    def example(self):
        """The divergent case with the smallest conversation (messages, then content characters),
        one this cause explains alone when it has any."""
        shared = {id(c) for c in self.with_another}
        alone = [c for c in self.cases if id(c) not in shared]
        return min(alone or self.cases, key=lambda c: _size(c.evidence[0]))

    def to_json(self) -> dict:
        ex = self.example()
        conv, expected, got = ex.evidence
        return {"title": self.title, "rule": self.rule, "cases": len(self.cases),
                "with_another": len(self.with_another), "example": {
            "vocab": ex.vocab, "conversation": ex.conversation, "messages": conv.messages, "tools": conv.tools,
            "add_generation_prompt": conv.add_generation_prompt, "kwargs": conv.kwargs, "detail": ex.detail,
            "llama_cpp": expected.to_json(), "port": got.to_json()}}


def _size(conv) -> tuple[int, int]:
    def chars(m):
        c = m.get("content")
        return len(c) if isinstance(c, str) else len(str(c)) if c else 0
    return len(conv.messages), sum(map(chars, conv.messages))


def causes(cases: list, vocabs: dict) -> list[ChatCause]:
    """The divergent ``cases`` (ChatCases with evidence) grouped into causes, most cases first;
    ``vocabs`` maps a vocab name to its :class:`ChatVocab`."""
    found: dict[str, ChatCause] = {}

    def file(case, title: str, rule: str = "", with_another: bool = False) -> None:
        cause = found.setdefault(title, ChatCause(title, rule))
        cause.cases.append(case)
        if with_another:
            cause.with_another.append(case)

    for case in cases:
        if case.outcome != "diverge" or case.evidence is None:
            continue
        conv, expected, got = case.evidence
        try:
            var = explain(vocabs[case.vocab], conv, expected, got)
        except KeyError:
            raise ChatCauseError(f"{case.vocab} [{case.conversation}]: no ChatVocab for this vocab") from None
        if var is not None:
            file(case, var.title, var.rule)
            continue
        first = explain_first(vocabs[case.vocab], conv, expected, got)
        if first is None:
            file(case, f"unexplained (chat): {edit(expected, got)}")
            continue
        var, left = first  # two defects: the case is the start-of-prompt cause's and its second's
        file(case, var.title, var.rule, with_another=True)
        file(case, f"unexplained (chat): {edit(left, got)}", with_another=True)
    return sorted(found.values(), key=lambda c: -len(c.cases))
