# Used only by scripts/deploy-local.sh, which copies infra/ to a scratch directory and
# adds this file there: a local state, and the AWS provider pointed at the emulator.
# Credentials come from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (test/test).

terraform {
  backend "local" {}
}

provider "aws" {
  region                      = var.aws_region
  skip_credentials_validation = true
  skip_metadata_api_check     = true
  skip_requesting_account_id  = true
  s3_use_path_style           = true

  endpoints {
    cloudwatch     = var.emulator_endpoint
    cloudwatchlogs = var.emulator_endpoint
    ec2            = var.emulator_endpoint
    events         = var.emulator_endpoint
    iam            = var.emulator_endpoint
    kms            = var.emulator_endpoint
    lambda         = var.emulator_endpoint
    s3             = var.emulator_endpoint
    secretsmanager = var.emulator_endpoint
    ses            = var.emulator_endpoint
    sns            = var.emulator_endpoint
    sqs            = var.emulator_endpoint
    sts            = var.emulator_endpoint
  }
}
