//! Normalisation of the fields matching compares: the counterparty (name, VAT id, IBAN),
//! the references (PO, invoice and delivery note numbers) and the searchable text.
//!
//! Pure functions: the same structured data always gives the same normalised fields, so
//! persisting them before the write transaction is safe — a retry writes the same values.

use chrono::NaiveDate;

use super::DocumentType;
use crate::extract::Extraction;

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
    let mut groups: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut current_is_digit = false;
    let mut alnum = 0usize;
    for c in ocr_read(raw) {
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

/// `raw` upper case, with a lone letter among digits — directly or across one separator
/// (`2O24`, `2024-O042`, `2024O-42`) — read as the digit OCR mistook it for.
fn ocr_read(raw: &str) -> Vec<char> {
    let chars: Vec<char> = raw.chars().map(|c| c.to_ascii_uppercase()).collect();
    let digit_at = |j: usize| chars.get(j).is_some_and(char::is_ascii_digit);
    let separator_at = |j: usize| chars.get(j).is_some_and(|c| !c.is_ascii_alphanumeric());
    chars
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            let between_digits = || {
                let before =
                    i > 0 && (digit_at(i - 1) || (i > 1 && separator_at(i - 1) && digit_at(i - 2)));
                let after = digit_at(i + 1) || (separator_at(i + 1) && digit_at(i + 2));
                before && after
            };
            match c {
                'O' | 'Q' if between_digits() => '0',
                'I' | 'L' if between_digits() => '1',
                'S' if between_digits() => '5',
                'B' if between_digits() => '8',
                'Z' if between_digits() => '2',
                c => c,
            }
        })
        .collect()
}

/// The forms under which the candidate search finds a reference: its
/// key ([`normalize_reference`]), the key's number part ([`number_part`]) and the run of
/// all its digits as printed (OCR letters read as digits, leading zeros of the run
/// dropped), so numbers written with other separators or groupings meet:
/// `45000 12345` and `4500012345` (`4500012345`), `LS-2024-00123` and `LS202400123`
/// (`202400123`), `PO 45000-77001` and `4500077001`. A digit run under 4 digits is too
/// common to search on. Empty when `raw` is no reference.
pub fn search_forms(raw: &str) -> Vec<String> {
    let Some(key) = normalize_reference(raw) else {
        return Vec::new();
    };
    let mut forms = vec![key.clone()];
    let number = number_part(&key);
    if !number.is_empty() && number != key {
        forms.push(number);
    }
    let run: String = ocr_read(raw)
        .into_iter()
        .filter(char::is_ascii_digit)
        .collect();
    let run = run.trim_start_matches('0');
    if run.len() >= 4 && !forms.iter().any(|f| f == run) {
        forms.push(run.to_owned());
    }
    forms
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

/// A document's references, as keys ([`normalize_reference`]): its own number kept apart
/// from the numbers it cites, so a supplier's invoice `1001` is never taken for the
/// tenant's purchase order `1001`. Each list is sorted, without duplicates.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct References {
    pub own: Vec<String>,
    pub purchase_orders: Vec<String>,
    pub delivery_notes: Vec<String>,
    pub invoices: Vec<String>,
}

