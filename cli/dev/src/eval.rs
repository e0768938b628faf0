//! The labelled evaluations: what a change to extraction or matching does to their
//! accuracy, measured on documents whose right answers are known.
//!
//! - [`extraction`]: a provider on a directory of labelled documents;
//! - [`matching`]: a generated labelled set through the real matching function.

pub mod extraction;
pub mod matching;
