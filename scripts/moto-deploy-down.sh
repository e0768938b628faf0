#!/usr/bin/env bash
# Stops the moto server that scripts/deploy-local.sh started (nothing else).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -f .local/moto-deploy.pid ]; then
  kill "$(cat .local/moto-deploy.pid)" 2>/dev/null || true
  rm -f .local/moto-deploy.pid
  echo "moto (deploy-local): stopped"
fi
