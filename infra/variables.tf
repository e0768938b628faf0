# Inputs of one docflow environment. environments/example.tfvars shows a complete set.

variable "environment" {
  description = "Environment name, used as the prefix of every resource name (prod -> prod-docflow-ingestion)."
  type        = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{0,14}$", var.environment))
    error_message = "environment must be lower-case letters, digits and dashes, starting with a letter, at most 15 characters."
  }
}

variable "aws_region" {
  description = "Region of the whole stack."
  type        = string
  default     = "eu-central-1"
}

variable "tags" {
  description = "Tags added to every resource, on top of Project, Environment and ManagedBy."
  type        = map(string)
  default     = {}
}

variable "lambda_package_dir" {
  description = "Directory with the zips of `make package` (`cargo lambda build --release --arm64 --output-format zip`): <dir>/<function>/bootstrap.zip. Relative paths are relative to infra/, where terraform runs."
  type        = string
  default     = "../target/lambda"
}

variable "lambda_architecture" {
  description = "Instruction set of every function: arm64 (Graviton, the default; `make package`) or x86_64 (`make package ARCH=x86_64`). Must match how the zips in lambda_package_dir were built."
  type        = string
  default     = "arm64"

  validation {
    condition     = contains(["arm64", "x86_64"], var.lambda_architecture)
    error_message = "lambda_architecture must be arm64 or x86_64."
  }
}

variable "log_level" {
  description = "RUST_LOG of every function: level and target=level directives, e.g. \"info\" or \"info,docflow=debug\" (no span or field directives; no trace level in release builds)."
  type        = string
  default     = "info"
}

variable "log_retention_days" {
  description = "Retention of the functions' log groups."
  type        = number
  default     = 90
}

variable "llm_provider" {
  description = "LLM_PROVIDER of ingestion and matching: anthropic or openai (their API key comes from the secret), or rules (no model)."
  type        = string
  default     = "anthropic"

  validation {
    condition     = contains(["anthropic", "openai", "rules"], var.llm_provider)
    error_message = "llm_provider must be anthropic, openai or rules."
  }
}

variable "llm_model" {
  description = "LLM_MODEL; null = the code's default for the provider."
  type        = string
  default     = null
}

variable "ocr_provider" {
  description = "OCR_PROVIDER of ingestion: textract (PDF text layers first, AWS Textract for images and scanned pages; grants the Textract actions) or native (text layers and text files only: images and scans fail as needing OCR)."
  type        = string
  default     = "textract"

  validation {
    condition     = contains(["native", "textract"], var.ocr_provider)
    error_message = "ocr_provider must be native or textract."
  }
}

# --- queues -------------------------------------------------------------------------------

variable "max_receive_count" {
  description = "Receives before a message of ingestion or matching moves to its DLQ; also their MAX_RECEIVE_COUNT. AWS suggests at least 5 for a queue that feeds Lambda, because a throttled invocation also counts a receive; docflow keeps 3, the workers' attempt budget (matching: 300 s, 1800 s, then failed), for the reasons in README.md (\"Why 3 receives\"): the mappings' maximum concurrency fits the account's quota (read from Service Quotas), so they do not throttle themselves. Raise it when other workloads share the account's unreserved concurrency."
  type        = number
  default     = 3

  validation {
    condition     = var.max_receive_count >= 1 && var.max_receive_count <= 1000 && floor(var.max_receive_count) == var.max_receive_count
    error_message = "max_receive_count must be a whole number from 1 to 1000."
  }
}

variable "document_output_max_receive_count" {
  description = "Receives of a document-output message before its DLQ; also the function's MAX_RECEIVE_COUNT. With the output backoff (60 s doubling to 900 s) 10 receives span 90 minutes, so exports outlast an hour of Maesn refusals (docs/document-output.md)."
  type        = number
  default     = 10

  validation {
    condition     = var.document_output_max_receive_count >= 8 && var.document_output_max_receive_count <= 1000 && floor(var.document_output_max_receive_count) == var.document_output_max_receive_count
    error_message = "document_output_max_receive_count must be a whole number from 8 to 1000: fewer receives give up on exports during an hour-long Maesn outage."
  }
}

variable "message_retention_seconds" {
  description = "Retention of the source queues (the DLQs keep messages 14 days, which must be longer)."
  type        = number
  default     = 604800 # 7 days (seed 002)

  validation {
    condition     = var.message_retention_seconds >= 3600 && var.message_retention_seconds < 1209600
    error_message = "message_retention_seconds must be at least one hour and shorter than the DLQ's 14 days (1209600)."
  }
}

