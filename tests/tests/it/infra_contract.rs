//! Contract tests for the Terraform under `infra/`, with no network and no AWS account.
//!
//! The real `infra/` is parsed with `hcl-rs` and evaluated as far as Terraform could
//! before `apply` (see `infra_contract/terraform.rs`); `infra_contract/contract.rs`
//! checks every queue-function instance, the module's own resources, the sweeper and the
//! migrate function against the invariants the Lambda code relies on. Every negative test breaks a copy of
//! the real files in one way and asserts that the checker names exactly that fault.

pub mod contract;
pub mod terraform;

use std::path::PathBuf;

use contract::check;
use terraform::{Infra, Sources};

const MODULE_MAIN: &str = "modules/queue-function/main.tf";
const MODULE_IAM: &str = "modules/queue-function/iam.tf";
const MODULE_ALARMS: &str = "modules/queue-function/alarms.tf";
const MODULE_VARIABLES: &str = "modules/queue-function/variables.tf";

fn real_infra() -> Sources {
    Sources::read(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../infra"))
}

fn violations(sources: &Sources) -> Vec<String> {
    let infra = Infra::evaluate(sources).expect("infra/ parses");
    check(&infra)
}

/// Asserts that some violation mentions every fragment, and shows them all if not.
fn assert_reported(violations: &[String], fragments: &[&str]) {
    assert!(
        violations
            .iter()
            .any(|v| fragments.iter().all(|f| v.contains(f))),
        "expected a violation mentioning {fragments:?}, got:\n{}",
        violations.join("\n")
    );
}

// --- the real configuration ----------------------------------------------------------------

#[test]
fn the_real_infra_satisfies_every_invariant() {
    let found = violations(&real_infra());
    assert!(found.is_empty(), "violations:\n{}", found.join("\n"));
}

#[test]
fn the_checker_sees_three_queue_functions_and_the_scheduled_sweeper() {
    let infra = Infra::evaluate(&real_infra()).expect("infra/ parses");

    let mut names: Vec<String> = infra
        .instances
        .iter()
        .map(|i| i.vars["name"].as_str().unwrap_or_default().to_string())
        .collect();
    names.sort();
    assert_eq!(names, ["document-output", "ingestion", "matching"]);
    for instance in &infra.instances {
        let count = |kind| instance.of_kind(kind).count();
        assert_eq!(count("aws_sqs_queue"), 2, "{}", instance.address);
        assert_eq!(count("aws_lambda_function"), 1, "{}", instance.address);
        assert_eq!(
            count("aws_lambda_event_source_mapping"),
            1,
            "{}",
            instance.address
        );
        assert_eq!(count("aws_lambda_alias"), 1, "{}", instance.address);
        assert_eq!(
            count("aws_cloudwatch_metric_alarm"),
            6,
            "{}",
            instance.address
        );
    }
    assert!(infra.root.resource("aws_lambda_function.sweeper").is_some());
    assert!(
        infra
            .root
            .resource("aws_lambda_alias.sweeper_live")
            .is_some()
    );
    assert!(
        infra
            .root
            .resource("aws_cloudwatch_event_rule.sweeper")
            .is_some()
    );
    assert!(infra.root.resource("aws_lambda_function.migrate").is_some());
    assert!(
        infra
            .root
            .resource("aws_lambda_alias.migrate_live")
            .is_some()
    );
}

#[test]
fn instances_get_the_documented_names_timeouts_and_derived_visibility() {
    let infra = Infra::evaluate(&real_infra()).expect("infra/ parses");
    let expected = [
        ("module.ingestion", "staging-docflow-ingestion", 300, 1800),
        ("module.matching", "staging-docflow-matching", 120, 720),
        (
            "module.document_output",
            "staging-docflow-document-output",
            120,
            720,
        ),
    ];
    for (address, name, timeout, visibility) in expected {
        let instance = infra
            .instances
            .iter()
            .find(|i| i.address == address)
            .expect(address);
        let queue = instance
            .resource("aws_sqs_queue.source")
            .expect("source queue");
        let dlq = instance.resource("aws_sqs_queue.dlq").expect("dlq");
        let function = instance
            .resource("aws_lambda_function.this")
            .expect("function");
        assert_eq!(queue.attr("name"), Some(name.into()), "{address}");
        assert_eq!(
            dlq.attr("name"),
            Some(format!("{name}-dlq").into()),
            "{address}"
        );
        assert_eq!(
            function.attr("function_name"),
            Some(name.into()),
            "{address}"
        );
        assert_eq!(function.attr("timeout"), Some(timeout.into()), "{address}");
        assert_eq!(
            queue.attr("visibility_timeout_seconds"),
            Some(visibility.into()),
            "{address}"
        );
        assert_eq!(
            dlq.attr("message_retention_seconds"),
            Some(1_209_600.into()),
            "{address}"
        );
        assert_eq!(
            queue.attr("message_retention_seconds"),
            Some(604_800.into()),
            "{address}"
        );
    }
}

// --- event source mappings ------------------------------------------------------------------

#[test]
fn a_mapping_without_report_batch_item_failures_is_reported_for_every_instance() {
    let broken = real_infra().replace(
        MODULE_MAIN,
        r#"function_response_types = ["ReportBatchItemFailures"]"#,
        "function_response_types = []",
    );
    let found = violations(&broken);
    for instance in [
        "module.ingestion",
        "module.matching",
        "module.document_output",
    ] {
        assert_reported(&found, &[instance, "lacks ReportBatchItemFailures"]);
    }
}

#[test]
fn a_mapping_without_maximum_concurrency_is_reported() {
    let broken = real_infra().replace(
        MODULE_MAIN,
        "  scaling_config {\n    maximum_concurrency = var.maximum_concurrency\n  }\n",
        "",
    );
    assert_reported(
        &violations(&broken),
        &[
            "aws_lambda_event_source_mapping.this",
            "maximum_concurrency is not set",
        ],
    );
}

#[test]
fn a_mapping_that_invokes_the_function_instead_of_its_alias_is_reported() {
    let broken = real_infra().replace(
        MODULE_MAIN,
        "function_name                      = aws_lambda_alias.live.arn",
        "function_name                      = aws_lambda_function.this.arn",
    );
    let found = violations(&broken);
    for instance in [
        "module.ingestion",
        "module.matching",
        "module.document_output",
    ] {
        assert_reported(
            &found,
            &[
                instance,
                "aws_lambda_event_source_mapping.this",
                "invokes aws_lambda_function.this itself, not an alias of it",
            ],
        );
    }
}

#[test]
fn a_mapping_through_an_alias_of_another_function_is_reported() {
    let broken = real_infra().replace(
        MODULE_MAIN,
        "function_name    = aws_lambda_function.this.function_name",
        r#"function_name    = "staging-docflow-sweeper""#,
    );
    let found = violations(&broken);
    assert_reported(
        &found,
        &[
            "module.matching: aws_lambda_event_source_mapping.this",
            "neither a function of this module nor the ARN of an alias of one",
        ],
    );
    assert_reported(
        &found,
        &[
            "module.matching: aws_lambda_alias.live",
            "function_name does not refer to a function of this module",
        ],
    );
}

#[test]
fn a_function_that_publishes_no_versions_is_reported() {
    let found = violations(&real_infra().replace(MODULE_MAIN, "publish = true", "publish = false"));
    for instance in [
        "module.ingestion",
        "module.matching",
        "module.document_output",
    ] {
        assert_reported(
            &found,
            &[
                &format!("{instance}: aws_lambda_function.this"),
                "publish must be true",
            ],
        );
    }
    let found =
        violations(&real_infra().replace("sweeper.tf", "publish = true", "publish = false"));
    assert_reported(
        &found,
        &["root: aws_lambda_function.sweeper", "publish must be true"],
    );
}

#[test]
fn an_alias_that_follows_neither_the_published_nor_the_pinned_version_is_reported() {
    let fixed = real_infra().replace(
        "sweeper.tf",
        r#"function_version = coalesce(lookup(var.live_versions, "sweeper", null), aws_lambda_function.sweeper.version)"#,
        r#"function_version = "1""#,
    );
    assert_reported(
        &violations(&fixed),
        &[
            "root: aws_lambda_alias.sweeper_live",
            "function_version is 1, not the version the apply publishes",
        ],
    );
    // Right without a pin, so only pinning a version shows that a rollback would not
    // survive the next apply.
    let unpinnable = real_infra().replace(
        MODULE_MAIN,
        "function_version = coalesce(var.live_version, aws_lambda_function.this.version)",
        "function_version = aws_lambda_function.this.version",
    );
    let found = violations(&unpinnable);
    assert_reported(
        &found,
        &[
            "module.ingestion: aws_lambda_alias.live",
            "does not follow var.live_versions",
        ],
    );
    assert!(
        !found
            .iter()
            .any(|v| v.contains("not the version the apply publishes")),
        "{}",
        found.join("\n")
    );
}

#[test]
fn a_batch_above_ten_without_a_batching_window_is_reported() {
    let broken = real_infra().replace(
        "main.tf",
        "  timeout_seconds     = 300\n  memory_mb           = 1024\n  batch_size          = 10\n",
        "  timeout_seconds     = 300\n  memory_mb           = 1024\n  batch_size          = 50\n",
    );
    assert_reported(
        &violations(&broken),
        &["module.ingestion", "batch_size 50 above 10"],
    );
}

// --- visibility timeout ------------------------------------------------------------------------

#[test]
fn a_visibility_of_30_s_with_a_timeout_of_60_s_is_reported() {
    let broken = real_infra().replace(
        "main.tf",
        "  timeout_seconds     = 120\n  memory_mb           = 512\n  batch_size          = 10\n  maximum_concurrency = var.maximum_concurrency[\"matching\"]\n",
        "  timeout_seconds     = 60\n  visibility_timeout_seconds = 30\n  memory_mb           = 512\n  batch_size          = 10\n  maximum_concurrency = var.maximum_concurrency[\"matching\"]\n",
    );
    let found = violations(&broken);
    assert_reported(
        &found,
        &[
            "module.matching",
            "aws_sqs_queue.source",
            "visibility timeout 30 s is below",
            "= 360 s",
        ],
    );
    assert!(
        !found.iter().any(|v| v.starts_with("module.ingestion")),
        "only matching was broken:\n{}",
        found.join("\n")
    );
}

#[test]
fn a_module_that_derives_visibility_from_one_timeout_is_reported() {
    let broken = real_infra().replace(
        MODULE_MAIN,
        "minimum_visibility_timeout_seconds = 6 * var.timeout_seconds",
        "minimum_visibility_timeout_seconds = var.timeout_seconds",
    );
    assert_reported(
        &violations(&broken),
        &[
            "module.ingestion",
            "visibility timeout 300 s is below",
            "= 1800 s",
        ],
    );
}

#[test]
fn a_function_told_another_visibility_than_its_queue_has_is_reported() {
    let broken = real_infra().replace(
        MODULE_MAIN,
        "QUEUE_VISIBILITY_TIMEOUT_SECONDS = tostring(local.visibility_timeout_seconds)",
        "QUEUE_VISIBILITY_TIMEOUT_SECONDS = \"30\"",
    );
    assert_reported(
        &violations(&broken),
        &[
            "module.ingestion",
            "QUEUE_VISIBILITY_TIMEOUT_SECONDS is Some(30.0)",
            "is 1800 s",
        ],
    );
}

#[test]
fn a_function_told_another_batching_window_than_its_mapping_has_is_reported() {
    let broken = real_infra().replace(
        MODULE_MAIN,
        "MAXIMUM_BATCHING_WINDOW_SECONDS = tostring(var.maximum_batching_window_seconds)",
        "MAXIMUM_BATCHING_WINDOW_SECONDS = \"0\"",
    );
    let broken = broken.replace(
        MODULE_VARIABLES,
        "description = \"How long Lambda gathers records before invoking. Adds to the minimum visibility timeout.\"\n  type        = number\n  default     = 0",
        "description = \"How long Lambda gathers records before invoking. Adds to the minimum visibility timeout.\"\n  type        = number\n  default     = 5",
    );
    assert_reported(
        &violations(&broken),
        &[
            "module.ingestion",
            "MAXIMUM_BATCHING_WINDOW_SECONDS is Some(0.0)",
            "is 5 s",
        ],
    );
}

// --- dead-letter queues and maxReceiveCount ---------------------------------------------------

#[test]
fn a_dlq_that_keeps_messages_no_longer_than_its_queue_is_reported() {
    let broken = real_infra().replace(
        MODULE_VARIABLES,
        "default     = 1209600 # 14 days, the SQS maximum",
        "default     = 604800",
    );
    assert_reported(
        &violations(&broken),
        &["aws_sqs_queue.dlq", "DLQ retention 604800 s must be longer"],
    );
}

#[test]
fn a_queue_without_a_redrive_policy_is_reported() {
    let broken = real_infra().replace(
        MODULE_MAIN,
        "  redrive_policy = jsonencode({\n    deadLetterTargetArn = aws_sqs_queue.dlq.arn\n    maxReceiveCount     = var.max_receive_count\n  })\n",
        "",
    );
    assert_reported(
        &violations(&broken),
        &["aws_sqs_queue.source", "has no redrive policy"],
    );
}

#[test]
fn a_hard_coded_max_receive_count_in_the_environment_is_reported() {
    // Equal to the variable today, so only re-evaluating with another value catches it.
    let broken = real_infra().replace(
        MODULE_MAIN,
        "MAX_RECEIVE_COUNT = tostring(var.max_receive_count)",
        r#"MAX_RECEIVE_COUNT = "3""#,
    );
    let found = violations(&broken);
    assert_reported(
        &found,
        &[
            "aws_lambda_function.this",
            "MAX_RECEIVE_COUNT does not follow var.max_receive_count",
        ],
    );
}

#[test]
fn a_matching_claim_lease_shorter_than_the_function_timeout_is_reported() {
    let lease = |seconds: &str| {
        real_infra().replace(
            "main.tf",
            r#"settings = merge(local.llm_settings, { LLM_TIMEOUT_SECONDS = "30" }, local.notify_settings)"#,
            &format!(
                r#"settings = merge(local.llm_settings, {{ LLM_TIMEOUT_SECONDS = "30" }}, local.notify_settings, {{ MATCHING_CLAIM_LEASE_SECONDS = "{seconds}" }})"#
            ),
        )
    };
    assert_reported(
        &violations(&lease("35")),
        &[
            "aws_lambda_function.this",
            "MATCHING_CLAIM_LEASE_SECONDS = 35 does not outlast the function's timeout of 120 s",
        ],
    );
    // A lease longer than the timeout is production's kind of value.
    assert!(
        !violations(&lease("180"))
            .iter()
            .any(|v| v.contains("MATCHING_CLAIM_LEASE_SECONDS")),
        "a 180 s lease outlasts the 120 s timeout"
    );
}

#[test]
fn a_redrive_policy_with_its_own_receive_count_is_reported() {
    let broken = real_infra().replace(
        MODULE_MAIN,
        "maxReceiveCount     = var.max_receive_count",
        "maxReceiveCount     = 5",
    );
    let found = violations(&broken);
    assert_reported(
        &found,
        &[
            "MAX_RECEIVE_COUNT Some(3.0) does not match",
            "maxReceiveCount Some(5.0)",
        ],
    );
    assert_reported(
        &found,
        &[
            "aws_sqs_queue.source",
            "does not follow var.max_receive_count",
        ],
    );
}

// --- encryption and secrets -----------------------------------------------------------------------

#[test]
fn an_unencrypted_dlq_is_reported() {
    let broken = real_infra().replace(
        MODULE_MAIN,
        "message_retention_seconds = var.dlq_message_retention_seconds\n\n  sqs_managed_sse_enabled           = var.kms_key_arn == null ? true : null\n",
        "message_retention_seconds = var.dlq_message_retention_seconds\n\n",
    );
    assert_reported(
        &violations(&broken),
        &["aws_sqs_queue.dlq", "is not encrypted"],
    );
}

#[test]
fn a_secret_value_in_terraform_or_in_an_environment_is_reported() {
    let broken = real_infra()
        .append(
            "secret.tf",
            "\nresource \"aws_secretsmanager_secret_version\" \"app\" {\n  secret_id     = aws_secretsmanager_secret.sweeper.id\n  secret_string = \"{}\"\n}\n",
        )
        .replace(
            "sweeper.tf",
            "      RUST_LOG                  = var.log_level\n",
            "      RUST_LOG                  = var.log_level\n      APP_CONFIG                = aws_secretsmanager_secret_version.app.secret_string\n      MAESN_API_KEY             = \"mk_live_123\"\n",
        );
    let found = violations(&broken);
    assert_reported(
        &found,
        &["aws_secretsmanager_secret_version.app", "Terraform state"],
    );
    assert_reported(
        &found,
        &[
            "aws_lambda_function.sweeper",
            "APP_CONFIG is read from a secret's value",
        ],
    );
    assert_reported(
        &found,
        &[
            "aws_lambda_function.sweeper",
            "MAESN_API_KEY looks like a credential",
        ],
    );
}

#[test]
fn a_secret_id_that_is_not_an_arn_is_reported() {
    let broken = real_infra().replace(
        "sweeper.tf",
        "DOCFLOW_SECRET_ID         = aws_secretsmanager_secret.sweeper.arn",
        "DOCFLOW_SECRET_ID         = \"docflow/app\"",
    );
    assert_reported(
        &violations(&broken),
        &[
            "aws_lambda_function.sweeper",
            "DOCFLOW_SECRET_ID must carry the secret's ARN",
        ],
    );
}

// --- IAM ---------------------------------------------------------------------------------------------

#[test]
fn a_wildcard_resource_for_sqs_actions_is_reported() {
    let broken = real_infra().replace(
        MODULE_IAM,
        "resources = [aws_sqs_queue.source.arn]",
        r#"resources = ["*"]"#,
    );
    let found = violations(&broken);
    assert_reported(
        &found,
        &[
            "data.aws_iam_policy_document.permissions",
            "sqs:ReceiveMessage",
            "\"*\" (every resource)",
        ],
    );
    assert_reported(&found, &["sqs:ReceiveMessage is granted on {\"*\"}"]);
}

#[test]
fn a_wildcard_secret_arn_is_reported() {
    let broken = real_infra().replace(
        "sweeper.tf",
        "resources = [aws_secretsmanager_secret.sweeper.arn]",
        r#"resources = ["arn:aws:secretsmanager:eu-central-1:123456789012:secret:*"]"#,
    );
    assert_reported(
        &violations(&broken),
        &[
            "root: data.aws_iam_policy_document.sweeper",
            "secretsmanager:GetSecretValue",
            "a wildcard ARN",
        ],
    );
}

#[test]
fn per_tenant_secrets_granted_beyond_their_prefix_or_without_it_are_reported() {
    let broader = real_infra().replace(MODULE_IAM, r#":secret:${prefix}*""#, r#":secret:*""#);
    let missing = real_infra().replace(
        "main.tf",
        r#"tenant_secret_prefixes = { DATEV_CREDENTIALS_PREFIX = local.datev_credentials_prefix }"#,
        "",
    );

    assert_reported(
        &violations(&broader),
        &[
            "module.document_output",
            "secretsmanager:GetSecretValue",
            "a wildcard ARN",
        ],
    );
    assert_reported(
        &violations(&missing),
        &[
            "module.document_output",
            "DATEV_CREDENTIALS_PREFIX must name the prefix of the per-tenant secrets",
        ],
    );
}

#[test]
fn s3_access_to_the_whole_bucket_is_reported() {
    let broken = real_infra().replace(
        MODULE_MAIN,
        r#"s3_read_object_arns  = [for prefix in var.s3_read_prefixes : "${var.documents_bucket_arn}/${prefix}*"]"#,
        r#"s3_read_object_arns  = [for prefix in var.s3_read_prefixes : "${var.documents_bucket_arn}/*"]"#,
    );
    let found = violations(&broken);
    assert_reported(
        &found,
        &["module.ingestion", "s3:GetObject", "not one prefix"],
    );
    assert_reported(
        &found,
        &["module.document_output", "s3:GetObject is granted on"],
    );
}

#[test]
fn a_function_sending_to_a_queue_it_does_not_feed_is_reported() {
    let broken = real_infra().replace(
        "main.tf",
        "  s3_read_prefixes      = [\"documents/\"]\n",
        "  s3_read_prefixes      = [\"documents/\"]\n  sends_to = {\n    INGESTION_QUEUE_URL = { arn = module.ingestion.queue_arn, url = module.ingestion.queue_url }\n  }\n",
    );
    let found = violations(&broken);
    assert_reported(
        &found,
        &["module.document_output", "sqs:SendMessage is granted on"],
    );
    assert_reported(
        &found,
        &["module.document_output", "queue URLs in the environment"],
    );
}

#[test]
fn email_permission_outside_matching_is_reported() {
    let broken = real_infra().replace(
        "main.tf",
        "  s3_write_prefixes     = [\"ingestions/\"]\n",
        "  s3_write_prefixes     = [\"ingestions/\"]\n  ses_identity_arns     = [\"arn:aws:ses:eu-central-1:123456789012:identity/example.com\"]\n",
    );
    assert_reported(
        &violations(&broken),
        &[
            "module.ingestion",
            "ses:SendEmail is granted",
            "sends no email",
        ],
    );
}

#[test]
fn an_action_outside_the_contract_is_reported() {
    let broken = real_infra().replace(
        MODULE_IAM,
        "actions   = [\"secretsmanager:GetSecretValue\"]",
        "actions   = [\"secretsmanager:GetSecretValue\", \"secretsmanager:PutSecretValue\"]",
    );
    assert_reported(
        &violations(&broken),
        &["\"ReadAppSecret\" grants secretsmanager:PutSecretValue"],
    );
}

#[test]
fn a_broad_managed_policy_on_a_function_role_is_reported() {
    let broken = real_infra().replace(
        MODULE_IAM,
        "service-role/AWSLambdaENIManagementAccess",
        "AmazonSQSFullAccess",
    );
    assert_reported(&violations(&broken), &["attaches", "AmazonSQSFullAccess"]);
}

#[test]
fn choosing_textract_grants_it_to_ingestion_only_and_keeps_the_contract() {
    let sources = real_infra().append(
        "environments/example.tfvars",
        "ocr_provider = \"textract\"\n",
    );
    let found = violations(&sources);
    assert!(found.is_empty(), "violations:\n{}", found.join("\n"));

    let infra = Infra::evaluate(&sources).expect("infra/ parses");
    let granted: Vec<&str> = infra
        .instances
        .iter()
        .filter(|i| {
            let policy = i
                .resource("data.aws_iam_policy_document.permissions")
                .expect("policy");
            hcl::to_string(&policy.body)
                .unwrap()
                .contains("textract:DetectDocumentText")
        })
        .map(|i| i.address.as_str())
        .collect();
    assert_eq!(granted, ["module.ingestion"]);
}

#[test]
fn textract_permission_outside_ingestion_is_reported() {
    let broken = real_infra().replace(
        "main.tf",
        "  settings = merge(local.llm_settings, { LLM_TIMEOUT_SECONDS = \"30\" }, local.notify_settings)\n",
        "  settings = merge(local.llm_settings, { LLM_TIMEOUT_SECONDS = \"30\" }, local.notify_settings)\n  textract          = true\n",
    );
    assert_reported(
        &violations(&broken),
        &["module.matching", "textract:DetectDocumentText is granted"],
    );
}

#[test]
fn a_setting_cannot_override_max_receive_count() {
    // The module merges var.settings first, so the derived value wins.
    let sources = real_infra().replace(
        "main.tf",
        "  settings = merge(local.llm_settings, { LLM_TIMEOUT_SECONDS = \"30\" }, local.notify_settings)\n",
        "  settings          = merge(local.llm_settings, { MAX_RECEIVE_COUNT = \"9\" })\n",
    );
    let found = violations(&sources);
    assert!(found.is_empty(), "violations:\n{}", found.join("\n"));
}

// --- alarms, schedule and the set of functions ------------------------------------------------

#[test]
fn a_missing_dlq_alarm_is_reported() {
    let broken = real_infra().replace(
        MODULE_ALARMS,
        r#"metric_name = "ApproximateNumberOfMessagesVisible""#,
        r#"metric_name = "NumberOfMessagesSent""#,
    );
    assert_reported(
        &violations(&broken),
        &[
            "module.matching",
            "no alarm with actions on AWS/SQS ApproximateNumberOfMessagesVisible",
        ],
    );
}

// --- DLQ alarms, KMS, bucket listing, VPC, database TLS, error rates, the sweeper's schedule ---

/// An alarm on the DLQ's depth latches while old messages wait there.
#[test]
fn a_dlq_alarm_on_its_depth_instead_of_new_arrivals_is_reported() {
    let broken = real_infra().replace(
        MODULE_ALARMS,
        r#"expression  = "DIFF(FILL(visible, 0))""#,
        r#"expression  = "visible""#,
    );
    for instance in [
        "module.ingestion",
        "module.matching",
        "module.document_output",
    ] {
        assert_reported(
            &violations(&broken),
            &[instance, "must fire on new messages in the DLQ"],
        );
    }
}

/// SQS publishes no datapoint for a DLQ inactive for six hours: without FILL, DIFF has no
/// earlier point when the first dead letter arrives, and the alarm stays OK.
#[test]
fn a_dlq_alarm_without_fill_is_reported() {
    let broken = real_infra().replace(
        MODULE_ALARMS,
        r#"expression  = "DIFF(FILL(visible, 0))""#,
        r#"expression  = "DIFF(visible)""#,
    );
    let found = violations(&broken);
    for instance in [
        "module.ingestion",
        "module.matching",
        "module.document_output",
    ] {
        assert_reported(
            &found,
            &[
                &format!("{instance}: aws_cloudwatch_metric_alarm.dlq_new_messages"),
                "without FILL(<id>, 0)",
            ],
        );
    }
}

#[test]
fn a_dlq_without_an_age_alarm_that_fires_before_its_messages_expire_is_reported() {
    let missing = real_infra().replace(
        MODULE_ALARMS,
        "metric_name         = \"ApproximateAgeOfOldestMessage\"\n  dimensions          = { QueueName = aws_sqs_queue.dlq.name }",
        "metric_name         = \"NumberOfMessagesReceived\"\n  dimensions          = { QueueName = aws_sqs_queue.dlq.name }",
    );
    assert_reported(
        &violations(&missing),
        &[
            "module.document_output",
            "no alarm with actions on AWS/SQS ApproximateAgeOfOldestMessage of ${aws_sqs_queue.dlq.name}",
        ],
    );

    // 8 days: a message that waited the source queue's 7 days expires after 7 in the DLQ.
    let too_late = real_infra().replace(
        MODULE_ALARMS,
        "threshold           = local.dlq_oldest_message_age_alarm_seconds",
        "threshold           = 691200",
    );
    assert_reported(
        &violations(&too_late),
        &[
            "module.ingestion: aws_cloudwatch_metric_alarm.dlq_oldest_message_age",
            "fires after 691200 s in the DLQ, too late",
            "must stay below 604800 s",
        ],
    );

    let averaged = real_infra().replace(
        MODULE_ALARMS,
        "dimensions          = { QueueName = aws_sqs_queue.dlq.name }\n  statistic           = \"Maximum\"",
        "dimensions          = { QueueName = aws_sqs_queue.dlq.name }\n  statistic           = \"Average\"",
    );
    assert_reported(
        &violations(&averaged),
        &[
            "module.matching: aws_cloudwatch_metric_alarm.dlq_oldest_message_age",
            "Maximum of ApproximateAgeOfOldestMessage",
        ],
    );
}

/// The contract is checked with a customer managed key too: the KMS statements exist
/// only then.
fn with_a_kms_key(sources: Sources) -> Sources {
    sources.append(
        "environments/example.tfvars",
        "kms_key_arn = \"arn:aws:kms:eu-central-1:123456789012:key/00000000-0000-0000-0000-000000000000\"\n",
    )
}

/// A KMS key is used only through the AWS services that encrypt with it.
#[test]
fn with_a_kms_key_every_function_uses_it_only_through_its_services() {
    let found = violations(&with_a_kms_key(real_infra()));
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn a_kms_grant_without_kms_via_service_is_reported() {
    let broken = with_a_kms_key(real_infra()).replace(
        MODULE_IAM,
        r#"variable = "kms:ViaService""#,
        r#"variable = "aws:SourceVpc""#,
    );
    assert_reported(
        &violations(&broken),
        &[
            "module.matching",
            "\"UseDataKey\"",
            "without a kms:ViaService condition",
        ],
    );
    let broken = with_a_kms_key(real_infra()).replace(
        "sweeper.tf",
        r#"variable = "kms:ViaService""#,
        r#"variable = "aws:SourceVpc""#,
    );
    assert_reported(
        &violations(&broken),
        &[
            "aws_lambda_function.sweeper",
            "without a kms:ViaService condition",
        ],
    );
}

#[test]
fn listing_the_documents_bucket_beyond_the_function_prefixes_is_reported() {
    let broken = real_infra().replace(
        MODULE_IAM,
        r#"variable = "s3:prefix""#,
        r#"variable = "s3:delimiter""#,
    );
    assert_reported(
        &violations(&broken),
        &[
            "module.ingestion",
            "grants s3:ListBucket without a StringLike condition on s3:prefix [\"documents/*\", \"ingestions/*\"]",
        ],
    );
}

#[test]
fn listing_the_documents_bucket_with_if_exists_is_reported() {
    // A ListObjects request without a prefix has no s3:prefix: IfExists lets it list
    // every tenant's documents.
    let broken = real_infra().replace(
        MODULE_IAM,
        r#"test     = "StringLike""#,
        r#"test     = "StringLikeIfExists""#,
    );
    assert_reported(
        &violations(&broken),
        &[
            "module.document_output",
            "grants s3:ListBucket without a StringLike condition on s3:prefix [\"documents/*\"]",
        ],
    );
}

/// A VPC function's role must grant ec2:DescribeSubnets.
#[test]
fn a_vpc_function_whose_role_cannot_describe_subnets_is_reported() {
    let broken = real_infra().replace(
        MODULE_IAM,
        r#"actions   = ["ec2:DescribeSubnets"]"#,
        r#"actions   = ["xray:PutTelemetryRecords"]"#,
    );
    assert_reported(
        &violations(&broken),
        &[
            "module.document_output",
            "does not grant ec2:DescribeSubnets",
        ],
    );
    let broken = real_infra().replace(
        "sweeper.tf",
        r#"actions   = ["ec2:DescribeSubnets"]"#,
        r#"actions   = ["xray:PutTelemetryRecords"]"#,
    );
    assert_reported(
        &violations(&broken),
        &[
            "aws_lambda_function.sweeper",
            "does not grant ec2:DescribeSubnets",
        ],
    );
}

/// With `sslmode=verify-full` and no `sslrootcert`, sqlx (`tls-rustls`: ring and
/// webpki-roots) verifies the database's certificate against the webpki roots. RDS
/// Proxy's certificate (ACM) chains to Amazon Root CA 1, which is among them; the RDS
/// CA that signs a DB instance's certificate is not, hence infra/'s `database_tls =
/// verify-full` needs `rds_proxy_endpoint` (preflight.tf).
#[test]
fn verify_full_through_rds_proxy_needs_no_extra_root_certificate() {
    let trusted = |name: &[u8]| {
        webpki_roots::TLS_SERVER_ROOTS
            .iter()
            .any(|root| root.subject.as_ref().windows(name.len()).any(|w| w == name))
    };
    assert!(trusted(b"Amazon Root CA 1"), "RDS Proxy's root is trusted");
    assert!(
        !trusted(b"Amazon RDS"),
        "the RDS CA is not among the roots: a DB instance's certificate needs a CA bundle"
    );
}

/// Every function gets `DATABASE_TLS` from `var.database_tls` and the code
/// applies it over the secret URL's sslmode.
#[test]
fn every_function_enforces_the_environments_database_tls() {
    let infra = Infra::evaluate(&real_infra()).expect("infra/ parses");
    for mode in ["verify-full", "require"] {
        let probed = infra.with_root_inputs(&[("database_tls", mode.into())]);
        let functions: Vec<_> = probed
            .modules()
            .flat_map(|m| m.of_kind("aws_lambda_function"))
            .collect();
        assert_eq!(
            functions.len(),
            5,
            "three queue functions, the sweeper and the migrate function"
        );
        for function in functions {
            assert_eq!(
                contract::environment(function).get("DATABASE_TLS"),
                Some(&mode.into()),
                "{} with database_tls = {mode}",
                contract::contract_name(function)
            );
        }
    }
}

#[test]
fn a_function_without_database_tls_is_reported() {
    let broken = real_infra().replace(
        "sweeper.tf",
        "      DATABASE_TLS              = var.database_tls\n",
        "",
    );
    let found = violations(&broken);
    assert_reported(
        &found,
        &["root: aws_lambda_function.sweeper", "sets no DATABASE_TLS"],
    );
    assert_eq!(found.len(), 1, "only the sweeper:\n{}", found.join("\n"));
}

#[test]
fn a_hard_coded_database_tls_is_reported_even_when_it_matches_the_default() {
    let broken = real_infra().replace(
        MODULE_MAIN,
        "DATABASE_TLS = var.database_tls",
        "DATABASE_TLS = \"verify-full\"",
    );
    let found = violations(&broken);
    for instance in [
        "module.ingestion",
        "module.matching",
        "module.document_output",
    ] {
        assert_reported(
            &found,
            &[instance, "DATABASE_TLS does not follow var.database_tls"],
        );
    }
}

#[test]
fn an_instance_given_another_tls_mode_than_the_environment_is_reported() {
    let broken = real_infra().replace(
        "main.tf",
        "  database_tls             = var.database_tls\n  metrics_namespace        = local.metrics_namespace\n}\n\nmodule \"matching\"",
        "  database_tls             = \"require\"\n  metrics_namespace        = local.metrics_namespace\n}\n\nmodule \"matching\"",
    );
    let found = violations(&broken);
    assert_reported(
        &found,
        &[
            "module.ingestion: aws_lambda_function.this",
            "DATABASE_TLS does not follow var.database_tls",
        ],
    );
    assert_eq!(found.len(), 1, "only ingestion:\n{}", found.join("\n"));
}

#[test]
fn a_setting_cannot_weaken_database_tls() {
    // The module merges var.settings first, so the derived value wins.
    let sources = real_infra().replace(
        "main.tf",
        "  settings = merge(local.llm_settings, { LLM_TIMEOUT_SECONDS = \"30\" }, local.notify_settings)\n",
        "  settings          = merge(local.llm_settings, { DATABASE_TLS = \"disable\" })\n",
    );
    let found = violations(&sources);
    assert!(found.is_empty(), "violations:\n{}", found.join("\n"));
}

#[test]
fn an_errors_alarm_on_a_count_instead_of_a_rate_is_reported() {
    let broken = real_infra().replace(
        MODULE_ALARMS,
        "expression  = \"IF(invocations > 0, 100 * errors / invocations, 0)\"",
        "expression  = \"errors\"",
    );
    assert_reported(
        &violations(&broken),
        &["module.ingestion", "has no error-rate alarm with actions"],
    );
}

#[test]
fn an_error_rate_that_does_not_divide_by_the_invocations_is_reported() {
    let broken = real_infra().replace(
        "sweeper.tf",
        "expression  = \"IF(invocations > 0, 100 * errors / invocations, 0)\"",
        "expression  = \"IF(invocations > 0, 100 * errors, 0)\"",
    );
    let found = violations(&broken);
    assert_reported(&found, &["sweeper", "no error-rate alarm with actions"]);
    assert!(
        !found.iter().any(|v| v.contains("module.")),
        "only the sweeper was broken:\n{}",
        found.join("\n")
    );
}

#[test]
fn a_sweeper_without_its_schedule_target_is_reported() {
    let broken = real_infra().replace(
        "sweeper.tf",
        "resource \"aws_cloudwatch_event_target\" \"sweeper\" {\n  rule = aws_cloudwatch_event_rule.sweeper.name\n  arn  = aws_lambda_alias.sweeper_live.arn\n}\n",
        "",
    );
    assert_reported(
        &violations(&broken),
        &[
            "aws_lambda_function.sweeper",
            "not invoked by an EventBridge schedule",
        ],
    );
}

#[test]
fn a_schedule_that_invokes_the_sweeper_instead_of_its_alias_is_reported() {
    let broken = real_infra().replace(
        "sweeper.tf",
        "arn  = aws_lambda_alias.sweeper_live.arn",
        "arn  = aws_lambda_function.sweeper.arn",
    );
    assert_reported(
        &violations(&broken),
        &[
            "root: aws_lambda_function.sweeper",
            "its schedule's target is the function itself, not an alias of it",
        ],
    );
}

#[test]
fn an_eventbridge_permission_on_the_unqualified_sweeper_is_reported() {
    let broken = real_infra().replace(
        "sweeper.tf",
        "  qualifier     = aws_lambda_alias.sweeper_live.name\n",
        "",
    );
    assert_reported(
        &violations(&broken),
        &[
            "root: aws_lambda_function.sweeper",
            "its schedule invokes aws_lambda_alias.sweeper_live, but no lambda permission for events.amazonaws.com is qualified with it",
        ],
    );
}

#[test]
fn a_no_retry_setting_on_the_unqualified_sweeper_is_reported() {
    let broken = real_infra().replace(
        "sweeper.tf",
        "  qualifier                    = aws_lambda_alias.sweeper_live.name\n",
        "",
    );
    assert_reported(
        &violations(&broken),
        &[
            "root: aws_lambda_function.sweeper",
            "no aws_lambda_function_event_invoke_config with maximum_retry_attempts = 0 on aws_lambda_alias.sweeper_live",
        ],
    );
}

#[test]
fn a_missing_queue_function_instance_is_reported() {
    let broken = real_infra().replace(
        "main.tf",
        r#"name         = "matching""#,
        r#"name         = "matcher""#,
    );
    let found = violations(&broken);
    assert_reported(
        &found,
        &["expected one Queue-triggered function \"matching\", found 0"],
    );
    assert_reported(&found, &["instance \"matcher\" is not in the contract"]);
}

#[test]
fn a_small_configuration_breaking_several_rules_is_reported_rule_by_rule() {
    // A standalone root module, unrelated to infra/: the checks are not tied to its names.
    let snippet = r#"
resource "aws_sqs_queue" "jobs" {
  name                       = "jobs"
  visibility_timeout_seconds = 30
}

resource "aws_lambda_function" "worker" {
  function_name = "worker"
  runtime       = "provided.al2023"
  handler       = "bootstrap"
  architectures = ["x86_64"]
  timeout       = 60
}

resource "aws_lambda_event_source_mapping" "jobs" {
  event_source_arn = aws_sqs_queue.jobs.arn
  function_name    = aws_lambda_function.worker.arn
}
"#;
    let sources = real_infra().append("snippet.tf", snippet);
    let found = violations(&sources);
    for fragment in [
        "root: aws_lambda_event_source_mapping.jobs: function_response_types lacks ReportBatchItemFailures",
        "root: aws_lambda_event_source_mapping.jobs: scaling_config.maximum_concurrency is not set",
        "root: aws_lambda_event_source_mapping.jobs: function_name invokes aws_lambda_function.worker itself",
        "root: aws_sqs_queue.jobs: visibility timeout 30 s is below",
        "root: aws_sqs_queue.jobs: has no redrive policy",
        "root: aws_sqs_queue.jobs: is not encrypted",
        "root: aws_lambda_function.worker: architectures must be [\"arm64\"]",
        "root: aws_lambda_function.worker: DOCFLOW_SECRET_ID must carry the secret's ARN",
    ] {
        assert_reported(&found, &[fragment]);
    }
}

// --- admin notifications ---------------------------------------------------------------------

#[test]
fn admin_notifications_that_reach_no_one_raise_an_alarm_for_every_function_that_sends_them() {
    let infra = Infra::evaluate(&real_infra()).expect("infra/ parses");
    let filter = infra
        .root
        .resource("aws_cloudwatch_log_metric_filter.admin_notification_failed")
        .expect("a metric filter on notification failures");
    let alarm = infra
        .root
        .resource("aws_cloudwatch_metric_alarm.admin_notification_failed")
        .expect("an alarm on notification failures");
    let text = |v: Option<hcl::Value>| {
        v.and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default()
    };

    // The filter matches the JSON field docflow::notify logs on a failed channel.
    let pattern = text(filter.attr("pattern"));
    assert_eq!(
        pattern,
        format!(
            "{{ $.fields.{} IS TRUE }}",
            docflow::notify::FAILED_LOG_FIELD
        )
    );
    // It covers the log group of every function that notifies admins.
    let groups = format!("{:?}", filter.attr("for_each").expect("for_each"));
    for source in [
        "module.matching.log_group_name",
        "module.document_output.log_group_name",
        "aws_cloudwatch_log_group.sweeper.name",
    ] {
        assert!(groups.contains(source), "{source} missing from {groups}");
    }
    // The alarm watches the metric the filter writes and tells the alarm topic.
    let transformation = first_block(filter, "metric_transformation");
    assert_eq!(
        text(alarm.attr("metric_name")),
        text(hcl_attr(&transformation, "name"))
    );
    assert_eq!(
        text(alarm.attr("namespace")),
        text(hcl_attr(&transformation, "namespace"))
    );
    assert_eq!(
        text(alarm.attr("comparison_operator")),
        "GreaterThanThreshold"
    );
    assert_eq!(alarm.attr("threshold"), Some(0.into()));
    assert_eq!(
        alarm.attr("alarm_actions"),
        Some(hcl::Value::from(vec!["${aws_sns_topic.alarms.arn}"]))
    );
}

fn first_block(resource: &terraform::Resource, identifier: &str) -> hcl::Body {
    terraform::blocks(&resource.body, identifier)
        .next()
        .unwrap_or_else(|| panic!("{} has no {identifier} block", resource.address))
        .body()
        .clone()
}

fn hcl_attr(body: &hcl::Body, key: &str) -> Option<hcl::Value> {
    terraform::attr(body, key)
}

// --- the sweeper's thresholds follow the functions it recovers (docs/sweeper.md) ---------

/// The sweeper's environment and each queue function's, by function name.
fn sweeper_and_function_envs(
    sources: &Sources,
) -> (
    hcl::Map<String, hcl::Value>,
    std::collections::HashMap<String, hcl::Map<String, hcl::Value>>,
) {
    let infra = Infra::evaluate(sources).expect("infra/ parses");
    let sweeper = contract::environment(
        infra
            .root
            .resource("aws_lambda_function.sweeper")
            .expect("the sweeper"),
    );
    let functions = infra
        .instances
        .iter()
        .map(|i| {
            let function = i.resource("aws_lambda_function.this").unwrap();
            (
                i.vars["name"].as_str().unwrap_or_default().to_string(),
                contract::environment(function),
            )
        })
        .collect();
    (sweeper, functions)
}

fn sweeper_threshold_mismatches(sources: &Sources) -> Vec<String> {
    let (sweeper, functions) = sweeper_and_function_envs(sources);
    let text = |v: Option<&hcl::Value>| match v {
        Some(hcl::Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => "<unset>".to_owned(),
    };
    let mut found = Vec::new();
    for (var, function) in [
        ("STALE_INGESTION_SECONDS", "ingestion"),
        ("STALE_RUNNING_SECONDS", "document-output"),
    ] {
        let (a, b) = (text(sweeper.get(var)), text(functions[function].get(var)));
        if a != b || a == "<unset>" {
            found.push(format!("{var}: sweeper {a}, {function} {b}"));
        }
    }
    for (var, module) in [
        ("INGESTION_QUEUE_VISIBILITY_SECONDS", "ingestion"),
        ("MATCHING_QUEUE_VISIBILITY_SECONDS", "matching"),
        (
            "DOCUMENT_OUTPUT_QUEUE_VISIBILITY_SECONDS",
            "document_output",
        ),
    ] {
        let value = text(sweeper.get(var));
        if !value.contains(&format!("module.{module}.visibility_timeout_seconds")) {
            found.push(format!(
                "{var}: {value} is not the {module} queue's visibility"
            ));
        }
    }
    found
}

#[test]
fn the_sweeper_uses_the_lease_thresholds_and_queue_visibilities_of_the_functions() {
    let found = sweeper_threshold_mismatches(&real_infra());
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn a_sweeper_lease_threshold_that_drifts_from_ingestion_is_reported() {
    let broken = real_infra().replace(
        "sweeper.tf",
        "STALE_INGESTION_SECONDS                  = tostring(var.stale_ingestion_seconds)",
        "STALE_INGESTION_SECONDS                  = \"120\"",
    );
    let found = sweeper_threshold_mismatches(&broken);
    assert!(
        found
            .iter()
            .any(|f| f.starts_with("STALE_INGESTION_SECONDS")),
        "{found:?}"
    );
}

// --- traces, metric alarms and the dashboard (docs/operations.md) ----------------------------

#[test]
fn a_function_without_active_tracing_is_reported() {
    let broken = real_infra().replace(MODULE_MAIN, r#"mode = "Active""#, r#"mode = "PassThrough""#);
    let found = violations(&broken);
    for instance in [
        "module.ingestion",
        "module.matching",
        "module.document_output",
    ] {
        assert_reported(
            &found,
            &[instance, "tracing_config.mode must be \"Active\""],
        );
    }
}

#[test]
fn a_role_that_cannot_send_traces_is_reported() {
    let broken = real_infra().replace(
        "sweeper.tf",
        r#"actions   = ["xray:PutTraceSegments", "xray:PutTelemetryRecords"]"#,
        r#"actions   = ["xray:PutTelemetryRecords"]"#,
    );
    assert_reported(
        &violations(&broken),
        &["aws_lambda_function.sweeper", "needs xray:PutTraceSegments"],
    );
}

#[test]
fn every_function_has_its_metric_alarms_on_the_metrics_the_code_writes() {
    let infra = Infra::evaluate(&real_infra()).expect("infra/ parses");
    // Alarms on the metrics the code writes: the names come from the Rust constants.
    for (function, metric) in contract::metric_alarm_contract() {
        let alarm = infra
            .modules()
            .flat_map(|m| m.of_kind("aws_cloudwatch_metric_alarm"))
            .find(|a| {
                a.attr("metric_name") == Some(metric.into())
                    && a.attr("dimensions")
                        .and_then(|d| d.as_object().cloned())
                        .and_then(|d| {
                            d.get(docflow::telemetry::metrics::dimension::FUNCTION)
                                .cloned()
                        })
                        == Some(function.into())
            });
        assert!(alarm.is_some(), "no alarm on {metric} of {function}");
    }
}

#[test]
fn an_alarm_on_a_metric_name_the_code_does_not_write_is_reported() {
    let broken = real_infra().replace(
        MODULE_ALARMS,
        r#"metric_name         = "RecordsFailedPermanently""#,
        r#"metric_name         = "RecordFailedPermanently""#,
    );
    let found = violations(&broken);
    for function in ["ingestion", "matching", "document-output"] {
        assert_reported(
            &found,
            &[&format!("{function}: no alarm"), "RecordsFailedPermanently"],
        );
    }
}

#[test]
fn the_oldest_open_datev_task_has_an_alarm_on_its_maximum_age() {
    let found = violations(&real_infra());
    assert!(
        !found.iter().any(|v| v.contains("OldestOpenTaskAge")),
        "{found:?}"
    );
    let gone = real_infra().replace(
        "sweeper.tf",
        r#"metric_name         = "OldestOpenTaskAge""#,
        r#"metric_name         = "OldestOpenTaskAges""#,
    );
    assert_reported(
        &violations(&gone),
        &["sweeper: no alarm", "OldestOpenTaskAge"],
    );
    let averaged = real_infra().replace(
        "sweeper.tf",
        r#"statistic           = "Maximum""#,
        r#"statistic           = "Average""#,
    );
    assert_reported(
        &violations(&averaged),
        &["sweeper_oldest_open_task", "Maximum of OldestOpenTaskAge"],
    );
}

#[test]
fn an_alarm_with_other_dimensions_than_the_code_writes_is_reported() {
    // CloudWatch matches the whole dimension set: an extra dimension is another metric.
    let broken = real_infra().replace(
        "observability.tf",
        r#"dimensions          = { function = "sweeper" }"#,
        r#"dimensions          = { function = "sweeper", kind = "ingestion" }"#,
    );
    assert_reported(&violations(&broken), &["sweeper: no alarm", "GivenUp"]);
}

#[test]
fn an_alarm_in_another_namespace_than_the_function_writes_to_is_reported() {
    let broken = real_infra().replace(
        "observability.tf",
        r#"namespace           = local.metrics_namespace
  metric_name         = "ExportsInDoubt""#,
        r#"namespace           = "docflow"
  metric_name         = "ExportsInDoubt""#,
    );
    assert_reported(
        &violations(&broken),
        &["document-output: no alarm", "ExportsInDoubt"],
    );
}

#[test]
fn a_function_that_does_not_know_its_metrics_namespace_is_reported() {
    let broken = real_infra().replace(
        "sweeper.tf",
        "METRICS_NAMESPACE                        = local.metrics_namespace",
        "",
    );
    assert_reported(
        &violations(&broken),
        &["sweeper: sets no METRICS_NAMESPACE"],
    );
}

#[test]
fn a_dashboard_graph_of_a_metric_the_code_does_not_write_is_reported() {
    let broken = real_infra().replace("observability.tf", r#""StuckFound""#, r#""Stuck""#);
    assert_reported(
        &violations(&broken),
        &["graphs Stuck, which the code does not write"],
    );
}

#[test]
fn a_dashboard_graph_of_a_stage_the_code_does_not_time_is_reported() {
    let broken = real_infra().replace(
        "observability.tf",
        r#""stage", "transcribe""#,
        r#""stage", "ocr""#,
    );
    assert_reported(
        &violations(&broken),
        &["graphs StageDuration with dimensions", "\"ocr\""],
    );
}

// --- document output: an hour of Maesn refusals -------------------------------------------------

/// The document-output queue's receive count, with the worker's
/// backoff after a passing refusal (60 s · 2^(n−1), at most 900 s), spans more than an
/// hour, so a 60-minute Maesn outage ends with receives left for every export caught in
/// it — and the function is told the same count as the redrive policy.
#[test]
fn the_document_output_receives_outlast_an_hour_long_maesn_outage() {
    let infra = Infra::evaluate(&real_infra()).expect("infra/ parses");
    let instance = infra
        .instances
        .iter()
        .find(|i| i.address == "module.document_output")
        .expect("document output");
    let function = instance
        .resource("aws_lambda_function.this")
        .expect("function");
    let receives: u32 = contract::environment(function)
        .get("MAX_RECEIVE_COUNT")
        .and_then(hcl::Value::as_str)
        .and_then(|s| s.parse().ok())
        .expect("MAX_RECEIVE_COUNT");
    let backoff = docflow::output::worker::Backoff::default();
    let schedule: Vec<u64> = (1..receives)
        .map(|n| backoff.after(n, None).as_secs())
        .collect();
    let span: u64 = schedule.iter().sum();
    assert!(
        span > 3600 + 900,
        "{receives} receives back off {schedule:?} = {span} s: an hour-long outage (and one more \
         longest backoff of slack) must end before the last receive"
    );
    // The other queues keep their own count.
    let ingestion = infra
        .instances
        .iter()
        .find(|i| i.address == "module.ingestion")
        .expect("ingestion");
    let ingestion_count = contract::environment(
        ingestion
            .resource("aws_lambda_function.this")
            .expect("function"),
    )
    .get("MAX_RECEIVE_COUNT")
    .and_then(hcl::Value::as_str)
    .map(str::to_owned);
    assert_eq!(ingestion_count.as_deref(), Some("3"));
}

// --- the migrate function (infra/migrate.tf) ---------------------------------------------

#[test]
fn the_migrate_function_is_operator_invoked_and_told_the_four_function_secrets() {
    let infra = Infra::evaluate(&real_infra()).expect("infra/ parses");
    let function = infra
        .root
        .resource("aws_lambda_function.migrate")
        .expect("the migrate function");
    assert_eq!(contract::contract_name(function), "migrate");
    assert!(contract::FUNCTIONS.iter().any(|c| c.name == "migrate"
        && c.trigger == contract::Trigger::Operator
        && !c.follows_live_versions()));
    // The exact name the migrate crate reads, and exactly the four secrets' ARNs.
    assert_eq!(
        contract::FUNCTION_SECRETS_ENV,
        "DOCFLOW_FUNCTION_CREDENTIAL_ARNS"
    );
    let env = contract::environment(function);
    let told: serde_json::Value = serde_json::from_str(
        env[contract::FUNCTION_SECRETS_ENV]
            .as_str()
            .expect("a JSON string"),
    )
    .expect("JSON");
    assert_eq!(
        told,
        serde_json::json!({
            "ingestion": "${aws_secretsmanager_secret.ingestion.arn}",
            "matching": "${aws_secretsmanager_secret.matching.arn}",
            "document-output": "${aws_secretsmanager_secret.document_output.arn}",
            "sweeper": "${aws_secretsmanager_secret.sweeper.arn}",
        })
    );
}

#[test]
fn a_missing_migrate_function_is_reported() {
    let broken = real_infra().replace(
        "migrate.tf",
        r#""${local.name_prefix}docflow-migrate""#,
        r#""${local.name_prefix}docflow-migrator""#,
    );
    let found = violations(&broken);
    assert_reported(
        &found,
        &["expected one Operator-triggered function \"migrate\", found 0"],
    );
    assert_reported(&found, &["function \"migrator\" is not in the contract"]);
}

#[test]
fn anything_that_invokes_the_migrate_function_is_reported() {
    let broken = real_infra().append(
        "migrate.tf",
        r#"
resource "aws_lambda_permission" "migrate_from_events" {
  statement_id  = "AllowEventBridge"
  action        = "lambda:InvokeFunction"
  function_name = aws_lambda_function.migrate.function_name
  principal     = "events.amazonaws.com"
  qualifier     = aws_lambda_alias.migrate_live.name
}

resource "aws_cloudwatch_event_target" "migrate" {
  rule = aws_cloudwatch_event_rule.sweeper.name
  arn  = aws_lambda_alias.migrate_live.arn
}

resource "aws_lambda_function_url" "migrate" {
  function_name      = "staging-docflow-migrate"
  authorization_type = "NONE"
}
"#,
    );
    let found = violations(&broken);
    for resource in [
        "aws_lambda_permission.migrate_from_events",
        "aws_cloudwatch_event_target.migrate",
        "aws_lambda_function_url.migrate",
    ] {
        assert_reported(
            &found,
            &[
                &format!("root: {resource}: invokes aws_lambda_function.migrate"),
                "only an operator may invoke",
            ],
        );
    }
}

#[test]
fn the_migrate_function_reading_other_secrets_than_the_four_is_reported() {
    let broader = real_infra().replace(
        "migrate.tf",
        "resources = values(local.migrate_function_secrets)",
        r#"resources = concat(values(local.migrate_function_secrets), ["arn:aws:secretsmanager:eu-central-1:123456789012:secret:other"])"#,
    );
    assert_reported(
        &violations(&broader),
        &[
            "root: aws_lambda_function.migrate",
            "secretsmanager:GetSecretValue is granted on",
            "secret:other",
        ],
    );

    // Three of the four: the grant and the variable both miss the sweeper's secret.
    let narrower = real_infra().replace(
        "migrate.tf",
        "    sweeper           = aws_secretsmanager_secret.sweeper.arn\n",
        "",
    );
    let found = violations(&narrower);
    assert_reported(
        &found,
        &[
            "root: aws_lambda_function.migrate",
            "secretsmanager:GetSecretValue is granted on",
        ],
    );
    assert_reported(
        &found,
        &[
            "root: aws_lambda_function.migrate",
            "DOCFLOW_FUNCTION_CREDENTIAL_ARNS is",
        ],
    );
}

#[test]
fn the_function_secrets_variable_named_like_a_credential_or_elsewhere_is_reported() {
    // Any name with SECRET (or PASSWORD, TOKEN, ...) but DOCFLOW_SECRET_ID is reported.
    let renamed = real_infra().replace(
        "migrate.tf",
        "DOCFLOW_FUNCTION_CREDENTIAL_ARNS = jsonencode(",
        "DOCFLOW_FUNCTION_SECRETS = jsonencode(",
    );
    let found = violations(&renamed);
    assert_reported(
        &found,
        &[
            "root: aws_lambda_function.migrate",
            "DOCFLOW_FUNCTION_SECRETS looks like a credential",
        ],
    );
    assert_reported(
        &found,
        &[
            "root: aws_lambda_function.migrate",
            "sets no DOCFLOW_FUNCTION_CREDENTIAL_ARNS",
        ],
    );

    let elsewhere = real_infra().replace(
        "sweeper.tf",
        "      RUST_LOG                  = var.log_level\n",
        "      RUST_LOG                  = var.log_level\n      DOCFLOW_FUNCTION_CREDENTIAL_ARNS = \"{}\"\n",
    );
    assert_reported(
        &violations(&elsewhere),
        &[
            "root: aws_lambda_function.sweeper",
            "sets DOCFLOW_FUNCTION_CREDENTIAL_ARNS, but only migrate",
        ],
    );
}
