//! Semantic candidates on a real Postgres with pgvector: embeddings from an
//! OpenAI-compatible `/v1/embeddings` stand-in on wiremock answering like the real API
//! (hashed bag-of-words vectors, errors as the API sends them), stored with their model,
//! the nearest documents joining the candidates with their similarity as evidence.

use crate::matching_support;

use docflow::embeddings::{EmbeddingClient, EmbeddingSettings, stand_in_answer};
use docflow::matching::{self, Document, DocumentType, MatchingConfig, MatchingError, status};
use docflow::retry::{Classify, RetryPolicy};
use matching_support::*;
use serde_json::{Value, json};
use sqlx::PgPool;
use uuid::Uuid;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

const DIMENSIONS: u32 = 256;

/// The stand-in: every request answered from its body, like the real API.
async fn embeddings_server() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .respond_with(answer)
        .mount(&server)
        .await;
    server
}

fn answer(request: &Request) -> ResponseTemplate {
    let body: Value = serde_json::from_slice(&request.body).unwrap();
    ResponseTemplate::new(200).set_body_json(stand_in_answer(&body, DIMENSIONS as usize))
}

fn client(server: &MockServer, model: &str) -> EmbeddingClient {
    let env = docflow::settings::Env::new(|_| None);
    let settings = EmbeddingSettings {
        enabled: true,
        model: model.to_owned(),
        base_url: server.uri(),
        dimensions: DIMENSIONS,
        retry: RetryPolicy::with_base_delay(std::time::Duration::from_millis(10)),
        ..EmbeddingSettings::from_env(&env).unwrap()
    };
    EmbeddingClient::new(&settings, Some("sk-test".to_owned().into()))
        .unwrap()
        .unwrap()
}

async fn requests(server: &MockServer) -> Vec<Value> {
    server
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .map(|r| serde_json::from_slice(&r.body).unwrap())
        .collect()
}

async fn run(
    pool: &PgPool,
    embeddings: Option<&EmbeddingClient>,
    id: Uuid,
) -> Result<matching::MatchReport, MatchingError> {
    run_with(pool, embeddings, &MatchingConfig::default(), id).await
}

async fn run_with(
    pool: &PgPool,
    embeddings: Option<&EmbeddingClient>,
    config: &MatchingConfig,
    id: Uuid,
) -> Result<matching::MatchReport, MatchingError> {
    run_with_llm(pool, None, embeddings, config, id).await
}

async fn run_with_llm(
    pool: &PgPool,
    llm: Option<&docflow::llm::LlmClient>,
    embeddings: Option<&EmbeddingClient>,
    config: &MatchingConfig,
    id: Uuid,
) -> Result<matching::MatchReport, MatchingError> {
    let doc: Document = match status::claim(pool, id, None, status::DEFAULT_CLAIM_LEASE)
        .await
        .unwrap()
    {
        status::Claim::Claimed(doc) => doc,
        other => panic!("document {id} not claimable: {other:?}"),
    };
    let result = matching::match_document_with(pool, llm, embeddings, config, &doc).await;
    if result.is_err() {
        // As the function does once a run failed: the next run claims at once.
        let _ = status::release_claim(pool, id, doc.matching_attempts)
            .await
            .unwrap();
    }
    result
}

/// The embeddings weighed enough for the goods and dates to make a link on their own
/// (`MATCH_WEIGHT_SEMANTIC=0.6`): the link, and so its evidence, is written.
fn semantic_heavy() -> MatchingConfig {
    let mut config = MatchingConfig::default();
    config.weights.semantic = 0.6;
    config
}

fn order() -> Value {
    json!({
        "document_type": "purchase_order",
        "invoice_number": "PO-2024-0042",
        "invoice_date": "2024-03-01",
        "supplier_name": "Müller Bürobedarf GmbH & Co. KG",
        "supplier_vat_id": "DE123456789",
        "customer_name": "Acme AG",
        "currency": "EUR",
        "total": 1250.0,
        "line_items": [
            {"description": "Toner cartridge black", "quantity": 10},
            {"description": "Copy paper A4 80g", "quantity": 50}
        ]
    })
}

