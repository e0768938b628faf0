# The function's role: its own queue, the queues it feeds, its secret and per-tenant
# secrets under named prefixes, its S3 prefixes, SES only where it notifies, its own log
# group. No statement uses "*" as a resource.

data "aws_iam_policy_document" "assume_role" {
  statement {
    sid     = "LambdaAssumesRole"
    actions = ["sts:AssumeRole"]

    principals {
      type        = "Service"
      identifiers = ["lambda.amazonaws.com"]
    }
  }
}

resource "aws_iam_role" "this" {
  name               = "${local.function_name}-function"
  description        = "Execution role of the docflow ${var.name} function"
  assume_role_policy = data.aws_iam_policy_document.assume_role.json

  tags = var.tags
}

data "aws_iam_policy_document" "permissions" {
  statement {
    sid = "ConsumeOwnQueue"
    actions = [
      "sqs:ReceiveMessage",
      "sqs:DeleteMessage",
      "sqs:ChangeMessageVisibility",
      "sqs:GetQueueAttributes",
    ]
    resources = [aws_sqs_queue.source.arn]
  }

  statement {
    sid       = "ReadAppSecret"
    actions   = ["secretsmanager:GetSecretValue"]
    resources = [var.secret_arn]
  }

  statement {
    sid       = "WriteOwnLogs"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.this.arn}:*"]
  }

  # Active tracing: Lambda sends the invocation's segments with the function's role.
  # X-Ray has no resource-level permissions for these two actions.
  statement {
    sid       = "WriteTraces"
    actions   = ["xray:PutTraceSegments", "xray:PutTelemetryRecords"]
    resources = ["*"]
  }

  # A tenant's secret is <prefix><tenant id>; Secrets Manager appends a random suffix to
  # the ARN, hence the trailing * (scoped to the prefix, never the whole account).
  dynamic "statement" {
    for_each = length(var.tenant_secret_prefixes) > 0 ? [[for prefix in values(var.tenant_secret_prefixes) : "arn:${data.aws_partition.current.partition}:secretsmanager:${data.aws_region.current.name}:${data.aws_caller_identity.current.account_id}:secret:${prefix}*"]] : []

    content {
      sid     = "ReadTenantSecrets"
      actions = ["secretsmanager:GetSecretValue"]
      # <prefix><tenant id>-<suffix Secrets Manager adds>
      resources = statement.value
    }
  }

  dynamic "statement" {
    for_each = length(var.sends_to) > 0 ? [[for queue in values(var.sends_to) : queue.arn]] : []

    content {
      sid       = "SendToDownstreamQueues"
      actions   = ["sqs:SendMessage"]
      resources = statement.value
    }
  }

  dynamic "statement" {
    for_each = length(var.s3_read_prefixes) > 0 ? [local.s3_read_object_arns] : []

    content {
      sid       = "ReadDocumentPrefixes"
      actions   = ["s3:GetObject"]
      resources = statement.value
    }
  }

  dynamic "statement" {
    for_each = length(var.s3_write_prefixes) > 0 ? [local.s3_write_object_arns] : []

    content {
      sid       = "WriteDocumentPrefixes"
      actions   = ["s3:PutObject"]
      resources = statement.value
    }
  }

  # Without s3:ListBucket a GetObject/HeadObject on a missing key answers 403 instead of
  # 404, and "reuse the stored transcription if present" could not tell the two apart.
  # Listing is limited to the prefixes the function reads or writes. StringLike, not
  # StringLikeIfExists: a ListObjects request without a prefix carries no s3:prefix,
  # and IfExists would let it list the whole bucket (every tenant's documents). The
  # ListBucket check S3 makes for a GetObject/HeadObject of a missing key evaluates
  # s3:prefix as the requested key, which these patterns match, so it still answers 404.
  dynamic "statement" {
    for_each = local.uses_s3 ? [[var.documents_bucket_arn]] : []

    content {
      sid       = "TellMissingKeysFromDenied"
      actions   = ["s3:ListBucket"]
      resources = statement.value

      condition {
        test     = "StringLike"
        variable = "s3:prefix"
        values   = [for prefix in distinct(concat(var.s3_read_prefixes, var.s3_write_prefixes)) : "${prefix}*"]
      }
    }
  }

  dynamic "statement" {
    for_each = length(var.ses_identity_arns) > 0 ? [var.ses_identity_arns] : []

    content {
      sid       = "SendNotificationEmail"
      actions   = ["ses:SendEmail"]
      resources = statement.value
    }
  }

  dynamic "statement" {
    for_each = var.textract ? [["*"]] : []

    content {
      sid = "TranscribeWithTextract"
      actions = [
        "textract:DetectDocumentText",
        "textract:StartDocumentTextDetection",
        "textract:GetDocumentTextDetection",
      ]
      resources = statement.value
    }
  }

  # The key only through the services that encrypt with it for this function: its
  # queues, its secret, the documents bucket, its environment. Never a direct kms call.
  dynamic "statement" {
    for_each = var.kms_key_arn == null ? [] : [[var.kms_key_arn]]

    content {
      sid       = "UseDataKey"
      actions   = ["kms:Decrypt", "kms:GenerateDataKey"]
      resources = statement.value

      condition {
        test     = "StringEquals"
        variable = "kms:ViaService"
        values   = local.kms_via_services
      }
    }
  }

  # Lambda creates the function's network interfaces in var.subnet_ids with this role.
  # AWSLambdaENIManagementAccess (below) lacks ec2:DescribeSubnets, which Lambda also
  # needs; EC2 Describe actions take no resource-level permissions.
  statement {
    sid       = "DescribeVpcSubnets"
    actions   = ["ec2:DescribeSubnets"]
    resources = ["*"]
  }
}

data "aws_region" "current" {}

locals {
  kms_via_services = concat(
    [for service in ["sqs", "secretsmanager", "lambda"] : "${service}.${data.aws_region.current.name}.amazonaws.com"],
    local.uses_s3 ? ["s3.${data.aws_region.current.name}.amazonaws.com"] : [],
  )
}

data "aws_caller_identity" "current" {}

resource "aws_iam_role_policy" "this" {
  name   = "${local.function_name}-least-privilege"
  role   = aws_iam_role.this.id
  policy = data.aws_iam_policy_document.permissions.json

  lifecycle {
    precondition {
      condition     = !local.uses_s3 || (var.documents_bucket_name != null && var.documents_bucket_arn != null)
      error_message = "documents_bucket_name and documents_bucket_arn are required when S3 prefixes are granted."
    }
  }
}

# Lambda creates the function's network interfaces with the execution role; the
# EC2 network-interface actions it needs cannot be scoped to a resource.
resource "aws_iam_role_policy_attachment" "vpc_access" {
  role       = aws_iam_role.this.name
  policy_arn = "arn:${data.aws_partition.current.partition}:iam::aws:policy/service-role/AWSLambdaENIManagementAccess"
}
