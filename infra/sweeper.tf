# The sweeper: on a schedule, re-sends messages for work that was committed but whose
# message was lost or whose worker died. Idempotent (the functions' claims make a second
# message harmless), so a failed run is simply superseded by the next one.

locals {
  sweeper_name = "${local.name_prefix}docflow-sweeper"
  # Where document output reads each tenant's Maesn account key; the sweeper reads the
  # same secrets to poll open DATEV tasks.
  datev_credentials_prefix = "${local.name_prefix}docflow/datev/"
}

data "aws_region" "current" {}

data "aws_caller_identity" "current" {}

resource "aws_cloudwatch_log_group" "sweeper" {
  #checkov:skip=CKV_AWS_338:operational logs; retention is var.log_retention_days (default 90), the audit trail lives in the database
  name              = "/aws/lambda/${local.sweeper_name}"
  retention_in_days = var.log_retention_days
  kms_key_id        = var.kms_key_arn
}

data "aws_iam_policy_document" "sweeper_assume_role" {
  statement {
    sid     = "LambdaAssumesRole"
    actions = ["sts:AssumeRole"]

    principals {
      type        = "Service"
      identifiers = ["lambda.amazonaws.com"]
    }
  }
}

resource "aws_iam_role" "sweeper" {
  name               = "${local.sweeper_name}-function"
  description        = "Execution role of the docflow sweeper function"
  assume_role_policy = data.aws_iam_policy_document.sweeper_assume_role.json
}

data "aws_iam_policy_document" "sweeper" {
  statement {
    sid     = "ResendToWorkQueues"
    actions = ["sqs:SendMessage"]
    resources = [
      module.ingestion.queue_arn,
      module.matching.queue_arn,
      module.document_output.queue_arn,
    ]
  }

  statement {
    sid       = "ReadAppSecret"
    actions   = ["secretsmanager:GetSecretValue"]
    resources = [aws_secretsmanager_secret.app.arn]
  }

  # Polling a tenant's open DATEV tasks needs its Maesn account key: <prefix><tenant id>,
  # with the suffix Secrets Manager appends (hence the trailing *, scoped to the prefix).
  statement {
    sid       = "ReadTenantSecrets"
    actions   = ["secretsmanager:GetSecretValue"]
    resources = ["arn:${data.aws_partition.current.partition}:secretsmanager:${data.aws_region.current.name}:${data.aws_caller_identity.current.account_id}:secret:${local.datev_credentials_prefix}*"]
  }

  statement {
    sid       = "WriteOwnLogs"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.sweeper.arn}:*"]
  }

  # Active tracing; X-Ray has no resource-level permissions for these two actions.
  statement {
    sid       = "WriteTraces"
    actions   = ["xray:PutTraceSegments", "xray:PutTelemetryRecords"]
    resources = ["*"]
  }

  # Give-ups and failed DATEV exports are notified to the admins like matching's failures.
  dynamic "statement" {
    for_each = var.ses_identity_arn == null ? [] : [[var.ses_identity_arn]]

    content {
      sid       = "SendNotificationEmail"
      actions   = ["ses:SendEmail"]
      resources = statement.value
    }
  }

  dynamic "statement" {
    for_each = var.kms_key_arn == null ? [] : [[var.kms_key_arn]]

    content {
      sid       = "UseDataKey"
      actions   = ["kms:Decrypt", "kms:GenerateDataKey"]
      resources = statement.value
    }
  }
}

resource "aws_iam_role_policy" "sweeper" {
  name   = "${local.sweeper_name}-least-privilege"
  role   = aws_iam_role.sweeper.id
  policy = data.aws_iam_policy_document.sweeper.json
}

resource "aws_iam_role_policy_attachment" "sweeper_vpc_access" {
  role       = aws_iam_role.sweeper.name
  policy_arn = "arn:${data.aws_partition.current.partition}:iam::aws:policy/service-role/AWSLambdaENIManagementAccess"
}

data "aws_partition" "current" {}

