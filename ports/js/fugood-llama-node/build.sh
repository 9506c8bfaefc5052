#!/usr/bin/env bash
# Installs @fugood/llama.node 1.7.15 and its prebuilt Linux x64 CPU addon from package-lock.json.
# No compile and no download outside npm: the package's postinstall (scripts/check.js) builds
# only when npm_config_build_from_source is set, and --omit=optional skips the other platforms'
# addons (CUDA, Vulkan, wasm, ...), which package.json does not need: it names linux-x64 itself.
set -euo pipefail
cd "$(dirname "$0")"
start=$(date +%s)
command -v node >/dev/null && command -v npm >/dev/null \
  || { echo "build.sh: node/npm not found: install Node.js 20+ (apt-get install nodejs npm)" >&2; exit 1; }
major=$(node -p 'process.versions.node.split(".")[0]')
(( major >= 20 )) || { echo "build.sh: node $(node -v) is too old: install Node.js 20+" >&2; exit 1; }
[[ $(uname -sm) == "Linux x86_64" ]] \
  || { echo "build.sh: the lock names the linux-x64 addon only; this is $(uname -sm)" >&2; exit 1; }
stamp=node_modules/.package-lock.json
if [[ ! -f $stamp || package-lock.json -nt $stamp ]]; then
  mkdir -p build
  if ! npm ci --omit=optional --no-audit --no-fund > build/npm.log 2>&1 < /dev/null; then
    echo "build.sh: npm ci failed (see $(pwd)/build/npm.log, last lines below)" >&2
    tail -20 build/npm.log >&2
    exit 1
  fi
fi
echo "build.sh: @fugood/llama.node installed in $(pwd)/node_modules in $(( $(date +%s) - start )) s" >&2
