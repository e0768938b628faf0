//! The totals block (net, VAT, gross) and the currency.
//!
//! Every labelled amount is a candidate: the last amount after its label on the line
//! (rates such as `19 %` are skipped; when a line holds several labels each gets the
//! text up to the next one), or the amount alone on the next line. Among the
//! candidates, a subtotal, VAT and total that agree (net + VAT = gross to the cent) win;
//! otherwise the last subtotal, the VAT lines and the strongest, last total are taken
//! and a missing third is derived from the other two.

use std::sync::LazyLock;

use regex::Regex;

use super::amount::{Num, cents, close, numbers_in};
use super::ids::{ibans_in, vat_ids_in};
use super::text::{Doc, Lang};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Subtotal,
    Vat,
    Total,
}

#[derive(Debug, Clone, Copy)]
struct Found {
    role: Role,
    value: f64,
    line: usize,
    /// For totals: 2 for `amount due`/`zu zahlen`/`incl. VAT`, 1 for `Total`/`Summe`.
    strength: u8,
}

/// The totals and how far they can be trusted.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Totals {
    pub subtotal: Option<f64>,
    pub vat: Option<f64>,
    pub total: Option<f64>,
    /// All three were printed and net + VAT = gross.
    pub agree: bool,
    /// All three were printed and they do not add up.
    pub disagree: bool,
    /// The line of the first totals label, where item tables end.
    pub first_line: Option<usize>,
}

const TAX: &str = r"(?:mwst\.?|ust\.?|vat|tax|btw|steuer|umsatzsteuer|mehrwertsteuer)";

static LABELS: LazyLock<Regex> = LazyLock::new(|| {
    let rate = r"(?:\s*\d{1,2}(?:[.,]\d{1,2})?\s*%\s*)?";
    let suffix = format!(r"(?:\s*(?:\.|\(|\))?\s*{rate}{TAX})?\.?\)?");
    let sub = format!(
        r"zwischensumme|sub\s*-?\s*total|subtotaal|(?:summe|gesamt(?:betrag)?|total|totaal|rechnungsbetrag|betrag|bedrag|amount|waarde)\s*\(?\s*(?:netto|net|excl\.?|exkl\.?|excluding|exclusief|ohne|before|vor|ex\.?){suffix}|netto\s*-?\s*(?:betrag|summe|bedrag|wert|gesamt|rechnungsbetrag)?|nettosumme|nettowert|warenwert|net\s*(?:amount|total|value|worth)|total\s*net|excl\.?\s*(?:btw|vat|mwst)|exkl\.?\s*(?:mwst|ust)"
    );
    let strong_total = format!(
        r"(?:gesamt|rechnungs|end|zahl|brutto|gutschrifts|factuur|eind|totaal|total)\s*-?\s*(?:betrag|summe|bedrag)|(?:summe|total|gesamt|totaal|betrag|bedrag|amount)\s*\(?\s*(?:brutto|gross|incl\.?|inkl\.?|including|inclusief|inc\.?){suffix}|brutto|(?:noch\s+)?zu\s+zahlen(?:der\s+betrag)?|zahlbetrag|offener\s+betrag|grand\s+total|total\s*(?:due|payable|amount|to\s+pay)|amount\s*(?:due|payable|to\s+pay)|balance\s*due|te\s+betalen(?:\s+bedrag)?|eindtotaal|gesamtsumme|totaal\s*te\s*betalen"
    );
    let total = r"totaal|gesamt|summe|total|balance";
    let vat = r"(?:zzgl\.?\s*|plus\s*|zuzüglich\s*)?(?:\d{1,2}(?:[.,]\d{1,2})?\s*%\s*)?(?:mwst|mehrwertsteuer|umsatzsteuer|ust|vat|v\.a\.t\.?|btw|sales\s*tax|tax|omzetbelasting|gst|tva)";
    Regex::new(&format!(
        r"(?i)\b(?:(?P<sub>{sub})|(?P<strong>{strong_total})|(?P<total>{total})|(?P<vat>{vat}))\b\.?"
    ))
    .unwrap()
});
/// A VAT word that is an id label (`USt-IdNr.`, `VAT No.`, `BTW-nummer`), not an amount.
static ID_AFTER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^[\s.\-]*(?:id|nr|no\b|number|nummer|reg|ident|identifi|code|satz|rate\b|%\s*$|-?pflichtig|frei|exempt)")
        .unwrap()
});
/// Lines about payments made, cash and change are not the document's totals.
static PAYMENT_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:bezahlt|paid|erhalten|received|betaald|anzahlung|deposit|gegeben|rückgeld|change|bar\b|cash|skonto|discount|korting|rabatt)").unwrap()
});

