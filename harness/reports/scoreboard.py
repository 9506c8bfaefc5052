"""The scoreboard in the reports room: ``scoreboard.json``, ``.md``, ``.html`` and the README table.

The board is the dict :mod:`harness.scoreboard.run` builds (schema 1)::

    {"schema": 1,
     "header": {"pin", "llama_cpp", "engine", "generated", "machine", "profile", "budget", "jobs", "wall_s"},
     "vocabs": [str],
     "ports": [{"name", "language", "package", "version", "registry", "bundles_llama_cpp",
                "summary", "directory", "newest": {"version", "checked", "how", "note"} | null,
                "build": {"ok", "seconds", "log", "reason"},
                "run": {"exit_code", "wall_s", "report", "log", "reproduce", ...} | null,
                "vocabs": {"<vocab>": {"outcome", "reason"?, "checks": {check: outcome},
                                       "causes": [cause id]}},
                "causes": [{"id", "title", "diagnosis", "rule", "cases", "vocabs", "checks",
                            "example": {...}, "repro", "drift"?: {...}}]}]}

The HTML is a port × vocab grid; each cell links to that port's own ``conformance.html``.

>>> board = {"header": {"pin": "p"}, "vocabs": ["v"], "ports": [{"name": "x", "language": "go",
...   "package": "x", "version": "1", "bundles_llama_cpp": None, "causes": [],
...   "vocabs": {"v": {"outcome": "pass", "checks": {}, "causes": []}}}]}
>>> tally(board["ports"][0])
'1 pass'
"""

from __future__ import annotations

import html
import json

from harness.errors import HarnessError
from harness.reports.escape import render_token

README_BEGIN = "<!-- scoreboard:begin (generated from docs/scoreboard.json by `make scoreboard-readme`) -->"
README_END = "<!-- scoreboard:end -->"
_ORDER = ("pass", "divergence", "unsupported", "error", "not checked")
_SHORT = {"pass": "pass", "divergence": "DIV", "unsupported": "unsup", "error": "ERR", "not checked": "n/c"}


def tally(port: dict) -> str:
    """``"3 pass, 16 divergence"``: the port's vocabs counted by outcome."""
    counts = {}
    for entry in port["vocabs"].values():
        counts[entry["outcome"]] = counts.get(entry["outcome"], 0) + 1
    return ", ".join(f"{counts[o]} {o}" for o in _ORDER if o in counts)


def run_options(h: dict) -> str:
    """The options every port's run had.

    >>> run_options({"profile": "ci", "budget": None, "jobs": "2"})
    "`--profile ci --jobs 2` (no budget: the profile's counts)"
    """
    if h.get("budget"):
        return f"`--profile {h.get('profile')} --budget {h['budget']} --jobs {h.get('jobs')}`"
    return f"`--profile {h.get('profile')} --jobs {h.get('jobs')}` (no budget: the profile's counts)"


def timing(h: dict) -> str:
    """The board's cost: its wall time, else (re-summarised) the sum of its builds and runs.

    >>> timing({"wall_s": None, "steps_s": 61.0})
    'builds and runs took 61.0 s in all (re-summarised with --no-run)'
    """
    if h.get("wall_s") is not None:
        return f"board wall time {h['wall_s']} s (builds included)"
    return f"builds and runs took {h.get('steps_s')} s in all (re-summarised with --no-run)"


def package_label(port: dict) -> str:
    """The package and version, with a conversion step the port runs on named as part of it:
    its causes may come from either.

    >>> package_label({"package": "@huggingface/transformers", "version": "4.3.2", "conversion":
    ...     {"package": "transformers", "version": "5.24.0", "what": "GGUF to tokenizer.json"}})
    '@huggingface/transformers 4.3.2 + transformers 5.24.0 (GGUF to tokenizer.json)'
    """
    conv = port.get("conversion")
    step = f" + {conv['package']} {conv['version']} ({conv['what']})" if conv else ""
    return f"{port['package']} {port['version']}{step}"


def label(port: dict) -> str:
    """``"ollama (go, github.com/ollama/ollama v0.17.4)"``."""
    return f"{port['name']} ({port['language']}, {package_label(port)})"