resource "aws_lambda_function" "sweeper" {
  #checkov:skip=CKV_AWS_116:scheduled and idempotent: a failed run is not retried (see the invoke config) but superseded by the next scheduled run
  #checkov:skip=CKV_AWS_272:code signing is not used; the zip is built and deployed by the same pipeline
  function_name = local.sweeper_name
  description   = "docflow sweeper: re-enqueues stale ingestions, matchings and output jobs"
  role          = aws_iam_role.sweeper.arn

  filename         = "${var.lambda_package_dir}/sweeper/bootstrap.zip"
  source_code_hash = filebase64sha256("${var.lambda_package_dir}/sweeper/bootstrap.zip")
  runtime          = "provided.al2023"
  handler          = "bootstrap"
  architectures    = [var.lambda_architecture]
  memory_size      = 256
  timeout          = 120
  kms_key_arn      = var.kms_key_arn

  # One sweep at a time: overlapping sweeps would only send duplicate messages.
  reserved_concurrent_executions = 1

  environment {
    variables = merge(local.notify_settings, {
      RUST_LOG                  = var.log_level
      DOCFLOW_SECRET_ID         = aws_secretsmanager_secret.app.arn
      INGESTION_QUEUE_URL       = module.ingestion.queue_url
      MATCHING_QUEUE_URL        = module.matching.queue_url
      DOCUMENT_OUTPUT_QUEUE_URL = module.document_output.queue_url
      DATABASE_MAX_CONNECTIONS  = tostring(var.database_max_connections)
      # Thresholds are derived from these (docs/sweeper.md), so they follow the queues.
      INGESTION_QUEUE_VISIBILITY_SECONDS       = tostring(module.ingestion.visibility_timeout_seconds)
      MATCHING_QUEUE_VISIBILITY_SECONDS        = tostring(module.matching.visibility_timeout_seconds)
      DOCUMENT_OUTPUT_QUEUE_VISIBILITY_SECONDS = tostring(module.document_output.visibility_timeout_seconds)
      STALE_INGESTION_SECONDS                  = tostring(var.stale_ingestion_seconds)
      STALE_RUNNING_SECONDS                    = tostring(var.stale_running_seconds)
      DATEV_CREDENTIALS_PREFIX                 = local.datev_credentials_prefix
      METRICS_NAMESPACE                        = local.metrics_namespace
    })
  }

  vpc_config {
    subnet_ids         = var.subnet_ids
    security_group_ids = [aws_security_group.functions.id]
  }

  tracing_config {
    mode = "Active"
  }

  depends_on = [
    aws_cloudwatch_log_group.sweeper,
    aws_iam_role_policy.sweeper,
    aws_iam_role_policy_attachment.sweeper_vpc_access,
  ]
}

# EventBridge invokes asynchronously; do not let Lambda retry a failed sweep later,
# the next scheduled run does the same work with fresh data.
resource "aws_lambda_function_event_invoke_config" "sweeper" {
  function_name                = aws_lambda_function.sweeper.function_name
  maximum_retry_attempts       = 0
  maximum_event_age_in_seconds = 60
}

resource "aws_cloudwatch_event_rule" "sweeper" {
  name                = local.sweeper_name
  description         = "Runs the docflow sweeper"
  schedule_expression = var.sweeper_schedule_expression
}

resource "aws_cloudwatch_event_target" "sweeper" {
  rule = aws_cloudwatch_event_rule.sweeper.name
  arn  = aws_lambda_function.sweeper.arn
}

resource "aws_lambda_permission" "sweeper_schedule" {
  statement_id  = "AllowEventBridgeSchedule"
  action        = "lambda:InvokeFunction"
  function_name = aws_lambda_function.sweeper.function_name
  principal     = "events.amazonaws.com"
  source_arn    = aws_cloudwatch_event_rule.sweeper.arn
}

resource "aws_cloudwatch_metric_alarm" "sweeper_errors" {
  alarm_name        = "${local.sweeper_name}-errors"
  alarm_description = "Sweeps failed in two consecutive 15-minute periods (error rate above 0 %): lost messages are not being re-sent. Check its logs and the database connection."

  # The same rate as the queue functions' errors alarms (Errors / Invocations). The
  # sweeper runs on a fixed schedule, so any failed sweep counts.
  metric_query {
    id          = "error_rate"
    expression  = "IF(invocations > 0, 100 * errors / invocations, 0)"
    label       = "Sweep error rate (%)"
    return_data = true
  }
  metric_query {
    id = "errors"
    metric {
      namespace   = "AWS/Lambda"
      metric_name = "Errors"
      dimensions  = { FunctionName = aws_lambda_function.sweeper.function_name }
      stat        = "Sum"
      period      = 900
    }
  }
  metric_query {
    id = "invocations"
    metric {
      namespace   = "AWS/Lambda"
      metric_name = "Invocations"
      dimensions  = { FunctionName = aws_lambda_function.sweeper.function_name }
      stat        = "Sum"
      period      = 900
    }
  }

  evaluation_periods  = 2
  comparison_operator = "GreaterThanThreshold"
  threshold           = 0
  treat_missing_data  = "notBreaching"

  alarm_actions = [aws_sns_topic.alarms.arn]
  ok_actions    = [aws_sns_topic.alarms.arn]
}
