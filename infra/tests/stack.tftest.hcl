# `terraform test` with a mocked AWS provider (no AWS account, no network once the
# provider is installed): plans the whole stack with the documented defaults.
# Run it through infra/check.sh, which creates placeholder zips under
# tests/fixtures/lambda/ in a scratch copy (Terraform hashes them at plan time).
#
# What the plan reads from the account is mocked as a healthy one: every Service Quotas
# read answers 1000, the VPC has DNS on and its subnets route 0.0.0.0/0 through a NAT
# gateway. Runs below replace one answer at a time (override_data) to break a check.

mock_provider "aws" {
  # Mocked values must still pass the provider's own validation at plan time.
  mock_data "aws_iam_policy_document" {
    defaults = {
      json = "{\"Version\":\"2012-10-17\",\"Statement\":[]}"
    }
  }

  mock_data "aws_servicequotas_service_quota" {
    defaults = {
      value = 1000
    }
  }

  mock_data "aws_vpc" {
    defaults = {
      main_route_table_id  = "rtb-0aaaaaaaaaaaaaaaa"
      enable_dns_support   = true
      enable_dns_hostnames = true
    }
  }

  mock_data "aws_subnet" {
    defaults = {
      vpc_id            = "vpc-0123456789abcdef0"
      availability_zone = "eu-central-1a"
    }
  }

  # No explicit association: every subnet uses the VPC's main route table.
  mock_data "aws_route_tables" {
    defaults = {
      ids = []
    }
  }

  mock_data "aws_route_table" {
    defaults = {
      routes = [
        {
          cidr_block                 = "0.0.0.0/0"
          nat_gateway_id             = "nat-0123456789abcdef0"
          transit_gateway_id         = ""
          network_interface_id       = ""
          gateway_id                 = ""
          carrier_gateway_id         = ""
          core_network_arn           = ""
          destination_prefix_list_id = ""
          egress_only_gateway_id     = ""
          instance_id                = ""
          ipv6_cidr_block            = ""
          local_gateway_id           = ""
          vpc_endpoint_id            = ""
          vpc_peering_connection_id  = ""
        },
      ]
    }
  }

  mock_data "aws_vpc_endpoint_service" {
    defaults = {
      availability_zones = ["eu-central-1a", "eu-central-1b"]
    }
  }

  mock_data "aws_vpc_endpoint" {
    defaults = {
      vpc_endpoint_type   = "Interface"
      private_dns_enabled = true
    }
  }

  mock_data "aws_partition" {
    defaults = {
      partition = "aws"
    }
  }

  # Apply runs (the aliases) give resources their computed values: ARNs that pass the
  # module's validations.
  mock_resource "aws_iam_role" {
    defaults = {
      arn = "arn:aws:iam::123456789012:role/mock-function"
    }
  }

  mock_resource "aws_lambda_function" {
    defaults = {
      arn     = "arn:aws:lambda:eu-central-1:123456789012:function:mock"
      version = "4"
    }
  }

  mock_resource "aws_lambda_alias" {
    defaults = {
      arn = "arn:aws:lambda:eu-central-1:123456789012:function:mock:live"
    }
  }

  mock_resource "aws_secretsmanager_secret" {
    defaults = {
      arn = "arn:aws:secretsmanager:eu-central-1:123456789012:secret:mock-AbCdEf"
    }
  }

  mock_resource "aws_sqs_queue" {
    defaults = {
      arn = "arn:aws:sqs:eu-central-1:123456789012:mock"
      url = "https://sqs.eu-central-1.amazonaws.com/123456789012/mock"
    }
  }

  mock_resource "aws_sns_topic" {
    defaults = {
      arn = "arn:aws:sns:eu-central-1:123456789012:mock"
    }
  }

  mock_resource "aws_cloudwatch_event_rule" {
    defaults = {
      arn = "arn:aws:events:eu-central-1:123456789012:rule/mock"
    }
  }

  mock_resource "aws_cloudwatch_log_group" {
    defaults = {
      arn = "arn:aws:logs:eu-central-1:123456789012:log-group:mock"
    }
  }

  mock_resource "aws_s3_bucket" {
    defaults = {
      arn = "arn:aws:s3:::mock"
    }
  }

  mock_data "aws_region" {
    defaults = {
      name = "eu-central-1"
    }
  }

  mock_data "aws_caller_identity" {
    defaults = {
      account_id = "123456789012"
    }
  }
}

