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
}

variables {
  name                = "matching"
  package_path        = "tests/fixtures/lambda/matching/bootstrap.zip"
  timeout_seconds     = 60
  max_receive_count   = 3
  maximum_concurrency = 2
  secret_arn          = "arn:aws:secretsmanager:eu-central-1:123456789012:secret:test-docflow/app-AbCdEf"
  subnet_ids          = ["subnet-0123456789abcdef0"]
  security_group_ids  = ["sg-0123456789abcdef0"]
  alarm_topic_arn     = "arn:aws:sns:eu-central-1:123456789012:test-docflow-alarms"
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
    condition     = aws_lambda_event_source_mapping.this.function_response_types == toset(["ReportBatchItemFailures"])
    error_message = "the mapping must report batch item failures"
  }
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

  expect_failures = [aws_sqs_queue.source]
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
