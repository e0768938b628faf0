//! The demo's own steps (`docflow demo approve|summary`, and the demo test):
//!
//! - [`approve_matched_invoices`]: what the app does on the final approval of each
//!   invoice matching put into a cluster — the approval and the output job in one
//!   transaction (`docflow::output::on_final_approval`), the job id sent after the commit
//!   (`Dispatcher::dispatch`);
//! - [`summary`]: per document its type, the source of its fields (`einvoice`, `rules`
//!   or the LLM's model), supplier, total, ingestion and matching state,
//!   match cluster and export state, plus what each DLQ holds.

use std::collections::HashMap;
use std::fmt;

use anyhow::Context as _;
use docflow::ids::DocumentId;
use docflow::output::{Dispatch, Dispatcher, on_final_approval};
use serde::Serialize;
use sqlx::PgPool;
use uuid::Uuid;

use crate::wiring::Queues;

/// The result of approving one invoice.
#[derive(Debug, Clone, Serialize)]
pub struct Approval {
    pub document_id: Uuid,
    pub file_name: Option<String>,
    pub job_id: Option<Uuid>,
    /// `dispatched to the queue`, or why not.
    pub outcome: String,
}

/// Approves (one approval step, by the tenant organization's first admin) every invoice
/// of `tenant_id` that matching linked to other documents and that has no approval
/// yet, and enqueues its export. Per invoice, failures are reported, not raised.
pub async fn approve_matched_invoices(
    pool: &PgPool,
    dispatcher: &Dispatcher,
    tenant_id: Uuid,
) -> anyhow::Result<Vec<Approval>> {
    let approver: Option<Uuid> = sqlx::query_scalar(
        r#"SELECT i.id FROM identity i JOIN tenant t ON t.organization_id = i.organization_id
            WHERE t.id = $1 ORDER BY i.is_admin DESC, i.created_at LIMIT 1"#,
    )
    .bind(tenant_id)
    .fetch_optional(pool)
    .await
    .context("cannot reach the database")?;
    let approver = approver.context("the tenant's organization has no identity to approve with")?;
    let invoices: Vec<(Uuid, Option<String>)> = sqlx::query_as(
        r#"SELECT d.id, d.file_name FROM document d
            WHERE d.tenant_id = $1 AND d.type = 'invoice' AND d.cluster_id IS NOT NULL
              AND d.matching_status = 'succeeded'
              AND NOT EXISTS (SELECT 1 FROM ap_approval a WHERE a.document_id = d.id)
            ORDER BY d.created_at"#,
    )
    .bind(tenant_id)
    .fetch_all(pool)
    .await
    .context("cannot reach the database")?;

    let mut approvals = Vec::new();
    for (document_id, file_name) in invoices {
        let mut tx = pool.begin().await.context("cannot reach the database")?;
        sqlx::query(
            r#"INSERT INTO ap_approval (tenant_id, document_id, step, approver_id, status, decided_at)
               VALUES ($1, $2, 1, $3, 'approved', now())"#,
        )
        .bind(tenant_id)
        .bind(document_id)
        .bind(approver)
        .execute(&mut *tx)
        .await
        .context("failed to record the approval")?;
        let job = match on_final_approval(&mut tx, DocumentId(document_id), Some(approver)).await {
            Ok(job) => job,
            Err(e) => {
                approvals.push(Approval {
                    document_id,
                    file_name,
                    job_id: None,
                    outcome: format!("not exported: {e}"),
                });
                continue;
            }
        };
        tx.commit().await.context("failed to commit the approval")?;
        let outcome = match dispatcher.dispatch(pool, &job).await {
            Ok(Dispatch::Sent { .. }) => "approved; export job sent to the queue".to_owned(),
            Ok(Dispatch::SendFailed { error, .. }) => {
                format!("approved; export job failed: {error}")
            }
            Err(e) => format!("approved; the job's state is unknown: {e}"),
        };
        approvals.push(Approval {
            document_id,
            file_name,
            job_id: Some(job.id.0),
            outcome,
        });
    }
    Ok(approvals)
}

