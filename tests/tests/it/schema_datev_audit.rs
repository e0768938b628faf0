//! The DATEV export audit's schema against a real Postgres: at most one open
//! audit per document, and the NOTIFY the document page waits for as "the audit
//! event" (seed 002).

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

async fn insert_audit(pool: &PgPool, f: &Fixture, status: &str) -> Result<Uuid, sqlx::Error> {
    sqlx::query_scalar(
        r#"INSERT INTO ap_datev_export_audit (tenant_id, document_id, status)
           VALUES ($1, $2, $3) RETURNING id"#,
    )
    .bind(f.tenant_id)
    .bind(f.document_id)
    .bind(status)
    .fetch_one(pool)
    .await
}

async fn set_status(pool: &PgPool, id: Uuid, status: &str) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE ap_datev_export_audit SET status = $2 WHERE id = $1")
        .bind(id)
        .bind(status)
        .execute(pool)
        .await
        .map(drop)
}

fn refused_by_the_index(result: Result<impl std::fmt::Debug, sqlx::Error>) {
    let err = result.expect_err("a second open audit must be refused");
    let db = err.as_database_error().expect("a database error");
    assert_eq!(db.code().as_deref(), Some("23505"));
    assert_eq!(
        db.constraint(),
        Some("idx_ap_datev_export_audit_document_open")
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_document_has_at_most_one_open_datev_export(pool: PgPool) {
    let f = fixture(&pool).await;
    let first = insert_audit(&pool, &f, "requested").await.unwrap();
    for open in ["requested", "submitted", "in_progress"] {
        refused_by_the_index(insert_audit(&pool, &f, open).await);
    }
    // Ended ones do not count: any number of them, next to the open one.
    insert_audit(&pool, &f, "failed").await.unwrap();
    insert_audit(&pool, &f, "succeeded").await.unwrap();
    let second_failed = insert_audit(&pool, &f, "failed").await.unwrap();
    // Re-opening an ended one while another is open is refused as well.
    refused_by_the_index(set_status(&pool, second_failed, "in_progress").await);

    set_status(&pool, first, "submitted").await.unwrap();
    set_status(&pool, first, "in_progress").await.unwrap();
    refused_by_the_index(insert_audit(&pool, &f, "submitted").await);
    set_status(&pool, first, "failed").await.unwrap();
    insert_audit(&pool, &f, "requested")
        .await
        .expect("accepted once the first ended");

    let other = Fixture {
        document_id: sqlx::query_scalar(
            "INSERT INTO document (tenant_id, type, file_path) VALUES ($1, 'invoice', 'documents/y.pdf') RETURNING id",
        )
        .bind(f.tenant_id)
        .fetch_one(&pool)
        .await
        .unwrap(),
        ..f
    };
    insert_audit(&pool, &other, "requested")
        .await
        .expect("per document, not per tenant");
}

async fn next(listener: &mut PgListener) -> serde_json::Value {
    let n = tokio::time::timeout(Duration::from_secs(30), listener.recv())
        .await
        .expect("a notification arrives")
        .unwrap();
    serde_json::from_str(n.payload()).unwrap_or_else(|_| serde_json::json!(n.payload()))
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn every_audit_status_change_is_notified_with_what_the_page_needs(pool: PgPool) {
    let f = fixture(&pool).await;
    let job: Uuid = sqlx::query_scalar(
        r#"INSERT INTO document_output_job (tenant_id, document_id, document_domain, trigger, status)
           VALUES ($1, $2, 'ap', 'manual', 'running') RETURNING id"#,
    )
    .bind(f.tenant_id)
    .bind(f.document_id)
    .fetch_one(&pool)
    .await
    .unwrap();
    let mut listener = PgListener::connect_with(&pool).await.unwrap();
    listener.listen("datev_export_audit").await.unwrap();

    let audit: Uuid = sqlx::query_scalar(
        r#"INSERT INTO ap_datev_export_audit (tenant_id, document_id, dispatch_job_id, status)
           VALUES ($1, $2, $3, 'requested') RETURNING id"#,
    )
    .bind(f.tenant_id)
    .bind(f.document_id)
    .bind(job)
    .fetch_one(&pool)
    .await
    .unwrap();
    // Not a status change: no notification.
    sqlx::query("UPDATE ap_datev_export_audit SET updated_at = now(), task_id = 't' WHERE id = $1")
        .bind(audit)
        .execute(&pool)
        .await
        .unwrap();
    set_status(&pool, audit, "submitted").await.unwrap();
    sqlx::query(
        "UPDATE ap_datev_export_audit SET status = 'failed', retryable = false WHERE id = $1",
    )
    .bind(audit)
    .execute(&pool)
    .await
    .unwrap();
    // `docflow export resolve --absent` changes only `retryable`: the page must offer
    // the re-export again.
    sqlx::query("UPDATE ap_datev_export_audit SET retryable = true WHERE id = $1")
        .bind(audit)
        .execute(&pool)
        .await
        .unwrap();

    let inserted = next(&mut listener).await;
    assert_eq!(inserted["event/type"], "datev-export-audit");
    assert_eq!(inserted["ap-datev-export-audit/id"], audit.to_string());
    assert_eq!(inserted["ap-datev-export-audit/status"], "requested");
    assert_eq!(inserted["document-output-job/id"], job.to_string());
    assert_eq!(inserted["document/id"], f.document_id.to_string());
    assert_eq!(inserted["tenant/id"], f.tenant_id.to_string());
    assert_eq!(inserted["organization/id"], f.organization_id.to_string());
    assert!(inserted["old-status"].is_null());
    let submitted = next(&mut listener).await;
    assert_eq!(
        (
            &submitted["old-status"],
            &submitted["ap-datev-export-audit/status"]
        ),
        (
            &serde_json::json!("requested"),
            &serde_json::json!("submitted")
        ),
        "the task-id update notified nobody: {submitted}"
    );
    let failed = next(&mut listener).await;
    assert_eq!(failed["ap-datev-export-audit/status"], "failed");
    assert_eq!(failed["ap-datev-export-audit/retryable"], false);
    let resolved = next(&mut listener).await;
    assert_eq!(resolved["ap-datev-export-audit/status"], "failed");
    assert_eq!(resolved["ap-datev-export-audit/retryable"], true);
    // A sentinel after the last committed update: had anything else notified, it would
    // come first (notifications arrive in commit order).
    sqlx::query("SELECT pg_notify('datev_export_audit', 'sentinel')")
        .execute(&pool)
        .await
        .unwrap();
    assert_eq!(next(&mut listener).await, serde_json::json!("sentinel"));
}

/// The migration closes older duplicates visibly before it builds the index: rows from
/// before it (two open audits of one document) end "in doubt", with a notice due, and the
/// newest stays open.
#[sqlx::test(migrations = false)]
async fn the_index_migration_ends_older_open_duplicates_in_doubt(pool: PgPool) {
    let migrator = &docflow::db::MIGRATOR;
    let cut = 20261127120000;
    let mut conn = pool.acquire().await.unwrap();
    for m in migrator.iter().filter(|m| m.version < cut) {
        sqlx::raw_sql(&m.sql).execute(&mut *conn).await.unwrap();
    }
    let f = fixture(&pool).await;
    let older: Uuid = sqlx::query_scalar(
        r#"INSERT INTO ap_datev_export_audit (tenant_id, document_id, status, task_id, created_at)
           VALUES ($1, $2, 'submitted', 'task-older', now() - interval '1 day') RETURNING id"#,
    )
    .bind(f.tenant_id)
    .bind(f.document_id)
    .fetch_one(&pool)
    .await
    .unwrap();
    let newer = insert_audit(&pool, &f, "requested").await.unwrap();
    for m in migrator.iter().filter(|m| m.version >= cut) {
        sqlx::raw_sql(&m.sql).execute(&mut *conn).await.unwrap();
    }
    let row = |id: Uuid| {
        sqlx::query_as::<_, (String, bool, bool, Option<String>)>(
            "SELECT status, retryable, notice_due, error FROM ap_datev_export_audit WHERE id = $1",
        )
        .bind(id)
        .fetch_one(&pool)
    };
    let (status, retryable, notice_due, error) = row(older).await.unwrap();
    assert_eq!(
        (status.as_str(), retryable, notice_due),
        ("failed", false, true)
    );
    assert!(error.unwrap().contains("check DATEV"));
    assert_eq!(row(newer).await.unwrap().0, "requested");
}

/// Decisions recorded before the history existed become its first rows, so `docflow
/// status` and a later correction see who decided, when and why.
#[sqlx::test(migrations = false)]
async fn the_history_migration_keeps_every_earlier_resolution(pool: PgPool) {
    let migrator = &docflow::db::MIGRATOR;
    let cut = 20261129100000;
    let mut conn = pool.acquire().await.unwrap();
    for m in migrator.iter().filter(|m| m.version < cut) {
        sqlx::raw_sql(&m.sql).execute(&mut *conn).await.unwrap();
    }
    let f = fixture(&pool).await;
    let person: Uuid = sqlx::query_scalar(
        "INSERT INTO identity (organization_id, email) VALUES ($1, 'anna@acme.example') RETURNING id",
    )
    .bind(f.organization_id)
    .fetch_one(&pool)
    .await
    .unwrap();
    let resolved: Uuid = sqlx::query_scalar(
        r#"INSERT INTO ap_datev_export_audit
                  (tenant_id, document_id, status, retryable, resolution, resolved_by, resolved_at,
                   resolution_note)
           VALUES ($1, $2, 'failed', true, 'absent', $3, now() - interval '1 day', 'not in DATEV')
           RETURNING id"#,
    )
    .bind(f.tenant_id)
    .bind(f.document_id)
    .bind(person)
    .fetch_one(&pool)
    .await
    .unwrap();
    insert_audit(&pool, &f, "succeeded").await.unwrap();
    for m in migrator.iter().filter(|m| m.version >= cut) {
        sqlx::raw_sql(&m.sql).execute(&mut *conn).await.unwrap();
    }
    /// audit, decision, by, note, status and retryable before, at the audit's time.
    type Row = (Uuid, String, Option<Uuid>, String, String, bool, bool);
    let rows: Vec<Row> = sqlx::query_as(
        r#"SELECT r.audit_id, r.decision, r.decided_by, r.note, r.status_before, r.retryable_before,
                  r.decided_at = a.resolved_at
             FROM ap_datev_export_resolution r JOIN ap_datev_export_audit a ON a.id = r.audit_id"#,
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(
        rows,
        vec![(
            resolved,
            "absent".to_owned(),
            Some(person),
            "not in DATEV".to_owned(),
            "failed".to_owned(),
            false,
            true
        )]
    );
}

/// The worker never reaches the index: a document with an open export (here one the app
/// made before output jobs, still `submitted`) fails a new job at the eligibility check,
/// before any audit insert or POST.
#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_job_for_a_document_with_an_open_export_fails_before_inserting_a_second(pool: PgPool) {
    use docflow_tests::output::setup;
    let env = setup(pool).await;
    wiremock::Mock::given(wiremock::matchers::method("POST"))
        .respond_with(wiremock::ResponseTemplate::new(500))
        .expect(0)
        .mount(&env.maesn)
        .await;
    env.approve(env.tenant.document_id).await;
    let job_id = env.insert_job(env.tenant.document_id, "pending").await;
    sqlx::query(
        r#"INSERT INTO ap_datev_export_audit (tenant_id, document_id, status, task_id)
           VALUES ($1, $2, 'submitted', 'task-from-the-app')"#,
    )
    .bind(env.tenant.tenant_id)
    .bind(env.tenant.document_id)
    .execute(&env.pool)
    .await
    .unwrap();
    env.send(&job_id.to_string()).await;

    let (_, response, _) = env.deliver(1).await;

    assert!(response.batch_item_failures.is_empty(), "Done, not retried");
    let job = env.job(job_id).await;
    assert_eq!(job.status, "failed");
    assert!(
        job.last_error
            .unwrap()
            .contains("already has a DATEV export"),
        "refused as ineligible, not by a unique violation"
    );
    assert_eq!(env.audits(env.tenant.document_id).await.len(), 1);
}
