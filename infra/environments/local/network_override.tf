# Used only by scripts/deploy-local.sh, added to the root of the scratch copy. moto (5.2)
# answers a security-group rule that references another group with the id as
# "<account>/<sg-id>" and without the rule's description; AWS returns the id as written
# ("sg-…") and keeps the description. Without this, the plan after the apply (it must
# be empty) would show both rules changing though nothing did.
resource "aws_vpc_security_group_egress_rule" "functions_database" {
  #checkov:skip=CKV_AWS_23:merged into network.tf's rule of the same name in deploy-local's scratch copy, which has the description
  lifecycle {
    ignore_changes = [description, referenced_security_group_id]
  }
}

resource "aws_vpc_security_group_ingress_rule" "database_from_functions" {
  #checkov:skip=CKV_AWS_23:merged into network.tf's rule of the same name in deploy-local's scratch copy, which has the description
  lifecycle {
    ignore_changes = [description, referenced_security_group_id]
  }
}

# moto's default VPC routes 0.0.0.0/0 to an internet gateway and has no NAT gateway, so
# network.tf's check (a NAT route from every function subnet, or interface endpoints)
# would fail the plan. The functions never run in the emulator (it stores their code),
# so there is nothing for the check to protect: the route tables are still read from
# moto, and every subnet counts as reaching the AWS APIs.
locals {
  subnets_without_egress = []
}
