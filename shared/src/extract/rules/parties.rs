//! Who issued the document and to whom: the supplier (name, address) and the customer.
//!
//! The supplier is the letterhead or the company with a legal form (`GmbH`, `B.V.`,
//! `Ltd`, `Inc.`, …) that is not in the recipient block (`An`, `Rechnungsempfänger`,
//! `Bill to`, `Aan`, `Klant`, or the address window under a German sender line). A name
//! repeated in the footer, or labelled `Lieferant`/`From`/`Supplier`, counts more; bank
//! names and register lines never count. On a purchase order the roles swap: the
//! issuer is the customer and the addressee (`Lieferant`, `Vendor`, `An`) is the
//! supplier, so that an order and the invoice answering it name the same supplier.

use std::collections::HashMap;
use std::sync::LazyLock;

use regex::Regex;

use super::amount::numbers_in;
use super::text::{Doc, col_of};
use crate::extract::DocumentType;

#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Parties {
    pub supplier: Option<String>,
    pub supplier_address: Option<String>,
    pub customer: Option<String>,
    /// Lines (and the column ranges) of the recipient blocks (bill-to, ship-to, the
    /// address window), where ids belong to the customer.
    pub recipient_blocks: Vec<Block>,
    /// How the supplier was found.
    pub supplier_source: SupplierSource,
}

/// Where the supplier's name came from, strongest first; it sets the field's confidence.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SupplierSource {
    /// A label names it (`Lieferant`, `Seller`, `Vendeur`, `Sprzedawca`, `Sold by`).
    Labelled,
    /// A company name with a legal form outside the recipient blocks.
    LegalForm,
    /// The first line of the letterhead.
    Letterhead,
    #[default]
    None,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Block {
    pub first: usize,
    pub last: usize,
    pub col_from: usize,
    pub col_to: usize,
}

impl Block {
    pub fn contains(&self, line: usize, col: usize) -> bool {
        (self.first..=self.last).contains(&line) && col + 2 >= self.col_from && col < self.col_to
    }
}

