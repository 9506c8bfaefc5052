"""Build a derived vocab once per pin: ``<cache>/derived/<pin>/<key>.gguf``, hashed, with a record.

The record (``<key>.json``) holds the label, what it was built from (the base file's
sha256 from the lock), the recipe, the output's sha256 and size. A file is rebuilt when
the recipe, the base or :data:`BUILD_VERSION` changes, or when its sha256 no longer
matches the record (like a fetched vocab, it is verified before use). Builds are
deterministic (same base, same recipe: the same bytes), so two workers building the same
vocab at once write the same file; the lock only saves the second one the work.

>>> safe_name("derived:a.x-4.0")
'a.x-4.0'
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

from harness.errors import HarnessError

from .catalogue import BASE, Spec

BUILD_VERSION = 1  # bump when a builder's output changes


def safe_name(label: str) -> str:
    """The file stem of a derived vocab (its key, with path separators replaced)."""
    return label.split(":", 1)[-1].replace("/", "_")


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _build_into(spec: Spec, base: Path, dst: Path) -> None:
    from harness.tokenizer.gguf import GGUFValueType as T
    from . import builders as B
    r = spec.recipe
    kind = r["builder"]
    if kind == "relabel":
        B.relabel(base, dst, {k: (T.STRING, v) for k, v in r["changes"].items()})
    elif kind == "keys":  # typed values: {"key": ["bool", true]}
        types = {"bool": T.BOOL, "uint32": T.UINT32, "string": T.STRING}
        B.relabel(base, dst, {k: (types[t], v) for k, (t, v) in r["changes"].items()})
    elif kind == "add_tokens":
        B.add_tokens(base, dst, r["tokens"], r["token_type"])
    elif kind == "whitespace":
        B.whitespace_gguf(base, dst)
    elif kind == "hybriddna":
        B.hybriddna_gguf(base, dst)
    elif kind == "rwkv":
        raw = [bytes([b]) for b in range(256)] + B.byte_level_pieces(base)
        B.rwkv_gguf(dst, raw, name=f"{spec.label} (from {BASE})")
    elif kind == "plamo2":
        words = []
        for p in B.byte_level_pieces(base):
            try:
                p.decode("utf-8")
            except UnicodeDecodeError:
                continue
            words.append(p)
            if len(words) >= r["limit"]:
                break
        B.plamo2_gguf(dst, words, name=f"{spec.label} (from {BASE})")
    else:
        raise HarnessError(f"derived vocab {spec.label}: unknown builder {kind!r} in its recipe")


def build(spec: Spec, pin: str, base: Path, base_sha256: str, root: Path) -> tuple[Path, dict]:
    """The derived vocab's path and record, built (or verified) under ``root/<pin>/``."""
    from reference.integrity import file_lock
    d = root / pin
    d.mkdir(parents=True, exist_ok=True)
    stem = safe_name(spec.label)
    path, rec_path = d / f"{stem}.gguf", d / f"{stem}.json"
    want = {"label": spec.label, "kind": spec.kind, "derived_from": spec.base, "base_sha256": base_sha256,
            "recipe": spec.recipe, "description": spec.description, "build_version": BUILD_VERSION, "pin": pin}
    with file_lock(d / f".{stem}.lock"):
        rec = _record(rec_path)
        if rec and all(rec.get(k) == v for k, v in want.items()) and path.is_file() \
                and rec.get("sha256") == _sha256(path):
            return path, rec
        if not base.is_file():
            raise HarnessError(f"derived vocab {spec.label} is built from {base}, which is missing: run `make fetch`")
        fd, tmp = tempfile.mkstemp(prefix=f".{stem}-", suffix=".gguf", dir=d)
        os.close(fd)
        try:
            _build_into(spec, base, Path(tmp))
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        rec = want | {"sha256": _sha256(path), "size": path.stat().st_size}
        rec_path.write_text(json.dumps(rec, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        return path, rec


def _record(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
