//! The contract between `infra/` and docflow's code, as checks over an evaluated
//! [`Infra`]. [`check`] returns every violation it finds, each starting with where it is
//! (`module.matching: aws_sqs_queue.source: …`), so a test can assert that the list is
//! empty, or that it names the fault planted in a broken copy.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Display;

use hcl::{Map, Value};

use super::terraform::{Infra, Module, Resource, attr, blocks, reference};

/// How a function is invoked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trigger {
    /// By the SQS event source mapping of its own queue.
    Queue,
    /// By an EventBridge schedule.
    Schedule,
    /// Only by an operator (`aws lambda invoke`, infra/README.md, Deploy): no event source
    /// mapping, no schedule, no function URL and no permission for any principal.
    Operator,
}

/// What one Lambda function is allowed to reach (DESIGN.md, and what the code does).
pub struct FunctionContract {
    pub name: &'static str,
    pub trigger: Trigger,
    /// Queue functions it sends messages to.
    pub sends_to: &'static [&'static str],
    pub s3_reads: &'static [&'static str],
    pub s3_writes: &'static [&'static str],
    pub sends_email: bool,
    /// May call Textract (OCR_PROVIDER = textract), which only accepts `"*"`.
    pub may_use_textract: bool,
    /// Environment variables naming a prefix of per-tenant secrets the code reads
    /// (`<prefix><tenant id>`): each must be set, and `secretsmanager:GetSecretValue`
    /// granted on exactly `<prefix>*` besides the app secret.
    pub tenant_secrets: &'static [&'static str],
}

impl FunctionContract {
    /// Whether `var.live_versions` pins the function's alias (a rollback that survives the
    /// next apply). Not for an operator-invoked function: its alias always names the
    /// version the apply publishes. A rollback moves what a queue or a schedule runs
    /// back to earlier code; the migrate function's code is the migrations, which are
    /// never rolled back (the schema only moves forward, and the functions refuse a
    /// schema older than their code), so there is no earlier version to return to, and
    /// `live_versions` accepts no `migrate` key (its validation in variables.tf).
    pub fn follows_live_versions(&self) -> bool {
        self.trigger != Trigger::Operator
    }
}

pub const FUNCTIONS: &[FunctionContract] = &[
    FunctionContract {
        name: "ingestion",
        trigger: Trigger::Queue,
        sends_to: &["matching"],
        s3_reads: &["documents/", "ingestions/"],
        s3_writes: &["ingestions/"],
        sends_email: false,
        may_use_textract: true,
        tenant_secrets: &[],
    },
    FunctionContract {
        name: "matching",
        trigger: Trigger::Queue,
        sends_to: &[],
        s3_reads: &[],
        s3_writes: &[],
        sends_email: true,
        may_use_textract: false,
        tenant_secrets: &[],
    },
    FunctionContract {
        name: "document-output",
        trigger: Trigger::Queue,
        sends_to: &[],
        s3_reads: &["documents/"],
        s3_writes: &[],
        sends_email: true,
        may_use_textract: false,
        tenant_secrets: &["DATEV_CREDENTIALS_PREFIX"],
    },
    FunctionContract {
        name: "sweeper",
        trigger: Trigger::Schedule,
        sends_to: &["ingestion", "matching", "document-output"],
        s3_reads: &[],
        s3_writes: &[],
        sends_email: true,
        may_use_textract: false,
        tenant_secrets: &["DATEV_CREDENTIALS_PREFIX"],
    },
    // Migrates the schema as its owner and sets up the four functions' database roles
    // (infra/migrate.tf); besides its own secret it reads the four function secrets,
    // the one exception to "no role reads another function's secret":
    // FUNCTION_SECRETS_READER.
    FunctionContract {
        name: "migrate",
        trigger: Trigger::Operator,
        sends_to: &[],
        s3_reads: &[],
        s3_writes: &[],
        sends_email: false,
        may_use_textract: false,
        tenant_secrets: &[],
    },
];

/// A function whose role may read other functions' secrets, and whose.
pub struct SecretsException {
    pub function: &'static str,
    pub reads_secrets_of: &'static [&'static str],
}

/// The one exception to "no role reads another function's secret":
/// the migrate function, and only it, reads the four function secrets. It sets each
/// function's database role's password (`ALTER ROLE … PASSWORD`) from the
/// `database_url` in that function's secret, then connects with that URL, as the role,
/// through RDS Proxy, to check that the role can read and write (rolled back). Without
/// them it could neither give the roles the passwords the functions log in with nor
/// check them. It only reads them, and it is told exactly which
/// ([`FUNCTION_SECRETS_ENV`]); its own secret (the schema owner's) no other role reads.
pub const FUNCTION_SECRETS_READER: SecretsException = SecretsException {
    function: "migrate",
    reads_secrets_of: &["ingestion", "matching", "document-output", "sweeper"],
};

/// Whether the role of `function` may read the secret of `owner`, another function.
pub fn may_read_secret_of(function: &str, owner: &str) -> bool {
    function == FUNCTION_SECRETS_READER.function
        && FUNCTION_SECRETS_READER.reads_secrets_of.contains(&owner)
}

/// The environment variable of [`FUNCTION_SECRETS_READER`]: a JSON object of each
/// function whose secret it reads to that secret's ARN. Not named `*SECRET*`: every
/// variable but `DOCFLOW_SECRET_ID` named like a credential is reported
/// (`check_environment_holds_no_secret`).
pub const FUNCTION_SECRETS_ENV: &str = "DOCFLOW_FUNCTION_CREDENTIAL_ARNS";

/// The documents bucket every S3 grant must be scoped to.
const DOCUMENTS_BUCKET_ARN: &str = "${aws_s3_bucket.documents.arn}";
const SECRET_ENV: &str = "DOCFLOW_SECRET_ID";
const QUEUE_VISIBILITY_ENV: &str = "QUEUE_VISIBILITY_TIMEOUT_SECONDS";
const BATCHING_WINDOW_ENV: &str = "MAXIMUM_BATCHING_WINDOW_SECONDS";
/// Per-tenant secrets are granted by name prefix in the function's own account and region.
const TENANT_SECRETS_ARN: &str = "arn:${data.aws_partition.current.partition}:secretsmanager:${data.aws_region.current.name}:${data.aws_caller_identity.current.account_id}:secret:";
const CONSUME_ACTIONS: &[&str] = &[
    "sqs:ReceiveMessage",
    "sqs:DeleteMessage",
    "sqs:ChangeMessageVisibility",
    "sqs:GetQueueAttributes",
];
/// Services whose actions must never be granted on `"*"` or a wildcard ARN.
const SCOPED_SERVICES: &[&str] = &["sqs", "s3", "secretsmanager"];
/// Every action a function's role may be granted; each is checked below.
const ALLOWED_ACTIONS: &[&str] = &[
    "sqs:ReceiveMessage",
    "sqs:DeleteMessage",
    "sqs:ChangeMessageVisibility",
    "sqs:GetQueueAttributes",
    "sqs:SendMessage",
    "secretsmanager:GetSecretValue",
    "s3:GetObject",
    "s3:PutObject",
    "s3:ListBucket",
    "ses:SendEmail",
    "textract:DetectDocumentText",
    "textract:StartDocumentTextDetection",
    "textract:GetDocumentTextDetection",
    "logs:CreateLogStream",
    "logs:PutLogEvents",
    "kms:Decrypt",
    "kms:GenerateDataKey",
    "xray:PutTraceSegments",
    "xray:PutTelemetryRecords",
    "ec2:DescribeSubnets",
];
/// What X-Ray active tracing needs the role to grant (X-Ray takes only `"*"` for them).
const TRACE_ACTIONS: &[&str] = &["xray:PutTraceSegments", "xray:PutTelemetryRecords"];
/// The environment variable holding a function's EMF namespace.
const METRICS_NAMESPACE_ENV: &str = docflow::telemetry::metrics::NAMESPACE_ENV;
/// The environment variable with the TLS mode the code applies to every database
/// connection, over the secret URL's `sslmode`.
const DATABASE_TLS_ENV: &str = docflow::settings::DATABASE_TLS_ENV;
/// The values `var.database_tls` may take (its validation in variables.tf).
const DATABASE_TLS_MODES: &[&str] = &["verify-full", "require"];
/// Managed policies a function's role may have: Lambda's VPC network interfaces only.
const ALLOWED_MANAGED_POLICIES: &[&str] =
    &[":iam::aws:policy/service-role/AWSLambdaENIManagementAccess"];
/// What SQS and Lambda use when an attribute is not set.
const DEFAULT_RETENTION_SECONDS: f64 = 604_800.0;
const DEFAULT_VISIBILITY_SECONDS: f64 = 30.0;
const DEFAULT_TIMEOUT_SECONDS: f64 = 3.0;
const DEFAULT_BATCH_SIZE: f64 = 10.0;

