"""Checks a Terraform deployment against the AWS API: what `terraform show -json` says
was declared must exist, with the settings docflow relies on, and the migrate function,
which only an operator invokes, must have no trigger.

    python scripts/check_deploy.py <state.json> <endpoint> <region> <architecture> <consumers_enabled>

Used by scripts/deploy-local.sh against moto. Prints one line per check and exits 1 when
anything is missing or different.
"""

import json
import sys

import boto3

state_path, endpoint, region, architecture, consumers = sys.argv[1:6]
consumers_enabled = consumers == "true"
with open(state_path, encoding="utf-8") as f:
    state = json.load(f)

client = lambda service: boto3.client(service, endpoint_url=endpoint, region_name=region)  # noqa: E731
sqs, lam, events = client("sqs"), client("lambda"), client("events")
ec2, cloudwatch = client("ec2"), client("cloudwatch")


def resources(module):
    yield from module.get("resources", [])
    for child in module.get("child_modules", []):
        yield from resources(child)


declared = {}
for r in resources(state.get("values", {}).get("root_module", {})):
    if r.get("mode") == "managed":
        declared.setdefault(r["type"], []).append(r["values"])

problems = []
checked = []


def check(ok, what, detail=""):
    (checked if ok else problems).append(f"{what}{': ' + detail if detail and not ok else ''}")
    print(f"  {'ok  ' if ok else 'FAIL'} {what}" + (f" ({detail})" if detail and not ok else ""))


# Queues and redrive policies.
for q in declared.get("aws_sqs_queue", []):
    name = q["name"]
    try:
        url = sqs.get_queue_url(QueueName=name)["QueueUrl"]
    except Exception as e:  # noqa: BLE001 - any failure means it is not there
        check(False, f"queue {name} exists", str(e))
        continue
    attrs = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    check(True, f"queue {name} exists")
    check(
        int(attrs.get("MessageRetentionPeriod", -1)) == q["message_retention_seconds"],
        f"queue {name} keeps messages {q['message_retention_seconds']} s",
        f"found {attrs.get('MessageRetentionPeriod')}",
    )
    if q.get("redrive_policy"):
        want = json.loads(q["redrive_policy"])
        got = json.loads(attrs.get("RedrivePolicy", "{}"))
        check(
            got.get("deadLetterTargetArn") == want["deadLetterTargetArn"]
            and int(got.get("maxReceiveCount", -1)) == int(want["maxReceiveCount"]),
            f"queue {name} redrives to {want['deadLetterTargetArn'].rsplit(':', 1)[-1]} after {want['maxReceiveCount']} receives",
            f"found {got}",
        )
        check(
            int(attrs.get("VisibilityTimeout", -1)) == q["visibility_timeout_seconds"],
            f"queue {name} visibility {q['visibility_timeout_seconds']} s",
            f"found {attrs.get('VisibilityTimeout')}",
        )

# Functions.
for fn in declared.get("aws_lambda_function", []):
    name = fn["function_name"]
    try:
        got = lam.get_function(FunctionName=name)
    except Exception as e:  # noqa: BLE001
        check(False, f"function {name} exists", str(e))
        continue
    conf = got["Configuration"]
    check(True, f"function {name} exists")
    check(
        conf.get("Architectures") == fn["architectures"] == [architecture],
        f"function {name} is {architecture}",
        f"found {conf.get('Architectures')}, declared {fn['architectures']}",
    )
    check(
        (conf.get("Runtime"), conf.get("Handler"), conf.get("Timeout"), conf.get("MemorySize"))
        == (fn["runtime"], fn["handler"], fn["timeout"], fn["memory_size"]),
        f"function {name} runs {fn['runtime']} with {fn['timeout']} s and {fn['memory_size']} MB",
        f"found {conf.get('Runtime')} {conf.get('Timeout')} s {conf.get('MemorySize')} MB",
    )
    env_declared = (fn.get("environment") or [{}])[0].get("variables") or {}
    env_found = conf.get("Environment", {}).get("Variables", {})
    check(env_found == env_declared, f"function {name} has its {len(env_declared)} settings", f"differs: {sorted(set(env_found.items()) ^ set(env_declared.items()))}")
    if fn.get("reserved_concurrent_executions", -1) >= 0:
        reserved = got.get("Concurrency", {}).get("ReservedConcurrentExecutions")
        check(
            reserved == fn["reserved_concurrent_executions"],
            f"function {name} reserved concurrency {fn['reserved_concurrent_executions']}",
            f"found {reserved}",
        )

