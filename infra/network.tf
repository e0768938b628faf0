# The functions' security group: egress to the database (or its RDS Proxy) and HTTPS,
# nothing else. DNS to the VPC resolver is not filtered by security groups.

resource "aws_security_group" "functions" {
  name        = "${local.name_prefix}docflow-functions"
  description = "docflow Lambda functions: PostgreSQL to the database and HTTPS out"
  vpc_id      = var.vpc_id
}

resource "aws_vpc_security_group_egress_rule" "functions_https" {
  security_group_id = aws_security_group.functions.id
  description       = "HTTPS to AWS APIs (SQS, S3, Secrets Manager, SES) and the LLM, OCR, Maesn and Slack APIs"
  ip_protocol       = "tcp"
  from_port         = 443
  to_port           = 443
  cidr_ipv4         = "0.0.0.0/0"
}

resource "aws_vpc_security_group_egress_rule" "functions_database" {
  security_group_id            = aws_security_group.functions.id
  description                  = "PostgreSQL (database or RDS Proxy)"
  ip_protocol                  = "tcp"
  from_port                    = var.database_port
  to_port                      = var.database_port
  referenced_security_group_id = var.database_security_group_id
}

resource "aws_vpc_security_group_ingress_rule" "database_from_functions" {
  count = var.manage_database_ingress ? 1 : 0

  security_group_id            = var.database_security_group_id
  description                  = "docflow Lambda functions"
  ip_protocol                  = "tcp"
  from_port                    = var.database_port
  to_port                      = var.database_port
  referenced_security_group_id = aws_security_group.functions.id
}

# S3 through a gateway endpoint: free, and document traffic (uploads read by ingestion
# and Textract's input, transcriptions written back) stays off the NAT gateway, which
# charges per GB. The routes go into the functions' route tables.
resource "aws_vpc_endpoint" "s3" {
  count = var.manage_s3_gateway_endpoint ? 1 : 0

  vpc_id            = var.vpc_id
  service_name      = "com.amazonaws.${var.aws_region}.s3"
  vpc_endpoint_type = "Gateway"
  route_table_ids   = var.route_table_ids

  tags = { Name = "${local.name_prefix}docflow-s3" }
}
