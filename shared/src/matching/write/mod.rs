//! The write phase: replace the match edges a run judged and recompute the clusters they
//! touch, inside the caller's transaction (one transaction for the whole phase, so a
//! failure at any step leaves the previous edges and clusters intact).
//!
//! Only the edges between the document and the candidates this run scored are replaced.
//! An edge another document wrote while this run was deciding (its candidate search ran
//! before that document existed) was not judged here and stays: two documents of one
//! purchase matched at the same time never undo each other's links.
//!
//! Before any edge is written, the rules in `rules` decide which of the run's links are
//! made and which existing links go: the exclusive-partner rule and the evidence ranking
//! across documents.
//!
//! Clusters are the connected components of the match graph: after the document's edges
//! are replaced, every document reachable from it, from its old cluster and from its new
//! partners gets the cluster id of its component. A component keeps the existing id most
//! of its members already carry (so merged clusters keep the bigger one's id and links
//! from the app stay valid); a split-off part gets a fresh id; a document left without
//! edges gets no cluster.
//!
//! # Locking
//!
//! A document's *region* is its cluster, or the document alone when it has none. The
//! clusters are the components of the match graph, so every edge has both ends in one
//! region, and everything a write phase reads or changes (the edges of the document and
//! of the candidates it links, their partners, the components it recomputes) lies in the
//! regions of the document and the candidates it links. The write phase takes one
//! transaction-scoped advisory lock per region ([`REGION_KEY`]), smallest key first;
//! two write phases wait for each other only when their regions meet, and a tenant's
//! unrelated purchases are written in parallel. A region's membership changes only under
//! its lock (a merge or split is written by a phase that holds every region it touches),
//! so once the locks are held the regions read are stable: a document that moved while
//! the phase waited has its new region locked too, and a component the recompute reaches
//! beyond the locked regions (left by an older write) is locked before it is written.
//! Locks taken in such a second round are out of order; Postgres breaks the deadlock
//! this can give (40P01) and the run writes again (`WRITE_ATTEMPTS`).

mod rules;

use std::collections::HashMap;

use sqlx::PgConnection;
use uuid::Uuid;

use super::DocumentType;
use super::decide::Decision;
use crate::telemetry::metrics;
use rules::{enforce_evidence_ranking, enforce_exclusive_partners};

/// What the write phase changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    pub edges: usize,
    /// The document's cluster after the write (`None`: no edges).
    pub cluster_id: Option<Uuid>,
    /// Documents whose cluster id changed.
    pub reassigned: usize,
    /// Clusters that joined another (see [`cluster_changes`]).
    pub merged: usize,
    /// Parts split off a cluster.
    pub split: usize,
}

#[derive(Debug, sqlx::FromRow)]
struct Member {
    id: Uuid,
    cluster_id: Option<Uuid>,
    /// The advisory lock key of its region ([`REGION_KEY`]).
    lock_key: i64,
}

/// The advisory lock key of a document's region, in SQL (`d`: the document row, `$1`:
/// the tenant): its cluster, or the document itself when it has none. Keys are 64-bit
/// hashes; two regions that collide only wait for each other.
pub const REGION_KEY: &str = "hashtextextended('docflow.matching:' || $1::text || ':' || COALESCE(d.cluster_id, d.id)::text, 0)";

/// The region locks this transaction holds.
#[derive(Debug, Default)]
struct Held {
    keys: std::collections::BTreeSet<i64>,
}

/// Locks the regions of `documents` (transaction-scoped advisory locks), smallest key
/// first, and reads their regions again: a document that joined another cluster while
/// this waited (a write phase that held its region merged it) has its new region locked
/// too, until every region read is held. Locks taken in a later round are out of order;
/// the rare deadlock that gives is broken by Postgres (40P01) and the caller retries.
async fn lock_regions(
    conn: &mut PgConnection,
    tenant_id: Uuid,
    documents: &[Uuid],
    held: &mut Held,
) -> Result<(), sqlx::Error> {
    loop {
        // One statement a round: the regions not yet held, locked in key order (the
        // sorted subquery is not flattened, so the locks are taken row by row in its
        // order).
        let locked: Vec<i64> = sqlx::query_scalar(&format!(
            r#"
            SELECT s.key
              FROM (SELECT DISTINCT {REGION_KEY} AS key
                      FROM document d
                     WHERE d.id = ANY($2)
                     ORDER BY 1) s
             WHERE s.key <> ALL($3)
               AND pg_advisory_xact_lock(s.key) IS NOT NULL
            "#
        ))
        .bind(tenant_id)
        .bind(documents)
        .bind(held.keys.iter().copied().collect::<Vec<i64>>())
        .fetch_all(&mut *conn)
        .await
        .inspect_err(count_lock_failure)?;
        if locked.is_empty() {
            return Ok(());
        }
        held.keys.extend(locked);
    }
}

