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
    skip: impl Fn(&str, &str) -> bool,
) -> Vec<Candidate> {
    static LEAD: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^[\s:.#=/\-–]*").unwrap());
    let mut out = Vec::new();
    for (i, line) in doc.lines.iter().enumerate() {
        for m in label.find_iter(&line.text) {
            let before = line_cell_prefix(&line.text, m.start());
            if skip(before, &line.text[m.end()..]) {
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
/// is not an amount and not a date (unless a number marker such as `nr` or `N°` stands
/// right before it: `Faktura nr 2024/05/07` is numbered like a date). A short upper-case
/// prefix printed apart is kept (`NC 3/2024`).
fn document_number(text: &str) -> Option<String> {
    number_after(text, false)
}

/// [`document_number`] for the text after a label that names a number
/// (`Nr faktury: 12/06/2024`): there a date-like token is the number.
fn number_after(text: &str, labelled: bool) -> Option<String> {
    static MARKER: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)^(?:nr|no|n°|nº|n|num|nummer|number|numer|numéro|número|numero|#)\.?:?$")
            .unwrap()
    });
    let mut previous: Option<&str> = None;
    for raw in text.split_whitespace().take(4) {
        let token = raw
            .trim_start_matches(['#', ':', '(', '/'])
            .trim_end_matches([',', ';', ':', ')', '.', '/']);
        let has_digit = token.chars().any(|c| c.is_ascii_digit());
        let plausible = token
            .chars()
            .all(|c| c.is_alphanumeric() || "-/._#".contains(c));
        let after_marker =
            previous.is_some_and(|p| MARKER.is_match(p)) || (labelled && previous.is_none());
        let is_date = parse_date(token, false).is_some() && !after_marker;
        let is_amount = token.contains([',', '.']) && parse_amount(token).is_some();
        if has_digit && plausible && !is_date && !is_amount && (2..=30).contains(&token.len()) {
            let prefix = previous.filter(|p| {
                (2..=4).contains(&p.len())
                    && p.chars().all(|c| c.is_ascii_uppercase())
                    && !MARKER.is_match(p)
                    && ![
                        "VAT", "NIP", "TVA", "IVA", "BTW", "GST", "DEL", "DU", "VOM", "PO", "REF",
                        "NO", "NR", "DD", "DATE",
                    ]
                    .contains(p)
            });
            return Some(match prefix {
                Some(p) => format!("{p} {token}"),
                None => token.to_string(),
            });
        }
        if has_digit {
            return None;
        }
        previous = Some(raw);
    }
    None
}

/// Own numbers are never cited ones: skip labels after `zu`, `Ihre`, `original`, ….
fn cited(before: &str) -> bool {
    static CITED: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)\b(?:zu|zur|zum|ihre?|ihrer|your|uw|for|original|ursprüngliche[rn]?|bezug|ref\.?|rif\.?|op|bij|gegen|against|storno|do|to|betreft|dotyczy)\b[\s:.\-]*$")
            .unwrap()
    });
    CITED.is_match(before)
}

fn first_number(doc: &Doc, labels: &[&Regex], skip_cited: bool) -> Option<String> {
    // A title followed by a word that makes it another document (`Factura rectificada`,
    // `Facture d'origine`, `Faktura korygowana`).
    static CITED_AFTER: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)^\s*(?:rectificada|d'origine|originale?|initiale|rectifiée|korygowan\w*|oryginalna|correcte?d|reference)\b")
            .unwrap()
    });
    labels.iter().find_map(|label| {
        let below = !std::ptr::eq(*label, &*TITLE_NO);
        let labelled = !std::ptr::eq(*label, &*TITLE_NO) && !std::ptr::eq(*label, &*DN_BARE);
        candidates(doc, label, below, |before, after| {
            skip_cited && (cited(before) || CITED_AFTER.is_match(after))
        })
        .into_iter()
        .find_map(|c| number_after(&c.text, labelled))
    })
}

