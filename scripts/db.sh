#!/usr/bin/env bash
# Provisions (idempotently) a private PostgreSQL cluster with pgvector for canon,
# listening on 127.0.0.1:${KB_PG_PORT:-54329} only.
#
#   scripts/db.sh start    install what is missing, init the cluster, start it, print DATABASE_URL
#   scripts/db.sh stop     stop the cluster
#   scripts/db.sh url      print DATABASE_URL
#   scripts/db.sh dir      print the cluster's data directory
#   scripts/db.sh destroy  stop the cluster and delete its data directory
#
# Works as root (the server then runs as the `postgres` user, since PostgreSQL refuses
# to run as root) and as a normal user with sudo (only apt-get needs it), from any
# clone location: see data_dir.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PORT="${KB_PG_PORT:-54329}"
DBNAME="${KB_PG_DATABASE:-canon}"
PGVECTOR_MIN="0.7.0"

log() { printf 'db: %s\n' "$*" >&2; }

source "$(dirname "${BASH_SOURCE[0]}")/apt.sh"

# data_dir prints where the cluster keeps its data: .data/pg in the clone, unless
# the server's user cannot reach it. As root the server runs as `postgres`, who
# cannot traverse a private directory (a 0700 home such as /root, a mktemp -d):
# then the cluster lives in postgres's own home, in a directory named after the
# clone's path, so two clones never share one. A cluster already in .data/pg stays.
data_dir() {
  local inside="$ROOT/.data/pg"
  if [[ $(id -u) -ne 0 || -f "$inside/PG_VERSION" ]] || runuser -u postgres -- test -x "$ROOT" 2>/dev/null; then
    echo "$inside"
    return
  fi
  local home hash
  home=$(getent passwd postgres | cut -d: -f6)
  hash=$(printf '%s' "$ROOT" | sha256sum | cut -c1-12)
  echo "${home:-/var/lib/postgresql}/canon/$(basename "$ROOT")-$hash/pg"
}

# run_pg runs a PostgreSQL server binary as the user that owns the cluster.
run_pg() {
  if [[ $(id -u) -eq 0 ]]; then
    # From /: postgres may not be allowed into the current directory.
    (cd / && runuser -u postgres -- "$@")
  else
    "$@"
  fi
}

apt_updated=""
apt_install() {
  if [[ -z "$apt_updated" ]]; then
    log "apt-get update"
    apt_get update -qq
    apt_updated=1
  fi
  log "installing $*"
  apt_get install -y -qq --no-install-recommends "$@"
}

pg_version() {
  local v
  v=$(ls /usr/lib/postgresql 2>/dev/null | sort -n | tail -1 || true)
  echo "$v"
}

ensure_postgres() {
  if [[ -z "$(pg_version)" ]]; then
    apt_install postgresql postgresql-contrib
  fi
  PGV="$(pg_version)"
  BIN="/usr/lib/postgresql/$PGV/bin"
  [[ -x "$BIN/initdb" ]] || { log "no initdb in $BIN"; exit 1; }
}

vector_installed_version() {
  local control="/usr/share/postgresql/$PGV/extension/vector.control"
  [[ -f "$control" ]] || return 0
  sed -n "s/^default_version *= *'\(.*\)'/\1/p" "$control"
}

