#!/usr/bin/env bash
# Builds the transformers port: a venv in .venv with requirements.txt (every version exact).
set -euo pipefail
cd "$(dirname "$0")"
start=$(date +%s)
die() { echo "build.sh: $*" >&2; exit 1; }
py=${PORT_PYTHON:-python3}
command -v "$py" >/dev/null || die "$py not found: install Python 3.10+ with venv (apt-get install python3-venv)"
if [[ ! -f .venv/.installed || requirements.txt -nt .venv/.installed ]]; then
  rm -rf .venv
  "$py" -m venv .venv || die "$py -m venv failed: install python3-venv"
  .venv/bin/pip install --quiet --disable-pip-version-check -r requirements.txt \
    || die "pip install -r requirements.txt failed (see above); PyPI must serve the pinned versions"
  touch .venv/.installed
fi
echo "build.sh: transformers port built in $(( $(date +%s) - start )) s" >&2
