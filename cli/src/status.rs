//! `docflow status <document-id>`: one document's whole state in one view — ingestion
//! attempts, matching (status, error, attempts, the sweeper's re-sends), its cluster and
//! match edges, output jobs and DATEV export audits.

use std::fmt::{self, Write as _};

use anyhow::Context as _;
use chrono::{DateTime, Utc};
use docflow::extract::Extraction;
use serde::Serialize;
use serde_json::Value;
use sqlx::PgPool;
use uuid::Uuid;

#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct Document {
    pub id: Uuid,
    pub tenant_id: Uuid,
    pub tenant_name: String,
    pub doc_type: String,
    pub file_name: Option<String>,
    pub file_path: String,
    pub needs_human_review: bool,
    pub cluster_id: Option<Uuid>,
    pub matching_status: Option<String>,
    pub matching_error: Option<String>,
    pub matching_attempts: i32,
    pub matching_sweep_count: i32,
    pub structured_data: Option<Value>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct Ingestion {
    pub id: Uuid,
    pub status: String,
    pub attempt_count: i32,
    pub sweep_count: i32,
    pub last_error: Option<String>,
    pub extraction_model: Option<String>,
    pub started_at: Option<DateTime<Utc>>,
    pub completed_at: Option<DateTime<Utc>>,
    pub updated_at: DateTime<Utc>,
}

#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct Match {
    pub other_id: Uuid,
    pub other_type: String,
    pub other_file_name: Option<String>,
    pub score: f64,
    pub confidence: String,
    pub decided_by: String,
}

#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct ClusterMember {
    pub id: Uuid,
    pub doc_type: String,
    pub file_name: Option<String>,
}

#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct OutputJob {
    pub id: Uuid,
    pub status: String,
    pub trigger: String,
    pub sweep_count: i32,
    pub last_error: Option<String>,
    /// A `pending` job parked until then (Maesn asked to wait): the sweeper sends it
    /// again once it has passed.
    pub not_before: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct Audit {
    pub id: Uuid,
    pub dispatch_job_id: Option<Uuid>,
    pub status: String,
    pub task_id: Option<String>,
    pub retryable: bool,
    pub error: Option<String>,
    /// DATEV's remarks on a task that ended `PARTIAL_SUCCESS` (JSON array of messages).
    pub information: Option<Value>,
    /// A person's decision on an export in doubt (`docflow export resolve`): `absent` or
    /// `present`, who (email, else id), when, why.
    pub resolution: Option<String>,
    pub resolved_by: Option<String>,
    pub resolved_at: Option<DateTime<Utc>>,
    pub resolution_note: Option<String>,
    /// When the export was started: the POST follows at once (the resolve window counts
    /// from here).
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// Every decision on it, oldest first; the last is the one in `resolution`.
    #[sqlx(skip)]
    pub decisions: Vec<ResolutionEntry>,
}

/// One recorded decision (`ap_datev_export_resolution`).
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct ResolutionEntry {
    pub decision: String,
    /// The email of who decided, else the identity id; `None` when it was deleted.
    pub decided_by: Option<String>,
    pub decided_at: DateTime<Utc>,
    pub note: String,
    /// Why `--absent` was recorded inside the resolve window (`--force`).
    pub forced_reason: Option<String>,
}

/// Everything about one document.
#[derive(Debug, Clone, Serialize)]
pub struct Status {
    pub document: Document,
    pub ingestions: Vec<Ingestion>,
    pub matches: Vec<Match>,
    pub cluster: Vec<ClusterMember>,
    pub output_jobs: Vec<OutputJob>,
    pub audits: Vec<Audit>,
}