variable "maximum_concurrency" {
  description = "Most concurrent invocations per queue (event source mapping scaling_config). Each invocation can hold database connections, so the sum bounds the load on the database."
  type        = map(number)
  default = {
    ingestion         = 5
    matching          = 5
    "document-output" = 2
  }

  validation {
    condition     = alltrue([for name in ["ingestion", "matching", "document-output"] : contains(keys(var.maximum_concurrency), name)])
    error_message = "maximum_concurrency needs an entry for ingestion, matching and document-output."
  }

  validation {
    condition     = alltrue([for value in values(var.maximum_concurrency) : value >= 2 && value <= 1000])
    error_message = "Each maximum_concurrency must be between 2 and 1000."
  }
}

variable "ingestion_batch_concurrency" {
  description = "Records of one ingestion batch processed at once (its BATCH_CONCURRENCY), hence Textract jobs one ingestion instance runs and polls at once."
  type        = number
  default     = 10

  validation {
    condition     = var.ingestion_batch_concurrency >= 1 && var.ingestion_batch_concurrency <= 100 && floor(var.ingestion_batch_concurrency) == var.ingestion_batch_concurrency
    error_message = "ingestion_batch_concurrency must be a whole number from 1 to 100."
  }
}

variable "textract_requests_per_second_quota" {
  description = "Only where Service Quotas cannot answer (the local emulator): one request rate standing for each of the Textract quotas DetectDocumentText, StartDocumentTextDetection and GetDocumentTextDetection. null (the default) reads the three quotas of the account in aws_region from Service Quotas (quotas.tf), so the plan checks the rate ingestion can reach against what the account really has."
  type        = number
  default     = null

  validation {
    condition     = var.textract_requests_per_second_quota == null ? true : var.textract_requests_per_second_quota > 0
    error_message = "textract_requests_per_second_quota must be above 0, or null to read the quotas from Service Quotas."
  }
}

variable "database_max_connections" {
  description = "Database connections per function instance (DATABASE_MAX_CONNECTIONS). Peak connections = (sum of maximum_concurrency + 1 for the sweeper) x this."
  type        = number
  default     = 2

  validation {
    condition     = var.database_max_connections >= 1 && var.database_max_connections <= 20
    error_message = "database_max_connections must be between 1 and 20."
  }
}

variable "stale_ingestion_seconds" {
  description = "STALE_INGESTION_SECONDS of ingestion and the sweeper: an ingestion lease older than this has no live worker (the heartbeat renews it every minute). One value for both, so the sweeper never takes a live ingestion."
  type        = number
  default     = 300

  validation {
    condition     = var.stale_ingestion_seconds >= 120
    error_message = "stale_ingestion_seconds must be at least 120 (two heartbeats)."
  }
}

variable "stale_running_seconds" {
  description = "STALE_RUNNING_SECONDS of document-output and the sweeper: a running output job not touched for this long has no live worker (seed 002: 600). One value for both."
  type        = number
  default     = 600

  validation {
    condition     = var.stale_running_seconds >= 300
    error_message = "stale_running_seconds must be at least 300 (it must exceed two heartbeats plus the Maesn call budget)."
  }
}

# --- data -----------------------------------------------------------------------------------

variable "documents_bucket_name" {
  description = "Name of the S3 bucket for documents and ingestion artefacts (globally unique)."
  type        = string

  validation {
    condition     = can(regex("^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$", var.documents_bucket_name))
    error_message = "documents_bucket_name must be a valid S3 bucket name."
  }
}

variable "noncurrent_version_retention_days" {
  description = "Days an overwritten or deleted document version is kept before S3 expires it."
  type        = number
  default     = 90

  validation {
    condition     = var.noncurrent_version_retention_days >= 1
    error_message = "noncurrent_version_retention_days must be at least 1."
  }
}

variable "secret_recovery_window_days" {
  description = "Days a deleted secret can still be restored."
  type        = number
  default     = 30

  validation {
    condition     = var.secret_recovery_window_days == 0 || (var.secret_recovery_window_days >= 7 && var.secret_recovery_window_days <= 30)
    error_message = "secret_recovery_window_days must be 0 (delete at once) or between 7 and 30."
  }
}

variable "kms_key_arn" {
  description = "Optional customer managed KMS key for queues, logs, function environments, the secret and the bucket. null = AWS managed encryption everywhere. This stack does not own the key, so it does not write its policy: README.md (\"The KMS key policy\") lists each statement the policy needs. The alarm topic gets a key of its own, whose policy Terraform manages."
  type        = string
  default     = null

  validation {
    condition     = var.kms_key_arn == null ? true : can(regex("^arn:[a-z-]+:kms:", var.kms_key_arn))
    error_message = "kms_key_arn must be a KMS key ARN or null."
  }
}

