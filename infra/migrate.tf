# The migrate function: the database's first-day and every-release entry point, invoked
# by an operator only (no queue, no schedule, no permission for any other principal):
#
#   aws lambda invoke --function-name <env>-docflow-migrate \
#     --cli-binary-format raw-in-base64-out --payload '{}' out.json && cat out.json
#
# It reads its own secret (the schema owner's database_url, to the DB instance endpoint:
# DDL and the migrations' session-level advisory lock would pin an RDS Proxy session, and
# the owner is not registered with the proxy), runs the migrations compiled into it as
# the owner, then sets each function's database role's password from that function's
# secret and connects as the role through RDS Proxy, reading and writing (rolled back).
# README.md, Deploy, walks through it.

locals {
  migrate_name            = "${local.name_prefix}docflow-migrate"
  migrate_timeout_seconds = 900

  # The function secrets whose database roles the migrate function sets up and checks,
  # by function (DOCFLOW_FUNCTION_CREDENTIAL_ARNS).
  migrate_function_secrets = {
    ingestion         = aws_secretsmanager_secret.ingestion.arn
    matching          = aws_secretsmanager_secret.matching.arn
    "document-output" = aws_secretsmanager_secret.document_output.arn
    sweeper           = aws_secretsmanager_secret.sweeper.arn
  }

  # The DB instance, which the migrate function reaches directly. null: it is in
  # database_security_group_id (no RDS Proxy, or the proxy shares the instance's group).
  database_instance_security_group_id = var.database_instance_security_group_id == null || var.database_instance_security_group_id == var.database_security_group_id ? null : var.database_instance_security_group_id

  # What the zip was built for (see modules/queue-function/main.tf).
  migrate_package_path     = "${var.lambda_package_dir}/migrate/bootstrap.zip"
  migrate_package_manifest = fileexists("${var.lambda_package_dir}/migrate/architecture.json") ? jsondecode(file("${var.lambda_package_dir}/migrate/architecture.json")) : null
}

resource "aws_secretsmanager_secret" "migrate" {
  #checkov:skip=CKV2_AWS_57:the owner's database URL is rotated by an operator (put-secret-value); there is no rotation function
  name                    = "${local.name_prefix}docflow/migrate"
  description             = "docflow migrate credentials (JSON): ${local.secret_keys["migrate"]}"
  kms_key_id              = var.kms_key_arn
  recovery_window_in_days = var.secret_recovery_window_days
}

resource "aws_cloudwatch_log_group" "migrate" {
  #checkov:skip=CKV_AWS_338:operational logs; retention is var.log_retention_days (default 90), the applied migrations are recorded in the database (_sqlx_migrations)
  name              = "/aws/lambda/${local.migrate_name}"
  retention_in_days = var.log_retention_days
  kms_key_id        = var.kms_key_arn
}

data "aws_iam_policy_document" "migrate_assume_role" {
  statement {
    sid     = "LambdaAssumesRole"
    actions = ["sts:AssumeRole"]

    principals {
      type        = "Service"
      identifiers = ["lambda.amazonaws.com"]
    }
  }
}

resource "aws_iam_role" "migrate" {
  name               = "${local.migrate_name}-function"
  description        = "Execution role of the docflow migrate function"
  assume_role_policy = data.aws_iam_policy_document.migrate_assume_role.json
}

data "aws_iam_policy_document" "migrate" {
  statement {
    sid       = "ReadOwnSecret"
    actions   = ["secretsmanager:GetSecretValue"]
    resources = [aws_secretsmanager_secret.migrate.arn]
  }

  # Each function's database_url: its role's password is set from it, and the role is
  # checked with it through RDS Proxy. Read only; the operator fills the secrets.
  statement {
    sid       = "ReadFunctionSecrets"
    actions   = ["secretsmanager:GetSecretValue"]
    resources = values(local.migrate_function_secrets)
  }

  statement {
    sid       = "WriteOwnLogs"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.migrate.arn}:*"]
  }

  # Active tracing; X-Ray has no resource-level permissions for these two actions.
  statement {
    sid       = "WriteTraces"
    actions   = ["xray:PutTraceSegments", "xray:PutTelemetryRecords"]
    resources = ["*"]
  }

  # The key only through the services that encrypt with it for this function: the
  # secrets and its environment. It only reads, so it never generates a data key.
  dynamic "statement" {
    for_each = var.kms_key_arn == null ? [] : [[var.kms_key_arn]]

    content {
      sid       = "UseDataKey"
      actions   = ["kms:Decrypt"]
      resources = statement.value

      condition {
        test     = "StringEquals"
        variable = "kms:ViaService"
        values   = [for service in ["secretsmanager", "lambda"] : "${service}.${data.aws_region.current.name}.amazonaws.com"]
      }
    }
  }

  # Lambda creates the function's network interfaces with this role; the managed policy
  # below lacks ec2:DescribeSubnets. EC2 Describe actions take no resource ARNs.
  statement {
    sid       = "DescribeVpcSubnets"
    actions   = ["ec2:DescribeSubnets"]
    resources = ["*"]
  }
}

resource "aws_iam_role_policy" "migrate" {
  name   = "${local.migrate_name}-least-privilege"
  role   = aws_iam_role.migrate.id
  policy = data.aws_iam_policy_document.migrate.json
}

