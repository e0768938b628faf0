//! The matching Lambda: one SQS message per document id (seeds 000/001).
//!
//! `process` parses the id, claims the document (`in-progress`, attempts + 1) and runs
//! [`docflow::matching::match_document`], which marks it `succeeded` in the transaction
//! that writes its edges. Failures follow seed 001's table:
//!
//! | failure                        | database                    | admins   | message              |
//! |--------------------------------|-----------------------------|----------|----------------------|
//! | permanent                      | `failed`, error, failed_at  | notified | `Done` (deleted)     |
//! | permanent, not recordable      | unchanged (`in-progress`)   | —        | `Release`: the next receive records and notifies |
//! | transient, receive 1           | error recorded              | —        | `Retry{300 s}`       |
//! | transient, later non-final     | error recorded              | —        | `Retry{1800 s}`      |
//! | transient, final receive       | `failed`, error, failed_at  | notified | `Release` (→ DLQ)    |
//!
//! A delivery that meets another delivery's live claim on the document (`in-progress`,
//! claimed less than `MatchingConfig::claim_lease` ago, 150 s by default) does not run: its message comes back
//! after the lease (`Retry`). A delivered notice is recorded in `matching_notified_at`. Poison messages (not a UUID,
//! unknown document, no structured data) are discarded, and so are messages for work
//! that finished after they were sent (duplicates, late sweeper re-sends, redriven
//! messages): matching is not run twice and admins are not told twice. Such a message
//! does tell the admins about a recorded failure no one was told about yet.

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use docflow::bootstrap::Common;
use docflow::embeddings::{EmbeddingClient, EmbeddingSettings};
use docflow::ids::DocumentId;
use docflow::llm::{LlmClient, LlmSettings};
use docflow::matching::status::{self, Attempt, Claim};
use docflow::matching::{self, Document, MatchingConfig, MatchingError, error_chain};
use docflow::notify::{AdminNotice, Notifier, NotifySettings};
use docflow::retry::{Classify, ReceivePolicy, RetryClass, TransientSchedule};
use docflow::settings::process_env;
use docflow::telemetry::metrics;
use docflow::{BatchRuntime, DiscardKind, Message, Outcome};
use lambda_runtime::LambdaEvent;
use sqlx::PgPool;

/// Time kept back from the invocation for the failure path (status update, admin
/// notifications with their timeout, the visibility change): a run still going then is
/// cut short and handled as a transient failure, not left to the runtime's plain report.
pub const FAILURE_RESERVE: std::time::Duration = std::time::Duration::from_secs(15);

/// How long after another delivery's claim would go stale a message that met it comes
/// back.
pub const BUSY_MARGIN: std::time::Duration = std::time::Duration::from_secs(10);

/// Title of the admin notification.
pub const FAILURE_TITLE: &str = "Document matching failed";

/// Time kept back from the notification for recording it and answering Lambda.
const NOTIFY_MARGIN: std::time::Duration = std::time::Duration::from_secs(2);

/// Everything the handler borrows, built once per cold start.
#[derive(Debug)]
pub struct Deps {
    pub pool: PgPool,
    pub runtime: BatchRuntime,
    /// `None`: no LLM configured, the ambiguous band is decided by the score.
    pub llm: Option<LlmClient>,
    /// `None`: no embeddings configured, no semantic candidates.
    pub embeddings: Option<EmbeddingClient>,
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
        let embeddings =
            EmbeddingClient::from_secret(&EmbeddingSettings::from_env(&env)?, &common.secrets)
                .await?;
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
            embeddings,
            notifier,
            receive_policy: common.settings.receive_policy,
            config: MatchingConfig::from_env(&env)?,
        })
    }
}

/// This function's name in its metrics (`function` dimension) and batch span.
pub const FUNCTION: &str = "matching";

/// The Lambda handler: the batch runtime over [`process`].
pub async fn handler(
    deps: &Deps,
    event: LambdaEvent<SqsEvent>,
) -> Result<SqsBatchResponse, lambda_runtime::Error> {
    Ok(deps
        .runtime
        .run_as(FUNCTION, event, |msg| process(deps, msg))
        .await?)
}