def md_code(s: str) -> str:
    """Inline code that survives any backticks and table pipes.

    >>> md_code("a`b|c")
    '``a`b\\\\|c``'
    """
    s = s.replace("|", "\\|").replace("\n", "\\n")
    fence = "``" if "`" in s else "`"
    return f"{fence}{s}{fence}" if s.strip() else f"{fence}{s!r}{fence}"


#: Longest input or answer an upstream note quotes whole; past it the note quotes the start
#: and says how long it is (a case not shrunk small, e.g. a piece case met inside a long text).
NOTE_CLIP = 240


def clip(rendered: str, limit: int = NOTE_CLIP) -> str:
    """``rendered`` whole, or its first ``limit`` characters and how long it is.

    >>> clip("[1, 2, 3]")
    '[1, 2, 3]'
    >>> print(clip("x" * 10, 4))
    xxxx… (10 characters in all; the port's report has it whole)
    """
    if len(rendered) <= limit:
        return rendered
    return f"{rendered[:limit]}… ({len(rendered)} characters in all; the port's report has it whole)"


def example_input(ex: dict) -> str:
    """The minimal example's input, readable: a text (repr) or the ids given; clipped."""
    if ex.get("check") in ("decode", "piece"):
        return clip(f"ids {ex.get('reference_ids')}")
    return clip(render_token(ex.get("text", "").encode("utf-8", "surrogatepass")))


def example_sides(ex: dict) -> tuple[str, str]:
    """(llama.cpp's answer, the port's) for the minimal example; clipped."""
    if ex.get("check") in ("decode", "piece"):
        return (clip(render_token(bytes.fromhex(ex.get("reference_bytes_hex", "")))),
                clip(render_token(bytes.fromhex(ex.get("port_bytes_hex", "")))))
    return clip(str(ex.get("reference_ids"))), clip(str(ex.get("port_ids")))


def example_flags(ex: dict) -> str:
    if ex.get("check") == "decode":
        return f"remove_special={ex.get('remove_special')}, unparse_special={ex.get('unparse_special')}"
    if ex.get("check") == "piece":
        return f"special={ex.get('unparse_special')}"
    return f"add_special={ex.get('add_special')}, parse_special={ex.get('parse_special')}"


def _drift_text(cause: dict) -> str:
    d = cause.get("drift")
    if not d:
        return ""
    extra = f"; {d['pin_diff']}" if d.get("pin_diff") else ""
    return f"drift vs llama.cpp@{d['old_pin']}: **{d['verdict']}** ({d['note']}){extra}"


def markdown(board: dict) -> str:
    """The whole ``scoreboard.md``: header, the grid, then each port's causes."""
    h = board["header"]
    ran = [p["name"] for p in board["ports"] if p.get("build")]
    skipped = [p["name"] for p in board["ports"] if not p.get("build")]
    lines = ["# Tokenizer port scoreboard", "",
             f"Ports built and run in this board: {len(ran)} of {len(board['ports'])} ({', '.join(ran)})"
             + (f"; **not run**: {', '.join(skipped)} (their vocabs read not checked)." if skipped else "."), "",
             f"Pin {h.get('pin')} (llama.cpp {h.get('llama_cpp')}), engine {h.get('engine') or 'not recorded'}, "
             f"generated {h.get('generated')} on "
             f"{h.get('machine')}; each port's run: {run_options(h)}; {timing(h)}.", "",
             "Outcomes: pass (every check ran and passed), DIV (divergence), unsup (the port declared it "
             "cannot do it), ERR (port error, error, or a failed build), n/c (not checked).", "",
             "| vocab | " + " | ".join(p["name"] for p in board["ports"]) + " |",
             "|---|" + "---|" * len(board["ports"])]
    for v in board["vocabs"]:
        cells = []
        for p in board["ports"]:
            e = p["vocabs"].get(v, {"outcome": "not checked", "causes": []})
            cells.append(_SHORT[e["outcome"]] + (f" ({', '.join(e['causes'])})" if e.get("causes") else ""))
        lines.append(f"| {v} | " + " | ".join(cells) + " |")
    lines.append("")
    for p in board["ports"]:
        lines += _md_port(p, h.get("llama_cpp") or h.get("pin") or "")
    return "\n".join(lines) + "\n"


