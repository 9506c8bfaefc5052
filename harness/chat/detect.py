"""Which built-in format llama.cpp picks for a template: ``llm_chat_detect_template`` (src/llama-chat.cpp).

A built-in name selects its format; any other string is searched for substrings, rule after
rule in llama.cpp's order, the first rule that holds winning (:data:`RULES`). Names are the
keys of :data:`harness.chat.builtin.FORMATS` (and ``dots1``, a format no name selects).

>>> detect("llama3"), detect("{{ '<|start_header_id|>' + role + '<|end_header_id|>' }}"), detect("plain")
('llama3', 'llama3', None)
"""

from __future__ import annotations

#: The names of ``LLM_CHAT_TEMPLATES`` (``llm_chat_template_from_str``).
NAMES = frozenset((
    "chatml", "llama2", "llama2-sys", "llama2-sys-bos", "llama2-sys-strip", "mistral-v1", "mistral-v3",
    "mistral-v3-tekken", "mistral-v7", "mistral-v7-tekken", "phi3", "phi4", "falcon3", "zephyr", "monarch", "gemma",
    "orion", "openchat", "vicuna", "vicuna-orca", "deepseek", "deepseek2", "deepseek3", "deepseek-ocr", "command-r",
    "llama3", "chatglm3", "chatglm4", "glmedge", "minicpm", "exaone3", "exaone4", "exaone-moe", "rwkv-world",
    "granite", "granite-4.0", "granite-4.1", "gigachat", "megrez", "yandex", "bailing", "bailing-think", "bailing2",
    "llama4", "smolvlm", "hunyuan-moe", "gpt-oss", "hunyuan-dense", "hunyuan-vl", "kimi-k2", "seed_oss", "grok-2",
    "pangu-embedded", "solar-open",
))


def _mistral_like(tmpl: str) -> bool:
    return tmpl.startswith("mistral") or "[INST]" in tmpl


def _mistral_or_llama2(tmpl: str) -> str:
    """The ``[INST]`` family: Mistral v7, the official v1/v3/v3-tekken templates, else a Llama 2 variant.

    >>> _mistral_or_llama2("{{ bos_token + '[INST] ' + content.strip() }}")
    'llama2-sys-strip'
    """
    if "[SYSTEM_PROMPT]" in tmpl:
        return "mistral-v7"
    if "' [INST] ' + system_message" in tmpl or "[AVAILABLE_TOOLS]" in tmpl:
        return "mistral-v1" if " [INST]" in tmpl else "mistral-v3-tekken" if '"[INST]"' in tmpl else "mistral-v3"
    if "content.strip()" in tmpl:
        return "llama2-sys-strip"
    if "bos_token + '[INST]" in tmpl:
        return "llama2-sys-bos"
    return "llama2-sys" if "<<SYS>>" in tmpl else "llama2"


def _granite(tmpl: str) -> str:
    """IBM Granite: 4.0 or 4.1 when the template has tool calls, else 3.x.

    >>> _granite("<|start_of_role|><tools>")
    'granite-4.1'
    """
    if "<tool_call>" in tmpl or "<tools>" in tmpl:
        return "granite-4.0" if "g4_default_system_message" in tmpl else "granite-4.1"
    return "granite"


