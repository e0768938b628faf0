//! Structured e-invoices (EN 16931), read exactly before any OCR or LLM: an XRechnung /
//! EN 16931 XML upload (UBL 2.1 `Invoice` / `CreditNote`, UN/CEFACT CII
//! `CrossIndustryInvoice`) or a ZUGFeRD / Factur-X PDF/A-3 carrying one
//! (`factur-x.xml`, `zugferd-invoice.xml`, `ZUGFeRD-invoice.xml`, `xrechnung.xml`).
//! ZUGFeRD 1.0's `CrossIndustryDocument`, which predates EN 16931, is read into the
//! same contract by the `zugferd1` module.
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
    /// `UBL 2.1`, `UN/CEFACT CII D16B` or `ZUGFeRD 1.0 (CrossIndustryDocument)`.
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
    /// Well-formed XML whose root is not an invoice (an ORDER-X, a `CrossIndustryDocument`
    /// outside ZUGFeRD 1.0's namespace).
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
        // Which invoice the PDF carries is in doubt: a person looks. How it is wired in
        // (`/AF`, the XMP, PDF/A) is information.
        let divergences: Vec<(bool, String)> = extracted
            .divergence
            .iter()
            .map(|d| match d {
                zugferd::Divergence::PayloadsDisagree { .. }
                | zugferd::Divergence::UnassociatedPayload { .. } => {
                    (true, format!("{PAYLOAD_FINDING}{d}"))
                }
                _ => (false, format!("container: {d}")),
            })
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
    // ZUGFeRD 1.0 predates EN 16931: the crates refuse it, so it is read on its own terms.
    if zugferd1::is_root(&payload) {
        return zugferd1::read(&payload, attachment, divergences);
    }
    let received = en16931_formats::receive(&payload, &en16931_formats::Policy::default());
    let report = &received.report_declared;
    // Every finding, in the report's order: container divergences, the layers' entries,
    // the business rules.
    let mut all: Vec<Finding> = divergences
        .into_iter()
        .map(|(fatal, line)| Finding {
            fatal,
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
    // One parse of the payload for what the reader's model leaves out (these totals,
    // BT-9 of a UBL CreditNote); the reader read it, so it parses. Were it not to, the
    // reader's values stand as they are.
    let text = std::str::from_utf8(&payload).ok();
    let doc = text.and_then(|t| roxmltree::Document::parse(t).ok());
    let present = doc.as_ref().map_or(PresentTotals::ALL, PresentTotals::of);
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
    let accounts = doc.as_ref().map(credit_transfer_accounts);
    let mut extraction = to_extraction(invoice, source, &present, accounts);
    if extraction.due_date.is_none() {
        extraction.due_date = doc.as_ref().and_then(credit_note_due_date);
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
    const ALL: PresentTotals = PresentTotals {
        taxable: true,
        gross: true,
        due: true,
    };

    fn of(doc: &roxmltree::Document<'_>) -> PresentTotals {
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
/// the page was read instead. A PDF carrying two invoices ([`PAYLOAD_FINDING`]) keeps
/// the XML read (the one its `/AF` names) with the review: its page is no other reading
/// of the same invoice, the update that added an invoice may have changed it too.
pub fn hybrid(read: Result<Extraction, EInvoiceError>) -> Result<Extraction, EInvoiceError> {
    let extraction = read?;
    match extraction.einvoice.as_ref().map(|s| &s.review) {
        Some(review)
            if !review.is_empty() && !review.iter().any(|f| f.starts_with(PAYLOAD_FINDING)) =>
        {
            Err(EInvoiceError::Invalid {
                findings: review.clone(),
            })
        }
        _ => Ok(extraction),
    }
}

/// How a review finding about which invoice a hybrid PDF carries begins: a second
/// file under a standard name whose content differs from the one read, listed in the
/// catalogue's `/AF` as well, or not listed there at all (an incremental update's).
pub const PAYLOAD_FINDING: &str = "payload: ";

/// BT-9 of a UBL `CreditNote`: it has no `cbc:DueDate`, and carries the due date as
/// `cac:PaymentMeans/cbc:PaymentDueDate` (the EN 16931 UBL binding), which the reader's
/// model does not take. The first one that is an ISO date; `None` for any other root.
/// The payload is already bounded ([`bounded`]); roxmltree refuses a DTD too.
fn credit_note_due_date(doc: &roxmltree::Document<'_>) -> Option<chrono::NaiveDate> {
    let root = doc.root_element();
    if root.tag_name().name() != "CreditNote" {
        return None;
    }
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

/// UNTDID 1001 `384`, a corrected invoice: it replaces the invoice its BT-25 names
/// ([`Extraction::replaces_invoice`]), rather than crediting it.
pub const CORRECTED_INVOICE: &str = "384";

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

/// BT-84 of each credit transfer, in document order: the accounts of the payment means
/// whose code (BT-81, UNTDID 4461) is `30` (credit transfer) or `58` (SEPA credit
/// transfer), the two BR-DE-23 and BR-61 name for BG-17 — UBL
/// `cac:PaymentMeans/cac:PayeeFinancialAccount/cbc:ID`, CII
/// `ram:SpecifiedTradeSettlementPaymentMeans/ram:PayeePartyCreditorFinancialAccount/ram:IBANID`
/// (or its `ram:ProprietaryID`). The reader's model holds one kind of means, the first
/// one read, so a direct debit or card listed first hides the credit transfer after it;
/// and an account under another code (a direct debit's) is not where to pay.
fn credit_transfer_accounts(doc: &roxmltree::Document<'_>) -> Vec<String> {
    fn child<'a, 'input>(
        n: roxmltree::Node<'a, 'input>,
        name: &str,
    ) -> Option<roxmltree::Node<'a, 'input>> {
        n.children()
            .find(|c| c.is_element() && c.tag_name().name() == name)
    }
    fn text_of(n: Option<roxmltree::Node<'_, '_>>) -> Option<String> {
        n.and_then(|n| n.text())
            .map(compact)
            .filter(|t| !t.is_empty())
    }
    let is_credit_transfer = |code: Option<String>| matches!(code.as_deref(), Some("30" | "58"));
    let mut accounts = Vec::new();
    for means in doc.descendants().filter(|n| n.is_element()) {
        match means.tag_name().name() {
            "PaymentMeans" if is_credit_transfer(text_of(child(means, "PaymentMeansCode"))) => {
                accounts.extend(
                    means
                        .children()
                        .filter(|c| c.tag_name().name() == "PayeeFinancialAccount")
                        .filter_map(|a| text_of(child(a, "ID"))),
                );
            }
            "SpecifiedTradeSettlementPaymentMeans"
                if is_credit_transfer(text_of(child(means, "TypeCode"))) =>
            {
                accounts.extend(
                    means
                        .children()
                        .filter(|c| c.tag_name().name() == "PayeePartyCreditorFinancialAccount")
                        .filter_map(|a| {
                            text_of(child(a, "IBANID"))
                                .or_else(|| text_of(child(a, "ProprietaryID")))
                        }),
                );
            }
            _ => {}
        }
    }
    accounts
}

fn to_extraction(
    i: &Invoice,
    mut source: EInvoiceSource,
    present: &PresentTotals,
    credit_transfers: Option<Vec<String>>,
) -> Extraction {
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
    // BT-84 of a credit transfer (BG-17): the accounts of the credit transfers the XML
    // lists ([`credit_transfer_accounts`]); without its parse, those the reader's model
    // holds.
    let accounts: Vec<String> = match credit_transfers {
        Some(accounts) if !accounts.is_empty() => accounts,
        _ => match i.payment.as_ref().and_then(|p| p.means.as_ref()) {
            Some(PaymentMeans::CreditTransfer(accounts)) => accounts
                .iter()
                .filter_map(|a| a.account_identifier.clone())
                .collect(),
            _ => Vec::new(),
        },
    };
    let iban = supplier_iban(
        accounts.iter().map(String::as_str),
        "BT-84",
        &mut source.findings,
    );
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
    let kind = document_type(
        i.type_code.as_ref().map(ToString::to_string).as_deref(),
        i.kind == en16931::invoice::DocumentKind::CreditNote,
        gross_total,
    );
    let preceding = i
        .preceding_invoices
        .first()
        .map(|p| p.reference.to_string().trim().to_owned())
        .filter(|r| !r.is_empty());
    let corrected = kind == DocumentType::Invoice
        && i.type_code
            .as_ref()
            .is_some_and(|c| c.to_string().trim() == CORRECTED_INVOICE);
    let mut e = Extraction {
        schema_version: crate::extract::SCHEMA_VERSION,
        extraction_successful: true,
        confidence: Confidence::High,
        missing_fields: Vec::new(),
        document_type: Some(kind),
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
        // BT-25: on a credit note the invoice it credits; on a corrected invoice (384)
        // the invoice it replaces; on any other invoice a citation of an earlier one.
        invoice_reference: preceding.clone().filter(|_| !corrected),
        replaces_invoice: preceding.filter(|_| corrected),
        line_items,
        field_confidence: Default::default(),
        einvoice: Some(source),
    };
    judge(&mut e);
    // A credit in substance (an invoice code, a negative BT-112) in the house convention:
    // the sizes. `einvoice.amount_due` and the other source amounts stay as the XML says.
    e.settle_credit_sign();
    e
}

/// The first of a credit transfer's account identifiers whose IBAN passes its check
/// digits (ISO 13616, mod 97), without spaces. One that looks like an IBAN and fails
/// them is never the supplier's IBAN (a payment would go astray): it is a finding,
/// named by `term` (the business term or element it was read from).
fn supplier_iban<'a>(
    ids: impl IntoIterator<Item = &'a str>,
    term: &str,
    findings: &mut Vec<String>,
) -> Option<String> {
    let mut valid = None;
    for id in ids.into_iter().map(compact) {
        if crate::extract::rules::ids::iban_is_valid(&id) {
            valid = valid.or(Some(id));
        } else if looks_like_an_iban(&id) {
            findings.push(format!(
                "{term} {id}: the IBAN fails its check digits (ISO 13616); not taken as the supplier's IBAN"
            ));
        }
    }
    valid
}

/// What an e-invoice's reading says of its own fields: every filled field is `high`
/// (the XML is exact), and the [`CORE_FIELDS`] it lacks are listed as missing.
fn judge(e: &mut Extraction) {
    let json = serde_json::to_value(&*e).expect("an Extraction always serializes");
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
}

/// Whether a file name or key is an XML upload (`.xml`, any case).
pub fn is_xml_name(name: &str) -> bool {
    name.rsplit_once('.')
        .is_some_and(|(_, ext)| ext.eq_ignore_ascii_case("xml"))
}

/// The content type an XML upload is stored with.
pub const XML_MIME_TYPE: &str = "application/xml";

/// Compares a hybrid's XML reading with what the page says (the page path's extraction)
/// on the number and the total — and, for a partial profile ([`is_partial_profile`]),
/// on the date, the seller's VAT id, the currency, the net and the VAT too — and records every disagreement in the XML reading's
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
    // Both readings are in the one sign convention (`Extraction::settle_credit_sign`):
    // a credit note printed with minus signs and its positive 381 agree.
    if let (Some(x), Some(p)) = (xml.total, page.total)
        && (x - p).abs() >= 0.005
    {
        disagreements.push(format!("total: the XML says {x:.2}, the page {p:.2}"));
    }
    // A MINIMUM or BASIC WL XML is not the invoice: its page is. Whatever else both
    // carry is checked against the page too.
    if is_partial_profile(xml) {
        let id = |v: &Option<String>| v.as_deref().map(super::normalise_id);
        for (field, x, p) in [
            (
                "invoice_date",
                xml.invoice_date.map(|d| d.to_string()),
                page.invoice_date.map(|d| d.to_string()),
            ),
            (
                "supplier_vat_id",
                id(&xml.supplier_vat_id),
                id(&page.supplier_vat_id),
            ),
            ("currency", xml.currency.clone(), page.currency.clone()),
        ] {
            if let (Some(x), Some(p)) = (x, p)
                && x != p
            {
                disagreements.push(format!("{field}: the XML says {x:?}, the page {p:?}"));
            }
        }
        for (field, x, p) in [
            ("subtotal", xml.subtotal, page.subtotal),
            ("vat_amount", xml.vat_amount, page.vat_amount),
        ] {
            if let (Some(x), Some(p)) = (x, p)
                && (x - p).abs() >= 0.005
            {
                disagreements.push(format!("{field}: the XML says {x:.2}, the page {p:.2}"));
            }
        }
    }
    let disagree = !disagreements.is_empty();
    if let Some(source) = &mut xml.einvoice {
        source.disagreements.extend(disagreements);
    }
    disagree
}

/// Whether the XML is of a profile that is not a full invoice: ZUGFeRD / Factur-X
/// MINIMUM and BASIC WL, and every ZUGFeRD 1.0 profile (the recommendation `undefined`:
/// not an EN 16931 invoice). Its page is the legal invoice; the XML carries the totals
/// and the parties, and (ZUGFeRD 1.0) lines no rule set has checked.
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

mod zugferd1;

#[cfg(test)]
mod payload_tests;
#[cfg(test)]
mod tests;