def adapter_line(check: dict | None) -> str:
    """One line for the board.

    >>> adapter_line({"checked": True, "vocabs": [{"vocab": "v", "differ": []}], "requests": 9, "equal": 9})
    'adapter check: serve and direct give the same 9 answers on v'
    >>> adapter_line(None)
    'adapter check: not run'
    """
    if not check:
        return "adapter check: not run"
    if not check["checked"]:
        return f"adapter check: not checked ({check['why']})"
    names = ", ".join(r["vocab"] for r in check["vocabs"])
    if check["equal"] == check["requests"]:
        return f"adapter check: serve and direct give the same {check['requests']} answers on {names}"
    first = next(d for r in check["vocabs"] for d in r["differ"])
    return (f"adapter check: **{check['requests'] - check['equal']} of {check['requests']} answers differ** "
            f"between serve and the package called directly ({names}); first: "
            f"{json.dumps(first['request'], ensure_ascii=False)[:160]} -> serve "
            f"{json.dumps(first['serve'], ensure_ascii=False)[:120]}, direct "
            f"{json.dumps(first['direct'], ensure_ascii=False)[:120]}")


#: Cases of a chat check listed one by one; the rest are counted (its chat.json has them all).
CHAT_CASES_LISTED = 12


def chat_lines(chat: dict | None) -> list[str]:
    """The port's chat check: its outcomes, its causes, then the first cases that did not agree.

    >>> chat_lines({"cases": [{"vocab": "qwen2", "conversation": "two turns", "outcome": "agree", "detail": ""},
    ...     {"vocab": "qwen2", "conversation": "system first", "outcome": "diverge", "detail": "ids differ"}],
    ...     "causes": [{"title": "BOS missing", "rule": "r", "cases": 1, "example": {"vocab": "qwen2",
    ...     "conversation": "system first", "messages": [], "detail": "ids differ"}}]})[1:]
    ['  - chat cause: BOS missing (1 case(s)); llama.cpp: r; e.g. qwen2 [system first]: ids differ', '  - qwen2 [system first]: diverge: ids differ']
    """
    if not chat:
        return []
    if chat.get("failure"):
        return [f"- chat check: **error**: {chat['failure']}"]
    cases = chat["cases"]
    counts = {o: sum(c["outcome"] == o for c in cases) for o in ("agree", "diverge", "port error", "unsupported")}
    head = (f"- chat check (its chat program vs llama.cpp: the rendering and llama-server's prompt ids): "
            f"{len(cases)} cases on {len({c['vocab'] for c in cases})} vocab(s): "
            + ", ".join(f"{n} {o}" for o, n in counts.items() if n))
    causes = [f"  - chat cause: {c['title']} ({c['cases']} case(s)); llama.cpp: {c['rule']}; e.g. "
              f"{c['example']['vocab']} [{c['example']['conversation']}]: {clip(c['example']['detail'])}"
              for c in chat.get("causes", [])]
    rest = [c for c in cases if c["outcome"] != "agree"]
    listed = [f"  - {c['vocab']} [{c['conversation']}]: {c['outcome']}: {c['detail'][:300]}"
              for c in rest[:CHAT_CASES_LISTED]]
    more = [f"  - and {len(rest) - CHAT_CASES_LISTED} more case(s) that did not agree (its chat.json)"]
    return [head] + causes + listed + (more if len(rest) > CHAT_CASES_LISTED else [])


def upstream_note(p: dict, c: dict, llama_cpp: str) -> str:
    """One line a port's author can paste into an upstream issue: the package and version, the
    smallest input, both sides, and llama.cpp's rule with its source lines.

    >>> upstream_note({"package": "tok", "version": "1.0"}, {"title": "t", "rule": "BOS first",
    ...     "sources": ["src/llama-vocab.cpp:3418 (llama_vocab::impl::tokenize)"], "example": {"check": "encode",
    ...     "vocab": "qwen2", "add_special": True, "parse_special": False, "text": "a",
    ...     "reference_ids": [1, 64], "port_ids": [64]}}, "0c1e57098")
    "tok 1.0, with llama.cpp's ggml-vocab-qwen2.gguf: encode of 'a' (add_special=True, parse_special=False) gives [64]; llama.cpp 0c1e57098 gives [1, 64]. llama.cpp's rule: BOS first (src/llama-vocab.cpp:3418 (llama_vocab::impl::tokenize))."
    """
    ex = c["example"]
    ref, port = example_sides(ex)
    rule = (f"llama.cpp's rule: {c['rule'].split(' (src/')[0]} ({'; '.join(c['sources'])})." if c.get("rule") and c.get("sources")
            else f"llama.cpp's rule: {c['rule']}." if c.get("rule")
            else f"The harness names no rule for it ({c['title']}).")
    return (f"{package_label(p)}, with llama.cpp's ggml-vocab-{ex.get('vocab')}.gguf: {ex.get('check')} of "
            f"{example_input(ex)} ({example_flags(ex)}) gives {port}; llama.cpp {llama_cpp} gives {ref}. {rule}")


