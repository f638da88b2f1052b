#!/usr/bin/env bash
# make bench-1m: the latency bench at a million chunks, for vector and halfvec
# storage, into bench/results/latency-1m.{md,json} and latency-1m-halfvec.{md,json}.
# Not part of make bench nor make test: the load alone takes about an hour on 2 cores.
#
# One load serves both runs: the corpus is loaded (with vector storage) into a
# database of its own, measured, then converted in place to halfvec (timed; what
# `canon migrate up` with KB_VECTOR_TYPE=halfvec does) and measured again.
#
# Environment (make bench-1m sets DATABASE_URL):
#   DATABASE_URL         the server; the corpus goes into database BENCH_1M_DATABASE there
#   BENCH_1M_CHUNKS      corpus size (default 1000000; a test runs the same path at 2,000)
#   BENCH_1M_DATABASE    default canon_latency_1m
#   BENCH_1M_FRESH       1 (default) reloads the corpus; 0 reuses one already loaded
#   BENCH_1M_TYPES       storage types measured, in order (default "vector halfvec")
#   BENCH_LATENCY_ARGS   further flags for `canon bench latency`, e.g. "--concurrency 1,16"
#   BENCH_OUT            output directory (default bench/results)
#   CANON                the canon binary (default bin/canon)
set -euo pipefail
cd "$(dirname "$0")/.."

CANON="${CANON:-bin/canon}"
OUT="${BENCH_OUT:-bench/results}"
CHUNKS="${BENCH_1M_CHUNKS:-1000000}"
DATABASE="${BENCH_1M_DATABASE:-canon_latency_1m}"
TYPES="${BENCH_1M_TYPES:-vector halfvec}"
: "${DATABASE_URL:?DATABASE_URL is not set (make bench-1m sets it)}"
[[ -x "$CANON" ]] || { echo "bench-1m: no $CANON: run make build" >&2; exit 1; }

name() {
  local n="latency-1m"
  if [[ $CHUNKS != 1000000 ]]; then n="latency-$CHUNKS"; fi
  if [[ $1 != vector ]]; then n="$n-$1"; fi
  echo "$n"
}

fresh=()
if [[ ${BENCH_1M_FRESH:-1} == 1 ]]; then fresh=(--fresh); fi
for type in $TYPES; do
  echo "bench-1m: $CHUNKS chunks stored as $type into $OUT/$(name "$type").md" >&2
  # shellcheck disable=SC2086 # BENCH_LATENCY_ARGS is a list of flags
  KB_VECTOR_TYPE="$type" "$CANON" bench latency --chunks "$CHUNKS" --database "$DATABASE" \
    --name "$(name "$type")" --out "$OUT" "${fresh[@]}" ${BENCH_LATENCY_ARGS:-} >/dev/null
  fresh=()
done
