#!/usr/bin/env bash
# make bench: canon's benchmarks, written to bench/results/.
#   - retrieval quality on the BEIR collections SciFact and ArguAna (Markdown, SVG, JSON)
#   - any further `canon bench` benchmark the binary offers (see "further benchmarks")
#   - the machine they ran on (bench/results/machine.md)
#
# Environment (make bench sets DATABASE_URL):
#   DATABASE_URL        the server; benchmarks use a database of their own on it, canon_bench,
#                       created and migrated here, so the collections never mix with real projects
#   BENCH_DATABASE_URL  use this database instead of canon_bench
#   DATASETS            where the collections are (default ../shared/datasets)
#   BENCH_OUT           output directory (default bench/results)
#   BENCH_QUALITY_ARGS  extra flags for `canon bench quality`, e.g. "--limit-queries 50"
#   BENCH_LATENCY_ARGS  extra flags for `canon bench latency` (when the binary has it)
#   BENCH_LOAD_ARGS     extra flags for `canon bench load`, e.g. "--duration 20s"
#   BENCH_SKIP          benchmarks to leave out, e.g. "latency" or "latency load" or "latency,load" (names: quality, latency, load)
#   BENCH_NOTE          a line recorded in machine.md (e.g. how the binary was built)
#   BENCH_COMMIT        the revision to record (default: read from .git)
#   CANON               the canon binary (default bin/canon)
set -euo pipefail
cd "$(dirname "$0")/.."

CANON="${CANON:-bin/canon}"
DATASETS="${DATASETS:-../shared/datasets}"
OUT="${BENCH_OUT:-bench/results}"
: "${DATABASE_URL:?DATABASE_URL is not set (make bench sets it)}"

log() { printf 'bench: %s\n' "$*" >&2; }

[[ -x "$CANON" ]] || { log "no $CANON: run make build"; exit 1; }

# commit reads the checked-out revision from .git without running git.
commit() {
  if [[ -n "${BENCH_COMMIT:-}" ]]; then echo "$BENCH_COMMIT"; return; fi
  local head ref
  head=$(cat .git/HEAD 2>/dev/null) || { echo unknown; return; }
  if [[ $head == ref:* ]]; then
    ref=${head#ref: }
    if [[ -f .git/$ref ]]; then
      cat ".git/$ref"
    else
      awk -v r="$ref" '$2 == r {print $1; found=1} END {if (!found) print "unknown"}' .git/packed-refs 2>/dev/null || echo unknown
    fi
  else
    echo "$head"
  fi
}
COMMIT=$(commit)
export BENCH_COMMIT="$COMMIT"

# The benchmark database: canon_bench on DATABASE_URL's server.
if [[ -z "${BENCH_DATABASE_URL:-}" ]]; then
  BENCH_DATABASE_URL=$(printf '%s' "$DATABASE_URL" | sed -E 's#^(postgres(ql)?://[^/?]*)(/[^?]*)?#\1/canon_bench#')
  if command -v psql >/dev/null; then
    if [[ -z "$(psql "$DATABASE_URL" -tAc "SELECT 1 FROM pg_database WHERE datname = 'canon_bench'")" ]]; then
      log "creating database canon_bench"
      psql "$DATABASE_URL" -qc "CREATE DATABASE canon_bench" >/dev/null
    fi
  else
    log "no psql to create canon_bench: using DATABASE_URL's own database"
    BENCH_DATABASE_URL="$DATABASE_URL"
  fi
fi
SERVER_URL="$DATABASE_URL"
export DATABASE_URL="$BENCH_DATABASE_URL"
"$CANON" migrate up >/dev/null

mkdir -p "$OUT"

# The machine, the toolchain and the database the numbers come from.
{
  echo "# Machine"
  echo
  echo "| | |"
  echo "|---|---|"
  echo "| date | $(date -u +%Y-%m-%dT%H:%M:%SZ) |"
  echo "| commit | $COMMIT |"
  echo "| CPU | $(nproc) × $(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo 2>/dev/null || echo unknown) |"
  echo "| memory | $(awk '/^MemTotal/ {printf "%.1f GB", $2/1024/1024}' /proc/meminfo 2>/dev/null || echo unknown) |"
  echo "| load average at start | $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown) |"
  echo "| kernel | $(uname -sr) |"
  echo "| Go | $(go version 2>/dev/null | awk '{print $3, $4}' || echo unknown) |"
  if command -v psql >/dev/null; then
    echo "| PostgreSQL | $(psql "$BENCH_DATABASE_URL" -tAc 'SHOW server_version') |"
    echo "| pgvector | $(psql "$BENCH_DATABASE_URL" -tAc "SELECT extversion FROM pg_extension WHERE extname = 'vector'") |"
    echo "| shared_buffers | $(psql "$BENCH_DATABASE_URL" -tAc 'SHOW shared_buffers') |"
  fi
  echo "| embedder | ${KB_EMBEDDER:-hash} (${KB_EMBEDDING_DIM:-384} dims) |"
  if [[ -n "${BENCH_NOTE:-}" ]]; then echo "| note | $BENCH_NOTE |"; fi
} >"$OUT/machine.md"
log "machine: $OUT/machine.md"

# Retrieval quality on both collections: <name>.md, <name>.svg, <name>.json.
datasets=()
for name in scifact arguana; do
  if [[ -f "$DATASETS/$name/corpus.jsonl" ]]; then
    datasets+=(--dataset "$DATASETS/$name")
  else
    log "skipping $name: no $DATASETS/$name/corpus.jsonl"
  fi
done
skipped() { local s=${BENCH_SKIP:-}; [[ " ${s//,/ } " == *" $1 "* ]]; }

if ((${#datasets[@]} > 0)) && ! skipped quality; then
  # shellcheck disable=SC2086 # BENCH_QUALITY_ARGS is a list of flags
  "$CANON" bench quality "${datasets[@]}" --out "$OUT" --commit "$COMMIT" ${BENCH_QUALITY_ARGS:-} | tee "$OUT/quality.txt"
fi

# Further benchmarks: each `canon bench <name>` listed here runs when the binary has it,
# given the server's URL (it picks its own database there) and $OUT for its files, plus
# BENCH_<NAME>_ARGS (e.g. BENCH_LATENCY_ARGS="--chunks 20000").
for extra in latency load ingest; do
  if ! skipped "$extra" && "$CANON" bench "$extra" --help >/dev/null 2>&1; then
    log "canon bench $extra"
    args_var="BENCH_${extra^^}_ARGS"
    # shellcheck disable=SC2086 # a list of flags
    DATABASE_URL="$SERVER_URL" "$CANON" bench "$extra" --out "$OUT" ${!args_var:-}
  fi
done

{
  echo "# Benchmark results"
  echo
  echo "Written by \`make bench\` (scripts/bench.sh); the machine is in [machine.md](machine.md)."
  echo
  for f in "$OUT"/*.md; do
    b=$(basename "$f")
    [[ $b == README.md || $b == machine.md ]] && continue
    echo "- [${b%.md}]($b)"
  done
} >"$OUT/README.md"
log "results in $OUT/"
