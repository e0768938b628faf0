//! Dates as invoices print them: `07.05.2014`, `7.5.14`, `07/05/2014`, `07-05-2014`,
//! `2014-05-07`, `19 april 2014`, `19. April 2014`, `3. März 2014`, `19-Apr-2014`,
//! `April 19, 2014`, `19th April 2014`, `10 de julio de 2024` — month names in German,
//! Dutch, English, French, Polish, Spanish and Italian.
//!
//! Numeric dates are day-first (as in German, Dutch and British texts) unless the
//! caller says the text is American: then `05/07/2014` is May 7th. Either way a first
//! number above 12 forces day-first and a second number above 12 forces month-first,
//! because only that reading is a date.

use std::sync::LazyLock;

use chrono::NaiveDate;
use regex::Regex;

/// A date found in a line: byte offsets and the date.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct DateHit {
    pub start: usize,
    pub end: usize,
    pub date: NaiveDate,
    /// Written with a month name first (`April 19, 2014`), an American habit.
    pub month_name_first: bool,
}

static ISO: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b(\d{4})([-./])(\d{1,2})([-./])(\d{1,2})\b").unwrap());
static NUMERIC: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b(\d{1,2})\s?([./-])\s?(\d{1,2})\s?([./-])\s?(\d{4}|\d{2})\b").unwrap()
});
static DAY_MONTH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(\d{1,2})(?:st|nd|rd|th|e|er|º|°)?\.?[\s\-/]*(?:(?:of|de|di)\s+)?(\p{L}{3,12})\.?[\s\-/,]*(?:de\s+|del\s+)?(\d{4})\b",
    )
    .unwrap()
});
static MONTH_DAY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(\p{L}{3,12})\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})\b").unwrap()
});

/// Every date in `line`, in order. `month_first` is the reading of ambiguous numeric
/// dates such as `05/07/2014` (see the module docs).
pub(crate) fn dates_in(line: &str, month_first: bool) -> Vec<DateHit> {
    let mut hits: Vec<DateHit> = Vec::new();
    let mut push = |start: usize, end: usize, date: Option<NaiveDate>, named_first: bool| {
        if let Some(date) = date {
            hits.push(DateHit {
                start,
                end,
                date,
                month_name_first: named_first,
            });
        }
    };
    for c in ISO.captures_iter(line) {
        let m = c.get(0).unwrap();
        let date = (c[2] == c[4])
            .then(|| ymd(num(&c[1]), num(&c[3]), num(&c[5])))
            .flatten();
        push(m.start(), m.end(), date, false);
    }
    for c in NUMERIC.captures_iter(line) {
        let m = c.get(0).unwrap();
        if c[2] != c[4] {
            continue;
        }
        let (a, b, year) = (num(&c[1]), num(&c[3]), year_of(&c[5]));
        let day_first = if a > 12 {
            true
        } else if b > 12 {
            false
        } else {
            !(month_first && &c[2] != ".")
        };
        let date = if day_first {
            ymd(year, b, a)
        } else {
            ymd(year, a, b)
        };
        push(m.start(), m.end(), date, false);
    }
    for c in DAY_MONTH.captures_iter(line) {
        let m = c.get(0).unwrap();
        let date = month_number(&c[2]).and_then(|month| ymd(num(&c[3]), month, num(&c[1])));
        push(m.start(), m.end(), date, false);
    }
    for c in MONTH_DAY.captures_iter(line) {
        let m = c.get(0).unwrap();
        let date = month_number(&c[1]).and_then(|month| ymd(num(&c[3]), month, num(&c[2])));
        push(m.start(), m.end(), date, true);
    }
    hits.sort_by_key(|h| (h.start, std::cmp::Reverse(h.end)));
    let mut out: Vec<DateHit> = Vec::new();
    for h in hits {
        if out.last().is_none_or(|last| h.start >= last.end) {
            out.push(h);
        }
    }
    out
}

/// The first date in `s`.
pub(crate) fn parse_date(s: &str, month_first: bool) -> Option<NaiveDate> {
    dates_in(s, month_first).first().map(|h| h.date)
}

fn num(s: &str) -> u32 {
    s.parse().unwrap_or(0)
}

fn year_of(s: &str) -> u32 {
    let y = num(s);
    match s.len() {
        2 if y < 70 => 2000 + y,
        2 => 1900 + y,
        _ => y,
    }
}

fn ymd(year: u32, month: u32, day: u32) -> Option<NaiveDate> {
    if !(1970..=2100).contains(&year) {
        return None;
    }
    NaiveDate::from_ymd_opt(i32::try_from(year).ok()?, month, day)
}