variables {
  environment                = "test"
  documents_bucket_name      = "test-docflow-documents"
  vpc_id                     = "vpc-0123456789abcdef0"
  subnet_ids                 = ["subnet-0123456789abcdef0", "subnet-0fedcba9876543210"]
  database_security_group_id = "sg-0123456789abcdef0"
  route_table_ids            = ["rtb-0123456789abcdef0"]
  rds_proxy_endpoint         = "docflow.proxy-abcdefghijkl.eu-central-1.rds.amazonaws.com"
  lambda_package_dir         = "tests/fixtures/packages/arm64"
}

run "the_stack_plans_with_the_documented_names_and_settings" {
  command = plan

  assert {
    condition     = module.ingestion.queue_name == "test-docflow-ingestion" && module.ingestion.dlq_name == "test-docflow-ingestion-dlq"
    error_message = "queue names must be <environment>-docflow-<function>[-dlq]"
  }

  assert {
    condition     = module.document_output.function_name == "test-docflow-document-output"
    error_message = "function names must be <environment>-docflow-<function>"
  }

  assert {
    condition     = aws_cloudwatch_event_rule.sweeper.schedule_expression == "rate(5 minutes)"
    error_message = "the sweeper runs every 5 minutes by default"
  }

  # A new account (10 concurrent executions) cannot spare a reservation; the 5-minute
  # schedule and the 120 s timeout keep sweeps apart.
  assert {
    condition     = coalesce(aws_lambda_function.sweeper.reserved_concurrent_executions, -1) == -1
    error_message = "the sweeper must not reserve concurrency"
  }

  assert {
    condition     = length(aws_vpc_security_group_ingress_rule.database_from_functions) == 1
    error_message = "the database security group admits the functions by default"
  }
}

# --- going live ------------------------------------------------------------------------------

# A first apply creates everything but starts no consumer.
run "a_first_apply_leaves_the_consumers_off" {
  command = plan

  assert {
    condition     = aws_cloudwatch_event_rule.sweeper.state == "DISABLED"
    error_message = "the sweeper's schedule must be off until consumers_enabled"
  }

  assert {
    condition     = length(aws_cloudwatch_metric_alarm.sweeper_not_invoked.alarm_actions) == 0
    error_message = "the sweeper's not-invoked alarm must not page while its schedule is off"
  }
}

run "consumers_enabled_turns_the_schedule_and_its_alarm_on" {
  command = plan

  variables {
    consumers_enabled = true
  }

  assert {
    condition     = aws_cloudwatch_event_rule.sweeper.state == "ENABLED" && length(aws_cloudwatch_metric_alarm.sweeper_not_invoked.alarm_actions) == 1
    error_message = "consumers_enabled must enable the schedule and arm its alarm"
  }
}

# A sweeper that is never invoked raises no error; missing invocations must.
run "a_sweeper_that_never_runs_raises_an_alarm" {
  command = plan

  assert {
    condition = (
      aws_cloudwatch_metric_alarm.sweeper_not_invoked.namespace == "AWS/Lambda"
      && aws_cloudwatch_metric_alarm.sweeper_not_invoked.metric_name == "Invocations"
      && aws_cloudwatch_metric_alarm.sweeper_not_invoked.comparison_operator == "LessThanThreshold"
      && aws_cloudwatch_metric_alarm.sweeper_not_invoked.threshold == 1
      && aws_cloudwatch_metric_alarm.sweeper_not_invoked.evaluation_periods == 3
      && aws_cloudwatch_metric_alarm.sweeper_not_invoked.treat_missing_data == "breaching"
      && aws_cloudwatch_metric_alarm.sweeper_not_invoked.period >= 300
    )
    error_message = "alarm on the sweeper's Invocations < 1 over 3 periods, missing data breaching"
  }

  assert {
    condition = (
      aws_cloudwatch_metric_alarm.sweeper_schedule_failed.namespace == "AWS/Events"
      && aws_cloudwatch_metric_alarm.sweeper_schedule_failed.metric_name == "FailedInvocations"
      && aws_cloudwatch_metric_alarm.sweeper_schedule_failed.dimensions["RuleName"] == "test-docflow-sweeper"
      && aws_cloudwatch_metric_alarm.sweeper_schedule_failed.threshold == 0
    )
    error_message = "alarm on the schedule rule's FailedInvocations"
  }
}

