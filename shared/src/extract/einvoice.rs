//! Structured e-invoices (EN 16931), read exactly before any OCR or LLM: an XRechnung /
//! EN 16931 XML upload (UBL 2.1 `Invoice` / `CreditNote`, UN/CEFACT CII
//! `CrossIndustryInvoice`) or a ZUGFeRD / Factur-X PDF/A-3 carrying one
//! (`factur-x.xml`, `zugferd-invoice.xml`, `ZUGFeRD-invoice.xml`, `xrechnung.xml`).
//!
//! Reading and the EN 16931 business rules are the `en16931-formats` / `en16931` crates
//! (the decision and its reasons: docs/extraction.md). This module bounds the input
//! before they see it, maps their model onto the extraction contract with
//! `einvoice.provider = "einvoice"`, and turns their report into findings that are
//! stored with the document.
//!
//! Hostile input: the XML parser refuses any DTD (so no entity expansion and no
//! external entity is ever fetched) and nesting deeper than 64 levels; this module
//! refuses XML over [`MAX_XML_BYTES`] or with more than [`MAX_XML_NODES`] markup nodes
//! before parsing, and reads a PDF under [`pdf_limits`] (what the streams inflated to
//! find the attachment may grow to, and how many objects are walked).

use en16931::Severity;
use en16931::invoice::{Invoice, PaymentMeans};
use en16931_formats::report::Validity;
use en16931_formats::zugferd;
use serde::{Deserialize, Serialize};

use super::{CORE_FIELDS, Confidence, DocumentType, Extraction, LineItem};

/// The largest XML document read (an upload, or the payload of a PDF): 16 MiB. An
/// XRechnung carrying its BG-24 attachments inline stays far below it.
pub const MAX_XML_BYTES: usize = 16 * 1024 * 1024;
/// The most markup nodes (`<` in the text) an XML document may have: an invoice of a
/// thousand lines has some 50 000.
pub const MAX_XML_NODES: usize = 500_000;
/// What any one PDF stream may inflate to while looking for the attachment.
pub const MAX_PDF_STREAM_BYTES: usize = MAX_XML_BYTES;
/// What one PDF may inflate to in sum while looking for the attachment.
pub const MAX_PDF_TOTAL_BYTES: usize = 2 * MAX_XML_BYTES;
/// How many PDF objects one walk may visit.
pub const MAX_PDF_OBJECTS: usize = 10_000;

/// What reading one e-invoice needs at its peak, for the CPU jobs' memory budget
/// (`docflow::ocr::on_cpu`): the parsed PDF (the file and at most
/// `ocr::pdf_object_limit` objects), what its
/// streams may inflate to in sum, the XML and its tree at the node limit (an estimate of
/// 128 bytes a node with its attributes and text).
pub fn job_bytes(file_len: usize) -> u64 {
    file_len as u64
        + crate::ocr::pdf_object_limit(file_len) * crate::ocr::PDF_OBJECT_BYTES
        + MAX_PDF_TOTAL_BYTES as u64
        + MAX_XML_BYTES as u64
        + MAX_XML_NODES as u64 * 128
}

/// The PDF limits the attachment is looked for under.
pub fn pdf_limits() -> zugferd::Limits {
    zugferd::Limits::new()
        .with_max_stream_bytes(MAX_PDF_STREAM_BYTES)
        .with_max_total_bytes(MAX_PDF_TOTAL_BYTES)
        .with_max_objects(MAX_PDF_OBJECTS)
}

/// Where an extraction came from when an e-invoice was involved: stored in
/// `structured_data.einvoice`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct EInvoiceSource {
    /// `einvoice` when the fields are the XML's; the page path's provider (`rules`, an
    /// LLM's model) when the document fell back to it.
    pub provider: String,
    /// `UBL 2.1` or `UN/CEFACT CII D16B`.
    #[serde(default)]
    pub syntax: Option<String>,
    /// The profile BT-24 declares, as the rules know it (`XRechnung 3.0`, `EN 16931`,
    /// `ZUGFeRD BASIC WL`, ...), or why none matched.
    #[serde(default)]
    pub profile: Option<String>,
    /// BT-24 verbatim.
    #[serde(default)]
    pub specification_id: Option<String>,
    /// BT-3 verbatim (380, 381, 384, ...).
    #[serde(default)]
    pub type_code: Option<String>,
    /// BT-10 (the Leitweg-ID for German public buyers).
    #[serde(default)]
    pub buyer_reference: Option<String>,
    /// BT-115, the amount due (the contract's `total` is BT-112). Negative for a
    /// refund (KoSIT 03.01a: BT-112 804.86, BT-113 1030, BT-115 −225.14).
    #[serde(default)]
    pub amount_due: Option<f64>,
    /// BT-113, the amount paid in advance.
    #[serde(default)]
    pub prepaid_amount: Option<f64>,
    /// BT-111, the VAT total in the accounting currency (BT-6), when the invoice gives it.
    #[serde(default)]
    pub vat_total_accounting_currency: Option<f64>,
    /// The embedded file's name, for a hybrid PDF.
    #[serde(default)]
    pub attachment: Option<String>,
    /// `accept`, `reject` or `undefined` (KoSIT's three answers).
    #[serde(default)]
    pub recommendation: Option<String>,
    /// The validation findings: read errors, schema notes and business-rule violations,
    /// one line each (`BR-49 fatal: ...`).
    #[serde(default)]
    pub findings: Vec<String>,
    /// The fatal findings of routing rules ([`ROUTING_RULES`]): stored and shown, the
    /// data used.
    #[serde(default)]
    pub warnings: Vec<String>,
    /// The fatal findings that send the document to a person (the money, the parties,
    /// any rule not about routing). What was read is kept.
    #[serde(default)]
    pub review: Vec<String>,
    /// Why a hybrid's XML was not used and the page was read instead.
    #[serde(default)]
    pub fallback_reason: Option<String>,
    /// Where the page and the XML of a hybrid disagree (the XML is kept).
    #[serde(default)]
    pub disagreements: Vec<String>,
}

/// Why a document was not read as an e-invoice.
#[derive(Debug, Clone, PartialEq, thiserror::Error, Serialize, Deserialize)]
pub enum EInvoiceError {
    /// A PDF without an EN 16931 attachment (an ordinary PDF): the page path, silently.
    #[error("no embedded EN 16931 invoice: {0}")]
    NoPayload(String),
    /// Too large, too many nodes: refused before parsing.
    #[error("{0}")]
    TooLarge(String),
    /// Not well-formed, a DTD, too deep, an unsupported encoding, an unreadable PDF.
    #[error("unreadable e-invoice: {0}")]
    Unreadable(String),
    /// Well-formed XML whose root is not an invoice (an ORDER-X, ZUGFeRD 1.0's
    /// `CrossIndustryDocument`).
    #[error("not an EN 16931 invoice: {0}")]
    NotAnInvoice(String),
    /// Read, but not usable as it is: a hybrid whose XML a person would have to look at
    /// (its page is read instead), or a value the contract refuses. The findings are the
    /// error.
    #[error("invalid e-invoice ({} finding(s)): {}", findings.len(), findings.join("; "))]
    Invalid { findings: Vec<String> },
}

/// [`read`] in the parsing sandbox (`docflow::sandbox`), within the CPU-job budget
/// ([`job_bytes`]): the outer error is the sandbox's (the reader died, ran out of a
/// limit, or the file needs more than the budget), the inner one the reader's.
pub async fn read_untrusted(
    bytes: bytes::Bytes,
) -> Result<Result<Extraction, EInvoiceError>, crate::ocr::OcrError> {
    use crate::sandbox::{Header, Job, run, unexpected};
    match run(Job::EInvoice, job_bytes(bytes.len()), bytes).await? {
        (Header::EInvoice(read), _) => Ok(*read),
        (other, _) => Err(unexpected(Job::EInvoice, &other)),
    }
}

