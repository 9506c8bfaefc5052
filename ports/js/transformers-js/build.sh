#!/usr/bin/env bash
# Builds the transformers.js port: npm ci (package-lock.json), a Python venv with the pinned
# converter (requirements.txt), then converts the pinned vocabs ahead of time, since a first
# conversion (10-60 s per vocab) would not fit a harness request's 30 s deadline.
#   VOCABS_DIR=dir  where the GGUF vocabs are (default: the repository's vocabs/, every pin)
set -euo pipefail
cd "$(dirname "$0")"
start=$(date +%s)
die() { echo "build.sh: $*" >&2; exit 1; }
command -v node >/dev/null && command -v npm >/dev/null || die "node/npm not found: install Node.js 20+ (apt-get install nodejs npm)"
command -v python3 >/dev/null || die "python3 not found: install Python 3.10+ with venv (apt-get install python3-venv)"
mkdir -p build
# --ignore-scripts: only the tokenizer is used; no install script (onnxruntime-node's downloads
# GPU binaries) may reach the network.
if [[ ! -f node_modules/.package-lock.json || package-lock.json -nt node_modules/.package-lock.json ]]; then
  npm ci --ignore-scripts --no-audit --no-fund > build/npm.log 2>&1 < /dev/null \
    || { tail -20 build/npm.log >&2; die "npm ci failed (see $(pwd)/build/npm.log)"; }
fi
if [[ ! -f .venv/.installed || requirements.txt -nt .venv/.installed ]]; then
  python3 -m venv .venv || die "python3 -m venv failed: install python3-venv"
  .venv/bin/pip install --quiet --disable-pip-version-check -r requirements.txt > build/pip.log 2>&1 \
    || { tail -20 build/pip.log >&2; die "pip install -r requirements.txt failed (see $(pwd)/build/pip.log)"; }
  touch .venv/.installed
fi
vocabs_dir=${VOCABS_DIR:-$(cd ../../.. && pwd)/vocabs}
mapfile -t ggufs < <(find "$vocabs_dir" -name '*.gguf' 2>/dev/null | sort)
if (( ${#ggufs[@]} )); then
  .venv/bin/python convert.py build/tokenizers "${ggufs[@]}" 2> >(tee build/convert.log >&2) \
    || die "convert.py failed (see $(pwd)/build/convert.log)"
else
  echo "build.sh: no .gguf under $vocabs_dir: vocabs will be converted at serve time" >&2
fi
echo "build.sh: transformers.js port built in $(( $(date +%s) - start )) s" >&2
