//! `docflow ingest`: a document enters docflow as the app would put it in — the file
//! uploaded to `documents/{document_id}.{ext}`, the `document` and its `ingestion` row
//! committed in one transaction, then the ingestion id sent to the ingestion queue.
//!
//! A send that fails after the commit leaves the ingestion `in-progress` with a free
//! lease: the state the sweeper re-sends (docs/sweeper.md), so nothing is lost; the
//! result says so.

use anyhow::Context as _;
use docflow::extract::einvoice;
use docflow::ocr::FileKind;
use sqlx::PgPool;
use uuid::Uuid;

/// Where ingest puts things.
#[derive(Debug, Clone)]
pub struct Target<'a> {
    pub pool: &'a PgPool,
    pub s3: &'a aws_sdk_s3::Client,
    pub bucket: &'a str,
    pub sqs: &'a aws_sdk_sqs::Client,
    pub ingestion_queue_url: &'a str,
}

/// One ingested document.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Ingested {
    pub file_name: String,
    pub document_id: Uuid,
    pub ingestion_id: Uuid,
    /// The SQS message id, when the send succeeded.
    pub message_id: Option<String>,
    /// Why the send failed (the sweeper will re-send it).
    pub send_error: Option<String>,
}

/// Uploads `bytes` as `file_name` for `tenant_id`, records document and ingestion, and
/// enqueues the ingestion. Fails on an unsupported file type, an S3 or database error
/// (nothing is enqueued then); a failed send is reported in the result, not as an error.
pub async fn ingest(
    target: &Target<'_>,
    tenant_id: Uuid,
    file_name: &str,
    bytes: Vec<u8>,
) -> anyhow::Result<Ingested> {
    // An XML upload is an e-invoice (XRechnung, EN 16931 UBL / CII): ingestion reads it
    // exactly, without OCR.
    let (extension, mime_type) = if einvoice::is_xml_name(file_name) {
        ("xml", einvoice::XML_MIME_TYPE)
    } else {
        let kind = FileKind::from_path(file_name).with_context(|| {
            format!("{file_name}: unsupported file type; use .pdf, .txt, .png, .jpg, .jpeg or .xml")
        })?;
        (kind.extension(), kind.mime_type())
    };
    let document_id = Uuid::new_v4();
    let key = format!("documents/{document_id}.{extension}");
    target
        .s3
        .put_object()
        .bucket(target.bucket)
        .key(&key)
        .content_type(mime_type)
        .body(bytes.into())
        .send()
        .await
        .map_err(|e| {
            anyhow::anyhow!(
                "failed to upload {file_name} to s3://{}/{key}: {}",
                target.bucket,
                crate::errors::short(&e)
            )
        })?;

    let mut tx = target
        .pool
        .begin()
        .await
        .context("cannot reach the database")?;
    sqlx::query(
        r#"INSERT INTO document (id, tenant_id, file_path, file_name, mime_type)
           VALUES ($1, $2, $3, $4, $5)"#,
    )
    .bind(document_id)
    .bind(tenant_id)
    .bind(&key)
    .bind(file_name)
    .bind(mime_type)
    .execute(&mut *tx)
    .await
    .with_context(|| format!("failed to record the document for {file_name}"))?;
    let ingestion_id: Uuid =
        sqlx::query_scalar("INSERT INTO ingestion (document_id) VALUES ($1) RETURNING id")
            .bind(document_id)
            .fetch_one(&mut *tx)
            .await
            .with_context(|| format!("failed to record the ingestion of {file_name}"))?;
    tx.commit()
        .await
        .with_context(|| format!("failed to commit the document for {file_name}"))?;

    let sent = target
        .sqs
        .send_message()
        .queue_url(target.ingestion_queue_url)
        .message_body(ingestion_id.to_string())
        .send()
        .await;
    let (message_id, send_error) = match sent {
        Ok(out) => (out.message_id, None),
        Err(e) => {
            let error = format!(
                "could not send ingestion {ingestion_id} to the ingestion queue ({}); the sweeper will re-send it",
                crate::errors::short(&e)
            );
            tracing::error!(%ingestion_id, error = %error, "ingestion message not sent");
            (None, Some(error))
        }
    };
    Ok(Ingested {
        file_name: file_name.to_owned(),
        document_id,
        ingestion_id,
        message_id,
        send_error,
    })
}
