//! The candidate search stays on its indexes as a tenant grows: `EXPLAIN` of the real
//! query over a large tenant (and a second tenant sharing its keys and names) shows an
//! index scan, with a LIMIT, on every path and no sequential scan of `document`.

mod matching_support;

use docflow::matching::candidates::{CANDIDATES, NAME_SIMILARITY_FLOOR};
use serde_json::Value;
use sqlx::PgPool;
use uuid::Uuid;

/// Fills `tenant` with `n` normalised documents from 400 suppliers over two years, each
/// citing one of `n / 3` orders.
async fn fill(pool: &PgPool, tenant: Uuid, n: i32) {
    sqlx::query(
        r#"
        INSERT INTO document (tenant_id, type, file_path, structured_data, matching_status,
                              normalized_counterparty, normalized_vat_id, normalized_iban,
                              normalized_references, document_date)
        SELECT $1,
               (ARRAY['invoice', 'purchase_order', 'delivery_note']::document_type[])[1 + i % 3],
               'documents/x.pdf', '{}'::jsonb, 'succeeded',
               'supplier ' || (i % 400),
               'DE' || (100000000 + i % 400),
               'DE89' || lpad((i % 400)::text, 18, '0'),
               ARRAY['PO-2024-' || (i / 3), '2024-' || (i / 3), 'RE-' || i],
               DATE '2023-01-01' + (i % 730)
          FROM generate_series(1, $2) AS i
        "#,
    )
    .bind(tenant)
    .bind(n)
    .execute(pool)
    .await
    .unwrap();
    sqlx::query(
        r#"
        INSERT INTO matching_counterparty (tenant_id, name)
        SELECT DISTINCT $1, normalized_counterparty FROM document WHERE tenant_id = $1
        "#,
    )
    .bind(tenant)
    .execute(pool)
    .await
    .unwrap();
}

/// Every (node type, index or relation) of a JSON plan; `Index Scan (full)` for an
/// index scan without a condition (it reads the whole index).
fn nodes(plan: &Value, out: &mut Vec<(String, String)>) {
    if let Some(node) = plan.get("Node Type").and_then(Value::as_str) {
        let target = plan
            .get("Index Name")
            .or_else(|| plan.get("Relation Name"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        let node = if node.starts_with("Index") && plan.get("Index Cond").is_none() {
            format!("{node} (full)")
        } else {
            node.to_owned()
        };
        out.push((node, target.to_owned()));
    }
    for child in plan
        .get("Plans")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        nodes(child, out);
    }
}

async fn explain(pool: &PgPool, options: &str, tenant: Uuid, source: Uuid) -> Value {
    sqlx::query_scalar(&format!("EXPLAIN ({options}FORMAT JSON) {CANDIDATES}"))
        .bind(tenant)
        .bind(source)
        .bind(vec!["purchase_order", "delivery_note"])
        .bind("supplier 17")
        .bind(vec!["PO-2024-1234".to_owned(), "2024-1234".to_owned()])
        .bind("DE100000017")
        .bind("DE89000000000000000017")
        .bind(chrono::NaiveDate::from_ymd_opt(2024, 3, 1).unwrap())
        .bind(50_i64)
        .bind(NAME_SIMILARITY_FLOOR)
        .bind(5_i64)
        .fetch_one(pool)
        .await
        .unwrap()
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn every_path_of_the_candidate_search_is_an_index_scan_in_a_large_tenant(pool: PgPool) {
    let big = matching_support::tenant(&pool, "Big AG").await;
    let other = matching_support::tenant(&pool, "Other AG").await;
    fill(&pool, big, 30_000).await;
    fill(&pool, other, 10_000).await;
    sqlx::query("ANALYZE").execute(&pool).await.unwrap();
    let source: Uuid = sqlx::query_scalar("SELECT id FROM document WHERE tenant_id = $1 LIMIT 1")
        .bind(big)
        .fetch_one(&pool)
        .await
        .unwrap();

    let plan = explain(&pool, "", big, source).await;

    let mut found = Vec::new();
    nodes(&plan[0]["Plan"], &mut found);
    let text = format!("{found:#?}");
    assert!(
        !found.iter().any(
            |(node, target)| (node == "Seq Scan" && target == "document")
                || (node.ends_with("(full)") && target.starts_with("document"))
        ),
        "a path scans the whole document table:\n{text}"
    );
    for index in [
        "idx_document_tenant_references",
        "idx_document_vat_date",
        "idx_document_iban_date",
        "idx_matching_counterparty_trgm",
        "idx_document_counterparty_date",
    ] {
        assert!(
            found.iter().any(|(_, target)| target == index),
            "{index} is not used:\n{text}"
        );
    }
}

/// The figure in docs/matching.md, in `make test` (about 15 s): `cargo test -p
/// docflow-tests --test matching_candidates -- --nocapture explain_analyze` prints the
/// plan with timings for 100,000 documents of one tenant (and 20,000 of another), and
/// fails when any path scans the whole document table.
#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn explain_analyze_the_candidate_search_at_100k_documents(pool: PgPool) {
    let big = matching_support::tenant(&pool, "Big AG").await;
    let other = matching_support::tenant(&pool, "Other AG").await;
    fill(&pool, big, 100_000).await;
    fill(&pool, other, 20_000).await;
    sqlx::query("ANALYZE").execute(&pool).await.unwrap();
    let source: Uuid = sqlx::query_scalar("SELECT id FROM document WHERE tenant_id = $1 LIMIT 1")
        .bind(big)
        .fetch_one(&pool)
        .await
        .unwrap();

    // Once to warm the cache, once to show.
    explain(&pool, "ANALYZE, ", big, source).await;
    let plan = explain(&pool, "ANALYZE, BUFFERS, ", big, source).await;

    let mut found = Vec::new();
    nodes(&plan[0]["Plan"], &mut found);
    println!("{}", serde_json::to_string_pretty(&plan).unwrap());
    println!(
        "execution {} ms, planning {} ms",
        plan[0]["Execution Time"], plan[0]["Planning Time"]
    );
    assert!(!found.iter().any(
        |(node, target)| (node == "Seq Scan" && target == "document")
            || (node.ends_with("(full)") && target.starts_with("document"))
    ));
}
