"""The one-line command that reproduces a finding: ``python -m harness diff ...``.

>>> repro_command("qwen2", "a b", True, False)
"python -m harness diff --vocab qwen2 --text 'a b' --add-special"
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from harness.reports.escape import py_literal, reads_as_itself

def python_command() -> str:
    """How to run this Python from the current directory: the venv's path relative to it
    when it lies below (``.venv/bin/python``), else its absolute path."""
    exe = Path(sys.executable)
    try:
        return str(exe.relative_to(Path.cwd()))
    except ValueError:
        return shlex.quote(str(exe))


def _text_arg(text: str) -> str:
    if text and all(reads_as_itself(c) for c in text) and text == text.strip(" ") and "'" not in text:
        # "--text=-x": a text starting with "-" would otherwise be read as an option.
        return f"--text{'=' if text.startswith('-') else ' '}{shlex.quote(text)}"
    return f"--text-repr '{py_literal(text)}'"


def repro_command(vocab: str, text: str, add_special: bool, parse_special: bool,
                  port: str = "harness", *, python: str = "python", ids=None,
                  remove_special: bool = False, unparse_special: bool = False,
                  piece: bool = False) -> str:
    r"""The one-line ``harness diff`` command for this case.

    Plain printable texts go verbatim in ``--text``; others as a Python literal
    in ``--text-repr`` so control characters survive copy and paste. Decode and
    piece cases pass ``--ids`` instead.

    >>> repro_command("qwen2", "a b", True, False)
    "python -m harness diff --vocab qwen2 --text 'a b' --add-special"
    >>> repro_command("qwen2", "->", False, False)
    "python -m harness diff --vocab qwen2 --text='->'"
    >>> print(repro_command("qwen2", "a ", False, False))
    python -m harness diff --vocab qwen2 --text-repr '"a "'
    >>> repro_command("qwen2", "", False, False, ids=(1, 2), remove_special=True)
    'python -m harness diff --vocab qwen2 --ids 1,2 --remove-special'
    """
    parts = [f"{python} -m harness diff", f"--vocab {shlex.quote(vocab)}"]
    if ids is not None:
        parts.append(f"--ids {','.join(map(str, ids)) or ','}")
        parts += ["--piece"] * piece + ["--remove-special"] * remove_special
        parts += ["--unparse-special"] * unparse_special
    else:
        parts.append(_text_arg(text))
        parts += ["--add-special"] * add_special + ["--parse-special"] * parse_special
    if port != "harness":
        parts.append(f"--port {shlex.quote(port)}")
    return " ".join(parts)


