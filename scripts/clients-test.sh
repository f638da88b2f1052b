#!/usr/bin/env bash
# Runs the Node clients against a live `canon serve`: the TypeScript Connect
# example (Search, and ChatStream over gRPC-web) and the MCP test with the official
# TypeScript SDK against /mcp. The server listens on a loopback ephemeral port
# over a database of its own (the example handbook), dropped at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${DATABASE_URL:?DATABASE_URL must name a PostgreSQL with pgvector (make db)}"
canon=bin/canon

scripts/npm-ci.sh clients/ts
(cd clients/ts && node_modules/.bin/tsc -p .)

db="canon_clients_$$"
url=$(node -e 'const u = new URL(process.argv[1]); u.pathname = "/" + process.argv[2]; console.log(u.toString())' "$DATABASE_URL" "$db")
tmp=$(mktemp -d)
pid=""
cleanup() {
	if [ -n "$pid" ]; then
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	psql "$DATABASE_URL" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

psql "$DATABASE_URL" -qc "CREATE DATABASE $db" >/dev/null
DATABASE_URL=$url $canon migrate up >/dev/null
DATABASE_URL=$url $canon ingest examples/handbook --project platform >/dev/null
# The background job opens serve.out only when it starts: create it first for the wait below.
: >"$tmp/serve.out"
DATABASE_URL=$url $canon serve --addr 127.0.0.1:0 >"$tmp/serve.out" 2>"$tmp/serve.err" &
pid=$!
addr=""
for _ in $(seq 1 300); do
	addr=$(sed -n 's/^canon listening on \(http:\/\/[0-9.:]*\)$/\1/p' "$tmp/serve.out")
	[ -n "$addr" ] && break
	if ! kill -0 "$pid" 2>/dev/null; then
		cat "$tmp/serve.err" >&2
		exit 1
	fi
	sleep 0.1
done
if [ -z "$addr" ]; then
	echo "clients-test: canon serve did not start in 30 s" >&2
	cat "$tmp/serve.err" >&2
	exit 1
fi

CANON_URL=$addr node clients/ts/dist/examples/search-and-chat.js
# Again with an API key, sent by withApiKey; a key the server does not know is refused.
key=$(DATABASE_URL=$url $canon keys create --project platform --role reader --name clients-test --json |
	node -e 'let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => console.log(JSON.parse(s).key))')
CANON_URL=$addr CANON_API_KEY=$key node clients/ts/dist/examples/search-and-chat.js
CANON_URL=$addr node clients/ts/dist/test/mcp.js
