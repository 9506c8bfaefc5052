#!/bin/sh
# `make conformance` with llama-conformance's own exit code passed through unchanged.
#
# GNU make exits 2 whenever a recipe fails, whatever the recipe's code, so `make conformance`
# can only say "failed". This runs the same target and exits with llama-conformance run's code:
#   0 clean, 1 divergences, 2 port errors, 3 errors, 4 incomplete
# and 3 when make stops before the run (the reference could not be fetched or built).
# Arguments are make's:  tools/conformance.sh PORT="java -jar port.jar --vocab {vocab}" VOCABS=qwen2
cd "$(dirname "$0")/.." || exit 3
code_file=$(mktemp) || exit 3
trap 'rm -f "$code_file"' EXIT
make --no-print-directory "$@" conformance CONFORMANCE_EXIT="$code_file"
made=$?
code=$(cat "$code_file")
if [ -z "$code" ]; then
  echo "tools/conformance.sh: make stopped (status $made) before llama-conformance ran; exit 3" >&2
  exit 3
fi
exit "$code"
