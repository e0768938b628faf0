//! Bank and tax identifiers: IBANs (checked with ISO 13616 mod-97, so a number that
//! merely looks like one is never reported, including Polish account numbers printed
//! without their `PL`) and VAT ids (EU, UK, Swiss, Indian GSTIN, and labelled national
//! numbers), tolerant of the spaces, dots and dashes they are printed with and returned
//! without them.

use std::sync::LazyLock;

use regex::Regex;

/// Whether `iban` (spaces allowed) has a valid length and mod-97 checksum.
pub(crate) fn iban_is_valid(iban: &str) -> bool {
    let compact: String = iban.chars().filter(|c| !c.is_whitespace()).collect();
    let compact = compact.to_ascii_uppercase();
    if !(15..=34).contains(&compact.len())
        || !compact.chars().all(|c| c.is_ascii_alphanumeric())
        || !compact[..2].chars().all(|c| c.is_ascii_alphabetic())
        || !compact[2..4].chars().all(|c| c.is_ascii_digit())
    {
        return false;
    }
    if iban_length(&compact[..2]).is_some_and(|len| len != compact.len()) {
        return false;
    }
    let rearranged = compact[4..].chars().chain(compact[..4].chars());
    let mut remainder: u32 = 0;
    for c in rearranged {
        let value = c.to_digit(36).unwrap_or(0);
        remainder = if value >= 10 {
            (remainder * 100 + value) % 97
        } else {
            (remainder * 10 + value) % 97
        };
    }
    remainder == 1
}

fn iban_length(country: &str) -> Option<usize> {
    let len = match country {
        "NO" => 15,
        "BE" => 16,
        "DK" | "FI" | "NL" => 18,
        "SI" => 19,
        "AT" | "EE" | "LT" | "LU" => 20,
        "CH" | "HR" | "LI" | "LV" => 21,
        "BG" | "DE" | "GB" | "IE" => 22,
        "CZ" | "ES" | "RO" | "SE" | "SK" => 24,
        "PT" => 25,
        "IS" => 26,
        "FR" | "GR" | "IT" | "MC" | "SM" => 27,
        "CY" | "HU" | "PL" => 28,
        "MT" => 31,
        _ => return None,
    };
    Some(len)
}

/// Valid IBANs in `line` with their byte offsets, without spaces.
pub(crate) fn ibans_in(line: &str) -> Vec<(usize, String)> {
    static CANDIDATE: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"(?i)\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,32}").unwrap());
    let mut out = Vec::new();
    for m in CANDIDATE.find_iter(line) {
        let compact: String = m
            .as_str()
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect::<String>()
            .to_ascii_uppercase();
        let lengths: Vec<usize> = match iban_length(&compact[..2]) {
            Some(len) => vec![len],
            None => (15..=compact.len().min(34)).rev().collect(),
        };
        if let Some(iban) = lengths
            .into_iter()
            .filter(|&len| len <= compact.len())
            .map(|len| &compact[..len])
            .find(|candidate| iban_is_valid(candidate))
        {
            out.push((m.start(), iban.to_string()));
        }
    }
    out
}

/// VAT ids in `line` with their byte offsets, normalised (`DE 123 456 789` →
/// `DE123456789`, `CHE-123.456.789` → `CHE123456789`): EU, UK and Swiss VAT ids with
/// their country prefix, Indian GSTINs, and national tax numbers that need their label
/// to be told from any other number (Polish `NIP`, Spanish `CIF`/`NIF`, Italian
/// `P.IVA`), returned as printed (with a country prefix only when one is printed).
pub(crate) fn vat_ids_in(line: &str) -> Vec<(usize, String)> {
    static VAT: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(
            r"(?x)\b(?:
                AT\ ?U\ ?\d{4}\ ?\d{4}
              | BE\ ?[01]\d{3}[\ .]?\d{3}[\ .]?\d{3}
              | DE\ ?\d{3}\ ?\d{3}\ ?\d{3}
              | NL\ ?\d{4}[\ .]?\d{2}[\ .]?\d{3}[\ .]?B[\ .]?\d{2}
              | NL\ ?\d{9}\ ?B\ ?\d{2}
              | GB\ ?\d{3}\ ?\d{4}\ ?\d{2}(?:\ ?\d{3})?
              | FR\ ?[0-9A-HJ-NP-Z]{2}\ ?\d{3}\ ?\d{3}\ ?\d{3}
              | LU\ ?\d{8}
              | DK\ ?\d{2}\ ?\d{2}\ ?\d{2}\ ?\d{2}
              | IT\ ?\d{11}
              | ES\ ?[0-9A-Z]\d{7}[0-9A-Z]
              | PL\ ?\d{3}[-\ ]?\d{3}[-\ ]?\d{2}[-\ ]?\d{2}
              | PL\ ?\d{10}
              | SE\ ?\d{12}
              | IE\ ?\d{7}[A-W][A-I]?
              | PT\ ?\d{9}
              | CZ\ ?\d{8,10}
              | CHE[-\ ]?\d{3}\.?\d{3}\.?\d{3}
              | \d{2}[A-Z]{5}\d{4}[A-Z][1-9A-Z]Z[0-9A-Z]
            )\b",
        )
        .unwrap()
    });
    // National numbers after their label: NIP 679-308-12-55, NIP: 947-19-88-123,
    // CIF B25123456, NIF: A25998877, P.IVA 03187650366.
    static LABELLED: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(
            r"(?ix)\b(?:
                NIP\b\s*:?\s*(?P<nip>\d{3}-\d{3}-\d{2}-\d{2}|\d{3}-\d{2}-\d{2}-\d{3}|\d{10})
              | (?:C\.?I\.?F|N\.?I\.?F)\.?\s*:?\s*(?P<es>[A-HJ-NP-SUVW]\d{7}[0-9A-J]|\d{8}[A-Z])
              | (?:P\.?\s?IVA|Partita\s+IVA)(?:\s+e\s+C\.?F\.?)?\s*:?\s*(?P<it>\d{11})
            )\b",
        )
        .unwrap()
    });
    let compact = |s: &str| -> String { s.chars().filter(|c| c.is_ascii_alphanumeric()).collect() };
    let mut out: Vec<(usize, String)> = VAT
        .find_iter(line)
        .map(|m| (m.start(), compact(m.as_str())))
        .collect();
    for c in LABELLED.captures_iter(line) {
        let Some(m) = c.name("nip").or(c.name("es")).or(c.name("it")) else {
            continue;
        };
        if !out
            .iter()
            .any(|(pos, _)| *pos <= m.start() && m.start() < pos + 16)
        {
            out.push((m.start(), compact(m.as_str())));
        }
    }
    out.sort_by_key(|(pos, _)| *pos);
    out
}