/// Every violation of the contract in `infra`, empty when there is none.
pub fn check(infra: &Infra) -> Vec<String> {
    let mut found = Violations::default();
    check_every_function_exists(infra, &mut found);
    for module in infra.modules() {
        for mapping in module.of_kind("aws_lambda_event_source_mapping") {
            check_event_source_mapping(module, mapping, &mut found);
        }
        for queue in module.of_kind("aws_sqs_queue") {
            check_queue_is_encrypted(module, queue, &mut found);
        }
        for document in module.of_kind("aws_iam_policy_document") {
            check_no_wildcard_resources(module, document, &mut found);
        }
        for version in module.of_kind("aws_secretsmanager_secret_version") {
            found.add(
                module,
                version,
                "puts a secret value into the Terraform state; create the secret empty and let an operator fill it",
            );
        }
        for function in module.of_kind("aws_lambda_function") {
            check_function(infra, module, function, &mut found);
        }
    }
    for instance in &infra.instances {
        check_instance_has_one_mapping(instance, &mut found);
        check_max_receive_count_is_one_variable(infra, instance, &mut found);
        check_queue_alarms(instance, &mut found);
    }
    check_database_tls(infra, &mut found);
    check_aliases(infra, &mut found);
    check_metric_alarms(infra, &mut found);
    check_dashboard(infra, &mut found);
    found.0
}

#[derive(Default)]
struct Violations(Vec<String>);

impl Violations {
    fn add(&mut self, module: &Module, resource: &Resource, message: impl Display) {
        self.0.push(format!(
            "{}: {}: {message}",
            module.address, resource.address
        ));
    }

    fn add_to(&mut self, place: &str, message: impl Display) {
        self.0.push(format!("{place}: {message}"));
    }
}

// --- which functions exist ---------------------------------------------------------------

fn check_every_function_exists(infra: &Infra, found: &mut Violations) {
    let instance_names: Vec<String> = infra
        .instances
        .iter()
        .map(|i| text(i.vars.get("name")))
        .collect();
    for contract in FUNCTIONS {
        let count = match contract.trigger {
            Trigger::Queue => instance_names
                .iter()
                .filter(|n| *n == contract.name)
                .count(),
            Trigger::Schedule | Trigger::Operator => infra
                .root
                .of_kind("aws_lambda_function")
                .filter(|f| contract_name(f) == contract.name)
                .count(),
        };
        if count != 1 {
            found.add_to(
                "infra",
                format!(
                    "expected one {:?}-triggered function {:?}, found {count}",
                    contract.trigger, contract.name
                ),
            );
        }
    }
    for name in &instance_names {
        if !FUNCTIONS
            .iter()
            .any(|c| c.name == name && c.trigger == Trigger::Queue)
        {
            found.add_to(
                "infra",
                format!("queue-function instance {name:?} is not in the contract"),
            );
        }
    }
}

/// `staging-docflow-ingestion` -> `ingestion`.
pub fn contract_name(function: &Resource) -> String {
    let name = text(function.attr("function_name").as_ref());
    match name.split_once("docflow-") {
        Some((_, short)) => short.to_string(),
        None => name,
    }
}

fn contract_for(function: &Resource) -> Option<&'static FunctionContract> {
    let name = contract_name(function);
    FUNCTIONS.iter().find(|c| c.name == name)
}

// --- SQS triggers ----------------------------------------------------------------------------

/// The queue and function an event source mapping connects, and the alias it invokes
/// the function through (`None`: the function itself).
struct SqsTrigger<'a> {
    queue: &'a Resource,
    function: &'a Resource,
    alias: Option<&'a Resource>,
}

fn sqs_trigger<'a>(module: &'a Module, mapping: &'a Resource) -> Result<SqsTrigger<'a>, String> {
    let queue = referenced(module, mapping.attr("event_source_arn"), "aws_sqs_queue")
        .ok_or("event_source_arn is not the ARN of a queue of this module")?;
    let (function, alias) = invoked(module, mapping.attr("function_name")).ok_or(
        "function_name is neither a function of this module nor the ARN of an alias of one",
    )?;
    Ok(SqsTrigger {
        queue,
        function,
        alias,
    })
}

/// What `value` invokes: a function of `module` (`"${aws_lambda_function.x.…}"`), or the
/// ARN of an alias of `module` (`"${aws_lambda_alias.x.arn}"`) whose `function_name`
/// refers to a function of `module`, with that alias.
fn invoked(module: &Module, value: Option<Value>) -> Option<(&Resource, Option<&Resource>)> {
    if let Some(function) = referenced(module, value.clone(), "aws_lambda_function") {
        return Some((function, None));
    }
    let is_arn = value
        .as_ref()
        .and_then(reference)
        .is_some_and(|parts| parts.last() == Some(&"arn"));
    let alias = referenced(module, value, "aws_lambda_alias").filter(|_| is_arn)?;
    let function = referenced(module, alias.attr("function_name"), "aws_lambda_function")?;
    Some((function, Some(alias)))
}

/// The aliases of `module` whose `function_name` refers to `function`.
fn aliases_of<'a>(module: &'a Module, function: &Resource) -> Vec<&'a Resource> {
    module
        .of_kind("aws_lambda_alias")
        .filter(|alias| {
            referenced(module, alias.attr("function_name"), "aws_lambda_function")
                .is_some_and(|f| f.address == function.address)
        })
        .collect()
}

fn sqs_triggers(module: &Module) -> Vec<SqsTrigger<'_>> {
    module
        .of_kind("aws_lambda_event_source_mapping")
        .filter_map(|mapping| sqs_trigger(module, mapping).ok())
        .collect()
}

/// The resource of `kind` in `module` that `value` (`"${kind.name.attr}"`) refers to.
fn referenced<'a>(module: &'a Module, value: Option<Value>, kind: &str) -> Option<&'a Resource> {
    let value = value?;
    let parts = reference(&value)?;
    (parts.len() == 3 && parts[0] == kind)
        .then(|| module.resource(&format!("{kind}.{}", parts[1])))
        .flatten()
}

fn check_event_source_mapping(module: &Module, mapping: &Resource, found: &mut Violations) {
    let response_types = strings(mapping.attr("function_response_types").as_ref());
    if !response_types
        .iter()
        .any(|t| t == "ReportBatchItemFailures")
    {
        found.add(
            module,
            mapping,
            "function_response_types lacks ReportBatchItemFailures: Lambda would ignore batchItemFailures and retry whole batches",
        );
    }

    let concurrency = blocks(&mapping.body, "scaling_config")
        .next()
        .and_then(|b| number(attr(&b.body, "maximum_concurrency").as_ref()));
    match concurrency {
        Some(n) if (2.0..=1000.0).contains(&n) => {}
        Some(n) => found.add(module, mapping, format!("scaling_config.maximum_concurrency is {n}, must be 2 to 1000")),
        None => found.add(
            module,
            mapping,
            "scaling_config.maximum_concurrency is not set: with ReportBatchItemFailures nothing else bounds the load on the database",
        ),
    }

    let batch_size = number_or(mapping.attr("batch_size"), DEFAULT_BATCH_SIZE);
    let window = number_or(mapping.attr("maximum_batching_window_in_seconds"), 0.0);
    if batch_size > 10.0 && window < 1.0 {
        found.add(
            module,
            mapping,
            format!("batch_size {batch_size} above 10 needs a batching window of at least 1 s"),
        );
    }

    let trigger = match sqs_trigger(module, mapping) {
        Ok(trigger) => trigger,
        Err(why) => return found.add(module, mapping, why),
    };
    if trigger.alias.is_none() {
        found.add(
            module,
            mapping,
            format!(
                "function_name invokes {} itself, not an alias of it: moving the alias (a rollback) would not change what this queue runs",
                trigger.function.address
            ),
        );
    }
    check_visibility_timeout(module, &trigger, window, found);
    check_code_knows_the_visibility(module, &trigger, found);
    check_code_knows_the_batching_window(module, &trigger, window, found);
    check_redrive_policy(module, &trigger, found);
}

fn check_visibility_timeout(module: &Module, t: &SqsTrigger, window: f64, found: &mut Violations) {
    let visibility = number_or(
        t.queue.attr("visibility_timeout_seconds"),
        DEFAULT_VISIBILITY_SECONDS,
    );
    let timeout = number_or(t.function.attr("timeout"), DEFAULT_TIMEOUT_SECONDS);
    if visibility.is_nan() || timeout.is_nan() {
        return found.add(
            module,
            t.queue,
            "visibility timeout or function timeout cannot be evaluated before apply",
        );
    }
    let minimum = 6.0 * timeout + window;
    if visibility < minimum {
        found.add(
            module,
            t.queue,
            format!(
                "visibility timeout {visibility} s is below 6 x the timeout of {} ({timeout} s) + batching window ({window} s) = {minimum} s",
                t.function.address
            ),
        );
    }
}

