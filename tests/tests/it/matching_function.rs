//! The matching Lambda end to end: the sample events, real moto queues with the redrive
//! policy driven by the local event source mapping, Postgres, a wiremock LLM answering
//! like Anthropic's Messages API and a wiremock Slack webhook.

use crate::matching_support;

use std::time::Duration;

use aws_lambda_events::event::sqs::SqsEvent;
use docflow::matching::DocumentType;
use docflow::matching::status::{self, Attempt, Claim};
use docflow_dev::local::QueueSpec;
use docflow_tests::llm::anthropic_text;
use docflow_tests::{fresh_queue, lambda_event, mapping, poll_n, send, sqs, visible_bodies};
use matching_support::*;
use sqlx::PgPool;
use uuid::Uuid;
use wiremock::MockServer;

fn sample(name: &str) -> SqsEvent {
    let json = match name {
        "valid" => include_str!("../../../events/matching/valid.json"),
        "batch" => include_str!("../../../events/matching/batch.json"),
        "poison" => include_str!("../../../events/matching/poison.json"),
        "missing-document" => include_str!("../../../events/matching/missing-document.json"),
        other => panic!("no sample event {other}"),
    };
    serde_json::from_str(json).expect("sample event is a Lambda SQS event")
}

/// The valid sample with its body replaced by `id`, sent just now: a new message.
fn valid_event_for(id: Uuid) -> SqsEvent {
    let mut event = sample("valid");
    event.records[0].body = Some(id.to_string());
    event.records[0].attributes.insert(
        "SentTimestamp".into(),
        chrono::Utc::now().timestamp_millis().to_string(),
    );
    event
}

/// A purchase order already matched, and an invoice that is ambiguous against it, so
/// matching the invoice calls the LLM.
async fn ambiguous_invoice(pool: &PgPool) -> (Uuid, Uuid) {
    let t = tenant(pool, "Acme AG").await;
    let po = matched_document(
        pool,
        t,
        DocumentType::PurchaseOrder,
        purchase_order("PO-2024-0042", "2024-03-01", 1190.0),
    )
    .await;
    let inv = document(
        pool,
        t,
        DocumentType::Invoice,
        invoice_without_references("RE-77", "2024-03-08", 1190.0),
    )
    .await;
    (inv, po)
}

const LLM_SAYS_MATCH: &str =
    r#"{"matches":[{"candidate":1,"confidence":"high","reasoning":"Same supplier and total."}]}"#;

fn queue_spec() -> QueueSpec {
    // A short queue visibility timeout: a message hidden for longer than 1 s was hidden
    // by the function's Retry, not by the queue.
    QueueSpec {
        visibility_timeout: Duration::from_secs(1),
        max_receive_count: 3,
        fifo: false,
    }
}

