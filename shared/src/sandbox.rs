//! Untrusted bytes are parsed in a child process with hard limits: the PDF text layer,
//! PDF preprocessing, image decoding and preprocessing, and the e-invoice reader
//! (docs/ingestion.md, "The parsing sandbox").
//!
//! The child is the running binary itself, executed again ([`init`] is the first call
//! of every `main` that parses documents: it serves the job and exits when the process
//! is a child). It gets the file on stdin and writes its answer on stdout; it starts
//! with an empty environment (no credentials), limits itself before it reads a byte
//! (`setrlimit`: address space, CPU time, no files, no core dump) and runs the parser on
//! a thread with a fixed stack. The parent adds a wall-clock timeout.
//!
//! Whatever ends the child early (a stack overflow, an abort, an allocation over its
//! address space, its CPU time, the timeout, any signal) fails that file only:
//! [`OcrError::Unsafe`], permanent, with the reason and the page being read ("stack
//! overflow while reading page 3"). The parent process and the other records of its
//! batch go on.
//!
//! Memory: a child runs only once the parent's CPU-job budget (`ocr::on_cpu`'s
//! semaphores) has room for its job's estimate plus [`CHILD_RESIDENT_BYTES`]; its
//! address space is capped at that estimate plus what the binary had mapped when it
//! started and [`ADDRESS_SPACE_SLACK`]. The permits are held until the child has been
//! reaped, also when the caller's future is dropped (the child is killed then).
//!
//! The child's own side (its limits, the job on its thread, the answer) is in `child`.

pub(crate) mod child;

use std::collections::VecDeque;
use std::io::{Read as _, Write as _};
use std::path::PathBuf;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::extract::Extraction;
use crate::extract::einvoice::EInvoiceError;
use crate::ocr::{self, OcrError};

/// The environment variable that makes a process a child: the job's name.
pub const JOB_VAR: &str = "DOCFLOW_SANDBOX_JOB";
/// The child's limits, set by the parent: `needs,cpu_seconds,stack_bytes`.
const LIMITS_VAR: &str = "DOCFLOW_SANDBOX_LIMITS";
/// `DOCFLOW_SANDBOX=in-process` parses in the process itself (for a debugger or a
/// profiler; never in a deployment): the limits of the parsers still hold, the child's
/// hard limits do not.
pub const MODE_VAR: &str = "DOCFLOW_SANDBOX";
/// `SANDBOX_CPU_SECONDS`: the CPU time one child may use (default 60).
pub const CPU_VAR: &str = "SANDBOX_CPU_SECONDS";
/// `SANDBOX_TIMEOUT_SECONDS`: the wall-clock time one child may take (default 120).
pub const TIMEOUT_VAR: &str = "SANDBOX_TIMEOUT_SECONDS";

/// The prefix of a progress line on the child's stderr.
const PROGRESS: &str = "docflow-sandbox: reading ";
/// The exit code of a child that could not get ready (its limits, its descriptors, its
/// parser thread): the environment's fault, so transient, not the file's.
const SETUP_FAILED: i32 = 70;
/// The first bytes of the child's answer.
const MAGIC: &[u8; 4] = b"DFSB";

const MIB: u64 = 1024 * 1024;
/// What a child holds in memory besides its job: the binary's pages it touches, the
/// allocator, its stack. Counted against the parent's budget with the job's estimate.
pub const CHILD_RESIDENT_BYTES: u64 = 16 * MIB;
/// Address space a child may map beyond its job's estimate and what it had mapped at
/// start: its parser thread's stack and the allocator's overhead.
pub const ADDRESS_SPACE_SLACK: u64 = 64 * MIB;

/// One kind of work a child does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Job {
    /// [`ocr::text_layer`].
    TextLayer,
    /// [`ocr::preprocess_image`].
    PreprocessImage,
    /// [`ocr::preprocess_pdf`].
    PreprocessPdf,
    /// [`crate::extract::einvoice::read_untrusted`].
    EInvoice,
    /// Answers the input's length: what a child costs without any parsing (the
    /// cold-start check, `make bench`).
    Echo,
}

