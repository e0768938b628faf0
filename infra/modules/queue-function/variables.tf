# Inputs of one SQS-triggered docflow function. Every number that two AWS resources
# must agree on (visibility vs timeout, DLQ vs source retention, maxReceiveCount vs the
# code's final-receive rule) is one variable here, so an instance cannot set them apart.

# --- identity ---------------------------------------------------------------------

variable "name" {
  description = "Function name as cargo-lambda builds it (ingestion, matching, document-output). Queue and function are named <name_prefix>docflow-<name>."
  type        = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{0,39}$", var.name))
    error_message = "name must be lower-case letters, digits and dashes, starting with a letter, at most 40 characters."
  }
}

variable "name_prefix" {
  description = "Environment prefix for every name, e.g. \"prod-\" (queue: prod-docflow-ingestion)."
  type        = string
  default     = ""

  validation {
    condition     = can(regex("^([a-z][a-z0-9-]{0,14}-)?$", var.name_prefix))
    error_message = "name_prefix must be empty or lower-case letters, digits and dashes ending with a dash, at most 16 characters."
  }
}

variable "tags" {
  description = "Extra tags for this instance's resources (the provider's default_tags apply as well)."
  type        = map(string)
  default     = {}
}

# --- function -----------------------------------------------------------------------

variable "package_path" {
  description = "Path of the zip built by `cargo lambda build --release --arm64 --output-format zip` (target/lambda/<name>/bootstrap.zip)."
  type        = string

  validation {
    condition     = endswith(var.package_path, ".zip")
    error_message = "package_path must point at a .zip file (target/lambda/<name>/bootstrap.zip)."
  }
}

variable "architecture" {
  description = "Instruction set of the zip: arm64 (Graviton, `cargo lambda build --arm64`) or x86_64 (`--x86-64`). Must match how package_path was built."
  type        = string
  default     = "arm64"

  validation {
    condition     = contains(["arm64", "x86_64"], var.architecture)
    error_message = "architecture must be arm64 or x86_64."
  }
}

variable "timeout_seconds" {
  description = "Lambda timeout. The queue's visibility timeout is derived from it (at least 6 x timeout + batching window)."
  type        = number

  validation {
    condition     = var.timeout_seconds >= 10 && var.timeout_seconds <= 900 && floor(var.timeout_seconds) == var.timeout_seconds
    error_message = "timeout_seconds must be a whole number from 10 to 900 (Lambda's maximum)."
  }
}

variable "memory_mb" {
  description = "Lambda memory; CPU share grows with it."
  type        = number
  default     = 512

  validation {
    condition     = var.memory_mb >= 128 && var.memory_mb <= 10240
    error_message = "memory_mb must be between 128 and 10240."
  }
}

variable "batch_concurrency" {
  description = "Records of one batch processed concurrently (BATCH_CONCURRENCY)."
  type        = number
  default     = 10

  validation {
    condition     = var.batch_concurrency >= 1 && var.batch_concurrency <= 100 && floor(var.batch_concurrency) == var.batch_concurrency
    error_message = "batch_concurrency must be a whole number from 1 to 100."
  }
}

variable "database_max_connections" {
  description = "Database connections per function instance (DATABASE_MAX_CONNECTIONS). The database sees up to maximum_concurrency x this many from this function."
  type        = number
  default     = 2

  validation {
    condition     = var.database_max_connections >= 1 && var.database_max_connections <= 20 && floor(var.database_max_connections) == var.database_max_connections
    error_message = "database_max_connections must be a whole number from 1 to 20."
  }
}

variable "database_tls" {
  description = "TLS mode of the function's database connections (DATABASE_TLS): the root's var.database_tls. The code applies it over whatever sslmode the secret's database_url carries."
  type        = string

  validation {
    condition     = contains(["verify-full", "require"], var.database_tls)
    error_message = "database_tls must be verify-full or require."
  }
}