/// The batch runtime must know the queue's visibility timeout, or a heartbeat could
/// shorten it (`QUEUE_VISIBILITY_TIMEOUT_SECONDS`, validated at cold start).
fn check_code_knows_the_visibility(module: &Module, t: &SqsTrigger, found: &mut Violations) {
    let visibility = number_or(
        t.queue.attr("visibility_timeout_seconds"),
        DEFAULT_VISIBILITY_SECONDS,
    );
    let env = environment(t.function);
    let told = env
        .get(QUEUE_VISIBILITY_ENV)
        .and_then(|v| v.as_str().and_then(|s| s.parse::<f64>().ok()));
    if told != Some(visibility) {
        found.add(
            module,
            t.function,
            format!(
                "{QUEUE_VISIBILITY_ENV} is {told:?}, the visibility timeout of {} is {visibility} s",
                t.queue.address
            ),
        );
    }
}

/// The batch runtime skips the extension before work when the queue's visibility minus
/// the batching window still covers it (`MAXIMUM_BATCHING_WINDOW_SECONDS`, unset = 0): a
/// function told a shorter window than its mapping has would skip it wrongly.
fn check_code_knows_the_batching_window(
    module: &Module,
    t: &SqsTrigger,
    window: f64,
    found: &mut Violations,
) {
    let env = environment(t.function);
    let told = match env.get(BATCHING_WINDOW_ENV) {
        None => Some(0.0),
        Some(v) => v.as_str().and_then(|s| s.parse::<f64>().ok()),
    };
    if told != Some(window) {
        found.add(
            module,
            t.function,
            format!(
                "{BATCHING_WINDOW_ENV} is {told:?}, the batching window of its event source mapping is {window} s"
            ),
        );
    }
}

fn check_redrive_policy(module: &Module, t: &SqsTrigger, found: &mut Violations) {
    let Some(policy) = redrive_policy(t.queue) else {
        return found.add(
            module,
            t.queue,
            "has no redrive policy: failing messages would never reach a dead-letter queue",
        );
    };
    let dlq = policy
        .get("deadLetterTargetArn")
        .and_then(|arn| referenced(module, Some(json_to_value(arn)), "aws_sqs_queue"));
    let Some(dlq) = dlq else {
        return found.add(
            module,
            t.queue,
            "redrive policy's deadLetterTargetArn is not a queue of this module",
        );
    };
    let retention = number_or(
        t.queue.attr("message_retention_seconds"),
        DEFAULT_RETENTION_SECONDS,
    );
    let dlq_retention = number_or(
        dlq.attr("message_retention_seconds"),
        DEFAULT_RETENTION_SECONDS,
    );
    if dlq_retention.is_nan() || retention.is_nan() || dlq_retention <= retention {
        found.add(
            module,
            dlq,
            format!(
                "DLQ retention {dlq_retention} s must be longer than the retention of {} ({retention} s): a message keeps its enqueue time when it moves",
                t.queue.address
            ),
        );
    }

    let max_receive_count = policy
        .get("maxReceiveCount")
        .and_then(serde_json::Value::as_f64);
    let env_count = environment(t.function)
        .get("MAX_RECEIVE_COUNT")
        .and_then(Value::as_str)
        .and_then(|s| s.parse::<f64>().ok());
    match (max_receive_count, env_count) {
        (Some(redrive), Some(env)) if redrive == env && redrive >= 1.0 => {}
        (redrive, env) => found.add(
            module,
            t.function,
            format!(
                "MAX_RECEIVE_COUNT {env:?} does not match the redrive policy's maxReceiveCount {redrive:?} of {}",
                t.queue.address
            ),
        ),
    }
}

fn redrive_policy(queue: &Resource) -> Option<serde_json::Map<String, serde_json::Value>> {
    let text = queue.attr("redrive_policy")?;
    serde_json::from_str(text.as_str()?).ok()
}

fn json_to_value(json: &serde_json::Value) -> Value {
    match json {
        serde_json::Value::String(s) => Value::from(s.as_str()),
        other => Value::from(other.to_string()),
    }
}

fn check_instance_has_one_mapping(instance: &Module, found: &mut Violations) {
    let count = instance.of_kind("aws_lambda_event_source_mapping").count();
    if count != 1 {
        found.add_to(
            &instance.address,
            format!("has {count} SQS event source mappings, expected 1"),
        );
    }
}

/// Code and redrive policy must read the same variable: change it and both must follow.
fn check_max_receive_count_is_one_variable(
    infra: &Infra,
    instance: &Module,
    found: &mut Violations,
) {
    let probe = number(instance.vars.get("max_receive_count")).unwrap_or(3.0) + 4.0;
    let changed = infra.with_inputs(
        instance,
        &[("max_receive_count", Value::from(probe as u64))],
    );
    for t in sqs_triggers(&changed) {
        let redrive = redrive_policy(t.queue)
            .and_then(|p| p.get("maxReceiveCount").and_then(serde_json::Value::as_f64));
        let env = environment(t.function)
            .get("MAX_RECEIVE_COUNT")
            .and_then(Value::as_str)
            .and_then(|s| s.parse::<f64>().ok());
        if redrive != Some(probe) {
            found.add(
                instance,
                t.queue,
                "the redrive policy's maxReceiveCount does not follow var.max_receive_count",
            );
        }
        if env != Some(probe) {
            found.add(
                instance,
                t.function,
                "MAX_RECEIVE_COUNT does not follow var.max_receive_count",
            );
        }
    }
}

fn check_queue_is_encrypted(module: &Module, queue: &Resource, found: &mut Violations) {
    let sse_sqs = queue.attr("sqs_managed_sse_enabled") == Some(Value::Bool(true));
    let kms = queue
        .attr("kms_master_key_id")
        .is_some_and(|k| k.as_str().is_some_and(|s| !s.is_empty()));
    if !sse_sqs && !kms {
        found.add(
            module,
            queue,
            "is not encrypted: set sqs_managed_sse_enabled = true or kms_master_key_id",
        );
    }
}

fn check_queue_alarms(instance: &Module, found: &mut Violations) {
    for t in sqs_triggers(instance) {
        let dlq = redrive_policy(t.queue)
            .and_then(|p| p.get("deadLetterTargetArn").map(json_to_value))
            .and_then(|arn| referenced(instance, Some(arn), "aws_sqs_queue"));
        let queue_name = |q: &Resource| format!("${{{}.name}}", q.address);
        let function_name = format!("${{{}.function_name}}", t.function.address);
        let wanted = vec![
            (
                "AWS/SQS",
                "ApproximateAgeOfOldestMessage",
                "QueueName",
                queue_name(t.queue),
            ),
            ("AWS/Lambda", "Throttles", "FunctionName", function_name),
        ];
        for (namespace, metric, dimension, subject) in wanted {
            if find_alarm(instance, namespace, metric, dimension, &subject).is_none() {
                found.add_to(
                    &instance.address,
                    format!("no alarm with actions on {namespace} {metric} of {subject}"),
                );
            }
        }
        if let Some(dlq) = dlq {
            check_dlq_alarm(instance, &queue_name(dlq), found);
            check_dlq_age_alarm(instance, t.queue, dlq, found);
        }
    }
}

/// The DLQ alarm fires on new arrivals. On the depth (visible messages above 0) it stays
/// in ALARM while old messages wait, and a second failure pages no one; SQS does not
/// count messages a redrive policy moves as `NumberOfMessagesSent`. So: DIFF or
/// RATE of the DLQ's visible messages above 0, taken of `FILL(visible, 0)`: SQS publishes
/// no datapoint for a queue inactive for six hours, which a healthy DLQ is, so without
/// FILL the first dead letter after a quiet spell has no earlier point, DIFF returns
/// nothing and the alarm stays OK.
fn check_dlq_alarm(instance: &Module, dlq_name: &str, found: &mut Violations) {
    let metric = "ApproximateNumberOfMessagesVisible";
    let reads_dlq = |q: &hcl::Block| {
        blocks(&q.body, "metric").any(|m| {
            text(attr(&m.body, "namespace").as_ref()) == "AWS/SQS"
                && text(attr(&m.body, "metric_name").as_ref()) == metric
                && attr(&m.body, "dimensions")
                    .and_then(|d| d.as_object().and_then(|d| d.get("QueueName")).cloned())
                    == Some(Value::from(dlq_name))
        })
    };
    let alarm = instance
        .of_kind("aws_cloudwatch_metric_alarm")
        .find(|alarm| {
            !strings(alarm.attr("alarm_actions").as_ref()).is_empty()
                && blocks(&alarm.body, "metric_query").any(&reads_dlq)
        });
    let Some(alarm) = alarm else {
        return found.add_to(
            &instance.address,
            format!("no alarm with actions on AWS/SQS {metric} of {dlq_name}"),
        );
    };
    let ids: Vec<String> = blocks(&alarm.body, "metric_query")
        .filter(|q| reads_dlq(q))
        .map(|q| text(attr(&q.body, "id").as_ref()))
        .collect();
    let returned: Vec<String> = blocks(&alarm.body, "metric_query")
        .filter(|q| attr(&q.body, "return_data") == Some(Value::Bool(true)))
        .map(|q| text(attr(&q.body, "expression").as_ref()).replace(' ', ""))
        .collect();
    let growth_of = |of: &dyn Fn(&str) -> String| {
        returned.iter().any(|expression| {
            ids.iter().any(|id| {
                *expression == format!("DIFF({})", of(id))
                    || *expression == format!("RATE({})", of(id))
            })
        })
    };
    let filled = growth_of(&|id| format!("FILL({id},0)"));
    let unfilled = growth_of(&|id| id.to_string());
    let fires_on_first = number(alarm.attr("threshold").as_ref()) == Some(0.0)
        && text(alarm.attr("comparison_operator").as_ref()) == "GreaterThanThreshold";
    if !((filled || unfilled) && fires_on_first) {
        found.add(
            instance,
            alarm,
            "must fire on new messages in the DLQ (DIFF or RATE of FILL(<its visible messages>, 0) > 0), not on its depth, which stays in ALARM while old messages wait",
        );
    } else if !filled {
        found.add(
            instance,
            alarm,
            format!(
                "takes DIFF or RATE of {ids:?} without FILL(<id>, 0): SQS publishes no datapoint for a queue inactive for six hours, which an empty DLQ is, so the first dead letter after a quiet spell has no earlier point and never fires the alarm"
            ),
        );
    }
}

