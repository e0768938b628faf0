//! `docflow seed`: sample data for the local stack.
//!
//! - **A demo tenant** (new on every run, so runs never match each other's documents):
//!   an organization `docflow demo <time>`, the tenant `Demo Bau GmbH`, an approver, an
//!   active DATEV integration, and every sample document ingested as the app would
//!   ([`crate::ingest`]): uploaded, recorded, enqueued.
//! - **The event fixtures**: the rows the sample events in `events/` name, reset to
//!   their starting state on every run, so `cargo lambda invoke <fn> --data-file
//!   events/<fn>/<file>.json` does what `events/README.md` says (and again after the
//!   next seed).
//! - The local secret gets the stand-in's `maesn_api_key` when it has none.

use anyhow::Context as _;
use docflow::document::DocumentType;
use docflow::extract::{Extraction, Extractor, einvoice};
use docflow::ocr::{FileKind, Transcriber};
use serde_json::Value;
use sqlx::PgPool;
use uuid::{Uuid, uuid};

use crate::ingest::{Ingested, Target, ingest};
use crate::samples::{SAMPLES, Sample};

/// Organizations created by `docflow seed` are named `docflow demo <timestamp>`.
pub const DEMO_ORGANIZATION_PREFIX: &str = "docflow demo ";
/// The DATEV connection of demo tenants (Maesn's `X-ACCOUNT-KEY`; the `companyId` is
/// `demo-company-<organization>`, one DATEV company per demo run, so runs never book
/// the same document number twice).
pub const DEMO_ACCOUNT_KEY: &str = "demo-account-key";
/// The fixtures' DATEV company.
pub const DEMO_COMPANY_ID: &str = "demo-company";

/// What [`seed_demo`] created.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Seeded {
    pub organization_id: Uuid,
    pub tenant_id: Uuid,
    pub approver_id: Uuid,
    pub documents: Vec<Ingested>,
}

/// Creates a demo tenant and ingests every sample document for it.
pub async fn seed_demo(target: &Target<'_>) -> anyhow::Result<Seeded> {
    let mut seeded = create_demo_tenant(target.pool).await?;
    for sample in SAMPLES {
        seeded.documents.push(
            ingest(
                target,
                seeded.tenant_id,
                sample.file_name,
                sample.bytes.to_vec(),
            )
            .await?,
        );
    }
    Ok(seeded)
}

/// A new demo tenant (organization, tenant, approver, active DATEV integration) without
/// documents: [`seed_demo`]'s first step, and `make bench`'s pipeline tenant.
pub async fn create_demo_tenant(pool: &PgPool) -> anyhow::Result<Seeded> {
    let now = chrono::Utc::now().format("%Y-%m-%d %H:%M:%S%.3f");
    let mut tx = pool.begin().await.context("cannot reach the database")?;
    let organization_id: Uuid =
        sqlx::query_scalar("INSERT INTO organization (name) VALUES ($1) RETURNING id")
            .bind(format!("{DEMO_ORGANIZATION_PREFIX}{now}"))
            .fetch_one(&mut *tx)
            .await
            .context("failed to create the demo organization")?;
    let tenant_id: Uuid = sqlx::query_scalar(
        "INSERT INTO tenant (organization_id, name, vat_id) VALUES ($1, 'Demo Bau GmbH', 'DE987654321') RETURNING id",
    )
    .bind(organization_id)
    .fetch_one(&mut *tx)
    .await
    .context("failed to create the demo tenant")?;
    let approver_id: Uuid = sqlx::query_scalar(
        "INSERT INTO identity (organization_id, email, name, is_admin) VALUES ($1, $2, 'Anna Approver', true) RETURNING id",
    )
    .bind(organization_id)
    .bind(format!("approver+{}@demo.docflow.local", &organization_id.simple().to_string()[..8]))
    .fetch_one(&mut *tx)
    .await
    .context("failed to create the demo approver")?;
    sqlx::query(
        "INSERT INTO tenant_datev_integration (tenant_id, status, account_key, company_id) VALUES ($1, 'active', $2, $3)",
    )
    .bind(tenant_id)
    .bind(DEMO_ACCOUNT_KEY)
    .bind(format!(
        "{DEMO_COMPANY_ID}-{}",
        &organization_id.simple().to_string()[..8]
    ))
    .execute(&mut *tx)
    .await
    .context("failed to create the demo DATEV integration")?;
    tx.commit()
        .await
        .context("failed to commit the demo tenant")?;
    Ok(Seeded {
        organization_id,
        tenant_id,
        approver_id,
        documents: Vec::new(),
    })
}

