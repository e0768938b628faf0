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
use super::text::{Doc, Lang, col_of};

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
        r"zwischensumme|sub\s*-?\s*total|subtotaal|(?:summe|gesamt(?:betrag)?|total|totaal|rechnungsbetrag|betrag|bedrag|amount|waarde)\s*\(?\s*(?:netto|net|excl\.?|exkl\.?|excluding|exclusief|ohne|before|vor|ex\.?){suffix}|netto\s*-?\s*(?:betrag|summe|bedrag|wert|gesamt|rechnungsbetrag)?|nettosumme|nettowert|warenwert|net\s*(?:amount|total|value|worth)|total\s*net|excl\.?\s*(?:btw|vat|mwst)|exkl\.?\s*(?:mwst|ust)|(?:total|montant)\s+h\.?\s?t\.?|total\s+hors\s+(?:taxes?|tva)|montant\s+hors\s+(?:taxes?|tva)|(?:total\s+)?taxable\s+(?:value|amount)|goods\s+total|warto[śs][ćc]\s+netto|razem\s+netto|(?:total\s+)?base\s+imponible|(?:totale\s+)?imponibile|maatstaf\s+van\s+heffing|base\s+(?:imposable|ht)|total\s+amount\s+before\s+tax|net"
    );
    let strong_total = format!(
        r"(?:gesamt|rechnungs|end|zahl|brutto|gutschrifts|factuur|eind|totaal|total)\s*-?\s*(?:betrag|summe|bedrag)|(?:summe|total|gesamt|totaal|betrag|bedrag|amount)\s*\(?\s*(?:brutto|gross|incl\.?|inkl\.?|including|inclusief|inc\.?){suffix}|brutto|(?:noch\s+)?zu\s+zahlen(?:der\s+betrag)?|zahlbetrag|offener\s+betrag|grand\s+total|total\s*(?:due|payable|amount|to\s+pay)|amount\s*(?:due|payable|to\s+pay)|balance\s*due|te\s+betalen(?:\s+bedrag)?|eindtotaal|gesamtsumme|totaal\s*te\s*betalen|(?:total|montant)\s+t\.?t\.?c\.?|net\s+[àa]\s+payer|reste\s+[àa]\s+payer|total\s+[àa]\s+payer|total\s+tvac|(?:razem\s+)?do\s+zap[łl]aty|warto[śs][ćc]\s+brutto|total\s+factura|importe\s+total|total\s+a\s+pagar|totale\s+(?:documento|fattura|a\s+pagare|da\s+pagare|nota\s+di\s+credito)|netto\s+a\s+pagare|invoice\s+total|credit\s+total|total\s+credit|total\s+amount\s+after\s+tax"
    );
    let total = r"totaal|gesamt|summe|total|balance|razem|suma|totale";
    let vat = r"(?:zzgl\.?\s*|plus\s*|zuzüglich\s*)?(?:\d{1,2}(?:[.,]\d{1,2})?\s*%\s*)?(?:mwst|mehrwertsteuer|umsatzsteuer|ust|vat|v\.a\.t\.?|btw|sales\s*tax|tax|omzetbelasting|gst|tva|iva|kwota\s+vat|podatek\s+vat|[cs]gst|igst\d*|utgst)";
    Regex::new(&format!(
        r"(?i)\b(?:(?P<sub>{sub})|(?P<strong>{strong_total})|(?P<total>{total})|(?P<vat>{vat}))\b\.?"
    ))
    .unwrap()
});
/// What may follow a total's label and changes its meaning: `Gesamtbetrag inkl. USt.`
/// is the gross, `Summe exkl. USt.` the net.
static TAX_QUALIFIER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"(?i)^\s*\(?\s*(?:(?P<incl>inkl\.?|incl\.?|including|inclusief|inc\.?|tvac|ttc|brutto|after)|(?P<excl>exkl\.?|excl\.?|excluding|exclusief|ohne|zzgl\.?|hors|ht|netto|before))\s*\.?\s*(?:{TAX}|tva|iva|gst)?\.?\)?"
    ))
    .unwrap()
});
/// A row that sums a table (`Razem`, `Total`, `Summe`), whose amounts stand under the
/// header's net, VAT and gross columns.
static SUMMARY_ROW: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^\s*(?:razem|suma|ogółem|w\s+tym|total(?:es)?|totals|summe|gesamt|totale|totaal|somme)\b").unwrap()
});
/// A VAT word that is an id label (`USt-IdNr.`, `VAT No.`, `BTW-nummer`), not an amount.
static ID_AFTER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^[\s.\-]*(?:id|nr|no\b|number|nummer|reg|ident|identifi|code|satz|rate\b|%\s*$|-?pflichtig|frei|exempt)")
        .unwrap()
});
/// Lines about payments made, cash and change are not the document's totals.
static PAYMENT_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:bezahlt|paid|erhalten|received|betaald|anzahlung|deposit|gegeben|rückgeld|change|bar\b|cash|skonto|discount|korting|rabatt|acompte|déjà\s+versé|anticipo|zaliczka|zapłacono|advance|round\s*off|rounding|arrondi|in\s+words|słownie)").unwrap()
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

