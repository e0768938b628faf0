//! Amounts as invoices print them: `1.234,56`, `1,234.56`, `1 234,56`, `1'234.56`,
//! `-12,00`, `12,00-`, `(12.00)`, with or without a currency around them.
//!
//! The decimal separator is decided per number: the last `.` or `,` is decimal unless
//! exactly three digits follow it and nothing says otherwise (`1.234` is 1234 — amounts
//! rarely have three decimals — but `0,500` is 0.5 and `1,234.567` has three decimals).
//! Groups before the decimal separator must be three digits, so `1.23.4` and dates like
//! `07.05.2014` are not numbers.

/// A number found in a line of text.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Num {
    pub value: f64,
    /// Byte offsets of the digits (and sign) in the line.
    pub start: usize,
    pub end: usize,
    /// Digits after the decimal separator (0 for integers).
    pub decimals: usize,
    /// Followed by `%`: a rate, not an amount.
    pub percent: bool,
}

const GROUP_SEPARATORS: [char; 3] = ['\'', '’', ' '];

/// Parses one amount string, with an optional sign and currency symbol or code.
/// `None` when the string is not exactly one number.
pub(crate) fn parse_amount(s: &str) -> Option<f64> {
    let mut s = s.trim();
    let mut negative = false;
    if let Some(inner) = s.strip_prefix('(').and_then(|r| r.strip_suffix(')')) {
        negative = true;
        s = inner.trim();
    }
    loop {
        let before = s;
        s = strip_currency(s).trim();
        if let Some(rest) = s.strip_prefix('-') {
            negative = true;
            s = rest.trim();
        }
        if let Some(rest) = s.strip_suffix('-') {
            negative = true;
            s = rest.trim();
        }
        if let Some(rest) = s.strip_prefix('+') {
            s = rest.trim();
        }
        if s == before {
            break;
        }
    }
    let (value, _) = parse_core(s)?;
    Some(if negative { -value } else { value })
}

fn strip_currency(s: &str) -> &str {
    const CURRENCIES: [&str; 19] = [
        "US$", "SFr.", "Fr.", "EUR", "USD", "GBP", "CHF", "CAD", "AUD", "INR", "PLN", "Rs.", "Rs",
        "zł", "€", "$", "£", "¥", "₹",
    ];
    for c in CURRENCIES {
        if let Some(rest) = s.strip_prefix(c) {
            return rest;
        }
        if let Some(rest) = s.strip_suffix(c) {
            return rest;
        }
    }
    s
}

/// Parses digits with group and decimal separators (no sign, no currency).
/// Returns the value and the number of decimals.
pub(crate) fn parse_core(s: &str) -> Option<(f64, usize)> {
    if !s.starts_with(|c: char| c.is_ascii_digit()) || !s.ends_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    if !s
        .chars()
        .all(|c| c.is_ascii_digit() || c == '.' || c == ',' || GROUP_SEPARATORS.contains(&c))
    {
        return None;
    }
    let (int_part, frac) = match s.rfind(['.', ',']) {
        None => (s, ""),
        Some(i) => {
            let sep = &s[i..i + 1];
            let other = if sep == "." { ',' } else { '.' };
            let (head, tail) = (&s[..i], &s[i + 1..]);
            if !tail.chars().all(|c| c.is_ascii_digit()) {
                return None;
            }
            let same_before = head.contains(sep);
            let other_before = head.contains(other);
            let decimal = if tail.len() == 3 {
                other_before || (!same_before && head.trim_start_matches('0').is_empty())
            } else if same_before || tail.len() > 4 {
                return None;
            } else {
                true
            };
            if decimal { (head, tail) } else { (s, "") }
        }
    };
    let digits = integer_digits(int_part)?;
    let value: f64 = format!("{digits}.{}", if frac.is_empty() { "0" } else { frac })
        .parse()
        .ok()?;
    Some((value, frac.len()))
}

