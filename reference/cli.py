"""llama.cpp as users run it: the ``llama-tokenize`` program.

The text is written to a file and passed with ``-f`` and ``--no-escape``, so
llama-tokenize reads its bytes verbatim (``-p`` and ``--stdin`` would process
``\\n``-style escapes). Every call has a timeout; a crash, a hang or output
that is not an id list raises ReferenceFailure with the program's stderr.

What the CLI can express (tools/tokenize/tokenize.cpp at the pin):
  * add_special is ``add_bos(vocab) and not --no-bos``: a vocab whose add_bos is
    false never gets add_special=True from the CLI (so no EOS either);
  * parse_special is on unless ``--no-parse-special``.

>>> from reference.vocabs import vocab_path                  # doctest: +SKIP
>>> CliReference(vocab_path("qwen2")).encode("Hello world")   # doctest: +SKIP
[9707, 1879]
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from pathlib import Path

from harness.errors import ReferenceFailure

from .build import artifacts, require

_IDS = re.compile(rb"^\[((?:-?\d+(?:, )?)*)\]\n?$")
_N_VOCAB = re.compile(r"n_vocab\s*=\s*(\d+)")


class CliReference:
    """One vocab tokenized by the pinned ``llama-tokenize`` binary."""

    name = "llama-tokenize"

    def __init__(self, path: Path | str, *, timeout: float = 60.0, binary: Path | None = None):
        self.path = Path(path)
        self.timeout = timeout
        self.binary = Path(binary) if binary else require(artifacts().llama_tokenize)
        self._n_vocab: int | None = None

    def command(self, text_file: Path, add_special: bool, parse_special: bool) -> list[str]:
        """The exact command line used for one call (shown in failure reports)."""
        cmd = [str(self.binary), "-m", str(self.path), "-f", str(text_file),
               "--ids", "--log-disable", "--no-escape"]
        if not add_special:
            cmd.append("--no-bos")
        if not parse_special:
            cmd.append("--no-parse-special")
        return cmd

    def encode(self, text: str | bytes, add_special: bool = True, parse_special: bool = True) -> list[int]:
        """Token ids exactly as ``llama-tokenize --ids`` prints them."""
        data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
        fd, name = tempfile.mkstemp(prefix="llama-tokenize-", suffix=".txt")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            cmd = self.command(Path(name), add_special, parse_special)
            proc = self._run(cmd)
        finally:
            os.unlink(name)
        match = _IDS.match(proc.stdout)
        if proc.returncode != 0 or match is None:
            raise ReferenceFailure(
                f"llama-tokenize exited {proc.returncode} with unparseable output "
                f"{proc.stdout[:200]!r} for {self.path.name} (command: {' '.join(cmd)})",
                stderr=proc.stderr.decode(errors="replace"))
        body = match.group(1).decode()
        return [int(x) for x in body.split(", ")] if body else []

    def _run(self, cmd: list[str]) -> subprocess.CompletedProcess:
        try:
            return subprocess.run(cmd, capture_output=True, timeout=self.timeout, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as e:
            raise ReferenceFailure(f"llama-tokenize hung for {self.timeout}s on {self.path.name} "
                                   f"(command: {' '.join(cmd)})",
                                   stderr=(e.stderr or b"").decode(errors="replace")) from e
        except OSError as e:
            raise ReferenceFailure(f"cannot run {cmd[0]}: {e}; rebuild with `make reference`") from e

    @property
    def n_vocab(self) -> int:
        """The vocab size llama.cpp logs while loading (``print_info: n_vocab = N``)."""
        if self._n_vocab is None:
            with tempfile.NamedTemporaryFile(suffix=".txt") as fh:
                cmd = [str(self.binary), "-m", str(self.path), "-f", fh.name, "--ids", "--no-escape"]
                proc = self._run(cmd)
            match = _N_VOCAB.search(proc.stderr.decode(errors="replace"))
            if proc.returncode != 0 or match is None:
                raise ReferenceFailure(f"llama-tokenize did not report n_vocab for {self.path.name}",
                                       stderr=proc.stderr.decode(errors="replace"))
            self._n_vocab = int(match.group(1))
        return self._n_vocab

    def decode(self, ids, remove_special: bool = False, unparse_special: bool = False) -> bytes:
        """Not expressible: llama-tokenize has no decode mode. Use InProcessReference."""
        raise ReferenceFailure("llama-tokenize cannot decode token ids; use reference.inproc.InProcessReference")

    def token_to_piece(self, id: int, special: bool = False) -> bytes:
        """Not expressible for arbitrary ids: llama-tokenize only prints pieces of a text's tokens."""
        raise ReferenceFailure("llama-tokenize cannot render an arbitrary token id; "
                               "use reference.inproc.InProcessReference")
