"""``python -m harness.scoreboard``: see :mod:`harness.scoreboard.run`."""

import sys

from harness.scoreboard.run import main

if __name__ == "__main__":
    sys.exit(main())
