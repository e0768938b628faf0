//! Log lines a test captures: one in-memory `tracing` writer, and the subscribers a test
//! reads it through.
//!
//! - [`Logs::capture_text`]: plain text at a level the test chooses, for a test that
//!   looks for a phrase or counts lines (`sqlx::query`, a leaked secret at `TRACE`).
//! - [`Logs::capture_json`]: docflow's own JSON lines ([`docflow::telemetry::subscriber`],
//!   what CloudWatch receives), for a test that reads fields.
//!
//! Both are this thread's default subscriber while their guard lives, so tests running
//! side by side in one process never see each other's lines.
//! [`Logs::capture_json_globally`] is for code that logs from other threads (a
//! multi-thread runtime's workers): it installs the process's one global subscriber.

use std::sync::{Arc, Mutex};

use tracing::subscriber::DefaultGuard;

/// The bytes every subscriber made with it wrote. Cheap to clone; clones share them.
#[derive(Clone, Default)]
pub struct Logs(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Logs {
    type Writer = Logs;
    fn make_writer(&'a self) -> Logs {
        self.clone()
    }
}

impl Logs {
    /// Every event at `level` and above as plain text (no colours), on this thread while
    /// the guard lives.
    pub fn capture_text(&self, level: tracing::Level) -> DefaultGuard {
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(level)
            .with_ansi(false)
            .with_writer(self.clone())
            .finish();
        tracing::subscriber::set_default(subscriber)
    }

    /// docflow's JSON lines, filtered as `RUST_LOG=rust_log` filters them in Lambda
    /// (`"info"`, `"debug"`), on this thread while the guard lives. Panics on a value
    /// [`docflow::telemetry::filter`] refuses.
    pub fn capture_json(&self, rust_log: &str) -> DefaultGuard {
        tracing::subscriber::set_default(self.json(rust_log))
    }

    /// The same JSON lines as [`Logs::capture_json`], from every thread of the process
    /// from now on. A process has one global subscriber: panics if it already has one, so
    /// a test binary calls this once.
    pub fn capture_json_globally(&self, rust_log: &str) {
        tracing::subscriber::set_global_default(self.json(rust_log))
            .expect("the only global tracing subscriber of this test binary");
    }

    fn json(&self, rust_log: &str) -> impl tracing::Subscriber + Send + Sync + use<> {
        let filter = docflow::telemetry::filter(Some(rust_log)).expect("a RUST_LOG filter");
        docflow::telemetry::subscriber(filter, self.clone())
    }

    /// What was written.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }

    /// What was written, one JSON value per line (after [`Logs::capture_json`]). Panics
    /// on a line that is not JSON, naming it.
    pub fn lines(&self) -> Vec<serde_json::Value> {
        self.text()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect()
    }
}