run "a_schedule_faster_than_the_sweeper_timeout_fails_the_plan" {
  command = plan

  variables {
    sweeper_schedule_expression = "rate(1 minute)"
  }

  expect_failures = [aws_lambda_function.sweeper]
}

run "a_schedule_slower_than_hourly_fails_the_plan" {
  command = plan

  variables {
    sweeper_schedule_expression = "rate(1 day)"
  }

  expect_failures = [aws_lambda_function.sweeper]
}

# The VPC execution permissions include ec2:DescribeSubnets.
run "the_sweeper_role_can_describe_its_subnets" {
  command = plan

  assert {
    condition     = anytrue([for s in data.aws_iam_policy_document.sweeper.statement : contains(s.actions, "ec2:DescribeSubnets")])
    error_message = "Lambda needs ec2:DescribeSubnets to attach the sweeper to its subnets"
  }
}

# The sweeper's KMS grant only through the services that use the key.
run "the_sweeper_uses_the_key_only_through_its_services" {
  command = plan

  variables {
    kms_key_arn = "arn:aws:kms:eu-central-1:123456789012:key/00000000-0000-0000-0000-000000000000"
  }

  assert {
    condition     = alltrue([for s in data.aws_iam_policy_document.sweeper.statement : anytrue([for c in s.condition : c.variable == "kms:ViaService" && toset(c.values) == toset(["sqs.eu-central-1.amazonaws.com", "secretsmanager.eu-central-1.amazonaws.com", "lambda.eu-central-1.amazonaws.com"])]) if anytrue([for a in s.actions : startswith(a, "kms:")])])
    error_message = "the sweeper's kms grant must carry kms:ViaService"
  }

  # The alarm topic's key admits CloudWatch, in a policy Terraform manages.
  assert {
    condition     = length(aws_kms_key.alarm_topic) == 1 && anytrue([for s in data.aws_iam_policy_document.alarm_topic_key[0].statement : anytrue([for p in s.principals : contains(p.identifiers, "cloudwatch.amazonaws.com")]) && contains(s.actions, "kms:GenerateDataKey*") && contains(s.actions, "kms:Decrypt")])
    error_message = "with kms_key_arn the alarm topic needs a key whose policy lets CloudWatch publish"
  }
}

# S3 through a gateway endpoint on the functions' route tables.
run "s3_traffic_takes_the_gateway_endpoint" {
  command = plan

  assert {
    condition     = length(aws_vpc_endpoint.s3) == 1 && aws_vpc_endpoint.s3[0].vpc_endpoint_type == "Gateway" && aws_vpc_endpoint.s3[0].service_name == "com.amazonaws.eu-central-1.s3" && aws_vpc_endpoint.s3[0].route_table_ids == toset(["rtb-0123456789abcdef0"])
    error_message = "an S3 gateway endpoint on route_table_ids"
  }
}

run "an_s3_endpoint_without_route_tables_fails_the_plan" {
  command = plan

  variables {
    route_table_ids = []
  }

  expect_failures = [terraform_data.preflight]
}

# Email settings, grant and identity together, in the functions' region.
run "email_settings_without_an_ses_identity_fail_the_plan" {
  command = plan

  variables {
    notify_email_from = "docflow@example.com"
    notify_email_to   = "ops@example.com"
  }

  expect_failures = [terraform_data.preflight]
}

run "an_ses_identity_without_email_settings_fails_the_plan" {
  command = plan

  variables {
    ses_identity_arn = "arn:aws:ses:eu-central-1:123456789012:identity/example.com"
  }

  expect_failures = [terraform_data.preflight]
}

run "an_ses_identity_in_another_region_fails_the_plan" {
  command = plan

  variables {
    ses_identity_arn  = "arn:aws:ses:us-east-1:123456789012:identity/example.com"
    notify_email_from = "docflow@example.com"
    notify_email_to   = "ops@example.com"
  }

  expect_failures = [terraform_data.preflight]
}