/// The newest demo tenant, if any.
pub async fn latest_demo_tenant(pool: &PgPool) -> anyhow::Result<Option<Uuid>> {
    sqlx::query_scalar(
        r#"SELECT t.id FROM tenant t JOIN organization o ON o.id = t.organization_id
            WHERE o.name LIKE $1 || '%' ORDER BY t.created_at DESC LIMIT 1"#,
    )
    .bind(DEMO_ORGANIZATION_PREFIX)
    .fetch_optional(pool)
    .await
    .context("cannot reach the database")
}

/// Adds the stand-in's `maesn_api_key` to the secret when it has none (every other key
/// is kept). Fails when the secret does not exist: `make up` creates it.
pub async fn ensure_maesn_key(
    secrets: &aws_sdk_secretsmanager::Client,
    secret_id: &str,
) -> anyhow::Result<bool> {
    let current = secrets
        .get_secret_value()
        .secret_id(secret_id)
        .send()
        .await
        .map_err(|e| {
            anyhow::anyhow!(
                "cannot read secret {secret_id} ({}); run `make up` first",
                crate::errors::short(&e)
            )
        })?;
    let mut values: serde_json::Map<String, Value> = current
        .secret_string()
        .and_then(|s| serde_json::from_str(s).ok())
        .with_context(|| format!("secret {secret_id} is not a JSON object"))?;
    if values.contains_key(docflow::datev::API_KEY_SECRET) {
        return Ok(false);
    }
    values.insert(
        docflow::datev::API_KEY_SECRET.into(),
        Value::String(crate::maesn::DEMO_API_KEY.into()),
    );
    secrets
        .put_secret_value()
        .secret_id(secret_id)
        .secret_string(Value::Object(values).to_string())
        .send()
        .await
        .map_err(|e| {
            anyhow::anyhow!(
                "cannot update secret {secret_id}: {}",
                crate::errors::short(&e)
            )
        })?;
    Ok(true)
}

/// Stores a tenant's DATEV account key where the Maesn connector reads it: the secret
/// `prefix` + tenant id (`DATEV_CREDENTIALS_PREFIX`), `{"account_key": …}`; created, or
/// updated when it exists.
pub async fn ensure_datev_account(
    secrets: &aws_sdk_secretsmanager::Client,
    prefix: &str,
    tenant_id: Uuid,
) -> anyhow::Result<()> {
    let name = format!("{prefix}{tenant_id}");
    let value =
        serde_json::json!({ docflow::datev::ACCOUNT_KEY_SECRET: DEMO_ACCOUNT_KEY }).to_string();
    let created = secrets
        .create_secret()
        .name(&name)
        .secret_string(&value)
        .send()
        .await;
    match created {
        Ok(_) => Ok(()),
        Err(e)
            if e.as_service_error()
                .is_some_and(|s| s.is_resource_exists_exception()) =>
        {
            secrets
                .put_secret_value()
                .secret_id(&name)
                .secret_string(&value)
                .send()
                .await
                .map_err(|e| {
                    anyhow::anyhow!("cannot update secret {name}: {}", crate::errors::short(&e))
                })?;
            Ok(())
        }
        Err(e) => Err(anyhow::anyhow!(
            "cannot create secret {name}: {}",
            crate::errors::short(&e)
        )),
    }
}

// The ids the sample events in events/ carry (see events/README.md).
const FIXTURE_ORGANIZATION: Uuid = uuid!("0e0e0e0e-0000-4000-8000-000000000001");
const FIXTURE_TENANT: Uuid = uuid!("0e0e0e0e-0000-4000-8000-000000000002");
const FIXTURE_APPROVER: Uuid = uuid!("0e0e0e0e-0000-4000-8000-000000000003");

