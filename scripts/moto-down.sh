#!/usr/bin/env bash
# Stops the moto server that moto-up.sh started (nothing else).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/moto-deploy-down.sh
if [ -f .local/moto.pid ]; then
  kill "$(cat .local/moto.pid)" 2>/dev/null || true
  rm -f .local/moto.pid
  echo "moto: stopped"
fi
