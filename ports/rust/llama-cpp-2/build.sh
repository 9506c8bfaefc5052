#!/usr/bin/env bash
# Builds target/release/llama-cpp-2-port from Cargo.toml + Cargo.lock (exact
# versions, checksums) with crates.io. llama-cpp-sys-2 compiles its bundled
# llama.cpp with cmake and a C++ compiler and generates bindings with bindgen,
# which needs libclang: the slow part (minutes on 2 cores), cached in target/.
set -euo pipefail
cd "$(dirname "$0")"
start=$(date +%s)
need() {
    if ! command -v "$1" >/dev/null 2>&1; then
        echo "build.sh: '$1' not found on PATH; $2" >&2
        exit 1
    fi
}
need cargo "install Rust >= 1.85 (rustup, or apt-get install cargo)"
need cmake "install CMake >= 3.14 (apt-get install cmake)"
need c++ "install a C++17 compiler (apt-get install g++)"
# bindgen loads libclang and needs clang's own headers (stdbool.h): Debian's
# libclang-dev brings both. Without them the build fails after a minute with
# "'stdbool.h' file not found"; say so up front instead.
if [[ -z "${LIBCLANG_PATH:-}" ]] && ! compgen -G '/usr/lib/llvm-*/lib/clang/*/include/stdbool.h' >/dev/null; then
    echo "build.sh: libclang and clang's builtin headers not found (bindgen needs them); apt-get install libclang-dev, or set LIBCLANG_PATH" >&2
    exit 1
fi
# --locked: fail rather than update Cargo.lock. Cargo is incremental: a second run is quick.
if ! cargo build --release --locked --quiet; then
    echo "build.sh: cargo build failed (see above); crates.io must serve the versions in Cargo.lock" >&2
    exit 1
fi
echo "build.sh: built target/release/llama-cpp-2-port in $(( $(date +%s) - start ))s" >&2
