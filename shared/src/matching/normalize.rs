//! Normalisation of the fields matching compares: the counterparty (name, VAT id, IBAN),
//! the references (PO, invoice and delivery note numbers) and the searchable text.
//!
//! Pure functions: the same structured data always gives the same normalised fields, so
//! persisting them before the write transaction is safe — a retry writes the same values.

use serde_json::Value;

/// Legal-form words dropped from the end of a company name ("Müller GmbH & Co. KG" →
/// "mueller"). Compared after lower-casing, umlaut folding and removal of dots, so
/// "G.m.b.H." and "Inc." are found as "gmbh" and "inc".
const LEGAL_FORMS: &[&str] = &[
    "gmbh",
    "mbh",
    "ag",
    "kg",
    "kgaa",
    "ohg",
    "gbr",
    "ug",
    "haftungsbeschraenkt",
    "ek",
    "ev",
    "se",
    "co",
    "ltd",
    "limited",
    "plc",
    "llp",
    "inc",
    "incorporated",
    "llc",
    "corp",
    "corporation",
    "company",
    "sa",
    "sas",
    "sarl",
    "srl",
    "spa",
    "bv",
    "nv",
    "ab",
    "as",
    "oy",
];

/// The counterparty's name for comparison: lower case, German umlauts and ß folded
/// (ä → ae), punctuation removed, whitespace collapsed, trailing legal forms dropped.
/// `None` when nothing is left.
pub fn normalize_name(raw: &str) -> Option<String> {
    let mut folded = String::with_capacity(raw.len());
    for c in raw.chars().flat_map(char::to_lowercase) {
        match c {
            'ä' => folded.push_str("ae"),
            'ö' => folded.push_str("oe"),
            'ü' => folded.push_str("ue"),
            'ß' => folded.push_str("ss"),
            'à' | 'á' | 'â' | 'ã' | 'å' => folded.push('a'),
            'è' | 'é' | 'ê' | 'ë' => folded.push('e'),
            'ì' | 'í' | 'î' | 'ï' => folded.push('i'),
            'ò' | 'ó' | 'ô' | 'õ' | 'ø' => folded.push('o'),
            'ù' | 'ú' | 'û' => folded.push('u'),
            'ç' => folded.push('c'),
            'ñ' => folded.push('n'),
            // Dots join abbreviations ("G.m.b.H.", "Inc.") instead of splitting them.
            '.' => {}
            c if c.is_alphanumeric() => folded.push(c),
            _ => folded.push(' '),
        }
    }
    let mut words: Vec<&str> = folded.split_whitespace().collect();
    // Keep at least one word: a company called "AG" stays "ag" rather than vanishing.
    while words.len() > 1 && LEGAL_FORMS.contains(words.last().expect("non-empty")) {
        words.pop();
    }
    let name = words.join(" ");
    (!name.is_empty()).then_some(name)
}

/// A VAT id for comparison: upper case, spaces, dots and dashes removed ("de 123.456.789"
/// → "DE123456789"). `None` when fewer than 4 characters remain.
pub fn normalize_vat_id(raw: &str) -> Option<String> {
    let vat: String = raw
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_uppercase())
        .collect();
    (vat.len() >= 4).then_some(vat)
}

/// An IBAN for comparison: upper case without spaces. `None` unless it has the IBAN
/// shape (country letters, check digits, 15–34 characters in all).
pub fn normalize_iban(raw: &str) -> Option<String> {
    let iban: String = raw
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '-')
        .map(|c| c.to_ascii_uppercase())
        .collect();
    let bytes = iban.as_bytes();
    let shaped = (15..=34).contains(&iban.len())
        && bytes[..2].iter().all(u8::is_ascii_uppercase)
        && bytes[2..4].iter().all(u8::is_ascii_digit)
        && bytes.iter().all(u8::is_ascii_alphanumeric);
    shaped.then_some(iban)
}

/// A document reference for comparison: upper case, separators removed, leading zeros
/// of every digit run removed ("PO-000123" → "PO123", "2024/0042" → "202442").
/// Letter prefixes are kept: "INV-1001" and "PO-1001" name different documents.
/// `None` for fewer than 3 characters (too short to link two documents on).
pub fn normalize_reference(raw: &str) -> Option<String> {
    let mut out = String::with_capacity(raw.len());
    // Within a digit run: whether a significant (non-leading-zero) digit was seen yet.
    let mut run: Option<bool> = None;
    let end_run = |run: &mut Option<bool>, out: &mut String| {
        // A run of zeros only ("LS-000-A") is still a number: keep one zero.
        if *run == Some(false) {
            out.push('0');
        }
        *run = None;
    };
    for c in raw.chars() {
        if c.is_ascii_digit() {
            let significant = run.get_or_insert(false);
            if c != '0' || *significant {
                *significant = true;
                out.push(c);
            }
        } else {
            end_run(&mut run, &mut out);
            if c.is_ascii_alphanumeric() {
                out.push(c.to_ascii_uppercase());
            }
        }
    }
    end_run(&mut run, &mut out);
    (out.len() >= 3).then_some(out)
}

