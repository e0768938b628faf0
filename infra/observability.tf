# Metrics, alarms and the dashboard over the EMF lines docflow writes (one per batch and
# function, docflow::telemetry::metrics; docs/operations.md is the runbook). The metric
# names and the `function` dimension are the Rust constants; tests/tests/it/infra_contract.rs
# reads them from the code and checks every alarm and widget here against them.

locals {
  # METRICS_NAMESPACE of every function.
  metrics_namespace = "docflow/${var.environment}"
}

resource "aws_cloudwatch_metric_alarm" "exports_in_doubt" {
  alarm_name        = "${local.name_prefix}docflow-document-output-exports-in-doubt"
  alarm_description = "A DATEV export may or may not have reached DATEV (the worker stopped during the Maesn call, or Maesn answered 5xx/timed out): the job failed and was not exported again. Check in DATEV whether the booking proposal exists before exporting again (docs/operations.md)."

  namespace           = local.metrics_namespace
  metric_name         = "ExportsInDoubt"
  dimensions          = { function = "document-output" }
  statistic           = "Sum"
  period              = 300
  evaluation_periods  = 1
  comparison_operator = "GreaterThanThreshold"
  threshold           = 0
  treat_missing_data  = "notBreaching"

  alarm_actions = [aws_sns_topic.alarms.arn]
  ok_actions    = [aws_sns_topic.alarms.arn]

  tags = local.tags
}

resource "aws_cloudwatch_metric_alarm" "sweeper_given_up" {
  alarm_name        = "${local.name_prefix}docflow-sweeper-given-up"
  alarm_description = "The sweeper gave up on stuck work after SWEEP_MAX_RESENDS re-sends and failed it for good (admins notified). docflow status shows the failed rows; find why the function never finished them (DLQ, errors, timeouts)."

  namespace           = local.metrics_namespace
  metric_name         = "GivenUp"
  dimensions          = { function = "sweeper" }
  statistic           = "Sum"
  period              = 300
  evaluation_periods  = 1
  comparison_operator = "GreaterThanThreshold"
  threshold           = 0
  treat_missing_data  = "notBreaching"

  alarm_actions = [aws_sns_topic.alarms.arn]
  ok_actions    = [aws_sns_topic.alarms.arn]

  tags = local.tags
}

