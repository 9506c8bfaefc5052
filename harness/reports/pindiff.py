"""pin-diff in the reports room: ``pin-diff.md`` and ``pin-diff.html`` from its JSON object.

The object is what :func:`harness.pindiff.pin_diff` returns (``from``, ``to``,
``static``, ``changes``, ``vocabs``, ``differences``, ``skipped``, ``texts``, ...).

>>> _ids_line([{"i": 0, "id": 5, "piece": "a"}])
"[0] 5 'a'"
"""

from __future__ import annotations

import html
import json



def _ids_line(window: list) -> str:
    if window and "kind" in window[0]:
        return f"{window[0]['kind']}: {window[0]['detail']}"
    return " ".join(f"[{w['i']}] {w['id']} {w['piece']!r}" for w in window)


def render_md(r: dict) -> str:
    a, b, st = r["from"], r["to"], r["static"]
    lines = [f"# llama.cpp {a['name']} → {b['name']}", "",
             f"From `{a['commit']}` ({a['sdist'] or 'no sdist'}) to `{b['commit']}` "
             f"({b['sdist'] or 'no sdist'}{', tree sha256 ' + b['tree_sha256'][:16] if b['tree_sha256'] else ''}).",
             f"{r['cases']} encodes compared per side ({len(r['vocabs'])} vocabs × 4 flag combinations × "
             f"texts: {r['texts']}) in {r['seconds']} s; "
             f"{sum(v['differing'] for v in r['vocabs'])} gave different ids; "
             f"{len(r.get('skipped', []))} text(s) skipped (not sent, listed below with the reason).", "",
             "## Static changes", "",
             f"- vocab and golden files changed: {', '.join(st['files']) or 'none'}",
             f"- pre-tokenizer types added: {', '.join(st['pre_types_added']) or 'none'}; "
             f"removed: {', '.join(st['pre_types_removed']) or 'none'}",
             f"- pre-tokenizer names added: {', '.join(st['pre_names_added']) or 'none'}; "
             f"removed: {', '.join(st['pre_names_removed']) or 'none'}",
             f"- tokenizer sources changed: {', '.join(st['tokenizer_sources_changed']) or 'none'}"
             f"{' (unicode-data too)' if st['unicode_data_changed'] else ' (unicode-data unchanged)'}", "",
             "", "## Tokenizer changes the harness tracks between these pins (harness/tokenizer/pins.py)", ""]
    lines += [f"- `{c['name']}`: {c['source']}" for c in r.get("changes", [])] or ["- none"]
    lines += ["", "## Vocabs whose ids changed", ""]
    changed = [v for v in r["vocabs"] if v["differing"]]
    if not changed:
        lines.append("None: every text gave the same ids on both pins.")
    else:
        lines += ["| vocab | cases | differing | where |", "|---|---|---|---|"]
        for v in changed:
            where = "; ".join(f"{k}: {n}" for k, n in v["by_kind"].items())
            if v.get("load"):
                where = "load: " + "; ".join(f"{p} {what}" for p, what in v["load"].items())
            lines.append(f"| {v['vocab']} | {v['cases']} | {v['differing']} | {where} |")
    lines += ["", f"Unchanged: {sum(1 for v in r['vocabs'] if not v['differing'])} of {len(r['vocabs'])} vocabs "
              f"({', '.join(v['vocab'] for v in r['vocabs'] if not v['differing'])}).", "",
              "## Differences (shrunk)", ""]
    diffs_at = len(lines)
    for group in grouped(r["differences"]):
        d = group[0]
        flags = ", ".join(f"({g['add_special']}, {g['parse_special']})" for g in group)
        lines += [f"### {d['vocab']}: `{d['text']!r}`", "",
                  f"- (add_special, parse_special): {flags}; from a {d['source']} text of "
                  f"{d['original_length']} chars, shrunk",
                  f"- UTF-8: `{d['text_utf8_hex']}`; first divergent index: {d['index']}",
                  f"- {a['name']}: {_ids_line(d['from_window'])}",
                  f"- {b['name']}: {_ids_line(d['to_window'])}", ""]
    if len(lines) == diffs_at:
        lines += ["None.", ""]
    lines += skipped_md(r.get("skipped", []))
    return "\n".join(lines) + "\n"


def skipped_md(skipped: list[dict]) -> list[str]:
    """The texts pin-diff did not send, each with its vocab, source and reason.

    >>> skipped_md([{"vocab": "v", "source": "golden", "text": "a  b", "reason": "aborts"}])[2]
    "- v, golden text `'a  b'`: aborts"
    """
    lines = [f"## Texts skipped ({len(skipped)})", ""]
    if not skipped:
        return lines + ["None: every text was sent to both pins.", ""]
    lines += [f"- {s['vocab']}, {s['source']} text `{s['text']!r}`: {s['reason']}" for s in skipped]
    return lines + [""]


def grouped(diffs: list[dict]) -> list[list[dict]]:
    """Differences with the same vocab, text and ids under several flag combinations, together."""
    groups: dict = {}
    for d in diffs:
        key = (d["vocab"], d["text"], json.dumps(d["from_ids"]), json.dumps(d["to_ids"]))
        groups.setdefault(key, []).append(d)
    return list(groups.values())


def render_html(r: dict) -> str:
    body = html.escape(render_md(r))
    return ("<!doctype html><meta charset=utf-8><title>pin-diff</title>"
            "<style>body{font-family:sans-serif;max-width:70em;margin:auto}pre{white-space:pre-wrap}</style>"
            f"<pre>{body}</pre>\n")