impl References {
    /// Reads the references of a document of type `doc_type`. A purchase order's own
    /// number may stand in `po_reference`, a delivery note's in
    /// `delivery_note_reference`: for those types that field is its own number, not a
    /// citation.
    pub fn read(data: &Extraction, doc_type: DocumentType) -> References {
        let keys = |field: &Option<String>| -> Vec<String> {
            let mut keys: Vec<String> = reference_values(field)
                .iter()
                .filter_map(|raw| normalize_reference(raw))
                .collect();
            keys.sort();
            keys.dedup();
            keys
        };
        let mut refs = References {
            own: keys(&data.invoice_number),
            purchase_orders: or_buyer_reference(keys(&data.po_reference), data, |raw| {
                normalize_reference(raw).into_iter().collect()
            }),
            delivery_notes: keys(&data.delivery_note_reference),
            invoices: keys(&data.invoice_reference),
        };
        // For these types the field is the document's own number, not a citation.
        let own_too = match doc_type {
            DocumentType::PurchaseOrder => std::mem::take(&mut refs.purchase_orders),
            DocumentType::DeliveryNote => std::mem::take(&mut refs.delivery_notes),
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

impl RefKind {
    /// The kind's tag in the typed search keys ([`SearchKeys`]).
    pub fn tag(self) -> &'static str {
        match self {
            RefKind::PurchaseOrder => "po",
            RefKind::DeliveryNote => "dn",
            RefKind::Invoice => "inv",
            RefKind::CreditNote => "cn",
        }
    }
}

/// The candidate search's keys of a document, own and cited apart,
/// each `<kind>:<form>` ([`search_forms`], [`RefKind::tag`]): `own` the forms of its own
/// number under its type's kind (`po:4500012345`), `cited` those of the numbers it cites
/// under the kind they name (`dn:LS-7781`). Stored in
/// `document.matching_own_keys` / `matching_cited_keys`, each behind its own index, so a
/// number part common in one space (the `12345` of many suppliers' `RE-12345`) does not
/// crowd the other. Sorted, without duplicates.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SearchKeys {
    pub own: Vec<String>,
    pub cited: Vec<String>,
}

impl SearchKeys {
    /// Reads the keys of a document of type `doc_type` from the same fields as
    /// [`References::read`].
    pub fn read(data: &Extraction, doc_type: DocumentType) -> SearchKeys {
        let forms = |field: &Option<String>| -> Vec<String> {
            reference_values(field)
                .iter()
                .flat_map(|raw| search_forms(raw))
                .collect()
        };
        let mut own = forms(&data.invoice_number);
        let mut purchase_orders = or_buyer_reference(forms(&data.po_reference), data, search_forms);
        let mut delivery_notes = forms(&data.delivery_note_reference);
        match doc_type {
            DocumentType::PurchaseOrder => own.append(&mut purchase_orders),
            DocumentType::DeliveryNote => own.append(&mut delivery_notes),
            _ => {}
        }
        let typed = |tag: &str, forms: Vec<String>| -> Vec<String> {
            forms.into_iter().map(|f| format!("{tag}:{f}")).collect()
        };
        let mut own = match RefKind::of(doc_type) {
            Some(kind) => typed(kind.tag(), own),
            None => Vec::new(),
        };
        let mut cited = typed(RefKind::PurchaseOrder.tag(), purchase_orders);
        cited.extend(typed(RefKind::DeliveryNote.tag(), delivery_notes));
        cited.extend(typed(
            RefKind::Invoice.tag(),
            forms(&data.invoice_reference),
        ));
        // The invoice a corrected invoice replaces, whole keys only: the replacement
        // link is made on that number alone ([`replacement_keys`]).
        if doc_type == DocumentType::Invoice {
            cited.extend(replacement_keys(&data.replaces_invoice, REPLACES_TAG));
        }
        for keys in [&mut own, &mut cited] {
            keys.sort();
            keys.dedup();
        }
        SearchKeys { own, cited }
    }

    /// What a source looks up in the other documents' *own* keys: the numbers it cites,
    /// under the kind cited (not the invoice it replaces: that link is not scored).
    pub fn own_probe(&self) -> Vec<String> {
        self.cited
            .iter()
            .filter(|k| !k.starts_with(REPLACES_TAG))
            .cloned()
            .collect()
    }