version_ge() { [[ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -1)" == "$2" ]]; }

# mirror_uri reads the Debian mirror this machine already uses, so the repository
# never names a host of its own.
mirror_uri() {
  local uri=""
  if compgen -G "/etc/apt/sources.list.d/*.sources" >/dev/null; then
    uri=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
    [[ -n "$uri" ]] || uri=$(grep -h '^URIs:' /etc/apt/sources.list.d/*.sources | grep -v security | awk '{print $2; exit}')
  fi
  if [[ -z "$uri" && -f /etc/apt/sources.list ]]; then
    uri=$(awk '$1=="deb" && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list)
  fi
  echo "$uri"
}

build_pgvector_from_source() {
  # Debian 12 ships no pgvector package; trixie's source package builds cleanly
  # against postgresql-server-dev-$PGV. A throwaway apt configuration keeps the
  # machine's own sources untouched.
  apt_install "postgresql-server-dev-$PGV" build-essential ca-certificates
  local tmp uri
  tmp=$(mktemp -d)
  uri=$(mirror_uri)
  [[ -n "$uri" ]] || { log "cannot find a Debian mirror in /etc/apt"; exit 1; }
  mkdir -p "$tmp/lists/partial" "$tmp/src"
  echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $uri trixie main" >"$tmp/sources.list"
  local aptopts=(-o "Dir::Etc::SourceList=$tmp/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
    -o "Dir::State::Lists=$tmp/lists" -o "APT::Sandbox::User=root")
  log "fetching pgvector source from $uri (trixie)"
  apt_get "${aptopts[@]}" update -qq
  (cd "$tmp/src" && apt_get "${aptopts[@]}" source --download-only -qq pgvector)
  local orig
  orig=$(ls "$tmp"/src/pgvector_*.orig.tar.* | head -1)
  mkdir -p "$tmp/build"
  tar -xf "$orig" -C "$tmp/build" --strip-components=1
  log "building pgvector ($(basename "$orig"))"
  make -s -C "$tmp/build" PG_CONFIG="$BIN/pg_config" OPTFLAGS="" >&2
  $SUDO make -s -C "$tmp/build" PG_CONFIG="$BIN/pg_config" install >&2
  $SUDO rm -rf "$tmp"
}

ensure_pgvector() {
  local have
  have=$(vector_installed_version)
  if [[ -n "$have" ]] && version_ge "$have" "$PGVECTOR_MIN"; then return; fi
  if apt-cache show "postgresql-$PGV-pgvector" >/dev/null 2>&1 ||
    { [[ -z "$apt_updated" ]] && apt_get update -qq && apt_updated=1 &&
      apt-cache show "postgresql-$PGV-pgvector" >/dev/null 2>&1; }; then
    apt_install "postgresql-$PGV-pgvector"
  else
    build_pgvector_from_source
  fi
  have=$(vector_installed_version)
  version_ge "${have:-0}" "$PGVECTOR_MIN" || { log "pgvector $have < $PGVECTOR_MIN"; exit 1; }
  log "pgvector $have installed"
}

ensure_cluster() {
  mkdir -p "$ROOT/.data"
  if [[ ! -f "$DATA/PG_VERSION" ]]; then
    log "initialising cluster in $DATA"
    mkdir -p "$DATA"
    if [[ $(id -u) -eq 0 ]]; then
      chown postgres:postgres "$DATA"
      [[ "$DATA" == "$ROOT/.data/pg" ]] || chown postgres:postgres "$(dirname "$DATA")"
    fi
    run_pg "$BIN/initdb" -D "$DATA" -U postgres --auth=trust --encoding=UTF8 --locale=C.UTF-8 >/dev/null
    cat >>"$DATA/postgresql.conf" <<CONF
# canon: private development cluster, loopback only.
listen_addresses = '127.0.0.1'
port = $PORT
unix_socket_directories = ''
shared_buffers = 512MB
maintenance_work_mem = 512MB
max_connections = 200
fsync = off
synchronous_commit = off
full_page_writes = off
CONF
  fi
  if [[ $(id -u) -eq 0 ]]; then
    touch "$LOG" && chown postgres:postgres "$LOG"
  fi
  if run_pg "$BIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1; then
    return
  fi
  reserve_huge_pages
  log "starting PostgreSQL $PGV on 127.0.0.1:$PORT"
  if ! run_pg "$BIN/pg_ctl" -D "$DATA" -l "$LOG" -w -t 60 start >/dev/null; then
    log "PostgreSQL did not start; the end of $LOG:"
    tail -5 "$LOG" >&2 || true
    log "(another server on port $PORT? set KB_PG_PORT to use another)"
    exit 1
  fi
}

# reserve_huge_pages makes room for the cluster's shared memory in huge pages, which
# PostgreSQL takes when they are free (huge_pages = try, the default). Without them
# each new backend maps the shared buffers it touches 4 kB at a time: on these VMs a
# fresh connection's first searches took 40-300 ms instead of 6, and 16 requests in
# flight on new connections ran at a third of the rate (bench/results/served-path.md).
# It only raises vm.nr_hugepages, by what the cluster needs beyond the free ones, and
# only where that needs no password; KB_PG_HUGE_PAGES=off leaves the kernel alone.
reserve_huge_pages() {
  [[ "${KB_PG_HUGE_PAGES:-on}" != off && -r /proc/sys/vm/nr_hugepages ]] || return 0
  local need total available
  need=$(run_pg "$BIN/postgres" -D "$DATA" -C shared_memory_size_in_huge_pages 2>/dev/null || true)
  [[ "$need" =~ ^[0-9]+$ && "$need" -gt 0 ]] || return 0
  total=$(cat /proc/sys/vm/nr_hugepages)
  available=$(awk '/^HugePages_Free:/ {f = $2} /^HugePages_Rsvd:/ {r = $2} END {print f - r}' /proc/meminfo)
  (( available < need )) || return 0
  local want=$((total + need - available))
  if [[ $(id -u) -eq 0 ]]; then
    echo "$want" >/proc/sys/vm/nr_hugepages 2>/dev/null || true
  elif sudo -n true 2>/dev/null; then
    echo "$want" | sudo -n tee /proc/sys/vm/nr_hugepages >/dev/null 2>&1 || true
  fi
  if [[ $(cat /proc/sys/vm/nr_hugepages) -ge $want ]]; then
    log "reserved $need huge pages for the cluster's shared memory (vm.nr_hugepages $total -> $want; KB_PG_HUGE_PAGES=off to skip)"
  else
    log "no huge pages for the cluster (vm.nr_hugepages needs $want; a new connection's first searches run slower)"
  fi
}

ensure_database() {
  local psql=("$BIN/psql" -h 127.0.0.1 -p "$PORT" -U postgres -v ON_ERROR_STOP=1 -qtA)
  if [[ -z "$("${psql[@]}" -d postgres -c "SELECT 1 FROM pg_database WHERE datname = '$DBNAME'")" ]]; then
    "${psql[@]}" -d postgres -c "CREATE DATABASE $DBNAME" >/dev/null
  fi
  "${psql[@]}" -d "$DBNAME" -c "CREATE EXTENSION IF NOT EXISTS vector" >/dev/null
}

stop() {
  PGV="$(pg_version)"
  BIN="/usr/lib/postgresql/$PGV/bin"
  if [[ -f "$DATA/PG_VERSION" ]] && run_pg "$BIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1; then
    run_pg "$BIN/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null
    log "stopped"
  else
    log "not running"
  fi
}

url() { echo "postgres://postgres@127.0.0.1:$PORT/$DBNAME?sslmode=disable"; }

DATA="$(data_dir)"
LOG="$(dirname "$DATA")/pg.log"

case "${1:-start}" in
start)
  ensure_postgres
  ensure_pgvector
  ensure_cluster
  ensure_database
  url
  ;;
stop) stop ;;
url) url ;;
dir) echo "$DATA" ;;
destroy)
  stop
  if [[ -f "$DATA/PG_VERSION" ]]; then
    rm -rf "$DATA" "$LOG"
    # The directory named after the clone, when the cluster lived outside it.
    [[ "$DATA" == "$ROOT/.data/pg" ]] || rmdir "$(dirname "$DATA")" 2>/dev/null || true
    log "deleted $DATA"
  fi
  ;;
*)
  echo "usage: $0 start|stop|url|dir|destroy" >&2
  exit 2
  ;;
esac
