//! How two normalised reference keys relate ([`compare_keys`]: the same number, one slip
//! apart, another number of the same shape, or of another shape) and how specific a key
//! is ([`specificity`]). Pure functions of the keys.

use super::super::normalize::{letter_part, number_part};

/// How two references relate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum RefMatch {
    /// Of different shapes (another prefix, another count of digits — an
    /// order-confirmation number beside an order number), or the same digits grouped
    /// differently: neither the same number nor a contradiction.
    Unrelated,
    /// The same prefix and as many digits (one of slack where the groups agree), but
    /// other digits, however grouped: a contradiction.
    Different,
    /// One slip apart (swapped, dropped or doubled digit): probably a typo.
    Near,
    /// The same digit groups, one of them without its letter prefix.
    SameNumber,
    Exact,
}

/// How specific a key is, 0.4–1: by its count of digits, a letter prefix adding a step.
/// `PO-2024-42` and `4500123` count fully, `1001` 0.7, `17` 0.4.
pub fn specificity(key: &str) -> f64 {
    let digits = key.chars().filter(char::is_ascii_digit).count();
    let base: f64 = match digits {
        0..=2 => 0.4,
        3 => 0.55,
        4 => 0.7,
        5 => 0.85,
        _ => 1.0,
    };
    let prefixed = !letter_part(key).is_empty();
    if prefixed {
        (base + 0.15).min(1.0)
    } else {
        base
    }
}

/// How two keys relate.
pub fn compare_keys(a: &str, b: &str) -> RefMatch {
    if a == b {
        return RefMatch::Exact;
    }
    let (la, lb) = (letter_part(a), letter_part(b));
    let letters_agree = la == lb || la.is_empty() || lb.is_empty();
    if !letters_agree {
        // `AB-77001` (an order confirmation) against `PO-4500012345`: another kind of
        // number, no evidence either way.
        return RefMatch::Unrelated;
    }
    let (na, nb) = (number_part(a), number_part(b));
    if na == nb {
        return RefMatch::SameNumber;
    }
    let (ga, gb): (Vec<&str>, Vec<&str>) = (na.split('-').collect(), nb.split('-').collect());
    // Groups merged or split: `45000-12345` and `4500012345`, `LS-2024-123` (from
    // `LS-2024-00123`) and `LS-202400123`. One side must be a single group, so the other's
    // boundaries (with their trimmed leading zeros) are the only reading.
    if (gb.len() == 1 && zero_padded_groups_spell(&ga, gb[0]))
        || (ga.len() == 1 && zero_padded_groups_spell(&gb, ga[0]))
    {
        return RefMatch::SameNumber;
    }
    let (da, db): (Vec<char>, Vec<char>) = (
        na.chars().filter(char::is_ascii_digit).collect(),
        nb.chars().filter(char::is_ascii_digit).collect(),
    );
    if da == db {
        // `LS-2024-1-15` against `LS-2024-11-5`: the same digits, grouped otherwise.
        return RefMatch::Unrelated;
    }
    if da.len().min(db.len()) >= 4 && one_slip(&da, &db) {
        return RefMatch::Near;
    }
    // Another shape: another count of digits (leading zeros are trimmed, so one digit of
    // slack when the groups agree). The same count of other digits contradicts, however
    // the digits are grouped: `4500012345` and `45000-12346` are two orders.
    // Grouped otherwise, only the same prefix on both sides says "the same kind of
    // number" (`LS-2024-0002` against `77001` is another kind, trimmed zeros and all).
    let slack = if ga.len() == gb.len() {
        1
    } else if la == lb {
        0
    } else {
        return RefMatch::Unrelated;
    };
    if da.len().abs_diff(db.len()) > slack {
        return RefMatch::Unrelated;
    }
    RefMatch::Different
}