/// A dead letter nobody handles expires unseen: an alarm with actions on the Maximum of
/// the DLQ's ApproximateAgeOfOldestMessage, firing while it can still be redriven. A
/// message keeps its enqueue time when it moves, so it expires the DLQ's retention after
/// it entered the source queue, where it may have waited the source's whole retention;
/// the DLQ's age counts from its arrival there. So the threshold plus the source's
/// retention must stay below the DLQ's retention.
fn check_dlq_age_alarm(
    instance: &Module,
    queue: &Resource,
    dlq: &Resource,
    found: &mut Violations,
) {
    let metric = "ApproximateAgeOfOldestMessage";
    let subject = format!("${{{}.name}}", dlq.address);
    let Some(alarm) = find_alarm(instance, "AWS/SQS", metric, "QueueName", &subject) else {
        return found.add_to(
            &instance.address,
            format!(
                "no alarm with actions on AWS/SQS {metric} of {subject}: a dead letter nobody handles expires unseen"
            ),
        );
    };
    if text(alarm.attr("statistic").as_ref()) != "Maximum" {
        found.add(
            instance,
            alarm,
            format!("must watch the Maximum of {metric} (an age, not a count)"),
        );
    }
    let threshold = number_or(alarm.attr("threshold"), f64::NAN);
    let retention = number_or(
        queue.attr("message_retention_seconds"),
        DEFAULT_RETENTION_SECONDS,
    );
    let dlq_retention = number_or(
        dlq.attr("message_retention_seconds"),
        DEFAULT_RETENTION_SECONDS,
    );
    if threshold.is_nan() || retention.is_nan() || dlq_retention.is_nan() {
        return found.add(
            instance,
            alarm,
            "its threshold or a queue's retention cannot be evaluated before apply",
        );
    }
    if threshold + retention >= dlq_retention {
        found.add(
            instance,
            alarm,
            format!(
                "fires after {threshold} s in the DLQ, too late: a dead letter expires {dlq_retention} s after it entered {} (it keeps its enqueue time), where it may have waited {retention} s, so the threshold must stay below {} s",
                queue.address,
                dlq_retention - retention
            ),
        );
    }
}

fn find_alarm<'a>(
    module: &'a Module,
    namespace: &str,
    metric: &str,
    dimension: &str,
    subject: &str,
) -> Option<&'a Resource> {
    module.of_kind("aws_cloudwatch_metric_alarm").find(|alarm| {
        text(alarm.attr("namespace").as_ref()) == namespace
            && text(alarm.attr("metric_name").as_ref()) == metric
            && alarm
                .attr("dimensions")
                .and_then(|d| d.as_object().and_then(|d| d.get(dimension)).cloned())
                == Some(Value::from(subject))
            && !strings(alarm.attr("alarm_actions").as_ref()).is_empty()
    })
}

// --- functions, their environment and their permissions -----------------------------------

pub fn environment(function: &Resource) -> Map<String, Value> {
    blocks(&function.body, "environment")
        .next()
        .and_then(|env| attr(&env.body, "variables"))
        .and_then(|vars| vars.as_object().cloned())
        .unwrap_or_default()
}

fn check_function(infra: &Infra, module: &Module, function: &Resource, found: &mut Violations) {
    for (key, expected) in [("runtime", "provided.al2023"), ("handler", "bootstrap")] {
        if text(function.attr(key).as_ref()) != expected {
            found.add(module, function, format!("{key} must be {expected:?}"));
        }
    }
    if strings(function.attr("architectures").as_ref()) != ["arm64"] {
        found.add(
            module,
            function,
            "architectures must be [\"arm64\"] (cargo lambda build --arm64)",
        );
    }

    let env = environment(function);
    check_environment_holds_no_secret(module, function, &env, found);
    check_claim_lease(module, function, &env, found);

    let Some(contract) = contract_for(function) else {
        return found.add(
            module,
            function,
            format!(
                "function {:?} is not in the contract",
                contract_name(function)
            ),
        );
    };
    match contract.trigger {
        Trigger::Queue => {}
        Trigger::Schedule => check_scheduled(module, function, found),
        Trigger::Operator => check_operator_invoked(infra, module, function, found),
    }
    check_queue_urls(infra, module, function, contract, &env, found);
    // No errors alarm for an operator-invoked function: it runs only when an operator
    // invokes it, synchronously, and that operator reads its result or its error
    // ("FunctionError" and the reason in the response) in the same command. Nothing
    // invokes it unattended, so an alarm would only repeat, later, what the one person
    // who could have caused the failure is already reading. The queue functions and the
    // sweeper run unattended: their error-rate alarms stay required.
    if contract.trigger != Trigger::Operator {
        check_errors_alarm(module, function, found);
    }
    check_function_secrets_env(infra, module, function, contract, &env, found);
    match role_policies(module, function) {
        Ok(statements) => {
            check_tracing(module, function, &statements, found);
            check_permissions(infra, module, function, contract, &env, &statements, found)
        }
        Err(why) => found.add(module, function, why),
    }
}

/// Production runs matching's claim lease at its default (150 s), longer than the
/// function's 120 s timeout. Terraform may set `MATCHING_CLAIM_LEASE_SECONDS`, but
/// never to a lease the function outlives: a second delivery would then run a document
/// whose first run is still writing. The local soak alone shortens it, with its
/// invocations' timeout.
fn check_claim_lease(
    module: &Module,
    function: &Resource,
    env: &Map<String, Value>,
    found: &mut Violations,
) {
    const VAR: &str = "MATCHING_CLAIM_LEASE_SECONDS";
    let Some(value) = env.get(VAR) else { return };
    let lease = text(Some(value)).trim_matches('"').parse::<f64>().ok();
    let timeout = number_or(function.attr("timeout"), 3.0);
    match lease {
        Some(lease) if lease > timeout => {}
        _ => found.add(
            module,
            function,
            format!(
                "{VAR} = {} does not outlast the function's timeout of {timeout} s",
                text(Some(value))
            ),
        ),
    }
}

/// Every function enforces the environment's database TLS mode. Its
/// `DATABASE_TLS` must be set and follow `var.database_tls` (probed with each value the
/// variable allows, so a hard-coded mode that happens to match the default is caught),
/// and the code must accept every such value, or the function fails its cold start.
/// Without it a secret's `sslmode=disable` or `prefer` silently downgrades the connection.
fn check_database_tls(infra: &Infra, found: &mut Violations) {
    for mode in DATABASE_TLS_MODES {
        if docflow::settings::parse_database_tls(mode).is_none() {
            found.add_to(
                "var.database_tls",
                format!("{mode:?} is allowed, but the code refuses it in {DATABASE_TLS_ENV}"),
            );
        }
    }
    let mut unset = BTreeSet::new();
    for module in infra.modules() {
        for function in module.of_kind("aws_lambda_function") {
            if !environment(function).contains_key(DATABASE_TLS_ENV) {
                unset.insert((module.address.clone(), function.address.clone()));
                found.add(
                    module,
                    function,
                    format!(
                        "sets no {DATABASE_TLS_ENV}: its connections take whatever sslmode \
                         the secret's database_url carries"
                    ),
                );
            }
        }
    }
    let mut drifting = BTreeSet::new();
    for mode in DATABASE_TLS_MODES {
        let probed = infra.with_root_inputs(&[("database_tls", Value::from(*mode))]);
        for module in probed.modules() {
            for function in module.of_kind("aws_lambda_function") {
                let key = (module.address.clone(), function.address.clone());
                let value = environment(function).get(DATABASE_TLS_ENV).cloned();
                if !unset.contains(&key) && value != Some(Value::from(*mode)) {
                    drifting.insert(key);
                }
            }
        }
    }
    for (module, function) in drifting {
        found.add_to(
            &format!("{module}: {function}"),
            format!("{DATABASE_TLS_ENV} does not follow var.database_tls"),
        );
    }
}

