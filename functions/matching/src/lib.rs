//! The matching Lambda: one SQS message per document id (seeds 000/001).
//!
//! `process` parses the id, claims the document (`in-progress`, attempts + 1), runs
//! [`docflow::matching::match_document`] and marks it `succeeded`. Failures follow seed
//! 001's table:
//!
//! | failure                        | database                    | admins   | message              |
//! |--------------------------------|-----------------------------|----------|----------------------|
//! | permanent                      | `failed`, error, failed_at  | notified | `Done` (deleted)     |
//! | transient, receive 1           | error recorded              | —        | `Retry{300 s}`       |
//! | transient, later non-final     | error recorded              | —        | `Retry{1800 s}`      |
//! | transient, final receive       | `failed`, error, failed_at  | notified | `Release` (→ DLQ)    |
//!
//! Poison messages (not a UUID, unknown document, no structured data) are discarded.

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use docflow::bootstrap::Common;
use docflow::ids::DocumentId;
use docflow::llm::{LlmClient, LlmSettings};
use docflow::matching::status::{self, Claim};
use docflow::matching::{self, Document, MatchingConfig, MatchingError, error_chain};
use docflow::notify::{AdminNotice, Notifier, NotifySettings};
use docflow::retry::{Classify, ReceivePolicy, RetryClass, TransientSchedule};
use docflow::settings::process_env;
use docflow::{BatchRuntime, Message, Outcome};
use lambda_runtime::LambdaEvent;
use sqlx::PgPool;

/// Time kept back from the invocation for the failure path (status update, admin
/// notifications with their timeout, the visibility change): a run still going then is
/// cut short and handled as a transient failure, not left to the runtime's plain report.
pub const FAILURE_RESERVE: std::time::Duration = std::time::Duration::from_secs(15);

/// Title of the admin notification.
pub const FAILURE_TITLE: &str = "Document matching failed";

/// Everything the handler borrows, built once per cold start.
#[derive(Debug)]
pub struct Deps {
    pub pool: PgPool,
    pub runtime: BatchRuntime,
    /// `None`: no LLM configured, the ambiguous band is decided by the score.
    pub llm: Option<LlmClient>,
    pub notifier: Notifier,
    pub receive_policy: ReceivePolicy,
    pub config: MatchingConfig,
}

impl Deps {
    /// Settings, secret, pool, LLM client and notification channels. Fails with what is
    /// missing or malformed; Lambda retries the cold start.
    pub async fn from_env() -> anyhow::Result<Self> {
        let common = Common::from_env().await?;
        let env = process_env();
        let llm = LlmClient::from_secret(&LlmSettings::from_env(&env)?, &common.secrets).await?;
        let notifier = Notifier::from_settings(
            &NotifySettings::from_env(&env)?,
            &common.secrets,
            &common.aws,
        )
        .await?;
        Ok(Deps {
            pool: common.pool,
            runtime: common.runtime,
            llm,
            notifier,
            receive_policy: common.settings.receive_policy,
            config: MatchingConfig::default(),
        })
    }
}

/// The Lambda handler: the batch runtime over [`process`].
pub async fn handler(
    deps: &Deps,
    event: LambdaEvent<SqsEvent>,
) -> Result<SqsBatchResponse, lambda_runtime::Error> {
    Ok(deps.runtime.run(event, |msg| process(deps, msg)).await?)
}

/// Handles one message; see the module docs for the outcomes.
pub async fn process(deps: &Deps, msg: Message) -> Outcome {
    let id = match DocumentId::parse(&msg.body) {
        Ok(id) => id,
        Err(e) => return Outcome::discard(e.to_string()),
    };
    msg.record_entity(&id);

    let doc = match status::claim(&deps.pool, id.0).await {
        Ok(Claim::Claimed(doc)) => doc,
        Ok(Claim::Missing) => {
            tracing::warn!(document_id = %id, "document not found; nothing to match");
            return Outcome::discard(format!("document {id} not found"));
        }
        Ok(Claim::NoStructuredData) => {
            tracing::warn!(document_id = %id, "document has no structured data; nothing to match");
            return Outcome::discard(format!("document {id} has no structured data"));
        }
        Err(source) => {
            let error = MatchingError::Database {
                step: "claim the document",
                document_id: id.0,
                source,
            };
            return on_failure(deps, &msg, id, error).await;
        }
    };

    let result = match msg.within_deadline(FAILURE_RESERVE, run(deps, &doc)).await {
        Ok(result) => result,
        Err(source) => Err(MatchingError::OutOfTime {
            document_id: doc.id,
            source,
        }),
    };
    match result {
        Ok(()) => Outcome::Done,
        Err(error) => on_failure(deps, &msg, id, error).await,
    }
}

