"""What the chat tests share: the pin's templates."""

from __future__ import annotations

from pathlib import Path


def pinned_templates() -> list[Path]:
    """The pin's ``models/templates/*.jinja``, sorted."""
    from reference.lock import load
    from reference.sources import make_source
    return sorted((Path(make_source(load(), None).tree()) / "models" / "templates").glob("*.jinja"))
