#!/usr/bin/env bash
# Installs @aibrow/node-llama-cpp 1.7.0 (a fork of node-llama-cpp) and its prebuilt Linux x64 CPU binary from package-lock.json.
# No llama.cpp build and no GitHub download: NODE_LLAMA_CPP_SKIP_DOWNLOAD turns the
# package's postinstall into a no-op, and --omit=optional skips the other platforms'
# binaries (CUDA, Vulkan, ...), which package.json does not need: it names linux-x64 itself.
set -euo pipefail
cd "$(dirname "$0")"
start=$(date +%s)
command -v node >/dev/null && command -v npm >/dev/null \
  || { echo "build.sh: node/npm not found: install Node.js 20+ (apt-get install nodejs npm)" >&2; exit 1; }
major=$(node -p 'process.versions.node.split(".")[0]')
(( major >= 20 )) || { echo "build.sh: node $(node -v) is too old: @aibrow/node-llama-cpp 1.7.0 needs Node.js 20+" >&2; exit 1; }
stamp=node_modules/.package-lock.json
if [[ ! -f $stamp || package-lock.json -nt $stamp ]]; then
  mkdir -p build
  if ! NODE_LLAMA_CPP_SKIP_DOWNLOAD=true npm ci --omit=optional --no-audit --no-fund > build/npm.log 2>&1 < /dev/null; then
    echo "build.sh: npm ci failed (see $(pwd)/build/npm.log, last lines below)" >&2
    tail -20 build/npm.log >&2
    exit 1
  fi
fi
echo "build.sh: @aibrow/node-llama-cpp installed in $(pwd)/node_modules in $(( $(date +%s) - start )) s" >&2
