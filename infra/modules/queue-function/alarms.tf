# Six alarms per function, all to var.alarm_topic_arn (alarm and OK). The README's
# "Alarms" section says what each one means and what to do.

# New arrivals in the DLQ, not its depth: an alarm on "DLQ not empty" stays in ALARM
# while old messages wait there, so a second failure would page no one. SQS does not
# count messages that a redrive policy moves as NumberOfMessagesSent to the DLQ, so the
# alarm watches the depth's increase: DIFF of ApproximateNumberOfMessagesVisible between
# consecutive periods is above 0 exactly when messages arrived faster than they left.
# SQS publishes no datapoint for a queue that has been inactive (empty, not called) for
# six hours, which a healthy DLQ always is: without FILL the first arrival after such a
# quiet spell has no earlier point, DIFF returns nothing and the alarm stays OK. FILL
# turns the missing points into 0, so the first dead letter is a growth from 0.
resource "aws_cloudwatch_metric_alarm" "dlq_new_messages" {
  alarm_name        = "${local.dlq_name}-new-messages"
  alarm_description = "New messages of ${local.queue_name} exhausted ${var.max_receive_count} receives and arrived in ${local.dlq_name} (its depth grew in 5 minutes). Inspect them (docflow dlq) and redrive or discard."

  metric_query {
    id          = "arrivals"
    expression  = "DIFF(FILL(visible, 0))"
    label       = "Growth of the DLQ's visible messages per 5 minutes"
    return_data = true
  }
  metric_query {
    id = "visible"
    metric {
      namespace   = "AWS/SQS"
      metric_name = "ApproximateNumberOfMessagesVisible"
      dimensions  = { QueueName = aws_sqs_queue.dlq.name }
      stat        = "Maximum"
      period      = 300
    }
  }

  evaluation_periods  = 1
  comparison_operator = "GreaterThanThreshold"
  threshold           = 0
  treat_missing_data  = "notBreaching"

  alarm_actions = [var.alarm_topic_arn]
  ok_actions    = [var.alarm_topic_arn]

  tags = var.tags
}

# Dead letters nobody handled. The new-messages alarm pages once per arrival and returns
# to OK; this one stays in ALARM while a message waits in the DLQ longer than
# local.dlq_oldest_message_age_alarm_seconds (3 days by default), long before SQS expires
# it. SQS keeps a dead letter's original enqueue time, so it expires
# dlq_message_retention_seconds (14 days) after it entered the source queue, while the
# DLQ's ApproximateAgeOfOldestMessage counts from its arrival in the DLQ: the
# precondition keeps the threshold plus the source queue's retention (7 days) below the
# DLQ's retention, so even a message that waited out the whole source retention still
# has days left when this fires (3 + 7 < 14: at least 4 days; typically 11).
resource "aws_cloudwatch_metric_alarm" "dlq_oldest_message_age" {
  alarm_name        = "${local.dlq_name}-oldest-message-age"
  alarm_description = "A message has waited in ${local.dlq_name} for more than ${local.dlq_oldest_message_age_alarm_seconds / 3600} h. SQS deletes it ${var.dlq_message_retention_seconds / 86400} days after it first entered ${local.queue_name}: inspect it (docflow dlq list), then redrive (docflow dlq redrive) or discard it before then."

  namespace           = "AWS/SQS"
  metric_name         = "ApproximateAgeOfOldestMessage"
  dimensions          = { QueueName = aws_sqs_queue.dlq.name }
  statistic           = "Maximum"
  period              = 300
  evaluation_periods  = 1
  comparison_operator = "GreaterThanThreshold"
  threshold           = local.dlq_oldest_message_age_alarm_seconds
  treat_missing_data  = "notBreaching"

  alarm_actions = [var.alarm_topic_arn]
  ok_actions    = [var.alarm_topic_arn]

  tags = var.tags

  lifecycle {
    precondition {
      condition     = local.dlq_oldest_message_age_alarm_seconds + var.message_retention_seconds < var.dlq_message_retention_seconds
      error_message = "dlq_oldest_message_age_alarm_seconds (${local.dlq_oldest_message_age_alarm_seconds} s) plus the source queue's retention (${var.message_retention_seconds} s) must stay below the DLQ's retention (${var.dlq_message_retention_seconds} s): a dead letter expires that long after it entered the source queue, so a later alarm could fire after the message is gone."
    }
  }
}