/// One document in the summary.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct Row {
    pub document_id: Uuid,
    pub file_name: Option<String>,
    pub doc_type: String,
    /// From the document's extraction (`structured_data`).
    #[sqlx(skip)]
    pub supplier: Option<String>,
    #[sqlx(skip)]
    pub number: Option<String>,
    #[sqlx(skip)]
    pub total: Option<f64>,
    #[sqlx(skip)]
    pub currency: Option<String>,
    pub ingestion: Option<String>,
    pub ingestion_error: Option<String>,
    /// Where the fields came from: `einvoice` (an XRechnung / ZUGFeRD XML read exactly),
    /// `rules`, or the LLM's model (the ingestion's `extraction_model`).
    pub source: Option<String>,
    pub needs_human_review: bool,
    pub matching: Option<String>,
    pub cluster_id: Option<Uuid>,
    /// The newest output job's status.
    pub job: Option<String>,
    pub job_error: Option<String>,
    /// The newest DATEV export audit's status.
    pub audit: Option<String>,
    pub audit_error: Option<String>,
    #[sqlx(skip)]
    pub cluster: Option<String>,
    /// What DATEV received for the document's newest booking proposal (amount,
    /// currency), from the Maesn stand-in's record; `None`: nothing booked, or no
    /// stand-in to ask.
    #[sqlx(skip)]
    pub datev: Option<Received>,
}

/// The amount and currency of a booking proposal, as DATEV received it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Received {
    pub total: Option<f64>,
    pub currency: Option<String>,
}

impl Received {
    fn show(&self) -> String {
        match (self.total, &self.currency) {
            (Some(t), Some(c)) => format!("{t:.2} {c}"),
            (Some(t), None) => format!("{t:.2} (no currency)"),
            (None, Some(c)) => format!("no amount ({c})"),
            (None, None) => "no amount".into(),
        }
    }
}

impl Row {
    /// Whether nothing about the document is still under way.
    pub fn is_terminal(&self) -> bool {
        let ingestion_done = matches!(self.ingestion.as_deref(), Some("completed" | "failed"));
        let matching_done = matches!(
            self.matching.as_deref(),
            None | Some("succeeded" | "failed")
        );
        let job_done = matches!(self.job.as_deref(), None | Some("dispatched" | "failed"));
        let audit_done = matches!(self.audit.as_deref(), None | Some("succeeded" | "failed"));
        ingestion_done && matching_done && job_done && audit_done
    }

    /// The export column: job and DATEV task, or why there is none.
    pub fn export(&self) -> String {
        match (&self.job, &self.audit) {
            (None, _) => "—".into(),
            (Some(job), None) => job.clone(),
            (Some(job), Some(audit)) => format!("{job}, DATEV {audit}"),
        }
    }
}

/// One DLQ in the summary.
#[derive(Debug, Clone, Serialize)]
pub struct Dlq {
    pub queue: String,
    pub messages: Vec<crate::dlq::DlqMessage>,
}

/// The demo's result.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub tenant_id: Uuid,
    pub rows: Vec<Row>,
    pub dlqs: Vec<Dlq>,
}

impl Summary {
    /// Fails naming every document that is not finished (still in ingestion, matching,
    /// output or a DATEV task), and every booking proposal DATEV received with another
    /// amount or currency than the document's own.
    pub fn check(&self) -> anyhow::Result<()> {
        let name = |r: &Row| {
            r.file_name
                .clone()
                .unwrap_or_else(|| r.document_id.to_string())
        };
        let open: Vec<String> = self
            .rows
            .iter()
            .filter(|r| !r.is_terminal())
            .map(name)
            .collect();
        if !open.is_empty() {
            anyhow::bail!(
                "{} document(s) not finished: {}",
                open.len(),
                open.join(", ")
            )
        }
        let wrong: Vec<String> = self
            .rows
            .iter()
            .filter_map(|r| {
                let received = r.datev.as_ref()?;
                let same_total = match (received.total, r.total) {
                    (Some(a), Some(b)) => (a - b).abs() < 0.005,
                    _ => false,
                };
                (!same_total || received.currency != r.currency).then(|| {
                    format!(
                        "{}: DATEV received {}, the document says {}",
                        name(r),
                        received.show(),
                        Received {
                            total: r.total,
                            currency: r.currency.clone()
                        }
                        .show()
                    )
                })
            })
            .collect();
        if wrong.is_empty() {
            Ok(())
        } else {
            anyhow::bail!(
                "{} booking proposal(s) with another amount or currency than their document: {}",
                wrong.len(),
                wrong.join("; ")
            )
        }
    }

    /// Documents per cluster label.
    pub fn clusters(&self) -> HashMap<String, Vec<String>> {
        let mut clusters: HashMap<String, Vec<String>> = HashMap::new();
        for row in &self.rows {
            if let Some(label) = &row.cluster {
                clusters
                    .entry(label.clone())
                    .or_default()
                    .push(row.file_name.clone().unwrap_or_default());
            }
        }
        clusters
    }
}