impl Job {
    pub fn name(self) -> &'static str {
        match self {
            Job::TextLayer => "text-layer",
            Job::PreprocessImage => "preprocess-image",
            Job::PreprocessPdf => "preprocess-pdf",
            Job::EInvoice => "einvoice",
            Job::Echo => "echo",
        }
    }

    fn from_name(name: &str) -> Option<Self> {
        [
            Job::TextLayer,
            Job::PreprocessImage,
            Job::PreprocessPdf,
            Job::EInvoice,
            Job::Echo,
        ]
        .into_iter()
        .find(|job| job.name() == name)
    }
}

/// The hard limits of one child.
#[derive(Debug, Clone)]
pub struct Limits {
    /// CPU time (`RLIMIT_CPU`; SIGXCPU when it runs out).
    pub cpu: Duration,
    /// Wall-clock time, from spawn to exit: the parent kills the child then.
    pub wall: Duration,
    /// The parser thread's stack.
    pub stack_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            cpu: Duration::from_secs(60),
            wall: Duration::from_secs(120),
            stack_bytes: 8 * MIB,
        }
    }
}

impl Limits {
    /// The defaults, with `SANDBOX_CPU_SECONDS` and `SANDBOX_TIMEOUT_SECONDS` when set.
    pub fn from_env(var: impl Fn(&str) -> Option<String>) -> Result<Self, String> {
        let mut limits = Limits::default();
        let seconds = |name: &str| -> Result<Option<Duration>, String> {
            match var(name) {
                None => Ok(None),
                Some(v) => match v.trim().parse::<u64>() {
                    Ok(s) if s > 0 => Ok(Some(Duration::from_secs(s))),
                    _ => Err(format!(
                        "{name}={v:?}: expected a whole number of seconds > 0"
                    )),
                },
            }
        };
        if let Some(cpu) = seconds(CPU_VAR)? {
            limits.cpu = cpu;
        }
        if let Some(wall) = seconds(TIMEOUT_VAR)? {
            limits.wall = wall;
        }
        Ok(limits)
    }
}

/// Where untrusted bytes are parsed.
#[derive(Debug, Clone)]
pub enum Mode {
    /// On this process's blocking pool (`ocr::on_cpu`): the parsers' own limits only. What
    /// a process that never called [`init`] does (unit tests, the fuzzers' in-process
    /// drivers), and `DOCFLOW_SANDBOX=in-process`.
    InProcess,
    /// In a child process of `exe`, under `limits`.
    Child { exe: PathBuf, limits: Limits },
}

static MODE: OnceLock<Mode> = OnceLock::new();
/// Set in a child: progress lines go to stderr.
static IN_CHILD: AtomicBool = AtomicBool::new(false);

/// Sets how this process parses untrusted bytes; the first call wins. `false` when a
/// mode was set before (the one in force is [`mode`]).
pub fn set_mode(mode: Mode) -> bool {
    MODE.set(mode).is_ok()
}

/// How this process parses untrusted bytes.
pub fn mode() -> &'static Mode {
    MODE.get_or_init(|| Mode::InProcess)
}

/// The first call of a `main` whose process parses documents. In a child (the
/// [`JOB_VAR`] is set) it does the job and exits. Otherwise it sets [`Mode::Child`] with
/// this executable (or [`Mode::InProcess`] when `DOCFLOW_SANDBOX=in-process`). An
/// invalid limit setting ends the process with a message, as any bad setting does at
/// cold start.
pub fn init() {
    if let Some(job) = std::env::var_os(JOB_VAR) {
        child::main(&job.to_string_lossy());
    }
    let var = |name: &str| std::env::var(name).ok();
    let mode = match var(MODE_VAR).as_deref().map(str::trim) {
        Some("in-process") => Mode::InProcess,
        None | Some("" | "child") => {
            let limits = Limits::from_env(var).unwrap_or_else(|e| {
                eprintln!("docflow: {e}");
                std::process::exit(2);
            });
            match std::env::current_exe() {
                Ok(exe) => Mode::Child { exe, limits },
                Err(e) => {
                    eprintln!(
                        "docflow: cannot find this executable to run its parsing sandbox: {e}"
                    );
                    std::process::exit(2);
                }
            }
        }
        Some(other) => {
            eprintln!("docflow: {MODE_VAR}={other:?}: expected `child` or `in-process`");
            std::process::exit(2);
        }
    };
    set_mode(mode);
}

