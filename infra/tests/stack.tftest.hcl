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
}

variables {
  environment                = "test"
  documents_bucket_name      = "test-docflow-documents"
  vpc_id                     = "vpc-0123456789abcdef0"
  subnet_ids                 = ["subnet-0123456789abcdef0", "subnet-0fedcba9876543210"]
  database_security_group_id = "sg-0123456789abcdef0"
  route_table_ids            = ["rtb-0123456789abcdef0"]
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
    condition     = aws_lambda_function.sweeper.reserved_concurrent_executions == 1 && aws_cloudwatch_event_rule.sweeper.schedule_expression == "rate(5 minutes)"
    error_message = "the sweeper runs alone, every 5 minutes by default"
  }

  assert {
    condition     = length(aws_vpc_security_group_ingress_rule.database_from_functions) == 1
    error_message = "the database security group admits the functions by default"
  }
}
