"""Generated conversations for the chat check: a Hypothesis strategy, a run, and its shrinking.

:func:`conversations` draws a :class:`~harness.engine.chatdiff.Conversation` for one vocab:
an optional system message, then turns either alternating (user, then an assistant reply or a
tool exchange; the shrink target) or in any order (consecutive users, a system message in the
middle, a lone tool message, an assistant message last); message contents are
:func:`harness.inputs.strategies.recipes` texts (every text family: mixed scripts, the vocab's
own pieces, empty, tens of KB when repeated), with whitespace at the edges or the vocab's
special-token texts inside user and system contents; tool definitions and tool calls whose
arguments carry Unicode texts, numbers and booleans; reasoning content on assistant messages;
the kwargs the vocab templates read (``enable_thinking``); with or without a generation prompt.

Everything shrinks toward one user message with empty content: lists toward fewer turns,
``one_of`` toward its first branch, texts toward fewer and simpler fragments.

:func:`generate` runs ``examples`` conversations (seeded: the same seed draws the same
conversations) through :func:`harness.engine.chatdiff.check_one`; for each kind of divergence
found (text, ids, one side raised) it runs Hypothesis again on the same seed with that kind as
the failure and lets it shrink to the smallest conversation, reported with the first divergent
byte of the rendering and the first divergent token of the ids (:func:`explain`).

>>> from hypothesis import find
>>> from harness.inputs.strategies import VocabTexts
>>> find(conversations(VocabTexts(("a",), ("<s>",))), lambda c: True).messages
[{'role': 'user', 'content': ''}]
"""

from __future__ import annotations

import json
import re
import time
import warnings
from dataclasses import dataclass, field, replace

from hypothesis import strategies as st

from harness.engine.chatdiff import ChatCase, Conversation, check_one, compare, where_ids
from harness.errors import HarnessError
from harness.inputs.strategies import MAX_CHARS, Recipe, SpecialText, VocabTexts, materialise, recipes, whitespace

#: Generated conversations per vocab, and the seed, unless ``--examples``/``--seed`` say otherwise.
EXAMPLES, SEED = 30, 0
#: Wall time one shrink may spend (seconds): then the smallest divergent conversation so far stands.
SHRINK_SECONDS = 60.0
#: Tool names and parameter names (Unicode among them) the tools and the tool calls use.
_TOOL_NAMES = ("add", "get_weather", "recherche_données")
_PARAMS = ("a", "city", "città", "名前")
#: The kwargs the pinned vocab templates read (gemma-4's enable_thinking; the others read none).
_KWARGS = st.one_of(st.just({}), st.booleans().map(lambda b: {"enable_thinking": b}))


def _texts(vt: VocabTexts, max_repeat: int = 200) -> st.SearchStrategy[str]:
    """A message content: a recipe's text, the same with whitespace at both edges, or (with
    ``max_repeat`` above 1) repeated up to tens of KB."""
    text = recipes(max_fragments=4, max_repeat=max_repeat).map(lambda r: materialise(r, vt))
    edges = st.tuples(whitespace, text, whitespace).map("".join)
    if max_repeat <= 1:
        return st.one_of(text, edges)
    # 1 in 16 of this branch is repeated (a selector: it shrinks to 0, no repeat)
    long = st.tuples(text, st.integers(0, 15), st.integers(50, max_repeat * 10)).map(
        lambda t: (t[0] * t[2])[:MAX_CHARS] if t[1] == 15 else t[0])
    return st.one_of(text, edges, long)


def _with_special(vt: VocabTexts) -> st.SearchStrategy[str | list]:
    """A content that may hold one of the vocab's special-token texts between two texts, or
    typed content (OpenAI's ``[{"type": "text", "text": ...}]`` parts)."""
    special = st.builds(SpecialText, st.integers(0, 2**24), st.sampled_from(["", " ", "\n"]),
                        st.sampled_from(["", " ", "\n"])).map(lambda s: materialise(Recipe((s,)), vt))
    text = st.one_of(_texts(vt), st.tuples(_texts(vt, 1), special, _texts(vt, 1)).map("".join))
    parts = st.lists(text, min_size=1, max_size=3).map(lambda ts: [{"type": "text", "text": t} for t in ts])
    return st.one_of(text, parts)


