"""The template's inputs as llama-server builds them from a chat request (common/chat.cpp).

A request's messages and tools are parsed (``common_chat_msgs_parse_oaicompat``,
``common_chat_tools_parse_oaicompat``), written back as the JSON the template sees
(``common_chat_msg::to_json_oaicompat``: fixed key order, empty fields dropped, tool-call
arguments as strings), then the workarounds of ``common_chat_templates_apply_jinja`` run,
steered by the template's caps (:mod:`harness.chat.caps`).

>>> messages([{"role": "user", "content": None, "name": ""}])
[{'role': 'user', 'content': ''}]
>>> messages([{"role": "user"}])
Traceback (most recent call last):
...
harness.chat.inputs.RefusedRequest: Failed to parse messages: Expected 'content' or 'tool_calls' (ref: https://github.com/ggml-org/llama.cpp/issues/8367 & https://github.com/ggml-org/llama.cpp/issues/12279)
"""

from __future__ import annotations

import json

from harness.errors import HarnessError


class RefusedRequest(HarnessError):
    """llama.cpp refuses this request before any template runs (its message, as llama-server answers it)."""


def dump(value) -> str:
    """nlohmann's ``dump()``: compact, insertion order, UTF-8 kept.

    >>> dump({"a": [1, "é"]})
    '{"a":[1,"é"]}'
    """
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _content(message: dict):
    """(content string, content parts) of one message, as common_chat_msgs_parse_oaicompat reads them."""
    content = message.get("content")
    if isinstance(content, str) or content is None:
        return content or "", []
    if isinstance(content, list):
        parts = []
        for part in content:
            if not isinstance(part, dict) or "type" not in part:
                raise RefusedRequest(f"Missing content part type: {dump(part)}")
            if part["type"] not in ("text", "media_marker"):
                raise RefusedRequest(f"Unsupported content part type: {dump(part['type'])}")
            parts.append({"type": part["type"], "text": part.get("text", "")})
        return "", parts
    raise RefusedRequest(f"Invalid 'content' type: expected string or array, got {dump(content)} "
                         "(ref: https://github.com/ggml-org/llama.cpp/issues/8367)")


def _tool_call(call: dict) -> dict:
    if "type" not in call:
        raise RefusedRequest(f"Missing tool call type: {dump(call)}")
    if call["type"] != "function":
        raise RefusedRequest(f"Unsupported tool call type: {dump(call)}")
    fn = call.get("function")
    if not isinstance(fn, dict) or "name" not in fn:
        raise RefusedRequest(f"Missing tool call {'name' if isinstance(fn, dict) else 'function'}: {dump(call)}")
    args = fn.get("arguments")
    out = {"type": "function", "function": {"name": fn["name"],
                                            "arguments": args if isinstance(args, str) else dump(args)}}
    if call.get("id"):
        out["id"] = call["id"]
    return out


def _message(message: dict) -> dict:
    """One message parsed and written back (``to_json_oaicompat(concat_typed_text=false)``)."""
    if "content" not in message and "tool_calls" not in message:
        raise RefusedRequest("Expected 'content' or 'tool_calls' (ref: https://github.com/ggml-org/llama.cpp/issues/8367"
                             " & https://github.com/ggml-org/llama.cpp/issues/12279)")
    text, parts = _content(message)
    out = {"role": message["role"], "content": text or parts or ""}
    for key, name in (("reasoning_content", "reasoning_content"), ("name", "name"), ("tool_call_id", "tool_call_id")):
        if message.get(key):
            out[name] = message[key]
    calls = [_tool_call(c) for c in message.get("tool_calls") or []]
    if calls:
        out["tool_calls"] = calls
    return out


def messages(request_messages: list) -> list:
    """The request's messages as the template sees them (before the caps workarounds)."""
    try:
        return [_message(m) for m in request_messages]
    except RefusedRequest as e:
        raise RefusedRequest(f"Failed to parse messages: {e}") from None


def tools(request_tools: list | None) -> list | None:
    """``common_chat_tools_to_json_oaicompat(common_chat_tools_parse_oaicompat(tools))``; None when empty."""
    out = []
    for tool in request_tools or []:
        if tool.get("type") != "function" or "function" not in tool:
            raise RefusedRequest(f"Failed to parse tools: Unsupported tool type: {dump(tool)}")
        fn = tool["function"]
        out.append({"type": "function", "function": {
            "name": fn["name"], "description": fn.get("description", ""), "parameters": fn.get("parameters", {})}})
    return out or None


def concat_content_parts(parts: list) -> str:
    """common/chat.cpp's ``concat_content_parts``: text parts joined by newlines, none before the
    first text that is not empty nor after a media marker; parts of other types left out.

    >>> concat_content_parts([{"type": "text", "text": ""}, {"type": "text", "text": "b"}, {"type": "text", "text": "c"}])
    'b\\nc'
    """
    text, after_marker = "", False
    for part in parts:
        kind = part.get("type", "")
        if kind == "text":
            newline, after_marker = not after_marker and text != "", False
        elif kind == "media_marker":
            newline, after_marker = False, True
        else:
            continue
        text += ("\n" if newline else "") + part.get("text", "")
    return text


def normalize(msgs: list, caps: dict) -> list:
    """``messages_inp_normalizer``: string content as typed parts for a typed-only template, parts joined
    by newlines for a string-only one."""
    only_string = caps["supports_string_content"] and not caps["supports_typed_content"]
    only_typed = caps["supports_typed_content"] and not caps["supports_string_content"]
    out = []
    for m in msgs:
        m = dict(m)
        if only_typed and isinstance(m.get("content"), str):
            m["content"] = [{"type": "text", "text": m["content"]}]
        elif only_string and isinstance(m.get("content"), list):
            m["content"] = concat_content_parts(m["content"])
        out.append(m)
    return out


def workarounds(msgs: list, caps: dict, source: str) -> list:
    """common/chat.cpp's ``workaround::`` steps, in the order ``common_chat_templates_apply_jinja`` runs them."""
    if "<|channel|>" not in source:
        msgs = [{**m, "role": "system"} if m.get("role") == "developer" else m for m in msgs]
    if not caps["supports_system_role"] and msgs and msgs[0]["role"] == "system":
        first, msgs = msgs[0], msgs[1:]
        if msgs:
            if not (isinstance(first["content"], str) and isinstance(msgs[0]["content"], str)):
                raise RefusedRequest("[json.exception.type_error.302] type must be string, but is array")
            msgs = [{**msgs[0], "content": first["content"] + "\n" + msgs[0]["content"]}, *msgs[1:]]
    if caps["supports_object_arguments"]:
        msgs = [_object_arguments(m) for m in msgs]
    return msgs


def _object_arguments(message: dict) -> dict:
    if "tool_calls" not in message:
        return message
    calls = []
    for call in message["tool_calls"]:
        args = call["function"]["arguments"]
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except ValueError as e:
                raise RefusedRequest(f"Failed to parse tool call arguments as JSON: {e}") from None
        calls.append({**call, "function": {**call["function"], "arguments": args}})
    return {**message, "tool_calls": calls}
