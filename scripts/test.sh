#!/usr/bin/env bash
# make test: every test, from a fresh clone or a built tree (docs/testing.md).
#
#   1. the test build (cargo nextest's, i.e. `cargo test --workspace
#      --no-run`) runs while the virtualenv, PostgreSQL and moto come up;
#   2. `docflow local up` (migrations, queues, bucket, secret) with the CLI binary that
#      build made: `cargo run -p docflow-cli` would resolve features for the CLI alone
#      and compile much of the dependency tree a second time;
#   3. every test with cargo nextest (.config/nextest.toml: one process per test, all
#      binaries side by side, the soak and the secret-leak run first);
#   4. beside the tests: infra/check.sh (checkov, terraform fmt/validate/test), then
#      scripts/deploy-local.sh --if-available (one apply into a moto of its own, then a
#      plan that must be empty), output printed after the tests'.
# Each phase prints how long it took; the last line sums them up.
set -euo pipefail
cd "$(dirname "$0")/.."

started=$(date +%s)
phases=()
phase() { # phase <name> <start-seconds>
  local took=$(($(date +%s) - $2))
  phases+=("$1 ${took}s")
  echo "== make test: $1 took ${took} s"
}

# cargo-nextest is on the machines docflow is developed and tested on; elsewhere it is
# built once from crates.io.
if ! cargo nextest --version >/dev/null 2>&1; then
  echo "== make test: installing cargo-nextest (cargo install --locked cargo-nextest)"
  cargo install --locked cargo-nextest
fi

nextest=(cargo nextest run --workspace)

t=$(date +%s)
echo "== make test: building the tests while the local stack comes up"
"${nextest[@]}" --no-run --cargo-quiet &
build=$!
# The stack's own failures stop the run; the build's are reported by `wait` below.
if ! { make --no-print-directory venv && scripts/postgres-up.sh && scripts/moto-up.sh; }; then
  kill "$build" 2>/dev/null || true
  exit 1
fi
wait "$build"
phase "build + stack" "$t"

target_dir="${CARGO_TARGET_DIR:-target}"
t=$(date +%s)
"$target_dir/debug/docflow" local up
phase "local up" "$t"

# The infra checks and the deploy to a moto of its own need no test and no other
# service: they run beside the tests, on the CPU the tests leave idle while they wait,
# their output kept in a log and printed after the tests' own.
infra_log="$(mktemp)"
trap 'rm -f "$infra_log"' EXIT
t=$(date +%s)
(
  set -e
  s=$(date +%s)
  infra/check.sh
  echo "== make test: infra/check.sh took $(($(date +%s) - s)) s"
  s=$(date +%s)
  DEPLOY_PREBUILT=1 scripts/deploy-local.sh --if-available
  echo "== make test: deploy-local took $(($(date +%s) - s)) s"
) >"$infra_log" 2>&1 &
infra=$!

tests_ok=true
"${nextest[@]}" --no-tests=fail || tests_ok=false
phase "tests" "$t"

infra_ok=true
wait "$infra" || infra_ok=false
echo "== make test: infra/check.sh and deploy-local (beside the tests):"
cat "$infra_log"
phase "tests + infra" "$t"

$tests_ok || { echo "== make test: FAILED: tests (above)" >&2; exit 1; }
$infra_ok || { echo "== make test: FAILED: infra/check.sh or deploy-local (above)" >&2; exit 1; }
echo "== make test: passed in $(($(date +%s) - started)) s (${phases[*]})"