/// A Polish account number (NRB, 26 digits) after its label (`Nr konta`, `Numer
/// rachunku`, `Konto`), as the PL IBAN it is, with its byte offset; checked like any
/// IBAN.
pub(crate) fn nrb_in(line: &str) -> Option<(usize, String)> {
    static NRB: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)\b(?:konta|konto|rachunku|rachunek)\b[^0-9]{0,20}(\d{2}(?:\s?\d{4}){6})\b")
            .unwrap()
    });
    let c = NRB.captures(line)?;
    let m = c.get(1)?;
    let iban: String = std::iter::once("PL")
        .chain(std::iter::once(m.as_str()))
        .collect::<String>()
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    iban_is_valid(&iban).then(|| (m.start(), iban))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_ibans_pass_the_checksum_with_or_without_spaces() {
        for iban in [
            "DE89370400440532013000",
            "DE89 3704 0044 0532 0130 00",
            "NL91ABNA0417164300",
            "GB29 NWBK 6016 1331 9268 19",
            "AT61 1904 3002 3457 3201",
            "BE68 5390 0754 7034",
        ] {
            assert!(iban_is_valid(iban), "{iban}");
        }
    }

    #[test]
    fn a_mistyped_iban_fails_the_checksum() {
        for iban in [
            "DE89370400440532013001",
            "DE88 3704 0044 0532 0130 00",
            "NL91ABNA0417164301",
            "DE8937040044053201300",
            "XX00",
        ] {
            assert!(!iban_is_valid(iban), "{iban}");
        }
    }

    #[test]
    fn an_iban_is_found_in_a_line_and_the_bic_after_it_is_left_out() {
        let found = ibans_in("IBAN: DE89 3704 0044 0532 0130 00 BIC COBADEFFXXX");

        assert_eq!(found, [(6, "DE89370400440532013000".to_string())]);
    }

    #[test]
    fn an_invalid_iban_in_a_line_is_not_reported() {
        assert!(ibans_in("IBAN DE00 3704 0044 0532 0130 00").is_empty());
    }

    #[test]
    fn vat_ids_are_normalised_without_spaces_or_dots() {
        let cases = [
            ("USt-IdNr.: DE 123 456 789", "DE123456789"),
            ("BTW-nummer: NL8123.45.678.B01", "NL812345678B01"),
            ("BTW nr NL123456789B01", "NL123456789B01"),
            ("UID: ATU12345678", "ATU12345678"),
            ("VAT Reg No: GB 123 4567 89", "GB123456789"),
            ("TVA BE 0123.456.789", "BE0123456789"),
            ("MWST CHE-123.456.789", "CHE123456789"),
            ("TVA FR 12 345 678 901", "FR12345678901"),
            ("UID: ATU 6512 3478", "ATU65123478"),
            ("NIP: 679-308-12-55", "6793081255"),
            ("NIP: 947-19-88-123", "9471988123"),
            ("NIP PL 725-100-20-34", "PL7251002034"),
            ("CIF: B25123456", "B25123456"),
            ("P.IVA e C.F. 03187650366", "03187650366"),
            ("GSTIN/UIN: 24AAKFS4471M1Z3", "24AAKFS4471M1Z3"),
        ];
        for (line, expected) in cases {
            let found = vat_ids_in(line);
            assert_eq!(found.len(), 1, "{line}");
            assert_eq!(found[0].1, expected, "{line}");
        }
    }

    #[test]
    fn a_polish_account_number_after_its_label_is_a_pl_iban() {
        assert_eq!(
            nrb_in("Nr konta: 61 1090 1014 0000 0712 1981 2874").map(|(_, i)| i),
            Some("PL61109010140000071219812874".to_string())
        );
        assert_eq!(nrb_in("Nr konta: 62 1090 1014 0000 0712 1981 2874"), None);
        assert_eq!(nrb_in("Tel. 61 1090 1014 0000 0712 1981 2874"), None);
    }

    #[test]
    fn an_iban_is_not_mistaken_for_a_vat_id() {
        assert!(vat_ids_in("IBAN DE89 3704 0044 0532 0130 00").is_empty());
        assert!(vat_ids_in("DE89370400440532013000").is_empty());
    }
}