async fn run(deps: &Deps, doc: &Document) -> Result<(), MatchingError> {
    matching::match_document(&deps.pool, deps.llm.as_ref(), &deps.config, doc).await?;
    status::succeed(&deps.pool, doc.id)
        .await
        .map_err(|source| MatchingError::Database {
            step: "mark the document succeeded",
            document_id: doc.id,
            source,
        })
}

async fn on_failure(deps: &Deps, msg: &Message, id: DocumentId, error: MatchingError) -> Outcome {
    let class = error.retry_class();
    let text = error_chain(&error);
    tracing::error!(
        document_id = %id,
        receive_count = msg.receive_count,
        retry_class = ?class,
        error.message = %error,
        error.cause_chain = ?error,
        "matching failed"
    );
    match (
        class,
        deps.receive_policy.matching_schedule(msg.receive_count),
    ) {
        (RetryClass::Transient, TransientSchedule::RetryAfter(after)) => {
            if let Err(e) = status::record_error(&deps.pool, id.0, &text).await {
                tracing::warn!(error.message = %e, error.cause_chain = ?e, "could not record the error");
            }
            Outcome::Retry { after }
        }
        (RetryClass::Transient, TransientSchedule::Final) => {
            fail_and_notify(deps, msg, id, &text).await;
            // The redrive policy moves the message to the DLQ on the next receive.
            Outcome::Release
        }
        (RetryClass::Permanent, _) => {
            if fail_and_notify(deps, msg, id, &text).await {
                Outcome::Done
            } else {
                // Not recorded: keep the message so a later receive records it.
                Outcome::Release
            }
        }
    }
}

/// Marks the document failed and notifies the admins; returns whether the failure was
/// recorded. The admins are notified even when it was not.
async fn fail_and_notify(deps: &Deps, msg: &Message, id: DocumentId, error: &str) -> bool {
    let failed = match status::fail(&deps.pool, id.0, error).await {
        Ok(failed) => failed,
        Err(e) => {
            tracing::error!(
                error.message = %e,
                error.cause_chain = ?e,
                "could not mark the document failed"
            );
            None
        }
    };
    let recorded = failed.is_some();
    let notice = AdminNotice {
        title: FAILURE_TITLE.to_owned(),
        document_id: id.0,
        tenant_id: failed.as_ref().map(|f| f.tenant_id),
        tenant_name: failed.as_ref().map(|f| f.tenant_name.clone()),
        error: error.to_owned(),
        attempts: failed
            .map(|f| f.matching_attempts)
            .unwrap_or(msg.receive_count as i32),
    };
    deps.notifier.notify(&notice).await;
    recorded
}

/// Every AWS API action matching calls (IAM names) in the environment it runs in: what
/// Terraform must grant its role (`tests/tests/iam_calls.rs` holds the two together).
/// Tests that give matching AWS clients from `docflow_tests::aws_calls` refuse any call
/// outside this list.
pub fn aws_actions<F: Fn(&str) -> Option<String>>(
    env: &docflow::settings::Env<F>,
) -> Vec<&'static str> {
    let mut actions = vec!["secretsmanager:GetSecretValue"]; // cold start: the secret
    actions.extend_from_slice(docflow::sqs::AWS_ACTIONS);
    // Admin notifications by email (docflow::notify::SesChannel) when configured.
    if env.optional("NOTIFY_EMAIL_FROM").is_some() && env.optional("NOTIFY_EMAIL_TO").is_some() {
        actions.push("ses:SendEmail");
    }
    actions
}
