//! The document-output function against Postgres, the local SQS/S3 and a wiremock
//! server answering like Maesn: claim, duplicate deliveries, stale recovery, heartbeat,
//! eligibility, the export on the wire, retries, NOTIFY, and the async-task poll.

use std::collections::HashSet;
use std::time::Duration;

use docflow::ids::DocumentId;
use docflow::output::worker;
use docflow::sqs::Heartbeat;
use docflow_tests::output::{
    ACCOUNT_KEY, API_KEY, COMPANY_ID, FILE_BYTES, FILE_NAME, Options, OutputEnv, sample_event,
    setup, setup_with,
};
use docflow_tests::visible_bodies;
use serde_json::json;
use sqlx::PgPool;
use sqlx::postgres::PgListener;
use uuid::Uuid;
use wiremock::matchers::{header, method, path, query_param};
use wiremock::{Mock, ResponseTemplate};

const VALID: &str = include_str!("../../events/document-output/valid.json");
const DUPLICATE: &str = include_str!("../../events/document-output/duplicate-dispatched.json");
const POISON: &str = include_str!("../../events/document-output/poison.json");
const STALE: &str = include_str!("../../events/document-output/stale-running.json");
const CREATE: &str = "/accounting/bookingProposals/async";

/// Maesn accepting booking proposals (only with the right keys) and answering with a task id.
fn accepted(task_id: &str) -> Mock {
    accepted_after(task_id, Duration::ZERO)
}

