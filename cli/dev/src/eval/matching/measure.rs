//! Precision and recall of what the matching function wrote.

use super::*;

/// Precision and recall of one kind of link.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Quality {
    pub true_positives: usize,
    pub predicted: usize,
    pub expected: usize,
}

impl Quality {
    pub(super) fn of(
        predicted: &BTreeSet<(usize, usize)>,
        expected: &BTreeSet<(usize, usize)>,
    ) -> Quality {
        Quality {
            true_positives: predicted.intersection(expected).count(),
            predicted: predicted.len(),
            expected: expected.len(),
        }
    }

    /// 1 when nothing was predicted.
    pub fn precision(&self) -> f64 {
        if self.predicted == 0 {
            1.0
        } else {
            self.true_positives as f64 / self.predicted as f64
        }
    }

    /// 1 when nothing was expected.
    pub fn recall(&self) -> f64 {
        if self.expected == 0 {
            1.0
        } else {
            self.true_positives as f64 / self.expected as f64
        }
    }
}

/// The result of an evaluation.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Report {
    pub documents: usize,
    /// Match edges against the true links.
    pub edges: Quality,
    /// Pairs of documents in one cluster against pairs of one purchase.
    pub clusters: Quality,
    /// Wrong and missed edges by scenario of the documents involved.
    pub wrong_edges: HashMap<String, usize>,
    pub missed_edges: HashMap<String, usize>,
    /// The wrong and the missed edges themselves (indices into the set's documents).
    pub wrong: Vec<(usize, usize)>,
    pub missed: Vec<(usize, usize)>,
    /// Edge precision and recall per scenario: a true link counts for its purchase's
    /// scenario, a written edge for the scenario of each of its two documents (a wrong
    /// edge across two scenarios counts against both).
    pub by_scenario: Vec<(Scenario, Quality)>,
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "documents: {}", self.documents)?;
        for (name, q) in [("edges", &self.edges), ("clusters (pairs)", &self.clusters)] {
            writeln!(
                f,
                "{name}: precision {:.4} ({}/{}), recall {:.4} ({}/{})",
                q.precision(),
                q.true_positives,
                q.predicted,
                q.recall(),
                q.true_positives,
                q.expected
            )?;
        }
        let mut wrong: Vec<_> = self.wrong_edges.iter().collect();
        wrong.sort();
        let mut missed: Vec<_> = self.missed_edges.iter().collect();
        missed.sort();
        writeln!(f, "wrong edges by scenario: {wrong:?}")?;
        writeln!(f, "missed edges by scenario: {missed:?}")?;
        writeln!(
            f,
            "{:<22} {:>9} {:>9} {:>9} {:>10} {:>7}",
            "edges by scenario", "true", "written", "right", "precision", "recall"
        )?;
        for (scenario, q) in &self.by_scenario {
            writeln!(
                f,
                "{:<22} {:>9} {:>9} {:>9} {:>10.3} {:>7.3}",
                format!("{scenario:?}"),
                q.expected,
                q.predicted,
                q.true_positives,
                q.precision(),
                q.recall()
            )?;
        }
        write!(
            f,
            "{:<22} {:>9} {:>9} {:>9} {:>10.3} {:>7.3}",
            "overall",
            self.edges.expected,
            self.edges.predicted,
            self.edges.true_positives,
            self.edges.precision(),
            self.edges.recall()
        )
    }
}

/// Edge quality per scenario of the set (see [`Report::by_scenario`]).
pub(super) fn by_scenario(
    set: &EvalSet,
    predicted: &BTreeSet<(usize, usize)>,
) -> Vec<(Scenario, Quality)> {
    let mut out = Vec::new();
    for scenario in Scenario::ALL {
        if !set.documents.iter().any(|d| d.scenario == scenario) {
            continue;
        }
        let touches = |(a, b): &(usize, usize)| {
            set.documents[*a].scenario == scenario || set.documents[*b].scenario == scenario
        };
        let expected: BTreeSet<(usize, usize)> = set
            .edges
            .iter()
            .filter(|&&e| touches(&e))
            .copied()
            .collect();
        let written: BTreeSet<(usize, usize)> = predicted
            .iter()
            .filter(|&&e| touches(&e))
            .copied()
            .collect();
        out.push((scenario, Quality::of(&written, &expected)));
    }
    out
}