variable "ses_identity_arn" {
  description = "SES identity (verified domain or address, in aws_region) that the admin notifications are sent from. Give it with notify_email_from and notify_email_to, or none of the three. null = no email channel and no email permission."
  type        = string
  default     = null

  validation {
    condition     = var.ses_identity_arn == null ? true : can(regex("^arn:[a-z-]+:ses:[a-z0-9-]+:[0-9]{12}:identity/.+$", var.ses_identity_arn))
    error_message = "ses_identity_arn must be an SES identity ARN or null."
  }
}

variable "ses_recipient_identity_arns" {
  description = "Only while the account is in the SES sandbox: the identities (verified addresses or domains, same region) of the notify_email_to recipients. SES authorises ses:SendEmail on each recipient's identity there too, so the functions are granted them. [] once production access is granted (README.md, Email)."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for arn in var.ses_recipient_identity_arns : can(regex("^arn:[a-z-]+:ses:[a-z0-9-]+:[0-9]{12}:identity/.+$", arn))])
    error_message = "ses_recipient_identity_arns must be SES identity ARNs."
  }
}

variable "notify_email_from" {
  description = "Sender of matching's admin emails (an address of the SES identity ses_identity_arn). null = no email channel."
  type        = string
  default     = null
}

variable "notify_email_to" {
  description = "Recipients of matching's admin emails, comma-separated (NOTIFY_EMAIL_TO). null = no email channel."
  type        = string
  default     = null
}

variable "admin_base_url" {
  description = "Base URL of the admin UI; notifications link to <base>/admin/documents/<id> (ADMIN_BASE_URL). null = no link."
  type        = string
  default     = null
}

# --- network --------------------------------------------------------------------------------

variable "vpc_id" {
  description = "VPC of the database. The functions run in it."
  type        = string

  validation {
    condition     = can(regex("^vpc-[0-9a-f]+$", var.vpc_id))
    error_message = "vpc_id must look like vpc-0123456789abcdef0."
  }
}

variable "subnet_ids" {
  description = "Private subnets for the functions, at least two for availability. They need a route to the AWS APIs (a NAT gateway, or the interface endpoints of vpc_endpoints; the plan checks their route tables) and, for the LLM, Maesn and Slack APIs, a NAT gateway."
  type        = list(string)

  validation {
    condition     = length(var.subnet_ids) >= 1 && alltrue([for id in var.subnet_ids : can(regex("^subnet-[0-9a-f]+$", id))])
    error_message = "subnet_ids must be one or more subnet ids (subnet-...)."
  }
}

variable "route_table_ids" {
  description = "Route tables of subnet_ids. The S3 gateway endpoint (free) is added to them, so document traffic to S3 stays off the NAT gateway. [] only with manage_s3_gateway_endpoint = false."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for id in var.route_table_ids : can(regex("^rtb-[0-9a-f]+$", id))])
    error_message = "route_table_ids must be route table ids (rtb-...)."
  }
}

variable "vpc_endpoints" {
  description = "How the functions reach Secrets Manager, SQS, SES and Textract. \"none\" (the default): through the NAT gateway, and the plan fails unless the route table of every subnet in subnet_ids sends 0.0.0.0/0 to a NAT gateway (or to a transit gateway or network interface that leads to one). \"create\": this stack creates an interface endpoint (private DNS) in subnet_ids for each of those services the configuration uses, with a security group that admits HTTPS from the functions. \"existing\": the VPC has such endpoints already; the plan reads them and fails when one is missing or has no private DNS. S3 always takes the gateway endpoint (manage_s3_gateway_endpoint)."
  type        = string
  default     = "none"

  validation {
    condition     = contains(["none", "create", "existing"], var.vpc_endpoints)
    error_message = "vpc_endpoints must be none, create or existing."
  }
}

variable "manage_s3_gateway_endpoint" {
  description = "Create the S3 gateway endpoint on route_table_ids. false when the VPC already routes S3 through a gateway endpoint of its own (a route table takes only one)."
  type        = bool
  default     = true
}

variable "database_security_group_id" {
  description = "Security group of the PostgreSQL database, or of its RDS Proxy when one is used. The functions' security group may reach it on database_port."
  type        = string

  validation {
    condition     = can(regex("^sg-[0-9a-f]+$", var.database_security_group_id))
    error_message = "database_security_group_id must look like sg-0123456789abcdef0."
  }
}

variable "manage_database_ingress" {
  description = "Add an ingress rule to database_security_group_id (and database_instance_security_group_id, when given) that admits the functions. false when the database's owners manage those groups."
  type        = bool
  default     = true
}

variable "database_instance_security_group_id" {
  description = "Security group of the DB instance (or Aurora cluster), when it differs from database_security_group_id (that of its RDS Proxy). The migrate function connects to the instance directly: the functions' security group may then reach this group on database_port too, and, with manage_database_ingress, this group admits it. null: the instance is in database_security_group_id (no RDS Proxy, or the proxy and the instance share a group)."
  type        = string
  default     = null

  validation {
    condition     = var.database_instance_security_group_id == null ? true : can(regex("^sg-[0-9a-f]+$", var.database_instance_security_group_id))
    error_message = "database_instance_security_group_id must look like sg-0123456789abcdef0, or be null."
  }
}