run "a_sender_outside_the_ses_identity_fails_the_plan" {
  command = plan

  variables {
    ses_identity_arn  = "arn:aws:ses:eu-central-1:123456789012:identity/example.com"
    notify_email_from = "docflow@example.org"
    notify_email_to   = "ops@example.com"
  }

  expect_failures = [terraform_data.preflight]
}

run "in_the_ses_sandbox_the_recipients_identities_are_granted" {
  command = plan

  variables {
    ses_identity_arn            = "arn:aws:ses:eu-central-1:123456789012:identity/example.com"
    notify_email_from           = "docflow@example.com"
    notify_email_to             = "ops@example.net"
    ses_recipient_identity_arns = ["arn:aws:ses:eu-central-1:123456789012:identity/ops@example.net"]
  }

  assert {
    condition     = anytrue([for s in data.aws_iam_policy_document.sweeper.statement : contains(s.actions, "ses:SendEmail") && toset(s.resources) == toset(["arn:aws:ses:eu-central-1:123456789012:identity/example.com", "arn:aws:ses:eu-central-1:123456789012:identity/ops@example.net"])])
    error_message = "ses:SendEmail must name the sender's and the sandbox recipients' identities"
  }
}

# --- quotas, read from Service Quotas (quotas.tf) ---------------------------------------------

run "the_quotas_are_read_from_service_quotas" {
  command = plan

  assert {
    condition     = data.aws_servicequotas_service_quota.lambda_concurrent_executions[0].service_code == "lambda" && data.aws_servicequotas_service_quota.lambda_concurrent_executions[0].quota_code == "L-B99A9384"
    error_message = "the Lambda quota is read from Service Quotas (Concurrent executions, L-B99A9384)"
  }

  assert {
    condition = toset([for operation, quota in data.aws_servicequotas_service_quota.textract : "${quota.service_code}/${quota.quota_name}"]) == toset([
      "textract/DetectDocumentText throttle limit in transactions per second",
      "textract/StartDocumentTextDetection throttle limit in transactions per second",
      "textract/GetDocumentTextDetection throttle limit in transactions per second",
    ])
    error_message = "the three Textract request quotas are read from Service Quotas"
  }
}

# The queues' maximum concurrency plus the sweeper must fit the account.
run "more_concurrency_than_a_new_account_has_fails_the_plan" {
  command = plan

  override_data {
    target = data.aws_servicequotas_service_quota.lambda_concurrent_executions
    values = {
      value = 10
    }
  }

  expect_failures = [terraform_data.lambda_concurrency]
}

run "a_new_account_fits_with_lower_maximum_concurrency" {
  command = plan

  override_data {
    target = data.aws_servicequotas_service_quota.lambda_concurrent_executions
    values = {
      value = 10
    }
  }

  variables {
    maximum_concurrency = {
      ingestion         = 3
      matching          = 3
      "document-output" = 2
    }
  }
}

# Only the local emulator, which has no Service Quotas, gives the quota instead.
run "a_given_quota_replaces_the_read" {
  command = plan

  variables {
    lambda_concurrent_executions_quota = 8
    textract_requests_per_second_quota = 50
  }

  assert {
    condition     = length(data.aws_servicequotas_service_quota.lambda_concurrent_executions) == 0 && length(data.aws_servicequotas_service_quota.textract) == 0
    error_message = "a given quota must not be read"
  }

  expect_failures = [terraform_data.lambda_concurrency]
}

# Textract: 5 ingestion instances x 10 records = 50 jobs. The first poll of a job comes
# 1 s after it starts, and a batch's jobs start together: 50 polls in that second.
run "more_textract_calls_than_the_quotas_fails_the_plan" {
  command = plan

  override_data {
    target = data.aws_servicequotas_service_quota.textract
    values = {
      value = 25
    }
  }

  expect_failures = [terraform_data.textract_rate]
}

