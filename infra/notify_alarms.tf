# Admin notifications that reached no one. docflow::notify logs every channel that still
# failed after its retries at error level with the JSON field `notification_failed = true`;
# a metric filter on the log group of each function that notifies admins turns those
# lines into one metric, and one alarm watches its sum. The README's "Alarms" section
# says what to do.

locals {
  # Functions that call docflow::notify::Notifier.
  notifying_log_groups = {
    matching        = module.matching.log_group_name
    document-output = module.document_output.log_group_name
    sweeper         = aws_cloudwatch_log_group.sweeper.name
  }
  notification_metric_namespace = "docflow/${var.environment}"
}

resource "aws_cloudwatch_log_metric_filter" "admin_notification_failed" {
  for_each = local.notifying_log_groups

  name           = "${local.name_prefix}docflow-${each.key}-admin-notification-failed"
  log_group_name = each.value
  pattern        = "{ $.fields.notification_failed IS TRUE }"

  metric_transformation {
    namespace     = local.notification_metric_namespace
    name          = "AdminNotificationsFailed"
    value         = "1"
    default_value = "0"
  }
}

resource "aws_cloudwatch_metric_alarm" "admin_notification_failed" {
  alarm_name        = "${local.name_prefix}docflow-admin-notifications-failed"
  alarm_description = "An admin notification (a failed document, a failed DATEV export, a sweeper give-up) reached no channel after its retries: the failure is in the database but no one was told. Check the function's logs (notification_failed) for the channel's error: Slack webhook revoked, SES identity or quota."

  namespace           = local.notification_metric_namespace
  metric_name         = "AdminNotificationsFailed"
  statistic           = "Sum"
  period              = 300
  evaluation_periods  = 1
  comparison_operator = "GreaterThanThreshold"
  threshold           = 0
  treat_missing_data  = "notBreaching"

  alarm_actions = [aws_sns_topic.alarms.arn]
  ok_actions    = [aws_sns_topic.alarms.arn]

  depends_on = [aws_cloudwatch_log_metric_filter.admin_notification_failed]
}