/// X-Ray active tracing, with the role allowed to send the segments.
fn check_tracing(
    module: &Module,
    function: &Resource,
    statements: &[Statement],
    found: &mut Violations,
) {
    let mode = blocks(&function.body, "tracing_config")
        .next()
        .and_then(|b| attr(&b.body, "mode"));
    if text(mode.as_ref()) != "Active" {
        found.add(
            module,
            function,
            "tracing_config.mode must be \"Active\" (X-Ray traces of every invocation)",
        );
    }
    for action in TRACE_ACTIONS {
        if !statements.iter().any(|s| s.grants(action)) {
            found.add(
                module,
                function,
                format!("active tracing needs {action}, which the role does not grant"),
            );
        }
    }
}

// --- metrics: alarms and the dashboard over the EMF lines the code writes -------------------

/// The alarms on docflow's own metrics every function must have: the metric (name from
/// the code, `docflow::telemetry::metrics`) and the function's name as the code writes it
/// in the `function` dimension (each crate's `FUNCTION`).
pub fn metric_alarm_contract() -> Vec<(&'static str, &'static str)> {
    use docflow::telemetry::metrics::{batch, output, sweeper as sweep};
    vec![
        (ingestion::FUNCTION, batch::RECORDS_FAILED_PERMANENTLY.name),
        (matching::FUNCTION, batch::RECORDS_FAILED_PERMANENTLY.name),
        (
            document_output::FUNCTION,
            batch::RECORDS_FAILED_PERMANENTLY.name,
        ),
        (document_output::FUNCTION, output::EXPORTS_IN_DOUBT.name),
        (sweeper::FUNCTION, sweep::GIVEN_UP.name),
    ]
}

/// The alarms on an age the code writes (a gauge, not a count): the metric and the
/// function, as in [`metric_alarm_contract`]; such an alarm must watch the `Maximum`.
pub fn age_alarm_contract() -> Vec<(&'static str, &'static str)> {
    use docflow::telemetry::metrics::sweeper as sweep;
    vec![(sweeper::FUNCTION, sweep::OLDEST_OPEN_TASK_AGE.name)]
}

/// Every Lambda function of `infra` with the namespace its code writes metrics to.
fn metric_namespaces(infra: &Infra) -> Vec<(String, Option<String>)> {
    infra
        .modules()
        .flat_map(|m| m.of_kind("aws_lambda_function"))
        .map(|f| {
            let namespace = environment(f)
                .get(METRICS_NAMESPACE_ENV)
                .map(|v| text(Some(v)));
            (contract_name(f), namespace)
        })
        .collect()
}

fn check_metric_alarms(infra: &Infra, found: &mut Violations) {
    let namespaces = metric_namespaces(infra);
    let function_dimension = docflow::telemetry::metrics::dimension::FUNCTION;
    let contract = metric_alarm_contract()
        .into_iter()
        .map(|(f, m)| (f, m, false))
        .chain(age_alarm_contract().into_iter().map(|(f, m)| (f, m, true)));
    for (function, metric, age) in contract {
        let Some((_, namespace)) = namespaces.iter().find(|(name, _)| name == function) else {
            continue; // check_every_function_exists reports it
        };
        let Some(namespace) = namespace else {
            found.add_to(
                function,
                format!("sets no {METRICS_NAMESPACE_ENV}: its metrics' namespace is unknown"),
            );
            continue;
        };
        let wanted = Value::Object(Map::from_iter([(
            function_dimension.to_owned(),
            Value::from(function),
        )]));
        let alarm = infra
            .modules()
            .flat_map(|m| m.of_kind("aws_cloudwatch_metric_alarm"))
            .find(|alarm| {
                text(alarm.attr("namespace").as_ref()) == *namespace
                    && text(alarm.attr("metric_name").as_ref()) == metric
                    && alarm.attr("dimensions") == Some(wanted.clone())
                    && !strings(alarm.attr("alarm_actions").as_ref()).is_empty()
            });
        match alarm {
            None => found.add_to(
                function,
                format!(
                    "no alarm with actions on {namespace} {metric} with exactly {{{function_dimension} = {function:?}}}, the metric the code writes"
                ),
            ),
            Some(alarm) if age => {
                if text(alarm.attr("statistic").as_ref()) != "Maximum" {
                    found.add_to(
                        &alarm.address,
                        format!("must watch the Maximum of {metric} (an age, not a count)"),
                    );
                }
            }
            Some(alarm) => {
                let fires_on_first = number(alarm.attr("threshold").as_ref()) == Some(0.0)
                    && text(alarm.attr("comparison_operator").as_ref()) == "GreaterThanThreshold"
                    && text(alarm.attr("statistic").as_ref()) == "Sum";
                if !fires_on_first {
                    found.add_to(
                        &alarm.address,
                        format!("must fire on the first {metric} (Sum > 0)"),
                    );
                }
            }
        }
    }
}

/// The dashboard: every graph of docflow's namespace shows a metric the code writes,
/// with the dimensions the code writes it with.
fn check_dashboard(infra: &Infra, found: &mut Violations) {
    use docflow::telemetry::metrics::{ALL, dimension};
    let dashboards: Vec<&Resource> = infra.root.of_kind("aws_cloudwatch_dashboard").collect();
    let [dashboard] = dashboards.as_slice() else {
        return found.add_to(
            "root",
            format!(
                "expected one aws_cloudwatch_dashboard, found {}",
                dashboards.len()
            ),
        );
    };
    let body: serde_json::Value = match dashboard
        .attr("dashboard_body")
        .and_then(|b| b.as_str().map(str::to_owned))
        .map(|b| serde_json::from_str(&b))
    {
        Some(Ok(body)) => body,
        _ => {
            return found.add_to(&dashboard.address, "dashboard_body is not JSON");
        }
    };
    let namespaces: BTreeSet<String> = metric_namespaces(infra)
        .into_iter()
        .filter_map(|(_, n)| n)
        .collect();
    let functions: BTreeSet<String> = metric_namespaces(infra)
        .into_iter()
        .map(|(f, _)| f)
        .collect();
    let widgets = body["widgets"].as_array().cloned().unwrap_or_default();
    let mut ours = 0;
    for widget in &widgets {
        for line in widget["properties"]["metrics"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let parts: Vec<&str> = line
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(serde_json::Value::as_str)
                .collect();
            let Some((namespace, rest)) = parts.split_first() else {
                continue;
            };
            if !namespaces.contains(*namespace) {
                continue;
            }
            ours += 1;
            let Some((metric, dims)) = rest.split_first() else {
                continue;
            };
            if !ALL.iter().any(|m| m.name == *metric) {
                found.add_to(
                    &dashboard.address,
                    format!("graphs {metric}, which the code does not write"),
                );
            }
            let dims: Vec<(&str, &str)> = dims
                .chunks(2)
                .map(|c| (c[0], c.get(1).copied().unwrap_or("")))
                .collect();
            // Per function; StageDuration also per stage (one of the code's stage names).
            let per_function = dims.first().is_some_and(|d| d.0 == dimension::FUNCTION)
                && functions.contains(dims[0].1);
            let grouped_ok = match &dims[..] {
                [_] => true,
                [_, (group, stage)] => {
                    *metric == docflow::telemetry::metrics::stages::DURATION.name
                        && *group == dimension::STAGE
                        && docflow::telemetry::metrics::stages::ALL.contains(stage)
                }
                _ => false,
            };
            if !per_function || !grouped_ok {
                found.add_to(
                    &dashboard.address,
                    format!("graphs {metric} with dimensions {dims:?}; the code writes it per {} of a function", dimension::FUNCTION),
                );
            }
        }
    }
    if ours == 0 {
        found.add_to(&dashboard.address, "graphs none of docflow's own metrics");
    }
}

fn check_environment_holds_no_secret(
    module: &Module,
    function: &Resource,
    env: &Map<String, Value>,
    found: &mut Violations,
) {
    let secret_id = env.get(SECRET_ENV).cloned().unwrap_or(Value::Null);
    let is_secret_arn = reference(&secret_id)
        .is_some_and(|r| r.len() == 3 && r[0] == "aws_secretsmanager_secret" && r[2] == "arn")
        || secret_id
            .as_str()
            .is_some_and(|s| s.starts_with("arn:") && s.contains(":secretsmanager:"));
    if !is_secret_arn {
        found.add(
            module,
            function,
            format!("{SECRET_ENV} must carry the secret's ARN, found {secret_id}"),
        );
    }
    const CREDENTIAL_NAMES: &[&str] = &[
        "PASSWORD",
        "API_KEY",
        "TOKEN",
        "DATABASE_URL",
        "WEBHOOK",
        "SECRET",
    ];
    const SECRET_VALUE_SOURCES: &[&str] = &[
        "secret_string",
        "secret_binary",
        "aws_secretsmanager_secret_version",
    ];
    for (name, value) in env {
        let value = value.to_string();
        if name != SECRET_ENV && CREDENTIAL_NAMES.iter().any(|c| name.contains(c)) {
            found.add(
                module,
                function,
                format!("environment variable {name} looks like a credential; credentials belong in the secret"),
            );
        }
        if SECRET_VALUE_SOURCES.iter().any(|s| value.contains(s)) {
            found.add(
                module,
                function,
                format!("environment variable {name} is read from a secret's value; pass the secret's ARN ({SECRET_ENV})"),
            );
        }
    }
}

