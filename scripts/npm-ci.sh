#!/usr/bin/env bash
# Installs a Node package's pinned dependencies (npm ci) once per package-lock.json:
# a stamp in node_modules records the lock file's hash, so later runs cost nothing
# and need no network. Usage: scripts/npm-ci.sh DIR
set -euo pipefail
dir=${1:?usage: scripts/npm-ci.sh DIR}
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	echo "npm-ci: node and npm (Node.js >= 20) are required for $dir" >&2
	exit 1
fi
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 20 ]; then
	echo "npm-ci: node $(node --version) is too old for $dir: Node.js >= 20 is required" >&2
	exit 1
fi
lock=$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)
stamp="$dir/node_modules/.canon-npm-ci"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$lock" ]; then
	exit 0
fi
(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
echo "$lock" >"$stamp"
