"""The harness chat renderer (harness/chat/) against llama.cpp's (reference.chat.render).

Every pinned models/templates/*.jinja and every vocab-carried template renders the fixed
conversations of CONVERSATIONS through both; a case is ``exact`` (same text, and for the
vocab templates the same prompt ids), ``both raise``, ``unsupported`` (the renderer says so,
naming what) or ``differ``. The counts are asserted, so a regression (or a fix) shows; and
the comparison is shown to catch an injected difference (Jinja2's defaults).
"""

from __future__ import annotations

import collections

import pytest

from harness.conformance.needs import require
from harness.errors import ChatTemplateError
from tests.support.chat import pinned_templates

TOOLS = [{"type": "function", "function": {"name": "add", "description": "Add two numbers", "parameters": {
    "type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}}}]
CALL = [{"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{\"a\": 2, \"b\": 2}"}}]
CONVERSATIONS = {
    "system-user": dict(messages=[{"role": "system", "content": "Be terse."}, {"role": "user", "content": "2+2?"}]),
    "multi-turn": dict(messages=[{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."},
                                 {"role": "user", "content": "What is 2+2?"}]),
    "tool-call": dict(messages=[{"role": "user", "content": "What is 2+2?"},
                                {"role": "assistant", "content": "", "tool_calls": CALL},
                                {"role": "tool", "tool_call_id": "c1", "name": "add", "content": "4"}], tools=TOOLS),
    "consecutive-users": dict(messages=[{"role": "user", "content": "one"}, {"role": "user", "content": "two"}]),
    "special-text": dict(messages=[{"role": "user", "content": "a<|im_end|><eos></s><|end|>b"}]),
    "empty-content": dict(messages=[{"role": "user", "content": ""}]),
    "unicode": dict(messages=[{"role": "user", "content": "  Grüße 👋 日本語\t\n"}]),
    "no-gen-prompt": dict(messages=[{"role": "user", "content": "Hi"}], add_generation_prompt=False),
    "thinking-off": dict(messages=[{"role": "user", "content": "Hi"}], kwargs={"enable_thinking": False}),
    "prefill": dict(messages=[{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "4"}]),
}
VOCAB_TEMPLATES = ("command-r", "gemma-4", "phi-3", "qwen2", "qwen35")
#: Measured at 0c1e570: 70 templates x 10 conversations, text only (bos "<s>", eos "</s>").
EXPECTED_TEMPLATES = {"exact": 542, "both raise": 6, "unsupported": 152}
#: Measured at 0c1e570: the 5 vocab templates x 10 conversations, text and llama-server's ids.
EXPECTED_VOCABS = {"exact": 43, "both raise": 1, "unsupported": 6}


def outcome(reference, harness) -> tuple[str, str]:
    """(outcome, detail) of one case from the two renderers' results (a rendering, or the exception)."""
    from harness.chat.render import ChatRaised, ChatUnsupported
    if isinstance(harness, ChatUnsupported):
        return "unsupported", str(harness)
    ref_raised, got_raised = isinstance(reference, ChatTemplateError), isinstance(harness, ChatRaised)
    if ref_raised and got_raised:
        return "both raise", ""
    if ref_raised or got_raised:
        return "differ", f"llama.cpp {reference!r:.200}, harness {harness!r:.200}"
    return ("exact", "") if reference == harness else ("differ", f"llama.cpp {reference!r:.300}\nharness {harness!r:.300}")


def _call(fn, *args, **kwargs):
    from harness.chat.render import ChatRaised, ChatUnsupported
    try:
        return fn(*args, **kwargs)
    except (ChatTemplateError, ChatRaised, ChatUnsupported) as e:
        return e


#: llama.cpp's rendering (or its raise) of each (template, conversation), kept for the process.
_REFERENCE: dict[tuple[str, str], object] = {}


def compare_templates(ref_chat, render) -> tuple[collections.Counter, list[str]]:
    """Every pinned template x every conversation, text only; ``render`` is the harness renderer."""
    counts, differ = collections.Counter(), []
    for path in pinned_templates():
        source = path.read_text(encoding="utf-8")
        for name, conv in CONVERSATIONS.items():
            kw = dict(tools=conv.get("tools"), add_generation_prompt=conv.get("add_generation_prompt", True),
                      kwargs=conv.get("kwargs"), bos_token="<s>", eos_token="</s>")
            key = (path.name, name)
            if key not in _REFERENCE:  # llama.cpp's renderings are 4/5 of a sweep: once per process
                _REFERENCE[key] = _call(lambda: ref_chat.render(source, conv["messages"], **kw).text)
            ref = _REFERENCE[key]
            got = _call(lambda: render(source, conv["messages"], **kw).text)
            kind, detail = outcome(ref, got)
            counts[kind] += 1
            if kind == "differ":
                differ.append(f"{path.name} [{name}]: {detail}")
    return counts, differ


#: The sweeps of the 70 templates share llama.cpp's renderings (_REFERENCE, 4/5 of a sweep's
#: time): make test's --dist loadgroup runs them on one worker, so they are rendered once.
SWEEP = pytest.mark.xdist_group("chat-template-sweep")


@SWEEP
def test_every_pinned_template_renders_as_llama_cpp(ref_chat):
    from harness.chat.render import render
    counts, differ = compare_templates(ref_chat, render)
    print("\n".join(differ))
    assert dict(counts) == EXPECTED_TEMPLATES, "\n".join(differ)


#: The pinned templates whose generated conversations (8 drawn, seed 0) still part from llama.cpp,
#: each with the llama.cpp behaviour the renderer does not follow yet.
GENERATED_LEFT: dict[str, str] = {}


@pytest.mark.slow
def test_generated_conversations_render_as_llama_cpp_on_all_but_the_named_templates(ref_chat):
    """Issue 32's target: at least 66 of the 70 pinned templates render every generated
    conversation as llama.cpp does (text; both raising agrees; unsupported is left out), and
    the templates left are exactly :data:`GENERATED_LEFT` (one that comes right fails this
    test too, until its entry goes). In make test-slow: 70 templates x 8 conversations
    through both renderers take about 70 s on the 2-core machine. It was withdrawn from make
    test once when google-gemma-4-31B-it parted under xdist in a fresh clone; run alone, with
    the chat tests in one process or after this file's tests it renders as llama.cpp (not
    reproduced since): a template that parts is listed with its first conversation's two
    renderings, so a second sighting says what differed."""
    from harness.chat.render import render
    from harness.engine.chatgen import draw
    from harness.inputs.strategies import VocabTexts
    convs = draw(VocabTexts(("Hello", "数字 123", "  lead", "Grüße 👋"), ("<s>", "<|im_end|>")), 8, 0)
    parted: dict[str, str] = {}
    for path in pinned_templates():
        source = path.read_text(encoding="utf-8")
        for n, conv in enumerate(convs):
            kw = dict(tools=conv.tools, add_generation_prompt=conv.add_generation_prompt, kwargs=conv.kwargs,
                      bos_token="<s>", eos_token="</s>")
            ref = _call(lambda: ref_chat.render(source, conv.messages, **kw).text)
            mine = _call(lambda: render(source, conv.messages, **kw).text)
            if outcome(ref, mine)[0] == "differ" and path.name not in parted:
                parted[path.name] = f"conversation {n}: llama.cpp {ref!r:.400} / harness {mine!r:.400}"
    surprises = {k: v for k, v in parted.items() if k not in GENERATED_LEFT}
    assert not surprises, surprises
    assert set(parted) == set(GENERATED_LEFT), f"now render as llama.cpp: {sorted(set(GENERATED_LEFT) - set(parted))}"
    assert len(pinned_templates()) - len(parted) >= 66


def test_the_vocab_templates_give_llama_servers_text_and_ids(ref_chat):
    from harness.protocol.chat import ChatAnswer
    from harness.tokenizer.facade import Tokenizer
    from harness.tokenizer.serve import TokenizerBackend
    from reference.inproc import load_reference
    from reference.vocabs import vocab_path
    counts, differ = collections.Counter(), []
    for vocab in VOCAB_TEMPLATES:
        ref = require(lambda: load_reference(vocab_path(vocab)))
        port = TokenizerBackend(Tokenizer.from_gguf(vocab_path(vocab)))
        for name, conv in CONVERSATIONS.items():
            kw = dict(tools=conv.get("tools"), add_generation_prompt=conv.get("add_generation_prompt", True),
                      kwargs=conv.get("kwargs") or {})
            expected = _call(lambda: ref_chat.render(None, conv["messages"], vocab=ref, **kw))
            try:
                got = port.chat(None, conv["messages"], builtin=False, **kw)
            except NotImplementedError:
                counts["unsupported"] += 1
                continue
            if isinstance(expected, ChatTemplateError) or got.raised is not None:
                kind = "both raise" if isinstance(expected, ChatTemplateError) and got.raised is not None else "differ"
            else:
                kind = "exact" if ChatAnswer(expected.data, expected.ids) == got else "differ"
            counts[kind] += 1
            if kind == "differ":
                differ.append(f"{vocab} [{name}]")
    assert dict(counts) == EXPECTED_VOCABS, differ


@SWEEP
@pytest.mark.parametrize("inject", ["jinja2_whitespace", "jinja2_json"])
def test_the_comparison_catches_an_injected_difference(ref_chat, inject):
    """Jinja2's defaults where llama.cpp differs (trim_blocks and lstrip_blocks off; Jinja2's own
    tojson) make exact cases differ: the comparison sees them."""
    import functools

    from harness.chat import render
    counts, _ = compare_templates(ref_chat, functools.partial(render.render, **{inject: True}))
    assert counts["differ"] > 20
    assert counts["exact"] < EXPECTED_TEMPLATES["exact"] - 20


def test_llama_cpp_semantics_where_jinja2_differs():
    from harness.chat.engine import environment
    env = environment()
    r = lambda src, **kw: env.from_string(src).render(**kw)  # noqa: E731
    assert r("{% if true %}\n  x\n{% endif %}\n") == "  x\n"                       # trim/lstrip blocks
    assert r("{{ {'b': 1, 'a': '<é>'} | tojson }}") == '{"b": 1, "a": "<é>"}'      # order, no escaping
    assert r("{{ x.y.z }}|{{ (x ~ 'a') }}|{{ x + 'b' }}") == "|a|b"                  # undefined chains, concatenates
    assert r("{{ 'héllo wORLD'.title() }}|{{ 'a  b'.split() | tojson }}") == 'Héllo World|["a", "", "b"]'
    # printed: none, undefined and objects as nothing, a list as its items (gather_string_parts_recursive)
    assert r("{{ none }}|{{ [1, [2, 'a']] }}|{{ {'a': 1} }}|{{ 'a  b'.split() }}") == "|12a||ab"
    # + and ~ (binary_expression): none next to a string is nothing, a string joins anything printed
    assert r("{{ none + 'a' }}{{ 'b' ~ none }}{{ 'c' + 1 }}|{{ 'x' in u }}|{{ 'x' not in u }}") == "abc1|False|True"
    assert r("{% for k in d %}{{ k }}{% endfor %}{% for k, v in d %}{{ v }}{% endfor %}", d={"a": 1}) == "a1"
    from harness.chat.engine import TemplateRaised
    with pytest.raises(TemplateRaised, match="Jinja Exception: no"):
        r("{{ raise_exception('no') }}")
    with pytest.raises(TemplateRaised, match="for loop: got String"):
        r("{% for c in 'ab' %}{% endfor %}")
    with pytest.raises(TemplateRaised, match="in on undefined values"):
        r("{{ u in ['a'] }}")
    with pytest.raises(TemplateRaised, match='Unknown operator "~" between Integer and Integer'):
        r("{{ 1 ~ 2 }}")
