"""llama.cpp's built-in chat formats (src/llama-chat.cpp) in Python: the ``--no-jinja`` route.

:func:`detect` is ``llm_chat_detect_template`` (a built-in name, else substrings of a template
source, first match wins), :func:`apply` is ``llama_chat_apply_template`` (detect, then format),
and :func:`render_legacy` is llama-server's route to it for a chat request
(``common_chat_templates_apply_legacy``, common/chat.cpp). Most formats are a table
(:class:`Turns`: a prefix and a suffix per role, a generation prompt); the ones with state (a
turn left open, a system prompt merged into the next user message, the first message treated
apart) are short functions. Messages cross into llama.cpp as C strings: text after a NUL is lost,
and so it is here.

>>> apply("chatml", [{"role": "user", "content": "hi"}])
'<|im_start|>user\\nhi<|im_end|>\\n<|im_start|>assistant\\n'
>>> detect("{{ '<start_of_turn>' + message['role'] }}")
'gemma'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial

from harness.chat import inputs
from harness.chat.detect import NAMES, detect
from harness.chat.render import CHATML, ChatRaised, Prompt, load, patch_source, server_checks

#: C ``isspace`` in the "C" locale: what llama-chat.cpp's ``trim`` strips.
SPACE = " \t\n\v\f\r"


class UnknownTemplate(ChatRaised):
    """``llm_chat_detect_template`` finds no format: llama.cpp returns -1 (the server: an error)."""


def _trim(text: str) -> str:
    return text.strip(SPACE)


def _ascii_upper(text: str) -> str:
    """``toupper`` byte by byte in the "C" locale: ASCII letters only."""
    return text.translate(_UPPER)


_UPPER = {c: c - 32 for c in range(ord("a"), ord("z") + 1)}


def _fill(text: str, role: str) -> str:
    """A prefix with the role put in: ``{role}`` as is, ``{Role}`` first byte upper, ``{ROLE}`` all upper."""
    return text.replace("{role}", role).replace("{Role}", _ascii_upper(role[:1]) + role[1:]) \
        .replace("{ROLE}", _ascii_upper(role))


@dataclass(frozen=True, eq=False)
class Turns:
    """A table-like format: ``head``, then per message its role's ``(prefix, suffix)`` around the
    content (``other`` for a role not in ``roles``; None skips the message), then ``gen`` when a
    generation prompt is asked for. ``trim``: trim every content (True) or these roles' only.

    >>> Turns({"user": ("U:", "\\n")}, None, gen="A:")([("user", " hi"), ("tool", "x")], True)
    'U: hi\\nA:'
    """

    roles: dict = field(default_factory=dict)
    other: tuple | None = None
    gen: str = ""
    head: str = ""
    trim: bool | tuple = False

    def __call__(self, msgs: list[tuple[str, str]], add_ass: bool) -> str:
        out = [self.head]
        for role, content in msgs:
            prefix, suffix = self.roles.get(role, self.other) or (None, None)
            if prefix is None:
                continue
            if self.trim is True or (self.trim and role in self.trim):
                content = _trim(content)
            out.append(_fill(prefix, role) + content + suffix)
        return "".join(out) + (self.gen if add_ass else "")


def _mistral(leading: str, trailing: str, trim_assistant: bool, msgs, add_ass) -> str:
    """Mistral v1/v3/v3-tekken: ``[INST]`` opens a turn an assistant message closes; no generation prompt.

    >>> _mistral(" ", " ", False, [("system", "S"), ("user", "U")], True)
    ' [INST] S\\n\\nU [/INST]'
    """
    out, inside = [], False
    for role, content in msgs:
        if not inside:
            out.append(f"{leading}[INST]{trailing}")
            inside = True
        if role == "system":
            out.append(content + "\n\n")
        elif role == "user":
            out.append(f"{content}{leading}[/INST]")
        else:
            out.append(trailing + (_trim(content) if trim_assistant else content) + "</s>")
            inside = False
    return "".join(out)


def _llama2(system_tags: bool, bos_in_history: bool, strip: bool, msgs, add_ass) -> str:
    """Llama 2 and its variants: one ``[INST]`` first, another after each assistant message.

    >>> _llama2(True, False, False, [("system", "S"), ("user", "U")], True)
    '[INST] <<SYS>>\\nS\\n<</SYS>>\\n\\nU [/INST]'
    """
    out, inside = ["[INST] "], True
    for role, content in msgs:
        content = _trim(content) if strip else content
        if not inside:
            out.append("<s>[INST] " if bos_in_history else "[INST] ")
            inside = True
        if role == "system":
            out.append(f"<<SYS>>\n{content}\n<</SYS>>\n\n" if system_tags else content + "\n")
        elif role == "user":
            out.append(content + " [/INST]")
        else:
            out.append(content + "</s>")
            inside = False
    return "".join(out)


def _monarch(msgs, add_ass) -> str:
    """AlphaMonarch: ``<s>`` before every message but the first.

    >>> _monarch([("user", "a"), ("assistant", "b")], False)
    'user\\na</s>\\n<s>assistant\\nb</s>\\n'
    """
    turns = (("" if i == 0 else "<s>") + f"{role}\n{content}</s>\n" for i, (role, content) in enumerate(msgs))
    return "".join(turns) + ("<s>assistant\n" if add_ass else "")


def _gemma(msgs, add_ass) -> str:
    """Gemma: system messages (trimmed) wait for the next non-model turn; "assistant" is "model".

    >>> _gemma([("system", " S "), ("user", "U")], False)
    '<start_of_turn>user\\nS\\n\\nU<end_of_turn>\\n'
    """
    out, system = [], ""
    for role, content in msgs:
        if role == "system":
            system += _trim(content)
            continue
        role = "model" if role == "assistant" else role
        out.append(f"<start_of_turn>{role}\n")
        if system and role != "model":
            out.append(system + "\n\n")
            system = ""
        out.append(_trim(content) + "<end_of_turn>\n")
    return "".join(out) + ("<start_of_turn>model\n" if add_ass else "")


def _orion(msgs, add_ass) -> str:
    """Orion: system messages wait for the next user turn; no generation prompt (the user turn ends with one).

    >>> _orion([("system", "S"), ("user", "U")], True)
    'Human: S\\n\\nU\\n\\nAssistant: </s>'
    """
    out, system = [], ""
    for role, content in msgs:
        if role == "system":
            system += content
        elif role == "user":
            out.append("Human: " + (system + "\n\n" if system else "") + content + "\n\nAssistant: </s>")
            system = ""
        else:
            out.append(content + "</s>")
    return "".join(out)


def _rwkv_world(msgs, add_ass) -> str:
    """RWKV World: "Assistant:" after a user message that is the last, whatever ``add_ass`` says.

    >>> _rwkv_world([("user", " U ")], False)
    'User: U\\n\\nAssistant:'
    """
    out = []
    for i, (role, content) in enumerate(msgs):
        if role == "system":
            out.append(f"System: {_trim(content)}\n\n")
        elif role == "user":
            out.append(f"User: {_trim(content)}\n\n" + ("Assistant:" if i == len(msgs) - 1 else ""))
        elif role == "assistant":
            out.append(f"Assistant: {_trim(content)}\n\n")
    return "".join(out)


def _gigachat(msgs, add_ass) -> str:
    """GigaChat: ``<s>``, a first system message's content, then user/assistant turns (others dropped).

    >>> _gigachat([("user", "U")], True)
    '<s>user<|role_sep|>U<|message_sep|>available functions<|role_sep|>[]<|message_sep|>assistant<|role_sep|>'
    """
    system = bool(msgs) and msgs[0][0] == "system"
    out = ["<s>" + (msgs[0][1] + "<|message_sep|>" if system else "")]
    for role, content in msgs[1 if system else 0:]:
        if role == "user":
            out.append(f"user<|role_sep|>{content}<|message_sep|>available functions<|role_sep|>[]<|message_sep|>")
        elif role == "assistant":
            out.append(f"assistant<|role_sep|>{content}<|message_sep|>")
    return "".join(out) + ("assistant<|role_sep|>" if add_ass else "")


def _unless_system_first(text: str, turns: Turns, empty_too: bool, msgs, add_ass) -> str:
    """``text`` first unless the first message is a system one (and for no message at all if ``empty_too``).

    >>> _unless_system_first("X", Turns({}, ("", ";")), True, [], False)
    'X'
    """
    first = msgs[0][0] if msgs else None
    return ("" if first == "system" or (first is None and not empty_too) else text) + turns(msgs, add_ass)


def _first_system(head: str, marker: str, turns: Turns, msgs, add_ass) -> str:
    """``head``, a first system message's content and ``marker``, then ``turns`` (which skip system messages).

    >>> _first_system("", "|", Turns({"user": ("", "<U>")}), [("system", "S"), ("user", "u")], False)
    'S|u<U>'
    """
    system = msgs[0][1] + marker if msgs and msgs[0][0] == "system" else ""
    return head + system + turns(msgs, add_ass)


_SOT = "<|START_OF_TURN_TOKEN|>"
_EXAONE3 = {"system": ("[|system|]", "[|endofturn|]\n"), "user": ("[|user|]", "\n"),
            "assistant": ("[|assistant|]", "[|endofturn|]\n")}
_GRANITE4 = Turns({"assistant_tool_call": ("<|start_of_role|>assistant<|end_of_role|><|tool_call|>", "<|end_of_text|>\n")},
                  ("<|start_of_role|>{role}<|end_of_role|>", "<|end_of_text|>\n"),
                  gen="<|start_of_role|>assistant<|end_of_role|>")
_BAILING = {"user": ("<role>HUMAN</role>", "")}
_PANGU = {"system": "系统", "user": "用户", "assistant": "助手", "tool": "工具", "function": "方法"}
_EOS_DS = "<｜end▁of▁sentence｜>"

#: The formats of ``llm_chat_apply_template`` by the names ``llama_chat_builtin_templates`` lists.
FORMATS = {
    "chatml": Turns({}, ("<|im_start|>{role}\n", "<|im_end|>\n"), gen="<|im_start|>assistant\n"),
    "llama2": partial(_llama2, False, False, False),
    "llama2-sys": partial(_llama2, True, False, False),
    "llama2-sys-bos": partial(_llama2, True, True, False),
    "llama2-sys-strip": partial(_llama2, True, False, True),
    "mistral-v1": partial(_mistral, " ", " ", False),
    "mistral-v3": partial(_mistral, "", " ", True),
    "mistral-v3-tekken": partial(_mistral, "", "", False),
    "mistral-v7": Turns({"system": ("[SYSTEM_PROMPT] ", "[/SYSTEM_PROMPT]"), "user": ("[INST] ", "[/INST]")},
                        (" ", "</s>")),
    "mistral-v7-tekken": Turns({"system": ("[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]"), "user": ("[INST]", "[/INST]")},
                               ("", "</s>")),
    "phi3": Turns({}, ("<|{role}|>\n", "<|end|>\n"), gen="<|assistant|>\n"),
    "phi4": Turns({}, ("<|im_start|>{role}<|im_sep|>", "<|im_end|>"), gen="<|im_start|>assistant<|im_sep|>"),
    "falcon3": Turns({}, ("<|{role}|>\n", "\n"), gen="<|assistant|>\n"),
    "zephyr": Turns({}, ("<|{role}|>\n", "<|endoftext|>\n"), gen="<|assistant|>\n"),
    "monarch": _monarch,
    "gemma": _gemma,
    "orion": _orion,
    "openchat": Turns({"system": ("", "<|end_of_turn|>")}, ("GPT4 Correct {Role}: ", "<|end_of_turn|>"),
                      gen="GPT4 Correct Assistant:"),
    "vicuna": Turns({"system": ("", "\n\n"), "user": ("USER: ", "\n"), "assistant": ("ASSISTANT: ", "</s>\n")},
                    gen="ASSISTANT:"),
    "vicuna-orca": Turns({"system": ("SYSTEM: ", "\n"), "user": ("USER: ", "\n"),
                          "assistant": ("ASSISTANT: ", "</s>\n")}, gen="ASSISTANT:"),
    "deepseek": Turns({"system": ("", ""), "user": ("### Instruction:\n", "\n"),
                       "assistant": ("### Response:\n", "\n<|EOT|>\n")}, gen="### Response:\n"),
    "deepseek2": Turns({"system": ("", "\n\n"), "user": ("User: ", "\n\n"), "assistant": ("Assistant: ", _EOS_DS)},
                       gen="Assistant:"),
    "deepseek3": Turns({"system": ("", "\n\n"), "user": ("<｜User｜>", ""), "assistant": ("<｜Assistant｜>", _EOS_DS)},
                       gen="<｜Assistant｜>"),
    "deepseek-ocr": Turns({}, ("", "")),
    "command-r": Turns({"system": (_SOT + "<|SYSTEM_TOKEN|>", "<|END_OF_TURN_TOKEN|>"),
                        "user": (_SOT + "<|USER_TOKEN|>", "<|END_OF_TURN_TOKEN|>"),
                        "assistant": (_SOT + "<|CHATBOT_TOKEN|>", "<|END_OF_TURN_TOKEN|>")},
                       gen=_SOT + "<|CHATBOT_TOKEN|>", trim=True),
    "llama3": Turns({}, ("<|start_header_id|>{role}<|end_header_id|>\n\n", "<|eot_id|>"),
                    gen="<|start_header_id|>assistant<|end_header_id|>\n\n", trim=True),
    "chatglm3": Turns({}, ("<|{role}|>\n ", ""), gen="<|assistant|>", head="[gMASK]sop"),
    "chatglm4": Turns({}, ("<|{role}|>\n", ""), gen="<|assistant|>\n", head="[gMASK]<sop>"),
    "glmedge": Turns({}, ("<|{role}|>\n", ""), gen="<|assistant|>"),
    "minicpm": Turns({"user": ("<用户>", "<AI>")}, ("", ""), trim=True),
    "exaone3": Turns(_EXAONE3, gen="[|assistant|]", trim=True),
    "exaone4": Turns({**_EXAONE3, "tool": ("[|tool|]", "[|endofturn|]\n")}, gen="[|assistant|]", trim=True),
    "exaone-moe": Turns({r: (f"<|{r}|>\n", "<|endofturn|>\n") for r in ("system", "user", "assistant", "tool")},
                        gen="<|assistant|>\n", trim=True),
    "rwkv-world": _rwkv_world,
    "granite": Turns({"assistant_tool_call": ("<|start_of_role|>assistant_tool_call<|end_of_role|><|tool_call|>",
                                              "<|end_of_text|>\n")},
                     ("<|start_of_role|>{role}<|end_of_role|>", "<|end_of_text|>\n"),
                     gen="<|start_of_role|>assistant<|end_of_role|>"),
    "granite-4.0": _GRANITE4,
    "granite-4.1": _GRANITE4,
    "gigachat": _gigachat,
    "megrez": Turns({}, ("<|role_start|>{role}<|role_end|>", "<|turn_end|>"), gen="<|role_start|>assistant<|role_end|>"),
    "yandex": Turns({"user": (" Пользователь: ", "\n\n"), "assistant": (" Ассистент: ", "\n\n")},
                    gen=" Ассистент:[SEP]"),
    "bailing": Turns(_BAILING, ("<role>{ROLE}</role>", ""), gen="<role>ASSISTANT</role>"),
    "bailing-think": Turns(_BAILING, ("<role>{ROLE}</role>", ""), gen="<role>ASSISTANT</role><think>"),
    "bailing2": partial(_unless_system_first, "<role>SYSTEM</role>detailed thinking off<|role_end|>",
                        Turns({"user": ("<role>HUMAN</role>", "<|role_end|>")}, ("<role>{ROLE}</role>", "<|role_end|>"),
                              gen="<role>ASSISTANT</role>"), True),
    "llama4": Turns({}, ("<|header_start|>{role}<|header_end|>\n\n", "<|eot|>"),
                    gen="<|header_start|>assistant<|header_end|>\n\n", trim=True),
    "smolvlm": Turns({"system": ("", "\n\n"), "user": ("User: ", "<end_of_utterance>\n")},
                     ("Assistant: ", "<end_of_utterance>\n"), gen="Assistant:", head="<|im_start|>"),
    "hunyuan-moe": Turns({"system": ("<|startoftext|>", "<|extra_4|>"), "assistant": ("", "<|eos|>")},
                         ("<|startoftext|>", "<|extra_0|>")),
    "gpt-oss": Turns({"assistant": ("<|start|>assistant<|message|>", "<|return|>")},
                     ("<|start|>{role}<|message|>", "<|end|>"), gen="<|start|>assistant"),
    "hunyuan-dense": partial(_first_system, "", "<｜hy_place▁holder▁no▁3｜>",
                             Turns({"assistant": ("<｜hy_Assistant｜>", "<｜hy_place▁holder▁no▁2｜>"),
                                    "user": ("<｜hy_User｜>", "<｜hy_Assistant｜>")})),
    "hunyuan-vl": partial(_first_system, "<｜hy_begin▁of▁sentence｜>", "<｜hy_place▁holder▁no▁3｜>",
                          Turns({"user": ("", "<｜hy_User｜>"), "assistant": ("", "<｜hy_Assistant｜>")})),
    "kimi-k2": Turns({"system": ("<|im_system|>system<|im_middle|>", "<|im_end|>"),
                      "user": ("<|im_user|>user<|im_middle|>", "<|im_end|>"),
                      "assistant": ("<|im_assistant|>assistant<|im_middle|>", "<|im_end|>"),
                      "tool": ("<|im_system|>tool<|im_middle|>", "<|im_end|>")},
                     ("", "<|im_end|>"), gen="<|im_assistant|>assistant<|im_middle|>"),
    "seed_oss": Turns({}, ("<seed:bos>{role}\n", "<seed:eos>"), gen="<seed:bos>assistant\n", trim=("assistant",)),
    "grok-2": Turns({"system": ("System: ", "<|separator|>\n\n"), "user": ("Human: ", "<|separator|>\n\n"),
                     "assistant": ("Assistant: ", "<|separator|>\n\n")}, gen="Assistant:", trim=("system", "user")),
    "pangu-embedded": partial(_unless_system_first, "[unused9]系统：[unused10]",
                              Turns({r: (f"[unused9]{name}：", "[unused10]") for r, name in _PANGU.items()},
                                    gen="[unused9]助手："), False),
    "solar-open": Turns({}, ("<|begin|>{role}<|content|>", "<|end|>"), gen="<|begin|>assistant"),
}

#: Formats ``llm_chat_detect_template`` finds in a source but no built-in name selects.
UNNAMED_FORMATS = {
    "dots1": Turns({"system": ("<|system|>", "<|endofsystem|>"), "user": ("<|userprompt|>", "<|endofuserprompt|>")},
                   ("<|response|>", "<|endofresponse|>"), gen="<|response|>"),
}


def names() -> list[str]:
    """The built-in names in ``llama_chat_builtin_templates``'s order (a ``std::map``: byte order).

    >>> names()[:3]
    ['bailing', 'bailing-think', 'bailing2']
    """
    return sorted(NAMES, key=lambda n: n.encode())


def apply(template: str | None, messages: list[dict], add_generation_prompt: bool = True) -> str:
    """``llama_chat_apply_template``: ``template`` (a built-in name or a source; None is chatml)
    detected, the messages (``role``/``content`` strings) formatted; UnknownTemplate if no format.

    >>> apply("INVALID", [])
    Traceback (most recent call last):
    ...
    harness.chat.builtin.UnknownTemplate: llm_chat_detect_template does not know this template (llama_chat_apply_template returns -1)
    """
    fmt = detect(_c_string("chatml" if template is None else template))
    if fmt is None:
        raise UnknownTemplate("llm_chat_detect_template does not know this template (llama_chat_apply_template "
                              "returns -1)")
    msgs = [(_c_string(m["role"]), _c_string(m["content"])) for m in messages]
    return {**FORMATS, **UNNAMED_FORMATS}[fmt](msgs, add_generation_prompt)


def _c_string(text: str) -> str:
    """What a C string holds of ``text``: everything before a NUL."""
    return text.split("\0", 1)[0]


def legacy_source(template: str) -> str:
    """The source ``common_chat_templates_init`` hands the built-in route: "" or "chatml" is llama.cpp's
    chatml Jinja, then its two patches and the lexer's normalization (``common_chat_template::source``:
    CR LF and CR read as LF, one trailing newline of the source dropped).

    >>> legacy_source("llama3\\r\\n")
    'llama3'
    """
    source = CHATML if template in ("", "chatml") else patch_source(template)
    normal = source.replace("\r\n", "\n").replace("\r", "\n")
    return normal[:-1] if source.endswith("\n") else normal


def _joined(content) -> str:
    """A message's text as ``common_chat_templates_apply_legacy`` makes it: typed parts joined by newlines
    (an empty text so far takes no newline)."""
    if isinstance(content, str):
        return content
    text = ""
    for part in content:
        text += ("\n" if text else "") + part.get("text", "")
    return text


def render_legacy(template: str, messages: list, *, tools: list | None = None, add_generation_prompt: bool = True,
                  kwargs: dict | None = None) -> Prompt:
    """A chat request on llama-server's ``--no-jinja`` route (``common_chat_templates_apply_legacy`` after
    ``oaicompat_chat_params_parse``): the template must still parse as Jinja, tools are refused, a final
    assistant message turns the generation prompt off, tool calls are dropped; ChatRaised where llama.cpp
    raises (a template no format matches among them). ``template`` "" is chatml.

    >>> render_legacy("gemma", [{"role": "user", "content": [{"type": "text", "text": "a"},
    ...                                                      {"type": "text", "text": "b"}]}]).text
    '<start_of_turn>user\\na\\nb<end_of_turn>\\n<start_of_turn>model\\n'
    """
    load(template)  # common_chat_template parses the source on this route too
    try:
        msgs = inputs.messages(messages)
        if isinstance(tools, list) and tools:
            raise ChatRaised("tools param requires --jinja flag")
        inputs.tools(tools)
    except inputs.RefusedRequest as e:
        raise ChatRaised(str(e)) from None
    server_checks(msgs, dict(kwargs or {}))
    if msgs and msgs[-1]["role"] == "assistant":
        add_generation_prompt = False  # prefill_assistant: the last message is continued
    flat = [{"role": m["role"], "content": _joined(m["content"])} for m in msgs]
    try:
        return Prompt(apply(legacy_source(template), flat, add_generation_prompt))
    except UnknownTemplate:
        raise ChatRaised("this custom template is not supported, try using --jinja") from None