/// A scheduled function is invoked by an EventBridge rule with a `schedule_expression`,
/// through an alias of it (a rollback moves the alias). What applies to an invocation is
/// what is set on the ARN invoked, so the alias also carries the permission for
/// EventBridge (`qualifier`: one on the function admits only the unqualified ARN) and the
/// asynchronous settings: no retries, or a retry could run beside the next scheduled run.
fn check_scheduled(module: &Module, function: &Resource, found: &mut Violations) {
    let targets: Vec<Option<&Resource>> = module
        .of_kind("aws_cloudwatch_event_target")
        .filter(|target| {
            referenced(module, target.attr("rule"), "aws_cloudwatch_event_rule")
                .is_some_and(|rule| rule.attr("schedule_expression").is_some())
        })
        .filter_map(|target| invoked(module, target.attr("arn")))
        .filter(|(f, _)| f.address == function.address)
        .map(|(_, alias)| alias)
        .collect();
    // The alias a permission or an invoke config applies to: its qualifier names it, or
    // its function_name is the alias's ARN. None: the unqualified function.
    let qualified = |resource: &Resource| -> Option<Option<String>> {
        let (f, by_arn) = invoked(module, resource.attr("function_name"))?;
        if f.address != function.address {
            return None;
        }
        let qualifier = resource.attr("qualifier").filter(|q| !q.is_null());
        let by_qualifier = qualifier.map(|q| {
            aliases_of(module, function)
                .into_iter()
                .find(|alias| {
                    q == Value::from(format!("${{{}.name}}", alias.address))
                        || Some(&q) == alias.attr("name").as_ref()
                })
                .map_or_else(|| text(Some(&q)), |alias| alias.address.clone())
        });
        Some(by_arn.map(|a| a.address.clone()).or(by_qualifier))
    };
    let permitted: Vec<Option<String>> = module
        .of_kind("aws_lambda_permission")
        .filter(|p| text(p.attr("principal").as_ref()) == "events.amazonaws.com")
        .filter_map(&qualified)
        .collect();
    if targets.is_empty() || permitted.is_empty() {
        return found.add(
            module,
            function,
            "is not invoked by an EventBridge schedule (rule with schedule_expression, target and lambda permission)",
        );
    }
    for target in targets {
        let Some(alias) = target else {
            found.add(
                module,
                function,
                "its schedule's target is the function itself, not an alias of it: moving the alias (a rollback) would not change what the schedule runs",
            );
            continue;
        };
        if !permitted.contains(&Some(alias.address.clone())) {
            found.add(
                module,
                function,
                format!(
                    "its schedule invokes {}, but no lambda permission for events.amazonaws.com is qualified with it (qualifier = {}.name): a permission on the function admits only the unqualified ARN",
                    alias.address, alias.address
                ),
            );
        }
        let no_retries = module
            .of_kind("aws_lambda_function_event_invoke_config")
            .filter(|config| qualified(config) == Some(Some(alias.address.clone())))
            .any(|config| number(config.attr("maximum_retry_attempts").as_ref()) == Some(0.0));
        if !no_retries {
            found.add(
                module,
                function,
                format!(
                    "no aws_lambda_function_event_invoke_config with maximum_retry_attempts = 0 on {} (qualifier), the alias its schedule invokes: asynchronous settings apply per version or alias, and Lambda's default retries a failed run twice, beside the next scheduled one",
                    alias.address
                ),
            );
        }
    }
}

/// Each function's own secret (its `DOCFLOW_SECRET_ID`), by contract name.
fn function_secrets(infra: &Infra) -> BTreeMap<String, String> {
    infra
        .modules()
        .flat_map(|m| m.of_kind("aws_lambda_function"))
        .filter_map(|f| {
            let secret = environment(f).get(SECRET_ENV).map(|v| text(Some(v)))?;
            Some((contract_name(f), secret))
        })
        .collect()
}

/// [`FUNCTION_SECRETS_READER`] is told which secrets it reads: [`FUNCTION_SECRETS_ENV`]
/// is a JSON object of exactly the functions it reads the secrets of, each to that
/// function's own `DOCFLOW_SECRET_ID`. No other function sets it.
fn check_function_secrets_env(
    infra: &Infra,
    module: &Module,
    function: &Resource,
    contract: &FunctionContract,
    env: &Map<String, Value>,
    found: &mut Violations,
) {
    let raw = env.get(FUNCTION_SECRETS_ENV);
    if contract.name != FUNCTION_SECRETS_READER.function {
        if raw.is_some() {
            found.add(
                module,
                function,
                format!(
                    "sets {FUNCTION_SECRETS_ENV}, but only {} may read other functions' secrets",
                    FUNCTION_SECRETS_READER.function
                ),
            );
        }
        return;
    }
    let Some(raw) = raw else {
        return found.add(
            module,
            function,
            format!("sets no {FUNCTION_SECRETS_ENV}: the code would not know which functions' secrets to read"),
        );
    };
    let parsed: Option<BTreeMap<String, String>> =
        serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(&text(Some(raw)))
            .ok()
            .and_then(|object| {
                object
                    .into_iter()
                    .map(|(name, arn)| arn.as_str().map(|arn| (name, arn.to_owned())))
                    .collect()
            });
    let secrets = function_secrets(infra);
    let expected: BTreeMap<String, String> = FUNCTION_SECRETS_READER
        .reads_secrets_of
        .iter()
        .map(|name| {
            let secret = secrets.get(*name).cloned().unwrap_or_default();
            (name.to_string(), secret)
        })
        .collect();
    if parsed.as_ref() != Some(&expected) {
        found.add(
            module,
            function,
            format!(
                "{FUNCTION_SECRETS_ENV} is {}, the contract says {expected:?} (each function's own {SECRET_ENV})",
                text(Some(raw))
            ),
        );
    }
}

/// The resources through which something other than an IAM identity's own call invokes a
/// function, with the attribute that names the function (or an alias's ARN).
const INVOKERS: &[(&str, &str)] = &[
    ("aws_lambda_event_source_mapping", "function_name"),
    ("aws_cloudwatch_event_target", "arn"),
    ("aws_lambda_permission", "function_name"),
    ("aws_lambda_function_url", "function_name"),
];

/// An operator-invoked function (migrate: `aws lambda invoke`, infra/README.md, Deploy)
/// is invoked by nothing else: no event source mapping, no EventBridge target, no
/// function URL and no resource-based permission for any principal, on the function or
/// on an alias of it, by reference or by name. Only an IAM identity allowed
/// `lambda:InvokeFunction` (the operator) can run it.
fn check_operator_invoked(
    infra: &Infra,
    module: &Module,
    function: &Resource,
    found: &mut Violations,
) {
    let name = text(function.attr("function_name").as_ref());
    // Its ARN, unqualified or with a version or alias.
    let arn_suffix = format!(":function:{name}");
    let qualified_arn = format!(":function:{name}:");
    let names_it = |m: &Module, value: Option<Value>| -> bool {
        let by_reference = m.address == module.address
            && invoked(module, value.clone()).is_some_and(|(f, _)| f.address == function.address);
        let value = text(value.as_ref());
        let by_name = !name.is_empty()
            && (value == name
                || value.ends_with(arn_suffix.as_str())
                || value.contains(qualified_arn.as_str()));
        by_reference || by_name
    };
    for m in infra.modules() {
        for &(kind, key) in INVOKERS {
            for resource in m.of_kind(kind) {
                if names_it(m, resource.attr(key)) {
                    found.add(
                        m,
                        resource,
                        format!(
                            "invokes {}, which only an operator may invoke (no event source mapping, schedule, function URL or permission)",
                            function.address
                        ),
                    );
                }
            }
        }
    }
}

