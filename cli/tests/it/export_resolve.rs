//! `docflow export resolve` against Postgres, the local SQS/S3 and a wiremock Maesn: an
//! export in doubt blocks every re-export until a person records what DATEV has;
//! `--absent` lets `docflow export <doc>` run again (and export once), but not while
//! Maesn's task may still land (the resolve window) unless forced with a reason;
//! `--present` ends it as succeeded; a later decision supersedes an earlier one; who,
//! when and why of each are kept and shown by `docflow status`.

use std::process::Command;

use std::time::Duration;

use docflow_cli::export::{self, DEFAULT_ABSENT_WINDOW, Decide, Decision, Resolved};
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

/// `docflow export resolve` with the default window and no `--force`.
async fn resolve(
    env: &OutputEnv,
    audit: Uuid,
    decision: Decision,
    by: &str,
    note: &str,
) -> anyhow::Result<Resolved> {
    let decide = Decide {
        decision,
        by,
        note,
        force: None,
    };
    export::resolve(&env.pool, audit, &decide, DEFAULT_ABSENT_WINDOW).await
}

/// Moves the audit's POST `minutes` into the past: the resolve window has passed.
async fn sent_ago(env: &OutputEnv, audit: Uuid, minutes: i32) {
    sqlx::query(
        "UPDATE ap_datev_export_audit SET created_at = now() - make_interval(mins => $2) WHERE id = $1",
    )
    .bind(audit)
    .bind(minutes)
    .execute(&env.pool)
    .await
    .unwrap();
}

/// `decision`, `decided_by`, `note`, `forced_reason`, `status_before`, `retryable_before`
/// of every recorded decision on the audit, oldest first.
type HistoryRow = (String, Option<Uuid>, String, Option<String>, String, bool);

async fn history(env: &OutputEnv, audit: Uuid) -> Vec<HistoryRow> {
    sqlx::query_as(
        "SELECT decision, decided_by, note, forced_reason, status_before, retryable_before \
           FROM ap_datev_export_resolution WHERE audit_id = $1 ORDER BY decided_at, id",
    )
    .bind(audit)
    .fetch_all(&env.pool)
    .await
    .unwrap()
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

    sent_ago(&env, audit, 61).await;
    let resolved = resolve(
        &env,
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

    // No window for `--present`: DATEV has it, nothing can land a second time.
    let resolved = resolve(
        &env,
        audit,
        Decision::Present,
        &email,
        "found in DATEV as Buchungsvorschlag 4711",
    )
    .await
    .unwrap();

    assert_eq!(resolved.status, "succeeded");
    assert_eq!(resolved.resolved_by, env.tenant.approver_id);
    assert_eq!(resolved.superseded, None);
    let refused = export::request(&env.pool, &env.dispatcher, env.tenant.document_id, &email)
        .await
        .unwrap_err();
    assert!(
        refused.to_string().contains("already has a DATEV export"),
        "{refused:#}"
    );
    assert_eq!(env.maesn_requests("POST", CREATE).await.len(), 1);
    assert_eq!(
        history(&env, audit).await,
        vec![(
            "present".to_owned(),
            Some(env.tenant.approver_id),
            "found in DATEV as Buchungsvorschlag 4711".to_owned(),
            None,
            "failed".to_owned(),
            false
        )]
    );
}

/// `--absent` inside the window: Maesn's asynchronous task may still book the proposal,
/// so a re-export now could book it twice. Refused, saying until when; `--force` with a
/// reason records it, and the reason is kept. A configured window is honoured.
#[sqlx::test(migrations = "../migrations")]
async fn absent_is_refused_while_the_task_may_still_land_unless_forced_with_a_reason(pool: PgPool) {
    let env = setup(pool).await;
    let audit = in_doubt(&env).await;
    let by = env.tenant.approver_id.to_string();
    sent_ago(&env, audit, 10).await;

    let refused = resolve(&env, audit, Decision::Absent, &by, "not in DATEV")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("sent to Maesn 10 min ago")
            && refused.contains("EXPORT_RESOLVE_WINDOW_SECONDS = 3600")
            && refused.contains("--force"),
        "{refused}"
    );
    let blank = Decide {
        decision: Decision::Absent,
        by: &by,
        note: "not in DATEV",
        force: Some("  "),
    };
    let err = export::resolve(&env.pool, audit, &blank, DEFAULT_ABSENT_WINDOW)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("--force must say why"), "{err:#}");
    assert!(history(&env, audit).await.is_empty(), "nothing recorded");
    let refused = export::request(&env.pool, &env.dispatcher, env.tenant.document_id, &by)
        .await
        .unwrap_err();
    assert!(
        refused.to_string().contains("already has a DATEV export"),
        "still blocked: {refused:#}"
    );

    // A shorter configured window has passed after 10 minutes.
    let shorter = Decide {
        decision: Decision::Absent,
        by: &by,
        note: "not in DATEV",
        force: None,
    };
    let err = export::resolve(&env.pool, audit, &shorter, Duration::from_secs(11 * 60))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("660 s"), "{err:#}");

    let forced = Decide {
        decision: Decision::Absent,
        by: &by,
        note: "not in DATEV",
        force: Some("Maesn support: task of the 502 was rejected, ticket 8812"),
    };
    let resolved = export::resolve(&env.pool, audit, &forced, DEFAULT_ABSENT_WINDOW)
        .await
        .unwrap();
    assert!(resolved.forced);
    assert_eq!(resolved.status, "failed");
    assert!(resolved.to_string().contains("forced"), "{resolved}");
    let rows = history(&env, audit).await;
    assert_eq!(rows.len(), 1);
    assert_eq!(
        rows[0].3.as_deref(),
        Some("Maesn support: task of the 502 was rejected, ticket 8812")
    );
    let text = docflow_cli::status::load(&env.pool, env.tenant.document_id)
        .await
        .unwrap()
        .unwrap()
        .to_string();
    assert!(
        text.contains("inside the resolve window, forced: Maesn support"),
        "{text}"
    );

    // Past the window on another audit: no force needed, none recorded.
    let second = {
        let doc = env.another_approved_document().await;
        let job = env.insert_job(doc, "failed").await;
        sqlx::query_scalar::<_, Uuid>(
            r#"INSERT INTO ap_datev_export_audit (tenant_id, document_id, dispatch_job_id, status, retryable, created_at)
               VALUES ($1, $2, $3, 'failed', false, now() - interval '61 minutes') RETURNING id"#,
        )
        .bind(env.tenant.tenant_id)
        .bind(doc)
        .bind(job)
        .fetch_one(&env.pool)
        .await
        .unwrap()
    };
    let resolved = resolve(&env, second, Decision::Absent, &by, "not in DATEV either")
        .await
        .unwrap();
    assert!(!resolved.forced);
    assert_eq!(history(&env, second).await[0].3, None);
}