/// Reads the summary of `tenant_id`'s documents and the DLQs of `queues`. `datev`: what
/// the Maesn stand-in booked (`GET /_standin/exports`), `None` where there is none to ask.
pub async fn summary(
    pool: &PgPool,
    sqs: &aws_sdk_sqs::Client,
    queues: &Queues,
    tenant_id: Uuid,
    datev: Option<&[crate::maesn::Export]>,
) -> anyhow::Result<Summary> {
    /// A row with the document's data, read below as its type.
    #[derive(sqlx::FromRow)]
    struct DataRow {
        #[sqlx(flatten)]
        row: Row,
        structured_data: Option<serde_json::Value>,
    }
    let mut rows: Vec<(Row, Option<serde_json::Value>)> = sqlx::query_as::<_, DataRow>(
        r#"
        SELECT d.id AS document_id, d.file_name, d.type::text AS doc_type,
               d.structured_data,
               i.status AS ingestion, i.last_error AS ingestion_error,
               i.extraction_model AS source, d.needs_human_review,
               d.matching_status AS matching, d.cluster_id,
               j.status::text AS job, j.last_error AS job_error,
               a.status AS audit, a.error AS audit_error
          FROM document d
          LEFT JOIN LATERAL (SELECT status, last_error, extraction_model FROM ingestion
                              WHERE document_id = d.id ORDER BY created_at DESC LIMIT 1) i ON true
          LEFT JOIN LATERAL (SELECT status, last_error FROM document_output_job
                              WHERE document_id = d.id ORDER BY created_at DESC LIMIT 1) j ON true
          LEFT JOIN LATERAL (SELECT status, error FROM ap_datev_export_audit
                              WHERE document_id = d.id ORDER BY created_at DESC LIMIT 1) a ON true
         WHERE d.tenant_id = $1
         ORDER BY d.file_name, d.created_at
        "#,
    )
    .bind(tenant_id)
    .fetch_all(pool)
    .await
    .context("cannot read the documents")?
    .into_iter()
    .map(|r| (r.row, r.structured_data))
    .collect();
    for (row, data) in &mut rows {
        // The extraction contract, read as the type ingestion writes it.
        if let Some(e) = data
            .take()
            .and_then(|v| docflow::extract::Extraction::from_stored(&v).ok())
        {
            row.supplier = e.supplier_name;
            row.number = e.invoice_number;
            row.total = e.total;
            row.currency = e.currency;
        }
        row.datev = datev.and_then(|exports| {
            let id = row.document_id.to_string();
            exports
                .iter()
                .rev()
                .find(|x| x.document_id.as_deref() == Some(id.as_str()))
                .map(|x| Received {
                    total: x.total_gross_amount,
                    currency: x.currency.clone(),
                })
        });
    }
    let mut rows: Vec<Row> = rows.into_iter().map(|(row, _)| row).collect();
    let mut labels: HashMap<Uuid, String> = HashMap::new();
    for row in &mut rows {
        if let Some(cluster_id) = row.cluster_id {
            let next = format!("C{}", labels.len() + 1);
            row.cluster = Some(labels.entry(cluster_id).or_insert(next).clone());
        }
    }
    let mut dlqs = Vec::new();
    for (name, pair) in [
        ("ingestion", &queues.ingestion),
        ("matching", &queues.matching),
        ("document-output", &queues.document_output),
    ] {
        dlqs.push(Dlq {
            queue: name.to_owned(),
            messages: crate::dlq::list(sqs, &pair.dlq_url, 100).await?,
        });
    }
    Ok(Summary {
        tenant_id,
        rows,
        dlqs,
    })
}