/// The labels of a line with their roles, a tax qualifier after a total's label read
/// as part of it (`Gesamtbetrag inkl. USt.` is one gross label, not a total and a VAT).
fn labels_in(text: &str) -> Vec<(usize, usize, Role, u8)> {
    let mut out: Vec<(usize, usize, Role, u8)> = Vec::new();
    for c in LABELS.captures_iter(text) {
        let m = c.get(0).unwrap();
        if out.last().is_some_and(|last| m.start() < last.1) {
            continue;
        }
        let (mut role, mut strength) = if c.name("sub").is_some() {
            (Role::Subtotal, 0)
        } else if c.name("strong").is_some() {
            (Role::Total, 2)
        } else if c.name("total").is_some() {
            (Role::Total, 1)
        } else {
            (Role::Vat, 0)
        };
        let mut end = m.end();
        if role != Role::Vat
            && let Some(q) = TAX_QUALIFIER.captures(&text[end..])
        {
            end += q.get(0).unwrap().end();
            if q.name("incl").is_some() {
                (role, strength) = (Role::Total, 2);
            } else if role == Role::Total && strength < 2 {
                (role, strength) = (Role::Subtotal, 0);
            }
        }
        out.push((m.start(), end, role, strength));
    }
    out
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
        if let Some(columns) = summary_row(doc, i) {
            out.extend(columns);
            continue;
        }
        let matches = labels_in(text);
        for (k, &(start, end, role, strength)) in matches.iter().enumerate() {
            let segment_end = matches.get(k + 1).map_or(text.len(), |n| n.0);
            let segment = &text[end..segment_end];
            if role == Role::Vat && ID_AFTER.is_match(segment) {
                continue;
            }
            // A bare `Net` is the net amount only with cents (`Net 30` is a payment term).
            let bare_net = text[start..end].trim().eq_ignore_ascii_case("net");
            let nums: Vec<Num> = numbers_in(segment, true)
                .into_iter()
                .filter(|n| !bare_net || n.decimals == 2)
                .collect();
            if bare_net && nums.is_empty() {
                continue;
            }
            let value = amount_of(&nums).or_else(|| {
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

/// A summary row (`Razem  1 795,00  412,85  2 207,85`) read by column: each amount
/// takes the role of the header cell above it (`Wartość netto`, `Kwota VAT`, `Wartość
/// brutto`; `Taxable Value`, `Central Tax`, …). `None` when the line is no such row.
fn summary_row(doc: &Doc, i: usize) -> Option<Vec<Found>> {
    let line = &doc.lines[i];
    let labels = labels_in(&line.text);
    let bare = labels.len() <= 1 && labels.iter().all(|l| l.2 == Role::Total && l.3 < 2);
    if !SUMMARY_ROW.is_match(&line.text) || !bare {
        return None;
    }
    let amounts: Vec<_> = numbers_in(&line.text, true)
        .into_iter()
        .filter(|n| !n.percent && n.decimals == 2)
        .collect();
    if amounts.len() < 2 {
        return None;
    }
    // The nearest header above: a line without amounts whose cells name two roles.
    let header = (i.saturating_sub(12)..i).rev().find_map(|h| {
        let l = &doc.lines[h];
        if numbers_in(&l.text, true).iter().any(|n| n.decimals == 2) {
            return None;
        }
        let roles: Vec<(usize, usize, Role)> = l
            .cells
            .iter()
            .filter_map(|c| {
                let labels = labels_in(&c.text);
                let role = if labels.iter().any(|l| l.2 == Role::Vat)
                    && !labels.iter().any(|l| l.3 == 2)
                {
                    Role::Vat
                } else {
                    labels.first()?.2
                };
                Some((c.col, c.end(), role))
            })
            .collect();
        let distinct = [Role::Subtotal, Role::Vat, Role::Total]
            .iter()
            .filter(|r| roles.iter().any(|c| c.2 == **r))
            .count();
        (distinct >= 2).then_some(roles)
    })?;
    let mut out = Vec::new();
    for n in amounts {
        let from = col_of(&line.text, n.start);
        let to = col_of(&line.text, n.end);
        let cell = header
            .iter()
            .filter(|(col, end, _)| to + 3 > *col && from < end + 6)
            .min_by_key(|(_, end, _)| end.abs_diff(to));
        if let Some(&(_, _, role)) = cell {
            out.push(Found {
                role,
                value: n.value,
                line: i,
                strength: 1,
            });
        }
    }
    (!out.is_empty()).then_some(out)
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
    // Net and gross whose difference is one VAT line or two (CGST + SGST).
    if best.is_none() {
        let singles: Vec<f64> = of(Role::Vat).map(|f| f.value).collect();
        for t in &totals {
            for s in &subs {
                let d = t.value - s.value;
                let explained = singles.iter().any(|&v| close(v, d))
                    || singles
                        .iter()
                        .enumerate()
                        .any(|(a, &x)| singles.iter().skip(a + 1).any(|&y| close(x + y, d)));
                if explained && s.value.abs() > 0.0 && d.abs() < t.value.abs() {
                    let key = (t.strength, t.line);
                    if best.is_none_or(|b| (b.0, b.1) < key) {
                        best = Some((t.strength, t.line, s.value, cents(d), t.value));
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
    // Without agreement: the strongest total, and among equals the largest (a VAT or
    // hours total printed later is smaller than the gross), then the latest.
    let total = totals
        .iter()
        .max_by(|a, b| {
            a.strength
                .cmp(&b.strength)
                .then(a.value.abs().total_cmp(&b.value.abs()))
                .then(a.line.cmp(&b.line))
        })
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

/// The ISO 4217 currency from codes, symbols and names (`€`, `£`, `$`, `₹`, `Rs.`, `zł`,
/// `Fr.`, `Rupees`); when none is printed, see [`default_currency`].
pub(crate) fn currency(doc: &Doc) -> Option<String> {
    static CODE: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"\b(EUR|USD|GBP|CHF|CAD|AUD|NZD|JPY|SEK|NOK|DKK|PLN|CZK|HUF|SGD|HKD|CNY|INR|ZAR|MXN|Euro|EURO|Euros)\b|(€)|(£)|(US\$|U\.S\.\$)|(C\$|CA\$)|(A\$|AU\$)|(\$)|\b(S?Fr\.)\s?\d|(₹|\bRs\.?\s?\d|\b(?i:rupees?)\b)|(\bzł\b|\b(?i:złotych|złote|zlotych)\b|\d\s?zł)")
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
            } else if c.get(9).is_some() {
                add("INR", pos);
            } else if c.get(10).is_some() {
                add("PLN", pos);
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

/// The currency of a text with amounts that prints none, from where it is from: EUR
/// for a euro-area text (a euro-area VAT id or IBAN, the VAT rates or country names of
/// Germany, the Netherlands, Austria, Belgium, France, Spain, Italy) with nothing
/// Swiss; PLN for a Polish one (`NIP`, a PL VAT id, Polish text); GBP for a British
/// one (a GB VAT id, a UK postcode); USD for an American address; INR for a GSTIN.
pub(crate) fn default_currency(doc: &Doc, has_amounts: bool) -> Option<String> {
    static EURO_AREA: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"\b(?:DE|AT|NL|BE|LU|FR|IT|ES|IE|FI|PT)\s?(?:U\s?)?\d{2}|\b(?:19|7|21|9|20|10|13|6|22|5,5|5\.5)(?:[.,]0{1,2})?\s*%|(?i:deutschland|nederland|österreich|belgië|belgique|france|españa|italia)")
            .unwrap()
    });
    static SWISS: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"\bCHE[-\s]?\d|\bCH-\d{4}|(?i:schweiz|suisse|svizzera|switzerland)|\bMWST\b|\bCH\d{2}\s?\d{4}")
            .unwrap()
    });
    static POLISH: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"\bNIP\b|\bPL\s?\d{3}[-\s]?\d{3}|(?i:polska)").unwrap());
    static BRITISH: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"\bGB\s?\d{3}\s?\d{4}\s?\d{2}\b|\b[A-Z]{1,2}\d[A-Z\d]?\s\d[A-Z]{2}\b|(?i:united\s+kingdom|england|scotland|wales)")
            .unwrap()
    });
    static AMERICAN: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"\b(?:AL|AK|AZ|AR|CA|CO|CT|DE|FL|GA|HI|ID|IL|IN|IA|KS|KY|LA|ME|MD|MA|MI|MN|MS|MO|MT|NE|NV|NH|NJ|NM|NY|NC|ND|OH|OK|OR|PA|RI|SC|SD|TN|TX|UT|VT|VA|WA|WV|WI|WY|DC)\s+\d{5}(?:-\d{4})?\b")
            .unwrap()
    });
    static INDIAN: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"\b\d{2}[A-Z]{5}\d{4}[A-Z][1-9A-Z]Z[0-9A-Z]\b|(?i:\bgstin\b|\bindia\b)")
            .unwrap()
    });
    if !has_amounts {
        return None;
    }
    let text: Vec<&str> = doc.lines.iter().map(|l| l.text.as_str()).collect();
    let text = text.join("\n");
    let code = match doc.lang {
        Lang::De | Lang::Nl | Lang::Fr | Lang::Es | Lang::It
            if EURO_AREA.is_match(&text) && !SWISS.is_match(&text) =>
        {
            "EUR"
        }
        Lang::Pl => "PLN",
        _ if POLISH.is_match(&text) => "PLN",
        Lang::En if INDIAN.is_match(&text) => "INR",
        Lang::En if BRITISH.is_match(&text) => "GBP",
        Lang::En if AMERICAN.is_match(&text) => "USD",
        _ => return None,
    };
    Some(code.to_string())
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
        assert_eq!(
            currency(&Doc::new("Total ₹1,10,330.00")).as_deref(),
            Some("INR")
        );
        assert_eq!(
            currency(&Doc::new("Grand Total Rs. 1,20,950.00")).as_deref(),
            Some("INR")
        );
        assert_eq!(
            currency(&Doc::new("Do zapłaty: 2 014,80 zł")).as_deref(),
            Some("PLN")
        );
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

    #[test]
    fn a_text_without_a_printed_currency_takes_its_countrys() {
        let british = Doc::new("Invoice\nVAT Reg: GB 871 2244 05\nTotal 120.00\n");
        let american = Doc::new("Invoice\nMilwaukee, WI 53202\nTotal 120.00\n");
        let polish = Doc::new("Faktura VAT\nNIP: 679-308-12-55\nRazem 120,00\n");

        assert_eq!(default_currency(&british, true).as_deref(), Some("GBP"));
        assert_eq!(default_currency(&american, true).as_deref(), Some("USD"));
        assert_eq!(default_currency(&polish, true).as_deref(), Some("PLN"));
    }
}
