# Checks on the inputs as a whole, which no single variable's validation can make. Each
# fails the plan with what to change, before anything reaches AWS. `terraform test`
# (tests/stack.tftest.hcl) breaks each one on purpose. The account's quotas are checked
# in quotas.tf, the functions' network in network.tf.

locals {
  # arn:<partition>:ses:<region>:<account>:identity/<address or domain>
  ses_identity_region = var.ses_identity_arn == null ? null : split(":", var.ses_identity_arn)[3]
  ses_identity_name   = var.ses_identity_arn == null ? null : join("identity/", slice(split("identity/", var.ses_identity_arn), 1, length(split("identity/", var.ses_identity_arn))))
}

resource "terraform_data" "preflight" {
  lifecycle {
    # --- email ---
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

    # --- database TLS ---
    precondition {
      condition     = var.database_tls != "verify-full" || var.rds_proxy_endpoint != null
      error_message = "database_tls = verify-full needs rds_proxy_endpoint: the functions verify the database's certificate against the public roots (webpki), which sign RDS Proxy's certificate but not the RDS CA of a DB instance. Put an RDS Proxy in front of the database, or set database_tls = \"require\" to accept an unverified certificate."
    }

    # --- the S3 gateway endpoint ---
    precondition {
      condition     = !var.manage_s3_gateway_endpoint || length(var.route_table_ids) > 0
      error_message = "route_table_ids must name the route tables of subnet_ids, for the S3 gateway endpoint; or set manage_s3_gateway_endpoint = false when the VPC has one already."
    }
  }
}
