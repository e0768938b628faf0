//! Ingestion's calls per batch: the hand-offs of a batch to matching in one `SendMessageBatch`
//! (a refused entry retries only its record, whose redelivery sends the hand-off
//! again), and no S3 PUT of a transcription that is only a text layer (a retry reads
//! the file again). Postgres, S3 and SQS are real (moto); the LLM is a local server.

use std::collections::HashSet;

use docflow_tests::ingestion_harness::*;
use docflow_tests::llm::anthropic_error;
use docflow_tests::*;
use sqlx::PgPool;
use uuid::Uuid;
use wiremock::Mock;
use wiremock::matchers::{method, path};

/// Delivers the ingestions as one batch, and applies the response.
async fn deliver_together(
    h: &Harness,
    ids: &[Uuid],
) -> (
    aws_lambda_events::event::sqs::SqsEvent,
    aws_lambda_events::event::sqs::SqsBatchResponse,
) {
    for id in ids {
        send(&h.sqs, &h.ingestion_queue.url, &id.to_string()).await;
    }
    let esm = h.mapping().await;
    let event = poll_n(&esm, ids.len()).await;
    h.invoke(&esm, event, None).await
}

fn put_keys(h: &Harness) -> Vec<String> {
    h.calls
        .calls()
        .into_iter()
        .filter(|c| c.action == "s3:PutObject")
        .filter_map(|c| c.target)
        .collect()
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn the_hand_offs_of_a_batch_go_to_matching_in_one_call(pool: PgPool) {
    let h = harness(pool, Ocr::Native).await;
    llm_answers_with_an_invoice(&h).await;
    let (a, b, c) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
    let docs = [
        h.seed(a, "pdf", Some(invoice_pdf())).await,
        h.seed(b, "pdf", Some(invoice_pdf())).await,
        h.seed(c, "pdf", Some(invoice_pdf())).await,
    ];

    let (_, response) = deliver_together(&h, &[a, b, c]).await;

    assert!(response.batch_item_failures.is_empty());
    assert_eq!(h.calls.operations("SendMessageBatch"), 1);
    assert_eq!(h.calls.calls_of("SendMessageBatch")[0].entries, 3);
    assert_eq!(h.calls.operations("SendMessage"), 0, "no send per record");
    let sent: HashSet<String> = visible_bodies(&h.sqs, &h.matching_queue.url)
        .await
        .into_iter()
        .collect();
    assert_eq!(
        sent,
        docs.iter().map(Uuid::to_string).collect::<HashSet<_>>()
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_refused_hand_off_retries_only_its_record_and_the_retry_sends_it(pool: PgPool) {
    let h = harness(pool, Ocr::Native).await;
    llm_answers_with_an_invoice(&h).await;
    let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
    let doc_a = h.seed(a, "pdf", Some(invoice_pdf())).await;
    let doc_b = h.seed(b, "pdf", Some(invoice_pdf())).await;
    // SQS refuses b's entry of the batch call, and only it.
    h.calls.refuse_batch_entry(&doc_b.to_string());

    let (event, response) = deliver_together(&h, &[a, b]).await;

    let message_of = |id: Uuid| {
        event
            .records
            .iter()
            .find(|r| r.body.as_deref() == Some(id.to_string().as_str()))
            .unwrap()
            .message_id
            .clone()
            .unwrap()
    };
    let failed: Vec<String> = response
        .batch_item_failures
        .iter()
        .map(|f| f.item_identifier.clone())
        .collect();
    assert_eq!(failed, vec![message_of(b)]);
    assert_eq!(h.calls.operations("SendMessageBatch"), 1);
    // Both ingestions completed: the hand-off is owed, not the work.
    assert_eq!(h.ingestion(a).await.status, "completed");
    assert_eq!(h.ingestion(b).await.status, "completed");
    assert_eq!(h.document(doc_b).await.2.as_deref(), Some("pending"));
    assert_eq!(
        visible_bodies(&h.sqs, &h.matching_queue.url).await,
        vec![doc_a.to_string()]
    );
    // b's message comes back after ingestion::HAND_OFF_RETRY, not the queue's 600 s.
    assert_eq!(
        h.calls.visibility_timeouts().last().copied(),
        Some(ingestion::HAND_OFF_RETRY.as_secs() as i32)
    );

    // The redelivery (a second message stands in for it) sends the hand-off again,
    // without doing the work again.
    h.calls.accept_batch_entries();
    let llm_calls = h.llm.received_requests().await.unwrap().len();
    let (_, again) = h.deliver(b).await;

    assert!(again.batch_item_failures.is_empty());
    assert_eq!(h.llm.received_requests().await.unwrap().len(), llm_calls);
    let sent: HashSet<String> = visible_bodies(&h.sqs, &h.matching_queue.url)
        .await
        .into_iter()
        .collect();
    assert_eq!(sent, HashSet::from([doc_a.to_string(), doc_b.to_string()]));

    // Once matching took it over, a duplicate delivery is discarded as before.
    sqlx::query("UPDATE document SET matching_status = 'in-progress' WHERE id = $1")
        .bind(doc_b)
        .execute(&h.pool)
        .await
        .unwrap();
    let sends = h.calls.operations("SendMessageBatch");
    let (_, duplicate) = h.deliver(b).await;
    assert!(duplicate.batch_item_failures.is_empty());
    assert_eq!(h.calls.operations("SendMessageBatch"), sends);
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_text_layer_is_not_stored_and_a_retry_reads_the_file_again(pool: PgPool) {
    let h = harness(pool, Ocr::Native).await;
    let id = Uuid::new_v4();
    let document_id = h.seed(id, "pdf", Some(invoice_pdf())).await;
    // First delivery: the LLM is down for all three in-process attempts.
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(anthropic_error(529, "overloaded_error", "Overloaded"))
        .up_to_n_times(3)
        .mount(&h.llm)
        .await;
    llm_answers_with_an_invoice(&h).await;

    let (_, first) = h.deliver(id).await;

    assert_eq!(first.batch_item_failures.len(), 1, "transient: retried");
    assert_eq!(
        put_keys(&h),
        Vec::<String>::new(),
        "no S3 PUT for a text layer"
    );
    let row = h.ingestion(id).await;
    assert_eq!((row.status.as_str(), row.attempt_count), ("in-progress", 1));
    assert_eq!(row.transcription_file_path, None);
    // Its metadata is still recorded.
    assert_eq!(row.transcription_quality_score, Some(1.0));
    assert_eq!(row.transcription_page_count, Some(1));
    let before_retry = h.calls.calls().len();

    // The retry (a second message stands in for the redelivery after the backoff).
    let (_, second) = h.deliver(id).await;

    assert!(second.batch_item_failures.is_empty());
    let row = h.ingestion(id).await;
    assert_eq!(row.status, "completed");
    assert_eq!(row.transcription_file_path, None);
    let reads: Vec<String> = h.calls.calls()[before_retry..]
        .iter()
        .filter(|c| c.action == "s3:GetObject")
        .filter_map(|c| c.target.clone())
        .collect();
    assert_eq!(
        reads.last(),
        Some(&format!("documents/{document_id}.pdf")),
        "the retry read the file again: {reads:?}"
    );
    assert_eq!(put_keys(&h), Vec::<String>::new());
    assert!(
        !h.object_exists(&format!("ingestions/{id}/transcription-output.json"))
            .await
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_refused_hand_off_on_the_final_receive_is_left_to_the_sweeper(pool: PgPool) {
    let h = harness(pool, Ocr::Native).await;
    llm_answers_with_an_invoice(&h).await;
    let id = Uuid::new_v4();
    let document_id = h.seed(id, "pdf", Some(invoice_pdf())).await;
    h.calls.refuse_batch_entry(&document_id.to_string());
    send(&h.sqs, &h.ingestion_queue.url, &id.to_string()).await;
    let esm = h.mapping().await;
    let mut event = poll_n(&esm, 1).await;
    // The final receive (MAX_RECEIVE_COUNT 3): a retry would only take it to the DLQ.
    event.records[0]
        .attributes
        .insert("ApproximateReceiveCount".into(), "3".into());

    let (_, response) = h.invoke(&esm, event, None).await;

    assert!(
        response.batch_item_failures.is_empty(),
        "no finished work in the DLQ"
    );
    assert_eq!(h.ingestion(id).await.status, "completed");
    assert_eq!(
        h.document(document_id).await.2.as_deref(),
        Some("pending"),
        "where the sweeper finds it"
    );
    assert!(
        visible_bodies(&h.sqs, &h.matching_queue.url)
            .await
            .is_empty()
    );
}
