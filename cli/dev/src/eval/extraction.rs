//! Measuring an extractor on labelled documents: `docflow eval extraction DIR`.
//!
//! A labelled document is a file the pipeline accepts (`.pdf`, `.txt`, `.png`, `.jpg`,
//! `.xml`) with `<file name without extension>.json` beside it, holding the expected values
//! under the contract's field names. Only the keys present are scored; `null` expects
//! the field to be empty. Each document is transcribed natively and extracted by the
//! chosen provider, exactly as ingestion does (an XML e-invoice, and a PDF carrying one,
//! is read from its XML first: the document's `model` is then `einvoice`), and every expected field is compared
//! after normalisation ([`field_matches`]):
//!
//! | field | compared as |
//! |---|---|
//! | `subtotal`, `vat_amount`, `total` | amounts rounded to 2 decimals |
//! | `invoice_date`, `due_date` | ISO dates |
//! | `invoice_number`, `po_reference`, `delivery_note_reference`, `invoice_reference`, `supplier_vat_id`, `supplier_iban` | ids: letters and digits only, upper case (`FV/2024/03-15` = `FV20240315`) |
//! | `supplier_name`, `customer_name`, `supplier_address` | names, by the fuzzy rule of [`names_match`] |
//! | `currency`, `document_type` | exact, case-insensitive |
//! | `line_items` | same number of items, each amount equal to 2 decimals |
//!
//! A document whose extraction failed (an LLM error after its retries) counts every
//! expected field as missed and is reported with the error; the run goes on.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use chrono::NaiveDate;
use serde::Serialize;
use serde_json::{Map, Value};

use docflow::extract::{Extraction, Extractor, einvoice, normalise_id};
use docflow::ocr::{FileKind, Transcriber};

/// The fields the eval knows how to score, in report order.
pub const SCORED_FIELDS: [&str; 19] = [
    "document_type",
    "invoice_number",
    "invoice_date",
    "due_date",
    "supplier_name",
    "supplier_address",
    "supplier_vat_id",
    "supplier_iban",
    "customer_name",
    "currency",
    "subtotal",
    "vat_amount",
    "total",
    "po_reference",
    "delivery_note_reference",
    "invoice_reference",
    "replaces_invoice",
    "line_items",
    "extraction_successful",
];

/// One expected field of one document and what the extractor gave.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FieldResult {
    pub field: String,
    pub expected: Value,
    pub actual: Value,
    pub correct: bool,
}

/// One labelled document's outcome.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DocumentResult {
    /// The file name, relative to the evaluated directory.
    pub file: String,
    pub fields: Vec<FieldResult>,
    /// Set when transcription or extraction failed.
    pub error: Option<String>,
    pub model: Option<String>,
    pub input_tokens: Option<i64>,
    pub output_tokens: Option<i64>,
    /// Transcription plus extraction, wall clock.
    pub elapsed_ms: u64,
    pub passes_quality_gate: bool,
    pub needs_human_review: bool,
}

impl DocumentResult {
    /// The fields this document got wrong.
    pub fn misses(&self) -> impl Iterator<Item = &FieldResult> {
        self.fields.iter().filter(|f| !f.correct)
    }
}

/// Accuracy of one field over the documents that label it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FieldAccuracy {
    pub field: String,
    pub correct: usize,
    pub scored: usize,
}

impl FieldAccuracy {
    pub fn accuracy(&self) -> f64 {
        if self.scored == 0 {
            0.0
        } else {
            self.correct as f64 / self.scored as f64
        }
    }
}

/// USD per million tokens, to turn token counts into a cost.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Pricing {
    pub input_per_mtok: f64,
    pub output_per_mtok: f64,
}

impl Pricing {
    /// List prices of a few well-known models when this was written (override them
    /// with `--price-input`/`--price-output`); `None` for any other model.
    pub fn known(model: &str) -> Option<Pricing> {
        let m = model.to_ascii_lowercase();
        let (input, output) = if m.starts_with("claude-opus-4") {
            (15.0, 75.0)
        } else if m.starts_with("claude-sonnet-4") || m.starts_with("claude-3-7-sonnet") {
            (3.0, 15.0)
        } else if m.starts_with("claude-haiku-4") {
            (1.0, 5.0)
        } else if m.starts_with("gpt-4o-mini") {
            (0.15, 0.60)
        } else if m.starts_with("gpt-4o") {
            (2.50, 10.0)
        } else if m.starts_with("gpt-4.1-mini") {
            (0.40, 1.60)
        } else {
            return None;
        };
        Some(Pricing {
            input_per_mtok: input,
            output_per_mtok: output,
        })
    }

