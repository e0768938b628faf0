# The sweeper: on a schedule, re-sends messages for work that was committed but whose
# message was lost or whose worker died. Idempotent (the functions' claims make a second
# message harmless), so a failed run is simply superseded by the next one.

locals {
  sweeper_name = "${local.name_prefix}docflow-sweeper"
  # Where document output reads each tenant's Maesn account key; the sweeper reads the
  # same secrets to poll open DATEV tasks.
  datev_credentials_prefix = "${local.name_prefix}docflow/datev/"

  # The schedule's interval in seconds for rate(N unit) expressions; null for cron(...),
  # which the sweeper alarms treat as "at least hourly" (README.md).
  sweeper_rate = try(regex("^rate\\(([0-9]+) (minutes?|hours?|days?)\\)$", var.sweeper_schedule_expression), null)
  sweeper_interval_seconds = local.sweeper_rate == null ? null : tonumber(local.sweeper_rate[0]) * lookup({
    minute = 60, minutes = 60, hour = 3600, hours = 3600, day = 86400, days = 86400
  }, local.sweeper_rate[1])
  # One alarm period holds at least one scheduled run (and never less than 15 minutes).
  sweeper_alarm_period_seconds = local.sweeper_interval_seconds == null ? 3600 : max(900, ceil(local.sweeper_interval_seconds / 60) * 60)
  sweeper_timeout_seconds      = 120

  # What the zip was built for (see modules/queue-function/main.tf).
  sweeper_package_path     = "${var.lambda_package_dir}/sweeper/bootstrap.zip"
  sweeper_package_manifest = fileexists("${var.lambda_package_dir}/sweeper/architecture.json") ? jsondecode(file("${var.lambda_package_dir}/sweeper/architecture.json")) : null
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
    resources = [aws_secretsmanager_secret.sweeper.arn]
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
    for_each = length(local.ses_send_arns) > 0 ? [local.ses_send_arns] : []

    content {
      sid       = "SendNotificationEmail"
      actions   = ["ses:SendEmail"]
      resources = statement.value
    }
  }

  # The key only through the services that encrypt with it for the sweeper: the queues
  # it sends to, the secrets, its environment.
  dynamic "statement" {
    for_each = var.kms_key_arn == null ? [] : [[var.kms_key_arn]]

    content {
      sid       = "UseDataKey"
      actions   = ["kms:Decrypt", "kms:GenerateDataKey"]
      resources = statement.value

      condition {
        test     = "StringEquals"
        variable = "kms:ViaService"
        values   = [for service in ["sqs", "secretsmanager", "lambda"] : "${service}.${data.aws_region.current.name}.amazonaws.com"]
      }
    }
  }

  # Lambda creates the sweeper's network interfaces with this role; the managed policy
  # below lacks ec2:DescribeSubnets. EC2 Describe actions take no resource ARNs.
  statement {
    sid       = "DescribeVpcSubnets"
    actions   = ["ec2:DescribeSubnets"]
    resources = ["*"]
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
  #checkov:skip=CKV_AWS_115:no reserved concurrency: a new account's 10 concurrent executions cannot spare it, and a precondition keeps the schedule's interval above the timeout, so sweeps cannot overlap
  function_name = local.sweeper_name
  description   = "docflow sweeper: re-enqueues stale ingestions, matchings and output jobs"
  role          = aws_iam_role.sweeper.arn

  filename         = local.sweeper_package_path
  source_code_hash = filebase64sha256(local.sweeper_package_path)
  runtime          = "provided.al2023"
  handler          = "bootstrap"
  architectures    = [var.lambda_architecture]
  memory_size      = 256
  timeout          = local.sweeper_timeout_seconds
  kms_key_arn      = var.kms_key_arn

  # Numbered, immutable versions; the schedule invokes the alias below, so a release is
  # rolled back by moving the alias (README.md, Rollback).
  publish = true

  # No reserved concurrency: Lambda refuses a reservation that leaves less
  # than its minimum unreserved, which a new account (10 concurrent executions) cannot
  # spare. Sweeps cannot overlap anyway: the schedule's interval is longer than the
  # timeout (precondition below) and a failed sweep is not retried.

  environment {
    variables = merge(local.notify_settings, {
      RUST_LOG                  = var.log_level
      DOCFLOW_SECRET_ID         = aws_secretsmanager_secret.sweeper.arn
      INGESTION_QUEUE_URL       = module.ingestion.queue_url
      MATCHING_QUEUE_URL        = module.matching.queue_url
      DOCUMENT_OUTPUT_QUEUE_URL = module.document_output.queue_url
      DATABASE_MAX_CONNECTIONS  = tostring(var.database_max_connections)
      DATABASE_TLS              = var.database_tls
      # Thresholds are derived from these (docs/sweeper.md), so they follow the queues.
      INGESTION_QUEUE_VISIBILITY_SECONDS       = tostring(module.ingestion.visibility_timeout_seconds)
      MATCHING_QUEUE_VISIBILITY_SECONDS        = tostring(module.matching.visibility_timeout_seconds)
      DOCUMENT_OUTPUT_QUEUE_VISIBILITY_SECONDS = tostring(module.document_output.visibility_timeout_seconds)
      STALE_INGESTION_SECONDS                  = tostring(var.stale_ingestion_seconds)
      STALE_RUNNING_SECONDS                    = tostring(var.stale_running_seconds)
      SWEEP_MAX_TASK_AGE_SECONDS               = tostring(var.max_datev_task_age_hours * 3600)
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

  lifecycle {
    precondition {
      condition     = try(local.sweeper_package_manifest.architecture == var.lambda_architecture && local.sweeper_package_manifest.bootstrap_zip_sha256 == filesha256(local.sweeper_package_path), false)
      error_message = "${local.sweeper_package_path} is recorded as built for ${try(local.sweeper_package_manifest.architecture, "nothing (no architecture.json next to it)")}${try(local.sweeper_package_manifest.bootstrap_zip_sha256 == filesha256(local.sweeper_package_path), false) ? "" : ", or the zip changed since its manifest was written"}; the functions run on ${var.lambda_architecture}. Build with `make package ARCH=${var.lambda_architecture}` (which writes the manifest), or set lambda_architecture to match."
    }

    precondition {
      condition     = local.sweeper_interval_seconds == null || try(local.sweeper_interval_seconds > local.sweeper_timeout_seconds, false)
      error_message = "sweeper_schedule_expression must run the sweeper less often than its ${local.sweeper_timeout_seconds} s timeout, so that two sweeps never overlap (it has no reserved concurrency)."
    }

    precondition {
      condition     = local.sweeper_interval_seconds == null || try(local.sweeper_interval_seconds <= 3600, false)
      error_message = "sweeper_schedule_expression must run the sweeper at least hourly: the not-invoked alarm looks at 3 periods of one run each, and lost messages wait for it."
    }
  }
}

# What the schedule invokes: the version this apply publishes, or live_versions["sweeper"]
# to keep an earlier one. `aws lambda update-alias` moves it at once (README.md, Rollback).
resource "aws_lambda_alias" "sweeper_live" {
  name             = "live"
  description      = "The version of ${local.sweeper_name} that its schedule invokes"
  function_name    = aws_lambda_function.sweeper.function_name
  function_version = coalesce(lookup(var.live_versions, "sweeper", null), aws_lambda_function.sweeper.version)
}

# EventBridge invokes asynchronously; do not let Lambda retry a failed sweep later,
# the next scheduled run does the same work with fresh data. Asynchronous settings are
# kept per version or alias: these are the alias's, which the schedule invokes.
resource "aws_lambda_function_event_invoke_config" "sweeper" {
  function_name                = aws_lambda_function.sweeper.function_name
  qualifier                    = aws_lambda_alias.sweeper_live.name
  maximum_retry_attempts       = 0
  maximum_event_age_in_seconds = 60
}

resource "aws_cloudwatch_event_rule" "sweeper" {
  name                = local.sweeper_name
  description         = "Runs the docflow sweeper"
  schedule_expression = var.sweeper_schedule_expression
  # Off until the secret is filled and the schema migrated (consumers_enabled, README.md).
  state = var.consumers_enabled ? "ENABLED" : "DISABLED"
}

resource "aws_cloudwatch_event_target" "sweeper" {
  rule = aws_cloudwatch_event_rule.sweeper.name
  arn  = aws_lambda_alias.sweeper_live.arn
}

# A permission on the alias (qualifier) admits invocations of the alias ARN, which is
# what the target calls; one on the unqualified function would not.
resource "aws_lambda_permission" "sweeper_schedule" {
  statement_id  = "AllowEventBridgeSchedule"
  action        = "lambda:InvokeFunction"
  function_name = aws_lambda_function.sweeper.function_name
  qualifier     = aws_lambda_alias.sweeper_live.name
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

# A sweeper that never runs raises no error: the errors alarm above reads 0 % when
# EventBridge never invokes it (rule disabled or deleted, permission missing, function
# throttled before it starts). Fewer than one invocation in each of 3 periods, each long
# enough to hold a scheduled run, with missing data counted as breaching, is that case.
# Armed only while consumers are enabled: a first apply leaves the schedule off.
resource "aws_cloudwatch_metric_alarm" "sweeper_not_invoked" {
  alarm_name        = "${local.sweeper_name}-not-invoked"
  alarm_description = "The sweeper was not invoked in 3 consecutive periods of ${local.sweeper_alarm_period_seconds} s: lost messages are not being re-sent. Check the rule ${local.sweeper_name} (enabled? target?), its FailedInvocations and the function's throttles."

  namespace           = "AWS/Lambda"
  metric_name         = "Invocations"
  dimensions          = { FunctionName = aws_lambda_function.sweeper.function_name }
  statistic           = "Sum"
  period              = local.sweeper_alarm_period_seconds
  evaluation_periods  = 3
  datapoints_to_alarm = 3
  comparison_operator = "LessThanThreshold"
  threshold           = 1
  treat_missing_data  = "breaching"

  # No actions while the schedule is off (first apply): nothing to page about yet.
  alarm_actions = var.consumers_enabled ? [aws_sns_topic.alarms.arn] : []
  ok_actions    = var.consumers_enabled ? [aws_sns_topic.alarms.arn] : []
}

# EventBridge could not invoke the sweeper (permission removed, alias or function deleted,
# throttled): the rule counts each failed delivery.
resource "aws_cloudwatch_metric_alarm" "sweeper_schedule_failed" {
  alarm_name        = "${local.sweeper_name}-schedule-failed-invocations"
  alarm_description = "EventBridge failed to invoke the sweeper from rule ${local.sweeper_name}: check the resource policy of the alias live (AllowEventBridgeSchedule), that the alias and the function exist, and its throttles."

  namespace           = "AWS/Events"
  metric_name         = "FailedInvocations"
  dimensions          = { RuleName = aws_cloudwatch_event_rule.sweeper.name }
  statistic           = "Sum"
  period              = 300
  evaluation_periods  = 1
  comparison_operator = "GreaterThanThreshold"
  threshold           = 0
  treat_missing_data  = "notBreaching"

  alarm_actions = [aws_sns_topic.alarms.arn]
  ok_actions    = [aws_sns_topic.alarms.arn]
}

# A DATEV task nobody ends: the poll gives up on a task after
# max_datev_task_age_hours and tells the admins, but a task that old means Maesn or the
# poll is not working for someone. The sweeper writes the age of the oldest open task after
# every poll (OldestOpenTaskAge); this fires at half the give-up age, while there is still
# time to look before the audit ends "check DATEV".
resource "aws_cloudwatch_metric_alarm" "sweeper_oldest_open_task" {
  alarm_name        = "${local.sweeper_name}-oldest-open-datev-task"
  alarm_description = "A DATEV export task has been open for more than ${var.max_datev_task_age_hours / 2} h (given up at ${var.max_datev_task_age_hours} h as failed, check DATEV). Find it with: SELECT id, document_id, task_id, status, created_at FROM ap_datev_export_audit WHERE task_id IS NOT NULL AND status IN ('submitted', 'in_progress') ORDER BY created_at; then docflow status <document-id> and the sweeper's logs (docs/operations.md)."

  namespace           = local.metrics_namespace
  metric_name         = "OldestOpenTaskAge"
  dimensions          = { function = "sweeper" }
  statistic           = "Maximum"
  period              = local.sweeper_alarm_period_seconds
  evaluation_periods  = 1
  comparison_operator = "GreaterThanThreshold"
  threshold           = var.max_datev_task_age_hours * 3600 / 2
  treat_missing_data  = "notBreaching"

  alarm_actions = [aws_sns_topic.alarms.arn]
  ok_actions    = [aws_sns_topic.alarms.arn]

  tags = local.tags
}
