//! Line items from tables: the rows between a header (`Pos  Beschreibung  Menge
//! Einzelpreis  Gesamt`, `Description  Qty  Unit price  Amount`, `Omschrijving  Aantal
//! Prijs  Bedrag`) and the totals block.
//!
//! A row is a description followed by up to three numbers — quantity, unit price,
//! amount — possibly with units (`Stk`, `pcs`, `h`), currency symbols and a VAT-rate
//! column, which is skipped. Two numbers are quantity and amount when the first is a
//! whole number, else unit price and amount. Rows where quantity × unit price is not the
//! amount are kept, but reported, so they do not raise confidence.

use std::sync::LazyLock;

use regex::Regex;

use super::amount::{Num, close, numbers_in};
use super::text::{Doc, Line};
use crate::extract::LineItem;

static HEADER_WORD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?P<desc>beschreibung|bezeichnung|artikelbezeichnung|artikel|leistung|description|item|omschrijving|product|produkt|text|service|details|particulars|dienst|artikelomschrijving)\b|\b(?P<qty>menge|anzahl|anz\.?|qty|quantity|aantal|stück|hours|hrs|stunden|std\.?|uren|units|einheiten|qté)\b|\b(?P<price>einzelpreis|e-preis|ep|preis|unit\s*price|price|rate|prijs|stukprijs|unit\s*cost|tarief|stückpreis)\b|\b(?P<amount>gesamt|gesamtpreis|betrag|summe|amount|total|line\s*total|bedrag|totaal|ges\.-preis|netto)\b")
        .unwrap()
});
static STOP: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^\s*(?:zwischensumme|summe|sub\s*-?\s*total|total|totaal|subtotaal|netto|nettobetrag|gesamt|gesamtbetrag|rechnungsbetrag|übertrag|carried\s+forward|mwst|ust|vat|btw|tax|te\s+betalen|amount\s+due|balance|zzgl|excl|incl|inkl|bitte|please|zahlbar|payment|betaling|wir\s+danken|thank|bedankt|iban|bankverbindung|montant|tva|iva|totale|razem|suma|do\s+zap[łl]aty|warto[śs][ćc]|kwota|base\s+imponible|imponibile|taxable|[csiu]gst|subtotaal|goods\s+total|invoice\s+total|net\s+[àa]\s+payer|grand\s+total|w\s+tym|übertrag|continued|carried|net)\b")
        .unwrap()
});
static UNIT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^(?:stk\.?|stück|st\.?|pcs\.?|pc\.?|pce|pieces|ea\.?|each|h|hrs?\.?|hours?|std\.?|stunden?|uur|uren|m|m2|m²|m3|kg|g|l|ltr|pauschal|psch\.?|pausch\.?|x|stuks?|set|sets|lfm|km|tag|tage|dag|dagen|days?|months?|monat|maand|units?|lot|pck|pack|paar|rolle|box|€|\$|£|eur|usd|gbp|chf|%)$")
        .unwrap()
});

/// The items and whether every row with all three numbers multiplies out.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Items {
    pub items: Vec<LineItem>,
    pub consistent: bool,
    /// The lines read as rows, which the totals block must not read again.
    pub rows: Vec<usize>,
}

fn is_header(line: &Line) -> bool {
    let mut kinds = [false; 4];
    for c in HEADER_WORD.captures_iter(&line.text) {
        for (k, name) in ["desc", "qty", "price", "amount"].iter().enumerate() {
            kinds[k] |= c.name(name).is_some();
        }
    }
    let no_amounts = numbers_in(&line.text, false)
        .iter()
        .all(|n| n.decimals == 0);
    let [desc, qty, price, amount] = kinds;
    no_amounts
        && line.cells.len() >= 2
        && (desc || qty)
        && (price || amount)
        && kinds.iter().filter(|&&k| k).count() >= 2
}

/// A token or cell made only of numbers, units and currency signs.
fn numeric_part(text: &str) -> Option<Vec<Num>> {
    let nums = numbers_in(text, false);
    if nums.is_empty() {
        return None;
    }
    let mut rest = String::new();
    let mut last = 0;
    for n in &nums {
        rest.push_str(&text[last..n.start]);
        rest.push(' ');
        last = n.end;
    }
    rest.push_str(&text[last..]);
    let only_units = rest
        .split_whitespace()
        .all(|w| UNIT.is_match(w.trim_matches(|c: char| c == '(' || c == ')' || c == ',')));
    only_units.then_some(nums)
}

