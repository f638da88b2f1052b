#!/usr/bin/env bash
# Runs `go test "$@"` and, when it fails, repeats the failing tests' names and
# messages at the end: a CI record keeps only the tail of a long run, and the
# failure lines are otherwise buried under the failing package's whole output.
set -uo pipefail
log=$(mktemp)
trap 'rm -f "$log"' EXIT
${GO:-go} test "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
if [ "$status" -ne 0 ]; then
  echo
  echo "go test failed (exit $status); the failures again:"
  grep -E -- '--- FAIL|^[[:space:]]+[[:alnum:]_]+_test\.go:[0-9]+:|^panic:|^FAIL|race detected' "$log" | head -80
fi
exit "$status"