/// Ingestions of `events/ingestion/*.json`: (ingestion id, document id, sample, status).
const INGESTION_FIXTURES: [(Uuid, Uuid, &str, &str); 7] = [
    (
        uuid!("7f3c2a9e-5b1d-4e8a-9c6f-2d4b8e1a0c35"),
        uuid!("0e0e0e0e-0000-4000-8000-000000000101"),
        "mueller-rechnung-RE-2026-0815.pdf",
        "in-progress",
    ),
    (
        uuid!("1a2b3c4d-0000-4000-8000-000000000001"),
        uuid!("0e0e0e0e-0000-4000-8000-000000000102"),
        "jansen-factuur-2026-0417.pdf",
        "in-progress",
    ),
    (
        uuid!("1a2b3c4d-0000-4000-8000-000000000002"),
        uuid!("0e0e0e0e-0000-4000-8000-000000000103"),
        "northwind-invoice-INV-1043.pdf",
        "in-progress",
    ),
    (
        uuid!("1a2b3c4d-0000-4000-8000-000000000003"),
        uuid!("0e0e0e0e-0000-4000-8000-000000000104"),
        "jansen-inkooporder-PO-88812.txt",
        "in-progress",
    ),
    (
        uuid!("c0ffee00-1111-4222-8333-444455556666"),
        uuid!("0e0e0e0e-0000-4000-8000-000000000105"),
        "mueller-bestellung-BE-2026-0142.pdf",
        "completed",
    ),
    // `events/ingestion/einvoices.json`: an XRechnung XML and a ZUGFeRD PDF.
    (
        uuid!("1a2b3c4d-0000-4000-8000-000000000004"),
        uuid!("0e0e0e0e-0000-4000-8000-000000000106"),
        "meier-xrechnung-RE-2026-1207.xml",
        "in-progress",
    ),
    (
        uuid!("1a2b3c4d-0000-4000-8000-000000000005"),
        uuid!("0e0e0e0e-0000-4000-8000-000000000107"),
        "lieferant-zugferd-teilrechnung-471102.pdf",
        "in-progress",
    ),
];
/// The document of `events/matching/*.json`.
pub const MATCHING_FIXTURE: Uuid = uuid!("6f1d3c2a-8b4e-4f5a-9c7d-2e1b0a9f8e7d");
/// The output job of `events/document-output/*.json` and its document.
pub const OUTPUT_JOB_FIXTURE: Uuid = uuid!("7d3a1c52-6f0e-4b8e-9a41-2c5d8e9f0a11");
const OUTPUT_DOCUMENT_FIXTURE: Uuid = uuid!("0e0e0e0e-0000-4000-8000-000000000201");

/// What [`reset_fixtures`] left.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Fixtures {
    pub tenant_id: Uuid,
    pub ingestions: Vec<Uuid>,
    pub matching_document: Uuid,
    pub output_job: Uuid,
}

