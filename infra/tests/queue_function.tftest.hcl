# `terraform test` of the queue-function module with a mocked AWS provider: the
# invariants that Terraform itself can enforce (validations and preconditions) reject
# broken settings at plan time. Run through infra/check.sh (placeholder zips).

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
}

variables {
  name                = "matching"
  package_path        = "tests/fixtures/packages/arm64/matching/bootstrap.zip"
  timeout_seconds     = 60
  max_receive_count   = 3
  maximum_concurrency = 2
  secret_arn          = "arn:aws:secretsmanager:eu-central-1:123456789012:secret:test-docflow/app-AbCdEf"
  subnet_ids          = ["subnet-0123456789abcdef0"]
  security_group_ids  = ["sg-0123456789abcdef0"]
  alarm_topic_arn     = "arn:aws:sns:eu-central-1:123456789012:test-docflow-alarms"
  database_tls        = "verify-full"
}

run "the_module_derives_a_visibility_of_six_timeouts" {
  command = plan

  module {
    source = "./modules/queue-function"
  }

  assert {
    condition     = aws_sqs_queue.source.visibility_timeout_seconds == 360
    error_message = "visibility must default to 6 x 60 s"
  }

  assert {
    # The redrive policy embeds the DLQ's ARN, unknown at plan: the Rust contract tests
    # check that it carries the same max_receive_count.
    condition     = aws_lambda_function.this.environment[0].variables["MAX_RECEIVE_COUNT"] == "3"
    error_message = "MAX_RECEIVE_COUNT must carry max_receive_count"
  }

  assert {
    condition     = aws_lambda_function.this.environment[0].variables["DATABASE_TLS"] == "verify-full"
    error_message = "DATABASE_TLS must carry database_tls"
  }

  assert {
    condition     = aws_lambda_event_source_mapping.this.function_response_types == toset(["ReportBatchItemFailures"])
    error_message = "the mapping must report batch item failures"
  }

  assert {
    condition     = aws_lambda_event_source_mapping.this.enabled
    error_message = "the mapping polls by default (the root turns it off with consumers_enabled)"
  }
}

# An alarm on the DLQ's depth stays in ALARM while old messages wait, so later arrivals
# page no one. The alarm watches the depth's growth instead, with the missing points of
# an idle DLQ (SQS publishes none after six quiet hours) filled with 0, so that the
# first dead letter is a growth too.
run "the_dlq_alarm_fires_on_new_arrivals_not_on_old_messages" {
  command = plan

  module {
    source = "./modules/queue-function"
  }

  assert {
    condition     = anytrue([for q in aws_cloudwatch_metric_alarm.dlq_new_messages.metric_query : q.return_data == true && can(regex("^DIFF\\(FILL\\(visible, *0\\)\\)$", q.expression))])
    error_message = "the DLQ alarm must return DIFF(FILL(visible, 0)): the growth of the DLQ's visible messages, missing points counted as 0"
  }

  assert {
    condition     = anytrue([for q in aws_cloudwatch_metric_alarm.dlq_new_messages.metric_query : q.id == "visible" && anytrue([for m in q.metric : m.metric_name == "ApproximateNumberOfMessagesVisible" && m.namespace == "AWS/SQS"])])
    error_message = "the DLQ alarm must read ApproximateNumberOfMessagesVisible (SQS does not count redrive moves as NumberOfMessagesSent)"
  }

  assert {
    condition     = aws_cloudwatch_metric_alarm.dlq_new_messages.comparison_operator == "GreaterThanThreshold" && aws_cloudwatch_metric_alarm.dlq_new_messages.threshold == 0
    error_message = "any growth of the DLQ must fire"
  }
}

