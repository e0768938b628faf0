# Used only by scripts/deploy-local.sh, copied to modules/queue-function/ in the scratch
# copy. moto (5.2) accepts SetQueueAttributes with RedriveAllowPolicy but never returns
# the attribute, so the provider would wait for it until its timeout: the DLQ's redrive
# allow policy is left out locally (and reported as not applied).

resource "aws_sqs_queue_redrive_allow_policy" "dlq" {
  count = 0
}
