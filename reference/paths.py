"""Where the reference's files live.

Vocabs go to ``<repo>/vocabs/<pin>/`` (git-ignored) in a checkout, and to
``<cache>/vocabs/<pin>/`` when the package is installed (``pip install``, the
``llama-conformance`` command), one directory per pin; each file there is a hard link
to (or, across file systems, a copy of) one entry of a content-addressed store in the
cache, so a file identical across pins is stored once. Downloads, the extracted
llama.cpp tree and builds go to a per-user cache shared by every clone, so a
second clone neither re-downloads nor rebuilds:

    $LLAMA_CONFORMANCE_CACHE, else $XDG_CACHE_HOME/llama-conformance,
    else ~/.cache/llama-conformance

>>> cache_dir().name in ("llama-conformance",) or "LLAMA_CONFORMANCE_CACHE" in os.environ
True
"""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def vocabs_root() -> Path:
    """The directory holding one directory of vocabs per pin."""
    explicit = os.environ.get("LLAMA_CONFORMANCE_VOCABS")
    if explicit:
        return Path(explicit)
    if (REPO_ROOT / "pyproject.toml").is_file():  # a checkout (or an editable install of one)
        return REPO_ROOT / "vocabs"
    return cache_dir() / "vocabs"  # installed: site-packages is no place for data


def vocabs_dir(pin: str | None = None) -> Path:
    """The selected pin's ``ggml-vocab-*.gguf`` and ``.inp``/``.out`` files: ``vocabs/<pin>/``.

    ``pin`` is a pin name; None means the pin ``$PIN`` selects (the newest by default).
    """
    if pin is None:
        from .lock import load  # late: the lock module imports nothing from here

        pin = load().name
    return vocabs_root() / pin


def store_dir() -> Path:
    """The content-addressed store: ``<cache>/store/<sha256>``, one entry per distinct file."""
    return cache_dir() / "store"


def cache_dir() -> Path:
    """The per-user cache root (see module docstring)."""
    explicit = os.environ.get("LLAMA_CONFORMANCE_CACHE")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "llama-conformance"