/// Counts a lock wait that gave up (55P03, `lock_timeout`) or lost a deadlock (40P01).
fn count_lock_failure(e: &sqlx::Error) {
    match e.as_database_error().and_then(|d| d.code()).as_deref() {
        Some("55P03") => metrics::count(metrics::matching::WRITE_LOCK_TIMEOUTS, 1),
        Some("40P01") => metrics::count(metrics::matching::WRITE_LOCK_DEADLOCKS, 1),
        _ => {}
    }
}

/// Everything whose cluster may change: `start` and the members of its clusters,
/// closed under the match edges; with each one's cluster and region.
async fn reach(
    conn: &mut PgConnection,
    tenant_id: Uuid,
    start: &[Uuid],
) -> Result<Vec<Member>, sqlx::Error> {
    let reached: Vec<Uuid> = sqlx::query_scalar(
        r#"
        WITH RECURSIVE start AS (
            SELECT d.id FROM document d WHERE d.id = ANY($1)
            UNION
            SELECT d.id
              FROM document d
             WHERE d.cluster_id IN (SELECT cluster_id FROM document
                                     WHERE id = ANY($1) AND cluster_id IS NOT NULL)
        ), reach(id) AS (
            SELECT id FROM start
            UNION
            -- Two index lookups per document (a side, b side), not a scan of the edges.
            SELECT other.id
              FROM reach r
              CROSS JOIN LATERAL (
                  SELECT m.document_b_id AS id FROM document_match m WHERE m.document_a_id = r.id
                  UNION ALL
                  SELECT m.document_a_id FROM document_match m WHERE m.document_b_id = r.id
              ) other
        )
        SELECT id FROM reach
        "#,
    )
    .bind(start)
    .fetch_all(&mut *conn)
    .await?;
    // By primary key: the recursive query's row estimate would talk the planner into
    // scanning the whole table for this join.
    sqlx::query_as::<_, Member>(&format!(
        "SELECT d.id, d.cluster_id, {REGION_KEY} AS lock_key FROM document d WHERE d.id = ANY($2) ORDER BY d.id"
    ))
    .bind(tenant_id)
    .bind(&reached)
    .fetch_all(&mut *conn)
    .await
}

#[derive(Debug, sqlx::FromRow)]
struct Edge {
    document_a_id: Uuid,
    document_b_id: Uuid,
}