/// A line for the cold-start log: where files are parsed.
pub fn describe() -> String {
    match mode() {
        Mode::InProcess => {
            "in this process (no child process: the parsers' own limits only)".into()
        }
        Mode::Child { exe, limits } => format!(
            "in child processes of {} ({} s CPU, {} s wall clock, {} MiB stack each)",
            exe.display(),
            limits.cpu.as_secs(),
            limits.wall.as_secs(),
            limits.stack_bytes / MIB
        ),
    }
}

/// Checks that a child can be started and answers (an [`Job::Echo`]): at cold start, so
/// that a package without a runnable binary fails its deployment, not its documents.
pub async fn check() -> Result<Duration, OcrError> {
    let started = std::time::Instant::now();
    let len = echo(Bytes::from_static(b"docflow")).await?;
    if len != 7 {
        return Err(OcrError::Sandbox(format!(
            "the child answered {len} to a check of 7 bytes"
        )));
    }
    Ok(started.elapsed())
}

/// The length of `input`, as a child sees it: the cost of a child without parsing.
pub async fn echo(input: Bytes) -> Result<u64, OcrError> {
    match run(Job::Echo, input.len() as u64, input).await? {
        (Header::Echo(len), _) => Ok(len),
        (other, _) => Err(unexpected(Job::Echo, &other)),
    }
}

/// Call in a parser at each step worth naming in an error ("page 3"): in a child, the
/// parent reads it if the child dies ("stack overflow while reading page 3").
pub fn progress(what: std::fmt::Arguments<'_>) {
    if IN_CHILD.load(Ordering::Relaxed) {
        // One write per line; a failed write (the parent is gone) changes nothing.
        let _ = writeln!(std::io::stderr().lock(), "{PROGRESS}{what}");
    }
}

// --- what crosses the pipe ----------------------------------------------------------------

/// An error of a job, as it crosses the pipe.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum WireError {
    Empty,
    BadPdf(String),
    Encrypted,
    BadImage(String),
    TooLarge(String),
    Other(String),
}

impl From<OcrError> for WireError {
    fn from(e: OcrError) -> Self {
        match e {
            OcrError::Empty => WireError::Empty,
            OcrError::BadPdf(m) => WireError::BadPdf(m),
            OcrError::Encrypted => WireError::Encrypted,
            OcrError::BadImage(e) => WireError::BadImage(e.to_string()),
            OcrError::TooLarge { what } => WireError::TooLarge(what),
            other => WireError::Other(other.to_string()),
        }
    }
}

impl From<WireError> for OcrError {
    fn from(e: WireError) -> Self {
        match e {
            WireError::Empty => OcrError::Empty,
            WireError::BadPdf(m) => OcrError::BadPdf(m),
            WireError::Encrypted => OcrError::Encrypted,
            WireError::BadImage(m) => OcrError::BadImage(image::ImageError::Decoding(
                image::error::DecodingError::new(image::error::ImageFormatHint::Unknown, m),
            )),
            WireError::TooLarge(what) => OcrError::TooLarge { what },
            WireError::Other(m) => OcrError::Unsafe { reason: m },
        }
    }
}

/// A job's answer; its bytes (an image, a PDF) travel after it.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum Header {
    Pages(Result<Vec<String>, WireError>),
    /// `Some(true)`: a PNG follows, `Some(false)`: a JPEG.
    Image(Result<Option<bool>, WireError>),
    /// `true`: the new PDF follows.
    Pdf(Result<bool, WireError>),
    EInvoice(Box<Result<Extraction, EInvoiceError>>),
    Echo(u64),
}