def _md_port(p: dict, llama_cpp: str = "") -> list[str]:
    b, r = p.get("build") or {}, p.get("run") or {}
    lines = [f"## {label(p)}", "",
             f"- registry: {p.get('registry') or '-'}; bundles llama.cpp: {p.get('bundles_llama_cpp') or 'no'}",
             f"- build: {'ok' if b.get('ok') else 'FAILED: ' + b.get('reason', '')} in {b.get('seconds')} s; "
             f"run: exit {r.get('exit_code')} in {r.get('wall_s')} s; report `reports/{r.get('report', '')}`",
             f"- vocabs: {tally(p)}", f"- {adapter_line(p.get('adapter'))}", *chat_lines(p.get("chat"))]
    newest = p.get("newest")
    if newest:
        lines.append(f"- newest release on {p.get('registry') or 'its registry'}: {newest.get('version')} "
                     f"(checked {newest.get('checked')} with `{newest.get('how')}`): {newest.get('note')}")
    if r.get("reproduce"):
        lines.append(f"- reproduce: `{r['reproduce']}`")
    odd = {v: e for v, e in p["vocabs"].items() if e["outcome"] not in ("pass", "divergence")}
    for v, e in odd.items():
        lines.append(f"- {v}: {e['outcome']}: {e.get('reason', '')[:300]}")
    lines.append("")
    for c in p.get("causes", []):
        ex = c["example"]
        ref, port = example_sides(ex)
        lines += [f"### {p['name']} {c['id']}: {c['title']}", "",
                  f"- where: {', '.join(c['vocabs'])} ({', '.join(c['checks'])}); {c['cases']} case(s)",
                  f"- diagnosis: {c.get('diagnosis') or 'none (unexplained)'}",
                  f"- minimal example ({ex.get('vocab')}, {ex.get('check')}, {example_flags(ex)}): "
                  f"{md_code(example_input(ex))}",
                  f"  - llama.cpp: {md_code(ref)}", f"  - {p['name']}: {md_code(port)}"]
        if c.get("rule"):
            lines.append(f"- rule: {c['rule']}")
        lines.append(f"- upstream note: {upstream_note(p, c, llama_cpp)}")
        if c.get("drift"):
            lines.append(f"- {_drift_text(c)}")
        if c.get("repro"):
            lines.append(f"- repro: `{c['repro']}`")
        lines.append("")
    return lines


_CSS = """body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin-bottom:1.5em}
td,th{border:1px solid #bbb;padding:.25em .5em;font-size:90%}td.pass{background:#cfc}
td.divergence{background:#fcc}td.error{background:#fc9}td.unsupported{background:#eee}
td.not-checked{background:#ffd}code{white-space:pre-wrap}th.type{background:#eef}
td.share{text-align:right}"""


def closeness(p: dict) -> tuple:
    """How close a port is to llama.cpp, for ordering the grid's columns (closest first): a port
    that ran no vocab (all errors, refused or not checked) last; then most vocabs passed, fewest
    causes, most vocabs it ran (divergent beats refused).

    >>> a = {"vocabs": {"v": {"outcome": "pass"}}, "causes": []}
    >>> b = {"vocabs": {"v": {"outcome": "divergence"}}, "causes": [{}]}
    >>> c = {"vocabs": {"v": {"outcome": "error"}}, "causes": []}
    >>> sorted([c, b, a], key=closeness) == [a, b, c]
    True
    """
    outcomes = [e["outcome"] for e in p["vocabs"].values()]
    ran = outcomes.count("pass") + outcomes.count("divergence")
    return (ran == 0, -outcomes.count("pass"), len(p.get("causes", [])), -ran)


def by_type(board: dict) -> dict[str, list[str]]:
    """The board's vocabs grouped by ``vocab_type`` (``?`` where the board does not say), in order."""
    types = board.get("vocab_types") or {}
    groups: dict[str, list[str]] = {}
    for v in board["vocabs"]:
        groups.setdefault(types.get(v, "?"), []).append(v)
    return groups