/// [`accepted`], answering after `delay`.
fn accepted_after(task_id: &str, delay: Duration) -> Mock {
    Mock::given(method("POST"))
        .and(path(CREATE))
        .and(header("X-API-KEY", API_KEY))
        .and(header("X-ACCOUNT-KEY", ACCOUNT_KEY))
        .and(query_param("companyId", COMPANY_ID))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({
                    "meta": { "warnings": [] },
                    "data": { "taskId": task_id }
                }))
                .set_delay(delay),
        )
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
    assert!(
        text.contains(r#""number":"RE-2026-0042""#),
        "proposal from the extracted data"
    );
    assert!(text.contains(r#""contact":{"name":"Lieferant GmbH"}"#));
    assert!(text.contains(&format!(r#""id":"{}""#, env.tenant.document_id)));
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
    assert_eq!(first.status, docflow::output::JobStatus::Running);
    assert!(first.started_at.is_some());
    assert!(
        while_fresh.is_none(),
        "a fresh running job is not claimable"
    );
    let again = after_stale.expect("a stale running job is claimable");
    assert_eq!(
        again.started_at, first.started_at,
        "started_at kept (COALESCE)"
    );
    assert!(again.updated_at > first.updated_at);
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
        r#"INSERT INTO ap_datev_export_audit (tenant_id, document_id, dispatch_job_id, status, error)
           VALUES ($1, $2, $3, 'failed', 'DATEV rejected the booking')"#,
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
async fn a_stale_job_with_an_ambiguous_audit_is_left_for_repair_without_an_export(pool: PgPool) {
    let env = setup(pool).await;
    accepted("task-new").expect(0).mount(&env.maesn).await;
    let job_id = enqueued(&env).await;
    worker::claim(&env.pool, job_id.into(), Duration::from_secs(600))
        .await
        .unwrap()
        .unwrap();
    insert_audit(&env, job_id, "requested", None).await;
    make_stale(&env, job_id).await;

    let (_, response, _) = env.deliver(1).await;

    assert_eq!(
        response.batch_item_failures.len(),
        1,
        "kept: it ends in the DLQ for an operator"
    );
    let job = env.job(job_id).await;
    assert_eq!(job.status, "running");
    assert!(
        job.last_error.unwrap().contains("in doubt"),
        "the page says why it is stuck"
    );
    assert_eq!(env.audits(env.tenant.document_id).await.len(), 1);
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
async fn a_503_that_persists_fails_the_job_after_three_attempts(pool: PgPool) {
    let env = setup(pool).await;
    maesn_error(503, "Service Unavailable")
        .mount(&env.maesn)
        .await;
    let job_id = enqueued(&env).await;

    let (_, response, _) = env.deliver(1).await;

    assert!(
        response.batch_item_failures.is_empty(),
        "recorded as failed: Done"
    );
    assert_eq!(env.maesn_requests("POST", CREATE).await.len(), 3);
    let job = env.job(job_id).await;
    assert_eq!(job.status, "failed");
    assert!(job.last_error.unwrap().contains("HTTP 503"));
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
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_401_from_maesn_fails_the_job_at_once(pool: PgPool) {
    let env = setup(pool).await;
    maesn_error(401, "Unauthorized").mount(&env.maesn).await;
    let job_id = enqueued(&env).await;

    let (_, response, completion) = env.deliver(1).await;

    assert!(response.batch_item_failures.is_empty());
    assert_eq!(completion.deleted.len(), 1);
    assert_eq!(
        env.maesn_requests("POST", CREATE).await.len(),
        1,
        "not retried"
    );
    let job = env.job(job_id).await;
    assert_eq!(job.status, "failed");
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
    // Queue visibility 1 s, each beat (every 700 ms) hides the message for 2 s more,
    // and Maesn takes 3.5 s: past 2 s only the heartbeat keeps it hidden.
    let env = setup_with(
        pool,
        Options {
            queue_visibility: Duration::from_secs(1),
            heartbeat: Heartbeat {
                every: Duration::from_millis(700),
                extend_to: Duration::from_secs(2),
            },
            ..Options::default()
        },
    )
    .await;
    accepted_after("task-slow", Duration::from_millis(3500))
        .mount(&env.maesn)
        .await;
    let job_id = enqueued(&env).await;
    let event = docflow_tests::poll_n(&env.esm, 1).await;

    let observe = async {
        tokio::time::sleep(Duration::from_millis(3000)).await;
        let job = env.job(job_id).await;
        let visible = visible_bodies(&env.sqs, &env.queue.url).await;
        (job, visible)
    };
    let (response, (during, visible_during)) = tokio::join!(env.invoke(event), observe);

    assert_eq!(during.status, "running");
    let touched_after = during.updated_at - during.started_at.unwrap();
    assert!(
        touched_after >= chrono::Duration::milliseconds(1400),
        "updated_at moved while working: {touched_after}"
    );
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
async fn polling_open_tasks_moves_audits_to_what_maesn_reports(pool: PgPool) {
    let env = setup(pool).await;
    let job_id = enqueued(&env).await;
    let mut audits = Vec::new();
    for (task, answer) in [
        ("task-ok", json!({ "status": "SUCCESS", "information": [] })),
        (
            "task-bad",
            json!({ "status": "FAILED", "information": [{ "message": "Belegnummer bereits vorhanden", "type": "error" }] }),
        ),
        (
            "task-busy",
            json!({ "status": "IN_PROGRESS", "information": [] }),
        ),
    ] {
        audits.push(insert_audit(&env, job_id, "submitted", Some(task)).await);
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

    let summary = worker::poll_open_tasks(&env.pool, &env.deps.maesn, 10)
        .await
        .unwrap();

    assert_eq!(
        summary,
        worker::PollSummary {
            still_running: 1,
            succeeded: 1,
            failed: 1,
            errors: 0
        }
    );
    let rows = env.audits(env.tenant.document_id).await;
    let by_id = |id: Uuid| rows.iter().find(|a| a.id == id).unwrap().clone();
    assert_eq!(by_id(audits[0]).status, "succeeded");
    let bad = by_id(audits[1]);
    assert_eq!(bad.status, "failed");
    assert!(bad.error.unwrap().contains("Belegnummer bereits vorhanden"));
    assert_eq!(by_id(audits[2]).status, "in_progress");
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
