//! The enqueue side of document output (seed 002) against Postgres and the local SQS:
//! final approval in the caller's transaction, two enqueues racing on the partial
//! unique index, manual re-export (also of documents exported before output jobs),
//! "already in flight", the guarded failure update after a send error, and the queue's
//! definition.

use std::time::Duration;

use docflow::ids::DocumentId;
use docflow::output::worker;
use docflow::output::{Dispatch, Dispatcher, EnqueueError, Ineligible, JobStatus, Trigger};
use docflow_tests::output::setup;
use docflow_tests::visible_bodies;
use sqlx::PgPool;
use uuid::Uuid;
use wiremock::{Mock, ResponseTemplate, matchers::any};

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn final_approval_inserts_the_job_in_the_approval_transaction_and_sends_it_after_commit(
    pool: PgPool,
) {
    let env = setup(pool).await;
    let doc = env.tenant.document_id;

    let mut tx = env.pool.begin().await.unwrap();
    sqlx::query("UPDATE ap_approval SET status = 'approved', approver_id = $2, decided_at = now() WHERE document_id = $1")
        .bind(doc)
        .bind(env.tenant.approver_id)
        .execute(&mut *tx)
        .await
        .unwrap();
    let job =
        docflow::output::on_final_approval(&mut tx, DocumentId(doc), Some(env.tenant.approver_id))
            .await
            .unwrap();
    let visible_before_commit: i64 =
        sqlx::query_scalar("SELECT count(*) FROM document_output_job WHERE id = $1")
            .bind(job.id)
            .fetch_one(&env.pool)
            .await
            .unwrap();
    tx.commit().await.unwrap();
    let dispatch = env.dispatcher.dispatch(&env.pool, &job).await.unwrap();

    assert_eq!(
        visible_before_commit, 0,
        "the job belongs to the approval transaction"
    );
    assert!(matches!(dispatch, Dispatch::Sent { .. }), "{dispatch:?}");
    assert_eq!(job.status, JobStatus::Pending);
    assert_eq!(job.trigger, Trigger::ApprovalCompleted);
    assert_eq!(job.document_domain, docflow::output::Domain::Ap);
    assert_eq!(job.document_version, Some(3));
    assert_eq!(job.requested_by, Some(env.tenant.approver_id));
    assert_eq!(job.tenant_id, env.tenant.tenant_id);
    assert_eq!(
        visible_bodies(&env.sqs, &env.queue.url).await,
        vec![job.id.to_string()]
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_rolled_back_approval_leaves_no_job_and_an_unapproved_document_gets_none(pool: PgPool) {
    let env = setup(pool).await;
    let doc = DocumentId(env.tenant.document_id);

    let mut tx = env.pool.begin().await.unwrap();
    let refused = docflow::output::on_final_approval(&mut tx, doc, None).await;
    sqlx::query("UPDATE ap_approval SET status = 'approved' WHERE document_id = $1")
        .bind(doc)
        .execute(&mut *tx)
        .await
        .unwrap();
    docflow::output::on_final_approval(&mut tx, doc, None)
        .await
        .unwrap();
    tx.rollback().await.unwrap();

    assert!(
        matches!(
            refused,
            Err(EnqueueError::Ineligible(Ineligible::NotApproved))
        ),
        "{refused:?}"
    );
    let jobs: i64 = sqlx::query_scalar("SELECT count(*) FROM document_output_job")
        .fetch_one(&env.pool)
        .await
        .unwrap();
    assert_eq!(jobs, 0);
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn manual_export_creates_a_job_and_sends_it_without_calling_datev(pool: PgPool) {
    let env = setup(pool).await;
    env.approve(env.tenant.document_id).await;
    Mock::given(any())
        .respond_with(ResponseTemplate::new(500))
        .expect(0)
        .mount(&env.maesn)
        .await;

    let export = docflow::output::request_manual_export(
        &env.pool,
        &env.dispatcher,
        DocumentId(env.tenant.document_id),
        env.tenant.approver_id,
    )
    .await
    .unwrap();

    assert!(matches!(export.dispatch, Dispatch::Sent { .. }));
    assert_eq!(export.job.trigger, Trigger::Manual);
    assert_eq!(export.job.status, JobStatus::Pending);
    assert_eq!(export.job.requested_by, Some(env.tenant.approver_id));
    assert_eq!(
        visible_bodies(&env.sqs, &env.queue.url).await,
        vec![export.job.id.to_string()]
    );
    assert!(
        env.maesn.received_requests().await.unwrap().is_empty(),
        "no DATEV call from the app side"
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_second_manual_export_while_one_is_pending_or_running_is_already_in_flight_and_sends_nothing(
    pool: PgPool,
) {
    let env = setup(pool).await;
    let doc = DocumentId(env.tenant.document_id);
    env.approve(doc.0).await;
    let first = docflow::output::request_manual_export(
        &env.pool,
        &env.dispatcher,
        doc,
        env.tenant.approver_id,
    )
    .await
    .unwrap();

    let while_pending = docflow::output::request_manual_export(
        &env.pool,
        &env.dispatcher,
        doc,
        env.tenant.approver_id,
    )
    .await;
    worker::claim(&env.pool, first.job.id, std::time::Duration::from_secs(600))
        .await
        .unwrap()
        .expect("claimed");
    let while_running = docflow::output::request_manual_export(
        &env.pool,
        &env.dispatcher,
        doc,
        env.tenant.approver_id,
    )
    .await;

    for second in [while_pending, while_running] {
        match second {
            Err(EnqueueError::AlreadyInFlight { job_id, .. }) => assert_eq!(job_id, first.job.id),
            other => panic!("expected AlreadyInFlight, got {other:?}"),
        }
    }
    let jobs: i64 = sqlx::query_scalar("SELECT count(*) FROM document_output_job")
        .fetch_one(&env.pool)
        .await
        .unwrap();
    assert_eq!(jobs, 1);
    assert_eq!(
        visible_bodies(&env.sqs, &env.queue.url).await,
        vec![first.job.id.to_string()],
        "only the first request was sent"
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_manual_export_while_a_running_job_is_mid_export_is_already_in_flight(pool: PgPool) {
    let env = setup(pool).await;
    env.approve(env.tenant.document_id).await;
    let first = docflow::output::request_manual_export(
        &env.pool,
        &env.dispatcher,
        DocumentId(env.tenant.document_id),
        env.tenant.approver_id,
    )
    .await
    .unwrap();
    // The worker claimed it and committed its `requested` audit before calling Maesn.
    docflow::output::worker::claim(&env.pool, first.job.id, std::time::Duration::from_secs(600))
        .await
        .unwrap()
        .unwrap();
    sqlx::query(
        r#"INSERT INTO ap_datev_export_audit (tenant_id, document_id, dispatch_job_id, status)
           VALUES ($1, $2, $3, 'requested')"#,
    )
    .bind(env.tenant.tenant_id)
    .bind(env.tenant.document_id)
    .bind(first.job.id)
    .execute(&env.pool)
    .await
    .unwrap();

    let second = docflow::output::request_manual_export(
        &env.pool,
        &env.dispatcher,
        DocumentId(env.tenant.document_id),
        env.tenant.approver_id,
    )
    .await;

    assert!(
        matches!(second, Err(EnqueueError::AlreadyInFlight { .. })),
        "in flight, not 'already exported': {second:?}"
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_manual_export_of_an_ineligible_document_or_by_an_outsider_creates_nothing(pool: PgPool) {
    let env = setup(pool).await;
    let doc = DocumentId(env.tenant.document_id);
    let outsider_org: Uuid =
        sqlx::query_scalar("INSERT INTO organization (name) VALUES ('Other') RETURNING id")
            .fetch_one(&env.pool)
            .await
            .unwrap();
    let outsider: Uuid = sqlx::query_scalar(
        "INSERT INTO identity (organization_id, email) VALUES ($1, $2) RETURNING id",
    )
    .bind(outsider_org)
    .bind(format!("{}@other.test", Uuid::new_v4()))
    .fetch_one(&env.pool)
    .await
    .unwrap();

    let unapproved = docflow::output::request_manual_export(
        &env.pool,
        &env.dispatcher,
        doc,
        env.tenant.approver_id,
    )
    .await;
    env.approve(doc.0).await;
    let by_outsider =
        docflow::output::request_manual_export(&env.pool, &env.dispatcher, doc, outsider).await;
    sqlx::query("UPDATE tenant_datev_integration SET status = 'inactive'")
        .execute(&env.pool)
        .await
        .unwrap();
    let no_integration = docflow::output::request_manual_export(
        &env.pool,
        &env.dispatcher,
        doc,
        env.tenant.approver_id,
    )
    .await;

    assert!(
        matches!(
            unapproved,
            Err(EnqueueError::Ineligible(Ineligible::NotApproved))
        ),
        "{unapproved:?}"
    );
    assert!(
        matches!(by_outsider, Err(EnqueueError::NotAllowed { .. })),
        "{by_outsider:?}"
    );
    assert!(
        matches!(
            no_integration,
            Err(EnqueueError::Ineligible(Ineligible::NoActiveIntegration))
        ),
        "{no_integration:?}"
    );
    let jobs: i64 = sqlx::query_scalar("SELECT count(*) FROM document_output_job")
        .fetch_one(&env.pool)
        .await
        .unwrap();
    assert_eq!(jobs, 0);
    assert!(visible_bodies(&env.sqs, &env.queue.url).await.is_empty());
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn two_concurrent_enqueues_make_one_job_and_the_other_is_already_in_flight(pool: PgPool) {
    let env = setup(pool).await;
    let doc = DocumentId(env.tenant.document_id);
    env.approve(doc.0).await;
    let mut first = env.pool.begin().await.unwrap();
    let mut second = env.pool.begin().await.unwrap();
    let job = docflow::output::on_final_approval(&mut first, doc, None)
        .await
        .unwrap();

    // The second insert waits on the first's uncommitted index entry; commit the first
    // once the second is seen waiting on that lock.
    let (racing, ()) = tokio::join!(
        docflow::output::on_final_approval(&mut second, doc, Some(env.tenant.approver_id)),
        async {
            tokio::time::timeout(Duration::from_secs(60), async {
                loop {
                    let waiting: i64 = sqlx::query_scalar(
                        r#"SELECT count(*) FROM pg_stat_activity
                            WHERE datname = current_database() AND wait_event_type = 'Lock'"#,
                    )
                    .fetch_one(&env.pool)
                    .await
                    .unwrap();
                    if waiting > 0 {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            })
            .await
            .expect("the second enqueue did not wait on the first's lock within 60 s");
            first.commit().await.unwrap();
        }
    );
    let committed = second.commit().await;

    match racing {
        Err(EnqueueError::AlreadyInFlight { job_id, .. }) => assert_eq!(job_id, job.id),
        other => panic!("expected AlreadyInFlight, got {other:?}"),
    }
    assert!(
        committed.is_ok(),
        "ON CONFLICT kept the second transaction usable"
    );
    let jobs: i64 = sqlx::query_scalar("SELECT count(*) FROM document_output_job")
        .fetch_one(&env.pool)
        .await
        .unwrap();
    assert_eq!(jobs, 1);
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_manual_export_of_a_document_exported_before_output_jobs_existed_is_refused(
    pool: PgPool,
) {
    let env = setup(pool).await;
    let exported = env.tenant.document_id;
    env.approve(exported).await;
    let rejected = env.another_approved_document().await;
    // Exports the app made itself: no dispatch_job_id.
    for (doc, status, retryable) in [(exported, "succeeded", true), (rejected, "failed", false)] {
        sqlx::query(
            r#"INSERT INTO ap_datev_export_audit (tenant_id, document_id, status, task_id, retryable)
               VALUES ($1, $2, $3, 'task-from-the-app', $4)"#,
        )
        .bind(env.tenant.tenant_id)
        .bind(doc)
        .bind(status)
        .bind(retryable)
        .execute(&env.pool)
        .await
        .unwrap();
    }

    for doc in [exported, rejected] {
        let again = docflow::output::request_manual_export(
            &env.pool,
            &env.dispatcher,
            DocumentId(doc),
            env.tenant.approver_id,
        )
        .await;
        assert!(
            matches!(
                again,
                Err(EnqueueError::Ineligible(Ineligible::AlreadyExported { .. }))
            ),
            "{again:?}"
        );
    }
    let jobs: i64 = sqlx::query_scalar("SELECT count(*) FROM document_output_job")
        .fetch_one(&env.pool)
        .await
        .unwrap();
    assert_eq!(jobs, 0, "no job that could only fail");
    assert!(visible_bodies(&env.sqs, &env.queue.url).await.is_empty());
}

/// A dispatcher whose queue does not exist: every send fails.
fn broken_dispatcher(env: &docflow_tests::output::OutputEnv) -> Dispatcher {
    Dispatcher::new(env.sqs.clone(), format!("{}-gone", env.queue.url))
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_failed_send_marks_the_pending_job_failed_with_the_error(pool: PgPool) {
    let env = setup(pool).await;
    let doc = DocumentId(env.tenant.document_id);
    env.approve(doc.0).await;

    let export = docflow::output::request_manual_export(
        &env.pool,
        &broken_dispatcher(&env),
        doc,
        env.tenant.approver_id,
    )
    .await
    .unwrap();

    let Dispatch::SendFailed { error, current } = export.dispatch else {
        panic!("the send must fail");
    };
    assert_eq!(current.status, JobStatus::Failed);
    assert_eq!(current.last_error.as_deref(), Some(error.as_str()));
    assert!(error.contains("document-output queue"), "{error}");
    let row = env.job(export.job.id.0).await;
    assert_eq!(row.status, "failed");
    assert!(row.completed_at.is_some());
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_failed_send_never_overwrites_a_running_or_dispatched_job(pool: PgPool) {
    let env = setup(pool).await;
    let doc = env.tenant.document_id;
    env.approve(doc).await;
    let other = env.another_approved_document().await;
    let running = env.insert_job(doc, "pending").await;
    let job = worker::claim(
        &env.pool,
        running.into(),
        std::time::Duration::from_secs(600),
    )
    .await
    .unwrap()
    .expect("a worker claimed it before the send error surfaced")
    .job;
    let dispatched_id = env.insert_job(other, "dispatched").await;
    let dispatched = worker::load_job(&env.pool, dispatched_id.into())
        .await
        .unwrap()
        .unwrap();

    let for_running = broken_dispatcher(&env)
        .dispatch(&env.pool, &job)
        .await
        .unwrap();
    let for_dispatched = broken_dispatcher(&env)
        .dispatch(&env.pool, &dispatched)
        .await
        .unwrap();

    for (dispatch, expected) in [
        (for_running, JobStatus::Running),
        (for_dispatched, JobStatus::Dispatched),
    ] {
        let Dispatch::SendFailed { current, .. } = dispatch else {
            panic!("the send must fail");
        };
        assert_eq!(
            current.status, expected,
            "current state returned, not overwritten"
        );
        assert_eq!(current.last_error, None);
    }
    assert_eq!(env.job(running).await.status, "running");
    assert_eq!(env.job(dispatched_id).await.status, "dispatched");
}

#[tokio::test]
async fn the_local_stack_defines_the_document_output_queue_as_the_spec_says() {
    use aws_sdk_sqs::types::QueueAttributeName as A;
    let config = docflow_tests::aws().await;
    let stack = docflow_dev::local::provision(&config, 3, &serde_json::json!({}))
        .await
        .unwrap();
    let queue = &stack.queues["docflow-document-output"];
    let sqs = aws_sdk_sqs::Client::new(&config);

    let attrs = sqs
        .get_queue_attributes()
        .queue_url(&queue.url)
        .attribute_names(A::All)
        .send()
        .await
        .unwrap()
        .attributes
        .unwrap();

    assert!(
        queue.url.ends_with("/docflow-document-output"),
        "{}",
        queue.url
    );
    assert!(
        queue.dlq_arn.ends_with(":docflow-document-output-dlq"),
        "{}",
        queue.dlq_arn
    );
    // Seed 002's local posture was 60 s, "unless production infrastructure requires"
    // otherwise: it does. Lambda refuses an SQS event source whose queue visibility is
    // below the function timeout (120 s), and infra/ sets 6 x the timeout; the local
    // queue matches what is deployed, so a run of up to the timeout is never delivered
    // twice and the 60 s heartbeat never races the queue's own timeout.
    assert_eq!(attrs[&A::VisibilityTimeout], "720");
    assert_eq!(
        attrs[&A::MessageRetentionPeriod],
        "604800",
        "7 days (seed 002)"
    );
    let redrive: serde_json::Value = serde_json::from_str(&attrs[&A::RedrivePolicy]).unwrap();
    assert_eq!(redrive["deadLetterTargetArn"], queue.dlq_arn.as_str());
    assert_eq!(
        redrive["maxReceiveCount"].to_string().trim_matches('"'),
        "3"
    );
}