def _type_cell(p: dict, vocabs: list[str]) -> str:
    """``0/5 pass, 4 DIV, 1 unsup; 7 causes``: a port's vocabs of one type and the causes seen on
    them, shaded green by the share passed, red by the causes, orange on an error, grey where
    it ran none."""
    entries = [p["vocabs"].get(v, {"outcome": "not checked"}) for v in vocabs]
    outs = [en["outcome"] for en in entries]
    causes = {c for en in entries for c in en.get("causes", [])}
    rest = ", ".join(f"{outs.count(o)} {_SHORT[o]}" for o in _ORDER if o != "pass" and outs.count(o))
    text = (f"{outs.count('pass')}/{len(outs)} pass" + (f", {rest}" if rest else "")
            + f"; {len(causes)} cause{'' if len(causes) == 1 else 's'}")
    if "error" in outs:
        colour = "#fc9"
    elif not outs.count("pass") + outs.count("divergence"):
        colour = "#eee"
    else:
        fade = max(130, 255 - 8 * len(causes))
        colour = f"rgb({255 if causes else 200},{fade if causes else 255},{fade if causes else 200})"
    return f"<td class='share' style='background:{colour}'>{html.escape(text)}</td>"


def html_page(board: dict) -> str:
    """The whole ``scoreboard.html``: ports ordered closest to llama.cpp first (:func:`closeness`);
    a table of each port by vocab type; the port × vocab grid (each cell links to the port's own
    conformance.html, its title the checks' outcomes); then each port's causes."""
    e = html.escape
    h = board["header"]
    ports = sorted(board["ports"], key=closeness)
    groups = by_type(board)
    head = "".join(f"<th title='{e(label(p))}'><a href='#{e(p['name'])}'>{e(p['name'])}</a><br><small>"
                   f"{e(p['language'])} {e(p['version'])}</small></th>" for p in ports)
    summary = [f"<tr><th>vocabs ({len(board['vocabs'])})</th>"
               + "".join(f"<td>{e(tally(p))}</td>" for p in ports) + "</tr>",
               "<tr><th>causes</th>" + "".join(f"<td class='share'>{len(p.get('causes', []))}</td>" for p in ports)
               + "</tr>",
               "<tr><th>adapter check</th>" + "".join(f"<td>{e(adapter_cell(p.get('adapter')))}</td>" for p in ports)
               + "</tr>",
               "<tr><th>chat</th>" + "".join(f"<td>{e(_chat_cell(p.get('chat')))}</td>" for p in ports) + "</tr>"]
    summary += [f"<tr><th class='type'>{e(t)} ({len(vs)})</th>" + "".join(_type_cell(p, vs) for p in ports) + "</tr>"
                for t, vs in groups.items()]
    rows = []
    for t, vs in groups.items():
        rows.append(f"<tr><th class='type' colspan='{len(ports) + 1}'>{e(t)}</th></tr>")
        for v in vs:
            rows.append(f"<tr><th>{e(v)}</th>{''.join(_grid_cell(p, v) for p in ports)}</tr>")
    llama_cpp = h.get("llama_cpp") or ""
    sections = "".join(f"<h2 id='{e(p['name'])}'>{e(label(p))}</h2><pre>{e(chr(10).join(_md_port(p, llama_cpp)))}</pre>"
                       for p in ports)
    return (f"<!doctype html><meta charset='utf-8'><title>tokenizer port scoreboard</title>"
            f"<style>{_CSS}</style><h1>Tokenizer port scoreboard</h1>"
            f"<p>pin {e(str(h.get('pin')))} (llama.cpp {e(str(h.get('llama_cpp')))}), engine "
            f"{e(str(h.get('engine') or 'not recorded'))}, generated {e(str(h.get('generated')))} on "
            f"{e(str(h.get('machine')))}; each port's run: {e(run_options(h))}; {e(timing(h))}. "
            "Ports are ordered closest to llama.cpp first: most vocabs passed, then fewest causes; "
            "ports that ran no vocab last.</p>"
            f"<h2>By vocab type</h2><table id='summary'><tr><th></th>{head}</tr>{''.join(summary)}</table>"
            f"<h2>Port × vocab</h2><table id='grid'><tr><th>vocab</th>{head}</tr>{''.join(rows)}</table>{sections}")