/// Replaces the edges between the document and the `judged` candidates (each with the
/// data version it was scored on) with `decisions` (each naming one of them) and
/// reassigns clusters. A candidate whose data changed since it was read (re-extracted
/// while this run decided) is left out, edges and decision alike: its own re-match
/// judges the pair on the new data, and an edge it wrote already stays. Run it inside a
/// transaction (`&mut *tx`); the caller commits. Write phases whose regions meet are
/// serialised with transaction-scoped advisory locks (module docs, *Locking*), so two
/// documents of one cluster matched at once cannot interleave their cluster updates.
///
/// Under those locks it first locks the document's row and checks that `owner` still holds
/// the claim and the data version it read ([`super::status::still_owns`]); when not (a
/// re-extraction or a newer delivery came in while this run decided) it writes nothing
/// and returns `None`: the caller rolls back and discards the run.
///
/// Fails with the first database error; nothing is committed then.
pub async fn write_matches(
    conn: &mut PgConnection,
    tenant_id: Uuid,
    owner: &super::status::Owner,
    source_type: DocumentType,
    judged: &[(Uuid, i64)],
    decisions: &[Decision],
) -> Result<Option<Written>, sqlx::Error> {
    let document_id = owner.id;
    // A write phase stuck behind another gives up after the role's `lock_timeout` (20 s,
    // 55P03, transient) and is retried later; JIT is off for the matching role (the
    // recursive cluster query's estimates are wild). Both are the role's settings, not a
    // `SET LOCAL` here: RDS Proxy pins a session on any SET.
    // The regions of the document and of every candidate it decided to link: whatever
    // this phase reads or writes of the match graph lies in them (module docs,
    // *Locking*). A judged candidate left unlinked is not locked: an edge the document
    // has to it lies in the document's own region.
    let mut held = Held::default();
    let mut region_of: Vec<Uuid> = decisions.iter().map(|d| d.candidate_id).collect();
    region_of.push(document_id);
    let waited = std::time::Instant::now();
    lock_regions(conn, tenant_id, &region_of, &mut held).await?;
    metrics::time(metrics::matching::WRITE_LOCK_WAIT, waited.elapsed());
    if super::status::still_owns(conn, owner).await?.is_lost() {
        return Ok(None);
    }
    // Under the lock (a re-extraction's own re-match waits here too): the candidates whose
    // data changed since this run read it.
    let (ids, versions): (Vec<Uuid>, Vec<i64>) = judged.iter().copied().unzip();
    let changed: Vec<Uuid> = sqlx::query_scalar(
        r#"
        SELECT d.id
          FROM document d
          JOIN unnest($1::uuid[], $2::int8[]) AS read(id, version) ON read.id = d.id
         WHERE d.data_version <> read.version
        "#,
    )
    .bind(&ids)
    .bind(&versions)
    .fetch_all(&mut *conn)
    .await?;
    if !changed.is_empty() {
        tracing::info!(
            candidates = ?changed,
            "candidates re-extracted while this run decided; their pairs are left to their own re-match"
        );
    }
    let judged: Vec<Uuid> = ids.into_iter().filter(|id| !changed.contains(id)).collect();
    let decisions: Vec<Decision> = decisions
        .iter()
        .filter(|d| !changed.contains(&d.candidate_id))
        .cloned()
        .collect();

    sqlx::query(
        r#"
        DELETE FROM document_match
         WHERE (document_a_id = $1 AND document_b_id = ANY($2))
            OR (document_b_id = $1 AND document_a_id = ANY($2))
        "#,
    )
    .bind(document_id)
    .bind(&judged)
    .execute(&mut *conn)
    .await?;

    let (decisions, mut dropped) =
        enforce_evidence_ranking(conn, document_id, source_type, &decisions).await?;
    let (decisions, unlinked) =
        enforce_exclusive_partners(conn, document_id, source_type, &decisions).await?;
    dropped.extend(unlinked);
    let decisions = &decisions[..];

    // One statement for all edges. A candidate deleted since it was found is skipped,
    // not a permanent failure.
    let partners: Vec<Uuid> = decisions.iter().map(|d| d.candidate_id).collect();
    let scores: Vec<f64> = decisions.iter().map(|d| d.score).collect();
    let confidences: Vec<&str> = decisions.iter().map(|d| d.confidence.as_str()).collect();
    let deciders: Vec<&str> = decisions.iter().map(|d| d.decided_by.as_str()).collect();
    let evidence: Vec<sqlx::types::Json<&Vec<super::score::Evidence>>> = decisions
        .iter()
        .map(|d| sqlx::types::Json(&d.evidence))
        .collect();
    let reasoning: Vec<Option<&str>> = decisions.iter().map(|d| d.reasoning.as_deref()).collect();
    sqlx::query(
        r#"
        INSERT INTO document_match
               (tenant_id, document_a_id, document_b_id, score, confidence, decided_by, evidence, reasoning)
        SELECT $1, LEAST($2::uuid, v.partner), GREATEST($2::uuid, v.partner),
               v.score, v.confidence, v.decided_by, v.evidence, v.reasoning
          FROM unnest($3::uuid[], $4::float8[], $5::text[], $6::text[], $7::jsonb[], $8::text[])
               AS v(partner, score, confidence, decided_by, evidence, reasoning)
         WHERE EXISTS (SELECT 1 FROM document WHERE id = v.partner)
        ON CONFLICT (document_a_id, document_b_id) DO UPDATE
           SET score = EXCLUDED.score, confidence = EXCLUDED.confidence,
               decided_by = EXCLUDED.decided_by, evidence = EXCLUDED.evidence,
               reasoning = EXCLUDED.reasoning
        "#,
    )
    .bind(tenant_id)
    .bind(document_id)
    .bind(&partners)
    .bind(&scores)
    .bind(&confidences)
    .bind(&deciders)
    .bind(&evidence)
    .bind(&reasoning)
    .execute(&mut *conn)
    .await?;

    // Everything whose cluster may change: the document, its old cluster (which holds
    // every candidate it had an edge to), its new partners, the documents the rules
    // unlinked, and their clusters, closed under the match edges.
    let mut start: Vec<Uuid> = decisions.iter().map(|d| d.candidate_id).collect();
    start.extend(dropped);
    start.push(document_id);
    let members = loop {
        let members = reach(conn, tenant_id, &start).await?;
        // Every member lies in a locked region while the graph's clusters are its
        // components; should an older write have left one outside, it is locked too and
        // the reach read again under the lock.
        let outside: Vec<Uuid> = members
            .iter()
            .filter(|m| !held.keys.contains(&m.lock_key))
            .map(|m| m.id)
            .collect();
        if outside.is_empty() {
            break members;
        }
        tracing::warn!(
            documents = outside.len(),
            "documents reached by the cluster recompute lay outside the locked regions; locking them"
        );
        lock_regions(conn, tenant_id, &outside, &mut held).await?;
    };
    let ids: Vec<Uuid> = members.iter().map(|m| m.id).collect();
    let edges = sqlx::query_as::<_, Edge>(
        r#"
        SELECT document_a_id, document_b_id
          FROM document_match
         WHERE document_a_id = ANY($1) OR document_b_id = ANY($1)
        "#,
    )
    .bind(&ids)
    .fetch_all(&mut *conn)
    .await?;

    let current: Vec<(Uuid, Option<Uuid>)> = members.iter().map(|m| (m.id, m.cluster_id)).collect();
    let pairs: Vec<(Uuid, Uuid)> = edges
        .iter()
        .map(|e| (e.document_a_id, e.document_b_id))
        .collect();
    let assigned = assign_clusters(&current, &pairs, Uuid::new_v4);

    let changed: Vec<(Uuid, Option<Uuid>)> = current
        .iter()
        .filter_map(|(id, old)| {
            let new = assigned.get(id).copied().flatten();
            (new != *old).then_some((*id, new))
        })
        .collect();
    if !changed.is_empty() {
        let (ids, clusters): (Vec<Uuid>, Vec<Option<Uuid>>) = changed.iter().copied().unzip();
        sqlx::query(
            r#"
            UPDATE document AS d
               SET cluster_id = v.cluster_id,
                   updated_at = now()
              FROM unnest($1::uuid[], $2::uuid[]) AS v(id, cluster_id)
             WHERE d.id = v.id
            "#,
        )
        .bind(&ids)
        .bind(&clusters)
        .execute(&mut *conn)
        .await?;
    }

    let (merged, split) = cluster_changes(&current, &assigned);
    Ok(Some(Written {
        edges: decisions.len(),
        cluster_id: assigned.get(&document_id).copied().flatten(),
        reassigned: changed.len(),
        merged,
        split,
    }))
}

