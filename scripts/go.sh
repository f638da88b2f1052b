#!/usr/bin/env bash
# Makes sure a Go toolchain new enough for go.mod is on PATH (the image ships one in
# /usr/local/go; a bare Debian/Ubuntu machine gets golang-go, and the go command then
# fetches the toolchain go.mod names through the module proxy).
set -euo pipefail
if command -v go >/dev/null 2>&1; then exit 0; fi
if [[ -x /usr/local/go/bin/go ]]; then
  echo "go: found /usr/local/go/bin/go; add it to PATH" >&2
  exit 1
fi
source "$(dirname "${BASH_SOURCE[0]}")/apt.sh"
apt_get update -qq && apt_get install -y -qq golang-go git make
