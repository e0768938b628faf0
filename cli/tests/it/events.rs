//! The sample events in `events/` against the rows `docflow seed` creates: each does what
//! `events/README.md` says when a function's handler gets it, as `cargo lambda invoke
//! --data-file` would deliver it. The functions are wired as `docflow local run` wires
//! them; the stack is fresh (database, bucket, queues, secret), the Maesn stand-in local.

use std::time::Duration;

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use docflow_cli::ingest::Target;
use docflow_cli::maesn::{DEMO_API_KEY, StandIn};
use docflow_cli::seed::{MATCHING_FIXTURE, OUTPUT_JOB_FIXTURE, reset_fixtures};
use docflow_cli::wiring::{Local, Options, Queues};
use docflow_dev::local::QueueSpec;
use docflow_tests::*;
use sqlx::PgPool;
use uuid::Uuid;

fn event(json: &str) -> SqsEvent {
    serde_json::from_str(json).expect("a Lambda SQS event")
}

async fn stack(pool: &PgPool, maesn: &StandIn) -> Local {
    let aws = aws().await;
    let sqs = aws_sdk_sqs::Client::new(&aws);
    let spec = QueueSpec {
        visibility_timeout: Duration::from_secs(30),
        ..QueueSpec::default()
    };
    let queues = Queues {
        ingestion: fresh_queue(&sqs, "ev-ingestion", spec).await,
        matching: fresh_queue(&sqs, "ev-matching", spec).await,
        document_output: fresh_queue(&sqs, "ev-output", spec).await,
    };
    let bucket = fresh_bucket(&docflow::aws::s3_client(&aws)).await;
    let secret_id = unique("docflow-events/app");
    aws_sdk_secretsmanager::Client::new(&aws)
        .create_secret()
        .name(&secret_id)
        .secret_string(serde_json::json!({ "maesn_api_key": DEMO_API_KEY }).to_string())
        .send()
        .await
        .unwrap();
    let vars = [
        ("DOCFLOW_SECRET_ID", secret_id),
        ("DOCUMENTS_BUCKET", bucket),
        ("MAESN_BASE_URL", maesn.uri()),
        ("HTTP_RETRY_BASE_MS", "20".to_owned()),
        ("LLM_PROVIDER", "rules".to_owned()),
        (
            "DATEV_CREDENTIALS_PREFIX",
            unique("docflow-events/datev/") + "/",
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    let local = Local::build(
        aws,
        queues,
        Some(pool.clone()),
        Options {
            concurrency: 1,
            vars,
        },
    )
    .await
    .unwrap();
    let fixtures = reset_fixtures(&Target {
        pool,
        s3: &local.s3,
        bucket: &local.settings.documents_bucket,
        sqs: &local.sqs,
        ingestion_queue_url: &local.queues.ingestion.url,
    })
    .await
    .unwrap();
    local.store_datev_account(fixtures.tenant_id).await.unwrap();
    local
}

fn no_failures(response: &SqsBatchResponse, what: &str) {
    assert!(
        response.batch_item_failures.is_empty(),
        "{what}: {response:?}"
    );
}

async fn ingestion_status(pool: &PgPool, id: &str) -> String {
    sqlx::query_scalar("SELECT status FROM ingestion WHERE id = $1")
        .bind(Uuid::parse_str(id).unwrap())
        .fetch_one(pool)
        .await
        .unwrap()
}

#[sqlx::test(migrations = "../migrations")]
async fn the_ingestion_events_do_what_the_readme_says(pool: PgPool) {
    let maesn = StandIn::start(Default::default()).await;
    let local = stack(&pool, &maesn).await;
    let deps = local.ingestion().await.unwrap();
    let invoke = |json: &'static str| {
        let deps = &deps;
        async move {
            ingestion::handler(deps, lambda_event(event(json), None))
                .await
                .unwrap()
        }
    };

    no_failures(
        &invoke(include_str!("../../../events/ingestion/valid.json")).await,
        "valid",
    );
    no_failures(
        &invoke(include_str!("../../../events/ingestion/batch.json")).await,
        "batch",
    );
    no_failures(
        &invoke(include_str!("../../../events/ingestion/poison.json")).await,
        "poison",
    );
    no_failures(
        &invoke(include_str!("../../../events/ingestion/duplicate.json")).await,
        "duplicate",
    );

    for id in [
        "7f3c2a9e-5b1d-4e8a-9c6f-2d4b8e1a0c35",
        "1a2b3c4d-0000-4000-8000-000000000001",
        "1a2b3c4d-0000-4000-8000-000000000002",
        "1a2b3c4d-0000-4000-8000-000000000003",
        "c0ffee00-1111-4222-8333-444455556666",
    ] {
        assert_eq!(ingestion_status(&pool, id).await, "completed", "{id}");
    }
    let unknown: Option<String> = sqlx::query_scalar(
        "SELECT status FROM ingestion WHERE id = '9e9e9e9e-dead-4bee-8f00-000000000000'",
    )
    .fetch_optional(&pool)
    .await
    .unwrap();
    assert_eq!(unknown, None, "the batch's unknown id stays unknown");
    assert_eq!(
        visible_bodies(&local.sqs, &local.queues.matching.url)
            .await
            .len(),
        4,
        "the four matchable documents went on to matching"
    );

    // The e-invoices: read from their XML, no transcription, on to matching.
    no_failures(
        &invoke(include_str!("../../../events/ingestion/einvoices.json")).await,
        "einvoices",
    );
    for id in [
        "1a2b3c4d-0000-4000-8000-000000000004",
        "1a2b3c4d-0000-4000-8000-000000000005",
    ] {
        assert_eq!(ingestion_status(&pool, id).await, "completed", "{id}");
        let (model, transcribed): (Option<String>, Option<String>) = sqlx::query_as(
            "SELECT extraction_model, transcription_file_path FROM ingestion WHERE id = $1::uuid",
        )
        .bind(id)
        .fetch_one(&pool)
        .await
        .unwrap();
        assert_eq!(model.as_deref(), Some("einvoice"), "{id}");
        assert_eq!(transcribed, None, "{id}");
    }
    assert_eq!(
        visible_bodies(&local.sqs, &local.queues.matching.url)
            .await
            .len(),
        6,
        "the two e-invoices went on to matching too"
    );
}

#[sqlx::test(migrations = "../migrations")]
async fn the_matching_and_document_output_events_do_what_the_readme_says(pool: PgPool) {
    let maesn = StandIn::start(Default::default()).await;
    let local = stack(&pool, &maesn).await;
    let matching = local.matching().await.unwrap();
    for json in [
        include_str!("../../../events/matching/valid.json"),
        include_str!("../../../events/matching/batch.json"),
        include_str!("../../../events/matching/duplicate.json"),
        include_str!("../../../events/matching/missing-document.json"),
        include_str!("../../../events/matching/poison.json"),
    ] {
        let response = matching::handler(&matching, lambda_event(event(json), None))
            .await
            .unwrap();
        no_failures(&response, json);
    }
    let status: Option<String> =
        sqlx::query_scalar("SELECT matching_status FROM document WHERE id = $1")
            .bind(MATCHING_FIXTURE)
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(status.as_deref(), Some("succeeded"));

    let output = local.document_output().await.unwrap();
    for json in [
        include_str!("../../../events/document-output/valid.json"),
        include_str!("../../../events/document-output/batch.json"),
        include_str!("../../../events/document-output/duplicate-dispatched.json"),
        include_str!("../../../events/document-output/stale-running.json"),
        include_str!("../../../events/document-output/poison.json"),
    ] {
        let response = document_output::handler(&output, lambda_event(event(json), None))
            .await
            .unwrap();
        no_failures(&response, json);
    }
    let job: String =
        sqlx::query_scalar("SELECT status::text FROM document_output_job WHERE id = $1")
            .bind(OUTPUT_JOB_FIXTURE)
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(job, "dispatched");
    assert_eq!(
        maesn.exports().len(),
        1,
        "one export, however often the job's message came"
    );

    // `docflow status` shows all of it in one view.
    let matched = docflow_cli::status::load(&pool, MATCHING_FIXTURE)
        .await
        .unwrap()
        .expect("the fixture document");
    assert_eq!(
        matched.document.matching_status.as_deref(),
        Some("succeeded")
    );
    assert!(matched.document.matching_attempts >= 1);
    let document_id: Uuid =
        sqlx::query_scalar("SELECT document_id FROM document_output_job WHERE id = $1")
            .bind(OUTPUT_JOB_FIXTURE)
            .fetch_one(&pool)
            .await
            .unwrap();
    let exported = docflow_cli::status::load(&pool, document_id)
        .await
        .unwrap()
        .expect("the exported document");
    assert_eq!(exported.output_jobs.len(), 1);
    assert_eq!(exported.output_jobs[0].status, "dispatched");
    assert_eq!(exported.audits.len(), 1);
    assert_eq!(
        exported.audits[0].task_id.as_deref(),
        Some(maesn.exports()[0].task_id.as_str())
    );
    let text = exported.to_string();
    assert!(
        text.contains("dispatched") && text.contains(&exported.audits[0].id.to_string()),
        "{text}"
    );
    assert!(
        docflow_cli::status::load(&pool, Uuid::new_v4())
            .await
            .unwrap()
            .is_none()
    );
}