# Event source mappings.
mappings = lam.list_event_source_mappings()["EventSourceMappings"]
for m in declared.get("aws_lambda_event_source_mapping", []):
    queue = m["event_source_arn"].rsplit(":", 1)[-1]
    found = [x for x in mappings if x["EventSourceArn"] == m["event_source_arn"] and x["FunctionArn"] == m["function_name"]]
    if not found:
        check(False, f"event source mapping {queue} -> function", "not found")
        continue
    x = found[0]
    want_concurrency = (m.get("scaling_config") or [{}])[0].get("maximum_concurrency")
    check(True, f"event source mapping {queue} -> {x['FunctionArn'].split(':function:', 1)[-1]}")
    check(
        "ReportBatchItemFailures" in (x.get("FunctionResponseTypes") or [])
        and x.get("FunctionResponseTypes") == m["function_response_types"],
        f"mapping {queue} reports batch item failures",
        f"found {x.get('FunctionResponseTypes')}",
    )
    check(
        x.get("ScalingConfig", {}).get("MaximumConcurrency") == want_concurrency,
        f"mapping {queue} maximum concurrency {want_concurrency}",
        f"found {x.get('ScalingConfig')}",
    )
    check(x.get("BatchSize") == m["batch_size"], f"mapping {queue} batch size {m['batch_size']}", f"found {x.get('BatchSize')}")
    want_state = "Enabled" if consumers_enabled else "Disabled"
    check(
        m.get("enabled") is consumers_enabled and x.get("State") == want_state,
        f"mapping {queue} {want_state.lower()} (consumers_enabled={consumers})",
        f"found {x.get('State')}, declared enabled={m.get('enabled')}",
    )

# The sweeper's schedule.
for rule in declared.get("aws_cloudwatch_event_rule", []):
    try:
        got = events.describe_rule(Name=rule["name"])
    except Exception as e:  # noqa: BLE001
        check(False, f"schedule {rule['name']} exists", str(e))
        continue
    want_state = "ENABLED" if consumers_enabled else "DISABLED"
    check(
        got.get("ScheduleExpression") == rule["schedule_expression"] and got.get("State") == want_state == rule.get("state"),
        f"schedule {rule['name']} {rule['schedule_expression']} {want_state.lower()} (consumers_enabled={consumers})",
        f"found {got.get('ScheduleExpression')} {got.get('State')}, declared {rule.get('state')}",
    )
for target in declared.get("aws_cloudwatch_event_target", []):
    arns = [t["Arn"] for t in events.list_targets_by_rule(Rule=target["rule"])["Targets"]]
    check(target["arn"] in arns, f"schedule {target['rule']} invokes {target['arn'].split(':function:', 1)[-1]}", f"targets {arns}")
# A permission with a qualifier is in the policy of that alias or version, and admits
# only invocations of its ARN; one without is in the unqualified function's policy.
for perm in declared.get("aws_lambda_permission", []):
    qualifier = {"Qualifier": perm["qualifier"]} if perm.get("qualifier") else {}
    invoked = perm["function_name"] + (f":{perm['qualifier']}" if qualifier else "")
    try:
        policy = json.loads(lam.get_policy(FunctionName=perm["function_name"], **qualifier)["Policy"])
    except Exception as e:  # noqa: BLE001 - no policy at all is a missing permission
        check(False, f"{perm['principal']} may invoke {invoked}", str(e))
        continue
    sids = [s.get("Sid") for s in policy.get("Statement", [])]
    check(perm["statement_id"] in sids, f"{perm['principal']} may invoke {invoked}", f"statements {sids}")

# The aliases the mappings and the schedule invoke, each on the version Terraform set.
for alias in declared.get("aws_lambda_alias", []):
    invoked = f"{alias['function_name']}:{alias['name']}"
    try:
        got = lam.get_alias(FunctionName=alias["function_name"], Name=alias["name"])
    except Exception as e:  # noqa: BLE001
        check(False, f"alias {invoked} exists", str(e))
        continue
    check(
        got.get("FunctionVersion") == alias["function_version"] != "$LATEST",
        f"alias {invoked} -> version {alias['function_version']}",
        f"found {got.get('FunctionVersion')}",
    )