variable "settings" {
  description = "Further non-secret settings the code reads from its environment (LLM_PROVIDER, LLM_MODEL, OCR_PROVIDER, ...). The variables this module sets itself cannot be overridden, and names of credentials are refused: those belong in the secret."
  type        = map(string)
  default     = {}

  validation {
    condition     = alltrue([for name in keys(var.settings) : can(regex("^[A-Z][A-Z0-9_]*$", name)) && !can(regex("PASSWORD|API_KEY|TOKEN|SECRET|DATABASE_URL|WEBHOOK", name))])
    error_message = "settings names must be UPPER_SNAKE_CASE and must not name a credential (PASSWORD, API_KEY, TOKEN, SECRET, DATABASE_URL, WEBHOOK): credentials belong in the secret."
  }

  validation {
    condition     = length(setintersection(keys(var.settings), ["RUST_LOG", "DOCFLOW_SECRET_ID", "MAX_RECEIVE_COUNT", "BATCH_CONCURRENCY", "DATABASE_MAX_CONNECTIONS", "DATABASE_TLS", "DOCUMENTS_BUCKET", "QUEUE_VISIBILITY_TIMEOUT_SECONDS", "MAXIMUM_BATCHING_WINDOW_SECONDS"])) == 0 && alltrue([for name in keys(var.settings) : !endswith(name, "_QUEUE_URL")])
    error_message = "settings must not set the variables the module derives itself (RUST_LOG, DOCFLOW_SECRET_ID, MAX_RECEIVE_COUNT, BATCH_CONCURRENCY, DATABASE_MAX_CONNECTIONS, DATABASE_TLS, DOCUMENTS_BUCKET, QUEUE_VISIBILITY_TIMEOUT_SECONDS, MAXIMUM_BATCHING_WINDOW_SECONDS, *_QUEUE_URL)."
  }
}

variable "log_level" {
  description = "RUST_LOG filter: level and target=level directives, e.g. \"info\" or \"info,docflow=debug\" (no span or field directives; no trace level in release builds)."
  type        = string
  default     = "info"

  validation {
    condition     = length(trimspace(var.log_level)) > 0
    error_message = "log_level must not be empty."
  }
}

variable "log_retention_days" {
  description = "Retention of the function's CloudWatch log group."
  type        = number
  default     = 90

  validation {
    condition     = contains([1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653], var.log_retention_days)
    error_message = "log_retention_days must be one of the values CloudWatch Logs accepts (1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, ...)."
  }
}

# --- queue and event source mapping -------------------------------------------------

variable "max_receive_count" {
  description = "Receives before SQS moves a message to the DLQ. The same number goes to the function as MAX_RECEIVE_COUNT, so the code knows which receive is the last one."
  type        = number

  validation {
    condition     = var.max_receive_count >= 1 && var.max_receive_count <= 1000 && floor(var.max_receive_count) == var.max_receive_count
    error_message = "max_receive_count must be a whole number from 1 to 1000."
  }
}

variable "batch_size" {
  description = "Records per invocation. Above 10 SQS requires a batching window of at least 1 s."
  type        = number
  default     = 10

  validation {
    condition     = var.batch_size >= 1 && var.batch_size <= 10000 && floor(var.batch_size) == var.batch_size
    error_message = "batch_size must be a whole number from 1 to 10000."
  }
}

variable "maximum_batching_window_seconds" {
  description = "How long Lambda gathers records before invoking. Adds to the minimum visibility timeout."
  type        = number
  default     = 0

  validation {
    condition     = var.maximum_batching_window_seconds >= 0 && var.maximum_batching_window_seconds <= 300
    error_message = "maximum_batching_window_seconds must be between 0 and 300."
  }
}

variable "maximum_concurrency" {
  description = "scaling_config.maximum_concurrency of the event source mapping: the most concurrent invocations this queue can cause. With ReportBatchItemFailures Lambda does not scale down on failures, so this is what protects the database."
  type        = number

  validation {
    condition     = var.maximum_concurrency >= 2 && var.maximum_concurrency <= 1000 && floor(var.maximum_concurrency) == var.maximum_concurrency
    error_message = "maximum_concurrency must be a whole number from 2 to 1000 (the range SQS event source mappings accept)."
  }
}

variable "alias_name" {
  description = "Alias that the event source mapping invokes. Terraform points it at the version it publishes; a rollback moves it to an earlier one."
  type        = string
  default     = "live"

  validation {
    condition     = can(regex("^[a-zA-Z][a-zA-Z0-9_-]{0,127}$", var.alias_name)) && !can(regex("^[0-9]+$", var.alias_name))
    error_message = "alias_name must start with a letter and hold only letters, digits, - and _ (Lambda's alias names; a number would be a version)."
  }
}

variable "live_version" {
  description = "Published version the alias points to. null (the default) = the version this apply publishes; a number such as \"7\" keeps an earlier version live across applies (a rollback that the next apply does not undo)."
  type        = string
  default     = null

  validation {
    condition     = var.live_version == null ? true : can(regex("^[1-9][0-9]*$", var.live_version))
    error_message = "live_version must be a published version number (\"1\", \"2\", ...) or null."
  }
}

