#!/usr/bin/env bash
# Stops the local PostgreSQL clusters that postgres-up.sh started (never a server given by
# DATABASE_URL). Their data stays; `rm -rf .local/pgserver-*` (as root:
# /var/lib/docflow-pg/data-*) starts afresh.
set -euo pipefail
cd "$(dirname "$0")/.."
shopt -s nullglob
for started in .local/pgserver-*.started; do
  { read -r data; read -r bindir; } <"${started}"
  if [ "$(id -u)" = 0 ]; then
    runuser -u docflow-pg -- "${bindir}/pg_ctl" -D "${data}" -m fast stop >/dev/null || true
  else
    "${bindir}/pg_ctl" -D "${data}" -m fast stop >/dev/null || true
  fi
  rm -f "${started}"
  echo "postgres: stopped the local cluster in ${data}"
done