    pub fn cost(&self, input_tokens: i64, output_tokens: i64) -> f64 {
        (input_tokens as f64 * self.input_per_mtok + output_tokens as f64 * self.output_per_mtok)
            / 1_000_000.0
    }
}

/// The whole run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub provider: String,
    pub documents: Vec<DocumentResult>,
    /// Per field, in [`SCORED_FIELDS`] order; fields no document labels are left out.
    pub fields: Vec<FieldAccuracy>,
    pub correct: usize,
    pub scored: usize,
    pub input_tokens: Option<i64>,
    pub output_tokens: Option<i64>,
    /// USD, when the model's price is known or given.
    pub cost_usd: Option<f64>,
    pub pricing: Option<Pricing>,
    pub mean_ms_per_document: u64,
}

impl Report {
    /// Builds the summary from the documents' results.
    pub fn new(provider: &str, documents: Vec<DocumentResult>, pricing: Option<Pricing>) -> Report {
        let mut per_field: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
        for doc in &documents {
            for f in &doc.fields {
                let key = SCORED_FIELDS
                    .iter()
                    .find(|k| **k == f.field)
                    .copied()
                    .unwrap_or("unknown");
                let entry = per_field.entry(key).or_default();
                entry.0 += usize::from(f.correct);
                entry.1 += 1;
            }
        }
        let fields: Vec<FieldAccuracy> = SCORED_FIELDS
            .iter()
            .filter_map(|k| {
                per_field.get(k).map(|(c, s)| FieldAccuracy {
                    field: (*k).to_owned(),
                    correct: *c,
                    scored: *s,
                })
            })
            .collect();
        let correct = fields.iter().map(|f| f.correct).sum();
        let scored = fields.iter().map(|f| f.scored).sum();
        let sum = |get: fn(&DocumentResult) -> Option<i64>| {
            let values: Vec<i64> = documents.iter().filter_map(get).collect();
            (!values.is_empty()).then(|| values.iter().sum())
        };
        let input_tokens = sum(|d| d.input_tokens);
        let output_tokens = sum(|d| d.output_tokens);
        let pricing = pricing.or_else(|| {
            documents
                .iter()
                .find_map(|d| d.model.as_deref().and_then(Pricing::known))
        });
        let cost_usd = match (pricing, input_tokens, output_tokens) {
            (Some(p), Some(i), o) => Some(p.cost(i, o.unwrap_or(0))),
            _ => None,
        };
        let mean_ms_per_document = if documents.is_empty() {
            0
        } else {
            documents.iter().map(|d| d.elapsed_ms).sum::<u64>() / documents.len() as u64
        };
        Report {
            provider: provider.to_owned(),
            documents,
            fields,
            correct,
            scored,
            input_tokens,
            output_tokens,
            cost_usd,
            pricing,
            mean_ms_per_document,
        }
    }

    /// Correct fields over scored fields, 0–1.
    pub fn accuracy(&self) -> f64 {
        if self.scored == 0 {
            0.0
        } else {
            self.correct as f64 / self.scored as f64
        }
    }

    pub fn field(&self, name: &str) -> Option<&FieldAccuracy> {
        self.fields.iter().find(|f| f.field == name)
    }

