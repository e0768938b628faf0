//! Bank and tax identifiers: IBANs (checked with ISO 13616 mod-97, so a number that
//! merely looks like one is never reported) and EU/UK/Swiss VAT ids, both tolerant of
//! the spaces and dots they are printed with and returned without them.

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
/// `DE123456789`, `CHE-123.456.789` → `CHE123456789`).
pub(crate) fn vat_ids_in(line: &str) -> Vec<(usize, String)> {
    static VAT: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(
            r"(?x)\b(?:
                AT\ ?U\ ?\d{8}
              | BE\ ?[01]\d{3}[\ .]?\d{3}[\ .]?\d{3}
              | DE\ ?\d{3}\ ?\d{3}\ ?\d{3}
              | NL\ ?\d{4}[\ .]?\d{2}[\ .]?\d{3}[\ .]?B[\ .]?\d{2}
              | GB\ ?\d{3}\ ?\d{4}\ ?\d{2}(?:\ ?\d{3})?
              | FR\ ?[0-9A-HJ-NP-Z]{2}\ ?\d{3}\ ?\d{3}\ ?\d{3}
              | LU\ ?\d{8}
              | DK\ ?\d{2}\ ?\d{2}\ ?\d{2}\ ?\d{2}
              | IT\ ?\d{11}
              | ES\ ?[0-9A-Z]\d{7}[0-9A-Z]
              | PL\ ?\d{10}
              | SE\ ?\d{12}
              | IE\ ?\d{7}[A-W][A-I]?
              | PT\ ?\d{9}
              | CHE[-\ ]?\d{3}\.?\d{3}\.?\d{3}
            )\b",
        )
        .unwrap()
    });
    VAT.find_iter(line)
        .map(|m| {
            let id: String = m
                .as_str()
                .chars()
                .filter(|c| c.is_ascii_alphanumeric())
                .collect();
            (m.start(), id)
        })
        .collect()
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
        ];
        for (line, expected) in cases {
            let found = vat_ids_in(line);
            assert_eq!(found.len(), 1, "{line}");
            assert_eq!(found[0].1, expected, "{line}");
        }
    }

    #[test]
    fn an_iban_is_not_mistaken_for_a_vat_id() {
        assert!(vat_ids_in("IBAN DE89 3704 0044 0532 0130 00").is_empty());
        assert!(vat_ids_in("DE89370400440532013000").is_empty());
    }
}