/// Handles one message; see the module docs for the outcomes.
pub async fn process(deps: &Deps, msg: Message) -> Outcome {
    let id = match DocumentId::parse(&msg.body) {
        Ok(id) => id,
        Err(e) => return Outcome::discard_as(DiscardKind::NotAnId, e.to_string()),
    };
    msg.record_entity(&id);
    msg.record_document(&id);

    let doc = match metrics::stage(
        metrics::stages::CLAIM,
        status::claim(&deps.pool, id.0, msg.sent_at, deps.config.claim_lease),
    )
    .await
    {
        Ok(Claim::Claimed(doc)) => {
            msg.record_tenant(&doc.tenant_id);
            doc
        }
        Ok(Claim::Missing) => {
            tracing::warn!(document_id = %id, "document not found; nothing to match");
            return Outcome::discard_as(DiscardKind::Unknown, format!("document {id} not found"));
        }
        Ok(Claim::NoStructuredData) => {
            tracing::warn!(document_id = %id, "document has no structured data; nothing to match");
            return Outcome::discard_as(
                DiscardKind::Unprocessable,
                format!("document {id} has no structured data"),
            );
        }
        Ok(Claim::AlreadyFinished(finished)) => {
            if let Some(failed) = &finished.untold_failure {
                // The delivery that recorded this failure did not reach the admins (it
                // died first, or every channel failed): this one tells them.
                tell_admins(deps, &msg, id, failed, Notice::Untold).await;
            }
            return Outcome::discard_as(
                DiscardKind::Duplicate,
                format!(
                    "matching of document {id} already {} after this message was sent: a duplicate of finished work",
                    finished.status
                ),
            );
        }
        Ok(Claim::Busy { stale_in }) => {
            // Another delivery of this document (a duplicate, a sweeper re-send) is running
            // it now: do not pay for a second run. Come back once its claim would be
            // stale — by then it finished (and this message is a duplicate of that work)
            // or died (and this one takes over).
            tracing::info!(
                document_id = %id,
                stale_in_secs = stale_in.as_secs(),
                "another delivery holds a live claim on this document; retrying after its lease"
            );
            return Outcome::Retry {
                after: stale_in + BUSY_MARGIN,
            };
        }
        Ok(Claim::UnknownType { label, attempt }) => {
            let error = MatchingError::UnknownType {
                document_id: id.0,
                label,
            };
            return on_failure(deps, &msg, id, Attempt::Claimed(attempt), error).await;
        }
        Ok(Claim::UnreadableData { error, attempt }) => {
            let error = MatchingError::UnreadableData {
                document_id: id.0,
                source: error,
            };
            return on_failure(deps, &msg, id, Attempt::Claimed(attempt), error).await;
        }
        Err(source) => {
            let error = MatchingError::Database {
                step: "claim the document",
                document_id: id.0,
                source,
            };
            return on_failure(deps, &msg, id, Attempt::Unclaimed, error).await;
        }
    };
    let attempt = Attempt::Claimed(doc.matching_attempts);

    let result = match msg.within_deadline(FAILURE_RESERVE, run(deps, &doc)).await {
        Ok(result) => result,
        Err(source) => Err(MatchingError::OutOfTime {
            document_id: doc.id,
            source,
        }),
    };
    match result {
        Ok(()) => Outcome::Done,
        // A re-extraction or a newer delivery owns the document now; that message matches
        // the current data. Nothing to record, no one to tell.
        Err(error @ MatchingError::Superseded { .. }) => {
            Outcome::discard_as(DiscardKind::Duplicate, error.to_string())
        }
        Err(error) => {
            let outcome = on_failure(deps, &msg, id, attempt, error).await;
            // The run is over. Recording its error or failure released the claim; when
            // that could not be recorded, release it here, so the redelivery claims at
            // once. (If this fails too, the claim goes stale after the lease.)
            if let Err(e) = status::release_claim(&deps.pool, id.0, doc.matching_attempts).await {
                tracing::warn!(
                    error.message = %e,
                    error.cause_chain = ?e,
                    "could not release the claim; the next delivery waits for its lease"
                );
            }
            outcome
        }
    }
}

/// The pipeline; it marks the document `succeeded` in its write transaction.
async fn run(deps: &Deps, doc: &Document) -> Result<(), MatchingError> {
    matching::match_document_with(
        &deps.pool,
        deps.llm.as_ref(),
        deps.embeddings.as_ref(),
        &deps.config,
        doc,
    )
    .await
    .map(|_| ())
}

