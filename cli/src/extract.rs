//! `docflow extract`: the ingestion pipeline's transcription and extraction on one local
//! file.

use std::path::Path;

use anyhow::{Context as _, bail};
use docflow::extract::{Extraction, Extractor, einvoice};
use docflow::llm::{LlmClient, LlmSettings};
use docflow::ocr::{FileKind, Transcriber};
use docflow::settings::Env;

pub async fn run(file: &Path, provider: &str, json: bool, show_text: bool) -> anyhow::Result<()> {
    let name = file.to_string_lossy();
    let bytes = std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
    // A structured e-invoice is read exactly, before any transcription or provider.
    if einvoice::is_xml_name(&name) {
        let mut extraction =
            einvoice::read(&bytes).with_context(|| format!("{}", file.display()))?;
        einvoice::unchecked_partial_profile(&mut extraction, "an XML upload has no page");
        return show(&extraction, "einvoice", json);
    }
    let kind = FileKind::from_path(&name).with_context(|| {
        format!(
            "{}: unsupported file type; use .pdf, .txt, .png, .jpg or .xml",
            file.display()
        )
    })?;
    let mut fallback = None;
    if kind == FileKind::Pdf {
        // As ingestion: a payload a person would have to look at gives way to the page.
        match einvoice::hybrid(einvoice::read(&bytes)) {
            Ok(extraction) => return show(&extraction, "einvoice", json),
            Err(einvoice::EInvoiceError::NoPayload(_)) => {}
            Err(e) => {
                eprintln!(
                    "{}: the embedded e-invoice is not used: {e}; reading the page",
                    file.display()
                );
                fallback = Some(e);
            }
        }
    }
    let transcription = Transcriber::Native
        .transcribe(kind, &bytes)
        .await
        .with_context(|| format!("cannot transcribe {}", file.display()))?;
    if transcription.text.trim().is_empty() {
        bail!(
            "{}: no text found (native transcription reads text PDFs and text files; a scan needs OCR_PROVIDER=textract in the pipeline)",
            file.display()
        );
    }
    if show_text {
        println!("{}\n---", transcription.text);
    }
    let extractor = extractor(provider)?;
    let mut run = extractor
        .extract(&transcription.text)
        .await
        .context("extraction failed")?;
    if let Some(e) = &fallback {
        run.extraction.einvoice = Some(einvoice::fallback_source(e, &run.model));
    }
    show(&run.extraction, &run.model, json)
}

fn show(extraction: &Extraction, model: &str, json: bool) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(extraction)?);
    } else {
        print_summary(extraction, model);
    }
    Ok(())
}

pub(crate) fn extractor(provider: &str) -> anyhow::Result<Extractor> {
    if provider == "rules" {
        return Ok(Extractor::Rules);
    }
    // The provider comes from the flag; the rest of the LLM_* settings from the environment.
    let settings = LlmSettings::from_env(&Env::new(|var| {
        if var == "LLM_PROVIDER" {
            Some(provider.to_owned())
        } else {
            std::env::var(var).ok()
        }
    }))?;
    let key_var = if provider == "anthropic" {
        "ANTHROPIC_API_KEY"
    } else {
        "OPENAI_API_KEY"
    };
    let key = std::env::var(key_var)
        .ok()
        .filter(|k| !k.is_empty())
        .map(Into::into);
    if key.is_none() && provider == "anthropic" {
        bail!("--provider anthropic needs ANTHROPIC_API_KEY in the environment");
    }
    let client = LlmClient::new(&settings, key)?.context("no LLM provider configured")?;
    Ok(Extractor::Llm(client))
}

fn print_summary(e: &Extraction, model: &str) {
    let show = |v: Option<String>| v.unwrap_or_else(|| "—".into());
    let amount = |v: Option<f64>| v.map(|a| format!("{a:.2}"));
    println!(
        "extracted by {model}: successful={} confidence={:?}",
        e.extraction_successful, e.confidence
    );
    let rows = [
        (
            "document_type",
            e.document_type.map(|k| k.as_str().to_owned()),
        ),
        ("invoice_number", e.invoice_number.clone()),
        ("invoice_date", e.invoice_date.map(|d| d.to_string())),
        ("due_date", e.due_date.map(|d| d.to_string())),
        ("supplier_name", e.supplier_name.clone()),
        ("supplier_vat_id", e.supplier_vat_id.clone()),
        ("supplier_iban", e.supplier_iban.clone()),
        ("customer_name", e.customer_name.clone()),
        ("currency", e.currency.clone()),
        ("subtotal", amount(e.subtotal)),
        ("vat_amount", amount(e.vat_amount)),
        ("total", amount(e.total)),
        ("po_reference", e.po_reference.clone()),
        ("delivery_note_reference", e.delivery_note_reference.clone()),
        ("invoice_reference", e.invoice_reference.clone()),
    ];
    for (name, value) in rows {
        println!("  {name:<24} {}", show(value));
    }
    for item in &e.line_items {
        println!(
            "  line: {} | qty {} | unit {} | amount {}",
            item.description,
            show(item.quantity.map(|q| q.to_string())),
            show(amount(item.unit_price)),
            show(amount(item.amount))
        );
    }
    if !e.missing_fields.is_empty() {
        println!("  missing: {}", e.missing_fields.join(", "));
    }
    if let Some(source) = &e.einvoice {
        let show = |v: &Option<String>| v.clone().unwrap_or_else(|| "—".into());
        println!(
            "  e-invoice: {} | {} | type {} | buyer reference {}",
            show(&source.syntax),
            show(&source.profile),
            show(&source.type_code),
            show(&source.buyer_reference)
        );
        if let Some(reason) = &source.fallback_reason {
            println!("  fell back to the page: {reason}");
        }
        for finding in source.findings.iter().chain(&source.disagreements) {
            println!("  finding: {finding}");
        }
    }
}
