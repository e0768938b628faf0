//! Maesn's infrastructure at its worst. Answers that come after Maesn booked
//! the request (a proxy's 503, a 303, a 200 whose body a reset cuts off) are in doubt
//! and never followed by a second POST; a keep-alive connection a load balancer dropped
//! while the function was frozen is never written into; a 401 late in the attempt is
//! repeated with rotated keys only while a whole request still fits.

use std::sync::Arc;
use std::time::Duration;

use docflow::datev::{DatevConnector, MaesnClient, MaesnConfig};
use docflow::ids::DocumentId;
use docflow::output::worker::{self, Attempt, ExportOutcome, WorkerSettings};
use docflow::secrets::SecretStore;
use docflow_tests::hostile::{CUT_BODY, CUT_BODY_VALUE, HostileFront};
use docflow_tests::output::{ACCOUNT_KEY, API_KEY, OutputEnv, setup};
use serde_json::json;
use sqlx::PgPool;
use uuid::Uuid;
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, ResponseTemplate};

const CREATE: &str = "/accounting/bookingProposals/async";

/// Matches requests whose (binary) body contains `needle` (the document id in the
/// proposal).
struct BodyHas(Vec<u8>);

impl wiremock::Match for BodyHas {
    fn matches(&self, request: &wiremock::Request) -> bool {
        request
            .body
            .windows(self.0.len())
            .any(|w| w == self.0.as_slice())
    }
}

fn for_document(doc: Uuid) -> wiremock::MockBuilder {
    Mock::given(method("POST"))
        .and(path(CREATE))
        .and(BodyHas(doc.to_string().into_bytes()))
}

fn accepted_body(task_id: &str) -> serde_json::Value {
    json!({ "meta": { "warnings": [] }, "data": { "taskId": task_id } })
}