def _arguments(vt: VocabTexts) -> st.SearchStrategy[dict]:
    """A tool call's arguments: Unicode texts, integers, floats and booleans by parameter name."""
    value = st.one_of(_texts(vt, 1), st.integers(-10**6, 10**6), st.booleans(),
                      st.floats(allow_nan=False, allow_infinity=False, width=32))
    return st.dictionaries(st.sampled_from(_PARAMS), value, max_size=3)


def _tools(vt: VocabTexts) -> st.SearchStrategy[list | None]:
    """No tools, or one to three function definitions with Unicode descriptions."""
    def tool(name, description, params):
        props = {p: {"type": t, "description": d} for p, t, d in params}
        return {"type": "function", "function": {"name": name, "description": description, "parameters": {
            "type": "object", "properties": props, "required": list(props)[:1]}}}
    param = st.tuples(st.sampled_from(_PARAMS), st.sampled_from(["string", "number", "boolean"]), _texts(vt, 1))
    one = st.builds(tool, st.sampled_from(_TOOL_NAMES), _texts(vt, 1), st.lists(param, max_size=3))
    return st.one_of(st.none(), st.lists(one, min_size=1, max_size=3))


@dataclass(frozen=True)
class _Turn:
    """Messages drawn together (a tool exchange is an assistant message and its tool results)."""

    messages: tuple = field(default_factory=tuple)


def _msg(role: str, content: str) -> _Turn:
    return _Turn(({"role": role, "content": content},))


def _assistant(content: str, reasoning: str | None) -> _Turn:
    m = {"role": "assistant", "content": content}
    return _Turn((m if reasoning is None else {**m, "reasoning_content": reasoning},))


def _exchange(content: str | None, calls: list, results: list) -> _Turn:
    """An assistant message with tool calls (arguments a JSON text, or an object when the
    call's flag says so), then one tool message per result given."""
    tool_calls = [{"id": f"call_{i}", "type": "function",
                   "function": {"name": name,
                                "arguments": args if as_object else json.dumps(args, ensure_ascii=False)}}
                  for i, (name, args, as_object) in enumerate(calls)]
    tools = [{"role": "tool", "tool_call_id": f"call_{i}", "name": calls[i][0], "content": r}
             for i, r in enumerate(results[:len(calls)])]
    return _Turn(({"role": "assistant", "content": content, "tool_calls": tool_calls}, *tools))


def _turns(vt: VocabTexts) -> dict:
    """The kinds of turn, by name."""
    text = _texts(vt)
    call = st.tuples(st.sampled_from(_TOOL_NAMES), _arguments(vt), st.booleans())
    return {
        "user": _with_special(vt).map(lambda c: _msg("user", c)),
        "assistant": st.builds(_assistant, text, st.one_of(st.none(), text)),
        "exchange": st.builds(_exchange, st.one_of(text, st.none()), st.lists(call, min_size=1, max_size=2),
                              st.lists(text, min_size=1, max_size=2)),
        "system": _with_special(vt).map(lambda c: _msg("system", c)),
        "tool": text.map(lambda c: _msg("tool", c)),
    }


def _alternating(t: dict) -> st.SearchStrategy[list]:
    """(user, reply) pairs, a last user message, and maybe an assistant message after it."""
    reply = st.one_of(t["assistant"], t["exchange"])
    return st.builds(lambda pairs, last, tail: [x for p in pairs for x in p] + [last] + ([tail] if tail else []),
                     st.lists(st.tuples(t["user"], reply), max_size=3), t["user"], st.one_of(st.none(), reply))


def conversations(vt: VocabTexts, max_turns: int = 6) -> st.SearchStrategy[Conversation]:
    """Conversations for the vocab whose texts are ``vt`` (module docstring: what is drawn)."""
    t = _turns(vt)
    free = st.lists(st.one_of(*t.values()), min_size=1, max_size=max_turns)
    system = st.one_of(st.none(), _with_special(vt))
    return st.builds(_conversation, system, st.one_of(_alternating(t), free), _tools(vt),
                     st.booleans().map(lambda b: not b), _KWARGS)


def _conversation(system, turns, tools, add_generation_prompt, kwargs) -> Conversation:
    messages = ([{"role": "system", "content": system}] if system is not None else [])
    messages += [m for turn in turns for m in turn.messages]
    return Conversation("generated", messages, add_generation_prompt, tools, kwargs)


