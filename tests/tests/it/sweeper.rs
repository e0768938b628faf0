//! The sweeper against Postgres, moto queues and wiremock Maesn/Slack: each stuck state
//! is reproduced, left alone before its threshold, re-sent after it, and recovered by the
//! real function; the give-up path; two sweeps at once; a failed send; the time budget.
//!
//! Ages are set by moving timestamps back in the database (the Arrange step), never by
//! sleeping.

use crate::matching_support;

use std::collections::HashSet;
use std::time::Duration;

use aws_lambda_events::event::sqs::SqsEvent;
use aws_lambda_events::eventbridge::EventBridgeEvent;
use docflow::extract::Extractor;
use docflow::ids::{DocumentId, IngestionId};
use docflow::matching::DocumentType;
use docflow::ocr::Transcriber;
use docflow::sqs::{BatchConfig, BatchRuntime};
use docflow_dev::local::{EventSourceMapping, QueuePair, QueueSpec};
use docflow_tests::aws_calls::AwsCalls;
use docflow_tests::output::{OutputEnv, setup};
use docflow_tests::pdf::text_pdf;
use docflow_tests::*;
use lambda_runtime::{Context, LambdaEvent};
use matching_support::{Gate, invoice, purchase_order, slack_bodies, slack_notifier, slack_server};
use serde_json::json;
use sqlx::PgPool;
use sweeper::{Deps, Queues, SweepConfig, SweepReport};
use uuid::Uuid;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const SCHEDULED: &str = include_str!("../../../events/sweeper/scheduled.json");

/// Thresholds as the defaults derive them for queues with a 60 s visibility timeout.
fn config() -> SweepConfig {
    SweepConfig {
        batch_limit: 100,
        max_resends: 3,
        stale_ingestion: Duration::from_secs(300),
        ingestion_after: Duration::from_secs(720),
        matching_after: Duration::from_secs(1920),
        output_pending_after: Duration::from_secs(1020),
        output_running_after: Duration::from_secs(660),
        undelivered_after: Duration::from_secs(86_400),
        task_poll_limit: 50,
        time_reserve: Duration::from_secs(1),
        max_task_age: Duration::from_secs(48 * 3600),
    }
}

struct Env {
    pool: PgPool,
    /// The test's own client (queues, drains); the sweeper's client records its calls
    /// in `calls` and refuses what `sweeper::aws_actions` does not declare.
    sqs: aws_sdk_sqs::Client,
    calls: AwsCalls,
    s3: aws_sdk_s3::Client,
    bucket: String,
    ingestion: QueuePair,
    matching: QueuePair,
    output: QueuePair,
    slack: MockServer,
    deps: Deps,
}

async fn env(pool: PgPool) -> Env {
    let aws = aws().await;
    let sqs = aws_sdk_sqs::Client::new(&aws);
    let s3 = docflow::aws::s3_client(&aws);
    let bucket = fresh_bucket(&s3).await;
    let ingestion = fresh_queue(&sqs, "sweep-ingestion", QueueSpec::default()).await;
    let matching = fresh_queue(&sqs, "sweep-matching", QueueSpec::default()).await;
    let output = fresh_queue(&sqs, "sweep-output", QueueSpec::default()).await;
    let slack = slack_server().await;
    let calls = AwsCalls::new(
        "sweeper",
        &sweeper::aws_actions(&docflow::settings::Env::new(|_| None)),
    );
    let deps = Deps {
        pool: docflow_tests::function_pool(&pool, "sweeper"),
        sqs: calls.sqs(&aws),
        queues: Queues {
            ingestion: ingestion.url.clone(),
            matching: matching.url.clone(),
            document_output: output.url.clone(),
        },
        maesn: None,
        notifier: slack_notifier(&slack),
        config: config(),
    };
    Env {
        pool,
        sqs,
        calls,
        s3,
        bucket,
        ingestion,
        matching,
        output,
        slack,
        deps,
    }
}

/// Every body on a queue, received (and so hidden) until the queue is drained.
async fn drain(sqs: &aws_sdk_sqs::Client, url: &str) -> Vec<String> {
    let mut bodies = Vec::new();
    loop {
        let out = sqs
            .receive_message()
            .queue_url(url)
            .max_number_of_messages(10)
            .wait_time_seconds(0)
            .send()
            .await
            .expect("receive");
        let messages = out.messages.unwrap_or_default();
        if messages.is_empty() {
            return bodies;
        }
        bodies.extend(messages.into_iter().filter_map(|m| m.body));
    }
}

async fn sweep(deps: &Deps) -> SweepReport {
    let report = sweeper::sweep(deps, None).await.expect("sweep");
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    report
}

/// Moves `column` of the row `id` of `table` `seconds` into the past.
async fn age(pool: &PgPool, table: &str, column: &str, id: Uuid, seconds: i64) {
    sqlx::query(&format!(
        "UPDATE {table} SET {column} = now() - make_interval(secs => $2) WHERE id = $1"
    ))
    .bind(id)
    .bind(seconds as f64)
    .execute(pool)
    .await
    .unwrap();
}

// ---- ingestion ---------------------------------------------------------------------------

const INVOICE_LINES: &[&str] = &[
    "Elektro Schmidt GmbH · Industriestraße 12 · 70565 Stuttgart",
    "",
    "Stadtwerke Musterstadt AG",
    "Am Markt 1",
    "12345 Musterstadt",
    "",
    "Rechnung",
    "Rechnungsnummer:\tR-2024-00731",
    "Rechnungsdatum:\t14.03.2024",
    "Ihre Bestellung:\tBE-55120",
    "",
    "Pos.\tBezeichnung\tMenge\tEinzelpreis\tGesamtpreis",
    "1\tKabel NYM-J 3x1,5 (100 m)\t4\t89,90 €\t359,60 €",
    "",
    "Nettobetrag\t\t\t\t359,60 €",
    "zzgl. 19 % MwSt.\t\t\t\t68,32 €",
    "Rechnungsbetrag\t\t\t\t427,92 €",
    "",
    "Elektro Schmidt GmbH · USt-IdNr. DE811907980 · IBAN DE89 3704 0044 0532 0130 00",
];

impl Env {
    /// A tenant, a document with its PDF in S3, and an in-progress ingestion.
    async fn ingestion_row(&self) -> (Uuid, Uuid) {
        let tenant = matching_support::tenant(&self.pool, "Stadtwerke Musterstadt AG").await;
        let document_id = Uuid::new_v4();
        let key = format!("documents/{document_id}.pdf");
        sqlx::query("INSERT INTO document (id, tenant_id, file_path) VALUES ($1, $2, $3)")
            .bind(document_id)
            .bind(tenant)
            .bind(&key)
            .execute(&self.pool)
            .await
            .unwrap();
        let id: Uuid =
            sqlx::query_scalar("INSERT INTO ingestion (document_id) VALUES ($1) RETURNING id")
                .bind(document_id)
                .fetch_one(&self.pool)
                .await
                .unwrap();
        self.s3
            .put_object()
            .bucket(&self.bucket)
            .key(&key)
            .body(text_pdf(&[INVOICE_LINES]).into())
            .send()
            .await
            .unwrap();
        (id, document_id)
    }

    /// The ingestion function, sending matchable documents to `matching_url`.
    fn ingestion_deps(&self, matching_url: &str) -> ingestion::Deps {
        ingestion::Deps {
            pool: docflow_tests::function_pool(&self.pool, "ingestion"),
            s3: self.s3.clone(),
            sqs: self.sqs.clone(),
            runtime: BatchRuntime::new(self.sqs.clone(), BatchConfig::default()),
            config: ingestion::IngestionConfig {
                bucket: self.bucket.clone(),
                matching_queue_url: matching_url.to_owned(),
                stale_after: Duration::from_secs(300),
                max_attempts: 3,
                quality_threshold: 0.7,
                max_file_bytes: 1024 * 1024,
            },
            transcriber: Transcriber::Native,
            extractor: Extractor::Rules,
        }
    }

    /// Receives one message from the ingestion queue and runs the ingestion function on it.
    async fn deliver_ingestion(&self, deps: &ingestion::Deps) {
        let esm = EventSourceMapping::new(self.sqs.clone(), &self.ingestion.url)
            .await
            .unwrap();
        let event = poll_n(&esm, 1).await;
        let response = ingestion::handler(deps, lambda_event(event.clone(), None))
            .await
            .unwrap();
        esm.complete(&event, &response).await.unwrap();
    }

    async fn deliver_matching(&self) {
        let esm = EventSourceMapping::new(self.sqs.clone(), &self.matching.url)
            .await
            .unwrap();
        let event = poll_n(&esm, 1).await;
        let deps = matching_support::deps(&self.pool, None, slack_notifier(&self.slack)).await;
        let response = matching::handler(&deps, lambda_event(event.clone(), None))
            .await
            .unwrap();
        assert!(response.batch_item_failures.is_empty());
        esm.complete(&event, &response).await.unwrap();
    }

