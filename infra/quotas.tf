# The account's quotas, read from Service Quotas at plan time, against what this
# configuration can ask of them. Each check fails the plan with what to change, instead
# of throttling in production: a throttled invocation or a throttled Textract call costs
# the message a receive, and receives are what send healthy messages to the DLQs.
#
# Reading them needs servicequotas:GetServiceQuota, GetAWSDefaultServiceQuota and
# ListAWSDefaultServiceQuotas for whoever runs the plan. The variables
# lambda_concurrent_executions_quota and textract_requests_per_second_quota replace the
# reads only where Service Quotas cannot answer (the local emulator); `terraform test`
# mocks the reads.

locals {
  # The three Textract operations ingestion calls (docflow::ocr::textract).
  textract_operations  = ["DetectDocumentText", "StartDocumentTextDetection", "GetDocumentTextDetection"]
  read_textract_quotas = var.ocr_provider == "textract" && var.textract_requests_per_second_quota == null

  lambda_concurrent_executions_quota = var.lambda_concurrent_executions_quota != null ? var.lambda_concurrent_executions_quota : one(data.aws_servicequotas_service_quota.lambda_concurrent_executions[*].value)
  lambda_concurrency_needed          = sum(values(var.maximum_concurrency)) + 1

  textract_quotas = {
    for operation in local.textract_operations : operation => (
      local.read_textract_quotas ? data.aws_servicequotas_service_quota.textract[operation].value : var.textract_requests_per_second_quota
    )
  }

  # Textract jobs running at once: one per record of every ingestion batch in flight.
  textract_jobs = var.maximum_concurrency["ingestion"] * var.ingestion_batch_concurrency
  # docflow::ocr::textract::Textract polls a job right after starting it, then waits
  # 1 s, 2 s and 4 s before the next polls, then 5 s between all later ones.
  textract_poll_waits_seconds = [1, 2, 4, 5]
  # The records of a batch start together, so its jobs poll together: in the first
  # second after a batch starts, each of its jobs polls once (the 1 s wait), and
  # every ingestion instance can be there at the same moment (a backlog when the
  # consumers start, a burst of uploads). The next polls come 2 s and 4 s later, and
  # from the 7th second on every 5 s: the steady rate is a fifth of the first second's.
  # The check holds the first second, not the steady state, to the quota. The other
  # two operations are called once per record when its batch starts: an image or a
  # single page (DetectDocumentText) or a multi-page scan (StartDocumentTextDetection).
  textract_requests_per_second = {
    DetectDocumentText         = local.textract_jobs
    StartDocumentTextDetection = local.textract_jobs
    GetDocumentTextDetection   = local.textract_jobs / min(local.textract_poll_waits_seconds...)
  }
  textract_steady_polls_per_second = local.textract_jobs / local.textract_poll_waits_seconds[length(local.textract_poll_waits_seconds) - 1]
}

data "aws_servicequotas_service_quota" "lambda_concurrent_executions" {
  count = var.lambda_concurrent_executions_quota == null ? 1 : 0

  service_code = "lambda"
  quota_code   = "L-B99A9384" # Concurrent executions
}

data "aws_servicequotas_service_quota" "textract" {
  for_each = local.read_textract_quotas ? toset(local.textract_operations) : toset([])

  service_code = "textract"
  quota_name   = "${each.key} throttle limit in transactions per second"
}

# Every queue's maximum concurrency plus the sweeper must fit into the account's
# concurrent executions; no function reserves any (a new account's 10 cannot spare it).
resource "terraform_data" "lambda_concurrency" {
  lifecycle {
    precondition {
      condition     = local.lambda_concurrency_needed <= local.lambda_concurrent_executions_quota
      error_message = "The queues may run ${sum(values(var.maximum_concurrency))} invocations at once (sum of maximum_concurrency) plus 1 sweeper, but the account has ${local.lambda_concurrent_executions_quota} concurrent executions in ${var.aws_region} (Service Quotas, Lambda, \"Concurrent executions\"): the rest would be throttled, and throttled receives send healthy messages to the DLQs. Lower maximum_concurrency (minimum 2 each) or request a higher quota in Service Quotas."
    }
  }
}

# With ocr_provider = textract, the rate ingestion can reach on each Textract operation
# must fit into that operation's quota.
resource "terraform_data" "textract_rate" {
  for_each = var.ocr_provider == "textract" ? toset(local.textract_operations) : toset([])

  lifecycle {
    precondition {
      condition     = local.textract_requests_per_second[each.key] <= local.textract_quotas[each.key]
      error_message = "Ingestion can call Textract ${each.key} ${local.textract_requests_per_second[each.key]} times per second: maximum_concurrency[ingestion] x ingestion_batch_concurrency = ${local.textract_jobs} records${each.key == "GetDocumentTextDetection" ? " whose jobs poll 1 s after they start (then 2 s, 4 s, and every 5 s: ${local.textract_steady_polls_per_second} per second)" : " starting together"}. The account's quota in ${var.aws_region} is ${local.textract_quotas[each.key]} per second (Service Quotas, Amazon Textract, \"${each.key} throttle limit in transactions per second\"): throttled calls are retried and each retry costs a receive. Lower maximum_concurrency[ingestion] or ingestion_batch_concurrency, or request a higher quota."
    }
  }
}