/// Loads the status; `None` when there is no such document.
pub async fn load(pool: &PgPool, id: Uuid) -> anyhow::Result<Option<Status>> {
    let db = || "cannot read the document's state from the database";
    let document: Option<Document> = sqlx::query_as(
        r#"SELECT d.id, d.tenant_id, t.name AS tenant_name, d.type::text AS doc_type, d.file_name,
                  d.file_path, d.needs_human_review, d.cluster_id, d.matching_status, d.matching_error,
                  d.matching_attempts, d.matching_sweep_count, d.structured_data, d.created_at, d.updated_at
             FROM document d JOIN tenant t ON t.id = d.tenant_id
            WHERE d.id = $1"#,
    )
    .bind(id)
    .fetch_optional(pool)
    .await
    .with_context(db)?;
    let Some(document) = document else {
        return Ok(None);
    };
    let ingestions = sqlx::query_as(
        r#"SELECT id, status, attempt_count, sweep_count, last_error, extraction_model,
                  started_at, completed_at, updated_at
             FROM ingestion WHERE document_id = $1 ORDER BY created_at"#,
    )
    .bind(id)
    .fetch_all(pool)
    .await
    .with_context(db)?;
    let matches = sqlx::query_as(
        r#"SELECT o.id AS other_id, o.type::text AS other_type, o.file_name AS other_file_name,
                  m.score, m.confidence, m.decided_by
             FROM document_match m
             JOIN document o ON o.id = CASE WHEN m.document_a_id = $1 THEN m.document_b_id ELSE m.document_a_id END
            WHERE m.document_a_id = $1 OR m.document_b_id = $1
            ORDER BY m.score DESC"#,
    )
    .bind(id)
    .fetch_all(pool)
    .await
    .with_context(db)?;
    let cluster = match document.cluster_id {
        Some(cluster_id) => sqlx::query_as(
            r#"SELECT id, type::text AS doc_type, file_name FROM document
                WHERE cluster_id = $1 ORDER BY created_at"#,
        )
        .bind(cluster_id)
        .fetch_all(pool)
        .await
        .with_context(db)?,
        None => vec![],
    };
    let output_jobs = sqlx::query_as(
        r#"SELECT id, status::text AS status, trigger::text AS trigger, sweep_count, last_error,
                  not_before, created_at, updated_at
             FROM document_output_job WHERE document_id = $1 ORDER BY created_at"#,
    )
    .bind(id)
    .fetch_all(pool)
    .await
    .with_context(db)?;
    let mut audits: Vec<Audit> = sqlx::query_as(
        r#"SELECT a.id, a.dispatch_job_id, a.status, a.task_id, a.retryable, a.error, a.information,
                  a.resolution, coalesce(i.email, a.resolved_by::text) AS resolved_by,
                  a.resolved_at, a.resolution_note, a.created_at, a.updated_at
             FROM ap_datev_export_audit a
             LEFT JOIN identity i ON i.id = a.resolved_by
            WHERE a.document_id = $1 ORDER BY a.created_at"#,
    )
    .bind(id)
    .fetch_all(pool)
    .await
    .with_context(db)?;
    // Every decision on the document's audits in one query, oldest first.
    #[derive(sqlx::FromRow)]
    struct DecisionRow {
        audit_id: Uuid,
        #[sqlx(flatten)]
        entry: ResolutionEntry,
    }
    let decisions: Vec<DecisionRow> = sqlx::query_as(
        r#"SELECT r.audit_id, r.decision, coalesce(i.email, r.decided_by::text) AS decided_by,
                  r.decided_at, r.note, r.forced_reason
             FROM ap_datev_export_resolution r
             JOIN ap_datev_export_audit a ON a.id = r.audit_id
             LEFT JOIN identity i ON i.id = r.decided_by
            WHERE a.document_id = $1 ORDER BY r.decided_at, r.id"#,
    )
    .bind(id)
    .fetch_all(pool)
    .await
    .with_context(db)?;
    for row in decisions {
        if let Some(audit) = audits.iter_mut().find(|a| a.id == row.audit_id) {
            audit.decisions.push(row.entry);
        }
    }
    Ok(Some(Status {
        document,
        ingestions,
        matches,
        cluster,
        output_jobs,
        audits,
    }))
}

fn text(value: Option<impl ToString>) -> String {
    value.map_or_else(|| "—".into(), |v| v.to_string())
}