# The role's VPC, KMS and S3 listing grants.
run "the_role_describes_subnets_and_uses_kms_and_listing_only_where_it_must" {
  command = plan

  module {
    source = "./modules/queue-function"
  }

  variables {
    kms_key_arn           = "arn:aws:kms:eu-central-1:123456789012:key/00000000-0000-0000-0000-000000000000"
    documents_bucket_name = "test-docflow-documents"
    documents_bucket_arn  = "arn:aws:s3:::test-docflow-documents"
    s3_read_prefixes      = ["documents/"]
  }

  assert {
    condition     = anytrue([for s in data.aws_iam_policy_document.permissions.statement : contains(s.actions, "ec2:DescribeSubnets")])
    error_message = "Lambda needs ec2:DescribeSubnets to attach the function to its subnets; AWSLambdaENIManagementAccess lacks it"
  }

  assert {
    condition     = alltrue([for s in data.aws_iam_policy_document.permissions.statement : anytrue([for c in s.condition : c.variable == "kms:ViaService" && c.test == "StringEquals" && length(c.values) > 0 && alltrue([for v in c.values : endswith(v, ".amazonaws.com")])]) if length([for a in s.actions : a if startswith(a, "kms:")]) > 0])
    error_message = "every kms grant must be limited to the services that use the key (kms:ViaService)"
  }

  assert {
    condition     = length([for s in data.aws_iam_policy_document.permissions.statement : s if length([for a in s.actions : a if startswith(a, "kms:")]) > 0]) == 1
    error_message = "with kms_key_arn the role gets exactly one kms statement"
  }

  assert {
    condition     = alltrue([for s in data.aws_iam_policy_document.permissions.statement : anytrue([for c in s.condition : c.variable == "s3:prefix" && c.test == "StringLike" && toset(c.values) == toset(["documents/*"])]) if contains(s.actions, "s3:ListBucket")])
    error_message = "s3:ListBucket must be limited to the function's prefixes with StringLike on s3:prefix (IfExists would let a listing without a prefix see the whole bucket)"
  }
}

# The zip's recorded architecture must be the function's.
run "a_zip_built_for_another_architecture_fails_the_plan" {
  command = plan

  module {
    source = "./modules/queue-function"
  }

  variables {
    architecture = "x86_64"
  }

  expect_failures = [aws_lambda_function.this]
}

run "a_zip_without_a_recorded_architecture_fails_the_plan" {
  command = plan

  module {
    source = "./modules/queue-function"
  }

  variables {
    # check.sh's placeholder zips have no architecture.json.
    package_path = "tests/fixtures/lambda/matching/bootstrap.zip"
  }

  expect_failures = [aws_lambda_function.this]
}

run "a_zip_changed_after_its_manifest_was_written_fails_the_plan" {
  command = plan

  module {
    source = "./modules/queue-function"
  }

  variables {
    package_path = "tests/fixtures/packages/stale/matching/bootstrap.zip"
  }

  expect_failures = [aws_lambda_function.this]
}

run "a_visibility_of_30_s_with_a_timeout_of_60_s_fails_the_plan" {
  command = plan

  module {
    source = "./modules/queue-function"
  }

  variables {
    visibility_timeout_seconds = 30
  }

  expect_failures = [aws_sqs_queue.source]
}

run "a_dlq_that_keeps_messages_no_longer_than_its_queue_fails_the_plan" {
  command = plan

  module {
    source = "./modules/queue-function"
  }

  variables {
    message_retention_seconds     = 1209600
    dlq_message_retention_seconds = 1209600
  }

  # The DLQ's age alarm could not fire before such a message expires either.
  expect_failures = [aws_sqs_queue.source, aws_cloudwatch_metric_alarm.dlq_oldest_message_age]
}

run "a_maximum_concurrency_below_two_is_rejected" {
  command = plan

  module {
    source = "./modules/queue-function"
  }

  variables {
    maximum_concurrency = 1
  }

  expect_failures = [var.maximum_concurrency]
}

run "a_secret_value_instead_of_its_arn_is_rejected" {
  command = plan

  module {
    source = "./modules/queue-function"
  }

  variables {
    secret_arn = "{\"database_url\":\"postgres://user:pass@db/docflow\"}"
  }

  expect_failures = [var.secret_arn]
}

run "a_batch_above_ten_without_a_batching_window_fails_the_plan" {
  command = plan

  module {
    source = "./modules/queue-function"
  }

  variables {
    batch_size = 50
  }

  expect_failures = [aws_lambda_event_source_mapping.this]
}

