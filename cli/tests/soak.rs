//! The fault-injection soak (`tests/support/mod.rs` has the machinery):
//! `make test` runs 200 documents, `make soak` 2,000 (`SOAK_DOCUMENTS`, `SOAK_SEED` to
//! repeat a run). The table is printed; a broken invariant fails the test, naming the
//! documents.

mod support;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_injected_faults_nothing_is_lost_nothing_is_exported_twice_and_every_failure_is_visible()
 {
    let logs = support::capture_logs();
    let profile = support::Profile::from_env(200);
    eprintln!(
        "soak: seed {} · {} documents (SOAK_SEED={} repeats the fault schedule)",
        profile.seed, profile.documents, profile.seed
    );
    let soak = support::run(profile).await;
    let mut verdict = support::verify(&soak).await;
    support::check_secrets(&soak, &logs, &mut verdict).await;
    support::ocr_errors_logged(&logs, &mut verdict);
    println!(
        "\nsoak result (seed {}):\n{}",
        soak.profile.seed,
        verdict.table()
    );
    assert!(
        verdict.passed(),
        "the soak broke an invariant (seed {}, database {} kept):\n{}",
        soak.profile.seed,
        soak.database,
        verdict.table()
    );
    support::drop_database(soak).await;
}
