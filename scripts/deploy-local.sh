#!/usr/bin/env bash
# make deploy-local: applies infra/ with Terraform to the local emulator (the moto server
# of `make up` at AWS_ENDPOINT_URL), then checks with the AWS API that what Terraform
# declared exists there: queues and redrive policies, functions, event source mappings
# (ReportBatchItemFailures, maximum concurrency), the sweeper's schedule.
#
#   scripts/deploy-local.sh            environment "local", kept (look at it, re-run to converge)
#   scripts/deploy-local.sh --ci       a throw-away environment, destroyed at the end (make test)
#   --if-available                     exit 0 with a note when Terraform or its AWS provider is missing
#
# The function zips: DEPLOY_BUILD=dev (default) zips the functions' dev binaries, which
# `cargo test --workspace --all-targets` has already built (real executables, no extra
# compile); DEPLOY_BUILD=package deploys `make package ARCH=x86_64`'s release zips
# (cargo-lambda, LTO: minutes more). moto stores the code but cannot run it, so what is
# checked does not depend on the choice. Either way the architecture is x86_64, this
# machine's.
#
# What moto (5.2) cannot take is left out in the scratch copy and reported:
#   - aws_sqs_queue_redrive_allow_policy: moto accepts RedriveAllowPolicy but never returns
#     it, so the provider would wait for it until it times out;
#   - the AWSLambdaENIManagementAccess attachments, only when moto was started without
#     MOTO_IAM_LOAD_MANAGED_POLICIES=true (scripts/moto-up.sh sets it).
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$(pwd)"

ci=false
if_available=false
for arg in "$@"; do
  case "$arg" in
    --ci) ci=true ;;
    --if-available) if_available=true ;;
    *) echo "deploy-local: unknown argument $arg" >&2; exit 2 ;;
  esac
done

skip() {
  if $if_available; then
    echo "== deploy-local skipped: $1"
    exit 0
  fi
  echo "deploy-local: cannot run: $1" >&2
  exit 1
}

plugin_dir="${TF_PLUGIN_DIR:-/opt/tf-plugins}"
command -v terraform >/dev/null 2>&1 \
  || skip "terraform is not installed (Terraform >= 1.6; see infra/README.md)"
[[ -d "$plugin_dir/registry.terraform.io/hashicorp/aws" ]] \
  || skip "no local copy of the hashicorp/aws provider in $plugin_dir (TF_PLUGIN_DIR); 'terraform init' cannot download it without network"
[[ -x .venv/bin/python ]] || skip "the project virtualenv is missing; run 'make up' first"
endpoint="${AWS_ENDPOINT_URL:-http://127.0.0.1:4566}"
curl -sf -o /dev/null "$endpoint/moto-api/" \
  || skip "no moto server answers at $endpoint; run 'make up' first"
# A TF_CLI_CONFIG_FILE naming a missing file only makes terraform print warnings.
if [[ -n "${TF_CLI_CONFIG_FILE:-}" && ! -e "$TF_CLI_CONFIG_FILE" ]]; then
  unset TF_CLI_CONFIG_FILE
fi
export AWS_ACCESS_KEY_ID="${AWS_ACCESS_KEY_ID:-test}" AWS_SECRET_ACCESS_KEY="${AWS_SECRET_ACCESS_KEY:-test}"
export AWS_REGION="${AWS_REGION:-eu-central-1}"
started=$(date +%s)

if $ci; then
  environment="ci$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')"
else
  environment="${DEPLOY_ENV:-local}"
fi
work="$repo/.local/deploy-local/$environment"
mkdir -p "$work"

# --- the function zips ------------------------------------------------------------------
functions=(ingestion matching document-output sweeper)
target_dir="$(cargo metadata --no-deps --format-version 1 | .venv/bin/python -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')"
packages="$(cargo metadata --no-deps --format-version 1 | .venv/bin/python -c 'import json, sys; print(" ".join(p["name"] for p in json.load(sys.stdin)["packages"]))')"
for f in "${functions[@]}"; do
  [[ " $packages " == *" $f "* ]] || {
    echo "deploy-local: infra/ deploys the function '$f', but there is no package '$f' in this tree (functions/$f)" >&2
    exit 1
  }
done
case "${DEPLOY_BUILD:-dev}" in
  dev)
    echo "== function zips: dev binaries (DEPLOY_BUILD=dev)"
    cargo build --quiet $(printf -- '-p %s ' "${functions[@]}")
    package_dir="$work/lambda"
    for f in "${functions[@]}"; do
      mkdir -p "$package_dir/$f"
      .venv/bin/python - "$target_dir/debug/$f" "$package_dir/$f/bootstrap.zip" <<'PY'
import sys, zipfile
binary, out = sys.argv[1], sys.argv[2]
info = zipfile.ZipInfo("bootstrap", date_time=(2026, 1, 1, 0, 0, 0))
info.external_attr = 0o755 << 16  # Lambda runs `bootstrap`: it must be executable
info.compress_type = zipfile.ZIP_DEFLATED
with open(binary, "rb") as src, zipfile.ZipFile(out, "w") as z:
    z.writestr(info, src.read())