/// Reads an XML e-invoice upload or a hybrid PDF, here and now: CPU work on untrusted
/// bytes (ingestion runs it through [`read_untrusted`]); never panics on any input (see the fuzz targets `einvoice_xml` and
/// `einvoice_pdf`).
pub fn read(bytes: &[u8]) -> Result<Extraction, EInvoiceError> {
    // The crates have not panicked on any input the fuzz targets found; a panic would
    // still be a bad file, not a crash.
    std::panic::catch_unwind(|| read_unguarded(bytes)).unwrap_or_else(|_| {
        Err(EInvoiceError::Unreadable(
            "the e-invoice reader gave up on this file".into(),
        ))
    })
}

fn read_unguarded(bytes: &[u8]) -> Result<Extraction, EInvoiceError> {
    let (payload, attachment, divergences) = if bytes.starts_with(b"%PDF") {
        // The parser's object budget (vendor/lopdf/PATCH.md), as for the text layer.
        let max_objects = crate::ocr::pdf_object_limit(bytes.len());
        let (extracted, objects) = lopdf::inflation::with_object_limit(max_objects, || {
            zugferd::extract(bytes, &pdf_limits())
        });
        if objects.exceeded {
            return Err(EInvoiceError::TooLarge(format!(
                "a PDF of {} bytes that parses into more than {max_objects} objects",
                bytes.len()
            )));
        }
        let extracted = extracted.map_err(pdf_error)?;
        let divergences: Vec<String> = extracted
            .divergence
            .iter()
            .map(|d| format!("container: {d}"))
            .collect();
        (
            std::borrow::Cow::Owned(extracted.xml),
            Some(extracted.filename),
            divergences,
        )
    } else {
        (std::borrow::Cow::Borrowed(bytes), None, Vec::new())
    };
    bounded(&payload)?;
    let received = en16931_formats::receive(&payload, &en16931_formats::Policy::default());
    let report = &received.report_declared;
    // Every finding, in the report's order: container divergences, the layers' entries,
    // the business rules.
    let mut all: Vec<Finding> = divergences
        .into_iter()
        .map(|line| Finding {
            fatal: false,
            rule: String::new(),
            line,
        })
        .collect();
    all.extend(report.entries().map(|e| {
        let rule = e.rule.as_deref().or(e.term.as_deref()).unwrap_or("");
        let line = format!("{rule} {:?}: {} ({})", e.level(), e.message, e.path);
        Finding {
            fatal: e.level() == Severity::Fatal,
            rule: rule.to_owned(),
            line: line.trim_start().to_owned(),
        }
    }));
    if let Some(semantic) = &report.semantic.report {
        all.extend(semantic.findings().iter().map(|f| Finding {
            fatal: f.severity == Severity::Fatal,
            rule: f.rule.to_string(),
            line: format!("{} {:?}: {}", f.rule, f.severity, f.message),
        }));
    }
    let Some(invoice) = received.invoice.as_ref() else {
        // Unreadable: the reasons say which layer refused it.
        let reason = received
            .reasons
            .iter()
            .map(|r| {
                r.strip_prefix("the syntax layer is invalid: unreadable: ")
                    .unwrap_or(r)
            })
            .collect::<Vec<_>>()
            .join("; ");
        return Err(if reason.contains("expected a UBL") {
            EInvoiceError::NotAnInvoice(reason)
        } else {
            EInvoiceError::Unreadable(reason)
        });
    };
    // Read: what was read is kept whatever the rules say. A fatal finding about routing
    // is a warning; any other sends the document to a person.
    let (warnings, review): (Vec<&Finding>, Vec<&Finding>) = all
        .iter()
        .filter(|f| f.fatal)
        .partition(|f| is_routing_rule(&f.rule));
    let invalid = [&report.container, &report.syntax, &report.schema]
        .iter()
        .any(|l| l.validity == Validity::Invalid)
        || report.semantic.validity == Validity::Invalid;
    let mut review: Vec<String> = review.into_iter().map(|f| f.line.clone()).collect();
    if invalid && review.is_empty() && warnings.is_empty() {
        // Invalid without a fatal finding to show: the reasons are the findings.
        review = received.reasons.clone();
    }
    let warnings: Vec<String> = warnings.into_iter().map(|f| f.line.clone()).collect();
    let mut findings: Vec<String> = all.into_iter().map(|f| f.line).collect();
    // A reason that is not a refusal (an unknown or absent BT-24: the core rules ran)
    // is information, kept with the findings.
    for reason in &received.reasons {
        findings.push(format!("note: {reason}"));
    }
    let findings = capped(findings);
    // The reader's model holds BT-109, BT-112 and BT-115 as amounts that are zero when
    // the XML has none: which of them the XML has decides whether they are read.
    let present = PresentTotals::of(&payload);
    let syntax = if root_name(&payload).ends_with("CrossIndustryInvoice") {
        "UN/CEFACT CII D16B"
    } else {
        "UBL 2.1"
    };
    let source = EInvoiceSource {
        provider: "einvoice".into(),
        syntax: Some(syntax.into()),
        profile: received.declared.as_ref().map(ToString::to_string),
        specification_id: invoice.specification_id.clone(),
        type_code: invoice.type_code.as_ref().map(ToString::to_string),
        buyer_reference: invoice.buyer_reference.clone(),
        amount_due: present.due.then(|| amount(invoice.totals.due)).flatten(),
        prepaid_amount: invoice.totals.paid.and_then(amount),
        vat_total_accounting_currency: invoice.totals.vat_total_accounting.and_then(amount),
        attachment,
        recommendation: Some(received.recommendation.as_str().to_owned()),
        findings,
        warnings: capped(warnings),
        review: capped(review),
        fallback_reason: None,
        disagreements: Vec::new(),
    };
    let mut extraction = to_extraction(invoice, source, &present);
    if extraction.due_date.is_none() && root_name(&payload).ends_with("CreditNote") {
        extraction.due_date = credit_note_due_date(&payload);
    }
    // What the schema admits and the contract does not (a lower-case currency code, say)
    // is a finding too.
    extraction.validate().map_err(|e| EInvoiceError::Invalid {
        findings: vec![format!("contract: {e}")],
    })?;
    Ok(extraction)
}

/// Which of the document totals the reader's model holds as plain amounts (zero when
/// absent) the XML actually has: BT-109, BT-112, BT-115, by their element in either
/// syntax (UBL `cac:LegalMonetaryTotal`, CII `ram:SpecifiedTradeSettlementHeaderMonetarySummation`).
/// An absent one stays absent in the extraction, never `0.00` with high confidence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct PresentTotals {
    taxable: bool,
    gross: bool,
    due: bool,
}

impl PresentTotals {
    fn of(xml: &[u8]) -> PresentTotals {
        let all = PresentTotals {
            taxable: true,
            gross: true,
            due: true,
        };
        let Some(doc) = std::str::from_utf8(xml)
            .ok()
            .and_then(|text| roxmltree::Document::parse(text).ok())
        else {
            // The reader read it, so this cannot happen; if it did, the reader's values
            // stand as they are.
            return all;
        };
        let mut found = PresentTotals {
            taxable: false,
            gross: false,
            due: false,
        };
        for summation in doc.descendants().filter(|n| {
            matches!(
                n.tag_name().name(),
                "LegalMonetaryTotal" | "SpecifiedTradeSettlementHeaderMonetarySummation"
            )
        }) {
            for total in summation.children().filter(|n| n.is_element()) {
                match total.tag_name().name() {
                    "TaxExclusiveAmount" | "TaxBasisTotalAmount" => found.taxable = true,
                    "TaxInclusiveAmount" | "GrandTotalAmount" => found.gross = true,
                    "PayableAmount" | "DuePayableAmount" => found.due = true,
                    _ => {}
                }
            }
        }
        found
    }
}

