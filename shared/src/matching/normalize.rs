//! Normalisation of the fields matching compares: the counterparty (name, VAT id, IBAN),
//! the references (PO, invoice and delivery note numbers) and the searchable text.
//!
//! Pure functions: the same structured data always gives the same normalised fields, so
//! persisting them before the write transaction is safe — a retry writes the same values.

use chrono::NaiveDate;
use serde_json::Value;

use super::DocumentType;

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

/// A document reference for comparison (its *key*): upper case; split into groups at
/// separators and at letter/digit changes; leading zeros of every digit group removed;
/// groups joined with `-`. `PO-2024/0042`, `po 2024-042` and `PO2024 42` are all
/// `PO-2024-42`, while the group boundaries keep `LS-2024-1-15` and `LS-2024-11-5` (or
/// `PO 12-34` and `PO 1-234`) apart. A letter between two digits, also across one
/// separator, is read as the digit it is usually mistaken for by OCR (`2O24` → `2024`,
/// `1I5` → `115`, `PO-2024-O042` → `PO-2024-42`).
///
/// `None` without a digit or with fewer than 3 letters and digits in all: too little to
/// link two documents on ("n/a", "7").
pub fn normalize_reference(raw: &str) -> Option<String> {
    let chars: Vec<char> = raw.chars().map(|c| c.to_ascii_uppercase()).collect();
    let mut groups: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut current_is_digit = false;
    let mut alnum = 0usize;
    let digit_at = |j: usize| chars.get(j).is_some_and(char::is_ascii_digit);
    let separator_at = |j: usize| chars.get(j).is_some_and(|c| !c.is_ascii_alphanumeric());
    for (i, &c) in chars.iter().enumerate() {
        // Digits on both sides, directly or across one separator (`2O24`, `2024-O042`,
        // `2024O-42`): a lone letter among digits.
        let between_digits = || {
            let before =
                i > 0 && (digit_at(i - 1) || (i > 1 && separator_at(i - 1) && digit_at(i - 2)));
            let after = digit_at(i + 1) || (separator_at(i + 1) && digit_at(i + 2));
            before && after
        };
        let c = match c {
            'O' | 'Q' if between_digits() => '0',
            'I' | 'L' if between_digits() => '1',
            'S' if between_digits() => '5',
            'B' if between_digits() => '8',
            'Z' if between_digits() => '2',
            c => c,
        };
        if !c.is_ascii_alphanumeric() {
            if !current.is_empty() {
                groups.push(std::mem::take(&mut current));
            }
            continue;
        }
        alnum += 1;
        let is_digit = c.is_ascii_digit();
        if !current.is_empty() && is_digit != current_is_digit {
            groups.push(std::mem::take(&mut current));
        }
        current_is_digit = is_digit;
        current.push(c);
    }
    if !current.is_empty() {
        groups.push(current);
    }
    if alnum < 3
        || !groups
            .iter()
            .any(|g| g.starts_with(|c: char| c.is_ascii_digit()))
    {
        return None;
    }
    let groups: Vec<&str> = groups
        .iter()
        .map(|g| {
            if g.starts_with(|c: char| c.is_ascii_digit()) {
                let trimmed = g.trim_start_matches('0');
                if trimmed.is_empty() { "0" } else { trimmed }
            } else {
                g.as_str()
            }
        })
        .collect();
    Some(groups.join("-"))
}

/// The digit groups of a key, without its letters (`PO-2024-42` → `2024-42`): how a
/// reference cited without its prefix ("your order 2024-0042") is found.
pub fn number_part(key: &str) -> String {
    key.split('-')
        .filter(|g| g.starts_with(|c: char| c.is_ascii_digit()))
        .collect::<Vec<_>>()
        .join("-")
}

/// The letter groups of a key (`PO-2024-42` → `PO`); empty when it has none.
pub fn letter_part(key: &str) -> String {
    key.split('-')
        .filter(|g| !g.starts_with(|c: char| c.is_ascii_digit()))
        .collect::<Vec<_>>()
        .join("-")
}

/// What a cited number names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RefKind {
    PurchaseOrder,
    DeliveryNote,
    Invoice,
    CreditNote,
}

