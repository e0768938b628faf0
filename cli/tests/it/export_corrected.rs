//! A corrected invoice (BT-3 `384`) and the invoice it replaces are never both booked in
//! DATEV unless a person decided, against Postgres, the local SQS/S3 and a wiremock
//! Maesn: `docflow export` refuses the second, a job for it that reaches the worker
//! fails visibly with nothing sent, two jobs run at once book one, and
//! `docflow export allow-both` lets the second go.

use docflow_cli::export;
use docflow_tests::output::{OutputEnv, invoice_extraction, setup};
use serde_json::json;
use sqlx::PgPool;
use uuid::Uuid;
use wiremock::matchers::{method, path};
use wiremock::{Mock, ResponseTemplate};

const CREATE: &str = "/accounting/bookingProposals/async";

async fn maesn_accepts(env: &OutputEnv) {
    Mock::given(method("POST"))
        .and(path(CREATE))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({ "meta": {}, "data": { "taskId": "task-1" } })),
        )
        .mount(&env.maesn)
        .await;
}

/// The tenant's invoice RE-2026-0042 (approved, with its file) and a second approved
/// document turned into its corrected invoice RE-2026-0042-K of 150.00 (BT-25:
/// RE-2026-0042). Returns (replaced, correction).
async fn pair(env: &OutputEnv) -> (Uuid, Uuid) {
    let replaced = env.tenant.document_id;
    env.approve(replaced).await;
    let correction = env.another_approved_document().await;
    let mut data = invoice_extraction();
    data.invoice_number = Some("RE-2026-0042-K".into());
    data.replaces_invoice = Some("RE-2026-0042".into());
    data.total = Some(150.0);
    sqlx::query("UPDATE document SET structured_data = $2 WHERE id = $1")
        .bind(correction)
        .bind(data.to_stored())
        .execute(&env.pool)
        .await
        .unwrap();
    (replaced, correction)
}

/// Marks the document pending and matches it (it is normalised and linked).
async fn matched(pool: &PgPool, id: Uuid) {
    sqlx::query("UPDATE document SET matching_status = 'pending' WHERE id = $1")
        .bind(id)
        .execute(pool)
        .await
        .unwrap();
    docflow_tests::matched(pool, id).await;
}

async fn posts(env: &OutputEnv) -> usize {
    env.maesn_requests("POST", CREATE).await.len()
}

async fn request(env: &OutputEnv, document: Uuid) -> anyhow::Result<String> {
    export::request(
        &env.pool,
        &env.dispatcher,
        document,
        &env.tenant.approver_id.to_string(),
    )
    .await
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn the_second_invoice_of_a_corrected_pair_is_booked_only_after_a_person_decides(
    pool: PgPool,
) {
    let env = setup(pool).await;
    maesn_accepts(&env).await;
    let (replaced, correction) = pair(&env).await;
    matched(&env.pool, replaced).await;
    matched(&env.pool, correction).await;

    request(&env, replaced).await.unwrap();
    env.deliver(1).await;
    assert_eq!(posts(&env).await, 1);
    assert_eq!(env.audits(replaced).await[0].status, "submitted");

    // The manual export of the correction is refused, saying why and what to do.
    let refused = request(&env, correction).await.unwrap_err().to_string();
    assert!(
        refused.contains("never both booked")
            && refused.contains(&replaced.to_string())
            && refused.contains("allow-both"),
        "{refused}"
    );

    // A job that reaches the worker anyway (created before the first was booked) fails
    // with the same reason, sends nothing, and the admins are told.
    let job = env.insert_job(correction, "pending").await;
    env.send(&job.to_string()).await;
    let (_, response, _) = env.deliver(1).await;
    assert!(response.batch_item_failures.is_empty(), "decided at once");
    let row = env.job(job).await;
    assert_eq!(row.status, "failed");
    assert!(
        row.last_error.as_deref().unwrap().contains("allow-both"),
        "{:?}",
        row.last_error
    );
    assert_eq!(posts(&env).await, 1, "nothing sent for the correction");
    assert!(env.audits(correction).await.is_empty());
    let notices = env.notices().await;
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(notices[0].to_string().contains("never both booked"));

    // A person decides both belong in DATEV; the correction is exported once.
    let by = env.tenant.approver_id.to_string();
    assert!(
        export::allow_both(&env.pool, correction, &by, "  ")
            .await
            .is_err(),
        "a decision says why"
    );
    let decided = export::allow_both(
        &env.pool,
        correction,
        &by,
        "RE-2026-0042 was paid and credited separately; the correction is booked too",
    )
    .await
    .unwrap();
    assert!(decided.contains(&correction.to_string()), "{decided}");
    request(&env, correction).await.unwrap();
    env.deliver(1).await;
    assert_eq!(posts(&env).await, 2);
    assert_eq!(env.audits(correction).await[0].status, "submitted");
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_correction_is_held_even_before_matching_linked_it_to_the_booked_invoice(pool: PgPool) {
    let env = setup(pool).await;
    maesn_accepts(&env).await;
    let (replaced, correction) = pair(&env).await;
    // Only the replaced invoice was matched (normalised); the correction is exported
    // before its own matching ran: there is no link yet.
    matched(&env.pool, replaced).await;
    request(&env, replaced).await.unwrap();
    env.deliver(1).await;

    request(&env, correction).await.unwrap();
    env.deliver(1).await;
    assert_eq!(
        posts(&env).await,
        1,
        "the correction is not booked beside it"
    );
    assert!(env.audits(correction).await.is_empty());
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn two_exports_of_the_pair_at_once_book_one_of_them(pool: PgPool) {
    let env = setup(pool).await;
    maesn_accepts(&env).await;
    let (replaced, correction) = pair(&env).await;
    matched(&env.pool, replaced).await;
    matched(&env.pool, correction).await;
    // Both jobs exist before either is booked, and run in one batch.
    request(&env, replaced).await.unwrap();
    request(&env, correction).await.unwrap();
    env.deliver(2).await;

    assert_eq!(posts(&env).await, 1);
    let booked = [replaced, correction].len()
        - [
            env.audits(replaced).await.is_empty(),
            env.audits(correction).await.is_empty(),
        ]
        .iter()
        .filter(|empty| **empty)
        .count();
    assert_eq!(booked, 1, "exactly one of the two has an audit");
}
