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
# A CI build starts from nothing and is thrown away: incremental compilation's
# bookkeeping would only cost there. Locally it makes the next build fast.
if [[ "${CI:-}" == "true" ]]; then
  export CARGO_INCREMENTAL=0
fi

t=$(date +%s)
mkdir -p .local
echo "== make test: building the tests while the local stack comes up"
"${nextest[@]}" --no-run --cargo-quiet &
build=$!
# checkov's virtualenv (infra/check.sh) is installed meanwhile too: mostly downloads.
infra/check.sh --install-only >.local/checkov-install.log 2>&1 &
checkov_install=$!
# The stack's own failures stop the run; the build's are reported by `wait` below.
if ! { make --no-print-directory venv && scripts/postgres-up.sh && scripts/moto-up.sh; }; then
  kill "$build" 2>/dev/null || true
  exit 1
fi
wait "$build"
# A failed install is reported by infra/check.sh itself, which tries again.
wait "$checkov_install" || cat .local/checkov-install.log >&2
phase "build + stack" "$t"

target_dir="${CARGO_TARGET_DIR:-target}"
t=$(date +%s)
DOCFLOW_BIN="$target_dir/debug/docflow" scripts/rds-proxy-up.sh
"$target_dir/debug/docflow" local up
phase "local up" "$t"

# The infra checks and the deploy to a moto of its own need no test and no other
# service: they run beside the tests, their output kept in a log and printed after the
# tests' own. What they check is a function of infra/, their scripts and the tools'
# versions alone (moto stores the function zips but never runs them): once they passed
# for one such set of inputs, a run with the same inputs says so and skips them. A fresh
# clone (CI) has no record and always runs them; `rm -r .local/infra-passed` forces them.
infra_key=$(
  {
    find infra scripts/deploy-local.sh scripts/check_deploy.py scripts/check_flip_plan.py \
      scripts/moto-deploy-down.sh requirements-dev.txt -type f -not -path '*/.terraform/*' \
      -print0 | sort -z | xargs -0 sha256sum
    terraform version 2>/dev/null | head -n 1 || true
    ls -R "${TF_PLUGIN_DIR:-/opt/tf-plugins}" 2>/dev/null || true
    .venv/bin/python -c 'import moto; print(moto.__version__)'
    echo "CI=${CI:-}"
  } | sha256sum | cut -c1-16
)
infra_passed=".local/infra-passed/$infra_key"
check_log="$(mktemp)"
deploy_log="$(mktemp)"
trap 'rm -f "$check_log" "$deploy_log"' EXIT
t=$(date +%s)
infra_skipped=false
if [[ -f "$infra_passed" ]]; then
  infra_skipped=true
else
  # Each beside the other too: deploy-local mostly waits on its moto.
  (
    s=$(date +%s)
    infra/check.sh
    echo "== make test: infra/check.sh took $(($(date +%s) - s)) s"
  ) >"$check_log" 2>&1 &
  check=$!
  (
    s=$(date +%s)
    DEPLOY_PREBUILT=1 scripts/deploy-local.sh --if-available
    echo "== make test: deploy-local took $(($(date +%s) - s)) s"
  ) >"$deploy_log" 2>&1 &
  deploy=$!
fi

tests_ok=true
"${nextest[@]}" --no-tests=fail || tests_ok=false
phase "tests" "$t"

infra_ok=true
if $infra_skipped; then
  echo "== make test: infra/check.sh and deploy-local SKIPPED: infra/, their scripts and tools unchanged since they passed ($(cat "$infra_passed")); rm -r .local/infra-passed to run them anyway"
else
  wait "$check" || infra_ok=false
  wait "$deploy" || infra_ok=false
  echo "== make test: infra/check.sh (beside the tests):"
  cat "$check_log"
  echo "== make test: deploy-local (beside the tests):"
  cat "$deploy_log"
  # Remembered only when both really ran and passed (not skipped for a missing Terraform).
  if $infra_ok && ! grep -q "SKIPPED" "$check_log" "$deploy_log"; then
    mkdir -p .local/infra-passed
    date -u +"%Y-%m-%d %H:%M UTC" >"$infra_passed"
  fi
fi
phase "tests + infra" "$t"

$tests_ok || { echo "== make test: FAILED: tests (above)" >&2; exit 1; }
$infra_ok || { echo "== make test: FAILED: infra/check.sh or deploy-local (above)" >&2; exit 1; }
echo "== make test: passed in $(($(date +%s) - started)) s (${phases[*]})"
