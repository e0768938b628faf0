//! Every AWS action a function calls is granted to its role in Terraform.
//!
//! moto does not enforce IAM, so a call the role lacks would pass every other test and
//! fail in AWS (the runtime's old `sqs:GetQueueUrl` did). Two links hold code and
//! Terraform together, with no order between them:
//!
//! - each function crate declares the actions it calls, `<function>::aws_actions(env)`,
//!   for the environment Terraform gives it (ingestion adds Textract only with
//!   `OCR_PROVIDER=textract`); its tests run it on SDK clients that record every call
//!   and refuse undeclared ones (`docflow_tests::aws_calls`);
//! - here: every declared action is granted by an `Allow` statement of the role
//!   Terraform attaches to that function (the real `infra/`, parsed with hcl-rs and
//!   evaluated as the infra contract tests do).
//!
//! A new function plugs in with one line in [`declared`].

use crate::infra_contract::{contract, terraform};

use std::path::PathBuf;

use docflow::settings::Env;
use hcl::{Map, Value};
use terraform::{Infra, Sources};

/// What the function named `function` (as Terraform names it, without the prefix)
/// declares it calls, given its environment.
fn declared(function: &str, env: &Map<String, Value>) -> Option<Vec<&'static str>> {
    let env = Env::new(|var: &str| env.get(var).and_then(Value::as_str).map(str::to_owned));
    match function {
        "ingestion" => Some(ingestion::aws_actions(&env)),
        "matching" => Some(matching::aws_actions(&env)),
        "document-output" => Some(document_output::aws_actions(&env)),
        "sweeper" => Some(sweeper::aws_actions(&env)),
        // Its own secret and the four function secrets; nothing else in AWS.
        "migrate" => Some(migrate::aws_actions()),
        _ => None,
    }
}

/// Every declared action no `Allow` statement of the function's role grants, and every
/// function that declares nothing.
fn ungranted(sources: &Sources) -> Vec<String> {
    let infra = Infra::evaluate(sources).expect("infra/ parses");
    let mut found = Vec::new();
    for module in infra.modules() {
        for function in module.of_kind("aws_lambda_function") {
            let name = contract::contract_name(function);
            let place = format!("{}: {}", module.address, function.address);
            let Some(actions) = declared(&name, &contract::environment(function)) else {
                found.push(format!("{place}: {name} declares no AWS actions"));
                continue;
            };
            let statements = match contract::role_policies(module, function) {
                Ok(statements) => statements,
                Err(why) => {
                    found.push(format!("{place}: {why}"));
                    continue;
                }
            };
            for action in actions {
                if !statements.iter().any(|s| s.grants(action)) {
                    found.push(format!(
                        "{place}: {name} calls {action}, which its role does not grant"
                    ));
                }
            }
        }
    }
    found
}

fn real_infra() -> Sources {
    Sources::read(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../infra"))
}

fn assert_reported(found: &[String], fragments: &[&str]) {
    assert!(
        found
            .iter()
            .any(|v| fragments.iter().all(|f| v.contains(f))),
        "expected a finding mentioning {fragments:?}, got:\n{}",
        found.join("\n")
    );
}

#[test]
fn every_aws_action_a_function_calls_is_granted_to_its_role() {
    let found = ungranted(&real_infra());
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn with_native_ocr_ingestion_neither_calls_nor_needs_textract() {
    let sources = real_infra().append("environments/example.tfvars", "ocr_provider = \"native\"\n");
    let found = ungranted(&sources);
    assert!(found.is_empty(), "{}", found.join("\n"));
    let infra = Infra::evaluate(&sources).unwrap();
    let ingestion = infra
        .instances
        .iter()
        .find(|i| i.address == "module.ingestion")
        .unwrap();
    let function = ingestion.resource("aws_lambda_function.this").unwrap();
    let actions = declared("ingestion", &contract::environment(function)).unwrap();
    assert!(!actions.iter().any(|a| a.starts_with("textract:")));
}

#[test]
fn the_checked_functions_are_every_function_terraform_deploys() {
    let infra = Infra::evaluate(&real_infra()).unwrap();
    let mut names: Vec<String> = infra
        .modules()
        .flat_map(|m| m.of_kind("aws_lambda_function"))
        .map(contract::contract_name)
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "document-output",
            "ingestion",
            "matching",
            "migrate",
            "sweeper"
        ]
    );
}

