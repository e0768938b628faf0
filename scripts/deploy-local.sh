#!/usr/bin/env bash
# make deploy-local: applies infra/ with Terraform to a local AWS emulator, then checks
# with the AWS API that what Terraform declared exists there: queues and redrive
# policies, functions, their aliases, event source mappings (ReportBatchItemFailures,
# maximum concurrency), the sweeper's schedule and its permission on the alias, the
# alarms, the S3 gateway endpoint.
#
#   scripts/deploy-local.sh                 apply, check, stop the emulator
#   scripts/deploy-local.sh --keep          leave the emulator running to look at it
#   scripts/deploy-local.sh --if-available  exit 0 with a note when Terraform or its AWS
#                                           provider is missing (make test); in CI
#                                           (CI=true) that fails instead
#   DEPLOY_PREBUILT=1                       the dev binaries are built already: no cargo
#                                           build (make test runs this beside the tests)
#
# The emulator is a moto server of its own (the same moto as `make up`'s, from .venv, on
# DEPLOY_LOCAL_PORT, default 4567), started fresh for every run: once moto has created a
# Lambda function, its model dump (/moto-api/data.json, which tests read) fails for the
# rest of the server's life, so deploying into `make up`'s server at 4566 would break
# those tests. It loads AWS managed IAM policies (AWSLambdaENIManagementAccess).
#
# The function zips: DEPLOY_BUILD=dev (default) zips the functions' dev binaries, which
# `cargo test --workspace --all-targets` has already built (real executables, no extra
# compile); DEPLOY_BUILD=package deploys `make package ARCH=x86_64`'s release zips
# (cargo-lambda, LTO: many minutes more). moto stores the code but cannot run it, so what
# is checked does not depend on the choice. Either way the architecture is x86_64, this
# machine's, and the zips and their architecture.json go to .local/deploy-local/lambda,
# never to target/lambda: that is where a real (arm64) apply reads its zips.
#
# One apply of the deployed state (consumers_enabled=true), checked against the
# emulator's API; then two plans that cost no apply:
#   - the same variables again: the plan must be empty (no drift: nothing the provider
#     reads back differs from what it wrote);
#   - consumers_enabled=false, the first phase of a first deploy (infra/README.md): the
#     plan must only switch the event source mappings, the sweeper's schedule and its
#     alarm actions, each updated in place (scripts/check_flip_plan.py).
#
# What moto (5.2) cannot take is left out in the scratch copy and reported:
# aws_sqs_queue_redrive_allow_policy — moto accepts RedriveAllowPolicy but never returns
# it, so the provider would wait for it until it times out.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$(pwd)"

keep=false
if_available=false
for arg in "$@"; do
  case "$arg" in
    --keep) keep=true ;;
    --if-available) if_available=true ;;
    *) echo "deploy-local: unknown argument $arg" >&2; exit 2 ;;
  esac
done

skip() {
  # In CI (CI=true) nothing is optional: Terraform and its provider are on CI machines.
  if $if_available && [[ "${CI:-}" != "true" ]]; then
    echo "== deploy-local SKIPPED: $1"
    exit 0
  fi
  echo "deploy-local: cannot run: $1" >&2
  exit 1
}

plugin_dir="${TF_PLUGIN_DIR:-/opt/tf-plugins}"
command -v terraform >/dev/null 2>&1 \
  || skip "terraform is not installed (Terraform >= 1.10; see infra/README.md)"
[[ -d "$plugin_dir/registry.terraform.io/hashicorp/aws" ]] \
  || skip "no local copy of the hashicorp/aws provider in $plugin_dir (TF_PLUGIN_DIR); 'terraform init' cannot download it without network"
