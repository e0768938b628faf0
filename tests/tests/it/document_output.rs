//! The document-output function against Postgres, the local SQS/S3/Secrets Manager and
//! wiremock servers answering like Maesn and Slack: claim and claim token, duplicate
//! deliveries, stale recovery, in-doubt handling, refusals and backoff, time budget,
//! final receive, heartbeat, eligibility, the export on the wire, NOTIFY, admin notices,
//! per-tenant account keys, and the async-task poll.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use docflow::Outcome;
use docflow::ids::DocumentId;
use docflow::output::worker;
use docflow::sqs::Heartbeat;
use docflow_tests::gate::Gate;
use docflow_tests::logs::Logs;
use docflow_tests::output::{
    ACCOUNT_KEY, API_KEY, COMPANY_ID, FILE_BYTES, FILE_NAME, Options, OutputEnv, hanging_listener,
    sample_event, setup, setup_with,
};
use docflow_tests::visible_bodies;
use serde_json::json;
use sqlx::PgPool;
use sqlx::postgres::PgListener;
use uuid::Uuid;
use wiremock::matchers::{header, method, path, query_param};
use wiremock::{Match, Mock, ResponseTemplate};

const VALID: &str = include_str!("../../../events/document-output/valid.json");
const DUPLICATE: &str = include_str!("../../../events/document-output/duplicate-dispatched.json");
const POISON: &str = include_str!("../../../events/document-output/poison.json");
const STALE: &str = include_str!("../../../events/document-output/stale-running.json");
const CREATE: &str = "/accounting/bookingProposals/async";

/// Maesn accepting booking proposals (only with the right keys) and answering with a task id.
fn accepted(task_id: &str) -> Mock {
    accepted_after(task_id, Duration::ZERO)
}

/// [`accepted`], answering after `delay`.
fn accepted_after(task_id: &str, delay: Duration) -> Mock {
    accepting().respond_with(accepted_answer(task_id).set_delay(delay))
}

/// [`accepted`], answering only once the test opens the returned gate.
fn accepted_through_gate(task_id: &str) -> (Mock, Gate) {
    let gate = Gate::answering(accepted_answer(task_id));
    (accepting().respond_with(gate.clone()), gate)
}

/// A create request with the right keys.
fn accepting() -> wiremock::MockBuilder {
    Mock::given(method("POST"))
        .and(path(CREATE))
        .and(header("X-API-KEY", API_KEY))
        .and(header("X-ACCOUNT-KEY", ACCOUNT_KEY))
        .and(query_param("companyId", COMPANY_ID))
}

fn accepted_answer(task_id: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "meta": { "warnings": [] },
        "data": { "taskId": task_id }
    }))
}

fn maesn_error(status: u16, message: &str) -> Mock {
    Mock::given(method("POST")).and(path(CREATE)).respond_with(
        ResponseTemplate::new(status).set_body_json(json!({
            "statusCode": status,
            "message": message
        })),
    )
}

/// An approved document with a pending job (as the enqueue side leaves it) and its
/// message on the queue.
async fn enqueued(env: &OutputEnv) -> Uuid {
    env.approve(env.tenant.document_id).await;
    let export = docflow::output::request_manual_export(
        &env.pool,
        &env.dispatcher,
        DocumentId(env.tenant.document_id),
        env.tenant.approver_id,
    )
    .await
    .unwrap();
    assert!(matches!(
        export.dispatch,
        docflow::output::Dispatch::Sent { .. }
    ));
    export.job.id.0
}

async fn make_stale(env: &OutputEnv, job_id: Uuid) {
    sqlx::query(
        "UPDATE document_output_job SET updated_at = now() - interval '601 seconds' WHERE id = $1",
    )
    .bind(job_id)
    .execute(&env.pool)
    .await
    .unwrap();
}

async fn insert_audit(env: &OutputEnv, job_id: Uuid, status: &str, task_id: Option<&str>) -> Uuid {
    sqlx::query_scalar(
        r#"INSERT INTO ap_datev_export_audit (tenant_id, document_id, dispatch_job_id, status, task_id, error)
           VALUES ($1, $2, $3, $4, $5, CASE WHEN $4 = 'failed' THEN 'DATEV rejected the booking' END)
           RETURNING id"#,
    )
    .bind(env.tenant.tenant_id)
    .bind(env.tenant.document_id)
    .bind(job_id)
    .bind(status)
    .bind(task_id)
    .fetch_one(&env.pool)
    .await
    .unwrap()
}

/// Matches requests whose (binary) body contains `needle`: the multipart bodies carry
/// the file's non-UTF-8 bytes, which wiremock's string matchers refuse.
struct BodyHas(Vec<u8>);

impl wiremock::Match for BodyHas {
    fn matches(&self, request: &wiremock::Request) -> bool {
        request
            .body
            .windows(self.0.len())
            .any(|w| w == self.0.as_slice())
    }
}