static LEGAL_FORM: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:^|[\s,])(?:GmbH\s*&\s*Co\.?\s*(?:KGaA|KG|OHG)|gGmbH|GmbH|mbH|AG|KGaA|KG|OHG|GbR|PartG|UG\s*\(haftungsbeschränkt\)|UG|e\.\s?K\.|e\.\s?Kfm\.|e\.\s?V\.|B\.\s?V\.?|BV|N\.\s?V\.?|NV|V\.\s?O\.\s?F\.?|VOF|C\.\s?V\.|Ltd\.?|LTD\.?|Limited|LIMITED|LLC|L\.L\.C\.|LLP|Inc\.?|INC\.?|Incorporated|Corp\.?|CORP\.?|Corporation|plc|PLC|Pty\.?\s*Ltd\.?|S\.\s?A\.?|SA|SAS|SARL|S\.\s?à\s?r\.\s?l\.?|S\.a\.r\.l\.|S\.\s?r\.\s?l\.?|SRL|BVBA|SE|Co\.|S\.\s?L\.?|SL|S\.\s?p\.\s?A\.?|SpA|S\.\s?A\.\s?S\.?|SPRL|SCRL|ASBL|VZW|vzw|[Ss]p\.\s?z\s?o\.\s?o\.?|[Ss][Pp]\.\s?[Zz]\s?[Oo]\.\s?[Oo]\.?|sp\.\s?j\.|sp\.\s?k\.|s\.\s?c\.|S\.\s?C\.|Pvt\.?\s*Ltd\.?|P\.\s?Ltd\.?|Private\s+Limited|PRIVATE\s+LIMITED|LLP|OÜ|AB|A/S|ApS|Oy)\s*$")
        .unwrap()
});
static NOT_A_NAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)bank\b|sparkasse|raiffeisen|\biban|\bbic\b|swift|amtsgericht|registergericht|handelsregister|\bhrb?\b|\bkvk\b|geschäftsführ|director|vorstand|\bsitz\b|\bust\b|\bvat\b|\bbtw\b|steuer-?nr|steuernummer|\btel\b|\bfax\b|e-?mail|www\.|https?:|@")
        .unwrap()
});
static RECIPIENT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^(?:details\s+of\s+(?:receiver|consignee|buyer|recipient)\s*\(?\s*)?(?:an|to|rechnungsempfänger(?:in)?|rechnungsanschrift|rechnungsadresse|empfänger|kunde|bill(?:ed)?\s*to|invoice(?:d)?\s*to|sold\s*to|ship(?:ped)?\s*to|deliver(?:ed)?\s*to|delivery\s*address|credit\s*to|consignee|lieferanschrift|lieferadresse|customer|client|cliente|aan|klant|factuuradres|afleveradres|afnemer|geadresseerde|käufer|buyer|nabywca|odbiorca|płatnik|destinataire|destinatario|factur[ée]e?\s+à|adress[ée]e?\s+à|livr[ée]e?\s+à|adresse\s+de\s+(?:livraison|facturation)|spett(?:\.\s?le|abile)|intestatario|facturar\s+a|cessionario(?:\s*/\s*committente)?|committente|receiver)\b\.?\s*\)?\s*(?:\([^)]*\))?\s*(?::\s*(.*))?$")
        .unwrap()
});
/// Recipient labels of a delivery address, which names the customer only when no billing
/// address does.
static SHIP_LABEL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)ship|deliver|liefer|consignee|aflever|livr|odbiorca|entrega").unwrap()
});
static ISSUER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^(?:lieferant|supplier|vendor|from|von|absender|seller|verkäufer|leverancier|afzender|rechnungssteller|issued\s*by|sold\s*by|auftragnehmer|vendeur|fournisseur|émetteur|prestataire|sprzedawca|wystawca|proveedor|emisor|vendedor|fornitore|cedente(?:\s*/\s*prestatore)?|venditore|verkauft\s+von|vendu\s+par|vendido\s+por|venduto\s+da|details\s+of\s+supplier)\b\.?\s*(?:\([^)]*\))?\s*(?::\s*(.*))?$")
        .unwrap()
});
static NOT_A_BLOCK: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^[-.]?\s*(?:nr|no|nummer|number|id|#|vat|ust|btw|ref|reference|account|konto|code|po|order|bestell|kenmerk|referentie)\b|^n(?:nummer|nr)")
        .unwrap()
});
static POSTCODE_CITY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:^|\s)(?:[A-Z]{1,2}-)?\d{4,5}\s?[A-Z]{0,2}\s+\p{Lu}\p{L}+|\b[A-Z]{1,2}\d[A-Z\d]?\s*\d[A-Z]{2}\b|\b[A-Z]{2}\s+\d{5}(?:-\d{4})?\b|(?:^|\s)\d{2}-\d{3}\s+\p{Lu}\p{L}+|\p{Lu}\p{L}+,?\s*-?\s*\d{3}\s?\d{3}\b")
        .unwrap()
});
static STREET: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(?:str\.|straße|strasse|weg\b|gasse|platz|allee|ring\b|damm|ufer|chaussee|straat|laan\b|plein|gracht|kade|dijk|singel|street|\bst\.|road|\brd\.?|avenue|\bave\.?|lane|drive|\bway\b|blvd|boulevard|suite|\bunit\b|floor|house|park\b|court|place|square|postfach|p\.?\s?o\.?\s?box|postbus|markt|\bul\.|\bal\.|\bos\.|\brue\b|\bavenida\b|\bavda\.|\bvia\b|\bcorso\b|\bpiazza\b|\bcalle\b|\bc/|\bplot\b|\bflat\b|\bshop\b)|^\p{L}{3,}[\p{L}\s.\-']*\s\d{1,4}[a-zA-Z]?(?:[-/]\d{1,4})?$")
        .unwrap()
});
static COUNTRY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^(?:deutschland|germany|nederland|the\s+netherlands|netherlands|österreich|austria|belgium|belgië|belgique|united\s+kingdom|uk|england|usa|u\.s\.a\.|united\s+states|schweiz|switzerland)$")
        .unwrap()
});
static PART_SEPARATOR: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\s*[·•|]\s*|\s+[-–]\s+|,\s+").unwrap());