    /// The human-readable table: per field accuracy, per document misses, tokens,
    /// cost and time.
    pub fn render(&self) -> String {
        use std::fmt::Write as _;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "extraction eval: provider {}, {} documents",
            self.provider,
            self.documents.len()
        );
        let _ = writeln!(out, "\n{:<26} {:>9} {:>9}", "field", "correct", "accuracy");
        for f in &self.fields {
            let _ = writeln!(
                out,
                "{:<26} {:>4}/{:<4} {:>8.1}%",
                f.field,
                f.correct,
                f.scored,
                100.0 * f.accuracy()
            );
        }
        let _ = writeln!(
            out,
            "{:<26} {:>4}/{:<4} {:>8.1}%",
            "all fields",
            self.correct,
            self.scored,
            100.0 * self.accuracy()
        );
        let _ = writeln!(out, "\nper document");
        for d in &self.documents {
            let tokens = match (d.input_tokens, d.output_tokens) {
                (Some(i), Some(o)) => format!("  {i} in / {o} out tokens"),
                _ => String::new(),
            };
            let gate = if d.passes_quality_gate {
                ""
            } else {
                "  [fails the quality gate]"
            };
            let _ = writeln!(
                out,
                "  {}  [{}]  {}/{} fields  {} ms{tokens}{gate}",
                d.file,
                d.model.as_deref().unwrap_or("failed"),
                d.fields.iter().filter(|f| f.correct).count(),
                d.fields.len(),
                d.elapsed_ms
            );
            if let Some(error) = &d.error {
                let _ = writeln!(out, "      error: {error}");
            }
            for miss in d.misses() {
                let _ = writeln!(
                    out,
                    "      {}: expected {}, got {}",
                    miss.field, miss.expected, miss.actual
                );
            }
        }
        let _ = writeln!(out);
        match (self.input_tokens, self.output_tokens) {
            (Some(i), Some(o)) => {
                let _ = write!(out, "tokens: {i} in, {o} out");
                match self.cost_usd {
                    Some(cost) => {
                        let per_doc = cost / self.documents.len().max(1) as f64;
                        let _ = writeln!(out, "; cost ${cost:.4} (${per_doc:.5} per document)");
                    }
                    None => {
                        let _ = writeln!(
                            out,
                            "; cost unknown for this model (give --price-input and --price-output, USD per million tokens)"
                        );
                    }
                }
            }
            _ => {
                let _ = writeln!(out, "tokens: none (no model was called)");
            }
        }
        let _ = writeln!(out, "time: {} ms per document", self.mean_ms_per_document);
        out
    }
}

/// The labelled documents in `dir`: every supported file with a `.json` beside it,
/// sorted by name. Other files are ignored.
pub fn labelled_documents(dir: &Path) -> anyhow::Result<Vec<(PathBuf, PathBuf)>> {
    let mut out = Vec::new();
    let entries = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read directory {}", dir.display()))?;
    for entry in entries {
        let path = entry?.path();
        let is_doc = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| FileKind::from_path(n).is_some() || einvoice::is_xml_name(n));
        let label = path.with_extension("json");
        if is_doc && label.is_file() {
            out.push((path, label));
        }
    }
    out.sort();
    Ok(out)
}

/// Transcribes and extracts every labelled document in `dir` with `extractor` and
/// scores it. Fails only when the directory or a label file cannot be read (or a label
/// is not a JSON object); a document that cannot be transcribed or extracted is
/// reported with its error.
pub async fn evaluate_dir(
    dir: &Path,
    provider: &str,
    extractor: &Extractor,
    pricing: Option<Pricing>,
) -> anyhow::Result<Report> {
    evaluate_dir_with(dir, provider, extractor, pricing, EInvoices::Read).await
}

/// Whether the eval reads the XML of e-invoices, as ingestion does, or only their page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EInvoices {
    /// As ingestion: an XML upload and a hybrid's payload are read exactly.
    Read,
    /// The page path only, as if the hybrid's XML were stripped: measures the page
    /// extractor on layouts the XML labels (`--page-only`). XML uploads still need the
    /// reader.
    PageOnly,
}

/// [`evaluate_dir`], choosing whether hybrids are read from their XML.
pub async fn evaluate_dir_with(
    dir: &Path,
    provider: &str,
    extractor: &Extractor,
    pricing: Option<Pricing>,
    einvoices: EInvoices,
) -> anyhow::Result<Report> {
    let documents = labelled_documents(dir)?;
    if documents.is_empty() {
        anyhow::bail!(
            "{}: no labelled documents (a .pdf/.txt/.png/.jpg/.xml with a .json of expected fields beside it)",
            dir.display()
        );
    }
    let mut results = Vec::new();
    for (file, label) in documents {
        let expected: Map<String, Value> = serde_json::from_slice(
            &std::fs::read(&label).with_context(|| format!("cannot read {}", label.display()))?,
        )
        .with_context(|| {
            format!(
                "{} is not a JSON object of expected fields",
                label.display()
            )
        })?;
        let name = file
            .strip_prefix(dir)
            .unwrap_or(&file)
            .to_string_lossy()
            .into_owned();
        let started = Instant::now();
        let outcome = extract_file(&file, extractor, einvoices).await;
        let elapsed = started.elapsed();
        results.push(score_document(&name, &expected, outcome, elapsed));
    }
    Ok(Report::new(provider, results, pricing))
}