/// An approved document with its file and a pending job.
async fn document_with_job(env: &OutputEnv) -> (Uuid, Uuid) {
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

/// Claims `job` and exports it with `maesn` and `settings`.
async fn export(
    env: &OutputEnv,
    maesn: &MaesnClient,
    settings: &WorkerSettings,
    job: Uuid,
    deadline: Option<Duration>,
) -> ExportOutcome {
    let claim = worker::claim(&env.pool, job.into(), Duration::from_secs(600))
        .await
        .unwrap()
        .expect("claimable");
    let attempt = Attempt {
        deadline: deadline.map(|d| tokio::time::Instant::now() + d),
        final_receive: false,
    };
    worker::export(&env.pool, &env.s3, maesn, settings, &claim, attempt)
        .await
        .unwrap()
}

async fn posts_for(env: &OutputEnv, doc: Uuid) -> usize {
    let needle = BodyHas(doc.to_string().into_bytes());
    env.maesn_requests("POST", CREATE)
        .await
        .iter()
        .filter(|r| wiremock::Match::matches(&needle, r))
        .count()
}

fn in_doubt(outcome: &ExportOutcome) -> bool {
    matches!(outcome, ExportOutcome::Failed { in_doubt: true, .. })
}

/// A 503 or 429 that does not carry Maesn's own marks may come from a proxy after the
/// origin booked: in doubt, one POST. A `Retry-After` is no such mark: any gateway sends
/// one. Maesn's own 503 or 429 (its JSON envelope, no proxy's mark) stays a refusal
/// worth retrying.
#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_503_or_429_from_a_proxy_after_the_booking_is_in_doubt_and_never_sent_again(
    pool: PgPool,
) {
    let env = setup(pool).await;
    let envelope =
        json!({ "meta": {}, "error": { "code": "SERVICE_UNAVAILABLE", "message": "later" } });
    let proxies = [
        ResponseTemplate::new(503)
            .insert_header("server", "envoy")
            .set_body_string("upstream connect error or disconnect/reset before headers. reset reason: connection termination"),
        ResponseTemplate::new(503)
            .insert_header("server", "cloudflare")
            .set_body_raw("<html><body>503 Service Unavailable</body></html>", "text/html"),
        ResponseTemplate::new(503)
            .insert_header("server", "awselb/2.0")
            .set_body_raw("<html><head><title>503 Service Temporarily Unavailable</title></head></html>", "text/html"),
        ResponseTemplate::new(503).set_body_string("Service Unavailable"),
        ResponseTemplate::new(503).set_body_string("no healthy upstream"),
        // A proxy's mark wins over what looks like Maesn's.
        ResponseTemplate::new(503)
            .insert_header("server", "envoy")
            .insert_header("retry-after", "5")
            .set_body_json(envelope.clone()),
        // A Retry-After alone is any gateway's.
        ResponseTemplate::new(503)
            .insert_header("retry-after", "0")
            .set_body_string("Service Unavailable"),
        ResponseTemplate::new(429)
            .insert_header("retry-after", "0")
            .set_body_string("Too Many Requests"),
    ];
    let maesns = [
        ResponseTemplate::new(503).set_body_json(envelope),
        ResponseTemplate::new(429)
            .insert_header("retry-after", "0")
            .set_body_json(json!({ "statusCode": 429, "message": "Too Many Requests" })),
    ];
    let mut cases = Vec::new();
    for (answer, proxied) in proxies
        .into_iter()
        .map(|a| (a, true))
        .chain(maesns.into_iter().map(|a| (a, false)))
    {
        let (doc, job) = document_with_job(&env).await;
        for_document(doc)
            .respond_with(answer)
            .mount(&env.maesn)
            .await;
        cases.push((doc, job, proxied));
    }

    for (i, (doc, job, proxied)) in cases.into_iter().enumerate() {
        let outcome = export(&env, &env.deps.maesn, &env.deps.settings, job, None).await;
        let audits = env.audits(doc).await;
        if proxied {
            assert!(in_doubt(&outcome), "case {i}: {outcome:?}");
            assert_eq!(posts_for(&env, doc).await, 1, "case {i}: one POST only");
            assert!(!audits[0].retryable, "case {i}: blocks a re-export");
            let job = env.job(job).await;
            assert_eq!(job.status, "failed", "case {i}");
            assert!(job.last_error.unwrap().contains("in doubt"), "case {i}");
        } else {
            assert!(
                matches!(outcome, ExportOutcome::Deferred { .. }),
                "case {i}: Maesn's own 503 or 429 is a refusal: {outcome:?}"
            );
            assert_eq!(
                posts_for(&env, doc).await,
                3,
                "case {i}: retried in process"
            );
            assert!(audits[0].retryable, "case {i}");
        }
    }
}

/// Of the 3xx answers only 307/308 say "not processed, send it elsewhere"; a 303
/// (or any other 3xx) after the POST answers a request that was processed. No redirect
/// is followed.
#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_303_after_the_booking_is_in_doubt_and_its_location_is_never_requested(pool: PgPool) {
    let env = setup(pool).await;
    let elsewhere = "/accounting/bookingProposals/elsewhere";
    Mock::given(path(elsewhere))
        .respond_with(ResponseTemplate::new(200).set_body_json(accepted_body("task-elsewhere")))
        .expect(0)
        .mount(&env.maesn)
        .await;
    let mut cases = Vec::new();
    for status in [300u16, 301, 302, 303, 307, 308] {
        let (doc, job) = document_with_job(&env).await;
        for_document(doc)
            .respond_with(
                ResponseTemplate::new(status)
                    .insert_header("location", format!("{}{elsewhere}", env.maesn.uri())),
            )
            .mount(&env.maesn)
            .await;
        cases.push((status, doc, job));
    }

    for (status, doc, job) in cases {
        let outcome = export(&env, &env.deps.maesn, &env.deps.settings, job, None).await;
        assert_eq!(posts_for(&env, doc).await, 1, "HTTP {status}: one POST");
        let audit = &env.audits(doc).await[0];
        if matches!(status, 307 | 308) {
            assert!(
                matches!(
                    outcome,
                    ExportOutcome::Failed {
                        in_doubt: false,
                        ..
                    }
                ),
                "HTTP {status} is a refusal: {outcome:?}"
            );
            assert!(audit.retryable, "HTTP {status}");
        } else {
            assert!(in_doubt(&outcome), "HTTP {status}: {outcome:?}");
            assert!(!audit.retryable, "HTTP {status}");
        }
    }
    assert!(
        env.maesn_requests("GET", elsewhere).await.is_empty()
            && env.maesn_requests("POST", elsewhere).await.is_empty(),
        "no redirect followed"
    );
}