[[ -x .venv/bin/moto_server ]] || skip "the project virtualenv with moto is missing; run 'make up' (or 'make venv') first"
port="${DEPLOY_LOCAL_PORT:-4567}"
endpoint="http://127.0.0.1:$port"
# A TF_CLI_CONFIG_FILE naming a missing file only makes terraform print warnings.
if [[ -n "${TF_CLI_CONFIG_FILE:-}" && ! -e "$TF_CLI_CONFIG_FILE" ]]; then
  unset TF_CLI_CONFIG_FILE
fi
export AWS_ACCESS_KEY_ID="${AWS_ACCESS_KEY_ID:-test}" AWS_SECRET_ACCESS_KEY="${AWS_SECRET_ACCESS_KEY:-test}"
export AWS_REGION="${AWS_REGION:-eu-central-1}"
started=$(date +%s)

environment=local
work="$repo/.local/deploy-local"
rm -rf "$work"
mkdir -p "$work"

# --- the function zips ------------------------------------------------------------------
functions=(ingestion matching document-output sweeper migrate)
target_dir="$(cargo metadata --no-deps --format-version 1 | .venv/bin/python -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')"
packages="$(cargo metadata --no-deps --format-version 1 | .venv/bin/python -c 'import json, sys; print(" ".join(p["name"] for p in json.load(sys.stdin)["packages"]))')"
for f in "${functions[@]}"; do
  [[ " $packages " == *" $f "* ]] \
    || skip "infra/ deploys the function '$f', but this tree has no package '$f' (functions/$f) to build its zip from"
done
case "${DEPLOY_BUILD:-dev}" in
  dev)
    echo "== function zips: dev binaries (DEPLOY_BUILD=dev)"
    # The whole workspace with all targets, as `cargo test --workspace --all-targets`
    # (make test) builds it: the same feature unification, so the binaries are already
    # there. A `-p <function>` build resolves features for those packages alone and
    # recompiles much of the dependency tree a second time (minutes on 2 cores).
    # DEPLOY_PREBUILT=1 (scripts/test.sh, which built them and runs the tests beside this
    # script): no cargo call that could relink a binary under a running test.
    if [[ "${DEPLOY_PREBUILT:-}" != "1" ]]; then
      cargo build --quiet --workspace --all-targets
    fi
    for f in "${functions[@]}"; do
      [[ -x "$target_dir/debug/$f" ]] || { echo "deploy-local: $target_dir/debug/$f is not built" >&2; exit 1; }
    done
    package_dir="$work/lambda"
    for f in "${functions[@]}"; do
      mkdir -p "$package_dir/$f"
      # Without symbols and debug sections (ingestion: 67 -> 36 MB): moto stores the code and
      # never runs it, and less to deflate and upload is CPU the tests beside this
      # script can use.
      binary="$package_dir/$f/bootstrap"
      strip --strip-all -o "$binary" "$target_dir/debug/$f" 2>/dev/null || cp "$target_dir/debug/$f" "$binary"
      .venv/bin/python - "$binary" "$package_dir/$f/bootstrap.zip" <<'PY'
import sys, zipfile
binary, out = sys.argv[1], sys.argv[2]
info = zipfile.ZipInfo("bootstrap", date_time=(2026, 1, 1, 0, 0, 0))
info.external_attr = 0o755 << 16  # Lambda runs `bootstrap`: it must be executable
info.compress_type = zipfile.ZIP_DEFLATED
with open(binary, "rb") as src, zipfile.ZipFile(out, "w") as z:
    z.writestr(info, src.read())
PY
      rm -f "$binary"
    done
    .venv/bin/python scripts/package_manifest.py "$package_dir" x86_64 "${functions[@]}" >/dev/null
    ;;
  package)
    echo "== function zips: make package ARCH=x86_64 (DEPLOY_BUILD=package)"
    package_dir="$work/lambda"
    PACKAGE_DIR="$package_dir" scripts/package.sh x86_64
    ;;
  *) echo "deploy-local: DEPLOY_BUILD must be dev or package" >&2; exit 2 ;;
esac