# 5 x 2 = 10 jobs poll 2 times per second once each polls every 5 s, which a quota of 5
# would take; in their first second they poll 10 times, which it does not.
run "textract_first_polls_count_not_only_the_steady_poll" {
  command = plan

  variables {
    ingestion_batch_concurrency = 2
  }

  override_data {
    target = data.aws_servicequotas_service_quota.textract["GetDocumentTextDetection"]
    values = {
      value = 5
    }
  }

  assert {
    condition     = local.textract_steady_polls_per_second == 2 && local.textract_requests_per_second["GetDocumentTextDetection"] == 10
    error_message = "10 jobs poll 10 times in their first second (1 s wait) and twice per second at the steady 5 s"
  }

  expect_failures = [terraform_data.textract_rate["GetDocumentTextDetection"]]
}

run "textract_calls_fit_with_fewer_jobs_per_instance" {
  command = plan

  variables {
    ingestion_batch_concurrency = 2
  }

  override_data {
    target = data.aws_servicequotas_service_quota.textract
    values = {
      value = 10
    }
  }

  assert {
    condition     = aws_cloudwatch_metric_alarm.textract_throttled[0].threshold == 0
    error_message = "an alarm on Textract throttling"
  }
}

run "without_textract_no_textract_quota_is_read" {
  command = plan

  variables {
    ocr_provider = "native"
  }

  assert {
    condition     = length(data.aws_servicequotas_service_quota.textract) == 0 && length(terraform_data.textract_rate) == 0
    error_message = "the Textract quotas matter only with ocr_provider = textract"
  }
}

# --- the network (network.tf) ------------------------------------------------------------------

run "subnets_routed_through_a_nat_gateway_pass" {
  command = plan

  assert {
    condition     = length(local.subnets_without_egress) == 0 && length(aws_vpc_endpoint.interface) == 0
    error_message = "the mocked main route table sends 0.0.0.0/0 to a NAT gateway; no interface endpoint is created by default"
  }

  assert {
    condition     = local.function_subnet_route_table_ids["subnet-0123456789abcdef0"] == "rtb-0aaaaaaaaaaaaaaaa"
    error_message = "a subnet without an explicit association uses the VPC's main route table"
  }
}

run "subnets_without_a_nat_route_and_without_endpoints_fail_the_plan" {
  command = plan

  override_data {
    target = data.aws_route_table.function_subnet
    values = {
      routes = [
        {
          cidr_block                 = "0.0.0.0/0"
          gateway_id                 = "igw-0123456789abcdef0"
          nat_gateway_id             = ""
          transit_gateway_id         = ""
          network_interface_id       = ""
          carrier_gateway_id         = ""
          core_network_arn           = ""
          destination_prefix_list_id = ""
          egress_only_gateway_id     = ""
          instance_id                = ""
          ipv6_cidr_block            = ""
          local_gateway_id           = ""
          vpc_endpoint_id            = ""
          vpc_peering_connection_id  = ""
        },
      ]
    }
  }

  expect_failures = [terraform_data.network]
}

run "the_explicitly_associated_route_table_is_the_one_checked" {
  command = plan

  override_data {
    target = data.aws_route_tables.function_subnet
    values = {
      ids = ["rtb-0bbbbbbbbbbbbbbbb"]
    }
  }

  assert {
    condition     = alltrue([for id, table in local.function_subnet_route_table_ids : table == "rtb-0bbbbbbbbbbbbbbbb"])
    error_message = "a subnet with an explicit association uses that route table, not the main one"
  }
}

run "subnets_outside_the_vpc_fail_the_plan" {
  command = plan

  override_data {
    target = data.aws_subnet.function
    values = {
      vpc_id            = "vpc-0fedcba9876543210"
      availability_zone = "eu-central-1a"
    }
  }

  expect_failures = [terraform_data.network]
}