/// Every alias follows its function's published versions: the function publishes one on
/// every change (`publish = true`; without it the alias could only point at `$LATEST`,
/// and there would be no earlier version to move it back to), the alias points at the
/// version the apply publishes, and `live_versions` pins it to an earlier one (a rollback
/// that survives the next apply), except an operator-invoked function's
/// ([`FunctionContract::follows_live_versions`]).
fn check_aliases(infra: &Infra, found: &mut Violations) {
    let unpinned = infra.with_root_inputs(&[("live_versions", Value::Object(Map::new()))]);
    for module in unpinned.modules() {
        for alias in module.of_kind("aws_lambda_alias") {
            let Some(function) =
                referenced(module, alias.attr("function_name"), "aws_lambda_function")
            else {
                found.add(
                    module,
                    alias,
                    "function_name does not refer to a function of this module",
                );
                continue;
            };
            if function.attr("publish") != Some(Value::Bool(true)) {
                found.add(
                    module,
                    function,
                    format!(
                        "publish must be true: {} can only follow published versions, and a rollback moves it to an earlier one",
                        alias.address
                    ),
                );
            }
            let published = Value::from(format!("${{{}.version}}", function.address));
            if alias.attr("function_version") != Some(published) {
                found.add(
                    module,
                    alias,
                    format!(
                        "function_version is {}, not the version the apply publishes ({}.version)",
                        text(alias.attr("function_version").as_ref()),
                        function.address
                    ),
                );
            }
        }
    }
    let pinned_version = "7";
    let all_pinned = Map::from_iter(
        FUNCTIONS
            .iter()
            .filter(|c| c.follows_live_versions())
            .map(|c| (c.name.to_string(), Value::from(pinned_version))),
    );
    let pinned = infra.with_root_inputs(&[("live_versions", Value::Object(all_pinned))]);
    for module in pinned.modules() {
        for alias in module.of_kind("aws_lambda_alias") {
            // Exempt (FunctionContract::follows_live_versions): checked above to name the
            // version the apply publishes, which is all it ever names.
            let exempt = referenced(module, alias.attr("function_name"), "aws_lambda_function")
                .and_then(contract_for)
                .is_some_and(|c| !c.follows_live_versions());
            if exempt {
                continue;
            }
            if alias.attr("function_version") != Some(Value::from(pinned_version)) {
                found.add(
                    module,
                    alias,
                    format!(
                        "function_version does not follow var.live_versions: pinned to {pinned_version:?}, it is {}",
                        text(alias.attr("function_version").as_ref())
                    ),
                );
            }
        }
    }
}

/// The function's error alarm is a rate: metric math that divides its `Errors` by its
/// `Invocations` and is what the alarm compares, so a busy function does not page on
/// one failed invocation in thousands and a quiet one still pages on the first.
fn check_errors_alarm(module: &Module, function: &Resource, found: &mut Violations) {
    let subject = format!("${{{}.function_name}}", function.address);
    let rate = module.of_kind("aws_cloudwatch_metric_alarm").find(|alarm| {
        !strings(alarm.attr("alarm_actions").as_ref()).is_empty()
            && error_rate_expression(alarm, &subject).is_some()
    });
    if rate.is_none() {
        found.add(
            module,
            function,
            "has no error-rate alarm with actions (Errors / Invocations metric math)",
        );
    }
}

/// The returned expression of an alarm's metric math when it divides the `Errors` of
/// `subject` by its `Invocations` (both `Sum` over the same period).
fn error_rate_expression(alarm: &Resource, subject: &str) -> Option<String> {
    let queries: Vec<_> = blocks(&alarm.body, "metric_query").collect();
    let metric_id = |name: &str| {
        queries.iter().find_map(|q| {
            let metric = blocks(&q.body, "metric").next()?;
            let of_subject = text(attr(&metric.body, "namespace").as_ref()) == "AWS/Lambda"
                && text(attr(&metric.body, "metric_name").as_ref()) == name
                && text(attr(&metric.body, "stat").as_ref()) == "Sum"
                && attr(&metric.body, "dimensions")
                    .and_then(|d| d.as_object().and_then(|d| d.get("FunctionName")).cloned())
                    == Some(Value::from(subject));
            of_subject
                .then(|| {
                    Some((
                        text(attr(&q.body, "id").as_ref()),
                        attr(&metric.body, "period"),
                    ))
                })
                .flatten()
        })
    };
    let (errors, errors_period) = metric_id("Errors")?;
    let (invocations, invocations_period) = metric_id("Invocations")?;
    if errors_period != invocations_period {
        return None;
    }
    let returned = queries
        .iter()
        .find(|q| attr(&q.body, "return_data") == Some(Value::Bool(true)))?;
    let expression = text(attr(&returned.body, "expression").as_ref());
    let divides = expression
        .replace(' ', "")
        .contains(&format!("{errors}/{invocations}"));
    divides.then_some(expression)
}

/// `document-output` -> `DOCUMENT_OUTPUT_QUEUE_URL`.
fn queue_url_env(function: &str) -> String {
    format!("{}_QUEUE_URL", function.to_uppercase().replace('-', "_"))
}

/// The `module.<x>` of the queue-function instance named `function`.
fn instance_address<'a>(infra: &'a Infra, function: &str) -> Option<&'a str> {
    infra
        .instances
        .iter()
        .find(|i| text(i.vars.get("name")) == function)
        .map(|i| i.address.as_str())
}

fn check_queue_urls(
    infra: &Infra,
    module: &Module,
    function: &Resource,
    contract: &FunctionContract,
    env: &Map<String, Value>,
    found: &mut Violations,
) {
    let actual: BTreeSet<(String, String)> = env
        .iter()
        .filter(|(name, _)| name.ends_with("_QUEUE_URL"))
        .map(|(name, value)| (name.clone(), text(Some(value))))
        .collect();
    let expected: BTreeSet<(String, String)> = contract
        .sends_to
        .iter()
        .map(|target| {
            let url = instance_address(infra, target)
                .map(|m| format!("${{{m}.queue_url}}"))
                .unwrap_or_default();
            (queue_url_env(target), url)
        })
        .collect();
    if actual != expected {
        found.add(
            module,
            function,
            format!("queue URLs in the environment are {actual:?}, the contract says {expected:?}"),
        );
    }
}

/// One statement of an IAM policy document.
pub struct Statement {
    pub sid: String,
    pub allow: bool,
    pub actions: Vec<String>,
    pub resources: Vec<String>,
    pub conditions: Vec<Condition>,
}

/// One `condition` block of a statement.
pub struct Condition {
    pub test: String,
    pub variable: String,
    pub values: Vec<String>,
}

impl Statement {
    pub fn grants(&self, action: &str) -> bool {
        self.allow && self.actions.iter().any(|a| a == action)
    }
}

fn statements(document: &Resource) -> Vec<Statement> {
    blocks(&document.body, "statement")
        .map(|s| Statement {
            sid: text(attr(&s.body, "sid").as_ref()),
            allow: attr(&s.body, "effect").is_none_or(|e| e.as_str() == Some("Allow")),
            actions: strings(attr(&s.body, "actions").as_ref()),
            resources: strings(attr(&s.body, "resources").as_ref()),
            conditions: blocks(&s.body, "condition")
                .map(|c| Condition {
                    test: text(attr(&c.body, "test").as_ref()),
                    variable: text(attr(&c.body, "variable").as_ref()),
                    values: strings(attr(&c.body, "values").as_ref()),
                })
                .collect(),
        })
        .collect()
}

/// The statements of every inline policy of the function's role. Fails when the role or a
/// policy cannot be read (not an `aws_iam_policy_document` of the same module), or when a
/// managed policy other than the allowed ones is attached.
pub fn role_policies(module: &Module, function: &Resource) -> Result<Vec<Statement>, String> {
    let role = referenced(module, function.attr("role"), "aws_iam_role")
        .ok_or("role is not an aws_iam_role of this module")?;
    let of_role = |r: &Resource| {
        r.attr("role")
            .and_then(|v| {
                reference(&v).map(|p| p.len() == 3 && format!("{}.{}", p[0], p[1]) == role.address)
            })
            .unwrap_or(false)
    };
    for attachment in module
        .of_kind("aws_iam_role_policy_attachment")
        .filter(|r| of_role(r))
    {
        let arn = text(attachment.attr("policy_arn").as_ref());
        if !ALLOWED_MANAGED_POLICIES.iter().any(|p| arn.ends_with(p)) {
            return Err(format!(
                "{} attaches {arn}; only {ALLOWED_MANAGED_POLICIES:?} are allowed",
                attachment.address
            ));
        }
    }
    let mut all = Vec::new();
    for policy in module.of_kind("aws_iam_role_policy").filter(|r| of_role(r)) {
        let document = policy
            .attr("policy")
            .and_then(|v| {
                let parts = reference(&v)?;
                (parts.len() == 4 && parts[0] == "data" && parts[3] == "json")
                    .then(|| module.resource(&format!("data.{}.{}", parts[1], parts[2])))
                    .flatten()
            })
            .ok_or_else(|| {
                format!(
                    "{}: policy is not an aws_iam_policy_document of this module",
                    policy.address
                )
            })?;
        all.extend(statements(document));
    }
    if all.is_empty() {
        return Err(format!("{} has no inline policy", role.address));
    }
    Ok(all)
}

fn resources_of(
    statements: &[Statement],
    matches: impl Fn(&Statement) -> bool,
) -> BTreeSet<String> {
    statements
        .iter()
        .filter(|s| matches(s))
        .flat_map(|s| s.resources.iter().cloned())
        .collect()
}

