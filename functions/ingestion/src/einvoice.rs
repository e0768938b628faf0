//! Structured e-invoices before any OCR or LLM (`docflow::extract::einvoice`): an XML
//! upload is read exactly (a broken rule about its money or parties sends it to a
//! person with what was read kept), or fails permanently when it cannot be parsed; a
//! PDF carrying an EN 16931 payload is read from it, checked against its page, or falls
//! back to the page path with the reason recorded.

use anyhow::anyhow;
use bytes::Bytes;
use docflow::Failure;
use docflow::extract::ExtractionRun;
use docflow::extract::einvoice::{self, EInvoiceError, EInvoiceSource};
use docflow::ocr::{has_usable_text, on_cpu, text_layer};
use docflow::telemetry::metrics;

/// What the e-invoice reader decided for one file.
pub enum Route {
    /// The fields are the XML's: complete with this run (no transcription, no gate).
    Read(Box<ExtractionRun>),
    /// Not an e-invoice: the page path, as before. `Some` when the PDF carried one that
    /// could not be used; its reason is stored with the page path's extraction.
    PagePath(Option<EInvoiceError>),
}

fn run_of(extraction: docflow::extract::Extraction) -> ExtractionRun {
    ExtractionRun {
        extraction,
        input_tokens: None,
        output_tokens: None,
        model: "einvoice".into(),
    }
}

/// The e-invoice reader on `bytes`, in the parsing sandbox. A file the reader cannot
/// finish (it needs more than the memory budget, or the sandbox's child died on it) is
/// [`EInvoiceError::Unreadable`]: an XML upload fails with it, a PDF falls back to its
/// page. A sandbox that cannot run a child is transient.
async fn read(
    bytes: Bytes,
) -> Result<Result<docflow::extract::Extraction, EInvoiceError>, Failure> {
    match einvoice::read_untrusted(bytes).await {
        Ok(read) => Ok(read),
        Err(e) if docflow::retry::Classify::is_transient(&e) => Err(Failure::transient(anyhow!(
            "the e-invoice reader did not finish: {e}"
        ))),
        Err(e) => Ok(Err(EInvoiceError::Unreadable(e.to_string()))),
    }
}

/// An XML upload: read exactly (to review when a rule about its money or parties
/// failed), or a permanent failure saying why it cannot be read.
pub async fn xml(key: &str, bytes: Bytes) -> Result<ExtractionRun, Failure> {
    match read(bytes).await? {
        Ok(mut extraction) => {
            einvoice::unchecked_partial_profile(&mut extraction, "an XML upload has no page");
            metrics::count_by(
                metrics::dimension::KIND,
                "xml",
                metrics::ingestion::EINVOICES_READ,
                1,
            );
            Ok(run_of(extraction))
        }
        Err(e) => Err(Failure::permanent(anyhow!("XML upload {key}: {e}"))),
    }
}

/// A PDF: its EN 16931 payload when it has a valid one (compared with the page's text
/// layer on the number and the total), else the page path.
pub async fn pdf(key: &str, bytes: Bytes) -> Result<Route, Failure> {
    // A hybrid's XML that a person would have to look at: its page is read instead.
    let mut extraction = match einvoice::hybrid(read(bytes.clone()).await?) {
        Ok(extraction) => extraction,
        Err(EInvoiceError::NoPayload(_)) => return Ok(Route::PagePath(None)),
        Err(e) => {
            tracing::warn!(key, reason = %e, "the PDF's e-invoice is not usable; reading the page instead");
            metrics::count(metrics::ingestion::EINVOICE_FALLBACKS, 1);
            return Ok(Route::PagePath(Some(e)));
        }
    };
    // The page, read as the page path would read it (its text layer and the rules: no OCR,
    // no LLM). A page that cannot be read is no disagreement, but a partial profile's XML
    // then goes unchecked.
    let mut compared = false;
    if let Ok(pages) = text_layer(bytes).await {
        let text = pages.join("\n");
        if has_usable_text(&text) {
            let needs = docflow::extract::rules::job_bytes(text.len());
            let page = on_cpu(needs, move || docflow::extract::rules::extract(&text))
                .await
                .ok();
            compared = page.is_some();
            if let Some(page) = page
                && einvoice::compare_with_page(&mut extraction, &page)
            {
                let found = extraction
                    .einvoice
                    .as_ref()
                    .map(|s| s.disagreements.join("; "))
                    .unwrap_or_default();
                tracing::warn!(key, disagreements = %found, "the page and the XML of a hybrid disagree; the XML is kept");
                metrics::count(metrics::ingestion::EINVOICE_DISAGREEMENTS, 1);
            }
        }
    }
    if !compared {
        einvoice::unchecked_partial_profile(
            &mut extraction,
            "its page has no text to check it against",
        );
    }
    metrics::count_by(
        metrics::dimension::KIND,
        "pdf",
        metrics::ingestion::EINVOICES_READ,
        1,
    );
    Ok(Route::Read(Box::new(run_of(extraction))))
}

/// Records why a hybrid's XML was not used on the page path's extraction.
pub fn note_fallback(run: &mut ExtractionRun, error: &EInvoiceError) {
    let source: EInvoiceSource = einvoice::fallback_source(error, &run.model);
    run.extraction.einvoice = Some(source);
}
