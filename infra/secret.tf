# One JSON secret with every credential the functions need. Terraform creates it empty:
# no aws_secretsmanager_secret_version here, so no credential ever enters the state.
# An operator fills it with `aws secretsmanager put-secret-value` (README.md).

resource "aws_secretsmanager_secret" "app" {
  #checkov:skip=CKV2_AWS_57:third-party API keys and the database URL are rotated by an operator (put-secret-value); there is no rotation function
  name                    = "${local.name_prefix}docflow/app"
  description             = "docflow credentials (JSON): database_url, anthropic_api_key, openai_api_key, slack_webhook_url, maesn_api_key"
  kms_key_id              = var.kms_key_arn
  recovery_window_in_days = var.secret_recovery_window_days
}
