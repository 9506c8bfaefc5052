#!/usr/bin/env bash
# Builds target/release/aprender-port from Cargo.toml + Cargo.lock (exact
# versions, checksums) with crates.io. Needs a C compiler too (cc): zstd-sys and
# blake3, dependencies of aprender-core, compile C in their build scripts.
set -euo pipefail
cd "$(dirname "$0")"
start=$(date +%s)
if ! command -v cargo >/dev/null 2>&1; then
    echo "build.sh: 'cargo' not found on PATH; install Rust >= 1.91 (rustup, or apt-get install cargo)" >&2
    exit 1
fi
if ! command -v cc >/dev/null 2>&1; then
    echo "build.sh: no C compiler 'cc' on PATH (zstd-sys and blake3 need one); install one (apt-get install gcc)" >&2
    exit 1
fi
# --locked: fail rather than update Cargo.lock. Cargo is incremental: a second run is quick.
if ! cargo build --release --locked --quiet; then
    echo "build.sh: cargo build failed (see above); crates.io must serve the versions in Cargo.lock" >&2
    exit 1
fi
echo "build.sh: built target/release/aprender-port in $(( $(date +%s) - start ))s" >&2
