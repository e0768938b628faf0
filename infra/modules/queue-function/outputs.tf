output "function_name" {
  description = "Name of the Lambda function."
  value       = aws_lambda_function.this.function_name
}

output "function_arn" {
  description = "ARN of the Lambda function."
  value       = aws_lambda_function.this.arn
}

output "alias_name" {
  description = "Name of the alias the event source mapping invokes (rollback: move it to an earlier version)."
  value       = aws_lambda_alias.live.name
}

output "alias_arn" {
  description = "ARN of the alias the event source mapping invokes."
  value       = aws_lambda_alias.live.arn
}

output "live_version" {
  description = "The published version the alias points to."
  value       = aws_lambda_alias.live.function_version
}

output "role_arn" {
  description = "ARN of the function's execution role."
  value       = aws_iam_role.this.arn
}

output "queue_name" {
  description = "Name of the source queue."
  value       = aws_sqs_queue.source.name
}

output "queue_arn" {
  description = "ARN of the source queue (for the sends_to of the functions that feed it)."
  value       = aws_sqs_queue.source.arn
}

output "queue_url" {
  description = "URL of the source queue (for the sends_to of the functions that feed it)."
  value       = aws_sqs_queue.source.url
}

output "visibility_timeout_seconds" {
  description = "Visibility timeout of the source queue (the sweeper derives its thresholds from it)."
  value       = aws_sqs_queue.source.visibility_timeout_seconds
}

output "dlq_name" {
  description = "Name of the dead-letter queue."
  value       = aws_sqs_queue.dlq.name
}

output "dlq_arn" {
  description = "ARN of the dead-letter queue."
  value       = aws_sqs_queue.dlq.arn
}

output "dlq_url" {
  description = "URL of the dead-letter queue."
  value       = aws_sqs_queue.dlq.url
}

output "log_group_name" {
  description = "CloudWatch log group of the function."
  value       = aws_cloudwatch_log_group.this.name
}

output "event_source_mapping_uuid" {
  description = "UUID of the SQS event source mapping (to disable consumption during an incident)."
  value       = aws_lambda_event_source_mapping.this.uuid
}

output "alarm_names" {
  description = "Names of the alarms of this instance."
  value = [
    aws_cloudwatch_metric_alarm.dlq_new_messages.alarm_name,
    aws_cloudwatch_metric_alarm.dlq_oldest_message_age.alarm_name,
    aws_cloudwatch_metric_alarm.oldest_message_age.alarm_name,
    aws_cloudwatch_metric_alarm.errors.alarm_name,
    aws_cloudwatch_metric_alarm.throttles.alarm_name,
    aws_cloudwatch_metric_alarm.permanent_failures.alarm_name,
  ]
}