run "interface_endpoints_replace_the_nat_route_for_the_aws_apis" {
  command = plan

  variables {
    vpc_endpoints = "create"
  }

  override_data {
    target = data.aws_route_table.function_subnet
    values = {
      routes = []
    }
  }

  override_data {
    target = data.aws_subnet.function["subnet-0fedcba9876543210"]
    values = {
      vpc_id            = "vpc-0123456789abcdef0"
      availability_zone = "eu-central-1b"
    }
  }

  assert {
    condition     = toset(keys(aws_vpc_endpoint.interface)) == toset(["secretsmanager", "sqs", "textract"])
    error_message = "an interface endpoint for Secrets Manager, SQS and Textract (SES only with the email settings)"
  }

  assert {
    condition     = alltrue([for endpoint in aws_vpc_endpoint.interface : endpoint.vpc_endpoint_type == "Interface" && endpoint.private_dns_enabled && length(endpoint.subnet_ids) == 2])
    error_message = "interface endpoints with private DNS, in one function subnet per availability zone"
  }

  assert {
    condition     = aws_vpc_security_group_ingress_rule.vpc_endpoints_https[0].from_port == 443 && aws_vpc_security_group_ingress_rule.vpc_endpoints_https[0].to_port == 443
    error_message = "the endpoints' security group admits HTTPS from the functions"
  }

  assert {
    condition     = length(aws_vpc_endpoint.s3) == 1 && aws_vpc_endpoint.s3[0].vpc_endpoint_type == "Gateway"
    error_message = "S3 keeps its gateway endpoint"
  }

  # The AWS APIs are reachable, the internet (LLM, Maesn, Slack) is not: a warning.
  expect_failures = [check.internet_egress]
}

run "with_email_settings_ses_gets_an_endpoint_too" {
  command = plan

  variables {
    vpc_endpoints     = "create"
    ses_identity_arn  = "arn:aws:ses:eu-central-1:123456789012:identity/example.com"
    notify_email_from = "docflow@example.com"
    notify_email_to   = "ops@example.com"
  }

  assert {
    condition     = contains(keys(aws_vpc_endpoint.interface), "email") && data.aws_vpc_endpoint_service.interface["email"].service == "email"
    error_message = "email notifications need the SES API endpoint (com.amazonaws.<region>.email)"
  }
}

run "interface_endpoints_need_dns_hostnames_in_the_vpc" {
  command = plan

  variables {
    vpc_endpoints = "create"
  }

  override_data {
    target = data.aws_vpc.functions
    values = {
      main_route_table_id  = "rtb-0aaaaaaaaaaaaaaaa"
      enable_dns_support   = true
      enable_dns_hostnames = false
    }
  }

  expect_failures = [terraform_data.network]
}

run "existing_endpoints_are_read_from_the_vpc" {
  command = plan

  variables {
    vpc_endpoints = "existing"
  }

  override_data {
    target = data.aws_route_table.function_subnet
    values = {
      routes = []
    }
  }

  assert {
    condition     = toset(keys(data.aws_vpc_endpoint.existing)) == toset(["secretsmanager", "sqs", "textract"]) && data.aws_vpc_endpoint.existing["sqs"].service_name == "com.amazonaws.eu-central-1.sqs" && length(aws_vpc_endpoint.interface) == 0
    error_message = "vpc_endpoints = existing looks up the VPC's endpoint of each service and creates none"
  }

  expect_failures = [check.internet_egress]
}

run "an_existing_endpoint_without_private_dns_fails_the_plan" {
  command = plan

  variables {
    vpc_endpoints = "existing"
  }

  override_data {
    target = data.aws_vpc_endpoint.existing["secretsmanager"]
    values = {
      vpc_endpoint_type   = "Interface"
      private_dns_enabled = false
    }
  }

  expect_failures = [terraform_data.network]
}

# --- rollback: the schedule and the queues invoke an alias (apply with the mocked provider) ----

