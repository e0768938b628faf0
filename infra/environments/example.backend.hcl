# terraform init -backend-config=environments/<env>.backend.hcl
# One state per environment; the state bucket exists before the first init.
bucket       = "example-terraform-state"
key          = "docflow/staging/terraform.tfstate"
region       = "eu-central-1"
encrypt      = true
use_lockfile = true # S3-native state locking; versions.tf requires Terraform >= 1.10 for it