impl RefKind {
    /// The kind of number a document of this type carries as its own.
    pub fn of(doc_type: DocumentType) -> Option<RefKind> {
        match doc_type {
            DocumentType::PurchaseOrder => Some(RefKind::PurchaseOrder),
            DocumentType::DeliveryNote => Some(RefKind::DeliveryNote),
            DocumentType::Invoice => Some(RefKind::Invoice),
            DocumentType::CreditNote => Some(RefKind::CreditNote),
            DocumentType::Other => None,
        }
    }
}

/// Fields holding the document's own number, whatever its type (the extraction contract
/// puts it in `invoice_number`; the others are common variants).
const OWN_FIELDS: &[&str] = &["invoice_number", "document_number", "number"];
/// Fields citing a purchase order.
const PO_FIELDS: &[&str] = &[
    "po_reference",
    "po_number",
    "purchase_order_number",
    "purchase_order_reference",
    "order_number",
    "order_reference",
];
/// Fields citing delivery notes.
const DN_FIELDS: &[&str] = &["delivery_note_reference", "delivery_note_number"];
/// Fields citing the invoice a credit note corrects.
const INVOICE_FIELDS: &[&str] = &["invoice_reference", "corrected_invoice_number"];
/// Fields citing something of unknown kind.
const UNKNOWN_FIELDS: &[&str] = &["reference", "references"];

/// A document's references, as keys ([`normalize_reference`]): its own number kept apart
/// from the numbers it cites, so a supplier's invoice `1001` is never taken for the
/// tenant's purchase order `1001`. Each list is sorted, without duplicates.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct References {
    pub own: Vec<String>,
    pub purchase_orders: Vec<String>,
    pub delivery_notes: Vec<String>,
    pub invoices: Vec<String>,
    /// Cited numbers whose kind the document does not say.
    pub unknown: Vec<String>,
}

impl References {
    /// Reads the references of a document of type `doc_type`. A purchase order's own
    /// number may sit in a PO field (`po_number`, `po_reference`), a delivery note's in
    /// `delivery_note_number`, a credit note's in `credit_note_number`: for those types
    /// these fields are its own number, not a citation.
    pub fn read(structured: &Value, doc_type: DocumentType) -> References {
        let keys = |fields: &[&str]| -> Vec<String> {
            let mut keys: Vec<String> = fields
                .iter()
                .filter_map(|key| structured.get(*key))
                .flat_map(reference_values)
                .filter_map(|raw| normalize_reference(&raw))
                .collect();
            keys.sort();
            keys.dedup();
            keys
        };
        let mut refs = References {
            own: keys(OWN_FIELDS),
            purchase_orders: keys(PO_FIELDS),
            delivery_notes: keys(DN_FIELDS),
            invoices: keys(INVOICE_FIELDS),
            unknown: keys(UNKNOWN_FIELDS),
        };
        // For these types the field is the document's own number, not a citation.
        let own_too = match doc_type {
            DocumentType::PurchaseOrder => std::mem::take(&mut refs.purchase_orders),
            DocumentType::DeliveryNote => std::mem::take(&mut refs.delivery_notes),
            DocumentType::CreditNote => keys(&["credit_note_number"]),
            _ => Vec::new(),
        };
        refs.own.extend(own_too);
        refs.own.sort();
        refs.own.dedup();
        refs
    }

    /// The numbers it cites of `kind`.
    pub fn cited(&self, kind: RefKind) -> &[String] {
        match kind {
            RefKind::PurchaseOrder => &self.purchase_orders,
            RefKind::DeliveryNote => &self.delivery_notes,
            RefKind::Invoice => &self.invoices,
            RefKind::CreditNote => &[],
        }
    }

    /// Every number it cites, of whatever kind.
    pub fn all_cited(&self) -> impl Iterator<Item = &String> {
        self.purchase_orders
            .iter()
            .chain(&self.delivery_notes)
            .chain(&self.invoices)
            .chain(&self.unknown)
    }

