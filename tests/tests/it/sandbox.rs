//! The parsing sandbox (`docflow::sandbox`): a child that dies in any way fails its file
//! with a reason, never the test process; its budget is held until it is reaped, also
//! when the caller gives up; the real parsing jobs answer through it as in-process.

use std::time::Duration;

use bytes::Bytes;
use docflow::Classify as _;
use docflow::ocr::{self, OcrError};
use docflow::sandbox::{Limits, run_named};
use docflow_tests::hostile_files;
use docflow_tests::sandbox::{child_exe, enable};

fn limits(cpu: u64, wall: u64) -> Limits {
    Limits {
        cpu: Duration::from_secs(cpu),
        wall: Duration::from_secs(wall),
        ..Limits::default()
    }
}

/// The reason a crash job of `sandbox-child` fails with.
async fn dies(job: &str, limits: &Limits) -> String {
    let err = run_named(
        &child_exe(),
        limits,
        &format!("test-{job}"),
        1024 * 1024,
        Bytes::from_static(b"%PDF-1.4 whatever"),
    )
    .await
    .expect_err("the child died");
    assert!(!err.is_transient(), "{job}: {err:?}");
    let OcrError::Unsafe { reason } = &err else {
        panic!("{job}: {err:?}");
    };
    assert!(
        err.to_string()
            .starts_with("the file could not be read safely: "),
        "{err}"
    );
    reason.clone()
}

#[tokio::test]
async fn a_child_that_dies_fails_its_file_with_why_and_where() {
    let limits = limits(10, 30);
    for (job, reason) in [
        ("stack-overflow", "stack overflow while reading page 3"),
        ("abort", "the parser crashed (abort) while reading page 3"),
        (
            "segfault",
            "the parser crashed (segmentation fault) while reading page 3",
        ),
        ("exit", "the parser exited with code 7 while reading page 3"),
        (
            "garbage",
            "the parser's answer was unreadable while reading page 3",
        ),
    ] {
        assert_eq!(dies(job, &limits).await, reason, "{job}");
    }
}

#[tokio::test]
async fn a_child_that_cannot_get_ready_is_the_environment_s_fault_and_transient() {
    let err = run_named(
        &child_exe(),
        &limits(10, 30),
        "test-setup",
        1024 * 1024,
        Bytes::from_static(b"%PDF-1.4"),
    )
    .await
    .expect_err("no answer");
    assert!(err.is_transient(), "{err:?}");
    assert!(
        err.to_string()
            .contains("setrlimit: Operation not permitted"),
        "{err}"
    );
    // So is a binary that is not there: the cold start checks for it.
    let err = run_named(
        std::path::Path::new("/nonexistent/bootstrap"),
        &limits(10, 30),
        "echo",
        1024,
        Bytes::new(),
    )
    .await
    .expect_err("no child");
    assert!(err.is_transient(), "{err:?}");
}

#[tokio::test]
async fn a_child_is_refused_memory_beyond_its_estimate() {
    // 1 MiB of estimate: the child's address space is what it had mapped at start, the
    // estimate, its stack and 64 MiB; its allocations of 1 MiB each fail long before
    // the machine notices.
    let reason = dies("alloc", &limits(10, 30)).await;
    assert!(
        reason.starts_with("it needed more than the 65 MiB of memory its size allows"),
        "{reason}"
    );
}

#[tokio::test]
async fn a_child_out_of_cpu_time_is_stopped() {
    let reason = dies("spin", &limits(1, 30)).await;
    assert_eq!(reason, "it used more than 1 s of CPU while reading page 3");
}

#[tokio::test]
async fn a_child_past_its_wall_clock_is_killed() {
    let reason = dies("hang", &limits(10, 1)).await;
    assert_eq!(reason, "it took longer than 1 s");
}

/// Children of this process still alive or unreaped (`/proc/*/stat`'s parent pid).
fn children() -> Vec<u32> {
    let me = std::process::id().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| {
            let pid: u32 = e.ok()?.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // pid (comm) state ppid …: the comm may hold spaces, the ')' closes it.
            let after = &stat[stat.rfind(')')? + 2..];
            let ppid = after.split(' ').nth(1)?;
            (ppid == me && stat.contains("(sandbox-child)")).then_some(pid)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_that_gives_up_kills_its_child_and_the_budget_returns_once_it_is_reaped() {
    let needs = 100 * 1024 * 1024;
    let limits = limits(60, 60);
    let before = ocr::budget_in_use_mib();
    let exe = child_exe();
    let mut job = Box::pin(run_named(&exe, &limits, "test-hang", needs, Bytes::new()));
    // Running: the child exists and holds its share of the budget.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        tokio::select! {
            ended = &mut job => panic!("a hanging child ended: {ended:?}"),
            () = tokio::time::sleep(Duration::from_millis(20)) => {}
        }
        if !children().is_empty() {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "no child started");
    }
    assert!(
        ocr::budget_in_use_mib() >= before + 100,
        "{} MiB in use",
        ocr::budget_in_use_mib()
    );

    // The caller gives up (a deadline, a lost lease): the future is dropped.
    drop(job);

    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !children().is_empty() || ocr::budget_in_use_mib() > before {
        assert!(
            tokio::time::Instant::now() < deadline,
            "child {:?} still there, {} MiB held",
            children(),
            ocr::budget_in_use_mib()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn the_hostile_corpus_fails_file_by_file_through_the_sandbox() {
    enable();
    for (name, ext, file) in hostile_files::corpus() {
        let bytes = Bytes::from(file());
        if ext == "png" {
            // Over Textract's 10,000 px a side: scaled down, not refused.
            let image = ocr::preprocess_image(bytes)
                .await
                .expect("scaled")
                .expect("fits");
            assert!(image.bytes.len() < 10_000_000, "{name}");
            continue;
        }
        let read = ocr::text_layer(bytes.clone()).await;
        eprintln!("{name}: {read:?}");
        match read {
            // Read within bounds (the nesting past the parser's limit is not recursed
            // into; the run of spaces before the far glyph is capped).
            Ok(pages) => {
                let longest = pages
                    .iter()
                    .flat_map(|p| p.lines())
                    .map(str::len)
                    .max()
                    .unwrap_or(0);
                assert!(longest < 1000, "{name}: {longest} bytes in a line");
                assert!(
                    ["nested-arrays", "glyph-at-1e9"].contains(&name),
                    "{name} was read: {pages:?}"
                );
            }
            Err(err) => {
                assert!(!err.is_transient(), "{name}: {err:?}");
                if name == "cmap-nesting" {
                    assert_eq!(
                        err.to_string(),
                        "the file could not be read safely: stack overflow while reading page 1",
                        "{name}"
                    );
                } else {
                    assert!(
                        matches!(err, OcrError::TooLarge { .. } | OcrError::BadPdf(_)),
                        "{name}: {err:?}"
                    );
                }
            }
        }
    }
    // A good document reads through the same child as it does in-process.
    let good = docflow_tests::pdf::text_pdf(&[&["Rechnung RE-1", "Summe 119,00 EUR"]]);
    let pages = ocr::text_layer(Bytes::from(good)).await.expect("read");
    assert!(pages[0].contains("RE-1"), "{pages:?}");
}