#: (a predicate, or substrings that must all be present; the format, or a function of the template
#: choosing it), in ``llm_chat_detect_template``'s order. A rule nested there under a shared
#: condition is flattened here with that condition repeated.
RULES = (
    (("<|im_start|>", "<|im_sep|>"), "phi4"),
    (("<|im_start|>", "<end_of_utterance>"), "smolvlm"),  # <|im_start|> as its BOS, not chatml
    (("<|im_start|>",), "chatml"),
    (_mistral_like, _mistral_or_llama2),
    (("<|assistant|>", "<|end|>"), "phi3"),
    (("[gMASK]<sop>",), "chatglm4"),
    (("<|assistant|>", "<|user|>", "<|tool_declare|>"), "exaone-moe"),
    (("<|assistant|>", "<|user|>", "</s>"), "falcon3"),
    (("<|assistant|>", "<|user|>"), "glmedge"),
    (("<|{{ item['role'] }}|>", "<|begin_of_image|>"), "glmedge"),
    (("<|user|>", "<|endoftext|>"), "zephyr"),
    (("bos_token + message['role']",), "monarch"),
    (("<start_of_turn>",), "gemma"),
    ((r"'\n\nAssistant: ' + eos_token",), "orion"),
    (("GPT4 Correct ",), "openchat"),
    (("USER: ", "ASSISTANT: ", "SYSTEM: "), "vicuna-orca"),
    (("USER: ", "ASSISTANT: "), "vicuna"),
    (("### Instruction:", "<|EOT|>"), "deepseek"),
    (("<|START_OF_TURN_TOKEN|>", "<|USER_TOKEN|>"), "command-r"),
    (("<|start_header_id|>", "<|end_header_id|>"), "llama3"),
    (("[gMASK]sop",), "chatglm3"),
    (("<用户>",), "minicpm"),
    (("'Assistant: ' + message['content'] + eos_token",), "deepseek2"),
    (("<｜Assistant｜>", "<｜User｜>", "<｜end▁of▁sentence｜>"), "deepseek3"),
    (("[|system|]", "[|assistant|]", "[|endofturn|]", "[|tool|]"), "exaone4"),
    (("[|system|]", "[|assistant|]", "[|endofturn|]"), "exaone3"),
    (("rwkv-world",), "rwkv-world"),
    ((r"{{- 'User: ' + message['content']|trim + '\n\n' -}}",), "rwkv-world"),
    (("<|start_of_role|>",), _granite),
    (("message['role'] + additional_special_tokens[0] + message['content'] + additional_special_tokens[1]",),
     "gigachat"),
    (("<|role_start|>",), "megrez"),
    ((" Ассистент:",), "yandex"),
    (("<role>ASSISTANT</role>", "'HUMAN'"), "bailing"),
    (("<role>ASSISTANT</role>", '"HUMAN"', "<think>"), "bailing-think"),
    (("<role>ASSISTANT</role>", "<role>HUMAN</role>", "<|role_end|>"), "bailing2"),
    (("<|header_start|>", "<|header_end|>"), "llama4"),
    (("<|endofuserprompt|>",), "dots1"),
    (("<|extra_0|>", "<|extra_4|>"), "hunyuan-moe"),
    (("<|start|>", "<|channel|>"), "gpt-oss"),
    (("<｜hy_Assistant｜>", "<｜hy_begin▁of▁sentence｜>"), "hunyuan-vl"),
    (("<｜hy_Assistant｜>", "<｜hy_place▁holder▁no▁3｜>"), "hunyuan-dense"),
    (("<|im_assistant|>assistant<|im_middle|>",), "kimi-k2"),
    (("<seed:bos>",), "seed_oss"),
    (("'Assistant: '  + message['content'] + '<|separator|>",), "grok-2"),
    (("[unused9]系统：[unused10]",), "pangu-embedded"),
    (("<|begin|>", "<|end|>", "<|content|>"), "solar-open"),
)


def _holds(condition, tmpl: str) -> bool:
    return condition(tmpl) if callable(condition) else all(s in tmpl for s in condition)


def detect(tmpl: str) -> str | None:
    """The format llama.cpp uses for ``tmpl`` (a built-in name, or a template source); None if unknown.

    >>> detect("{% if message['role'] == 'user' %}[INST] {{ message['content'] }} [/INST]{% endif %}")
    'llama2'
    """
    if tmpl in NAMES:
        return tmpl
    for condition, result in RULES:
        if _holds(condition, tmpl):
            return result(tmpl) if callable(result) else result
    return None
