# Used only by scripts/deploy-local.sh (see moto_override.tf).

variable "emulator_endpoint" {
  description = "The local AWS emulator every service is sent to."
  type        = string
  default     = "http://127.0.0.1:4566"
}