/// A legal-form name found in the text.
#[derive(Debug, Clone)]
struct Candidate {
    name: String,
    line: usize,
    col: usize,
    /// The other parts of a `Name · Street · City` line after the name.
    rest: Vec<String>,
    score: f64,
}

fn looks_like_address(s: &str) -> bool {
    let s = s.trim();
    let has_digit = s.chars().any(|c| c.is_ascii_digit());
    (has_digit && (STREET.is_match(s) || POSTCODE_CITY.is_match(s))) || COUNTRY.is_match(s)
}

/// A name from a cell part: leading labels and stray punctuation removed.
fn clean_name(part: &str) -> String {
    static LEAD: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)^(?:(?:firma|fa\.|die|den|company|bedrijf)\s+|[:\-–]\s*|(?:sold\s+by|verkauft\s+von|vendu\s+par|seller|supplier|vendor|from|verkäufer|lieferant|vendeur|fournisseur|sprzedawca|leverancier|proveedor|fornitore|bill\s+to|invoice\s+to|customer|client|cliente|kunde|klant|nabywca|buyer|käufer|name|company|firma|nom|raison\s+sociale|denominazione|ragione\s+sociale|nazwa|raz[óo]n\s+social|nombre)\s*:\s*)+").unwrap()
    });
    let part = part.trim().trim_end_matches([',', ';', ':']);
    LEAD.replace(part, "")
        .trim()
        .trim_start_matches(['(', ')'])
        .trim()
        .to_string()
}

/// The name in an inline labelled value (`Sprzedawca: Stocznia "Bryza" Sp. z o.o., ul.
/// Marynarki 96, 80-557 Gdańsk, NIP …`): the comma-separated parts before the first
/// address or id part.
fn name_before_address(value: &str) -> String {
    static ID_PART: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)^(?:nip|regon|vat|ust|btw|tva|iva|gstin|siret|cif|nif|p\.?\s?iva|tel|phone|e-?mail)\b").unwrap()
    });
    let parts: Vec<&str> = value.split(", ").collect();
    let kept: Vec<&str> = parts
        .iter()
        .take_while(|p| {
            !looks_like_address(p) && !ID_PART.is_match(p.trim()) && !STREET.is_match(p)
        })
        .copied()
        .collect();
    if kept.is_empty() {
        value.to_string()
    } else {
        kept.join(", ")
    }
}

/// The name a block gives under its label: the first line that reads as a name, or the
/// value of a `Name:`/`Denominazione:`/`Firma:` line; other `key: value` lines (ids,
/// addresses) are passed over.
fn name_below(doc: &Doc, label_line: usize, col: usize, col_to: usize) -> Option<(usize, String)> {
    static NAME_KEY: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)^(?:name|company|firma|nom|raison\s+sociale|denominazione|ragione\s+sociale|nazwa|raz[óo]n\s+social|nombre)\s*:?\s*$").unwrap()
    });
    let mut i = label_line;
    for _ in 0..4 {
        let j = doc.next_nonblank(i, 2)?;
        i = j;
        let line = &doc.lines[j];
        let Some(k) = line
            .cells
            .iter()
            .position(|c| c.col + 3 >= col && c.col < col_to && c.col <= col + 12)
        else {
            continue;
        };
        let cell = &line.cells[k];
        let text = cell.text.trim();
        if NAME_KEY.is_match(text.trim_end_matches(':').trim()) {
            if let Some(value) = line.cells.get(k + 1) {
                let name = clean_name(value.text.trim_start_matches(':'));
                if is_name(&name) {
                    return Some((j, name));
                }
            }
            continue;
        }
        let name = clean_name(&name_before_address(text));
        if name.contains(':') || looks_like_address(&name) || !is_name(&name) {
            continue;
        }
        return Some((j, name));
    }
    None
}

fn is_name(s: &str) -> bool {
    s.chars().filter(|c| c.is_alphabetic()).count() >= 2 && !NOT_A_NAME.is_match(s)
}

