//! `docflow extract`: the ingestion pipeline's transcription and extraction on one local
//! file.

use std::path::Path;

use anyhow::{Context as _, bail};
use docflow::extract::{Extraction, Extractor};
use docflow::llm::{LlmClient, LlmSettings};
use docflow::ocr::{FileKind, Transcriber};
use docflow::settings::Env;

pub async fn run(file: &Path, provider: &str, json: bool, show_text: bool) -> anyhow::Result<()> {
    let kind = FileKind::from_path(&file.to_string_lossy()).with_context(|| {
        format!(
            "{}: unsupported file type; use .pdf, .txt, .png or .jpg",
            file.display()
        )
    })?;
    let bytes = std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
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
    let run = extractor
        .extract(&transcription.text)
        .await
        .context("extraction failed")?;
    if json {
        println!("{}", serde_json::to_string_pretty(&run.extraction)?);
    } else {
        print_summary(&run.extraction, &run.model);
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
}