def kind(detail: str) -> str:
    """A divergence's kind, from compare's detail: what a shrink must keep.

    >>> kind("text differs at byte 3: ..."), kind("the port raised ('x'), llama.cpp rendered b''")
    ('text differs', 'the port raised')
    """
    return re.split(r" at | \(", detail, maxsplit=1)[0]


@dataclass
class Shrunk:
    """The smallest conversation found diverging in one way (``kind``), and how it diverges:
    ``detail`` names the first divergent byte of the rendering and the first divergent token."""

    vocab: str
    kind: str
    detail: str
    conversation: Conversation
    shrunk: bool = True

    def size(self) -> tuple[int, int]:
        """(messages, characters of content in all): what shrinking makes small."""
        return len(self.conversation.messages), sum(map(_chars, self.conversation.messages))


def _chars(message: dict) -> int:
    """Characters of a message's content (its text parts' when typed)."""
    content = message.get("content")
    if isinstance(content, list):
        return sum(len(str(p.get("text", ""))) if isinstance(p, dict) else 0 for p in content)
    return len(content) if isinstance(content, str) else 0


def explain(expected, got) -> str:
    """compare's detail, with the first divergent token too when the texts already differ.

    >>> from harness.protocol.chat import ChatAnswer
    >>> explain(ChatAnswer(b"ab", [1, 2]), ChatAnswer(b"ac", [1, 3]))
    "text differs at byte 1: llama.cpp b'ab', port b'ac'; ids differ at index 1: llama.cpp [1, 2], port [1, 3]"
    """
    why = compare(expected, got)
    if why.startswith("text differs") and expected.ids is not None:
        why += "; " + ("the port gave no ids" if got.ids is None else "the same ids" if got.ids == expected.ids
                       else where_ids(expected.ids, got.ids))
    return why


class _Diverged(HarnessError):
    """Raised inside a Hypothesis run for a conversation that diverges in the kind sought."""


class _OutOfTime(BaseException):
    """Raised inside a Hypothesis run once the shrink's time is up. Not an Exception, so
    Hypothesis does not take it for a failure to shrink: it ends the run at once. (Returning
    instead let Hypothesis' own shrinker go on trying candidates that could no longer be
    checked, for up to its own 300 s: 70 s for a 0.6 s budget on qwen2.)"""


