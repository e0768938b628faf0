//! Decisions: which scored candidates become match edges. Above the match threshold the
//! score decides; in the ambiguous band the LLM decides (one call per source document
//! with all its ambiguous candidates), or, without an LLM configured, the score alone
//! against [`Thresholds::score_only`]; below the band nothing is linked.
//!
//! Candidates that fit on circumstance alone (no reference either way) are contested
//! when another candidate of their type fits too — another circumstantial one, or one
//! the references chose: the score cannot tell a standing order's weeks apart, so
//! without an LLM none of them is linked, and with one the LLM decides.
//!
//! The LLM answer is `{"matches":[{"candidate":<n>,"confidence":"high|medium|low",
//! "reasoning":"…"}]}`, validated (candidate numbers in range, no duplicates). A failed
//! call is an error — transient ones are retried in process by the client — never a
//! silent empty list (a lost decision looks like "no match" and is never retried). The
//! prompt of that call is built in [`super::prompt`].

use serde::{Deserialize, Serialize};
use uuid::Uuid;

pub use super::prompt::{
    MAX_DOCUMENT_CHARS, MAX_FIELD_CHARS, MAX_HEADER_CHARS, MAX_LINE_ITEMS, MAX_LLM_CANDIDATES,
    MAX_PROMPT_CHARS,
};
pub use super::score::Scored;

use super::prompt::{SYSTEM_PROMPT, truncate, user_prompt};
use super::score::{Evidence, Proximity, Score, Tier, proximity};
use super::{Confidence, DecidedBy, DocumentType, Thresholds};
use crate::extract::Extraction;
use crate::llm::{LlmClient, LlmError};
use crate::telemetry::metrics;

/// One edge to write.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub candidate_id: Uuid,
    pub candidate_type: DocumentType,
    pub score: f64,
    pub confidence: Confidence,
    pub decided_by: DecidedBy,
    pub evidence: Vec<Evidence>,
    pub reasoning: Option<String>,
}

/// The link between a corrected invoice and the invoice it replaces
/// ([`super::candidates::replacements`]): made by rule, high confidence, its one piece of
/// evidence naming the replaced document.
pub fn replacement(pair: &super::candidates::Replacement) -> Decision {
    Decision {
        candidate_id: pair.id,
        candidate_type: DocumentType::Invoice,
        score: 1.0,
        confidence: Confidence::High,
        decided_by: DecidedBy::Rule,
        evidence: vec![Evidence::Replaces {
            replaced: pair.replaced,
            invoice_number: pair.invoice_number.clone(),
            weight: 0.0,
        }],
        reasoning: Some(format!(
            "a corrected invoice (384) and invoice {} it replaces",
            pair.invoice_number
        )),
    }
}

/// Where a score falls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Band {
    Match,
    Ambiguous,
    NoMatch,
}

impl Thresholds {
    pub fn band(&self, score: f64) -> Band {
        if score >= self.matched {
            Band::Match
        } else if score >= self.ambiguous {
            Band::Ambiguous
        } else {
            Band::NoMatch
        }
    }
}