/// A 200 (Maesn booked) whose body a reset cuts off: in doubt, one POST.
#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_200_whose_body_is_cut_off_by_a_reset_is_in_doubt(pool: PgPool) {
    let env = setup(pool).await;
    let front = HostileFront::start(&env.maesn.uri(), None).await;
    let maesn = env.maesn_client(front.url(), Duration::from_secs(10), Duration::from_secs(2));
    let (doc, job) = document_with_job(&env).await;
    for_document(doc)
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header(CUT_BODY, CUT_BODY_VALUE)
                .set_body_json(accepted_body("task-cut-off")),
        )
        .mount(&env.maesn)
        .await;

    let outcome = export(&env, &maesn, &env.deps.settings, job, None).await;

    assert!(in_doubt(&outcome), "{outcome:?}");
    assert_eq!(front.cut_bodies(), 1, "the body was cut off");
    assert_eq!(posts_for(&env, doc).await, 1, "never sent again");
    assert!(!env.audits(doc).await[0].retryable);
    // The half that arrived (the task id cut in two) is kept for the person who checks.
    let kept = response_body(&env, doc).await.expect("the answer is kept");
    assert!(kept.starts_with(r#"{"data":{"taskId":"task-"#), "{kept}");
    assert!(!kept.contains("task-cut-off"), "{kept}");
}

async fn response_body(env: &OutputEnv, doc: Uuid) -> Option<String> {
    sqlx::query_scalar("SELECT response_body FROM ap_datev_export_audit WHERE document_id = $1")
        .bind(doc)
        .fetch_one(&env.pool)
        .await
        .unwrap()
}

/// A 200 cut off by a reset after its task id arrived whole: Maesn has the export. The
/// task id is salvaged, the audit `submitted` with it (the broken answer kept), and the
/// task poll follows it to its end, as any other.
#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_task_id_that_arrived_before_the_reset_is_salvaged_and_followed_to_its_end(pool: PgPool) {
    let env = setup(pool).await;
    let front = HostileFront::start(&env.maesn.uri(), None).await;
    let maesn = env.maesn_client(front.url(), Duration::from_secs(10), Duration::from_secs(2));
    let (doc, job) = document_with_job(&env).await;
    let padding = "x".repeat(200);
    for_document(doc)
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header(CUT_BODY, CUT_BODY_VALUE)
                .set_body_raw(
                    format!(
                        r#"{{"data":{{"taskId":"task-salvaged"}},"meta":{{"note":"{padding}"}}}}"#
                    ),
                    "application/json",
                ),
        )
        .mount(&env.maesn)
        .await;
    Mock::given(method("GET"))
        .and(path("/accounting/asyncTask/task-salvaged"))
        .respond_with(ResponseTemplate::new(200).set_body_json(
            json!({ "meta": {}, "data": { "status": "SUCCESS", "information": [] } }),
        ))
        .mount(&env.maesn)
        .await;

    let outcome = export(&env, &maesn, &env.deps.settings, job, None).await;

    assert_eq!(front.cut_bodies(), 1, "the body was cut off");
    assert!(
        matches!(&outcome, ExportOutcome::Dispatched { task_id, .. } if task_id == "task-salvaged"),
        "{outcome:?}"
    );
    assert_eq!(posts_for(&env, doc).await, 1);
    let audit = &env.audits(doc).await[0];
    assert_eq!(audit.status, "submitted");
    assert_eq!(audit.task_id.as_deref(), Some("task-salvaged"));
    assert!(
        audit
            .error
            .as_deref()
            .unwrap_or_default()
            .contains("salvaged"),
        "{:?}",
        audit.error
    );
    let kept = response_body(&env, doc).await.expect("the answer is kept");
    assert!(kept.contains("task-salvaged") && kept.len() < 150, "{kept}");
    assert_eq!(env.job(job).await.status, "dispatched");

    let polled = worker::poll_open_tasks_with(
        &env.pool,
        &maesn,
        50,
        &worker::PollSettings {
            max_task_age: Duration::from_secs(48 * 3600),
        },
    )
    .await
    .unwrap();

    assert_eq!(polled.succeeded, 1, "{polled:?}");
    assert_eq!(env.audits(doc).await[0].status, "succeeded");
}