/// A labelled recipient block: where it is, the name it gives, and whether it is a
/// delivery address.
#[derive(Debug, Clone)]
struct Recipient {
    block: Block,
    name: Option<String>,
    ship: bool,
}

/// Every labelled recipient block (`Bill to`, `Ship to`, `Rechnungsanschrift`,
/// `Nabywca`, `Client`, `Facturé à`, …) in the upper part of the document.
fn recipient_blocks(doc: &Doc) -> Vec<Recipient> {
    let mut out = Vec::new();
    for (i, line) in doc.lines.iter().enumerate().take(45) {
        for (k, cell) in line.cells.iter().enumerate() {
            let Some(c) = RECIPIENT.captures(&cell.text) else {
                continue;
            };
            let rest = c.get(1).map_or("", |m| m.as_str());
            if NOT_A_BLOCK.is_match(rest) {
                continue;
            }
            let col_to = line.cells.get(k + 1).map_or(usize::MAX, |n| n.col);
            let inline = clean_name(rest);
            let (name, name_line) = if is_name(&inline) {
                (Some(clean_name(&name_before_address(&inline))), i)
            } else {
                match name_below(doc, i, cell.col, col_to) {
                    Some((j, name)) => (Some(name), j),
                    None => (None, doc.next_nonblank(i, 2).unwrap_or(i)),
                }
            };
            let mut last = name_line;
            while last + 1 < doc.lines.len() && last < i + 7 && !doc.lines[last + 1].is_blank() {
                last += 1;
            }
            out.push(Recipient {
                block: Block {
                    first: i,
                    last,
                    col_from: cell.col,
                    col_to,
                },
                name,
                ship: SHIP_LABEL.is_match(
                    c.get(0)
                        .map_or("", |m| m.as_str())
                        .split(':')
                        .next()
                        .unwrap_or(""),
                ),
            });
        }
    }
    out
}

/// An unlabelled address block: a name over street and postcode lines in one column,
/// near the top (a letterhead, or the address window of a letter).
#[derive(Debug, Clone)]
struct AddressBlock {
    block: Block,
    name: String,
}

fn is_sender_line(text: &str) -> bool {
    let parts: Vec<&str> = PART_SEPARATOR.split(text).collect();
    parts.len() >= 2
        && text.contains(['·', '•', '|'])
        && parts.iter().any(|p| POSTCODE_CITY.is_match(p))
}

fn address_blocks(doc: &Doc) -> Vec<AddressBlock> {
    static NOT_BLOCK_NAME: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)^(?:attn|att|fao|z\.\s?hd|zhd|zu\s+händen|t\.?\s?a\.?\s?v|à\s+l'attention|a\s+l'attention|c/o|herrn?|frau|mr|mrs|ms|m\.|mme)\b")
            .unwrap()
    });
    let mut out = Vec::new();
    // Addresses stand above the items: stop at the first line with an amount.
    let n = doc
        .lines
        .iter()
        .position(|l| numbers_in(&l.text, true).iter().any(|n| n.decimals == 2))
        .unwrap_or(doc.lines.len())
        .min(35);
    for i in 0..n {
        for (k, cell) in doc.lines[i].cells.iter().enumerate() {
            let near = |line: usize| {
                doc.lines[line]
                    .cells
                    .iter()
                    .find(|c| c.col.abs_diff(cell.col) <= 2)
            };
            if i > 0 && near(i - 1).is_some() {
                continue;
            }
            let mut texts = Vec::new();
            let mut j = i;
            while j < doc.lines.len() && j < i + 9 {
                match near(j) {
                    Some(c) => texts.push(c.text.clone()),
                    None => break,
                }
                j += 1;
            }
            let addressed = texts
                .iter()
                .skip(1)
                .any(|t| PART_SEPARATOR.split(t).any(|p| POSTCODE_CITY.is_match(p)));
            if texts.len() < 2 || !addressed {
                continue;
            }
            let name = texts.iter().map(|t| clean_name(t)).find(|t| {
                is_name(t)
                    && !is_sender_line(t)
                    && !looks_like_address(t)
                    && !NOT_BLOCK_NAME.is_match(t)
                    && !t.contains(':')
            });
            let Some(name) = name else {
                continue;
            };
            let col_to = doc.lines[i].cells.get(k + 1).map_or(usize::MAX, |c| c.col);
            out.push(AddressBlock {
                block: Block {
                    first: i,
                    last: j - 1,
                    col_from: cell.col,
                    col_to,
                },
                name,
            });
        }
    }
    out
}