resource "aws_cloudwatch_dashboard" "pipeline" {
  dashboard_name = "${local.name_prefix}docflow-pipeline"

  dashboard_body = jsonencode({
    widgets = [
      {
        type   = "metric"
        x      = 0
        y      = 0
        width  = 12
        height = 6
        properties = {
          title  = "Records per outcome"
          region = var.aws_region
          stat   = "Sum"
          period = 300
          view   = "timeSeries"
          metrics = [
            [local.metrics_namespace, "RecordsReceived", "function", "ingestion"],
            [local.metrics_namespace, "RecordsReceived", "function", "matching"],
            [local.metrics_namespace, "RecordsReceived", "function", "document-output"],
            [local.metrics_namespace, "RecordsDone", "function", "ingestion"],
            [local.metrics_namespace, "RecordsDone", "function", "matching"],
            [local.metrics_namespace, "RecordsDone", "function", "document-output"],
            [local.metrics_namespace, "RecordsRetried", "function", "ingestion"],
            [local.metrics_namespace, "RecordsRetried", "function", "matching"],
            [local.metrics_namespace, "RecordsRetried", "function", "document-output"],
            [local.metrics_namespace, "RecordsReleased", "function", "ingestion"],
            [local.metrics_namespace, "RecordsReleased", "function", "matching"],
            [local.metrics_namespace, "RecordsReleased", "function", "document-output"],
            [local.metrics_namespace, "RecordsDiscarded", "function", "ingestion"],
            [local.metrics_namespace, "RecordsDiscarded", "function", "matching"],
            [local.metrics_namespace, "RecordsDiscarded", "function", "document-output"],
          ]
        }
      },
      {
        type   = "metric"
        x      = 12
        y      = 0
        width  = 12
        height = 6
        properties = {
          title  = "Failed for good, panics, deadline cut-offs"
          region = var.aws_region
          stat   = "Sum"
          period = 300
          view   = "timeSeries"
          metrics = [
            [local.metrics_namespace, "RecordsFailedPermanently", "function", "ingestion"],
            [local.metrics_namespace, "RecordsFailedPermanently", "function", "matching"],
            [local.metrics_namespace, "RecordsFailedPermanently", "function", "document-output"],
            [local.metrics_namespace, "RecordPanics", "function", "ingestion"],
            [local.metrics_namespace, "RecordPanics", "function", "matching"],
            [local.metrics_namespace, "RecordPanics", "function", "document-output"],
            [local.metrics_namespace, "RecordsCutOffAtDeadline", "function", "ingestion"],
            [local.metrics_namespace, "RecordsCutOffAtDeadline", "function", "matching"],
            [local.metrics_namespace, "RecordsCutOffAtDeadline", "function", "document-output"],
          ]
        }
      },
      {
        type   = "metric"
        x      = 0
        y      = 6
        width  = 12
        height = 6
        properties = {
          title  = "How long documents wait (oldest record age, s)"
          region = var.aws_region
          stat   = "Maximum"
          period = 300
          view   = "timeSeries"
          metrics = [
            [local.metrics_namespace, "OldestRecordAge", "function", "ingestion"],
            [local.metrics_namespace, "OldestRecordAge", "function", "matching"],
            [local.metrics_namespace, "OldestRecordAge", "function", "document-output"],
            ["AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", module.ingestion.queue_name],
            ["AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", module.matching.queue_name],
            ["AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", module.document_output.queue_name],
          ]
        }
      },
      {
        type   = "metric"
        x      = 12
        y      = 6
        width  = 12
        height = 6
        properties = {
          title  = "Record duration p90 (ms)"
          region = var.aws_region
          stat   = "p90"
          period = 300
          view   = "timeSeries"
          metrics = [
            [local.metrics_namespace, "RecordDuration", "function", "ingestion"],
            [local.metrics_namespace, "RecordDuration", "function", "matching"],
            [local.metrics_namespace, "RecordDuration", "function", "document-output"],
          ]
        }
      },
      {
        type   = "metric"
        x      = 0
        y      = 12
        width  = 12
        height = 6
        properties = {
          title  = "DATEV exports and notifications"
          region = var.aws_region
          stat   = "Sum"
          period = 300
          view   = "timeSeries"
          metrics = [
            [local.metrics_namespace, "ExportsDispatched", "function", "document-output"],
            [local.metrics_namespace, "ExportsFailed", "function", "document-output"],
            [local.metrics_namespace, "ExportsInDoubt", "function", "document-output"],
            [local.metrics_namespace, "NotificationsFailed", "function", "matching"],
            [local.metrics_namespace, "NotificationsFailed", "function", "document-output"],
            [local.metrics_namespace, "NotificationsFailed", "function", "sweeper"],
          ]
        }
      },
      {
        type   = "metric"
        x      = 12
        y      = 12
        width  = 12
        height = 6
        properties = {
          title  = "Sweeper"
          region = var.aws_region
          stat   = "Sum"
          period = 300
          view   = "timeSeries"
          metrics = [
            [local.metrics_namespace, "StuckFound", "function", "sweeper"],
            [local.metrics_namespace, "Resent", "function", "sweeper"],
            [local.metrics_namespace, "GivenUp", "function", "sweeper"],
            [local.metrics_namespace, "TasksPolled", "function", "sweeper"],
          ]
        }
      },
      {
        type   = "metric"
        x      = 0
        y      = 18
        width  = 24
        height = 6
        properties = {
          title  = "Lambda errors and throttles, DLQ depth"
          region = var.aws_region
          stat   = "Sum"
          period = 300
          view   = "timeSeries"
          metrics = [
            ["AWS/Lambda", "Errors", "FunctionName", module.ingestion.function_name],
            ["AWS/Lambda", "Errors", "FunctionName", module.matching.function_name],
            ["AWS/Lambda", "Errors", "FunctionName", module.document_output.function_name],
            ["AWS/Lambda", "Errors", "FunctionName", aws_lambda_function.sweeper.function_name],
            ["AWS/Lambda", "Throttles", "FunctionName", module.ingestion.function_name],
            ["AWS/Lambda", "Throttles", "FunctionName", module.matching.function_name],
            ["AWS/Lambda", "Throttles", "FunctionName", module.document_output.function_name],
            ["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", module.ingestion.dlq_name],
            ["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", module.matching.dlq_name],
            ["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", module.document_output.dlq_name],
          ]
        }
      },
      {
        type   = "metric"
        x      = 0
        y      = 24
        width  = 24
        height = 8
        properties = {
          # StageDuration (docs/operations.md): which step of a record got slow.
          title  = "Where a record's time goes: p90 per stage (ms)"
          region = var.aws_region
          stat   = "p90"
          period = 300
          view   = "timeSeries"
          metrics = [
            [local.metrics_namespace, "StageDuration", "function", "ingestion", "stage", "claim"],
            [local.metrics_namespace, "StageDuration", "function", "ingestion", "stage", "fetch"],
            [local.metrics_namespace, "StageDuration", "function", "ingestion", "stage", "transcribe"],
            [local.metrics_namespace, "StageDuration", "function", "ingestion", "stage", "store_transcription"],
            [local.metrics_namespace, "StageDuration", "function", "ingestion", "stage", "extract"],
            [local.metrics_namespace, "StageDuration", "function", "ingestion", "stage", "complete"],
            [local.metrics_namespace, "StageDuration", "function", "ingestion", "stage", "hand_off"],
            [local.metrics_namespace, "StageDuration", "function", "matching", "stage", "claim"],
            [local.metrics_namespace, "StageDuration", "function", "matching", "stage", "normalize"],
            [local.metrics_namespace, "StageDuration", "function", "matching", "stage", "candidates"],
            [local.metrics_namespace, "StageDuration", "function", "matching", "stage", "decide"],
            [local.metrics_namespace, "StageDuration", "function", "matching", "stage", "write"],
            [local.metrics_namespace, "StageDuration", "function", "document-output", "stage", "claim"],
            [local.metrics_namespace, "StageDuration", "function", "document-output", "stage", "extend_visibility"],
            [local.metrics_namespace, "StageDuration", "function", "document-output", "stage", "checks"],
            [local.metrics_namespace, "StageDuration", "function", "document-output", "stage", "read_file"],
            [local.metrics_namespace, "StageDuration", "function", "document-output", "stage", "audit"],
            [local.metrics_namespace, "StageDuration", "function", "document-output", "stage", "maesn"],
            [local.metrics_namespace, "StageDuration", "function", "document-output", "stage", "complete"],
          ]
        }
      },
    ]
  })
}