    /// What a source looks up in the other documents' *cited* keys: its own number
    /// (cited by them under its kind), and the numbers it cites (cited by them too: an
    /// invoice and a delivery note naming one order).
    pub fn cited_probe(&self) -> Vec<String> {
        let mut probe: Vec<String> = self.own.iter().chain(&self.cited).cloned().collect();
        probe.sort();
        probe.dedup();
        probe
    }
}

/// The tag of the cited key a corrected invoice carries for the invoice it replaces
/// (`rep:PRG1502168`), in `matching_cited_keys`.
pub const REPLACES_TAG: &str = "rep:";

/// The whole keys of `number` ([`normalize_reference`], without the number-part forms
/// the candidate search adds) under `tag` (`inv:` or [`REPLACES_TAG`]): what the
/// replacement link between a corrected invoice and the invoice it replaces is looked up
/// by (`super::candidates::replacements`).
pub fn replacement_keys(number: &Option<String>, tag: &str) -> Vec<String> {
    let mut keys: Vec<String> = reference_values(number)
        .iter()
        .filter_map(|raw| normalize_reference(raw))
        .map(|key| format!("{tag}{key}"))
        .collect();
    keys.sort();
    keys.dedup();
    keys
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
    /// `matching_own_keys` / `matching_cited_keys`: [`SearchKeys::read`].
    pub search_keys: SearchKeys,
    /// The document's own date (`invoice_date` and variants).
    pub date: Option<NaiveDate>,
    pub searchable_text: String,
}

/// Normalises the extraction of a document of type `doc_type`. The counterparty is
/// the supplier; `customer_name` is the fallback when no supplier was extracted.
pub fn normalize(data: &Extraction, doc_type: DocumentType) -> Normalized {
    let counterparty = data
        .supplier_name
        .as_deref()
        .and_then(normalize_name)
        .or_else(|| data.customer_name.as_deref().and_then(normalize_name));
    let vat_id = data.supplier_vat_id.as_deref().and_then(normalize_vat_id);
    let iban = data.supplier_iban.as_deref().and_then(normalize_iban);
    let references = References::read(data, doc_type);
    let reference_keys = references.search_keys();
    let searchable_text = searchable_text(data, &counterparty, &reference_keys);
    Normalized {
        counterparty,
        vat_id,
        iban,
        references,
        reference_keys,
        search_keys: SearchKeys::read(data, doc_type),
        date: data.invoice_date,
        searchable_text,
    }
}

/// `cited` (a document's order references, BT-13 for an e-invoice), or, when it holds
/// none, what `read` makes of the e-invoice's BT-10 (`einvoice.buyer_reference`): buyers
/// often put their order number there. A Leitweg-ID there is of no order's shape, so it
/// ties and contradicts nothing.
fn or_buyer_reference(
    cited: Vec<String>,
    data: &Extraction,
    read: impl Fn(&str) -> Vec<String>,
) -> Vec<String> {
    if !cited.is_empty() {
        return cited;
    }
    let buyer_reference = data
        .einvoice
        .as_ref()
        .and_then(|e| e.buyer_reference.clone());
    let mut keys: Vec<String> = reference_values(&buyer_reference)
        .iter()
        .flat_map(|raw| read(raw))
        .collect();
    keys.sort();
    keys.dedup();
    keys
}

/// A reference field may list several numbers ("PO-1, PO-2", "4500012345 / AB-778":
/// [`split_references`]).
fn reference_values(field: &Option<String>) -> Vec<String> {
    field
        .iter()
        .flat_map(|s| s.split([',', ';']))
        .flat_map(split_references)
        .collect()
}

/// The references one piece of a field holds: split at ` / ` (a slash between spaces;
/// `PO-2024/0042` is one number), and before a group of two or more letters that
/// follows a complete reference (one with a letter prefix and digits, or five digits or
/// more) and is followed by digits: `4500012345 / AB-778`, `4500012345 AB-778` and
/// `4500012345AB778` are an order number and an order confirmation each, while
/// `PO 2024 42` and `2024-LS-123` stay one. A lone letter among digits is a misread
/// digit ([`ocr_read`]), not a group.
pub fn split_references(raw: &str) -> Vec<String> {
    let mut out = Vec::new();
    for part in raw.split(" / ") {
        let chars: Vec<char> = part.chars().collect();
        let read = ocr_read(part);
        let mut start = 0;
        let mut i = 0;
        while i < read.len() {
            if !read[i].is_ascii_alphabetic() {
                i += 1;
                continue;
            }
            let run = i;
            while i < read.len() && read[i].is_ascii_alphabetic() {
                i += 1;
            }
            let next = read[i..]
                .iter()
                .find(|c| c.is_ascii_alphanumeric())
                .is_some_and(char::is_ascii_digit);
            if i - run >= 2 && next && complete_reference(&read[start..run]) {
                out.push(chars[start..run].iter().collect::<String>());
                start = run;
            }
        }
        out.push(chars[start..].iter().collect());
    }
    out.into_iter()
        .map(|piece| {
            piece
                .trim_matches(|c: char| c.is_whitespace() || c == '/' || c == '-')
                .to_owned()
        })
        .filter(|piece| !piece.is_empty())
        .collect()
}

/// Whether `read` (upper case, OCR-read) is a whole reference on its own: a letter
/// prefix followed by digits, or five digits or more.
fn complete_reference(read: &[char]) -> bool {
    let digits = read.iter().filter(|c| c.is_ascii_digit()).count();
    let prefixed = read
        .iter()
        .position(char::is_ascii_alphabetic)
        .is_some_and(|letter| read[letter..].iter().any(char::is_ascii_digit));
    digits >= 5 || (prefixed && digits > 0)
}

/// One line of text with what a person would search for: names, ids, references, dates,
/// amounts and line item descriptions. The embedding search embeds this text.
fn searchable_text(data: &Extraction, counterparty: &Option<String>, refs: &[String]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let texts = [
        data.document_type.map(|t| t.as_str().to_owned()),
        data.supplier_name.clone(),
        data.supplier_vat_id.clone(),
        data.supplier_iban.clone(),
        data.customer_name.clone(),
        data.invoice_date.map(|d| d.to_string()),
        data.currency.clone(),
    ];
    parts.extend(
        texts
            .into_iter()
            .flatten()
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty()),
    );
    // As JSON writes it (`119.0`), the form the embeddings were first made of.
    parts.extend(
        data.total
            .and_then(serde_json::Number::from_f64)
            .map(|n| n.to_string()),
    );
    parts.extend(counterparty.iter().cloned());
    parts.extend(refs.iter().cloned());
    parts.extend(
        data.line_items
            .iter()
            .map(|item| item.description.trim().to_owned()),
    );
    parts.join(" ")
}

#[cfg(test)]
mod tests;