/// Deletes the fixture organization (and with it every row of the fixtures) and creates
/// it again in its starting state.
pub async fn reset_fixtures(target: &Target<'_>) -> anyhow::Result<Fixtures> {
    let pool = target.pool;
    let mut tx = pool.begin().await.context("cannot reach the database")?;
    sqlx::query("DELETE FROM organization WHERE id = $1")
        .bind(FIXTURE_ORGANIZATION)
        .execute(&mut *tx)
        .await
        .context("failed to delete the old event fixtures")?;
    sqlx::query("INSERT INTO organization (id, name) VALUES ($1, 'docflow event fixtures')")
        .bind(FIXTURE_ORGANIZATION)
        .execute(&mut *tx)
        .await?;
    sqlx::query("INSERT INTO tenant (id, organization_id, name) VALUES ($1, $2, 'Fixture GmbH')")
        .bind(FIXTURE_TENANT)
        .bind(FIXTURE_ORGANIZATION)
        .execute(&mut *tx)
        .await?;
    sqlx::query(
        "INSERT INTO identity (id, organization_id, email, name, is_admin) VALUES ($1, $2, 'approver@fixtures.docflow.local', 'Fixture Approver', true)",
    )
    .bind(FIXTURE_APPROVER)
    .bind(FIXTURE_ORGANIZATION)
    .execute(&mut *tx)
    .await?;
    sqlx::query(
        "INSERT INTO tenant_datev_integration (tenant_id, status, account_key, company_id) VALUES ($1, 'active', $2, $3)",
    )
    .bind(FIXTURE_TENANT)
    .bind(DEMO_ACCOUNT_KEY)
    .bind(DEMO_COMPANY_ID)
    .execute(&mut *tx)
    .await?;

    let mut uploads = Vec::new();
    for (ingestion_id, document_id, sample, status) in INGESTION_FIXTURES {
        let key = insert_document(&mut tx, document_id, sample, None).await?;
        if status == "completed" {
            let data = extraction(sample).await?;
            sqlx::query(
                r#"INSERT INTO ingestion (id, document_id, status, structured_data, valid_structured_data, completed_at)
                   VALUES ($1, $2, 'completed', $3, true, now())"#,
            )
            .bind(ingestion_id)
            .bind(document_id)
            .bind(data.to_stored())
            .execute(&mut *tx)
            .await?;
        } else {
            sqlx::query("INSERT INTO ingestion (id, document_id) VALUES ($1, $2)")
                .bind(ingestion_id)
                .bind(document_id)
                .execute(&mut *tx)
                .await?;
        }
        uploads.push((key, sample));
    }

    let matching_sample = "mueller-rechnung-RE-2026-0815.pdf";
    let data = extraction(matching_sample).await?;
    let key = insert_document(&mut tx, MATCHING_FIXTURE, matching_sample, Some(&data)).await?;
    sqlx::query("UPDATE document SET matching_status = 'pending' WHERE id = $1")
        .bind(MATCHING_FIXTURE)
        .execute(&mut *tx)
        .await?;
    uploads.push((key, matching_sample));

    let output_sample = "northwind-invoice-INV-1043.pdf";
    let data = extraction(output_sample).await?;
    let key = insert_document(&mut tx, OUTPUT_DOCUMENT_FIXTURE, output_sample, Some(&data)).await?;
    uploads.push((key, output_sample));
    sqlx::query(
        r#"INSERT INTO ap_approval (tenant_id, document_id, step, approver_id, status, decided_at)
           VALUES ($1, $2, 1, $3, 'approved', now())"#,
    )
    .bind(FIXTURE_TENANT)
    .bind(OUTPUT_DOCUMENT_FIXTURE)
    .bind(FIXTURE_APPROVER)
    .execute(&mut *tx)
    .await?;
    sqlx::query(
        r#"INSERT INTO document_output_job (id, tenant_id, document_id, document_domain, trigger, status, document_version, requested_by)
           VALUES ($1, $2, $3, 'ap', 'approval_completed', 'pending', 1, $4)"#,
    )
    .bind(OUTPUT_JOB_FIXTURE)
    .bind(FIXTURE_TENANT)
    .bind(OUTPUT_DOCUMENT_FIXTURE)
    .bind(FIXTURE_APPROVER)
    .execute(&mut *tx)
    .await?;
    tx.commit()
        .await
        .context("failed to commit the event fixtures")?;

    for (key, sample) in uploads {
        let sample = crate::samples::by_name(sample).expect("fixture samples exist");
        target
            .s3
            .put_object()
            .bucket(target.bucket)
            .key(&key)
            .body(sample.bytes.to_vec().into())
            .send()
            .await
            .map_err(|e| {
                anyhow::anyhow!(
                    "failed to upload s3://{}/{key}: {}",
                    target.bucket,
                    crate::errors::short(&e)
                )
            })?;
    }
    Ok(Fixtures {
        tenant_id: FIXTURE_TENANT,
        ingestions: INGESTION_FIXTURES.iter().map(|f| f.0).collect(),
        matching_document: MATCHING_FIXTURE,
        output_job: OUTPUT_JOB_FIXTURE,
    })
}

async fn insert_document(
    tx: &mut sqlx::PgConnection,
    id: Uuid,
    sample: &str,
    data: Option<&Extraction>,
) -> anyhow::Result<String> {
    let (extension, mime_type) = if einvoice::is_xml_name(sample) {
        ("xml", einvoice::XML_MIME_TYPE)
    } else {
        let kind = FileKind::from_path(sample).expect("samples have known extensions");
        (kind.extension(), kind.mime_type())
    };
    let key = format!("documents/{id}.{extension}");
    let doc_type = data
        .and_then(|d| d.document_type)
        .unwrap_or(DocumentType::Other)
        .as_str();
    sqlx::query(
        r#"INSERT INTO document (id, tenant_id, type, file_path, file_name, mime_type, structured_data)
           VALUES ($1, $2, $3::document_type, $4, $5, $6, $7)"#,
    )
    .bind(id)
    .bind(FIXTURE_TENANT)
    .bind(doc_type)
    .bind(&key)
    .bind(sample)
    .bind(mime_type)
    .bind(data.map(Extraction::to_stored))
    .execute(tx)
    .await
    .with_context(|| format!("failed to create fixture document {id}"))?;
    Ok(key)
}

/// What the rules extractor reads from a sample (the fixtures' structured data).
async fn extraction(file_name: &str) -> anyhow::Result<Extraction> {
    let sample: &Sample = crate::samples::by_name(file_name).expect("fixture samples exist");
    let kind = FileKind::from_path(file_name).expect("samples have known extensions");
    let text = Transcriber::Native
        .transcribe(kind, sample.bytes)
        .await
        .with_context(|| format!("cannot transcribe sample {file_name}"))?
        .text;
    Ok(Extractor::Rules.extract(&text).await?.extraction)
}