/// The digits of an integer part whose groups (if any) are separated consistently:
/// thousands (`1.234.567`) or the Indian lakh and crore grouping (`1,72,280`: the last
/// group of three, the ones before it of two).
fn integer_digits(int_part: &str) -> Option<String> {
    let seps: Vec<char> = int_part.chars().filter(|c| !c.is_ascii_digit()).collect();
    if seps.is_empty() {
        return Some(int_part.to_string());
    }
    if seps.iter().any(|&c| c != seps[0]) {
        return None;
    }
    let groups: Vec<&str> = int_part.split(seps[0]).collect();
    let first_ok = (1..=3).contains(&groups[0].len());
    let thousands = first_ok && groups[1..].iter().all(|g| g.len() == 3);
    let n = groups.len();
    let indian = seps[0] == ','
        && n >= 3
        && (1..=2).contains(&groups[0].len())
        && groups[1..n - 1].iter().all(|g| g.len() == 2)
        && groups[n - 1].len() == 3;
    (thousands || indian).then(|| groups.concat())
}

/// Every number in `line` that stands on its own: not part of a word, an id
/// (`RE-2014-0815`), a date, a time or a paragraph (`§19`). With `space_groups`,
/// `1 234,56` is one number; item rows pass `false` because there a single space may
/// separate a quantity from a price.
pub(crate) fn numbers_in(line: &str, space_groups: bool) -> Vec<Num> {
    let chars: Vec<(usize, char)> = line.char_indices().collect();
    let n = chars.len();
    let byte = |i: usize| if i < n { chars[i].0 } else { line.len() };
    let ch = |i: usize| chars.get(i).map(|&(_, c)| c);
    let digit = |i: usize| ch(i).is_some_and(|c| c.is_ascii_digit());
    let mut out = Vec::new();
    let mut i = 0;
    while i < n {
        if !digit(i) || (i > 0 && digit(i - 1)) {
            i += 1;
            continue;
        }
        let start = i;
        let mut j = i;
        let mut group_len = 0;
        let mut seen_sep = false;
        loop {
            while digit(j) {
                j += 1;
                group_len += 1;
            }
            let c = ch(j);
            if matches!(c, Some('.' | ',' | '\'' | '’')) && digit(j + 1) {
                j += 1;
                group_len = 0;
                seen_sep = true;
                continue;
            }
            let spaced_group = space_groups
                && c == Some(' ')
                && !seen_sep
                && group_len <= 3
                && (1..=3).all(|k| digit(j + k))
                && !digit(j + 4);
            if spaced_group {
                j += 1;
                group_len = 0;
                continue;
            }
            break;
        }
        let end = j;
        i = end.max(start + 1);
        let prev = if start > 0 { ch(start - 1) } else { None };
        let prev2 = if start > 1 { ch(start - 2) } else { None };
        let next = ch(end);
        let next2 = ch(end + 1);
        let glued_before = prev.is_some_and(|c| c.is_alphabetic() || "/§#_:".contains(c))
            || (prev == Some('-') && prev2.is_some_and(|c| c.is_alphanumeric()))
            || (prev == Some('.') && prev2.is_some_and(|c| c.is_ascii_digit()));
        let glued_after = next.is_some_and(|c| c.is_alphabetic() && c != 'x' && c != 'X')
            || (matches!(next, Some('/' | ':' | '-' | '.' | ','))
                && next2.is_some_and(|c| c.is_ascii_digit()));
        if glued_before || glued_after {
            continue;
        }
        let Some((value, decimals)) = parse_core(&line[byte(start)..byte(end)]) else {
            continue;
        };
        let mut negative = false;
        let mut num_start = start;
        let mut num_end = end;
        let before: String = chars[..start]
            .iter()
            .rev()
            .take(3)
            .map(|&(_, c)| c)
            .collect();
        let minus_before = before.starts_with('-')
            && (prev2.is_none_or(|c| c.is_whitespace() || "(€$£:".contains(c)));
        let minus_behind_currency = ["€-", "$-", "£-", " €-", " $-", "€ -", "$ -", "£ -"]
            .iter()
            .any(|p| before.starts_with(p));
        if minus_before {
            negative = true;
            num_start = start - 1;
        } else if minus_behind_currency {
            negative = true;
        }
        if next == Some('-') && next2.is_none_or(|c| c.is_whitespace()) {
            negative = true;
            num_end = end + 1;
        }
        if prev == Some('(') && next == Some(')') && decimals > 0 {
            negative = true;
        }
        let percent = next == Some('%') || (next == Some(' ') && next2 == Some('%'));
        out.push(Num {
            value: if negative { -value } else { value },
            start: byte(num_start),
            end: byte(num_end),
            decimals,
            percent,
        });
    }
    out
}