/// An approved document (with its file) and its job, enqueued by a manual export.
async fn enqueued_document(env: &OutputEnv) -> (Uuid, Uuid) {
    let doc = env.another_approved_document().await;
    let export = docflow::output::request_manual_export(
        &env.pool,
        &env.dispatcher,
        DocumentId(doc),
        env.tenant.approver_id,
    )
    .await
    .unwrap();
    (doc, export.job.id.0)
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_pending_job_is_exported_through_maesn_and_dispatched_with_the_audit_linked(
    pool: PgPool,
) {
    let env = setup(pool).await;
    accepted("task-0001").expect(1).mount(&env.maesn).await;
    let job_id = enqueued(&env).await;

    let (_, response, completion) = env.deliver(1).await;

    assert!(response.batch_item_failures.is_empty());
    assert_eq!(completion.deleted.len(), 1, "message deleted");
    let job = env.job(job_id).await;
    assert_eq!(job.status, "dispatched");
    assert!(job.started_at.is_some() && job.completed_at.is_some());
    assert_eq!(job.last_error, None);
    let audits = env.audits(env.tenant.document_id).await;
    assert_eq!(audits.len(), 1);
    assert_eq!(audits[0].dispatch_job_id, Some(job_id));
    assert_eq!(audits[0].task_id.as_deref(), Some("task-0001"));
    assert_eq!(audits[0].status, "submitted");
    let hash = audits[0]
        .payload_hash
        .as_deref()
        .expect("payload_hash written");
    assert!(
        hash.len() == 64 && hash.chars().all(|c| c.is_ascii_hexdigit()),
        "{hash}"
    );
    assert!(env.notices().await.is_empty(), "no admin notice on success");
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn an_export_s_time_is_broken_down_by_stage_in_its_metrics(pool: PgPool) {
    use docflow::telemetry::metrics::{dimension, stages};
    let env = setup(pool).await;
    accepted("task-stages").mount(&env.maesn).await;
    enqueued(&env).await;

    env.deliver(1).await;

    let metrics = docflow_tests::emf::Metrics::of(&env.metrics.lines());
    for stage in [
        stages::CLAIM,
        stages::CHECKS,
        stages::READ_FILE,
        stages::AUDIT,
        stages::MAESN,
        stages::COMPLETE,
    ] {
        let of = [
            (dimension::FUNCTION, document_output::FUNCTION),
            (dimension::STAGE, stage),
        ];
        // CHECKS is timed twice: the audit and eligibility checks, and the export
        // context read inside the export.
        let expected = if stage == stages::CHECKS { 2 } else { 1 };
        assert_eq!(
            metrics.values(stages::DURATION.name, &of).len(),
            expected,
            "{stage}"
        );
    }
    // On Terraform's 720 s queue what is left of the receive's visibility covers the
    // extension before work: no call, so no stage.
    let extend = [
        (dimension::FUNCTION, document_output::FUNCTION),
        (dimension::STAGE, stages::EXTEND_VISIBILITY),
    ];
    assert!(metrics.values(stages::DURATION.name, &extend).is_empty());
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn on_a_queue_too_short_for_the_work_the_batch_is_extended_before_it_is_claimed(
    pool: PgPool,
) {
    use docflow::telemetry::metrics::{dimension, stages};
    // 60 s − 10 s invoke slack < the 300 s heartbeat extension: seed 002's extension
    // before work is needed, and made by the runtime for the batch, before any claim.
    let env = setup_with(
        pool,
        Options {
            queue_visibility: Duration::from_secs(60),
            ..Options::default()
        },
    )
    .await;
    accepted("task-extended").mount(&env.maesn).await;
    let job_id = enqueued(&env).await;

    let (outcome, _) = env.deliver_one(None).await;

    assert_eq!(outcome, Outcome::Done);
    assert_eq!(env.job(job_id).await.status, "dispatched");
    let metrics = docflow_tests::emf::Metrics::of(&env.metrics.lines());
    let extend = [
        (dimension::FUNCTION, document_output::FUNCTION),
        (dimension::STAGE, stages::EXTEND_VISIBILITY),
    ];
    assert_eq!(metrics.values(stages::DURATION.name, &extend).len(), 1);
    assert_eq!(
        metrics.sum(
            docflow::telemetry::metrics::batch::VISIBILITY_CHANGES_FAILED.name,
            &[(dimension::FUNCTION, document_output::FUNCTION)]
        ),
        0.0
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn the_maesn_request_on_the_wire_has_both_headers_the_multipart_parts_and_the_file_bytes(
    pool: PgPool,
) {
    let env = setup(pool).await;
    accepted("task-wire").mount(&env.maesn).await;
    enqueued(&env).await;

    env.deliver(1).await;

    let requests = env.maesn_requests("POST", CREATE).await;
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.headers.get("x-api-key").unwrap(), API_KEY);
    assert_eq!(request.headers.get("x-account-key").unwrap(), ACCOUNT_KEY);
    assert!(
        request
            .url
            .query_pairs()
            .any(|(k, v)| k == "companyId" && v == COMPANY_ID)
    );
    let content_type = request
        .headers
        .get("content-type")
        .unwrap()
        .to_str()
        .unwrap();
    assert!(
        content_type.starts_with("multipart/form-data; boundary="),
        "{content_type}"
    );
    let body = &request.body;
    let text = String::from_utf8_lossy(body);
    for part in [
        r#"name="bookingProposal""#,
        r#"name="bookingType""#,
        r#"name="folderManagement""#,
        &format!(r#"name="files"; filename="{FILE_NAME}""#),
    ] {
        assert!(text.contains(part), "missing part {part}");
    }
    assert!(text.contains("BILL"));
    // The proposal from the extracted data (docflow_tests::output::invoice_extraction).
    let proposal = docflow_tests::output::booking_proposal_part(request);
    assert_eq!(proposal["id"], json!(env.tenant.document_id));
    assert_eq!(proposal["number"], "RE-2026-0042");
    assert_eq!(proposal["totalGrossAmount"], json!(119.0));
    assert_eq!(proposal["currency"], "EUR");
    assert_eq!(proposal["bookingProposalDate"], "2026-01-15T00:00:00Z");
    assert_eq!(proposal["contact"], json!({ "name": "Lieferant GmbH" }));
    assert!(
        body.windows(FILE_BYTES.len()).any(|w| w == FILE_BYTES),
        "the S3 file's bytes are in the request"
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn the_claim_takes_pending_and_stale_running_jobs_only(pool: PgPool) {
    let env = setup(pool).await;
    let other = env.another_approved_document().await;
    let third = env.another_approved_document().await;
    let pending = env.insert_job(env.tenant.document_id, "pending").await;
    let dispatched = env.insert_job(other, "dispatched").await;
    let failed = env.insert_job(third, "failed").await;
    let stale = Duration::from_secs(600);

    let first = worker::claim(&env.pool, pending.into(), stale)
        .await
        .unwrap();
    let while_fresh = worker::claim(&env.pool, pending.into(), stale)
        .await
        .unwrap();
    make_stale(&env, pending).await;
    let after_stale = worker::claim(&env.pool, pending.into(), stale)
        .await
        .unwrap();

    let first = first.expect("pending is claimable");
    assert_eq!(first.job.status, docflow::output::JobStatus::Running);
    assert!(first.job.started_at.is_some());
    assert!(
        while_fresh.is_none(),
        "a fresh running job is not claimable"
    );
    let again = after_stale.expect("a stale running job is claimable");
    assert_eq!(
        again.job.started_at, first.job.started_at,
        "started_at kept (COALESCE)"
    );
    assert!(again.job.updated_at > first.job.updated_at);
    assert_ne!(again.token, first.token, "every claim has its own token");
    for finished in [dispatched, failed] {
        assert!(
            worker::claim(&env.pool, finished.into(), stale)
                .await
                .unwrap()
                .is_none()
        );
    }
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn duplicate_and_poison_deliveries_follow_the_seed_rules(pool: PgPool) {
    let env = setup(pool).await;
    accepted("task-dup").expect(0).mount(&env.maesn).await;
    let doc2 = env.another_approved_document().await;
    let doc3 = env.another_approved_document().await;
    let dispatched = env.insert_job(env.tenant.document_id, "dispatched").await;
    let failed = env.insert_job(doc2, "failed").await;
    let running = env.insert_job(doc3, "pending").await;
    worker::claim(&env.pool, running.into(), Duration::from_secs(600))
        .await
        .unwrap()
        .unwrap();
    let arn = Some(env.queue.arn.as_str());

    let poison = env.invoke(sample_event(POISON, "not-a-job-id", arn)).await;
    let unknown = env
        .invoke(sample_event(VALID, &Uuid::new_v4().to_string(), arn))
        .await;
    let of_dispatched = env
        .invoke(sample_event(DUPLICATE, &dispatched.to_string(), arn))
        .await;
    let of_failed = env
        .invoke(sample_event(DUPLICATE, &failed.to_string(), arn))
        .await;
    let of_running = env
        .invoke(sample_event(STALE, &running.to_string(), arn))
        .await;

    for (name, response) in [
        ("poison", &poison),
        ("unknown", &unknown),
        ("dispatched", &of_dispatched),
        ("failed", &of_failed),
    ] {
        assert!(
            response.batch_item_failures.is_empty(),
            "{name}: message deleted"
        );
    }
    assert_eq!(
        of_running.batch_item_failures.len(),
        1,
        "fresh running: released, not deleted"
    );
    assert_eq!(env.job(dispatched).await.status, "dispatched");
    assert_eq!(env.job(failed).await.status, "failed");
    assert_eq!(env.job(running).await.status, "running");
    assert!(
        env.audits(doc3).await.is_empty(),
        "no second export started"
    );
}

/// A label the application added to one of the job's own enum types after this version of
/// docflow was built.
async fn add_label(env: &OutputEnv, type_name: &str, label: &str) {
    sqlx::query(&format!(
        "ALTER TYPE {type_name} ADD VALUE IF NOT EXISTS '{label}'"
    ))
    .execute(&env.pool)
    .await
    .unwrap();
}

/// A pending job of a new approved document whose `column` is then set to `label`.
async fn job_with(env: &OutputEnv, column: &str, label: &str) -> (Uuid, Uuid) {
    let doc = env.another_approved_document().await;
    let job = env.insert_job(doc, "pending").await;
    sqlx::query(&format!(
        "UPDATE document_output_job SET {column} = '{label}' WHERE id = $1"
    ))
    .bind(job)
    .execute(&env.pool)
    .await
    .unwrap();
    (doc, job)
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_job_holding_an_enum_value_docflow_does_not_know_fails_at_once_visibly_and_once(
    pool: PgPool,
) {
    let env = setup(pool).await;
    accepted("task-never").expect(0).mount(&env.maesn).await;
    let arn = Some(env.queue.arn.as_str());
    let cases = [
        (
            "document_output_domain",
            "document_domain",
            "ap_credit_note",
        ),
        ("document_output_trigger", "trigger", "scheduled"),
        ("document_output_status", "status", "on_hold"),
    ];
    let mut told = 0;
    for (type_name, column, label) in cases {
        add_label(&env, type_name, label).await;
        let (doc, job) = job_with(&env, column, label).await;

        let response = env.invoke(sample_event(VALID, &job.to_string(), arn)).await;

        assert!(
            response.batch_item_failures.is_empty(),
            "{column}: decided at once, the value will not become known by retrying"
        );
        let row = env.job(job).await;
        assert_eq!(row.status, "failed", "{column}");
        assert!(row.completed_at.is_some(), "{column}");
        let error = row.last_error.unwrap();
        assert!(
            error.contains(&format!("document_output_job.{column}")) && error.contains(label),
            "{column}: the error names the column and the value: {error}"
        );
        assert!(
            env.audits(doc).await.is_empty(),
            "{column}: nothing exported"
        );
        told += 1;
        let notices = env.notices().await;
        assert_eq!(notices.len(), told, "{column}: admins told once");
        let text = notices[told - 1].to_string();
        assert!(text.contains(label) && text.contains(column), "{text}");

        // A duplicate delivery of the message neither fails it again nor tells anyone.
        let again = env
            .invoke(sample_event(DUPLICATE, &job.to_string(), arn))
            .await;
        assert!(again.batch_item_failures.is_empty(), "{column}");
        assert_eq!(env.job(job).await.last_error.as_deref(), Some(&*error));
        assert_eq!(env.notices().await.len(), told, "{column}");
    }

    // A finished job is not this delivery's to fail, whatever its domain says.
    let (_, finished) = job_with(&env, "document_domain", "ap_credit_note").await;
    sqlx::query("UPDATE document_output_job SET status = 'dispatched' WHERE id = $1")
        .bind(finished)
        .execute(&env.pool)
        .await
        .unwrap();
    let duplicate = env
        .invoke(sample_event(DUPLICATE, &finished.to_string(), arn))
        .await;
    assert!(duplicate.batch_item_failures.is_empty());
    assert_eq!(env.job(finished).await.status, "dispatched");
    assert_eq!(env.notices().await.len(), told);
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn two_concurrent_deliveries_of_the_same_job_produce_exactly_one_maesn_request(pool: PgPool) {
    let env = setup(pool).await;
    accepted_after("task-once", Duration::from_millis(800))
        .mount(&env.maesn)
        .await;
    let job_id = enqueued(&env).await;
    env.send(&job_id.to_string()).await; // the duplicate delivery
    let event = docflow_tests::poll_n(&env.esm, 2).await;
    let (mut a, mut b) = (event.clone(), event.clone());
    a.records.truncate(1);
    b.records.remove(0);

    let (ra, rb) = tokio::join!(env.invoke(a.clone()), env.invoke(b.clone()));

    assert_eq!(
        env.maesn_requests("POST", CREATE).await.len(),
        1,
        "exactly one export"
    );
    let released = ra.batch_item_failures.len() + rb.batch_item_failures.len();
    assert_eq!(released, 1, "the loser is released, the winner deleted");
    assert_eq!(env.job(job_id).await.status, "dispatched");
    assert_eq!(env.audits(env.tenant.document_id).await.len(), 1);
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_worker_killed_mid_export_is_recovered_only_after_the_stale_threshold(pool: PgPool) {
    // The queue's own visibility (60 s) is far longer than the stale threshold (3 s): the
    // message must come back when the job turns stale, not when the queue says.
    let env = setup_with(
        pool,
        Options {
            queue_visibility: Duration::from_secs(60),
            stale_running: Duration::from_secs(3),
            ..Options::default()
        },
    )
    .await;
    accepted("task-recovered").mount(&env.maesn).await;
    let job_id = enqueued(&env).await;
    // A worker claimed the job and died before reaching Maesn.
    worker::claim(&env.pool, job_id.into(), Duration::from_secs(3))
        .await
        .unwrap()
        .unwrap();

    let (_, while_fresh, _) = env.deliver(1).await;
    let requests_while_fresh = env.maesn_requests("POST", CREATE).await.len();
    let hidden_while_fresh = visible_bodies(&env.sqs, &env.queue.url).await.is_empty();
    let started = std::time::Instant::now();
    let (_, after_stale, completion) = env.deliver(1).await;

    assert_eq!(while_fresh.batch_item_failures.len(), 1, "kept while fresh");
    assert_eq!(
        requests_while_fresh, 0,
        "no export while the job may be alive"
    );
    assert!(hidden_while_fresh, "not redelivered at once");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "back once the job is stale, well before the queue's 60 s"
    );
    assert!(after_stale.batch_item_failures.is_empty());
    assert_eq!(completion.deleted.len(), 1);
    assert_eq!(
        env.maesn_requests("POST", CREATE).await.len(),
        1,
        "exported exactly once"
    );
    assert_eq!(env.job(job_id).await.status, "dispatched");
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_stale_job_whose_audit_reached_maesn_is_completed_from_it_without_a_new_export(
    pool: PgPool,
) {
    let env = setup(pool).await;
    accepted("task-new").expect(0).mount(&env.maesn).await;
    let with_task = enqueued(&env).await;
    worker::claim(&env.pool, with_task.into(), Duration::from_secs(600))
        .await
        .unwrap()
        .unwrap();
    insert_audit(&env, with_task, "submitted", Some("task-old")).await;
    make_stale(&env, with_task).await;
    let doc2 = env.another_approved_document().await;
    let with_failure = env.insert_job(doc2, "running").await;
    sqlx::query(
        r#"INSERT INTO ap_datev_export_audit (tenant_id, document_id, dispatch_job_id, status, error, retryable)
           VALUES ($1, $2, $3, 'failed', 'DATEV rejected the booking', false)"#,
    )
    .bind(env.tenant.tenant_id)
    .bind(doc2)
    .bind(with_failure)
    .execute(&env.pool)
    .await
    .unwrap();
    make_stale(&env, with_failure).await;
    env.send(&with_failure.to_string()).await;

    let (_, response, _) = env.deliver(2).await;

    assert!(response.batch_item_failures.is_empty());
    assert_eq!(env.job(with_task).await.status, "dispatched");
    let failed = env.job(with_failure).await;
    assert_eq!(failed.status, "failed");
    assert!(
        failed
            .last_error
            .unwrap()
            .contains("DATEV rejected the booking")
    );
    assert_eq!(
        env.audits(env.tenant.document_id).await.len(),
        1,
        "no new audit"
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_stale_job_whose_worker_died_during_the_maesn_call_fails_in_doubt_and_notifies_the_admins(
    pool: PgPool,
) {
    let env = setup(pool).await;
    accepted("task-new").expect(0).mount(&env.maesn).await;
    let job_id = enqueued(&env).await;
    worker::claim(&env.pool, job_id.into(), Duration::from_secs(600))
        .await
        .unwrap()
        .unwrap();
    // The dead worker's audit: committed before the call, no answer recorded.
    let audit_id = insert_audit(&env, job_id, "requested", None).await;
    make_stale(&env, job_id).await;
    let mut listener = PgListener::connect_with(&env.pool).await.unwrap();
    listener.listen("output_dispatch").await.unwrap();

    let (outcome, completion) = env.deliver_one(None).await;

    assert_eq!(
        outcome,
        Outcome::Done,
        "recorded; nothing left to redeliver"
    );
    assert_eq!(completion.deleted.len(), 1);
    let job = env.job(job_id).await;
    assert_eq!(job.status, "failed", "not left running for ever");
    let error = job.last_error.unwrap();
    assert!(
        error.contains("in doubt") && error.contains("check DATEV"),
        "{error}"
    );
    let audits = env.audits(env.tenant.document_id).await;
    assert_eq!(audits.len(), 1, "no new export");
    assert_eq!(audits[0].id, audit_id);
    assert_eq!(audits[0].status, "failed");
    assert!(!audits[0].retryable, "blocks re-exports until checked");
    let notices = env.notices().await;
    assert_eq!(notices.len(), 1, "{notices:?}");
    let text = notices[0]["text"].as_str().unwrap();
    assert!(
        text.contains("in doubt") && text.contains(&env.tenant.document_id.to_string()),
        "{text}"
    );
    let changed = tokio::time::timeout(Duration::from_secs(5), listener.recv())
        .await
        .expect("the status change is notified to the UI")
        .unwrap();
    let payload: serde_json::Value = serde_json::from_str(changed.payload()).unwrap();
    assert_eq!(payload["document-output-job/status"], "failed");
    let again = docflow::output::request_manual_export(
        &env.pool,
        &env.dispatcher,
        DocumentId(env.tenant.document_id),
        env.tenant.approver_id,
    )
    .await;
    assert!(
        matches!(again, Err(docflow::output::EnqueueError::Ineligible(_))),
        "in doubt blocks a re-export, it is no longer 'already in flight': {again:?}"
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn an_ineligible_job_fails_with_last_error_and_nothing_is_exported(pool: PgPool) {
    let env = setup(pool).await;
    accepted("task-never").expect(0).mount(&env.maesn).await;
    let job_id = enqueued(&env).await;
    // Between enqueue and delivery the tenant's DATEV connection broke.
    sqlx::query("UPDATE tenant_datev_integration SET status = 'error'")
        .execute(&env.pool)
        .await
        .unwrap();

    let (_, response, _) = env.deliver(1).await;

    assert!(response.batch_item_failures.is_empty(), "recorded: Done");
    let job = env.job(job_id).await;
    assert_eq!(job.status, "failed");
    let error = job.last_error.unwrap();
    assert!(
        error.contains("not eligible") && error.contains("no active DATEV integration"),
        "{error}"
    );
    assert!(
        env.audits(env.tenant.document_id).await.is_empty(),
        "failed before any DATEV audit"
    );
    assert_eq!(env.notices().await.len(), 1, "admins told once");
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn an_already_exported_document_is_not_exported_again(pool: PgPool) {
    let env = setup(pool).await;
    accepted("task-never").expect(0).mount(&env.maesn).await;
    env.approve(env.tenant.document_id).await;
    let job_id = env.insert_job(env.tenant.document_id, "pending").await;
    sqlx::query(
        r#"INSERT INTO ap_datev_export_audit (tenant_id, document_id, status, task_id)
           VALUES ($1, $2, 'succeeded', 'task-earlier')"#,
    )
    .bind(env.tenant.tenant_id)
    .bind(env.tenant.document_id)
    .execute(&env.pool)
    .await
    .unwrap();
    env.send(&job_id.to_string()).await;

    env.deliver(1).await;

    let job = env.job(job_id).await;
    assert_eq!(job.status, "failed");
    assert!(
        job.last_error
            .unwrap()
            .contains("already has a DATEV export")
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_503_from_maesn_is_retried_in_process_and_then_dispatched(pool: PgPool) {
    let env = setup(pool).await;
    maesn_error(503, "Service Unavailable")
        .up_to_n_times(2)
        .with_priority(1)
        .mount(&env.maesn)
        .await;
    accepted("task-after-503").mount(&env.maesn).await;
    let job_id = enqueued(&env).await;

    let (_, response, _) = env.deliver(1).await;

    assert!(response.batch_item_failures.is_empty());
    assert_eq!(env.maesn_requests("POST", CREATE).await.len(), 3);
    assert_eq!(env.job(job_id).await.status, "dispatched");
    assert_eq!(
        env.audits(env.tenant.document_id).await[0]
            .task_id
            .as_deref(),
        Some("task-after-503")
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_503_that_persists_puts_the_job_back_to_pending_and_backs_off_through_the_queue(
    pool: PgPool,
) {
    // The queue would hide the message for 60 s (and the claim extends that to 300 s);
    // the backoff of the first receive is base 1 s · 2^0: only the worker's own
    // visibility change brings the message back within seconds.
    let env = setup(pool).await;
    maesn_error(503, "Service Unavailable")
        .up_to_n_times(3)
        .with_priority(1)
        .mount(&env.maesn)
        .await;
    accepted("task-after-backoff").mount(&env.maesn).await;
    let job_id = enqueued(&env).await;

    let (outcome, _) = env.deliver_one(None).await;

    assert_eq!(
        outcome,
        Outcome::Retry {
            after: Duration::from_secs(1)
        }
    );
    assert_eq!(
        env.maesn_requests("POST", CREATE).await.len(),
        3,
        "retried in process first"
    );
    let job = env.job(job_id).await;
    assert_eq!(
        job.status, "pending",
        "a refusal booked nothing: claimable again"
    );
    assert!(job.last_error.unwrap().contains("HTTP 503"));
    let audits = env.audits(env.tenant.document_id).await;
    assert_eq!(audits[0].status, "failed");
    assert!(audits[0].retryable, "a refusal does not block a re-export");
    assert!(
        env.notices().await.is_empty(),
        "not final: nobody to wake yet"
    );

    // Back within poll_n's ~20 s of long polls: only the 1 s backoff makes that so.
    let (outcome, completion) = env.deliver_one(None).await;
    assert_eq!(outcome, Outcome::Done);
    assert_eq!(completion.deleted.len(), 1);
    assert_eq!(env.job(job_id).await.status, "dispatched");
    let audits = env.audits(env.tenant.document_id).await;
    assert_eq!(audits.len(), 2, "one audit per attempt");
    assert_eq!(audits[1].task_id.as_deref(), Some("task-after-backoff"));
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_refusal_on_the_final_receive_fails_the_job_and_notifies_the_admins(pool: PgPool) {
    let env = setup(pool).await;
    maesn_error(503, "Service Unavailable")
        .mount(&env.maesn)
        .await;
    let job_id = enqueued(&env).await;
    // The sample's ApproximateReceiveCount is 3, the final receive with MAX_RECEIVE_COUNT 3.
    let event = sample_event(STALE, &job_id.to_string(), Some(&env.queue.arn));

    let (_, outcomes) = env.run(event, None).await;

    assert_eq!(
        outcomes[0].1,
        Outcome::Done,
        "recorded: nothing for the DLQ"
    );
    let job = env.job(job_id).await;
    assert_eq!(job.status, "failed");
    let error = job.last_error.unwrap();
    assert!(
        error.contains("gave up") && error.contains("HTTP 503"),
        "{error}"
    );
    assert!(
        env.audits(env.tenant.document_id).await[0].retryable,
        "nothing was booked: a later export may run"
    );
    assert_eq!(env.notices().await.len(), 1);
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn retry_after_from_maesn_sets_the_backoff_instead_of_an_in_process_retry(pool: PgPool) {
    let env = setup(pool).await;
    Mock::given(method("POST"))
        .and(path(CREATE))
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("Retry-After", "120")
                .set_body_json(json!({ "statusCode": 429, "message": "Too Many Requests" })),
        )
        .mount(&env.maesn)
        .await;
    let job_id = enqueued(&env).await;

    let (outcome, _) = env.deliver_one(None).await;

    assert_eq!(
        outcome,
        Outcome::Retry {
            after: Duration::from_secs(120)
        },
        "max(Retry-After, 1 s · 2^0)"
    );
    assert_eq!(
        env.maesn_requests("POST", CREATE).await.len(),
        1,
        "no in-process retry when Maesn asks for a longer wait"
    );
    assert_eq!(env.job(job_id).await.status, "pending");
}

/// A `Retry-After` longer than the longest backoff parks the job even on the final
/// receive (parking spends no receive), for at most a day however long Maesn asks for.
/// Before, the final receive failed the job and woke a person for a plain rate limit.
#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_retry_after_of_days_parks_the_job_for_a_day_even_on_the_final_receive(pool: PgPool) {
    let env = setup(pool).await;
    Mock::given(method("POST"))
        .and(path(CREATE))
        .respond_with(
            ResponseTemplate::new(503)
                .insert_header("Retry-After", "259200")
                .set_body_json(json!({
                    "error": { "code": "SERVICE_UNAVAILABLE", "message": "maintenance" }
                })),
        )
        .mount(&env.maesn)
        .await;
    let job_id = enqueued(&env).await;
    // The sample's ApproximateReceiveCount is 3, the final receive with MAX_RECEIVE_COUNT 3.
    let event = sample_event(STALE, &job_id.to_string(), Some(&env.queue.arn));

    let (_, outcomes) = env.run(event, None).await;

    assert_eq!(outcomes[0].1, Outcome::Done);
    let job = env.job(job_id).await;
    assert_eq!(job.status, "pending", "{:?}", job.last_error);
    assert!(
        job.last_error
            .as_deref()
            .unwrap()
            .contains("asked to wait 259200 s"),
        "{:?}",
        job.last_error
    );
    let due: f64 = sqlx::query_scalar(
        "SELECT extract(epoch FROM not_before - now())::float8 FROM document_output_job WHERE id = $1",
    )
    .bind(job_id)
    .fetch_one(&env.pool)
    .await
    .unwrap();
    assert!((86_300.0..=86_400.0).contains(&due), "a day at most: {due}");
    assert!(env.notices().await.is_empty(), "a rate limit wakes nobody");
    assert_eq!(env.maesn_requests("POST", CREATE).await.len(), 1);
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_500_that_maesn_may_have_acted_on_is_not_retried_and_blocks_a_re_export(pool: PgPool) {
    let env = setup(pool).await;
    maesn_error(500, "Internal Server Error")
        .mount(&env.maesn)
        .await;
    let job_id = enqueued(&env).await;

    let (_, response, _) = env.deliver(1).await;

    assert!(
        response.batch_item_failures.is_empty(),
        "recorded as failed: Done"
    );
    assert_eq!(
        env.maesn_requests("POST", CREATE).await.len(),
        1,
        "a second POST could book twice"
    );
    let job = env.job(job_id).await;
    assert_eq!(job.status, "failed");
    assert!(job.last_error.unwrap().contains("in doubt"));
    let retryable: bool = sqlx::query_scalar(
        "SELECT retryable FROM ap_datev_export_audit WHERE dispatch_job_id = $1",
    )
    .bind(job_id)
    .fetch_one(&env.pool)
    .await
    .unwrap();
    assert!(!retryable);
    let again = docflow::output::request_manual_export(
        &env.pool,
        &env.dispatcher,
        DocumentId(env.tenant.document_id),
        env.tenant.approver_id,
    )
    .await;
    assert!(
        matches!(again, Err(docflow::output::EnqueueError::Ineligible(_))),
        "no new export until someone checked DATEV: {again:?}"
    );
    let notices = env.notices().await;
    assert_eq!(notices.len(), 1);
    assert!(notices[0]["text"].as_str().unwrap().contains("in doubt"));
}

/// A 401 whose keys, read again past the cache, are unchanged: the rotation may not have
/// reached the secrets yet. Nothing was booked, so it passes (the job back to `pending`,
/// no notice) until the final receive, which fails the job and tells the admins.
#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_401_with_unchanged_keys_is_retried_through_the_queue_until_the_final_receive(
    pool: PgPool,
) {
    let env = setup(pool).await;
    maesn_error(401, "Unauthorized").mount(&env.maesn).await;
    let job_id = enqueued(&env).await;

    let (_, response, completion) = env.deliver(1).await;

    assert_eq!(
        response.batch_item_failures.len(),
        1,
        "backed off through the queue"
    );
    assert!(completion.deleted.is_empty());
    assert_eq!(
        env.maesn_requests("POST", CREATE).await.len(),
        1,
        "not retried in process with the same keys"
    );
    let job = env.job(job_id).await;
    assert_eq!(job.status, "pending");
    let error = job.last_error.unwrap();
    assert!(
        error.contains("HTTP 401") && error.contains("Unauthorized"),
        "{error}"
    );
    assert!(!error.contains(API_KEY), "no secret in the error");
    let audits = env.audits(env.tenant.document_id).await;
    assert_eq!(audits.len(), 1);
    assert_eq!(audits[0].status, "failed");
    assert_eq!(audits[0].dispatch_job_id, Some(job_id));
    assert!(audits[0].task_id.is_none());
    assert!(audits[0].retryable, "refused: nothing booked");
    assert!(env.notices().await.is_empty(), "not yet");

    // The sample's ApproximateReceiveCount is 3, the final receive with MAX_RECEIVE_COUNT 3.
    let event = sample_event(STALE, &job_id.to_string(), Some(&env.queue.arn));
    let (_, outcomes) = env.run(event, None).await;

    assert_eq!(outcomes[0].1, Outcome::Done);
    let job = env.job(job_id).await;
    assert_eq!(job.status, "failed");
    let error = job.last_error.unwrap();
    assert!(
        error.contains("gave up") && error.contains("HTTP 401"),
        "{error}"
    );
    assert_eq!(env.notices().await.len(), 1, "told once, at the end");
}

/// An answer that echoes the keys it was sent (a gateway's debug page, an error quoting
/// "the invalid key") must not carry them into the audit, the job or a notice.
#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn keys_an_answer_echoes_are_never_stored_or_sent_to_the_admins(pool: PgPool) {
    let env = setup(pool).await;
    // The keys at the start of the body, and the API key again straddling the 500
    // characters an error keeps: scrubbed after the cut, 8 of its characters would stay.
    let early =
        format!("X-ACCOUNT-KEY {ACCOUNT_KEY} is not valid for company; X-API-KEY {API_KEY}");
    let head = format!(r#"{{"statusCode":400,"message":"{early}","debug":"headers: "#);
    let padding = "x".repeat(492 - head.chars().count() - "X-API-KEY=".len());
    let body = format!(r#"{head}{padding}X-API-KEY={API_KEY} X-ACCOUNT-KEY={ACCOUNT_KEY}"}}"#);
    assert!(
        body[..500].ends_with(&API_KEY[..8]),
        "the key straddles the cut"
    );
    Mock::given(method("POST"))
        .and(path(CREATE))
        .respond_with(ResponseTemplate::new(400).set_body_raw(body, "application/json"))
        .mount(&env.maesn)
        .await;
    let job_id = enqueued(&env).await;

    env.deliver(1).await;

    let job = env.job(job_id).await;
    assert_eq!(job.status, "failed");
    let audits = env.audits(env.tenant.document_id).await;
    let notices = env.notices().await;
    assert_eq!(notices.len(), 1);
    let stored = [
        job.last_error.clone().unwrap(),
        audits[0].error.clone().unwrap(),
        notices[0].to_string(),
    ];
    for text in &stored {
        assert!(text.contains("[redacted]"), "{text}");
        for key in [API_KEY, ACCOUNT_KEY] {
            // Any 6-character piece of a key would be a key cut short.
            for piece in key.as_bytes().windows(6) {
                let piece = std::str::from_utf8(piece).unwrap();
                assert!(
                    !text.contains(piece),
                    "a piece of a key ({piece}) in: {text}"
                );
            }
        }
    }
}

/// A 409, or a validation refusal in DATEV's duplicate wording, means DATEV already has
/// the document: recorded as present (never retryable, so no re-export can book it a
/// second time), with Maesn's answer kept and sent to the admins.
async fn refused_as_already_there(pool: PgPool, status: u16, answer: &str) {
    let env = setup(pool).await;
    maesn_error(status, answer).mount(&env.maesn).await;
    let job_id = enqueued(&env).await;

    let (_, response, completion) = env.deliver(1).await;

    assert!(response.batch_item_failures.is_empty(), "{status}");
    assert_eq!(completion.deleted.len(), 1, "{status}");
    assert_eq!(
        env.maesn_requests("POST", CREATE).await.len(),
        1,
        "{status}: not sent again"
    );
    let audits = env.audits(env.tenant.document_id).await;
    assert_eq!(audits.len(), 1, "{status}");
    assert_eq!(audits[0].status, "succeeded", "{status}: present in DATEV");
    assert!(!audits[0].retryable, "{status}");
    let kept = audits[0].error.clone().unwrap_or_default();
    assert!(
        kept.contains(&format!("HTTP {status}")) && kept.contains(answer),
        "{status}: Maesn's answer is kept: {kept}"
    );
    let job = env.job(job_id).await;
    assert_eq!(job.status, "failed", "{status}");
    let again = docflow::output::request_manual_export(
        &env.pool,
        &env.dispatcher,
        DocumentId(env.tenant.document_id),
        env.tenant.approver_id,
    )
    .await;
    assert!(
        matches!(again, Err(docflow::output::EnqueueError::Ineligible(_))),
        "{status}: DATEV has it, no second export: {again:?}"
    );
    let notices = env.notices().await;
    assert_eq!(notices.len(), 1, "{status}");
    let text = notices[0]["text"].as_str().unwrap();
    assert!(
        text.contains("already has") && text.contains(answer),
        "{status}: the operator is told what Maesn said: {text}"
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_409_records_the_document_as_present_and_blocks_a_re_export(pool: PgPool) {
    refused_as_already_there(pool, 409, "Conflict: booking proposal RE-2026-0042 exists").await;
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_refusal_in_datevs_duplicate_wording_records_the_document_as_present(pool: PgPool) {
    refused_as_already_there(
        pool,
        400,
        "validationErrors: Belegnummer RE-2026-0042 bereits vorhanden",
    )
    .await;
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_missing_document_file_fails_the_job_without_calling_maesn(pool: PgPool) {
    let env = setup(pool).await;
    accepted("task-never").expect(0).mount(&env.maesn).await;
    let job_id = enqueued(&env).await;
    env.s3
        .delete_object()
        .bucket(&env.bucket)
        .key(format!("documents/{}.pdf", env.tenant.document_id))
        .send()
        .await
        .unwrap();

    env.deliver(1).await;

    let job = env.job(job_id).await;
    assert_eq!(job.status, "failed");
    assert!(
        job.last_error
            .unwrap()
            .contains("could not read the document file")
    );
    assert!(
        env.audits(env.tenant.document_id).await.is_empty(),
        "failed before any DATEV audit"
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn the_heartbeat_moves_updated_at_and_keeps_the_message_hidden(pool: PgPool) {
    // Queue visibility 1 s, each beat (every 700 ms) hides the message for 2 s more, and
    // Maesn holds the export until the test has looked: past 1 s only the heartbeat
    // keeps the message hidden.
    let queue_visibility = Duration::from_secs(1);
    let env = setup_with(
        pool,
        Options {
            queue_visibility,
            heartbeat: Heartbeat {
                every: Duration::from_millis(700),
                extend_to: Duration::from_secs(2),
            },
            // Longer than the gate may hold the request.
            maesn_timeout: docflow_tests::gate::HOLD_LIMIT,
            ..Options::default()
        },
    )
    .await;
    let (mock, maesn) = accepted_through_gate("task-slow");
    mock.mount(&env.maesn).await;
    let job_id = enqueued(&env).await;
    let event = docflow_tests::poll_n(&env.esm, 1).await;
    let received = tokio::time::Instant::now();

    let observe = async {
        maesn.arrived().await;
        // Two beats at least: updated_at 1.4 s past the claim (the beats come later on a
        // busy machine, never sooner).
        let during = tokio::time::timeout(Duration::from_secs(60), async {
            loop {
                let job = env.job(job_id).await;
                if job.updated_at - job.started_at.unwrap() >= chrono::Duration::milliseconds(1400)
                {
                    return job;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
        .expect("the heartbeat did not move updated_at within 60 s while Maesn held the export");
        // Past the queue's own visibility since the receive.
        tokio::time::sleep_until(received + queue_visibility + Duration::from_millis(500)).await;
        let visible = visible_bodies(&env.sqs, &env.queue.url).await;
        maesn.open();
        (during, visible)
    };
    let (response, (during, visible_during)) = tokio::join!(env.invoke(event), observe);

    assert_eq!(during.status, "running", "touched while working");
    assert!(visible_during.is_empty(), "message hidden by the heartbeat");
    assert!(response.batch_item_failures.is_empty());
    assert_eq!(env.job(job_id).await.status, "dispatched");
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn every_status_change_is_notified_on_output_dispatch(pool: PgPool) {
    let env = setup(pool).await;
    accepted("task-notify").mount(&env.maesn).await;
    let mut listener = PgListener::connect_with(&env.pool).await.unwrap();
    listener.listen("output_dispatch").await.unwrap();
    let job_id = enqueued(&env).await;
    env.deliver(1).await;
    let doc2 = env.another_approved_document().await;
    let broken =
        docflow::output::Dispatcher::new(env.sqs.clone(), format!("{}-gone", env.queue.url));
    let failed = docflow::output::request_manual_export(
        &env.pool,
        &broken,
        DocumentId(doc2),
        env.tenant.approver_id,
    )
    .await
    .unwrap();

    let mut seen = Vec::new();
    for _ in 0..5 {
        let n = tokio::time::timeout(Duration::from_secs(5), listener.recv())
            .await
            .unwrap()
            .unwrap();
        seen.push(serde_json::from_str::<serde_json::Value>(n.payload()).unwrap());
    }

    let transitions = |id: Uuid| {
        seen.iter()
            .filter(|p| p["document-output-job/id"] == id.to_string())
            .map(|p| {
                (
                    p["old-status"].as_str().unwrap_or("-").to_owned(),
                    p["document-output-job/status"].as_str().unwrap().to_owned(),
                )
            })
            .collect::<Vec<_>>()
    };
    let pair = |a: &str, b: &str| (a.to_owned(), b.to_owned());
    assert_eq!(
        transitions(job_id),
        vec![
            pair("-", "pending"),
            pair("pending", "running"),
            pair("running", "dispatched")
        ]
    );
    assert_eq!(
        transitions(failed.job.id.0),
        vec![pair("-", "pending"), pair("pending", "failed")]
    );
    let first = &seen[0];
    assert_eq!(first["event/type"], "output-dispatch");
    assert_eq!(first["document/id"], env.tenant.document_id.to_string());
    assert_eq!(first["tenant/id"], env.tenant.tenant_id.to_string());
    assert_eq!(
        first["organization/id"],
        env.tenant.organization_id.to_string()
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn polling_open_tasks_moves_audits_to_what_maesn_reports_and_returns_each_failure_once(
    pool: PgPool,
) {
    let env = setup(pool).await;
    let mut audits = Vec::new();
    for (task, answer) in [
        ("task-ok", json!({ "status": "SUCCESS", "information": [] })),
        (
            "task-dup",
            json!({ "status": "FAILED", "information": [{ "message": "Belegnummer bereits vorhanden", "type": "error" }] }),
        ),
        (
            "task-bad",
            json!({ "status": "FAILED", "information": [{ "message": "Konto 4711 existiert nicht", "type": "error" }] }),
        ),
        (
            "task-busy",
            json!({ "status": "IN_PROGRESS", "information": [] }),
        ),
    ] {
        let doc = env.another_approved_document().await;
        let job = env.insert_job(doc, "dispatched").await;
        let audit: Uuid = sqlx::query_scalar(
            r#"INSERT INTO ap_datev_export_audit (tenant_id, document_id, dispatch_job_id, status, task_id)
               VALUES ($1, $2, $3, 'submitted', $4) RETURNING id"#,
        )
        .bind(env.tenant.tenant_id)
        .bind(doc)
        .bind(job)
        .bind(task)
        .fetch_one(&env.pool)
        .await
        .unwrap();
        audits.push((audit, doc, job));
        Mock::given(method("GET"))
            .and(path(format!("/accounting/asyncTask/{task}")))
            .and(header("X-API-KEY", API_KEY))
            .and(header("X-ACCOUNT-KEY", ACCOUNT_KEY))
            .and(query_param("companyId", COMPANY_ID))
            .respond_with(
                ResponseTemplate::new(200).set_body_json(json!({ "meta": {}, "data": answer })),
            )
            .mount(&env.maesn)
            .await;
    }

    let first = worker::poll_open_tasks(&env.pool, &env.deps.maesn, 10)
        .await
        .unwrap();
    let second = worker::poll_open_tasks(&env.pool, &env.deps.maesn, 10)
        .await
        .unwrap();

    assert_eq!(
        (
            first.still_running,
            first.succeeded,
            first.failed,
            first.errors
        ),
        (1, 1, 2, 0)
    );
    let failed = |audit: Uuid| {
        first
            .failed_exports
            .iter()
            .find(|f| f.audit_id == audit)
            .unwrap_or_else(|| panic!("{audit} not returned: {:?}", first.failed_exports))
    };
    let (dup, dup_doc, dup_job) = audits[1];
    let dup_failure = failed(dup);
    assert_eq!(dup_failure.document_id, dup_doc);
    assert_eq!(dup_failure.tenant_id, env.tenant.tenant_id);
    assert_eq!(dup_failure.dispatch_job_id, Some(dup_job));
    assert!(
        !dup_failure.retryable,
        "a duplicate must not be exported again"
    );
    assert!(dup_failure.error.contains("Belegnummer bereits vorhanden"));
    let (bad, bad_doc, _) = audits[2];
    assert!(failed(bad).retryable, "nothing booked: a re-export may run");
    assert!(failed(bad).error.contains("Konto 4711 existiert nicht"));
    assert_eq!(first.failed_exports.len(), 2);
    assert!(
        second.failed_exports.is_empty() && second.failed == 0,
        "each failure is returned once: {second:?}"
    );
    assert_eq!(second.still_running, 1, "the open task is polled again");

    let rows = |doc| env.audits(doc);
    assert_eq!(rows(audits[0].1).await[0].status, "succeeded");
    assert_eq!(rows(dup_doc).await[0].status, "failed");
    assert_eq!(rows(audits[3].1).await[0].status, "in_progress");
    let export = |doc| {
        docflow::output::request_manual_export(
            &env.pool,
            &env.dispatcher,
            DocumentId(doc),
            env.tenant.approver_id,
        )
    };
    assert!(
        matches!(
            export(dup_doc).await,
            Err(docflow::output::EnqueueError::Ineligible(_))
        ),
        "the duplicate rejection blocks a re-export"
    );
    assert!(
        export(bad_doc).await.is_ok(),
        "a failed task no longer blocks a legitimate re-export"
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_timeout_after_the_request_was_sent_is_in_doubt_and_posted_only_once(pool: PgPool) {
    let env = setup_with(
        pool,
        Options {
            maesn_timeout: Duration::from_secs(1),
            maesn_connect_timeout: Duration::from_millis(500),
            ..Options::default()
        },
    )
    .await;
    accepted_after("task-late", Duration::from_secs(3))
        .mount(&env.maesn)
        .await;
    let job_id = enqueued(&env).await;

    let (outcome, _) = env.deliver_one(None).await;

    assert_eq!(outcome, Outcome::Done);
    assert_eq!(
        env.maesn_requests("POST", CREATE).await.len(),
        1,
        "Maesn has the request: a second POST could book twice"
    );
    let job = env.job(job_id).await;
    assert_eq!(job.status, "failed");
    assert!(job.last_error.unwrap().contains("in doubt"));
    assert!(!env.audits(env.tenant.document_id).await[0].retryable);
    assert_eq!(env.notices().await.len(), 1);

    // What the exports-in-doubt and permanent-failures alarms watch.
    let metrics = docflow_tests::emf::Metrics::of(&env.metrics.lines());
    let of = [(
        docflow::telemetry::metrics::dimension::FUNCTION,
        document_output::FUNCTION,
    )];
    use docflow::telemetry::metrics::{batch, output};
    assert_eq!(metrics.sum(output::EXPORTS_IN_DOUBT.name, &of), 1.0);
    assert_eq!(metrics.sum(output::EXPORTS_FAILED.name, &of), 0.0);
    assert_eq!(metrics.sum(output::EXPORTS_DISPATCHED.name, &of), 0.0);
    assert_eq!(
        metrics.sum(batch::RECORDS_FAILED_PERMANENTLY.name, &of),
        1.0
    );
    assert_eq!(
        metrics.values(output::MAESN_LATENCY.name, &of).len(),
        0,
        "no answer, no latency"
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_connect_that_hangs_is_a_refusal_retried_and_never_in_doubt(pool: PgPool) {
    let hanging = hanging_listener();
    let env = setup_with(
        pool,
        Options {
            maesn_base_url: Some(hanging.url.clone()),
            maesn_timeout: Duration::from_secs(5),
            maesn_connect_timeout: Duration::from_millis(300),
            ..Options::default()
        },
    )
    .await;
    let job_id = enqueued(&env).await;

    let (outcome, _) = env.deliver_one(None).await;

    assert_eq!(
        outcome,
        Outcome::Retry {
            after: Duration::from_secs(1)
        },
        "backed off through the queue"
    );
    let job = env.job(job_id).await;
    assert_eq!(
        job.status, "pending",
        "claimable again, not blocked for good"
    );
    let error = job.last_error.unwrap();
    assert!(!error.contains("in doubt"), "{error}");
    assert!(error.contains("could not reach Maesn"), "{error}");
    let audits = env.audits(env.tenant.document_id).await;
    assert_eq!(audits.len(), 1);
    assert!(audits[0].retryable, "nothing was sent, nothing booked");
    assert!(env.notices().await.is_empty());
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_refused_connection_and_an_unknown_host_are_passing_refusals_not_in_doubt(pool: PgPool) {
    use docflow::datev::{BookingProposal, DatevAccount, DatevConnector, DocumentFile};
    let env = setup(pool).await;
    // A port that was just free: nothing listens, the kernel answers RST.
    let refused = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    let proposal = BookingProposal {
        account: DatevAccount {
            tenant_id: env.tenant.tenant_id,
            company_id: COMPANY_ID.into(),
        },
        proposal: json!({ "id": env.tenant.document_id }),
        booking_type: "BILL".into(),
        folder_management: json!({}),
        file: DocumentFile {
            file_name: FILE_NAME.into(),
            mime_type: "application/pdf".into(),
            bytes: FILE_BYTES.to_vec().into(),
        },
    };

    for base_url in [refused.as_str(), "http://maesn.docflow-test.invalid"] {
        let client = env.maesn_client(base_url, Duration::from_secs(5), Duration::from_secs(1));
        let keys = client.keys(&proposal.account).await.unwrap();
        let e = client
            .create_booking_proposal(&proposal, &keys)
            .await
            .expect_err("nothing answers");
        assert!(!e.may_have_been_accepted(), "{base_url}: {e:?}");
        assert!(e.is_passing_refusal(), "{base_url}: {e:?}");
    }
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn every_5xx_but_503_is_in_doubt_with_one_post_and_408_429_503_are_retried(pool: PgPool) {
    let env = setup(pool).await;
    let in_doubt = [500, 501, 502, 504, 505, 520, 524, 598, 599];
    let refusals = [408, 429, 503];
    let mut cases = Vec::new();
    for status in in_doubt.into_iter().chain(refusals) {
        let (doc, job) = enqueued_document(&env).await;
        Mock::given(method("POST"))
            .and(path(CREATE))
            .and(BodyHas(doc.to_string().into_bytes()))
            .respond_with(if matches!(status, 429 | 503) {
                // A 429 or 503 is a refusal only as Maesn's own answer, with its
                // envelope (a proxy's is in doubt: tests/document_output_hostile.rs).
                ResponseTemplate::new(status).set_body_json(json!({
                    "statusCode": status,
                    "message": "Service Unavailable"
                }))
            } else {
                ResponseTemplate::new(status).set_body_string("upstream trouble")
            })
            .mount(&env.maesn)
            .await;
        cases.push((status, doc, job));
    }
    let event = docflow_tests::poll_n(&env.esm, cases.len()).await;

    env.run(event, None).await;

    let requests = env.maesn_requests("POST", CREATE).await;
    for (status, doc, job) in cases {
        let posts = requests
            .iter()
            .filter(|r| BodyHas(doc.to_string().into_bytes()).matches(r))
            .count();
        let row = env.job(job).await;
        let audit = &env.audits(doc).await[0];
        if in_doubt.contains(&status) {
            assert_eq!(posts, 1, "HTTP {status}: one POST only");
            assert_eq!(row.status, "failed", "HTTP {status}");
            assert!(
                row.last_error.unwrap().contains("in doubt"),
                "HTTP {status}"
            );
            assert!(!audit.retryable, "HTTP {status}");
        } else {
            assert_eq!(posts, 3, "HTTP {status}: retried in process");
            assert_eq!(row.status, "pending", "HTTP {status}: backed off");
            assert!(audit.retryable, "HTTP {status}");
        }
    }
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_deadline_too_short_for_the_maesn_call_puts_the_job_back_without_a_post(pool: PgPool) {
    // One attempt needs the Maesn timeout (10 s) + the record reserve (15 s); the
    // invocation has 20 s (minus the runtime's 2 s margin).
    let env = setup(pool).await;
    accepted("task-never").expect(0).mount(&env.maesn).await;
    let job_id = enqueued(&env).await;
    let (doc2, last_try) = enqueued_document(&env).await;
    let event = docflow_tests::poll_n(&env.esm, 2).await;
    let mut first = event.clone();
    first
        .records
        .retain(|r| r.body.as_deref() == Some(&job_id.to_string()));

    let (_, outcomes) = env.run(first, Some(Duration::from_secs(20))).await;
    let final_receive = sample_event(STALE, &last_try.to_string(), Some(&env.queue.arn));
    let (_, final_outcomes) = env.run(final_receive, Some(Duration::from_secs(20))).await;

    assert_eq!(
        outcomes[0].1,
        Outcome::Retry {
            after: Duration::ZERO
        },
        "back at once, to an invocation with time to spare"
    );
    let job = env.job(job_id).await;
    assert_eq!(job.status, "pending");
    assert!(job.last_error.unwrap().contains("not enough time"));
    assert!(
        env.audits(env.tenant.document_id).await.is_empty(),
        "nothing started"
    );
    assert_eq!(
        final_outcomes[0].1,
        Outcome::Release,
        "final receive: to the DLQ, the job left for the sweeper"
    );
    assert_eq!(
        env.job(last_try).await.status,
        "pending",
        "where the sweeper finds it"
    );
    assert!(env.audits(doc2).await.is_empty());
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn no_second_attempt_starts_without_the_time_to_finish_it(pool: PgPool) {
    // An attempt needs 2 s (Maesn timeout) + 5 s (record reserve) = 7 s; the invocation
    // has 12 s − 2 s margin = 10 s, so the first attempt starts even if the claim and
    // the S3 read take up to 3 s. After the first 503 a second attempt would need the
    // in-process wait (5 s ± 25 %) + 7 s ≥ 10.75 s: it must not start.
    let env = setup_with(
        pool,
        Options {
            maesn_timeout: Duration::from_secs(2),
            maesn_connect_timeout: Duration::from_secs(1),
            record_reserve: Duration::from_secs(5),
            retry_base: Duration::from_secs(5),
            ..Options::default()
        },
    )
    .await;
    maesn_error(503, "Service Unavailable")
        .mount(&env.maesn)
        .await;
    let job_id = enqueued(&env).await;

    let (outcome, _) = env.deliver_one(Some(Duration::from_secs(12))).await;

    assert_eq!(
        env.maesn_requests("POST", CREATE).await.len(),
        1,
        "the second attempt could not have been recorded in time"
    );
    assert_eq!(
        outcome,
        Outcome::Retry {
            after: Duration::from_secs(1)
        },
        "backed off through the queue instead"
    );
    assert_eq!(env.job(job_id).await.status, "pending");
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_duplicate_delivery_of_a_fresh_running_job_hides_the_real_message_until_the_job_would_be_stale(
    pool: PgPool,
) {
    // Queue visibility 1 s: a message whose visibility nobody changes is back after 1 s.
    let env = setup_with(
        pool,
        Options {
            queue_visibility: Duration::from_secs(1),
            ..Options::default()
        },
    )
    .await;
    accepted("task-never").expect(0).mount(&env.maesn).await;
    let job_id = enqueued(&env).await;
    worker::claim(&env.pool, job_id.into(), Duration::from_secs(600))
        .await
        .unwrap()
        .expect("another worker holds the job");
    env.send("control").await;
    let event = docflow_tests::poll_n(&env.esm, 2).await;
    let mut duplicate = event.clone();
    duplicate
        .records
        .retain(|r| r.body.as_deref() == Some(&job_id.to_string()));

    let (_, outcomes) = env.run(duplicate, None).await;

    let Outcome::Retry { after } = outcomes[0].1 else {
        panic!("expected Retry, got {:?}", outcomes[0].1);
    };
    assert!(
        after > Duration::from_secs(590) && after <= Duration::from_secs(602),
        "until just after the job would be stale: {after:?}"
    );
    // The control message, received together and left alone, comes back after the
    // queue's 1 s; the duplicate stays hidden by ChangeMessageVisibility on its handle.
    let visible = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            let bodies = visible_bodies(&env.sqs, &env.queue.url).await;
            if bodies.iter().any(|b| b == "control") {
                return bodies;
            }
        }
    })
    .await
    .expect("the control message comes back");
    assert!(
        !visible.contains(&job_id.to_string()),
        "duplicate hidden: {visible:?}"
    );
    assert_eq!(env.job(job_id).await.status, "running");
    assert!(env.audits(env.tenant.document_id).await.is_empty());
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_worker_whose_job_was_taken_over_can_no_longer_change_it(pool: PgPool) {
    let env = setup(pool).await;
    accepted("task-never").expect(0).mount(&env.maesn).await;
    let job_id = enqueued(&env).await;
    let stale = Duration::from_secs(600);
    let a = worker::claim(&env.pool, job_id.into(), stale)
        .await
        .unwrap()
        .unwrap();
    make_stale(&env, job_id).await;
    let b = worker::claim(&env.pool, job_id.into(), stale)
        .await
        .unwrap()
        .expect("stale: taken over");
    let mut conn = env.pool.acquire().await.unwrap();

    let a_touch = worker::touch(&env.pool, &a).await.unwrap();
    let a_fail = worker::fail(&mut conn, &a, "A's late failure")
        .await
        .unwrap();
    let a_defer = worker::defer(&mut conn, &a, "A's late backoff")
        .await
        .unwrap();
    let a_export = worker::export(
        &env.pool,
        &env.s3,
        &env.deps.maesn,
        &env.deps.settings,
        &a,
        worker::Attempt {
            deadline: None,
            final_receive: false,
        },
    )
    .await
    .unwrap();
    let while_b_holds = env.job(job_id).await;
    let b_touch = worker::touch(&env.pool, &b).await.unwrap();
    let b_fail = worker::fail(&mut conn, &b, "B's outcome").await.unwrap();

    assert!(
        a_touch.is_lost() && a_fail.is_lost() && a_defer.is_lost(),
        "A's updates match nothing"
    );
    assert_eq!(a_export, worker::ExportOutcome::ClaimLost);
    assert_eq!(while_b_holds.status, "running");
    assert_eq!(while_b_holds.last_error, None);
    assert!(
        env.audits(env.tenant.document_id).await.is_empty(),
        "A wrote no audit"
    );
    assert!(b_touch.is_held() && b_fail.is_held(), "B's claim holds");
    assert_eq!(
        env.job(job_id).await.last_error.as_deref(),
        Some("B's outcome")
    );
}

/// Claims `job_id` and exports it with `maesn`.
async fn export_with(
    env: &OutputEnv,
    maesn: &docflow::datev::MaesnClient,
    job_id: Uuid,
) -> worker::ExportOutcome {
    let claim = worker::claim(&env.pool, job_id.into(), Duration::from_secs(600))
        .await
        .unwrap()
        .expect("claimable");
    let attempt = worker::Attempt {
        deadline: None,
        final_receive: false,
    };
    worker::export(
        &env.pool,
        &env.s3,
        maesn,
        &env.deps.settings,
        &claim,
        attempt,
    )
    .await
    .unwrap()
}

/// A Maesn client for this test's secrets whose cached keys may be read again at once
/// after a refusal (the deployed minimum age is 10 s).
fn refreshing_maesn(env: &OutputEnv) -> docflow::datev::MaesnClient {
    let store = docflow::secrets::SecretStore::new(
        env.secrets.clone(),
        &env.app_secret_id,
        Duration::from_secs(300),
    )
    .with_refresh_min_age(Duration::ZERO);
    docflow::datev::MaesnClient::new(
        &docflow::datev::MaesnConfig {
            base_url: env.maesn.uri(),
            timeout: Duration::from_secs(5),
            connect_timeout: Duration::from_secs(1),
            credentials_prefix: env.credentials_prefix.clone(),
        },
        Arc::new(store),
    )
    .unwrap()
}

/// A warm instance caches Maesn's keys (TTL 300 s); when one is rotated and the old one
/// revoked, Maesn answers 401 until the cache expires. Classified permanent, each export
/// in that window failed for good and told the admins.
#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn rotated_maesn_keys_are_read_again_and_the_request_repeated_once(pool: PgPool) {
    let env = setup(pool).await;
    let maesn = refreshing_maesn(&env);
    let with_keys = |api: &str, account: &str, task: &str| {
        Mock::given(method("POST"))
            .and(path(CREATE))
            .and(header("X-API-KEY", api))
            .and(header("X-ACCOUNT-KEY", account))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({
                "meta": { "warnings": [] },
                "data": { "taskId": task }
            })))
            .with_priority(1)
    };
    with_keys(API_KEY, ACCOUNT_KEY, "task-warm")
        .up_to_n_times(1)
        .mount(&env.maesn)
        .await;
    Mock::given(method("POST"))
        .and(path(CREATE))
        .respond_with(ResponseTemplate::new(401).set_body_json(json!({
            "error": { "code": "UNAUTHORIZED", "message": "invalid X-API-KEY" }
        })))
        .with_priority(2)
        .mount(&env.maesn)
        .await;
    let warm = enqueued(&env).await;
    assert!(matches!(
        export_with(&env, &maesn, warm).await,
        worker::ExportOutcome::Dispatched { .. }
    ));
    // Rotated: the app's API key, then the tenant's account key; old ones revoked.
    env.secrets
        .put_secret_value()
        .secret_id(&env.app_secret_id)
        .secret_string(json!({ "maesn_api_key": "maesn-key-2" }).to_string())
        .send()
        .await
        .unwrap();
    with_keys("maesn-key-2", ACCOUNT_KEY, "task-after-api-key")
        .up_to_n_times(1)
        .mount(&env.maesn)
        .await;
    let (_, after_api_key) = enqueued_document(&env).await;
    let before = env.maesn.received_requests().await.unwrap().len();

    let outcome = export_with(&env, &maesn, after_api_key).await;

    assert!(
        matches!(&outcome, worker::ExportOutcome::Dispatched { task_id, .. } if task_id == "task-after-api-key"),
        "{outcome:?}"
    );
    let sent = env.maesn.received_requests().await.unwrap().len() - before;
    assert_eq!(
        sent, 2,
        "refused once with the old key, repeated once with the new"
    );

    env.secrets
        .put_secret_value()
        .secret_id(format!(
            "{}{}",
            env.credentials_prefix, env.tenant.tenant_id
        ))
        .secret_string(json!({ "account_key": "account-key-2" }).to_string())
        .send()
        .await
        .unwrap();
    with_keys("maesn-key-2", "account-key-2", "task-after-account-key")
        .up_to_n_times(1)
        .mount(&env.maesn)
        .await;
    let (_, after_account_key) = enqueued_document(&env).await;

    assert!(matches!(
        export_with(&env, &maesn, after_account_key).await,
        worker::ExportOutcome::Dispatched { task_id, .. } if task_id == "task-after-account-key"
    ));
}

/// A key Maesn refuses that nobody rotated is one request, failed as before (no loop).
#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_refused_key_that_was_not_rotated_is_not_sent_again(pool: PgPool) {
    let env = setup(pool).await;
    let maesn = refreshing_maesn(&env);
    Mock::given(method("POST"))
        .and(path(CREATE))
        .respond_with(ResponseTemplate::new(403).set_body_json(json!({
            "error": { "code": "FORBIDDEN", "message": "no access to this company" }
        })))
        .expect(1)
        .mount(&env.maesn)
        .await;
    let job = enqueued(&env).await;

    let outcome = export_with(&env, &maesn, job).await;

    assert!(
        matches!(
            outcome,
            worker::ExportOutcome::Failed {
                in_doubt: false,
                ..
            }
        ),
        "{outcome:?}"
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn an_audit_insert_racing_a_take_over_waits_for_it_and_exports_nothing(pool: PgPool) {
    let env = setup(pool).await;
    accepted("task-never").expect(0).mount(&env.maesn).await;
    let job_id = enqueued(&env).await;
    let stale = Duration::from_secs(600);
    let a = worker::claim(&env.pool, job_id.into(), stale)
        .await
        .unwrap()
        .unwrap();
    make_stale(&env, job_id).await;
    // B takes the stale job over in a transaction that has not committed yet when A,
    // alive after all, writes its audit: A's snapshot still shows its own token.
    let mut b = env.pool.begin().await.unwrap();
    let taken = sqlx::query(
        "UPDATE document_output_job SET claim_token = gen_random_uuid(), updated_at = now() \
         WHERE id = $1 AND status = 'running'",
    )
    .bind(job_id)
    .execute(&mut *b)
    .await
    .unwrap();
    assert_eq!(taken.rows_affected(), 1);
    let exporting = {
        let (pool, s3, maesn, settings) = (
            env.pool.clone(),
            env.s3.clone(),
            env.deps.maesn.clone(),
            env.deps.settings.clone(),
        );
        tokio::spawn(async move {
            let attempt = worker::Attempt {
                deadline: None,
                final_receive: false,
            };
            worker::export(&pool, &s3, &maesn, &settings, &a, attempt).await
        })
    };
    // A either waits for B's row lock (the guard) or has already called Maesn.
    until_waiting_on_a_lock(&env, &exporting).await;
    b.commit().await.unwrap();

    let outcome = exporting.await.unwrap().unwrap();

    assert_eq!(outcome, worker::ExportOutcome::ClaimLost);
    assert!(
        env.maesn.received_requests().await.unwrap().is_empty(),
        "A must not call Maesn for a job B holds"
    );
    assert!(
        env.audits(env.tenant.document_id).await.is_empty(),
        "A wrote no audit"
    );
}

/// Returns once a session of this test's database waits on a lock (the export's audit
/// insert on the job's row), Maesn was called, or the export ended: whichever comes
/// first; the caller's assertions tell them apart.
async fn until_waiting_on_a_lock<T>(env: &OutputEnv, exporting: &tokio::task::JoinHandle<T>) {
    tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            let waiting: i64 = sqlx::query_scalar(
                r#"SELECT count(*) FROM pg_stat_activity
                    WHERE wait_event_type = 'Lock' AND datname = current_database()"#,
            )
            .fetch_one(&env.pool)
            .await
            .unwrap();
            let called = !env
                .maesn
                .received_requests()
                .await
                .unwrap_or_default()
                .is_empty();
            if waiting > 0 || called || exporting.is_finished() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the export reaches its audit insert");
}

/// The audit insert waits on the job's row lock (here a transaction that only locks
/// it, as a take-over in flight does) until too little of the invocation is left for a
/// Maesn attempt: nothing is sent, and the audit says so instead of staying `requested`,
/// which recovery would read as in doubt.
#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn an_audit_insert_that_waited_past_the_time_for_a_call_sends_nothing_and_leaves_no_doubt(
    pool: PgPool,
) {
    let env = setup(pool).await;
    accepted("task-never").expect(0).mount(&env.maesn).await;
    let job_id = enqueued(&env).await;
    let a = worker::claim(&env.pool, job_id.into(), Duration::from_secs(600))
        .await
        .unwrap()
        .unwrap();
    let settings = env.deps.settings.clone();
    let needed = settings.maesn_timeout + settings.record_reserve;
    let mut locker = env.pool.begin().await.unwrap();
    sqlx::query("SELECT 1 FROM document_output_job WHERE id = $1 FOR UPDATE")
        .bind(job_id)
        .execute(&mut *locker)
        .await
        .unwrap();
    // Enough time for the checks before the insert (5 s); not after the wait on the lock.
    let deadline = tokio::time::Instant::now() + needed + Duration::from_secs(5);
    let exporting = {
        let (pool, s3, maesn) = (env.pool.clone(), env.s3.clone(), env.deps.maesn.clone());
        tokio::spawn(async move {
            let attempt = worker::Attempt {
                deadline: Some(deadline),
                final_receive: false,
            };
            worker::export(&pool, &s3, &maesn, &settings, &a, attempt).await
        })
    };
    until_waiting_on_a_lock(&env, &exporting).await;
    assert!(!exporting.is_finished(), "the export waits on the lock");
    tokio::time::sleep_until(deadline - needed + Duration::from_millis(500)).await;
    locker.rollback().await.unwrap();

    let outcome = exporting.await.unwrap().unwrap();

    assert!(
        matches!(outcome, worker::ExportOutcome::OutOfTime { .. }),
        "{outcome:?}"
    );
    assert!(
        env.maesn.received_requests().await.unwrap().is_empty(),
        "nothing sent"
    );
    let audits = env.audits(env.tenant.document_id).await;
    assert_eq!(audits.len(), 1);
    assert_eq!(audits[0].status, "failed");
    assert!(audits[0].retryable, "nothing was booked: not in doubt");
    assert!(
        audits[0]
            .error
            .as_deref()
            .unwrap_or_default()
            .contains("nothing was sent"),
        "{:?}",
        audits[0].error
    );
    let job = env.job(job_id).await;
    assert_eq!(job.status, "pending");
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_task_id_maesn_gives_after_the_job_was_taken_over_is_kept_on_the_audit(pool: PgPool) {
    let env = setup_with(
        pool,
        Options {
            // Longer than the gate may hold the request.
            maesn_timeout: docflow_tests::gate::HOLD_LIMIT,
            ..Options::default()
        },
    )
    .await;
    let (mock, maesn) = accepted_through_gate("task-late");
    mock.expect(1).mount(&env.maesn).await;
    let job_id = enqueued(&env).await;
    let stale = Duration::from_secs(600);
    let a = worker::claim(&env.pool, job_id.into(), stale)
        .await
        .unwrap()
        .unwrap();
    let exporting = {
        let (pool, s3, maesn, settings) = (
            env.pool.clone(),
            env.s3.clone(),
            env.deps.maesn.clone(),
            env.deps.settings.clone(),
        );
        tokio::spawn(async move {
            let attempt = worker::Attempt {
                deadline: None,
                final_receive: false,
            };
            worker::export(&pool, &s3, &maesn, &settings, &a, attempt).await
        })
    };
    // A is waiting on Maesn, which holds its request (A's audit is committed): its job
    // goes stale and B takes it; only then does Maesn answer A.
    maesn.arrived().await;
    make_stale(&env, job_id).await;
    let b = worker::claim(&env.pool, job_id.into(), stale)
        .await
        .unwrap()
        .expect("stale: taken over");
    maesn.open();

    let a_outcome = exporting.await.unwrap().unwrap();

    assert_eq!(a_outcome, worker::ExportOutcome::ClaimLost);
    let audits = env.audits(env.tenant.document_id).await;
    assert_eq!(audits.len(), 1);
    assert_eq!(
        (audits[0].status.as_str(), audits[0].task_id.as_deref()),
        ("submitted", Some("task-late")),
        "Maesn has the export, so the audit says so"
    );
    let job = env.job(job_id).await;
    assert_eq!(job.status, "running", "B still holds the job");
    assert!(worker::touch(&env.pool, &b).await.unwrap().is_held());
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn the_task_id_is_logged_as_it_arrives_and_carried_when_the_database_refuses_it(
    pool: PgPool,
) {
    let env = setup(pool).await;
    accepted("task-4711-unrecorded").mount(&env.maesn).await;
    let job_id = enqueued(&env).await;
    // The database takes the audit but refuses the task id once Maesn answered.
    sqlx::raw_sql(
        r#"CREATE FUNCTION refuse_task_id() RETURNS trigger LANGUAGE plpgsql AS $$
           BEGIN RAISE EXCEPTION 'disk full'; END $$;
           CREATE TRIGGER refuse_task_id BEFORE UPDATE ON ap_datev_export_audit
           FOR EACH ROW WHEN (NEW.task_id IS NOT NULL) EXECUTE FUNCTION refuse_task_id();"#,
    )
    .execute(&env.pool)
    .await
    .unwrap();
    let logs = Logs::default();

    let (outcome, _) = {
        let _guard = logs.capture_text(tracing::Level::TRACE);
        env.deliver_one(None).await
    };

    assert_eq!(
        outcome,
        Outcome::Retry {
            after: Duration::from_secs(605)
        },
        "left running: reclaimed once stale"
    );
    assert_eq!(env.job(job_id).await.status, "running");
    let text = logs.text();
    let accepted_line = text
        .lines()
        .find(|l| l.contains("Maesn accepted the booking proposal"))
        .expect("logged when it arrived");
    assert!(
        accepted_line.contains("task-4711-unrecorded"),
        "{accepted_line}"
    );
    let unrecorded = text
        .lines()
        .find(|l| l.contains("Maesn task id not recorded"))
        .expect("the failure is logged");
    assert!(
        unrecorded.contains("as task task-4711-unrecorded"),
        "the error carries the task id: {unrecorded}"
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn the_account_key_comes_from_the_tenants_secret_never_from_the_database(pool: PgPool) {
    let env = setup(pool).await;
    accepted("task-secret").mount(&env.maesn).await; // only with X-ACCOUNT-KEY = ACCOUNT_KEY
    sqlx::query("UPDATE tenant_datev_integration SET account_key = 'plaintext-in-the-database'")
        .execute(&env.pool)
        .await
        .unwrap();
    let job_id = enqueued(&env).await;
    let logs = Logs::default();

    {
        // TRACE too: the HTTP stack dumps requests there, and a leak at a level
        // production rarely enables is still a leak.
        let _guard = logs.capture_text(tracing::Level::TRACE);
        env.deliver_one(None).await;
    }

    assert_eq!(env.job(job_id).await.status, "dispatched");
    let requests = env.maesn_requests("POST", CREATE).await;
    assert_eq!(
        requests[0].headers.get("x-account-key").unwrap(),
        ACCOUNT_KEY
    );
    assert!(
        !logs.text().contains(ACCOUNT_KEY),
        "the key is never logged"
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_tenant_without_a_datev_secret_fails_before_anything_is_sent(pool: PgPool) {
    let env = setup(pool).await;
    accepted("task-never").expect(0).mount(&env.maesn).await;
    let secret_id = format!("{}{}", env.credentials_prefix, env.tenant.tenant_id);
    env.secrets
        .delete_secret()
        .secret_id(&secret_id)
        .force_delete_without_recovery(true)
        .send()
        .await
        .unwrap();
    let job_id = enqueued(&env).await;

    let (outcome, _) = env.deliver_one(None).await;

    assert_eq!(
        outcome,
        Outcome::Done,
        "recorded: an operator must create the secret"
    );
    let job = env.job(job_id).await;
    assert_eq!(job.status, "failed");
    let error = job.last_error.unwrap();
    assert!(
        error.contains("DATEV account key") && error.contains(&secret_id),
        "says which secret to create: {error}"
    );
    assert!(!error.contains("in doubt"), "{error}");
    assert!(
        env.audits(env.tenant.document_id).await.is_empty(),
        "the keys are read before the audit: no export was started"
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn polling_puts_the_task_id_into_one_escaped_path_segment(pool: PgPool) {
    let env = setup(pool).await;
    let job_id = enqueued(&env).await;
    insert_audit(&env, job_id, "submitted", Some("t/1?x y")).await;
    Mock::given(method("GET"))
        .and(path("/accounting/asyncTask/t%2F1%3Fx%20y"))
        .respond_with(ResponseTemplate::new(200).set_body_json(
            json!({ "meta": {}, "data": { "status": "SUCCESS", "information": [] } }),
        ))
        .expect(1)
        .mount(&env.maesn)
        .await;

    let summary = worker::poll_open_tasks(&env.pool, &env.deps.maesn, 10)
        .await
        .unwrap();

    assert_eq!((summary.succeeded, summary.errors), (1, 0), "{summary:?}");
}

#[test]
fn the_sample_events_are_lambda_sqs_events_for_the_document_output_queue() {
    let mut ids = HashSet::new();
    for (json, receive_count) in [(VALID, "1"), (DUPLICATE, "2"), (POISON, "1"), (STALE, "3")] {
        let event: aws_lambda_events::event::sqs::SqsEvent = serde_json::from_str(json).unwrap();
        let record = &event.records[0];
        assert_eq!(
            record.event_source_arn.as_deref(),
            Some("arn:aws:sqs:eu-central-1:123456789012:docflow-document-output")
        );
        assert_eq!(record.attributes["ApproximateReceiveCount"], receive_count);
        assert!(record.receipt_handle.is_some());
        ids.insert(record.message_id.clone().unwrap());
    }
    assert_eq!(ids.len(), 4);
}