    async fn ingestion_status(&self, id: Uuid) -> (String, i32, Option<String>) {
        sqlx::query_as("SELECT status, sweep_count, last_error FROM ingestion WHERE id = $1")
            .bind(id)
            .fetch_one(&self.pool)
            .await
            .unwrap()
    }

    async fn matching_status(&self, id: Uuid) -> (Option<String>, i32, Option<String>) {
        sqlx::query_as(
            "SELECT matching_status, matching_sweep_count, matching_error FROM document WHERE id = $1",
        )
        .bind(id)
        .fetch_one(&self.pool)
        .await
        .unwrap()
    }
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn an_ingestion_whose_worker_died_after_the_claim_is_resent_once_its_lease_and_threshold_pass(
    pool: PgPool,
) {
    let env = env(pool).await;
    let (id, _) = env.ingestion_row().await;
    // A worker claimed it and died (OOM, crash): the lease is set, no outcome was
    // reported, and the message went to the DLQ.
    ingestion::claim(&env.pool, IngestionId(id), Duration::from_secs(300))
        .await
        .unwrap()
        .expect("claimed");

    // The row has not moved for longer than the threshold, but the lease is live: a
    // worker that renews its lease may still be running.
    age(&env.pool, "ingestion", "updated_at", id, 800).await;
    age(&env.pool, "ingestion", "started_at", id, 290).await;
    assert_eq!(sweep(&env.deps).await.ingestion.found, 0, "live lease");
    // Stale lease, but the row moved less than 720 s ago.
    age(&env.pool, "ingestion", "started_at", id, 310).await;
    age(&env.pool, "ingestion", "updated_at", id, 700).await;
    assert_eq!(
        sweep(&env.deps).await.ingestion.found,
        0,
        "before the threshold"
    );
    assert!(drain(&env.sqs, &env.ingestion.url).await.is_empty());

    age(&env.pool, "ingestion", "updated_at", id, 730).await;
    let report = sweep(&env.deps).await;
    assert_eq!((report.ingestion.found, report.ingestion.resent), (1, 1));
    assert_eq!(env.ingestion_status(id).await.1, 1, "re-send counted");
    assert_eq!(
        sweep(&env.deps).await.ingestion.found,
        0,
        "one re-send per threshold"
    );

    env.deliver_ingestion(&env.ingestion_deps(&env.matching.url))
        .await;
    assert_eq!(env.ingestion_status(id).await.0, "completed");
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn an_ingestion_never_claimed_whose_message_is_gone_is_resent_and_completes(pool: PgPool) {
    let env = env(pool).await;
    // Lease free (never claimed, or released before a redelivery that never came).
    let (id, _) = env.ingestion_row().await;
    age(&env.pool, "ingestion", "updated_at", id, 730).await;

    assert_eq!(sweep(&env.deps).await.ingestion.resent, 1);
    env.deliver_ingestion(&env.ingestion_deps(&env.matching.url))
        .await;

    assert_eq!(env.ingestion_status(id).await.0, "completed");
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_completed_ingestion_whose_send_to_matching_failed_is_matched_after_the_sweep(
    pool: PgPool,
) {
    let env = env(pool).await;
    let (id, document_id) = env.ingestion_row().await;
    // Reproduce: the send to matching fails after the completion committed.
    let lost = format!("{}/123456789012/{}", endpoint(), unique("no-such-queue"));
    send(&env.sqs, &env.ingestion.url, &id.to_string()).await;
    env.deliver_ingestion(&env.ingestion_deps(&lost)).await;
    assert_eq!(env.ingestion_status(id).await.0, "completed");
    assert_eq!(
        env.matching_status(document_id).await.0.as_deref(),
        Some("pending")
    );
    assert!(
        drain(&env.sqs, &env.matching.url).await.is_empty(),
        "no message anywhere"
    );

    assert_eq!(sweep(&env.deps).await.matching.found, 0, "fresh");
    age(&env.pool, "document", "updated_at", document_id, 1900).await;
    assert_eq!(sweep(&env.deps).await.matching.found, 0, "before 1920 s");
    age(&env.pool, "document", "updated_at", document_id, 1930).await;
    assert_eq!(sweep(&env.deps).await.matching.resent, 1);

    env.deliver_matching().await;
    assert_eq!(
        env.matching_status(document_id).await.0.as_deref(),
        Some("succeeded")
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_document_left_in_matching_by_a_dead_worker_is_resent_and_matched(pool: PgPool) {
    let env = env(pool).await;
    let tenant = matching_support::tenant(&env.pool, "Acme AG").await;
    let po = matching_support::document(
        &env.pool,
        tenant,
        DocumentType::PurchaseOrder,
        purchase_order("PO-2024-0042", "2024-03-01", 1190.0),
    )
    .await;
    // The worker claimed it (in-progress, one attempt) and died on its final receive.
    docflow::matching::status::claim(
        &env.pool,
        po,
        None,
        docflow::matching::status::DEFAULT_CLAIM_LEASE,
    )
    .await
    .unwrap();
    assert_eq!(
        env.matching_status(po).await.0.as_deref(),
        Some("in-progress")
    );
    age(&env.pool, "document", "updated_at", po, 1930).await;
    // Its claim is as old as its last update (the lease ran out long ago).
    age(&env.pool, "document", "matching_claimed_at", po, 1930).await;

    assert_eq!(sweep(&env.deps).await.matching.resent, 1);
    env.deliver_matching().await;

    assert_eq!(
        env.matching_status(po).await.0.as_deref(),
        Some("succeeded")
    );
}

// ---- output ------------------------------------------------------------------------------

const CREATE_PATH: &str = "/accounting/bookingProposals/async";

fn accepted() -> Mock {
    Mock::given(method("POST"))
        .and(path("/accounting/bookingProposals/async"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({ "meta": {}, "data": { "taskId": "task-77" } })),
        )
}

/// The sweeper wired to the document-output test environment's queue and Maesn.
fn output_sweeper(env: &Env, output: &OutputEnv) -> Deps {
    Deps {
        pool: env.pool.clone(),
        sqs: env.deps.sqs.clone(),
        queues: Queues {
            ingestion: env.ingestion.url.clone(),
            matching: env.matching.url.clone(),
            document_output: output.queue.url.clone(),
        },
        maesn: Some(output.deps.maesn.clone()),
        notifier: slack_notifier(&env.slack),
        config: config(),
    }
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn an_output_job_committed_but_never_sent_is_sent_after_its_threshold_and_dispatched(
    pool: PgPool,
) {
    let output = setup(pool.clone()).await;
    let env = env(pool).await;
    let deps = output_sweeper(&env, &output);
    accepted().expect(1).mount(&output.maesn).await;
    // Reproduce: the app committed the approval with its job, then died before the send.
    output.approve(output.tenant.document_id).await;
    let mut tx = env.pool.begin().await.unwrap();
    let job = docflow::output::on_final_approval(
        &mut tx,
        DocumentId(output.tenant.document_id),
        Some(output.tenant.approver_id),
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    let job_id = job.id.0;

    assert_eq!(sweep(&deps).await.output.found, 0, "fresh");
    age(&env.pool, "document_output_job", "updated_at", job_id, 1010).await;
    assert_eq!(sweep(&deps).await.output.found, 0, "before 1020 s");
    age(&env.pool, "document_output_job", "updated_at", job_id, 1030).await;
    assert_eq!(sweep(&deps).await.output.resent, 1);

    output.deliver(1).await;
    assert_eq!(output.job(job_id).await.status, "dispatched");
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn an_output_job_left_running_by_a_dead_worker_is_resent_and_reclaimed(pool: PgPool) {
    let output = setup(pool.clone()).await;
    let env = env(pool).await;
    let deps = output_sweeper(&env, &output);
    accepted().expect(1).mount(&output.maesn).await;
    output.approve(output.tenant.document_id).await;
    let job_id = output
        .insert_job(output.tenant.document_id, "pending")
        .await;
    // A worker claimed it and died before calling Maesn; its message is gone.
    docflow::output::worker::claim(&env.pool, job_id.into(), Duration::from_secs(600))
        .await
        .unwrap()
        .expect("claimed");

    // Younger than the worker's own stale threshold (600 s) + 60 s: maybe still alive.
    age(&env.pool, "document_output_job", "updated_at", job_id, 650).await;
    assert_eq!(sweep(&deps).await.output.found, 0);
    age(&env.pool, "document_output_job", "updated_at", job_id, 670).await;
    assert_eq!(sweep(&deps).await.output.resent, 1);

    output.deliver(1).await;
    assert_eq!(output.job(job_id).await.status, "dispatched");
}

/// When `not_before` of the job is: (seconds from now).
async fn not_before_in(pool: &PgPool, job_id: Uuid) -> Option<f64> {
    sqlx::query_scalar(
        "SELECT extract(epoch FROM not_before - now())::float8 FROM document_output_job WHERE id = $1",
    )
    .bind(job_id)
    .fetch_one(pool)
    .await
    .unwrap()
}

/// Maesn (its own 429 envelope) asks to come back in two hours: the job is parked —
/// `pending` with `not_before`, its message deleted, nothing booked, nobody woken —
/// instead of spending its receives inside those two hours and failing. An early
/// message does nothing; the sweeper leaves the job alone until `not_before`, then sends
/// it again, and it exports.
#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_job_maesn_asks_to_wait_hours_for_is_parked_and_sent_again_by_the_sweeper_after(
    pool: PgPool,
) {
    use docflow::Outcome;

    let output = setup(pool.clone()).await;
    let env = env(pool).await;
    let deps = output_sweeper(&env, &output);
    Mock::given(method("POST"))
        .and(path("/accounting/bookingProposals/async"))
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("Retry-After", "7200")
                .set_body_json(json!({ "statusCode": 429, "message": "Too Many Requests" })),
        )
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&output.maesn)
        .await;
    accepted().with_priority(2).mount(&output.maesn).await;
    output.approve(output.tenant.document_id).await;
    let job_id = docflow::output::request_manual_export(
        &output.pool,
        &output.dispatcher,
        DocumentId(output.tenant.document_id),
        output.tenant.approver_id,
    )
    .await
    .unwrap()
    .job
    .id
    .0;

    let (outcome, completion) = output.deliver_one(None).await;

    assert_eq!(
        outcome,
        Outcome::Done,
        "parked: no receive is spent waiting"
    );
    assert_eq!(completion.deleted.len(), 1);
    let job = output.job(job_id).await;
    assert_eq!(job.status, "pending");
    let error = job.last_error.unwrap();
    assert!(
        error.contains("asked to wait 7200 s") && error.contains("parked until"),
        "{error}"
    );
    let due = not_before_in(&env.pool, job_id).await.expect("not_before");
    assert!((7100.0..=7200.0).contains(&due), "{due}");
    let audits = output.audits(output.tenant.document_id).await;
    assert_eq!(
        (audits[0].status.as_str(), audits[0].retryable),
        ("failed", true),
        "nothing booked"
    );
    assert!(output.notices().await.is_empty(), "nothing for a person");

    // A duplicate (or any early message) is not claimed: deleted, nothing sent.
    output.send(&job_id.to_string()).await;
    let (outcome, completion) = output.deliver_one(None).await;
    assert_eq!((outcome, completion.deleted.len()), (Outcome::Done, 1));
    assert_eq!(output.job(job_id).await.status, "pending");
    assert_eq!(output.maesn_requests("POST", CREATE_PATH).await.len(), 1);

    // However old the row, the sweeper leaves a parked job alone before its time.
    age(&env.pool, "document_output_job", "updated_at", job_id, 5000).await;
    assert_eq!(sweep(&deps).await.output.found, 0, "parked for two hours");
    sqlx::query(
        "UPDATE document_output_job SET not_before = now() - interval '1 second' WHERE id = $1",
    )
    .bind(job_id)
    .execute(&env.pool)
    .await
    .unwrap();
    let report = sweep(&deps).await;
    assert_eq!(report.output.resent, 1, "{report:?}");
    assert_eq!(sweep(&deps).await.output.found, 0, "sent once");

    output.deliver(1).await;
    let job = output.job(job_id).await;
    assert_eq!(job.status, "dispatched");
    assert_eq!(
        not_before_in(&env.pool, job_id).await,
        None,
        "claimed: no longer parked"
    );
    assert_eq!(output.maesn_requests("POST", CREATE_PATH).await.len(), 2);
}

/// A parked job whose re-send was lost is sent again after the pending threshold, as any
/// pending job whose message never arrived.
#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_parked_job_whose_resend_was_lost_is_sent_again(pool: PgPool) {
    let output = setup(pool.clone()).await;
    let env = env(pool).await;
    let deps = output_sweeper(&env, &output);
    output.approve(output.tenant.document_id).await;
    let job_id = output
        .insert_job(output.tenant.document_id, "pending")
        .await;
    sqlx::query(
        "UPDATE document_output_job SET not_before = now() - interval '1 second', \
                updated_at = now() - interval '2 hours' WHERE id = $1",
    )
    .bind(job_id)
    .execute(&env.pool)
    .await
    .unwrap();
    assert_eq!(sweep(&deps).await.output.resent, 1);
    assert_eq!(
        drain(&env.sqs, &output.queue.url).await.len(),
        1,
        "then lost"
    );
    assert_eq!(sweep(&deps).await.output.found, 0, "not at once");
    age(&env.pool, "document_output_job", "swept_at", job_id, 1030).await;
    assert_eq!(
        sweep(&deps).await.output.found,
        0,
        "delivered? not yet known"
    );
    age(
        &env.pool,
        "document_output_job",
        "swept_at",
        job_id,
        86_400 + 10,
    )
    .await;
    assert_eq!(
        sweep(&deps).await.output.resent,
        1,
        "a day without a delivery"
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn export_tasks_nobody_polled_are_polled_to_their_end(pool: PgPool) {
    let output = setup(pool.clone()).await;
    let env = env(pool).await;
    let deps = output_sweeper(&env, &output);
    output.approve(output.tenant.document_id).await;
    let job_id = output
        .insert_job(output.tenant.document_id, "dispatched")
        .await;
    let audit: Uuid = sqlx::query_scalar(
        r#"INSERT INTO ap_datev_export_audit (tenant_id, document_id, dispatch_job_id, status, task_id)
           VALUES ($1, $2, $3, 'submitted', 'task-done') RETURNING id"#,
    )
    .bind(output.tenant.tenant_id)
    .bind(output.tenant.document_id)
    .bind(job_id)
    .fetch_one(&env.pool)
    .await
    .unwrap();
    Mock::given(method("GET"))
        .and(path("/accounting/asyncTask/task-done"))
        .respond_with(ResponseTemplate::new(200).set_body_json(
            json!({ "meta": {}, "data": { "status": "SUCCESS", "information": [] } }),
        ))
        .mount(&output.maesn)
        .await;

    let report = sweep(&deps).await;

    assert_eq!((report.tasks.polled, report.tasks.succeeded), (1, 1));
    let status: String =
        sqlx::query_scalar("SELECT status FROM ap_datev_export_audit WHERE id = $1")
            .bind(audit)
            .fetch_one(&env.pool)
            .await
            .unwrap();
    assert_eq!(status, "succeeded");
    assert_eq!(sweep(&deps).await.tasks.polled, 0, "nothing open any more");
    assert!(
        slack_bodies(&env.slack).await.is_empty(),
        "a success is not news"
    );
}

/// An audit of `output`'s document, submitted to Maesn as task `task`.
async fn submitted_audit(output: &OutputEnv, task: &str) -> Uuid {
    submitted_audit_of(output, output.tenant.document_id, task).await
}

/// An audit of `document`, submitted to Maesn as task `task`. A document has at most one
/// open audit (the schema refuses a second), so tests with several open tasks give each
/// its own document.
async fn submitted_audit_of(output: &OutputEnv, document: Uuid, task: &str) -> Uuid {
    let job_id = output.insert_job(document, "dispatched").await;
    sqlx::query_scalar(
        r#"INSERT INTO ap_datev_export_audit (tenant_id, document_id, dispatch_job_id, status, task_id)
           VALUES ($1, $2, $3, 'submitted', $4) RETURNING id"#,
    )
    .bind(output.tenant.tenant_id)
    .bind(document)
    .bind(job_id)
    .bind(task)
    .fetch_one(&output.pool)
    .await
    .unwrap()
}

async fn audit(pool: &PgPool, id: Uuid) -> (String, bool, Option<String>) {
    sqlx::query_as("SELECT status, retryable, error FROM ap_datev_export_audit WHERE id = $1")
        .bind(id)
        .fetch_one(pool)
        .await
        .unwrap()
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_duplicate_rejected_by_datev_blocks_re_export_and_is_notified_once(pool: PgPool) {
    let output = setup(pool.clone()).await;
    let env = env(pool).await;
    let deps = output_sweeper(&env, &output);
    output.approve(output.tenant.document_id).await;
    let id = submitted_audit(&output, "task-dup").await;
    Mock::given(method("GET"))
        .and(path("/accounting/asyncTask/task-dup"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({ "meta": {}, "data": {
            "status": "FAILED",
            "information": [{ "message": "Belegnummer RE-2026-0042 bereits vorhanden", "type": "error" }]
        }})))
        .mount(&output.maesn)
        .await;

    let report = sweep(&deps).await;

    assert_eq!(report.tasks.failed, 1);
    let (status, retryable, error) = audit(&env.pool, id).await;
    assert_eq!((status.as_str(), retryable), ("failed", false));
    assert!(
        error.unwrap().contains("bereits vorhanden"),
        "DATEV's text is kept"
    );
    let notices = slack_bodies(&env.slack).await;
    assert_eq!(notices.len(), 1);
    assert!(
        notices[0]
            .to_string()
            .contains(&output.tenant.document_id.to_string())
    );
    let mut conn = env.pool.acquire().await.unwrap();
    let eligible = docflow::output::check_eligibility(&mut conn, output.tenant.document_id, None)
        .await
        .unwrap();
    assert!(
        eligible.is_err(),
        "a duplicate is never exported again: {eligible:?}"
    );

    assert_eq!(sweep(&deps).await.tasks.polled, 0);
    assert_eq!(slack_bodies(&env.slack).await.len(), 1, "notified once");
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_task_that_failed_validation_allows_a_corrected_re_export(pool: PgPool) {
    let output = setup(pool.clone()).await;
    let env = env(pool).await;
    let deps = output_sweeper(&env, &output);
    output.approve(output.tenant.document_id).await;
    let id = submitted_audit(&output, "task-invalid").await;
    let mut conn = env.pool.acquire().await.unwrap();
    assert!(
        docflow::output::check_eligibility(&mut conn, output.tenant.document_id, None)
            .await
            .unwrap()
            .is_err(),
        "an open task blocks a re-export until it is polled"
    );
    Mock::given(method("GET"))
        .and(path("/accounting/asyncTask/task-invalid"))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(json!({ "meta": {}, "data": {
                "status": "FAILED",
                "information": [{ "message": "Kostenstelle fehlt", "type": "error" }]
            }})),
        )
        .mount(&output.maesn)
        .await;

    sweep(&deps).await;

    let (status, retryable, _) = audit(&env.pool, id).await;
    assert_eq!((status.as_str(), retryable), ("failed", true));
    assert!(
        docflow::output::check_eligibility(&mut conn, output.tenant.document_id, None)
            .await
            .unwrap()
            .is_ok()
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_task_maesn_does_not_know_is_ended_in_doubt_instead_of_polled_for_ever(pool: PgPool) {
    let output = setup(pool.clone()).await;
    let env = env(pool).await;
    let deps = output_sweeper(&env, &output);
    let id = submitted_audit(&output, "task-gone").await;
    // Tasks end within minutes; a day later a 404 means Maesn lost it for good.
    age(
        &env.pool,
        "ap_datev_export_audit",
        "created_at",
        id,
        86_400 + 60,
    )
    .await;
    Mock::given(method("GET"))
        .and(path("/accounting/asyncTask/task-gone"))
        .respond_with(
            ResponseTemplate::new(404)
                .set_body_json(json!({ "statusCode": 404, "message": "Task not found" })),
        )
        .mount(&output.maesn)
        .await;

    let report = sweep(&deps).await;

    assert_eq!((report.tasks.failed, report.tasks.errors), (1, 0));
    let (status, retryable, error) = audit(&env.pool, id).await;
    assert_eq!((status.as_str(), retryable), ("failed", false));
    assert!(error.unwrap().contains("check DATEV"));
    assert_eq!(slack_bodies(&env.slack).await.len(), 1);
    assert!(!sweep(&deps).await.found_anything(), "not polled again");
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_task_maesn_cannot_answer_now_is_polled_again_next_run(pool: PgPool) {
    let output = setup(pool.clone()).await;
    let env = env(pool).await;
    let deps = output_sweeper(&env, &output);
    let id = submitted_audit(&output, "task-busy").await;
    Mock::given(method("GET"))
        .and(path("/accounting/asyncTask/task-busy"))
        .respond_with(ResponseTemplate::new(503))
        .mount(&output.maesn)
        .await;

    let report = sweep(&deps).await;

    assert_eq!((report.tasks.polled, report.tasks.errors), (1, 1));
    assert_eq!(audit(&env.pool, id).await.0, "submitted");
    assert!(slack_bodies(&env.slack).await.is_empty());
}

// ---- giving up -----------------------------------------------------------------------------

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn work_resent_the_maximum_times_is_failed_visibly_notified_once_and_never_resent(
    pool: PgPool,
) {
    let env = env(pool).await;
    let (ingestion_id, ingested_document) = env.ingestion_row().await;
    let tenant = matching_support::tenant(&env.pool, "Acme AG").await;
    let document = matching_support::document(
        &env.pool,
        tenant,
        DocumentType::Invoice,
        invoice("RE-1", "PO-1", "LS-1", "2024-03-05", 119.0),
    )
    .await;
    let job: Uuid = sqlx::query_scalar(
        r#"INSERT INTO document_output_job (tenant_id, document_id, document_domain, trigger, status)
           VALUES ($1, $2, 'ap', 'manual', 'pending') RETURNING id"#,
    )
    .bind(tenant)
    .bind(document)
    .fetch_one(&env.pool)
    .await
    .unwrap();
    for (table, count, swept) in [
        ("ingestion", "sweep_count", "swept_at"),
        ("document", "matching_sweep_count", "matching_swept_at"),
        ("document_output_job", "sweep_count", "swept_at"),
    ] {
        sqlx::query(&format!(
            // The third re-send was delivered (the row moved after it) and the work
            // is stuck again.
            "UPDATE {table} SET {count} = 3, {swept} = now() - interval '4 hours', \
             updated_at = now() - interval '3 hours'"
        ))
        .execute(&env.pool)
        .await
        .unwrap();
    }

    let report = sweep(&env.deps).await;

    assert_eq!(
        (
            report.ingestion.given_up,
            report.matching.given_up,
            report.output.given_up
        ),
        (1, 1, 1)
    );
    assert_eq!(
        report.ingestion.resent + report.matching.resent + report.output.resent,
        0
    );
    let (status, _, error) = env.ingestion_status(ingestion_id).await;
    assert_eq!(status, "failed");
    assert!(error.unwrap().contains("re-sent this ingestion 3 times"));
    let review: bool = sqlx::query_scalar("SELECT needs_human_review FROM document WHERE id = $1")
        .bind(ingested_document)
        .fetch_one(&env.pool)
        .await
        .unwrap();
    assert!(review, "the document is flagged for a person");
    let (matching, _, error) = env.matching_status(document).await;
    assert_eq!(matching.as_deref(), Some("failed"));
    let told: bool =
        sqlx::query_scalar("SELECT matching_notified_at IS NOT NULL FROM document WHERE id = $1")
            .bind(document)
            .fetch_one(&env.pool)
            .await
            .unwrap();
    assert!(
        told,
        "a late message for the document must not notify again"
    );
    assert!(
        error
            .unwrap()
            .contains("re-sent this document to matching 3 times")
    );
    let (job_status, job_error): (String, Option<String>) =
        sqlx::query_as("SELECT status::text, last_error FROM document_output_job WHERE id = $1")
            .bind(job)
            .fetch_one(&env.pool)
            .await
            .unwrap();
    assert_eq!(job_status, "failed");
    assert!(
        job_error
            .unwrap()
            .contains("re-sent this output job 3 times")
    );
    for queue in [&env.ingestion, &env.matching, &env.output] {
        assert!(
            drain(&env.sqs, &queue.url).await.is_empty(),
            "nothing re-sent"
        );
    }
    let notices = slack_bodies(&env.slack).await;
    assert_eq!(notices.len(), 3, "one notice per abandoned piece of work");

    let again = sweep(&env.deps).await;
    assert!(!again.found_anything());
    assert_eq!(slack_bodies(&env.slack).await.len(), 3, "notified once");
    env.calls.assert_declared();
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_matching_give_up_meeting_a_late_delivery_tells_the_admins_once(pool: PgPool) {
    // Arrange: a document re-sent to matching the maximum times and stuck again, and a
    // Slack that holds the sweeper's notice until the test lets it through, so that the
    // notice is still on its way when a delivery of the document's last re-sent message
    // arrives.
    let slow_slack = MockServer::start().await;
    let slack_gate = Gate::answering(ResponseTemplate::new(200).set_body_string("ok"));
    Mock::given(method("POST"))
        .respond_with(slack_gate.clone())
        .mount(&slow_slack)
        .await;
    // A notifier that waits as long as the gate may hold it: a timed-out attempt would
    // be retried and reach Slack twice.
    let patient_notifier = || {
        docflow::notify::Notifier::new(
            Some(matching_support::ADMIN_BASE_URL.into()),
            docflow_tests::gate::HOLD_LIMIT,
        )
        .with_retry(matching_support::fast_retry())
        .with_channel(docflow::notify::SlackChannel::new(
            reqwest::Client::new(),
            format!("{}/services/T000/B000/XXXX", slow_slack.uri()).into(),
        ))
    };
    let mut env = env(pool).await;
    env.deps.notifier = patient_notifier();
    let matching_deps = matching_support::deps(&env.pool, None, patient_notifier()).await;
    let tenant = matching_support::tenant(&env.pool, "Acme AG").await;
    let document = matching_support::document(
        &env.pool,
        tenant,
        DocumentType::Invoice,
        invoice("RE-7", "PO-7", "LS-7", "2024-03-05", 119.0),
    )
    .await;
    sqlx::query(
        "UPDATE document SET matching_status = 'in-progress', matching_attempts = 3, \
         matching_sweep_count = 3, matching_swept_at = now() - interval '4 hours', \
         updated_at = now() - interval '3 hours' WHERE id = $1",
    )
    .bind(document)
    .execute(&env.pool)
    .await
    .unwrap();
    // The sweeper's last re-send, delivered late: sent before the give-up.
    let mut late: SqsEvent =
        serde_json::from_str(include_str!("../../../events/matching/valid.json")).unwrap();
    late.records[0].body = Some(document.to_string());
    late.records[0].attributes.insert(
        "SentTimestamp".into(),
        (chrono::Utc::now().timestamp_millis() - 60_000).to_string(),
    );

    // Act: the sweep gives up; as soon as the failure is committed, and while the
    // sweeper is telling the admins, the delivery arrives.
    let delivery = async {
        // The notice reaching Slack (and held there) comes after the give-up's commit.
        slack_gate.arrived().await;
        let (status, _, _) = env.matching_status(document).await;
        assert_eq!(status.as_deref(), Some("failed"), "given up before telling");
        let untold: bool =
            sqlx::query_scalar("SELECT matching_notified_at IS NULL FROM document WHERE id = $1")
                .bind(document)
                .fetch_one(&env.pool)
                .await
                .unwrap();
        let response = matching::handler(&matching_deps, lambda_event(late, None))
            .await
            .unwrap();
        slack_gate.open();
        (untold, response)
    };
    let (report, (untold_when_delivered, response)) = tokio::join!(sweep(&env.deps), delivery);

    // Assert: one failure, one notice, told by the sweeper that recorded it.
    assert_eq!(report.matching.given_up, 1);
    assert!(
        untold_when_delivered,
        "the delivery met the give-up before its notice was recorded"
    );
    assert!(
        response.batch_item_failures.is_empty(),
        "a duplicate of finished work"
    );
    let notices = slack_bodies(&slow_slack).await;
    assert_eq!(notices.len(), 1, "one notice per failure: {notices:?}");
    assert!(
        notices[0]
            .to_string()
            .contains("re-sent this document to matching 3 times"),
        "{}",
        notices[0]
    );
    let (told, attempts): (bool, i32) = sqlx::query_as(
        "SELECT matching_notified_at IS NOT NULL, matching_attempts FROM document WHERE id = $1",
    )
    .bind(document)
    .fetch_one(&env.pool)
    .await
    .unwrap();
    assert!(told);
    assert_eq!(attempts, 3, "the late delivery did not run matching again");
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn an_ingestion_that_kills_its_worker_every_time_ends_failed_instead_of_cycling(
    pool: PgPool,
) {
    let env = env(pool).await;
    let (id, _) = env.ingestion_row().await;
    let mut resends = 0;
    for _ in 0..10 {
        // Every delivery claims (after the re-send) and then dies; its message ends in
        // the DLQ (dropped here).
        sqlx::query(
            "UPDATE ingestion SET started_at = now() - interval '1 hour', \
             updated_at = now() - interval '1 hour', \
             swept_at = CASE WHEN swept_at IS NULL THEN NULL ELSE now() - interval '61 minutes' END \
             WHERE id = $1",
        )
        .bind(id)
        .execute(&env.pool)
        .await
        .unwrap();
        let report = sweep(&env.deps).await;
        if report.ingestion.given_up == 1 {
            break;
        }
        assert_eq!(report.ingestion.resent, 1);
        resends += 1;
        assert_eq!(
            drain(&env.sqs, &env.ingestion.url).await,
            vec![id.to_string()]
        );
        ingestion::claim(&env.pool, IngestionId(id), Duration::from_secs(300))
            .await
            .unwrap()
            .expect("the re-sent message claims it, then the worker dies again");
    }

    assert_eq!(resends, 3);
    assert_eq!(env.ingestion_status(id).await.0, "failed");
    assert_eq!(slack_bodies(&env.slack).await.len(), 1);
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn work_whose_message_waits_in_a_backlog_is_neither_resent_again_nor_given_up(pool: PgPool) {
    let env = env(pool).await;
    let (id, _) = env.ingestion_row().await;
    // The app's message: committed, sent, waiting behind a backlog (never received).
    send(&env.sqs, &env.ingestion.url, &id.to_string()).await;
    for _ in 0..5 {
        // Time passes: every threshold, including that of the last re-send, is over.
        sqlx::query(
            "UPDATE ingestion SET updated_at = now() - interval '2 hours', \
             swept_at = CASE WHEN swept_at IS NULL THEN NULL ELSE now() - interval '1 hour' END \
             WHERE id = $1",
        )
        .bind(id)
        .execute(&env.pool)
        .await
        .unwrap();
        sweep(&env.deps).await;
    }

    let (status, sweeps, _) = env.ingestion_status(id).await;
    assert_eq!(status, "in-progress", "nothing of it was ever delivered");
    assert_eq!(
        sweeps, 1,
        "one re-send, then it waits for one of them to arrive"
    );
    assert_eq!(drain(&env.sqs, &env.ingestion.url).await.len(), 2);
    assert!(slack_bodies(&env.slack).await.is_empty());
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_resent_message_that_never_arrives_is_resent_again_after_a_day(pool: PgPool) {
    let env = env(pool).await;
    let (id, _) = env.ingestion_row().await;
    age(&env.pool, "ingestion", "updated_at", id, 3 * 86_400).await;
    assert_eq!(sweep(&env.deps).await.ingestion.resent, 1);
    drain(&env.sqs, &env.ingestion.url).await; // lost, or its receives spent before a claim

    age(&env.pool, "ingestion", "swept_at", id, 86_400 - 60).await;
    assert_eq!(
        sweep(&env.deps).await.ingestion.found,
        0,
        "maybe still queued"
    );
    age(&env.pool, "ingestion", "swept_at", id, 86_400 + 60).await;
    assert_eq!(
        sweep(&env.deps).await.ingestion.resent,
        1,
        "given up as undelivered"
    );
    assert_eq!(env.ingestion_status(id).await.1, 2);
}

// ---- concurrency, failures, budget ---------------------------------------------------------

async fn stuck_ingestions(env: &Env, n: usize) -> Vec<Uuid> {
    let mut ids = Vec::new();
    for _ in 0..n {
        let (id, _) = env.ingestion_row().await;
        age(&env.pool, "ingestion", "updated_at", id, 3600).await;
        ids.push(id);
    }
    ids
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn two_sweeps_at_once_send_each_message_once(pool: PgPool) {
    let env = env(pool).await;
    let ids = stuck_ingestions(&env, 24).await;
    let mut config = config();
    config.batch_limit = 5; // several statements each, interleaved between the two
    let a = Deps {
        config: config.clone(),
        notifier: slack_notifier(&env.slack),
        queues: env.deps.queues.clone(),
        pool: env.pool.clone(),
        sqs: env.deps.sqs.clone(),
        maesn: None,
    };

    let mut resent = 0;
    for _ in 0..5 {
        let (x, y) = tokio::join!(sweep(&a), sweep(&a));
        resent += x.ingestion.resent + y.ingestion.resent;
    }

    let bodies = drain(&env.sqs, &env.ingestion.url).await;
    assert_eq!(bodies.len(), 24, "{bodies:?}");
    assert_eq!(resent, 24);
    let unique: HashSet<_> = bodies.into_iter().collect();
    assert_eq!(
        unique,
        ids.iter().map(Uuid::to_string).collect::<HashSet<_>>()
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn rows_another_transaction_holds_are_skipped_not_waited_for(pool: PgPool) {
    let env = env(pool).await;
    let ids = stuck_ingestions(&env, 2).await;
    let mut holder = env.pool.begin().await.unwrap();
    sqlx::query("SELECT id FROM ingestion WHERE id = $1 FOR UPDATE")
        .bind(ids[0])
        .execute(&mut *holder)
        .await
        .unwrap();

    let report = tokio::time::timeout(Duration::from_secs(20), sweep(&env.deps))
        .await
        .expect("a sweep never waits for a locked row");

    assert_eq!(report.ingestion.resent, 1);
    assert_eq!(
        drain(&env.sqs, &env.ingestion.url).await,
        vec![ids[1].to_string()]
    );
    holder.commit().await.unwrap();
    assert_eq!(
        sweep(&env.deps).await.ingestion.resent,
        1,
        "taken once released"
    );
    assert_eq!(
        drain(&env.sqs, &env.ingestion.url).await,
        vec![ids[0].to_string()]
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_failed_send_is_undone_so_an_sqs_outage_uses_up_no_resend(pool: PgPool) {
    let mut env = env(pool).await;
    let ids = stuck_ingestions(&env, 1).await;
    let good = env.deps.queues.ingestion.clone();
    env.deps.queues.ingestion = format!("{}/123456789012/{}", endpoint(), unique("gone"));

    let report = sweep(&env.deps).await;

    assert_eq!(
        (report.ingestion.found, report.ingestion.send_failed),
        (1, 1)
    );
    let swept: (i32, Option<chrono::DateTime<chrono::Utc>>) =
        sqlx::query_as("SELECT sweep_count, swept_at FROM ingestion WHERE id = $1")
            .bind(ids[0])
            .fetch_one(&env.pool)
            .await
            .unwrap();
    assert_eq!(swept, (0, None), "as if never taken");

    env.deps.queues.ingestion = good;
    assert_eq!(
        sweep(&env.deps).await.ingestion.resent,
        1,
        "found again at once"
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_sweep_without_time_left_starts_nothing(pool: PgPool) {
    let env = env(pool).await;
    let ids = stuck_ingestions(&env, 1).await;

    let report = sweeper::sweep(&env.deps, Some(Duration::ZERO))
        .await
        .unwrap();

    assert_eq!(report.errors.len(), 4, "{:?}", report.errors);
    assert!(!report.found_anything());
    assert_eq!(env.ingestion_status(ids[0]).await.1, 0);
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn finished_work_is_never_resent_however_old(pool: PgPool) {
    let env = env(pool).await;
    let (id, document_id) = env.ingestion_row().await;
    sqlx::query("UPDATE ingestion SET status = 'completed', updated_at = now() - interval '1 day' WHERE id = $1")
        .bind(id)
        .execute(&env.pool)
        .await
        .unwrap();
    sqlx::query("UPDATE document SET matching_status = 'succeeded', updated_at = now() - interval '1 day' WHERE id = $1")
        .bind(document_id)
        .execute(&env.pool)
        .await
        .unwrap();
    let tenant: Uuid = sqlx::query_scalar("SELECT tenant_id FROM document WHERE id = $1")
        .bind(document_id)
        .fetch_one(&env.pool)
        .await
        .unwrap();
    for status in ["dispatched", "failed"] {
        sqlx::query(
            r#"INSERT INTO document_output_job (tenant_id, document_id, document_domain, trigger, status, updated_at)
               VALUES ($1, $2, 'ap', 'manual', $3::document_output_status, now() - interval '1 day')"#,
        )
        .bind(tenant)
        .bind(document_id)
        .bind(status)
        .execute(&env.pool)
        .await
        .unwrap();
    }

    assert!(!sweep(&env.deps).await.found_anything());
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn the_scheduled_event_sample_runs_a_sweep_through_the_handler(pool: PgPool) {
    let env = env(pool).await;
    stuck_ingestions(&env, 1).await;
    let event: EventBridgeEvent<serde_json::Value> =
        serde_json::from_str(SCHEDULED).expect("an EventBridge scheduled event");

    let report = sweeper::handler(&env.deps, LambdaEvent::new(event, Context::default()))
        .await
        .expect("a sweep with nothing failing succeeds");

    assert_eq!(report.ingestion.resent, 1);
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_failed_step_fails_the_invocation_so_the_error_alarm_sees_it(pool: PgPool) {
    let env = env(pool.clone()).await;
    let event: EventBridgeEvent<serde_json::Value> = serde_json::from_str(SCHEDULED).unwrap();
    // The database goes away (the function's own pool).
    env.deps.pool.close().await;

    let result = sweeper::handler(&env.deps, LambdaEvent::new(event, Context::default())).await;

    let error = result
        .expect_err("a sweep that could not look is an error")
        .to_string();
    assert!(error.contains("ingestion"), "{error}");
}

// ---- DATEV task polling and notices under partial failure -------------------------------

/// Review finding: a poll that runs out of the invocation's time drops the `failed_exports` it had
/// already collected; the audits it flipped to `failed` are never reported again.
#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_task_failed_by_a_poll_that_then_runs_out_of_time_is_still_notified(pool: PgPool) {
    let output = setup(pool.clone()).await;
    let env = env(pool).await;
    let deps = output_sweeper(&env, &output);
    let failed = submitted_audit(&output, "task-invalid").await;
    let other = output.another_approved_document().await;
    let slow = submitted_audit_of(&output, other, "task-slow").await;
    // Polled oldest first: the failed task, then the slow one.
    age(
        &env.pool,
        "ap_datev_export_audit",
        "updated_at",
        failed,
        120,
    )
    .await;
    age(&env.pool, "ap_datev_export_audit", "updated_at", slow, 60).await;
    Mock::given(method("GET"))
        .and(path("/accounting/asyncTask/task-invalid"))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(json!({ "meta": {}, "data": {
                "status": "FAILED",
                "information": [{ "message": "Kostenstelle fehlt", "type": "error" }]
            }})),
        )
        .mount(&output.maesn)
        .await;
    Mock::given(method("GET"))
        .and(path("/accounting/asyncTask/task-slow"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(
                    json!({ "meta": {}, "data": { "status": "IN_PROGRESS", "information": [] } }),
                )
                .set_delay(Duration::from_secs(8)),
        )
        .mount(&output.maesn)
        .await;

    let report = sweeper::sweep(&deps, Some(Duration::from_secs(4)))
        .await
        .unwrap();
    assert!(
        report.errors.iter().any(|e| e.starts_with("tasks")),
        "{:?}",
        report.errors
    );
    assert_eq!(
        audit(&env.pool, failed).await.0,
        "failed",
        "flipped in this run"
    );
    let later = sweeper::sweep(&deps, None).await.unwrap();
    assert_eq!(later.tasks.failed, 0, "never flipped (or reported) again");

    assert_eq!(
        slack_bodies(&env.slack).await.len(),
        1,
        "the DATEV failure this sweep recorded must reach the admins once"
    );
}

/// Review finding: tasks whose poll errors keep their `updated_at`, stay at the head of the
/// `ORDER BY updated_at LIMIT n` poll, and starve every other open task.
#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn tasks_that_cannot_be_read_do_not_starve_the_others(pool: PgPool) {
    let output = setup(pool.clone()).await;
    let env = env(pool).await;
    let mut deps = output_sweeper(&env, &output);
    deps.config.task_poll_limit = 2;
    for task in ["task-busy-1", "task-busy-2"] {
        let document = output.another_approved_document().await;
        let id = submitted_audit_of(&output, document, task).await;
        age(&env.pool, "ap_datev_export_audit", "updated_at", id, 3600).await;
        Mock::given(method("GET"))
            .and(path(format!("/accounting/asyncTask/{task}")))
            .respond_with(ResponseTemplate::new(503))
            .mount(&output.maesn)
            .await;
    }
    let done = submitted_audit(&output, "task-done").await;
    Mock::given(method("GET"))
        .and(path("/accounting/asyncTask/task-done"))
        .respond_with(ResponseTemplate::new(200).set_body_json(
            json!({ "meta": {}, "data": { "status": "SUCCESS", "information": [] } }),
        ))
        .mount(&output.maesn)
        .await;

    for _ in 0..5 {
        sweep(&deps).await;
    }

    assert_eq!(
        audit(&env.pool, done).await.0,
        "succeeded",
        "five runs later the readable task was never polled"
    );
}

/// Review finding: one 404 from Maesn (a routing hiccup, a deploy) ends the audit for good as
/// non-retryable "in doubt", which also blocks every re-export of the document.
#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_404_for_a_young_task_does_not_end_it_for_good(pool: PgPool) {
    let output = setup(pool.clone()).await;
    let env = env(pool).await;
    let deps = output_sweeper(&env, &output);
    let id = submitted_audit(&output, "task-blip").await;
    Mock::given(method("GET"))
        .and(path("/accounting/asyncTask/task-blip"))
        .respond_with(ResponseTemplate::new(404).set_body_string("<html>Not Found</html>"))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&output.maesn)
        .await;
    Mock::given(method("GET"))
        .and(path("/accounting/asyncTask/task-blip"))
        .respond_with(ResponseTemplate::new(200).set_body_json(
            json!({ "meta": {}, "data": { "status": "SUCCESS", "information": [] } }),
        ))
        .with_priority(2)
        .mount(&output.maesn)
        .await;

    sweep(&deps).await;
    sweep(&deps).await;

    assert_eq!(audit(&env.pool, id).await.0, "succeeded");
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_failed_output_job_whose_notice_never_reached_anyone_is_told_by_a_later_sweep(
    pool: PgPool,
) {
    let output = setup(pool.clone()).await;
    let env = env(pool).await;
    let deps = output_sweeper(&env, &output);
    let job = output.insert_job(output.tenant.document_id, "failed").await;
    sqlx::query(
        "UPDATE document_output_job SET last_error = 'DATEV export in doubt: check DATEV', \
         completed_at = now() WHERE id = $1",
    )
    .bind(job)
    .execute(&env.pool)
    .await
    .unwrap();

    assert_eq!(
        sweep(&deps).await.notices.told,
        0,
        "the worker may still tell it"
    );
    age(&env.pool, "document_output_job", "completed_at", job, 400).await;
    assert_eq!(sweep(&deps).await.notices.told, 1);
    assert_eq!(sweep(&deps).await.notices.told, 0, "told once");

    let notices = slack_bodies(&env.slack).await;
    assert_eq!(notices.len(), 1);
    assert!(
        notices[0].to_string().contains("check DATEV"),
        "{}",
        notices[0]
    );
}

// ---- a sweep killed at any point ----------------------------------------------------------

/// Moves every time of the ingestion `id` `seconds` into the past: time passes for it.
async fn time_passes(pool: &PgPool, id: Uuid, seconds: u64) {
    sqlx::query(
        r#"
        UPDATE ingestion
           SET updated_at = updated_at - make_interval(secs => $2),
               swept_at = swept_at - make_interval(secs => $2),
               sweep_claimed_at = sweep_claimed_at - make_interval(secs => $2)
         WHERE id = $1
        "#,
    )
    .bind(id)
    .bind(seconds as f64)
    .execute(pool)
    .await
    .unwrap();
}

fn sweeper_with_sqs(env: &Env, sqs: aws_sdk_sqs::Client) -> Deps {
    Deps {
        pool: env.pool.clone(),
        sqs,
        queues: env.deps.queues.clone(),
        maesn: None,
        notifier: slack_notifier(&env.slack),
        config: config(),
    }
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_sweep_killed_between_its_take_and_its_send_loses_nothing(pool: PgPool) {
    // Arrange: a stuck ingestion; the killed sweep's SQS answers nothing (gated for ever).
    let env = env(pool).await;
    let id = stuck_ingestions(&env, 1).await[0];
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let silent = aws_sdk_sqs::Client::from_conf(
        aws_sdk_sqs::config::Builder::from(&aws().await)
            .endpoint_url(format!("http://{}", listener.local_addr().unwrap()))
            .build(),
    );
    let killed = sweeper_with_sqs(&env, silent);

    // Act: the sweep is killed (its future dropped) while its send is on the wire.
    let mut run = Box::pin(sweeper::sweep(&killed, None));
    let _connection = tokio::select! {
        report = &mut run => panic!("the send cannot finish: {report:?}"),
        accepted = tokio::time::timeout(Duration::from_secs(30), listener.accept()) => {
            accepted.expect("the sweep sends its take").unwrap()
        }
    };
    drop(run);

    // Assert: nothing was sent and no re-send is used up; once the killed sweep's claim
    // has lapsed (well before SWEEP_UNDELIVERED_AFTER_SECONDS), the next sweep sends it.
    assert!(drain(&env.sqs, &env.ingestion.url).await.is_empty());
    assert_eq!(
        env.ingestion_status(id).await.1,
        0,
        "a re-send was counted that was never sent"
    );
    time_passes(&env.pool, id, sweeper::SWEEP_CLAIM_SECONDS + 60).await;
    assert_eq!(sweep(&env.deps).await.ingestion.resent, 1);
    assert_eq!(
        drain(&env.sqs, &env.ingestion.url).await,
        vec![id.to_string()]
    );
    assert_eq!(env.ingestion_status(id).await.1, 1, "the one sent, counted");
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_sweep_killed_between_its_send_and_its_bookkeeping_loses_nothing(pool: PgPool) {
    // Arrange: the bookkeeping after the send cannot be written (the sweep dies there).
    let env = env(pool).await;
    let id = stuck_ingestions(&env, 1).await[0];
    sqlx::raw_sql(
        r#"
        CREATE FUNCTION refuse_sweep_count() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'the sweep died here'; END $$;
        CREATE TRIGGER refuse_sweep_count BEFORE UPDATE ON ingestion FOR EACH ROW
          WHEN (NEW.sweep_count IS DISTINCT FROM OLD.sweep_count)
          EXECUTE FUNCTION refuse_sweep_count();
        "#,
    )
    .execute(&env.pool)
    .await
    .unwrap();

    // Act
    let report = sweeper::sweep(&env.deps, None).await.unwrap();

    // Assert: the message is on its way and no re-send is used up.
    assert_eq!(report.errors.len(), 1, "{:?}", report.errors);
    assert_eq!(
        drain(&env.sqs, &env.ingestion.url).await,
        vec![id.to_string()],
        "the message was sent before anything was counted"
    );
    assert_eq!(env.ingestion_status(id).await.1, 0);
    // Should that message be lost too, the row is re-sent once the claim lapses.
    sqlx::raw_sql("DROP TRIGGER refuse_sweep_count ON ingestion")
        .execute(&env.pool)
        .await
        .unwrap();
    time_passes(&env.pool, id, sweeper::SWEEP_CLAIM_SECONDS + 60).await;
    assert_eq!(sweep(&env.deps).await.ingestion.resent, 1);
    assert_eq!(env.ingestion_status(id).await.1, 1);
}

// ---- give-ups told once, across outages ----------------------------------------------------

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_give_up_during_a_slack_outage_is_told_once_slack_is_back(pool: PgPool) {
    // Arrange: an ingestion and a matching re-sent the maximum times and stuck again;
    // Slack is down when the sweeper gives up on them.
    let env = env(pool).await;
    let (ingestion_id, _) = env.ingestion_row().await;
    let tenant = matching_support::tenant(&env.pool, "Acme AG").await;
    let document = matching_support::document(
        &env.pool,
        tenant,
        DocumentType::Invoice,
        invoice("RE-1", "PO-1", "LS-1", "2024-03-05", 119.0),
    )
    .await;
    for (table, count, swept) in [
        ("ingestion", "sweep_count", "swept_at"),
        ("document", "matching_sweep_count", "matching_swept_at"),
    ] {
        sqlx::query(&format!(
            "UPDATE {table} SET {count} = 3, {swept} = now() - interval '4 hours', \
             updated_at = now() - interval '3 hours'"
        ))
        .execute(&env.pool)
        .await
        .unwrap();
    }
    let down = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(503))
        .mount(&down)
        .await;
    let mut outage = sweeper_with_sqs(&env, env.deps.sqs.clone());
    outage.notifier = slack_notifier(&down);
    let notices_become_due = || async {
        // Later: the claims of the undelivered notices are old.
        sqlx::query(
            "UPDATE ingestion SET notice_claimed_at = notice_claimed_at - interval '1 hour'",
        )
        .execute(&env.pool)
        .await
        .unwrap();
        sqlx::query(
            "UPDATE document SET matching_notice_claimed_at = matching_notice_claimed_at - interval '1 hour'",
        )
        .execute(&env.pool)
        .await
        .unwrap();
    };

    // Act: give up during the outage; later sweeps run with Slack back.
    let report = sweeper::sweep(&outage, None).await.unwrap();
    assert_eq!(
        (report.ingestion.given_up, report.matching.given_up),
        (1, 1)
    );
    assert!(!down.received_requests().await.unwrap().is_empty());
    assert!(slack_bodies(&env.slack).await.is_empty());
    notices_become_due().await;
    let back = sweep(&env.deps).await;
    notices_become_due().await;
    let again = sweep(&env.deps).await;

    // Assert: each give-up told once, once a channel answers.
    assert_eq!(back.notices.told, 2, "{:?}", back.notices);
    assert_eq!(again.notices.told, 0, "{:?}", again.notices);
    let told = slack_bodies(&env.slack).await;
    assert_eq!(told.len(), 2, "{told:?}");
    assert_eq!(env.ingestion_status(ingestion_id).await.0, "failed");
    let marked: (bool, bool) = sqlx::query_as(
        r#"SELECT (SELECT admins_told_at IS NOT NULL FROM ingestion WHERE id = $1),
                  (SELECT matching_notified_at IS NOT NULL FROM document WHERE id = $2)"#,
    )
    .bind(ingestion_id)
    .bind(document)
    .fetch_one(&env.pool)
    .await
    .unwrap();
    assert_eq!(marked, (true, true));
}

// ---- every end state has an owner and a way out --------------------------------------------

/// A job the sweeper gives up on while its export is `requested` (the worker died
/// during the Maesn call every time) used to leave that audit `requested` for ever — open,
/// polled by nobody, resolvable by nobody.
#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_given_up_output_job_ends_its_requested_audit_failed_in_doubt_as_recovery_does(
    pool: PgPool,
) {
    let output = setup(pool.clone()).await;
    let env = env(pool).await;
    let deps = output_sweeper(&env, &output);
    output.approve(output.tenant.document_id).await;
    let job = output
        .insert_job(output.tenant.document_id, "running")
        .await;
    let requested: Uuid = sqlx::query_scalar(
        r#"INSERT INTO ap_datev_export_audit (tenant_id, document_id, dispatch_job_id, status)
           VALUES ($1, $2, $3, 'requested') RETURNING id"#,
    )
    .bind(output.tenant.tenant_id)
    .bind(output.tenant.document_id)
    .bind(job)
    .fetch_one(&env.pool)
    .await
    .unwrap();
    sqlx::query(
        "UPDATE document_output_job SET sweep_count = 3, swept_at = now() - interval '4 hours', \
         updated_at = now() - interval '3 hours' WHERE id = $1",
    )
    .bind(job)
    .execute(&env.pool)
    .await
    .unwrap();

    let report = sweep(&deps).await;

    assert_eq!(report.output.given_up, 1);
    let (status, retryable, error) = audit(&env.pool, requested).await;
    assert_eq!(
        (status.as_str(), retryable),
        ("failed", false),
        "ended as recovery ends it: failed, in doubt, blocking a re-export"
    );
    let error = error.unwrap();
    assert!(
        error.contains("in doubt") && error.contains("check DATEV"),
        "{error}"
    );
    assert!(
        error.contains(&format!("docflow export resolve {requested}")),
        "the way out is named: {error}"
    );
    let mut conn = env.pool.acquire().await.unwrap();
    let eligible = docflow::output::check_eligibility(&mut conn, output.tenant.document_id, None)
        .await
        .unwrap();
    assert!(
        eligible.is_err(),
        "no re-export before a person checked DATEV"
    );
    assert_eq!(
        slack_bodies(&env.slack).await.len(),
        1,
        "one notice: the job's give-up names the audit"
    );
    assert!(!sweep(&deps).await.found_anything());
    assert_eq!(slack_bodies(&env.slack).await.len(), 1, "told once");
}

/// Maesn's task poll answering `answer` for `task` (with the right keys or not: the
/// stand-in does not check them here).
async fn task_answers(output: &OutputEnv, task: &str, answer: ResponseTemplate) {
    Mock::given(method("GET"))
        .and(path(format!("/accounting/asyncTask/{task}")))
        .respond_with(answer)
        .mount(&output.maesn)
        .await;
}

fn task_status(status: &str) -> ResponseTemplate {
    ResponseTemplate::new(200)
        .set_body_json(json!({ "meta": {}, "data": { "status": status, "information": [] } }))
}

/// A task that never ends — still `IN_PROGRESS`, persistently 401/403/5xx, or a
/// status docflow does not know — was polled for ever. After the maximum task age it
/// ends `failed`, not retryable, "check DATEV", with exactly one notice; a younger one
/// with the same answers stays open.
#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_task_that_never_ends_is_failed_check_datev_after_the_maximum_age_with_one_notice(
    pool: PgPool,
) {
    let output = setup(pool.clone()).await;
    let env = env(pool).await;
    let mut deps = output_sweeper(&env, &output);
    deps.config.max_task_age = Duration::from_secs(48 * 3600);
    let answers = [
        ("task-open", task_status("OPEN")),
        ("task-in-progress", task_status("IN_PROGRESS")),
        (
            "task-unauthorized",
            ResponseTemplate::new(401)
                .set_body_json(json!({ "statusCode": 401, "message": "Unauthorized" })),
        ),
        (
            "task-forbidden",
            ResponseTemplate::new(403)
                .set_body_json(json!({ "statusCode": 403, "message": "Forbidden" })),
        ),
        ("task-5xx", ResponseTemplate::new(500)),
        // Maesn's own docs show free text where the status enum should be.
        ("task-free-text", task_status("Task has been processed.")),
    ];
    let mut old = Vec::new();
    for (task, answer) in answers.iter().cloned() {
        let document = output.another_approved_document().await;
        let id = submitted_audit_of(&output, document, task).await;
        age(
            &env.pool,
            "ap_datev_export_audit",
            "created_at",
            id,
            48 * 3600 + 60,
        )
        .await;
        task_answers(&output, task, answer).await;
        old.push(id);
    }
    // Young tasks answering the same: left open, polled again.
    let young_free_text = submitted_audit(&output, "task-young-free-text").await;
    age(
        &env.pool,
        "ap_datev_export_audit",
        "created_at",
        young_free_text,
        3600,
    )
    .await;
    task_answers(
        &output,
        "task-young-free-text",
        task_status("Task has been processed."),
    )
    .await;

    let report = sweep(&deps).await;

    assert_eq!(
        (report.tasks.failed, report.tasks.expired),
        (old.len(), old.len()),
        "{:?}",
        report.tasks
    );
    for id in &old {
        let (status, retryable, error) = audit(&env.pool, *id).await;
        assert_eq!((status.as_str(), retryable), ("failed", false), "{id}");
        let error = error.unwrap();
        assert!(
            error.contains("did not end within 48 h") && error.contains("check DATEV"),
            "{error}"
        );
    }
    assert_eq!(audit(&env.pool, young_free_text).await.0, "submitted");
    let oldest = report.tasks.oldest_open_seconds.unwrap();
    assert!(
        (3600..48 * 3600).contains(&oldest),
        "the young task is now the oldest open one: {oldest}"
    );
    let set = sweeper::metric_set(&report);
    assert_eq!(
        set.values(
            None,
            docflow::telemetry::metrics::sweeper::OLDEST_OPEN_TASK_AGE
        ),
        vec![oldest as f64],
        "the alarm's metric"
    );
    let notices = slack_bodies(&env.slack).await;
    assert_eq!(notices.len(), old.len(), "one notice per task given up");
    assert!(
        notices
            .iter()
            .all(|n| n.to_string().contains("check DATEV"))
    );

    let again = sweep(&deps).await;
    assert_eq!((again.tasks.polled, again.tasks.failed), (1, 0));
    assert_eq!(slack_bodies(&env.slack).await.len(), old.len(), "told once");
}

/// The poll joined the DATEV integration with an inner join, so the open tasks of
/// a tenant that disconnected DATEV vanished from it: never polled, never ended, never
/// told.
#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn the_tasks_of_a_tenant_that_disconnected_datev_are_not_hidden_and_end_after_the_maximum_age(
    pool: PgPool,
) {
    let output = setup(pool.clone()).await;
    let env = env(pool).await;
    let deps = output_sweeper(&env, &output);
    let young = submitted_audit(&output, "task-young").await;
    let document = output.another_approved_document().await;
    let old = submitted_audit_of(&output, document, "task-old").await;
    age(
        &env.pool,
        "ap_datev_export_audit",
        "created_at",
        old,
        48 * 3600 + 60,
    )
    .await;
    sqlx::query("DELETE FROM tenant_datev_integration WHERE tenant_id = $1")
        .bind(output.tenant.tenant_id)
        .execute(&env.pool)
        .await
        .unwrap();

    let report = sweep(&deps).await;

    assert_eq!(
        (
            report.tasks.polled,
            report.tasks.errors,
            report.tasks.failed
        ),
        (2, 1, 1),
        "{:?}",
        report.tasks
    );
    let (status, retryable, error) = audit(&env.pool, old).await;
    assert_eq!((status.as_str(), retryable), ("failed", false));
    let error = error.unwrap();
    assert!(
        error.contains("no DATEV integration") && error.contains("check DATEV"),
        "{error}"
    );
    assert_eq!(audit(&env.pool, young).await.0, "submitted");
    assert_eq!(slack_bodies(&env.slack).await.len(), 1);
    assert!(
        output
            .maesn_requests("GET", "/accounting/asyncTask/task-old")
            .await
            .is_empty(),
        "nothing to ask Maesn without the tenant's company"
    );
}

/// `PARTIAL_SUCCESS` was recorded as a plain success and DATEV's `information`
/// dropped. It is kept on the audit, and the admins are told once.
#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_partial_success_keeps_datevs_remarks_on_the_audit_and_tells_the_admins_once(
    pool: PgPool,
) {
    let output = setup(pool.clone()).await;
    let env = env(pool).await;
    let deps = output_sweeper(&env, &output);
    let id = submitted_audit(&output, "task-partial").await;
    task_answers(
        &output,
        "task-partial",
        ResponseTemplate::new(200).set_body_json(json!({ "meta": {}, "data": {
            "status": "PARTIAL_SUCCESS",
            "information": [
                { "type": "WARNING", "message": "Kostenstelle 100 nicht übernommen" },
                { "type": "WARNING", "message": "Beleglink fehlt" }
            ]
        }})),
    )
    .await;

    let report = sweep(&deps).await;

    assert_eq!(
        (
            report.tasks.succeeded,
            report.tasks.partial,
            report.tasks.failed
        ),
        (1, 1, 0)
    );
    let (status, _, _) = audit(&env.pool, id).await;
    assert_eq!(status, "succeeded");
    let information: serde_json::Value =
        sqlx::query_scalar("SELECT information FROM ap_datev_export_audit WHERE id = $1")
            .bind(id)
            .fetch_one(&env.pool)
            .await
            .unwrap();
    assert_eq!(
        information,
        json!(["Kostenstelle 100 nicht übernommen", "Beleglink fehlt"])
    );
    let notices = slack_bodies(&env.slack).await;
    assert_eq!(notices.len(), 1);
    let text = notices[0].to_string();
    assert!(
        text.contains("partially succeeded") && text.contains("Kostenstelle 100 nicht übernommen"),
        "{text}"
    );
    sweep(&deps).await;
    assert_eq!(slack_bodies(&env.slack).await.len(), 1, "told once");
}