pub(crate) fn unexpected(job: Job, header: &Header) -> OcrError {
    let got = match header {
        Header::Pages(_) => "pages",
        Header::Image(_) => "an image",
        Header::Pdf(_) => "a PDF",
        Header::EInvoice(_) => "an e-invoice",
        Header::Echo(_) => "an echo",
    };
    OcrError::Sandbox(format!("a {} job answered with {got}", job.name()))
}

/// Does `job` on `input`, here: what a child does, and the in-process mode.
fn execute(job: Job, input: &[u8]) -> (Header, Vec<u8>) {
    match job {
        Job::TextLayer => (
            Header::Pages(ocr::read_text_layer(input).map_err(WireError::from)),
            Vec::new(),
        ),
        Job::PreprocessImage => match ocr::preprocess::preprocess_image_now(input) {
            Ok(Some(image)) => (
                Header::Image(Ok(Some(image.format == image::ImageFormat::Png))),
                image.bytes,
            ),
            Ok(None) => (Header::Image(Ok(None)), Vec::new()),
            Err(e) => (Header::Image(Err(e.into())), Vec::new()),
        },
        Job::PreprocessPdf => match ocr::preprocess::preprocess_pdf_within_budget(input) {
            Ok(Some(pdf)) => (Header::Pdf(Ok(true)), pdf),
            Ok(None) => (Header::Pdf(Ok(false)), Vec::new()),
            Err(e) => (Header::Pdf(Err(e.into())), Vec::new()),
        },
        Job::EInvoice => (
            Header::EInvoice(Box::new(crate::extract::einvoice::read(input))),
            Vec::new(),
        ),
        Job::Echo => (Header::Echo(input.len() as u64), Vec::new()),
    }
}

fn frame(header: &Header, blob: &[u8]) -> Vec<u8> {
    let json = serde_json::to_vec(header).expect("a header serializes");
    let mut out = Vec::with_capacity(4 + 8 + json.len() + 8 + blob.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(json.len() as u64).to_be_bytes());
    out.extend_from_slice(&json);
    out.extend_from_slice(&(blob.len() as u64).to_be_bytes());
    out.extend_from_slice(blob);
    out
}

fn unframe(out: &[u8]) -> Option<(Header, Vec<u8>)> {
    let rest = out.strip_prefix(MAGIC)?;
    let (len, rest) = rest.split_first_chunk::<8>()?;
    let len = usize::try_from(u64::from_be_bytes(*len)).ok()?;
    let json = rest.get(..len)?;
    let rest = &rest[len..];
    let (blob_len, blob) = rest.split_first_chunk::<8>()?;
    if u64::from_be_bytes(*blob_len) != blob.len() as u64 {
        return None;
    }
    Some((serde_json::from_slice(json).ok()?, blob.to_vec()))
}

// --- the parent ---------------------------------------------------------------------------

/// Does `job` on `input` where [`mode`] says, once `needs` bytes (the job's estimated
/// peak) fit in the CPU-job budget.
pub(crate) async fn run(job: Job, needs: u64, input: Bytes) -> Result<(Header, Vec<u8>), OcrError> {
    match mode() {
        Mode::InProcess => ocr::on_cpu(needs, move || execute(job, &input)).await,
        Mode::Child { exe, limits } => {
            let permits = ocr::cpu_permits(needs.saturating_add(CHILD_RESIDENT_BYTES)).await?;
            in_child(exe, limits, job.name(), needs, input, permits).await
        }
    }
}

/// A child and the budget it holds. Dropped before the child was reaped (the caller's
/// future was dropped: a deadline, a lost lease), it kills the child and keeps the
/// permits until the child is gone.
struct Running {
    child: Option<tokio::process::Child>,
    permits: Option<ocr::Permits>,
}

impl Drop for Running {
    fn drop(&mut self) {
        let (Some(mut child), permits) = (self.child.take(), self.permits.take()) else {
            return;
        };
        let _ = child.start_kill();
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    let _ = child.wait().await;
                    drop(permits);
                });
            }
            // No runtime to reap it on: the kill was sent; tokio's orphan queue reaps it.
            Err(_) => drop(permits),
        }
    }
}

