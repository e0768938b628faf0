//! The rules a new link must pass before the write phase writes it, applied under the
//! region locks: the exclusive-partner rule and the evidence ranking across documents.
//! Each returns the links to write and the documents whose edges it removed.
//!
//! Exclusive partners: a delivery note belongs to one order and is billed by one invoice,
//! an invoice bills one order, a credit note corrects one invoice. A link made on
//! circumstance alone (no reference, decided by the score) must not give such a
//! document a second partner of that type: when it already has one, the new link is not
//! made, and an existing circumstantial one is removed with it (neither is trustworthy:
//! a standing order's delivery note that names no order fits every week). A link the
//! references decided removes the document's circumstantial partner of that type. The
//! LLM's link on circumstance alone is not made beside an existing partner of that type
//! and removes nothing: the LLM read untrusted document text. Applied under the region
//! locks (the write phase's *Locking*), this makes the outcome independent of which of
//! the documents arrived first.

use std::collections::HashMap;

use sqlx::PgConnection;
use uuid::Uuid;

use crate::extract::Extraction;
use crate::matching::decide::Decision;
use crate::matching::score::{self, Tier, proximity};
use crate::matching::{DecidedBy, DocumentType};

/// An edge of a document that may have only one partner of a type (`child`): its other
/// end and that end's type.
#[derive(Debug, sqlx::FromRow)]
struct Partner {
    edge_id: Uuid,
    child_id: Uuid,
    other_id: Uuid,
    other_type: DocumentType,
    circumstantial: bool,
}

/// Applies the exclusive-partner rule (module docs) to `decisions`: returns the ones to
/// write, and the documents whose circumstantial edges it deleted (their clusters are
/// recomputed too).
pub(super) async fn enforce_exclusive_partners(
    conn: &mut PgConnection,
    document_id: Uuid,
    source_type: DocumentType,
    decisions: &[Decision],
) -> Result<(Vec<Decision>, Vec<Uuid>), sqlx::Error> {
    let mut keep: Vec<Decision> = Vec::new();
    let mut dropped = Vec::new();
    // The documents that may have only one partner of the other end's type, and all
    // their edges: one query, not one per decision.
    let mut children: Vec<Uuid> = decisions
        .iter()
        .filter_map(|d| {
            if source_type.exclusive(d.candidate_type) {
                Some(document_id)
            } else if d.candidate_type.exclusive(source_type) {
                Some(d.candidate_id)
            } else {
                None
            }
        })
        .collect();
    children.sort();
    children.dedup();
    let partners: Vec<Partner> = if children.is_empty() {
        Vec::new()
    } else {
        sqlx::query_as::<_, Partner>(
            r#"
            SELECT m.id AS edge_id,
                   c.id AS child_id,
                   o.id AS other_id,
                   o.type AS other_type,
                   m.decided_by = 'score' AND NOT EXISTS (
                       SELECT 1 FROM jsonb_array_elements(m.evidence) e
                        WHERE e->>'kind' = 'reference_conflict'
                           OR (e->>'kind' = 'reference' AND e->>'relation' <> 'near')
                   ) AS circumstantial
              FROM unnest($1::uuid[]) AS c(id)
              JOIN document_match m
                ON m.document_a_id = c.id OR m.document_b_id = c.id
              JOIN document o
                ON o.id = CASE WHEN m.document_a_id = c.id THEN m.document_b_id ELSE m.document_a_id END
            "#,
        )
        .bind(&children)
        .fetch_all(&mut *conn)
        .await?
    };
    // Edges this rule unlinks, deleted together at the end.
    let mut deleted: Vec<Uuid> = Vec::new();
    // The run's own links count as partners too (a look-alike order the LLM confirmed
    // beside the one the references chose): the stronger ones first, so that a link
    // the references decided is in place before a circumstantial one is judged.
    let mut ordered: Vec<&Decision> = decisions.iter().collect();
    ordered.sort_by_key(|d| score::circumstantial(&d.evidence));
    for d in ordered {
        // The side that may have only one partner of the other's type.
        let (child, parent_type, parent) = if source_type.exclusive(d.candidate_type) {
            (document_id, d.candidate_type, d.candidate_id)
        } else if d.candidate_type.exclusive(source_type) {
            (d.candidate_id, source_type, document_id)
        } else {
            keep.push(d.clone());
            continue;
        };
        let others: Vec<&Partner> = partners
            .iter()
            .filter(|p| {
                p.child_id == child
                    && p.other_type == parent_type
                    && p.other_id != parent
                    && !deleted.contains(&p.edge_id)
            })
            .collect();
        // Circumstance alone, whoever decided: the LLM's word on a pair with no reference
        // is no stronger than the document text it read (docs/matching.md, "The LLM band
        // is untrusted"), so such a link neither evicts a rival nor joins one.
        let new_is_circumstantial = score::circumstantial(&d.evidence);
        let evicts = !(new_is_circumstantial && d.decided_by == DecidedBy::Llm);
        let weaker: Vec<&&Partner> = others.iter().filter(|o| o.circumstantial).collect();
        if evicts && !weaker.is_empty() {
            deleted.extend(weaker.iter().map(|o| o.edge_id));
            dropped.extend(weaker.iter().map(|o| o.other_id));
            dropped.push(child);
        }
        // This run's links that give `child` a partner of `parent_type` already.
        let rival_here = |k: &Decision| {
            let (k_child, k_parent) = if source_type.exclusive(k.candidate_type) {
                (document_id, k.candidate_id)
            } else {
                (k.candidate_id, document_id)
            };
            k.candidate_type == d.candidate_type && k_child == child && k_parent != parent
        };
        let rivals_here = keep.iter().filter(|k| rival_here(k)).count();
        if evicts && rivals_here > 0 {
            // As for committed edges: the run's circumstantial links of that type go (not
            // written yet, so no cluster to recompute).
            keep.retain(|k| !(rival_here(k) && score::circumstantial(&k.evidence)));
        }
        if new_is_circumstantial && (!others.is_empty() || rivals_here > 0) {
            tracing::info!(
                document_id = %child,
                candidate = %parent,
                "a second partner on circumstance alone is contested; not linked"
            );
            continue;
        }
        keep.push(d.clone());
    }
    if !deleted.is_empty() {
        sqlx::query("DELETE FROM document_match WHERE id = ANY($1)")
            .bind(&deleted)
            .execute(&mut *conn)
            .await?;
    }
    Ok((keep, dropped))
}

