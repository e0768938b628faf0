#!/usr/bin/env bash
# make demo: the whole pipeline on the sample documents, offline, through the local
# queues — run after `make up` (the Makefile does). The steps are the commands a
# newcomer would type:
#
#   docflow local maesn &            the Maesn stand-in (DATEV's API, async task included)
#   docflow seed                     a demo tenant; every sample uploaded, recorded, enqueued
#   docflow local run --until-idle   ingestion → matching, the sweeper on its schedule
#   docflow demo approve             final approval of the matched invoices (docflow::output)
#   docflow local run --until-idle   document output → Maesn; the sweeper polls the tasks
#   docflow demo summary --check     the table; fails if a document is not finished
#
# A real LLM is used when the local secret carries `anthropic_api_key` or
# `openai_api_key` (or LLM_PROVIDER says so); otherwise the offline rules extractor.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)
mkdir -p .local
# The functions log errors with their cause; a backtrace on every expected failure (the
# broken sample) would bury the output.
export RUST_LIB_BACKTRACE=0

echo "== building docflow"
cargo build --quiet -p docflow-cli
target_dir="$(cargo metadata --no-deps --format-version 1 | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')"
docflow="$target_dir/debug/docflow"

port="${DEMO_MAESN_PORT:-4599}"
# Its state file lets it answer the tasks of earlier demo runs too (an interrupted run
# leaves tasks the sweeper still polls).
"$docflow" local maesn --listen "127.0.0.1:$port" --rate-limit-once INV-1043 \
  --state .local/maesn-state.json >.local/maesn.log 2>&1 &
maesn_pid=$!
trap 'kill "$maesn_pid" 2>/dev/null || true' EXIT
for _ in $(seq 1 50); do
  curl -sf -o /dev/null "http://127.0.0.1:$port/_standin/exports" && break
  if ! kill -0 "$maesn_pid" 2>/dev/null; then
    echo "demo: the Maesn stand-in did not start: $(cat .local/maesn.log)" >&2
    exit 1
  fi
  sleep 0.1
done
export MAESN_BASE_URL="http://127.0.0.1:$port"
# The stand-in rate-limits INV-1043 once: the export is retried after a short backoff
# (in AWS: a minute and more).
export HTTP_RETRY_BASE_MS=200 OUTPUT_BACKOFF_BASE_SECONDS=2

echo "== docflow seed"
"$docflow" seed
echo "== docflow local run --until-idle (ingestion, matching)"
# Up to 420 s: on a database other runs left work in (pending matchings whose messages
# are still queued), the sweeper re-sends them too, and a copy that meets the other's
# live claim waits out the 150 s matching lease (+10 s) before it comes back. A fresh
# database is idle in about 15 s.
"$docflow" local run --until-idle --max-time 420
echo "== docflow demo approve"
"$docflow" demo approve
echo "== docflow local run --until-idle (document output, DATEV tasks)"
"$docflow" local run --until-idle --max-time 120
echo "== summary"
"$docflow" demo summary --check
echo "== Maesn stand-in received $(curl -sf "http://127.0.0.1:$port/_standin/exports" | python3 -c 'import json, sys; print(len(json.load(sys.stdin)))') booking proposal(s); demo finished in $(( $(date +%s) - started )) s"
