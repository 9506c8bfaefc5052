"""A chat request rendered as llama-server renders it: ``common_chat_templates_apply`` in Python.

:func:`render` follows common/chat.cpp step by step (the template source patches of
``common_chat_templates_init``, the caps probes, the message workarounds of
``common_chat_templates_apply_jinja``, the context of ``common_chat_template_direct_apply_impl``
and its BOS/EOS stripping) over the llama.cpp-semantics Jinja2 environment of
:mod:`harness.chat.engine`, and the request checks llama-server makes first
(``oaicompat_chat_params_parse``, tools/server/server-common.cpp).

Where llama.cpp raises, :func:`render` raises :class:`ChatRaised`; what it does not cover
raises :class:`ChatUnsupported` naming it (never a guess):

- continuing a final assistant message (llama-server's ``prefill_assistant``): llama.cpp
  rebuilds the generation prompt from reasoning markers its differential analysis finds
  (common/chat-auto-parser-generator.cpp, common/parsers/*.cpp);
- the specialized handlers that rewrite messages before rendering (GPT-OSS, Ministral 3,
  LFM2, DeepSeek V3.2/V4, an outdated Gemma 4 template with tool messages; common/parsers/).

>>> render("{{ bos_token }}{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}",
...        [{"role": "user", "content": "hi"}], bos_token="<s>").text
'<s><user>hi'
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass
from functools import lru_cache

import jinja2

from harness.chat import inputs
from harness.chat.caps import caps as probe_caps
from harness.chat.engine import TemplateRaised, environment
from harness.errors import HarnessError

CHATML = ("{%- for message in messages -%}\n"
          "  {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>\n' -}}\n"
          "{%- endfor -%}\n"
          "{%- if add_generation_prompt -%}\n"
          "  {{- '<|im_start|>assistant\n' -}}\n"
          "{%- endif -%}")


class ChatRaised(HarnessError):
    """llama.cpp raises for this request too: the template raised, or the request is refused."""


class ChatUnsupported(HarnessError):
    """The harness renderer does not cover this request (the message names what and where in llama.cpp)."""


@dataclass(frozen=True)
class Prompt:
    """A rendered prompt."""

    text: str


@dataclass(frozen=True)
class Template:
    """A template as ``common_chat_template`` holds it: patched, normalized source, compiled, probed."""

    source: str
    compiled: jinja2.Template
    caps: dict


def _patched(source: str) -> str:
    """``common_chat_templates_init``'s default and its two source patches (GPT-OSS, Mistral tool calls)."""
    if not source or source == "chatml":
        source = CHATML
    source = patch_source(source)
    source = source.replace("\r\n", "\n").replace("\r", "\n")
    return source[:-1] if source.endswith("\n") else source


def patch_source(source: str) -> str:
    """``common_chat_templates_init``'s two source patches: a GPT-OSS and a Mistral check made ``if false``.

    >>> patch_source("plain")
    'plain'
    """
    if "<|channel|>" in source and "in message.content or" in source:
        source = source.replace('{%- if "<|channel|>analysis<|message|>" in message.content or '
                                '"<|channel|>final<|message|>" in message.content %}', "{%- if false %}")
    if "[TOOL_CALLS]" in source and "if (message['content'] is none or" in source:
        source = source.replace("{%- if (message['content'] is none or message['content'] == '' or "
                                "message['content']|length == 0) and (message['tool_calls'] is not defined or "
                                "message['tool_calls'] is none or message['tool_calls']|length == 0) %}",
                                "{%- if false %}")
    return source


@lru_cache(maxsize=64)
def load(source: str, jinja2_whitespace: bool = False, jinja2_json: bool = False) -> Template:
    """The compiled, probed template (cached per source and setting); ChatRaised if it does not
    parse. The two flags switch to Jinja2's defaults (:func:`harness.chat.engine.environment`)."""
    source = _patched(source)
    try:
        compiled = environment(jinja2_whitespace, jinja2_json).from_string(source)
    except jinja2.TemplateSyntaxError as e:
        raise ChatRaised(f"the template does not parse: {e}") from None
    return Template(source, compiled, probe_caps(compiled))


