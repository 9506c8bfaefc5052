#!/usr/bin/env bash
# Builds ./build/ollama-port from go.mod + go.sum (ollama's exact version and
# checksums) with the Go module proxy. Pure Go: CGO_ENABLED=0, because the
# tokenizer needs none of ollama's cgo (its vendored llama.cpp/ggml).
set -euo pipefail
cd "$(dirname "$0")"
start=$(date +%s)
if ! command -v go >/dev/null 2>&1; then
    echo "build.sh: 'go' not found on PATH; install Go >= 1.24 (https://go.dev/dl or apt-get install golang)" >&2
    exit 1
fi
mkdir -p build
# -mod=readonly: fail rather than edit go.mod/go.sum if they are out of date.
# go build is incremental: a second run is a cache hit.
if ! CGO_ENABLED=0 go build -mod=readonly -trimpath -o build/ollama-port . ; then
    echo "build.sh: go build failed (see above); the module proxy must serve github.com/ollama/ollama at the go.mod version" >&2
    exit 1
fi
# The chat program (cmd/chat, README "## Chat"): ollama's template, openai and tokenizer packages.
if ! CGO_ENABLED=0 go build -mod=readonly -trimpath -o build/ollama-chat ./cmd/chat ; then
    echo "build.sh: go build ./cmd/chat failed (see above)" >&2
    exit 1
fi
echo "build.sh: built build/ollama-port and build/ollama-chat in $(( $(date +%s) - start ))s" >&2
