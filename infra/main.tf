# docflow on AWS: one queue-function instance per SQS-triggered Lambda, the scheduled
# sweeper (sweeper.tf), the documents bucket (documents.tf), the credentials secret
# (secret.tf), the functions' network access (network.tf) and the alarm topic (alarms.tf).
#
# Message flow: ingestion -> matching; document-output is fed by the application; the
# sweeper re-sends lost messages to all three queues.

locals {
  name_prefix = "${var.environment}-"

  tags = merge(var.tags, {
    Project     = "docflow"
    Environment = var.environment
    ManagedBy   = "terraform"
  })

  llm_settings = merge(
    { LLM_PROVIDER = var.llm_provider },
    var.llm_model == null ? {} : { LLM_MODEL = var.llm_model },
  )

  # Admin notifications of matching and document output: a channel is on only when
  # configured.
  notify_settings = merge(
    var.admin_base_url == null ? {} : { ADMIN_BASE_URL = var.admin_base_url },
    var.notify_email_from == null || var.notify_email_to == null ? {} : {
      NOTIFY_EMAIL_FROM = var.notify_email_from
      NOTIFY_EMAIL_TO   = var.notify_email_to
    },
  )
}

module "ingestion" {
  source = "./modules/queue-function"

  name         = "ingestion"
  name_prefix  = local.name_prefix
  package_path = "${var.lambda_package_dir}/ingestion/bootstrap.zip"
  architecture = var.lambda_architecture

  # OCR + LLM extraction of a batch of documents.
  timeout_seconds     = 300
  memory_mb           = 1024
  batch_size          = 10
  maximum_concurrency = var.maximum_concurrency["ingestion"]

  max_receive_count         = var.max_receive_count
  message_retention_seconds = var.message_retention_seconds
  # Backoff is at most 600 s between attempts.
  oldest_message_age_alarm_seconds = 1800

  secret_arn            = aws_secretsmanager_secret.app.arn
  documents_bucket_name = aws_s3_bucket.documents.id
  documents_bucket_arn  = aws_s3_bucket.documents.arn
  s3_read_prefixes      = ["documents/", "ingestions/"]
  s3_write_prefixes     = ["ingestions/"]
  sends_to = {
    MATCHING_QUEUE_URL = { arn = module.matching.queue_arn, url = module.matching.queue_url }
  }
  # Three LLM attempts (60 s each, plus 2 s and 4 s waits) fit in the 300 s timeout
  # with the function's failure reserve to spare.
  settings = merge(local.llm_settings, { OCR_PROVIDER = var.ocr_provider, LLM_TIMEOUT_SECONDS = "60", STALE_INGESTION_SECONDS = tostring(var.stale_ingestion_seconds) })
  textract = var.ocr_provider == "textract"

  subnet_ids         = var.subnet_ids
  security_group_ids = [aws_security_group.functions.id]
  kms_key_arn        = var.kms_key_arn
  alarm_topic_arn    = aws_sns_topic.alarms.arn
  log_level          = var.log_level
  log_retention_days = var.log_retention_days

  database_max_connections = var.database_max_connections
  metrics_namespace        = local.metrics_namespace
}

module "matching" {
  source = "./modules/queue-function"

  name         = "matching"
  name_prefix  = local.name_prefix
  package_path = "${var.lambda_package_dir}/matching/bootstrap.zip"
  architecture = var.lambda_architecture

  timeout_seconds     = 120
  memory_mb           = 512
  batch_size          = 10
  maximum_concurrency = var.maximum_concurrency["matching"]

  max_receive_count         = var.max_receive_count
  message_retention_seconds = var.message_retention_seconds
  # Transient failures retry after 300 s, then 1800 s: a message can be 2100 s old
  # while everything works as designed.
  oldest_message_age_alarm_seconds = 3600

  secret_arn        = aws_secretsmanager_secret.app.arn
  ses_identity_arns = var.ses_identity_arn == null ? [] : [var.ses_identity_arn]
  # Three LLM attempts (30 s each, plus 2 s and 4 s waits) fit in the 120 s timeout
  # minus the 15 s failure reserve and the 2 s deadline margin.
  settings = merge(local.llm_settings, { LLM_TIMEOUT_SECONDS = "30" }, local.notify_settings)

  subnet_ids         = var.subnet_ids
  security_group_ids = [aws_security_group.functions.id]
  kms_key_arn        = var.kms_key_arn
  alarm_topic_arn    = aws_sns_topic.alarms.arn
  log_level          = var.log_level
  log_retention_days = var.log_retention_days

  database_max_connections = var.database_max_connections
  metrics_namespace        = local.metrics_namespace
}

module "document_output" {
  source = "./modules/queue-function"

  name         = "document-output"
  name_prefix  = local.name_prefix
  package_path = "${var.lambda_package_dir}/document-output/bootstrap.zip"
  architecture = var.lambda_architecture

  # DATEV export through Maesn; a running job extends its visibility every 60 s.
  timeout_seconds     = 120
  memory_mb           = 512
  batch_size          = 10
  maximum_concurrency = var.maximum_concurrency["document-output"]

  max_receive_count                = var.max_receive_count
  message_retention_seconds        = var.message_retention_seconds
  oldest_message_age_alarm_seconds = 1800

  secret_arn            = aws_secretsmanager_secret.app.arn
  documents_bucket_name = aws_s3_bucket.documents.id
  documents_bucket_arn  = aws_s3_bucket.documents.arn
  s3_read_prefixes      = ["documents/"]
  # A tenant's DATEV account key: the secret <prefix><tenant id>, JSON key account_key
  # (docs/document-output.md), created when the tenant connects DATEV.
  tenant_secret_prefixes = { DATEV_CREDENTIALS_PREFIX = local.datev_credentials_prefix }
  # Failed and in-doubt exports are notified to the admins like matching's failures.
  ses_identity_arns = var.ses_identity_arn == null ? [] : [var.ses_identity_arn]
  settings          = merge(local.notify_settings, { STALE_RUNNING_SECONDS = tostring(var.stale_running_seconds) })

  subnet_ids         = var.subnet_ids
  security_group_ids = [aws_security_group.functions.id]
  kms_key_arn        = var.kms_key_arn
  alarm_topic_arn    = aws_sns_topic.alarms.arn
  log_level          = var.log_level
  log_retention_days = var.log_retention_days

  database_max_connections = var.database_max_connections
  metrics_namespace        = local.metrics_namespace
}
