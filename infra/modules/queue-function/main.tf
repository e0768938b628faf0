# One SQS-triggered docflow function: source queue, dead-letter queue, the Lambda
# function, the event source mapping between them, a least-privilege role, the log
# group and the alarms. See ../../README.md for what each alarm means.

locals {
  function_name = "${var.name_prefix}docflow-${var.name}"
  queue_name    = "${var.name_prefix}docflow-${var.name}"
  dlq_name      = "${local.queue_name}-dlq"

  # AWS: visibility timeout >= 6 x function timeout (+ batching window), so a batch that
  # Lambda retries after a throttle is not delivered a second time while it still runs.
  minimum_visibility_timeout_seconds = 6 * var.timeout_seconds + var.maximum_batching_window_seconds
  visibility_timeout_seconds         = var.visibility_timeout_seconds == null ? local.minimum_visibility_timeout_seconds : var.visibility_timeout_seconds

  # A dead letter expires dlq_message_retention_seconds after it entered the source
  # queue; its DLQ age counts from its arrival in the DLQ (alarms.tf).
  dlq_oldest_message_age_alarm_seconds = coalesce(var.dlq_oldest_message_age_alarm_seconds, min(259200, floor((var.dlq_message_retention_seconds - var.message_retention_seconds) / 2)))

  uses_s3              = length(var.s3_read_prefixes) + length(var.s3_write_prefixes) > 0
  s3_read_object_arns  = [for prefix in var.s3_read_prefixes : "${var.documents_bucket_arn}/${prefix}*"]
  s3_write_object_arns = [for prefix in var.s3_write_prefixes : "${var.documents_bucket_arn}/${prefix}*"]

  # Names, ARNs and settings only: credentials are read from the secret at cold start.
  # The derived variables come last, so var.settings cannot override them.
  environment = merge(
    var.settings,
    {
      RUST_LOG          = var.log_level
      DOCFLOW_SECRET_ID = var.secret_arn
      MAX_RECEIVE_COUNT = tostring(var.max_receive_count)
      BATCH_CONCURRENCY = tostring(var.batch_concurrency)

      # The batch runtime's heartbeat never sets less than what is left of it.
      QUEUE_VISIBILITY_TIMEOUT_SECONDS = tostring(local.visibility_timeout_seconds)

      # With the visibility timeout, a lower bound of what is left of a record's
      # visibility: the runtime skips the extension before work when it covers it.
      MAXIMUM_BATCHING_WINDOW_SECONDS = tostring(var.maximum_batching_window_seconds)

      DATABASE_MAX_CONNECTIONS = tostring(var.database_max_connections)

      # The code applies it over the secret URL's sslmode: no downgrade from a secret.
      DATABASE_TLS = var.database_tls

      # The namespace of the EMF metrics the batch runtime writes (docs/operations.md).
      METRICS_NAMESPACE = var.metrics_namespace
    },
    local.uses_s3 ? { DOCUMENTS_BUCKET = var.documents_bucket_name } : {},
    { for env_name, queue in var.sends_to : env_name => queue.url },
    var.tenant_secret_prefixes,
  )
}

data "aws_partition" "current" {}

locals {
  # What the zip was built for, written next to it by `make package`
  # (scripts/package_manifest.py): {"architecture": ..., "bootstrap_zip_sha256": ...}.
  package_manifest_path = "${dirname(var.package_path)}/architecture.json"
  package_manifest      = fileexists(local.package_manifest_path) ? jsondecode(file(local.package_manifest_path)) : null
}

# --- queues ---------------------------------------------------------------------------

resource "aws_sqs_queue" "dlq" {
  name                      = local.dlq_name
  message_retention_seconds = var.dlq_message_retention_seconds

  sqs_managed_sse_enabled           = var.kms_key_arn == null ? true : null
  kms_master_key_id                 = var.kms_key_arn
  kms_data_key_reuse_period_seconds = var.kms_key_arn == null ? null : 300

  tags = var.tags
}

resource "aws_sqs_queue" "source" {
  name                       = local.queue_name
  visibility_timeout_seconds = local.visibility_timeout_seconds
  message_retention_seconds  = var.message_retention_seconds
  receive_wait_time_seconds  = 20

  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.dlq.arn
    maxReceiveCount     = var.max_receive_count
  })

  sqs_managed_sse_enabled           = var.kms_key_arn == null ? true : null
  kms_master_key_id                 = var.kms_key_arn
  kms_data_key_reuse_period_seconds = var.kms_key_arn == null ? null : 300

  tags = var.tags

  lifecycle {
    precondition {
      condition     = local.visibility_timeout_seconds >= local.minimum_visibility_timeout_seconds
      error_message = "The visibility timeout of ${local.queue_name} must be at least 6 x the function timeout + the batching window (${local.minimum_visibility_timeout_seconds} s)."
    }

    precondition {
      condition     = var.dlq_message_retention_seconds > var.message_retention_seconds
      error_message = "The DLQ of ${local.queue_name} must keep messages longer than the queue itself: a message keeps its original enqueue time when it moves to the DLQ."
    }
  }
}

