//! The schema against a real Postgres: migrations, the ingestion→document trigger, the
//! one-job-in-flight index, the output-dispatch NOTIFY.

use std::time::Duration;

use sqlx::PgPool;
use sqlx::postgres::PgListener;
use uuid::Uuid;

struct Fixture {
    organization_id: Uuid,
    tenant_id: Uuid,
    document_id: Uuid,
}

async fn fixture(pool: &PgPool) -> Fixture {
    let organization_id: Uuid =
        sqlx::query_scalar("INSERT INTO organization (name) VALUES ('Acme Group') RETURNING id")
            .fetch_one(pool)
            .await
            .unwrap();
    let tenant_id: Uuid = sqlx::query_scalar(
        "INSERT INTO tenant (organization_id, name) VALUES ($1, 'Acme GmbH') RETURNING id",
    )
    .bind(organization_id)
    .fetch_one(pool)
    .await
    .unwrap();
    let document_id: Uuid = sqlx::query_scalar(
        "INSERT INTO document (tenant_id, type, file_path) VALUES ($1, 'invoice', 'documents/x.pdf') RETURNING id",
    )
    .bind(tenant_id)
    .fetch_one(pool)
    .await
    .unwrap();
    Fixture {
        organization_id,
        tenant_id,
        document_id,
    }
}

