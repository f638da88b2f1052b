#!/usr/bin/env bash
# Runs every fuzz target for a bounded number of inputs: `scripts/fuzz.sh 200x`
# (make test) or longer (`make fuzz FUZZTIME=20000x`). A crasher is written to the
# package's testdata/fuzz/<Target>/ by go test: check it in, it becomes a seed.
# FuzzRequestsThroughServer needs the database (DATABASE_URL, as make exports).
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${1:-200x}
# package target
targets=(
  "./auth FuzzParseBearer"
  "./markdown FuzzParse"
  "./domain FuzzValidateQuery"
  "./domain FuzzParseFilters"
  "./domain FuzzSnippet"
  "./domain FuzzCheckMarkers"
  "./llm FuzzCompose"
  "./server FuzzRequestsThroughServer"
)
for t in "${targets[@]}"; do
  read -r pkg target <<<"$t"
  echo "fuzz $pkg $target ($fuzztime)"
  go test -run='^$' -fuzz="^${target}\$" -fuzztime="$fuzztime" "$pkg"
done
