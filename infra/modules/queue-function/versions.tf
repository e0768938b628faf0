terraform {
  # lifecycle preconditions need 1.2+; 1.6 is the oldest release this module is meant for.
  required_version = ">= 1.6.0, < 2.0.0"

  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.100.0, < 6.0.0"
    }
  }
}
