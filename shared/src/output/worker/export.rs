//! The export of a claimed, eligible job ([`export`]): the document and its tenant's
//! integration, the document file from S3, the `requested` audit written before the
//! call, and the Maesn call with its in-process retries, each attempt only while the
//! [`Attempt`] has time for it. How the call ended is classified here and recorded by
//! the statements in `outcome`.

use std::time::Duration;

use bytes::Bytes;
use rand::Rng;
use sqlx::PgPool;
use tokio::time::Instant;
use uuid::Uuid;

use super::claim::{Claimed, defer};
use super::outcome::{
    Ending, ExportError, ExportOutcome, record_accepted, record_job_only, record_not_sent,
    record_refused,
};
use super::{MAX_PARK, WorkerSettings};
use crate::datev::{BookingProposal, DatevConnector, DatevError, Keys};
use crate::output::proposal::{ExportContext, booking_proposal, payload_of};
use crate::retry::{Classify, RetryClass, error_chain};

/// The circumstances of one export: the point by which its outcome must be recorded
/// (the invocation's deadline minus the runtime's margin; `None`: no deadline), and
/// whether this is the message's final receive.
#[derive(Debug, Clone, Copy)]
pub struct Attempt {
    pub deadline: Option<Instant>,
    pub final_receive: bool,
}

impl Attempt {
    fn time_left(&self) -> Option<Duration> {
        self.deadline
            .map(|d| d.saturating_duration_since(Instant::now()))
    }

    /// Whether `needed` still fits before the deadline.
    fn has(&self, needed: Duration) -> bool {
        self.time_left().is_none_or(|left| left >= needed)
    }
}

/// The other invoices of a corrected-invoice pair the document belongs to: those a
/// `replaces` match links it to (read with the document, [`ExportContext::partners`]),
/// and, for an invoice, those matching would pair it with by their numbers and supplier
/// (`matching::candidates::replacements`), so a pair whose match is not written yet is
/// guarded too. No query unless it is an invoice.
async fn booking_partners(
    pool: &PgPool,
    job: &crate::output::OutputJob,
    context: &ExportContext,
) -> Result<Vec<Uuid>, sqlx::Error> {
    use crate::document::DocumentType;
    use crate::extract::Extraction;
    let mut partners = context.partners.clone();
    let data = context
        .structured_data
        .as_ref()
        .and_then(|d| Extraction::from_stored(d).ok());
    if let Some(data) = data.filter(|d| d.document_type == Some(DocumentType::Invoice)) {
        let normalized = crate::matching::normalize::normalize(&data, DocumentType::Invoice);
        let found = crate::matching::candidates::replacements(
            pool,
            job.tenant_id,
            job.document_id,
            &data,
            normalized.counterparty.as_deref(),
            normalized.vat_id.as_deref(),
        )
        .await?;
        partners.extend(found.into_iter().map(|r| r.id));
    }
    partners.sort();
    partners.dedup();
    Ok(partners)
}

/// The `requested` audit of the claimed job, written only while the claim holds
/// (`None`: it does not). `FOR UPDATE` makes the guard hold against a take-over in
/// flight: a plain read would see the job as this statement's snapshot has it (still
/// ours) while another worker's claim is about to commit; locking the row waits for that
/// claim and checks the token again on the row it wrote.
async fn insert_audit(
    conn: &mut sqlx::PgConnection,
    claim: &Claimed,
    request_payload: &serde_json::Value,
    payload_hash: &str,
) -> Result<Option<Uuid>, sqlx::Error> {
    sqlx::query_scalar(
        r#"
        INSERT INTO ap_datev_export_audit
               (tenant_id, document_id, dispatch_job_id, status, request_payload, payload_hash)
        SELECT j.tenant_id, j.document_id, j.id, 'requested', $3, $4
          FROM document_output_job j
         WHERE j.id = $1 AND j.status = 'running' AND j.claim_token = $2
           FOR UPDATE OF j
        RETURNING id
        "#,
    )
    .bind(claim.job.id)
    .bind(claim.token)
    .bind(request_payload)
    .bind(payload_hash)
    .fetch_optional(conn)
    .await
}

/// Why the document file could not be read.
#[derive(Debug, thiserror::Error)]
#[error("could not read the document file s3://{bucket}/{key}")]
pub struct FileError {
    pub bucket: String,
    pub key: String,
    class: RetryClass,
    #[source]
    source: Box<dyn std::error::Error + Send + Sync>,
}

impl Classify for FileError {
    /// A missing object or denied access stays that way; throttling and outages pass.
    fn retry_class(&self) -> RetryClass {
        self.class
    }
}