/// A later decision supersedes an earlier one, and every one is kept: present, then
/// absent (a person found the proposal was another document's), then present again
/// once the re-export booked it — which warns that DATEV may now hold it twice. A
/// correction to present is refused while that re-export is still under way.
#[sqlx::test(migrations = "../migrations")]
async fn a_decision_can_be_corrected_and_the_history_keeps_who_when_and_why(pool: PgPool) {
    let env = setup(pool).await;
    let audit = in_doubt(&env).await;
    let by = env.tenant.approver_id.to_string();
    let email = approver_email(&env).await;
    let colleague: Uuid = sqlx::query_scalar(
        "INSERT INTO identity (organization_id, email) \
         SELECT organization_id, $2 FROM identity WHERE id = $1 RETURNING id",
    )
    .bind(env.tenant.approver_id)
    .bind(format!("{}@colleague.example", Uuid::new_v4()))
    .fetch_one(&env.pool)
    .await
    .unwrap();

    let first = resolve(
        &env,
        audit,
        Decision::Present,
        &by,
        "proposal RE-42 in DATEV",
    )
    .await
    .unwrap();
    assert_eq!(first.status, "succeeded");

    // The correction to absent obeys the window as a first decision does.
    let early = resolve(
        &env,
        audit,
        Decision::Absent,
        &colleague.to_string(),
        "that proposal is RE-42 of another supplier",
    )
    .await
    .unwrap_err();
    assert!(early.to_string().contains("--force"), "{early:#}");
    sent_ago(&env, audit, 90).await;
    let second = resolve(
        &env,
        audit,
        Decision::Absent,
        &colleague.to_string(),
        "that proposal is RE-42 of another supplier",
    )
    .await
    .unwrap();
    assert_eq!(second.status, "failed");
    let earlier = second.superseded.clone().expect("supersedes the first");
    assert_eq!(
        (earlier.decision.as_str(), earlier.by.as_deref()),
        ("present", Some(email.as_str()))
    );
    assert!(
        second
            .to_string()
            .contains("supersedes the decision present"),
        "{second}"
    );
    let (status, retryable, resolution, resolved_by): (String, bool, Option<String>, Option<Uuid>) =
        sqlx::query_as(
            "SELECT status, retryable, resolution, resolved_by FROM ap_datev_export_audit WHERE id = $1",
        )
        .bind(audit)
        .fetch_one(&env.pool)
        .await
        .unwrap();
    assert_eq!(
        (
            status.as_str(),
            retryable,
            resolution.as_deref(),
            resolved_by
        ),
        ("failed", true, Some("absent"), Some(colleague))
    );

    // The re-export the correction allows; while its task is open, present cannot be
    // recorded on the old audit.
    export::request(&env.pool, &env.dispatcher, env.tenant.document_id, &by)
        .await
        .unwrap();
    env.deliver(1).await;
    let audits = env.audits(env.tenant.document_id).await;
    assert_eq!(audits.len(), 2);
    assert_eq!(audits[1].status, "submitted");
    let err = resolve(&env, audit, Decision::Present, &by, "found it after all")
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("is being exported again"),
        "{err:#}"
    );
    // The task ends: booked.
    sqlx::query("UPDATE ap_datev_export_audit SET status = 'succeeded' WHERE id = $1")
        .bind(audits[1].id)
        .execute(&env.pool)
        .await
        .unwrap();
    let third = resolve(
        &env,
        audit,
        Decision::Present,
        &by,
        "found RE-42 twice in DATEV",
    )
    .await
    .unwrap();
    assert_eq!(third.status, "succeeded");
    assert_eq!(third.later_successes, vec![audits[1].id]);
    assert!(
        third.to_string().contains("DATEV may hold it twice"),
        "{third}"
    );

    let rows = history(&env, audit).await;
    let decisions: Vec<(&str, Option<Uuid>, &str, bool)> = rows
        .iter()
        .map(|r| (r.0.as_str(), r.1, r.4.as_str(), r.5))
        .collect();
    assert_eq!(
        decisions,
        vec![
            ("present", Some(env.tenant.approver_id), "failed", false),
            ("absent", Some(colleague), "succeeded", false),
            ("present", Some(env.tenant.approver_id), "failed", true),
        ]
    );
    let status = docflow_cli::status::load(&env.pool, env.tenant.document_id)
        .await
        .unwrap()
        .unwrap();
    let text = status.to_string();
    assert!(
        text.contains(&format!("resolved present by {email}"))
            && text.contains("found RE-42 twice in DATEV")
            && text.contains("superseded: absent by")
            && text.contains("another supplier")
            && text.contains("superseded: present by")
            && text.contains("proposal RE-42 in DATEV"),
        "docflow status shows every decision:\n{text}"
    );
    let json = serde_json::to_value(&status).unwrap();
    assert_eq!(json["audits"][0]["decisions"].as_array().unwrap().len(), 3);
    assert_eq!(env.maesn_requests("POST", CREATE).await.len(), 2);
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
    let err = resolve(&env, open, Decision::Absent, &by, "x")
        .await
        .unwrap_err();
    assert!(err.to_string().contains("still submitted"), "{err:#}");

    let audit = in_doubt(&env).await;
    let err = resolve(&env, audit, Decision::Absent, &by, "   ")
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
    let err = resolve(
        &env,
        audit,
        Decision::Absent,
        &outsider.to_string(),
        "not mine to decide",
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("does not belong"), "{err:#}");

    let err = resolve(&env, Uuid::new_v4(), Decision::Absent, &by, "x")
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
        // --force only overrides the window of --absent.
        vec![
            "export",
            "resolve",
            &id,
            "--present",
            "--force",
            "r",
            "--by",
            "a@b.example",
            "--note",
            "n",
        ],
    ] {
        let out = run(&args);
        assert_eq!(out.status.code(), Some(2), "a usage error: {args:?}");
    }
    let help = run(&["export", "resolve", "--help"]);
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(
        help.contains("--absent")
            && help.contains("--present")
            && help.contains("--force")
            && help.contains("EXPORT_RESOLVE_WINDOW_SECONDS"),
        "{help}"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_docflow"))
        .args([
            "export",
            "resolve",
            &id,
            "--absent",
            "--by",
            "a@b.example",
            "--note",
            "n",
        ])
        .env("DATABASE_URL", "postgres://nobody@127.0.0.1:1/none")
        .env("EXPORT_RESOLVE_WINDOW_SECONDS", "an hour")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("must be whole seconds"),
        "{stderr}"
    );
}

/// A hostile Maesn: the stand-in books the proposal and answers at once, but
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

    let resolved = resolve(
        &env,
        audit,
        Decision::Present,
        &env.tenant.approver_id.to_string(),
        "the proposal is in DATEV although the task never ended",
    )
    .await
    .unwrap();
    assert_eq!(resolved.status, "succeeded");
}
