# The functions' network: their security group (egress to the database or its RDS Proxy
# and HTTPS, nothing else; DNS to the VPC resolver is not filtered by security groups),
# the S3 gateway endpoint, the optional interface endpoints of the other AWS APIs, and
# the check that the functions' subnets reach those APIs at all.

resource "aws_security_group" "functions" {
  name        = "${local.name_prefix}docflow-functions"
  description = "docflow Lambda functions: PostgreSQL to the database and HTTPS out"
  vpc_id      = var.vpc_id
}

resource "aws_vpc_security_group_egress_rule" "functions_https" {
  security_group_id = aws_security_group.functions.id
  description       = "HTTPS to AWS APIs (SQS, S3, Secrets Manager, SES, Textract) and the LLM, Maesn and Slack APIs"
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

# --- reaching the AWS APIs ------------------------------------------------------------
#
# Every function calls Secrets Manager (its secret) and SQS (visibility changes, sends);
# matching, document-output and the sweeper call SES when email is configured; ingestion
# calls Textract with ocr_provider = textract. From private subnets that takes a NAT
# gateway, or an interface endpoint per service (var.vpc_endpoints). The plan reads the
# route table of every function subnet and fails when neither is there: otherwise every
# invocation would time out on its first AWS call and every message would end in a DLQ.

locals {
  # The interface endpoints this configuration needs (service names after
  # com.amazonaws.<region>.): "email" is the SES API.
  interface_endpoint_services = toset(concat(
    ["secretsmanager", "sqs"],
    local.email_enabled ? ["email"] : [],
    var.ocr_provider == "textract" ? ["textract"] : [],
  ))

  # A subnet uses the route table explicitly associated with it, else the VPC's main one.
  function_subnet_route_table_ids = {
    for id in var.subnet_ids : id => (
      length(data.aws_route_tables.function_subnet[id].ids) > 0 ? data.aws_route_tables.function_subnet[id].ids[0] : data.aws_vpc.functions.main_route_table_id
    )
  }

  # Egress to the internet for a Lambda network interface, which never has a public IP:
  # a default route through a NAT gateway, or through a transit gateway or a network
  # interface (central egress VPC, firewall, NAT instance) that leads to one. An
  # internet gateway route does not count.
  function_subnet_egress_routes = {
    for id in var.subnet_ids : id => [
      for route in data.aws_route_table.function_subnet[id].routes : route
      if route.cidr_block == "0.0.0.0/0" && length(compact([route.nat_gateway_id, route.transit_gateway_id, route.network_interface_id])) > 0
    ]
  }
  subnets_without_egress = sort([for id, routes in local.function_subnet_egress_routes : id if length(routes) == 0])

  # Interface endpoints take one subnet per availability zone.
  function_subnets_by_zone = { for id in var.subnet_ids : data.aws_subnet.function[id].availability_zone => id... }
}

data "aws_vpc" "functions" {
  id = var.vpc_id
}

data "aws_subnet" "function" {
  for_each = toset(var.subnet_ids)

  id = each.key
}

data "aws_route_tables" "function_subnet" {
  for_each = toset(var.subnet_ids)

  vpc_id = var.vpc_id

  filter {
    name   = "association.subnet-id"
    values = [each.key]
  }
}

data "aws_route_table" "function_subnet" {
  for_each = toset(var.subnet_ids)

  route_table_id = local.function_subnet_route_table_ids[each.key]
}

# vpc_endpoints = "create": one interface endpoint per service, private DNS on, so the
# SDKs' default endpoints resolve to it inside the VPC. The region must offer the
# service (the lookup fails the plan otherwise).
data "aws_vpc_endpoint_service" "interface" {
  for_each = var.vpc_endpoints == "create" ? local.interface_endpoint_services : toset([])

  service      = each.key
  service_type = "Interface"
}

resource "aws_security_group" "vpc_endpoints" {
  count = var.vpc_endpoints == "create" ? 1 : 0

  name        = "${local.name_prefix}docflow-vpc-endpoints"
  description = "docflow interface endpoints: HTTPS from the functions"
  vpc_id      = var.vpc_id
}

resource "aws_vpc_security_group_ingress_rule" "vpc_endpoints_https" {
  count = var.vpc_endpoints == "create" ? 1 : 0

  security_group_id            = aws_security_group.vpc_endpoints[0].id
  description                  = "HTTPS from the docflow functions"
  ip_protocol                  = "tcp"
  from_port                    = 443
  to_port                      = 443
  referenced_security_group_id = aws_security_group.functions.id
}

resource "aws_vpc_endpoint" "interface" {
  for_each = var.vpc_endpoints == "create" ? local.interface_endpoint_services : toset([])

  vpc_id              = var.vpc_id
  service_name        = data.aws_vpc_endpoint_service.interface[each.key].service_name
  vpc_endpoint_type   = "Interface"
  private_dns_enabled = true
  security_group_ids  = [aws_security_group.vpc_endpoints[0].id]
  # One function subnet per availability zone, in the zones where the service is offered.
  subnet_ids = [
    for zone, ids in local.function_subnets_by_zone : ids[0]
    if contains(data.aws_vpc_endpoint_service.interface[each.key].availability_zones, zone)
  ]

  tags = { Name = "${local.name_prefix}docflow-${each.key}" }
}

# vpc_endpoints = "existing": the VPC's own endpoints, one per service. The lookup fails
# the plan when the VPC has none for a service.
data "aws_vpc_endpoint" "existing" {
  for_each = var.vpc_endpoints == "existing" ? local.interface_endpoint_services : toset([])

  vpc_id       = var.vpc_id
  service_name = "com.amazonaws.${var.aws_region}.${each.key}"
  state        = "available"
}

resource "terraform_data" "network" {
  lifecycle {
    precondition {
      condition     = alltrue([for id in var.subnet_ids : data.aws_subnet.function[id].vpc_id == var.vpc_id])
      error_message = "subnet_ids must be subnets of vpc_id ${var.vpc_id}; ${join(", ", [for id in var.subnet_ids : "${id} is in ${data.aws_subnet.function[id].vpc_id}" if data.aws_subnet.function[id].vpc_id != var.vpc_id])}."
    }

    precondition {
      condition     = var.vpc_endpoints != "none" || length(local.subnets_without_egress) == 0
      error_message = "The functions cannot reach Secrets Manager, SQS, SES or Textract from ${join(", ", [for id in local.subnets_without_egress : "${id} (route table ${local.function_subnet_route_table_ids[id]})"])}: no route sends 0.0.0.0/0 to a NAT gateway (or a transit gateway or network interface leading to one), and vpc_endpoints = \"none\". Every invocation would time out on its first AWS call. Route those subnets through a NAT gateway, or set vpc_endpoints = \"create\" (this stack creates the interface endpoints) or \"existing\" (the VPC has them)."
    }

    precondition {
      condition     = var.vpc_endpoints == "none" || (data.aws_vpc.functions.enable_dns_support && data.aws_vpc.functions.enable_dns_hostnames)
      error_message = "vpc_endpoints = \"${var.vpc_endpoints}\" relies on the endpoints' private DNS names, which need enableDnsSupport and enableDnsHostnames on ${var.vpc_id}: turn both on (aws ec2 modify-vpc-attribute)."
    }

    precondition {
      condition     = alltrue([for service, endpoint in data.aws_vpc_endpoint.existing : endpoint.vpc_endpoint_type == "Interface" && endpoint.private_dns_enabled])
      error_message = "vpc_endpoints = \"existing\": the functions reach an endpoint only through its private DNS name. ${join("; ", [for service, endpoint in data.aws_vpc_endpoint.existing : "${endpoint.id} (${service}) is a ${endpoint.vpc_endpoint_type} endpoint with private DNS ${endpoint.private_dns_enabled ? "on" : "off"}" if !(endpoint.vpc_endpoint_type == "Interface" && endpoint.private_dns_enabled)])}. Turn private DNS on, or set vpc_endpoints = \"create\"."
    }
  }
}

# The LLM, Maesn (every DATEV export) and Slack are on the internet: without a NAT route
# the AWS calls work through the endpoints, but those fail. A warning, not a failure,
# for networks whose egress this check cannot see (a proxy, an egress VPC reached over
# peering).
check "internet_egress" {
  assert {
    condition     = var.vpc_endpoints == "none" || length(local.subnets_without_egress) == 0
    error_message = "${join(", ", local.subnets_without_egress)} have no default route through a NAT gateway: the AWS APIs are reached through the VPC endpoints, but document-output cannot reach Maesn (DATEV exports), nor ingestion and matching the LLM (unless llm_provider = \"rules\"), nor anyone Slack."
  }
}