async fn reset_visibility(sqs: &aws_sdk_sqs::Client, url: &str, event: &SqsEvent) {
    sqs.change_message_visibility()
        .queue_url(url)
        .receipt_handle(event.records[0].receipt_handle.clone().unwrap())
        .visibility_timeout(0)
        .send()
        .await
        .expect("reset visibility");
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn poison_and_missing_document_samples_are_discarded(pool: PgPool) {
    let slack = slack_server().await;
    let deps = deps(&pool, None, slack_notifier(&slack)).await;
    // A pending document the samples do not name: nothing may touch it.
    let t = tenant(&pool, "Acme AG").await;
    let bystander = document(
        &pool,
        t,
        DocumentType::Invoice,
        invoice("RE-1", "PO-2024-0042", "LS-1", "2024-03-05", 1190.0),
    )
    .await;
    let missing: Uuid = sample("missing-document").records[0]
        .body
        .as_deref()
        .unwrap()
        .parse()
        .unwrap();

    for name in ["poison", "missing-document"] {
        let response = matching::handler(&deps, lambda_event(sample(name), None))
            .await
            .unwrap();
        assert!(response.batch_item_failures.is_empty(), "{name} is deleted");
    }

    let s = state(&pool, bystander).await;
    assert_eq!(
        (s.matching_status.as_deref(), s.matching_attempts),
        (Some("pending"), 0)
    );
    let created: i64 = sqlx::query_scalar("SELECT count(*) FROM document WHERE id = $1")
        .bind(missing)
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(created, 0, "the missing document is not created");
    assert!(slack_bodies(&slack).await.is_empty(), "no one is notified");
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn the_batch_sample_matches_its_valid_record_and_discards_the_others(pool: PgPool) {
    let t = tenant(&pool, "Acme AG").await;
    let (po, inv) = order_and_invoice(&pool, t).await;
    let mut event = sample("batch");
    event.records[0].body = Some(inv.to_string());
    let deps = deps(&pool, None, slack_notifier(&slack_server().await)).await;

    let response = matching::handler(&deps, lambda_event(event, None))
        .await
        .unwrap();

    assert!(response.batch_item_failures.is_empty());
    assert_eq!(pairs(&pool).await, vec![pair(inv, po)]);
    let s = state(&pool, inv).await;
    assert_eq!(
        (s.matching_status.as_deref(), s.matching_attempts),
        (Some("succeeded"), 1)
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_document_without_structured_data_is_discarded_and_left_untouched(pool: PgPool) {
    let t = tenant(&pool, "Acme AG").await;
    let id: Uuid = sqlx::query_scalar(
        "INSERT INTO document (tenant_id, type, file_path, matching_status) VALUES ($1, 'invoice', 'documents/x.pdf', 'pending') RETURNING id",
    )
    .bind(t)
    .fetch_one(&pool)
    .await
    .unwrap();
    let deps = deps(&pool, None, slack_notifier(&slack_server().await)).await;

    let response = matching::handler(&deps, lambda_event(valid_event_for(id), None))
        .await
        .unwrap();

    assert!(response.batch_item_failures.is_empty());
    let s = state(&pool, id).await;
    assert_eq!(
        (s.matching_status.as_deref(), s.matching_attempts),
        (Some("pending"), 0)
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn status_is_in_progress_while_matching_and_succeeded_after(pool: PgPool) {
    let llm = MockServer::start().await;
    let gate = Gate::new(LLM_SAYS_MATCH);
    messages().respond_with(gate.clone()).mount(&llm).await;
    let (inv, po) = ambiguous_invoice(&pool).await;
    let deps = deps(
        &pool,
        Some(llm_client(&llm)),
        slack_notifier(&slack_server().await),
    )
    .await;

    let (response, during) = tokio::join!(
        matching::handler(&deps, lambda_event(valid_event_for(inv), None)),
        async {
            // The LLM holds the request: the run is mid-way.
            gate.arrived().await;
            let during = state(&pool, inv).await;
            gate.open();
            during
        }
    );

    assert_eq!(during.matching_status.as_deref(), Some("in-progress"));
    assert_eq!(during.matching_attempts, 1);
    assert!(response.unwrap().batch_item_failures.is_empty());
    let after = state(&pool, inv).await;
    assert_eq!(after.matching_status.as_deref(), Some("succeeded"));
    assert_eq!(pairs(&pool).await, vec![pair(inv, po)]);
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_second_delivery_meeting_a_live_claim_neither_runs_nor_pays_for_the_llm(pool: PgPool) {
    // Arrange: the LLM holds the first delivery's call until the second has been handled.
    let llm = MockServer::start().await;
    let gate = Gate::new(LLM_SAYS_MATCH);
    messages().respond_with(gate.clone()).mount(&llm).await;
    let (inv, po) = ambiguous_invoice(&pool).await;
    let deps = deps(
        &pool,
        Some(llm_client(&llm)),
        slack_notifier(&slack_server().await),
    )
    .await;
    let event = valid_event_for(inv);

    // Act: SQS delivers the message twice at once; the second arrives while the first
    // waits on its LLM call.
    let first = matching::handler(&deps, lambda_event(event.clone(), None));
    let second = async {
        gate.arrived().await;
        // A second run would be held at the gate too: fail instead of hanging.
        let response = tokio::time::timeout(
            Duration::from_secs(60),
            matching::handler(&deps, lambda_event(event.clone(), None)),
        )
        .await
        .expect("the second delivery ran up to the LLM instead of meeting the live claim")
        .unwrap();
        let during = state(&pool, inv).await;
        gate.open();
        (response, during)
    };
    let (first, (second, during)) = tokio::join!(first, second);

    // Assert: the second delivery claimed nothing and is kept for after the lease; one
    // LLM call in all; the first delivery's result stands.
    assert_eq!(
        second.batch_item_failures.len(),
        1,
        "kept: it comes back after the lease"
    );
    assert_eq!(
        (during.matching_status.as_deref(), during.matching_attempts),
        (Some("in-progress"), 1),
        "the live claim is the first delivery's"
    );
    assert!(first.unwrap().batch_item_failures.is_empty());
    assert_eq!(llm_calls(&llm).await, 1, "one LLM call for one document");
    let after = state(&pool, inv).await;
    assert_eq!(
        (after.matching_status.as_deref(), after.matching_attempts),
        (Some("succeeded"), 1)
    );
    assert_eq!(pairs(&pool).await, vec![pair(inv, po)]);

    // When it comes back, the work is finished after it was sent: a duplicate.
    let again = matching::handler(&deps, lambda_event(event, None))
        .await
        .unwrap();
    assert!(again.batch_item_failures.is_empty(), "discarded");
    assert_eq!(llm_calls(&llm).await, 1);
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_run_that_would_outlive_the_invocation_is_cut_short_and_handled_as_transient(
    pool: PgPool,
) {
    // The LLM holds its answer until the handler has returned: the run can only end by
    // giving up, however slow the machine.
    let llm = MockServer::start().await;
    let gate = Gate::new(LLM_SAYS_MATCH);
    messages().respond_with(gate.clone()).mount(&llm).await;
    let (inv, _) = ambiguous_invoice(&pool).await;
    let deps = deps(
        &pool,
        Some(llm_client(&llm)),
        slack_notifier(&slack_server().await),
    )
    .await;
    // 18.5 s until the deadline, minus the runtime's 2 s margin and matching's 15 s
    // reserve for its failure path: the run must give up after about 1.5 s.
    let budget = Duration::from_millis(18_500);

    let response = tokio::time::timeout(
        Duration::from_secs(60),
        matching::handler(&deps, lambda_event(valid_event_for(inv), Some(budget))),
    )
    .await
    .expect("the run gave up at its deadline instead of waiting for the LLM")
    .unwrap();
    gate.open();

    assert_eq!(
        response.batch_item_failures.len(),
        1,
        "kept for the 300 s retry"
    );
    let s = state(&pool, inv).await;
    assert_eq!(s.matching_status.as_deref(), Some("in-progress"));
    assert!(
        s.matching_error
            .as_deref()
            .unwrap_or_default()
            .contains("did not finish"),
        "the failure path ran: {:?}",
        s.matching_error
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn attempts_count_deliveries_not_llm_retries(pool: PgPool) {
    let llm = MockServer::start().await;
    messages()
        .respond_with(overloaded())
        .up_to_n_times(2)
        .mount(&llm)
        .await;
    messages()
        .respond_with(anthropic_text(LLM_SAYS_MATCH))
        .mount(&llm)
        .await;
    let (inv, _) = ambiguous_invoice(&pool).await;
    let deps = deps(
        &pool,
        Some(llm_client(&llm)),
        slack_notifier(&slack_server().await),
    )
    .await;

    matching::handler(&deps, lambda_event(valid_event_for(inv), None))
        .await
        .unwrap();
    assert_eq!(llm_calls(&llm).await, 3, "two 503s, then the answer");
    assert_eq!(state(&pool, inv).await.matching_attempts, 1);

    matching::handler(&deps, lambda_event(valid_event_for(inv), None))
        .await
        .unwrap();
    assert_eq!(llm_calls(&llm).await, 4);
    let s = state(&pool, inv).await;
    assert_eq!(s.matching_attempts, 2, "one per delivery");
    assert_eq!(s.matching_status.as_deref(), Some("succeeded"));
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_rate_limited_llm_call_is_retried_in_process_and_the_match_is_written(pool: PgPool) {
    let llm = MockServer::start().await;
    messages()
        .respond_with(rate_limited())
        .up_to_n_times(1)
        .mount(&llm)
        .await;
    messages()
        .respond_with(anthropic_text(LLM_SAYS_MATCH))
        .mount(&llm)
        .await;
    let (inv, po) = ambiguous_invoice(&pool).await;
    let deps = deps(
        &pool,
        Some(llm_client(&llm)),
        slack_notifier(&slack_server().await),
    )
    .await;

    let response = matching::handler(&deps, lambda_event(valid_event_for(inv), None))
        .await
        .unwrap();

    assert!(response.batch_item_failures.is_empty());
    assert_eq!(llm_calls(&llm).await, 2);
    let e = edges(&pool).await;
    assert_eq!((e[0].document_a_id, e[0].document_b_id), pair(inv, po));
    assert_eq!(e[0].decided_by, "llm");
    let s = state(&pool, inv).await;
    assert_eq!(
        (s.matching_status.as_deref(), s.matching_attempts),
        (Some("succeeded"), 1)
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_permanent_llm_error_fails_at_once_notifies_the_admins_and_deletes_the_message(
    pool: PgPool,
) {
    let llm = MockServer::start().await;
    messages().respond_with(key_refused()).mount(&llm).await;
    let slack = slack_server().await;
    let (inv, _) = ambiguous_invoice(&pool).await;
    let deps = deps(&pool, Some(llm_client(&llm)), slack_notifier(&slack)).await;
    let sqs = sqs().await;
    let queue = fresh_queue(&sqs, "matching-cw", queue_spec()).await;
    send(&sqs, &queue.url, &inv.to_string()).await;
    let esm = mapping(&sqs, &queue.url).await;

    let event = poll_n(&esm, 1).await;
    let response = matching::handler(&deps, lambda_event(event.clone(), None))
        .await
        .unwrap();
    let completion = esm.complete(&event, &response).await.unwrap();

    assert_eq!(llm_calls(&llm).await, 1, "a permanent error is not retried");
    assert_eq!(completion.deleted.len(), 1, "Done: the message is deleted");
    let s = state(&pool, inv).await;
    assert_eq!(s.matching_status.as_deref(), Some("failed"));
    assert!(s.failed, "matching_failed_at is set");
    assert!(
        s.matching_error
            .as_deref()
            .unwrap()
            .contains("invalid x-api-key"),
        "{:?}",
        s.matching_error
    );
    assert!(
        s.notified,
        "matching_notified_at records the delivered notice"
    );
    let notes = slack_bodies(&slack).await;
    assert_eq!(notes.len(), 1);
    let text = notes[0].to_string();
    assert!(
        text.contains(&inv.to_string()) && text.contains("invalid x-api-key"),
        "{text}"
    );
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(visible_bodies(&sqs, &queue.url).await.is_empty());
    assert!(visible_bodies(&sqs, &queue.dlq_url).await.is_empty());
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_persistent_503_waits_300_s_then_1800_s_then_fails_notifies_and_reaches_the_dlq(
    pool: PgPool,
) {
    // Arrange
    let llm = MockServer::start().await;
    messages().respond_with(overloaded()).mount(&llm).await;
    let slack = slack_server().await;
    let (inv, _) = ambiguous_invoice(&pool).await;
    let deps = deps(&pool, Some(llm_client(&llm)), slack_notifier(&slack)).await;
    let sqs = sqs().await;
    let queue = fresh_queue(&sqs, "matching-503", queue_spec()).await;
    let message_id = send(&sqs, &queue.url, &inv.to_string()).await;
    let esm = mapping(&sqs, &queue.url).await;

    for (receive, hidden) in [(1, 300), (2, 1800)] {
        // Act: one delivery.
        let event = poll_n(&esm, 1).await;
        assert_eq!(
            event.records[0].attributes["ApproximateReceiveCount"],
            receive.to_string()
        );
        let response = matching::handler(&deps, lambda_event(event.clone(), None))
            .await
            .unwrap();
        let completion = esm.complete(&event, &response).await.unwrap();

        // Assert: three LLM calls, kept and hidden for the schedule's time.
        assert_eq!(llm_calls(&llm).await, 3 * receive);
        assert_eq!(completion.kept, vec![message_id.clone()]);
        let left = hidden_for(&message_id).await;
        assert!(
            left > Duration::from_secs(hidden - 15) && left <= Duration::from_secs(hidden),
            "receive {receive}: hidden for {left:?}, expected {hidden} s"
        );
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert!(
            visible_bodies(&sqs, &queue.url).await.is_empty(),
            "receive {receive}: still hidden after the queue's 1 s"
        );
        let s = state(&pool, inv).await;
        assert_eq!(s.matching_status.as_deref(), Some("in-progress"));
        assert_eq!(s.matching_attempts, receive as i32);
        assert!(s.matching_error.as_deref().unwrap().contains("503"));
        assert!(
            slack_bodies(&slack).await.is_empty(),
            "no notice before the final receive"
        );
        // Skip the wait.
        reset_visibility(&sqs, &queue.url, &event).await;
    }

    // The final receive: failed, notified, released.
    let event = poll_n(&esm, 1).await;
    assert_eq!(event.records[0].attributes["ApproximateReceiveCount"], "3");
    let response = matching::handler(&deps, lambda_event(event.clone(), None))
        .await
        .unwrap();
    let completion = esm.complete(&event, &response).await.unwrap();

    assert_eq!(llm_calls(&llm).await, 9);
    assert_eq!(completion.kept, vec![message_id.clone()]);
    assert!(
        hidden_for(&message_id).await <= Duration::from_secs(1),
        "Release leaves the queue's visibility timeout in charge"
    );
    let s = state(&pool, inv).await;
    assert_eq!(s.matching_status.as_deref(), Some("failed"));
    assert_eq!(s.matching_attempts, 3);
    assert!(s.failed);
    let notes = slack_bodies(&slack).await;
    assert_eq!(notes.len(), 1);
    assert!(
        notes[0].to_string().contains("*Attempts*\\n3"),
        "{}",
        notes[0]
    );
    // The next receive moves it to the DLQ (as in AWS).
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(esm.poll().await.unwrap().is_none());
    assert_eq!(
        visible_bodies(&sqs, &queue.dlq_url).await,
        vec![inv.to_string()]
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn an_unusable_llm_answer_is_retried_later_never_recorded_as_no_match(pool: PgPool) {
    let llm = MockServer::start().await;
    messages()
        .respond_with(anthropic_text("Candidate 1 looks plausible."))
        .mount(&llm)
        .await;
    let (inv, _) = ambiguous_invoice(&pool).await;
    let deps = deps(
        &pool,
        Some(llm_client(&llm)),
        slack_notifier(&slack_server().await),
    )
    .await;
    let sqs = sqs().await;
    let queue = fresh_queue(&sqs, "matching-prose", queue_spec()).await;
    let message_id = send(&sqs, &queue.url, &inv.to_string()).await;
    let esm = mapping(&sqs, &queue.url).await;

    let event = poll_n(&esm, 1).await;
    let response = matching::handler(&deps, lambda_event(event.clone(), None))
        .await
        .unwrap();
    esm.complete(&event, &response).await.unwrap();

    assert_eq!(llm_calls(&llm).await, 3);
    assert_eq!(response.batch_item_failures.len(), 1);
    assert!(hidden_for(&message_id).await > Duration::from_secs(280));
    let s = state(&pool, inv).await;
    assert_eq!(s.matching_status.as_deref(), Some("in-progress"));
    assert!(
        s.matching_error
            .as_deref()
            .unwrap()
            .contains("not valid JSON")
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_failing_notification_channel_does_not_change_the_outcome(pool: PgPool) {
    let llm = MockServer::start().await;
    messages().respond_with(key_refused()).mount(&llm).await;
    let slack = MockServer::start().await;
    wiremock::Mock::given(wiremock::matchers::method("POST"))
        .respond_with(wiremock::ResponseTemplate::new(500).set_body_string("rollup_error"))
        .mount(&slack)
        .await;
    let (inv, _) = ambiguous_invoice(&pool).await;
    let deps = deps(&pool, Some(llm_client(&llm)), slack_notifier(&slack)).await;

    let response = matching::handler(&deps, lambda_event(valid_event_for(inv), None))
        .await
        .unwrap();

    assert_eq!(
        slack_bodies(&slack).await.len(),
        3,
        "Slack was tried three times (HTTP 500 is transient)"
    );
    assert!(response.batch_item_failures.is_empty(), "still Done");
    let s = state(&pool, inv).await;
    assert_eq!(s.matching_status.as_deref(), Some("failed"));
    assert!(!s.notified, "no one was told");
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_notice_that_reaches_no_channel_is_counted_in_the_function_s_metrics(pool: PgPool) {
    use docflow::telemetry::metrics::{self as m, dimension};

    let llm = MockServer::start().await;
    messages().respond_with(key_refused()).mount(&llm).await;
    let slack = MockServer::start().await;
    wiremock::Mock::given(wiremock::matchers::method("POST"))
        .respond_with(wiremock::ResponseTemplate::new(500).set_body_string("rollup_error"))
        .mount(&slack)
        .await;
    let (inv, _) = ambiguous_invoice(&pool).await;
    let (deps, captured) =
        deps_with_metrics(&pool, Some(llm_client(&llm)), slack_notifier(&slack)).await;

    matching::handler(&deps, lambda_event(valid_event_for(inv), None))
        .await
        .unwrap();

    assert!(!state(&pool, inv).await.notified, "no one was told");
    let emf = docflow_tests::emf::Metrics::of(&captured.lines());
    let function = [(dimension::FUNCTION, matching::FUNCTION)];
    assert_eq!(emf.sum(m::NOTIFICATIONS_FAILED.name, &function), 1.0);
    assert_eq!(
        emf.sum(m::batch::RECORDS_FAILED_PERMANENTLY.name, &function),
        1.0
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn candidates_and_llm_decisions_reach_the_function_s_metrics(pool: PgPool) {
    use docflow::telemetry::metrics::{self as m, dimension};

    let llm = MockServer::start().await;
    messages()
        .respond_with(anthropic_text(LLM_SAYS_MATCH))
        .mount(&llm)
        .await;
    let (inv, _) = ambiguous_invoice(&pool).await;
    let (deps, captured) = deps_with_metrics(
        &pool,
        Some(llm_client(&llm)),
        slack_notifier(&slack_server().await),
    )
    .await;

    let response = matching::handler(&deps, lambda_event(valid_event_for(inv), None))
        .await
        .unwrap();

    assert!(response.batch_item_failures.is_empty());
    let emf = docflow_tests::emf::Metrics::of(&captured.lines());
    let function = [(dimension::FUNCTION, matching::FUNCTION)];
    assert_eq!(
        emf.sum(m::matching::CANDIDATES_CONSIDERED.name, &function),
        1.0,
        "the purchase order"
    );
    let decided = |outcome| {
        emf.sum(
            m::matching::LLM_DECISIONS.name,
            &[
                (dimension::FUNCTION, matching::FUNCTION),
                (dimension::OUTCOME, outcome),
            ],
        )
    };
    assert_eq!((decided("match"), decided("no_match")), (1.0, 0.0));
    let anthropic = [
        (dimension::FUNCTION, matching::FUNCTION),
        (dimension::PROVIDER, "anthropic"),
    ];
    assert_eq!(emf.values(m::llm::LATENCY.name, &anthropic).len(), 1);
    assert!(emf.sum(m::llm::INPUT_TOKENS.name, &anthropic) > 0.0);
    // Where the record's time went: each step once.
    for stage in [
        m::stages::CLAIM,
        m::stages::NORMALIZE,
        m::stages::CANDIDATES,
        m::stages::DECIDE,
        m::stages::WRITE,
    ] {
        let of = [
            (dimension::FUNCTION, matching::FUNCTION),
            (dimension::STAGE, stage),
        ];
        assert_eq!(
            emf.values(m::stages::DURATION.name, &of).len(),
            1,
            "{stage}"
        );
    }
    assert_eq!(
        emf.sum(m::matching::CLUSTERS_MERGED.name, &function),
        0.0,
        "the invoice joined the order's cluster: nothing merged"
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn clusters_merged_and_split_by_a_rematch_reach_the_function_s_metrics(pool: PgPool) {
    use docflow::telemetry::metrics::{self as m, dimension};

    let t = tenant(&pool, "Acme AG").await;
    let po = document(
        &pool,
        t,
        DocumentType::PurchaseOrder,
        purchase_order("PO-2024-0042", "2024-03-01", 1190.0),
    )
    .await;
    let dn = document(
        &pool,
        t,
        DocumentType::DeliveryNote,
        delivery_note("LS-2024-0107", "PO-2024-0042", "2024-03-05"),
    )
    .await;
    let inv = document(
        &pool,
        t,
        DocumentType::Invoice,
        invoice_without_references("RE-2024-0815", "2024-06-10", 77.0),
    )
    .await;
    let cn = document(
        &pool,
        t,
        DocumentType::CreditNote,
        credit_note("GS-2024-0001", "RE-2024-0815", "2024-06-20", 77.0),
    )
    .await;
    let (deps, captured) =
        deps_with_metrics(&pool, None, slack_notifier(&slack_server().await)).await;
    let emf = || docflow_tests::emf::Metrics::of(&captured.take());
    let function = [(dimension::FUNCTION, matching::FUNCTION)];
    let rematch = |id: Uuid| {
        let deps = &deps;
        async move {
            let response = matching::handler(deps, lambda_event(valid_event_for(id), None))
                .await
                .unwrap();
            assert!(response.batch_item_failures.is_empty());
        }
    };
    for id in [po, dn, inv, cn] {
        rematch(id).await;
    }
    let order_cluster = state(&pool, po).await.cluster_id.expect("order clustered");
    let invoice_cluster = state(&pool, inv)
        .await
        .cluster_id
        .expect("invoice clustered");
    assert_ne!(
        order_cluster,
        invoice_cluster,
        "two clusters: {:?}",
        pairs(&pool).await
    );
    let arranged = emf();
    assert_eq!(
        arranged.sum(m::matching::CLUSTERS_MERGED.name, &function),
        0.0
    );
    assert_eq!(
        arranged.sum(m::matching::CLUSTERS_SPLIT.name, &function),
        0.0
    );

    // The invoice is corrected: it was for that order and delivery. Rematched, it joins
    // the two clusters.
    let set_invoice = |data: serde_json::Value| {
        let pool = &pool;
        async move {
            sqlx::query("UPDATE document SET structured_data = $2, matching_status = 'pending' WHERE id = $1")
                .bind(inv)
                .bind(docflow_tests::stored_extraction(data))
                .execute(pool)
                .await
                .unwrap();
        }
    };
    set_invoice(invoice(
        "RE-2024-0815",
        "PO-2024-0042",
        "LS-2024-0107",
        "2024-06-10",
        1190.0,
    ))
    .await;
    rematch(inv).await;
    assert_eq!(
        state(&pool, cn).await.cluster_id,
        state(&pool, po).await.cluster_id
    );
    let merged = emf();
    assert_eq!(
        merged.sum(m::matching::CLUSTERS_MERGED.name, &function),
        1.0
    );
    assert_eq!(merged.sum(m::matching::CLUSTERS_SPLIT.name, &function), 0.0);

    // Corrected back: the merged cluster splits into the order's and the invoice's.
    set_invoice(invoice_without_references(
        "RE-2024-0815",
        "2024-06-10",
        77.0,
    ))
    .await;
    rematch(inv).await;
    assert_ne!(
        state(&pool, cn).await.cluster_id,
        state(&pool, po).await.cluster_id
    );
    let split = emf();
    assert_eq!(split.sum(m::matching::CLUSTERS_MERGED.name, &function), 0.0);
    assert_eq!(split.sum(m::matching::CLUSTERS_SPLIT.name, &function), 1.0);
}

#[test]
fn every_sample_event_names_the_matching_queue() {
    for name in ["valid", "batch", "poison", "missing-document"] {
        for record in sample(name).records {
            assert_eq!(
                record.event_source_arn.as_deref(),
                Some("arn:aws:sqs:eu-central-1:123456789012:docflow-matching")
            );
            assert!(record.attributes.contains_key("ApproximateReceiveCount"));
        }
    }
}

/// Makes `UPDATE … SET matching_status = 'failed'` fail (a database that refuses the
/// write) until [`allow_failed_status`].
async fn refuse_failed_status(pool: &PgPool) {
    sqlx::raw_sql(
        r#"
        CREATE FUNCTION refuse_failed() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'the failure cannot be recorded'; END $$;
        CREATE TRIGGER refuse_failed BEFORE UPDATE OF matching_status ON document
            FOR EACH ROW WHEN (NEW.matching_status = 'failed') EXECUTE FUNCTION refuse_failed();
        "#,
    )
    .execute(pool)
    .await
    .unwrap();
}

async fn allow_failed_status(pool: &PgPool) {
    sqlx::raw_sql("DROP TRIGGER refuse_failed ON document")
        .execute(pool)
        .await
        .unwrap();
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_link_written_by_another_document_while_this_one_waited_on_its_llm_is_kept(pool: PgPool) {
    // Invoice I is ambiguous against its order (the LLM decides); delivery note D, which
    // I cites, arrives while I waits for the LLM.
    let llm = MockServer::start().await;
    let gate = Gate::new(LLM_SAYS_MATCH);
    messages().respond_with(gate.clone()).mount(&llm).await;
    let t = tenant(&pool, "Acme AG").await;
    let po = matched_document(
        &pool,
        t,
        DocumentType::PurchaseOrder,
        purchase_order("PO-2024-0042", "2024-03-01", 1190.0),
    )
    .await;
    let mut inv_data = invoice_without_references("RE-77", "2024-03-08", 1190.0);
    inv_data["delivery_note_reference"] = "LS-2024-0107".into();
    let inv = document(&pool, t, DocumentType::Invoice, inv_data).await;
    let dn = document(
        &pool,
        t,
        DocumentType::DeliveryNote,
        delivery_note("LS-2024-0107", "PO-2024-0042", "2024-03-05"),
    )
    .await;
    let deps = deps(
        &pool,
        Some(llm_client(&llm)),
        slack_notifier(&slack_server().await),
    )
    .await;

    // Act: I runs up to its LLM call and is held there; D runs to the end; then I goes on.
    let invoice_run = matching::handler(&deps, lambda_event(valid_event_for(inv), None));
    let other_run = async {
        gate.arrived().await;
        let response = matching::handler(&deps, lambda_event(valid_event_for(dn), None))
            .await
            .unwrap();
        let committed_first = pairs(&pool).await;
        gate.open();
        (response, committed_first)
    };
    let (invoice_response, (note_response, committed_first)) = tokio::join!(invoice_run, other_run);

    // Assert: D's links committed before I's write phase, and I's write kept them.
    assert!(note_response.batch_item_failures.is_empty());
    assert!(invoice_response.unwrap().batch_item_failures.is_empty());
    assert!(
        committed_first.contains(&pair(inv, dn)),
        "{committed_first:?}"
    );
    let mut expected = vec![pair(inv, po), pair(inv, dn), pair(po, dn)];
    expected.sort();
    assert_eq!(pairs(&pool).await, expected);
    let cluster = state(&pool, inv).await.cluster_id;
    assert!(cluster.is_some());
    assert_eq!(state(&pool, dn).await.cluster_id, cluster);
    assert_eq!(state(&pool, po).await.cluster_id, cluster);
    for id in [inv, dn] {
        assert_eq!(
            state(&pool, id).await.matching_status.as_deref(),
            Some("succeeded")
        );
    }
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_stale_run_never_overwrites_a_re_extraction_that_came_in_while_it_decided(pool: PgPool) {
    // Arrange: extraction v1 of invoice I fits order PO-A (ambiguous: the LLM decides);
    // the re-extraction v2 cites order PO-B.
    let llm = MockServer::start().await;
    let gate = Gate::new(LLM_SAYS_MATCH);
    messages().respond_with(gate.clone()).mount(&llm).await;
    let t = tenant(&pool, "Acme AG").await;
    let po_a = matched_document(
        &pool,
        t,
        DocumentType::PurchaseOrder,
        purchase_order("PO-2024-0042", "2024-03-01", 1190.0),
    )
    .await;
    let po_b = matched_document(
        &pool,
        t,
        DocumentType::PurchaseOrder,
        purchase_order("PO-2024-0099", "2024-03-02", 2380.0),
    )
    .await;
    let inv = document(
        &pool,
        t,
        DocumentType::Invoice,
        invoice_without_references("RE-77", "2024-03-08", 1190.0),
    )
    .await;
    let with_llm = deps(
        &pool,
        Some(llm_client(&llm)),
        slack_notifier(&slack_server().await),
    )
    .await;

    // Act: run A (v1) waits on the LLM; meanwhile the re-extraction writes v2, sets
    // `pending` and sends a new message; then A goes on.
    let run_a = matching::handler(&with_llm, lambda_event(valid_event_for(inv), None));
    let re_extraction = async {
        gate.arrived().await;
        sqlx::query(
            "UPDATE document SET structured_data = $2, matching_status = 'pending' WHERE id = $1",
        )
        .bind(inv)
        .bind(docflow_tests::stored_extraction(invoice(
            "RE-77",
            "PO-2024-0099",
            "LS-2024-0199",
            "2024-03-08",
            2380.0,
        )))
        .execute(&pool)
        .await
        .unwrap();
        let message_b = valid_event_for(inv);
        gate.open();
        message_b
    };
    let (response_a, message_b) = tokio::join!(run_a, re_extraction);

    // Assert: A wrote nothing and its message is gone; the document waits for B.
    assert!(
        response_a.unwrap().batch_item_failures.is_empty(),
        "A is discarded"
    );
    assert_eq!(
        pairs(&pool).await,
        vec![],
        "A's link to PO-A is rolled back"
    );
    let after_a = state(&pool, inv).await;
    assert_eq!(after_a.matching_status.as_deref(), Some("pending"));
    assert_eq!(after_a.matching_error, None, "a stale run is no failure");

    // The new message is not taken for a duplicate: it matches v2.
    let response_b = matching::handler(&with_llm, lambda_event(message_b, None))
        .await
        .unwrap();
    assert!(response_b.batch_item_failures.is_empty());
    assert_eq!(pairs(&pool).await, vec![pair(inv, po_b)]);
    assert!(!pairs(&pool).await.contains(&pair(inv, po_a)));
    let after_b = state(&pool, inv).await;
    assert_eq!(
        (
            after_b.matching_status.as_deref(),
            after_b.matching_attempts
        ),
        (Some("succeeded"), 2)
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_run_that_lost_its_claim_writes_neither_its_normalised_fields_nor_its_edges(
    pool: PgPool,
) {
    // A delivery claims the invoice and stalls past its lease; a newer delivery takes
    // the claim over.
    let (inv, _) = ambiguous_invoice(&pool).await;
    let Ok(Claim::Claimed(older)) =
        status::claim(&pool, inv, None, status::DEFAULT_CLAIM_LEASE).await
    else {
        panic!("claimable");
    };
    let_claim_go_stale(&pool, inv).await;
    let Ok(Claim::Claimed(_newer)) =
        status::claim(&pool, inv, None, status::DEFAULT_CLAIM_LEASE).await
    else {
        panic!("claimable again");
    };

    let err = docflow::matching::match_document(&pool, None, &Default::default(), &older)
        .await
        .unwrap_err();

    assert!(
        matches!(err, docflow::matching::MatchingError::Superseded { .. }),
        "{err:?}"
    );
    let saved: Option<String> =
        sqlx::query_scalar("SELECT normalized_counterparty FROM document WHERE id = $1")
            .bind(inv)
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(
        saved, None,
        "the stale run's normalised fields are not saved"
    );
    assert_eq!(pairs(&pool).await, vec![]);
    let s = state(&pool, inv).await;
    assert_eq!(
        (s.matching_status.as_deref(), s.matching_attempts),
        (Some("in-progress"), 2),
        "the newer delivery still holds it"
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_duplicate_of_a_finished_match_is_discarded_and_a_message_after_a_reset_is_matched(
    pool: PgPool,
) {
    let llm = MockServer::start().await;
    messages()
        .respond_with(anthropic_text(LLM_SAYS_MATCH))
        .mount(&llm)
        .await;
    let (inv, po) = ambiguous_invoice(&pool).await;
    let deps = deps(
        &pool,
        Some(llm_client(&llm)),
        slack_notifier(&slack_server().await),
    )
    .await;
    let sqs = sqs().await;
    let queue = fresh_queue(&sqs, "matching-dup", queue_spec()).await;
    send(&sqs, &queue.url, &inv.to_string()).await;
    let esm = mapping(&sqs, &queue.url).await;
    let delivery = poll_n(&esm, 1).await;
    matching::handler(&deps, lambda_event(delivery.clone(), None))
        .await
        .unwrap();
    let matched = state(&pool, inv).await;
    assert_eq!(matched.matching_status.as_deref(), Some("succeeded"));
    let edges_before = edges(&pool).await;

    // Act: the same message again (SQS delivers at least once).
    let response = matching::handler(&deps, lambda_event(delivery, None))
        .await
        .unwrap();

    // Assert: deleted untouched — no LLM call, no claim, same edge rows.
    assert!(response.batch_item_failures.is_empty(), "discarded");
    assert_eq!(llm_calls(&llm).await, 1);
    let after = state(&pool, inv).await;
    assert_eq!(
        (after.matching_status.as_deref(), after.matching_attempts),
        (Some("succeeded"), 1)
    );
    assert_eq!(edges(&pool).await, edges_before);

    // A re-match on purpose: status reset, then a new message.
    sqlx::query("UPDATE document SET matching_status = 'pending' WHERE id = $1")
        .bind(inv)
        .execute(&pool)
        .await
        .unwrap();
    send(&sqs, &queue.url, &inv.to_string()).await;
    let event = poll_n(&esm, 1).await;
    matching::handler(&deps, lambda_event(event, None))
        .await
        .unwrap();
    assert_eq!(llm_calls(&llm).await, 2);
    let rematched = state(&pool, inv).await;
    assert_eq!(
        (
            rematched.matching_status.as_deref(),
            rematched.matching_attempts
        ),
        (Some("succeeded"), 2)
    );
    assert_eq!(pairs(&pool).await, vec![pair(inv, po)]);
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_late_duplicate_of_a_recorded_failure_neither_reruns_nor_notifies_again(pool: PgPool) {
    let llm = MockServer::start().await;
    messages().respond_with(key_refused()).mount(&llm).await;
    let slack = slack_server().await;
    let (inv, _) = ambiguous_invoice(&pool).await;
    let deps = deps(&pool, Some(llm_client(&llm)), slack_notifier(&slack)).await;
    let event = valid_event_for(inv);
    matching::handler(&deps, lambda_event(event.clone(), None))
        .await
        .unwrap();
    assert_eq!(
        state(&pool, inv).await.matching_status.as_deref(),
        Some("failed")
    );
    assert_eq!(slack_bodies(&slack).await.len(), 1);

    let response = matching::handler(&deps, lambda_event(event, None))
        .await
        .unwrap();

    assert!(response.batch_item_failures.is_empty());
    assert_eq!(llm_calls(&llm).await, 1, "not run again");
    assert_eq!(slack_bodies(&slack).await.len(), 1, "admins told once");
    assert_eq!(state(&pool, inv).await.matching_attempts, 1);
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_permanent_failure_that_cannot_be_recorded_notifies_once_when_a_redelivery_records_it(
    pool: PgPool,
) {
    let llm = MockServer::start().await;
    messages().respond_with(key_refused()).mount(&llm).await;
    let slack = slack_server().await;
    let (inv, _) = ambiguous_invoice(&pool).await;
    let deps = deps(&pool, Some(llm_client(&llm)), slack_notifier(&slack)).await;
    let sqs = sqs().await;
    let queue = fresh_queue(&sqs, "matching-unrecorded", queue_spec()).await;
    send(&sqs, &queue.url, &inv.to_string()).await;
    let esm = mapping(&sqs, &queue.url).await;
    refuse_failed_status(&pool).await;

    // First delivery: the failure cannot be written.
    let first = poll_n(&esm, 1).await;
    let response = matching::handler(&deps, lambda_event(first.clone(), None))
        .await
        .unwrap();
    let completion = esm.complete(&first, &response).await.unwrap();
    assert_eq!(completion.kept.len(), 1, "kept for a later receive");
    assert!(
        slack_bodies(&slack).await.is_empty(),
        "no notice for an unrecorded failure"
    );
    assert_eq!(
        state(&pool, inv).await.matching_status.as_deref(),
        Some("in-progress")
    );

    // The database takes writes again; the message comes back after the queue's 1 s.
    allow_failed_status(&pool).await;
    reset_visibility(&sqs, &queue.url, &first).await;
    let second = poll_n(&esm, 1).await;
    let response = matching::handler(&deps, lambda_event(second.clone(), None))
        .await
        .unwrap();
    let completion = esm.complete(&second, &response).await.unwrap();

    assert_eq!(completion.deleted.len(), 1);
    let s = state(&pool, inv).await;
    assert_eq!(s.matching_status.as_deref(), Some("failed"));
    assert!(s.notified);
    assert_eq!(slack_bodies(&slack).await.len(), 1, "told exactly once");
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_recorded_failure_no_one_was_told_about_is_told_by_the_next_delivery(pool: PgPool) {
    let llm = MockServer::start().await;
    messages().respond_with(key_refused()).mount(&llm).await;
    // Slack is down for the first delivery's three attempts, then back.
    let slack = MockServer::start().await;
    wiremock::Mock::given(wiremock::matchers::method("POST"))
        .respond_with(wiremock::ResponseTemplate::new(503).set_body_string("service unavailable"))
        .up_to_n_times(3)
        .mount(&slack)
        .await;
    wiremock::Mock::given(wiremock::matchers::method("POST"))
        .respond_with(wiremock::ResponseTemplate::new(200).set_body_string("ok"))
        .mount(&slack)
        .await;
    let (inv, _) = ambiguous_invoice(&pool).await;
    let deps = deps(&pool, Some(llm_client(&llm)), slack_notifier(&slack)).await;
    let event = valid_event_for(inv);
    matching::handler(&deps, lambda_event(event.clone(), None))
        .await
        .unwrap();
    let s = state(&pool, inv).await;
    assert_eq!(
        (s.matching_status.as_deref(), s.notified),
        (Some("failed"), false)
    );

    // A duplicate delivery of the same message.
    let response = matching::handler(&deps, lambda_event(event, None))
        .await
        .unwrap();

    assert!(response.batch_item_failures.is_empty());
    assert_eq!(llm_calls(&llm).await, 1, "matching is not run again");
    assert_eq!(
        slack_bodies(&slack).await.len(),
        4,
        "three failed attempts, one delivered"
    );
    assert!(state(&pool, inv).await.notified);
}

/// Runs the handler on a new message for `inv` up to its (gated) LLM call, lets
/// `meanwhile` act as a newer delivery, then lets the LLM answer; returns the
/// handler's batch item failures.
async fn older_delivery_around<F: std::future::Future<Output = ()>>(
    deps: &matching::Deps,
    gate: &Gate,
    inv: Uuid,
    meanwhile: F,
) -> usize {
    let older = matching::handler(deps, lambda_event(valid_event_for(inv), None));
    let newer = async {
        gate.arrived().await;
        meanwhile.await;
        gate.open();
    };
    let (response, ()) = tokio::join!(older, newer);
    response.unwrap().batch_item_failures.len()
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_permanent_error_of_an_older_delivery_never_overwrites_a_newer_delivery_s_success(
    pool: PgPool,
) {
    // Arrange: the LLM refuses the older delivery's prompt for good, once let through.
    let llm = MockServer::start().await;
    let gate = Gate::answering(key_refused());
    messages().respond_with(gate.clone()).mount(&llm).await;
    let slack = slack_server().await;
    let (inv, _) = ambiguous_invoice(&pool).await;
    let deps = deps(&pool, Some(llm_client(&llm)), slack_notifier(&slack)).await;

    // Act: while the older delivery (attempt 1) waits on the LLM, a newer delivery
    // (a duplicate, a sweeper re-send) takes over its claim, gone stale (the older one
    // stalled past the lease), as attempt 2 and succeeds.
    let failures = older_delivery_around(&deps, &gate, inv, async {
        let_claim_go_stale(&pool, inv).await;
        let Ok(Claim::Claimed(doc)) =
            status::claim(&pool, inv, None, status::DEFAULT_CLAIM_LEASE).await
        else {
            panic!("the newer delivery claims the document");
        };
        assert_eq!(doc.matching_attempts, 2);
        let mut conn = pool.acquire().await.unwrap();
        assert!(
            status::succeed(&mut conn, &doc.owner())
                .await
                .unwrap()
                .is_held()
        );
    })
    .await;

    // Assert: the older delivery's permanent error is not recorded and tells no one.
    assert_eq!(failures, 0, "its message is finished (Done), not retried");
    let s = state(&pool, inv).await;
    assert_eq!(s.matching_status.as_deref(), Some("succeeded"));
    assert_eq!(s.matching_error, None);
    assert!(!s.failed);
    assert!(
        slack_bodies(&slack).await.is_empty(),
        "no one is told of a failure that did not happen"
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn an_older_delivery_s_error_never_lands_on_the_attempt_a_newer_delivery_holds(pool: PgPool) {
    // Arrange: the LLM refuses the older delivery's prompt for good, once let through.
    let llm = MockServer::start().await;
    let gate = Gate::answering(key_refused());
    messages().respond_with(gate.clone()).mount(&llm).await;
    let slack = slack_server().await;
    let (inv, _) = ambiguous_invoice(&pool).await;
    let deps = deps(&pool, Some(llm_client(&llm)), slack_notifier(&slack)).await;

    // Act: a newer delivery takes over the older one's stale claim (attempt 2) and is
    // still working.
    older_delivery_around(&deps, &gate, inv, async {
        let_claim_go_stale(&pool, inv).await;
        let claim = status::claim(&pool, inv, None, status::DEFAULT_CLAIM_LEASE)
            .await
            .unwrap();
        assert!(matches!(claim, Claim::Claimed(_)), "{claim:?}");
    })
    .await;

    // Assert: the live attempt stays in progress, unmarked; no one is notified.
    let s = state(&pool, inv).await;
    assert_eq!(s.matching_status.as_deref(), Some("in-progress"));
    assert_eq!(s.matching_attempts, 2);
    assert_eq!(s.matching_error, None);
    assert!(!s.failed);
    assert!(slack_bodies(&slack).await.is_empty());

    // The newer delivery's own error is recorded: it owns the document (a third
    // delivery took over its claim once stale, the same way).
    let_claim_go_stale(&pool, inv).await;
    let Ok(Claim::Claimed(doc)) =
        status::claim(&pool, inv, None, status::DEFAULT_CLAIM_LEASE).await
    else {
        panic!("claimed again");
    };
    let failed = status::fail(&pool, inv, Attempt::Claimed(doc.matching_attempts), "boom")
        .await
        .unwrap();
    assert!(failed.is_some(), "the owning attempt records its failure");
    assert!(
        status::record_error(&pool, inv, Attempt::Claimed(doc.matching_attempts), "late")
            .await
            .unwrap()
            .is_lost(),
        "an error after the outcome is recorded does not overwrite it"
    );
    assert_eq!(
        state(&pool, inv).await.matching_error.as_deref(),
        Some("boom")
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_duplicate_meeting_a_failure_whose_notice_is_being_sent_does_not_tell_again(
    pool: PgPool,
) {
    // Arrange: a delivery recorded the failure and is telling the admins (its claim is
    // fresh, no channel has answered yet).
    let slack = slack_server().await;
    let llm = MockServer::start().await;
    let (inv, _) = ambiguous_invoice(&pool).await;
    let deps = deps(&pool, Some(llm_client(&llm)), slack_notifier(&slack)).await;
    // The message, sent before the failure: its duplicates are duplicates of finished work.
    let event = valid_event_for(inv);
    let Ok(Claim::Claimed(doc)) =
        status::claim(&pool, inv, None, status::DEFAULT_CLAIM_LEASE).await
    else {
        panic!("claimed");
    };
    let failed = status::fail(&pool, inv, Attempt::Claimed(doc.matching_attempts), "boom")
        .await
        .unwrap()
        .expect("recorded");

    // Act: a duplicate of the message arrives meanwhile.
    let response = matching::handler(&deps, lambda_event(event.clone(), None))
        .await
        .unwrap();

    // Assert: discarded, and the telling left to the delivery that claimed it.
    assert!(response.batch_item_failures.is_empty());
    assert!(slack_bodies(&slack).await.is_empty(), "no second notice");
    assert!(!state(&pool, inv).await.notified);

    // When that delivery died (its claim older than the grace), the next one tells, once.
    sqlx::query(
        "UPDATE document SET matching_notice_claimed_at = now() - interval '301 seconds' WHERE id = $1",
    )
    .bind(inv)
    .execute(&pool)
    .await
    .unwrap();
    for _ in 0..2 {
        matching::handler(&deps, lambda_event(event.clone(), None))
            .await
            .unwrap();
    }
    assert_eq!(slack_bodies(&slack).await.len(), 1);
    assert!(state(&pool, inv).await.notified);
    assert!(
        status::mark_notified(&pool, inv, failed.failed_at)
            .await
            .unwrap()
            .is_held()
    );
}
