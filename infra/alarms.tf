# Every alarm of the stack publishes here. Subscribe on-call (email below, or PagerDuty /
# Chatbot through the alarm_topic_arn output).
#
# With kms_key_arn the topic is encrypted, and CloudWatch can publish to it only if the
# key's policy lets cloudwatch.amazonaws.com use the key; otherwise every alarm publish
# fails, silently. That statement cannot be added to a key this stack does not own, so
# the topic gets a key of its own here, whose policy Terraform manages: the account
# administers it, CloudWatch (of this account) encrypts alarm messages with it.

data "aws_iam_policy_document" "alarm_topic_key" {
  count = var.kms_key_arn == null ? 0 : 1

  #checkov:skip=CKV_AWS_109:a key policy names the key itself as "*"; the account root administers it, as AWS's default key policy does
  #checkov:skip=CKV_AWS_111:a key policy names the key itself as "*"
  #checkov:skip=CKV_AWS_356:a key policy names the key itself as "*"
  statement {
    sid       = "AccountAdministersTheKey"
    actions   = ["kms:*"]
    resources = ["*"]

    principals {
      type        = "AWS"
      identifiers = ["arn:${data.aws_partition.current.partition}:iam::${data.aws_caller_identity.current.account_id}:root"]
    }
  }

  statement {
    sid       = "CloudWatchPublishesAlarms"
    actions   = ["kms:Decrypt", "kms:GenerateDataKey*"]
    resources = ["*"]

    principals {
      type        = "Service"
      identifiers = ["cloudwatch.amazonaws.com"]
    }

    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [data.aws_caller_identity.current.account_id]
    }
  }
}

resource "aws_kms_key" "alarm_topic" {
  count = var.kms_key_arn == null ? 0 : 1

  description         = "${local.name_prefix}docflow alarm topic: CloudWatch alarms publish with it"
  enable_key_rotation = true
  policy              = data.aws_iam_policy_document.alarm_topic_key[0].json
}

resource "aws_kms_alias" "alarm_topic" {
  count = var.kms_key_arn == null ? 0 : 1

  name          = "alias/${local.name_prefix}docflow-alarms"
  target_key_id = aws_kms_key.alarm_topic[0].key_id
}

resource "aws_sns_topic" "alarms" {
  name              = "${local.name_prefix}docflow-alarms"
  kms_master_key_id = var.kms_key_arn == null ? null : aws_kms_key.alarm_topic[0].arn
}

resource "aws_sns_topic_subscription" "alarm_email" {
  for_each = toset(var.alarm_email_addresses)

  topic_arn = aws_sns_topic.alarms.arn
  protocol  = "email"
  endpoint  = each.value
}