# --- the emulator ---------------------------------------------------------------------
"$repo/scripts/moto-deploy-down.sh" >/dev/null
if curl -sf -o /dev/null "$endpoint/moto-api/"; then
  echo "deploy-local: something already answers on port $port; set DEPLOY_LOCAL_PORT to a free port" >&2
  exit 1
fi
MOTO_IAM_LOAD_MANAGED_POLICIES=true nohup .venv/bin/moto_server -H 127.0.0.1 -p "$port" \
  >"$repo/.local/moto-deploy.log" 2>&1 &
echo $! >"$repo/.local/moto-deploy.pid"
if ! $keep; then
  trap '"$repo/scripts/moto-deploy-down.sh" >/dev/null' EXIT
fi
for _ in $(seq 1 100); do
  curl -sf -o /dev/null "$endpoint/moto-api/" && break
  sleep 0.2
done
curl -sf -o /dev/null "$endpoint/moto-api/" \
  || { echo "deploy-local: the emulator did not start; see .local/moto-deploy.log" >&2; exit 1; }
echo "== emulator: moto on $endpoint (pid $(cat "$repo/.local/moto-deploy.pid"))"

# --- the emulator's network -------------------------------------------------------------
read -r vpc_id subnet_ids database_sg route_tables < <(
  .venv/bin/python - "$endpoint" "$AWS_REGION" "$environment" <<'PY'
import json, sys
import boto3
endpoint, region, env = sys.argv[1:4]
ec2 = boto3.client("ec2", endpoint_url=endpoint, region_name=region)
vpc = ec2.describe_vpcs(Filters=[{"Name": "isDefault", "Values": ["true"]}])["Vpcs"][0]["VpcId"]
subnets = [s["SubnetId"] for s in ec2.describe_subnets(Filters=[{"Name": "vpc-id", "Values": [vpc]}])["Subnets"]][:2]
name = f"{env}-database"
found = ec2.describe_security_groups(Filters=[{"Name": "group-name", "Values": [name]}, {"Name": "vpc-id", "Values": [vpc]}])["SecurityGroups"]
sg = found[0]["GroupId"] if found else ec2.create_security_group(GroupName=name, Description="stand-in for the database's security group", VpcId=vpc)["GroupId"]
tables = [t["RouteTableId"] for t in ec2.describe_route_tables(Filters=[{"Name": "vpc-id", "Values": [vpc]}])["RouteTables"]]
print(vpc, json.dumps(subnets, separators=(",", ":")), sg, json.dumps(tables, separators=(",", ":")))
PY
)

# --- a scratch copy with the emulator override -----------------------------------------
cp -R "$repo/infra" "$work/infra"
rm -rf "$work/infra/.terraform" "$work/infra/.terraform.lock.hcl" "$work/infra/terraform.tfstate"* "$work/infra/tests"
cp infra/environments/local/moto_override.tf infra/environments/local/emulator.tf infra/environments/local/network_override.tf "$work/infra/"
cp infra/environments/local/queue_function_override.tf "$work/infra/modules/queue-function/moto_override.tf"
not_applied=("aws_sqs_queue_redrive_allow_policy (×3): moto accepts RedriveAllowPolicy but does not return it; the provider would wait for it until it times out")
# What the scratch copy adapts to moto (infra/environments/local/*_override.tf): its
# answers, so that the plan after the apply can be held to empty, and its default VPC.
adapted=(
  "aws_sqs_queue.source redrive_policy (×3): not compared after the apply (moto spells it back with Python's JSON separators; AWS returns the string as set); check_deploy.py checks its target and maxReceiveCount"
  "aws_lambda_event_source_mapping.this function_name (×3): not compared after the apply; the mapping invokes the alias live, which moto resolves to its version (<function>:1) where AWS keeps the alias ARN; check_deploy.py finds each mapping by the function ARN the state records"
  "aws_vpc_security_group_*_rule referencing a group (×2): description and referenced_security_group_id not compared after the apply; moto returns the id as <account>/<sg-id> and drops the description"
  "network.tf's egress check: every function subnet counts as reaching the AWS APIs; moto's default VPC routes 0.0.0.0/0 to an internet gateway and has no NAT gateway, and the functions never run in the emulator"
)