/// The issuer block when a label names it (`Lieferant:`, `From:`, `Vendor`).
fn issuer_label(doc: &Doc) -> Option<(usize, usize, String)> {
    for (i, line) in doc.lines.iter().enumerate() {
        for cell in &line.cells {
            let Some(c) = ISSUER.captures(&cell.text) else {
                continue;
            };
            let rest = clean_name(c.get(1).map_or("", |m| m.as_str()));
            if NOT_A_BLOCK.is_match(&rest) {
                continue;
            }
            if is_name(&rest) {
                return Some((i, cell.col, clean_name(&name_before_address(&rest))));
            }
            let col_to = line
                .cells
                .iter()
                .find(|n| n.col > cell.col)
                .map_or(usize::MAX, |n| n.col);
            if let Some((j, name)) = name_below(doc, i, cell.col, col_to) {
                let col = doc.lines[j]
                    .cell_near(cell.col, 12)
                    .map_or(cell.col, |c| c.col);
                return Some((j, col, name));
            }
        }
    }
    None
}

fn legal_form_candidates(doc: &Doc) -> Vec<Candidate> {
    let mut out = Vec::new();
    for (i, line) in doc.lines.iter().enumerate() {
        for cell in &line.cells {
            // `Acme Analytics, Inc.`: a legal form split off by its comma belongs to the
            // name before it.
            let mut parts: Vec<String> = Vec::new();
            for piece in PART_SEPARATOR.split(&cell.text) {
                let bare_form = LEGAL_FORM.is_match(piece.trim())
                    && LEGAL_FORM.find(piece.trim()).is_some_and(|m| {
                        m.start() == 0 || piece.trim()[..m.start()].trim().is_empty()
                    });
                match parts.last_mut() {
                    Some(last)
                        if bare_form
                            && cell.text.contains(&format!("{last}, {}", piece.trim())) =>
                    {
                        last.push_str(", ");
                        last.push_str(piece.trim());
                    }
                    _ => parts.push(piece.to_string()),
                }
            }
            for (p, part) in parts.iter().enumerate() {
                let name = clean_name(part);
                if !LEGAL_FORM.is_match(&name) || !is_name(&name) {
                    continue;
                }
                let letters_before_form = LEGAL_FORM.find(&name).map_or(0, |m| {
                    name[..m.start()]
                        .chars()
                        .filter(|c| c.is_alphabetic())
                        .count()
                });
                if letters_before_form < 2 {
                    continue;
                }
                let offset = cell.text.find(part).unwrap_or(0);
                let rest: Vec<String> = parts[p + 1..]
                    .iter()
                    .map(|s| s.trim().to_string())
                    .collect();
                let sender_line = rest.iter().any(|r| POSTCODE_CITY.is_match(r));
                let position = if i < 10 {
                    10.0
                } else if i < 20 {
                    5.0
                } else {
                    3.0
                };
                out.push(Candidate {
                    name,
                    line: i,
                    col: cell.col + col_of(&cell.text, offset),
                    rest,
                    score: position + if sender_line { 6.0 } else { 0.0 },
                });
            }
        }
    }
    let mut counts: HashMap<String, usize> = HashMap::new();
    for c in &out {
        *counts.entry(c.name.to_lowercase()).or_default() += 1;
    }
    for c in &mut out {
        c.score += 4.0 * (counts[&c.name.to_lowercase()] - 1) as f64;
    }
    out
}

