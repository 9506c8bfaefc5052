#!/usr/bin/env bash
# Builds the de.kherud:llama port with Maven: the versions are fixed in pom.xml, the jar
# brings its own prebuilt libjllama.so (nothing native is compiled). Output: target/.
set -euo pipefail
cd "$(dirname "$0")"
start=$(date +%s)
for tool in java mvn; do
  command -v "$tool" >/dev/null || { echo "build.sh: '$tool' not found: install a JDK 17+ and Maven (apt-get install openjdk-17-jdk-headless maven)" >&2; exit 1; }
done
# Quick when built: Maven skips up-to-date classes; -o is not used so a cold cache can fill.
mkdir -p build
if ! mvn -q -B package -DskipTests > build/mvn.log 2>&1 < /dev/null; then
  echo "build.sh: mvn package failed (see $(pwd)/build/mvn.log, last lines below)" >&2
  tail -20 build/mvn.log >&2
  exit 1
fi
# The binding's native library, extracted once (serve points de.kherud.llama.lib.path here).
so=de/kherud/llama/Linux/x86_64/libjllama.so
if [[ ! -f build/native/libjllama.so || target/dependency/llama-4.2.0.jar -nt build/native/libjllama.so ]]; then
  rm -rf build/native && mkdir -p build/native/x
  (cd build/native/x && jar xf ../../../target/dependency/llama-4.2.0.jar "$so")
  mv "build/native/x/$so" build/native/libjllama.so && rm -rf build/native/x
fi
echo "build.sh: built $(pwd)/target in $(( $(date +%s) - start )) s" >&2