/// What the child's stderr said, bounded: the last progress line and the last lines.
#[derive(Default)]
struct Stderr {
    progress: Option<String>,
    tail: VecDeque<String>,
}

impl Stderr {
    const MAX_LINE: usize = 512;
    const MAX_LINES: usize = 20;

    async fn read(mut from: tokio::process::ChildStderr) -> Self {
        let mut seen = Stderr::default();
        let mut line = Vec::new();
        let mut chunk = [0u8; 8192];
        loop {
            let n = match from.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            for &byte in &chunk[..n] {
                if byte == b'\n' {
                    seen.line(&line);
                    line.clear();
                } else if line.len() < Self::MAX_LINE {
                    line.push(byte);
                }
            }
        }
        if !line.is_empty() {
            seen.line(&line);
        }
        seen
    }

    fn line(&mut self, line: &[u8]) {
        let line = String::from_utf8_lossy(line).into_owned();
        if let Some(what) = line.strip_prefix(PROGRESS) {
            self.progress = Some(what.to_owned());
            return;
        }
        if self.tail.len() == Self::MAX_LINES {
            self.tail.pop_front();
        }
        self.tail.push_back(line);
    }

    fn says(&self, what: &str) -> bool {
        self.tail.iter().any(|l| l.contains(what))
    }
}

async fn in_child(
    exe: &std::path::Path,
    limits: &Limits,
    job: &str,
    needs: u64,
    input: Bytes,
    permits: ocr::Permits,
) -> Result<(Header, Vec<u8>), OcrError> {
    let mut command = tokio::process::Command::new(exe);
    command
        .env_clear()
        .env(JOB_VAR, job)
        .env(
            LIMITS_VAR,
            format!(
                "{needs},{},{}",
                limits.cpu.as_secs().max(1),
                limits.stack_bytes
            ),
        )
        // One malloc arena: each further one reserves 64 MiB of address space.
        .env("MALLOC_ARENA_MAX", "1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let mut child = command.spawn().map_err(|e| {
        OcrError::Sandbox(format!(
            "cannot start the parsing process {}: {e}",
            exe.display()
        ))
    })?;
    let pid = child.id();
    let stdin = child.stdin.take().expect("piped");
    let stdout = child.stdout.take().expect("piped");
    let stderr = child.stderr.take().expect("piped");
    let mut running = Running {
        child: Some(child),
        permits: Some(permits),
    };
    // The answer is at most what the child could hold: its job's estimate.
    let max_answer = needs.saturating_add(ADDRESS_SPACE_SLACK);
    let talk = async {
        let write = async move {
            let mut stdin = stdin;
            // A child that dies early closes the pipe: its exit status says why.
            let _ = stdin.write_all(&input).await;
            let _ = stdin.shutdown().await;
        };
        let read = async move {
            let mut out = Vec::new();
            let _ = stdout.take(max_answer).read_to_end(&mut out).await;
            out
        };
        let ((), out, seen) = tokio::join!(write, read, Stderr::read(stderr));
        let status = running.child.as_mut().expect("not reaped yet").wait().await;
        (out, seen, status)
    };
    let ended = tokio::time::timeout(limits.wall, talk).await;
    let (out, seen, status) = match ended {
        Ok(ended) => ended,
        Err(_) => {
            let mut child = running.child.take().expect("not reaped yet");
            let _ = child.kill().await;
            drop(running);
            tracing::warn!(job, pid, "the parsing process timed out and was killed");
            return Err(OcrError::Unsafe {
                reason: format!("it took longer than {} s", limits.wall.as_secs()),
            });
        }
    };
    // Reaped: the budget goes back.
    running.child = None;
    drop(running);
    let status =
        status.map_err(|e| OcrError::Sandbox(format!("waiting for the parsing process: {e}")))?;
    if status.success()
        && let Some(answer) = unframe(&out)
    {
        return Ok(answer);
    }
    if status.code() == Some(SETUP_FAILED) {
        return Err(OcrError::Sandbox(format!(
            "the parsing process could not get ready: {}",
            seen.tail.iter().cloned().collect::<Vec<_>>().join(" / ")
        )));
    }
    let reason = why_it_died(status, &seen, limits, needs);
    let reason = match &seen.progress {
        Some(at) => format!("{reason} while reading {at}"),
        None => reason,
    };
    tracing::warn!(
        job,
        pid,
        %status,
        reason,
        stderr = ?seen.tail,
        "the parsing process died; the file fails alone"
    );
    Err(OcrError::Unsafe { reason })
}

