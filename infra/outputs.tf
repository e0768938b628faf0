output "queue_urls" {
  description = "Source queue URL per function (for the application's enqueue side and `docflow` operations)."
  value = {
    ingestion         = module.ingestion.queue_url
    matching          = module.matching.queue_url
    "document-output" = module.document_output.queue_url
  }
}

output "dlq_urls" {
  description = "Dead-letter queue URL per function."
  value = {
    ingestion         = module.ingestion.dlq_url
    matching          = module.matching.dlq_url
    "document-output" = module.document_output.dlq_url
  }
}

output "function_names" {
  description = "Lambda function name per function."
  value = {
    ingestion         = module.ingestion.function_name
    matching          = module.matching.function_name
    "document-output" = module.document_output.function_name
    sweeper           = aws_lambda_function.sweeper.function_name
  }
}

output "live_aliases" {
  description = "The alias each function is invoked through (the queues' event source mappings, the sweeper's schedule) and the published version it points to. Rollback: aws lambda update-alias --function-name <function> --name <alias> --function-version <earlier version> (README.md, Rollback)."
  value = {
    ingestion         = { function = module.ingestion.function_name, alias = module.ingestion.alias_name, arn = module.ingestion.alias_arn, version = module.ingestion.live_version }
    matching          = { function = module.matching.function_name, alias = module.matching.alias_name, arn = module.matching.alias_arn, version = module.matching.live_version }
    "document-output" = { function = module.document_output.function_name, alias = module.document_output.alias_name, arn = module.document_output.alias_arn, version = module.document_output.live_version }
    sweeper           = { function = aws_lambda_function.sweeper.function_name, alias = aws_lambda_alias.sweeper_live.name, arn = aws_lambda_alias.sweeper_live.arn, version = aws_lambda_alias.sweeper_live.function_version }
  }
}

output "event_source_mapping_uuids" {
  description = "Event source mapping per queue function (aws lambda update-event-source-mapping --uuid ... --no-enabled pauses consumption)."
  value = {
    ingestion         = module.ingestion.event_source_mapping_uuid
    matching          = module.matching.event_source_mapping_uuid
    "document-output" = module.document_output.event_source_mapping_uuid
  }
}

output "documents_bucket" {
  description = "Name of the documents bucket."
  value       = aws_s3_bucket.documents.id
}

output "secret_arns" {
  description = "ARN of each function's credentials secret; fill each with `aws secretsmanager put-secret-value --secret-id <this>` (README.md, The secrets)."
  value = {
    ingestion         = aws_secretsmanager_secret.ingestion.arn
    matching          = aws_secretsmanager_secret.matching.arn
    "document-output" = aws_secretsmanager_secret.document_output.arn
    sweeper           = aws_secretsmanager_secret.sweeper.arn
  }
}

output "alarm_topic_arn" {
  description = "SNS topic of every alarm; subscribe on-call here."
  value       = aws_sns_topic.alarms.arn
}

output "functions_security_group_id" {
  description = "Security group of the functions (admit it on the database or RDS Proxy when manage_database_ingress is false)."
  value       = aws_security_group.functions.id
}

output "database_url_template" {
  description = "The form of every secret's database_url: host, port and sslmode (database_tls) as this environment expects them."
  value       = "postgres://<user>:<password>@${coalesce(var.rds_proxy_endpoint, "<database host>")}:${var.database_port}/docflow?sslmode=${var.database_tls}"
}

output "database_host" {
  description = "The RDS Proxy endpoint, when one is given: the host to use in the secret's database_url."
  value       = var.rds_proxy_endpoint
}
