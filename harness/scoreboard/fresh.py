"""Is the scoreboard fresh? Which engine ran a row, and what has changed since that judges it.

A snapshot row records the engine commit that ran it (:func:`engine_commit`). The row is
stale once a later commit changes engine code, the oracle or the pin (:data:`ENGINE_PATHS`),
pyproject.toml's judged part (:func:`judged_project`) or the port's own files
(:func:`port_paths`, :func:`port_json_changed`). Its chat column records the commit of its
chat check and is stale once chat code or the port's chat program changes (:func:`chat_stale`);
:func:`check_fresh` (``llama-conformance
scoreboard --check-fresh``, a test in ``make test``) names those rows and the command that
refreshes them.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from harness.errors import HarnessError
from harness.scoreboard.ports import Port, discover


def engine_commit() -> str:
    """The harness checkout's commit (``+`` when its harness/ has uncommitted changes), or
    ``unknown`` outside a git checkout: which engine made the table."""
    root = Path(__file__).resolve().parents[2]
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, timeout=30, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--", "harness"],
                               capture_output=True, text=True, timeout=30, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head + ("+" if dirty else "")


#: What decides a port's row: the engine, the oracle and the pin (git pathspecs). Rendering,
#: the board itself and the tools that never judge a port are left out, so that changing them
#: leaves the snapshot fresh; a port's own directory counts for its row (stale_rows).
ENGINE_PATHS = ("harness", "reference",
                *(f":(exclude){p}" for p in (
                    "harness/scoreboard", "harness/reports/scoreboard.py", "harness/reports/diagnosis_bench.py",
                    "harness/reports/pindiff.py", "harness/bench", "harness/fuzz", "harness/coverage",
                    "harness/remote", "harness/mergecmd.py", "harness/pindiff.py", "harness/chatcheck.py",
                    "harness/engine/chatdiff.py", "harness/engine/chatgen.py", "harness/engine/chatcauses.py",
                    "harness/reports/chathtml.py",
                    "harness/protocol/chat.py", "reference/chat.py",
                    "reference/chat_shim.cpp", "reference/pin.py",
                    # the harness port's own server and its chat renderer: PORT=harness runs them,
                    # a scoreboard port's run never does
                    "harness/tokenizer/serve.py", "harness/chat")))


#: What decides a row's chat column (its chat check): the chat check and its causes, the harness
#: renderer the causes re-render with, the chat reference, the oracle and the generated inputs.
#: The port's chat program counts too (:func:`chat_paths`).
CHAT_PATHS = ("harness/chatcheck.py", "harness/engine/chatdiff.py", "harness/engine/chatgen.py",
              "harness/engine/chatcauses.py", "harness/protocol/chat.py", "harness/chat", "harness/inputs",
              "reference")


#: Packages the engine never imports (the harness port's chat renderer's): pyproject.toml may
#: add, drop or move them and every row stays fresh.
UNJUDGED_PACKAGES = ("jinja2",)


def judged_project(text: str) -> dict:
    """What of a pyproject.toml judges a port: ``requires-python`` and the dependencies but
    :data:`UNJUDGED_PACKAGES`. Its tools' settings (the layers contract, pytest's options), scripts
    and metadata never change an answer.

    >>> judged_project('[project]\\nrequires-python = ">=3.11"\\ndependencies = ["regex>=2024", "jinja2==3.1.6"]')
    {'requires-python': '>=3.11', 'dependencies': ['regex>=2024']}
    """
    import re
    import tomllib
    project = tomllib.loads(text).get("project", {})
    name = re.compile(r"[A-Za-z0-9_.-]+")
    deps = [d for d in project.get("dependencies", [])
            if name.match(d).group(0).lower() not in UNJUDGED_PACKAGES]
    return {"requires-python": project.get("requires-python"), "dependencies": deps}


def pyproject_changed(root: Path, engine: str) -> str | None:
    """Why pyproject.toml at ``engine`` judges differently from the one checked out (None when
    only what :func:`judged_project` leaves out differs, or neither has one)."""
    proc = subprocess.run(["git", "-C", str(root), "show", f"{engine}:pyproject.toml"],
                          capture_output=True, text=True, timeout=60)
    path = root / "pyproject.toml"
    then = proc.stdout if proc.returncode == 0 else None
    now = path.read_text(encoding="utf-8") if path.is_file() else None
    if then is None or now is None:
        return None if then == now else f"pyproject.toml is {'new since' if then is None else 'gone since'} engine {engine}"
    try:
        then, now = judged_project(then), judged_project(now)
    except ValueError as e:
        return f"pyproject.toml does not read as TOML ({e})"
    keys = [k for k in now if then[k] != now[k]]
    return f"pyproject.toml: {', '.join(keys)} changed" if keys else None


#: port.json keys that name programs the engine never runs (the adapter check's and the chat
#: check's): adding or changing them leaves the port's row fresh.
UNJUDGED_KEYS = ("direct", "chat")


def port_paths(directory: Path) -> list[str]:
    """A port's files that decide its row: all but its README, its direct program (which the
    adapter check runs, not the engine), its chat program (the chat check's; ``Chat.java`` too)
    and its port.json, whose judging keys :func:`port_json_changed` compares instead."""
    return [str(directory), f":(exclude){directory}/README.md", f":(exclude){directory}/port.json",
            f":(exclude,glob,icase){directory}/**/direct*", f":(exclude,glob,icase){directory}/**/chat*"]


def chat_paths(directory: Path) -> list[str]:
    """A port's files that decide its chat column: its chat program (``chat``, ``chat.py``, ``Chat.java``)."""
    return [f":(glob,icase){directory}/**/chat*"]


def chat_stale(row: dict, directory: Path | None, root: Path) -> str | None:
    """Why a row's chat column is stale (None when fresh, or when the port has no chat program):
    its chat check records no commit, or later commits change :data:`CHAT_PATHS` or the port's
    chat program."""
    chat = row.get("chat")
    if not chat:
        return None
    commit = chat.get("commit")
    if not commit or commit.endswith("+") or commit == "unknown":
        return f"{row['name']}: its chat check records {'no commit' if not commit else 'commit ' + commit}"
    paths = list(CHAT_PATHS) + (chat_paths(directory) if directory is not None else [])
    commits, error = commits_since(root, commit, paths)
    if error:
        return f"{row['name']}: chat commit {commit} is not in this checkout's history ({error})"
    if commits:
        return (f"{row['name']}: chat check on {commit}, and {len(commits)} later commit(s) change what judges its "
                f"chat (newest: {commits[0][:100]})")
    return None


def commits_since(root: Path, commit: str, paths: list[str]) -> tuple[list[str], str]:
    """The commits after ``commit`` that change ``paths`` (``"<hash> <subject>"``, newest first),
    and git's error when ``commit`` is not in the history ("" otherwise)."""
    proc = subprocess.run(["git", "-C", str(root), "log", "--format=%h %s", f"{commit}..HEAD", "--", *paths],
                          capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        return [], proc.stderr.strip()[:200] or f"git log exited {proc.returncode}"
    return proc.stdout.strip().splitlines(), ""


def port_json_changed(root: Path, directory: Path, engine: str) -> str | None:
    """Why the port.json at ``engine`` judges differently from the one checked out (None when
    only :data:`UNJUDGED_KEYS` differ): ``"port.json: serve changed"``."""
    path = directory / "port.json"
    proc = subprocess.run(["git", "-C", str(root), "show", f"{engine}:{path.as_posix()}"],
                          capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        return f"{path} is not in engine {engine}'s tree"
    try:
        then = json.loads(proc.stdout)
        now = json.loads((root / path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        return f"{path} does not read as JSON ({e})"
    keys = sorted(k for k in set(then) | set(now) if k not in UNJUDGED_KEYS and then.get(k) != now.get(k))
    return f"{path}: {', '.join(keys)} changed" if keys else None


def stale_rows(board: dict, ports: list[Port], root: Path) -> list[str]:
    """Why each stale row of a snapshot is stale ([] when the board is fresh): a port with no
    row, a row with no engine commit or one made with uncommitted changes, or engine code
    (:data:`ENGINE_PATHS`, :func:`pyproject_changed`) or the port's own files (:func:`port_paths`,
    :func:`port_json_changed`) changed since its row's engine commit."""
    rows = {r["name"]: r for r in board["ports"]}
    out = [f"{p.name}: not on the board" for p in ports if p.name not in rows]
    dirs = {p.name: p.directory.relative_to(root) for p in ports}
    for name, row in rows.items():
        engine = (row.get("run") or {}).get("engine")
        if not engine or engine.endswith("+") or engine == "unknown":
            out.append(f"{name}: its row records {'no engine commit' if not engine else 'engine ' + engine}")
            continue
        paths = list(ENGINE_PATHS) + (port_paths(dirs[name]) if name in dirs else [])
        commits, error = commits_since(root, engine, paths)
        if error:
            out.append(f"{name}: engine {engine} is not in this checkout's history ({error})")
        elif commits:
            out.append(f"{name}: engine {engine}, and {len(commits)} later commit(s) change what judges it "
                       f"(newest: {commits[0][:100]})")
        elif name in dirs and (why := port_json_changed(root, dirs[name], engine)):
            out.append(f"{name}: engine {engine}, and {why}")
        elif why := pyproject_changed(root, engine):
            out.append(f"{name}: engine {engine}, and {why}")
        if why := chat_stale(row, dirs.get(name), root):
            out.append(why)
    return out


def check_fresh(snapshot: Path, ports_root: Path) -> int:
    """``--check-fresh``: 0 if every row of the snapshot is fresh, else 1 with each reason and the
    command that refreshes those rows."""
    try:
        data = json.loads(snapshot.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise HarnessError(f"{snapshot}: cannot read the scoreboard snapshot ({e}); run make scoreboard SNAPSHOT=1") from e
    ports = discover(ports_root)
    root = ports_root.resolve().parent
    reasons = stale_rows(data, ports, root)
    if not reasons:
        print(f"scoreboard: {snapshot} is fresh: every row's engine is the engine code of this checkout")
        return 0
    names = sorted({r.split(":")[0] for r in reasons})
    chat_only = sorted({r.split(":")[0] for r in reasons if ": chat " in r or "its chat check" in r} -
                       {r.split(":")[0] for r in reasons if not (": chat " in r or "its chat check" in r)})
    whole = [n for n in names if n not in chat_only]
    how = [f"make scoreboard PORTS=\"{' '.join(whole)}\" SNAPSHOT=1"] if whole else []
    how += [f"make scoreboard PORTS=\"{' '.join(chat_only)}\" CHECKS_ONLY=1 SNAPSHOT=1"] if chat_only else []
    print(f"scoreboard: {snapshot} has {len(names)} stale row(s):\n  " + "\n  ".join(reasons)
          + f"\nrefresh them: {' && '.join(how)} && make scoreboard-readme")
    return 1
