//! A tenant's bulk import: a year of one customer's documents matched at once. The
//! labelled set of `docflow eval matching` (the full mix, one tenant, 5,000 documents)
//! goes through the release CLI's matching function on a fresh database and a fresh
//! moto queue, drained by 10 local event-source mappings ("Lambda instances"), each
//! running batches of 10 records concurrently, the LLM band answered by the local
//! stand-in. Every write phase is in one tenant, so this is where a tenant-wide lock
//! would queue them all.
//!
//! The figures come from the run's own output: documents per minute of the queue run,
//! and from its EMF lines the time each write phase waited for its locks
//! (`WriteLockWait`), the waits that gave up (`WriteLockTimeouts`, 55P03), the deadlocks
//! lost and written again (`WriteLockDeadlocks`), records given back to the queue and
//! records that failed. Target: no lock timeout, no failure, every document finished.

use std::path::Path;

use anyhow::Context as _;
use tokio::process::Command;

use super::Report;

const SECTION: &str = "bulk import (one tenant)";
pub const DOCUMENTS: usize = 5000;
const POLLERS: usize = 10;

pub async fn bulk_import(report: &mut Report, bins: &Path) -> anyhow::Result<()> {
    let docflow = bins.join("docflow");
    anyhow::ensure!(
        docflow.exists(),
        "{} is missing (cargo build --release -p docflow-cli)",
        docflow.display()
    );
    let output = Command::new(&docflow)
        .args([
            "eval",
            "matching",
            "--seed",
            "7",
            "--tenants",
            "1",
            "--documents",
            &DOCUMENTS.to_string(),
            "--pollers",
            &POLLERS.to_string(),
            // A record given back to the queue returns after the claim lease (160 s).
            "--stall-seconds",
            "300",
        ])
        .env("AWS_ENDPOINT_URL", docflow_tests::endpoint())
        .output()
        .await
        .with_context(|| format!("start {}", docflow.display()))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    anyhow::ensure!(
        output.status.success(),
        "docflow eval matching failed: {}",
        stderr
            .lines()
            .rev()
            .take(15)
            .collect::<Vec<_>>()
            .join(" | ")
    );
    let run = Run::read(&stdout)?;
    // What an unfinished run printed about its documents and queues.
    let not_done: Vec<&str> = stdout
        .lines()
        .skip_while(|l| !l.starts_with("not finished: "))
        .take(20)
        .collect();
    if !not_done.is_empty() {
        report.details.insert(
            "bulk_import_not_finished".into(),
            serde_json::json!(not_done),
        );
        eprintln!("{}", not_done.join("\n"));
    }
    let lines: Vec<&str> = stdout.lines().collect();
    let metrics = docflow_tests::emf::Metrics::of(&lines);
    // Every figure is the matching function's, under its `function` dimension.
    let function = [(docflow::telemetry::metrics::dimension::FUNCTION, "matching")];
    let mut waits = metrics.values(
        docflow::telemetry::metrics::matching::WRITE_LOCK_WAIT.name,
        &function,
    );
    waits.sort_by(f64::total_cmp);
    let quantile = |q: f64| {
        waits
            .get(((waits.len() as f64 * q) as usize).min(waits.len().saturating_sub(1)))
            .copied()
            .unwrap_or(0.0)
    };
    // + 0.0: an empty f64 sum is −0.0.
    let sum = |name: &str| metrics.sum(name, &function) + 0.0;
    anyhow::ensure!(
        sum(docflow::telemetry::metrics::batch::RECORDS_RECEIVED.name) > 0.0,
        "no matching metrics in the eval's output"
    );
    use docflow::telemetry::metrics::{batch, matching};
    let timeouts = sum(matching::WRITE_LOCK_TIMEOUTS.name);
    let deadlocks = sum(matching::WRITE_LOCK_DEADLOCKS.name);
    let failed = run.failed as f64 + sum(batch::RECORDS_FAILED_PERMANENTLY.name);

    report.plain(
        SECTION,
        &format!(
            "documents/minute, {} documents of one tenant, {POLLERS} instances × 10 records",
            run.documents
        ),
        run.per_minute,
        "docs/min",
    );
    report.plain(SECTION, "write lock wait, median", quantile(0.5), "ms");
    report.plain(SECTION, "write lock wait, p95", quantile(0.95), "ms");
    report.plain(SECTION, "write lock wait, max", quantile(1.0), "ms");
    report.plain(
        SECTION,
        "write lock wait, all write phases together",
        waits.iter().sum::<f64>() / 1000.0,
        "s",
    );
    report.plain(
        SECTION,
        "deadlocks lost and written again",
        deadlocks,
        "count",
    );
    report.plain(
        SECTION,
        "records given back to the queue",
        sum(batch::RECORDS_RETRIED.name),
        "count",
    );
    report.limit(
        SECTION,
        "write lock timeouts (55P03)",
        timeouts,
        "count",
        "0",
        timeouts == 0.0,
    );
    report.limit(
        SECTION,
        "failed or unfinished documents",
        failed + run.unfinished as f64,
        "count",
        "0",
        failed == 0.0 && run.unfinished == 0,
    );
    Ok(())
}

/// What the eval printed about its queue run.
#[derive(Debug, Default, PartialEq)]
struct Run {
    documents: usize,
    per_minute: f64,
    unfinished: usize,
    failed: usize,
}

impl Run {
    /// From `queue run: N documents, T tenant(s), S s, R documents/minute` and, when
    /// some did not finish, `not finished: U, failed: F`.
    fn read(stdout: &str) -> anyhow::Result<Run> {
        let mut run = Run::default();
        let line = stdout
            .lines()
            .find_map(|l| l.strip_prefix("queue run: "))
            .context("the eval printed no `queue run:` line")?;
        let parts: Vec<&str> = line.split(", ").collect();
        run.documents = parts
            .first()
            .and_then(|p| p.strip_suffix(" documents"))
            .and_then(|n| n.parse().ok())
            .with_context(|| format!("no document count in {line:?}"))?;
        run.per_minute = parts
            .last()
            .and_then(|p| p.strip_suffix(" documents/minute"))
            .and_then(|n| n.parse().ok())
            .with_context(|| format!("no rate in {line:?}"))?;
        if let Some(line) = stdout
            .lines()
            .find_map(|l| l.strip_prefix("not finished: "))
        {
            let (unfinished, failed) = line
                .split_once(", failed: ")
                .with_context(|| format!("unreadable {line:?}"))?;
            run.unfinished = unfinished.trim().parse()?;
            run.failed = failed.trim().parse()?;
        }
        Ok(run)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_eval_summary_is_read_with_and_without_unfinished_documents() {
        let done = "matching eval: …\nqueue run: 5001 documents, 1 tenant(s), 249.5 s, 1202 documents/minute\ndocuments: 5001\n";
        assert_eq!(
            Run::read(done).unwrap(),
            Run {
                documents: 5001,
                per_minute: 1202.0,
                unfinished: 0,
                failed: 0
            }
        );
        let stuck = format!("{done}not finished: 1, failed: 2\n  abc pending\n");
        let run = Run::read(&stuck).unwrap();
        assert_eq!((run.unfinished, run.failed), (1, 2));
        assert!(Run::read("nothing").is_err());
    }
}
