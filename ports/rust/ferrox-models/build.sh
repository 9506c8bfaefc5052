#!/usr/bin/env bash
# Builds target/release/ferrox-models-port from Cargo.toml + Cargo.lock (exact
# versions, checksums) with crates.io. Pure Rust: no C toolchain needed.
set -euo pipefail
cd "$(dirname "$0")"
start=$(date +%s)
if ! command -v cargo >/dev/null 2>&1; then
    echo "build.sh: 'cargo' not found on PATH; install Rust >= 1.80 (rustup, or apt-get install cargo)" >&2
    exit 1
fi
# --locked: fail rather than update Cargo.lock. Cargo is incremental: a second run is quick.
if ! cargo build --release --locked --quiet; then
    echo "build.sh: cargo build failed (see above); crates.io must serve the versions in Cargo.lock" >&2
    exit 1
fi
echo "build.sh: built target/release/ferrox-models-port in $(( $(date +%s) - start ))s" >&2