tf() { TF_IN_AUTOMATION=1 terraform -chdir="$work/infra" "$@"; }
vars=(
  -var-file=environments/local.tfvars
  -var "emulator_endpoint=$endpoint"
  -var "environment=$environment"
  -var "documents_bucket_name=$environment-docflow-documents"
  -var "vpc_id=$vpc_id"
  -var "subnet_ids=$subnet_ids"
  -var "database_security_group_id=$database_sg"
  -var "route_table_ids=$route_tables"
  -var "lambda_package_dir=$package_dir"
  -var "lambda_architecture=x86_64"
)
color=()
[[ -t 1 ]] || color=(-no-color)

echo "== terraform init (providers from $plugin_dir)"
tf init -input=false -plugin-dir="$plugin_dir" >"$work/init.log" 2>&1 || { cat "$work/init.log" >&2; exit 1; }

echo "== terraform apply: environment $environment on $endpoint, consumers_enabled=true"
apply_started=$(date +%s)
log="$work/apply.log"
if ! tf apply -auto-approve -input=false "${color[@]}" "${vars[@]}" -var consumers_enabled=true >"$log" 2>&1; then
  grep -E "^(│ )?Error" -A8 "$log" >&2 || tail -n 40 "$log" >&2
  echo "deploy-local: terraform apply failed (full log: $log)" >&2
  exit 1
fi
apply_seconds=$(( $(date +%s) - apply_started ))
grep -E "^Apply complete" "$log" || true

echo "== checking what exists against what Terraform declared (consumers_enabled=true)"
tf show -json >"$work/state.json"
.venv/bin/python scripts/check_deploy.py "$work/state.json" "$endpoint" "$AWS_REGION" x86_64 true

echo "== terraform plan with the same variables: must be empty (no drift)"
plan_started=$(date +%s)
set +e
tf plan -detailed-exitcode -input=false "${color[@]}" "${vars[@]}" -var consumers_enabled=true >"$work/plan-drift.log" 2>&1
drift=$?
set -e
case $drift in
  0) echo "   no changes" ;;
  2) grep -E "^  # |will be|must be" "$work/plan-drift.log" >&2 || cat "$work/plan-drift.log" >&2
     echo "deploy-local: the plan after the apply is not empty: drift (full plan: $work/plan-drift.log)" >&2
     exit 1 ;;
  *) tail -n 40 "$work/plan-drift.log" >&2
     echo "deploy-local: terraform plan failed (full log: $work/plan-drift.log)" >&2
     exit 1 ;;
esac

echo "== terraform plan with consumers_enabled=false: only the consumers switch, in place"
# The state was refreshed by the plan above; this one only compares configuration.
tf plan -refresh=false -input=false "${color[@]}" "${vars[@]}" -var consumers_enabled=false -out="$work/flip.plan" >"$work/plan-flip.log" 2>&1 \
  || { tail -n 40 "$work/plan-flip.log" >&2; echo "deploy-local: terraform plan failed (full log: $work/plan-flip.log)" >&2; exit 1; }
tf show -json "$work/flip.plan" >"$work/flip.json"
.venv/bin/python scripts/check_flip_plan.py "$work/flip.json"
plan_seconds=$(( $(date +%s) - plan_started ))

echo "== not applied against moto:"
for line in "${not_applied[@]}"; do echo "   - $line"; done
echo "== adapted to moto (infra/environments/local/):"
for line in "${adapted[@]}"; do echo "   - $line"; done
echo "== deploy-local: applied in ${apply_seconds} s, planned in ${plan_seconds} s, all done in $(( $(date +%s) - started )) s"
if $keep; then
  echo "   the emulator keeps running on $endpoint (state: $work/infra); 'make down' stops it"
fi