PY
    done
    ;;
  package)
    echo "== function zips: make package ARCH=x86_64 (DEPLOY_BUILD=package)"
    scripts/package.sh x86_64
    package_dir="$repo/target/lambda"
    ;;
  *) echo "deploy-local: DEPLOY_BUILD must be dev or package" >&2; exit 2 ;;
esac

# --- the emulator's network -------------------------------------------------------------
read -r vpc_id subnet_ids database_sg managed_policies < <(
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
iam = boto3.client("iam", endpoint_url=endpoint, region_name=region)
try:
    iam.get_policy(PolicyArn="arn:aws:iam::aws:policy/service-role/AWSLambdaENIManagementAccess")
    managed = "yes"
except iam.exceptions.NoSuchEntityException:
    managed = "no"
print(vpc, json.dumps(subnets, separators=(",", ":")), sg, managed)
PY
)

# --- a scratch copy with the emulator override -----------------------------------------
# A fresh copy of infra/ each run; only the state is carried over, so a re-run converges.
rm -rf "$work/infra.new"
cp -R "$repo/infra" "$work/infra.new"
rm -rf "$work/infra.new/.terraform" "$work/infra.new/.terraform.lock.hcl" "$work/infra.new/tests"
if [[ -f "$work/infra/terraform.tfstate" ]]; then
  cp "$work/infra/terraform.tfstate" "$work/infra.new/"
fi
rm -rf "$work/infra"
mv "$work/infra.new" "$work/infra"
cp infra/environments/local/moto_override.tf infra/environments/local/emulator.tf "$work/infra/"
cp infra/environments/local/queue_function_override.tf "$work/infra/modules/queue-function/moto_override.tf"
not_applied=("aws_sqs_queue_redrive_allow_policy (×3): moto accepts RedriveAllowPolicy but does not return it; the provider would wait for it until it times out")
if [[ "$managed_policies" == no ]]; then
  cat >> "$work/infra/modules/queue-function/moto_override.tf" <<'HCL'

resource "aws_iam_role_policy_attachment" "vpc_access" {
  count = 0
}
HCL
  cat > "$work/infra/sweeper_moto_override.tf" <<'HCL'
resource "aws_iam_role_policy_attachment" "sweeper_vpc_access" {
  count = 0
}
HCL
  not_applied+=("aws_iam_role_policy_attachment AWSLambdaENIManagementAccess (×4): this moto server was started without MOTO_IAM_LOAD_MANAGED_POLICIES=true (scripts/moto-up.sh sets it; 'make down && make up' restarts it)")
fi

tf() { TF_IN_AUTOMATION=1 terraform -chdir="$work/infra" "$@"; }
vars=(
  -var-file=environments/local.tfvars
  -var "emulator_endpoint=$endpoint"
  -var "environment=$environment"
  -var "documents_bucket_name=$environment-docflow-documents"
  -var "vpc_id=$vpc_id"
  -var "subnet_ids=$subnet_ids"
  -var "database_security_group_id=$database_sg"
  -var "lambda_package_dir=$package_dir"
  -var "lambda_architecture=x86_64"
)
color=()
[[ -t 1 ]] || color=(-no-color)

echo "== terraform init (providers from $plugin_dir)"
tf init -input=false -plugin-dir="$plugin_dir" >"$work/init.log" 2>&1 || { cat "$work/init.log" >&2; exit 1; }

destroy() {
  echo "== terraform destroy ($environment)"
  tf destroy -auto-approve -input=false "${color[@]}" "${vars[@]}" >"$work/destroy.log" 2>&1 \
    || { tail -n 30 "$work/destroy.log" >&2; echo "deploy-local: destroy failed; state in $work" >&2; return 1; }
  rm -rf "$work"
}
if $ci; then
  trap 'destroy || true' EXIT
fi

echo "== terraform apply: environment $environment on $endpoint"
apply_started=$(date +%s)
if ! tf apply -auto-approve -input=false "${color[@]}" "${vars[@]}" >"$work/apply.log" 2>&1; then
  grep -E "^(│ )?Error" -A8 "$work/apply.log" >&2 || tail -n 40 "$work/apply.log" >&2
  echo "deploy-local: terraform apply failed (full log: $work/apply.log)" >&2
  exit 1
fi
apply_seconds=$(( $(date +%s) - apply_started ))
grep -E "^Apply complete" "$work/apply.log" || true

echo "== checking what exists against what Terraform declared"
tf show -json >"$work/state.json"
.venv/bin/python scripts/check_deploy.py "$work/state.json" "$endpoint" "$AWS_REGION" x86_64

echo "== not applied against moto:"
for line in "${not_applied[@]}"; do echo "   - $line"; done
echo "== deploy-local: applied in ${apply_seconds} s, all done in $(( $(date +%s) - started )) s"
if ! $ci; then
  echo "   state: $work/infra (re-run to converge; 'terraform -chdir=$work/infra destroy' with the same -var flags removes it)"
fi