/// The month of a month name or abbreviation in German, Dutch, English, French,
/// Polish (nominative and genitive), Spanish or Italian.
pub(crate) fn month_number(word: &str) -> Option<u32> {
    let w = word.trim_end_matches('.').to_lowercase();
    let month = match w.as_str() {
        "jan" | "january" | "januar" | "januari" | "jänner" | "janner" | "janv" | "janvier"
        | "styczeń" | "stycznia" | "sty" | "enero" | "ene" | "gennaio" | "gen" => 1,
        "feb" | "febr" | "february" | "februar" | "februari" | "févr" | "fév" | "février"
        | "fevrier" | "luty" | "lutego" | "lut" | "febrero" | "febbraio" => 2,
        "mar" | "march" | "märz" | "maerz" | "marz" | "mär" | "mrz" | "maart" | "mrt" | "mars"
        | "marzec" | "marca" | "marzo" => 3,
        "apr" | "april" | "avr" | "avril" | "kwiecień" | "kwietnia" | "kwi" | "abril" | "abr"
        | "aprile" => 4,
        "may" | "mai" | "mei" | "maj" | "maja" | "mayo" | "maggio" | "mag" => 5,
        "jun" | "june" | "juni" | "juin" | "czerwiec" | "czerwca" | "cze" | "junio" | "giugno"
        | "giu" => 6,
        "jul" | "july" | "juli" | "juil" | "juillet" | "lipiec" | "lipca" | "lip" | "julio"
        | "luglio" | "lug" => 7,
        "aug" | "august" | "augustus" | "août" | "aout" | "sierpień" | "sierpnia" | "sie"
        | "agosto" | "ago" => 8,
        "sep" | "sept" | "september" | "septembre" | "wrzesień" | "września" | "wrz"
        | "septiembre" | "setiembre" | "settembre" | "set" => 9,
        "oct" | "october" | "okt" | "oktober" | "octobre" | "październik" | "października"
        | "paź" | "octubre" | "ottobre" | "ott" => 10,
        "nov" | "november" | "novembre" | "listopad" | "listopada" | "lis" | "noviembre" => 11,
        "dec" | "december" | "dez" | "dezember" | "déc" | "décembre" | "decembre" | "grudzień"
        | "grudnia" | "gru" | "diciembre" | "dic" | "dicembre" => 12,
        _ => return None,
    };
    Some(month)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(y: i32, m: u32, day: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(y, m, day).unwrap()
    }

    #[test]
    fn dates_in_every_common_notation_parse_to_the_same_day() {
        let cases = [
            ("07.05.2014", d(2014, 5, 7)),
            ("7.5.2014", d(2014, 5, 7)),
            ("07/05/2014", d(2014, 5, 7)),
            ("07-05-2014", d(2014, 5, 7)),
            ("2014-05-07", d(2014, 5, 7)),
            ("07.05.14", d(2014, 5, 7)),
            ("19 april 2014", d(2014, 4, 19)),
            ("19. April 2014", d(2014, 4, 19)),
            ("19 Apr 2014", d(2014, 4, 19)),
            ("19-Apr-2014", d(2014, 4, 19)),
            ("April 19, 2014", d(2014, 4, 19)),
            ("19th April 2014", d(2014, 4, 19)),
            ("19 mei 2014", d(2014, 5, 19)),
            ("3. März 2014", d(2014, 3, 3)),
            ("3. Maerz 2014", d(2014, 3, 3)),
            ("1 okt. 2014", d(2014, 10, 1)),
            ("Dec 1st, 2014", d(2014, 12, 1)),
            ("12 mars 2024", d(2024, 3, 12)),
            ("1er février 2024", d(2024, 2, 1)),
            ("5 kwietnia 2024 r.", d(2024, 4, 5)),
            ("15 października 2024", d(2024, 10, 15)),
            ("10 de julio de 2024", d(2024, 7, 10)),
            ("14 giugno 2024", d(2024, 6, 14)),
            ("15. Jänner 2024", d(2024, 1, 15)),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_date(text, false), Some(expected), "{text}");
        }
    }

    #[test]
    fn ambiguous_slashed_dates_are_day_first_unless_the_text_is_american() {
        assert_eq!(parse_date("05/07/2014", false), Some(d(2014, 7, 5)));
        assert_eq!(parse_date("05/07/2014", true), Some(d(2014, 5, 7)));
        assert_eq!(parse_date("05.07.2014", true), Some(d(2014, 7, 5)));
    }

    #[test]
    fn an_impossible_reading_is_never_chosen() {
        assert_eq!(parse_date("13/05/2014", true), Some(d(2014, 5, 13)));
        assert_eq!(parse_date("05/13/2014", false), Some(d(2014, 5, 13)));
        assert_eq!(parse_date("31.02.2014", false), None);
    }

    #[test]
    fn numbers_and_words_that_are_not_dates_are_ignored() {
        for text in [
            "1.234,56",
            "14 Tage 2014",
            "RE-2014-0815",
            "Rechnung 12 2014",
            "12345",
        ] {
            assert_eq!(parse_date(text, false), None, "{text}");
        }
    }

    #[test]
    fn several_dates_on_a_line_are_found_in_order() {
        let hits = dates_in("Leistungszeitraum 01.04.2014 - 30.04.2014", false);

        let dates: Vec<NaiveDate> = hits.iter().map(|h| h.date).collect();

        assert_eq!(dates, [d(2014, 4, 1), d(2014, 4, 30)]);
    }
}