/// The block under a sender line (`ACME GmbH · Str. 1 · 12345 Berlin`, as German and
/// Austrian letters print it above the address window), which is the recipient's.
fn window_after_sender_line(doc: &Doc) -> Option<Block> {
    let (line, cell) = doc.lines.iter().enumerate().take(20).find_map(|(i, l)| {
        l.cells
            .iter()
            .find(|c| {
                is_sender_line(&c.text) && c.text.chars().filter(|c| c.is_alphabetic()).count() > 8
            })
            .map(|c| (i, c))
    })?;
    let first = doc.next_nonblank(line, 2)?;
    let mut last = first;
    while last + 1 < doc.lines.len() && last < first + 6 && !doc.lines[last + 1].is_blank() {
        last += 1;
    }
    let col_to = doc.lines[first]
        .cells
        .iter()
        .find(|c| c.col > cell.col + 10)
        .map_or(usize::MAX, |c| c.col);
    Some(Block {
        first,
        last,
        col_from: cell.col,
        col_to,
    })
}

/// The first meaningful line, for letterheads without a legal form (`Bäckerei Müller`).
fn letterhead(doc: &Doc, blocks: &[Block]) -> Option<(usize, usize, String)> {
    static TITLE: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)^(?:rechnung|invoice|tax\s+invoice|factuur|gutschrift|credit|lieferschein|delivery|pakbon|bestellung|purchase|inkooporder|bestelling|receipt|quittung|kassenbon|kassabon|bon|beleg|seite|page|datum|date|kopie|copy|original|duplikat|duplicate|facture|avoir|faktura|korekta|factura|fattura|nota|rectificativa|oryginał|kopia|copia|strona|pagina|miejsce|data)\b")
            .unwrap()
    });
    doc.lines
        .iter()
        .enumerate()
        .filter(|(_, l)| !l.is_blank())
        .take(4)
        .flat_map(|(i, l)| l.cells.iter().map(move |c| (i, c)))
        .find(|(i, c)| {
            let t = c.text.trim();
            if t.starts_with('(') {
                return false;
            }
            let letters = t.chars().filter(|c| c.is_alphabetic()).count();
            let digits = t.chars().filter(|c| c.is_ascii_digit()).count();
            letters >= 3
                && digits * 2 < letters
                && !t.contains(':')
                && !TITLE.is_match(t)
                && !looks_like_address(t)
                && is_name(t)
                && !blocks.iter().any(|b| b.contains(*i, c.col))
        })
        .map(|(i, c)| (i, c.col, clean_name(&c.text)))
}

/// The address lines under (or beside) the supplier's name.
fn address_after(doc: &Doc, line: usize, col: usize, rest: &[String]) -> Option<String> {
    let inline: Vec<&str> = rest
        .iter()
        .map(|s| s.as_str())
        .filter(|s| looks_like_address(s))
        .collect();
    if !inline.is_empty() {
        return Some(inline.join(", "));
    }
    let mut parts = Vec::new();
    let mut i = line;
    while parts.len() < 3 {
        let Some(j) = doc.next_nonblank(i, 1) else {
            break;
        };
        let Some(cell) = doc.lines[j].cell_near(col, 10) else {
            break;
        };
        // One line may hold the whole address: `Lindenallee 4 - 50667 Köln`.
        static LINE_SEPARATOR: LazyLock<Regex> =
            LazyLock::new(|| Regex::new(r"\s*[·•|]\s*|\s+[-–]\s+").unwrap());
        let pieces: Vec<&str> = LINE_SEPARATOR
            .split(&cell.text)
            .map(str::trim)
            .filter(|p| looks_like_address(p))
            .collect();
        if pieces.is_empty() {
            break;
        }
        parts.extend(pieces.into_iter().map(str::to_string));
        i = j;
    }
    (!parts.is_empty()).then(|| parts.join(", "))
}

fn same_name(a: &str, b: &str) -> bool {
    let (a, b) = (a.to_lowercase(), b.to_lowercase());
    a.contains(&b) || b.contains(&a)
}

