# The local environment: `make deploy-local` applies infra/ to the moto server of
# `make up` with these values (and the override in environments/local/, which points
# the provider at the emulator). The network ids, the package directory and the
# architecture are passed by scripts/deploy-local.sh: they come from the emulator and
# from the build. Nothing here reaches AWS.

environment = "local"
aws_region  = "eu-central-1"

documents_bucket_name = "local-docflow-documents"

# A deleted secret can be created again at once (the emulator is reset often).
secret_recovery_window_days = 0

llm_provider = "rules"
log_level    = "info"

# No RDS Proxy in the emulator: the local database URL is not verified against a CA.
database_tls = "require"

# moto has no Service Quotas: the quotas are given here instead of read (quotas.tf), and
# the checks still run against them. moto limits neither.
lambda_concurrent_executions_quota = 1000
textract_requests_per_second_quota = 1000

max_receive_count = 3
maximum_concurrency = {
  ingestion         = 2
  matching          = 2
  "document-output" = 2
}
