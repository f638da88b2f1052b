#!/usr/bin/env bash
# make demo: migrate, ingest the example handbook, start `canon serve` in the
# background, and answer real questions against it.
set -euo pipefail
cd "$(dirname "$0")/.."
CANON=bin/canon
ADDR="${SERVE_ADDR:-127.0.0.1:8787}"
PIDFILE=.data/serve.pid
LOG=.data/serve.log
: "${DATABASE_URL:?DATABASE_URL is not set (make demo sets it)}"

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "migrations"
$CANON migrate up

step "ingest examples/handbook"
$CANON ingest examples/handbook --project platform

step "projects"
$CANON projects

step "start canon serve on $ADDR"
if [[ -f $PIDFILE ]] && kill -0 "$(cat $PIDFILE)" 2>/dev/null; then
  kill "$(cat $PIDFILE)" && sleep 0.5
fi
mkdir -p .data
nohup $CANON serve --addr "$ADDR" >"$LOG" 2>&1 &
echo $! >$PIDFILE
for _ in $(seq 1 50); do
  curl -fsS "http://$ADDR/healthz" >/dev/null 2>&1 && break
  sleep 0.2
done
curl -fsS "http://$ADDR/healthz" >/dev/null || { echo "server did not start; see $LOG"; cat "$LOG"; exit 1; }

step "canon search \"what cache layer did we standardise on?\" --project platform"
$CANON search "what cache layer did we standardise on?" --project platform --limit 5

step "the same question over the Connect API (POST /canon.v1.SearchService/Search)"
curl -fsS -X POST "http://$ADDR/canon.v1.SearchService/Search" \
  -H 'Content-Type: application/json' \
  -d '{"query":"how do deployment rollbacks work?","filters":{"project_keys":["platform"]},"options":{"limit":3}}' |
  python3 -c 'import json, sys
for h in json.load(sys.stdin)["result"]["primary"]:
    print("%.4f  %-24s %s" % (h["score"], h["docId"], " > ".join(h.get("headingPath", []))))' ||
  echo "(python3 is needed only to pretty-print this response)"

step "canon ask \"what cache layer did we standardise on?\" --project platform"
$CANON ask "what cache layer did we standardise on?" --project platform

step "canon ask \"what is the best banana bread recipe?\" --project platform   (nothing relevant: a typed refusal, no model call)"
$CANON ask "what is the best banana bread recipe?" --project platform

cat <<MSG

canon is serving on http://$ADDR (Connect, gRPC and gRPC-web; GET /healthz).
  logs:  $LOG
  stop:  kill \$(cat $PIDFILE)   and   make db-stop

Web chat: http://$ADDR/app/chat
MSG
