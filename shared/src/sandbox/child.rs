//! The child's side of the sandbox: it limits itself (`setrlimit`: address space, CPU
//! time, no files, no core dump) before it reads a byte, reads the file from stdin, runs
//! the job on a thread with a fixed stack, and writes the framed answer to the original
//! stdout.

use super::*;

/// Current address space of this process, from `/proc/self/status` (`VmSize`).
fn vm_size() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmSize:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse::<u64>()
        .ok()?;
    Some(kib * 1024)
}

/// `setrlimit(resource, soft, hard)` (a macro: the resource's type differs between
/// C libraries).
macro_rules! limit {
    ($resource:expr, $soft:expr, $hard:expr) => {{
        let rlimit = libc::rlimit {
            rlim_cur: $soft as libc::rlim_t,
            rlim_max: $hard as libc::rlim_t,
        };
        // SAFETY: setrlimit reads the struct passed and nothing else.
        if unsafe { libc::setrlimit($resource, &rlimit) } == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    }};
}

/// The hard limit of `resource` (`u64::MAX` when unlimited or unreadable).
macro_rules! hard_limit {
    ($resource:expr) => {{
        let mut rlimit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes the struct passed and nothing else.
        if unsafe { libc::getrlimit($resource, &mut rlimit) } == 0
            && rlimit.rlim_max != libc::RLIM_INFINITY
        {
            rlimit.rlim_max as u64
        } else {
            u64::MAX
        }
    }};
}

/// Ends a child that could not get ready: its environment's fault, not the file's.
fn fail(what: &str) -> ! {
    eprintln!("docflow-sandbox: {what}");
    std::process::exit(SETUP_FAILED);
}

/// A child, limited and ready for its input.
pub struct Setup {
    /// The job's stack.
    pub stack: u64,
    /// Where the answer goes (the original stdout).
    pub answer: std::fs::File,
}

/// Sets the child's limits from [`LIMITS_VAR`] before a byte of input is read, and
/// points stdout at stderr (a parser's stray print cannot garble the answer).
pub fn setup() -> Setup {
    let limits = std::env::var(LIMITS_VAR).unwrap_or_default();
    let parsed: Vec<u64> = limits
        .split(',')
        .filter_map(|v| v.trim().parse().ok())
        .collect();
    let [needs, cpu, stack] = parsed[..] else {
        fail(&format!(
            "{LIMITS_VAR}={limits:?}: expected needs,cpu,stack"
        ))
    };
    // Address space: what is mapped now (the binary, its libraries) plus the job's
    // estimate, its stack and slack.
    let Some(mapped) = vm_size() else {
        fail("cannot read /proc/self/status")
    };
    let address_space = mapped
        .saturating_add(needs)
        .saturating_add(stack)
        .saturating_add(ADDRESS_SPACE_SLACK);
    // Never above what this process was given (`prlimit`, a container): lowering a
    // limit always works, raising a hard one never does.
    let address_space = address_space.min(hard_limit!(libc::RLIMIT_AS));
    let cpu_hard = (cpu + 1).min(hard_limit!(libc::RLIMIT_CPU));
    let set = limit!(libc::RLIMIT_AS, address_space, address_space)
        .and_then(|()| limit!(libc::RLIMIT_CPU, cpu.min(cpu_hard), cpu_hard))
        .and_then(|()| limit!(libc::RLIMIT_CORE, 0, 0))
        .and_then(|()| limit!(libc::RLIMIT_FSIZE, 0, 0));
    if let Err(e) = set {
        fail(&format!("setrlimit: {e}"));
    }
    // SAFETY: plain descriptor calls on descriptors this process owns.
    let answer_fd = unsafe {
        let fd = libc::dup(1);
        if fd < 0 || libc::dup2(2, 1) < 0 {
            fail("cannot set up the answer descriptor");
        }
        fd
    };
    IN_CHILD.store(true, Ordering::Relaxed);
    use std::os::fd::FromRawFd as _;
    Setup {
        stack,
        // SAFETY: answer_fd was returned by dup above and is owned by nothing else.
        answer: unsafe { std::fs::File::from_raw_fd(answer_fd) },
    }
}

/// The child's whole life: limits, then the input, the job and the answer.
pub(super) fn main(job: &str) -> ! {
    let Some(job) = Job::from_name(job) else {
        fail(&format!("unknown job {job:?}"))
    };
    let Setup { stack, mut answer } = setup();
    let mut input = Vec::new();
    if let Err(e) = std::io::stdin().lock().read_to_end(&mut input) {
        fail(&format!("reading the input: {e}"));
    }
    let worker = std::thread::Builder::new()
        .name("parser".into())
        .stack_size(usize::try_from(stack).unwrap_or(usize::MAX))
        .spawn(move || {
            let (header, blob) = execute(job, &input);
            frame(&header, &blob)
        });
    let framed = match worker.map(|w| w.join()) {
        Ok(Ok(framed)) => framed,
        // The file's doing (the parsers catch their panics; this one escaped).
        Ok(Err(_)) => {
            eprintln!("docflow-sandbox: the parser panicked");
            std::process::exit(3);
        }
        Err(e) => fail(&format!("cannot start the parser thread: {e}")),
    };
    if answer
        .write_all(&framed)
        .and_then(|()| answer.flush())
        .is_err()
    {
        std::process::exit(4);
    }
    std::process::exit(0);
}
