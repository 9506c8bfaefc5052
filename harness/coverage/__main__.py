"""``python -m harness.coverage``: what ``make coverage`` runs (see :mod:`harness.coverage`)."""

import sys

from harness.coverage import main

if __name__ == "__main__":
    sys.exit(main())
