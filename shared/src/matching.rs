//! The matching pipeline: normalise, find candidates, score, decide, write (seeds 000/001).