fn time(t: &DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%S").to_string()
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = &self.document;
        writeln!(f, "document {}", d.id)?;
        writeln!(f, "  tenant      {} ({})", d.tenant_name, d.tenant_id)?;
        writeln!(
            f,
            "  file        {} ({})",
            d.file_name.as_deref().unwrap_or("—"),
            d.file_path
        )?;
        writeln!(f, "  type        {}", d.doc_type)?;
        match d.structured_data.as_ref().map(Extraction::from_stored) {
            None => writeln!(f, "  data        not extracted")?,
            Some(Err(e)) => writeln!(f, "  data        {e}")?,
            Some(Ok(data)) => writeln!(
                f,
                "  number      {}   supplier {}   total {} {}",
                text(data.invoice_number.as_deref()),
                text(data.supplier_name.as_deref()),
                text(data.total),
                text(data.currency.as_deref())
            )?,
        }
        writeln!(
            f,
            "  review      {}",
            if d.needs_human_review {
                "needs human review"
            } else {
                "no"
            }
        )?;
        let einvoice = d
            .structured_data
            .as_ref()
            .and_then(|v| Extraction::from_stored(v).ok())
            .and_then(|e| e.einvoice);
        if let Some(source) = einvoice {
            if source.provider == "einvoice" {
                writeln!(
                    f,
                    "  e-invoice   {} {}   due (BT-115) {}   prepaid (BT-113) {}   VAT in accounting currency (BT-111) {}",
                    text(source.syntax.as_deref()),
                    text(source.profile.as_deref()),
                    text(source.amount_due),
                    text(source.prepaid_amount),
                    text(source.vat_total_accounting_currency)
                )?;
            }
            for line in source.review.iter().chain(&source.disagreements) {
                writeln!(f, "    to review: {line}")?;
            }
            for line in &source.warnings {
                writeln!(f, "    warning:   {line}")?;
            }
        }
        writeln!(f, "ingestion")?;
        if self.ingestions.is_empty() {
            writeln!(f, "  none")?;
        }
        for i in &self.ingestions {
            writeln!(
                f,
                "  {} {}  attempts {}  re-sent by sweeper {}  model {}  updated {}",
                i.id,
                i.status,
                i.attempt_count,
                i.sweep_count,
                i.extraction_model.as_deref().unwrap_or("—"),
                time(&i.updated_at)
            )?;
            if let Some(e) = &i.last_error {
                writeln!(f, "    last error: {e}")?;
            }
        }
        writeln!(f, "matching")?;
        writeln!(
            f,
            "  status {}  attempts {}  re-sent by sweeper {}",
            d.matching_status.as_deref().unwrap_or("not queued"),
            d.matching_attempts,
            d.matching_sweep_count
        )?;
        if let Some(e) = &d.matching_error {
            writeln!(f, "  error: {e}")?;
        }
        for m in &self.matches {
            writeln!(
                f,
                "  ↔ {} {} ({})  score {:.2} {} by {}",
                m.other_id,
                m.other_type,
                m.other_file_name.as_deref().unwrap_or("—"),
                m.score,
                m.confidence,
                m.decided_by
            )?;
        }
        match d.cluster_id {
            None => writeln!(f, "  cluster: none")?,
            Some(c) => {
                let mut members = String::new();
                for m in &self.cluster {
                    let _ = write!(
                        members,
                        "\n    {} {} ({})",
                        m.id,
                        m.doc_type,
                        m.file_name.as_deref().unwrap_or("—")
                    );
                }
                writeln!(
                    f,
                    "  cluster {c} ({} documents):{members}",
                    self.cluster.len()
                )?;
            }
        }
        writeln!(f, "output")?;
        if self.output_jobs.is_empty() {
            writeln!(f, "  no output jobs")?;
        }
        for j in &self.output_jobs {
            writeln!(
                f,
                "  job {} {} ({})  re-sent by sweeper {}  updated {}",
                j.id,
                j.status,
                j.trigger,
                j.sweep_count,
                time(&j.updated_at)
            )?;
            if let (Some(at), "pending") = (&j.not_before, j.status.as_str()) {
                writeln!(
                    f,
                    "    parked until {} (Maesn asked to wait); the sweeper sends it again then",
                    time(at)
                )?;
            }
            if let Some(e) = &j.last_error {
                writeln!(f, "    last error: {e}")?;
            }
        }
        for a in &self.audits {
            writeln!(
                f,
                "  DATEV audit {} {}  sent {}  task {}  retryable {}  job {}",
                a.id,
                a.status,
                time(&a.created_at),
                a.task_id.as_deref().unwrap_or("—"),
                a.retryable,
                a.dispatch_job_id
                    .map(|j| j.to_string())
                    .unwrap_or_else(|| "—".into())
            )?;
            if let Some(e) = &a.error {
                writeln!(f, "    error: {e}")?;
            }
            if let Some(Value::Array(messages)) = &a.information
                && !messages.is_empty()
            {
                let messages: Vec<String> = messages
                    .iter()
                    .map(|m| m.as_str().map_or_else(|| m.to_string(), str::to_owned))
                    .collect();
                writeln!(f, "    DATEV remarks: {}", messages.join("; "))?;
            }
            if let (Some(resolution), Some(at)) = (&a.resolution, &a.resolved_at) {
                writeln!(
                    f,
                    "    resolved {resolution} by {} at {}: {}",
                    a.resolved_by.as_deref().unwrap_or("—"),
                    time(at),
                    a.resolution_note.as_deref().unwrap_or("—")
                )?;
            }
            if let Some(latest) = a.decisions.last()
                && let Some(reason) = &latest.forced_reason
            {
                writeln!(f, "      inside the resolve window, forced: {reason}")?;
            }
            let earlier = a.decisions.len().saturating_sub(1);
            for d in a.decisions[..earlier].iter().rev() {
                writeln!(
                    f,
                    "    superseded: {} by {} at {}: {}{}",
                    d.decision,
                    d.decided_by.as_deref().unwrap_or("—"),
                    time(&d.decided_at),
                    d.note,
                    d.forced_reason
                        .as_deref()
                        .map(|r| format!(" (forced: {r})"))
                        .unwrap_or_default()
                )?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn document(data: Option<Value>, needs_human_review: bool) -> Status {
        let now = Utc::now();
        Status {
            document: Document {
                id: Uuid::nil(),
                tenant_id: Uuid::nil(),
                tenant_name: "Acme AG".into(),
                doc_type: "invoice".into(),
                file_name: Some("refund.xml".into()),
                file_path: "documents/x.xml".into(),
                needs_human_review,
                cluster_id: None,
                matching_status: None,
                matching_error: None,
                matching_attempts: 0,
                matching_sweep_count: 0,
                structured_data: data,
                created_at: now,
                updated_at: now,
            },
            ingestions: Vec::new(),
            matches: Vec::new(),
            cluster: Vec::new(),
            output_jobs: Vec::new(),
            audits: Vec::new(),
        }
    }

    #[test]
    fn an_e_invoice_shows_its_amounts_due_and_prepaid_its_review_findings_and_its_warnings() {
        let data = serde_json::json!({
            "schema_version": 2, "extraction_successful": true, "confidence": "high",
            "invoice_number": "123456XX", "total": 804.86, "currency": "EUR",
            "einvoice": {
                "provider": "einvoice", "syntax": "UBL 2.1", "profile": "XRechnung 3.0",
                "amount_due": -225.14, "prepaid_amount": 1030.0,
                "review": ["BR-CO-16 Fatal: Amount due for payment (BT-115) = …"],
                "warnings": ["BR-DE-15 Fatal: Buyer reference (BT-10) shall be present"]
            }
        });
        let shown = document(Some(data), true).to_string();
        assert!(shown.contains("total 804.86 EUR"), "{shown}");
        assert!(shown.contains("due (BT-115) -225.14"), "{shown}");
        assert!(shown.contains("prepaid (BT-113) 1030"), "{shown}");
        assert!(shown.contains("to review: BR-CO-16"), "{shown}");
        assert!(shown.contains("warning:   BR-DE-15"), "{shown}");
    }

    #[test]
    fn data_that_is_not_an_extraction_is_shown_with_the_reason() {
        let shown = document(Some(serde_json::json!({"total": "119,00"})), false).to_string();
        assert!(shown.contains("not an extraction"), "{shown}");
    }
}
