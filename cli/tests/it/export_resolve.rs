//! `docflow export resolve` (issue 25, item 1) against Postgres, the local SQS/S3 and a
//! wiremock Maesn: an export in doubt blocks every re-export until a person records what
//! DATEV has; `--absent` lets `docflow export <doc>` run again (and export once),
//! `--present` ends it as succeeded; who, when and why are on the audit and in `docflow
//! status`.

use std::process::Command;

use docflow_cli::export::{self, Decision};
use docflow_tests::output::{OutputEnv, setup};
use serde_json::json;
use sqlx::PgPool;
use uuid::Uuid;
use wiremock::matchers::{method, path};
use wiremock::{Mock, ResponseTemplate};

const CREATE: &str = "/accounting/bookingProposals/async";

/// `retryable`, `resolution`, `resolved_by`, `resolution_note`, `resolved_at` of an audit.
type Resolution = (
    bool,
    Option<String>,
    Option<Uuid>,
    Option<String>,
    Option<chrono::DateTime<chrono::Utc>>,
);

/// The tenant's document approved, exported once, and answered 502 by Maesn: the job
/// failed in doubt, its audit `failed` and not retryable. Returns the audit id.
async fn in_doubt(env: &OutputEnv) -> Uuid {
    Mock::given(method("POST"))
        .and(path(CREATE))
        .respond_with(
            ResponseTemplate::new(502)
                .set_body_json(json!({ "statusCode": 502, "message": "Bad Gateway" })),
        )
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&env.maesn)
        .await;
    Mock::given(method("POST"))
        .and(path(CREATE))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({ "meta": {}, "data": { "taskId": "task-after-resolve" } })),
        )
        .with_priority(2)
        .mount(&env.maesn)
        .await;
    env.approve(env.tenant.document_id).await;
    export::request(
        &env.pool,
        &env.dispatcher,
        env.tenant.document_id,
        &env.tenant.approver_id.to_string(),
    )
    .await
    .unwrap();
    env.deliver(1).await;
    let audits = env.audits(env.tenant.document_id).await;
    assert_eq!(audits.len(), 1);
    assert_eq!(
        (audits[0].status.as_str(), audits[0].retryable),
        ("failed", false),
        "in doubt: {:?}",
        audits[0].error
    );
    audits[0].id
}

async fn approver_email(env: &OutputEnv) -> String {
    sqlx::query_scalar("SELECT email FROM identity WHERE id = $1")
        .bind(env.tenant.approver_id)
        .fetch_one(&env.pool)
        .await
        .unwrap()
}

#[sqlx::test(migrations = "../migrations")]
async fn an_export_in_doubt_resolved_absent_is_exported_again_once(pool: PgPool) {
    let env = setup(pool).await;
    let audit = in_doubt(&env).await;
    let by = env.tenant.approver_id.to_string();
    let refused = export::request(&env.pool, &env.dispatcher, env.tenant.document_id, &by)
        .await
        .unwrap_err();
    assert!(
        refused.to_string().contains("already has a DATEV export"),
        "the dead end the issue describes: {refused:#}"
    );

    let resolved = export::resolve(
        &env.pool,
        audit,
        Decision::Absent,
        &by,
        "  checked DATEV Belegbilderservice: no proposal RE-2026-0042  ",
    )
    .await
    .unwrap();

    assert_eq!(resolved.status, "failed");
    assert!(resolved.to_string().contains("docflow export"));
    let (retryable, resolution, resolved_by, note, at): Resolution = sqlx::query_as(
        "SELECT retryable, resolution, resolved_by, resolution_note, resolved_at \
           FROM ap_datev_export_audit WHERE id = $1",
    )
    .bind(audit)
    .fetch_one(&env.pool)
    .await
    .unwrap();
    assert!(retryable);
    assert_eq!(resolution.as_deref(), Some("absent"));
    assert_eq!(resolved_by, Some(env.tenant.approver_id));
    assert_eq!(
        note.as_deref(),
        Some("checked DATEV Belegbilderservice: no proposal RE-2026-0042")
    );
    assert!(at.is_some());

    let accepted = export::request(&env.pool, &env.dispatcher, env.tenant.document_id, &by)
        .await
        .unwrap();
    assert!(
        accepted.contains("sent to the document-output queue"),
        "{accepted}"
    );
    env.deliver(1).await;

    let posts = env.maesn_requests("POST", CREATE).await;
    assert_eq!(
        posts.len(),
        2,
        "the in-doubt POST and exactly one re-export"
    );
    let audits = env.audits(env.tenant.document_id).await;
    assert_eq!(audits.len(), 2);
    assert_eq!(audits[1].status, "submitted");
    assert_eq!(audits[1].task_id.as_deref(), Some("task-after-resolve"));

    let status = docflow_cli::status::load(&env.pool, env.tenant.document_id)
        .await
        .unwrap()
        .unwrap();
    let text = status.to_string();
    let email = approver_email(&env).await;
    assert!(
        text.contains(&format!("resolved absent by {email}"))
            && text.contains("no proposal RE-2026-0042"),
        "docflow status shows who decided and why:\n{text}"
    );
    let json = serde_json::to_value(&status).unwrap();
    assert_eq!(json["audits"][0]["resolution"], "absent");
    assert_eq!(json["audits"][0]["resolved_by"], email.as_str());
}