/// Exports a claimed, eligible job: reads the document file from S3, writes a
/// `requested` audit linked to the job (with the payload and its hash), calls Maesn —
/// each attempt only while `maesn_timeout + record_reserve` is left; passing refusals
/// retried in process with `settings.retry` unless Maesn asks for a longer wait — and
/// records the outcome in one transaction (see the table of outcomes in `outcome.rs`).
///
/// Returns `Err` only when the database did not take the outcome; see [`ExportError`].
pub async fn export<C: DatevConnector>(
    pool: &PgPool,
    s3: &aws_sdk_s3::Client,
    connector: &C,
    settings: &WorkerSettings,
    claim: &Claimed,
    attempt: Attempt,
) -> Result<ExportOutcome, ExportError> {
    use crate::telemetry::metrics::{self, stages};
    let job = &claim.job;
    let db = |source| ExportError::Database {
        job_id: job.id,
        source,
    };
    let context_started = std::time::Instant::now();
    let context: Option<ExportContext> = sqlx::query_as(&format!(
        r#"
        SELECT d.tenant_id AS document_tenant_id, d.file_path, d.file_name, d.mime_type,
               d.structured_data, i.company_id, i.config,
               {BOOKING_PARTNERS} AS partners
          FROM document d
          JOIN tenant_datev_integration i ON i.tenant_id = d.tenant_id AND i.status = 'active'
         WHERE d.id = $1
        "#,
        BOOKING_PARTNERS = crate::output::BOOKING_PARTNERS
    ))
    .bind(job.document_id)
    .fetch_optional(pool)
    .await
    .map_err(db)?;
    metrics::stage_time(stages::CHECKS, context_started.elapsed());
    let Some(context) = context else {
        let error = crate::output::Ineligible::NoActiveIntegration.to_string();
        return record_job_only(pool, claim, error, false).await.map_err(db);
    };
    // The tenant tie: `companyId` is the document's tenant's, the account key the job's.
    // A job of another tenant would book one tenant's document into another's DATEV.
    // (The schema refuses such rows since migration 20261127110000; older ones end here.)
    if context.document_tenant_id != job.tenant_id {
        let error = format!(
            "refused: output job {} belongs to tenant {} but its document {} to tenant {}; \
             nothing was sent to DATEV (a job must be created by the document's own tenant)",
            job.id, job.tenant_id, job.document_id, context.document_tenant_id
        );
        tracing::error!(%error, "output job of another tenant than its document");
        return record_job_only(pool, claim, error, false).await.map_err(db);
    }

    let read = settings.retry.run(|_| {
        read_file(
            s3,
            &settings.documents_bucket,
            &context.file_path,
            settings.max_file_bytes,
        )
    });
    let bytes = match metrics::stage(stages::READ_FILE, read).await {
        Ok(bytes) => bytes,
        Err(e) => {
            tracing::error!(error.message = %e, error.cause_chain = ?e, "document file unreadable");
            let error = error_chain(&e);
            let passing = e.is_transient() && !attempt.final_receive;
            return record_job_only(pool, claim, error, passing)
                .await
                .map_err(db);
        }
    };

    let proposal = match booking_proposal(job, &context, bytes) {
        Ok(proposal) => proposal,
        Err(error) => {
            tracing::error!(%error, "no booking proposal from the document's data");
            return record_job_only(pool, claim, error, false).await.map_err(db);
        }
    };
    // Both keys before the audit: a secret read (a cache miss, bounded by the secret
    // store's timeout) cannot eat into the time of an attempt already recorded as
    // started, and a key that cannot be read is a refusal with no audit to leave.
    let keys = match connector.keys(&proposal.account).await {
        Ok(keys) => keys,
        Err(e) => {
            tracing::error!(error.message = %e, error.cause_chain = ?e, "Maesn keys unreadable; nothing was sent");
            let error = format!("DATEV export could not be initiated: {}", error_chain(&e));
            let passing = e.is_passing_refusal() && !attempt.final_receive;
            return record_job_only(pool, claim, error, passing)
                .await
                .map_err(db);
        }
    };

    let needed = settings.maesn_timeout + settings.record_reserve;
    if !attempt.has(needed) {
        let error = format!(
            "not enough time left in the invocation to call Maesn ({} s needed, {} s left); \
             nothing was sent",
            needed.as_secs(),
            attempt.time_left().unwrap_or_default().as_secs()
        );
        tracing::warn!(%error, "export postponed before calling Maesn");
        let mut conn = pool.acquire().await.map_err(db)?;
        return Ok(
            if defer(&mut conn, claim, &error).await.map_err(db)?.is_held() {
                ExportOutcome::OutOfTime { error }
            } else {
                ExportOutcome::ClaimLost
            },
        );
    }

    let (request_payload, payload_hash) = payload_of(&proposal);
    // Committed before the call, and only while the claim holds ([`insert_audit`]): if
    // this worker dies during the call, recovery finds an audit without a task id and
    // records the export as in doubt instead of exporting twice.
    //
    // For one invoice of a corrected-invoice pair, one transaction with the check that the
    // other is not being booked or booked (`partner_exported`), under the pair's locks: two
    // workers exporting both invoices at once cannot both pass it. Dropped at any await
    // (a deadline, a crash), the transaction rolls back and its locks go with it.
    let audit_started = std::time::Instant::now();
    let partners = booking_partners(pool, job, &context).await.map_err(db)?;
    let audit_id = if partners.is_empty() {
        let mut conn = pool.acquire().await.map_err(db)?;
        insert_audit(&mut conn, claim, &request_payload, &payload_hash)
            .await
            .map_err(db)?
    } else {
        let mut tx = pool.begin().await.map_err(db)?;
        crate::output::lock_booking_pair(&mut tx, job.document_id, &partners)
            .await
            .map_err(db)?;
        if let Some(why) = crate::output::partner_exported(&mut tx, job.document_id, &partners)
            .await
            .map_err(db)?
        {
            drop(tx);
            let error = format!("not eligible for DATEV export: {why}");
            tracing::warn!(%error, "the other invoice of a corrected-invoice pair is exported; nothing was sent");
            return record_job_only(pool, claim, error, false).await.map_err(db);
        }
        let audit_id = insert_audit(&mut tx, claim, &request_payload, &payload_hash)
            .await
            .map_err(db)?;
        tx.commit().await.map_err(db)?;
        audit_id
    };
    metrics::stage_time(stages::AUDIT, audit_started.elapsed());
    let Some(audit_id) = audit_id else {
        return Ok(ExportOutcome::ClaimLost);
    };
    // The insert may have waited on the job's row lock (a take-over in flight) or on a
    // slow database: the time left is read again before anything is sent. Too little
    // now, and the audit says "not sent" instead of staying `requested`, which recovery
    // would have to read as in doubt.
    if !attempt.has(needed) {
        let error = format!(
            "not enough time left in the invocation to call Maesn after the audit was \
             written ({} s needed, {} s left); nothing was sent",
            needed.as_secs(),
            attempt.time_left().unwrap_or_default().as_secs()
        );
        tracing::warn!(%error, %audit_id, "export postponed after its audit was written");
        return record_not_sent(pool, claim, audit_id, error)
            .await
            .map_err(db);
    }

    let result = metrics::stage(
        stages::MAESN,
        call_maesn(
            connector, settings, &proposal, keys, audit_id, attempt, needed,
        ),
    )
    .await;

    match result {
        Ok(task_id) => {
            metrics::stage(
                stages::COMPLETE,
                record_accepted(pool, settings, claim, audit_id, task_id, None),
            )
            .await
        }
        // A 2xx that could not be read, but whose task id arrived whole: Maesn has the
        // export; the sweeper follows the task, and the broken answer is kept.
        Err(DatevError::BrokenAnswer {
            reason,
            body,
            task_id: Some(task_id),
            ..
        }) => {
            tracing::warn!(%audit_id, %task_id, %reason, "Maesn's answer was broken; task id salvaged from it");
            let note = format!(
                "Maesn's answer could not be read ({reason}); task id {task_id} salvaged from \
                 it, the task is followed to its end"
            );
            metrics::stage(
                stages::COMPLETE,
                record_accepted(
                    pool,
                    settings,
                    claim,
                    audit_id,
                    task_id,
                    Some((note.as_str(), body.as_str())),
                ),
            )
            .await
        }
        Err(e) => {
            let ending = if e.may_have_been_accepted() {
                Ending::InDoubt
            } else if e.says_already_there() {
                Ending::Present
            } else if let Some(wait) = e
                .retry_after()
                .filter(|asked| e.is_passing_refusal() && *asked > settings.backoff.max)
            {
                // Maesn asks for more than the queue can wait: spending the remaining
                // receives inside that time would only fail the job. Even on the final
                // receive: parking does not need a receive.
                Ending::Parked {
                    wait: wait.min(MAX_PARK),
                }
            } else if (e.is_passing_refusal() || e.is_unauthorized()) && !attempt.final_receive {
                Ending::Passing {
                    retry_after: e.retry_after(),
                }
            } else {
                Ending::Lasting
            };
            record_refused(pool, claim, audit_id, &e, ending, attempt.final_receive)
                .await
                .map_err(db)
        }
    }
}

