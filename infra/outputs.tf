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
    migrate           = aws_lambda_function.migrate.function_name
  }
}

output "live_aliases" {
  description = "The alias each function is invoked through (the queues' event source mappings, the sweeper's schedule) and the published version it points to; migrate's names the version the last apply published (it is not rolled back). Rollback: aws lambda update-alias --function-name <function> --name <alias> --function-version <earlier version> (README.md, Rollback)."
  value = {
    ingestion         = { function = module.ingestion.function_name, alias = module.ingestion.alias_name, arn = module.ingestion.alias_arn, version = module.ingestion.live_version }
    matching          = { function = module.matching.function_name, alias = module.matching.alias_name, arn = module.matching.alias_arn, version = module.matching.live_version }
    "document-output" = { function = module.document_output.function_name, alias = module.document_output.alias_name, arn = module.document_output.alias_arn, version = module.document_output.live_version }
    sweeper           = { function = aws_lambda_function.sweeper.function_name, alias = aws_lambda_alias.sweeper_live.name, arn = aws_lambda_alias.sweeper_live.arn, version = aws_lambda_alias.sweeper_live.function_version }
    migrate           = { function = aws_lambda_function.migrate.function_name, alias = aws_lambda_alias.migrate_live.name, arn = aws_lambda_alias.migrate_live.arn, version = aws_lambda_alias.migrate_live.function_version }
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
  description = "ARN of each function's credentials secret (migrate: the schema owner's); fill each with `aws secretsmanager put-secret-value --secret-id <this>` (README.md, The secrets)."
  value = {
    ingestion         = aws_secretsmanager_secret.ingestion.arn
    matching          = aws_secretsmanager_secret.matching.arn
    "document-output" = aws_secretsmanager_secret.document_output.arn
    sweeper           = aws_secretsmanager_secret.sweeper.arn
    migrate           = aws_secretsmanager_secret.migrate.arn
  }
}

output "migrate_function_name" {
  description = "The migrate function, invoked by an operator after every apply that deploys code: aws lambda invoke --function-name <this> --cli-binary-format raw-in-base64-out --payload '{}' out.json (README.md, Deploy)."
  value       = aws_lambda_function.migrate.function_name
}

output "migrate_secret_arn" {
  description = "ARN of the migrate function's secret: {\"database_url\": the schema owner's URL to the DB instance endpoint, sslmode=verify-full} (README.md, Deploy)."
  value       = aws_secretsmanager_secret.migrate.arn
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
  description = "The form of the four function secrets' database_url (user: the function's database role): host, port and sslmode (database_tls) as this environment expects them. The migrate secret's database_url names the schema owner and the DB instance endpoint instead."
  value       = "postgres://<user>:<password>@${coalesce(var.rds_proxy_endpoint, "<database host>")}:${var.database_port}/docflow?sslmode=${var.database_tls}"
}

output "database_host" {
  description = "The RDS Proxy endpoint, when one is given: the host to use in the function secrets' database_url (not in the migrate secret's)."
  value       = var.rds_proxy_endpoint
}