/// Fields of the extraction contract (and common variants) that hold a reference to a
/// document: the document's own number and the numbers it cites. A purchase order's
/// number may sit in `invoice_number` or `po_reference`; all are treated alike.
const REFERENCE_FIELDS: &[&str] = &[
    "invoice_number",
    "po_reference",
    "po_number",
    "purchase_order_number",
    "purchase_order_reference",
    "order_number",
    "order_reference",
    "delivery_note_reference",
    "delivery_note_number",
    "document_number",
    "reference",
    "references",
];

/// The normalised fields of one document, as persisted on its row.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Normalized {
    pub counterparty: Option<String>,
    pub vat_id: Option<String>,
    pub iban: Option<String>,
    /// Sorted, without duplicates.
    pub references: Vec<String>,
    pub searchable_text: String,
}

/// Normalises the structured data of a document (extraction contract). The counterparty
/// is the supplier; `customer_name` is the fallback when no supplier was extracted.
pub fn normalize(structured: &Value) -> Normalized {
    let text = |key: &str| structured.get(key).and_then(Value::as_str);
    let counterparty = text("supplier_name")
        .and_then(normalize_name)
        .or_else(|| text("customer_name").and_then(normalize_name));
    let vat_id = text("supplier_vat_id").and_then(normalize_vat_id);
    let iban = text("supplier_iban").and_then(normalize_iban);

    let mut references: Vec<String> = REFERENCE_FIELDS
        .iter()
        .filter_map(|key| structured.get(*key))
        .flat_map(reference_values)
        .filter_map(|raw| normalize_reference(&raw))
        .collect();
    references.sort();
    references.dedup();

    let searchable_text = searchable_text(structured, &counterparty, &references);
    Normalized {
        counterparty,
        vat_id,
        iban,
        references,
        searchable_text,
    }
}

/// A reference field may be a string, a number, a list of either, or a string listing
/// several ("PO-1, PO-2").
fn reference_values(value: &Value) -> Vec<String> {
    match value {
        Value::String(s) => s
            .split([',', ';'])
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect(),
        Value::Number(n) => vec![n.to_string()],
        Value::Array(items) => items.iter().flat_map(reference_values).collect(),
        _ => Vec::new(),
    }
}