/// A 200 whose body is not Maesn's envelope and names no task (a gateway's "OK" page):
/// in doubt, one POST, and what it said is kept on the audit.
#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_200_that_is_not_maesns_envelope_is_in_doubt_and_kept(pool: PgPool) {
    let env = setup(pool).await;
    let (doc, job) = document_with_job(&env).await;
    let page = "<html><body>Request accepted</body></html>";
    for_document(doc)
        .respond_with(ResponseTemplate::new(200).set_body_raw(page, "text/html"))
        .mount(&env.maesn)
        .await;

    let outcome = export(&env, &env.deps.maesn, &env.deps.settings, job, None).await;

    assert!(in_doubt(&outcome), "{outcome:?}");
    assert_eq!(posts_for(&env, doc).await, 1);
    assert_eq!(response_body(&env, doc).await.as_deref(), Some(page));
}

/// After a Lambda freeze the load balancer has dropped the idle keep-alive
/// connection. A front that drops connections idle for more than 1 s: two exports 2 s
/// apart both end dispatched (the POST never reuses an idle connection), none in doubt.
#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn two_exports_2_s_apart_through_a_front_dropping_idle_connections_are_dispatched(
    pool: PgPool,
) {
    let env = setup(pool).await;
    let front = HostileFront::start(&env.maesn.uri(), Some(Duration::from_secs(1))).await;
    let maesn = env.maesn_client(front.url(), Duration::from_secs(10), Duration::from_secs(2));
    Mock::given(method("POST"))
        .and(path(CREATE))
        .respond_with(ResponseTemplate::new(200).set_body_json(accepted_body("task-fresh")))
        .mount(&env.maesn)
        .await;
    let (first_doc, first) = document_with_job(&env).await;
    let (second_doc, second) = document_with_job(&env).await;

    let one = export(&env, &maesn, &env.deps.settings, first, None).await;
    // The function "frozen" between two invocations, longer than the front keeps an
    // idle connection.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let two = export(&env, &maesn, &env.deps.settings, second, None).await;

    assert!(matches!(one, ExportOutcome::Dispatched { .. }), "{one:?}");
    assert!(matches!(two, ExportOutcome::Dispatched { .. }), "{two:?}");
    assert_eq!(
        front.idle_resets(),
        0,
        "no request written into a dropped connection"
    );
    assert_eq!(posts_for(&env, first_doc).await, 1);
    assert_eq!(posts_for(&env, second_doc).await, 1);
}

