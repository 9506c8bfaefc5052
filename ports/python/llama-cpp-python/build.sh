#!/usr/bin/env bash
# Builds the llama-cpp-python port: a venv in .venv with requirements.txt (exact versions).
# pip compiles the llama.cpp the sdist bundles (CMake + a C++ compiler; 5-10 min on 2 cores).
# GGML_NATIVE=OFF: a portable build; LLAVA_BUILD=OFF: the multimodal library is not used here.
set -euo pipefail
cd "$(dirname "$0")"
start=$(date +%s)
die() { echo "build.sh: $*" >&2; exit 1; }
py=${PORT_PYTHON:-python3}
command -v "$py" >/dev/null || die "$py not found: install Python 3.9+ with venv (apt-get install python3-venv)"
command -v cmake >/dev/null || die "cmake not found: llama-cpp-python compiles llama.cpp (apt-get install cmake g++)"
if [[ ! -f .venv/.installed || requirements.txt -nt .venv/.installed ]]; then
  rm -rf .venv
  "$py" -m venv .venv || die "$py -m venv failed: install python3-venv"
  CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF" CMAKE_BUILD_PARALLEL_LEVEL=${BUILD_JOBS:-2} \
    .venv/bin/pip install --quiet --disable-pip-version-check --no-cache-dir -r requirements.txt \
    || die "pip install -r requirements.txt failed (see above)"
  touch .venv/.installed
fi
echo "build.sh: llama-cpp-python port built in $(( $(date +%s) - start )) s" >&2
