#!/usr/bin/env bash
# Offline checks of the Terraform under infra/ (no network, no AWS account):
#   1. checkov, from the project virtualenv, must report zero failed checks. Every
#      accepted finding is an inline `#checkov:skip=<id>:<reason>` next to its resource.
#   2. `terraform fmt -check`, `terraform validate` and `terraform test` (tests/*.tftest.hcl,
#      against a mocked AWS provider), only where terraform and a local copy of the AWS
#      provider exist (TF_PLUGIN_DIR, default /opt/tf-plugins): providers cannot be
#      downloaded here. Skipped with a note otherwise, except in CI (CI=true), where a
#      missing one fails the check.
# The invariants docflow's code relies on are checked by the Rust contract tests
# (cargo test -p docflow-tests --test it infra_contract::).
#
#   infra/check.sh                 install checkov if needed, then check
#   infra/check.sh --install-only  only install checkov (make test does it while it builds)
set -euo pipefail

CHECKOV_VERSION="3.3.30"

infra_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_dir="$(dirname "$infra_dir")"
# Its own virtualenv: checkov pins boto3/botocore versions that moto (in .venv) should not inherit.
venv="$repo_dir/.venv-checkov"
checkov="$venv/bin/checkov"

# Kept between runs, as `make up` keeps .venv: a stamp names the installed version, so a
# run with the venv in place starts checkov at once (asking `checkov --version` costs
# seconds of imports).
stamp="$venv/.installed-checkov-$CHECKOV_VERSION"
if [[ ! -f "$stamp" || ! -x "$checkov" ]]; then
  if [[ ! -x "$venv/bin/pip" ]]; then
    echo "infra/check.sh: creating the project virtualenv at $venv" >&2
    python3 -m venv "$venv"
  fi
  echo "infra/check.sh: installing checkov $CHECKOV_VERSION into $venv" >&2
  rm -f "$venv"/.installed-checkov-*
  "$venv/bin/pip" install --quiet --disable-pip-version-check "checkov==$CHECKOV_VERSION"
  touch "$stamp"
fi
if [[ "${1:-}" == "--install-only" ]]; then
  exit 0
fi

echo "== checkov $CHECKOV_VERSION on infra/"
# --skip-download: no calls to the Prisma Cloud API (guidelines, policy metadata).
# The example environment gives the root variables without defaults a value.
"$checkov" \
  --directory "$infra_dir" \
  --framework terraform \
  --var-file "$infra_dir/environments/example.tfvars" \
  --skip-download \
  --compact \
  --quiet
# checkov exits non-zero on any failed check; --quiet prints only failures and the summary.

plugin_dir="${TF_PLUGIN_DIR:-/opt/tf-plugins}"
# A TF_CLI_CONFIG_FILE naming a missing file only makes terraform print warnings.
if [[ -n "${TF_CLI_CONFIG_FILE:-}" && ! -e "$TF_CLI_CONFIG_FILE" ]]; then
  unset TF_CLI_CONFIG_FILE
fi
if command -v terraform >/dev/null 2>&1 && [[ -d "$plugin_dir/registry.terraform.io/hashicorp/aws" ]]; then
  echo "== terraform fmt -check, validate and test (providers from $plugin_dir)"
  color=()
  [[ -t 1 ]] || color=(-no-color)
  terraform -chdir="$infra_dir" fmt -check -recursive
  # A scratch copy, so init writes neither .terraform/ nor a lock file into infra/.
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  cp -R "$infra_dir" "$work/infra"
  rm -rf "$work/infra/.terraform" "$work/infra/.terraform.lock.hcl"
  TF_IN_AUTOMATION=1 terraform -chdir="$work/infra" init -backend=false -input=false -plugin-dir="$plugin_dir" >/dev/null
  TF_IN_AUTOMATION=1 terraform -chdir="$work/infra" validate "${color[@]}"
  # Terraform hashes the function zips at plan time: placeholders stand in for the build.
  for function in ingestion matching document-output sweeper migrate; do
    mkdir -p "$work/infra/tests/fixtures/lambda/$function"
    "$venv/bin/python" -c 'import sys, zipfile; z = zipfile.ZipFile(sys.argv[1], "w"); z.writestr("bootstrap", ""); z.close()' \
      "$work/infra/tests/fixtures/lambda/$function/bootstrap.zip"
  done
  TF_IN_AUTOMATION=1 terraform -chdir="$work/infra" test "${color[@]}"
else
  why="terraform validate and test need terraform and the hashicorp/aws provider (downloaded by 'terraform init', which needs network; or a local copy in TF_PLUGIN_DIR)"
  if [[ "${CI:-}" == "true" ]]; then
    # CI machines have both: a missing one is a broken machine, not a reason to pass.
    echo "infra/check.sh: FAILED in CI: $why" >&2
    exit 1
  fi
  echo "== SKIPPED: $why"
fi