    /// The keys the candidate search looks up (`document.normalized_references`): own
    /// and cited keys, and the number part of each key with letters, so a reference cited
    /// without its prefix still meets its document. Sorted, without duplicates.
    pub fn search_keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = Vec::new();
        for key in self.own.iter().chain(self.all_cited()) {
            keys.push(key.clone());
            let number = number_part(key);
            if number != *key && !number.is_empty() {
                keys.push(number);
            }
        }
        keys.sort();
        keys.dedup();
        keys
    }
}

/// The normalised fields of one document, as persisted on its row.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Normalized {
    pub counterparty: Option<String>,
    pub vat_id: Option<String>,
    pub iban: Option<String>,
    pub references: References,
    /// `normalized_references`: [`References::search_keys`].
    pub reference_keys: Vec<String>,
    /// The document's own date (`invoice_date` and variants).
    pub date: Option<NaiveDate>,
    pub searchable_text: String,
}

/// Normalises the structured data of a document of type `doc_type` (extraction
/// contract). The counterparty is the supplier; `customer_name` is the fallback when no
/// supplier was extracted.
pub fn normalize(structured: &Value, doc_type: DocumentType) -> Normalized {
    let text = |key: &str| structured.get(key).and_then(Value::as_str);
    let counterparty = text("supplier_name")
        .and_then(normalize_name)
        .or_else(|| text("customer_name").and_then(normalize_name));
    let vat_id = text("supplier_vat_id").and_then(normalize_vat_id);
    let iban = text("supplier_iban").and_then(normalize_iban);
    let references = References::read(structured, doc_type);
    let reference_keys = references.search_keys();
    let searchable_text = searchable_text(structured, &counterparty, &reference_keys);
    Normalized {
        counterparty,
        vat_id,
        iban,
        references,
        reference_keys,
        date: document_date(structured),
        searchable_text,
    }
}

