#!/usr/bin/env bash
# Installs what the web chat's browser tests need: Debian's chromium (driven by
# playwright-core; never a downloaded browser) and web/'s npm packages from
# package-lock.json. Idempotent: apt runs only when /usr/bin/chromium is missing,
# npm ci only when the lock file changed since the last install.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/apt.sh
if [[ ! -x /usr/bin/chromium ]]; then
  echo "web-tools: installing chromium" >&2
  apt_get update -qq
  apt_get install -y -qq --no-install-recommends chromium fonts-dejavu-core
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "web-tools: installing nodejs and npm" >&2
  apt_get update -qq
  apt_get install -y -qq --no-install-recommends nodejs npm
fi
stamp=web/node_modules/.canon-lock
if [[ ! -f $stamp ]] || ! cmp -s web/package-lock.json "$stamp"; then
  (cd web && npm ci --no-audit --no-fund --loglevel=error) >&2
  cp web/package-lock.json "$stamp"
fi