/// The Maesn call with its in-process retries. Each attempt starts only while `needed`
/// is left; the task id is logged the moment it arrives. A 401/403 is repeated once,
/// at once, when the keys in the secrets were rotated meanwhile — and only while a
/// whole attempt (`needed`) is left; otherwise the rotation is a passing refusal
/// ([`DatevError::KeysRotated`]) and the next delivery uses the new keys.
async fn call_maesn<C: DatevConnector>(
    connector: &C,
    settings: &WorkerSettings,
    proposal: &BookingProposal,
    mut keys: Keys,
    audit_id: Uuid,
    attempt: Attempt,
    needed: Duration,
) -> Result<String, DatevError> {
    let mut n = 1;
    let mut rotated = false;
    loop {
        tracing::info!(attempt = n, audit_id = %audit_id, "sending booking proposal to Maesn");
        let e = match connector.create_booking_proposal(proposal, &keys).await {
            Ok(task_id) => {
                tracing::info!(task_id = %task_id, audit_id = %audit_id, "Maesn accepted the booking proposal");
                return Ok(task_id);
            }
            Err(e) => e,
        };
        let in_doubt = e.may_have_been_accepted();
        tracing::warn!(
            attempt = n,
            audit_id = %audit_id,
            in_doubt,
            error.message = %e,
            error.cause_chain = ?e,
            "Maesn did not accept the booking proposal"
        );
        if e.refused_keys() && !rotated {
            rotated = true;
            let Some(fresh) = connector.rotated_keys(&proposal.account, &keys).await? else {
                return Err(e);
            };
            if !attempt.has(needed) {
                tracing::warn!(
                    audit_id = %audit_id,
                    "Maesn refused rotated keys; too little time left for a whole second request, backing off through the queue"
                );
                return Err(DatevError::KeysRotated {
                    status: match e {
                        DatevError::Status { status, .. } => status,
                        _ => 401,
                    },
                });
            }
            tracing::warn!(
                audit_id = %audit_id,
                "Maesn refused its keys; repeating the request once with the keys now in the secrets"
            );
            keys = fresh;
            continue;
        }
        // A second POST after one Maesn may have acted on could book twice.
        if in_doubt || !e.is_passing_refusal() || n >= settings.retry.attempts {
            return Err(e);
        }
        let wait = jitter(settings.retry.delay_after(n));
        if e.retry_after().is_some_and(|asked| asked > wait) {
            tracing::info!(
                retry_after_s = e.retry_after().unwrap_or_default().as_secs(),
                "Maesn asks for a longer wait than an in-process retry; backing off through the queue"
            );
            return Err(e);
        }
        if !attempt.has(wait + needed) {
            tracing::warn!("no time left for another Maesn attempt; backing off through the queue");
            return Err(e);
        }
        tokio::time::sleep(wait).await;
        n += 1;
    }
}