/// Splits a row into its description and trailing numbers.
fn split_row(line: &Line) -> (String, Vec<Num>) {
    let mut nums: Vec<Num> = Vec::new();
    let pieces: Vec<String> = if line.cells.len() >= 2 {
        line.cells.iter().map(|c| c.text.clone()).collect()
    } else {
        line.text.split_whitespace().map(str::to_string).collect()
    };
    let mut cut = pieces.len();
    while cut > 0 {
        match numeric_part(&pieces[cut - 1]) {
            Some(mut found) if nums.iter().filter(|n| !n.percent).count() < 4 => {
                found.append(&mut nums);
                nums = found;
                cut -= 1;
            }
            _ => {
                if UNIT.is_match(&pieces[cut - 1]) && cut < pieces.len() {
                    cut -= 1;
                    continue;
                }
                break;
            }
        }
    }
    let mut leading: Vec<&str> = pieces[..cut].iter().map(String::as_str).collect();
    // A position number opening the row (`1`, `10.`, `001`).
    if leading.len() > 1
        && leading[0]
            .trim_end_matches('.')
            .chars()
            .all(|c| c.is_ascii_digit())
    {
        leading.remove(0);
    }
    (leading.join(" "), nums)
}

fn item_of(description: String, nums: &[Num]) -> Option<(LineItem, bool)> {
    let values: Vec<&Num> = nums.iter().filter(|n| !n.percent).collect();
    let amount = values.last()?;
    if description.chars().filter(|c| c.is_alphabetic()).count() < 2
        || amount.decimals == 0 && values.len() < 3
    {
        return None;
    }
    let fits = |q: f64, p: f64, a: f64| close(q * p, a) || (q * p - a).abs() <= a.abs() * 0.005;
    let (quantity, unit_price, consistent) = match values.len() {
        1 => (None, None, true),
        2 if values[0].decimals == 0 => (Some(values[0].value), None, true),
        2 => (None, Some(values[0].value), true),
        n => {
            let a = amount.value;
            let (q, p) = (values[n - 3].value, values[n - 2].value);
            // A column between price and amount (a VAT rate printed without `%`).
            let shifted = (n >= 4).then(|| (values[n - 4].value, values[n - 3].value));
            if fits(q, p, a) {
                (Some(q), Some(p), true)
            } else if let Some((q2, p2)) = shifted.filter(|&(q2, p2)| fits(q2, p2, a)) {
                (Some(q2), Some(p2), true)
            } else {
                (Some(q), Some(p), false)
            }
        }
    };
    let item = LineItem {
        description,
        quantity,
        unit_price,
        amount: Some(amount.value),
    };
    Some((item, consistent))
}

/// The line items of every table in the document.
pub(crate) fn line_items(doc: &Doc) -> Items {
    let mut items = Vec::new();
    let mut rows = Vec::new();
    let mut consistent = true;
    let mut in_table = false;
    let mut blanks = 0;
    for (i, line) in doc.lines.iter().enumerate() {
        if is_header(line) {
            in_table = true;
            blanks = 0;
            continue;
        }
        if !in_table {
            continue;
        }
        if line.is_blank() {
            blanks += 1;
            if blanks >= 3 {
                in_table = false;
            }
            continue;
        }
        blanks = 0;
        if STOP.is_match(&line.text) {
            in_table = false;
            continue;
        }
        let (description, nums) = split_row(line);
        if let Some((item, fits)) = item_of(description, &nums) {
            consistent &= fits;
            items.push(item);
            rows.push(i);
        }
    }
    Items {
        items,
        consistent,
        rows,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_between_the_header_and_the_totals_are_items() {
        let doc = Doc::new(
            "Pos  Beschreibung              Menge     Einzelpreis    MwSt    Gesamt\n\
             1    Wartung Heizungsanlage    2 Std        85,00 €     19 %    170,00 €\n\
             2    Dichtungssatz DN 20       4 Stk        12,50 €     19 %     50,00 €\n\
             3    Anfahrtspauschale                                  19 %     35,00 €\n\
                                                         Summe netto          255,00 €\n",
        );

        let items = line_items(&doc);

        assert!(items.consistent);
        assert_eq!(items.items.len(), 3);
        assert_eq!(
            items.items[1],
            LineItem {
                description: "Dichtungssatz DN 20".into(),
                quantity: Some(4.0),
                unit_price: Some(12.5),
                amount: Some(50.0),
            }
        );
        assert_eq!(items.items[2].quantity, None);
        assert_eq!(items.items[2].amount, Some(35.0));
    }

    #[test]
    fn a_row_that_does_not_multiply_out_is_reported() {
        let doc = Doc::new(
            "Description      Qty   Unit price   Amount\nWidget            3      10.00       50.00\n",
        );

        let items = line_items(&doc);

        assert_eq!(items.items.len(), 1);
        assert!(!items.consistent);
    }

    #[test]
    fn without_a_header_there_are_no_items() {
        let doc = Doc::new("Beratung   2   50,00   100,00\n");

        assert!(line_items(&doc).items.is_empty());
    }
}
