# Copy to environments/<env>.tfvars and adjust; then
#   terraform plan -var-file=environments/<env>.tfvars
# Nothing secret belongs here: credentials go into the Secrets Manager secret.

environment = "staging"
aws_region  = "eu-central-1"

documents_bucket_name = "example-staging-docflow-documents"

vpc_id                     = "vpc-0123456789abcdef0"
subnet_ids                 = ["subnet-0123456789abcdef0", "subnet-0fedcba9876543210"]
route_table_ids            = ["rtb-0123456789abcdef0"] # of subnet_ids: the S3 gateway endpoint's routes
database_security_group_id = "sg-0123456789abcdef0"
rds_proxy_endpoint         = "docflow.proxy-abcdefghijkl.eu-central-1.rds.amazonaws.com"
# The DB instance's own group, when it is not database_security_group_id (the proxy's):
# the migrate function connects to the instance directly (README.md, Database connections).
# database_instance_security_group_id = "sg-0fedcba9876543210"

ses_identity_arn      = "arn:aws:ses:eu-central-1:123456789012:identity/example.com"
alarm_email_addresses = ["oncall@example.com"]

# The account's quotas (Lambda concurrent executions, the Textract request rates) are
# read from Service Quotas at plan time (quotas.tf): a new account's 10 concurrent
# executions fails the plan with these maximum_concurrency values; request more, or
# lower them to fit.

# How the functions reach Secrets Manager, SQS, SES and Textract: "none" = through the
# NAT gateway of subnet_ids' route tables (the plan checks it), "create" = interface
# endpoints made by this stack, "existing" = the VPC's own (README.md, Network).
vpc_endpoints = "none"

# After a rollback (README.md, Rollback): keep a function's alias on an earlier version.
# live_versions = { ingestion = "41" }

# false on the first apply; true once the secrets are filled, the roles registered with
# the RDS Proxy and the migrate function invoked
# (README.md, Deploy, steps 4-8).
consumers_enabled = false

# 3 receives, not AWS's suggested 5: README.md, "Why 3 receives".
max_receive_count = 3
# Outlasts an hour of Maesn refusals with the output backoff (docs/document-output.md).
document_output_max_receive_count = 10
maximum_concurrency = {
  ingestion         = 5
  matching          = 5
  "document-output" = 2
}

tags = {
  CostCenter = "accounts-payable"
}

# Admin notifications of matching (Slack: put slack_webhook_url into the secret).
admin_base_url    = "https://app.example.com"
notify_email_from = "docflow@example.com"
notify_email_to   = "ops@example.com"
