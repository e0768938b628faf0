//! Labelled values: document numbers, references and dates.
//!
//! A value follows its label on the same line (`Rechnungsnummer: RE-2014-0815`,
//! `Invoice No.   INV-1043`), or sits under it in the next line's same column, as in
//! header tables:
//!
//! ```text
//! Rechnungsnr.     Datum        Kundennr.
//! RE-2014-0815     07.05.2014   K-5501
//! ```

use std::sync::LazyLock;

use chrono::{Days, NaiveDate};
use regex::Regex;

use super::amount::parse_amount;
use super::date::{dates_in, parse_date};
use super::text::{Doc, col_of};
use crate::extract::DocumentType;

/// A candidate value for a label: the text after the label (up to the next column) or
/// the text under it.
struct Candidate {
    text: String,
}

/// Candidates for every match of `label` in the document, best first within a match:
/// the rest of the line, then (with `below`, and only when the rest of the line has no
/// digit, as in a header table) the cell under the label.
fn candidates(
    doc: &Doc,
    label: &Regex,
    below: bool,
    skip: impl Fn(&str) -> bool,
) -> Vec<Candidate> {
    static LEAD: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^[\s:.#=/\-–]*").unwrap());
    let mut out = Vec::new();
    for (i, line) in doc.lines.iter().enumerate() {
        for m in label.find_iter(&line.text) {
            let before = line_cell_prefix(&line.text, m.start());
            if skip(before) {
                continue;
            }
            let rest = &line.text[m.end()..];
            let rest = &rest[LEAD.find(rest).map_or(0, |l| l.end())..];
            let cell = rest.split("  ").next().unwrap_or("").trim();
            if !cell.is_empty() {
                out.push(Candidate {
                    text: cell.to_string(),
                });
            }
            let digits_after = rest.chars().any(|c| c.is_ascii_digit());
            if let Some(j) = doc.next_nonblank(i, 2).filter(|_| below && !digits_after) {
                let col = col_of(&line.text, m.start());
                let width = m.as_str().chars().count();
                if let Some(below) = doc.lines[j].cell_near(col, width) {
                    out.push(Candidate {
                        text: below.text.clone(),
                    });
                }
            }
        }
    }
    out
}

/// The text of the label's own cell before the label.
fn line_cell_prefix(line: &str, at: usize) -> &str {
    let head = &line[..at];
    match head.rfind("  ") {
        Some(gap) => head[gap..].trim_start(),
        None => head,
    }
}

/// A document number in `text`: the first of its first three tokens that has a digit,
/// is not a date and not an amount.
fn document_number(text: &str) -> Option<String> {
    for token in text.split_whitespace().take(3) {
        let token = token
            .trim_start_matches(['#', ':', '(', '/'])
            .trim_end_matches([',', ';', ':', ')', '.', '/']);
        let has_digit = token.chars().any(|c| c.is_ascii_digit());
        let plausible = token
            .chars()
            .all(|c| c.is_alphanumeric() || "-/._#".contains(c));
        let is_date = parse_date(token, false).is_some();
        let is_amount = token.contains([',', '.']) && parse_amount(token).is_some();
        if has_digit && plausible && !is_date && !is_amount && (2..=30).contains(&token.len()) {
            return Some(token.to_string());
        }
        if has_digit {
            return None;
        }
    }
    None
}

/// Own numbers are never cited ones: skip labels after `zu`, `Ihre`, `original`, ….
fn cited(before: &str) -> bool {
    static CITED: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)\b(?:zu|zur|zum|ihre?|ihrer|your|uw|for|original|ursprüngliche[rn]?|bezug|ref\.?|op|bij|gegen|against|storno)\b[\s:.\-]*$")
            .unwrap()
    });
    CITED.is_match(before)
}

fn first_number(doc: &Doc, labels: &[&Regex], skip_cited: bool) -> Option<String> {
    labels.iter().find_map(|label| {
        let below = !std::ptr::eq(*label, &*TITLE_NO);
        candidates(doc, label, below, |before| skip_cited && cited(before))
            .into_iter()
            .find_map(|c| document_number(&c.text))
    })
}