static INVOICE_NO: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:rechnungs?\s*-?\s*(?:nummer|nr\.?|no\.?)|rechnung\s+(?:nr\.?|nummer|no\.?|#)|beleg\s*-?\s*(?:nummer|nr\.?)|invoice\s*(?:number|no\.?|nr\.?|num\.?|#|id)|inv\.?\s*(?:no\.?|#)|factuur\s*-?\s*(?:nummer|nr\.?|no\.?)|factuurnummer|dokument\s*-?\s*(?:nummer|nr\.?)|document\s*(?:number|no\.?)|n[°º]\s*(?:de\s+)?facture|num[ée]ro\s+de\s+(?:la\s+)?facture|facture\s+n[°º]|faktur[ay]\s+(?:vat\s+)?(?:nr|numer)\.?|n(?:r|umer)\.?\s+faktury|factura\s+n[°ºo]\.?|n[°ºo]\.?\s*(?:de\s+)?factura|n[úu]mero\s+de\s+(?:la\s+)?factura|fattura\s+n(?:r|um|o)?\.?|n(?:r|um|o)?\.\s*fattura|numero\s+(?:della\s+)?fattura|bill\s*(?:no\.?|number|#)|tax\s+invoice\s+(?:no\.?|#))")
        .unwrap()
});
static CREDIT_NO: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:gutschrift(?:s)?\s*-?\s*(?:nummer|nr\.?|no\.?)|gutschrift\s+(?:nr\.?|#)|credit\s*note\s*(?:number|no\.?|nr\.?|#)|credit\s*memo\s*(?:number|no\.?|#)|credit\s*(?:nota|factuur)\s*-?\s*(?:nummer|nr\.?)|creditnota\s*-?\s*(?:nummer|nr\.?)|creditfactuur\s*-?\s*(?:nummer|nr\.?)|korrektur\s*-?\s*(?:nummer|nr\.?)|n[°º]\s*d'avoir|num[ée]ro\s+d'avoir|avoir\s+n[°º]|faktura\s+korygująca\s+(?:nr|numer)\.?|korekta\s+(?:nr|numer)\.?|nota\s+di\s+credito\s+n(?:r|um|o)?\.?|nota\s+de\s+(?:crédito|abono)\s+n[°ºo]?\.?|factura\s+rectificativa\s+n[°ºo]\.?)")
        .unwrap()
});
static PO_NO: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:bestell\s*-?\s*(?:nummer|nr\.?|no\.?)|bestellung\s+(?:nr\.?|nummer|#)|auftrags?\s*-?\s*(?:nummer|nr\.?)|purchase\s*order\s*(?:number|no\.?|nr\.?|#)?|p\.?\s?o\.?\s*(?:number|no\.?|nr\.?|#|:)|order\s*(?:number|no\.?|nr\.?|#|ref(?:erence)?\.?)|inkoop\s*order\s*(?:nummer|nr\.?)?|inkoopordernummer|bestel\s*(?:nummer|nr\.?)|ordernummer|order\s*nr\.?)")
        .unwrap()
});
static PO_REF_EXTRA: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:ihre\s+bestellung(?:\s+(?:nr\.?|nummer|vom))?|ihr\s+auftrag|your\s+(?:order|ref(?:erence)?\.?|po)|uw\s+(?:ordernummer|order|referentie|bestelling|kenmerk|ref\.?)|customer\s+po|kunden\s*-?\s*bestellnummer|(?:su\s+|n[°ºo]\.?\s*(?:de\s+)?)?pedido|(?:bon\s+de\s+|votre\s+|n[°º]\s*(?:de\s+)?)commande|(?:vs\.?\s+|vostro\s+|n\.\s*)?ordine|(?:nr\.?\s+)?zamówienia|zamówienie|(?:ref\.?\s+)?p\.?o\.?\s+(?:ref|no|nr)\.?|purchase\s+order)")
        .unwrap()
});
static DN_NO: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:liefer\s*schein\s*-?\s*(?:nummer|nr\.?|no\.?)|lieferschein\s*:|delivery\s*note\s*(?:number|no\.?|nr\.?|#|:)|dn\s*(?:no\.?|#|number)|packing\s*slip\s*(?:number|no\.?|#|:)|pakbon\s*-?\s*(?:nummer|nr\.?|:)|pakbonnummer|afleverbon\s*(?:nummer|nr\.?)?|delivery\s*(?:number|no\.?)|bon\s+de\s+livraison(?:\s+n[°º])?|albar[áa]n(?:\s+n[°ºo]\.?)?|(?:documento\s+di\s+trasporto|ddt)(?:\s+n\.?)?|wz\s+nr\.?)")

        .unwrap()
});
/// A delivery note cited without a number label (`mit Lieferschein LS-558120`, or a
/// `Pakbon` header cell over its number).
static DN_BARE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:lieferschein|pakbon|delivery\s*note|packing\s*slip|bon\s+de\s+livraison|albar[áa]n)\b")
        .unwrap()
});
/// A title followed by its number: `Rechnung 2014-017`, `INVOICE INV-1043`.
static TITLE_NO: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(?:^|\s{2})\s*(?:rechnung|invoice|tax\s+invoice|factuur|gutschrift|credit\s*note|creditnota|lieferschein|delivery\s*note|pakbon|bestellung|purchase\s*order|inkooporder|bestelling|receipt|quittung|beleg|bon|facture|avoir|faktura(?:\s+vat)?|faktura\s+korygująca|factura(?:\s+rectificativa)?|fattura|nota\s+di\s+credito)\b")
        .unwrap()
});
/// A bare number label opening a cell near the top: `Nr.: 4711`, `No. 17`.
static BARE_NO: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)(?:^|\s{2})(?:nr\.?|no\.?|nummer|number|#|n[°º]|num[ée]ro|n[úu]mero|numer)(?:\s|:|$)",
    )
    .unwrap()
});

