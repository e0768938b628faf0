"""Checks the plan that switches a deployed docflow's consumers off (consumers_enabled
true -> false): the first phase of a first deploy differs from the deployed state only in
the consumers, each switched in place.

    python scripts/check_flip_plan.py <plan.json>

<plan.json> is `terraform show -json` of that plan. Every event source mapping must be
updated in place to `enabled = false`, the sweeper's schedule to `state = DISABLED`, and
nothing else may change except these attributes and the alarm actions that follow
`consumers_enabled`. A create, a delete or a replacement, or any other attribute, fails.
Used by scripts/deploy-local.sh; prints one line per check and exits 1 on a problem.
"""

import json
import sys

# What `consumers_enabled` may change, per resource type.
ALLOWED = {
    "aws_lambda_event_source_mapping": {"enabled"},
    "aws_cloudwatch_event_rule": {"state", "is_enabled"},
    "aws_cloudwatch_metric_alarm": {"alarm_actions", "ok_actions"},
}

with open(sys.argv[1], encoding="utf-8") as f:
    plan = json.load(f)

problems = []


def check(ok, what, detail=""):
    if not ok:
        problems.append(what)
    print(f"  {'ok  ' if ok else 'FAIL'} {what}" + (f" ({detail})" if detail and not ok else ""))


def changed(change):
    before, after = change.get("before") or {}, change.get("after") or {}
    unknown = change.get("after_unknown") or {}
    return sorted(
        k
        for k in set(before) | set(after) | set(unknown)
        if unknown.get(k) is True or before.get(k) != after.get(k)
    )


def prior_resources(module):
    yield from module.get("resources", [])
    for child in module.get("child_modules", []):
        yield from prior_resources(child)


mappings = [
    r["address"]
    for r in prior_resources(plan.get("prior_state", {}).get("values", {}).get("root_module", {}))
    if r.get("mode") == "managed" and r["type"] == "aws_lambda_event_source_mapping"
]
check(len(mappings) >= 3, f"{len(mappings)} event source mappings deployed", "expected one per queue function")

switched = set()
for rc in plan.get("resource_changes", []):
    actions = rc["change"]["actions"]
    if actions == ["no-op"] or rc.get("mode") != "managed":
        continue
    address, kind = rc["address"], rc["type"]
    if actions != ["update"]:
        check(False, f"{address} is updated in place", f"planned {'/'.join(actions)}")
        continue
    attributes = changed(rc["change"])
    extra = [a for a in attributes if a not in ALLOWED.get(kind, set())]
    check(not extra, f"{address} changes only {', '.join(attributes)}", f"also {', '.join(extra)}")
    after = rc["change"].get("after") or {}
    if kind == "aws_lambda_event_source_mapping":
        check(after.get("enabled") is False, f"{address} disabled", f"enabled={after.get('enabled')}")
        switched.add(address)
    if kind == "aws_cloudwatch_event_rule":
        check(after.get("state") == "DISABLED", f"{address} disabled", f"state={after.get('state')}")
        switched.add(address)

for address in mappings:
    check(address in switched, f"{address} is switched by consumers_enabled")
check(
    any(".aws_cloudwatch_event_rule." in a or a.startswith("aws_cloudwatch_event_rule.") for a in switched),
    "the sweeper's schedule is switched by consumers_enabled",
)

if problems:
    print(f"check_flip_plan: {len(problems)} problem(s)", file=sys.stderr)
    sys.exit(1)
print(f"  the consumers switch in place: {len(switched)} resources")
