#!/usr/bin/env bash
# Stops the RDS Proxy stand-ins scripts/rds-proxy-up.sh started.
set -euo pipefail
cd "$(dirname "$0")/.."
shopt -s nullglob
for pidfile in .local/rds-proxy-*.pid; do
  kill "$(cat "${pidfile}")" 2>/dev/null || true
  rm -f "${pidfile}"
  echo "rds-proxy: stopped (${pidfile})"
done
