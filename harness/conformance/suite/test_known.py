"""Known texts: inputs that broke real ports (shared/docs/known-port-bugs.md).

Every text runs on every vocab under every (add_special, parse_special)
combination; divergent texts are grouped by signature (as in the encode check)
and the first of each is reported with its count (they are minimal already).
``KNOWN_EXAMPLES=0`` leaves this check out, to measure generation alone.
"""

from __future__ import annotations

import os

from harness.engine import checks
from harness.inputs.known import KNOWN_TEXTS

if os.environ.get("KNOWN_EXAMPLES", "1") != "0":
    def test_known(vut, flags, hunt):
        checks.known(vut, flags, hunt, [text for text, _why in KNOWN_TEXTS])