# The functions only an operator invokes (migrate: `aws lambda invoke`, README.md, Deploy):
# no event source mapping, no schedule target and no resource policy may invoke them, on
# the function or on any alias. Their settings (timeout; no reserved concurrency) and alias
# are checked with every function above.
OPERATOR_INVOKED = ("migrate",)
operator_invoked = [
    fn["function_name"]
    for fn in declared.get("aws_lambda_function", [])
    if fn["function_name"].rsplit("docflow-", 1)[-1] in OPERATOR_INVOKED
]
for short in OPERATOR_INVOKED:
    check(
        any(name.rsplit("docflow-", 1)[-1] == short for name in operator_invoked),
        f"function docflow-{short} is declared",
        f"declared functions: {[fn['function_name'] for fn in declared.get('aws_lambda_function', [])]}",
    )


def invokes(arn, name):
    """Whether a function ARN (unqualified, or with a version or alias) is function `name`."""
    return arn.split(":function:", 1)[-1].split(":", 1)[0] == name


rule_targets = [
    (rule["Name"], target["Arn"])
    for rule in events.list_rules().get("Rules", [])
    for target in events.list_targets_by_rule(Rule=rule["Name"]).get("Targets", [])
]
for name in operator_invoked:
    found = [x["EventSourceArn"].rsplit(":", 1)[-1] for x in mappings if invokes(x["FunctionArn"], name)]
    check(not found, f"function {name} has no event source mapping", f"mapped from {found}")
    found = [rule for rule, arn in rule_targets if invokes(arn, name)]
    check(not found, f"function {name} is the target of no rule", f"targeted by {found}")
    aliases = [a["name"] for a in declared.get("aws_lambda_alias", []) if a["function_name"] == name]
    for qualifier in [None, *aliases]:
        invoked = name + (f":{qualifier}" if qualifier else "")
        try:
            policy = json.loads(lam.get_policy(FunctionName=name, **({"Qualifier": qualifier} if qualifier else {}))["Policy"])
        except lam.exceptions.ResourceNotFoundException:
            policy = {}  # no resource policy at all: what an operator-only function has
        except Exception as e:  # noqa: BLE001 - anything else leaves the question open
            check(False, f"no principal may invoke {invoked} (operator only)", f"cannot read its policy: {e}")
            continue
        statements = policy.get("Statement", [])
        check(
            not statements,
            f"no principal may invoke {invoked} (operator only)",
            f"statements {[s.get('Sid') for s in statements]}",
        )

# The alarms: each exists with the comparison, threshold, missing-data treatment, arming
# and actions Terraform declared (moto stores alarms but never evaluates them).
for alarm in declared.get("aws_cloudwatch_metric_alarm", []):
    found = cloudwatch.describe_alarms(AlarmNames=[alarm["alarm_name"]])["MetricAlarms"]
    if not found:
        check(False, f"alarm {alarm['alarm_name']} exists", "not found")
        continue
    a = found[0]
    check(
        (a.get("ComparisonOperator"), a.get("Threshold"), a.get("TreatMissingData"), a.get("ActionsEnabled"), sorted(a.get("AlarmActions", [])))
        == (alarm["comparison_operator"], alarm["threshold"], alarm["treat_missing_data"], alarm["actions_enabled"], sorted(alarm.get("alarm_actions") or [])),
        f"alarm {alarm['alarm_name']} {alarm['comparison_operator']} {alarm['threshold']}, missing data {alarm['treat_missing_data']}, actions {'on' if alarm['actions_enabled'] else 'off'}",
        f"found {a.get('ComparisonOperator')} {a.get('Threshold')} {a.get('TreatMissingData')} {a.get('ActionsEnabled')} {a.get('AlarmActions')}",
    )

# The S3 gateway endpoint on the functions' route tables.
for endpoint_decl in declared.get("aws_vpc_endpoint", []):
    got = ec2.describe_vpc_endpoints(VpcEndpointIds=[endpoint_decl["id"]])["VpcEndpoints"]
    check(
        bool(got)
        and got[0].get("VpcEndpointType") == endpoint_decl["vpc_endpoint_type"] == "Gateway"
        and got[0].get("ServiceName") == endpoint_decl["service_name"]
        and sorted(got[0].get("RouteTableIds", [])) == sorted(endpoint_decl["route_table_ids"]),
        f"{endpoint_decl['vpc_endpoint_type']} endpoint {endpoint_decl['service_name']} on {len(endpoint_decl['route_table_ids'])} route table(s)",
        f"found {got}",
    )

counts = {t: len(v) for t, v in declared.items()}
print(f"  {sum(counts.values())} resources in the state: " + ", ".join(f"{n} {t}" for t, n in sorted(counts.items())))
if problems:
    print(f"deploy-local: {len(problems)} check(s) failed:", file=sys.stderr)
    for p in problems:
        print(f"  - {p}", file=sys.stderr)
    sys.exit(1)
print(f"  all {len(checked)} checks passed")