fn check_permissions(
    infra: &Infra,
    module: &Module,
    function: &Resource,
    contract: &FunctionContract,
    env: &Map<String, Value>,
    statements: &[Statement],
    found: &mut Violations,
) {
    let mut secrets: BTreeSet<String> = env
        .get(SECRET_ENV)
        .map(|v| text(Some(v)))
        .into_iter()
        .collect();
    for name in contract.tenant_secrets {
        match env.get(*name) {
            Some(prefix) => {
                secrets.insert(format!("{TENANT_SECRETS_ARN}{}*", text(Some(prefix))));
            }
            None => found.add(
                module,
                function,
                format!("{name} must name the prefix of the per-tenant secrets the code reads"),
            ),
        }
    }
    // The named exception: exactly the secrets of the functions it sets up, no more.
    if contract.name == FUNCTION_SECRETS_READER.function {
        let of_functions = function_secrets(infra);
        for other in FUNCTION_SECRETS_READER.reads_secrets_of {
            match of_functions.get(*other).filter(|secret| !secret.is_empty()) {
                Some(secret) => {
                    secrets.insert(secret.clone());
                }
                None => found.add(
                    module,
                    function,
                    format!("may read the secret of {other:?}, but there is no function {other:?} with a {SECRET_ENV}"),
                ),
            }
        }
    }
    let mut compare = |what: &str, actual: BTreeSet<String>, expected: BTreeSet<String>| {
        if actual != expected {
            found.add(
                module,
                function,
                format!("{what} is granted on {actual:?}, the contract says {expected:?}"),
            );
        }
    };

    let own_queue: BTreeSet<String> = module
        .of_kind("aws_lambda_event_source_mapping")
        .filter_map(|m| sqs_trigger(module, m).ok())
        .filter(|t| t.function.address == function.address)
        .map(|t| format!("${{{}.arn}}", t.queue.address))
        .collect();
    for action in CONSUME_ACTIONS {
        let actual = resources_of(statements, |s| s.grants(action));
        compare(action, actual, own_queue.clone());
    }

    let targets = contract
        .sends_to
        .iter()
        .map(|t| {
            instance_address(infra, t)
                .map(|m| format!("${{{m}.queue_arn}}"))
                .unwrap_or_default()
        })
        .collect();
    compare(
        "sqs:SendMessage",
        resources_of(statements, |s| s.grants("sqs:SendMessage")),
        targets,
    );

    compare(
        "secretsmanager:GetSecretValue",
        resources_of(statements, |s| s.grants("secretsmanager:GetSecretValue")),
        secrets,
    );

    let objects = |prefixes: &[&str]| {
        prefixes
            .iter()
            .map(|p| format!("{DOCUMENTS_BUCKET_ARN}/{p}*"))
            .collect()
    };
    compare(
        "s3:GetObject",
        resources_of(statements, |s| s.grants("s3:GetObject")),
        objects(contract.s3_reads),
    );
    compare(
        "s3:PutObject",
        resources_of(statements, |s| s.grants("s3:PutObject")),
        objects(contract.s3_writes),
    );
    let uses_s3 = !contract.s3_reads.is_empty() || !contract.s3_writes.is_empty();
    let bucket = uses_s3
        .then(|| DOCUMENTS_BUCKET_ARN.to_string())
        .into_iter()
        .collect();
    compare(
        "s3:ListBucket",
        resources_of(statements, |s| s.grants("s3:ListBucket")),
        bucket,
    );

    let email = resources_of(statements, |s| s.grants("ses:SendEmail"));
    if contract.sends_email {
        for identity in &email {
            if identity.contains('*') || !identity.contains(":identity/") {
                found.add(
                    module,
                    function,
                    format!("ses:SendEmail must name SES identities, found {identity:?}"),
                );
            }
        }
    } else if !email.is_empty() {
        found.add(
            module,
            function,
            format!("ses:SendEmail is granted on {email:?}, the contract says it sends no email"),
        );
    }

    let textract = resources_of(statements, |s| s.grants("textract:DetectDocumentText"));
    if !textract.is_empty() && !contract.may_use_textract {
        found.add(
            module,
            function,
            "textract:DetectDocumentText is granted, the contract says it does not use Textract",
        );
    }

    // S3 listing only under the function's prefixes, with StringLike: StringLikeIfExists
    // would also admit a listing without a prefix (no s3:prefix key), the whole bucket.
    // The ListBucket check of a GetObject on a missing key carries the key as s3:prefix,
    // so it still answers 404.
    let mut prefixes: Vec<String> = contract
        .s3_reads
        .iter()
        .chain(contract.s3_writes)
        .map(|p| format!("{p}*"))
        .collect();
    prefixes.sort();
    prefixes.dedup();
    for statement in statements.iter().filter(|s| s.grants("s3:ListBucket")) {
        let limited = statement.conditions.iter().any(|c| {
            c.variable == "s3:prefix" && c.test == "StringLike" && {
                let mut values = c.values.clone();
                values.sort();
                values == prefixes
            }
        });
        if !limited {
            found.add(
                module,
                function,
                format!(
                    "statement {:?} grants s3:ListBucket without a StringLike condition on s3:prefix {prefixes:?} (StringLikeIfExists admits a listing without a prefix: the whole bucket)",
                    statement.sid
                ),
            );
        }
    }

    // A KMS key only through the AWS services that encrypt with it.
    for statement in statements
        .iter()
        .filter(|s| s.allow && s.actions.iter().any(|a| a.starts_with("kms:")))
    {
        let via_service = statement.conditions.iter().any(|c| {
            c.variable == "kms:ViaService"
                && matches!(c.test.as_str(), "StringEquals" | "StringLike")
                && !c.values.is_empty()
                && c.values.iter().all(|v| v.ends_with(".amazonaws.com"))
        });
        if !via_service {
            found.add(
                module,
                function,
                format!(
                    "statement {:?} grants {:?} without a kms:ViaService condition",
                    statement.sid, statement.actions
                ),
            );
        }
    }

    // Lambda attaches a VPC function with its role, and needs
    // ec2:DescribeSubnets, which AWSLambdaENIManagementAccess does not grant.
    if blocks(&function.body, "vpc_config").next().is_some()
        && !statements.iter().any(|s| s.grants("ec2:DescribeSubnets"))
    {
        found.add(
            module,
            function,
            "runs in a VPC, but its role does not grant ec2:DescribeSubnets (AWSLambdaENIManagementAccess lacks it)",
        );
    }

    for statement in statements.iter().filter(|s| s.allow) {
        for action in &statement.actions {
            if !ALLOWED_ACTIONS.contains(&action.as_str()) {
                found.add(
                    module,
                    function,
                    format!(
                        "statement {:?} grants {action}, which the contract does not allow",
                        statement.sid
                    ),
                );
            }
        }
    }
}

fn check_no_wildcard_resources(module: &Module, document: &Resource, found: &mut Violations) {
    for block in blocks(&document.body, "statement") {
        let statement = &block.body;
        let allow = attr(statement, "effect").is_none_or(|e| e.as_str() == Some("Allow"));
        let actions = strings(attr(statement, "actions").as_ref());
        let scoped: Vec<&String> = actions
            .iter()
            .filter(|a| SCOPED_SERVICES.contains(&a.split(':').next().unwrap_or_default()))
            .collect();
        if !allow || scoped.is_empty() {
            continue;
        }
        if attr(statement, "not_resources").is_some() {
            found.add(
                module,
                document,
                format!("{scoped:?} granted with not_resources"),
            );
        }
        let resources = strings(attr(statement, "resources").as_ref());
        if resources.is_empty() {
            found.add(
                module,
                document,
                format!("{scoped:?} granted without resources"),
            );
        }
        for resource in resources {
            if let Some(problem) = wildcard(&resource) {
                found.add(
                    module,
                    document,
                    format!("{scoped:?} granted on {resource:?} ({problem})"),
                );
            }
        }
    }
}

/// Why a resource is too broad for sqs/s3/secretsmanager, if it is.
fn wildcard(resource: &str) -> Option<&'static str> {
    if resource == "*" {
        return Some("every resource");
    }
    let (arn, path) = resource.split_once('/').unwrap_or((resource, ""));
    if arn.contains('*') {
        return Some("a wildcard ARN");
    }
    if path.starts_with('*') {
        return Some("everything under the resource, not one prefix");
    }
    None
}

// --- values ------------------------------------------------------------------------------------

fn number(value: Option<&Value>) -> Option<f64> {
    value?.as_number()?.as_f64()
}

/// The number, the AWS default when the attribute is not set, NaN when it is not a number.
fn number_or(value: Option<Value>, default: f64) -> f64 {
    match value {
        None | Some(Value::Null) => default,
        Some(v) => number(Some(&v)).unwrap_or(f64::NAN),
    }
}

fn text(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    }
}

/// A list of strings; a single string (an unevaluated reference) counts as one element.
fn strings(value: Option<&Value>) -> Vec<String> {
    match value {
        Some(Value::Array(items)) => items.iter().map(|v| text(Some(v))).collect(),
        Some(Value::String(s)) => vec![s.clone()],
        _ => Vec::new(),
    }
}
