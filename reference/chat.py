"""llama.cpp's chat templating in process: the oracle for a rendered conversation and its ids.

Two paths, each the pinned llama.cpp's own, through ``libreference_chat.so``
(``reference/chat_shim.cpp``):

- the **built-in** formats of ``src/llama-chat.cpp``: :func:`builtin_templates`
  (``llama_chat_builtin_templates``) and :func:`apply_builtin`
  (``llama_chat_apply_template``: a template string is matched to a format by
  ``llm_chat_detect_template``, or named directly, e.g. ``"chatml"``);
- the **Jinja** path of ``common/chat.cpp`` (llama.cpp's own Jinja engine), as
  llama-server and llama-cli render a chat request: :func:`render`
  (``common_chat_templates_init`` + ``common_chat_templates_apply``). With a vocab, an
  absent template means the vocab's own ``tokenizer.chat_template``, BOS/EOS texts come
  from its vocab, and the prompt ids are made as llama-server makes them:
  ``common_tokenize(vocab, prompt, add_special=true, parse_special=true)`` over the whole
  rendered prompt, message text included (see ``chat_shim.cpp`` for the source lines).

A template that raises in llama.cpp (``raise_exception``, a syntax error, a refused
conversation) raises :class:`~harness.errors.ChatTemplateError` with llama.cpp's message.

>>> render("{{ bos_token }}{% for m in messages %}[{{ m.role }}] {{ m.content }}{% endfor %}",
...        [{"role": "user", "content": "hi"}], bos_token="<s>").text       # doctest: +SKIP
'<s>[user] hi'
>>> apply_builtin("chatml", [{"role": "user", "content": "hi"}])           # doctest: +SKIP
'<|im_start|>user\\nhi<|im_end|>\\n<|im_start|>assistant\\n'
"""

from __future__ import annotations

import ctypes
import json
import threading
from dataclasses import dataclass

from harness.errors import ChatTemplateError, ReferenceFailure

from .build import artifacts, require
from .inproc import InProcessReference, library, load_shim

_CHAT = None
_LOCK = threading.Lock()


@dataclass(frozen=True)
class ChatRendering:
    """A rendered conversation: the prompt's bytes and, with a vocab, llama-server's ids."""

    data: bytes
    ids: list[int] | None = None

    @property
    def text(self) -> str:
        """The prompt as text; ReferenceFailure if llama.cpp rendered bytes that are not UTF-8."""
        try:
            return self.data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ReferenceFailure(f"llama.cpp rendered a prompt that is not UTF-8 ({e}); "
                                   "use .data for its bytes") from None


def _declare(lib: ctypes.CDLL) -> None:
    c = ctypes
    out = [c.POINTER(c.c_void_p), c.POINTER(c.c_size_t)]
    sigs = {
        "ref_chat_init": (None, []),
        "ref_chat_free": (None, [c.c_void_p]),
        "ref_chat_builtin_templates": (c.c_int32, [c.POINTER(c.c_char_p), c.c_size_t]),
        "ref_chat_builtin_apply": (c.c_int32, [c.c_char_p, c.POINTER(c.c_char_p), c.POINTER(c.c_char_p),
                                               c.c_size_t, c.c_int, *out, c.POINTER(c.c_void_p)]),
        "ref_chat_apply": (c.c_int32, [c.c_void_p, c.c_char_p, *out, c.POINTER(c.c_void_p),
                                       c.POINTER(c.c_size_t), c.POINTER(c.c_void_p)]),
    }
    for name, (restype, argtypes) in sigs.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, argtypes


def chat_library() -> ctypes.CDLL:
    """The chat shim, loaded once per process (after the tokenizer shim: one libllama)."""
    global _CHAT
    with _LOCK:
        if _CHAT is None:
            library()  # llama_backend_init and the log capture, once
            lib = load_shim(require(artifacts().chat_shim), _declare)
            lib.ref_chat_init()
            _CHAT = lib
        return _CHAT


def _take(lib, ptr: ctypes.c_void_p, size: int) -> bytes:
    """``size`` bytes at ``ptr`` (malloc'd by the shim), freed."""
    if not ptr.value:
        return b""
    try:
        return ctypes.string_at(ptr.value, size)
    finally:
        lib.ref_chat_free(ptr)


def _error(lib, ptr: ctypes.c_void_p) -> str:
    return _take(lib, ptr, len(ctypes.string_at(ptr.value))).decode("utf-8", "replace") if ptr.value else ""


