"""Drift: is a binding's divergence the older llama.cpp it bundles, not a bug of its own?

A binding (``bundles_llama_cpp`` in its port.json) carries its own llama.cpp. Each of its
causes is labelled here:

* ``drift``: the cause's minimal example, run through an older pinned llama.cpp
  (``llama.cpp@<pin>`` out of process, :func:`harness.ports.open_port`), gives the
  binding's answer exactly: the binding behaves like that llama.cpp;
* ``not drift``: the older pin answers like the current pin (or otherwise), so the older
  llama.cpp does not explain it;
* ``not checked``: the older pin is not built (``make reference PIN=<pin>``) or could not
  answer; the reason is kept.

Then the pin-diff between the two pins (``docs/pin-diff-<old>-<new>.md``, ``make pin-diff``)
is consulted: if it lists the cause's vocab among those whose ids changed, it says so.

>>> pin_diff_changed("## Vocabs whose ids changed\\n\\n| vocab | cases |\\n|---|---|\\n| gpt-2+pre=afmoe | 3 |\\n\\nUnchanged")
['gpt-2+pre=afmoe']
"""

from __future__ import annotations

from pathlib import Path

from harness.errors import HarnessError


def pin_diff_changed(markdown: str) -> list[str]:
    """The vocabs a pin-diff report lists under "Vocabs whose ids changed"."""
    part = markdown.partition("## Vocabs whose ids changed")[2].split("\n## ")[0]
    rows = [line.split("|")[1].strip() for line in part.splitlines() if line.startswith("| ")]
    return [r for r in rows if r and r != "vocab"]


def _answer(port, ex: dict):
    """What ``port`` answers to the example's request, in the example's own terms."""
    if ex["check"] == "decode":
        return port.decode(ex["reference_ids"], remove_special=bool(ex.get("remove_special")),
                           unparse_special=bool(ex.get("unparse_special"))).hex()
    if ex["check"] == "piece":
        return port.token_to_piece(ex["reference_ids"][0], special=bool(ex.get("unparse_special"))).hex()
    return list(port.encode(ex["text"], add_special=bool(ex.get("add_special")),
                            parse_special=bool(ex.get("parse_special"))))


def _port_side(ex: dict):
    return ex.get("port_bytes_hex") if ex["check"] in ("decode", "piece") else ex.get("port_ids")


def _ref_side(ex: dict):
    return ex.get("reference_bytes_hex") if ex["check"] in ("decode", "piece") else ex.get("reference_ids")


def label(causes: list[dict], old_pin: str, vocab_path, pin_diff: Path | None) -> None:
    """Add ``drift`` to each cause of a binding: ``{"verdict", "old_pin", "old_answer", "note"}``."""
    from harness.ports import open_port
    from reference.build import artifacts

    changed = pin_diff_changed(pin_diff.read_text(encoding="utf-8")) if pin_diff and pin_diff.is_file() else None
    try:
        artifacts(pin=old_pin)
        unbuilt = ""
    except HarnessError as e:
        unbuilt = str(e)
    for cause in causes:
        ex = cause["example"]
        drift = {"old_pin": old_pin, "verdict": "not checked", "old_answer": None, "note": ""}
        if unbuilt:
            drift["note"] = unbuilt
        else:
            port = None
            try:
                port = open_port(f"llama.cpp@{old_pin}", vocab_path(ex["vocab"]))
                old = _answer(port, ex)
                drift["old_answer"] = old
                if old == _port_side(ex):
                    drift["verdict"] = "drift"
                    drift["note"] = f"llama.cpp@{old_pin} gives the binding's answer"
                else:
                    drift["verdict"] = "not drift"
                    same = "the current pin's" if old == _ref_side(ex) else "neither side's"
                    drift["note"] = f"llama.cpp@{old_pin} gives {same} answer"
            except Exception as e:  # any failure of the old pin is reported, never fatal to the board
                drift["note"] = f"llama.cpp@{old_pin} could not answer: {type(e).__name__}: {e}"[:300]
            finally:
                if port is not None and hasattr(port, "close"):
                    port.close()
        if changed is not None and pin_diff is not None:
            hit = ex.get("vocab") in changed
            drift["pin_diff"] = (f"{pin_diff.name}: ids of {ex.get('vocab')} changed between the pins"
                                 if hit else f"{pin_diff.name}: ids of {ex.get('vocab')} did not change "
                                 "between the pins (no explanation there)")
        cause["drift"] = drift


def pin_diff_file(docs: Path, old_pin: str, new_pin: str) -> Path | None:
    """``docs/pin-diff-<old>-<new>.md`` if it exists."""
    path = Path(docs) / f"pin-diff-{old_pin}-{new_pin}.md"
    return path if path.is_file() else None