fn amount_of(nums: &[Num]) -> Option<f64> {
    let amounts: Vec<&Num> = nums.iter().filter(|n| !n.percent).collect();
    amounts
        .iter()
        .rev()
        .find(|n| n.decimals == 2)
        .or(amounts.last())
        .map(|n| n.value)
}

fn found_in(doc: &Doc, item_rows: &[usize]) -> Vec<Found> {
    let mut out = Vec::new();
    for (i, line) in doc.lines.iter().enumerate() {
        if item_rows.contains(&i) {
            continue;
        }
        let text = &line.text;
        if PAYMENT_LINE.is_match(text) || !ibans_in(text).is_empty() || !vat_ids_in(text).is_empty()
        {
            continue;
        }
        let matches: Vec<_> = LABELS.captures_iter(text).collect();
        for (k, c) in matches.iter().enumerate() {
            let m = c.get(0).unwrap();
            let (role, strength) = if c.name("sub").is_some() {
                (Role::Subtotal, 0)
            } else if c.name("strong").is_some() {
                (Role::Total, 2)
            } else if c.name("total").is_some() {
                (Role::Total, 1)
            } else {
                (Role::Vat, 0)
            };
            let segment_end = matches
                .get(k + 1)
                .map_or(text.len(), |n| n.get(0).unwrap().start());
            let segment = &text[m.end()..segment_end];
            if role == Role::Vat && ID_AFTER.is_match(segment) {
                continue;
            }
            let value = amount_of(&numbers_in(segment, true)).or_else(|| {
                // The amount alone on the next line, under a label that stands alone.
                let alone =
                    k + 1 == matches.len() && segment.trim().trim_end_matches(':').is_empty();
                let j = doc.next_nonblank(i, 1).filter(|_| alone)?;
                let next = &doc.lines[j].text;
                let letters = next.chars().filter(|c| c.is_alphabetic()).count();
                (letters <= 3)
                    .then(|| amount_of(&numbers_in(next, true)))
                    .flatten()
            });
            if let Some(value) = value {
                out.push(Found {
                    role,
                    value,
                    line: i,
                    strength,
                });
            }
        }
    }
    out
}

/// The totals block, not reading the lines already read as item rows.
pub(crate) fn totals(doc: &Doc, item_rows: &[usize]) -> Totals {
    let found = found_in(doc, item_rows);
    let of = |role| found.iter().filter(move |f: &&Found| f.role == role);
    let subs: Vec<&Found> = of(Role::Subtotal).collect();
    let totals: Vec<&Found> = of(Role::Total).collect();
    let mut vats: Vec<f64> = of(Role::Vat).map(|f| f.value).collect();
    let distinct_vat_lines: Vec<&Found> = of(Role::Vat).collect();
    if distinct_vat_lines.len() > 1 {
        vats.push(cents(distinct_vat_lines.iter().map(|f| f.value).sum()));
    }
    let first_line = found.iter().map(|f| f.line).min();
    // A triple that adds up, preferring the strongest and latest total.
    let mut best: Option<(u8, usize, f64, f64, f64)> = None;
    for t in &totals {
        for s in &subs {
            for &v in &vats {
                if close(s.value + v, t.value) && s.value.abs() > 0.0 {
                    let key = (t.strength, t.line);
                    if best.is_none_or(|b| (b.0, b.1) < key) {
                        best = Some((t.strength, t.line, s.value, v, t.value));
                    }
                }
            }
        }
    }
    if let Some((_, _, s, v, t)) = best {
        return Totals {
            subtotal: Some(s),
            vat: Some(v),
            total: Some(t),
            agree: true,
            disagree: false,
            first_line,
        };
    }
    let subtotal = subs.last().map(|f| f.value);
    let vat = match distinct_vat_lines.len() {
        0 => None,
        1 => Some(distinct_vat_lines[0].value),
        _ => distinct_vat_lines.last().map(|f| f.value),
    };
    let total = totals
        .iter()
        .max_by_key(|f| (f.strength, f.line))
        .map(|f| f.value);
    let (subtotal, vat, total) = match (subtotal, vat, total) {
        (Some(s), Some(v), None) => (Some(s), Some(v), Some(cents(s + v))),
        (Some(s), None, Some(t)) if (t - s).abs() <= t.abs() && s.abs() <= t.abs() => {
            (Some(s), Some(cents(t - s)), Some(t))
        }
        (None, Some(v), Some(t)) if v.abs() < t.abs() => (Some(cents(t - v)), Some(v), Some(t)),
        other => other,
    };
    let all_printed = !subs.is_empty() && !totals.is_empty() && !distinct_vat_lines.is_empty();
    Totals {
        subtotal,
        vat,
        total,
        agree: false,
        disagree: all_printed,
        first_line,
    }
}

