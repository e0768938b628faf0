//! The document type, decided from titles and headings.
//!
//! Each line scores for the types it names; a title (the keyword opening a cell, as in
//! `RECHNUNG` or `Lieferschein Nr. 4711`) weighs more than a mention, the first lines
//! weigh more than the rest, and a keyword used as a reference label (`Lieferschein-Nr.`,
//! `Ihre Bestellung`, `zu Rechnung`) weighs little — an invoice that cites its delivery
//! note is still an invoice. Receipts (`Quittung`, `Kassenbon`, `Receipt`, `Kassabon`)
//! count as invoices: accounts payable books them the same way.

use std::sync::LazyLock;

use regex::Regex;

use super::text::Doc;
use crate::extract::DocumentType;

struct KindPattern {
    kind: DocumentType,
    re: Regex,
    /// Multiplier for this kind, so a credit note's title beats the `Rechnung` it cites.
    weight: f64,
}

static PATTERNS: LazyLock<Vec<KindPattern>> = LazyLock::new(|| {
    let p = |kind, pattern: &str, weight| KindPattern {
        kind,
        re: Regex::new(pattern).unwrap(),
        weight,
    };
    vec![
        p(
            DocumentType::CreditNote,
            r"(?i)\b(?:gutschrift(?:snummer)?|rechnungskorrektur|storno-?rechnung|credit\s*note|credit\s*memo|creditnota|credit\s*nota|creditfactuur|credit\s*factuur|avoir|facture\s+d'avoir|note\s+de\s+crédit|faktura\s+korygująca|korekta\s+faktury|factura\s+rectificativa|nota\s+de\s+(?:crédito|abono)|nota\s+di\s+credito)\b",
            1.5,
        ),
        p(
            DocumentType::DeliveryNote,
            r"(?i)\b(?:lieferschein(?:nummer)?|delivery\s*note|delivery\s*slip|packing\s*slip|packing\s*list|pakbon(?:nummer)?|afleverbon|leverbon|paklijst)\b",
            1.0,
        ),
        p(
            DocumentType::PurchaseOrder,
            r"(?i)\b(?:bestellung|purchase\s*order|inkooporder|bestelling|bestellschein|auftrag|order\s*form|bestellnummer|inkoopordernummer)\b",
            1.0,
        ),
        p(
            DocumentType::Invoice,
            r"(?i)\b(?:(?:pro\s*-?\s*forma\s*-?\s*)?rechnung|(?:tax\s+|commercial\s+)?invoice|factuur|faktura(?:\s+vat)?|facture|factura|fattura|receipt|quittung|kassenbon|kassabon|kwitantie|rechnungsnummer|rechnungsdatum|factuurnummer|factuurdatum|bill\s+of\s+supply)\b",
            1.0,
        ),
    ]
});

/// A keyword followed by a number label: a numbered title at the start of a cell, a
/// reference elsewhere.
static NUMBER_AFTER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^\s*(?:[-.]?\s*(?:nr|no|nummer|number|num|datum|date|ref|vom|dated)\b|#|:)")
        .unwrap()
});
/// A possessive or preposition before the keyword makes it a reference.
static REFERENCE_BEFORE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:ihre|ihrer|ihr|unsere|unserer|your|our|uw|zu|zur|zum|gemäß|laut|lt\.|per|for|to|op|bij|betreft|ref\.?|reference|bezug|from|der|die|the|van|aus|with|mit|see|siehe|original|ursprüngliche|korrektur|do|de|d'|du|la|rif\.?|applies\s+to|against|votre|vs\.?)\s*:?\s*$")
        .unwrap()
});

/// A word after the keyword that makes it a cited document (`Factura rectificada`,
/// `Facture d'origine`, `Original invoice`).
static CITED_AFTER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^\s*(?:rectificada|d'origine|originale?|initiale|rectifiée|korygowan\w*|oryginalna|corrected)\b")
        .unwrap()
});