#[sqlx::test(migrations = "../migrations")]
async fn an_export_in_doubt_resolved_present_is_succeeded_and_never_exported_again(pool: PgPool) {
    let env = setup(pool).await;
    let audit = in_doubt(&env).await;
    let email = approver_email(&env).await;

    let resolved = export::resolve(
        &env.pool,
        audit,
        Decision::Present,
        &email,
        "found in DATEV as Buchungsvorschlag 4711",
    )
    .await
    .unwrap();

    assert_eq!(resolved.status, "succeeded");
    assert_eq!(resolved.resolved_by, env.tenant.approver_id);
    let refused = export::request(&env.pool, &env.dispatcher, env.tenant.document_id, &email)
        .await
        .unwrap_err();
    assert!(
        refused.to_string().contains("already has a DATEV export"),
        "{refused:#}"
    );
    let again = export::resolve(
        &env.pool,
        audit,
        Decision::Absent,
        &email,
        "changed my mind",
    )
    .await
    .unwrap_err();
    assert!(
        again
            .to_string()
            .contains(&format!("already resolved as present by {email}")),
        "a decision is recorded once: {again:#}"
    );
    assert_eq!(env.maesn_requests("POST", CREATE).await.len(), 1);
}

#[sqlx::test(migrations = "../migrations")]
async fn only_an_export_in_doubt_can_be_resolved_by_its_own_organization_with_a_reason(
    pool: PgPool,
) {
    let env = setup(pool).await;
    let by = env.tenant.approver_id.to_string();
    // An open task: docflow is still settling it.
    let doc = env.another_approved_document().await;
    let job = env.insert_job(doc, "dispatched").await;
    let open: Uuid = sqlx::query_scalar(
        r#"INSERT INTO ap_datev_export_audit (tenant_id, document_id, dispatch_job_id, status, task_id)
           VALUES ($1, $2, $3, 'submitted', 'task-open') RETURNING id"#,
    )
    .bind(env.tenant.tenant_id)
    .bind(doc)
    .bind(job)
    .fetch_one(&env.pool)
    .await
    .unwrap();
    let err = export::resolve(&env.pool, open, Decision::Absent, &by, "x")
        .await
        .unwrap_err();
    assert!(err.to_string().contains("still submitted"), "{err:#}");

    let audit = in_doubt(&env).await;
    let err = export::resolve(&env.pool, audit, Decision::Absent, &by, "   ")
        .await
        .unwrap_err();
    assert!(err.to_string().contains("--note"), "{err:#}");

    let other_org: Uuid =
        sqlx::query_scalar("INSERT INTO organization (name) VALUES ('Other AG') RETURNING id")
            .fetch_one(&env.pool)
            .await
            .unwrap();
    let outsider: Uuid = sqlx::query_scalar(
        "INSERT INTO identity (organization_id, email) VALUES ($1, $2) RETURNING id",
    )
    .bind(other_org)
    .bind(format!("{}@other.example", Uuid::new_v4()))
    .fetch_one(&env.pool)
    .await
    .unwrap();
    let err = export::resolve(
        &env.pool,
        audit,
        Decision::Absent,
        &outsider.to_string(),
        "not mine to decide",
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("does not belong"), "{err:#}");

    let err = export::resolve(&env.pool, Uuid::new_v4(), Decision::Absent, &by, "x")
        .await
        .unwrap_err();
    assert!(err.to_string().contains("no DATEV export audit"), "{err:#}");
    let (status, retryable): (String, bool) =
        sqlx::query_as("SELECT status, retryable FROM ap_datev_export_audit WHERE id = $1")
            .bind(audit)
            .fetch_one(&env.pool)
            .await
            .unwrap();
    assert_eq!((status.as_str(), retryable), ("failed", false), "unchanged");
}

#[test]
fn resolve_takes_exactly_one_of_absent_and_present() {
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_docflow"))
            .args(args)
            .env("DATABASE_URL", "postgres://nobody@127.0.0.1:1/none")
            .output()
            .unwrap()
    };
    let id = Uuid::new_v4().to_string();
    for args in [
        vec![
            "export",
            "resolve",
            &id,
            "--by",
            "a@b.example",
            "--note",
            "n",
        ],
        vec![
            "export",
            "resolve",
            &id,
            "--absent",
            "--present",
            "--by",
            "a@b.example",
            "--note",
            "n",
        ],
        vec!["export", "resolve", &id, "--absent", "--note", "n"],
    ] {
        let out = run(&args);
        assert_eq!(out.status.code(), Some(2), "a usage error: {args:?}");
    }
    let help = run(&["export", "resolve", "--help"]);
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(
        help.contains("--absent") && help.contains("--present"),
        "{help}"
    );
}