/// The ISO 4217 currency from codes and symbols; EUR by default only for a German or
/// Dutch text from the euro area that has amounts (see [`default_currency`]).
pub(crate) fn currency(doc: &Doc) -> Option<String> {
    static CODE: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"\b(EUR|USD|GBP|CHF|CAD|AUD|NZD|JPY|SEK|NOK|DKK|PLN|CZK|HUF|SGD|HKD|CNY|INR|ZAR|MXN|Euro|EURO|Euros)\b|(€)|(£)|(US\$|U\.S\.\$)|(C\$|CA\$)|(A\$|AU\$)|(\$)|\b(S?Fr\.)\s?\d")
            .unwrap()
    });
    let mut counts: Vec<(String, usize, usize)> = Vec::new();
    let mut add = |code: &str, pos: usize| match counts.iter_mut().find(|(c, _, _)| c == code) {
        Some(entry) => entry.1 += 1,
        None => counts.push((code.to_string(), 1, pos)),
    };
    let mut dollar = 0;
    let mut pos = 0;
    for line in &doc.lines {
        for c in CODE.captures_iter(&line.text) {
            pos += 1;
            if let Some(m) = c.get(1) {
                let code = m.as_str().to_uppercase();
                add(
                    if code.starts_with("EURO") {
                        "EUR"
                    } else {
                        &code
                    },
                    pos,
                );
            } else if c.get(2).is_some() {
                add("EUR", pos);
            } else if c.get(3).is_some() {
                add("GBP", pos);
            } else if c.get(4).is_some() {
                add("USD", pos);
            } else if c.get(5).is_some() {
                add("CAD", pos);
            } else if c.get(6).is_some() {
                add("AUD", pos);
            } else if c.get(7).is_some() {
                dollar += 1;
            } else if c.get(8).is_some() {
                add("CHF", pos);
            }
        }
    }
    if dollar > 0 {
        // A bare `$` is the dollar the text names, else the US dollar.
        let named = ["CAD", "AUD", "NZD", "SGD", "HKD", "MXN", "USD"]
            .into_iter()
            .find(|code| counts.iter().any(|(c, _, _)| c == code));
        let code = named.unwrap_or("USD").to_string();
        match counts.iter_mut().find(|(c, _, _)| *c == code) {
            Some(entry) => entry.1 += dollar,
            None => counts.push((code, dollar, pos + 1)),
        }
    }
    counts
        .into_iter()
        .max_by(|a, b| a.1.cmp(&b.1).then(b.2.cmp(&a.2)))
        .map(|(code, _, _)| code)
}