fn cut(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        text.to_owned()
    } else {
        let mut out: String = text.chars().take(width.saturating_sub(1)).collect();
        out.push('…');
        out
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let header = [
            "document",
            "type",
            "source",
            "supplier",
            "total",
            "ingestion",
            "matching",
            "cluster",
            "export",
            "DATEV received",
        ];
        let mut table: Vec<[String; 10]> = vec![header.map(str::to_owned)];
        for row in &self.rows {
            let total = match (row.total, &row.currency) {
                (Some(t), Some(c)) => format!("{t:.2} {c}"),
                (Some(t), None) => format!("{t:.2}"),
                _ => "—".into(),
            };
            let ingestion = match (&row.ingestion, row.needs_human_review) {
                (Some(s), true) => format!("{s} (review)"),
                (Some(s), false) => s.clone(),
                (None, _) => "—".into(),
            };
            table.push([
                cut(row.file_name.as_deref().unwrap_or("—"), 40),
                row.doc_type.clone(),
                row.source.clone().unwrap_or_else(|| "—".into()),
                cut(row.supplier.as_deref().unwrap_or("—"), 32),
                total,
                ingestion,
                row.matching.clone().unwrap_or_else(|| "—".into()),
                row.cluster.clone().unwrap_or_else(|| "—".into()),
                row.export(),
                row.datev
                    .as_ref()
                    .map_or_else(|| "—".into(), Received::show),
            ]);
        }
        let widths: Vec<usize> = (0..10)
            .map(|c| {
                table
                    .iter()
                    .map(|r| r[c].chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        for (i, row) in table.iter().enumerate() {
            let line: Vec<String> = row
                .iter()
                .zip(&widths)
                .map(|(cell, w)| format!("{cell:<w$}", w = *w))
                .collect();
            writeln!(f, "{}", line.join("  ").trim_end())?;
            if i == 0 {
                let rule: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
                writeln!(f, "{}", rule.join("  "))?;
            }
        }
        let problems: Vec<&Row> = self
            .rows
            .iter()
            .filter(|r| {
                r.ingestion_error.is_some() || r.job_error.is_some() || r.audit_error.is_some()
            })
            .collect();
        if !problems.is_empty() {
            writeln!(f)?;
            writeln!(f, "errors recorded:")?;
            for row in problems {
                for error in [&row.ingestion_error, &row.job_error, &row.audit_error]
                    .into_iter()
                    .flatten()
                {
                    writeln!(
                        f,
                        "  {}: {}",
                        row.file_name.as_deref().unwrap_or("—"),
                        cut(error, 160)
                    )?;
                }
            }
        }
        writeln!(f)?;
        for dlq in &self.dlqs {
            if dlq.messages.is_empty() {
                writeln!(f, "DLQ {:<16} empty", dlq.queue)?;
            } else {
                let bodies: Vec<&str> = dlq.messages.iter().map(|m| m.body.as_str()).collect();
                writeln!(
                    f,
                    "DLQ {:<16} {} message(s): {}",
                    dlq.queue,
                    dlq.messages.len(),
                    cut(&bodies.join(", "), 200)
                )?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(file: &str, source: Option<&str>) -> Row {
        Row {
            document_id: Uuid::nil(),
            file_name: Some(file.into()),
            doc_type: "invoice".into(),
            supplier: Some("Lieferant GmbH".into()),
            number: Some("471102".into()),
            total: Some(529.87),
            currency: Some("EUR".into()),
            ingestion: Some("completed".into()),
            ingestion_error: None,
            source: source.map(Into::into),
            needs_human_review: false,
            matching: Some("succeeded".into()),
            cluster_id: None,
            job: None,
            job_error: None,
            audit: None,
            audit_error: None,
            cluster: None,
            datev: None,
        }
    }

    #[test]
    fn the_table_shows_where_each_document_s_fields_came_from() {
        let summary = Summary {
            tenant_id: Uuid::nil(),
            rows: vec![
                row("zugferd.pdf", Some("einvoice")),
                row("scan.pdf", Some("rules")),
                row("waiting.pdf", None),
            ],
            dlqs: Vec::new(),
        };
        let table = summary.to_string();
        let mut lines = table.lines();
        let header = lines.next().unwrap();
        assert!(header.contains("source"), "{header}");
        let column = header.find("source").unwrap();
        let cell = |line: &str| line[column..].split_whitespace().next().unwrap().to_owned();
        lines.next();
        let cells: Vec<String> = lines.take(3).map(cell).collect();
        assert_eq!(cells, ["einvoice", "rules", "—"]);
    }

    #[test]
    fn the_check_fails_when_datev_received_another_amount_or_none() {
        let exported = |received: Option<Received>| {
            let mut r = row("invoice.pdf", Some("rules"));
            r.job = Some("dispatched".into());
            r.audit = Some("succeeded".into());
            r.datev = received;
            Summary {
                tenant_id: Uuid::nil(),
                rows: vec![r],
                dlqs: Vec::new(),
            }
        };
        let eur = |total: Option<f64>| {
            Some(Received {
                total,
                currency: Some("EUR".into()),
            })
        };

        exported(eur(Some(529.87)))
            .check()
            .expect("the same amount");
        for wrong in [
            eur(None),
            eur(Some(529.0)),
            Some(Received {
                total: Some(529.87),
                currency: Some("USD".into()),
            }),
        ] {
            let error = exported(wrong.clone()).check().unwrap_err().to_string();
            assert!(
                error.contains("invoice.pdf") && error.contains("the document says 529.87 EUR"),
                "{wrong:?}: {error}"
            );
        }
        // Not exported, or no stand-in to ask: nothing to compare.
        exported(None).check().expect("nothing received");
        let table = exported(eur(Some(529.87))).to_string();
        assert!(table.contains("DATEV received"), "{table}");
        assert!(table.contains("529.87 EUR"), "{table}");
    }
}
