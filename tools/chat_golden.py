"""Extract the expected chat renderings of the pin's ``tests/test-chat-template.cpp`` as data.

``python tools/chat_golden.py [--pin P] [--out tests/data/chat-golden.json]`` reads the
pinned tree's test file (fetched by ``make fetch``/``make reference``) and writes its
facts as JSON: the conversation every case renders, and per case the template string,
the BOS/EOS texts, the extra messages, the built-in path's expected output
(``llama_chat_apply_template``) and the Jinja path's (``common_chat_templates_apply``,
``expected_output_jinja`` where the test gives one, else the same output), and whether the
Jinja path is checked at all (``supported_with_jinja``). It reads the C++ aggregate
initializers of ``test_cases`` positionally, as the compiler does; no llama.cpp code is
copied, only the literals. Rerun after moving the pin, and review the diff.

>>> literals('{ /* .a= */ "x\\\\n" "y", U8C("é"), u8"ü", true, {{"u", "v"}} }')
['{', 'x\\ny', 'é', 'ü', True, '{', '{', 'u', 'v', '}', '}', '}']
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

FIELDS = ("name", "template_str", "expected_output", "expected_output_jinja", "bos_token", "eos_token",
          "supported_with_jinja", "extra_conversation")
DEFAULTS = {"bos_token": "", "eos_token": "", "supported_with_jinja": True, "extra_conversation": []}
SOURCE = "tests/test-chat-template.cpp"
_TOKEN = re.compile(r'\s+|//[^\n]*|/\*.*?\*/|U8C\(|u8(?=")|"(?:[^"\\]|\\.)*"|true|false|[{},()]', re.S)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", "0": "\0"}


def _unescape(body: str) -> str:
    """A C++ string literal's body as text (the file is UTF-8: characters stand as they are).

    >>> _unescape('a\\\\nb\\\\"')
    'a\\nb"'
    """
    out, i = [], 0
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        nxt = body[i + 1]
        if nxt in _ESCAPES:
            out.append(_ESCAPES[nxt])
            i += 2
        elif nxt == "x":
            m = re.match(r"[0-9a-fA-F]+", body[i + 2:])
            out.append(chr(int(m.group(), 16)))
            i += 2 + len(m.group())
        else:
            raise ValueError(f"unknown escape \\{nxt} in a C++ string literal; teach _unescape")
    return "".join(out)


def literals(code: str) -> list:
    """The values and braces of a C++ initializer: adjacent string literals joined, ``U8C(...)``
    and ``u8"..."`` unwrapped, comments dropped."""
    out: list = []
    joinable = False
    at = 0
    while at < len(code):
        m = _TOKEN.match(code, at)
        if m is None:  # an identifier, a number: not a literal this reader knows; say where
            raise ValueError(f"unexpected C++ at {code[at:at + 40]!r}: teach tools/chat_golden.py to read it")
        tok, at = m.group(), m.end()
        if tok.isspace() or tok.startswith(("//", "/*")) or tok in ("U8C(", ")", "u8"):
            continue
        if tok.startswith('"'):
            text = _unescape(tok[1:-1])
            if joinable:
                out[-1] += text
            else:
                out.append(text)
            joinable = True
            continue
        joinable = False
        if tok in ("true", "false"):
            out.append(tok == "true")
        elif tok != ",":
            out.append(tok)
    return out


def _nest(tokens: list, i: int) -> tuple[list, int]:
    """The braced list starting at ``tokens[i] == '{'`` as nested Python lists, and the index after it."""
    items: list = []
    i += 1
    while tokens[i] != "}":
        if tokens[i] == "{":
            sub, i = _nest(tokens, i)
            items.append(sub)
        else:
            items.append(tokens[i])
            i += 1
    return items, i + 1


def extract(source: str) -> dict:
    """The conversation and the test cases of test-chat-template.cpp's ``main_automated_tests``."""
    conv_at = source.index("std::vector<llama_chat_message> conversation")
    conv_code = source[source.index("{", conv_at):source.index(";", conv_at)]
    conversation, _ = _nest(literals(conv_code), 0)
    cases_at = source.index("std::vector<TestCase> test_cases")
    body = source[source.index("{", cases_at):source.index("};", cases_at) + 1]
    raw, _ = _nest(literals(body), 0)
    cases = []
    for values in raw:
        if len(values) > len(FIELDS):
            raise ValueError(f"a test case has {len(values)} fields, TestCase {len(FIELDS)}: {values[0]!r}")
        case = {**DEFAULTS, **dict(zip(FIELDS, values))}
        case["extra_conversation"] = [{"role": r, "content": c} for r, c in case["extra_conversation"]]
        cases.append(case)
    return {"conversation": [{"role": r, "content": c} for r, c in conversation], "cases": cases}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pin", default=None, help="the pin whose tree to read (default: the selected pin)")
    ap.add_argument("--out", default="tests/data/chat-golden.json")
    args = ap.parse_args(argv)
    from reference.lock import load
    from reference.sources import make_source

    lock = load(pin=args.pin)
    tree = make_source(lock).tree()
    data = extract((tree / SOURCE).read_text(encoding="utf-8"))
    data = {"source": f"llama.cpp {lock.commit} (pin {lock.name}) {SOURCE}, main_automated_tests: "
                      "the conversation and each TestCase's literals, as data (tools/chat_golden.py)", **data}
    Path(args.out).write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"{args.out}: {len(data['cases'])} cases from {SOURCE} at {lock.name}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
