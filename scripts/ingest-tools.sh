#!/usr/bin/env bash
# Installs what canon needs to ingest PDFs: pdftotext and pdfinfo from Debian's
# poppler-utils. Idempotent: does nothing when pdftotext is already on PATH.
# Works as root and as a normal user with sudo (only apt-get needs it).
set -euo pipefail
if command -v pdftotext >/dev/null 2>&1 && command -v pdfinfo >/dev/null 2>&1; then exit 0; fi
source "$(dirname "${BASH_SOURCE[0]}")/apt.sh"
echo "ingest-tools: installing poppler-utils (pdftotext, pdfinfo)" >&2
apt_get update -qq
apt_get install -y -qq --no-install-recommends poppler-utils