def _hypothesis(strategy, body, examples: int, seed: int, shrink: bool) -> None:
    """``body`` over ``examples`` draws of ``strategy``, seeded, no database, shrinking if asked."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as with_seed

    from harness.inputs.strategies import seeded_generation
    phases = [Phase.generate, Phase.shrink] if shrink else [Phase.generate]

    def run(conv: Conversation) -> None:
        body(conv)

    test = settings(max_examples=examples, database=None, deadline=None, phases=phases, derandomize=False,
                    report_multiple_bugs=False, print_blob=False, suppress_health_check=list(HealthCheck))(
        given(strategy)(run))
    with seeded_generation(), warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Generating overly large repr")  # a failing example's strategy
        with_seed(seed)(test)()


def draw(vt: VocabTexts, examples: int = EXAMPLES, seed: int = SEED) -> list[Conversation]:
    """``examples`` conversations of :func:`conversations`, the same ones for the same seed.

    >>> len(draw(VocabTexts(("a",), ("<s>",)), 3)) == 3
    True
    """
    out: list[Conversation] = []
    _hypothesis(conversations(vt), out.append, examples, seed, shrink=False)
    return out


def generate(vocab: str, port, ref, vt: VocabTexts, *, examples: int = EXAMPLES, seed: int = SEED,
             shrink_seconds: float = SHRINK_SECONDS) -> tuple[list[ChatCase], list[Shrunk]]:
    """``examples`` generated conversations checked as the fixed ones are (one ChatCase each,
    named ``generated N``), and the smallest divergent conversation of each kind found."""
    cases, first = [], {}

    def record(conv: Conversation) -> None:
        case, _, _ = check_one(vocab, port, ref, conv)
        case.conversation = f"generated {len(cases) + 1}"
        cases.append(case)
        if case.outcome == "diverge":
            first.setdefault(kind(case.detail), conv)

    _hypothesis(conversations(vt), record, examples, seed, shrink=False)
    return cases, [shrink(vocab, port, ref, vt, k, conv, examples=examples, seed=seed, seconds=shrink_seconds)
                   for k, conv in first.items()]


def shrink(vocab: str, port, ref, vt: VocabTexts, wanted: str, found: Conversation, *, examples: int,
           seed: int, seconds: float = SHRINK_SECONDS) -> Shrunk:
    """The run again on the same seed, failing on a divergence of kind ``wanted``: Hypothesis
    shrinks it (``found`` if the run does not meet it again), then :func:`minimise` deletes what
    is left to delete. After ``seconds`` the smallest divergent conversation so far stands."""
    from hypothesis.errors import HypothesisException
    deadline, best = time.monotonic() + seconds, [None]

    def keeps(conv: Conversation) -> bool:
        case, _, _ = check_one(vocab, port, ref, conv)
        return case.outcome == "diverge" and kind(case.detail) == wanted

    def body(conv: Conversation) -> None:
        if time.monotonic() >= deadline:
            raise _OutOfTime  # nothing can be checked now: best[0] stands
        if keeps(conv):
            best[0] = conv  # the shrinker only tries smaller ones: the last failure is the smallest
            raise _Diverged(wanted)

    try:
        _hypothesis(conversations(vt), body, examples, seed, shrink=True)
    except (_Diverged, _OutOfTime, HypothesisException):
        pass
    conv = minimise(best[0] or found, keeps, deadline)
    case, expected, got = check_one(vocab, port, ref, conv)
    return Shrunk(vocab, wanted, explain(expected, got) if got else case.detail, conv, shrunk=best[0] is not None)


def minimise(conv: Conversation, keeps, deadline: float) -> Conversation:
    """What Hypothesis' shrink left, smaller while ``keeps`` holds (until ``deadline``, a
    time.monotonic()): messages deleted, tools and kwargs dropped, each content and reasoning
    text shrunk (:func:`harness.engine.shrink.shrink_text`).

    >>> c = Conversation("x", [{"role": "user", "content": "ab"}, {"role": "user", "content": "xyz"}])
    >>> minimise(c, lambda c: any("y" in m["content"] for m in c.messages), time.monotonic() + 9).messages
    [{'role': 'user', 'content': 'y'}]
    """
    from harness.engine.shrink import shrink_sequence

    def left() -> float:
        return max(0.0, deadline - time.monotonic())
    msgs = shrink_sequence(tuple(conv.messages), lambda ms: keeps(replace(conv, messages=list(ms))), seconds=left())
    conv = replace(conv, messages=list(msgs))
    for name, simpler in (("tools", None), ("kwargs", {})):
        if getattr(conv, name) != simpler and left() and keeps(replace(conv, **{name: simpler})):
            conv = replace(conv, **{name: simpler})
    for i in range(len(conv.messages)):
        conv = _shrink_message(conv, i, keeps, left)
    return conv


def _shrink_message(conv: Conversation, i: int, keeps, left) -> Conversation:
    """Message ``i``'s content and reasoning shrunk; typed content loses parts, then each
    part's text is shrunk."""
    from harness.engine.shrink import shrink_sequence, shrink_text

    def edit(c: Conversation, key: str, value) -> Conversation:
        return replace(c, messages=[*c.messages[:i], {**c.messages[i], key: value}, *c.messages[i + 1:]])
    for key in ("content", "reasoning_content"):
        value = conv.messages[i].get(key)
        if isinstance(value, str) and value:
            conv = edit(conv, key, shrink_text(value, lambda t: keeps(edit(conv, key, t)), seconds=left()))
        elif isinstance(value, list) and all(isinstance(p, dict) and isinstance(p.get("text"), str) for p in value):
            parts = list(shrink_sequence(tuple(value), lambda ps: keeps(edit(conv, key, list(ps))), seconds=left()))
            for k, p in enumerate(parts):
                def typed(t, k=k, p=p):
                    return edit(conv, key, [*parts[:k], {**p, "text": t}, *parts[k + 1:]])
                parts[k] = {**p, "text": shrink_text(p["text"], lambda t: keeps(typed(t)), seconds=left())}
            conv = edit(conv, key, parts)
    return conv