def builtin_templates() -> list[str]:
    """The names ``llama_chat_builtin_templates`` lists, in its order.

    >>> "chatml" in builtin_templates()                                    # doctest: +SKIP
    True
    """
    lib = chat_library()
    n = lib.ref_chat_builtin_templates(None, 0)
    names = (ctypes.c_char_p * n)()
    lib.ref_chat_builtin_templates(names, n)
    return [s.decode() for s in names]


def apply_builtin(template: str | None, messages: list[dict], add_generation_prompt: bool = True) -> str:
    """``llama_chat_apply_template(template, messages, add_ass)``: the built-in path (no Jinja).

    ``template`` is a template string (detected) or a built-in name; None is llama.cpp's
    default (chatml). Each message needs ``role`` and ``content`` strings. A template
    llama.cpp does not detect raises ChatTemplateError.
    """
    lib = chat_library()
    roles = [_c_text(m, "role") for m in messages]
    contents = [_c_text(m, "content") for m in messages]
    n = len(messages)
    role_arr, content_arr = (ctypes.c_char_p * max(n, 1))(*roles), (ctypes.c_char_p * max(n, 1))(*contents)
    text, size, err = ctypes.c_void_p(), ctypes.c_size_t(), ctypes.c_void_p()
    tmpl = None if template is None else template.encode("utf-8")
    with _LOCK:
        rc = lib.ref_chat_builtin_apply(tmpl, role_arr, content_arr, n, int(add_generation_prompt),
                                        ctypes.byref(text), ctypes.byref(size), ctypes.byref(err))
    if rc != 0:
        raise ChatTemplateError(_error(lib, err), path="built-in")
    return ChatRendering(_take(lib, text, size.value)).text


def _c_text(message: dict, key: str) -> bytes:
    value = message.get(key) if isinstance(message, dict) else None
    if not isinstance(value, str):
        raise ChatTemplateError(f"each message needs a string {key!r} for the built-in path, got {message!r:.200}",
                                path="built-in")
    data = value.encode("utf-8")
    if b"\0" in data:  # llama_chat_message holds C strings
        raise ChatTemplateError(f"a message's {key} holds a NUL byte, which a C string cannot carry",
                                path="built-in")
    return data


def render(template: str | None, messages: list[dict], *, tools: list | None = None,
           add_generation_prompt: bool = True, kwargs: dict | None = None, bos_token: str = "",
           eos_token: str = "", builtin: bool = False,
           vocab: InProcessReference | None = None) -> ChatRendering:
    """A conversation through ``common_chat_templates_apply``, as llama-server renders it.

    ``messages`` and ``tools`` are OpenAI-style (role, content, tool_calls,
    reasoning_content, name, tool_call_id; tools as ``{"type": "function", "function":
    {...}}``); ``kwargs`` are the template kwargs (``enable_thinking`` among them, as the
    server reads it). ``template`` None or ``""`` means the vocab's own (``vocab`` needed).
    ``bos_token``/``eos_token`` are used without a vocab only. ``builtin=True`` is the
    server's ``--no-jinja`` route (``llama_chat_apply_template`` on the template).
    With ``vocab``, ``ids`` are llama-server's prompt ids; without, None. The other inputs
    are llama-server's defaults (``server_inputs`` in chat_shim.cpp: enable_thinking where
    the template supports it, a trailing assistant message continued, ...).
    """
    lib = chat_library()
    request = json.dumps({"template": template or "", "messages": messages, "tools": tools,
                          "add_generation_prompt": add_generation_prompt, "kwargs": kwargs or {},
                          "bos_token": bos_token, "eos_token": eos_token, "jinja": not builtin},
                         ensure_ascii=False).encode("utf-8", "surrogatepass")
    text, size = ctypes.c_void_p(), ctypes.c_size_t()
    ids, n_ids, err = ctypes.c_void_p(), ctypes.c_size_t(), ctypes.c_void_p()
    model = vocab.model_handle if vocab is not None else None
    with _LOCK:
        rc = lib.ref_chat_apply(model, request, ctypes.byref(text), ctypes.byref(size),
                                ctypes.byref(ids), ctypes.byref(n_ids), ctypes.byref(err))
    if rc != 0:
        raise ChatTemplateError(_error(lib, err), path="built-in" if builtin else "jinja")
    id_list = None
    if vocab is not None:
        id_list = list((ctypes.c_int32 * n_ids.value).from_address(ids.value)) if n_ids.value else []
        if ids.value:
            lib.ref_chat_free(ids)
    return ChatRendering(_take(lib, text, size.value), id_list)
