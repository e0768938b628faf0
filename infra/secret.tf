# One JSON secret per function, holding only the credentials that function uses
# (least privilege): ingestion cannot read the Maesn key, document output cannot read
# the LLM keys. Each function's role may read its own secret only (and, for document
# output and the sweeper, the per-tenant DATEV secrets); the migrate function
# (migrate.tf) reads its own and the four functions' database URLs. Terraform creates
# them empty: no aws_secretsmanager_secret_version here, so no credential ever enters
# the state. An operator fills each with `aws secretsmanager put-secret-value`
# (README.md, The secrets).

locals {
  # The keys each function's code reads (docflow::bootstrap, llm, embeddings, notify,
  # datev). The database URL is in every one.
  secret_keys = {
    ingestion         = "database_url, the LLM provider's key (anthropic_api_key or openai_api_key)"
    matching          = "database_url, the LLM provider's key (anthropic_api_key or openai_api_key), embeddings_api_key (else openai_api_key) with EMBEDDING_PROVIDER, slack_webhook_url"
    "document-output" = "database_url, maesn_api_key, slack_webhook_url"
    sweeper           = "database_url, maesn_api_key, slack_webhook_url"
    # The schema owner's URL, to the DB instance endpoint (not the RDS Proxy).
    migrate = "database_url (the schema owner's, to the DB instance)"
  }
}

resource "aws_secretsmanager_secret" "ingestion" {
  #checkov:skip=CKV2_AWS_57:third-party API keys and the database URL are rotated by an operator (put-secret-value); there is no rotation function
  name                    = "${local.name_prefix}docflow/ingestion"
  description             = "docflow ingestion credentials (JSON): ${local.secret_keys["ingestion"]}"
  kms_key_id              = var.kms_key_arn
  recovery_window_in_days = var.secret_recovery_window_days
}

resource "aws_secretsmanager_secret" "matching" {
  #checkov:skip=CKV2_AWS_57:third-party API keys and the database URL are rotated by an operator (put-secret-value); there is no rotation function
  name                    = "${local.name_prefix}docflow/matching"
  description             = "docflow matching credentials (JSON): ${local.secret_keys["matching"]}"
  kms_key_id              = var.kms_key_arn
  recovery_window_in_days = var.secret_recovery_window_days
}

resource "aws_secretsmanager_secret" "document_output" {
  #checkov:skip=CKV2_AWS_57:third-party API keys and the database URL are rotated by an operator (put-secret-value); there is no rotation function
  name                    = "${local.name_prefix}docflow/document-output"
  description             = "docflow document-output credentials (JSON): ${local.secret_keys["document-output"]}"
  kms_key_id              = var.kms_key_arn
  recovery_window_in_days = var.secret_recovery_window_days
}

resource "aws_secretsmanager_secret" "sweeper" {
  #checkov:skip=CKV2_AWS_57:third-party API keys and the database URL are rotated by an operator (put-secret-value); there is no rotation function
  name                    = "${local.name_prefix}docflow/sweeper"
  description             = "docflow sweeper credentials (JSON): ${local.secret_keys["sweeper"]}"
  kms_key_id              = var.kms_key_arn
  recovery_window_in_days = var.secret_recovery_window_days
}
