"""One root for every error the harness raises on purpose.

Each message says what was wrong, where (file, offset, key) and how to fix it.
Nothing here is raised with ``assert``: bad input is a user's problem to fix,
not a programming bug.

>>> try:
...     raise VocabError("tokenizer.ggml.tokens is missing in x.gguf")
... except HarnessError as e:
...     print(type(e).__name__)
VocabError
"""

from __future__ import annotations

import re


class HarnessError(Exception):
    """Root of every deliberate harness error."""


class GGUFFormatError(HarnessError, ValueError):
    """A GGUF file is truncated, corrupt or hostile.

    Carries the path, the byte offset where reading failed, and the metadata
    key being read (``None`` while reading the header).
    """

    def __init__(self, message: str, *, path: str | None = None,
                 offset: int | None = None, key: str | None = None):
        self.path, self.offset, self.key = path, offset, key
        where = []
        if path is not None:
            where.append(str(path))
        if offset is not None:
            where.append(f"offset {offset}")
        if key is not None:
            where.append(f"key {key!r}")
        prefix = ", ".join(where)
        super().__init__(f"{prefix}: {message}" if prefix else message)


class VocabError(HarnessError):
    """GGUF metadata does not describe a tokenizer llama.cpp would load."""


class UnsupportedPreTokenizer(VocabError):
    """``tokenizer.ggml.pre`` names no pre-tokenizer llama.cpp knows at the pin."""

    def __init__(self, name: str, known: list[str] | tuple[str, ...]):
        self.name, self.known = name, tuple(sorted(known))
        super().__init__(
            f"unknown tokenizer.ggml.pre {name!r}: llama.cpp at the pinned commit "
            f"would refuse to load this vocab. Known names: {', '.join(self.known)}")


class RegexNotSupported(HarnessError):
    """A regex llama.cpp's std::regex would reject (it then throws 'Failed to process regex')."""


class IntegrityError(HarnessError):
    """A fetched file does not match the hash recorded in the lock."""


class ReferenceUnavailable(HarnessError):
    """The llama.cpp reference (vocabs, llama-tokenize, libllama) is not built/fetched."""


class ReferenceFailure(HarnessError):
    """The reference crashed, hung or printed something unparseable.

    Carries the reference's stderr so the failure can be diagnosed.
    """

    def __init__(self, message: str, *, stderr: str = ""):
        self.stderr = stderr
        tail = stderr.strip()[-2000:]
        super().__init__(f"{message}\n--- stderr ---\n{tail}" if tail else message)


class ChatTemplateError(HarnessError):
    """llama.cpp raised while applying a chat template: the template's own
    ``raise_exception``, a Jinja syntax or type error, a conversation it refuses, or a
    template the built-in path does not know. ``message`` is llama.cpp's own text; it is
    llama.cpp's answer to that conversation, not a failure of the reference."""

    def __init__(self, message: str, *, path: str = "jinja"):
        self.message, self.path = message, path
        super().__init__(f"llama.cpp's {path} chat path raised: {message} (fix the template or the "
                         "conversation; llama-server answers this request with the same error)")


class PortError(HarnessError):
    """A port under test crashed, hung, or answered with something malformed."""

    def __init__(self, message: str, *, stderr: str = ""):
        self.stderr = stderr
        tail = stderr.strip()[-2000:]
        super().__init__(f"{message}\n--- port stderr ---\n{tail}" if tail else message)


class PortRequestError(PortError):
    """The port answered one request with ``{"error": ...}`` and keeps serving:
    a port error for that one case, not for the port."""


class PortUnsupported(PortRequestError):
    """The port cannot express this request: it said so in its ``info`` answer
    (``"unsupported": [...]``), answered ``{"error": "unsupported: ..."}``, or (a
    Python adapter) raised ``NotImplementedError``. Counted as ``unsupported``,
    never as a pass. ``answer`` is the port's own ``{"error"}`` text, when it gave one."""

    answer = ""


def root_cause(message: str) -> str:
    """The part of a port error message that names its cause, not the request:
    the first line, up to ' on request' / ' to {' (so one cause counts once).

    >>> root_cause("port 'x' crashed (exit code 3) on request {\\"op\\": 1}\\nmore")
    "port 'x' crashed (exit code 3)"
    """
    first = message.splitlines()[0] if message else ""
    for cut in (" on request ", " to {", " in encode(", " in decode(", " in token_to_piece("):
        first = first.split(cut)[0]
    return first


#: Distinct messages kept per root port error (its ``variants``; all are counted), and the
#: characters kept of each.
VARIANTS_KEPT, VARIANT_CHARS = 50, 300

# What varies between messages of one cause: quoted text, then ids and numbers (hex or
# decimal, signed, with a fraction, in runs such as lists of ids). Quotes go first, so a
# number inside quoted text does not split it.
_VARYING = ((re.compile(r"'(?:[^'\\\n]|\\.)*'"), "'…'"), (re.compile(r'"(?:[^"\\\n]|\\.)*"'), '"…"'),
            (re.compile(r"(?<![\w.])(?:0x[0-9a-fA-F]+|[0-9a-fA-F]*\d[0-9a-fA-F]*|-?\d+(?:\.\d+)?(?:e-?\d+)?)"
                        r"(?:[\s,]+(?:0x[0-9a-fA-F]+|-?\d+(?:\.\d+)?))*(?![\w.])"), "<n>"))


def root_shape(message: str) -> str:
    """The shape of a port error's root cause (:func:`root_cause`): its numbers, ids and
    quoted text replaced, so that messages differing only in those are one root.

    >>> root_shape("port 'x' answered error: token 151643 refused on request {...}")
    "port '…' answered error: token <n> refused"
    >>> root_shape('bad id [3, 17, 99] in "héllo 42"') == root_shape('bad id [5] in "x"')
    True
    >>> root_shape("crashed (exit code 3)") != root_shape("hung (no answer in 30 s)")
    True
    """
    shape = root_cause(message)
    for pattern, placeholder in _VARYING:
        shape = pattern.sub(placeholder, shape)
    return shape


#: How a port went down, by the words of the client's message (harness.protocol.client).
DEATH_KINDS = (("crashed", "crashed"), ("hung", "hung"), ("stopped reading", "stopped reading"),
               ("still running", "closed stdout"), ("longer than", "answer too long"))


def death_kind(message: str) -> str:
    """How a port went down, from its PortError's message: ``crashed``, ``hung``, ``stopped
    reading``, ``closed stdout``, ``answer too long`` or ``garbage`` (any other bad answer).

    >>> death_kind("port 'x' crashed (exit code 9): closed its stdout on request {}")
    'crashed'
    >>> death_kind("port 'x' answered garbage b'%' on request {}")
    'garbage'
    """
    first = root_cause(message)
    return next((kind for words, kind in DEATH_KINDS if words in first), "garbage")