async fn insert_job(pool: &PgPool, f: &Fixture, status: &str) -> Result<Uuid, sqlx::Error> {
    sqlx::query_scalar(
        r#"INSERT INTO document_output_job (tenant_id, document_id, document_domain, trigger, status)
           VALUES ($1, $2, 'ap', 'manual', $3::document_output_status) RETURNING id"#,
    )
    .bind(f.tenant_id)
    .bind(f.document_id)
    .bind(status)
    .fetch_one(pool)
    .await
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn migrations_create_every_table(pool: PgPool) {
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT table_name::text FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    for expected in [
        "ap_approval",
        "ap_datev_export_audit",
        "document",
        "document_match",
        "document_output_job",
        "identity",
        "ingestion",
        "organization",
        "tenant",
        "tenant_datev_integration",
    ] {
        assert!(
            tables.iter().any(|t| t == expected),
            "missing table {expected}: {tables:?}"
        );
    }
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn completing_an_ingestion_copies_its_data_to_the_document(pool: PgPool) {
    let f = fixture(&pool).await;
    sqlx::query("UPDATE document SET needs_human_review = true WHERE id = $1")
        .bind(f.document_id)
        .execute(&pool)
        .await
        .unwrap();
    let ingestion_id: Uuid =
        sqlx::query_scalar("INSERT INTO ingestion (document_id) VALUES ($1) RETURNING id")
            .bind(f.document_id)
            .fetch_one(&pool)
            .await
            .unwrap();

    sqlx::query(
        r#"UPDATE ingestion SET status = 'completed', structured_data = '{"invoice_number":"RE-1"}',
           valid_structured_data = true, completed_at = now() WHERE id = $1"#,
    )
    .bind(ingestion_id)
    .execute(&pool)
    .await
    .unwrap();

    let (data, review): (serde_json::Value, bool) =
        sqlx::query_as("SELECT structured_data, needs_human_review FROM document WHERE id = $1")
            .bind(f.document_id)
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(data["invoice_number"], "RE-1");
    assert!(!review);
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_failed_ingestion_flags_the_document_for_review_and_keeps_its_data(pool: PgPool) {
    let f = fixture(&pool).await;
    sqlx::query(r#"UPDATE document SET structured_data = '{"kept":true}' WHERE id = $1"#)
        .bind(f.document_id)
        .execute(&pool)
        .await
        .unwrap();
    let ingestion_id: Uuid =
        sqlx::query_scalar("INSERT INTO ingestion (document_id) VALUES ($1) RETURNING id")
            .bind(f.document_id)
            .fetch_one(&pool)
            .await
            .unwrap();

    sqlx::query("UPDATE ingestion SET status = 'failed', attempt_count = 3, completed_at = now() WHERE id = $1")
        .bind(ingestion_id)
        .execute(&pool)
        .await
        .unwrap();

    let (data, review): (serde_json::Value, bool) =
        sqlx::query_as("SELECT structured_data, needs_human_review FROM document WHERE id = $1")
            .bind(f.document_id)
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(data["kept"], true);
    assert!(review);
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn only_one_output_job_per_document_may_be_in_flight(pool: PgPool) {
    let f = fixture(&pool).await;
    let first = insert_job(&pool, &f, "pending").await.unwrap();

    let second = insert_job(&pool, &f, "pending").await;
    let err = second.unwrap_err();
    let db_err = err.as_database_error().expect("a database error");
    assert_eq!(db_err.code().as_deref(), Some("23505"));
    assert_eq!(
        db_err.constraint(),
        Some("idx_document_output_job_document_active")
    );

    sqlx::query("UPDATE document_output_job SET status = 'running' WHERE id = $1")
        .bind(first)
        .execute(&pool)
        .await
        .unwrap();
    assert!(
        insert_job(&pool, &f, "pending").await.is_err(),
        "running also counts as in flight"
    );

    sqlx::query("UPDATE document_output_job SET status = 'dispatched' WHERE id = $1")
        .bind(first)
        .execute(&pool)
        .await
        .unwrap();
    assert!(
        insert_job(&pool, &f, "pending").await.is_ok(),
        "accepted once the first is dispatched"
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_listen_connection_receives_the_output_dispatch_payload(pool: PgPool) {
    let f = fixture(&pool).await;
    let mut listener = PgListener::connect_with(&pool).await.unwrap();
    listener.listen("output_dispatch").await.unwrap();

    let job_id = insert_job(&pool, &f, "pending").await.unwrap();
    sqlx::query("UPDATE document_output_job SET status = 'running' WHERE id = $1")
        .bind(job_id)
        .execute(&pool)
        .await
        .unwrap();
    // Not a status change: no notification.
    sqlx::query("UPDATE document_output_job SET updated_at = now() WHERE id = $1")
        .bind(job_id)
        .execute(&pool)
        .await
        .unwrap();

    let mut payloads = Vec::new();
    for _ in 0..2 {
        let n = tokio::time::timeout(Duration::from_secs(30), listener.recv())
            .await
            .unwrap()
            .unwrap();
        payloads.push(serde_json::from_str::<serde_json::Value>(n.payload()).unwrap());
    }
    let inserted = &payloads[0];
    assert_eq!(inserted["event/type"], "output-dispatch");
    assert_eq!(inserted["document-output-job/id"], job_id.to_string());
    assert_eq!(inserted["document-output-job/status"], "pending");
    assert_eq!(inserted["document/id"], f.document_id.to_string());
    assert_eq!(inserted["tenant/id"], f.tenant_id.to_string());
    assert_eq!(inserted["organization/id"], f.organization_id.to_string());
    assert!(inserted["old-status"].is_null());
    assert_eq!(payloads[1]["document-output-job/status"], "running");
    assert_eq!(payloads[1]["old-status"], "pending");
    // A sentinel of our own on the same channel, sent after the update committed:
    // notifications arrive in commit order, so had the update notified, that
    // notification would come first. No waiting for something not to happen.
    sqlx::query("SELECT pg_notify('output_dispatch', 'sentinel')")
        .execute(&pool)
        .await
        .unwrap();
    let next = tokio::time::timeout(Duration::from_secs(30), listener.recv())
        .await
        .expect("the sentinel notification arrives")
        .unwrap();
    assert_eq!(
        next.payload(),
        "sentinel",
        "an update without a status change notifies nobody"
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_document_is_approved_only_when_all_its_steps_are(pool: PgPool) {
    let f = fixture(&pool).await;
    let approved = || async {
        sqlx::query_scalar::<_, bool>("SELECT document_is_approved($1)")
            .bind(f.document_id)
            .fetch_one(&pool)
            .await
            .unwrap()
    };
    assert!(!approved().await, "no steps: not approved");
    for step in [1, 2] {
        sqlx::query("INSERT INTO ap_approval (tenant_id, document_id, step) VALUES ($1, $2, $3)")
            .bind(f.tenant_id)
            .bind(f.document_id)
            .bind(step)
            .execute(&pool)
            .await
            .unwrap();
    }
    sqlx::query("UPDATE ap_approval SET status = 'approved', decided_at = now() WHERE step = 1")
        .execute(&pool)
        .await
        .unwrap();
    assert!(!approved().await, "one of two steps approved");
    sqlx::query("UPDATE ap_approval SET status = 'approved', decided_at = now() WHERE step = 2")
        .execute(&pool)
        .await
        .unwrap();
    assert!(approved().await);
}

/// The labels of a Postgres enum type, in order.
async fn labels(pool: &PgPool, type_name: &str) -> Vec<String> {
    sqlx::query_scalar(&format!(
        "SELECT unnest(enum_range(NULL::{type_name}))::text"
    ))
    .fetch_all(pool)
    .await
    .unwrap()
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn every_label_the_migrations_give_the_output_job_enums_is_known_to_the_worker(pool: PgPool) {
    use docflow::output::{Domain, JobStatus, Trigger};
    // The worker fails a job holding a label it does not know (one the application added
    // later): a label added by a migration must be taught to it in the same change.
    for label in labels(&pool, "document_output_status").await {
        assert!(JobStatus::from_label(&label).is_some(), "status {label}");
    }
    for label in labels(&pool, "document_output_domain").await {
        assert!(Domain::from_label(&label).is_some(), "domain {label}");
    }
    for label in labels(&pool, "document_output_trigger").await {
        assert!(Trigger::from_label(&label).is_some(), "trigger {label}");
    }
}
