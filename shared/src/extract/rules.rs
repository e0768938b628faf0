//! The offline `rules` extractor: explicit patterns over transcribed text, no model.

use super::Extraction;

/// Extracts the contract's fields from transcribed text.
pub fn extract(text: &str) -> Extraction {
    let _ = text;
    unimplemented!("rules extractor: in progress on branch feat/rules")
}
