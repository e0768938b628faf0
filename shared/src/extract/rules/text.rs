//! The transcribed text as the other rules see it: normalised lines split into
//! column cells, and the document's language.
//!
//! PDF text extraction and OCR separate table columns with runs of spaces, so a run of
//! two or more spaces (or a tab) is read as a column boundary; a single space is not.

use std::sync::LazyLock;

use regex::Regex;

/// The language the text is mostly written in; it decides defaults (the currency of a
/// text that prints none, day-first dates) and nothing else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lang {
    De,
    Nl,
    En,
    Fr,
    Pl,
    Es,
    It,
    Unknown,
}

/// A column cell: its text and the character column where it starts.
#[derive(Debug, Clone)]
pub(crate) struct Cell {
    pub col: usize,
    pub text: String,
}

impl Cell {
    /// The column just after the cell's last character.
    pub fn end(&self) -> usize {
        self.col + self.text.chars().count()
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Line {
    pub text: String,
    pub cells: Vec<Cell>,
}

impl Line {
    fn new(raw: &str) -> Line {
        let text = normalise(raw);
        let cells = split_cells(&text);
        Line { text, cells }
    }

    pub fn is_blank(&self) -> bool {
        self.cells.is_empty()
    }

    /// The cell that covers (or is closest after) character column `col`, allowing a
    /// little misalignment as OCR and PDF extraction produce it.
    pub fn cell_near(&self, col: usize, width: usize) -> Option<&Cell> {
        let lo = col.saturating_sub(3);
        let hi = col + width.max(1) + 3;
        self.cells
            .iter()
            .find(|c| c.col < hi && c.end() > lo)
            .or_else(|| (self.cells.len() == 1).then(|| &self.cells[0]))
    }
}

/// The document: normalised lines and what is known about the text as a whole.
#[derive(Debug, Clone)]
pub(crate) struct Doc {
    pub lines: Vec<Line>,
    pub lang: Lang,
}

impl Doc {
    pub fn new(text: &str) -> Doc {
        let lines: Vec<Line> = text.lines().map(Line::new).collect();
        let lang = detect_lang(text);
        Doc { lines, lang }
    }

    /// The index of the next non-blank line after `i`, looking at most `within` lines on.
    pub fn next_nonblank(&self, i: usize, within: usize) -> Option<usize> {
        (i + 1..self.lines.len().min(i + 1 + within)).find(|&j| !self.lines[j].is_blank())
    }
}

/// Character column of byte offset `byte` in `s`.
pub(crate) fn col_of(s: &str, byte: usize) -> usize {
    s[..byte].chars().count()
}

fn normalise(raw: &str) -> String {
    raw.replace('\t', "    ")
        .chars()
        .map(|c| match c {
            '\u{00A0}' | '\u{2007}' | '\u{2009}' | '\u{202F}' => ' ',
            '\u{2212}' => '-',
            '\r' => ' ',
            c => c,
        })
        .collect::<String>()
        .trim_end()
        .to_string()
}

fn split_cells(text: &str) -> Vec<Cell> {
    static GAP: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\S(?:\S| \S)*").unwrap());
    GAP.find_iter(text)
        .map(|m| Cell {
            col: col_of(text, m.start()),
            text: m.as_str().to_string(),
        })
        .collect()
}

fn detect_lang(text: &str) -> Lang {
    static WORD: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\p{L}+").unwrap());
    const DE: &[&str] = &[
        "rechnung",
        "datum",
        "betrag",
        "summe",
        "netto",
        "brutto",
        "mwst",
        "ust",
        "menge",
        "einzelpreis",
        "gesamt",
        "zahlbar",
        "bitte",
        "und",
        "der",
        "die",
        "das",
        "ihre",
        "wir",
        "gmbh",
        "straße",
        "strasse",
        "lieferschein",
        "bestellung",
        "gutschrift",
        "tage",
        "tagen",
        "stk",
        "umsatzsteuer",
        "bankverbindung",
        "vielen",
        "dank",
        "zzgl",
        "inkl",
    ];
    const NL: &[&str] = &[
        "factuur",
        "factuurdatum",
        "factuurnummer",
        "bedrag",
        "totaal",
        "btw",
        "aantal",
        "omschrijving",
        "prijs",
        "vervaldatum",
        "betalen",
        "de",
        "het",
        "een",
        "van",
        "voor",
        "wij",
        "uw",
        "graag",
        "binnen",
        "dagen",
        "pakbon",
        "bestelling",
        "stuks",
        "excl",
        "incl",
        "datum",
        "bedankt",
        "subtotaal",
    ];
    const EN: &[&str] = &[
        "invoice",
        "date",
        "total",
        "amount",
        "due",
        "qty",
        "quantity",
        "description",
        "price",
        "vat",
        "tax",
        "the",
        "and",
        "of",
        "for",
        "your",
        "please",
        "payment",
        "days",
        "within",
        "ltd",
        "inc",
        "bill",
        "subtotal",
        "balance",
        "order",
        "delivery",
        "thank",
        "you",
        "number",
    ];
    const FR: &[&str] = &[
        "facture",
        "date",
        "montant",
        "total",
        "tva",
        "ht",
        "ttc",
        "désignation",
        "quantité",
        "prix",
        "échéance",
        "règlement",
        "paiement",
        "de",
        "la",
        "le",
        "les",
        "du",
        "des",
        "et",
        "à",
        "pour",
        "votre",
        "nous",
        "avoir",
        "net",
        "payer",
        "rue",
        "client",
        "siret",
        "virement",
        "jours",
    ];
    const PL: &[&str] = &[
        "faktura",
        "sprzedawca",
        "nabywca",
        "data",
        "wystawienia",
        "sprzedaży",
        "netto",
        "brutto",
        "vat",
        "razem",
        "zapłaty",
        "płatności",
        "termin",
        "przelew",
        "ilość",
        "cena",
        "wartość",
        "kwota",
        "słownie",
        "nazwa",
        "nip",
        "ul",
        "zł",
        "dni",
        "do",
        "i",
        "na",
        "w",
        "z",
        "nr",
        "konta",
        "usługi",
        "stawka",
    ];
    const ES: &[&str] = &[
        "factura",
        "fecha",
        "importe",
        "total",
        "iva",
        "base",
        "imponible",
        "cantidad",
        "precio",
        "concepto",
        "descripción",
        "vencimiento",
        "pago",
        "de",
        "la",
        "el",
        "los",
        "del",
        "y",
        "en",
        "por",
        "para",
        "cliente",
        "nif",
        "cif",
        "forma",
    ];
    const IT: &[&str] = &[
        "fattura",
        "data",
        "importo",
        "totale",
        "iva",
        "imponibile",
        "quantità",
        "prezzo",
        "descrizione",
        "scadenza",
        "pagamento",
        "di",
        "il",
        "la",
        "del",
        "della",
        "e",
        "per",
        "cliente",
        "partita",
        "spett",
        "documento",
        "nota",
        "credito",
        "bonifico",
    ];
    let mut counts = [0usize; 7];
    for word in WORD.find_iter(text) {
        let w = word.as_str().to_lowercase();
        for (k, list) in [DE, NL, EN, FR, PL, ES, IT].iter().enumerate() {
            counts[k] += usize::from(list.contains(&w.as_str()));
        }
    }
    let langs = [
        Lang::De,
        Lang::Nl,
        Lang::En,
        Lang::Fr,
        Lang::Pl,
        Lang::Es,
        Lang::It,
    ];
    // The first language with the highest count wins a tie, as before for De/Nl/En.
    let (best, count) = counts
        .iter()
        .enumerate()
        .fold((0, 0), |acc, (k, &c)| if c > acc.1 { (k, c) } else { acc });
    if count == 0 {
        Lang::Unknown
    } else {
        langs[best]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_of_spaces_separate_cells_and_single_spaces_do_not() {
        let line = Line::new("Rechnungsnummer:   RE-2014-0815\tDatum: 07.05.2014");

        let cells: Vec<&str> = line.cells.iter().map(|c| c.text.as_str()).collect();

        assert_eq!(
            cells,
            ["Rechnungsnummer:", "RE-2014-0815", "Datum: 07.05.2014"]
        );
        assert_eq!(line.cells[1].col, 19);
    }

    #[test]
    fn the_language_follows_the_vocabulary() {
        assert_eq!(
            Doc::new("Rechnung\nBitte zahlen Sie den Betrag").lang,
            Lang::De
        );
        assert_eq!(Doc::new("Factuur\nTotaal incl. BTW").lang, Lang::Nl);
        assert_eq!(Doc::new("Invoice\nTotal due within 30 days").lang, Lang::En);
        assert_eq!(
            Doc::new("Facture\nTotal TTC à payer par virement").lang,
            Lang::Fr
        );
        assert_eq!(
            Doc::new("Faktura VAT\nDo zapłaty: 100,00 zł\nSłownie: sto").lang,
            Lang::Pl
        );
        assert_eq!(Doc::new("Factura\nBase imponible\nIVA 21%").lang, Lang::Es);
        assert_eq!(
            Doc::new("Fattura\nImponibile\nTotale documento").lang,
            Lang::It
        );
    }
}