variable "enabled" {
  description = "Whether the event source mapping polls the queue. false keeps messages in the queue (first apply, incidents)."
  type        = bool
  default     = true
}

variable "visibility_timeout_seconds" {
  description = "Visibility timeout of the source queue. null = 6 x timeout_seconds + maximum_batching_window_seconds, the minimum AWS recommends; a larger value is allowed, a smaller one fails the plan."
  type        = number
  default     = null

  validation {
    condition     = var.visibility_timeout_seconds == null ? true : (var.visibility_timeout_seconds >= 0 && var.visibility_timeout_seconds <= 43200)
    error_message = "visibility_timeout_seconds must be between 0 and 43200 (12 hours)."
  }
}

variable "message_retention_seconds" {
  description = "Retention of the source queue. Must be shorter than the DLQ's, because a message keeps its original enqueue time when it moves to the DLQ."
  type        = number
  default     = 604800 # 7 days (seed 002)

  validation {
    condition     = var.message_retention_seconds >= 60 && var.message_retention_seconds <= 1209600
    error_message = "message_retention_seconds must be between 60 and 1209600 (14 days)."
  }
}

variable "dlq_message_retention_seconds" {
  description = "Retention of the dead-letter queue: the time operators have to inspect and redrive a failed message."
  type        = number
  default     = 1209600 # 14 days, the SQS maximum

  validation {
    condition     = var.dlq_message_retention_seconds >= 60 && var.dlq_message_retention_seconds <= 1209600
    error_message = "dlq_message_retention_seconds must be between 60 and 1209600 (14 days)."
  }
}

variable "sends_to" {
  description = "Queues this function sends to, keyed by the environment variable that carries the URL (e.g. MATCHING_QUEUE_URL = { arn, url }). The function gets sqs:SendMessage on exactly these queues and their URLs in its environment."
  type = map(object({
    arn = string
    url = string
  }))
  default = {}

  validation {
    condition     = alltrue([for env_name in keys(var.sends_to) : can(regex("^[A-Z][A-Z0-9_]*_QUEUE_URL$", env_name))])
    error_message = "sends_to keys must be environment variable names ending in _QUEUE_URL."
  }

  validation {
    condition     = alltrue([for queue in values(var.sends_to) : can(regex("^arn:[a-z-]+:sqs:", queue.arn))])
    error_message = "sends_to[*].arn must be SQS queue ARNs."
  }
}

# --- data the function reaches --------------------------------------------------------

variable "secret_arn" {
  description = "ARN of the Secrets Manager secret holding the credentials (JSON). Only the ARN reaches the function (DOCFLOW_SECRET_ID); the value never passes through Terraform."
  type        = string

  validation {
    condition     = can(regex("^arn:[a-z-]+:secretsmanager:[a-z0-9-]+:[0-9]{12}:secret:.+$", var.secret_arn))
    error_message = "secret_arn must be a Secrets Manager secret ARN (never the secret's value)."
  }
}

variable "tenant_secret_prefixes" {
  description = "Per-tenant secrets the function reads, keyed by the environment variable that carries their name prefix (e.g. DATEV_CREDENTIALS_PREFIX = \"prod-docflow/datev/\"; a tenant's secret is <prefix><tenant id>). The function gets the variable and secretsmanager:GetSecretValue on exactly <prefix>*, so the two cannot drift apart."
  type        = map(string)
  default     = {}

  validation {
    condition     = alltrue([for env_name, prefix in var.tenant_secret_prefixes : can(regex("^[A-Z][A-Z0-9_]*_PREFIX$", env_name)) && can(regex("^[A-Za-z0-9_+=.@-]+(/[A-Za-z0-9_+=.@-]+)*/$", prefix))])
    error_message = "tenant_secret_prefixes keys must be environment variable names ending in _PREFIX, values secret-name prefixes ending in / (no wildcards)."
  }
}

variable "documents_bucket_name" {
  description = "Name of the documents bucket (DOCUMENTS_BUCKET). Required when any S3 prefix is granted."
  type        = string
  default     = null
}

variable "documents_bucket_arn" {
  description = "ARN of the documents bucket. Required when any S3 prefix is granted."
  type        = string
  default     = null
}

variable "s3_read_prefixes" {
  description = "Key prefixes of the documents bucket the function may read (s3:GetObject), e.g. [\"documents/\"]."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for prefix in var.s3_read_prefixes : can(regex("^[a-z0-9][a-z0-9_-]*/$", prefix))])
    error_message = "S3 prefixes must be non-empty folder names ending in / (no wildcards)."
  }
}