async fn on_failure(
    deps: &Deps,
    msg: &Message,
    id: DocumentId,
    attempt: Attempt,
    error: MatchingError,
) -> Outcome {
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
            match status::record_error(&deps.pool, id.0, attempt, &text).await {
                Ok(status::Held::Held) => {}
                Ok(status::Held::Lost) => tracing::info!(
                    document_id = %id,
                    "a newer delivery owns or finished this document; its error is not recorded"
                ),
                Err(e) => {
                    tracing::warn!(error.message = %e, error.cause_chain = ?e, "could not record the error")
                }
            }
            Outcome::Retry { after }
        }
        (RetryClass::Transient, TransientSchedule::Final) => {
            // Recorded or not, the redrive policy moves the message to the DLQ on the next
            // receive; unrecorded, the document stays `in-progress` for the sweeper.
            fail_and_notify(deps, msg, id, attempt, &text).await;
            Outcome::Release
        }
        (RetryClass::Permanent, _) => {
            if fail_and_notify(deps, msg, id, attempt, &text).await {
                Outcome::Done
            } else {
                // Not recorded: keep the message so a later receive records and notifies.
                Outcome::Release
            }
        }
    }
}

/// Marks the document failed and, once that is recorded, notifies the admins; returns
/// whether the failure was recorded. An unrecorded failure notifies no one: the message
/// is kept, and the delivery that records the failure notifies — once.
///
/// Only the delivery that owns the document records its failure: when a newer delivery
/// claimed it since (a duplicate, a sweeper re-send) or it already finished, nothing is
/// recorded and no one is notified — that delivery records its own outcome.
async fn fail_and_notify(
    deps: &Deps,
    msg: &Message,
    id: DocumentId,
    attempt: Attempt,
    error: &str,
) -> bool {
    match status::fail(&deps.pool, id.0, attempt, error).await {
        Ok(Some(failed)) => {
            metrics::failed_permanently();
            tell_admins(deps, msg, id, &failed, Notice::Claimed).await;
            true
        }
        Ok(None) => {
            tracing::warn!(
                document_id = %id,
                ?attempt,
                "failure not recorded: the document is gone, finished, or owned by a newer delivery"
            );
            true
        }
        Err(e) => {
            tracing::error!(
                error.message = %e,
                error.cause_chain = ?e,
                "could not mark the document failed; admins are notified when a later delivery records it"
            );
            false
        }
    }
}

/// Notifies the admins of a recorded failure within the invocation's time, and records
/// `matching_notified_at` when a channel delivered.
/// Whose notice a delivery is about to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Notice {
    /// Its own: [`status::fail`] claimed the notice with the failure.
    Claimed,
    /// An earlier delivery's, found untold: taken over only if still unclaimed (or its
    /// claimer died), so a duplicate meeting a live notifier does not tell twice.
    Untold,
}

async fn tell_admins(
    deps: &Deps,
    msg: &Message,
    id: DocumentId,
    failed: &status::Failed,
    whose: Notice,
) {
    if whose == Notice::Untold {
        match status::claim_notice(&deps.pool, id.0, failed.failed_at).await {
            Ok(status::Held::Held) => {}
            Ok(status::Held::Lost) => {
                tracing::info!(document_id = %id, "another delivery is telling the admins");
                return;
            }
            Err(e) => {
                tracing::warn!(
                    error.message = %e,
                    error.cause_chain = ?e,
                    "could not claim the untold notice; a later delivery tells the admins"
                );
                return;
            }
        }
    }
    let notice = AdminNotice {
        title: FAILURE_TITLE.to_owned(),
        document_id: id.0,
        document_type: Some(failed.doc_type.clone()),
        tenant_id: Some(failed.tenant_id),
        tenant_name: Some(failed.tenant_name.clone()),
        error: failed.error.clone(),
        attempts: failed.matching_attempts,
    };
    let deadline = msg
        .time_left()
        .map(|left| tokio::time::Instant::now() + left.saturating_sub(NOTIFY_MARGIN));
    let delivery = deps.notifier.notify_until(&notice, deadline).await;
    if !delivery.delivered() {
        // No channel took it: the next delivery may tell at once.
        if let Err(e) = status::release_notice(&deps.pool, id.0, failed.failed_at).await {
            tracing::warn!(
                error.message = %e,
                error.cause_chain = ?e,
                "could not release the notice; a delivery after the claim's grace tells the admins"
            );
        }
        return;
    }
    match status::mark_notified(&deps.pool, id.0, failed.failed_at).await {
        Ok(_) => {}
        Err(e) => tracing::warn!(
            error.message = %e,
            error.cause_chain = ?e,
            "admins were notified but matching_notified_at could not be recorded"
        ),
    }
}

/// Every AWS API action matching calls (IAM names) in the environment it runs in: what
/// Terraform must grant its role (`tests/tests/it/iam_calls.rs` holds the two together).
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
