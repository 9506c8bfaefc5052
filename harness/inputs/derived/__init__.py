"""Derived vocabs: every pre name and vocab type of the pin, as vocabs the suite runs.

A derived vocab is named ``derived:<pre name>`` or ``derived:<tokenizer model>``; it is
built deterministically from a pinned file (:mod:`.catalogue` says from which and how,
:mod:`.builders` writes it, :mod:`.cache` keeps it per pin, sha256-verified).
``VOCABS`` words (:func:`expand`): a pinned name, a ``.gguf`` path, ``derived:<name>``,
``all-pre`` (one derived vocab per pre name the pin's ``llama-vocab.cpp`` knows),
``all-derived`` (every derived vocab) and ``all`` (the pinned files and every derived vocab).

>>> is_derived("derived:deepseek-v3"), is_derived("qwen2")
(True, False)
>>> label_of("derived:a.x-4.0"), label_of("vocabs/0c1e570/ggml-vocab-qwen2.gguf"), label_of("qwen2")
('derived:a.x-4.0', 'qwen2', 'qwen2')
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from harness.errors import HarnessError

from .catalogue import PREFIX, Spec

GROUPS = ("all", "all-pre", "all-derived")


def is_derived(name: str) -> bool:
    """True for ``derived:…`` names."""
    return str(name).startswith(PREFIX)


def label_of(spec: str) -> str:
    """The vocab's name in test ids and reports: a derived name as is, a path's file stem
    without ``ggml-vocab-``, a pinned name as is."""
    s = str(spec)
    if is_derived(s) or not (s.endswith(".gguf") or "/" in s):
        return s
    return Path(s).name.removesuffix(".gguf").removeprefix("ggml-vocab-")


@lru_cache(maxsize=4)
def _catalogue(pin: str) -> dict[str, Spec]:
    from reference import lock as _lock
    from reference.paths import vocabs_dir
    from reference.sources import make_source
    from .catalogue import catalogue
    lock = _lock.load(pin=pin)
    pinned = {n: vocabs_dir(lock.name) / f"ggml-vocab-{n}.gguf" for n in lock.vocab_names()}
    return catalogue(Path(make_source(lock).tree()), pinned)


def _pin() -> str:
    from reference import lock as _lock
    return _lock.load().name


def specs(pin: str | None = None) -> dict[str, Spec]:
    """Every derived vocab of the pin (``$PIN`` by default), by name, sorted."""
    return _catalogue(pin or _pin())


def spec(name: str, pin: str | None = None) -> Spec:
    """One derived vocab's spec; an unknown name raises, listing the known ones."""
    known = specs(pin)
    if name not in known:
        raise HarnessError(f"unknown derived vocab {name!r} at pin {pin or _pin()}; derived vocabs are "
                           f"{', '.join(known)} (VOCABS=all-pre runs every pre name)")
    return known[name]


def build(name: str, pin: str | None = None) -> tuple[Path, dict]:
    """(path, record) of a derived vocab, built into the cache on first use."""
    from reference import lock as _lock
    from reference.paths import cache_dir, vocabs_dir
    from .cache import build as _build
    lock = _lock.load(pin=pin or _pin())
    s = spec(name, lock.name)
    rel = f"ggml-vocab-{s.base}.gguf"
    sha = lock.by_name()[rel].sha256 if rel in lock.by_name() else ""
    return _build(s, lock.name, vocabs_dir(lock.name) / rel, sha, cache_dir() / "derived")


def path(name: str) -> Path:
    """The derived vocab's file (built on first use)."""
    return build(name)[0]


def resolve(name: str) -> Path:
    """Any vocab spec to its file: a derived name, a pinned name or a ``.gguf`` path."""
    if is_derived(name):
        return path(name)
    from reference.vocabs import vocab_path
    return vocab_path(name)


def describe(name: str) -> dict:
    """What reports say of a derived vocab: derived from what, how, its sha256."""
    _, rec = build(name)
    return {k: rec[k] for k in ("kind", "derived_from", "description", "sha256")}


def expand(words: list[str]) -> list[str]:
    """``VOCABS`` words with the groups expanded (order kept, duplicates dropped)."""
    from reference.vocabs import names
    out: dict[str, None] = {}
    for w in words:
        if w == "all":
            out.update(dict.fromkeys(names()))
            out.update(dict.fromkeys(specs()))
        elif w == "all-pre":
            out.update(dict.fromkeys(k for k, s in specs().items() if s.kind == "pre"))
        elif w == "all-derived":
            out.update(dict.fromkeys(specs()))
        elif is_derived(w):
            spec(w)
            out[w] = None
        else:
            out[w] = None
    return list(out)