/// A repeat only while a whole attempt fits (the hostile stand-in's "401 at 25 s with a
/// rotated key"), scaled: Maesn
/// timeout 20 s, record reserve 2 s (an attempt needs 22 s), an invocation with 30 s
/// left, Maesn answering 401 after 12 s because the key was rotated meanwhile. A repeat
/// then would have less than a whole request's budget and could be cut mid-flight at
/// the deadline (in doubt for nothing): it is not sent. The export is deferred as a
/// passing refusal, and the next delivery books with the new key. (The first attempt
/// starts as long as claiming, reading the file and writing the audit take < 8 s; after
/// the 401 at most 18 s are left whatever the machine's speed.)
#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_401_late_in_the_attempt_with_a_rotated_key_is_repeated_only_with_a_whole_budget(
    pool: PgPool,
) {
    let env = setup(pool).await;
    let store = SecretStore::new(
        env.secrets.clone(),
        &env.app_secret_id,
        Duration::from_secs(300),
    )
    .with_refresh_min_age(Duration::ZERO);
    let maesn = MaesnClient::new(
        &MaesnConfig {
            base_url: env.maesn.uri(),
            timeout: Duration::from_secs(20),
            connect_timeout: Duration::from_secs(1),
            credentials_prefix: env.credentials_prefix.clone(),
        },
        Arc::new(store),
    )
    .unwrap();
    let settings = WorkerSettings {
        maesn_timeout: Duration::from_secs(20),
        record_reserve: Duration::from_secs(2),
        ..env.deps.settings.clone()
    };
    Mock::given(method("POST"))
        .and(path(CREATE))
        .and(header("X-API-KEY", API_KEY))
        .respond_with(
            ResponseTemplate::new(401)
                .set_delay(Duration::from_secs(12))
                .set_body_json(
                    json!({ "error": { "code": "UNAUTHORIZED", "message": "key revoked" } }),
                ),
        )
        .mount(&env.maesn)
        .await;
    Mock::given(method("POST"))
        .and(path(CREATE))
        .and(header("X-API-KEY", "maesn-key-rotated"))
        .and(header("X-ACCOUNT-KEY", ACCOUNT_KEY))
        .respond_with(ResponseTemplate::new(200).set_body_json(accepted_body("task-new-key")))
        .mount(&env.maesn)
        .await;
    let (doc, job) = document_with_job(&env).await;
    // A warm instance: the old keys are cached; then the API key is rotated.
    let account = docflow::datev::DatevAccount {
        tenant_id: env.tenant.tenant_id,
        company_id: docflow_tests::output::COMPANY_ID.into(),
    };
    maesn.keys(&account).await.unwrap();
    env.secrets
        .put_secret_value()
        .secret_id(&env.app_secret_id)
        .secret_string(json!({ "maesn_api_key": "maesn-key-rotated" }).to_string())
        .send()
        .await
        .unwrap();

    let late = export(&env, &maesn, &settings, job, Some(Duration::from_secs(30))).await;

    assert_eq!(
        posts_for(&env, doc).await,
        1,
        "no repeat without a whole budget"
    );
    assert!(
        matches!(&late, ExportOutcome::Deferred { error, .. } if error.contains("rotated")),
        "a passing refusal: {late:?}"
    );
    assert_eq!(env.job(job).await.status, "pending");
    assert!(env.audits(doc).await[0].retryable, "nothing was booked");

    let next = export(&env, &maesn, &settings, job, None).await;

    assert!(
        matches!(&next, ExportOutcome::Dispatched { task_id, .. } if task_id == "task-new-key"),
        "{next:?}"
    );
    assert_eq!(posts_for(&env, doc).await, 2);
}

/// The file's size is checked before it is read; too large is a lasting
/// refusal with a clear error, and nothing is started.
#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_file_larger_than_the_limit_is_refused_for_good_before_it_is_read(pool: PgPool) {
    let env = setup(pool).await;
    Mock::given(method("POST"))
        .and(path(CREATE))
        .respond_with(ResponseTemplate::new(200).set_body_json(accepted_body("task-never")))
        .expect(0)
        .mount(&env.maesn)
        .await;
    let settings = WorkerSettings {
        max_file_bytes: docflow_tests::output::FILE_BYTES.len() as u64 - 1,
        ..env.deps.settings.clone()
    };
    let (doc, job) = document_with_job(&env).await;

    let outcome = export(&env, &env.deps.maesn, &settings, job, None).await;

    let ExportOutcome::Failed { error, in_doubt } = &outcome else {
        panic!("a lasting refusal: {outcome:?}");
    };
    assert!(!in_doubt);
    assert!(
        error.contains("OUTPUT_MAX_FILE_BYTES")
            && error.contains(&docflow_tests::output::FILE_BYTES.len().to_string()),
        "names the size and the limit: {error}"
    );
    assert_eq!(env.job(job).await.status, "failed");
    assert!(env.audits(doc).await.is_empty(), "nothing started");
    let exact = WorkerSettings {
        max_file_bytes: docflow_tests::output::FILE_BYTES.len() as u64,
        ..env.deps.settings.clone()
    };
    Mock::given(method("POST"))
        .and(path(CREATE))
        .respond_with(ResponseTemplate::new(200).set_body_json(accepted_body("task-fits")))
        .with_priority(1)
        .expect(1)
        .mount(&env.maesn)
        .await;
    let (_, fits) = document_with_job(&env).await;
    assert!(matches!(
        export(&env, &env.deps.maesn, &exact, fits, None).await,
        ExportOutcome::Dispatched { .. }
    ));
}

