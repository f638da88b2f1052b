#!/usr/bin/env bash
# Installs PgBouncer (Debian's pgbouncer) for the connection-pooling test
# (cmd/canon/TestThroughPgBouncer), which starts its own instance in transaction
# mode. Idempotent: does nothing when pgbouncer is already installed. Works as
# root and as a normal user with sudo (only apt-get needs it). The package's own
# service is not wanted: it is kept from starting (policy-rc.d exit 101 for the
# install only, when there is no policy already).
set -euo pipefail
if command -v pgbouncer >/dev/null 2>&1 || [[ -x /usr/sbin/pgbouncer ]]; then exit 0; fi
source "$(dirname "${BASH_SOURCE[0]}")/apt.sh"
echo "pgbouncer-tools: installing pgbouncer" >&2
apt_get update -qq
policy=""
if [[ ! -e /usr/sbin/policy-rc.d ]]; then
  policy=/usr/sbin/policy-rc.d
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null
  $SUDO chmod 755 "$policy"
fi
trap '[[ -z "$policy" ]] || $SUDO rm -f "$policy"' EXIT
apt_get install -y -qq --no-install-recommends pgbouncer
