//! Secrets never leak. Every function runs with a secret holding
//! recognisable values — the LLM API key, the Maesn API key, the database password (in
//! the secret's `database_url`, the only way the functions reach Postgres) and the Slack
//! webhook's token (in its URL) — through success and the failure paths: LLM 429/500/
//! timeouts, 400 context window, malformed answers; worker crashes; duplicates; Maesn 503
//! and answers after the timeout (in doubt); a Postgres outage; and Slack unreachable
//! for 3 s in every 4 (connection refused: reqwest's errors carry the URL). None of the
//! values may appear in the captured logs (every event, JSON, through a global tracing
//! subscriber), the rows the functions wrote (errors included), the admin notifications
//! or the DLQ bodies.

mod support;

use support::{Profile, Rates};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_secret_value_appears_in_logs_rows_notifications_or_dlqs() {
    let logs = support::capture_logs();
    let profile = Profile {
        rates: Rates {
            llm_permanent: 0.10,
            llm_malformed: 0.10,
            crash: 0.08,
            maesn_unavailable: 0.30,
            maesn_late: 0.10,
            ..Rates::ISSUE
        },
        slack_outages: true,
        wait_for_notices: false,
        ..Profile::from_env(40)
    };
    let soak = support::run(profile).await;
    let mut verdict = support::verify(&soak).await;
    let lines = support::check_secrets(&soak, &logs, &mut verdict).await;
    println!(
        "\nsecrets run (seed {}):\n{}",
        soak.profile.seed,
        verdict.table()
    );
    assert!(lines > 100, "the logs were captured ({lines} lines)");
    let leaks: Vec<&String> = verdict
        .problems
        .iter()
        .filter(|p| p.contains("appears in"))
        .collect();
    assert!(leaks.is_empty(), "secrets leaked: {leaks:#?}");
    // The failure paths were taken (otherwise the run proves little).
    let counts = |what: &str| {
        verdict
            .lines
            .iter()
            .find(|l| l.what.trim() == what)
            .map(|l| l.value.clone())
            .unwrap_or_default()
    };
    assert_ne!(counts("ingestion failed"), "", "{}", verdict.table());
    assert_ne!(counts("Slack connections refused (outages)"), "0");
    assert_ne!(counts("Maesn booking requests"), "0");
    support::drop_database(soak).await;
}