/// The same goods, delivered under the supplier's new name, citing nothing, no VAT id.
fn renamed_delivery_note() -> Value {
    json!({
        "document_type": "delivery_note",
        "invoice_number": "LS-7781",
        "invoice_date": "2024-03-05",
        "supplier_name": "OfficeOne Supplies GmbH",
        "customer_name": "Acme AG",
        "line_items": [
            {"description": "Toner cartridge black", "quantity": 10},
            {"description": "Copy paper A4 80g", "quantity": 50}
        ]
    })
}

/// Another order of the tenant, other goods, another supplier.
fn unrelated_order() -> Value {
    json!({
        "document_type": "purchase_order",
        "invoice_number": "PO-2024-0043",
        "invoice_date": "2024-03-02",
        "supplier_name": "Hansa Werkzeuge AG",
        "customer_name": "Acme AG",
        "currency": "EUR",
        "total": 318.0,
        "line_items": [{"description": "Cordless drill 18V", "quantity": 2}]
    })
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_delivery_note_citing_nothing_from_a_renamed_supplier_is_found_only_by_its_embedding(
    pool: PgPool,
) {
    let server = embeddings_server().await;
    let embeddings = client(&server, "text-embedding-3-small");
    let t = tenant(&pool, "Acme AG").await;
    let po = document(&pool, t, DocumentType::PurchaseOrder, order()).await;
    let other = document(&pool, t, DocumentType::PurchaseOrder, unrelated_order()).await;
    run(&pool, Some(&embeddings), po).await.unwrap();
    run(&pool, Some(&embeddings), other).await.unwrap();

    // Without embeddings: no reference, name, VAT id or IBAN leads to the order.
    let plain = document(
        &pool,
        t,
        DocumentType::DeliveryNote,
        renamed_delivery_note(),
    )
    .await;
    let report = run(&pool, None, plain).await.unwrap();
    assert_eq!(report.candidates, 0, "{report:?}");

    let dn = document(
        &pool,
        t,
        DocumentType::DeliveryNote,
        renamed_delivery_note(),
    )
    .await;
    // On the embedding alone the score never links: the LLM decides,
    // here a stand-in confirming the one candidate it is shown.
    let llm = MockServer::start().await;
    messages()
        .respond_with(docflow_tests::llm::anthropic_text(
            r#"{"matches":[{"candidate":1,"confidence":"medium","reasoning":"Same goods, quantities and week."}]}"#,
        ))
        .mount(&llm)
        .await;
    let report = run_with_llm(
        &pool,
        Some(&llm_client(&llm)),
        Some(&embeddings),
        &semantic_heavy(),
        dn,
    )
    .await
    .unwrap();
    // The other order's goods share nothing with the note: not a neighbour.
    assert_eq!(report.candidates, 1, "{report:?}");
    assert_eq!(llm_calls(&llm).await, 1);
    let edge = edges(&pool)
        .await
        .into_iter()
        .find(|e| pair(e.document_a_id, e.document_b_id) == pair(po, dn))
        .unwrap_or_else(|| panic!("the note is linked to its order: {report:?}"));
    let semantic = edge
        .evidence
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "semantic_similarity")
        .unwrap_or_else(|| panic!("the similarity is evidence: {}", edge.evidence))
        .clone();
    assert!(semantic["similarity"].as_f64().unwrap() > 0.5, "{semantic}");
    assert!(semantic["weight"].as_f64().unwrap() > 0.0, "{semantic}");
    assert_eq!(edge.decided_by, "llm");

    // The request is the documented one, the key a bearer token.
    let sent = requests(&server).await;
    let last = sent.last().unwrap();
    assert_eq!(last["model"], "text-embedding-3-small");
    assert_eq!(last["dimensions"], DIMENSIONS);
    assert_eq!(last["encoding_format"], "float");
    assert!(
        last["input"][0]
            .as_str()
            .unwrap()
            .contains("Toner cartridge black")
    );
    let auth = server.received_requests().await.unwrap()[0]
        .headers
        .get("authorization")
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(auth, "Bearer sk-test");
}

