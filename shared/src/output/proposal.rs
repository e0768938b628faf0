//! The `bookingProposal` part of Maesn's "Create booking proposal async"
//! (`POST /accounting/bookingProposals/async`, docs.maesn.com, request schema
//! `CreateBookingProposalRequestDtoV2`), built from the document's extraction.
//!
//! The document's `structured_data` is read as [`Extraction`], the one type ingestion
//! writes it from, so a renamed field stops the build here instead of vanishing from
//! what DATEV receives. Each field of the proposal comes from one field of the
//! extraction:
//!
//! | Maesn field | extraction field | format |
//! |---|---|---|
//! | `id` | the document id | UUID (Maesn links the uploaded file to the proposal by it) |
//! | `number` | `invoice_number` | text |
//! | `bookingProposalDate` | `invoice_date` | ISO 8601 date-time in UTC, `2025-07-14T00:00:00Z` (Maesn's standardized dates) |
//! | `dueDate` | `due_date` | as above |
//! | `currency` | `currency` | ISO 4217 code |
//! | `totalGrossAmount` | `total` | number, major units |
//! | `vatId` | `supplier_vat_id` | text, without spaces |
//! | `orderId` | `po_reference` | text |
//! | `contact.name` | `supplier_name` | text |
//! | `bankAccount.iban` | `supplier_iban` | text, without spaces |
//! | `lineItems[].description`, `.totalNetAmount` | `line_items[].description`, `.amount` | text, number |
//!
//! A field the extraction did not find is left out, never sent empty or as zero: DATEV's
//! own validation then says what is missing.
//!
//! The whole request wraps the body: `bookingType` and `folderManagement` from the
//! tenant's integration config, and the document file under a name Maesn accepts
//! ([`maesn_file_name`]). The export's audit keeps a description of that request and its
//! hash (`payload_of`).

use bytes::Bytes;
use chrono::NaiveDate;
use serde::Serialize;
use serde_json::json;
use sha2::{Digest, Sha256};
use uuid::Uuid;

use super::OutputJob;
use crate::datev::{BookingProposal, DatevAccount, DocumentFile};
use crate::extract::Extraction;

/// What the `bookingProposal` part holds (the subset of Maesn's schema docflow fills).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProposalBody {
    pub id: Uuid,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub number: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub booking_proposal_date: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub due_date: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub currency: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_gross_amount: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vat_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub order_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contact: Option<Contact>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bank_account: Option<BankAccount>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub line_items: Vec<ProposalLine>,
}

/// `contact`: the supplier of an incoming invoice.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Contact {
    pub name: String,
}

/// `bankAccount`: where the supplier is paid.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BankAccount {
    pub iban: String,
}

/// One of `lineItems`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProposalLine {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_net_amount: Option<f64>,
}

/// Maesn's standardized date: ISO 8601, a date-time in UTC.
pub fn maesn_date(date: NaiveDate) -> String {
    format!("{}T00:00:00Z", date.format("%Y-%m-%d"))
}

/// Text that holds something, trimmed.
fn text(value: &Option<String>) -> Option<String> {
    value
        .as_deref()
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
}

/// The proposal for document `id` from its extraction (see the module docs' table).
pub fn proposal_body(id: Uuid, extraction: &Extraction) -> ProposalBody {
    ProposalBody {
        id,
        number: text(&extraction.invoice_number),
        booking_proposal_date: extraction.invoice_date.map(maesn_date),
        due_date: extraction.due_date.map(maesn_date),
        currency: text(&extraction.currency).map(|c| c.to_ascii_uppercase()),
        total_gross_amount: extraction.total.filter(|t| t.is_finite()),
        vat_id: text(&extraction.supplier_vat_id)
            .map(|id| id.chars().filter(|c| !c.is_whitespace()).collect()),
        order_id: text(&extraction.po_reference),
        contact: text(&extraction.supplier_name).map(|name| Contact { name }),
        bank_account: text(&extraction.supplier_iban).map(|iban| BankAccount {
            iban: iban.chars().filter(|c| !c.is_whitespace()).collect(),
        }),
        line_items: extraction
            .line_items
            .iter()
            .map(|line| ProposalLine {
                description: Some(line.description.trim().to_owned()).filter(|d| !d.is_empty()),
                total_net_amount: line.amount.filter(|a| a.is_finite()),
            })
            .filter(|line| line.description.is_some() || line.total_net_amount.is_some())
            .collect(),
    }
}