run "the_schedule_and_the_queues_invoke_the_live_alias" {
  command = apply

  variables {
    consumers_enabled = true
  }

  assert {
    condition     = aws_lambda_function.sweeper.publish && aws_lambda_alias.sweeper_live.name == "live" && aws_lambda_alias.sweeper_live.function_version == aws_lambda_function.sweeper.version
    error_message = "the sweeper publishes versions and its alias live points to the one just published"
  }

  assert {
    condition     = aws_cloudwatch_event_target.sweeper.arn == aws_lambda_alias.sweeper_live.arn
    error_message = "the schedule must invoke the alias, so that moving it rolls the sweeper back"
  }

  assert {
    condition     = aws_lambda_permission.sweeper_schedule.qualifier == "live" && aws_lambda_permission.sweeper_schedule.function_name == aws_lambda_function.sweeper.function_name
    error_message = "EventBridge may invoke the alias (a permission qualified with it)"
  }

  assert {
    condition     = aws_lambda_function_event_invoke_config.sweeper.qualifier == "live"
    error_message = "the no-retry setting applies to the alias the schedule invokes"
  }

  assert {
    condition     = output.live_aliases["ingestion"].arn == module.ingestion.alias_arn && output.live_aliases["sweeper"].arn == aws_lambda_alias.sweeper_live.arn
    error_message = "the live_aliases output names each function's alias"
  }

  assert {
    condition     = aws_lambda_function.migrate.publish && aws_lambda_alias.migrate_live.name == "live" && aws_lambda_alias.migrate_live.function_version == aws_lambda_function.migrate.version && output.live_aliases["migrate"].arn == aws_lambda_alias.migrate_live.arn
    error_message = "the migrate function publishes versions and its alias live names the one just published"
  }

  assert {
    condition     = output.migrate_function_name == "test-docflow-migrate" && output.migrate_secret_arn == aws_secretsmanager_secret.migrate.arn && output.secret_arns["migrate"] == aws_secretsmanager_secret.migrate.arn
    error_message = "the outputs name the migrate function and its secret"
  }
}

run "a_pinned_version_stays_live" {
  command = plan

  variables {
    live_versions = {
      sweeper = "3"
    }
  }

  assert {
    condition     = aws_lambda_alias.sweeper_live.function_version == "3"
    error_message = "live_versions keeps an earlier version live across applies"
  }
}

run "a_pinned_version_of_an_unknown_function_is_rejected" {
  command = plan

  variables {
    live_versions = {
      sweeper2 = "3"
    }
  }

  expect_failures = [var.live_versions]
}

# --- the database ---------------------------------------------------------------------------

# verify-full is the default, and it needs RDS Proxy (its certificate chains to the
# public roots the functions trust; the RDS CA is not among them).
run "verify_full_without_an_rds_proxy_fails_the_plan" {
  command = plan

  variables {
    rds_proxy_endpoint = null
  }

  expect_failures = [terraform_data.preflight]
}

run "verify_full_through_rds_proxy_is_the_default" {
  command = plan

  assert {
    condition     = output.database_url_template == "postgres://<user>:<password>@docflow.proxy-abcdefghijkl.eu-central-1.rds.amazonaws.com:5432/docflow?sslmode=verify-full"
    error_message = "the database URL's default is sslmode=verify-full to the RDS Proxy"
  }

  assert {
    condition     = aws_lambda_function.sweeper.environment[0].variables["DATABASE_TLS"] == "verify-full"
    error_message = "the sweeper enforces database_tls (DATABASE_TLS)"
  }
}

run "unverified_tls_only_when_asked_for" {
  command = plan

  variables {
    rds_proxy_endpoint = null
    database_tls       = "require"
  }

  assert {
    condition     = endswith(output.database_url_template, "sslmode=require")
    error_message = "database_tls = require is the explicit opt-out"
  }

  assert {
    condition     = aws_lambda_function.sweeper.environment[0].variables["DATABASE_TLS"] == "require"
    error_message = "DATABASE_TLS follows database_tls"
  }
}

# --- the migrate function (migrate.tf) -------------------------------------------------------