#: Specialized handlers of ``common_chat_try_specialized_template`` (common/chat.cpp), in its
#: order: (name, source substrings all present, absent substrings, rewrites messages, supports_thinking).
SPECIALIZED = (
    ("Ministral 3", ("[SYSTEM_PROMPT]", "[TOOL_CALLS]", "[ARGS]"), ("[CALL_ID]",), True, True),
    ("GPT-OSS", ("<|channel|>",), (), True, True),
    ("Muse Glimmer", ("<atem:function_calls>", "<|eom|>"), (), False, True),
    ("Functionary v3.2", (">>>all", ">>>${recipient}"), (), False, False),
    ("Kimi K2", ("<|tool_calls_section_begin|>", "<|tool_call_begin|>"), (), False, True),
    ("Kimi K3", ("<|open|>", "<|close|>", "<|end_of_msg|>"), (), False, True),
    ("Ling 3", ("<role>ASSISTANT</role>", "<arg_key>"), (), False, True),
    ("Cohere2 MoE", ("<|START_TEXT|>", "<|START_ACTION|>"), (), False, True),
    ("LFM2", ("<|tool_list_start|>", "<|tool_list_end|>"), (), True, True),
    ("LFM2.5", ("List of tools: [",), ("<|tool_list_start|>",), True, True),
    ("GigaChat V3", ("<|role_sep|>", "<|message_sep|>"), ("<|function_call|>",), False, False),
    ("MiniMax-M3", ("]<]minimax[>[", "<tool_call>", "<invoke name="), (), False, True),
    ("DeepSeek V3.2/V4", ("dsml_token", "DSML"), (), True, True),
    ("Gemma 4", ("'<|tool_call>call:'",), (), False, True),
    ("MiniCPM5", ("Tool usage guidelines:", '<function name="', '<param name="'), (), False, True),
    ("Qwen3-Coder", ("<tool_call>", "<function=", "<parameter="), ("'<tool_call><function=' ~ tool_call.name ~ '>'",),
     False, None),
)


def specialized(source: str):
    """The specialized handler llama.cpp picks for ``source``, or None (the differential autoparser).

    >>> specialized("{{ '<|channel|>' }}")[0], specialized("plain")
    ('GPT-OSS', None)
    """
    for entry in SPECIALIZED:
        name, present, absent = entry[:3]
        if name == "DeepSeek V3.2/V4" and not ("function_calls" in source or "tool_calls" in source):
            continue
        if all(s in source for s in present) and not any(s in source for s in absent):
            return entry
    return None


def _context(tmpl: Template, msgs, tools, add_generation_prompt, enable_thinking, kwargs, bos, eos) -> dict:
    """The variables ``common_chat_template_direct_apply_impl`` gives the template."""
    now = time.localtime()
    ctx = {"messages": msgs, "bos_token": bos, "eos_token": eos, "enable_thinking": enable_thinking}
    if tools:
        ctx["tools"] = tools
    ctx.update({"datetime": time.strftime("%b %d %Y", now), "date_string": time.strftime("%d %b %Y", now)})
    ctx.update(kwargs)
    if add_generation_prompt:
        ctx["add_generation_prompt"] = True
    if isinstance(ctx.get("preserve_reasoning"), bool):
        on = ctx["preserve_reasoning"]
        ctx.update(preserve_thinking=on, clear_thinking=not on, truncate_history_thinking=not on, drop_thinking=not on)
    if isinstance(ctx.get("reasoning_effort"), str) and ctx["reasoning_effort"]:
        ctx["reasoning_strength"] = ctx["reasoning_effort"]
    return ctx


def apply(tmpl: Template, ctx: dict) -> str:
    """The template rendered over ``ctx``; ChatRaised where llama.cpp's engine raises."""
    try:
        return tmpl.compiled.render(**ctx)
    except TemplateRaised as e:
        raise ChatRaised(str(e)) from None
    except (jinja2.TemplateError, TypeError, ValueError, AttributeError, KeyError, IndexError,
            ZeroDivisionError) as e:
        raise ChatRaised(f"{type(e).__name__}: {e}") from None


