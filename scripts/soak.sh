#!/usr/bin/env bash
# make soak: the fault-injection soak on 2,000 documents (docs/soak.md). It runs against
# a moto server of its own (SOAK_MOTO_PORT, default 4731), so thousands of messages do
# not slow the shared one; Postgres is the one `make up` uses (a fresh database).
set -euo pipefail
cd "$(dirname "$0")/.."
port="${SOAK_MOTO_PORT:-4731}"
mkdir -p .local
.venv/bin/moto_server -H 127.0.0.1 -p "$port" >.local/soak-moto.log 2>&1 &
moto_pid=$!
trap 'kill "$moto_pid" 2>/dev/null || true' EXIT
for _ in $(seq 1 50); do
  curl -sf -o /dev/null "http://127.0.0.1:$port/moto-api/" && break
  if ! kill -0 "$moto_pid" 2>/dev/null; then
    echo "soak: moto did not start: $(cat .local/soak-moto.log)" >&2
    exit 1
  fi
  sleep 0.2
done
export AWS_ENDPOINT_URL="http://127.0.0.1:$port"
SOAK_DOCUMENTS="${SOAK_DOCUMENTS:-2000}" SOAK_MAX_SECONDS="${SOAK_MAX_SECONDS:-3600}" \
  cargo test -p docflow-cli --test soak -- --nocapture