/// One line about a document of the set: type, scenario, number, citations, date,
/// supplier, VAT id and line quantities — what it takes to see why a link was (not) made.
pub fn describe(set: &EvalSet, index: usize) -> String {
    let d = &set.documents[index];
    let text = |key: &str| d.data.get(key).and_then(Value::as_str).unwrap_or("-");
    let quantities: Vec<String> = d
        .data
        .get("line_items")
        .and_then(Value::as_array)
        .map(|items| items.iter().map(|i| i["quantity"].to_string()).collect())
        .unwrap_or_default();
    format!(
        "{} #{index} ({:?}, case {}): no {} po {} dn {} inv {} date {} supplier {:?} vat {} qty [{}]",
        d.doc_type.as_str(),
        d.scenario,
        d.case,
        text("invoice_number"),
        text("po_reference"),
        text("delivery_note_reference"),
        text("invoice_reference"),
        text("invoice_date"),
        text("supplier_name"),
        text("supplier_vat_id"),
        quantities.join(",")
    )
}

pub(super) fn pairs_within<K: Eq + std::hash::Hash>(
    groups: impl Iterator<Item = (K, usize)>,
) -> BTreeSet<(usize, usize)> {
    let mut by_group: HashMap<K, Vec<usize>> = HashMap::new();
    for (group, index) in groups {
        by_group.entry(group).or_default().push(index);
    }
    let mut pairs = BTreeSet::new();
    for members in by_group.values() {
        for (i, a) in members.iter().enumerate() {
            for b in &members[i + 1..] {
                pairs.insert(((*a).min(*b), (*a).max(*b)));
            }
        }
    }
    pairs
}

/// Compares what matching wrote for the set's documents (`ids`, indexed like
/// `set.documents`) with the true links and clusters.
pub async fn measure(pool: &PgPool, set: &EvalSet, ids: &[Uuid]) -> anyhow::Result<Report> {
    let index: HashMap<Uuid, usize> = ids.iter().enumerate().map(|(i, id)| (*id, i)).collect();
    let edges: Vec<(Uuid, Uuid)> = sqlx::query_as(
        r#"SELECT document_a_id, document_b_id FROM document_match WHERE document_a_id = ANY($1)"#,
    )
    .bind(ids)
    .fetch_all(pool)
    .await
    .context("failed to read the match edges")?;
    let predicted_edges: BTreeSet<(usize, usize)> = edges
        .iter()
        .filter_map(|(a, b)| Some((*index.get(a)?, *index.get(b)?)))
        .map(|(a, b)| (a.min(b), a.max(b)))
        .collect();
    let clusters: Vec<(Uuid, Option<Uuid>)> =
        sqlx::query_as(r#"SELECT id, cluster_id FROM document WHERE id = ANY($1)"#)
            .bind(ids)
            .fetch_all(pool)
            .await
            .context("failed to read the clusters")?;
    let predicted_clusters = pairs_within(
        clusters
            .iter()
            .filter_map(|(id, cluster)| Some(((*cluster)?, *index.get(id)?))),
    );
    let expected_clusters =
        pairs_within(set.documents.iter().enumerate().map(|(i, d)| (d.case, i)));

    let scenario = |(a, b): &(usize, usize)| {
        let (sa, sb) = (set.documents[*a].scenario, set.documents[*b].scenario);
        if sa == sb {
            format!("{sa:?}")
        } else {
            format!("{sa:?}/{sb:?}")
        }
    };
    let mut wrong_edges: HashMap<String, usize> = HashMap::new();
    for e in predicted_edges.difference(&set.edges) {
        *wrong_edges.entry(scenario(e)).or_default() += 1;
    }
    let mut missed_edges: HashMap<String, usize> = HashMap::new();
    for e in set.edges.difference(&predicted_edges) {
        *missed_edges.entry(scenario(e)).or_default() += 1;
    }
    Ok(Report {
        documents: set.documents.len(),
        edges: Quality::of(&predicted_edges, &set.edges),
        clusters: Quality::of(&predicted_clusters, &expected_clusters),
        wrong_edges,
        missed_edges,
        wrong: predicted_edges.difference(&set.edges).copied().collect(),
        missed: set.edges.difference(&predicted_edges).copied().collect(),
        by_scenario: by_scenario(set, &predicted_edges),
    })
}