/// ±25 % so that many records refused together do not come back in lockstep.
fn jitter(delay: Duration) -> Duration {
    if delay.is_zero() {
        return delay;
    }
    delay.mul_f64(rand::rng().random_range(0.75..=1.25))
}

/// Reads the document file, checking its size (the object's `Content-Length`, known
/// before the body is read) against `max_bytes` first: a larger file is a lasting
/// refusal, and its bytes are never read.
async fn read_file(
    s3: &aws_sdk_s3::Client,
    bucket: &str,
    key: &str,
    max_bytes: u64,
) -> Result<Bytes, FileError> {
    let err = |class, source: Box<dyn std::error::Error + Send + Sync>| FileError {
        bucket: bucket.to_owned(),
        key: key.to_owned(),
        class,
        source,
    };
    let object = s3
        .get_object()
        .bucket(bucket)
        .key(key)
        .send()
        .await
        .map_err(|e| {
            use aws_sdk_s3::error::ProvideErrorMetadata;
            let class = match e.as_service_error() {
                Some(s) if s.is_no_such_key() => RetryClass::Permanent,
                Some(s) if matches!(s.code(), Some("AccessDenied" | "NoSuchBucket")) => {
                    RetryClass::Permanent
                }
                _ => RetryClass::Transient,
            };
            err(class, Box::new(e))
        })?;
    let too_large = |size: u64| {
        err(
            RetryClass::Permanent,
            format!(
                "the file is {size} bytes, more than the {max_bytes} bytes an export may carry \
                 (OUTPUT_MAX_FILE_BYTES); nothing was sent to DATEV"
            )
            .into(),
        )
    };
    let declared = object.content_length().and_then(|n| u64::try_from(n).ok());
    if let Some(size) = declared.filter(|size| *size > max_bytes) {
        return Err(too_large(size));
    }
    let bytes = object
        .body
        .collect()
        .await
        .map_err(|e| err(RetryClass::Transient, Box::new(e)))?
        .into_bytes();
    // No length declared: the limit still holds for what was read.
    if bytes.len() as u64 > max_bytes {
        return Err(too_large(bytes.len() as u64));
    }
    Ok(bytes)
}
