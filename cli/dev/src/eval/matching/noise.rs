//! The noise extraction leaves on names and numbers: other separators and case,
//! dropped prefixes and zeros, OCR letters, swapped, dropped or wrong digits.

use super::*;

pub(super) fn fold_umlauts(s: &str) -> String {
    s.replace('ü', "ue")
        .replace('ö', "oe")
        .replace('ä', "ae")
        .replace('Ü', "Ue")
        .replace('Ö', "Oe")
        .replace('Ä', "Ae")
        .replace('ß', "ss")
}

pub(super) fn swap_two_letters(rng: &mut StdRng, s: &str) -> String {
    let mut chars: Vec<char> = s.chars().collect();
    let candidates: Vec<usize> = (1..chars.len().saturating_sub(1))
        .filter(|&i| {
            chars[i].is_alphabetic() && chars[i + 1].is_alphabetic() && chars[i] != chars[i + 1]
        })
        .collect();
    if let Some(&i) = candidates.get(rng.random_range(0..candidates.len().max(1))) {
        chars.swap(i, i + 1);
    }
    chars.into_iter().collect()
}

/// Same number, other look: case, separators, leading zeros.
pub(super) fn reformat(rng: &mut StdRng, number: &str) -> String {
    match rng.random_range(0..4) {
        0 => number.to_lowercase(),
        1 => number.replace(['-', '/'], " "),
        2 => number.replace('-', "/"),
        _ => {
            // Leading zeros of the last digit group dropped, or one added.
            let cut = number
                .rfind(|c: char| !c.is_ascii_digit())
                .map(|i| i + 1)
                .unwrap_or(0);
            let (head, digits) = number.split_at(cut);
            if digits.len() > 1 && digits.starts_with('0') {
                format!("{head}{}", digits.trim_start_matches('0'))
            } else if cut > 0 {
                format!("{head}0{digits}")
            } else {
                number.to_owned()
            }
        }
    }
}

/// The same number in another shape, as B2B documents print them: separators dropped
/// (`LS-2024-00123` → `LS202400123`), a long digit group split (`4500012345` →
/// `45000 12345`), or an OCR letter next to a separator (`PO-2024-O042`). Falls back to
/// the number as issued when no shape applies.
pub(super) fn shape_noise(rng: &mut StdRng, number: &str) -> String {
    let mut shapes: Vec<String> = Vec::new();
    let merged: String = number.chars().filter(char::is_ascii_alphanumeric).collect();
    if merged != number {
        shapes.push(merged);
    }
    let chars: Vec<char> = number.chars().collect();
    // The longest run of digits, split inside (at least 2 digits each side).
    let mut best = (0, 0);
    let mut start = 0;
    for i in 0..=chars.len() {
        if i == chars.len() || !chars[i].is_ascii_digit() {
            if i - start > best.1 - best.0 {
                best = (start, i);
            }
            start = i + 1;
        }
    }
    // A split never starts a group with a zero: `45000 12345`, not `450 0012345`
    // (leading zeros of a group are dropped, which would change the number).
    // Only a number of one digit group is split: `LS-2024-001 23` would be other
    // groups, not the same number.
    let runs = chars
        .iter()
        .enumerate()
        .filter(|(i, c)| c.is_ascii_digit() && (*i == 0 || !chars[i - 1].is_ascii_digit()))
        .count();
    let splits: Vec<usize> = if runs == 1 && best.1 - best.0 >= 5 {
        (best.0 + 2..=best.1 - 2)
            .filter(|&i| chars[i] != '0' && chars[best.0..i].iter().any(|c| *c != '0'))
            .collect()
    } else {
        Vec::new()
    };
    if !splits.is_empty() {
        let at = splits[rng.random_range(0..splits.len())];
        let mut split = chars.clone();
        split.insert(at, ' ');
        shapes.push(split.into_iter().collect());
    }
    // A `0` or `1` right after a separator, with digits on both sides.
    if let Some(i) = (2..chars.len().saturating_sub(1)).find(|&i| {
        matches!(chars[i], '0' | '1')
            && !chars[i - 1].is_ascii_alphanumeric()
            && chars[i - 2].is_ascii_digit()
            && chars[i + 1].is_ascii_digit()
    }) {
        let mut ocr = chars.clone();
        ocr[i] = if ocr[i] == '0' { 'O' } else { 'I' };
        shapes.push(ocr.into_iter().collect());
    }
    if shapes.is_empty() {
        return number.to_owned();
    }
    let i = rng.random_range(0..shapes.len());
    shapes.swap_remove(i)
}

/// `PO-2024-0042` → `2024-0042`: the prefix left out.
pub(super) fn drop_prefix(number: &str) -> String {
    let start = number.find(|c: char| c.is_ascii_digit()).unwrap_or(0);
    number[start..].to_owned()
}

/// A `0` read as `O`, or a `1` as `I`, between two digits.
pub(super) fn ocr_letter(rng: &mut StdRng, number: &str) -> String {
    let chars: Vec<char> = number.chars().collect();
    let spots: Vec<usize> = (1..chars.len().saturating_sub(1))
        .filter(|&i| {
            matches!(chars[i], '0' | '1')
                && chars[i - 1].is_ascii_digit()
                && chars[i + 1].is_ascii_digit()
        })
        .collect();
    let Some(&i) = spots.get(rng.random_range(0..spots.len().max(1))) else {
        return number.to_owned();
    };
    let mut out = chars;
    out[i] = if out[i] == '0' { 'O' } else { 'I' };
    out.into_iter().collect()
}

/// The positions of the significant digits of the last digit group.
pub(super) fn significant_digits(number: &str) -> Vec<usize> {
    let chars: Vec<char> = number.chars().collect();
    let start = chars
        .iter()
        .rposition(|c| !c.is_ascii_digit())
        .map(|i| i + 1)
        .unwrap_or(0);
    let first = (start..chars.len())
        .find(|&i| chars[i] != '0')
        .unwrap_or(chars.len());
    (first..chars.len()).collect()
}

/// Two neighbouring different digits swapped.
pub(super) fn transpose(rng: &mut StdRng, number: &str) -> String {
    let mut chars: Vec<char> = number.chars().collect();
    let digits = significant_digits(number);
    let spots: Vec<usize> = digits
        .windows(2)
        .filter(|w| chars[w[0]] != chars[w[1]])
        .map(|w| w[0])
        .collect();
    if let Some(&i) = spots.get(rng.random_range(0..spots.len().max(1))) {
        chars.swap(i, i + 1);
    }
    chars.into_iter().collect()
}

/// One significant digit left out (not the first).
pub(super) fn drop_digit(rng: &mut StdRng, number: &str) -> String {
    let mut chars: Vec<char> = number.chars().collect();
    let digits = significant_digits(number);
    if digits.len() >= 3 {
        let i = digits[rng.random_range(1..digits.len())];
        chars.remove(i);
    }
    chars.into_iter().collect()
}

/// One digit wrong: a slip no rule can tell from another document's number.
pub(super) fn change_digit(rng: &mut StdRng, number: &str) -> String {
    let mut chars: Vec<char> = number.chars().collect();
    let digits = significant_digits(number);
    if let Some(&i) = digits.last() {
        let d = chars[i].to_digit(10).unwrap_or(0);
        let new = (d + rng.random_range(1..9)) % 10;
        chars[i] = char::from_digit(new, 10).unwrap_or('0');
    }
    chars.into_iter().collect()
}
