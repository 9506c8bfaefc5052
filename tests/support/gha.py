"""Just enough of GitHub Actions to run docs/ci.md's workflows on this machine.

A workflow is read from its YAML text (the subset the recipes use: ``jobs:``, ``needs``,
``strategy.matrix`` with one list, steps with ``uses``/``run``/``with``/``if``, ``run: >``
folded lines). Each job (and each matrix copy) runs in a fresh directory, as on a fresh
runner. Steps are emulated by what they do to the runner's files:

* ``actions/cache/restore``: the entry of ``key``, else the newest whose key starts with
  a ``restore-keys`` prefix, copied to ``path``; ``actions/cache/save``: ``path`` copied
  to a new entry (an existing key is never overwritten, as on GitHub);
* ``actions/upload-artifact`` / ``download-artifact``: directories by name and pattern;
* ``run`` lines that start with ``llama-conformance`` run in a shell (after ``edit``
  rewrote them: the test's port and a small selection, or skipped them); every other
  step is skipped (installing, building the port: done already here).

A failed step makes the rest of its job skip except ``if: always()`` steps, as on GitHub.

>>> jobs = parse_workflow("jobs:\\n  a:\\n    steps:\\n      - run: >\\n          llama-conformance x\\n          --y\\n")
>>> jobs["a"].steps[0].run
'llama-conformance x --y'
"""

from __future__ import annotations

import fnmatch
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Step:
    uses: str = ""
    run: str = ""
    with_: dict = field(default_factory=dict)
    always: bool = False


@dataclass
class Job:
    name: str
    needs: list = field(default_factory=list)
    matrix: dict = field(default_factory=dict)  # one key -> its values
    steps: list = field(default_factory=list)


def _value(text: str) -> str:
    return re.sub(r"\s+#.*$", "", text).strip().strip('"')


def _step(lines: list[str]) -> Step:
    step, i = Step(), 0
    while i < len(lines):
        key, _, rest = lines[i].strip().removeprefix("- ").partition(":")
        if key == "run" and rest.strip() in (">", "|"):
            block = []
            while i + 1 < len(lines) and lines[i + 1].startswith(" " * 10):
                i += 1
                block.append(lines[i].strip())
            step.run = (" " if rest.strip() == ">" else "\n").join(block)
        elif key == "run":
            step.run = rest.strip()
        elif key == "uses":
            step.uses = _value(rest)
        elif key == "if":
            step.always = "always()" in rest
        elif key == "with":
            while i + 1 < len(lines) and lines[i + 1].startswith(" " * 10):
                i += 1
                k, _, v = lines[i].strip().partition(":")
                step.with_[k] = _value(v)
        i += 1
    return step


def parse_workflow(text: str) -> dict[str, Job]:
    """The jobs of a workflow's YAML text, in order."""
    jobs: dict[str, Job] = {}
    groups: dict[str, list[list[str]]] = {}
    job = None
    lines = text.split("\n")
    for line in lines[lines.index("jobs:") + 1:]:
        if re.fullmatch(r"  [\w-]+:", line):
            job = jobs.setdefault(line.strip()[:-1], Job(line.strip()[:-1]))
            groups[job.name] = []
        elif job is None or not line.strip() or line.strip().startswith("#"):
            continue
        elif line.startswith("      - "):
            groups[job.name].append([line])
        elif groups[job.name] and line.startswith("        "):
            groups[job.name][-1].append(line)
        elif m := re.fullmatch(r"    needs: (\S+)", line):
            job.needs = [m.group(1)]
        elif m := re.fullmatch(r"        (\w+): \[(.*)\]", line.split("#")[0].rstrip()):
            job.matrix = {m.group(1): [v.strip() for v in m.group(2).split(",")]}
    for name, job in jobs.items():
        job.steps = [_step(g) for g in groups[name]]
    return jobs


class Runner:
    """Runs workflows on this machine: one cache and one artifact store for all of them."""

    def __init__(self, root: Path, env: dict, edit, context: dict | None = None):
        # edit(line) -> the line to run, or None to skip it (fetch, build: done already)
        self.root, self.env, self.edit, self.context = root, env, edit, dict(context or {})
        self.cache: dict[str, Path] = {}
        self.artifacts: dict[str, Path] = {}
        self.runs = 0
        self.log: list[tuple[str, int, str]] = []  # (command, exit code, output)

    def workflow(self, text: str, run_id: int) -> None:
        self.artifacts = {}
        for job in parse_workflow(text).values():
            for values in [dict(zip(job.matrix, v)) for v in zip(*job.matrix.values())] or [{}]:
                self._job(job, {**self.context, "github.run_id": str(run_id),
                                **{f"matrix.{k}": v for k, v in values.items()}})

    def _job(self, job: Job, context: dict) -> None:
        self.runs += 1
        work = self.root / f"runner{self.runs}-{job.name}"
        work.mkdir()
        failed = False
        for step in job.steps:
            if failed and not step.always:
                continue
            failed |= not self._step(step, work, context)

    def _sub(self, text: str, context: dict) -> str:
        return re.sub(r"\$\{\{\s*([\w.]+)\s*\}\}", lambda m: context.get(m.group(1), m.group(0)), text)

    def _step(self, step: Step, work: Path, context: dict) -> bool:
        w = {k: self._sub(v, context) for k, v in step.with_.items()}
        if step.uses.startswith("actions/cache/restore"):
            keys = [k for k in self.cache if k == w["key"]] or \
                   [k for k in self.cache if k.startswith(w.get("restore-keys", "\0"))]
            if keys:
                shutil.copytree(self.cache[keys[-1]], work / w["path"], dirs_exist_ok=True)
        elif step.uses.startswith("actions/cache/save"):
            if w["key"] not in self.cache and (work / w["path"]).is_dir():
                self.cache[w["key"]] = self.root / f"cache{len(self.cache)}"
                shutil.copytree(work / w["path"], self.cache[w["key"]])
        elif step.uses.startswith("actions/upload-artifact") and (work / w["path"]).is_dir():
            self.artifacts[w["name"]] = work / w["path"]
        elif step.uses.startswith("actions/download-artifact"):
            for name, src in self.artifacts.items():
                if fnmatch.fnmatch(name, w["pattern"]):
                    shutil.copytree(src, work / w["path"] / name)
        elif step.run.startswith("llama-conformance"):
            line = self.edit(self._sub(step.run, context))
            if line is None:
                return True
            p = subprocess.run(["bash", "-c", line], cwd=work, env=self.env, capture_output=True, text=True,
                               timeout=600)
            self.log.append((line, p.returncode, p.stdout + p.stderr))
            return p.returncode == 0
        return True