/// The hostile Maesn of issue 25: the stand-in books the proposal and answers at once, but
/// its task never ends. The poll keeps it open while it is young, ends it in doubt once
/// it is older than the maximum task age, and a person resolves it.
#[sqlx::test(migrations = "../migrations")]
async fn a_task_that_never_ends_is_ended_in_doubt_after_the_maximum_age_and_resolvable(
    pool: PgPool,
) {
    use docflow::datev::{BookingProposal, DatevAccount, DatevConnector as _, DocumentFile};
    use docflow::output::worker::{PollSettings, poll_open_tasks_with};
    use docflow_cli::maesn::{Faults, Options, StandIn};

    let env = setup(pool).await;
    let standin = StandIn::start(Options {
        api_key: docflow_tests::output::API_KEY.to_owned(),
        faults: Some(Faults {
            seed: 1,
            unavailable: 0.0,
            answer_late: 0.0,
            late_by: std::time::Duration::ZERO,
            proxy_503: 0.0,
            see_other: 0.0,
            cut_body: 0.0,
            revoked_key_answer_after: std::time::Duration::ZERO,
            never_ending: 1.0,
        }),
        ..Options::default()
    })
    .await;
    let maesn = env.maesn_client(
        &standin.uri(),
        std::time::Duration::from_secs(10),
        std::time::Duration::from_secs(2),
    );
    let document = env.another_approved_document().await;
    let account = DatevAccount {
        tenant_id: env.tenant.tenant_id,
        company_id: docflow_tests::output::COMPANY_ID.to_owned(),
    };
    let keys = maesn.keys(&account).await.unwrap();
    let task_id = maesn
        .create_booking_proposal(
            &BookingProposal {
                account,
                proposal: json!({
                    "id": document,
                    "number": "RE-NEVER-1",
                    "bookingProposalDate": "2026-01-15T00:00:00Z",
                    "totalGrossAmount": 119.0,
                    "currency": "EUR",
                }),
                booking_type: "BILL".into(),
                folder_management: json!({}),
                file: DocumentFile {
                    file_name: "never.pdf".into(),
                    mime_type: "application/pdf".into(),
                    bytes: b"%PDF-1.7 never".to_vec().into(),
                },
            },
            &keys,
        )
        .await
        .unwrap();
    let job = env.insert_job(document, "dispatched").await;
    let audit: Uuid = sqlx::query_scalar(
        r#"INSERT INTO ap_datev_export_audit (tenant_id, document_id, dispatch_job_id, status, task_id)
           VALUES ($1, $2, $3, 'submitted', $4) RETURNING id"#,
    )
    .bind(env.tenant.tenant_id)
    .bind(document)
    .bind(job)
    .bind(&task_id)
    .fetch_one(&env.pool)
    .await
    .unwrap();
    let settings = PollSettings {
        max_task_age: std::time::Duration::from_secs(3600),
    };

    for _ in 0..3 {
        let young = poll_open_tasks_with(&env.pool, &maesn, 10, &settings)
            .await
            .unwrap();
        assert_eq!((young.still_running, young.failed), (1, 0), "{young:?}");
    }
    sqlx::query(
        "UPDATE ap_datev_export_audit SET created_at = now() - interval '61 minutes' WHERE id = $1",
    )
    .bind(audit)
    .execute(&env.pool)
    .await
    .unwrap();
    let old = poll_open_tasks_with(&env.pool, &maesn, 10, &settings)
        .await
        .unwrap();

    assert_eq!((old.failed, old.expired), (1, 1), "{old:?}");
    assert!(!old.failed_exports[0].retryable);
    assert!(
        old.failed_exports[0]
            .error
            .contains("did not end within 1 h"),
        "{}",
        old.failed_exports[0].error
    );
    assert_eq!(standin.exports().len(), 1, "booked once");
    assert_eq!(
        standin.exports()[0].status,
        "IN_PROGRESS",
        "and never ended"
    );
    let again = poll_open_tasks_with(&env.pool, &maesn, 10, &settings)
        .await
        .unwrap();
    assert_eq!(again, Default::default(), "ended once, polled no more");

    let resolved = export::resolve(
        &env.pool,
        audit,
        Decision::Present,
        &env.tenant.approver_id.to_string(),
        "the proposal is in DATEV although the task never ended",
    )
    .await
    .unwrap();
    assert_eq!(resolved.status, "succeeded");
}