static INVOICE_NO: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:rechnungs?\s*-?\s*(?:nummer|nr\.?|no\.?)|rechnung\s+(?:nr\.?|nummer|no\.?|#)|beleg\s*-?\s*(?:nummer|nr\.?)|invoice\s*(?:number|no\.?|nr\.?|num\.?|#|id)|inv\.?\s*(?:no\.?|#)|factuur\s*-?\s*(?:nummer|nr\.?|no\.?)|factuurnummer|dokument\s*-?\s*(?:nummer|nr\.?)|document\s*(?:number|no\.?))")
        .unwrap()
});
static CREDIT_NO: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:gutschrift(?:s)?\s*-?\s*(?:nummer|nr\.?|no\.?)|gutschrift\s+(?:nr\.?|#)|credit\s*note\s*(?:number|no\.?|nr\.?|#)|credit\s*memo\s*(?:number|no\.?|#)|credit\s*(?:nota|factuur)\s*-?\s*(?:nummer|nr\.?)|creditnota\s*-?\s*(?:nummer|nr\.?)|creditfactuur\s*-?\s*(?:nummer|nr\.?)|korrektur\s*-?\s*(?:nummer|nr\.?))")
        .unwrap()
});
static PO_NO: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:bestell\s*-?\s*(?:nummer|nr\.?|no\.?)|bestellung\s+(?:nr\.?|nummer|#)|auftrags?\s*-?\s*(?:nummer|nr\.?)|purchase\s*order\s*(?:number|no\.?|nr\.?|#)?|p\.?\s?o\.?\s*(?:number|no\.?|nr\.?|#|:)|order\s*(?:number|no\.?|nr\.?|#|ref(?:erence)?\.?)|inkoop\s*order\s*(?:nummer|nr\.?)?|inkoopordernummer|bestel\s*(?:nummer|nr\.?)|ordernummer|order\s*nr\.?)")
        .unwrap()
});
static PO_REF_EXTRA: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:ihre\s+bestellung(?:\s+(?:nr\.?|nummer|vom))?|ihr\s+auftrag|your\s+(?:order|ref(?:erence)?\.?|po)|uw\s+(?:ordernummer|order|referentie|bestelling|kenmerk|ref\.?)|customer\s+po|kunden\s*-?\s*bestellnummer)")
        .unwrap()
});
static DN_NO: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:liefer\s*schein\s*-?\s*(?:nummer|nr\.?|no\.?)|lieferschein\s*:|delivery\s*note\s*(?:number|no\.?|nr\.?|#|:)|dn\s*(?:no\.?|#|number)|packing\s*slip\s*(?:number|no\.?|#|:)|pakbon\s*-?\s*(?:nummer|nr\.?|:)|pakbonnummer|afleverbon\s*(?:nummer|nr\.?)?|delivery\s*(?:number|no\.?))")
        .unwrap()
});
/// A title followed by its number: `Rechnung 2014-017`, `INVOICE INV-1043`.
static TITLE_NO: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(?:^|\s{2})\s*(?:rechnung|invoice|tax\s+invoice|factuur|gutschrift|credit\s*note|creditnota|lieferschein|delivery\s*note|pakbon|bestellung|purchase\s*order|inkooporder|bestelling|receipt|quittung|beleg|bon)\b")
        .unwrap()
});
/// A bare number label opening a cell near the top: `Nr.: 4711`, `No. 17`.
static BARE_NO: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(?:^|\s{2})(?:nr\.?|no\.?|nummer|number|#)(?:\s|:|$)").unwrap()
});

/// The document's own number for its type.
pub(crate) fn own_number(doc: &Doc, kind: DocumentType) -> Option<String> {
    let labels: Vec<&Regex> = match kind {
        DocumentType::CreditNote => vec![&CREDIT_NO, &INVOICE_NO],
        DocumentType::PurchaseOrder => vec![&PO_NO],
        DocumentType::DeliveryNote => vec![&DN_NO],
        DocumentType::Invoice | DocumentType::Other => vec![&INVOICE_NO],
    };
    first_number(doc, &labels, true)
        .or_else(|| {
            let top = Doc {
                lines: doc.lines.iter().take(25).cloned().collect(),
                lang: doc.lang,
            };
            first_number(&top, &[&TITLE_NO, &BARE_NO], true)
        })
        .or_else(|| {
            (kind == DocumentType::Other)
                .then(|| first_number(doc, &[&CREDIT_NO], true))
                .flatten()
        })
}

/// The purchase order an invoice or delivery note cites.
pub(crate) fn po_reference(doc: &Doc) -> Option<String> {
    first_number(doc, &[&PO_REF_EXTRA, &PO_NO], false)
}