/// EUR for a German or Dutch text that shows it is from the euro area (a euro-area VAT
/// id or IBAN, or the German/Dutch/Austrian/Belgian VAT rates) and nothing Swiss.
pub(crate) fn default_currency(doc: &Doc, has_amounts: bool) -> Option<String> {
    static EURO_AREA: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"\b(?:DE|AT|NL|BE|LU|FR|IT|ES|IE|FI|PT)\s?(?:U\s?)?\d{2}|\b(?:19|7|21|9|20|10|13|6)(?:[.,]0{1,2})?\s*%|(?i:deutschland|nederland|österreich|belgië)")
            .unwrap()
    });
    static SWISS: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"\bCHE[-\s]?\d|\bCH-\d{4}|(?i:schweiz|suisse|svizzera|switzerland)|\bMWST\b|\bCH\d{2}\s?\d{4}")
            .unwrap()
    });
    let text: Vec<&str> = doc.lines.iter().map(|l| l.text.as_str()).collect();
    let text = text.join("\n");
    let euro = matches!(doc.lang, Lang::De | Lang::Nl)
        && has_amounts
        && EURO_AREA.is_match(&text)
        && !SWISS.is_match(&text);
    euro.then(|| "EUR".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn totals_of(text: &str) -> Totals {
        totals(&Doc::new(text), &[])
    }

    #[test]
    fn net_vat_and_gross_that_add_up_agree() {
        let t = totals_of(
            "Summe netto          1.000,00 EUR\nzzgl. 19 % MwSt.       190,00 EUR\nGesamtbetrag         1.190,00 EUR\n",
        );

        assert_eq!(
            (t.subtotal, t.vat, t.total),
            (Some(1000.0), Some(190.0), Some(1190.0))
        );
        assert!(t.agree);
    }

    #[test]
    fn a_missing_vat_amount_is_derived_from_net_and_gross() {
        let t = totals_of("Subtotal: $1,200.00\nTotal due: $1,296.00\n");

        assert_eq!(t.vat, Some(96.0));
        assert!(!t.agree);
    }

    #[test]
    fn several_labels_on_one_line_each_get_their_own_amount() {
        let t = totals_of("Netto 100,00   MwSt 19 % 19,00   Brutto 119,00\n");

        assert_eq!(
            (t.subtotal, t.vat, t.total),
            (Some(100.0), Some(19.0), Some(119.0))
        );
    }

    #[test]
    fn two_vat_rates_are_summed_when_that_makes_the_totals_agree() {
        let t = totals_of(
            "Nettobetrag    200,00\nMwSt 7 %        7,00\nMwSt 19 %      19,00\nRechnungsbetrag 226,00\n",
        );

        assert_eq!(t.vat, Some(26.0));
        assert!(t.agree);
    }

    #[test]
    fn vat_id_lines_and_paid_amounts_are_not_totals() {
        let t = totals_of("USt-IdNr. DE123456789\nTotal 50,00\nBezahlt bar 50,00\nRückgeld 0,00\n");

        assert_eq!((t.subtotal, t.vat, t.total), (None, None, Some(50.0)));
    }

    #[test]
    fn a_label_above_its_amount_is_read() {
        let t = totals_of("Totaal te betalen\n€ 121,00\n");

        assert_eq!(t.total, Some(121.0));
    }

    #[test]
    fn currency_comes_from_symbols_and_codes() {
        assert_eq!(
            currency(&Doc::new("Total £1,234.56")).as_deref(),
            Some("GBP")
        );
        assert_eq!(currency(&Doc::new("Total $12.00")).as_deref(), Some("USD"));
        assert_eq!(
            currency(&Doc::new("Amount CAD\nTotal $12.00")).as_deref(),
            Some("CAD")
        );
        assert_eq!(
            currency(&Doc::new("Total Fr. 12.50")).as_deref(),
            Some("CHF")
        );
        assert_eq!(currency(&Doc::new("Summe 12,50 €")).as_deref(), Some("EUR"));
        assert_eq!(currency(&Doc::new("Summe 12,50")), None);
    }

    #[test]
    fn euro_is_the_default_only_for_euro_area_german_or_dutch_texts_with_amounts() {
        let german = Doc::new("Rechnung\nSumme netto 100,00\nMwSt 19 % 19,00\n");
        let swiss = Doc::new("Rechnung\nSumme 100,00\nMWST CHE-123.456.789\n");
        let english = Doc::new("Invoice\nTotal 100.00\nVAT 20 % 20.00");

        assert_eq!(default_currency(&german, true).as_deref(), Some("EUR"));
        assert_eq!(default_currency(&german, false), None);
        assert_eq!(default_currency(&swiss, true), None);
        assert_eq!(default_currency(&english, true), None);
    }
}
