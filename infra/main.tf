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

  # Email notifications need all three of ses_identity_arn, notify_email_from and
  # notify_email_to (preflight.tf fails the plan otherwise): the settings and the
  # ses:SendEmail grant come together or not at all.
  email_enabled = var.ses_identity_arn != null && var.notify_email_from != null && var.notify_email_to != null
  # ses:SendEmail is authorised on the sender's identity and, in the SES sandbox, on
  # every recipient's identity too (ses_recipient_identity_arns).
  ses_send_arns = local.email_enabled ? concat([var.ses_identity_arn], var.ses_recipient_identity_arns) : []

  # Admin notifications of matching and document output: a channel is on only when
  # configured.
  notify_settings = merge(
    var.admin_base_url == null ? {} : { ADMIN_BASE_URL = var.admin_base_url },
    local.email_enabled ? {
      NOTIFY_EMAIL_FROM = var.notify_email_from
      NOTIFY_EMAIL_TO   = var.notify_email_to
    } : {},
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
  enabled             = var.consumers_enabled
  live_version        = lookup(var.live_versions, "ingestion", null)
  # Records of a batch processed at once, hence Textract jobs polled at once per instance
  # (quotas.tf holds the product to the Textract quotas).
  batch_concurrency = var.ingestion_batch_concurrency

  max_receive_count         = var.max_receive_count
  message_retention_seconds = var.message_retention_seconds
  # Backoff is at most 600 s between attempts.
  oldest_message_age_alarm_seconds = 1800

  secret_arn            = aws_secretsmanager_secret.ingestion.arn
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
  database_tls             = var.database_tls
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
  enabled             = var.consumers_enabled
  live_version        = lookup(var.live_versions, "matching", null)

  max_receive_count         = var.max_receive_count
  message_retention_seconds = var.message_retention_seconds
  # Transient failures retry after 300 s, then 1800 s: a message can be 2100 s old
  # while everything works as designed.
  oldest_message_age_alarm_seconds = 3600

  secret_arn        = aws_secretsmanager_secret.matching.arn
  ses_identity_arns = local.ses_send_arns
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
  database_tls             = var.database_tls
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
  enabled             = var.consumers_enabled
  live_version        = lookup(var.live_versions, "document-output", null)

  # Its own receive count: a passing refusal (Maesn 503, 429) backs
  # off 60 s · 2^(n−1), at most 900 s, so 10 receives span 60+120+240+480+5·900 =
  # 5400 s: an hour-long Maesn outage ends with receives to spare
  # (docs/document-output.md, "Backoff schedule").
  max_receive_count                = var.document_output_max_receive_count
  message_retention_seconds        = var.message_retention_seconds
  oldest_message_age_alarm_seconds = 1800

  secret_arn            = aws_secretsmanager_secret.document_output.arn
  documents_bucket_name = aws_s3_bucket.documents.id
  documents_bucket_arn  = aws_s3_bucket.documents.arn
  s3_read_prefixes      = ["documents/"]
  # A tenant's DATEV account key: the secret <prefix><tenant id>, JSON key account_key
  # (docs/document-output.md), created when the tenant connects DATEV.
  tenant_secret_prefixes = { DATEV_CREDENTIALS_PREFIX = local.datev_credentials_prefix }
  # Failed and in-doubt exports are notified to the admins like matching's failures.
  ses_identity_arns = local.ses_send_arns
  settings          = merge(local.notify_settings, { STALE_RUNNING_SECONDS = tostring(var.stale_running_seconds) })

  subnet_ids         = var.subnet_ids
  security_group_ids = [aws_security_group.functions.id]
  kms_key_arn        = var.kms_key_arn
  alarm_topic_arn    = aws_sns_topic.alarms.arn
  log_level          = var.log_level
  log_retention_days = var.log_retention_days

  database_max_connections = var.database_max_connections
  database_tls             = var.database_tls
  metrics_namespace        = local.metrics_namespace
}

# Textract throttling: a throttled call fails the record's OCR as a transient error, so
# its message is retried and burns one of its receives. quotas.tf keeps the rate
# ingestion can reach within the account's quotas; this alarm sees what it cannot (the
# quotas lowered, another workload in the account using Textract). Textract's
# metrics are per account and region (dimension Operation), not per function: with
# ocr_provider = textract, ingestion is what calls these three operations.
resource "aws_cloudwatch_metric_alarm" "textract_throttled" {
  count = var.ocr_provider == "textract" ? 1 : 0

  alarm_name        = "${local.name_prefix}docflow-textract-throttled"
  alarm_description = "Textract throttled OCR calls in 5 minutes (ThrottledCount of DetectDocumentText, StartDocumentTextDetection, GetDocumentTextDetection): ingestion retries them and each retry uses a receive. Lower maximum_concurrency[ingestion] or ingestion_batch_concurrency, or request higher Textract quotas in Service Quotas (the plan reads them)."

  metric_query {
    id          = "throttled"
    expression  = "FILL(detect, 0) + FILL(start, 0) + FILL(poll, 0)"
    label       = "Throttled Textract calls"
    return_data = true
  }

  dynamic "metric_query" {
    for_each = {
      detect = "DetectDocumentText"
      start  = "StartDocumentTextDetection"
      poll   = "GetDocumentTextDetection"
    }

    content {
      id = metric_query.key
      metric {
        namespace   = "AWS/Textract"
        metric_name = "ThrottledCount"
        dimensions  = { Operation = metric_query.value }
        stat        = "Sum"
        period      = 300
      }
    }
  }

  evaluation_periods  = 1
  comparison_operator = "GreaterThanThreshold"
  threshold           = 0
  treat_missing_data  = "notBreaching"

  alarm_actions = [aws_sns_topic.alarms.arn]
  ok_actions    = [aws_sns_topic.alarms.arn]
}