fn why_it_died(
    status: std::process::ExitStatus,
    seen: &Stderr,
    limits: &Limits,
    needs: u64,
) -> String {
    use std::os::unix::process::ExitStatusExt as _;
    if seen.says("has overflowed its stack") {
        return "stack overflow".into();
    }
    if seen.says("memory allocation of") {
        return format!(
            "it needed more than the {} MiB of memory its size allows",
            needs.div_ceil(MIB) + ADDRESS_SPACE_SLACK / MIB
        );
    }
    match (status.code(), status.signal()) {
        (_, Some(libc::SIGXCPU)) => format!("it used more than {} s of CPU", limits.cpu.as_secs()),
        (_, Some(libc::SIGKILL)) => "it was killed (out of memory)".into(),
        (_, Some(signal)) => format!("the parser crashed ({})", signal_name(signal)),
        (Some(0), None) => "the parser's answer was unreadable".into(),
        (Some(code), None) => format!("the parser exited with code {code}"),
        (None, None) => format!("the parser ended ({status})"),
    }
}

fn signal_name(signal: i32) -> String {
    match signal {
        libc::SIGSEGV => "segmentation fault".into(),
        libc::SIGABRT => "abort".into(),
        libc::SIGBUS => "bus error".into(),
        libc::SIGILL => "illegal instruction".into(),
        libc::SIGFPE => "arithmetic error".into(),
        other => format!("signal {other}"),
    }
}

/// For a test binary's own child jobs (`docflow-tests`'s `sandbox-child`): the limits
/// and descriptors of a real child.
#[doc(hidden)]
pub use child::{Setup as ChildSetup, setup as child_setup};

/// Runs the child job called `name` of `exe` on `input` under `limits`, and discards its
/// answer: for a test binary's own child jobs (the ways a parser dies).
#[doc(hidden)]
pub async fn run_named(
    exe: &std::path::Path,
    limits: &Limits,
    name: &str,
    needs: u64,
    input: Bytes,
) -> Result<(), OcrError> {
    let permits = ocr::cpu_permits(needs.saturating_add(CHILD_RESIDENT_BYTES)).await?;
    in_child(exe, limits, name, needs, input, permits)
        .await
        .map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_survives_the_pipe_and_a_cut_one_is_refused() {
        let header = Header::Image(Ok(Some(true)));
        let framed = frame(&header, b"\x89PNG...");
        let (back, blob) = unframe(&framed).expect("whole");
        assert!(matches!(back, Header::Image(Ok(Some(true)))));
        assert_eq!(blob, b"\x89PNG...");
        assert!(unframe(&framed[..framed.len() - 1]).is_none());
        assert!(unframe(b"garbage").is_none());
    }

    #[test]
    fn limits_come_from_the_environment_and_nonsense_is_refused() {
        let limits = Limits::from_env(|name| (name == CPU_VAR).then(|| "5".to_owned())).unwrap();
        assert_eq!(limits.cpu, Duration::from_secs(5));
        assert_eq!(limits.wall, Limits::default().wall);
        assert!(Limits::from_env(|name| (name == TIMEOUT_VAR).then(|| "0".to_owned())).is_err());
        assert!(Limits::from_env(|name| (name == CPU_VAR).then(|| "soon".to_owned())).is_err());
    }

    #[test]
    fn every_job_is_found_by_its_name() {
        for job in [
            Job::TextLayer,
            Job::PreprocessImage,
            Job::PreprocessPdf,
            Job::EInvoice,
            Job::Echo,
        ] {
            assert_eq!(Job::from_name(job.name()), Some(job));
        }
        assert_eq!(Job::from_name("rm -rf"), None);
    }
}
