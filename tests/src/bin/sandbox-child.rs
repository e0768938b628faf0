//! The parsing sandbox's child for the test binaries (`docflow_tests::sandbox`): what
//! `docflow::sandbox::init` serves in the functions' own binaries, plus jobs that die in
//! each way a parser can, for the parent's tests.

use std::io::Read as _;

/// Recursion that cannot be optimized away: a stack overflow (the input cannot say
/// "stop" at a depth any stack reaches).
#[inline(never)]
fn deeper(n: u64, sink: &mut [u8; 4096]) -> u64 {
    sink[(n % 4096) as usize] = n as u8;
    if n == u64::MAX {
        return 0;
    }
    let mut next = [0u8; 4096];
    std::hint::black_box(&mut next);
    deeper(n + 1, &mut next) + u64::from(sink[0])
}

fn main() {
    let job = std::env::var(docflow::sandbox::JOB_VAR).unwrap_or_default();
    let Some(crash) = job.strip_prefix("test-") else {
        // The real jobs, exactly as the functions' binaries serve them.
        docflow::sandbox::init();
        eprintln!("sandbox-child: run me as a child of the parsing sandbox");
        std::process::exit(2);
    };
    // Limited as a real child is, then dying as the job says.
    let _setup = docflow::sandbox::child_setup();
    let mut input = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut input);
    docflow::sandbox::progress(format_args!("page 3"));
    match crash {
        "stack-overflow" => {
            let mut sink = [0u8; 4096];
            std::process::exit(deeper(0, &mut sink) as i32)
        }
        "abort" => std::process::abort(),
        // Touches memory until the address-space limit refuses an allocation.
        "alloc" => {
            let mut held: Vec<Vec<u8>> = Vec::new();
            loop {
                held.push(vec![1u8; 1 << 20]);
                std::hint::black_box(&held);
            }
        }
        // Burns CPU until RLIMIT_CPU ends it.
        "spin" => {
            let mut x = 0u64;
            loop {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
        }
        "segfault" => {
            // SAFETY: not safe at all: the point is the crash.
            unsafe { std::ptr::null_mut::<u8>().write_volatile(1) };
            unreachable!()
        }
        "exit" => std::process::exit(7),
        // What a child that cannot set itself up exits with (docflow::sandbox).
        "setup" => {
            eprintln!("docflow-sandbox: setrlimit: Operation not permitted");
            std::process::exit(70)
        }
        "garbage" => {
            println!("not an answer");
            std::process::exit(0)
        }
        "hang" => loop {
            std::thread::sleep(std::time::Duration::from_secs(60));
        },
        other => {
            eprintln!("sandbox-child: unknown test job {other}");
            std::process::exit(2)
        }
    }
}