variable "s3_write_prefixes" {
  description = "Key prefixes of the documents bucket the function may write (s3:PutObject), e.g. [\"ingestions/\"]."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for prefix in var.s3_write_prefixes : can(regex("^[a-z0-9][a-z0-9_-]*/$", prefix))])
    error_message = "S3 prefixes must be non-empty folder names ending in / (no wildcards)."
  }
}

variable "ses_identity_arns" {
  description = "SES identities (verified domain or address) the function may send email from. Empty = no SES permission."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for arn in var.ses_identity_arns : can(regex("^arn:[a-z-]+:ses:[a-z0-9-]+:[0-9]{12}:identity/.+$", arn))])
    error_message = "ses_identity_arns must be SES identity ARNs (arn:aws:ses:<region>:<account>:identity/<domain or address>)."
  }
}

variable "textract" {
  description = "Grant Textract OCR (OCR_PROVIDER = textract): DetectDocumentText for images and single pages, StartDocumentTextDetection and GetDocumentTextDetection for multi-page scans. Textract reads the documents from S3 with the role's own s3:GetObject. It has no resource-level permissions, so this statement is the one that names \"*\"."
  type        = bool
  default     = false
}

variable "kms_key_arn" {
  description = "Customer managed KMS key for the queues, log group and environment variables. null = AWS managed encryption (SSE-SQS for the queues). The role gets kms:Decrypt/GenerateDataKey on this key only."
  type        = string
  default     = null

  validation {
    condition     = var.kms_key_arn == null ? true : can(regex("^arn:[a-z-]+:kms:", var.kms_key_arn))
    error_message = "kms_key_arn must be a KMS key ARN or null."
  }
}

# --- network ------------------------------------------------------------------------

variable "subnet_ids" {
  description = "Private subnets the function runs in (they must reach the database, and AWS APIs through NAT or VPC endpoints)."
  type        = list(string)

  validation {
    condition     = length(var.subnet_ids) >= 1
    error_message = "subnet_ids must name at least one subnet (two or more for availability)."
  }
}

variable "security_group_ids" {
  description = "Security groups of the function (egress to the database and HTTPS)."
  type        = list(string)

  validation {
    condition     = length(var.security_group_ids) >= 1
    error_message = "security_group_ids must name at least one security group."
  }
}

# --- alarms ---------------------------------------------------------------------------

variable "alarm_topic_arn" {
  description = "SNS topic that receives every alarm and OK transition of this instance."
  type        = string

  validation {
    condition     = can(regex("^arn:[a-z-]+:sns:", var.alarm_topic_arn))
    error_message = "alarm_topic_arn must be an SNS topic ARN."
  }
}

variable "oldest_message_age_alarm_seconds" {
  description = "Alarm when the oldest message of the source queue is older than this. Must exceed the longest planned retry delay of the function, or the alarm fires on normal backoff."
  type        = number
  default     = 3600

  validation {
    condition     = var.oldest_message_age_alarm_seconds >= 60
    error_message = "oldest_message_age_alarm_seconds must be at least 60."
  }
}

variable "dlq_oldest_message_age_alarm_seconds" {
  description = "Alarm when a message has waited in the DLQ longer than this. SQS expires a dead letter dlq_message_retention_seconds after it first entered the source queue, while the DLQ's age metric counts from its arrival there, so the alarm must fire while even a message that used up the source queue's retention still has time left: this plus message_retention_seconds must stay below dlq_message_retention_seconds. null = 3 days, or half of that margin when it is shorter than 6 days."
  type        = number
  default     = null

  validation {
    condition     = var.dlq_oldest_message_age_alarm_seconds == null ? true : var.dlq_oldest_message_age_alarm_seconds >= 3600
    error_message = "dlq_oldest_message_age_alarm_seconds must be at least 3600 (an hour; the new-messages alarm is the one that fires on arrival) or null."
  }
}

variable "error_rate_alarm_percent" {
  description = "Alarm when more than this share (percent) of the function's invocations in 5 minutes fail as a whole. Partial batch failures are not invocation errors: these are crashes, timeouts and handler errors. 0 alarms on the first one."
  type        = number
  default     = 1

  validation {
    condition     = var.error_rate_alarm_percent >= 0 && var.error_rate_alarm_percent < 100
    error_message = "error_rate_alarm_percent must be at least 0 and below 100."
  }
}

variable "metrics_namespace" {
  description = "CloudWatch namespace of the function's EMF metrics (METRICS_NAMESPACE); the metric alarms and the dashboard read it."
  type        = string
  default     = "docflow"
}