/// The document's own number for its type, and whether a label specific to it named
/// it (`Rechnungsnummer`, `Invoice No.`, `N° de facture`) rather than a title or a bare
/// `Nr.`, which are weaker evidence.
pub(crate) fn own_number(doc: &Doc, kind: DocumentType) -> Option<(String, Evidence)> {
    let labels: Vec<&Regex> = match kind {
        DocumentType::CreditNote => vec![&CREDIT_NO, &INVOICE_NO],
        DocumentType::PurchaseOrder => vec![&PO_NO],
        DocumentType::DeliveryNote => vec![&DN_NO],
        DocumentType::Invoice | DocumentType::Other => vec![&INVOICE_NO],
    };
    let top = Doc {
        lines: doc.lines.iter().take(25).cloned().collect(),
        lang: doc.lang,
    };
    first_number(doc, &labels, true)
        .map(|n| (n, Evidence::Labelled))
        .or_else(|| first_number(&top, &[&TITLE_NO], true).map(|n| (n, Evidence::Inferred)))
        .or_else(|| first_number(&top, &[&BARE_NO], true).map(|n| (n, Evidence::Weak)))
        .or_else(|| {
            (kind == DocumentType::Other)
                .then(|| first_number(doc, &[&CREDIT_NO], true))
                .flatten()
                .map(|n| (n, Evidence::Inferred))
        })
}

/// How a value was found, which sets its field confidence: a specific label (high),
/// a weaker cue such as a title or a position (medium), or a guess (low).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Evidence {
    Labelled,
    Inferred,
    Weak,
}

/// The purchase order an invoice or delivery note cites.
pub(crate) fn po_reference(doc: &Doc) -> Option<String> {
    first_number(doc, &[&PO_REF_EXTRA, &PO_NO], false)
}

