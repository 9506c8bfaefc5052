"""The scoreboard's ports: every ``ports/<language>/<name>/port.json``, discovered.

A port is a directory with a manifest, ``port.json``::

    {"name": "ollama", "language": "go", "package": "github.com/ollama/ollama",
     "version": "v0.17.4", "registry": "Go module proxy",
     "bundles_llama_cpp": null,            # or the llama.cpp build a binding carries
     "summary": "...", "build": "build.sh", "serve": "serve --vocab {vocab}"}

Optional ``direct``: a second program answering the same requests by calling the package as
its README shows (:mod:`harness.scoreboard.adapter`).
Optional ``chat``: the port's chat program (``"chat --vocab {vocab}"``), a server answering the
``chat`` op the package's way (``make chat-check PORT=...``; the board's chat check).
Optional ``conversion``: another package's step the port runs on (:func:`conversion`).
Optional ``newest``: ``{"version", "checked", "how", "note"}``, the newest release the registry
serves and whether it still has the causes found in the pinned one (docs/scoreboard.md).

``build`` and ``serve`` are paths relative to the port's directory (``serve`` with its
arguments, ``{vocab}`` becoming the .gguf path); :meth:`Port.command` is the ``PORT``
command ``llama-conformance run`` gets.

>>> import json, tempfile
>>> root = Path(tempfile.mkdtemp())
>>> (root / "go" / "toy").mkdir(parents=True)
>>> _ = (root / "go" / "toy" / "port.json").write_text(json.dumps({"name": "toy", "language": "go",
...     "package": "example.com/toy", "version": "v1", "bundles_llama_cpp": None,
...     "build": "build.sh", "serve": "serve --vocab {vocab}"}))
>>> [p.name for p in discover(root)], discover(root)[0].command().endswith("/go/toy/serve --vocab {vocab}")
(['toy'], True)
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path

from harness.errors import HarnessError

#: Keys every port.json must have (``registry`` and ``summary`` are optional).
REQUIRED = ("name", "language", "package", "version", "bundles_llama_cpp", "build", "serve")


@dataclass(frozen=True)
class Port:
    """One port's manifest and where it lives."""

    name: str
    language: str
    package: str
    version: str
    bundles_llama_cpp: str | None
    build: str
    serve: str
    directory: Path
    registry: str = ""
    summary: str = ""
    newest: dict | None = None
    conversion: dict | None = None
    direct: str = ""
    chat: str = ""

    def command(self, spec: str | None = None) -> str:
        """The ``PORT`` command: the serve script (or ``spec``, e.g. the chat program) by
        absolute path, with its arguments."""
        program, *rest = shlex.split(spec or self.serve)
        return shlex.join([str(self.directory / program)]) + "".join(" " + a for a in rest)

    def manifest(self) -> dict:
        """The port's row header in scoreboard.json."""
        return {"name": self.name, "language": self.language, "package": self.package,
                "version": self.version, "registry": self.registry,
                "bundles_llama_cpp": self.bundles_llama_cpp, "summary": self.summary, "newest": self.newest,
                "conversion": self.conversion, "chat": bool(self.chat),
                "directory": f"ports/{self.directory.parent.name}/{self.directory.name}"}


def load_port(path: Path) -> Port:
    """One ``port.json``; a missing key or a bad file names the file and the key."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise HarnessError(f"{path}: cannot read the port manifest ({e}); it must be a JSON object "
                           f"with {', '.join(REQUIRED)}") from e
    if not isinstance(data, dict):
        raise HarnessError(f"{path}: the port manifest must be a JSON object")
    missing = [k for k in REQUIRED if k not in data]
    if missing:
        raise HarnessError(f"{path}: missing key(s) {', '.join(map(repr, missing))}; add them "
                           "(bundles_llama_cpp may be null)")
    for key in ("serve", "direct", "chat"):
        if key in data and "{vocab}" not in str(data[key]):
            raise HarnessError(f"{path}: '{key}' must contain {{vocab}} (e.g. \"{key} --vocab {{vocab}}\")")
    return Port(name=data["name"], language=data["language"], package=data["package"],
                version=str(data["version"]), bundles_llama_cpp=data["bundles_llama_cpp"],
                build=data["build"], serve=data["serve"], directory=path.parent.resolve(),
                registry=data.get("registry", ""), summary=data.get("summary", ""), newest=data.get("newest"),
                conversion=conversion(path, data.get("conversion")), direct=data.get("direct", ""),
                chat=data.get("chat", ""))


def split_serve(port: Port, spec: str, gguf: Path) -> list[str]:
    """``serve``'s or ``direct``'s argv for one vocab: the program by absolute path.

    >>> split_serve(Port("t", "go", "p", "1", None, "b", "", Path("/p")), "direct --vocab {vocab}", Path("/v.gguf"))
    ['/p/direct', '--vocab', '/v.gguf']
    """
    program, *rest = shlex.split(spec)
    return [str(port.directory / program)] + [a.replace("{vocab}", str(gguf)) for a in rest]


def conversion(path: Path, conv) -> dict | None:
    """``port.json``'s optional ``conversion``: another package's step the port runs on (a GGUF
    turned into a tokenizer.json), ``{"package", "version", "registry", "what"}``; the board
    names it beside the package, since its causes may come from either."""
    if conv is None:
        return None
    keys = ("package", "version", "registry", "what")
    if not isinstance(conv, dict) or any(not isinstance(conv.get(k), str) for k in keys):
        raise HarnessError(f"{path}: 'conversion' must be an object with string {', '.join(keys)} "
                           '(e.g. {"package": "transformers", "version": "5.24.0", "registry": "PyPI", '
                           '"what": "GGUF to tokenizer.json"})')
    return {k: conv[k] for k in keys}


def discover(root: Path) -> list[Port]:
    """Every ``root/<language>/<name>/port.json``, sorted by language then name; names are unique."""
    ports = [load_port(p) for p in sorted(Path(root).glob("*/*/port.json"))]
    seen: dict[str, Path] = {}
    for p in ports:
        if p.name in seen:
            raise HarnessError(f"{p.directory}/port.json: name {p.name!r} is taken by "
                               f"{seen[p.name]}/port.json; port names must be unique")
        seen[p.name] = p.directory
    return ports


def select(ports: list[Port], names: list[str] | None) -> list[Port]:
    """The ports named (all when ``names`` is empty); an unknown name lists the known ones.

    >>> select([], None)
    []
    """
    if not names:
        return ports
    known = {p.name: p for p in ports}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise HarnessError(f"unknown port(s) {', '.join(unknown)}: PORTS= takes names from "
                           f"ports/*/*/port.json ({', '.join(known) or 'none found'})")
    return [known[n] for n in names]