/// The document's own date: `invoice_date` in the extraction contract (purchase orders
/// and delivery notes use it for their date too), or the common variants.
pub fn document_date(structured: &Value) -> Option<NaiveDate> {
    [
        "invoice_date",
        "document_date",
        "order_date",
        "delivery_date",
    ]
    .iter()
    .filter_map(|key| structured.get(*key).and_then(Value::as_str))
    .find_map(|raw| NaiveDate::parse_from_str(raw.get(..10)?, "%Y-%m-%d").ok())
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

    fn key(raw: &str) -> Option<String> {
        normalize_reference(raw)
    }

    #[test]
    fn references_lose_case_separators_and_leading_zeros() {
        assert_eq!(key("PO-000123").as_deref(), Some("PO-123"));
        assert_eq!(key("po 123").as_deref(), Some("PO-123"));
        assert_eq!(key("PO123").as_deref(), Some("PO-123"));
        assert_eq!(key("PO-2024/0042"), key("po 2024-042"));
        assert_eq!(key("0004500123").as_deref(), Some("4500123"));
    }

    #[test]
    fn digit_group_boundaries_keep_different_numbers_apart() {
        assert_ne!(key("LS-2024-1-15"), key("LS-2024-11-5"));
        assert_ne!(key("PO 12-34"), key("PO 1-234"));
        assert_eq!(key("LS-2024-1-15").as_deref(), Some("LS-2024-1-15"));
    }

    #[test]
    fn a_letter_between_digits_is_read_as_the_digit_ocr_mistook() {
        assert_eq!(key("PO-2O24-0042"), key("PO-2024-0042"));
        assert_eq!(key("RE 1I5"), key("RE 115"));
        assert_eq!(
            key("PO2024").as_deref(),
            Some("PO-2024"),
            "a prefix is not a digit"
        );
    }

    #[test]
    fn a_letter_next_to_a_separator_between_digits_is_read_as_a_digit_too() {
        assert_eq!(key("PO-2024-O042"), key("PO-2024-0042"));
        assert_eq!(key("LS 2024 I5").as_deref(), Some("LS-2024-15"));
        assert_eq!(
            key("PO-O042").as_deref(),
            Some("PO-O-42"),
            "after a prefix: a letter"
        );
    }

    #[test]
    fn references_keep_their_letter_prefix_and_zero_groups() {
        assert_ne!(key("INV-1001"), key("PO-1001"));
        assert_eq!(key("LS-000-A").as_deref(), Some("LS-0-A"));
        assert_eq!(number_part("PO-2024-42"), "2024-42");
        assert_eq!(letter_part("PO-2024-42"), "PO");
    }

    #[test]
    fn too_short_or_digitless_references_are_dropped() {
        assert_eq!(key("7"), None);
        assert_eq!(key("--"), None);
        assert_eq!(key("n/a"), None);
        assert_eq!(key("siehe Anlage"), None);
    }

    #[test]
    fn the_own_number_is_kept_apart_from_the_cited_ones() {
        let data = json!({
            "invoice_number": "RE-2024-0815",
            "po_reference": "PO-0042, PO-0043",
            "delivery_note_reference": ["LS-77", 12345],
            "reference": "K-99"
        });

        let refs = References::read(&data, DocumentType::Invoice);

        assert_eq!(refs.own, vec!["RE-2024-815"]);
        assert_eq!(refs.purchase_orders, vec!["PO-42", "PO-43"]);
        assert_eq!(refs.delivery_notes, vec!["12345", "LS-77"]);
        assert_eq!(refs.unknown, vec!["K-99"]);
        assert!(refs.invoices.is_empty());
    }

    #[test]
    fn a_purchase_orders_po_number_and_a_credit_notes_number_are_their_own() {
        let po = References::read(
            &json!({"po_number": "4500123"}),
            DocumentType::PurchaseOrder,
        );
        assert_eq!(po.own, vec!["4500123"]);
        assert!(po.purchase_orders.is_empty());

        let dn = References::read(
            &json!({"invoice_number": "LS-1", "po_reference": "PO-9"}),
            DocumentType::DeliveryNote,
        );
        assert_eq!(
            (dn.own.clone(), dn.purchase_orders.clone()),
            (vec!["LS-1".to_owned()], vec!["PO-9".to_owned()])
        );

        let cn = References::read(
            &json!({"invoice_number": "GS-7", "invoice_reference": "RE-2024-0815"}),
            DocumentType::CreditNote,
        );
        assert_eq!(cn.own, vec!["GS-7"]);
        assert_eq!(cn.invoices, vec!["RE-2024-815"]);
    }

    #[test]
    fn search_keys_hold_every_key_and_the_number_part_of_prefixed_ones() {
        let refs = References::read(
            &json!({"invoice_number": "RE-1001", "po_reference": "4500123"}),
            DocumentType::Invoice,
        );
        assert_eq!(refs.search_keys(), vec!["1001", "4500123", "RE-1001"]);
    }

    #[test]
    fn structured_data_is_normalised_with_every_field() {
        let data = json!({
            "document_type": "invoice",
            "invoice_number": "RE-2024-0815",
            "invoice_date": "2024-03-10",
            "supplier_name": "Acme Bürobedarf GmbH",
            "supplier_vat_id": "DE 123 456 789",
            "supplier_iban": "DE89 3704 0044 0532 0130 00",
            "po_reference": "PO-0042",
            "total": 119.0,
            "line_items": [{"description": "Toner"}]
        });

        let n = normalize(&data, DocumentType::Invoice);

        assert_eq!(n.counterparty.as_deref(), Some("acme buerobedarf"));
        assert_eq!(n.vat_id.as_deref(), Some("DE123456789"));
        assert_eq!(n.iban.as_deref(), Some("DE89370400440532013000"));
        assert_eq!(n.date, NaiveDate::from_ymd_opt(2024, 3, 10));
        assert_eq!(
            n.reference_keys,
            vec!["2024-815", "42", "PO-42", "RE-2024-815"]
        );
        assert!(n.searchable_text.contains("Toner"), "{}", n.searchable_text);
        assert!(n.searchable_text.contains("PO-42"), "{}", n.searchable_text);
    }

    #[test]
    fn the_customer_is_the_counterparty_when_no_supplier_was_extracted() {
        let n = normalize(&json!({"customer_name": "Beta AG"}), DocumentType::Invoice);
        assert_eq!(n.counterparty.as_deref(), Some("beta"));
        assert!(n.reference_keys.is_empty());
    }
}
