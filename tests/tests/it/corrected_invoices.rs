//! A corrected invoice (UNTDID 1001 `384`) and the invoice it replaces, against a real
//! Postgres: matching links the two by rule, whichever arrives first, and only for the
//! same supplier's invoice of that number.

use crate::matching_support::*;

use docflow::matching::{self, DocumentType};
use docflow_tests::matched;
use serde_json::Value;
use sqlx::PgPool;
use uuid::Uuid;

/// Invoice `number` for order PO-2024-0042 of 1,190.00, the way [`invoice`] writes one,
/// replacing `replaces` when given (a 384's BT-25).
fn corrected(number: &str, replaces: Option<&str>, total: f64) -> Value {
    let mut data = invoice(number, "PO-2024-0042", "", "2024-03-12", total);
    data["delivery_note_reference"] = Value::Null;
    if let Some(replaces) = replaces {
        data["replaces_invoice"] = replaces.into();
    }
    data
}

/// The edges between `a` and `b` a rule made.
async fn replacement_edges(pool: &PgPool, a: Uuid, b: Uuid) -> Vec<EdgeRow> {
    edges(pool)
        .await
        .into_iter()
        .filter(|e| (e.document_a_id, e.document_b_id) == pair(a, b))
        .collect()
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_corrected_invoice_is_linked_to_the_invoice_it_replaces_whichever_arrives_first(
    pool: PgPool,
) {
    // The replaced invoice first, then its correction.
    let t = tenant(&pool, "Acme AG").await;
    let po = document(
        &pool,
        t,
        DocumentType::PurchaseOrder,
        purchase_order("PO-2024-0042", "2024-03-01", 1190.0),
    )
    .await;
    matched(&pool, po).await;
    let original = document(
        &pool,
        t,
        DocumentType::Invoice,
        corrected("RE-2024-0815", None, 1250.0),
    )
    .await;
    matched(&pool, original).await;
    let correction = document(
        &pool,
        t,
        DocumentType::Invoice,
        corrected("RE-2024-0815-K", Some("RE 2024/0815"), 1190.0),
    )
    .await;
    let report = matched(&pool, correction).await;

    let linked = replacement_edges(&pool, original, correction).await;
    assert_eq!(linked.len(), 1, "{:?}", edges(&pool).await);
    let edge = &linked[0];
    assert_eq!(edge.decided_by, "rule");
    assert_eq!(edge.confidence, "high");
    let evidence = &edge.evidence[0];
    assert_eq!(evidence["kind"], "replaces");
    assert_eq!(evidence["replaced"], original.to_string());
    assert_eq!(evidence["invoice_number"], "RE-2024-0815");
    assert!(
        report
            .decisions
            .iter()
            .any(|d| d.candidate_id == original && d.decided_by == matching::DecidedBy::Rule)
    );
    // Both stay linked to their order, in one cluster.
    let all = pairs(&pool).await;
    assert!(
        all.contains(&pair(po, original)) && all.contains(&pair(po, correction)),
        "{all:?}"
    );
    let cluster = state(&pool, correction).await.cluster_id;
    assert!(cluster.is_some());
    assert_eq!(state(&pool, original).await.cluster_id, cluster);

    // Matched again, the correction keeps one link to what it replaces.
    sqlx::query("UPDATE document SET matching_status = 'pending' WHERE id = $1")
        .bind(correction)
        .execute(&pool)
        .await
        .unwrap();
    matched(&pool, correction).await;
    assert_eq!(
        replacement_edges(&pool, original, correction).await.len(),
        1
    );

    // Re-extracted as an ordinary invoice, the correction loses the link when it is
    // matched again: two invoices of one order are not linked by their score.
    sqlx::query(
        "UPDATE document SET structured_data = $2, data_version = data_version + 1, \
                matching_status = 'pending' WHERE id = $1",
    )
    .bind(correction)
    .bind(docflow_tests::stored_extraction(corrected(
        "RE-2024-0815-K",
        None,
        1190.0,
    )))
    .execute(&pool)
    .await
    .unwrap();
    matched(&pool, correction).await;
    assert!(
        replacement_edges(&pool, original, correction)
            .await
            .is_empty()
    );
    assert!(pairs(&pool).await.contains(&pair(po, correction)));

    // The other way round, in another tenant: the correction first, then the invoice
    // it replaces; the link is made when the replaced one is matched.
    let t2 = tenant(&pool, "Beta AG").await;
    let correction = document(
        &pool,
        t2,
        DocumentType::Invoice,
        corrected("RE-2024-0815-K", Some("RE-2024-0815"), 1190.0),
    )
    .await;
    matched(&pool, correction).await;
    let original = document(
        &pool,
        t2,
        DocumentType::Invoice,
        corrected("RE-2024-0815", None, 1250.0),
    )
    .await;
    matched(&pool, original).await;
    let linked = replacement_edges(&pool, original, correction).await;
    assert_eq!(linked.len(), 1);
    assert_eq!(linked[0].evidence[0]["replaced"], original.to_string());
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn another_suppliers_invoice_of_that_number_is_not_what_a_correction_replaces(pool: PgPool) {
    let t = tenant(&pool, "Acme AG").await;
    let mut other = corrected("RE-2024-0815", None, 1250.0);
    other["supplier_name"] = "Schmidt Papier AG".into();
    other["supplier_vat_id"] = "DE999999999".into();
    other["supplier_iban"] = Value::Null;
    let other = document(&pool, t, DocumentType::Invoice, other).await;
    matched(&pool, other).await;
    let correction = document(
        &pool,
        t,
        DocumentType::Invoice,
        corrected("RE-2024-0815-K", Some("RE-2024-0815"), 1190.0),
    )
    .await;
    matched(&pool, correction).await;
    assert!(replacement_edges(&pool, other, correction).await.is_empty());

    // Two ordinary invoices of one order are never linked to each other.
    let second = document(
        &pool,
        t,
        DocumentType::Invoice,
        corrected("RE-2024-0816", None, 100.0),
    )
    .await;
    matched(&pool, second).await;
    assert!(
        replacement_edges(&pool, second, correction)
            .await
            .is_empty()
    );
    assert!(replacement_edges(&pool, second, other).await.is_empty());
}
