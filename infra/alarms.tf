# Every alarm of the stack publishes here. Subscribe on-call (email below, or PagerDuty /
# Chatbot through the alarm_topic_arn output).

resource "aws_sns_topic" "alarms" {
  name              = "${local.name_prefix}docflow-alarms"
  kms_master_key_id = var.kms_key_arn
}

resource "aws_sns_topic_subscription" "alarm_email" {
  for_each = toset(var.alarm_email_addresses)

  topic_arn = aws_sns_topic.alarms.arn
  protocol  = "email"
  endpoint  = each.value
}
