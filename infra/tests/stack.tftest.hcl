# `terraform test` with a mocked AWS provider (no AWS account, no network once the
# provider is installed): plans the whole stack with the documented defaults.
# Run it through infra/check.sh, which creates placeholder zips under
# tests/fixtures/lambda/ in a scratch copy (Terraform hashes them at plan time).

mock_provider "aws" {
  # Mocked values must still pass the provider's own validation at plan time.
  mock_data "aws_iam_policy_document" {
    defaults = {
      json = "{\"Version\":\"2012-10-17\",\"Statement\":[]}"
    }
  }

  mock_data "aws_partition" {
    defaults = {
      partition = "aws"
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
  # The account quota after an increase; runs below set a new account's 10.
  lambda_concurrent_executions_quota = 1000
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

  # Issue 29, item 4: a new account (10 concurrent executions) cannot spare a
  # reservation; the 5-minute schedule and the 120 s timeout keep sweeps apart.
  assert {
    condition     = coalesce(aws_lambda_function.sweeper.reserved_concurrent_executions, -1) == -1
    error_message = "the sweeper must not reserve concurrency"
  }

  assert {
    condition     = length(aws_vpc_security_group_ingress_rule.database_from_functions) == 1
    error_message = "the database security group admits the functions by default"
  }
}

# --- issue 29 -------------------------------------------------------------------------------

# Item 2: a first apply creates everything but starts no consumer.
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

# Item 7: a sweeper that is never invoked raises no error; missing invocations must.
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

# Item 6: the VPC execution permissions include ec2:DescribeSubnets.
run "the_sweeper_role_can_describe_its_subnets" {
  command = plan

  assert {
    condition     = anytrue([for s in data.aws_iam_policy_document.sweeper.statement : contains(s.actions, "ec2:DescribeSubnets")])
    error_message = "Lambda needs ec2:DescribeSubnets to attach the sweeper to its subnets"
  }
}

# Item 12: the sweeper's KMS grant only through the services that use the key.
run "the_sweeper_uses_the_key_only_through_its_services" {
  command = plan

  variables {
    kms_key_arn = "arn:aws:kms:eu-central-1:123456789012:key/00000000-0000-0000-0000-000000000000"
  }

  assert {
    condition     = alltrue([for s in data.aws_iam_policy_document.sweeper.statement : anytrue([for c in s.condition : c.variable == "kms:ViaService" && toset(c.values) == toset(["sqs.eu-central-1.amazonaws.com", "secretsmanager.eu-central-1.amazonaws.com", "lambda.eu-central-1.amazonaws.com"])]) if anytrue([for a in s.actions : startswith(a, "kms:")])])
    error_message = "the sweeper's kms grant must carry kms:ViaService"
  }

  # Item 9: the alarm topic's key admits CloudWatch, in a policy Terraform manages.
  assert {
    condition     = length(aws_kms_key.alarm_topic) == 1 && anytrue([for s in data.aws_iam_policy_document.alarm_topic_key[0].statement : anytrue([for p in s.principals : contains(p.identifiers, "cloudwatch.amazonaws.com")]) && contains(s.actions, "kms:GenerateDataKey*") && contains(s.actions, "kms:Decrypt")])
    error_message = "with kms_key_arn the alarm topic needs a key whose policy lets CloudWatch publish"
  }
}

# Item 13: S3 through a gateway endpoint on the functions' route tables.
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

# Item 3: email settings, grant and identity together, in the functions' region.
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

# Item 4: the queues' maximum concurrency plus the sweeper must fit the account.
run "more_concurrency_than_a_new_account_has_fails_the_plan" {
  command = plan

  variables {
    lambda_concurrent_executions_quota = 10
  }

  expect_failures = [terraform_data.preflight]
}

run "a_new_account_fits_with_lower_maximum_concurrency" {
  command = plan

  variables {
    lambda_concurrent_executions_quota = 10
    maximum_concurrency = {
      ingestion         = 3
      matching          = 3
      "document-output" = 2
    }
  }
}

# Item 5: Textract polling must stay within the account's request rate.
run "more_textract_polling_than_the_quota_fails_the_plan" {
  command = plan

  variables {
    textract_requests_per_second_quota = 5
  }

  expect_failures = [terraform_data.preflight]
}

run "textract_polling_fits_with_fewer_jobs_per_instance" {
  command = plan

  variables {
    textract_requests_per_second_quota = 5
    ingestion_batch_concurrency        = 5
  }

  assert {
    condition     = aws_cloudwatch_metric_alarm.textract_throttled[0].threshold == 0
    error_message = "an alarm on Textract throttling"
  }
}

# Item 10: verify-full is the default, and it needs RDS Proxy (its certificate chains to
# the public roots the functions trust; the RDS CA is not among them).
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