/// Whether `groups`, each with any number of leading zeros put back, spell `digits`.
fn zero_padded_groups_spell(groups: &[&str], digits: &str) -> bool {
    let Some((first, rest)) = groups.split_first() else {
        return digits.is_empty();
    };
    let mut tail = digits;
    loop {
        if let Some(after) = tail.strip_prefix(first)
            && zero_padded_groups_spell(rest, after)
        {
            return true;
        }
        match tail.strip_prefix('0') {
            Some(after) => tail = after,
            None => return false,
        }
    }
}

/// Whether `a` and `b` differ by one swap of neighbours, or one character dropped or
/// doubled. A changed digit is *not* a slip: consecutive numbers (the next week's
/// purchase order) differ by exactly that.
fn one_slip(a: &[char], b: &[char]) -> bool {
    if a.len() == b.len() {
        let diff: Vec<usize> = (0..a.len()).filter(|&i| a[i] != b[i]).collect();
        return diff.len() == 2
            && diff[1] == diff[0] + 1
            && a[diff[0]] == b[diff[1]]
            && a[diff[1]] == b[diff[0]];
    }
    let (long, short) = if a.len() > b.len() { (a, b) } else { (b, a) };
    if long.len() != short.len() + 1 {
        return false;
    }
    (0..long.len()).any(|skip| {
        long.iter()
            .enumerate()
            .filter(|(i, _)| *i != skip)
            .map(|(_, c)| c)
            .eq(short.iter())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key_of(raw: &str) -> String {
        crate::matching::normalize::normalize_reference(raw).unwrap()
    }

    fn compare_raw(a: &str, b: &str) -> RefMatch {
        compare_keys(&key_of(a), &key_of(b))
    }

    #[test]
    fn the_same_digits_written_differently_are_the_same_number() {
        for (a, b) in [
            ("45000 12345", "4500012345"),
            ("LS202400123", "LS-2024-00123"),
            ("PO 45000-77001", "PO 4500077001"),
            ("PO 45000-77001", "4500077001"),
            ("PO-2024-O042", "PO-2024-0042"),
        ] {
            assert!(
                compare_raw(a, b) >= RefMatch::SameNumber,
                "{a} / {b}: {:?}",
                compare_raw(a, b)
            );
            assert!(compare_raw(b, a) >= RefMatch::SameNumber, "{b} / {a}");
        }
    }

    #[test]
    fn only_references_of_one_shape_with_other_digits_contradict() {
        // Same prefix, same groups, other digits: the next order.
        assert_eq!(
            compare_raw("PO-2024-0042", "PO-2024-0043"),
            RefMatch::Different
        );
        assert_eq!(compare_raw("4500012345", "4500012346"), RefMatch::Different);
        assert_eq!(
            compare_raw("PO-2024-0099", "PO-2024-0100"),
            RefMatch::Different
        );
        // Other shapes: no evidence either way.
        assert_eq!(
            compare_raw("AB-77001", "PO-4500012345"),
            RefMatch::Unrelated
        );
        assert_eq!(compare_raw("77001", "4500012345"), RefMatch::Unrelated);
        assert_eq!(
            compare_raw("PO-2024-0042", "PO-4500012345"),
            RefMatch::Unrelated
        );
        // The same digits in other groups: neither the same nor a contradiction.
        assert_eq!(
            compare_raw("LS-2024-1-15", "LS-2024-11-5"),
            RefMatch::Unrelated
        );
    }

    #[test]
    fn the_same_count_of_other_digits_contradicts_whatever_the_grouping() {
        for (a, b) in [
            ("4500012345", "45000-12346"),
            ("45000 12345", "4500012399"),
            ("PO-2024-4242", "PO-20244243"),
        ] {
            assert_eq!(compare_raw(a, b), RefMatch::Different, "{a} / {b}");
            assert_eq!(compare_raw(b, a), RefMatch::Different, "{b} / {a}");
        }
        // Other groups and another count of digits: another shape, no evidence.
        assert_eq!(compare_raw("4500012345", "450001-23"), RefMatch::Unrelated);
        // Grouped otherwise with a prefix on one side only: another kind of number.
        assert_eq!(compare_raw("LS-2024-0002", "77001"), RefMatch::Unrelated);
    }
}