/// An edge of one end of a ranked link: its other end and that end's type.
#[derive(Debug, sqlx::FromRow)]
struct Rival {
    edge_id: Uuid,
    end_id: Uuid,
    other_id: Uuid,
    other_type: DocumentType,
    /// [`Tier`] as a number: 2 direct, 1 shared, 0 circumstance.
    tier: i32,
    structured_data: Option<serde_json::Value>,
}

/// A document's extraction for [`proximity`]: nothing found when it has no data, or
/// data that does not read (logged with the document and the reason).
fn compared(id: Uuid, stored: Option<&serde_json::Value>) -> Extraction {
    let Some(stored) = stored else {
        return Extraction::empty();
    };
    Extraction::from_stored(stored).unwrap_or_else(|error| {
        tracing::warn!(
            document_id = %id,
            error.message = %error,
            "a linked document's extracted data cannot be read; compared as if it had none"
        );
        Extraction::empty()
    })
}

fn tier_of(n: i32) -> Tier {
    match n {
        2 => Tier::Direct,
        1 => Tier::Shared,
        _ => Tier::Circumstance,
    }
}

/// The evidence ranking across documents (module docs; docs/matching.md, *Evidence
/// ranking*), under the region locks, for each new link that references tie: at both of
/// its ends, the end's existing links to documents of the other end's type are compared
/// with it.
///
/// - A direct citation removes the end's links tied only by a shared citation.
/// - A link tied only by a shared citation is not made when the end has a directly
///   cited partner of that type, or a shared-citation partner nearer to it
///   ([`proximity`]). When it is nearer than the end's shared-citation partners, they are
///   unlinked; when one is exactly as near, that one is unlinked and this one is not
///   made (no one is uniquely nearest).
///
/// Whichever of a framework order's documents arrives first, each invoice ends with the
/// delivery note nearest to it. Returns the links to write and the documents whose
/// edges it removed (their clusters are recomputed).
pub(super) async fn enforce_evidence_ranking(
    conn: &mut PgConnection,
    document_id: Uuid,
    source_type: DocumentType,
    decisions: &[Decision],
) -> Result<(Vec<Decision>, Vec<Uuid>), sqlx::Error> {
    let mut keep = Vec::new();
    let mut dropped = Vec::new();
    // Only an invoice and a delivery note both cite what ties them (the order): a direct
    // link elsewhere (to an order, a credit note's invoice) has no shared rival.
    let ranked = |d: &Decision| match Tier::of(&d.evidence) {
        Tier::Circumstance => false,
        Tier::Shared => true,
        Tier::Direct => DocumentType::invoice_and_delivery(source_type, d.candidate_type),
    };
    if !decisions.iter().any(ranked) {
        return Ok((decisions.to_vec(), dropped));
    }
    let mut ids: Vec<Uuid> = decisions.iter().map(|d| d.candidate_id).collect();
    ids.push(document_id);
    let data: HashMap<Uuid, Extraction> = sqlx::query_as::<_, (Uuid, Option<serde_json::Value>)>(
        r#"SELECT id, structured_data FROM document WHERE id = ANY($1)"#,
    )
    .bind(&ids)
    .fetch_all(&mut *conn)
    .await?
    .into_iter()
    .map(|(id, stored)| (id, compared(id, stored.as_ref())))
    .collect();
    let empty = Extraction::empty();
    let data_of = |id: &Uuid| data.get(id).unwrap_or(&empty);
    // Every edge of both ends of every ranked link, in one query (not two per link); the
    // edges this rule unlinks are left out as it goes and deleted together at the end.
    let mut ends: Vec<Uuid> = decisions
        .iter()
        .filter(|d| ranked(d))
        .map(|d| d.candidate_id)
        .collect();
    ends.push(document_id);
    ends.sort();
    ends.dedup();
    let all_rivals: Vec<Rival> = sqlx::query_as::<_, Rival>(
        r#"
        SELECT m.id AS edge_id,
               c.id AS end_id,
               o.id AS other_id,
               o.type AS other_type,
               CASE WHEN EXISTS (SELECT 1 FROM jsonb_array_elements(m.evidence) e
                                  WHERE e->>'kind' = 'reference'
                                    AND e->>'relation' = 'cites') THEN 2
                    WHEN EXISTS (SELECT 1 FROM jsonb_array_elements(m.evidence) e
                                  WHERE e->>'kind' = 'reference'
                                    AND e->>'relation' = 'shared') THEN 1
                    ELSE 0 END AS tier,
               o.structured_data
          FROM unnest($1::uuid[]) AS c(id)
          JOIN document_match m
            ON m.document_a_id = c.id OR m.document_b_id = c.id
          JOIN document o
            ON o.id = CASE WHEN m.document_a_id = c.id THEN m.document_b_id ELSE m.document_a_id END
        "#,
    )
    .bind(&ends)
    .fetch_all(&mut *conn)
    .await?;
    let mut deleted: Vec<Uuid> = Vec::new();
    for d in decisions {
        let tier = Tier::of(&d.evidence);
        if !ranked(d) {
            keep.push(d.clone());
            continue;
        }
        let ends = [
            (document_id, d.candidate_id, d.candidate_type),
            (d.candidate_id, document_id, source_type),
        ];
        let mut blocked = false;
        let mut farther: Vec<(Uuid, Uuid, Uuid)> = Vec::new();
        let mut tied: Vec<(Uuid, Uuid, Uuid)> = Vec::new();
        for (end, other, other_type) in ends {
            let rivals = all_rivals.iter().filter(|r| {
                r.end_id == end
                    && r.other_type == other_type
                    && r.other_id != other
                    && !deleted.contains(&r.edge_id)
            });
            let here = proximity(data_of(&end), data_of(&other));
            for r in rivals {
                let edge = (r.edge_id, r.other_id, end);
                match (tier, tier_of(r.tier)) {
                    (Tier::Direct, Tier::Shared) => farther.push(edge),
                    (Tier::Shared, Tier::Direct) => blocked = true,
                    (Tier::Shared, Tier::Shared) => {
                        let there = proximity(
                            data_of(&end),
                            &compared(r.other_id, r.structured_data.as_ref()),
                        );
                        match here.cmp(&there) {
                            std::cmp::Ordering::Less => farther.push(edge),
                            std::cmp::Ordering::Equal => tied.push(edge),
                            std::cmp::Ordering::Greater => blocked = true,
                        }
                    }
                    _ => {}
                }
            }
        }
        if blocked {
            tracing::info!(
                document_id = %document_id,
                candidate = %d.candidate_id,
                "a partner cited directly, or tied by a shared citation and nearer, outranks this link; not linked"
            );
            continue;
        }
        // A tie: neither is uniquely nearest, both go.
        let tie = !tied.is_empty();
        let unlink: Vec<(Uuid, Uuid, Uuid)> = if tie { tied } else { farther };
        for (edge, other, end) in &unlink {
            deleted.push(*edge);
            dropped.push(*other);
            dropped.push(*end);
        }
        if tie {
            tracing::info!(
                document_id = %document_id,
                candidate = %d.candidate_id,
                "two partners tied by a shared citation are equally near; neither is linked"
            );
            continue;
        }
        keep.push(d.clone());
    }
    if !deleted.is_empty() {
        sqlx::query("DELETE FROM document_match WHERE id = ANY($1)")
            .bind(&deleted)
            .execute(&mut *conn)
            .await?;
    }
    Ok((keep, dropped))
}