# The batch runtime skips the extension before work when the queue's visibility
# minus the batching window covers it, so it must be told the mapping's window.
run "the_function_is_told_the_batching_window_of_its_mapping" {
  command = plan

  module {
    source = "./modules/queue-function"
  }

  variables {
    maximum_batching_window_seconds = 5
  }

  assert {
    condition     = aws_lambda_function.this.environment[0].variables["MAXIMUM_BATCHING_WINDOW_SECONDS"] == tostring(aws_lambda_event_source_mapping.this.maximum_batching_window_in_seconds)
    error_message = "MAXIMUM_BATCHING_WINDOW_SECONDS must carry the mapping's maximum_batching_window_in_seconds"
  }

  assert {
    condition     = aws_lambda_function.this.environment[0].variables["MAXIMUM_BATCHING_WINDOW_SECONDS"] == "5"
    error_message = "MAXIMUM_BATCHING_WINDOW_SECONDS must carry maximum_batching_window_seconds"
  }

  assert {
    condition     = aws_sqs_queue.source.visibility_timeout_seconds == 365
    error_message = "the window adds to the minimum visibility"
  }
}

# A dead letter nobody handled: an alarm on its age in the DLQ, long before SQS expires it
# 14 days after it entered the source queue (7 days' retention there).
run "an_old_dead_letter_raises_an_alarm_before_it_expires" {
  command = plan

  module {
    source = "./modules/queue-function"
  }

  assert {
    condition = (
      aws_cloudwatch_metric_alarm.dlq_oldest_message_age.namespace == "AWS/SQS"
      && aws_cloudwatch_metric_alarm.dlq_oldest_message_age.metric_name == "ApproximateAgeOfOldestMessage"
      && aws_cloudwatch_metric_alarm.dlq_oldest_message_age.dimensions["QueueName"] == "docflow-matching-dlq"
      && aws_cloudwatch_metric_alarm.dlq_oldest_message_age.statistic == "Maximum"
      && aws_cloudwatch_metric_alarm.dlq_oldest_message_age.comparison_operator == "GreaterThanThreshold"
      && aws_cloudwatch_metric_alarm.dlq_oldest_message_age.threshold == 259200
      && length(aws_cloudwatch_metric_alarm.dlq_oldest_message_age.alarm_actions) == 1
    )
    error_message = "an alarm with actions when the DLQ's oldest message is older than 3 days"
  }
}

run "the_dlq_age_alarm_leaves_time_for_a_longer_source_retention" {
  command = plan

  module {
    source = "./modules/queue-function"
  }

  variables {
    message_retention_seconds = 1036800 # 12 days
  }

  assert {
    condition     = aws_cloudwatch_metric_alarm.dlq_oldest_message_age.threshold == 86400
    error_message = "with 2 days between the source's retention and the DLQ's, the alarm fires after 1 day"
  }
}

run "a_dlq_age_alarm_after_the_expiry_fails_the_plan" {
  command = plan

  module {
    source = "./modules/queue-function"
  }

  variables {
    dlq_oldest_message_age_alarm_seconds = 691200 # 8 days: 8 + 7 > 14
  }

  expect_failures = [aws_cloudwatch_metric_alarm.dlq_oldest_message_age]
}

# Rollback: every change publishes a version, and the queue invokes the alias "live".
run "the_queue_invokes_the_live_alias_of_the_published_version" {
  command = apply

  module {
    source = "./modules/queue-function"
  }

  assert {
    condition     = aws_lambda_function.this.publish
    error_message = "the function must publish versions"
  }

  assert {
    condition     = aws_lambda_alias.live.name == "live" && aws_lambda_alias.live.function_name == aws_lambda_function.this.function_name && aws_lambda_alias.live.function_version == aws_lambda_function.this.version
    error_message = "the alias live points to the version this apply published"
  }

  assert {
    condition     = aws_lambda_event_source_mapping.this.function_name == aws_lambda_alias.live.arn
    error_message = "the event source mapping must invoke the alias, so that moving it rolls the function back"
  }
}

run "a_pinned_version_keeps_the_alias_on_it" {
  command = plan

  module {
    source = "./modules/queue-function"
  }

  variables {
    live_version = "7"
  }

  assert {
    condition     = aws_lambda_alias.live.function_version == "7"
    error_message = "live_version keeps an earlier version live"
  }
}