/// The delivery note an invoice cites.
pub(crate) fn delivery_note_reference(doc: &Doc) -> Option<String> {
    first_number(doc, &[&DN_NO], false)
}

static INVOICE_DATE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:rechnungs\s*-?\s*datum|datum\s+der\s+rechnung|beleg\s*-?\s*datum|gutschrifts?\s*-?\s*datum|invoice\s*date|date\s+of\s+invoice|invoice\s+dated|factuur\s*-?\s*datum|datum\s+factuur|credit\s*note\s*date|tax\s*point\s*date|issue\s*date|date\s+of\s+issue|ausstellungsdatum|dokumentdatum)")
        .unwrap()
});
static PO_DATE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:bestell\s*-?\s*datum|order\s*date|besteldatum|orderdatum|auftragsdatum|date\s+of\s+order)")
        .unwrap()
});
static DN_DATE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:liefer\s*-?\s*datum|delivery\s*date|ship(?:ping|ment)?\s*date|date\s+of\s+delivery|leverdatum|afleverdatum|versanddatum|dispatch\s*date)")
        .unwrap()
});
static GENERIC_DATE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\b(?:datum|date|dated|vom|d\.d\.)\b").unwrap());
/// A qualifier that makes `Datum`/`Date` some other date.
static OTHER_DATE_BEFORE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(?:due|delivery|ship(?:ping)?|order|payment|service|value|expiry|print|valid|birth|start|end|leistungs|liefer|fälligkeits|verval|lever|bestell|auftrags|zahlungs|druck|buchungs|eingangs)\w*\s*[:.\-]?\s*$")
        .unwrap()
});
/// A cited document earlier in the cell: `zu Rechnung Nr. 299 vom 12.02.2014` dates
/// that document, not this one.
static CITING: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:zu|zur|zum|ihre?|ihrer|your|uw|original|bezug|gegen|storno|against|for|bij|op)\b")
        .unwrap()
});
static DUE_DATE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(?:\bfällig(?:keit(?:sdatum)?)?\s*(?:am|bis|zum|per)?(?:\s+zum)?|\bfaellig\s*(?:am|bis)?|\bzahlbar\s+(?:bis|am)(?:\s+(?:zum|spätestens))?|\bzahlungsziel|\bdue\s*date|\bpayment\s+due(?:\s+(?:date|by|on))?|\bdue\s+(?:on|by)|\bpay\s+by|\bplease\s+pay\s+by|\bvervaldatum|\bverval\s*datum|\bte\s+betalen\s+(?:voor|vóór|uiterlijk|op)|\buiterlijk\s+(?:betalen\s+)?(?:op|voor)|\bbetalen\s+(?:voor|vóór))")
        .unwrap()
});
/// Payment terms in days: `zahlbar innerhalb von 14 Tagen`, `payable within 30 days`,
/// `binnen 30 dagen`, `Net 30`, `30 Tage netto`.
static TERMS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(?:\b(?:innerhalb|binnen|within|in|nach|after)\s+(?:von\s+|of\s+)?(\d{1,3})\s*(?:tagen|tage|dagen|days|kalendertagen)|\bnet\s+(\d{1,3})(?:\s*days)?(?:\s|$|[;)]|\.(?:\s|$))|\bnetto\s+(\d{1,3})\s*(?:tage|tagen|dagen|days)|\b(\d{1,3})\s*(?:tage|tagen|dagen|days)\s+(?:netto|net|rein)|\bzahlungsziel\s*:?\s*(\d{1,3})\s*tage)")
        .unwrap()
});

/// The first date in a candidate's text.
fn first_date(
    doc: &Doc,
    label: &Regex,
    month_first: bool,
    skip: impl Fn(&str) -> bool,
) -> Option<NaiveDate> {
    candidates(doc, label, true, skip)
        .into_iter()
        .find_map(|c| dates_in(&c.text, month_first).first().map(|h| h.date))
}