/// What one file gave: the extraction with its model and tokens, or the error.
pub type Outcome = Result<(Extraction, String, Option<i32>, Option<i32>), String>;

async fn extract_file(file: &Path, extractor: &Extractor, einvoices: EInvoices) -> Outcome {
    let name = file.to_string_lossy();
    let bytes = std::fs::read(file).map_err(|e| format!("cannot read: {e}"))?;
    if einvoice::is_xml_name(&name) {
        let mut extraction = einvoice::read(&bytes).map_err(|e| e.to_string())?;
        einvoice::unchecked_partial_profile(&mut extraction, "an XML upload has no page");
        return Ok((extraction, "einvoice".into(), None, None));
    }
    let kind = FileKind::from_path(&name).ok_or_else(|| "unsupported file type".to_owned())?;
    let mut fallback = None;
    if kind == FileKind::Pdf && einvoices == EInvoices::Read {
        match einvoice::hybrid(einvoice::read(&bytes)) {
            Ok(extraction) => return Ok((extraction, "einvoice".into(), None, None)),
            Err(einvoice::EInvoiceError::NoPayload(_)) => {}
            Err(e) => fallback = Some(e),
        }
    }
    let transcription = Transcriber::Native
        .transcribe(kind, &bytes)
        .await
        .map_err(|e| format!("transcription failed: {e}"))?;
    let run = extractor
        .extract(&transcription.text)
        .await
        .map_err(|e| format!("extraction failed: {e}"))?;
    let mut run = run;
    if let Some(e) = &fallback {
        run.extraction.einvoice = Some(einvoice::fallback_source(e, &run.model));
    }
    Ok((
        run.extraction,
        run.model,
        run.input_tokens,
        run.output_tokens,
    ))
}

/// Scores one document's outcome against its expected fields.
pub fn score_document(
    file: &str,
    expected: &Map<String, Value>,
    outcome: Outcome,
    elapsed: Duration,
) -> DocumentResult {
    let (actual, error, model, input_tokens, output_tokens) = match outcome {
        Ok((extraction, model, i, o)) => (
            Some(extraction),
            None,
            Some(model),
            i.map(i64::from),
            o.map(i64::from),
        ),
        Err(e) => (None, Some(e), None, None, None),
    };
    let actual_json = actual
        .as_ref()
        .map(|e| serde_json::to_value(e).expect("an Extraction always serializes"));
    let fields = SCORED_FIELDS
        .iter()
        .filter_map(|field| {
            let want = expected.get(*field)?;
            let got = actual_json
                .as_ref()
                .and_then(|a| a.get(*field))
                .cloned()
                .unwrap_or(Value::Null);
            let correct = actual_json.is_some() && field_matches(field, want, &got);
            Some(FieldResult {
                field: (*field).to_owned(),
                expected: want.clone(),
                actual: got,
                correct,
            })
        })
        .collect();
    DocumentResult {
        file: file.to_owned(),
        fields,
        error,
        model,
        input_tokens,
        output_tokens,
        elapsed_ms: u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
        passes_quality_gate: actual.as_ref().is_some_and(Extraction::passes_quality_gate),
        needs_human_review: actual.as_ref().is_none_or(Extraction::needs_human_review),
    }
}