/// The supplier, its address and the customer.
pub(crate) fn parties(doc: &Doc, kind: DocumentType) -> Parties {
    let candidates = legal_form_candidates(doc);
    let recipients = recipient_blocks(doc);
    let mut blocks: Vec<Block> = recipients.iter().map(|r| r.block).collect();
    if blocks.is_empty()
        && let Some(window) = window_after_sender_line(doc)
    {
        blocks.push(window);
    }
    let in_blocks = |line: usize, col: usize| blocks.iter().any(|b| b.contains(line, col));
    // The customer a label names: a billing address before a delivery address.
    let named_recipient = recipients
        .iter()
        .filter(|r| !r.ship)
        .chain(recipients.iter().filter(|r| r.ship))
        .find_map(|r| r.name.clone());
    let block_name = named_recipient.or_else(|| {
        blocks.first().and_then(|b| {
            candidates
                .iter()
                .find(|c| b.contains(c.line, c.col))
                .map(|c| c.name.clone())
                .or_else(|| first_name_in(doc, b))
        })
    });
    let recipient_names: Vec<String> = recipients
        .iter()
        .filter_map(|r| r.name.clone())
        .chain(block_name.clone())
        .collect();
    let issuer = issuer_label(doc);
    let best_outside = candidates
        .iter()
        .filter(|c| !in_blocks(c.line, c.col))
        .filter(|c| !recipient_names.iter().any(|r| same_name(r, &c.name)))
        .max_by(|a, b| a.score.total_cmp(&b.score).then(b.line.cmp(&a.line)));
    // A letterhead without a legal form beats a company name further down that heads an
    // address block of its own (the addressee), when the letterhead carries a sender's
    // marks (phone, e-mail, web, a tax or company number).
    let head = letterhead(doc, &blocks).filter(|(line, col, _)| {
        let first = doc.lines.iter().position(|l| !l.is_blank());
        first == Some(*line) && sender_marks(doc, *line, *col)
    });
    let best_outside = best_outside.filter(|c| {
        head.as_ref().is_none_or(|(line, _, name)| {
            c.line <= line + 1 || same_name(name, &c.name) || c.score >= 14.0
        })
    });
    // The issuer: a labelled supplier, the best legal-form name, or the letterhead.
    let (issuer_name, issuer_address, source, issuer_line) = match (&issuer, best_outside) {
        (Some((line, col, name)), _) if kind != DocumentType::PurchaseOrder => (
            Some(name.clone()),
            address_after(doc, *line, *col, &[]),
            SupplierSource::Labelled,
            Some(*line),
        ),
        (_, Some(c)) => (
            Some(c.name.clone()),
            address_after(doc, c.line, c.col, &c.rest),
            SupplierSource::LegalForm,
            Some(c.line),
        ),
        _ => match letterhead(doc, &blocks) {
            Some((line, col, name)) => (
                Some(name),
                address_after(doc, line, col, &[]),
                SupplierSource::Letterhead,
                Some(line),
            ),
            None => (None, None, SupplierSource::None, None),
        },
    };
    let other_name = |exclude: Option<&str>| {
        candidates
            .iter()
            .filter(|c| c.line < 25)
            .find(|c| exclude.is_none_or(|e| !same_name(e, &c.name)))
            .map(|c| c.name.clone())
    };
    if kind == DocumentType::PurchaseOrder {
        let supplier = issuer
            .map(|(_, _, name)| name)
            .or(block_name)
            .filter(|s| issuer_name.as_deref().is_none_or(|i| !same_name(i, s)));
        let supplier_address = candidates
            .iter()
            .find(|c| supplier.as_deref().is_some_and(|s| same_name(s, &c.name)))
            .and_then(|c| address_after(doc, c.line, c.col, &c.rest));
        return Parties {
            supplier_source: if supplier.is_some() {
                SupplierSource::Labelled
            } else {
                SupplierSource::None
            },
            supplier,
            supplier_address,
            customer: issuer_name,
            recipient_blocks: blocks,
        };
    }
    let not_issuer = |name: &str| issuer_name.as_deref().is_none_or(|i| !same_name(i, name));
    let mut customer = block_name.filter(|c| not_issuer(c));
    if customer.is_none() {
        // No label and no window: the first other address block near the top.
        if let Some(a) = address_blocks(doc).into_iter().find(|a| {
            not_issuer(&a.name)
                && issuer_line.is_none_or(|l| !(a.block.first..=a.block.last).contains(&l))
        }) {
            blocks.push(a.block);
            customer = Some(a.name);
        }
    }
    let customer = customer.or_else(|| issuer_name.as_deref().and_then(|i| other_name(Some(i))));
    Parties {
        supplier: issuer_name,
        supplier_address: issuer_address,
        customer,
        recipient_blocks: blocks,
        supplier_source: source,
    }
}

