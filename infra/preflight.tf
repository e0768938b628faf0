# Checks on the inputs as a whole, which no single variable's validation can make. Each
# fails the plan with what to change, before anything reaches AWS. `terraform test`
# (tests/preflight.tftest.hcl) breaks each one on purpose.

locals {
  # arn:<partition>:ses:<region>:<account>:identity/<address or domain>
  ses_identity_region = var.ses_identity_arn == null ? null : split(":", var.ses_identity_arn)[3]
  ses_identity_name   = var.ses_identity_arn == null ? null : join("identity/", slice(split("identity/", var.ses_identity_arn), 1, length(split("identity/", var.ses_identity_arn))))

  # Steady state of Textract polling: each running job is polled at most every 5 s
  # (docflow::ocr::textract), one job per record of a batch.
  textract_polls_per_second = var.maximum_concurrency["ingestion"] * var.ingestion_batch_concurrency / 5
}

resource "terraform_data" "preflight" {
  lifecycle {
    # --- email (issue 29, item 3) ---
    precondition {
      condition     = (var.ses_identity_arn == null) == (var.notify_email_from == null) && (var.notify_email_from == null) == (var.notify_email_to == null)
      error_message = "Email notifications need ses_identity_arn, notify_email_from and notify_email_to together (the settings without the SES grant fail at every send, the grant without the settings sends nothing). Give all three or none."
    }

    precondition {
      condition     = local.ses_identity_region == null || local.ses_identity_region == var.aws_region
      error_message = "ses_identity_arn is in region ${coalesce(local.ses_identity_region, "-")}, the functions send through SES in aws_region ${var.aws_region}: an identity is verified per region. Verify it in ${var.aws_region} and use that ARN."
    }

    precondition {
      condition     = var.notify_email_from == null || local.ses_identity_name == null || try(lower(var.notify_email_from) == lower(local.ses_identity_name) || endswith(lower(var.notify_email_from), "@${lower(local.ses_identity_name)}"), false)
      error_message = "notify_email_from must be the address of the SES identity ses_identity_arn, or an address of its domain."
    }

    precondition {
      condition     = length(var.ses_recipient_identity_arns) == 0 || (local.email_enabled && alltrue([for arn in var.ses_recipient_identity_arns : split(":", arn)[3] == var.aws_region]))
      error_message = "ses_recipient_identity_arns (the SES sandbox's verified recipients) need the email settings (ses_identity_arn, notify_email_from, notify_email_to) and must be identities in aws_region ${var.aws_region}."
    }

    # --- Lambda concurrency (item 4) ---
    precondition {
      condition     = sum(values(var.maximum_concurrency)) + 1 <= var.lambda_concurrent_executions_quota
      error_message = "The queues may run ${sum(values(var.maximum_concurrency))} invocations at once (sum of maximum_concurrency) plus 1 sweeper, but the account has ${var.lambda_concurrent_executions_quota} concurrent executions (lambda_concurrent_executions_quota): the rest would be throttled, and throttled receives send healthy messages to the DLQs. Lower maximum_concurrency (minimum 2 each) or request a higher 'Concurrent executions' quota in Service Quotas."
    }

    # --- Textract request rates (item 5) ---
    precondition {
      condition     = var.ocr_provider != "textract" || local.textract_polls_per_second <= var.textract_requests_per_second_quota
      error_message = "Ingestion can poll ${local.textract_polls_per_second} Textract jobs per second (maximum_concurrency[ingestion] x ingestion_batch_concurrency / 5 s), above textract_requests_per_second_quota ${var.textract_requests_per_second_quota}: throttled calls burn receives. Lower either, or raise the Textract quotas in Service Quotas and say so here."
    }

    # --- database TLS (item 10) ---
    precondition {
      condition     = var.database_tls != "verify-full" || var.rds_proxy_endpoint != null
      error_message = "database_tls = verify-full needs rds_proxy_endpoint: the functions verify the database's certificate against the public roots (webpki), which sign RDS Proxy's certificate but not the RDS CA of a DB instance. Put an RDS Proxy in front of the database, or set database_tls = \"require\" to accept an unverified certificate."
    }

    # --- the S3 gateway endpoint (item 13) ---
    precondition {
      condition     = !var.manage_s3_gateway_endpoint || length(var.route_table_ids) > 0
      error_message = "route_table_ids must name the route tables of subnet_ids, for the S3 gateway endpoint; or set manage_s3_gateway_endpoint = false when the VPC has one already."
    }
  }
}
