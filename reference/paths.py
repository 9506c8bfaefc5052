"""Where the reference's files live.

Vocabs go to ``<repo>/vocabs`` (git-ignored) in a checkout, and to
``<cache>/vocabs`` when the package is installed (``pip install``, the
``llama-conformance`` command). Downloads, the extracted
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


def vocabs_dir() -> Path:
    """The directory holding ``ggml-vocab-*.gguf`` and their ``.inp``/``.out`` files."""
    explicit = os.environ.get("LLAMA_CONFORMANCE_VOCABS")
    if explicit:
        return Path(explicit)
    if (REPO_ROOT / "pyproject.toml").is_file():  # a checkout (or an editable install of one)
        return REPO_ROOT / "vocabs"
    return cache_dir() / "vocabs"  # installed: site-packages is no place for data


def cache_dir() -> Path:
    """The per-user cache root (see module docstring)."""
    explicit = os.environ.get("LLAMA_CONFORMANCE_CACHE")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "llama-conformance"