/// The LLM's answer.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
pub struct LlmAnswer {
    pub matches: Vec<LlmMatch>,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
pub struct LlmMatch {
    /// 1-based number of the candidate in the prompt.
    pub candidate: usize,
    pub confidence: Confidence,
    pub reasoning: String,
}

/// Decides every scored candidate. The LLM (if any) is called once, for the ambiguous
/// ones only, and before any database transaction.
///
/// Fails with the LLM's last error when the call fails after the client's in-process
/// retries (transient) or at once (permanent: context window, authentication).
pub async fn decide(
    llm: Option<&LlmClient>,
    thresholds: &Thresholds,
    source_type: DocumentType,
    source_data: &Extraction,
    scored: &[Scored],
) -> Result<Vec<Decision>, LlmError> {
    let contested = contested(thresholds, scored);
    let outranked = outranked(thresholds, source_data, scored);
    let mut decisions = Vec::new();
    let mut ambiguous = Vec::new();
    let mut undecidable = Vec::new();
    for candidate in scored {
        if outranked.contains(&candidate.id) {
            continue;
        }
        if contested.contains(&candidate.id) {
            undecidable.push(candidate);
            continue;
        }
        match band_of(thresholds, &candidate.score) {
            Band::Match => decisions.push(Decision {
                candidate_id: candidate.id,
                candidate_type: candidate.doc_type,
                score: candidate.score.score,
                confidence: Confidence::High,
                decided_by: DecidedBy::Score,
                evidence: candidate.score.evidence.clone(),
                reasoning: None,
            }),
            Band::Ambiguous => ambiguous.push(candidate),
            Band::NoMatch => {}
        }
    }
    if !undecidable.is_empty() {
        tracing::info!(
            candidates = undecidable.len(),
            "several candidates of one type fit on circumstance alone; the score cannot choose"
        );
    }
    // On circumstance alone the LLM may only veto (docs/matching.md, "The LLM band is
    // untrusted"): a pair with no reference either way links only where the score alone
    // would link it, so the others (below `score_only`, contested) are not worth a call.
    // The contested ones above were never sent. A pair the embeddings alone found is the
    // exception the score cannot judge at all: the LLM decides it, at `medium` at most.
    if llm.is_some() {
        ambiguous.retain(|c| {
            !circumstantial(&c.score) || semantic_only(&c.score) || score_alone_links(thresholds, c)
        });
    }
    if ambiguous.is_empty() {
        return Ok(decisions);
    }
    match llm {
        None => decisions.extend(score_only(thresholds, &contested, &ambiguous)),
        Some(llm) => {
            // Bounded cost: the highest scores go to the LLM (in their order), the rest
            // are decided as without an LLM.
            let overflow = over_the_llm_limit(&mut ambiguous);
            if !overflow.is_empty() {
                tracing::info!(
                    sent = ambiguous.len(),
                    decided_by_score = overflow.len(),
                    "more candidates in the band than one LLM call takes; the rest decided by the score"
                );
                decisions.extend(score_only(thresholds, &contested, &overflow));
            }
            let user = user_prompt(source_type, source_data, &ambiguous);
            let count = ambiguous.len();
            let (answer, completion) = match llm
                .complete_json::<LlmAnswer, _>(SYSTEM_PROMPT, &user, |a| validate(a, count))
                .await
            {
                Ok(answered) => answered,
                // Too large for this model's context, whatever the budgets (a small local
                // model): no retry makes it fit. The band is decided by the score alone,
                // as without an LLM; the document is matched, not failed.
                Err(LlmError::ContextWindow { status, body }) => {
                    tracing::warn!(
                        status,
                        body = %body,
                        candidates = count,
                        prompt_chars = user.len(),
                        "the LLM's context window is too small for this document's candidates; the score decides them"
                    );
                    metrics::count_by(
                        metrics::dimension::OUTCOME,
                        "context_window",
                        metrics::matching::LLM_DECISIONS,
                        count as u64,
                    );
                    decisions.extend(score_only(thresholds, &contested, &ambiguous));
                    return Ok(decisions);
                }
                Err(other) => return Err(other),
            };
            let by_outcome = |outcome: &str, n: usize| {
                metrics::count_by(
                    metrics::dimension::OUTCOME,
                    outcome,
                    metrics::matching::LLM_DECISIONS,
                    n as u64,
                )
            };
            by_outcome("match", answer.matches.len());
            by_outcome("no_match", count.saturating_sub(answer.matches.len()));
            tracing::info!(
                candidates = count,
                matches = answer.matches.len(),
                model = %completion.model,
                input_tokens = completion.input_tokens,
                output_tokens = completion.output_tokens,
                "LLM decided the ambiguous candidates"
            );
            decisions.extend(confirmed(source_type, &ambiguous, answer));
        }
    }
    Ok(decisions)
}

/// The band decided by the score alone (no LLM, or none usable): a candidate at or above
/// [`Thresholds::score_only`] links with confidence `low`, unless it is contested or rests
/// on the embeddings alone (such a pair needs an LLM's word).
fn score_only(thresholds: &Thresholds, contested: &[Uuid], band: &[&Scored]) -> Vec<Decision> {
    band.iter()
        .filter(|c| !contested.contains(&c.id) && !semantic_only(&c.score))
        .filter(|c| c.score.score >= thresholds.score_only)
        .map(|c| Decision {
            candidate_id: c.id,
            candidate_type: c.doc_type,
            score: c.score.score,
            confidence: Confidence::Low,
            decided_by: DecidedBy::Score,
            evidence: c.score.evidence.clone(),
            reasoning: None,
        })
        .collect()
}

/// Whether the score alone links `c` from the band: at or above `score_only`, and not
/// resting on the embeddings alone. (Contested candidates never reach the band.)
fn score_alone_links(thresholds: &Thresholds, c: &Scored) -> bool {
    c.score.score >= thresholds.score_only && !semantic_only(&c.score)
}

/// Keeps the [`MAX_LLM_CANDIDATES`] highest scores of `band` (ties: the earlier), in their
/// order, and returns the others.
fn over_the_llm_limit<'a>(band: &mut Vec<&'a Scored>) -> Vec<&'a Scored> {
    if band.len() <= MAX_LLM_CANDIDATES {
        return Vec::new();
    }
    let mut ranked: Vec<usize> = (0..band.len()).collect();
    ranked.sort_by(|&a, &b| {
        band[b]
            .score
            .score
            .total_cmp(&band[a].score.score)
            .then(a.cmp(&b))
    });
    let keep: std::collections::HashSet<usize> =
        ranked.into_iter().take(MAX_LLM_CANDIDATES).collect();
    let (kept, over): (Vec<_>, Vec<_>) = band
        .drain(..)
        .enumerate()
        .partition(|(i, _)| keep.contains(i));
    *band = kept.into_iter().map(|(_, c)| c).collect();
    over.into_iter().map(|(_, c)| c).collect()
}