def _chat_cell(chat: dict | None) -> str:
    """``3/35 agree``, or why there is no figure."""
    if not chat:
        return "no chat program"
    if chat.get("failure"):
        return "error"
    agree = sum(c["outcome"] == "agree" for c in chat["cases"])
    return f"{agree}/{len(chat['cases'])} agree"


def adapter_cell(check: dict | None) -> str:
    """``3810/3810 equal``, or why there is no figure.

    >>> adapter_cell({"checked": True, "requests": 9, "equal": 8})
    '8/9 equal'
    >>> adapter_cell({"checked": False, "why": "the port has no direct program (port.json 'direct')"})
    'no direct program'
    """
    if not check:
        return "not run"
    if not check["checked"]:
        why = check.get("why", "")
        return "no direct program" if "no direct program" in why else f"not checked: {why[:80]}"
    return f"{check['equal']}/{check['requests']} equal"


def row_engines(board: dict) -> str:
    """Which engine commits ran the rows (a snapshot refreshed a few ports at a time mixes them).

    >>> row_engines({"ports": [{"run": {"engine": "a"}}, {"run": {"engine": "b"}}, {"run": {"engine": "a"}},
    ...                        {"run": {}}, {"run": None}]})
    'a (2 ports), b (1 port), not recorded (1 port), no run (1 port)'
    """
    counts: dict[str, int] = {}
    for p in board["ports"]:
        run = p.get("run")
        engine = "no run" if not isinstance(run, dict) else run.get("engine") or "not recorded"
        counts[engine] = counts.get(engine, 0) + 1
    return ", ".join(f"{k} ({n} port{'s' if n > 1 else ''})" for k, n in counts.items())


def _grid_cell(p: dict, v: str) -> str:
    """One grid cell: the outcome and causes, linked to the port's conformance.html."""
    e = html.escape
    en = p["vocabs"].get(v, {"outcome": "not checked", "causes": [], "checks": {}})
    link = (p.get("run") or {}).get("report")
    text = e(en["outcome"]) + (f"<br><small>{e(', '.join(en['causes']))}</small>" if en.get("causes") else "")
    title = "; ".join(f"{k}: {o}" for k, o in en.get("checks", {}).items()) + (
        f" — {en['reason']}" if en.get("reason") else "")
    body = f"<a href='{e(link)}'>{text}</a>" if link else text
    return f"<td class='{en['outcome'].replace(' ', '-')}' title='{e(title)}'>{body}</td>"


def json_text(board: dict) -> str:
    return json.dumps(board, indent=1, ensure_ascii=False) + "\n"


def readme_block(board: dict) -> str:
    """The README's table: one row per port, from the snapshot."""
    h = board["header"]
    lines = [README_BEGIN, "",
             f"Pin {h.get('pin')}; rows run on engine {row_engines(board)}; summarised {h.get('generated')} "
             f"({h.get('machine')}; {run_options(h)} per port; {timing(h)}). "
             "Details, causes and minimal examples: [docs/scoreboard.md](docs/scoreboard.md). "
             "*adapter check*: the port's serve against the package called directly, answers equal; "
             "*chat*: its chat program against llama.cpp's rendering and prompt ids.", "",
             "| port | language | package | bundles llama.cpp | vocabs | causes | adapter check | chat |",
             "|---|---|---|---|---|---|---|---|"]
    for p in board["ports"]:
        bundles = (p.get("bundles_llama_cpp") or "no").split(":")[0].split(" (")[0]
        lines.append(f"| {p['name']} | {p['language']} | {package_label(p)} | {bundles} | "
                     f"{tally(p)} | {len(p.get('causes', []))} | {adapter_cell(p.get('adapter'))} | "
                     f"{_chat_cell(p.get('chat'))} |")
    return "\n".join(lines + ["", README_END])


def replace_block(text: str, block: str, where: str = "README.md") -> str:
    """``text`` with the block between the markers replaced (markers included in ``block``)."""
    start, end = text.find(README_BEGIN), text.find(README_END)
    if start < 0 or end < start:
        raise HarnessError(f"{where}: no scoreboard markers; add a line {README_BEGIN!r} and, below it, "
                           f"{README_END!r} where the table goes")
    return text[:start] + block + text[end + len(README_END):]