/// The document and its tenant's active DATEV integration, as the export reads them:
/// what the whole request is built from.
#[derive(sqlx::FromRow)]
pub(super) struct ExportContext {
    pub(super) document_tenant_id: Uuid,
    pub(super) file_path: String,
    pub(super) file_name: Option<String>,
    pub(super) mime_type: Option<String>,
    pub(super) structured_data: Option<serde_json::Value>,
    pub(super) company_id: String,
    pub(super) config: serde_json::Value,
    /// The other invoices of its corrected-invoice pairs, by their `replaces` matches
    /// (`output::BOOKING_PARTNERS`): its export is checked against theirs under the
    /// pair's locks.
    pub(super) partners: Vec<Uuid>,
}

/// The booking proposal for the document, from its extraction
/// ([`proposal_body`]; fields the extraction did not find are left out,
/// and DATEV's own validation reports what is missing). `bookingType` and
/// `folderManagement` come from the integration's config (`booking_type`, default `BILL`;
/// `folder_management`, default Accounting/Invoices). Fails, saying why, when the
/// document has no extracted data or data that is not an [`Extraction`]: a booking
/// without its amount must never leave.
pub(super) fn booking_proposal(
    job: &OutputJob,
    c: &ExportContext,
    bytes: Bytes,
) -> Result<BookingProposal, String> {
    let Some(data) = &c.structured_data else {
        return Err(format!(
            "document {} has no extracted data; nothing was sent to DATEV (ingest it again)",
            job.document_id
        ));
    };
    let extraction = Extraction::from_stored(data).map_err(|e| {
        format!(
            "document {}: {e}; nothing was sent to DATEV (ingest it again)",
            job.document_id
        )
    })?;
    let proposal = serde_json::to_value(proposal_body(job.document_id, &extraction))
        .expect("a proposal body is plain JSON");
    let file_name = maesn_file_name(c.file_name.as_deref(), &c.file_path, c.mime_type.as_deref());
    Ok(BookingProposal {
        account: DatevAccount {
            tenant_id: job.tenant_id,
            company_id: c.company_id.clone(),
        },
        proposal,
        booking_type: c
            .config
            .get("booking_type")
            .and_then(|v| v.as_str())
            .unwrap_or("BILL")
            .to_owned(),
        folder_management: c
            .config
            .get("folder_management")
            .cloned()
            .unwrap_or_else(|| json!({ "category": "Accounting", "folder": "Invoices" })),
        file: DocumentFile {
            file_name,
            mime_type: c
                .mime_type
                .clone()
                .unwrap_or_else(|| "application/octet-stream".into()),
            bytes,
        },
    })
}

/// The longest file name Maesn takes, in characters.
pub const MAX_FILE_NAME_CHARS: usize = 255;

/// A file name Maesn accepts, from any document: the document's `file_name`, else the
/// S3 key's last segment; characters file systems and multipart headers choke on
/// (controls, `/ \ : * ? " < > |`) replaced by `_`; `document` when nothing is left;
/// an extension from the MIME type when it has none (`bin` for an unknown type); at
/// most [`MAX_FILE_NAME_CHARS`] characters, the stem cut and the extension kept.
pub fn maesn_file_name(file_name: Option<&str>, key: &str, mime_type: Option<&str>) -> String {
    let raw = file_name
        .filter(|n| !n.trim().is_empty())
        .map(|n| n.rsplit(['/', '\\']).next().unwrap_or(n))
        .unwrap_or_else(|| key.rsplit('/').next().unwrap_or(key));
    let cleaned: String = raw
        .chars()
        .map(|c| {
            if c.is_control() || matches!(c, '/' | '\\' | ':' | '*' | '?' | '"' | '<' | '>' | '|') {
                '_'
            } else {
                c
            }
        })
        .collect();
    let cleaned = cleaned.trim_matches(|c: char| c.is_whitespace() || c == '.');
    let (stem, extension) = match cleaned.rsplit_once('.') {
        Some((stem, ext))
            if !stem.trim().is_empty()
                && (1..=10).contains(&ext.chars().count())
                && ext.chars().all(|c| c.is_ascii_alphanumeric()) =>
        {
            (stem.trim_end().to_owned(), ext.to_owned())
        }
        _ => (
            cleaned.to_owned(),
            extension_of(mime_type.unwrap_or_default()).to_owned(),
        ),
    };
    let stem = if stem.is_empty() {
        "document".to_owned()
    } else {
        stem
    };
    let room = MAX_FILE_NAME_CHARS - 1 - extension.chars().count();
    let stem: String = stem.chars().take(room).collect();
    format!("{}.{extension}", stem.trim_end())
}