run "the_migrate_function_runs_in_the_vpc" {
  command = plan

  assert {
    condition = (
      aws_lambda_function.migrate.function_name == "test-docflow-migrate"
      && aws_lambda_function.migrate.timeout == 900
      && aws_lambda_function.migrate.memory_size == 512
      && aws_lambda_function.migrate.architectures == tolist(["arm64"])
      && aws_lambda_function.migrate.tracing_config[0].mode == "Active"
    )
    error_message = "migrate: 900 s, 512 MB, the functions' architecture, traced"
  }

  # No reservation, like the sweeper: a new account (10 concurrent executions) cannot
  # spare one, and the migrations' advisory lock already runs two invocations one after
  # the other (migrate.tf).
  assert {
    condition     = coalesce(aws_lambda_function.migrate.reserved_concurrent_executions, -1) == -1
    error_message = "the migrate function must not reserve concurrency"
  }

  assert {
    condition     = aws_lambda_function.migrate.vpc_config[0].subnet_ids == aws_lambda_function.sweeper.vpc_config[0].subnet_ids && aws_lambda_function.migrate.vpc_config[0].security_group_ids == aws_lambda_function.sweeper.vpc_config[0].security_group_ids
    error_message = "migrate runs in the functions' subnets and security group, like the sweeper"
  }

  assert {
    condition     = aws_secretsmanager_secret.migrate.name == "test-docflow/migrate"
    error_message = "the migrate secret is <environment>-docflow/migrate"
  }

  assert {
    condition     = toset(keys(local.migrate_function_secrets)) == toset(["ingestion", "matching", "document-output", "sweeper"]) && aws_lambda_function.migrate.environment[0].variables["DATABASE_TLS"] == "verify-full"
    error_message = "DOCFLOW_FUNCTION_CREDENTIAL_ARNS names the secret of each of the four functions; DATABASE_TLS follows database_tls"
  }

  # The database's roles and their checks need the secrets, nothing else.
  assert {
    condition     = alltrue([for s in data.aws_iam_policy_document.migrate.statement : alltrue([for a in s.actions : !anytrue([for service in ["sqs", "s3", "ses", "textract", "secretsmanager:Put", "secretsmanager:Update", "secretsmanager:Create"] : startswith(a, service)])])])
    error_message = "the migrate role must not reach SQS, S3, SES or Textract, nor write a secret"
  }

  assert {
    condition     = anytrue([for s in data.aws_iam_policy_document.migrate.statement : contains(s.actions, "ec2:DescribeSubnets")]) && aws_iam_role_policy_attachment.migrate_vpc_access.policy_arn == "arn:aws:iam::aws:policy/service-role/AWSLambdaENIManagementAccess"
    error_message = "Lambda needs the network interface permissions and ec2:DescribeSubnets to attach migrate to its subnets"
  }

  # The DB instance shares the proxy's group unless told otherwise.
  assert {
    condition     = length(aws_vpc_security_group_egress_rule.functions_database_instance) == 0 && length(aws_vpc_security_group_ingress_rule.database_instance_from_functions) == 0
    error_message = "no extra rule when the DB instance is in database_security_group_id"
  }
}

run "the_migrate_function_uses_the_key_only_to_read" {
  command = plan

  variables {
    kms_key_arn = "arn:aws:kms:eu-central-1:123456789012:key/00000000-0000-0000-0000-000000000000"
  }

  assert {
    condition     = alltrue([for s in data.aws_iam_policy_document.migrate.statement : s.actions == toset(["kms:Decrypt"]) && anytrue([for c in s.condition : c.variable == "kms:ViaService" && toset(c.values) == toset(["secretsmanager.eu-central-1.amazonaws.com", "lambda.eu-central-1.amazonaws.com"])]) if anytrue([for a in s.actions : startswith(a, "kms:")])])
    error_message = "migrate's kms grant is kms:Decrypt through Secrets Manager and Lambda only"
  }
}

run "a_migrate_package_built_for_another_architecture_fails_the_plan" {
  command = plan

  variables {
    lambda_package_dir = "tests/fixtures/packages/migrate-x86_64"
  }

  expect_failures = [aws_lambda_function.migrate]
}

run "a_db_instance_in_its_own_security_group_admits_the_functions" {
  command = plan

  variables {
    database_instance_security_group_id = "sg-0aaaaaaaaaaaaaaaa"
  }

  assert {
    condition     = aws_vpc_security_group_egress_rule.functions_database_instance[0].referenced_security_group_id == "sg-0aaaaaaaaaaaaaaaa" && aws_vpc_security_group_egress_rule.functions_database_instance[0].from_port == 5432
    error_message = "the functions' group reaches the DB instance's group on database_port"
  }

  assert {
    condition     = aws_vpc_security_group_ingress_rule.database_instance_from_functions[0].security_group_id == "sg-0aaaaaaaaaaaaaaaa" && aws_vpc_security_group_ingress_rule.database_instance_from_functions[0].to_port == 5432
    error_message = "the DB instance's group admits the functions (manage_database_ingress)"
  }
}