def _probe(tmpl: Template, msgs, add_generation_prompt, enable_thinking, bos, eos) -> str | None:
    ctx = _context(tmpl, inputs.normalize(msgs, tmpl.caps), None, add_generation_prompt, enable_thinking,
                   {"enable_thinking": enable_thinking}, bos, eos)
    try:
        return apply(tmpl, ctx)
    except ChatRaised:
        return None


def supports_thinking(tmpl: Template, bos: str, eos: str) -> bool:
    """Whether llama-server turns ``enable_thinking`` on for this template by default
    (``common_chat_templates_support_enable_thinking``: a specialized handler's constant, else
    the differential analysis of common/chat-diff-analyzer.cpp, approximated here: the output
    changes with ``enable_thinking`` or shows an assistant's ``reasoning_content``, or one of its
    source-matched workarounds applies)."""
    src = tmpl.source
    entry = specialized(src)
    if entry is not None:
        return ("<think>" in src) if entry[4] is None else entry[4]
    if ("content.split('</think>')" in src and "reasoning_content" not in src and "<SPECIAL_12>" not in src) or \
            "Write your thoughts between <think></think> and write your response between" in src or \
            all(s in src for s in ("<SPECIAL_10>", "<SPECIAL_11>", "<SPECIAL_12>", "<TOOL_RESPONSE>")):
        return True
    user = {"role": "user", "content": "U_USER_MSG Hello END_U"}
    off = _probe(tmpl, [user], True, False, bos, eos)
    on = _probe(tmpl, [user], True, True, bos, eos)
    if off is not None and on is not None and off != on and _thinking_markers(off, on):
        return True
    asst = {"role": "assistant", "content": "A_ASST_MSG I can help END_A"}
    plain = _probe(tmpl, [user, asst], False, True, bos, eos)
    thought = _probe(tmpl, [user, {**asst, "reasoning_content": "REASON_PART I am thinking END_R"}], False, True,
                     bos, eos)
    return plain is not None and thought is not None and "REASON_PART I am thinking END_R" in thought \
        and "REASON_PART I am thinking END_R" not in plain


def _markers(text: str) -> list[str]:
    """The ``<...>``/``[...]`` markers and the text between them, blanks dropped (segmentize_markers)."""
    return [seg for seg in re.split(r"(<[^>]*>|\[[^\]]*\])", text) if seg.strip()]


def _thinking_markers(off: str, on: str) -> bool:
    """``compare_thinking_enabled`` (chat-diff-analyzer.cpp), on a character diff: the switch adds or
    removes text at the end of the prompt, or one prompt's tail is the other's plus two markers."""
    pre = len(os.path.commonprefix([off, on]))
    suf = len(os.path.commonprefix([off[pre:][::-1], on[pre:][::-1]]))
    left, right = off[pre:len(off) - suf], on[pre:len(on) - suf]
    if not left.strip() and right:
        return bool(right.strip()) and on.endswith(right.strip())
    if not right.strip() and left:
        return bool(left.strip()) and off.endswith(left.strip())
    for base, extended in ((on, off), (off, on)):
        anchor = base[-64:]
        pos = extended.rfind(anchor)
        if pos >= 0 and pos + len(anchor) < len(extended):
            extra = _markers(extended[pos + len(anchor):].strip())
            if len(extra) == 2 and all(s[:1] in "<[" for s in extra):
                return True
    return False


def server_checks(msgs: list, kwargs: dict) -> None:
    """The refusals of ``oaicompat_chat_params_parse`` (tools/server/server-common.cpp) before rendering."""
    if len(msgs) >= 2 and msgs[-1]["role"] == "assistant" and msgs[-2]["role"] == "assistant":
        raise ChatRaised("Cannot have 2 or more assistant messages at the end of the list.")
    if msgs and msgs[-1]["role"] == "assistant" and msgs[-1].get("tool_calls"):
        raise ChatRaised("Cannot continue an assistant message that contains tool calls.")
    if isinstance(kwargs.get("enable_thinking"), str):
        raise ChatRaised('invalid type for "enable_thinking" (expected boolean, got string)')