/// The invoice a credit note corrects: `zu Rechnung Nr.`, `Original Invoice No.`,
/// `Betreft factuur`, `Facture d'origine`, `do faktury nr`, `Factura rectificada`,
/// `Rif. fattura n.`.
pub(crate) fn invoice_reference(doc: &Doc) -> Option<String> {
    static CITED_INVOICE: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)\b(?:zur?\s+rechnung(?:\s*-?\s*(?:nr\.?|nummer|no\.?))?|bezug\s*:?\s*rechnung(?:\s*-?\s*(?:nr\.?|nummer))?|(?:ursprungs|original|storno)rechnung(?:\s*-?\s*(?:nr\.?|nummer))?|ursprüngliche\s+rechnung(?:\s*(?:nr\.?|nummer))?|(?:original|originating|corrected|related)\s+invoice(?:\s*(?:no\.?|number|nr\.?|#))?|applies\s+to\s+invoice(?:\s*(?:no\.?|number|#))?|(?:against|for)\s+invoice(?:\s*(?:no\.?|number|#))|invoice\s+reference|ref(?:erence)?\.?\s+invoice(?:\s*(?:no\.?|#))?|betreft\s*:?\s*(?:de\s+)?factuur(?:nummer)?|(?:oorspronkelijke|originele)\s+factuur(?:nummer)?|facture\s+(?:d'origine|initiale|rectifiée|annulée)(?:\s*n[°º])?|r[ée]f\.?\s+facture(?:\s*n[°º])?|do\s+faktury(?:\s+vat)?(?:\s+(?:nr|numer)\.?)?|faktura\s+korygowana(?:\s+nr\.?)?|dotyczy\s+faktury(?:\s+nr\.?)?|factura\s+(?:rectificada|original)(?:\s+n[°ºo]\.?)?|rif(?:erimento)?\.?\s+fattura(?:\s+n(?:r|um|o)?\.?)?)")
            .unwrap()
    });
    candidates(doc, &CITED_INVOICE, true, |_, _| false)
        .into_iter()
        .find_map(|c| document_number(&c.text))
}

/// The delivery note an invoice cites.
pub(crate) fn delivery_note_reference(doc: &Doc) -> Option<String> {
    first_number(doc, &[&DN_NO, &DN_BARE], false)
}

