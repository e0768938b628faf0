//! The candidate search stays on its indexes as a tenant grows: `EXPLAIN` of the real
//! query over a large tenant (and a second tenant sharing its keys and names) shows an
//! index scan, with a LIMIT, on every path and no sequential scan of `document` — with
//! the table's statistics, and with them scaled to 1,000,000 documents. Own and cited
//! reference keys are searched apart, so a number part common among other suppliers'
//! documents does not crowd out the right candidate.

use crate::matching_support;

use docflow::matching::candidates::{CANDIDATES, NAME_SIMILARITY_FLOOR, Quotas};
use docflow::matching::normalize::SearchKeys;
use docflow::matching::{self, DocumentType};
use matching_support::*;
use serde_json::{Value, json};
use sqlx::PgPool;
use uuid::Uuid;

/// Fills `tenant` with `n` normalised documents from 400 suppliers over two years, each
/// invoice and delivery note citing one of `n / 3` orders, every supplier numbering its
/// invoices `RE-<i>` and its notes `LS-<i>` (the number parts collide across suppliers).
/// The typed keys are those `SearchKeys::read` writes (`inv:RE-7`, `inv:7`, …).
async fn fill(pool: &PgPool, tenant: Uuid, n: i32) {
    sqlx::query(
        r#"
        INSERT INTO document (tenant_id, type, file_path, structured_data, matching_status,
                              normalized_counterparty, normalized_vat_id, normalized_iban,
                              normalized_references, matching_own_keys, matching_cited_keys,
                              document_date)
        SELECT $1, t,
               'documents/x.pdf', '{"schema_version": 2, "extraction_successful": true, "confidence": "high"}'::jsonb, 'succeeded',
               'supplier ' || (i % 400),
               'DE' || (100000000 + i % 400),
               'DE89' || lpad((i % 400)::text, 18, '0'),
               ARRAY['PO-2024-' || (i / 3), '2024-' || (i / 3), 'RE-' || i],
               CASE t WHEN 'invoice' THEN ARRAY['inv:RE-' || (i % 5000), 'inv:' || (i % 5000)]
                      WHEN 'delivery_note' THEN ARRAY['dn:LS-' || (i % 5000), 'dn:' || (i % 5000)]
                      ELSE ARRAY['po:PO-2024-' || (i / 3), 'po:2024-' || (i / 3), 'po:2024' || (i / 3)] END,
               CASE t WHEN 'purchase_order' THEN '{}'::text[]
                      ELSE ARRAY['po:PO-2024-' || (i / 3), 'po:2024-' || (i / 3), 'po:2024' || (i / 3)] END,
               DATE '2023-01-01' + (i % 730)
          FROM generate_series(1, $2) AS i,
               LATERAL (SELECT (ARRAY['invoice', 'purchase_order', 'delivery_note']::document_type[])[1 + i % 3] AS t) x
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

/// `EXPLAIN` of the candidate query for an invoice `RE-1234` of supplier 17 citing order
/// `PO-2024-1234`, with the keys matching computes for it.
async fn explain(pool: &PgPool, options: &str, tenant: Uuid, source: Uuid) -> Value {
    let keys = SearchKeys::read(
        &docflow_tests::extraction(
            json!({"invoice_number": "RE-1234", "po_reference": "PO-2024-1234"}),
        ),
        DocumentType::Invoice,
    );
    let quotas = Quotas::of(50);
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
        .bind(keys.own_probe())
        .bind(keys.cited_probe())
        .bind(quotas.cites)
        .bind(quotas.cited)
        .bind(quotas.supplier)
        .bind(quotas.name)
        .fetch_one(pool)
        .await
        .unwrap()
}

/// Every index of `document` and the table itself told they hold `rows` rows
/// (PostgreSQL 18's `pg_restore_relation_stats`): the planner then estimates every
/// scan as at that size. The column statistics (fractions, most common values and
/// elements) stay those `ANALYZE` measured, which hold at any size for data generated
/// alike. The heap's page count is the real one (the planner reads it from the file),
/// so a sequential scan looks cheaper than at the real size: a plan that still takes
/// the indexes under these statistics takes them at that size too. Autovacuum is off
/// for the table so no `ANALYZE` puts the real counts back meanwhile.
async fn pretend_rows(pool: &PgPool, rows: f32) {
    sqlx::query("ALTER TABLE document SET (autovacuum_enabled = off)")
        .execute(pool)
        .await
        .unwrap();
    let relations: Vec<String> = sqlx::query_scalar(
        r#"
        SELECT c.relname::text FROM pg_class c
         WHERE c.oid = 'document'::regclass
            OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid = 'document'::regclass)
        "#,
    )
    .fetch_all(pool)
    .await
    .unwrap();
    for relation in relations {
        let ok: bool = sqlx::query_scalar(
            "SELECT pg_restore_relation_stats('schemaname', 'public', 'relname', $1::text, 'reltuples', $2::real)",
        )
        .bind(&relation)
        .bind(rows)
        .fetch_one(pool)
        .await
        .unwrap();
        assert!(ok, "statistics of {relation}");
    }
}

/// The plan's estimated rows of the `document` table (its root scan's `Plan Rows` is
/// not it; the table's `reltuples` is what the planner took).
async fn planned_table_rows(pool: &PgPool) -> f64 {
    sqlx::query_scalar::<_, f32>("SELECT reltuples FROM pg_class WHERE oid = 'document'::regclass")
        .fetch_one(pool)
        .await
        .unwrap() as f64
}

/// One line per plan node: type, index or relation, estimated rows and total cost.
fn outline_plan(plan: &Value, depth: usize, out: &mut String) {
    if let Some(node) = plan.get("Node Type").and_then(Value::as_str) {
        let target = plan
            .get("Index Name")
            .or_else(|| plan.get("Relation Name"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        out.push_str(&format!(
            "{:indent$}{node} {target} (rows {}, cost {})\n",
            "",
            plan["Plan Rows"],
            plan["Total Cost"],
            indent = depth * 2
        ));
    }
    for child in plan
        .get("Plans")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        outline_plan(child, depth + 1, out);
    }
}

fn assert_every_path_on_its_index(plan: &Value) {
    let mut found = Vec::new();
    nodes(&plan[0]["Plan"], &mut found);
    let text = format!("{found:#?}");
    assert!(
        !found.iter().any(
            |(node, target)| (node == "Seq Scan" && target == "document")
                || (node.ends_with("(full)") && target.starts_with("document"))
                || (node.ends_with("(full)") && target.starts_with("idx_document"))
        ),
        "a path scans the whole document table:\n{text}"
    );
    for index in [
        "idx_document_tenant_own_keys",
        "idx_document_tenant_cited_keys",
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
    assert_every_path_on_its_index(&plan);

    // The same data, planned as if the table held 1,000,000 documents (40,000 here, the
    // big tenant three quarters of them).
    pretend_rows(&pool, 1_000_000.0).await;
    assert_eq!(planned_table_rows(&pool).await, 1_000_000.0);
    let plan = explain(&pool, "", big, source).await;
    let mut outline = String::new();
    outline_plan(&plan[0]["Plan"], 0, &mut outline);
    println!("plan at 1,000,000 documents (estimated):\n{outline}");
    assert_every_path_on_its_index(&plan);
}

/// The figure in docs/matching.md, in `make test` (about 15 s): `cargo test -p
/// docflow-tests --test it matching_candidates:: -- --nocapture explain_analyze` prints the
/// plan with timings for 100,000 documents of one tenant (and 20,000 of another), and
/// fails when any path scans the whole document table.
#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn explain_analyze_the_candidate_search_at_100k_documents(pool: PgPool) {
    let big = matching_support::tenant(&pool, "Big AG").await;
    let other = matching_support::tenant(&pool, "Other AG").await;
    fill(&pool, big, 100_000).await;
    fill(&pool, other, 20_000).await;
    // VACUUM also moves the GIN indexes' pending lists (fast update) into the indexes,
    // as autovacuum does in production; else every reference scan reads the 120,000
    // fresh entries of the list.
    sqlx::query("VACUUM ANALYZE document")
        .execute(&pool)
        .await
        .unwrap();
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

/// Claims and matches a document as the function does (no LLM).
async fn run(pool: &PgPool, id: Uuid) -> matching::MatchReport {
    docflow_tests::matched(pool, id).await
}

/// 120 delivery notes of 120 other suppliers, all nearer in date than
/// the order, carry the number part `12345` — 60 as their own number (`LS-12345`,
/// `12345`, `DN 12345`), 60 citing an order `12345`. With the keys pooled,
/// they took every candidate slot of an invoice citing `PO-12345` (all of them share the
/// key `12345`) and the order was never scored. Typed and apart, the invoice's citation
/// is looked up among orders' own numbers only, the notes citing `12345` fill the other
/// reference quota, and the order is found and linked.
#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_common_number_part_of_other_suppliers_documents_does_not_crowd_out_the_order(
    pool: PgPool,
) {
    let t = tenant(&pool, "Acme AG").await;
    let lines = json!([{"description": "Toner cartridge black", "quantity": 10}]);
    // The tenant's order names no supplier: only its number leads to it.
    let po = matched_document(
        &pool,
        t,
        DocumentType::PurchaseOrder,
        json!({"document_type": "purchase_order", "invoice_number": "PO-12345",
               "invoice_date": "2024-01-10", "currency": "EUR", "total": 500.0,
               "line_items": lines}),
    )
    .await;
    for i in 0..120 {
        let mut note = json!({
            "document_type": "delivery_note",
            "invoice_date": format!("2024-02-{:02}", 15 + i % 10),
            "supplier_name": format!("Lieferant {i} Handels GmbH"),
            "supplier_vat_id": format!("DE{}", 300000000 + i),
        });
        if i < 60 {
            note["invoice_number"] = json!(["LS-12345", "12345", "DN 12345"][i % 3]);
        } else {
            note["invoice_number"] = json!(format!("LS-{}", 90000 + i));
            note["po_reference"] = json!("12345");
        }
        matched_document(&pool, t, DocumentType::DeliveryNote, note).await;
    }
    let inv = document(
        &pool,
        t,
        DocumentType::Invoice,
        json!({"document_type": "invoice", "invoice_number": "RE-2024-777",
               "invoice_date": "2024-02-20", "supplier_name": "Alpha Bürobedarf GmbH",
               "supplier_vat_id": "DE999999999", "po_reference": "PO-12345",
               "currency": "EUR", "total": 500.0, "line_items": lines}),
    )
    .await;

    let report = run(&pool, inv).await;

    assert!(
        report.decisions.iter().any(|d| d.candidate_id == po),
        "the order is found and linked among {} candidates: {:?}",
        report.candidates,
        report.decisions
    );
    assert!(report.candidates <= 50, "{}", report.candidates);
}

/// Numbers whose digit groups are split, merged
/// or carry an OCR letter are found by the candidate search — nothing but the number
/// leads from the invoice to the order or the note — and linked.
#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn split_merged_and_misread_digit_groups_are_found_by_the_candidate_search(pool: PgPool) {
    let t = tenant(&pool, "Acme AG").await;
    let lines = json!([{"description": "Copy paper A4 80g", "quantity": 50}]);
    for (order_number, cited, note_number, note_cited) in [
        ("45000 12345", "4500012345", "LS-2024-00123", "LS202400123"),
        (
            "PO 45000-77001",
            "4500077001",
            "LS202400124",
            "LS-2024-00124",
        ),
        (
            "PO-2024-0042",
            "PO-2024-O042",
            "DN 2024 0007",
            "DN-2024-0007",
        ),
    ] {
        let po = matched_document(
            &pool,
            t,
            DocumentType::PurchaseOrder,
            json!({"document_type": "purchase_order", "invoice_number": order_number,
                   "invoice_date": "2024-03-01", "currency": "EUR", "total": 80.0,
                   "line_items": lines}),
        )
        .await;
        let dn = matched_document(
            &pool,
            t,
            DocumentType::DeliveryNote,
            json!({"document_type": "delivery_note", "invoice_number": note_number,
                   "invoice_date": "2024-03-05", "line_items": lines}),
        )
        .await;
        let inv = document(
            &pool,
            t,
            DocumentType::Invoice,
            json!({"document_type": "invoice", "invoice_number": format!("RE-{cited}"),
                   "invoice_date": "2024-03-09", "supplier_name": "Papier Nord GmbH",
                   "po_reference": cited, "delivery_note_reference": note_cited,
                   "currency": "EUR", "total": 80.0, "line_items": lines}),
        )
        .await;

        let report = run(&pool, inv).await;

        let linked: Vec<Uuid> = report.decisions.iter().map(|d| d.candidate_id).collect();
        assert!(
            linked.contains(&po),
            "{order_number} found from {cited}: {report:?}"
        );
        assert!(
            linked.contains(&dn),
            "{note_number} found from {note_cited}: {report:?}"
        );
    }
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_whole_key_ranks_before_other_suppliers_numbers_that_share_its_digits(pool: PgPool) {
    let t = tenant(&pool, "Acme AG").await;
    // The delivery note the invoice cites: a month before it, no supplier to find it by.
    let dn = matched_document(
        &pool,
        t,
        DocumentType::DeliveryNote,
        json!({"document_type": "delivery_note", "invoice_number": "LS-12345",
               "invoice_date": "2024-01-10",
               "line_items": [{"description": "Toner cartridge black", "quantity": 10}]}),
    )
    .await;
    // Other suppliers' notes whose numbers share the digits, all nearer in time.
    for i in 0..60 {
        let number = match i % 3 {
            0 => "AB-12345".to_owned(),
            1 => "12345".to_owned(),
            _ => format!("X{}-12345", (b'A' + (i % 26) as u8) as char),
        };
        matched_document(
            &pool,
            t,
            DocumentType::DeliveryNote,
            json!({"document_type": "delivery_note", "invoice_number": number,
                   "invoice_date": format!("2024-02-{:02}", 15 + i % 10),
                   "supplier_name": format!("Lieferant {i} Handels GmbH"),
                   "supplier_vat_id": format!("DE{}", 300000000 + i)}),
        )
        .await;
    }
    let inv = document(
        &pool,
        t,
        DocumentType::Invoice,
        json!({"document_type": "invoice", "invoice_number": "RE-2024-777",
               "invoice_date": "2024-02-20", "supplier_name": "Alpha Bürobedarf GmbH",
               "supplier_vat_id": "DE999999999", "delivery_note_reference": "LS-12345",
               "currency": "EUR", "total": 500.0,
               "line_items": [{"description": "Toner cartridge black", "quantity": 10}]}),
    )
    .await;

    let report = run(&pool, inv).await;

    assert!(
        report.decisions.iter().any(|d| d.candidate_id == dn),
        "the cited note is found among {} candidates: {:?}",
        report.candidates,
        report.decisions
    );
}