/// What the LLM's answer may link (docs/matching.md, "The LLM band is untrusted"): it
/// can only confirm or veto the candidates it was shown (numbers out of range were
/// rejected by [`validate`]). A `low` confirmation does not link. Confirming two or
/// more candidates of a type the source has at most one partner of (two orders for one
/// invoice) contradicts itself: none of them is linked — what an answer obeying "link
/// all candidates" written in a document gives.
fn confirmed(source_type: DocumentType, shown: &[&Scored], answer: LlmAnswer) -> Vec<Decision> {
    let confident: Vec<LlmMatch> = answer
        .matches
        .into_iter()
        .filter(|m| m.confidence != Confidence::Low)
        .collect();
    let per_type = |t: DocumentType| {
        confident
            .iter()
            .filter(|m| shown[m.candidate - 1].doc_type == t)
            .count()
    };
    let mut out = Vec::new();
    for m in &confident {
        let c = shown[m.candidate - 1];
        // Several of one type on circumstance alone contradicts itself too: nothing but
        // the answer's word tells them apart (an invoice citing nothing, two look-alike
        // deliveries of the week; a delivery note has one invoice either way).
        let exclusive =
            source_type.exclusive(c.doc_type) || super::score::circumstantial(&c.score.evidence);
        if exclusive && per_type(c.doc_type) > 1 {
            tracing::info!(
                candidate = %c.id,
                doc_type = c.doc_type.as_str(),
                "the LLM confirmed several candidates of a type the document has one of; none is linked"
            );
            continue;
        }
        // On circumstance alone the answer confirms what the score would link; it is no
        // more certain than the document text it read.
        let confidence = if super::score::circumstantial(&c.score.evidence) {
            match m.confidence {
                Confidence::High => Confidence::Medium,
                other => other,
            }
        } else {
            m.confidence
        };
        out.push(Decision {
            candidate_id: c.id,
            candidate_type: c.doc_type,
            score: c.score.score,
            confidence,
            decided_by: DecidedBy::Llm,
            evidence: c.score.evidence.clone(),
            reasoning: Some(truncate(&m.reasoning, MAX_FIELD_CHARS)),
        });
    }
    out
}

fn circumstantial(score: &Score) -> bool {
    super::score::circumstantial(&score.evidence)
}

fn semantic_only(score: &Score) -> bool {
    super::score::semantic_only(&score.evidence)
}

/// The band of a candidate: the score's, except that a pair resting on the embeddings
/// alone ([`super::score::semantic_only`]) never reaches the match band — an embedding
/// finds the same goods of another supplier as readily as a renamed supplier's.
fn band_of(thresholds: &Thresholds, score: &Score) -> Band {
    match thresholds.band(score.score) {
        Band::Match if semantic_only(score) => Band::Ambiguous,
        band => band,
    }
}

