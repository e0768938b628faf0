#!/usr/bin/env bash
# make test: every test, from a fresh clone or a built tree (docs/testing.md).
#
#   1. the test build (cargo nextest's, i.e. `cargo test --workspace --all-targets
#      --no-run`) runs while the virtualenv, PostgreSQL and moto come up;
#   2. `docflow local up` (migrations, queues, bucket, secret) with the CLI binary that
#      build made: `cargo run -p docflow-cli` would resolve features for the CLI alone
#      and compile much of the dependency tree a second time;
#   3. every test with cargo nextest (.config/nextest.toml: one process per test, all
#      binaries side by side, the soak and the secret-leak run first);
#   4. infra/check.sh (checkov, terraform fmt/validate/test), then
#      scripts/deploy-local.sh --if-available (one apply into a moto of its own, then a
#      plan that must be empty).
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

nextest=(cargo nextest run --workspace --all-targets --no-tests=fail)

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

t=$(date +%s)
"${nextest[@]}"
phase "tests" "$t"

t=$(date +%s)
infra/check.sh
phase "infra/check.sh" "$t"

t=$(date +%s)
scripts/deploy-local.sh --if-available
phase "deploy-local" "$t"

echo "== make test: passed in $(($(date +%s) - started)) s (${phases[*]})"
