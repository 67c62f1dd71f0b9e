#!/usr/bin/env bash
# Starts a throwaway PostgreSQL 15 cluster for the tests, on a free 127.0.0.1 port, as
# the postgres user (initdb refuses to run as root). Installs PostgreSQL when missing
# (Debian: apt-get install -y postgresql; needs root).
#
# Usage (source it, so that the variables and the trap reach your shell):
#   source scripts/postgres.sh      # exports DPKIT_TEST_POSTGRES and DPKIT_REQUIRE_POSTGRES=1
#   ...                             # the server is stopped when the shell exits (trap EXIT)
#   postgres_stop                   # or stop it earlier
# It does not change the shell options of the shell that sources it; every step checks
# its own status.

PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
if [ ! -x "$PG_BIN/pg_ctl" ]; then
  echo "== installing PostgreSQL 15 (apt-get)" >&2
  if [ "$(id -u)" -ne 0 ]; then
    echo "scripts/postgres.sh: PostgreSQL 15 is missing and installing it needs root" >&2
    return 1 2>/dev/null || exit 1
  fi
  { DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2; } || { return 1 2>/dev/null || exit 1; }
fi

run_as_postgres() {
  if [ "$(id -u)" -eq 0 ]; then
    # From /: the postgres user may not enter the caller's directory (a mktemp -d clone).
    (cd / && runuser -u postgres -- "$@")
  else
    "$@"
  fi
}

PG_DIR=$(mktemp -d /tmp/dpkit-pg.XXXXXX) || { return 1 2>/dev/null || exit 1; }
if [ "$(id -u)" -eq 0 ]; then chown postgres:postgres "$PG_DIR" || { return 1 2>/dev/null || exit 1; }; fi
# A free port: ask the kernel for one.
PG_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()' 2>/dev/null ||
  echo $((20000 + RANDOM % 20000)))

run_as_postgres "$PG_BIN/initdb" -D "$PG_DIR/data" -U postgres --auth=trust -E UTF8 >"$PG_DIR/initdb.log" 2>&1 || {
  cat "$PG_DIR/initdb.log" >&2
  return 1 2>/dev/null || exit 1
}
run_as_postgres "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w \
  -o "-p $PG_PORT -k $PG_DIR -c listen_addresses=127.0.0.1 -c max_connections=200" start >/dev/null || {
  cat "$PG_DIR/server.log" >&2
  return 1 2>/dev/null || exit 1
}

postgres_stop() {
  if [ -n "${PG_DIR:-}" ] && [ -d "$PG_DIR/data" ]; then
    run_as_postgres "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m immediate -w stop >/dev/null 2>&1 || true
    rm -rf "$PG_DIR"
  fi
}
trap postgres_stop EXIT

export DPKIT_TEST_POSTGRES="postgres://postgres@127.0.0.1:$PG_PORT/postgres?sslmode=disable"
export DPKIT_REQUIRE_POSTGRES=1
echo "== PostgreSQL at $DPKIT_TEST_POSTGRES (data in $PG_DIR)" >&2
