//! `docflow local run --metrics-out FILE`: the functions' EMF lines, as CloudWatch would
//! receive them, written to a file (what `make bench`'s pipeline section reads).

use std::process::Command;

use docflow::telemetry::metrics::{batch, dimension};
use docflow_dev::local::{QueueSpec, ensure_queue_with_dlq};
use docflow_tests::*;

#[tokio::test]
async fn local_run_writes_the_emf_lines_of_its_batches_to_the_metrics_file() {
    let sqs = aws_sdk_sqs::Client::new(&aws().await);
    // Queues of this test's own (`DOCFLOW_QUEUE_PREFIX`), so nothing else runs.
    let prefix = format!("{}-", unique("metrics-out"));
    let mut output = None;
    for name in ["ingestion", "matching", "document-output"] {
        let pair = ensure_queue_with_dlq(
            &sqs,
            &format!("{prefix}docflow-{name}"),
            QueueSpec::default(),
        )
        .await
        .unwrap();
        output = Some(pair);
    }
    let output = output.unwrap();
    sqs.send_message()
        .queue_url(&output.url)
        .message_body("not-a-job-id")
        .send()
        .await
        .unwrap();
    let file = std::env::temp_dir().join(format!("{prefix}metrics.jsonl"));

    let run = Command::new(env!("CARGO_BIN_EXE_docflow"))
        .args([
            "local",
            "run",
            "--until-idle",
            "--no-sweeper",
            "--functions",
            "document-output",
            "--max-time",
            "120",
            "--metrics-out",
        ])
        .arg(&file)
        .env("DOCFLOW_QUEUE_PREFIX", &prefix)
        .output()
        .unwrap();

    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let text = std::fs::read_to_string(&file).unwrap();
    let _ = std::fs::remove_file(&file);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines
            .iter()
            .all(|l| docflow_tests::emf::extract(l).is_some()),
        "every line is an EMF document: {text}"
    );
    let metrics = docflow_tests::emf::Metrics::of(&lines);
    let function = [(dimension::FUNCTION, "document-output")];
    assert_eq!(metrics.sum(batch::RECORDS_RECEIVED.name, &function), 1.0);
    assert_eq!(
        metrics.sum(
            batch::RECORDS_DISCARDED.name,
            &[
                (dimension::FUNCTION, "document-output"),
                (dimension::REASON, "not_an_id")
            ]
        ),
        1.0
    );
    assert_eq!(
        metrics.values(batch::BATCH_DURATION.name, &function).len(),
        1
    );
}