static INVOICE_DATE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:rechnungs\s*-?\s*datum|datum\s+der\s+rechnung|beleg\s*-?\s*datum|gutschrifts?\s*-?\s*datum|invoice\s*date|date\s+of\s+invoice|invoice\s+dated|factuur\s*-?\s*datum|datum\s+factuur|credit\s*note\s*date|tax\s*point\s*date|issue\s*date|date\s+of\s+issue|ausstellungsdatum|dokumentdatum|bill\s+date|date\s+de\s+(?:la\s+)?facture|date\s+de\s+facturation|date\s+d'[ée]mission|date\s+d'avoir|data\s+wystawienia|data\s+faktury|data\s+korekty|fecha\s+de\s+(?:la\s+)?factura|fecha\s+de\s+expedici[óo]n|fecha\s+de\s+emisi[óo]n|data\s+(?:della\s+)?fattura|data\s+documento|data\s+emissione|credit\s*(?:note|memo)\s*date|credit\s+date)")
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
static GENERIC_DATE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:datum|date|dated|vom|d\.d\.|data|fecha|del)\b").unwrap()
});
/// A qualifier after `Data`/`Date`/`Fecha` that makes it some other date
/// (`Data sprzedaży`, `Date d'échéance`, `Fecha de vencimiento`).
static OTHER_DATE_AFTER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^\s*(?:de\s+|d'|di\s+|of\s+|della\s+)?(?:échéance|echeance|livraison|vencimiento|entrega|scadenza|consegna|sprzedaży|sprzedazy|dostawy|wykonania|płatności|platnosci|zapłaty|delivery|supply|order|commande|pedido|ordine|paiement|pago|pagamento)")
        .unwrap()
});
/// A qualifier that makes `Datum`/`Date` some other date.
static OTHER_DATE_BEFORE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(?:due|delivery|ship(?:ping)?|order|payment|service|value|expiry|print|valid|birth|start|end|leistungs|liefer|fälligkeits|verval|lever|bestell|auftrag|zahlungs|druck|buchungs|eingangs|ordine|pedido|commande|devis)\w*\s*[:.\-]?\s*$")
        .unwrap()
});
/// A cited document earlier in the cell: `zu Rechnung Nr. 299 vom 12.02.2014` dates
/// that document, not this one.
static CITING: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:zu|zur|zum|ihre?|ihrer|your|uw|original|bezug|gegen|storno|against|for|bij|op|rif|ref|vs|do|betreft|rectificada|origine)\b")
        .unwrap()
});
static DUE_DATE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(?:\bfällig(?:keit(?:sdatum)?)?\s*(?:am|bis|zum|per)?(?:\s+zum)?|\bfaellig\s*(?:am|bis)?|\bzahlbar\s+(?:bis|am)(?:\s+(?:zum|spätestens))?|\bzahlungsziel|\bdue\s*date|\bpayment\s+due(?:\s+(?:date|by|on))?|\bdue\s+(?:on|by)|\bpay\s+by|\bplease\s+pay\s+by|\bvervaldatum|\bverval\s*datum|\bte\s+betalen\s+(?:voor|vóór|uiterlijk|op)|\buiterlijk\s+(?:betalen\s+)?(?:op|voor)|\bbetalen\s+(?:voor|vóór)|\bvervaldag|\bdate\s+d'[ée]ch[ée]ance|\b[ée]ch[ée]ance|\bà\s+payer\s+avant\s+le|\bpayable\s+avant\s+le|\btermin\s+(?:płatności|platnosci|zapłaty|zaplaty)|\bfecha\s+de\s+vencimiento|\bvencimiento|\bdata\s+(?:di\s+)?scadenza|\bscadenza|\b(?:überweisen|zahlen|begleichen)\b.{0,40}?\bbis(?:\s+(?:zum|spätestens))?|\bzahlbar\s+bis(?:\s+zum)?|\bdate\s+due|\bdue\s+on\s+receipt\s+by)")
        .unwrap()
});
/// Payment terms in days: `zahlbar innerhalb von 14 Tagen`, `payable within 30 days`,
/// `binnen 30 dagen`, `Net 30`, `30 Tage netto`.
static TERMS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(?:\b(?:innerhalb|binnen|within|in|nach|after)\s+(?:von\s+|of\s+)?(\d{1,3})\s*(?:tagen|tage|dagen|days|kalendertagen|dni|jours|días|dias|giorni|gg)|\bnet\s+(\d{1,3})(?:\s*days)?(?:\s|$|[;)]|\.(?:\s|$))|\bnetto\s+(\d{1,3})\s*(?:tage|tagen|dagen|days)|\b(\d{1,3})\s*(?:tage|tagen|dagen|days)\s+(?:netto|net|rein)|\bzahlungsziel\s*:?\s*(\d{1,3})\s*tage)")
        .unwrap()
});

/// The first date in a candidate's text.
fn first_date(
    doc: &Doc,
    label: &Regex,
    month_first: bool,
    skip: impl Fn(&str, &str) -> bool,
) -> Option<NaiveDate> {
    candidates(doc, label, true, skip)
        .into_iter()
        .find_map(|c| dates_in(&c.text, month_first).first().map(|h| h.date))
}

/// The document's date: a specific label, then `Datum`/`Date` not qualified as another
/// date, then (as German letters put it, `Berlin, 07.05.2014`) the first date in the
/// header that no line calls a due, delivery or service date.
pub(crate) fn document_date(
    doc: &Doc,
    kind: DocumentType,
    month_first: bool,
) -> Option<(NaiveDate, Evidence)> {
    let no_skip = |_: &str, _: &str| false;
    let specific = match kind {
        DocumentType::PurchaseOrder => first_date(doc, &PO_DATE, month_first, no_skip),
        DocumentType::DeliveryNote => first_date(doc, &DN_DATE, month_first, no_skip),
        _ => None,
    };
    let labelled = specific
        .or_else(|| first_date(doc, &INVOICE_DATE, month_first, no_skip))
        .or_else(|| {
            first_date(doc, &GENERIC_DATE, month_first, |before, after| {
                OTHER_DATE_BEFORE.is_match(before)
                    || CITING.is_match(before)
                    || OTHER_DATE_AFTER.is_match(after)
            })
        });
    if let Some(date) = labelled {
        return Some((date, Evidence::Labelled));
    }
    static NOT_DOC_DATE: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)fällig|zahlbar|due|pay|verval|betalen|liefer|deliver|lever|leistung|service|period|zeitraum|periode|bestell|order|valid|gültig|geboren|seit|since|auftrag|dostaw|sprzeda|wykonan|płatno|zapłat|termin|échéance|echeance|livraison|vencim|entrega|scadenza|consegna|pedido|ordine|commande|devis|z\s+dnia|do\s+faktury|rectificad|d'origine|rif\.|betreft|applies|original|bezug|zu\s+rechnung|ship")
            .unwrap()
    });
    doc.lines
        .iter()
        .take(30)
        .filter(|l| !NOT_DOC_DATE.is_match(&l.text))
        .find_map(|l| dates_in(&l.text, month_first).first().map(|h| h.date))
        .map(|date| (date, Evidence::Inferred))
}