/// A delivery note of another supplier ("Hansa Werkzeuge", no VAT id) for the very
/// goods of the order, citing nothing: to an embedding it looks like the order's own.
fn another_suppliers_delivery_note() -> Value {
    let mut note = renamed_delivery_note();
    note["supplier_name"] = json!("Hansa Werkzeuge AG");
    note["invoice_number"] = json!("HL-2024-00311");
    note
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn another_suppliers_delivery_note_for_the_same_goods_is_never_linked_on_its_embedding_alone(
    pool: PgPool,
) {
    let server = embeddings_server().await;
    let embeddings = client(&server, "text-embedding-3-small");
    let t = tenant(&pool, "Acme AG").await;
    let po = document(&pool, t, DocumentType::PurchaseOrder, order()).await;
    run(&pool, Some(&embeddings), po).await.unwrap();

    // Score only (no LLM): the embedding finds the order, the dissimilar name counts
    // against, and a pair resting on the embedding alone is not linked by the score.
    let dn = document(
        &pool,
        t,
        DocumentType::DeliveryNote,
        another_suppliers_delivery_note(),
    )
    .await;
    let report = run(&pool, Some(&embeddings), dn).await.unwrap();
    assert_eq!(
        report.candidates, 1,
        "the embedding finds the order: {report:?}"
    );
    assert!(report.decisions.is_empty(), "{report:?}");
    assert!(pairs(&pool).await.is_empty());

    // With an LLM: the pair is in the ambiguous band, so the LLM is asked, and its "no"
    // leaves it unlinked; the score never decided it.
    let llm = MockServer::start().await;
    messages()
        .respond_with(docflow_tests::llm::anthropic_text(r#"{"matches":[]}"#))
        .mount(&llm)
        .await;
    let dn2 = document(
        &pool,
        t,
        DocumentType::DeliveryNote,
        another_suppliers_delivery_note(),
    )
    .await;
    let report = run_with_llm(
        &pool,
        Some(&llm_client(&llm)),
        Some(&embeddings),
        &MatchingConfig::default(),
        dn2,
    )
    .await
    .unwrap();
    assert_eq!(llm_calls(&llm).await, 1, "{report:?}");
    assert!(pairs(&pool).await.is_empty());
    let prompt = String::from_utf8(llm.received_requests().await.unwrap()[0].body.clone()).unwrap();
    assert!(
        prompt.contains("name_mismatch"),
        "the dissimilar name is evidence: {prompt}"
    );
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn the_embedding_is_stored_with_its_model_and_made_again_only_for_another_model_or_text(
    pool: PgPool,
) {
    let server = embeddings_server().await;
    let t = tenant(&pool, "Acme AG").await;
    let po = document(&pool, t, DocumentType::PurchaseOrder, order()).await;
    let small = client(&server, "text-embedding-3-small");
    run(&pool, Some(&small), po).await.unwrap();
    let stored: (Option<String>, Option<i32>) = sqlx::query_as(
        "SELECT embedding_model, vector_dims(embedding) FROM document WHERE id = $1",
    )
    .bind(po)
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(
        stored,
        (
            Some("text-embedding-3-small".to_owned()),
            Some(DIMENSIONS as i32)
        )
    );
    assert_eq!(requests(&server).await.len(), 1);

    // Matched again (a message without SentTimestamp is always run), same model and
    // text: the stored embedding is used.
    run(&pool, Some(&small), po).await.unwrap();
    assert_eq!(requests(&server).await.len(), 1);

    // Another model: embedded again, and stored with its name.
    let large = client(&server, "text-embedding-3-large");
    run(&pool, Some(&large), po).await.unwrap();
    assert_eq!(requests(&server).await.len(), 2);
    let model: Option<String> =
        sqlx::query_scalar("SELECT embedding_model FROM document WHERE id = $1")
            .bind(po)
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(model.as_deref(), Some("text-embedding-3-large"));

    // Edited text (another total): embedded again.
    sqlx::query(
        "UPDATE document SET structured_data = jsonb_set(structured_data, '{total}', '999') WHERE id = $1",
    )
    .bind(po)
    .execute(&pool)
    .await
    .unwrap();
    run(&pool, Some(&large), po).await.unwrap();
    assert_eq!(requests(&server).await.len(), 3);
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn transient_embedding_errors_are_retried_in_process_and_permanent_ones_fail_the_run(
    pool: PgPool,
) {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .respond_with(ResponseTemplate::new(429).set_body_json(json!({
            "error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}
        })))
        .up_to_n_times(2)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .respond_with(answer)
        .mount(&server)
        .await;
    let t = tenant(&pool, "Acme AG").await;
    let po = document(&pool, t, DocumentType::PurchaseOrder, order()).await;
    run(&pool, Some(&client(&server, "m")), po).await.unwrap();
    assert_eq!(requests(&server).await.len(), 3);

    let denied = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .respond_with(ResponseTemplate::new(401).set_body_json(json!({
            "error": {"message": "Incorrect API key provided", "type": "invalid_request_error", "code": "invalid_api_key"}
        })))
        .mount(&denied)
        .await;
    let dn = document(
        &pool,
        t,
        DocumentType::DeliveryNote,
        renamed_delivery_note(),
    )
    .await;
    let err = run(&pool, Some(&client(&denied, "m")), dn)
        .await
        .unwrap_err();
    assert!(matches!(err, MatchingError::Embedding { .. }), "{err:?}");
    assert!(!err.is_transient(), "{err:?}");
    assert_eq!(requests(&denied).await.len(), 1, "a 401 is not retried");

    // Vectors of another length than configured: permanent, not retried.
    let wrong = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .respond_with(|request: &Request| {
            let mut body: Value = serde_json::from_slice(&request.body).unwrap();
            body["dimensions"] = json!(384);
            ResponseTemplate::new(200).set_body_json(stand_in_answer(&body, 384))
        })
        .mount(&wrong)
        .await;
    let err = run(&pool, Some(&client(&wrong, "m")), dn)
        .await
        .unwrap_err();
    assert!(!err.is_transient(), "{err:?}");
    assert_eq!(requests(&wrong).await.len(), 1);
}

/// Seeds `mine` documents with 256-dimension embeddings into one tenant and `others`
/// into another, then runs the nearest-neighbour query of matching under
/// `EXPLAIN (ANALYZE, BUFFERS)`, as matching runs it (iterative scan on). Returns the
/// plan as text and how many rows the query returns.
async fn explain_nearest(pool: &PgPool, mine: i32, others: i32) -> (String, usize) {
    let t = tenant(pool, "Acme AG").await;
    let other = tenant(pool, "Beta AG").await;
    for (tenant_id, count) in [(t, mine), (other, others)] {
        sqlx::query(
            r#"
            INSERT INTO document (tenant_id, type, file_path, structured_data, embedding, embedding_model)
            SELECT $1,
                   (ARRAY['purchase_order','delivery_note','invoice'])[1 + g % 3]::document_type,
                   'documents/x.pdf', '{"schema_version": 2, "extraction_successful": true, "confidence": "high"}'::jsonb,
                   (SELECT array_agg(random()::real - 0.5) FROM generate_series(1, 256) WHERE g > 0)::vector,
                   'm'
              FROM generate_series(1, $2) g
            "#,
        )
        .bind(tenant_id)
        .bind(count)
        .execute(pool)
        .await
        .unwrap();
    }
    sqlx::query("ANALYZE document").execute(pool).await.unwrap();
    let probe = docflow::embeddings::to_pgvector_text(&docflow::embeddings::hashed_bag_of_words(
        "Toner cartridge black",
        256,
    ));
    let mut tx = pool.begin().await.unwrap();
    sqlx::query("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true)")
        .execute(&mut *tx)
        .await
        .unwrap();
    let sql = matching::semantic::nearest_sql(256);
    let explain = format!("EXPLAIN (ANALYZE, BUFFERS) {sql}");
    let lines: Vec<String> = sqlx::query_scalar(&explain)
        .bind(t)
        .bind(Uuid::new_v4())
        .bind(vec!["purchase_order", "invoice"])
        .bind("mueller buerobedarf")
        .bind(&probe)
        .bind("m")
        .bind(10i64)
        .fetch_all(&mut *tx)
        .await
        .unwrap();
    let rows: Vec<(Uuid, Option<f64>)> = sqlx::query_as(&format!(
        "SELECT n.id, n.semantic_similarity FROM ({sql}) n"
    ))
    .bind(t)
    .bind(Uuid::new_v4())
    .bind(vec!["purchase_order", "invoice"])
    .bind("mueller buerobedarf")
    .bind(&probe)
    .bind("m")
    .bind(10i64)
    .fetch_all(&mut *tx)
    .await
    .unwrap();
    (lines.join("\n"), rows.len())
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn the_nearest_neighbour_search_is_an_hnsw_index_scan_that_returns_its_limit(pool: PgPool) {
    // 2,000 + 4,000 documents: the planner takes the partial HNSW index of the
    // dimension, and the iterative scan finds 10 rows of the tenant.
    let (plan, rows) = explain_nearest(&pool, 2_000, 4_000).await;
    println!("{plan}");
    assert!(
        plan.contains("Index Scan using idx_document_embedding_256"),
        "{plan}"
    );
    assert!(!plan.contains("Seq Scan"), "{plan}");
    assert_eq!(rows, 10, "{plan}");
}

/// The embeddings key was read once per cold start: after a rotation that revoked the
/// old key, every warm instance got 401 (permanent) and failed each matching for good.
#[tokio::test]
async fn a_rotated_embeddings_key_is_read_again_and_the_request_repeated_once() {
    let server = MockServer::start().await;
    let with_key = |key: &str| {
        Mock::given(method("POST"))
            .and(path("/v1/embeddings"))
            .and(wiremock::matchers::header(
                "authorization",
                format!("Bearer {key}").as_str(),
            ))
            .respond_with(answer)
            .with_priority(1)
    };
    with_key("sk-old").up_to_n_times(1).mount(&server).await;
    with_key("sk-new").mount(&server).await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .respond_with(ResponseTemplate::new(401).set_body_json(json!({
            "error": {
                "message": "Incorrect API key provided.",
                "type": "invalid_request_error",
                "code": "invalid_api_key"
            }
        })))
        .with_priority(2)
        .mount(&server)
        .await;
    let secrets = aws_sdk_secretsmanager::Client::new(&docflow_tests::aws().await);
    let secret_id = docflow_tests::unique("docflow-test/embeddings");
    secrets
        .create_secret()
        .name(&secret_id)
        .secret_string(json!({ "openai_api_key": "sk-old" }).to_string())
        .send()
        .await
        .unwrap();
    let store = docflow::secrets::SecretStore::new(
        secrets.clone(),
        &secret_id,
        std::time::Duration::from_secs(300),
    )
    .with_refresh_min_age(std::time::Duration::ZERO);
    let env = docflow::settings::Env::new(|_| None);
    let settings = EmbeddingSettings {
        enabled: true,
        model: "text-embedding-3-small".to_owned(),
        base_url: server.uri(),
        dimensions: DIMENSIONS,
        retry: RetryPolicy::with_base_delay(std::time::Duration::from_millis(10)),
        ..EmbeddingSettings::from_env(&env).unwrap()
    };
    let client = EmbeddingClient::from_secret(&settings, &store)
        .await
        .unwrap()
        .unwrap();
    client.embed_once("Muster GmbH Rechnung").await.unwrap();
    // Rotated, the old key revoked; the warm client still has it cached.
    secrets
        .put_secret_value()
        .secret_id(&secret_id)
        .secret_string(json!({ "openai_api_key": "sk-new" }).to_string())
        .send()
        .await
        .unwrap();

    let after = client.embed_once("Muster GmbH Rechnung").await;

    assert!(after.is_ok(), "{after:?}");
    assert_eq!(requests(&server).await.len(), 3, "ok, refused, repeated");
    // A key the server refuses that nobody rotated: re-read, unchanged, one request.
    secrets
        .put_secret_value()
        .secret_id(&secret_id)
        .secret_string(json!({ "openai_api_key": "sk-revoked" }).to_string())
        .send()
        .await
        .unwrap();
    let cold_store = docflow::secrets::SecretStore::new(
        secrets.clone(),
        &secret_id,
        std::time::Duration::from_secs(300),
    )
    .with_refresh_min_age(std::time::Duration::ZERO);
    let fresh = EmbeddingClient::from_secret(&settings, &cold_store)
        .await
        .unwrap()
        .unwrap();
    let before = requests(&server).await.len();
    let refused = fresh.embed_once("a key nobody rotated").await;
    assert!(
        refused.as_ref().is_err_and(|e| !e.is_transient()),
        "{refused:?}"
    );
    assert_eq!(requests(&server).await.len() - before, 1);
}

/// A tenant with under 1 % of the embeddings of a shared table gets
/// its k nearest neighbours, exactly. The table stands in for one 40 times larger
/// (4,024 rows for 160,000): the connection scales pgvector's `hnsw.max_scan_tuples`
/// down by the same factor (20,000 → 500), so a filtered HNSW walk reads the same
/// share of the graph as it would there, and it plans as a warm connection does after
/// five executions of a prepared statement (`plan_cache_mode = force_generic_plan`:
/// the generic plan does not know the tenant is small and walks the HNSW index). The
/// tenant's 24 rows (0.6 %, 16 of them orders or invoices) then left a filtered HNSW
/// search with about 2 of its 10 neighbours; the search now ranks a tenant below
/// `EXACT_SEARCH_BELOW` embeddings exactly.
#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_tenant_with_under_one_percent_of_the_embeddings_gets_its_k_nearest_neighbours(
    pool: PgPool,
) {
    let small = tenant(&pool, "Small GmbH").await;
    let large = tenant(&pool, "Large AG").await;
    for (tenant_id, count) in [(small, 24), (large, 4_000)] {
        sqlx::query(
            r#"
            INSERT INTO document (tenant_id, type, file_path, structured_data, embedding, embedding_model)
            SELECT $1,
                   (ARRAY['purchase_order','delivery_note','invoice'])[1 + g % 3]::document_type,
                   'documents/x.pdf', '{"schema_version": 2, "extraction_successful": true, "confidence": "high"}'::jsonb,
                   (SELECT array_agg(random()::real - 0.5) FROM generate_series(1, 256) WHERE g > 0)::vector,
                   'm'
              FROM generate_series(1, $2) g
            "#,
        )
        .bind(tenant_id)
        .bind(count)
        .execute(&pool)
        .await
        .unwrap();
    }
    sqlx::query("ANALYZE document")
        .execute(&pool)
        .await
        .unwrap();
    let options = (*pool.connect_options()).clone().options([
        ("hnsw.max_scan_tuples", "500"),
        ("plan_cache_mode", "force_generic_plan"),
    ]);
    let warm = sqlx::postgres::PgPoolOptions::new()
        .max_connections(1)
        .connect_with(options)
        .await
        .unwrap();

    let probe_text = docflow::embeddings::to_pgvector_text(
        &(0..256)
            .map(|i| ((i * 37 % 101) as f32) / 101.0 - 0.5)
            .collect::<Vec<_>>(),
    );
    let probe = matching::semantic::Probe {
        vector: &probe_text,
        model: "m",
        dimensions: 256,
    };
    let query = matching::candidates::Query {
        tenant_id: small,
        document_id: Uuid::new_v4(),
        doc_type: DocumentType::DeliveryNote,
        counterparty: None,
        vat_id: None,
        iban: None,
        references: &[],
        own_probe: &[],
        cited_probe: &[],
        date: chrono::NaiveDate::from_ymd_opt(2024, 3, 1).unwrap(),
    };
    // The true 10 nearest of the tenant's orders and invoices, by a sequential scan.
    let truth: Vec<Uuid> = sqlx::query_scalar(
        r#"
        SELECT id FROM document
         WHERE tenant_id = $1 AND type IN ('purchase_order', 'invoice')
         ORDER BY embedding::vector(256) <=> $2::text::vector(256), id
         LIMIT 10
        "#,
    )
    .bind(small)
    .bind(&probe_text)
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(truth.len(), 10);

    // More than five times: the generic plan is in use from the sixth on.
    for _ in 0..7 {
        let found = matching::semantic::nearest(&warm, &query, &probe, 10, -1.0)
            .await
            .unwrap();
        let ids: Vec<Uuid> = found.iter().map(|c| c.id).collect();
        assert_eq!(ids, truth, "the tenant's 10 nearest, in order");
    }

    // The exact search reads the tenant's rows through their index, not the HNSW graph
    // and not the table (planned for this tenant: the search plans it so each time).
    let plan: Vec<String> =
        sqlx::query_scalar(&format!("EXPLAIN {}", matching::semantic::exact_sql(256)))
            .bind(small)
            .bind(Uuid::new_v4())
            .bind(vec!["purchase_order", "invoice"])
            .bind(None::<&str>)
            .bind(&probe_text)
            .bind("m")
            .bind(10i64)
            .fetch_all(&pool)
            .await
            .unwrap();
    let plan = plan.join("\n");
    println!("{plan}");
    assert!(plan.contains("idx_document_embedding_tenant"), "{plan}");
    assert!(!plan.contains("idx_document_embedding_256"), "{plan}");
    assert!(!plan.contains("Seq Scan on document"), "{plan}");
}

/// A document whose text is too long for the embeddings model. The
/// request carries at most `MAX_INPUT_CHARS` of it; a server with a smaller model (here
/// one taking 2,000 characters) answers 400 with OpenAI's body for it. That document is
/// matched without the semantic search instead of failing, and the documents meeting it
/// afterwards are matched as usual.
#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_text_too_long_for_the_embeddings_model_is_matched_without_the_semantic_search(
    pool: PgPool,
) {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .respond_with(|request: &Request| {
            let body: Value = serde_json::from_slice(&request.body).unwrap();
            let chars = body["input"][0].as_str().unwrap().chars().count();
            if chars > 2_000 {
                // What OpenAI answers for an input over the model's limit.
                ResponseTemplate::new(400).set_body_json(json!({"error": {
                    "message": format!("This model's maximum context length is 512 tokens, however you requested {} tokens ({} in your prompt; 0 for the completion). Please reduce your prompt; or completion length.", chars / 3, chars / 3),
                    "type": "invalid_request_error", "param": null, "code": null
                }}))
            } else {
                answer(request)
            }
        })
        .mount(&server)
        .await;
    let embeddings = client(&server, "m");
    let t = tenant(&pool, "Acme AG").await;
    let po = document(&pool, t, DocumentType::PurchaseOrder, order()).await;
    run(&pool, Some(&embeddings), po).await.unwrap();

    // A delivery note of the order with 400 long lines: 40,000+ characters of text.
    let mut long_note = renamed_delivery_note();
    long_note["po_reference"] = json!("PO-2024-0042");
    long_note["line_items"] = json!(
        (0..400)
            .map(|i| json!({"description": format!("Toner cartridge black, batch {i} of the framework order, shipped on pallet {i}"), "quantity": 1}))
            .collect::<Vec<_>>()
    );
    let dn = document(&pool, t, DocumentType::DeliveryNote, long_note).await;
    let report = run(&pool, Some(&embeddings), dn)
        .await
        .unwrap_or_else(|e| panic!("the note is matched, not failed: {e:?}"));
    assert!(
        report.decisions.iter().any(|d| d.candidate_id == po),
        "its order is found by the reference: {report:?}"
    );
    let s = state(&pool, dn).await;
    assert_eq!(s.matching_status.as_deref(), Some("succeeded"));
    let stored: Option<String> =
        sqlx::query_scalar("SELECT embedding_model FROM document WHERE id = $1")
            .bind(dn)
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(stored, None, "no embedding stored for it");

    // Every request was cut to the budget; the one for the note failed once, permanent.
    let sent = requests(&server).await;
    assert!(
        sent.iter()
            .all(|r| r["input"][0].as_str().unwrap().chars().count()
                <= docflow::embeddings::MAX_INPUT_CHARS)
    );
    assert_eq!(
        sent.iter()
            .filter(|r| r["input"][0].as_str().unwrap().chars().count() > 2_000)
            .count(),
        1,
        "not retried"
    );

    // An invoice meeting the note (it cites it) and the order is matched as usual.
    let inv = document(
        &pool,
        t,
        DocumentType::Invoice,
        json!({
            "document_type": "invoice",
            "invoice_number": "RE-9001",
            "invoice_date": "2024-03-10",
            "supplier_name": "OfficeOne Supplies GmbH",
            "po_reference": "PO-2024-0042",
            "delivery_note_reference": "LS-7781",
            "currency": "EUR",
            "total": 1250.0,
            "line_items": [{"description": "Toner cartridge black", "quantity": 10}]
        }),
    )
    .await;
    let report = run(&pool, Some(&embeddings), inv).await.unwrap();
    let linked: Vec<Uuid> = report.decisions.iter().map(|d| d.candidate_id).collect();
    assert!(linked.contains(&dn) && linked.contains(&po), "{report:?}");
}

#[sqlx::test(migrator = "docflow::db::MIGRATOR")]
async fn a_tenant_above_the_exact_search_threshold_finds_its_neighbour_through_the_hnsw_index(
    pool: PgPool,
) {
    use matching::semantic::{EXACT_SEARCH_BELOW, Probe, nearest};
    // A tenant with as many embeddings as the exact search takes at most, beside a
    // larger one: the HNSW branch.
    let (_, rows) = explain_nearest(&pool, EXACT_SEARCH_BELOW as i32, 4_000).await;
    assert_eq!(rows, 10);
    let t: Uuid = sqlx::query_scalar("SELECT id FROM tenant WHERE name = 'Acme AG'")
        .fetch_one(&pool)
        .await
        .unwrap();
    // The order the note belongs to, with an embedding of the same goods.
    let vector = docflow::embeddings::hashed_bag_of_words("Akku-Bohrschrauber 18V 2 Stueck", 256);
    let text = docflow::embeddings::to_pgvector_text(&vector);
    let order: Uuid = sqlx::query_scalar(
        r#"INSERT INTO document (tenant_id, type, file_path, structured_data, embedding, embedding_model)
           VALUES ($1, 'purchase_order', 'documents/o.pdf', '{"schema_version": 2, "extraction_successful": true, "confidence": "high"}'::jsonb, $2::text::vector, 'm')
           RETURNING id"#,
    )
    .bind(t)
    .bind(&text)
    .fetch_one(&pool)
    .await
    .unwrap();

    let logs = docflow_tests::logs::Logs::default();
    let guard = logs.capture_text(tracing::Level::DEBUG);
    let query = matching::candidates::Query {
        tenant_id: t,
        document_id: Uuid::new_v4(),
        doc_type: DocumentType::DeliveryNote,
        counterparty: None,
        vat_id: None,
        iban: None,
        references: &[],
        own_probe: &[],
        cited_probe: &[],
        date: chrono::NaiveDate::from_ymd_opt(2024, 3, 4).unwrap(),
    };
    let probe = Probe {
        vector: &text,
        model: "m",
        dimensions: 256,
    };
    let found = nearest(&pool, &query, &probe, 10, 0.4).await.unwrap();
    drop(guard);

    let log = logs.text();
    assert!(
        log.contains("exact=false") && log.contains("nearest-neighbour search"),
        "{log}"
    );
    assert_eq!(
        found.first().map(|c| c.id),
        Some(order),
        "{:?}",
        found
            .iter()
            .map(|c| (c.id, c.semantic_similarity))
            .collect::<Vec<_>>()
    );
    assert!(found[0].semantic_similarity.unwrap() > 0.99);
}
