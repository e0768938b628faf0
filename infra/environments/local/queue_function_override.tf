# Used only by scripts/deploy-local.sh, copied to modules/queue-function/ in the scratch
# copy. moto (5.2) accepts SetQueueAttributes with RedriveAllowPolicy but never returns
# the attribute, so the provider would wait for it until its timeout: the DLQ's redrive
# allow policy is left out locally (and reported as not applied).

resource "aws_sqs_queue_redrive_allow_policy" "dlq" {
  count = 0
}

# moto re-serialises a queue's RedrivePolicy with Python's separators
# ({"a": 1, "b": 2}); AWS returns the string as it was set, and the provider compares it
# with its compact spelling of the configuration. Without this, the plan after the apply
# (scripts/deploy-local.sh: it must be empty) would show a whitespace-only change of
# every source queue, and through it a deferred read of each function's policy
# document. What the policy holds is checked against the emulator by
# scripts/check_deploy.py (dead-letter target and maxReceiveCount).
resource "aws_sqs_queue" "source" {
  #checkov:skip=CKV_AWS_27:merged into the module's queue of the same name in deploy-local's scratch copy, which is encrypted
  lifecycle {
    ignore_changes = [redrive_policy]
  }
}

# The mapping invokes the alias "live". moto (5.2) resolves the alias when it stores the
# mapping and answers FunctionArn with the version (<function>:1); AWS keeps the alias
# ARN as given (<function>:live). Without this, the plan after the apply would show every
# mapping moving back to the alias. scripts/check_deploy.py still finds each mapping by
# the function ARN the state records.
resource "aws_lambda_event_source_mapping" "this" {
  lifecycle {
    ignore_changes = [function_name]
  }
}