def _messages(tmpl: Template, request_messages: list) -> list:
    msgs = inputs.messages(request_messages)
    if "You have access to the following functions in JSONSchema format" in tmpl.source:
        msgs = [_trimmed(m) for m in msgs]  # workaround::trim_all_content (StepFun)
    return msgs


def _trimmed(m: dict) -> dict:
    """``workaround::trim_all_content``: the content, each text part of typed content (the part
    stays, maybe empty) and the reasoning, trimmed of C ``isspace`` at both ends.

    >>> _trimmed({"role": "user", "content": [{"type": "text", "text": "  a "}, {"type": "image"}]})["content"]
    [{'type': 'text', 'text': 'a'}, {'type': 'image'}]
    """
    strip = " \t\n\v\f\r"
    m = dict(m)
    if isinstance(m.get("content"), str):
        m["content"] = m["content"].strip(strip)
    elif isinstance(m.get("content"), list):
        m["content"] = [{**part, "text": part["text"].strip(strip)} if part.get("type") == "text" else part
                        for part in m["content"]]
    if "reasoning_content" in m:
        m["reasoning_content"] = m["reasoning_content"].strip(strip)
        if not m["reasoning_content"]:
            del m["reasoning_content"]
    return m


def render(template: str, messages: list, *, tools: list | None = None, add_generation_prompt: bool = True,
           kwargs: dict | None = None, bos_token: str = "", eos_token: str = "", add_bos: bool = False,
           add_eos: bool = False, jinja2_whitespace: bool = False, jinja2_json: bool = False) -> Prompt:
    """A chat request through the template as llama-server renders it (``template`` "" is chatml).

    ``add_bos``/``add_eos`` are the vocab's: a leading BOS text (trailing EOS text) is then
    stripped, the tokenizer adds it. ``jinja2_whitespace``/``jinja2_json`` render with Jinja2's
    defaults instead of llama.cpp's (what a port with that defect renders). ChatRaised where llama.cpp raises, ChatUnsupported for
    what this renderer does not cover.
    """
    kwargs = dict(kwargs or {})
    try:
        msgs = inputs.messages(messages)
        tool_list = inputs.tools(tools)
    except inputs.RefusedRequest as e:
        raise ChatRaised(str(e)) from None
    server_checks(msgs, kwargs)
    tmpl = load(template or "", jinja2_whitespace, jinja2_json)
    entry = specialized(tmpl.source)
    if entry is not None and entry[3]:
        raise ChatUnsupported(f"chat with the {entry[0]} template (llama.cpp's specialized handler rewrites the "
                              "messages first, common/parsers/; not ported)")
    if entry is not None and entry[0] == "Gemma 4" and "{#- OpenAI Chat Completions:" not in tmpl.source \
            and any(m["role"] == "tool" for m in msgs):
        raise ChatUnsupported("tool messages with an outdated Gemma 4 template (workaround::convert_tool_responses_gemma4"
                              ", common/parsers/gemma4.cpp; not ported)")
    if msgs and msgs[-1]["role"] == "assistant":
        raise ChatUnsupported("continuing a final assistant message (llama-server's prefill_assistant: the generation "
                              "prompt is rebuilt from the reasoning markers of common/chat-auto-parser-generator.cpp "
                              "and common/parsers/; not ported)")
    enable_thinking = kwargs["enable_thinking"] if isinstance(kwargs.get("enable_thinking"), bool) \
        else supports_thinking(tmpl, bos_token, eos_token)
    try:
        msgs = inputs.workarounds(inputs.normalize(_messages(tmpl, messages), tmpl.caps), tmpl.caps, tmpl.source)
    except inputs.RefusedRequest as e:
        raise ChatRaised(str(e)) from None
    text = apply(tmpl, _context(tmpl, msgs, tool_list, add_generation_prompt, enable_thinking,
                                {k: json.loads(json.dumps(v)) for k, v in kwargs.items()}, bos_token, eos_token))
    if add_bos and text.startswith(bos_token):
        text = text[len(bos_token):]
    if add_eos and text.endswith(eos_token):
        text = text[:len(text) - len(eos_token)]
    return Prompt(text)