resource "aws_cloudwatch_metric_alarm" "oldest_message_age" {
  alarm_name        = "${local.queue_name}-oldest-message-age"
  alarm_description = "The oldest message of ${local.queue_name} is older than ${var.oldest_message_age_alarm_seconds} s: the function is failing, throttled or too slow for the load."

  namespace           = "AWS/SQS"
  metric_name         = "ApproximateAgeOfOldestMessage"
  dimensions          = { QueueName = aws_sqs_queue.source.name }
  statistic           = "Maximum"
  period              = 300
  evaluation_periods  = 2
  comparison_operator = "GreaterThanThreshold"
  threshold           = var.oldest_message_age_alarm_seconds
  treat_missing_data  = "notBreaching"

  alarm_actions = [var.alarm_topic_arn]
  ok_actions    = [var.alarm_topic_arn]

  tags = var.tags

  lifecycle {
    precondition {
      condition     = var.oldest_message_age_alarm_seconds < var.message_retention_seconds
      error_message = "oldest_message_age_alarm_seconds must be below the queue's retention, or messages expire before the alarm fires."
    }
  }
}

resource "aws_cloudwatch_metric_alarm" "errors" {
  alarm_name        = "${local.function_name}-errors"
  alarm_description = "More than ${var.error_rate_alarm_percent} % of the invocations of ${local.function_name} in 5 minutes failed as a whole (crash, timeout, handler error): those batches return to the queue."

  # An error rate (metric math), not a count: Errors / Invocations in percent. A period
  # without invocations is 0 %, not missing data.
  metric_query {
    id          = "error_rate"
    expression  = "IF(invocations > 0, 100 * errors / invocations, 0)"
    label       = "Invocation error rate (%)"
    return_data = true
  }
  metric_query {
    id = "errors"
    metric {
      namespace   = "AWS/Lambda"
      metric_name = "Errors"
      dimensions  = { FunctionName = aws_lambda_function.this.function_name }
      stat        = "Sum"
      period      = 300
    }
  }
  metric_query {
    id = "invocations"
    metric {
      namespace   = "AWS/Lambda"
      metric_name = "Invocations"
      dimensions  = { FunctionName = aws_lambda_function.this.function_name }
      stat        = "Sum"
      period      = 300
    }
  }

  evaluation_periods  = 1
  comparison_operator = "GreaterThanThreshold"
  threshold           = var.error_rate_alarm_percent
  treat_missing_data  = "notBreaching"

  alarm_actions = [var.alarm_topic_arn]
  ok_actions    = [var.alarm_topic_arn]

  tags = var.tags
}

resource "aws_cloudwatch_metric_alarm" "throttles" {
  alarm_name        = "${local.function_name}-throttles"
  alarm_description = "Invocations of ${local.function_name} were throttled. Each throttled receive counts toward maxReceiveCount and can send healthy messages to the DLQ."

  namespace           = "AWS/Lambda"
  metric_name         = "Throttles"
  dimensions          = { FunctionName = aws_lambda_function.this.function_name }
  statistic           = "Sum"
  period              = 300
  evaluation_periods  = 1
  comparison_operator = "GreaterThanThreshold"
  threshold           = 0
  treat_missing_data  = "notBreaching"

  alarm_actions = [var.alarm_topic_arn]
  ok_actions    = [var.alarm_topic_arn]

  tags = var.tags
}

# From the EMF line the batch runtime writes per batch (docflow::telemetry::metrics):
# work the function failed for good, recorded in the database and its message deleted.
resource "aws_cloudwatch_metric_alarm" "permanent_failures" {
  alarm_name        = "${local.function_name}-permanent-failures"
  alarm_description = "${var.name} failed work for good (recorded in the database, message deleted): a document or export needs a human. docflow status; the function's logs (RecordsFailedPermanently, error lines) say why."

  namespace           = var.metrics_namespace
  metric_name         = "RecordsFailedPermanently"
  dimensions          = { function = var.name }
  statistic           = "Sum"
  period              = 300
  evaluation_periods  = 1
  comparison_operator = "GreaterThanThreshold"
  threshold           = 0
  treat_missing_data  = "notBreaching"

  alarm_actions = [var.alarm_topic_arn]
  ok_actions    = [var.alarm_topic_arn]

  tags = var.tags
}
