"""The diagnosis benchmark in the reports room: ``diagnosis-bench.json``, ``.md`` and the README table.

The benchmark (:mod:`harness.scoreboard.diagnosis_bench`) scores each labelled port's causes
against its labelled bugs; this module only renders what it scored: one row per port and a
total row (:data:`COLUMNS`), then per port which cause went to which bug, so a person can
check the assignment.

>>> row = {"port": "toy", "true_bugs": 2, "bugs_found": 1, "causes": 3, "causes_per_found_bug": 2.0,
...        "named_correctly": 1, "named_or_characterised": 1, "wrong_diagnoses": 0, "unexplained": 1,
...        "uncharacterised": 0, "unmatched": 1, "mixed": 0, "wall_s": 12.5}
>>> table_row(row)
'| toy | 2 | 1 | 3 | 2.0 | 1 | 1 | 0 | 1 | 0 | 1 | 0 | – | 12.5 |'
"""

from __future__ import annotations

import json

from harness.errors import HarnessError

README_BEGIN = "<!-- diagnosis-bench:begin -->"
README_END = "<!-- diagnosis-bench:end -->"

#: The table's columns: (row key, header).
COLUMNS = (("port", "port"), ("true_bugs", "true bugs"), ("bugs_found", "bugs found"), ("causes", "causes"),
           ("causes_per_found_bug", "causes per found bug"), ("named_correctly", "bugs named correctly"),
           ("named_or_characterised", "bugs named or set characterised"),
           ("wrong_diagnoses", "wrong diagnoses"), ("unexplained", "unexplained causes"),
           ("uncharacterised", "of them uncharacterised"),
           ("unmatched", "unmatched causes"), ("mixed", "mixed causes"),
           ("adapter_causes", "adapter causes"), ("wall_s", "wall s"))


def _cell(value) -> str:
    return "–" if value is None else str(value)


def table_row(row: dict) -> str:
    """One Markdown row of the table."""
    return "| " + " | ".join(_cell(row.get(key)) for key, _ in COLUMNS) + " |"


def table(bench: dict) -> list[str]:
    """The table: a row per port, then the total."""
    lines = ["| " + " | ".join(h for _, h in COLUMNS) + " |", "|---" * len(COLUMNS) + "|"]
    lines += [table_row(r) for r in bench["ports"]]
    return lines + [table_row(dict(bench["total"], port="**total**"))]


def header_line(bench: dict) -> str:
    """Pin, date, machine and how each port was run, in one sentence.

    >>> header_line({"header": {"pin": "p", "generated": "d", "machine": "m", "profile": "ci", "seed": 1,
    ...              "jobs": "2", "budget": None, "keyword": "k"}})
    "Pin p, generated d (m); each port run with `--profile ci --seed 1 --jobs 2 -k 'k'`."
    """
    h = bench["header"]
    budget = f" --budget {h['budget']}" if h.get("budget") else ""
    engine = f", engine {h['engine']}" if h.get("engine") else ""
    line = (f"Pin {h.get('pin')}{engine}, generated {h.get('generated')} ({h.get('machine')}); each port run with "
            f"`--profile {h.get('profile')} --seed {h.get('seed')} --jobs {h.get('jobs')}{budget} -k '{h.get('keyword')}'`")
    if h.get("from_reports"):
        line += f"; scored again from the reports in {h['from_reports']}"
    return line + "."


def _cause_line(a: dict) -> str:
    mixed = f" (mixed: findings of {', '.join(a['mixed'])})" if a.get("mixed") else ""
    title = a.get("title") or ""
    title = title if len(title) <= 110 else title[:107] + "..."
    bug = a["bug"] or (f"adapter: {a['adapter']}" if a.get("adapter") else "(none)")
    kind = (", names its bug's set" if a.get("names_set") else ", characterised" if a.get("characterised") else "")
    return (f"| {a['cause']} | {bug} | {a['diagnosis'] or '(none)'} | {a['verdict']}{kind}{mixed} | "
            f"{a.get('cases', 0)} | {title.replace('|', '/')} |")


def port_section(row: dict) -> list[str]:
    """One port in the Markdown: its failure, its bugs with their causes, every cause's bug."""
    out = [f"## {row['port']}", "", f"Vocabs: {', '.join(row.get('vocabs') or []) or 'none'}.", ""]
    if row.get("failure"):
        out += [f"Not scored: {row['failure']}", ""]
    for b in row.get("bugs", []):
        named = ("named correctly" if b["named"] else "set characterised" if b.get("characterised")
                 else "not named" if b["causes"] else "not found")
        out.append(f"- `{b['id']}`: {', '.join(b['causes']) or 'no cause'} ({named}; right diagnoses: "
                   f"{', '.join(b['diagnoses']) or 'none, only unexplained'})")
    if row.get("assignment"):
        out += ["", "| cause | bug | diagnosis | verdict | cases | title |", "|---|---|---|---|---|---|"]
        out += [_cause_line(a) for a in row["assignment"]]
    return out + [""]


def markdown(bench: dict) -> str:
    """``diagnosis-bench.md``: the header, the table, then each port's assignment."""
    lines = ["# Diagnosis benchmark", "", header_line(bench), "", *table(bench), ""]
    lines += ["Each cause goes to the first labelled bug (tests/data/port-bugs/<port>.json) whose `match` holds "
              "on its minimal example; a cause whose findings match two bugs is mixed. Verdicts: `right` (the "
              "diagnosis is one of the bug's), `wrong` (a diagnosis not the bug's, or on no bug), `unexplained` "
              "(no diagnosis). An unexplained cause is *characterised* when it names a set: the code points its "
              "encode cases diverge on by themselves, or the tokens its piece cases touch; it names its bug's "
              "set when every one of them is in the set the bug's `match` names (`text`, `ids`, `id_range`, "
              "`token_types`).", ""]
    for row in bench["ports"]:
        lines += port_section(row)
    return "\n".join(lines)


def json_text(bench: dict) -> str:
    return json.dumps(bench, indent=1, ensure_ascii=False) + "\n"


def readme_block(bench: dict) -> str:
    """The README's section body between the markers (markers included)."""
    return "\n".join([README_BEGIN, "", header_line(bench) + " Which cause went to which bug: "
                      "`reports/diagnosis-bench.md`.", "", *table(bench), "", README_END])


def replace_block(text: str, block: str, where: str = "README.md") -> str:
    """``text`` with the block between the diagnosis-bench markers replaced.

    >>> replace_block(f"a\\n{README_BEGIN}\\nold\\n{README_END}\\nb", "NEW")
    'a\\nNEW\\nb'
    """
    start, end = text.find(README_BEGIN), text.find(README_END)
    if start < 0 or end < start:
        raise HarnessError(f"{where}: no diagnosis-bench markers; add a line {README_BEGIN!r} and, below it, "
                           f"{README_END!r} where the table goes")
    return text[:start] + block + text[end + len(README_END):]