/// A second tenant with an active DATEV integration and its own account key.
async fn other_tenant(env: &OutputEnv) -> Uuid {
    let tenant: Uuid = sqlx::query_scalar(
        "INSERT INTO tenant (organization_id, name) VALUES ($1, 'Other GmbH') RETURNING id",
    )
    .bind(env.tenant.organization_id)
    .fetch_one(&env.pool)
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO tenant_datev_integration (tenant_id, status, company_id) VALUES ($1, 'active', 'company-other')",
    )
    .bind(tenant)
    .execute(&env.pool)
    .await
    .unwrap();
    env.put_account_key(tenant, "account-key-other").await;
    tenant
}

/// A job (or audit) of another tenant than its document is refused by the
/// schema.
#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn the_schema_refuses_a_job_or_audit_of_another_tenant_than_its_document(pool: PgPool) {
    let env = setup(pool).await;
    let other = other_tenant(&env).await;
    let job = sqlx::query(
        r#"INSERT INTO document_output_job (tenant_id, document_id, document_domain, trigger)
           VALUES ($1, $2, 'ap', 'manual')"#,
    )
    .bind(other)
    .bind(env.tenant.document_id)
    .execute(&env.pool)
    .await
    .unwrap_err();
    assert_eq!(
        job.as_database_error().and_then(|e| e.code()).as_deref(),
        Some("23503"),
        "{job}"
    );
    let audit =
        sqlx::query("INSERT INTO ap_datev_export_audit (tenant_id, document_id) VALUES ($1, $2)")
            .bind(other)
            .bind(env.tenant.document_id)
            .execute(&env.pool)
            .await
            .unwrap_err();
    assert_eq!(
        audit.as_database_error().and_then(|e| e.code()).as_deref(),
        Some("23503"),
        "{audit}"
    );
    // The document's own tenant is fine.
    env.insert_job(env.tenant.document_id, "pending").await;
}

/// A job whose tenant is not its document's (a row from before the schema
/// enforced it) is refused for good, visibly, and nothing is sent: the account key
/// would be one tenant's and the company the other's.
#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_job_of_another_tenant_than_its_document_is_refused_and_nothing_sent(pool: PgPool) {
    let env = setup(pool).await;
    Mock::given(method("POST"))
        .and(path(CREATE))
        .respond_with(ResponseTemplate::new(200).set_body_json(accepted_body("task-never")))
        .expect(0)
        .mount(&env.maesn)
        .await;
    let other = other_tenant(&env).await;
    // A row written before the constraint existed (this test's own database).
    sqlx::query(
        "ALTER TABLE document_output_job DROP CONSTRAINT document_output_job_document_tenant_fkey",
    )
    .execute(&env.pool)
    .await
    .unwrap();
    env.approve(env.tenant.document_id).await;
    let job: Uuid = sqlx::query_scalar(
        r#"INSERT INTO document_output_job (tenant_id, document_id, document_domain, trigger, document_version)
           VALUES ($1, $2, 'ap', 'manual', 3) RETURNING id"#,
    )
    .bind(other)
    .bind(env.tenant.document_id)
    .fetch_one(&env.pool)
    .await
    .unwrap();

    let outcome = export(&env, &env.deps.maesn, &env.deps.settings, job, None).await;

    let ExportOutcome::Failed { error, in_doubt } = &outcome else {
        panic!("refused: {outcome:?}");
    };
    assert!(!in_doubt);
    assert!(
        error.contains("refused") && error.contains(&other.to_string()),
        "{error}"
    );
    let row = env.job(job).await;
    assert_eq!(row.status, "failed");
    assert!(
        row.last_error.unwrap().contains("tenant"),
        "visible on the job"
    );
    assert!(env.audits(env.tenant.document_id).await.is_empty());
}