variable "database_port" {
  description = "Port of the database and of its RDS Proxy (both take the same)."
  type        = number
  default     = 5432
}

variable "rds_proxy_endpoint" {
  description = "Optional RDS Proxy endpoint in front of the database. Terraform does not write it anywhere secret: it is echoed as the database_host output, the host an operator puts into the secret's database_url."
  type        = string
  default     = null

  validation {
    condition     = var.rds_proxy_endpoint == null ? true : can(regex("\\.proxy-[a-z0-9]+\\.[a-z0-9-]+\\.rds\\.amazonaws\\.com$", var.rds_proxy_endpoint))
    error_message = "rds_proxy_endpoint must be an RDS Proxy host name (<name>.proxy-<id>.<region>.rds.amazonaws.com) or null."
  }
}

# --- operations -----------------------------------------------------------------------------

variable "alarm_email_addresses" {
  description = "Addresses subscribed to the alarm topic (each must confirm the subscription email). Other subscribers (PagerDuty, Slack via Chatbot) can subscribe to the alarm_topic_arn output."
  type        = list(string)
  default     = []
}

variable "sweeper_schedule_expression" {
  description = "EventBridge schedule of the sweeper, which re-enqueues work whose message was lost."
  type        = string
  default     = "rate(5 minutes)"

  validation {
    condition     = can(regex("^(rate|cron)\\(.+\\)$", var.sweeper_schedule_expression))
    error_message = "sweeper_schedule_expression must be a rate(...) or cron(...) expression."
  }
}

# --- going live -------------------------------------------------------------------------------

variable "consumers_enabled" {
  description = "Whether the event source mappings poll the queues and the sweeper's schedule runs. false (the default) on the first apply: the secrets are still empty and the schema not migrated, so every invocation would fail and send its messages to the DLQs. Set true once the secrets are filled and the migrate function has run (README.md, Deploy). The migrate function is invoked by an operator and does not depend on it."
  type        = bool
  default     = false
}

variable "lambda_concurrent_executions_quota" {
  description = "Only where Service Quotas cannot answer (the local emulator): the account's Lambda concurrent executions. null (the default) reads the quota \"Concurrent executions\" (lambda, L-B99A9384) of the account in aws_region from Service Quotas (quotas.tf); the plan fails when the sum of maximum_concurrency plus the sweeper does not fit into it, instead of throttling in production."
  type        = number
  default     = null

  validation {
    condition     = var.lambda_concurrent_executions_quota == null ? true : var.lambda_concurrent_executions_quota >= 1 && floor(var.lambda_concurrent_executions_quota) == var.lambda_concurrent_executions_quota
    error_message = "lambda_concurrent_executions_quota must be a whole number >= 1, or null to read the quota from Service Quotas."
  }
}

variable "live_versions" {
  description = "Published version each function's alias \"live\" points to, by function (ingestion, matching, document-output, sweeper). A function not named here runs the version this apply publishes. Name one to keep an earlier version live across applies after a rollback (README.md, Rollback); remove it once the fix is deployed."
  type        = map(string)
  default     = {}

  validation {
    condition     = alltrue([for name, version in var.live_versions : contains(["ingestion", "matching", "document-output", "sweeper"], name) && can(regex("^[1-9][0-9]*$", version))])
    error_message = "live_versions keys must be ingestion, matching, document-output or sweeper, each value a published version number (\"7\")."
  }
}

variable "database_tls" {
  description = "The TLS mode of every function's database connections, passed as DATABASE_TLS and applied by the code over the sslmode of the secret's database_url (so a weaker one there cannot downgrade it): verify-full (the default; needs rds_proxy_endpoint, because the functions trust the public roots, which sign RDS Proxy's certificate but not the RDS CA), or require (encrypted, server certificate not verified: only where no RDS Proxy can be used, accepting that)."
  type        = string
  default     = "verify-full"

  validation {
    condition     = contains(["verify-full", "require"], var.database_tls)
    error_message = "database_tls must be verify-full or require."
  }
}

variable "max_datev_task_age_hours" {
  description = "Hours a DATEV export task may stay open (or unreadable) before the sweeper ends its audit as failed, not retryable, \"check DATEV\" (SWEEP_MAX_TASK_AGE_SECONDS). The oldest-open-task alarm fires at half of it."
  type        = number
  default     = 48

  validation {
    condition     = var.max_datev_task_age_hours >= 1 && floor(var.max_datev_task_age_hours) == var.max_datev_task_age_hours
    error_message = "max_datev_task_age_hours must be a whole number of at least 1."
  }
}