/// The usual extension of a document MIME type (`bin` when unknown).
fn extension_of(mime_type: &str) -> &'static str {
    match mime_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
        .as_str()
    {
        "application/pdf" => "pdf",
        "image/png" => "png",
        "image/jpeg" | "image/jpg" => "jpg",
        "image/tiff" => "tif",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "image/heic" => "heic",
        "text/plain" => "txt",
        "text/csv" => "csv",
        "application/xml" | "text/xml" => "xml",
        "application/zip" => "zip",
        _ => "bin",
    }
}

/// The audit's `request_payload` (the proposal's parts, the file described by name,
/// type, size and SHA-256) and `payload_hash`: the hex SHA-256 of that payload's JSON
/// (keys sorted), so two exports of the same content have the same hash.
pub(super) fn payload_of(proposal: &BookingProposal) -> (serde_json::Value, String) {
    let file_sha256 = hex(&Sha256::digest(&proposal.file.bytes));
    let payload = json!({
        "bookingProposal": proposal.proposal,
        "bookingType": proposal.booking_type,
        "folderManagement": proposal.folder_management,
        "file": {
            "name": proposal.file.file_name,
            "mimeType": proposal.file.mime_type,
            "size": proposal.file.bytes.len(),
            "sha256": file_sha256,
        },
    });
    let hash = hex(&Sha256::digest(payload.to_string().as_bytes()));
    (payload, hash)
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::with_capacity(64), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::LineItem;

    fn extraction() -> Extraction {
        serde_json::from_value(serde_json::json!({
            "extraction_successful": true,
            "confidence": "high",
            "invoice_number": " RE-2026-0042 ",
            "invoice_date": "2026-01-15",
            "due_date": "2026-02-14",
            "supplier_name": "Lieferant GmbH",
            "supplier_vat_id": "DE123456789",
            "supplier_iban": "DE89 3704 0044 0532 0130 00",
            "currency": "eur",
            "subtotal": 100.0,
            "vat_amount": 19.0,
            "total": 119.0,
            "po_reference": "PO-4711",
        }))
        .unwrap()
    }

    #[test]
    fn every_field_the_extraction_knows_reaches_the_proposal_under_maesns_name() {
        let mut e = extraction();
        e.line_items = vec![LineItem {
            description: "Druckerpapier A4".into(),
            quantity: Some(10.0),
            unit_price: Some(10.0),
            amount: Some(100.0),
        }];
        let id = Uuid::new_v4();

        let body = serde_json::to_value(proposal_body(id, &e)).unwrap();

        assert_eq!(
            body,
            serde_json::json!({
                "id": id,
                "number": "RE-2026-0042",
                "bookingProposalDate": "2026-01-15T00:00:00Z",
                "dueDate": "2026-02-14T00:00:00Z",
                "currency": "EUR",
                "totalGrossAmount": 119.0,
                "vatId": "DE123456789",
                "orderId": "PO-4711",
                "contact": {"name": "Lieferant GmbH"},
                "bankAccount": {"iban": "DE89370400440532013000"},
                "lineItems": [{"description": "Druckerpapier A4", "totalNetAmount": 100.0}],
            })
        );
    }

    #[test]
    fn what_the_extraction_did_not_find_is_left_out_not_sent_empty() {
        let e: Extraction = serde_json::from_value(serde_json::json!({
            "extraction_successful": false,
            "confidence": "low",
            "invoice_number": "  ",
        }))
        .unwrap();
        let id = Uuid::new_v4();

        let body = serde_json::to_value(proposal_body(id, &e)).unwrap();

        assert_eq!(body, serde_json::json!({ "id": id }));
    }

    #[test]
    fn every_s3_key_gives_a_maesn_file_name_with_an_extension_and_at_most_255_chars() {
        let long = "x".repeat(1000);
        let long_unicode = "ü".repeat(400);
        let cases: Vec<(Option<&str>, String, Option<&str>)> = vec![
            (
                Some("RE-2026-0042.pdf"),
                "documents/a.pdf".into(),
                Some("application/pdf"),
            ),
            (None, "documents/abc".into(), Some("application/pdf")),
            (None, "documents/".into(), Some("image/png")),
            (None, "".into(), None),
            (Some("   "), "k/scan.JPEG".into(), Some("image/jpeg")),
            (None, format!("documents/{long}"), Some("application/pdf")),
            (None, format!("documents/{long}.pdf"), None),
            (Some(long_unicode.as_str()), "k".into(), Some("image/tiff")),
            (
                None,
                "documents/...".into(),
                Some("text/plain; charset=utf-8"),
            ),
            (None, "documents/a:b*c?\"<d>|e\u{7}.pdf".into(), None),
            (Some("C:\\Users\\anna\\Rechnung Mai.pdf"), "k".into(), None),
            (
                None,
                "documents/archive.tar.gz.unknownextension".into(),
                None,
            ),
        ];
        for (name, key, mime) in &cases {
            let file = maesn_file_name(*name, key, *mime);
            assert!(file.chars().count() <= MAX_FILE_NAME_CHARS, "{file}");
            let (stem, ext) = file.rsplit_once('.').expect("an extension");
            assert!(!stem.is_empty() && !ext.is_empty(), "{file}");
            assert!(ext.chars().all(|c| c.is_ascii_alphanumeric()), "{file}");
            assert!(
                !file
                    .chars()
                    .any(|c| c.is_control() || "/\\:*?\"<>|".contains(c)),
                "{file}"
            );
        }
        assert_eq!(
            maesn_file_name(Some("RE-2026-0042.pdf"), "x", None),
            "RE-2026-0042.pdf"
        );
        assert_eq!(
            maesn_file_name(None, "documents/abc", Some("application/pdf")),
            "abc.pdf"
        );
        assert_eq!(
            maesn_file_name(None, "documents/", Some("image/png")),
            "document.png"
        );
        assert_eq!(maesn_file_name(None, "", None), "document.bin");
        assert_eq!(
            maesn_file_name(Some("C:\\Users\\anna\\Rechnung Mai.pdf"), "k", None),
            "Rechnung Mai.pdf"
        );
        let cut = maesn_file_name(None, &format!("documents/{long}.pdf"), None);
        assert_eq!(cut.chars().count(), 255);
        assert!(cut.ends_with(".pdf"));
    }

    #[test]
    fn the_payload_hash_covers_the_file_and_ignores_nothing_else() {
        let proposal = |bytes: &'static [u8], number: &str| BookingProposal {
            account: DatevAccount {
                tenant_id: Uuid::nil(),
                company_id: "c".into(),
            },
            proposal: json!({ "number": number }),
            booking_type: "BILL".into(),
            folder_management: json!({}),
            file: DocumentFile {
                file_name: "a.pdf".into(),
                mime_type: "application/pdf".into(),
                bytes: Bytes::from_static(bytes),
            },
        };
        let (payload, hash) = payload_of(&proposal(b"one", "1"));
        assert_eq!(hash.len(), 64);
        assert!(hash.chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(payload["file"]["size"], 3);
        assert_eq!(payload_of(&proposal(b"one", "1")).1, hash, "stable");
        assert_ne!(payload_of(&proposal(b"two", "1")).1, hash, "file counted");
        assert_ne!(
            payload_of(&proposal(b"one", "2")).1,
            hash,
            "proposal counted"
        );
    }
}