/// The document's date: a specific label, then `Datum`/`Date` not qualified as another
/// date, then (as German letters put it, `Berlin, 07.05.2014`) the first date in the
/// header that no line calls a due, delivery or service date.
pub(crate) fn document_date(doc: &Doc, kind: DocumentType, month_first: bool) -> Option<NaiveDate> {
    let no_skip = |_: &str| false;
    let specific = match kind {
        DocumentType::PurchaseOrder => first_date(doc, &PO_DATE, month_first, no_skip),
        DocumentType::DeliveryNote => first_date(doc, &DN_DATE, month_first, no_skip),
        _ => None,
    };
    specific
        .or_else(|| first_date(doc, &INVOICE_DATE, month_first, no_skip))
        .or_else(|| {
            first_date(doc, &GENERIC_DATE, month_first, |before| {
                OTHER_DATE_BEFORE.is_match(before) || CITING.is_match(before)
            })
        })
        .or_else(|| {
            static NOT_DOC_DATE: LazyLock<Regex> = LazyLock::new(|| {
                Regex::new(r"(?i)fällig|zahlbar|due|pay|verval|betalen|liefer|deliver|lever|leistung|service|period|zeitraum|periode|bestell|order|valid|gültig|geboren|seit|since")
                    .unwrap()
            });
            doc.lines
                .iter()
                .take(30)
                .filter(|l| !NOT_DOC_DATE.is_match(&l.text))
                .find_map(|l| dates_in(&l.text, month_first).first().map(|h| h.date))
        })
}

/// The due date: a labelled date, else the document date plus the payment terms' days
/// (the longest term when there are several, as with `10 Tage 2 % Skonto, 30 Tage
/// netto`: the discount period is the shorter one).
pub(crate) fn due_date(
    doc: &Doc,
    invoice_date: Option<NaiveDate>,
    month_first: bool,
) -> Option<NaiveDate> {
    if let Some(date) = first_date(doc, &DUE_DATE, month_first, |_| false) {
        return Some(date);
    }
    let days = doc
        .lines
        .iter()
        .flat_map(|l| TERMS.captures_iter(&l.text).collect::<Vec<_>>())
        .filter_map(|c| {
            (1..=5)
                .find_map(|g| c.get(g))
                .and_then(|m| m.as_str().parse::<u64>().ok())
        })
        .filter(|&d| d <= 180)
        .max()?;
    invoice_date?.checked_add_days(Days::new(days))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(y: i32, m: u32, day: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(y, m, day).unwrap()
    }

    #[test]
    fn a_number_after_its_label_on_the_same_line_is_found() {
        let doc = Doc::new("Kundennummer: 10023\nRechnungsnummer:    RE-2014-0815\n");

        assert_eq!(
            own_number(&doc, DocumentType::Invoice).as_deref(),
            Some("RE-2014-0815")
        );
    }

    #[test]
    fn a_number_under_its_label_in_a_header_table_is_found() {
        let doc = Doc::new(
            "Kunden-Nr.      Rechnungs-Nr.      Datum\n10023           2014-0815          07.05.2014\n",
        );

        assert_eq!(
            own_number(&doc, DocumentType::Invoice).as_deref(),
            Some("2014-0815")
        );
        assert_eq!(
            document_date(&doc, DocumentType::Invoice, false),
            Some(d(2014, 5, 7))
        );
    }

    #[test]
    fn a_credit_note_number_is_not_the_cited_invoice_number() {
        let doc = Doc::new("Gutschrift\nzu Rechnungsnummer RE-1001\nGutschrift-Nr.: GS-77\n");

        assert_eq!(
            own_number(&doc, DocumentType::CreditNote).as_deref(),
            Some("GS-77")
        );
    }

    #[test]
    fn a_due_date_label_is_preferred_to_payment_terms() {
        let doc =
            Doc::new("Datum: 07.05.2014\nFällig am: 21.05.2014\nZahlbar innerhalb von 30 Tagen\n");

        let date = document_date(&doc, DocumentType::Invoice, false);

        assert_eq!(date, Some(d(2014, 5, 7)));
        assert_eq!(due_date(&doc, date, false), Some(d(2014, 5, 21)));
    }

    #[test]
    fn payment_terms_in_days_give_the_due_date_and_the_longest_term_wins() {
        let doc = Doc::new("Invoice date: 2014-05-07\n2% discount within 10 days, net 30 days\n");

        let date = document_date(&doc, DocumentType::Invoice, false);

        assert_eq!(due_date(&doc, date, false), Some(d(2014, 6, 6)));
    }

    #[test]
    fn a_delivery_date_is_not_taken_for_the_invoice_date() {
        let doc = Doc::new("Lieferdatum: 02.05.2014\nDatum: 07.05.2014\n");

        assert_eq!(
            document_date(&doc, DocumentType::Invoice, false),
            Some(d(2014, 5, 7))
        );
    }
}