/// Whether an extracted value equals the expected one after the field's normalisation
/// (see the module docs). `null` matches only an empty value.
pub fn field_matches(field: &str, expected: &Value, actual: &Value) -> bool {
    let empty = |v: &Value| match v {
        Value::Null => true,
        Value::String(s) => s.trim().is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    };
    if empty(expected) || empty(actual) {
        return empty(expected) && empty(actual);
    }
    match field {
        "subtotal" | "vat_amount" | "total" => match (amount(expected), amount(actual)) {
            (Some(a), Some(b)) => (a - b).abs() < 0.005,
            _ => false,
        },
        "invoice_date" | "due_date" => match (date(expected), date(actual)) {
            (Some(a), Some(b)) => a == b,
            _ => false,
        },
        "invoice_number"
        | "po_reference"
        | "delivery_note_reference"
        | "invoice_reference"
        | "replaces_invoice"
        | "supplier_vat_id"
        | "supplier_iban" => match (expected.as_str(), actual.as_str()) {
            (Some(a), Some(b)) => normalise_id(a) == normalise_id(b),
            _ => false,
        },
        "supplier_name" | "customer_name" | "supplier_address" => {
            match (expected.as_str(), actual.as_str()) {
                (Some(a), Some(b)) => names_match(a, b),
                _ => false,
            }
        }
        "line_items" => match (expected.as_array(), actual.as_array()) {
            (Some(a), Some(b)) => {
                a.len() == b.len()
                    && a.iter().zip(b).all(|(x, y)| {
                        match (amount(&x["amount"]), amount(&y["amount"])) {
                            (Some(p), Some(q)) => (p - q).abs() < 0.005,
                            (None, None) => true,
                            _ => false,
                        }
                    })
            }
            _ => false,
        },
        _ => match (expected, actual) {
            (Value::String(a), Value::String(b)) => a.trim().eq_ignore_ascii_case(b.trim()),
            (a, b) => a == b,
        },
    }
}