/// What a hybrid PDF's payload is used for: [`read`]'s extraction, unless a person
/// would have to look at it ([`EInvoiceSource::review`]); then the page is the other
/// reading of the same invoice, and the review findings are the error that says why
/// the page was read instead.
pub fn hybrid(read: Result<Extraction, EInvoiceError>) -> Result<Extraction, EInvoiceError> {
    let extraction = read?;
    match extraction.einvoice.as_ref().map(|s| &s.review) {
        Some(review) if !review.is_empty() => Err(EInvoiceError::Invalid {
            findings: review.clone(),
        }),
        _ => Ok(extraction),
    }
}

/// BT-9 of a UBL `CreditNote`: it has no `cbc:DueDate`, and carries the due date as
/// `cac:PaymentMeans/cbc:PaymentDueDate` (the EN 16931 UBL binding), which the reader's
/// model does not take. The first one that is an ISO date. The payload is already
/// bounded ([`bounded`]); a DTD is refused here too.
fn credit_note_due_date(xml: &[u8]) -> Option<chrono::NaiveDate> {
    let text = std::str::from_utf8(xml).ok()?;
    let doc = roxmltree::Document::parse(text).ok()?;
    let root = doc.root_element();
    root.children()
        .filter(|n| n.has_tag_name((UBL_CAC, "PaymentMeans")))
        .flat_map(|means| means.children())
        .filter(|n| n.has_tag_name((UBL_CBC, "PaymentDueDate")))
        .find_map(|n| n.text()?.trim().parse().ok())
}

const UBL_CAC: &str = "urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2";
const UBL_CBC: &str = "urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2";

/// One validation finding: fatal by the standard or not, the rule it cites, its line.
struct Finding {
    fatal: bool,
    rule: String,
    line: String,
}

/// The rules about how an invoice travels, not what it bills: the electronic addresses
/// of the parties and their scheme (EAS) code list, the references a network routes by
/// (PEPPOL's buyer reference, XRechnung's Leitweg-ID), the process and specification
/// identifiers. A fatal finding of one of these is a warning: the amounts, parties and
/// dates of the invoice are complete and are used; the finding is stored and shown.
/// Every other fatal finding (the money, the parties, the dates, or a rule this list
/// does not know) sends the document to a person, with what was read kept.
pub const ROUTING_RULES: &[&str] = &[
    // PEPPOL BIS Billing 3.0
    "PEPPOL-EN16931-R001",  // business process (ProfileID) provided
    "PEPPOL-EN16931-R003",  // a buyer reference or an order reference
    "PEPPOL-EN16931-R004",  // the specification identifier's value
    "PEPPOL-EN16931-R007",  // the business process's format
    "PEPPOL-EN16931-R010",  // the buyer's electronic address
    "PEPPOL-EN16931-R020",  // the seller's electronic address
    "PEPPOL-EN16931-CL008", // electronic address scheme from the EAS list
    // EN 16931
    "BR-62",    // the seller's electronic address has a scheme
    "BR-63",    // the buyer's electronic address has a scheme
    "BR-CL-25", // endpoint scheme from the CEF EAS list
    // XRechnung
    "BR-DE-15", // the buyer reference (Leitweg-ID)
];

fn is_routing_rule(rule: &str) -> bool {
    ROUTING_RULES.contains(&rule.trim())
}

/// The document element's name (with its prefix), or "" when none is found: the first
/// tag that is not a declaration, comment or processing instruction.
fn root_name(xml: &[u8]) -> String {
    let mut rest = xml;
    while let Some(i) = rest.iter().position(|b| *b == b'<') {
        rest = &rest[i + 1..];
        if matches!(rest.first(), Some(b'?' | b'!')) {
            continue;
        }
        let end = rest
            .iter()
            .position(|b| b.is_ascii_whitespace() || matches!(b, b'>' | b'/'))
            .unwrap_or(rest.len());
        return String::from_utf8_lossy(&rest[..end]).into_owned();
    }
    String::new()
}

/// The most findings kept (stored with the document, or the error's text): a hostile
/// document can produce one per element.
pub const MAX_FINDINGS: usize = 50;

fn capped(mut findings: Vec<String>) -> Vec<String> {
    if findings.len() > MAX_FINDINGS {
        let more = findings.len() - MAX_FINDINGS;
        findings.truncate(MAX_FINDINGS);
        findings.push(format!("… and {more} more"));
    }
    findings
}

fn bounded(xml: &[u8]) -> Result<(), EInvoiceError> {
    if xml.len() > MAX_XML_BYTES {
        return Err(EInvoiceError::TooLarge(format!(
            "the XML is {} bytes, over the {MAX_XML_BYTES} byte limit for an e-invoice",
            xml.len()
        )));
    }
    let nodes = xml.iter().filter(|b| **b == b'<').count();
    if nodes > MAX_XML_NODES {
        return Err(EInvoiceError::TooLarge(format!(
            "the XML has {nodes} markup nodes, over the limit of {MAX_XML_NODES}"
        )));
    }
    Ok(())
}

fn pdf_error(e: zugferd::Error) -> EInvoiceError {
    match e {
        zugferd::Error::NoInvoice { .. } => EInvoiceError::NoPayload(e.to_string()),
        zugferd::Error::LimitExceeded { .. } => EInvoiceError::TooLarge(e.to_string()),
        _ => EInvoiceError::Unreadable(e.to_string()),
    }
}

/// BT-3 → the contract's type, by the code lists of EN 16931 (BR-CL-01) as the
/// `en16931` crate carries them: a code of the credit-note list (81, 83, 261, 262, 296,
/// 308, 381, 396, 420, 458, 502, 503, 532; 81 is on both lists, and the crate counts it
/// as a credit note) is a credit note, any other code an invoice. Without a code, the
/// UBL root decides. An invoice code with a negative BT-112 (`gross_total`) is a credit
/// in substance: a credit note (Mustang's `validAvoir_FR_type380_BASICWL.pdf`, a 380
/// of −233.47).
pub fn document_type(
    type_code: Option<&str>,
    ubl_credit_note: bool,
    gross_total: Option<f64>,
) -> DocumentType {
    let credit = match type_code {
        Some(code) => en16931::codes::generated::CREDIT_NOTE_TYPE_CODES.contains(&code.trim()),
        None => ubl_credit_note,
    };
    if credit || gross_total.is_some_and(|t| t < 0.0) {
        DocumentType::CreditNote
    } else {
        DocumentType::Invoice
    }
}

/// BT-146 over BT-149: the price of one unit. A base quantity that is absent, zero or
/// negative (R121 refuses those) leaves the net price as it is.
fn unit_price(net_price: Option<f64>, base_quantity: Option<f64>) -> Option<f64> {
    match base_quantity {
        Some(base) if base > 0.0 => net_price.map(|p| p / base),
        _ => net_price,
    }
}

fn amount(a: impl std::fmt::Display) -> Option<f64> {
    a.to_string().parse().ok().filter(|v: &f64| v.is_finite())
}