/// One line of text with what a person would search for: names, ids, references, dates,
/// amounts and line item descriptions. The future embedding search embeds this text.
fn searchable_text(structured: &Value, counterparty: &Option<String>, refs: &[String]) -> String {
    let mut parts: Vec<String> = Vec::new();
    for key in [
        "document_type",
        "supplier_name",
        "supplier_vat_id",
        "supplier_iban",
        "customer_name",
        "invoice_date",
        "currency",
        "total",
    ] {
        match structured.get(key) {
            Some(Value::String(s)) if !s.trim().is_empty() => parts.push(s.trim().to_owned()),
            Some(Value::Number(n)) => parts.push(n.to_string()),
            _ => {}
        }
    }
    parts.extend(counterparty.iter().cloned());
    parts.extend(refs.iter().cloned());
    if let Some(items) = structured.get("line_items").and_then(Value::as_array) {
        parts.extend(
            items
                .iter()
                .filter_map(|item| item.get("description").and_then(Value::as_str))
                .map(|d| d.trim().to_owned()),
        );
    }
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn name(raw: &str) -> Option<String> {
        normalize_name(raw)
    }

    #[test]
    fn gmbh_is_dropped() {
        assert_eq!(name("Acme GmbH").as_deref(), Some("acme"));
    }

    #[test]
    fn dotted_gmbh_is_dropped() {
        assert_eq!(name("Acme G.m.b.H.").as_deref(), Some("acme"));
    }

    #[test]
    fn ag_is_dropped() {
        assert_eq!(name("Siemens AG").as_deref(), Some("siemens"));
    }

    #[test]
    fn ltd_with_dot_is_dropped() {
        assert_eq!(name("Widgets Ltd.").as_deref(), Some("widgets"));
    }

    #[test]
    fn inc_after_a_comma_is_dropped() {
        assert_eq!(name("Globex, Inc.").as_deref(), Some("globex"));
    }

    #[test]
    fn gmbh_and_co_kg_is_dropped_entirely() {
        assert_eq!(
            name("Müller Logistik GmbH & Co. KG").as_deref(),
            Some("mueller logistik")
        );
    }

    #[test]
    fn ug_haftungsbeschraenkt_in_parentheses_is_dropped() {
        assert_eq!(
            name("Kaffeerösterei Süd UG (haftungsbeschränkt)").as_deref(),
            Some("kaffeeroesterei sued")
        );
    }

    #[test]
    fn case_and_whitespace_do_not_matter() {
        assert_eq!(
            name("  ACME   gmbh ").as_deref(),
            name("Acme GmbH").as_deref()
        );
    }

    #[test]
    fn umlauts_and_their_spelled_out_form_agree() {
        assert_eq!(name("Müller GmbH"), name("Mueller GmbH"));
    }

    #[test]
    fn eszett_is_folded() {
        assert_eq!(
            name("Großhandel Weiß AG").as_deref(),
            Some("grosshandel weiss")
        );
    }

    #[test]
    fn hyphens_and_ampersands_separate_words() {
        assert_eq!(
            name("Hewlett-Packard & Partner").as_deref(),
            Some("hewlett packard partner")
        );
    }

    #[test]
    fn legal_forms_inside_a_name_are_kept() {
        assert_eq!(name("AG Bau Nord GmbH").as_deref(), Some("ag bau nord"));
    }

    #[test]
    fn a_name_that_is_only_a_legal_form_is_kept() {
        assert_eq!(name("AG").as_deref(), Some("ag"));
    }

    #[test]
    fn an_empty_or_punctuation_only_name_is_none() {
        assert_eq!(name(""), None);
        assert_eq!(name(" - / . "), None);
    }

    #[test]
    fn llc_and_corporation_are_dropped() {
        assert_eq!(name("Initech LLC").as_deref(), Some("initech"));
        assert_eq!(name("Umbrella Corporation").as_deref(), Some("umbrella"));
    }

    #[test]
    fn accented_letters_are_folded() {
        assert_eq!(
            name("Société Générale S.A.").as_deref(),
            Some("societe generale")
        );
    }

    #[test]
    fn vat_ids_lose_spaces_dots_and_case() {
        assert_eq!(
            normalize_vat_id("de 123.456.789").as_deref(),
            Some("DE123456789")
        );
        assert_eq!(
            normalize_vat_id("ATU-1234 5678").as_deref(),
            Some("ATU12345678")
        );
        assert_eq!(normalize_vat_id("DE"), None);
    }

    #[test]
    fn ibans_lose_spaces_and_must_look_like_ibans() {
        assert_eq!(
            normalize_iban("de89 3704 0044 0532 0130 00").as_deref(),
            Some("DE89370400440532013000")
        );
        assert_eq!(normalize_iban("12345"), None);
        assert_eq!(normalize_iban("DEXX370400440532013000"), None);
    }

    #[test]
    fn references_lose_separators_and_leading_zeros() {
        assert_eq!(normalize_reference("PO-000123").as_deref(), Some("PO123"));
        assert_eq!(normalize_reference("po 123").as_deref(), Some("PO123"));
        assert_eq!(
            normalize_reference("PO-2024/0042"),
            normalize_reference("po 2024-042")
        );
        assert_eq!(
            normalize_reference("0004500123").as_deref(),
            Some("4500123")
        );
    }

    #[test]
    fn references_keep_their_letter_prefix_and_zero_runs() {
        assert_ne!(
            normalize_reference("INV-1001"),
            normalize_reference("PO-1001")
        );
        assert_eq!(normalize_reference("LS-000-A").as_deref(), Some("LS0A"));
    }

    #[test]
    fn too_short_references_are_dropped() {
        assert_eq!(normalize_reference("7"), None);
        assert_eq!(normalize_reference("--"), None);
    }

    #[test]
    fn structured_data_is_normalised_with_every_reference_field() {
        let data = json!({
            "document_type": "invoice",
            "invoice_number": "RE-2024-0815",
            "supplier_name": "Acme Bürobedarf GmbH",
            "supplier_vat_id": "DE 123 456 789",
            "supplier_iban": "DE89 3704 0044 0532 0130 00",
            "po_reference": "PO-0042, PO-0043",
            "delivery_note_reference": ["LS-77", 12345],
            "total": 119.0,
            "line_items": [{"description": "Toner"}]
        });

        let n = normalize(&data);

        assert_eq!(n.counterparty.as_deref(), Some("acme buerobedarf"));
        assert_eq!(n.vat_id.as_deref(), Some("DE123456789"));
        assert_eq!(n.iban.as_deref(), Some("DE89370400440532013000"));
        assert_eq!(
            n.references,
            vec!["12345", "LS77", "PO42", "PO43", "RE2024815"]
        );
        assert!(n.searchable_text.contains("Toner"), "{}", n.searchable_text);
        assert!(n.searchable_text.contains("PO42"), "{}", n.searchable_text);
    }

    #[test]
    fn the_customer_is_the_counterparty_when_no_supplier_was_extracted() {
        let n = normalize(&json!({"customer_name": "Beta AG"}));
        assert_eq!(n.counterparty.as_deref(), Some("beta"));
        assert!(n.references.is_empty());
    }
}
