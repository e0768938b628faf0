#!/usr/bin/env bash
# Starts the moto server on 127.0.0.1:4566 unless something already answers there.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .local
port=4566
if curl -sf -o /dev/null "http://127.0.0.1:${port}/moto-api/"; then
  echo "moto: already running on 127.0.0.1:${port}"
  exit 0
fi
nohup .venv/bin/moto_server -H 127.0.0.1 -p "${port}" > .local/moto.log 2>&1 &
echo $! > .local/moto.pid
for _ in $(seq 1 100); do
  if curl -sf -o /dev/null "http://127.0.0.1:${port}/moto-api/"; then
    echo "moto: started on 127.0.0.1:${port} (pid $(cat .local/moto.pid))"
    exit 0
  fi
  sleep 0.2
done
echo "moto: did not come up; see .local/moto.log" >&2
exit 1