/// How the clusters changed from `before` (document, cluster) to `after`: merged counts,
/// per new cluster, the old clusters beyond the first that went into it; split counts,
/// per old cluster, the new clusters beyond the first its members went to.
pub fn cluster_changes(
    before: &[(Uuid, Option<Uuid>)],
    after: &HashMap<Uuid, Option<Uuid>>,
) -> (usize, usize) {
    use std::collections::{HashMap as Map, HashSet};
    let mut old_into_new: Map<Uuid, HashSet<Uuid>> = Map::new();
    let mut new_from_old: Map<Uuid, HashSet<Uuid>> = Map::new();
    for (id, old) in before {
        let new = after.get(id).copied().flatten();
        if let (Some(old), Some(new)) = (old, new) {
            old_into_new.entry(new).or_default().insert(*old);
            new_from_old.entry(*old).or_default().insert(new);
        }
    }
    let beyond_first = |sets: Map<Uuid, HashSet<Uuid>>| {
        sets.values()
            .map(|s| s.len().saturating_sub(1))
            .sum::<usize>()
    };
    (beyond_first(old_into_new), beyond_first(new_from_old))
}

/// The cluster of every document: connected components of `edges`; a component of one
/// document has none. Components are served largest first, each taking the existing id
/// most of its members carry (ties: the smallest id) unless a larger component took it.
pub fn assign_clusters(
    documents: &[(Uuid, Option<Uuid>)],
    edges: &[(Uuid, Uuid)],
    mut fresh: impl FnMut() -> Uuid,
) -> HashMap<Uuid, Option<Uuid>> {
    let index: HashMap<Uuid, usize> = documents
        .iter()
        .enumerate()
        .map(|(i, (id, _))| (*id, i))
        .collect();
    let mut parent: Vec<usize> = (0..documents.len()).collect();
    fn root(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    for (a, b) in edges {
        if let (Some(&a), Some(&b)) = (index.get(a), index.get(b)) {
            let (ra, rb) = (root(&mut parent, a), root(&mut parent, b));
            if ra != rb {
                parent[ra.max(rb)] = ra.min(rb);
            }
        }
    }
    let mut components: HashMap<usize, Vec<usize>> = HashMap::new();
    for i in 0..documents.len() {
        let r = root(&mut parent, i);
        components.entry(r).or_default().push(i);
    }
    let mut components: Vec<Vec<usize>> = components.into_values().collect();
    components.sort_by(|a, b| b.len().cmp(&a.len()).then(a[0].cmp(&b[0])));

    let mut taken: Vec<Uuid> = Vec::new();
    let mut out = HashMap::new();
    for component in components {
        if component.len() == 1 {
            out.insert(documents[component[0]].0, None);
            continue;
        }
        let mut counts: HashMap<Uuid, usize> = HashMap::new();
        for &i in &component {
            if let Some(c) = documents[i].1 {
                *counts.entry(c).or_default() += 1;
            }
        }
        let keep = counts
            .into_iter()
            .filter(|(c, _)| !taken.contains(c))
            .max_by(|(ca, na), (cb, nb)| na.cmp(nb).then(cb.cmp(ca)))
            .map(|(c, _)| c);
        let cluster = keep.unwrap_or_else(&mut fresh);
        taken.push(cluster);
        for &i in &component {
            out.insert(documents[i].0, Some(cluster));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(n: u128) -> Vec<Uuid> {
        (1..=n).map(Uuid::from_u128).collect()
    }

    #[test]
    fn connected_documents_share_one_new_cluster_and_loners_have_none() {
        let d = ids(4);
        let fresh = Uuid::from_u128(100);

        let out = assign_clusters(
            &[(d[0], None), (d[1], None), (d[2], None), (d[3], None)],
            &[(d[0], d[1]), (d[1], d[2])],
            || fresh,
        );

        assert_eq!(out[&d[0]], Some(fresh));
        assert_eq!(out[&d[1]], Some(fresh));
        assert_eq!(out[&d[2]], Some(fresh));
        assert_eq!(out[&d[3]], None);
    }

    #[test]
    fn cluster_changes_count_merges_and_splits() {
        let (a, b, c, d) = (
            Uuid::new_v4(),
            Uuid::new_v4(),
            Uuid::new_v4(),
            Uuid::new_v4(),
        );
        let (x, y, z) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
        // a, b in x and c in y become one cluster x: one merge. d leaves z alone: nothing.
        let before = [(a, Some(x)), (b, Some(x)), (c, Some(y)), (d, Some(z))];
        let after = HashMap::from([(a, Some(x)), (b, Some(x)), (c, Some(x)), (d, None)]);
        assert_eq!(cluster_changes(&before, &after), (1, 0));
        // x splits into x and a fresh one.
        let before = [(a, Some(x)), (b, Some(x)), (c, Some(x))];
        let after = HashMap::from([(a, Some(x)), (b, Some(x)), (c, Some(y))]);
        assert_eq!(cluster_changes(&before, &after), (0, 1));
    }

    #[test]
    fn merged_clusters_keep_the_id_most_members_carry() {
        let d = ids(5);
        let (big, small) = (Uuid::from_u128(200), Uuid::from_u128(300));

        let out = assign_clusters(
            &[
                (d[0], Some(big)),
                (d[1], Some(big)),
                (d[2], Some(big)),
                (d[3], Some(small)),
                (d[4], Some(small)),
            ],
            &[(d[0], d[1]), (d[1], d[2]), (d[3], d[4]), (d[2], d[3])],
            Uuid::new_v4,
        );

        assert!(d.iter().all(|id| out[id] == Some(big)));
    }

    #[test]
    fn a_split_cluster_keeps_its_id_on_the_larger_part_and_the_other_gets_a_fresh_one() {
        let d = ids(5);
        let (old, fresh) = (Uuid::from_u128(200), Uuid::from_u128(999));
        let all_old: Vec<(Uuid, Option<Uuid>)> = d.iter().map(|id| (*id, Some(old))).collect();

        // d[2] lost its edges: {d0, d1} and {d3, d4} remain, d2 is alone.
        let out = assign_clusters(&all_old, &[(d[0], d[1]), (d[3], d[4])], || fresh);

        let first = out[&d[0]].unwrap();
        let second = out[&d[3]].unwrap();
        assert_ne!(first, second);
        assert!([first, second].contains(&old) && [first, second].contains(&fresh));
        assert_eq!(out[&d[2]], None);
    }
}
