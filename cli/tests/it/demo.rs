//! The core of `make demo`, as a test: the sample documents seeded for a new tenant and
//! ingested as the app would, every function run by `docflow local run`'s runner (the
//! same wiring and event-source mappings), the matched invoices approved through
//! `docflow::output`, Maesn answered by the stand-in (a rate limit and the async task
//! included), then the summary. Real Postgres, queues, bucket and secret on the local
//! emulator; fresh names, so it runs beside everything else.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use docflow::telemetry::metrics::{self as m, Metric, batch, dimension};
use docflow_cli::ingest::Target;
use docflow_cli::maesn::{DEMO_API_KEY, StandIn};
use docflow_cli::samples::{RATE_LIMITED_NUMBER, SAMPLES};
use docflow_cli::wiring::{Local, Options, Queues};
use docflow_cli::{demo, run, seed};
use docflow_dev::local::{QueueSpec, RunOptions};
use docflow_tests::*;
use sqlx::PgPool;

async fn local(pool: &PgPool, maesn: &StandIn) -> Local {
    // Files parsed in children of the docflow binary, as `docflow local run` parses them.
    docflow::sandbox::set_mode(docflow::sandbox::Mode::Child {
        exe: env!("CARGO_BIN_EXE_docflow").into(),
        limits: docflow::sandbox::Limits::default(),
    });
    let aws = aws().await;
    let sqs = aws_sdk_sqs::Client::new(&aws);
    let s3 = docflow::aws::s3_client(&aws);
    let spec = QueueSpec {
        visibility_timeout: Duration::from_secs(30),
        ..QueueSpec::default()
    };
    let queues = Queues {
        ingestion: fresh_queue(&sqs, "demo-ingestion", spec).await,
        matching: fresh_queue(&sqs, "demo-matching", spec).await,
        document_output: fresh_queue(&sqs, "demo-output", spec).await,
    };
    let bucket = fresh_bucket(&s3).await;
    let secret_id = unique("docflow-demo/app");
    aws_sdk_secretsmanager::Client::new(&aws)
        .create_secret()
        .name(&secret_id)
        .secret_string(serde_json::json!({ "maesn_api_key": DEMO_API_KEY }).to_string())
        .send()
        .await
        .expect("create secret");
    let vars = [
        ("DOCFLOW_SECRET_ID", secret_id),
        ("DOCUMENTS_BUCKET", bucket),
        ("MAESN_BASE_URL", maesn.uri()),
        ("HTTP_RETRY_BASE_MS", "50".to_owned()),
        // Maesn's 429 comes back through the queue after this backoff.
        ("OUTPUT_BACKOFF_BASE_SECONDS", "2".to_owned()),
        ("LLM_PROVIDER", "rules".to_owned()),
        (
            "DATEV_CREDENTIALS_PREFIX",
            unique("docflow-demo/datev/") + "/",
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    Local::build(
        aws,
        queues,
        Some(pool.clone()),
        Options {
            concurrency: 2,
            vars,
        },
    )
    .await
    .expect("local wiring")
}

async fn run_until_idle(local: &Local) -> docflow_dev::local::RunReport {
    let options = run::Options {
        run: RunOptions {
            until_idle: true,
            max_duration: Some(Duration::from_secs(120)),
            schedule_every: Duration::from_secs(3600),
            check_every: Duration::from_millis(200),
            min_idle_sweep_gap: Duration::from_millis(200),
        },
        ..run::Options::default()
    };
    let runner = run::build(local, &options).await.expect("runner");
    let report = runner.run(std::future::pending()).await.expect("run");
    assert!(report.idle, "the run did not become idle: {report:?}");
    report
}

#[sqlx::test(migrations = "../migrations")]
async fn the_demo_ends_with_every_document_terminal_clustered_and_each_approved_invoice_exported_once(
    pool: PgPool,
) {
    let maesn = StandIn::start(docflow_cli::maesn::Options {
        rate_limit_once: [RATE_LIMITED_NUMBER.to_owned()].into(),
        ..Default::default()
    })
    .await;
    let local = local(&pool, &maesn).await;
    let target = Target {
        pool: &pool,
        s3: &local.s3,
        bucket: &local.settings.documents_bucket,
        sqs: &local.sqs,
        ingestion_queue_url: &local.queues.ingestion.url,
    };

    let seeded = seed::seed_demo(&target).await.expect("seed");
    local
        .store_datev_account(seeded.tenant_id)
        .await
        .expect("DATEV account key");
    run_until_idle(&local).await;
    let approvals = demo::approve_matched_invoices(&pool, &local.dispatcher(), seeded.tenant_id)
        .await
        .expect("approve");
    run_until_idle(&local).await;
    let booked = maesn.exports();
    let summary = demo::summary(
        &pool,
        &local.sqs,
        &local.queues,
        seeded.tenant_id,
        Some(&booked),
    )
    .await
    .expect("summary");
    println!("{summary}");
    // Every export reached DATEV with its document's amount and currency (what `docflow
    // demo summary --check` holds the demo to).
    summary.check().expect("the demo's summary check");
    for row in summary.rows.iter().filter(|r| r.datev.is_some()) {
        let received = row.datev.as_ref().unwrap();
        assert!(
            received.total.is_some() && received.total == row.total,
            "{row:?}"
        );
        assert_eq!(received.currency, row.currency, "{row:?}");
    }

    assert_eq!(summary.rows.len(), SAMPLES.len());
    for row in &summary.rows {
        assert!(row.is_terminal(), "not terminal: {row:?}");
    }

    // The clusters the samples were written for, and nothing else linked.
    let mut expected: HashMap<&str, BTreeSet<String>> = HashMap::new();
    for sample in SAMPLES {
        if let Some(cluster) = sample.expected.as_ref().and_then(|e| e.cluster) {
            expected
                .entry(cluster)
                .or_default()
                .insert(sample.file_name.to_owned());
        }
    }
    let expected: BTreeSet<BTreeSet<String>> = expected.into_values().collect();
    let actual: BTreeSet<BTreeSet<String>> = summary
        .clusters()
        .into_values()
        .map(|files| files.into_iter().collect())
        .collect();
    assert_eq!(actual, expected);

    // Exactly one Maesn export per approved invoice, the rate-limited one included.
    let approved: BTreeSet<String> = approvals
        .iter()
        .map(|a| a.document_id.to_string())
        .collect();
    let invoices_in_clusters: BTreeSet<String> = summary
        .rows
        .iter()
        .filter(|r| r.doc_type == "invoice" && r.cluster.is_some())
        .map(|r| r.document_id.to_string())
        .collect();
    assert_eq!(approved, invoices_in_clusters);
    // Müller, Jansen, Northwind, and the two e-invoices (XRechnung XML, ZUGFeRD PDF).
    assert_eq!(approved.len(), 5);
    for e_invoice in [
        "meier-xrechnung-RE-2026-1207.xml",
        "lieferant-zugferd-teilrechnung-471102.pdf",
    ] {
        let row = summary
            .rows
            .iter()
            .find(|r| r.file_name.as_deref() == Some(e_invoice))
            .unwrap();
        assert_eq!(
            row.source.as_deref(),
            Some("einvoice"),
            "read from its XML: {row:?}"
        );
        assert!(
            approved.contains(&row.document_id.to_string()),
            "exported: {row:?}"
        );
    }
    let exports = maesn.exports();
    let mut per_document: HashMap<String, usize> = HashMap::new();
    for export in &exports {
        *per_document
            .entry(export.document_id.clone().unwrap_or_default())
            .or_default() += 1;
    }
    assert_eq!(
        per_document.keys().cloned().collect::<BTreeSet<_>>(),
        approved,
        "{exports:?}"
    );
    assert!(per_document.values().all(|n| *n == 1), "{exports:?}");
    assert_eq!(
        maesn.refused(),
        1,
        "the rate limit was met once and retried"
    );
    for row in summary
        .rows
        .iter()
        .filter(|r| approved.contains(&r.document_id.to_string()))
    {
        assert_eq!(row.job.as_deref(), Some("dispatched"), "{row:?}");
        assert_eq!(
            row.audit.as_deref(),
            Some("succeeded"),
            "the sweeper polled the DATEV task to its end: {row:?}"
        );
    }
    assert!(exports.iter().all(|e| e.status == "SUCCESS"), "{exports:?}");
    for row in summary
        .rows
        .iter()
        .filter(|r| !approved.contains(&r.document_id.to_string()))
    {
        assert_eq!(row.job, None, "{row:?}");
    }

    // The broken file failed, visibly: status, error and review flag on the document.
    let broken: Vec<_> = summary
        .rows
        .iter()
        .filter(|r| r.file_name.as_deref() == Some("scan-broken.pdf"))
        .collect();
    assert_eq!(broken.len(), 1);
    assert_eq!(broken[0].ingestion.as_deref(), Some("failed"));
    assert!(broken[0].needs_human_review);
    assert!(
        broken[0]
            .ingestion_error
            .as_deref()
            .is_some_and(|e| e.contains("PDF")),
        "{:?}",
        broken[0]
    );
    for dlq in &summary.dlqs {
        assert!(dlq.messages.is_empty(), "{dlq:?}");
    }

    // The metrics of the run, as CloudWatch would extract them from the functions' EMF
    // lines, say what the table says.
    let lines = local.metric_lines.lines();
    let metrics = docflow_tests::emf::Metrics::of(&lines);
    fn of(function: &str) -> [(&'static str, &str); 1] {
        [(dimension::FUNCTION, function)]
    }
    let sum = |function: &str, metric: Metric| metrics.sum(metric.name, &of(function));
    let failed_ingestions = summary
        .rows
        .iter()
        .filter(|r| r.ingestion.as_deref() == Some("failed"))
        .count();
    assert_eq!(
        sum(ingestion::FUNCTION, batch::RECORDS_FAILED_PERMANENTLY),
        failed_ingestions as f64
    );
    assert!(sum(ingestion::FUNCTION, batch::RECORDS_RECEIVED) >= SAMPLES.len() as f64);
    assert!(sum(ingestion::FUNCTION, m::ingestion::PAGES) >= 1.0);
    let ocr_pages: f64 = metrics
        .0
        .iter()
        .filter(|d| d.name == m::ingestion::OCR_PAGES.name)
        .flat_map(|d| d.values.clone())
        .sum();
    assert_eq!(
        ocr_pages,
        sum(ingestion::FUNCTION, m::ingestion::PAGES),
        "every page is counted under the provider that read it"
    );
    assert!(sum(matching::FUNCTION, m::matching::CANDIDATES_CONSIDERED) >= 1.0);
    assert_eq!(
        sum(document_output::FUNCTION, m::output::EXPORTS_DISPATCHED),
        approved.len() as f64
    );
    assert_eq!(
        sum(document_output::FUNCTION, m::output::EXPORTS_IN_DOUBT),
        0.0
    );
    assert!(
        sum(document_output::FUNCTION, batch::RECORDS_RETRIED) >= 1.0,
        "the rate-limited export was retried"
    );
    assert!(
        !metrics
            .values(
                m::output::MAESN_LATENCY.name,
                &of(document_output::FUNCTION)
            )
            .is_empty()
    );
    assert!(sum(sweeper::FUNCTION, m::sweeper::TASKS_POLLED) >= 1.0);
    // And `local run` prints them, one line per function.
    let printed = run::metrics_summary(&lines);
    for function in [
        ingestion::FUNCTION,
        matching::FUNCTION,
        document_output::FUNCTION,
        sweeper::FUNCTION,
    ] {
        assert!(
            printed.iter().any(|l| l
                .trim_start()
                .starts_with(&format!("{function}: RecordsReceived"))
                || (function == sweeper::FUNCTION && l.contains("sweeper: "))),
            "{printed:#?}"
        );
    }
    println!("{}", printed.join("\n"));
}