fn compact(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

/// Two letters, two digits, then letters and digits: the shape of an IBAN, whatever its
/// check digits say.
fn looks_like_an_iban(id: &str) -> bool {
    let b = id.as_bytes();
    b.len() >= 15
        && b[..2].iter().all(u8::is_ascii_uppercase)
        && b[2..4].iter().all(u8::is_ascii_digit)
        && b[4..].iter().all(u8::is_ascii_alphanumeric)
}

fn text(s: &Option<String>) -> Option<String> {
    s.as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

fn to_extraction(i: &Invoice, mut source: EInvoiceSource, present: &PresentTotals) -> Extraction {
    let gross_total = present
        .gross
        .then(|| amount(i.totals.gross_total))
        .flatten();
    let date = |d: Option<en16931::Date>| d.and_then(|d| d.to_string().parse().ok());
    let reference = |r: &Option<en16931::DocumentReference>| {
        r.as_ref()
            .map(|r| r.to_string().trim().to_owned())
            .filter(|r| !r.is_empty())
    };
    // BT-84 of a credit transfer (BG-17): the first account whose IBAN passes its check
    // digits (ISO 13616, mod 97). One that looks like an IBAN and fails them is never
    // the supplier's IBAN (a payment would go astray): it is a finding instead.
    let iban = match i.payment.as_ref().and_then(|p| p.means.as_ref()) {
        Some(PaymentMeans::CreditTransfer(accounts)) => {
            let mut valid = None;
            for account in accounts {
                let Some(id) = account.account_identifier.as_deref().map(compact) else {
                    continue;
                };
                if crate::extract::rules::ids::iban_is_valid(&id) {
                    valid = valid.or(Some(id));
                } else if looks_like_an_iban(&id) {
                    source.findings.push(format!(
                        "BT-84 {id}: the IBAN fails its check digits (ISO 13616); not taken as the supplier's IBAN"
                    ));
                }
            }
            valid
        }
        _ => None,
    };
    let address = {
        let a = &i.seller.address;
        let city = [a.post_code.as_deref(), a.city.as_deref()]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(" ");
        let parts: Vec<String> = [a.line1.clone(), a.line2.clone(), a.line3.clone()]
            .into_iter()
            .flatten()
            .chain((!city.is_empty()).then_some(city))
            .chain(a.country.as_ref().map(ToString::to_string))
            .filter(|p| !p.trim().is_empty())
            .collect();
        (!parts.is_empty()).then(|| parts.join(", "))
    };
    let line_items = i
        .lines
        .iter()
        .map(|l| LineItem {
            description: text(&l.item.name)
                .or_else(|| text(&l.item.description))
                .unwrap_or_default(),
            quantity: amount(l.quantity),
            // BT-146 is the price of BT-149 units (1 when absent): per unit, it is
            // divided by the base quantity.
            unit_price: unit_price(
                amount(l.price.net_price),
                l.price.base_quantity.and_then(amount),
            ),
            amount: amount(l.net_amount),
        })
        .collect();
    let mut e = Extraction {
        schema_version: crate::extract::SCHEMA_VERSION,
        extraction_successful: true,
        confidence: Confidence::High,
        missing_fields: Vec::new(),
        document_type: Some(document_type(
            i.type_code.as_ref().map(ToString::to_string).as_deref(),
            i.kind == en16931::invoice::DocumentKind::CreditNote,
            gross_total,
        )),
        invoice_number: text(&i.number),
        invoice_date: date(i.issue_date),
        due_date: date(i.due_date),
        supplier_name: text(&i.seller.name),
        supplier_address: address,
        supplier_vat_id: i.seller.vat_identifier.as_deref().map(compact),
        supplier_iban: iban,
        customer_name: text(&i.buyer.name),
        currency: i.currency.as_ref().map(ToString::to_string),
        subtotal: present
            .taxable
            .then(|| amount(i.totals.taxable_total))
            .flatten(),
        vat_amount: i.totals.vat_total.and_then(amount),
        total: gross_total,
        po_reference: reference(&i.purchase_order_reference),
        delivery_note_reference: reference(&i.despatch_advice_reference),
        invoice_reference: i
            .preceding_invoices
            .first()
            .map(|p| p.reference.to_string().trim().to_owned())
            .filter(|r| !r.is_empty()),
        line_items,
        field_confidence: Default::default(),
        einvoice: Some(source),
    };
    let json = serde_json::to_value(&e).expect("an Extraction always serializes");
    for (field, value) in json.as_object().into_iter().flatten() {
        let filled = !(value.is_null()
            || value.as_array().is_some_and(Vec::is_empty)
            || value.as_object().is_some());
        if filled
            && !matches!(
                field.as_str(),
                "extraction_successful" | "confidence" | "missing_fields"
            )
        {
            e.field_confidence.insert(field.clone(), Confidence::High);
        }
    }
    e.missing_fields = CORE_FIELDS
        .iter()
        .filter(|f| json.get(**f).is_none_or(serde_json::Value::is_null))
        .map(|f| (*f).to_owned())
        .collect();
    e
}

/// Whether a file name or key is an XML upload (`.xml`, any case).
pub fn is_xml_name(name: &str) -> bool {
    name.rsplit_once('.')
        .is_some_and(|(_, ext)| ext.eq_ignore_ascii_case("xml"))
}

/// The content type an XML upload is stored with.
pub const XML_MIME_TYPE: &str = "application/xml";

/// Compares a hybrid's XML reading with what the page says (the page path's extraction)
/// on the number and the total, and records every disagreement in the XML reading's
/// `einvoice.disagreements` (the XML stays the invoice). Returns whether they disagree.
/// A field the page did not yield is not a disagreement.
pub fn compare_with_page(xml: &mut Extraction, page: &Extraction) -> bool {
    let mut disagreements = Vec::new();
    if let (Some(x), Some(p)) = (&xml.invoice_number, &page.invoice_number)
        && super::normalise_id(x) != super::normalise_id(p)
    {
        disagreements.push(format!(
            "invoice_number: the XML says {x:?}, the page {p:?}"
        ));
    }
    // A credit note's total is positive in the XML (EN 16931) and may be printed with a
    // minus sign: its size is what the two readings must agree on.
    let credit = xml.document_type == Some(DocumentType::CreditNote);
    let size = |t: f64| if credit { t.abs() } else { t };
    if let (Some(x), Some(p)) = (xml.total, page.total)
        && (size(x) - size(p)).abs() >= 0.005
    {
        disagreements.push(format!("total: the XML says {x:.2}, the page {p:.2}"));
    }
    let disagree = !disagreements.is_empty();
    if let Some(source) = &mut xml.einvoice {
        source.disagreements.extend(disagreements);
    }
    disagree
}

/// Whether the XML is of a profile that is not a full invoice: ZUGFeRD / Factur-X
/// MINIMUM and BASIC WL (the reader's recommendation `undefined`). Its page is the legal
/// invoice; the XML carries the totals and the parties, not the lines and most terms.
pub fn is_partial_profile(e: &Extraction) -> bool {
    e.einvoice
        .as_ref()
        .is_some_and(|s| s.recommendation.as_deref() == Some("undefined"))
}

/// A partial profile's XML ([`is_partial_profile`]) without a page to check it against
/// (an XML upload, or a hybrid whose page has no text): a person looks, with what was
/// read kept. `why` says which.
pub fn unchecked_partial_profile(e: &mut Extraction, why: &str) {
    if !is_partial_profile(e) {
        return;
    }
    if let Some(source) = &mut e.einvoice {
        let profile = source
            .profile
            .as_deref()
            .unwrap_or("a MINIMUM or BASIC WL profile");
        source.review.push(format!(
            "{profile}: not a full invoice, its page is the legal one, and {why}"
        ));
    }
}

/// What the page path records when a hybrid's XML was not used: the reason, and the
/// findings when there are any.
pub fn fallback_source(error: &EInvoiceError, page_provider: &str) -> EInvoiceSource {
    EInvoiceSource {
        provider: page_provider.to_owned(),
        fallback_reason: Some(error.to_string()),
        findings: match error {
            EInvoiceError::Invalid { findings } => findings.clone(),
            _ => Vec::new(),
        },
        ..EInvoiceSource::default()
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    /// The public corpora (see their README): `DOCFLOW_CORPORA` (the Makefile sets it,
    /// so a clone anywhere finds them), else `../shared/corpora` beside this checkout.
    fn corpus(path: &str) -> PathBuf {
        std::env::var_os("DOCFLOW_CORPORA")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpora")
            })
            .join(path)
    }

    fn files(dir: &str, ext: &str) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let mut stack = vec![corpus(dir)];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{dir:?}: {e}")) {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|e| e == ext) {
                    out.push(path);
                }
            }
        }
        out.sort();
        out
    }

    const UBL: &str = "xrechnung-testsuite/src/test/business-cases/standard/01.01a-INVOICE_ubl.xml";

    /// KoSIT 01.01a as a PEPPOL BIS Billing 3.0 invoice (its BT-24), changed by `edit`.
    fn peppol(edit: impl Fn(String) -> String) -> Extraction {
        let xml = std::fs::read_to_string(corpus(UBL)).unwrap().replace(
            "urn:cen.eu:en16931:2017#compliant#urn:xeinkauf.de:kosit:xrechnung_3.0",
            "urn:cen.eu:en16931:2017#compliant#urn:fdc:peppol.eu:2017:poacc:billing:3.0",
        );
        read(edit(xml).as_bytes()).unwrap_or_else(|e| panic!("read and kept: {e}"))
    }

    fn source(e: &Extraction) -> &EInvoiceSource {
        e.einvoice.as_ref().unwrap()
    }

    fn cites(lines: &[String], rule: &str) -> bool {
        lines.iter().any(|l| l.starts_with(rule))
    }

    #[test]
    fn peppol_r010_and_r020_missing_electronic_addresses_are_warnings_and_the_data_is_used() {
        let e = peppol(|xml| {
            xml.replace(
                r#"<cbc:EndpointID schemeID="EM">seller@email.de</cbc:EndpointID>"#,
                "",
            )
            .replace(
                r#"<cbc:EndpointID schemeID="EM">buyer@info.de</cbc:EndpointID>"#,
                "",
            )
        });
        let s = source(&e);
        assert!(
            cites(&s.warnings, "PEPPOL-EN16931-R010"),
            "{:?}",
            s.warnings
        );
        assert!(
            cites(&s.warnings, "PEPPOL-EN16931-R020"),
            "{:?}",
            s.warnings
        );
        assert!(s.review.is_empty(), "{:?}", s.review);
        assert!(!e.needs_human_review());
        // KoSIT 01.01a's own values, read as they are.
        assert_eq!(e.total, Some(336.9));
        assert_eq!(e.supplier_name.as_deref(), Some("[Seller name]"));
    }

    #[test]
    fn peppol_r003_no_buyer_reference_and_br_cl_25_an_endpoint_scheme_outside_the_eas_list_are_warnings()
     {
        let e = peppol(|xml| {
            xml.replace(
                "<cbc:BuyerReference>04011000-12345-03</cbc:BuyerReference>",
                "",
            )
            .replace(
                r#"schemeID="EM">seller@email.de"#,
                r#"schemeID="XX">seller@email.de"#,
            )
        });
        let s = source(&e);
        assert!(
            cites(&s.warnings, "PEPPOL-EN16931-R003"),
            "{:?}",
            s.warnings
        );
        assert!(cites(&s.warnings, "BR-CL-25"), "{:?}", s.warnings);
        assert!(s.review.is_empty(), "{:?}", s.review);
        assert!(!e.needs_human_review());
        assert!(s.findings.iter().any(|f| f.starts_with("BR-CL-25")));
    }

    #[test]
    fn br_de_15_an_xrechnung_without_its_leitweg_id_is_a_warning() {
        let xml = std::fs::read_to_string(corpus(UBL)).unwrap().replace(
            "<cbc:BuyerReference>04011000-12345-03</cbc:BuyerReference>",
            "",
        );
        let e = read(xml.as_bytes()).unwrap();
        assert!(cites(&source(&e).warnings, "BR-DE-15"));
        assert!(!e.needs_human_review());
    }

    #[test]
    fn br_co_16_an_amount_due_that_does_not_add_up_keeps_what_was_read_and_goes_to_review() {
        // BT-115 1336.9 where BT-112 − BT-113 + BT-114 is 336.9.
        let xml = std::fs::read_to_string(corpus(UBL)).unwrap().replace(
            r#"<cbc:PayableAmount currencyID="EUR">"#,
            r#"<cbc:PayableAmount currencyID="EUR">1"#,
        );
        let e = read(xml.as_bytes()).unwrap();
        let s = source(&e);
        assert!(cites(&s.review, "BR-CO-16"), "{:?}", s.review);
        assert!(e.needs_human_review());
        assert_eq!(e.total, Some(336.9), "BT-112 as written");
        assert_eq!(e.invoice_number.as_deref(), Some("123456XX"));
    }

    #[test]
    fn br_06_an_invoice_without_its_seller_keeps_what_was_read_and_goes_to_review() {
        let xml = std::fs::read_to_string(corpus(UBL)).unwrap();
        let start = xml.find("<cac:AccountingSupplierParty>").unwrap();
        let end = xml.find("</cac:AccountingSupplierParty>").unwrap()
            + "</cac:AccountingSupplierParty>".len();
        let no_seller = format!("{}{}", &xml[..start], &xml[end..]);
        let e = read(no_seller.as_bytes()).unwrap();
        assert!(
            cites(&source(&e).review, "BR-06"),
            "{:?}",
            source(&e).review
        );
        assert!(e.needs_human_review());
        assert_eq!(e.total, Some(336.9));
        assert_eq!(e.supplier_name, None);
    }

    /// KoSIT 01.01a rewritten as a UBL `CreditNote` (381) as the UBL 2.1 CreditNote
    /// schema spells it, with BT-9 where that schema puts it: the suite has no UBL credit
    /// note of its own.
    fn ubl_credit_note(payment_due_date: &str) -> String {
        std::fs::read_to_string(corpus(UBL))
            .unwrap()
            .replace("ubl:Invoice", "ubl:CreditNote")
            .replace(
                "urn:oasis:names:specification:ubl:schema:xsd:Invoice-2",
                "urn:oasis:names:specification:ubl:schema:xsd:CreditNote-2",
            )
            .replace(
                "<cbc:InvoiceTypeCode>380</cbc:InvoiceTypeCode>",
                "<cbc:CreditNoteTypeCode>381</cbc:CreditNoteTypeCode>",
            )
            .replace("cac:InvoiceLine", "cac:CreditNoteLine")
            .replace("cbc:InvoicedQuantity", "cbc:CreditedQuantity")
            .replace(
                "<cbc:PaymentMeansCode>58</cbc:PaymentMeansCode>",
                &format!(
                    "<cbc:PaymentMeansCode>58</cbc:PaymentMeansCode><cbc:PaymentDueDate>{payment_due_date}</cbc:PaymentDueDate>"
                ),
            )
    }

    #[test]
    fn bt_9_of_a_ubl_credit_note_is_its_payment_means_payment_due_date() {
        let e = read(ubl_credit_note("2016-05-04").as_bytes()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(e.document_type, Some(DocumentType::CreditNote));
        assert_eq!(e.due_date, chrono::NaiveDate::from_ymd_opt(2016, 5, 4));
        assert_eq!(e.invoice_date, chrono::NaiveDate::from_ymd_opt(2016, 4, 4));
        // Not a date: no BT-9, never a guess.
        let e = read(ubl_credit_note("bald").as_bytes()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(e.due_date, None);
    }

    fn standard(case: &str) -> Extraction {
        let path = corpus(&format!(
            "xrechnung-testsuite/src/test/business-cases/standard/{case}"
        ));
        read(&std::fs::read(path).unwrap()).unwrap_or_else(|e| panic!("{case}: {e}"))
    }

    #[test]
    fn bt_115_amount_due_and_bt_113_prepaid_amount_of_a_refund_are_kept_beside_bt_112() {
        // KoSIT 03.01a: BT-112 804.86, BT-113 1030, BT-115 −225.14 (a refund).
        for case in ["03.01a-INVOICE_ubl.xml", "03.01a-INVOICE_uncefact.xml"] {
            let e = standard(case);
            let s = source(&e);
            assert_eq!(e.total, Some(804.86), "{case}: total is BT-112");
            assert_eq!(s.prepaid_amount, Some(1030.0), "{case}");
            assert_eq!(s.amount_due, Some(-225.14), "{case}");
        }
    }

    #[test]
    fn bt_111_the_vat_total_in_the_accounting_currency_is_kept() {
        // KoSIT 02.01a: BT-6 GBP, BT-111 2048.44.
        for case in ["02.01a-INVOICE_ubl.xml", "02.01a-INVOICE_uncefact.xml"] {
            let e = standard(case);
            assert_eq!(
                source(&e).vat_total_accounting_currency,
                Some(2048.44),
                "{case}"
            );
        }
        assert_eq!(
            source(&standard("01.01a-INVOICE_ubl.xml")).vat_total_accounting_currency,
            None,
            "no accounting currency, no BT-111"
        );
    }

    #[test]
    fn an_absent_bt_112_bt_109_or_bt_115_stays_absent_never_zero_with_high_confidence() {
        let xml = std::fs::read_to_string(corpus(UBL)).unwrap();
        let without = |element: &str| {
            let start = xml.find(&format!("<cbc:{element}")).unwrap();
            let end = xml.find(&format!("</cbc:{element}>")).unwrap() + element.len() + 7;
            let e = read(format!("{}{}", &xml[..start], &xml[end..]).as_bytes())
                .unwrap_or_else(|e| panic!("{element}: {e}"));
            assert!(e.needs_human_review(), "{element}: a person looks");
            e
        };
        let no_gross = without("TaxInclusiveAmount");
        assert_eq!(no_gross.total, None);
        assert_eq!(no_gross.field_confidence_of("total"), None);
        assert!(no_gross.missing_fields.contains(&"total".to_owned()));
        assert_eq!(no_gross.subtotal, Some(314.86));
        assert_eq!(without("TaxExclusiveAmount").subtotal, None);
        let no_due = without("PayableAmount");
        assert_eq!(source(&no_due).amount_due, None);
        assert_eq!(no_due.total, Some(336.9));
    }

    #[test]
    fn every_xrechnung_business_case_is_read_exactly_with_high_confidence() {
        let cases = files("xrechnung-testsuite/src/test/business-cases", "xml");
        assert_eq!(cases.len(), 72, "the suite's 72 business cases");
        let (mut ubl, mut cii) = (0, 0);
        for path in &cases {
            let e = read(&std::fs::read(path).unwrap())
                .unwrap_or_else(|err| panic!("{}: {err}", path.display()));
            let source = e.einvoice.as_ref().unwrap();
            assert_eq!(source.provider, "einvoice");
            match source.syntax.as_deref() {
                Some("UBL 2.1") => ubl += 1,
                Some("UN/CEFACT CII D16B") => cii += 1,
                other => panic!("{}: syntax {other:?}", path.display()),
            }
            assert!(source.profile.is_some() && source.type_code.is_some());
            assert_eq!(e.confidence, Confidence::High);
            assert!(e.passes_quality_gate(), "{}", path.display());
            assert!(e.invoice_number.is_some() && e.invoice_date.is_some());
            assert!(e.supplier_name.is_some() && e.total.is_some() && e.currency.is_some());
            assert!(!e.line_items.is_empty(), "{}", path.display());
            assert_eq!(e.field_confidence_of("total"), Some(Confidence::High));
        }
        assert!(ubl > 30 && cii > 30, "{ubl} UBL, {cii} CII");
    }

    #[test]
    fn bt_84_an_iban_failing_its_check_digits_is_a_finding_not_the_suppliers_iban() {
        // KoSIT 01.01a's account, one digit changed: DE79000000001234567890 passes
        // ISO 13616's mod 97, DE79000000001234567891 does not.
        let xml = std::fs::read_to_string(corpus(UBL)).unwrap();
        assert!(xml.contains("DE79000000001234567890"));
        let broken = xml.replace("DE79000000001234567890", "DE79000000001234567891");

        let e = read(broken.as_bytes()).unwrap();

        assert_eq!(e.supplier_iban, None);
        let findings = &e.einvoice.as_ref().unwrap().findings;
        assert!(
            findings
                .iter()
                .any(|f| f.starts_with("BT-84 DE79000000001234567891: the IBAN fails")),
            "{findings:?}"
        );
        // The published sample's own IBAN is taken as it is.
        let e = read(xml.as_bytes()).unwrap();
        assert_eq!(e.supplier_iban.as_deref(), Some("DE79000000001234567890"));
    }

    #[test]
    fn a_ubl_invoice_maps_onto_the_contract() {
        let e = read(&std::fs::read(corpus(UBL)).unwrap()).unwrap();
        let xml = std::fs::read_to_string(corpus(UBL)).unwrap();
        assert_eq!(e.document_type, Some(DocumentType::Invoice));
        assert!(xml.contains(&format!(
            "<cbc:ID>{}</cbc:ID>",
            e.invoice_number.as_deref().unwrap()
        )));
        assert!(xml.contains(&format!(
            "<cbc:IssueDate>{}</cbc:IssueDate>",
            e.invoice_date.unwrap()
        )));
        assert_eq!(e.total, Some(336.9));
        assert!(
            xml.contains(
                "<cbc:TaxInclusiveAmount currencyID=\"EUR\">336.9</cbc:TaxInclusiveAmount>"
            )
        );
        assert_eq!(e.subtotal, Some(314.86));
        assert_eq!(e.vat_amount, Some(22.04));
        assert_eq!(e.supplier_iban.as_deref(), Some("DE79000000001234567890"));
        assert_eq!(e.line_items.len(), 2);
        assert_eq!(e.line_items[0].amount, Some(288.79));
        let source = e.einvoice.unwrap();
        assert_eq!(source.type_code.as_deref(), Some("380"));
        assert!(source.buyer_reference.is_some());
    }

    #[test]
    fn bt_3_credit_note_codes_of_untdid_1001_map_to_credit_notes_and_keep_the_code() {
        // BR-CL-01's credit-note list (EN 16931, UNTDID 1001 restricted).
        for code in [
            "81", "83", "261", "262", "296", "308", "381", "396", "420", "458", "502", "503", "532",
        ] {
            assert_eq!(
                document_type(Some(code), false, Some(10.0)),
                DocumentType::CreditNote,
                "{code}"
            );
        }
        for code in ["380", "384", "389", "326", "386", "875"] {
            assert_eq!(
                document_type(Some(code), false, Some(10.0)),
                DocumentType::Invoice,
                "{code}"
            );
        }
        assert_eq!(document_type(None, true, None), DocumentType::CreditNote);
        assert_eq!(document_type(None, false, None), DocumentType::Invoice);
        let cii = UBL.replace("_ubl.xml", "_uncefact.xml");
        let xml = std::fs::read_to_string(corpus(&cii)).unwrap().replacen(
            "<ram:TypeCode>380</ram:TypeCode>",
            "<ram:TypeCode>381</ram:TypeCode>",
            1,
        );
        let e = read(xml.as_bytes()).unwrap();
        assert_eq!(e.document_type, Some(DocumentType::CreditNote));
        assert_eq!(
            e.einvoice.unwrap().type_code.as_deref(),
            Some("381"),
            "the code is kept"
        );
    }

    #[test]
    fn bt_112_negative_on_an_invoice_code_is_a_credit_note() {
        assert_eq!(
            document_type(Some("380"), false, Some(-233.47)),
            DocumentType::CreditNote
        );
        assert_eq!(
            document_type(Some("384"), false, Some(-1.0)),
            DocumentType::CreditNote
        );
        // Mustang's French "avoir" issued as a 380 (BASIC WL): BT-112 −233.47.
        let e = read(
            &std::fs::read(corpus("mustang-samples/validAvoir_FR_type380_BASICWL.pdf")).unwrap(),
        )
        .unwrap();
        assert_eq!(e.total, Some(-233.47));
        assert_eq!(e.document_type, Some(DocumentType::CreditNote));
        assert_eq!(e.einvoice.unwrap().type_code.as_deref(), Some("380"));
    }

    #[test]
    fn bt_149_base_quantity_divides_the_net_price_into_a_unit_price() {
        assert_eq!(unit_price(Some(250.0), Some(100.0)), Some(2.5));
        assert_eq!(unit_price(Some(250.0), None), Some(250.0));
        assert_eq!(unit_price(Some(250.0), Some(0.0)), Some(250.0));
        // A KoSIT invoice whose first line's price is written per 10 units: BT-146 ten
        // times the unit price, BT-149 10. The unit price is the one the original states.
        let xml = std::fs::read_to_string(corpus(UBL)).unwrap();
        let plain = read(xml.as_bytes()).unwrap();
        let first = &plain.line_items[0];
        let (unit_before, quantity) = (first.unit_price.unwrap(), first.quantity.unwrap());
        let open = xml.find("<cbc:PriceAmount").unwrap();
        let value = open + xml[open..].find('>').unwrap() + 1;
        let close = value + xml[value..].find('<').unwrap();
        let per_ten = format!(
            "{}{:.2}</cbc:PriceAmount><cbc:BaseQuantity>10</cbc:BaseQuantity>{}",
            &xml[..value],
            unit_before * 10.0,
            &xml[close + "</cbc:PriceAmount>".len()..]
        );
        let e = read(per_ten.as_bytes()).unwrap();
        let unit = e.line_items[0].unit_price.unwrap();
        assert!((unit - unit_before).abs() < 1e-9, "{unit} vs {unit_before}");
        assert_eq!(e.line_items[0].quantity, Some(quantity));
    }

    #[test]
    fn the_kosit_technical_cases_are_read_or_refused_without_a_panic() {
        for path in files("xrechnung-testsuite/src/test/technical-cases", "xml") {
            match read(&std::fs::read(&path).unwrap()) {
                Ok(e) => assert_eq!(e.einvoice.unwrap().provider, "einvoice"),
                Err(e) => assert!(!e.to_string().is_empty(), "{}", path.display()),
            }
        }
    }

    #[test]
    fn hybrids_are_read_from_their_attachment() {
        let e =
            read(&std::fs::read(corpus("mustang-samples/EN16931_Einfach.pdf")).unwrap()).unwrap();
        let source = e.einvoice.as_ref().unwrap();
        assert_eq!(source.attachment.as_deref(), Some("factur-x.xml"));
        assert_eq!(source.syntax.as_deref(), Some("UN/CEFACT CII D16B"));
        assert_eq!(e.invoice_number.as_deref(), Some("471102"));
        assert_eq!(e.total, Some(529.87));
        let basic_wl = read(
            &std::fs::read(corpus("mustang-samples/validAvoir_FR_type380_BASICWL.pdf")).unwrap(),
        )
        .unwrap();
        let source = basic_wl.einvoice.unwrap();
        assert_eq!(source.recommendation.as_deref(), Some("undefined"));
        assert!(source.profile.unwrap().contains("BASIC WL"));
    }

    #[test]
    fn a_basic_wl_xml_without_a_page_to_check_it_against_goes_to_a_person() {
        let mustang = |file: &str| {
            read(&std::fs::read(corpus(&format!("mustang-samples/{file}"))).unwrap()).unwrap()
        };
        let mut basic_wl = mustang("validAvoir_FR_type380_BASICWL.pdf");
        assert!(is_partial_profile(&basic_wl));
        assert!(
            !basic_wl.needs_human_review(),
            "checked against its page, it may pass"
        );
        unchecked_partial_profile(&mut basic_wl, "an XML upload has no page");
        let review = &basic_wl.einvoice.as_ref().unwrap().review;
        assert!(
            review.len() == 1 && review[0].contains("BASIC WL") && review[0].contains("no page"),
            "{review:?}"
        );
        assert!(basic_wl.needs_human_review());
        // BASIC WL carries no lines: none is invented, none has a confidence.
        assert!(basic_wl.line_items.is_empty());
        assert_eq!(basic_wl.field_confidence_of("line_items"), None);

        let mut full = mustang("EN16931_Einfach.pdf");
        assert!(!is_partial_profile(&full));
        unchecked_partial_profile(&mut full, "an XML upload has no page");
        assert!(full.einvoice.as_ref().unwrap().review.is_empty());
    }

    #[test]
    fn a_credit_notes_total_agrees_with_its_page_by_size_whatever_the_sign() {
        let mut xml = crate::extract::test_data(serde_json::json!({
            "document_type": "credit_note", "invoice_number": "GS-1", "total": 233.47
        }));
        xml.einvoice = Some(EInvoiceSource::default());
        let printed = crate::extract::test_data(serde_json::json!({
            "document_type": "credit_note", "invoice_number": "GS-1", "total": -233.47
        }));
        assert!(!compare_with_page(&mut xml, &printed));
        let other = crate::extract::test_data(serde_json::json!({"total": -23.47}));
        assert!(compare_with_page(&mut xml, &other));
    }

    #[test]
    fn broken_plain_and_foreign_pdfs_are_refused_with_a_clear_error() {
        for (file, want) in [
            ("corrupt-factur-x-waytoosmall.pdf", "unreadable"),
            ("corruptedV2PDF.pdf", "unreadable"),
            ("invalidXMP-ParseError.pdf", "unreadable"),
            ("veraPDFtestsuite6-7-11-t01-fail-a.pdf", "no embedded"),
            ("EmptyPDFA1.pdf", "no embedded"),
            (
                "ORDER-X_EX01_ORDER_FULL_DATA-COMFORT.pdf",
                "not an EN 16931 invoice",
            ),
            // ZUGFeRD 1.0 (`CrossIndustryDocument`) predates EN 16931: the page path.
            ("zugferd_invoice.pdf", "not an EN 16931 invoice"),
        ] {
            let path = corpus(&format!("mustang-samples/{file}"));
            let err = read(&std::fs::read(path).unwrap()).unwrap_err();
            assert!(err.to_string().contains(want), "{file}: {err}");
        }
        // A read payload breaking a rule about payment is kept, for a person to look at
        // (ingestion reads such a hybrid's page instead).
        let path = corpus("mustang-samples/MustangBeispiel20221026.pdf");
        let kept = read(&std::fs::read(path).unwrap()).unwrap();
        assert!(
            cites(&source(&kept).review, "BR-49"),
            "{:?}",
            source(&kept).review
        );
        // Every sample, whatever it is: an answer, never a panic.
        for path in files("mustang-samples", "pdf") {
            let _ = read(&std::fs::read(path).unwrap());
        }
    }

    const UBL_HEAD: &str = r#"<Invoice xmlns="urn:oasis:names:specification:ubl:schema:xsd:Invoice-2" xmlns:cbc="urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2">"#;

    #[test]
    fn a_doctype_an_external_entity_and_an_entity_bomb_are_refused_unexpanded() {
        let xxe = format!(
            "<?xml version=\"1.0\"?><!DOCTYPE Invoice [<!ENTITY xxe SYSTEM \"file:///etc/passwd\">]>{UBL_HEAD}<cbc:ID>&xxe;</cbc:ID></Invoice>"
        );
        let mut bomb = String::from("<?xml version=\"1.0\"?><!DOCTYPE lolz [<!ENTITY lol \"lol\">");
        for i in 1..10 {
            let prev = if i == 1 {
                "lol".to_owned()
            } else {
                format!("lol{}", i - 1)
            };
            bomb += &format!("<!ENTITY lol{i} \"{}\">", format!("&{prev};").repeat(10));
        }
        bomb += &format!("]>{UBL_HEAD}<cbc:ID>&lol9;</cbc:ID></Invoice>");
        for xml in [xxe, bomb] {
            let err = read(xml.as_bytes()).unwrap_err();
            assert!(matches!(err, EInvoiceError::Unreadable(_)), "{err}");
            assert!(err.to_string().contains("DTD"), "{err}");
            assert!(!err.to_string().contains("root:"), "nothing was fetched");
        }
    }

    #[test]
    fn a_100_mb_xml_is_refused_before_parsing() {
        let mut xml = UBL_HEAD.to_owned().into_bytes();
        xml.resize(100 * 1024 * 1024, b' ');
        xml.extend_from_slice(b"</Invoice>");
        let err = read(&xml).unwrap_err();
        assert!(matches!(err, EInvoiceError::TooLarge(_)), "{err}");
        assert!(err.to_string().contains("byte limit"));
    }

    #[test]
    fn too_many_nodes_or_too_deep_nesting_is_refused() {
        let many = format!("{UBL_HEAD}{}</Invoice>", "<a/>".repeat(MAX_XML_NODES + 1));
        let err = read(many.as_bytes()).unwrap_err();
        assert!(matches!(err, EInvoiceError::TooLarge(_)), "{err}");
        let deep = format!(
            "{UBL_HEAD}{}{}</Invoice>",
            "<a>".repeat(10_000),
            "</a>".repeat(10_000)
        );
        let err = read(deep.as_bytes()).unwrap_err();
        assert!(matches!(err, EInvoiceError::Unreadable(_)), "{err}");
        assert!(err.to_string().contains("deep"), "{err}");
    }

    #[test]
    fn xml_that_is_not_an_invoice_says_what_it_found() {
        let err = read(b"<Order xmlns=\"urn:x\"><ID>1</ID></Order>").unwrap_err();
        assert!(matches!(err, EInvoiceError::NotAnInvoice(_)), "{err}");
        assert!(err.to_string().contains("Order"));
        for garbage in [
            &b""[..],
            b"<",
            b"\xff\xfe<\x00",
            b"%PDF-1.7\n",
            b"not xml at all",
        ] {
            let _ = read(garbage);
        }
    }

    #[test]
    fn a_hybrid_whose_page_disagrees_keeps_the_xml_and_flags_it() {
        let mut xml =
            read(&std::fs::read(corpus("mustang-samples/EN16931_Einfach.pdf")).unwrap()).unwrap();
        let mut page = xml.clone();
        assert!(!compare_with_page(&mut xml, &page));
        page.total = Some(1.0);
        page.invoice_number = Some("471-102".into());
        assert!(compare_with_page(&mut xml, &page));
        assert_eq!(xml.total, Some(529.87), "the XML is the invoice");
        let flagged = &xml.einvoice.as_ref().unwrap().disagreements;
        assert_eq!(flagged.len(), 1, "{flagged:?}");
        assert!(flagged[0].contains("total"));
    }

    #[test]
    fn findings_are_capped_however_many_a_document_produces() {
        let lines: Vec<String> = (0..500).map(|i| format!("BR-{i}")).collect();
        let kept = capped(lines);
        assert_eq!(kept.len(), MAX_FINDINGS + 1);
        assert_eq!(kept.last().unwrap(), "… and 450 more");
        // Each unmapped path is reported once: 2000 different ones.
        let junk: String = (0..2000)
            .map(|i| format!("<cbc:Unknown{i}>x</cbc:Unknown{i}>"))
            .collect();
        let xml = std::fs::read_to_string(corpus(UBL)).unwrap().replacen(
            "<cbc:Note>",
            &format!("{junk}<cbc:Note>"),
            1,
        );
        let findings = match read(xml.as_bytes()) {
            Ok(e) => e.einvoice.unwrap().findings,
            Err(EInvoiceError::Invalid { findings }) => findings,
            Err(other) => panic!("{other}"),
        };
        assert_eq!(findings.len(), MAX_FINDINGS + 1, "{findings:?}");
    }

    fn deflated(bytes: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        z.write_all(bytes).unwrap();
        z.finish().unwrap()
    }

    /// A PDF whose `factur-x.xml` is stored as `FlateDecode` with `/DecodeParms`: not the
    /// lone-Flate fast path of the reader, so lopdf's bounded decoder inflates it.
    fn hybrid_with_predictor_attachment(payload: &[u8]) -> Vec<u8> {
        use lopdf::{Document, Object, Stream, StringFormat, dictionary};
        let name = || Object::String(b"factur-x.xml".to_vec(), StringFormat::Literal);
        let mut doc = Document::with_version("1.7");
        let file = doc.add_object(Stream::new(
            dictionary! {
                "Type" => "EmbeddedFile",
                "Filter" => "FlateDecode",
                "DecodeParms" => dictionary! { "Predictor" => 1 },
            },
            deflated(payload),
        ));
        let spec = doc.add_object(dictionary! {
            "Type" => "Filespec", "F" => name(), "UF" => name(),
            "EF" => dictionary! { "F" => file },
        });
        let pages = doc.add_object(
            dictionary! { "Type" => "Pages", "Kids" => Vec::<Object>::new(), "Count" => 0 },
        );
        let catalog = doc.add_object(dictionary! {
            "Type" => "Catalog", "Pages" => pages,
            "Names" => dictionary! {
                "EmbeddedFiles" => dictionary! { "Names" => vec![name(), spec.into()] },
            },
        });
        doc.trailer.set("Root", catalog);
        let mut out = Vec::new();
        doc.save_to(&mut out).unwrap();
        out
    }

    #[test]
    fn an_attachment_that_inflates_past_the_stream_limit_is_refused() {
        let bomb = hybrid_with_predictor_attachment(&vec![b' '; MAX_PDF_STREAM_BYTES + 1]);
        assert!(bomb.len() < 200_000, "{} bytes", bomb.len());
        let err = read(&bomb).unwrap_err();
        assert!(matches!(err, EInvoiceError::TooLarge(_)), "{err}");
        assert!(err.to_string().contains("factur-x.xml"), "{err}");

        // The same attachment within the limit is inflated and read (and is no invoice).
        let small = hybrid_with_predictor_attachment(b"<Order xmlns=\"urn:x\"><ID>1</ID></Order>");
        let err = read(&small).unwrap_err();
        assert!(matches!(err, EInvoiceError::NotAnInvoice(_)), "{err}");
    }

    /// A PDF whose only cross-reference section is a `FlateDecode` xref stream of
    /// `inflated` bytes (zeros: free entries).
    fn pdf_with_xref_stream(inflated: usize) -> Vec<u8> {
        let mut pdf = b"%PDF-1.5\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n\
                        2 0 obj\n<< /Type /Pages /Kids [] /Count 0 >>\nendobj\n"
            .to_vec();
        let xref_at = pdf.len();
        let data = deflated(&vec![0; inflated]);
        pdf.extend_from_slice(
            format!(
                "3 0 obj\n<< /Type /XRef /Size 4 /W [1 4 2] /Root 1 0 R /Filter /FlateDecode \
                 /Length {} >>\nstream\n",
                data.len()
            )
            .as_bytes(),
        );
        pdf.extend_from_slice(&data);
        pdf.extend_from_slice(
            format!("\nendstream\nendobj\nstartxref\n{xref_at}\n%%EOF\n").as_bytes(),
        );
        pdf
    }

    #[test]
    fn a_cross_reference_stream_that_inflates_past_the_stream_limit_is_refused() {
        let bomb = pdf_with_xref_stream(MAX_PDF_STREAM_BYTES + 1);
        assert!(bomb.len() < 200_000, "{} bytes", bomb.len());
        let err = read(&bomb).unwrap_err();
        assert!(matches!(err, EInvoiceError::TooLarge(_)), "{err}");
        assert!(err.to_string().contains("structure"), "{err}");

        // A small one is parsed, not refused for its size.
        let err = read(&pdf_with_xref_stream(28)).unwrap_err();
        assert!(!matches!(err, EInvoiceError::TooLarge(_)), "{err}");
    }

    #[test]
    fn xml_file_names() {
        assert!(is_xml_name("documents/x.XML") && !is_xml_name("a.pdf"));
    }
}