/// The document's type; `Other` when no heading names one.
pub(crate) fn classify(doc: &Doc) -> DocumentType {
    let mut scores = [0.0_f64; 4];
    for (i, line) in doc.lines.iter().enumerate() {
        // Earlier lines weigh more, smoothly, so the first of two titles wins a tie.
        let position = (3.0 - 0.1 * i as f64).max(0.5);
        for (k, pattern) in PATTERNS.iter().enumerate() {
            for cell in &line.cells {
                // A credit note's title contains the invoice word (`Faktura korygująca`,
                // `Factura rectificativa`): inside it, that word does not count.
                let credit_spans: Vec<(usize, usize)> = PATTERNS[0]
                    .re
                    .find_iter(&cell.text)
                    .map(|m| (m.start(), m.end()))
                    .collect();
                for m in pattern.re.find_iter(&cell.text) {
                    if k != 0
                        && credit_spans
                            .iter()
                            .any(|&(a, b)| m.start() >= a && m.end() <= b)
                    {
                        continue;
                    }
                    let keyword = m.as_str().to_lowercase();
                    let before = &cell.text[..m.start()];
                    let after = &cell.text[m.end()..];
                    let label_only = keyword.ends_with("nummer") || keyword.ends_with("datum");
                    let at_start = before.trim().is_empty();
                    let numbered = NUMBER_AFTER.is_match(after);
                    let strength = if label_only
                        || REFERENCE_BEFORE.is_match(before)
                        || CITED_AFTER.is_match(after)
                    {
                        0.2
                    } else if at_start && !numbered {
                        2.0
                    } else if at_start {
                        1.0
                    } else if numbered {
                        0.2
                    } else {
                        0.5
                    };
                    scores[k] += position * strength * pattern.weight;
                }
            }
        }
    }
    let (best, score) =
        scores.iter().enumerate().fold(
            (0, 0.0),
            |acc, (k, &s)| if s > acc.1 { (k, s) } else { acc },
        );
    if score < 1.0 {
        DocumentType::Other
    } else {
        PATTERNS[best].kind
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(text: &str) -> DocumentType {
        classify(&Doc::new(text))
    }

    #[test]
    fn an_invoice_citing_its_delivery_note_and_order_is_still_an_invoice() {
        let text = "ACME GmbH\n\nRECHNUNG\nRechnungsnummer: RE-1\nIhre Bestellung: 4711\nLieferschein-Nr.: LS-9\n";

        assert_eq!(kind(text), DocumentType::Invoice);
    }

    #[test]
    fn a_credit_note_citing_the_invoice_is_a_credit_note() {
        let text = "ACME GmbH\nGutschrift Nr. GS-7\nzu Rechnung Nr. RE-1 vom 01.04.2014\n";

        assert_eq!(kind(text), DocumentType::CreditNote);
    }

    #[test]
    fn titles_name_orders_and_delivery_notes_in_three_languages() {
        assert_eq!(
            kind("PURCHASE ORDER\nPO number: 4500"),
            DocumentType::PurchaseOrder
        );
        assert_eq!(
            kind("Inkooporder\nOrdernummer 77"),
            DocumentType::PurchaseOrder
        );
        assert_eq!(
            kind("Lieferschein\nLieferschein-Nr. 5"),
            DocumentType::DeliveryNote
        );
        assert_eq!(kind("Pakbon 2014-33\nAantal"), DocumentType::DeliveryNote);
        assert_eq!(kind("Factuur\nFactuurnummer 12"), DocumentType::Invoice);
    }

    #[test]
    fn titles_in_french_polish_spanish_and_italian_are_read() {
        assert_eq!(
            kind("FACTURE N° F-1\nTotal TTC 120,00"),
            DocumentType::Invoice
        );
        assert_eq!(
            kind("AVOIR N° AV-7\nFacture d'origine : F-1"),
            DocumentType::CreditNote
        );
        assert_eq!(kind("Faktura VAT nr FV/1/2024"), DocumentType::Invoice);
        assert_eq!(
            kind("FAKTURA KORYGUJĄCA nr FK/3/2024\ndo faktury nr FV/1/2024"),
            DocumentType::CreditNote
        );
        assert_eq!(
            kind("FACTURA RECTIFICATIVA\nFactura rectificada: 2024-1877"),
            DocumentType::CreditNote
        );
        assert_eq!(kind("FATTURA N. 245/2024"), DocumentType::Invoice);
        assert_eq!(
            kind("NOTA DI CREDITO N. NC 3/2024\nRif. fattura n. 118/2024"),
            DocumentType::CreditNote
        );
    }

    #[test]
    fn prose_without_a_heading_is_other() {
        assert_eq!(
            kind("Dear Anna,\nthanks for lunch yesterday. See you in May.\n"),
            DocumentType::Other
        );
    }
}