/// Whether the lines under a letterhead name (same column, up to eight) carry what only
/// a sender prints: phone, e-mail, web address, a tax or company number.
fn sender_marks(doc: &Doc, line: usize, col: usize) -> bool {
    static MARKS: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)\b(?:tel|tél|phone|telefon|mobile|fax|e-?mail|www|siret|siren|kvk|nip|regon|gstin|vat|ust|btw|tva|cif|nif|p\.?\s?iva|abn|ein|steuer)\b|@").unwrap()
    });
    (line..doc.lines.len().min(line + 9)).any(|i| {
        doc.lines[i]
            .cells
            .iter()
            .any(|c| c.col.abs_diff(col) <= 3 && MARKS.is_match(&c.text))
    })
}

/// The first line of a block that reads as a name (not an attention line, an address
/// or a sender line).
fn first_name_in(doc: &Doc, block: &Block) -> Option<String> {
    (block.first..=block.last.min(doc.lines.len().saturating_sub(1))).find_map(|i| {
        doc.lines[i]
            .cells
            .iter()
            .find(|c| block.contains(i, c.col))
            .map(|c| clean_name(&c.text))
            .filter(|t| {
                is_name(t) && !is_sender_line(t) && !looks_like_address(t) && !t.contains(':')
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_letterhead_company_is_the_supplier_and_the_bill_to_company_the_customer() {
        let doc = Doc::new(
            "Northwind Traders Ltd\n14 Harbour Road\nBristol BS1 4DJ\n\nBill to:\nContoso Ltd\n1 Main Street\nLeeds LS1 1AA\n",
        );

        let parties = parties(&doc, DocumentType::Invoice);

        assert_eq!(parties.supplier.as_deref(), Some("Northwind Traders Ltd"));
        assert_eq!(
            parties.supplier_address.as_deref(),
            Some("14 Harbour Road, Bristol BS1 4DJ")
        );
        assert_eq!(parties.customer.as_deref(), Some("Contoso Ltd"));
    }

    #[test]
    fn a_german_sender_line_names_the_supplier_and_the_window_below_the_customer() {
        let doc = Doc::new(
            "Müller Haustechnik GmbH · Industriestr. 12 · 80331 München\nBauträger Nord AG\nBahnhofstr. 1\n10115 Berlin\n\nRechnung\n\nCommerzbank AG   IBAN DE89 3704 0044 0532 0130 00\n",
        );

        let parties = parties(&doc, DocumentType::Invoice);

        assert_eq!(parties.supplier.as_deref(), Some("Müller Haustechnik GmbH"));
        assert_eq!(
            parties.supplier_address.as_deref(),
            Some("Industriestr. 12, 80331 München")
        );
        assert_eq!(parties.customer.as_deref(), Some("Bauträger Nord AG"));
    }

    #[test]
    fn on_a_purchase_order_the_addressed_vendor_is_the_supplier() {
        let doc = Doc::new(
            "Stadtwerke Beispiel GmbH\nPURCHASE ORDER\n\nVendor:\nAcme Supplies Ltd\n5 Dock Lane\n",
        );

        let parties = parties(&doc, DocumentType::PurchaseOrder);

        assert_eq!(parties.supplier.as_deref(), Some("Acme Supplies Ltd"));
        assert_eq!(
            parties.customer.as_deref(),
            Some("Stadtwerke Beispiel GmbH")
        );
    }
}