/// The evidence ranking (docs/matching.md, *Evidence ranking*): a direct citation beats
/// a shared one, which beats circumstance. Among the candidates of one type that reach
/// the band through a shared citation alone (an invoice and the delivery notes of a
/// framework order, all naming one order), only the one uniquely nearest to the source
/// ([`Proximity`]: same quantities first, then days) stays; when two are equally near,
/// none does, and when a candidate of that type is cited directly, none does either.
/// Returns the ids of the candidates set aside.
fn outranked(thresholds: &Thresholds, source_data: &Extraction, scored: &[Scored]) -> Vec<Uuid> {
    let mut out = Vec::new();
    let mut types: Vec<DocumentType> = scored.iter().map(|c| c.doc_type).collect();
    types.sort_by_key(|t| t.as_str());
    types.dedup();
    for t in types {
        let in_band: Vec<&Scored> = scored
            .iter()
            .filter(|c| c.doc_type == t && thresholds.band(c.score.score) != Band::NoMatch)
            .collect();
        let shared: Vec<&Scored> = in_band
            .iter()
            .copied()
            .filter(|c| Tier::of(&c.score.evidence) == Tier::Shared)
            .collect();
        if shared.is_empty() {
            continue;
        }
        let cited = in_band
            .iter()
            .any(|c| Tier::of(&c.score.evidence) == Tier::Direct);
        let keep = if cited {
            None
        } else {
            let near: Vec<(Proximity, Uuid)> = shared
                .iter()
                .map(|c| (proximity(source_data, &c.data), c.id))
                .collect();
            let nearest = near.iter().map(|(p, _)| *p).min();
            let at_nearest: Vec<Uuid> = near
                .iter()
                .filter(|(p, _)| Some(*p) == nearest)
                .map(|(_, id)| *id)
                .collect();
            (at_nearest.len() == 1).then(|| at_nearest[0])
        };
        let set_aside: Vec<Uuid> = shared
            .iter()
            .map(|c| c.id)
            .filter(|id| Some(*id) != keep)
            .collect();
        if !set_aside.is_empty() {
            tracing::info!(
                doc_type = t.as_str(),
                set_aside = set_aside.len(),
                kept = keep.is_some(),
                cited,
                "candidates tied only by a shared citation: the nearest alone stays"
            );
        }
        out.extend(set_aside);
    }
    out
}

/// Candidates the score cannot choose between, of one type, reaching the ambiguous band
/// on circumstance alone (same supplier, lines, dates; no reference): two or more of
/// them (the weekly purchase orders of a standing order, for a delivery note that names
/// none), or one next to a candidate of the same type that the references chose (next
/// week's delivery note beside the one an invoice's order number points to). Without an
/// LLM none of them is linked; with one, the LLM decides.
fn contested(thresholds: &Thresholds, scored: &[Scored]) -> Vec<Uuid> {
    // Per type: circumstantial candidates, and whether a referenced one is in the band.
    let mut by_type: Vec<(DocumentType, Vec<Uuid>, bool)> = Vec::new();
    for c in scored {
        if thresholds.band(c.score.score) == Band::NoMatch {
            continue;
        }
        let entry = match by_type.iter_mut().position(|(t, _, _)| *t == c.doc_type) {
            Some(i) => &mut by_type[i],
            None => {
                by_type.push((c.doc_type, Vec::new(), false));
                by_type.last_mut().expect("just pushed")
            }
        };
        if circumstantial(&c.score) {
            entry.1.push(c.id);
        } else {
            entry.2 = true;
        }
    }
    by_type
        .into_iter()
        .filter(|(_, circumstantial, referenced)| {
            circumstantial.len() > 1 || (*referenced && !circumstantial.is_empty())
        })
        .flat_map(|(_, ids, _)| ids)
        .collect()
}

/// Checks an answer against the candidates it was asked about.
pub fn validate(answer: &LlmAnswer, candidates: usize) -> Result<(), String> {
    let mut seen = Vec::new();
    for m in &answer.matches {
        if m.candidate == 0 || m.candidate > candidates {
            return Err(format!(
                "candidate {} does not exist (1..={candidates})",
                m.candidate
            ));
        }
        if seen.contains(&m.candidate) {
            return Err(format!("candidate {} is listed twice", m.candidate));
        }
        seen.push(m.candidate);
    }
    Ok(())
}

#[cfg(test)]
pub(super) mod tests;
