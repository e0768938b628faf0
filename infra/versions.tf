terraform {
  # 1.10: the S3 backend's native state locking (use_lockfile, environments/example.backend.hcl).
  required_version = ">= 1.10.0, < 2.0.0"

  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = "~> 5.100"
    }
  }

  # Partial configuration: `terraform init -backend-config=environments/<env>.backend.hcl`
  # (see environments/example.backend.hcl). Use `-backend=false` to only validate.
  backend "s3" {}
}

provider "aws" {
  region = var.aws_region

  default_tags {
    tags = local.tags
  }
}
