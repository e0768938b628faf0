#!/usr/bin/env bash
# Stops the private cluster that postgres-up.sh started (never a system server).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -f .local/pg.started ]; then
  bindir=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "${bindir}/pg_ctl" -D "$(pwd)/.local/pgdata" -m fast stop || true
  else
    "${bindir}/pg_ctl" -D "$(pwd)/.local/pgdata" -m fast stop || true
  fi
  rm -f .local/pg.started
  echo "postgres: stopped the private cluster"
fi