resource "aws_iam_role_policy_attachment" "migrate_vpc_access" {
  role       = aws_iam_role.migrate.name
  policy_arn = "arn:${data.aws_partition.current.partition}:iam::aws:policy/service-role/AWSLambdaENIManagementAccess"
}

resource "aws_lambda_function" "migrate" {
  #checkov:skip=CKV_AWS_116:invoked synchronously by an operator, who reads its result or error; there is no asynchronous invocation to dead-letter
  #checkov:skip=CKV_AWS_272:code signing is not used; the zip is built and deployed by the same pipeline
  #checkov:skip=CKV_AWS_115:no reserved concurrency: a new account's 10 concurrent executions cannot spare it, and the migrator's session-level advisory lock already runs two invocations one after the other
  function_name = local.migrate_name
  description   = "docflow migrate: runs the schema migrations as the owner and sets up the functions' database roles (invoked by an operator)"
  role          = aws_iam_role.migrate.arn

  filename         = local.migrate_package_path
  source_code_hash = filebase64sha256(local.migrate_package_path)
  runtime          = "provided.al2023"
  handler          = "bootstrap"
  architectures    = [var.lambda_architecture]
  memory_size      = 512
  timeout          = local.migrate_timeout_seconds
  kms_key_arn      = var.kms_key_arn

  # Numbered, immutable versions like every function. The alias below always names the
  # version this apply publishes: a migration is never rolled back, so live_versions
  # does not pin this function.
  publish = true

  # No reserved concurrency, like the sweeper. Two invocations at once are safe: sqlx's
  # migrator takes a session-level advisory lock before it applies anything, so a second
  # invocation waits for the first and then finds its migrations applied; the role setup
  # after it only repeats the same ALTER ROLEs and checks whose writes are rolled back.
  # A reservation would buy nothing more and would make the stack undeployable where
  # Lambda cannot spare one: it keeps at least 100 concurrent executions unreserved, so
  # an account below 101 (a new account has 10) could not reserve even 1.

  environment {
    variables = {
      RUST_LOG          = var.log_level
      DOCFLOW_SECRET_ID = aws_secretsmanager_secret.migrate.arn
      DATABASE_TLS      = var.database_tls
      # {"ingestion": "<secret ARN>", "matching": ..., "document-output": ..., "sweeper": ...}:
      # the secrets' names (ARNs), never their values. Not *_SECRET_*: the infra contract
      # tests take any variable named like a credential (SECRET, PASSWORD, TOKEN, ...)
      # other than DOCFLOW_SECRET_ID for one.
      DOCFLOW_FUNCTION_CREDENTIAL_ARNS = jsonencode(local.migrate_function_secrets)
    }
  }

  vpc_config {
    subnet_ids         = var.subnet_ids
    security_group_ids = [aws_security_group.functions.id]
  }

  tracing_config {
    mode = "Active"
  }

  depends_on = [
    aws_cloudwatch_log_group.migrate,
    aws_iam_role_policy.migrate,
    aws_iam_role_policy_attachment.migrate_vpc_access,
  ]

  lifecycle {
    precondition {
      condition     = try(local.migrate_package_manifest.architecture == var.lambda_architecture && local.migrate_package_manifest.bootstrap_zip_sha256 == filesha256(local.migrate_package_path), false)
      error_message = "${local.migrate_package_path} is recorded as built for ${try(local.migrate_package_manifest.architecture, "nothing (no architecture.json next to it)")}${try(local.migrate_package_manifest.bootstrap_zip_sha256 == filesha256(local.migrate_package_path), false) ? "" : ", or the zip changed since its manifest was written"}; the functions run on ${var.lambda_architecture}. Build with `make package ARCH=${var.lambda_architecture}` (which writes the manifest), or set lambda_architecture to match."
    }
  }
}

# The version the last apply published (live_aliases output). Invoking the function
# unqualified runs the same code: every apply publishes what it uploads.
resource "aws_lambda_alias" "migrate_live" {
  name             = "live"
  description      = "The version of ${local.migrate_name} that the last apply published"
  function_name    = aws_lambda_function.migrate.function_name
  function_version = aws_lambda_function.migrate.version
}

# --- reaching the DB instance ---------------------------------------------------------
#
# The functions' security group reaches database_security_group_id (the RDS Proxy) on
# database_port (network.tf). The migrate function, in the same group, connects to the
# DB instance too: when the instance has a security group of its own, these rules open
# it on database_port as well.

resource "aws_vpc_security_group_egress_rule" "functions_database_instance" {
  count = local.database_instance_security_group_id == null ? 0 : 1

  security_group_id            = aws_security_group.functions.id
  description                  = "PostgreSQL to the DB instance (the migrate function)"
  ip_protocol                  = "tcp"
  from_port                    = var.database_port
  to_port                      = var.database_port
  referenced_security_group_id = local.database_instance_security_group_id
}

resource "aws_vpc_security_group_ingress_rule" "database_instance_from_functions" {
  count = local.database_instance_security_group_id != null && var.manage_database_ingress ? 1 : 0

  security_group_id            = local.database_instance_security_group_id
  description                  = "docflow migrate function"
  ip_protocol                  = "tcp"
  from_port                    = var.database_port
  to_port                      = var.database_port
  referenced_security_group_id = aws_security_group.functions.id
}