/// The due date: a labelled date, else the document date plus the payment terms' days
/// (the longest term when there are several, as with `10 Tage 2 % Skonto, 30 Tage
/// netto`: the discount period is the shorter one).
pub(crate) fn due_date(
    doc: &Doc,
    invoice_date: Option<NaiveDate>,
    month_first: bool,
) -> Option<(NaiveDate, Evidence)> {
    if let Some(date) = first_date(doc, &DUE_DATE, month_first, |_, _| false) {
        return Some((date, Evidence::Labelled));
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
    invoice_date?
        .checked_add_days(Days::new(days))
        .map(|d| (d, Evidence::Inferred))
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
            own_number(&doc, DocumentType::Invoice)
                .map(|n| n.0)
                .as_deref(),
            Some("RE-2014-0815")
        );
    }

    #[test]
    fn a_number_under_its_label_in_a_header_table_is_found() {
        let doc = Doc::new(
            "Kunden-Nr.      Rechnungs-Nr.      Datum\n10023           2014-0815          07.05.2014\n",
        );

        assert_eq!(
            own_number(&doc, DocumentType::Invoice)
                .map(|n| n.0)
                .as_deref(),
            Some("2014-0815")
        );
        assert_eq!(
            document_date(&doc, DocumentType::Invoice, false).map(|d| d.0),
            Some(d(2014, 5, 7))
        );
    }

    #[test]
    fn a_credit_note_number_is_not_the_cited_invoice_number() {
        let doc = Doc::new("Gutschrift\nzu Rechnungsnummer RE-1001\nGutschrift-Nr.: GS-77\n");

        assert_eq!(
            own_number(&doc, DocumentType::CreditNote)
                .map(|n| n.0)
                .as_deref(),
            Some("GS-77")
        );
    }

    #[test]
    fn a_due_date_label_is_preferred_to_payment_terms() {
        let doc =
            Doc::new("Datum: 07.05.2014\nFällig am: 21.05.2014\nZahlbar innerhalb von 30 Tagen\n");

        let date = document_date(&doc, DocumentType::Invoice, false).map(|d| d.0);

        assert_eq!(date, Some(d(2014, 5, 7)));
        assert_eq!(
            due_date(&doc, date, false).map(|d| d.0),
            Some(d(2014, 5, 21))
        );
    }

    #[test]
    fn payment_terms_in_days_give_the_due_date_and_the_longest_term_wins() {
        let doc = Doc::new("Invoice date: 2014-05-07\n2% discount within 10 days, net 30 days\n");

        let date = document_date(&doc, DocumentType::Invoice, false).map(|d| d.0);

        assert_eq!(
            due_date(&doc, date, false).map(|d| d.0),
            Some(d(2014, 6, 6))
        );
    }

    #[test]
    fn a_delivery_date_is_not_taken_for_the_invoice_date() {
        let doc = Doc::new("Lieferdatum: 02.05.2014\nDatum: 07.05.2014\n");

        assert_eq!(
            document_date(&doc, DocumentType::Invoice, false).map(|d| d.0),
            Some(d(2014, 5, 7))
        );
    }
}
