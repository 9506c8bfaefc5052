"""What a template supports, probed as llama.cpp probes it (common/jinja/caps.cpp, ``caps_get``).

llama.cpp renders fixed probe conversations once per template and records which inputs the
template touched (:mod:`harness.chat.stats`); the answers steer the input workarounds of
common/chat.cpp (a system message merged into the next one, tool-call arguments given as
objects, content given as typed parts). A probe that raises counts as "not used", as there.

>>> from harness.chat.engine import environment
>>> caps(environment().from_string("{% for m in messages %}{{ m.role }}{% endfor %}"))["supports_system_role"]
False
"""

from __future__ import annotations

from harness.chat.stats import Stats, tracked

_TOOLS = [{"name": "tool", "type": "function", "function": {
    "name": "tool1", "description": "Tool description", "parameters": {
        "type": "object", "properties": {"arg": {"type": "string", "description": "Arg description"}},
        "required": ["arg"]}}}]


def _tool_conversation(args, n_calls: int = 1) -> list:
    calls = [{"id": f"call0000{i + 1}", "type": "function", "function": {"name": "tool1", "arguments": args}}
             for i in range(n_calls)]
    return [{"role": "user", "content": "User message"},
            {"role": "assistant", "content": "", "tool_calls": calls},
            {"role": "tool", "content": "Tool response", "tool_call_id": "call00001"},
            {"role": "assistant", "content": "The tool response was 'tool response'"},
            {"role": "user", "content": "User message"}]


def _probe(template, messages, tools=None, extra=None):
    """One probe render: (ok, the tracked messages, the tracked tools, the output, the tracked extras)."""
    msgs, tls = tracked(messages), tracked(tools or [])
    extra = tracked(extra or {})
    try:
        out = template.render(messages=msgs, tools=tls, bos_token="", eos_token="", add_generation_prompt=True,
                              **extra)
        return True, msgs, tls, out, extra
    except Exception:  # noqa: BLE001 - llama.cpp ignores every exception of a probe (caps_try_execute)
        return False, msgs, tls, "", extra


def _content_caps(template, result: dict) -> None:
    ok, msgs, _, out, _ = _probe(template, [{"role": "user", "content": "STRING_MARKER"}])
    content = msgs[0]["content"]
    as_array = Stats.has_op(content, "selectattr") or Stats.has_op(content, "array_access")
    result["supports_typed_content"] = as_array
    if not ok or (as_array and "STRING_MARKER" not in out):
        result["supports_string_content"] = False
    if Stats.has_op(content, "test_is_string"):
        ok, msgs, *_ = _probe(template, [{"role": "user", "content": []}])
        content = msgs[0]["content"]
        if ok and (Stats.has_op(content, "selectattr") or Stats.has_op(content, "array_access")):
            result["supports_typed_content"] = True


def _tool_caps(template, result: dict) -> None:
    ok, msgs, tools, *_ = _probe(template, _tool_conversation({"arg": "value"}), _TOOLS)
    if ok:
        result["supports_tools"] = Stats.used(tools[0]["function"]["name"])
        calls = msgs[1]["tool_calls"]
        if not Stats.used(calls):
            result["supports_tool_calls"] = False
        elif Stats.used(calls[0]["function"]["arguments"]["arg"]):
            result["supports_object_arguments"] = True
    if not result["supports_object_arguments"]:
        ok, msgs, tools, *_ = _probe(template, _tool_conversation('{"arg": "value"}'), _TOOLS)
        if not ok:
            result["supports_tool_calls"] = result["supports_tools"] = False
        else:
            result["supports_tools"] = result["supports_tools"] and Stats.used(tools[0]["function"]["name"])
            if not Stats.used(msgs[1]["tool_calls"]):
                result["supports_tool_calls"] = False
    args = {"arg": "value"} if result["supports_object_arguments"] else '{"arg": "value"}'
    ok, msgs, *_ = _probe(template, _tool_conversation(args, 2), _TOOLS)
    if not ok or not Stats.used(msgs[1]["tool_calls"][1]["function"]):
        result["supports_parallel_tool_calls"] = False


def caps(template) -> dict:
    """The capability map of ``caps::to_map`` for a compiled template."""
    result = {"supports_tools": True, "supports_tool_calls": True, "supports_system_role": True,
              "supports_parallel_tool_calls": True, "supports_string_content": True,
              "supports_typed_content": False, "supports_object_arguments": False}
    _content_caps(template, result)
    _, msgs, *_ = _probe(template, [{"role": "system", "content": "System message"},
                                    {"role": "user", "content": "User message"}])
    if not Stats.used(msgs[0]["content"]):
        result["supports_system_role"] = False
    _tool_caps(template, result)
    return result