/// Rounds to cents, the precision every amount here is compared at.
pub(crate) fn cents(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

/// Whether two amounts agree to within two cents.
pub(crate) fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 0.0201
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_in_every_common_notation_parse_to_the_same_value() {
        let cases = [
            ("1.234,56", 1234.56),
            ("1,234.56", 1234.56),
            ("1234.56", 1234.56),
            ("1234,56", 1234.56),
            ("1 234,56", 1234.56),
            ("1'234.56", 1234.56),
            ("1’234,56", 1234.56),
            ("-12,00", -12.0),
            ("12,00-", -12.0),
            ("(12.00)", -12.0),
            ("€ 1.234,56", 1234.56),
            ("1.234,56 EUR", 1234.56),
            ("$1,234.56", 1234.56),
            ("EUR 1 234,56", 1234.56),
            ("£0.99", 0.99),
            ("-€ 12,00", -12.0),
            ("1.234", 1234.0),
            ("1,234", 1234.0),
            ("0,500", 0.5),
            ("12,5", 12.5),
            ("1.234.567,89", 1_234_567.89),
            ("1,234,567.89", 1_234_567.89),
            ("119", 119.0),
            ("1,72,280.00", 172_280.0),
            ("₹ 1,10,330.00", 110_330.0),
            ("Rs. 18,450.00", 18_450.0),
            ("2 207,85 zł", 2207.85),
            ("12,34,56,789.00", 123_456_789.0),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_amount(text), Some(expected), "{text}");
        }
    }

    #[test]
    fn malformed_groupings_and_dates_are_not_amounts() {
        for text in [
            "1.23.4",
            "07.05.2014",
            "12,34,5",
            "1.234.56",
            "abc",
            "",
            "1,2345,6",
        ] {
            assert_eq!(parse_amount(text), None, "{text}");
        }
    }

    #[test]
    fn numbers_in_a_line_skip_ids_dates_and_paragraphs_and_flag_rates() {
        let line = "RE-2014-0815  07.05.2014  §19 UStG  MwSt 19 %  1.234,56 EUR  12,00-";

        let found: Vec<(f64, bool)> = numbers_in(line, true)
            .iter()
            .map(|n| (n.value, n.percent))
            .collect();

        assert_eq!(found, [(19.0, true), (1234.56, false), (-12.0, false)]);
    }

    #[test]
    fn space_grouped_thousands_are_read_only_when_asked() {
        assert_eq!(numbers_in("Total EUR 1 234,56", true)[0].value, 1234.56);
        let split: Vec<f64> = numbers_in("Widget 2 100,00", false)
            .iter()
            .map(|n| n.value)
            .collect();
        assert_eq!(split, [2.0, 100.0]);
    }

    #[test]
    fn a_minus_after_a_currency_symbol_makes_the_amount_negative() {
        assert_eq!(numbers_in("Gesamt: € -50,00", true)[0].value, -50.0);
        assert_eq!(numbers_in("Total -$50.00", true)[0].value, -50.0);
    }
}