# Only this function's source queue may use the DLQ, and an operator can move messages
# back to it (StartMessageMoveTask).
resource "aws_sqs_queue_redrive_allow_policy" "dlq" {
  queue_url = aws_sqs_queue.dlq.id

  redrive_allow_policy = jsonencode({
    redrivePermission = "byQueue"
    sourceQueueArns   = [aws_sqs_queue.source.arn]
  })
}

# --- function ---------------------------------------------------------------------------

resource "aws_cloudwatch_log_group" "this" {
  #checkov:skip=CKV_AWS_338:operational logs; retention is var.log_retention_days (default 90), the audit trail lives in the database
  name              = "/aws/lambda/${local.function_name}"
  retention_in_days = var.log_retention_days
  kms_key_id        = var.kms_key_arn

  tags = var.tags
}

resource "aws_lambda_function" "this" {
  #checkov:skip=CKV_AWS_116:invoked synchronously by the SQS event source mapping; failed records go to the source queue's DLQ through its redrive policy
  #checkov:skip=CKV_AWS_115:concurrency is capped per queue by the event source mapping's scaling_config.maximum_concurrency
  #checkov:skip=CKV_AWS_272:code signing is not used; the zip is built and deployed by the same pipeline
  function_name = local.function_name
  description   = "docflow ${var.name}: consumes ${local.queue_name}"
  role          = aws_iam_role.this.arn

  filename         = var.package_path
  source_code_hash = filebase64sha256(var.package_path)
  runtime          = "provided.al2023"
  handler          = "bootstrap"
  architectures    = [var.architecture]
  memory_size      = var.memory_mb
  timeout          = var.timeout_seconds
  kms_key_arn      = var.kms_key_arn

  # Every change of code or configuration becomes a numbered, immutable version; the
  # mapping invokes the alias below, so a release is rolled back by moving the alias.
  publish = true

  environment {
    variables = local.environment
  }

  vpc_config {
    subnet_ids         = var.subnet_ids
    security_group_ids = var.security_group_ids
  }

  # X-Ray: Lambda samples and records each invocation; the trace id is on every log line.
  tracing_config {
    mode = "Active"
  }

  tags = var.tags

  # The log group must exist before the first invocation creates it without retention.
  depends_on = [
    aws_cloudwatch_log_group.this,
    aws_iam_role_policy.this,
    aws_iam_role_policy_attachment.vpc_access,
  ]

  lifecycle {
    # CreateFunction accepts a zip of the wrong instruction set; then every cold start
    # fails with an exec format error and every message ends in the DLQ.
    precondition {
      condition     = try(local.package_manifest.architecture == var.architecture && local.package_manifest.bootstrap_zip_sha256 == filesha256(var.package_path), false)
      error_message = "${var.package_path} is recorded as built for ${try(local.package_manifest.architecture, "nothing (no ${local.package_manifest_path})")}${try(local.package_manifest.bootstrap_zip_sha256 == filesha256(var.package_path), false) ? "" : ", or the zip changed since its manifest was written"}; this function runs on ${var.architecture}. Build it with `make package ARCH=${var.architecture}` (which writes the manifest), or set lambda_architecture to match."
    }
  }
}

# What the queue invokes: the version Terraform just published, or var.live_version to
# keep an earlier one (a rollback that survives the next apply). `aws lambda update-alias`
# moves it at once; the next apply moves it back to this value (../../README.md, Rollback).
resource "aws_lambda_alias" "live" {
  name             = var.alias_name
  description      = "The version of ${local.function_name} that ${local.queue_name} invokes"
  function_name    = aws_lambda_function.this.function_name
  function_version = coalesce(var.live_version, aws_lambda_function.this.version)
}

resource "aws_lambda_event_source_mapping" "this" {
  event_source_arn                   = aws_sqs_queue.source.arn
  function_name                      = aws_lambda_alias.live.arn
  batch_size                         = var.batch_size
  maximum_batching_window_in_seconds = var.maximum_batching_window_seconds
  enabled                            = var.enabled

  # Without this Lambda ignores batchItemFailures and retries the whole batch.
  function_response_types = ["ReportBatchItemFailures"]

  scaling_config {
    maximum_concurrency = var.maximum_concurrency
  }

  tags = var.tags

  # Lambda checks the role's SQS permissions when the mapping is created.
  depends_on = [aws_iam_role_policy.this]

  lifecycle {
    precondition {
      condition     = var.batch_size <= 10 || var.maximum_batching_window_seconds >= 1
      error_message = "A batch_size above 10 needs maximum_batching_window_seconds >= 1."
    }
  }
}