#[test]
fn a_role_without_change_message_visibility_is_reported_for_every_queue_function() {
    let broken = real_infra().replace(
        "modules/queue-function/iam.tf",
        "      \"sqs:ChangeMessageVisibility\",\n",
        "",
    );
    let found = ungranted(&broken);
    for instance in [
        "module.ingestion",
        "module.matching",
        "module.document_output",
    ] {
        assert_reported(&found, &[instance, "sqs:ChangeMessageVisibility"]);
    }
}

#[test]
fn textract_without_its_asynchronous_actions_is_reported() {
    let broken = real_infra().replace(
        "modules/queue-function/iam.tf",
        "        \"textract:StartDocumentTextDetection\",\n",
        "",
    );
    assert_reported(
        &ungranted(&broken),
        &["module.ingestion", "textract:StartDocumentTextDetection"],
    );
}

/// Each function's credentials are in a secret of its own, and no
/// role may read another function's secret (ingestion never sees the Maesn key,
/// document output never the LLM keys). Every `secretsmanager:GetSecretValue` resource
/// of a role that is another function's `DOCFLOW_SECRET_ID` is reported, and so is a
/// secret two functions share. One named exception
/// (`contract::FUNCTION_SECRETS_READER`): the migrate function reads the four function
/// secrets, because it sets each function's database role's password from that
/// function's secret and then checks the role by connecting with it. No role reads the
/// migrate function's secret (the schema owner's).
fn secrets_readable_by_others(sources: &Sources) -> Vec<String> {
    let infra = Infra::evaluate(sources).expect("infra/ parses");
    let mut own = Vec::new();
    for module in infra.modules() {
        for function in module.of_kind("aws_lambda_function") {
            let secret = contract::environment(function)
                .get("DOCFLOW_SECRET_ID")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            own.push((contract::contract_name(function), secret));
        }
    }
    let mut found = Vec::new();
    for module in infra.modules() {
        for function in module.of_kind("aws_lambda_function") {
            let name = contract::contract_name(function);
            let Ok(statements) = contract::role_policies(module, function) else {
                continue;
            };
            for (other, secret) in own
                .iter()
                .filter(|(other, _)| *other != name && !contract::may_read_secret_of(&name, other))
            {
                let readable = statements.iter().any(|s| {
                    s.grants("secretsmanager:GetSecretValue") && s.resources.contains(secret)
                });
                if readable {
                    found.push(format!(
                        "{name} may read {secret}, the secret of {other} (secretsmanager:GetSecretValue)"
                    ));
                }
            }
        }
    }
    found
}

#[test]
fn no_function_can_read_another_functions_secret() {
    let found = secrets_readable_by_others(&real_infra());
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn a_function_given_another_functions_secret_is_reported() {
    let broken = real_infra().replace(
        "main.tf",
        "secret_arn        = aws_secretsmanager_secret.matching.arn",
        "secret_arn        = aws_secretsmanager_secret.ingestion.arn",
    );
    let found = secrets_readable_by_others(&broken);
    assert_reported(
        &found,
        &["matching may read ${aws_secretsmanager_secret.ingestion.arn}, the secret of ingestion"],
    );
    assert_reported(
        &found,
        &["ingestion may read ${aws_secretsmanager_secret.ingestion.arn}, the secret of matching"],
    );
}

#[test]
fn only_the_migrate_function_may_read_other_functions_secrets() {
    let readers: Vec<(&str, &str)> = contract::FUNCTIONS
        .iter()
        .flat_map(|reader| {
            contract::FUNCTIONS
                .iter()
                .filter(|owner| {
                    owner.name != reader.name
                        && contract::may_read_secret_of(reader.name, owner.name)
                })
                .map(move |owner| (reader.name, owner.name))
        })
        .collect();
    assert_eq!(
        readers,
        [
            ("migrate", "ingestion"),
            ("migrate", "matching"),
            ("migrate", "document-output"),
            ("migrate", "sweeper"),
        ]
    );
}

#[test]
fn a_function_that_reads_the_schema_owners_secret_is_reported() {
    let broken = real_infra().replace(
        "sweeper.tf",
        "resources = [aws_secretsmanager_secret.sweeper.arn]",
        "resources = [aws_secretsmanager_secret.sweeper.arn, aws_secretsmanager_secret.migrate.arn]",
    );
    assert_reported(
        &secrets_readable_by_others(&broken),
        &["sweeper may read ${aws_secretsmanager_secret.migrate.arn}, the secret of migrate"],
    );
}
