//! `docflow::matching` against a real Postgres (one database per test): normalisation,
//! candidates, scores, the LLM decision on wiremock, the one-transaction write phase and
//! the clusters it leaves.

mod matching_support;

use docflow::matching::{
    self, DecidedBy, Document, DocumentType, MatchingConfig, MatchingError, status,
};
use docflow::retry::Classify;
use docflow_tests::llm::anthropic_text;
use matching_support::*;
use serde_json::{Value, json};
use sqlx::PgPool;
use uuid::Uuid;
use wiremock::MockServer;

/// Claims and matches a document as the function does, without an LLM unless given one.
async fn run_matching(
    pool: &PgPool,
    llm: Option<&docflow::llm::LlmClient>,
    id: Uuid,
) -> Result<matching::MatchReport, MatchingError> {
    let doc: Document = match status::claim(pool, id).await.unwrap() {
        status::Claim::Claimed(doc) => doc,
        other => panic!("document {id} not claimable: {other:?}"),
    };
    matching::match_document(pool, llm, &MatchingConfig::default(), &doc).await
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn an_invoice_its_purchase_order_and_its_delivery_note_end_in_one_cluster_without_the_distractors(
    pool: PgPool,
) {
    // Arrange: documents arrive one by one, each matched on arrival.
    let t = tenant(&pool, "Acme AG").await;
    let po = document(
        &pool,
        t,
        DocumentType::PurchaseOrder,
        purchase_order("PO-2024-0042", "2024-03-01", 1190.0),
    )
    .await;
    let other_po = document(
        &pool,
        t,
        DocumentType::PurchaseOrder,
        purchase_order("PO-2024-0043", "2024-03-03", 450.0),
    )
    .await;
    let dn = document(
        &pool,
        t,
        DocumentType::DeliveryNote,
        delivery_note("LS-2024-0107", "PO 2024/042", "2024-03-05"),
    )
    .await;
    let other_dn = document(
        &pool,
        t,
        DocumentType::DeliveryNote,
        delivery_note("LS-2024-0111", "PO-2024-0043", "2024-03-06"),
    )
    .await;
    let inv = document(
        &pool,
        t,
        DocumentType::Invoice,
        invoice(
            "RE-2024-0815",
            "po-2024-0042",
            "LS 2024 0107",
            "2024-03-10",
            1190.0,
        ),
    )
    .await;

    // Act
    for id in [po, other_po, dn, other_dn, inv] {
        run_matching(&pool, None, id).await.unwrap();
    }

    // Assert: exactly the right edges…
    let mut expected = vec![
        pair(po, dn),
        pair(other_po, other_dn),
        pair(inv, po),
        pair(inv, dn),
    ];
    expected.sort();
    assert_eq!(pairs(&pool).await, expected);
    // …every edge decided by a high score with its evidence…
    for e in edges(&pool).await {
        assert_eq!(
            (e.confidence.as_str(), e.decided_by.as_str()),
            ("high", "score")
        );
        assert!(e.score >= 0.75, "{e:?}");
        let kinds: Vec<&str> = e
            .evidence
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["kind"].as_str().unwrap())
            .collect();
        assert!(
            kinds.contains(&"reference") && kinds.contains(&"vat_id"),
            "{kinds:?}"
        );
    }
    // …and the invoice's cluster is exactly invoice, PO and delivery note.
    let cluster = state(&pool, inv)
        .await
        .cluster_id
        .expect("invoice clustered");
    let members: Vec<Uuid> =
        sqlx::query_scalar("SELECT id FROM document WHERE cluster_id = $1 ORDER BY id")
            .bind(cluster)
            .fetch_all(&pool)
            .await
            .unwrap();
    let mut want = vec![inv, po, dn];
    want.sort();
    assert_eq!(members, want);
    let distractor_cluster = state(&pool, other_po)
        .await
        .cluster_id
        .expect("distractors clustered");
    assert_ne!(distractor_cluster, cluster);
    assert_eq!(
        state(&pool, other_dn).await.cluster_id,
        Some(distractor_cluster)
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn normalised_fields_are_persisted_on_the_document(pool: PgPool) {
    let t = tenant(&pool, "Acme AG").await;
    let inv = document(
        &pool,
        t,
        DocumentType::Invoice,
        invoice("RE-2024-0815", "PO-0042", "LS-0107", "2024-03-10", 100.0),
    )
    .await;

    run_matching(&pool, None, inv).await.unwrap();

    let s = state(&pool, inv).await;
    assert_eq!(
        s.normalized_counterparty.as_deref(),
        Some("mueller buerobedarf")
    );
    assert_eq!(s.normalized_references, vec!["LS107", "PO42", "RE2024815"]);
    let (vat, iban, text): (Option<String>, Option<String>, Option<String>) = sqlx::query_as(
        "SELECT normalized_vat_id, normalized_iban, searchable_text FROM document WHERE id = $1",
    )
    .bind(inv)
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(vat.as_deref(), Some("DE123456789"));
    assert_eq!(iban.as_deref(), Some("DE89370400440532013000"));
    assert!(text.unwrap().contains("Toner cartridges"));
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn other_tenants_and_unmatchable_types_are_never_linked(pool: PgPool) {
    let t = tenant(&pool, "Acme AG").await;
    let other_tenant = tenant(&pool, "Beta GmbH").await;
    let data = purchase_order("PO-2024-0042", "2024-03-01", 1190.0);
    let foreign_po = matched_document(
        &pool,
        other_tenant,
        DocumentType::PurchaseOrder,
        data.clone(),
    )
    .await;
    let credit_note = matched_document(&pool, t, DocumentType::CreditNote, data.clone()).await;
    let other_invoice = matched_document(
        &pool,
        t,
        DocumentType::Invoice,
        invoice("RE-1", "PO-2024-0042", "LS-1", "2024-03-10", 1190.0),
    )
    .await;
    let inv = document(
        &pool,
        t,
        DocumentType::Invoice,
        invoice("RE-2", "PO-2024-0042", "LS-1", "2024-03-10", 1190.0),
    )
    .await;

    let report = run_matching(&pool, None, inv).await.unwrap();

    assert_eq!(
        report.candidates, 0,
        "{foreign_po} {credit_note} {other_invoice} are not candidates"
    );
    assert!(pairs(&pool).await.is_empty());
    assert_eq!(state(&pool, inv).await.cluster_id, None);
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn an_ambiguous_candidate_is_decided_by_the_llm_with_its_reasoning(pool: PgPool) {
    let llm = MockServer::start().await;
    messages()
        .respond_with(anthropic_text(
            r#"{"matches":[{"candidate":1,"confidence":"medium","reasoning":"Same supplier, same total, ordered a week before."}]}"#,
        ))
        .mount(&llm)
        .await;
    let client = llm_client(&llm);
    let t = tenant(&pool, "Acme AG").await;
    let po = matched_document(
        &pool,
        t,
        DocumentType::PurchaseOrder,
        purchase_order("PO-2024-0042", "2024-03-01", 1190.0),
    )
    .await;
    let inv = document(
        &pool,
        t,
        DocumentType::Invoice,
        invoice_without_references("RE-77", "2024-03-08", 1190.0),
    )
    .await;

    run_matching(&pool, Some(&client), inv).await.unwrap();

    let e = edges(&pool).await;
    assert_eq!(e.len(), 1);
    assert_eq!((e[0].document_a_id, e[0].document_b_id), pair(inv, po));
    assert_eq!(
        (e[0].confidence.as_str(), e[0].decided_by.as_str()),
        ("medium", "llm")
    );
    assert_eq!(
        e[0].reasoning.as_deref(),
        Some("Same supplier, same total, ordered a week before.")
    );
    // The prompt carried the source and the candidate with its evidence.
    let request = &llm.received_requests().await.unwrap()[0];
    let body: Value = serde_json::from_slice(&request.body).unwrap();
    let prompt = body["messages"][0]["content"].as_str().unwrap();
    assert!(
        prompt.contains("RE-77") && prompt.contains("PO-2024-0042"),
        "{prompt}"
    );
    assert!(prompt.contains("\"kind\": \"amount\""), "{prompt}");
    assert_eq!(request.headers.get("x-api-key").unwrap(), "sk-ant-test");
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn an_llm_that_rejects_the_ambiguous_candidate_leaves_the_document_unlinked(pool: PgPool) {
    let llm = MockServer::start().await;
    messages()
        .respond_with(anthropic_text(r#"{"matches": []}"#))
        .mount(&llm)
        .await;
    let client = llm_client(&llm);
    let t = tenant(&pool, "Acme AG").await;
    matched_document(
        &pool,
        t,
        DocumentType::PurchaseOrder,
        purchase_order("PO-2024-0042", "2024-03-01", 1190.0),
    )
    .await;
    let inv = document(
        &pool,
        t,
        DocumentType::Invoice,
        invoice_without_references("RE-77", "2024-03-08", 1190.0),
    )
    .await;

    let report = run_matching(&pool, Some(&client), inv).await.unwrap();

    assert_eq!(llm_calls(&llm).await, 1);
    assert!(report.decisions.is_empty());
    assert!(pairs(&pool).await.is_empty());
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn without_an_llm_the_ambiguous_band_is_decided_by_the_score_alone(pool: PgPool) {
    let t = tenant(&pool, "Acme AG").await;
    let po = matched_document(
        &pool,
        t,
        DocumentType::PurchaseOrder,
        purchase_order("PO-2024-0042", "2024-03-01", 1190.0),
    )
    .await;
    let inv = document(
        &pool,
        t,
        DocumentType::Invoice,
        invoice_without_references("RE-77", "2024-03-08", 1190.0),
    )
    .await;

    let report = run_matching(&pool, None, inv).await.unwrap();

    assert_eq!(report.decisions.len(), 1);
    assert_eq!(report.decisions[0].decided_by, DecidedBy::Score);
    let e = edges(&pool).await;
    assert_eq!((e[0].document_a_id, e[0].document_b_id), pair(inv, po));
    assert_eq!(
        (e[0].confidence.as_str(), e[0].decided_by.as_str()),
        ("low", "score")
    );
    assert!(
        (0.5..0.75).contains(&e[0].score),
        "ambiguous band: {}",
        e[0].score
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn an_unusable_llm_answer_is_an_error_and_never_an_empty_match_list(pool: PgPool) {
    let llm = MockServer::start().await;
    messages()
        .respond_with(anthropic_text(
            "I think candidate 1 might match, but I am not sure.",
        ))
        .mount(&llm)
        .await;
    let client = llm_client(&llm);
    let t = tenant(&pool, "Acme AG").await;
    matched_document(
        &pool,
        t,
        DocumentType::PurchaseOrder,
        purchase_order("PO-2024-0042", "2024-03-01", 1190.0),
    )
    .await;
    let inv = document(
        &pool,
        t,
        DocumentType::Invoice,
        invoice_without_references("RE-77", "2024-03-08", 1190.0),
    )
    .await;

    let err = run_matching(&pool, Some(&client), inv).await.unwrap_err();

    assert!(matches!(err, MatchingError::Llm { .. }), "{err:?}");
    assert!(
        err.is_transient(),
        "a non-JSON answer may be fine next time"
    );
    assert_eq!(llm_calls(&llm).await, 3, "retried in process");
    assert!(pairs(&pool).await.is_empty());
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn normalised_fields_are_kept_when_the_llm_fails_since_they_are_written_before_the_transaction(
    pool: PgPool,
) {
    let llm = MockServer::start().await;
    messages()
        .respond_with(context_window_exceeded())
        .mount(&llm)
        .await;
    let client = llm_client(&llm);
    let t = tenant(&pool, "Acme AG").await;
    matched_document(
        &pool,
        t,
        DocumentType::PurchaseOrder,
        purchase_order("PO-2024-0042", "2024-03-01", 1190.0),
    )
    .await;
    let inv = document(
        &pool,
        t,
        DocumentType::Invoice,
        invoice_without_references("RE-77", "2024-03-08", 1190.0),
    )
    .await;

    let err = run_matching(&pool, Some(&client), inv).await.unwrap_err();

    assert!(!err.is_transient());
    assert_eq!(llm_calls(&llm).await, 1);
    assert_eq!(state(&pool, inv).await.normalized_references, vec!["RE77"]);
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_failure_after_the_edges_are_inserted_leaves_the_previous_edges_and_clusters_intact(
    pool: PgPool,
) {
    // Arrange: the invoice is linked to its purchase order (one cluster of two)…
    let t = tenant(&pool, "Acme AG").await;
    let po = document(
        &pool,
        t,
        DocumentType::PurchaseOrder,
        purchase_order("PO-2024-0042", "2024-03-01", 1190.0),
    )
    .await;
    let inv = document(
        &pool,
        t,
        DocumentType::Invoice,
        invoice(
            "RE-2024-0815",
            "PO-2024-0042",
            "LS-2024-0107",
            "2024-03-10",
            1190.0,
        ),
    )
    .await;
    run_matching(&pool, None, po).await.unwrap();
    run_matching(&pool, None, inv).await.unwrap();
    let edges_before = edges(&pool).await;
    let cluster_before = state(&pool, inv).await.cluster_id;
    assert_eq!(edges_before.len(), 1);
    assert!(cluster_before.is_some());
    // …then its delivery note arrives, so re-matching the invoice would add an edge and
    // move the delivery note into the cluster. Postgres refuses any cluster change: a
    // real failure after the edge inserts, reporting how many edges the transaction saw.
    let dn = matched_document(
        &pool,
        t,
        DocumentType::DeliveryNote,
        delivery_note("LS-2024-0107", "PO-2024-0042", "2024-03-05"),
    )
    .await;
    sqlx::raw_sql(
        r#"
        CREATE FUNCTION refuse_cluster_change() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            RAISE EXCEPTION 'cluster change refused; the transaction holds % edges',
                (SELECT count(*) FROM document_match);
        END $$;
        CREATE TRIGGER refuse_cluster_change
            BEFORE UPDATE OF cluster_id ON document
            FOR EACH ROW WHEN (OLD.cluster_id IS DISTINCT FROM NEW.cluster_id)
            EXECUTE FUNCTION refuse_cluster_change();
        "#,
    )
    .execute(&pool)
    .await
    .unwrap();

    // Act
    let err = run_matching(&pool, None, inv).await.unwrap_err();

    // Assert: the write failed with both new edges inserted…
    let chain = matching::error_chain(&err);
    assert!(chain.contains("write the matches"), "{chain}");
    assert!(chain.contains("the transaction holds 2 edges"), "{chain}");
    // …and nothing of it is left: same edge (same row id), same clusters.
    assert_eq!(edges(&pool).await, edges_before);
    assert_eq!(state(&pool, inv).await.cluster_id, cluster_before);
    assert_eq!(state(&pool, po).await.cluster_id, cluster_before);
    assert_eq!(state(&pool, dn).await.cluster_id, None);
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn rematching_an_edited_document_replaces_its_edges_and_splits_the_cluster(pool: PgPool) {
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
        invoice(
            "RE-2024-0815",
            "PO-2024-0042",
            "LS-2024-0107",
            "2024-03-10",
            1190.0,
        ),
    )
    .await;
    for id in [po, dn, inv] {
        run_matching(&pool, None, id).await.unwrap();
    }
    let cluster = state(&pool, po).await.cluster_id.unwrap();
    assert_eq!(pairs(&pool).await.len(), 3);

    // A user corrects the delivery note: it belongs to another supplier's shipment.
    sqlx::query("UPDATE document SET structured_data = $2 WHERE id = $1")
        .bind(dn)
        .bind(json!({"document_type": "delivery_note", "invoice_number": "DN-9", "supplier_name": "Other Logistics Ltd", "supplier_vat_id": "GB999999973", "invoice_date": "2023-01-01"}))
        .execute(&pool)
        .await
        .unwrap();
    run_matching(&pool, None, dn).await.unwrap();

    assert_eq!(pairs(&pool).await, vec![pair(inv, po)]);
    assert_eq!(state(&pool, dn).await.cluster_id, None);
    assert_eq!(state(&pool, inv).await.cluster_id, Some(cluster));
    assert_eq!(state(&pool, po).await.cluster_id, Some(cluster));
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn write_phases_of_one_tenant_wait_for_each_other(pool: PgPool) {
    let t = tenant(&pool, "Acme AG").await;
    let _po = matched_document(
        &pool,
        t,
        DocumentType::PurchaseOrder,
        purchase_order("PO-2024-0042", "2024-03-01", 1190.0),
    )
    .await;
    let inv = document(
        &pool,
        t,
        DocumentType::Invoice,
        invoice("RE-1", "PO-2024-0042", "LS-1", "2024-03-05", 1190.0),
    )
    .await;
    // Another write phase of the same tenant holds the tenant's lock.
    let mut other = pool.acquire().await.unwrap();
    sqlx::query("SELECT pg_advisory_lock(hashtextextended('docflow.matching:' || $1::text, 0))")
        .bind(t)
        .execute(&mut *other)
        .await
        .unwrap();

    let matching = tokio::spawn({
        let pool = pool.clone();
        async move { run_matching(&pool, None, inv).await }
    });
    tokio::time::sleep(std::time::Duration::from_millis(800)).await;
    let edges_while_locked = pairs(&pool).await.len();
    sqlx::query("SELECT pg_advisory_unlock(hashtextextended('docflow.matching:' || $1::text, 0))")
        .bind(t)
        .execute(&mut *other)
        .await
        .unwrap();
    let report = matching.await.unwrap();

    assert_eq!(edges_while_locked, 0, "the write phase waited for the lock");
    assert!(report.is_ok(), "{report:?}");
    assert_eq!(pairs(&pool).await.len(), 1, "and wrote once it had it");
}
