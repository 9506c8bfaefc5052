"""``chat.html``: the chat check's page (``chat-check --html FILE``; ``make conformance CHECKS=chat``).

- a header with the port, seed, generated conversations per vocab and the exit code;
- a vocab x outcome table (agree, diverge, unsupported, port error), each count of cases;
- one section per chat cause (:mod:`harness.engine.chatcauses`): its title, rule, cases, its
  smallest conversation, and llama.cpp's rendering beside the port's, both read byte for byte
  (:func:`harness.reports.escape.render_char`), the first divergent character marked, then the
  first divergent prompt id;
- the cases that did not agree (vocab, conversation, outcome, what was said).

No network, no scripts.

>>> page = chat_page({"port": "p", "exit_code": 0, "cases": [], "causes": []})
>>> "<!doctype html>" in page and "no divergent case" in page
True
"""

from __future__ import annotations

import html
import json
from collections import Counter

from harness.reports.escape import render_char

OUTCOMES = ("agree", "diverge", "unsupported", "port error")
_STYLE = """body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;max-width:110em}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2em .5em;text-align:left;vertical-align:top}
.agree{background:#dfd}.diverge{background:#fdd}.unsupported{background:#eee}.port-error{background:#fd9}
.side{display:grid;grid-template-columns:1fr 1fr;gap:1em}
pre{white-space:pre-wrap;word-break:break-all;background:#f7f7f7;padding:.5em;margin:0}
mark{background:#f66;color:#fff}section{border-top:2px solid #999;margin-top:1.5em}"""


def first_difference(a: str, b: str) -> int:
    """The index of the first character where two renderings part (the shorter's length if one
    is the other's start; -1 when they are equal).

    >>> first_difference("abc", "abd"), first_difference("ab", "abc"), first_difference("a", "a")
    (2, 2, -1)
    """
    if a == b:
        return -1
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def marked(text: str, at: int) -> str:
    """A rendering, every character read as itself (``\\n`` shown and kept as a line break),
    the one at ``at`` marked (an empty mark where the text ends there).

    >>> marked("a\\nb<", 2)
    'a\\\\n\\n<mark>b</mark>&lt;'
    """
    def one(ch: str) -> str:
        shown = html.escape(render_char(ch))
        return shown + "\n" if ch == "\n" else shown
    if at < 0:
        return "".join(map(one, text))
    head, here, tail = text[:at], text[at:at + 1], text[at + 1:]
    return "".join(map(one, head)) + f"<mark>{one(here) if here else '&#8203;'}</mark>" + "".join(map(one, tail))


def _answer_text(answer: dict) -> str:
    if "raised" in answer:
        return f"(raised: {answer['raised']})"
    if "text" in answer:
        return answer["text"]
    return bytes.fromhex(answer.get("text_hex", "")).decode("utf-8", "backslashreplace")


def _ids_line(ref: dict, got: dict) -> str:
    a, b = ref.get("ids"), got.get("ids")
    if a is None or b is None:
        return "prompt ids: the port gave none" if b is None and a is not None else ""
    if a == b:
        return f"prompt ids: the same {len(a)}"
    i = first_difference(a, b)
    return (f"prompt ids part at index {i}: llama.cpp {a[max(0, i - 2):i + 4]}, port {b[max(0, i - 2):i + 4]}"
            f" ({len(a)} and {len(b)} ids)")


def cause_section(cause: dict) -> str:
    """One chat cause: title, rule, count, the conversation, the two renderings side by side."""
    ex = cause["example"]
    ref, got = ex.get("llama_cpp") or {}, ex.get("port") or {}
    a, b = _answer_text(ref), _answer_text(got)
    at = first_difference(a, b)
    conv = json.dumps({k: ex[k] for k in ("messages", "tools", "add_generation_prompt", "kwargs") if k in ex},
                      ensure_ascii=False, indent=1)
    parts = [f"<section><h2>{html.escape(cause['title'])}</h2>",
             f"<p>{cause['cases']} case(s); smallest: {html.escape(ex['vocab'])}, "
             f"{html.escape(ex['conversation'])}</p>"]
    if cause.get("rule"):
        parts.append(f"<p>llama.cpp: {html.escape(cause['rule'])}</p>")
    parts.append(f"<details><summary>the conversation</summary><pre>{html.escape(conv)}</pre></details>")
    if ref or got:
        where = f"they part at character {at}" if at >= 0 else "the same text"
        parts.append(f"<p>{where}; {html.escape(_ids_line(ref, got))}</p><div class=side>"
                     f"<div><h3>llama.cpp</h3><pre>{marked(a, at)}</pre></div>"
                     f"<div><h3>port</h3><pre>{marked(b, at)}</pre></div></div>")
    elif ex.get("detail"):
        parts.append(f"<pre>{html.escape(ex['detail'])}</pre>")
    return "".join(parts) + "</section>"


def chat_page(data: dict) -> str:
    """The page of one chat check (chat-check's ``--json`` object, its causes with both answers)."""
    cases = data.get("cases", [])
    by_vocab: dict[str, Counter] = {}
    for c in cases:
        by_vocab.setdefault(c["vocab"], Counter())[c["outcome"]] += 1
    rows = "".join(f"<tr><th>{html.escape(v)}</th>" + "".join(
        (f"<td class='{o.replace(' ', '-')}'>{n[o]}</td>" if n[o] else "<td></td>") for o in OUTCOMES) + "</tr>"
        for v, n in sorted(by_vocab.items()))
    bad = [c for c in cases if c["outcome"] != "agree"]
    listed = "".join(f"<tr class='{c['outcome'].replace(' ', '-')}'><td>{html.escape(c['vocab'])}</td>"
                     f"<td>{html.escape(c['conversation'])}</td><td>{html.escape(c['outcome'])}</td>"
                     f"<td>{html.escape(c.get('detail', ''))}</td></tr>" for c in bad)
    causes = "".join(cause_section(c) for c in data.get("causes", [])) or "<p>no divergent case</p>"
    head = (f"port {html.escape(str(data.get('port')))}, seed {data.get('seed')}, "
            f"{data.get('examples')} generated conversation(s) per vocab, exit {data.get('exit_code')}")
    return ("<!doctype html><html><head><meta charset=utf-8><title>chat check</title>"
            f"<style>{_STYLE}</style></head><body><h1>Chat check</h1><p>{head}</p>"
            f"<table><tr><th>vocab</th>{''.join(f'<th>{o}</th>' for o in OUTCOMES)}</tr>{rows}</table>"
            f"<h2>Causes</h2>{causes}"
            + (f"<h2>Cases that did not agree</h2><table><tr><th>vocab</th><th>conversation</th><th>outcome</th>"
               f"<th>detail</th></tr>{listed}</table>" if bad else "")
            + "</body></html>")