fn amount(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn date(v: &Value) -> Option<NaiveDate> {
    NaiveDate::parse_from_str(v.as_str()?.trim(), "%Y-%m-%d").ok()
}

/// Legal forms and filler words that do not tell two companies apart.
const NAME_NOISE: [&str; 44] = [
    "gmbh",
    "mbh",
    "ag",
    "kg",
    "ohg",
    "gbr",
    "ug",
    "ek",
    "ev",
    "co",
    "cokg",
    "bv",
    "nv",
    "vof",
    "ltd",
    "limited",
    "llc",
    "llp",
    "inc",
    "incorporated",
    "corp",
    "corporation",
    "plc",
    "pty",
    "pvt",
    "private",
    "sa",
    "sas",
    "sarl",
    "srl",
    "spa",
    "sl",
    "sp",
    "z",
    "oo",
    "spzoo",
    "sc",
    "and",
    "und",
    "en",
    "et",
    "the",
    "de",
    "der",
];

/// The tokens of a name: lower case, accents folded, dots inside abbreviations
/// dropped (`B.V.` = `BV`), other punctuation a separator, legal forms left out.
pub fn name_tokens(name: &str) -> Vec<String> {
    let folded: String = name
        .chars()
        .flat_map(char::to_lowercase)
        .map(fold_accent)
        .filter(|c| *c != '.')
        .map(|c| if c.is_alphanumeric() { c } else { ' ' })
        .collect();
    folded
        .split_whitespace()
        .filter(|t| !NAME_NOISE.contains(t))
        .map(|t| t.replace('ß', "ss"))
        .collect()
}

fn fold_accent(c: char) -> char {
    match c {
        'à' | 'á' | 'â' | 'ã' | 'ä' | 'å' | 'ą' => 'a',
        'ç' | 'ć' | 'č' => 'c',
        'è' | 'é' | 'ê' | 'ë' | 'ę' | 'ě' => 'e',
        'ì' | 'í' | 'î' | 'ï' => 'i',
        'ł' => 'l',
        'ñ' | 'ń' | 'ň' => 'n',
        'ò' | 'ó' | 'ô' | 'õ' | 'ö' | 'ø' => 'o',
        'ś' | 'š' => 's',
        'ù' | 'ú' | 'û' | 'ü' | 'ů' => 'u',
        'ý' | 'ÿ' => 'y',
        'ź' | 'ż' | 'ž' => 'z',
        'ř' => 'r',
        other => other,
    }
}

/// The fuzzy rule for names: the two are the same name when, after [`name_tokens`]
/// (case, accents, punctuation and legal forms ignored), they have the same letters
/// once spaces are removed (`Haus-Technik` = `Haustechnik`), or their token sets
/// overlap by at least 75 % (Jaccard). A department, an attention line or a label
/// prefix added to the name makes it a different name.
pub fn names_match(expected: &str, actual: &str) -> bool {
    let a = name_tokens(expected);
    let b = name_tokens(actual);
    if a.is_empty() || b.is_empty() {
        return expected.trim().eq_ignore_ascii_case(actual.trim());
    }
    if a.concat() == b.concat() {
        return true;
    }
    let sa: std::collections::BTreeSet<&String> = a.iter().collect();
    let sb: std::collections::BTreeSet<&String> = b.iter().collect();
    let common = sa.intersection(&sb).count();
    let union = sa.union(&sb).count();
    common * 4 >= union * 3
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn amounts_match_to_the_cent_whatever_their_json_type() {
        assert!(field_matches("total", &json!(1234.5), &json!(1234.50)));
        assert!(field_matches("total", &json!("1234.50"), &json!(1234.5)));
        assert!(!field_matches("total", &json!(1234.5), &json!(1234.51)));
        assert!(!field_matches("total", &json!(1234.5), &Value::Null));
    }

    #[test]
    fn ids_match_without_separators_or_case() {
        assert!(field_matches(
            "invoice_number",
            &json!("FV/2024/03-15"),
            &json!("fv 2024 03 15")
        ));
        assert!(field_matches(
            "supplier_iban",
            &json!("DE89 3704 0044 0532 0130 00"),
            &json!("DE89370400440532013000")
        ));
        assert!(!field_matches(
            "invoice_number",
            &json!("2024-15"),
            &json!("2024-16")
        ));
    }

    #[test]
    fn null_expects_an_empty_field() {
        assert!(field_matches("po_reference", &Value::Null, &Value::Null));
        assert!(!field_matches("po_reference", &Value::Null, &json!("4711")));
        assert!(!field_matches("po_reference", &json!("4711"), &Value::Null));
    }

    #[test]
    fn names_ignore_case_accents_punctuation_and_legal_forms() {
        assert!(names_match("Müller Haustechnik GmbH", "MÜLLER HAUSTECHNIK"));
        assert!(names_match("Jansen B.V.", "Jansen BV"));
        assert!(names_match(
            "Zakład Usług Informatycznych Sp. z o.o.",
            "Zaklad Uslug Informatycznych sp. z o. o."
        ));
        assert!(names_match(
            "Haus-Technik Nord GmbH",
            "Haustechnik Nord GmbH"
        ));
    }

    #[test]
    fn a_label_prefix_a_department_or_another_company_is_a_different_name() {
        assert!(!names_match(
            "Acme Supplies Ltd",
            "Acme Supplies Ltd Accounts Department"
        ));
        assert!(!names_match("Globex Inc.", "Initech LLC"));
        assert!(!names_match("Dupont Services", "Vendeur : Dupont Services"));
    }

    #[test]
    fn dates_compare_as_iso_dates() {
        assert!(field_matches(
            "invoice_date",
            &json!("2024-03-05"),
            &json!("2024-03-05")
        ));
        assert!(!field_matches(
            "invoice_date",
            &json!("2024-03-05"),
            &json!("2024-05-03")
        ));
    }

    #[test]
    fn the_report_counts_per_field_and_prices_tokens() {
        let expected: Map<String, Value> =
            serde_json::from_value(json!({"total": 119.0, "currency": "EUR"})).unwrap();
        let mut extraction: Extraction =
            serde_json::from_str(r#"{"extraction_successful": true, "confidence": "high"}"#)
                .unwrap();
        extraction.total = Some(119.0);
        extraction.currency = Some("USD".into());
        let doc = score_document(
            "a.txt",
            &expected,
            Ok((
                extraction,
                "claude-sonnet-4-5".into(),
                Some(1000),
                Some(200),
            )),
            Duration::from_millis(5),
        );
        let failed = score_document("b.txt", &expected, Err("boom".into()), Duration::ZERO);

        let report = Report::new("anthropic", vec![doc, failed], None);

        assert_eq!(
            report.field("total").map(|f| (f.correct, f.scored)),
            Some((1, 2))
        );
        assert_eq!(
            report.field("currency").map(|f| (f.correct, f.scored)),
            Some((0, 2))
        );
        assert_eq!((report.correct, report.scored), (1, 4));
        assert_eq!(report.input_tokens, Some(1000));
        let cost = report.cost_usd.unwrap();
        assert!((cost - (1000.0 * 3.0 + 200.0 * 15.0) / 1e6).abs() < 1e-12);
        let table = report.render();
        assert!(
            table.contains("currency: expected \"EUR\", got \"USD\""),
            "{table}"
        );
        assert!(table.contains("error: boom"), "{table}");
    }
}
