//! Errors as one short line: the CLI's contract is one clear line per failure.

/// The error and its innermost cause, on one line of at most 240 characters (an AWS SDK
/// error's full chain repeats itself and quotes whole HTTP responses).
pub fn short(error: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![error.to_string()];
    let mut cause = error.source();
    while let Some(e) = cause {
        parts.push(e.to_string());
        cause = e.source();
    }
    let text = match parts.as_slice() {
        [only] => only.clone(),
        [first, .., last] if first.contains(last.as_str()) => first.clone(),
        [first, .., last] => format!("{first}: {last}"),
        [] => String::new(),
    };
    let text = text.replace('\n', " ");
    if text.chars().count() > 240 {
        let mut cut: String = text.chars().take(239).collect();
        cut.push('…');
        cut
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("dispatch failure")]
    struct Outer(#[source] Middle);
    #[derive(Debug, thiserror::Error)]
    #[error("io error")]
    struct Middle(#[source] std::io::Error);

    #[test]
    fn the_first_and_the_innermost_message_are_kept() {
        let e = Outer(Middle(std::io::Error::other("connection refused")));
        assert_eq!(short(&e), "dispatch failure: connection refused");
    }

    #[test]
    fn a_long_chain_is_cut_on_one_line() {
        let e = std::io::Error::other("x\n".repeat(300));
        let text = short(&e);
        assert!(!text.contains('\n'));
        assert_eq!(text.chars().count(), 240);
    }
}
