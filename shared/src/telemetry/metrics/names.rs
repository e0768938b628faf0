//! Every metric docflow writes: its name, its unit, and the dimension names its groups
//! use ([`dimension`]). The Terraform alarms and the dashboard are checked against these
//! constants (`tests/tests/it/infra_contract.rs`); [`ALL`] lists them for reading EMF
//! lines back.

/// Dimension names (top-level members of every document).
pub mod dimension {
    /// The function's logical name (`ingestion`, `matching`, `document-output`,
    /// `sweeper`): in every document.
    pub const FUNCTION: &str = "function";
    /// Why records were discarded ([`crate::sqs::DiscardKind`]).
    pub const REASON: &str = "reason";
    /// The OCR or LLM provider used.
    pub const PROVIDER: &str = "provider";
    /// The decision or result of a step (an LLM decision, an export).
    pub const OUTCOME: &str = "outcome";
    /// The sweeper's kind of work (`ingestion`, `matching`, `output`).
    pub const KIND: &str = "kind";
    /// A step of a function's record path ([`stage`](crate::telemetry::metrics::stage)): one of the fixed names in
    /// [`super::stages`].
    pub const STAGE: &str = "stage";
}

/// A CloudWatch unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Unit {
    Count,
    Milliseconds,
    Seconds,
}

impl Unit {
    pub fn as_str(self) -> &'static str {
        match self {
            Unit::Count => "Count",
            Unit::Milliseconds => "Milliseconds",
            Unit::Seconds => "Seconds",
        }
    }

    /// Counts are summed into one value per document; times are kept as the list of
    /// observations (EMF value arrays), so CloudWatch has their percentiles.
    pub(super) fn is_summed(self) -> bool {
        self == Unit::Count
    }
}

/// One metric: its name and unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Metric {
    pub name: &'static str,
    pub unit: Unit,
}

const fn counter(name: &'static str) -> Metric {
    Metric {
        name,
        unit: Unit::Count,
    }
}

const fn millis(name: &'static str) -> Metric {
    Metric {
        name,
        unit: Unit::Milliseconds,
    }
}

const fn seconds(name: &'static str) -> Metric {
    Metric {
        name,
        unit: Unit::Seconds,
    }
}

/// What the batch runtime writes for every SQS function (dimension: `function`; the
/// discards also per `reason`). Every record received ends in exactly one of done,
/// discarded, retried, released, not started, skipped in its FIFO group, or cut off at
/// the deadline.
pub mod batch {
    use super::*;
    pub const RECORDS_RECEIVED: Metric = counter("RecordsReceived");
    pub const RECORDS_DONE: Metric = counter("RecordsDone");
    pub const RECORDS_DISCARDED: Metric = counter("RecordsDiscarded");
    pub const RECORDS_RETRIED: Metric = counter("RecordsRetried");
    /// The delay of each `Retry { after }`.
    pub const RETRY_DELAY: Metric = seconds("RetryDelay");
    pub const RECORDS_RELEASED: Metric = counter("RecordsReleased");
    /// Records whose `process` panicked (also counted as released).
    pub const RECORD_PANICS: Metric = counter("RecordPanics");
    /// Records still running when the deadline (minus the margin) came.
    pub const RECORDS_CUT_OFF: Metric = counter("RecordsCutOffAtDeadline");
    /// Records not started for lack of time (`start_reserve`).
    pub const RECORDS_NOT_STARTED: Metric = counter("RecordsNotStarted");
    /// FIFO records reported failed unprocessed behind a failed one of their group.
    pub const RECORDS_SKIPPED: Metric = counter("RecordsSkippedInGroup");
    /// Work that failed for good (recorded in the database, the message deleted): the
    /// function says so with [`crate::telemetry::metrics::failed_permanently`].
    pub const RECORDS_FAILED_PERMANENTLY: Metric = counter("RecordsFailedPermanently");
    /// Visibility changes (retry delays) that SQS refused.
    pub const VISIBILITY_CHANGES_FAILED: Metric = counter("VisibilityChangesFailed");
    pub const BATCH_DURATION: Metric = millis("BatchDuration");
    /// Each processed record's time in `process`.
    pub const RECORD_DURATION: Metric = millis("RecordDuration");
    /// Now minus the oldest record's `SentTimestamp`, when the batch started.
    pub const OLDEST_RECORD_AGE: Metric = seconds("OldestRecordAge");

    /// The counters written in every batch document, zero included.
    pub const ALWAYS: &[Metric] = &[
        RECORDS_RECEIVED,
        RECORDS_DONE,
        RECORDS_DISCARDED,
        RECORDS_RETRIED,
        RECORDS_RELEASED,
        RECORD_PANICS,
        RECORDS_CUT_OFF,
        RECORDS_NOT_STARTED,
        RECORDS_SKIPPED,
        RECORDS_FAILED_PERMANENTLY,
        VISIBILITY_CHANGES_FAILED,
    ];
}

/// Ingestion's own metrics.
pub mod ingestion {
    use super::*;
    pub const PAGES: Metric = counter("Pages");
    /// Pages sent to OCR, per `provider`.
    pub const OCR_PAGES: Metric = counter("OcrPages");
    pub const PREPROCESSING_PASSES: Metric = counter("PreprocessingPasses");
    pub const QUALITY_GATE_FAILURES: Metric = counter("QualityGateFailures");
    /// Documents read from their structured e-invoice (no OCR, no LLM), per `kind`
    /// (`xml`, `pdf`).
    pub const EINVOICES_READ: Metric = counter("EInvoicesRead");
    /// Hybrid PDFs whose XML was invalid, unreadable or not an invoice: read from the
    /// page instead.
    pub const EINVOICE_FALLBACKS: Metric = counter("EInvoiceFallbacks");
    /// Hybrid PDFs whose page and XML disagree on the number or the total (the XML is
    /// kept, the disagreement flagged in `structured_data.einvoice.disagreements`).
    pub const EINVOICE_DISAGREEMENTS: Metric = counter("EInvoiceDisagreements");
}

/// LLM calls (ingestion and matching), per `provider`.
pub mod llm {
    use super::*;
    pub const INPUT_TOKENS: Metric = counter("LlmInputTokens");
    pub const OUTPUT_TOKENS: Metric = counter("LlmOutputTokens");
    pub const LATENCY: Metric = millis("LlmLatency");
    pub const CALLS_FAILED: Metric = counter("LlmCallsFailed");
}

/// Matching's own metrics.
pub mod matching {
    use super::*;
    pub const CANDIDATES_CONSIDERED: Metric = counter("CandidatesConsidered");
    /// LLM decisions, per `outcome`.
    pub const LLM_DECISIONS: Metric = counter("LlmDecisions");
    pub const CLUSTERS_MERGED: Metric = counter("ClustersMerged");
    pub const CLUSTERS_SPLIT: Metric = counter("ClustersSplit");
    /// Time the write phase waited for the locks of the clusters it touches.
    pub const WRITE_LOCK_WAIT: Metric = millis("WriteLockWait");
    /// Write phases that gave up waiting for a cluster lock (`lock_timeout`, 55P03).
    pub const WRITE_LOCK_TIMEOUTS: Metric = counter("WriteLockTimeouts");
    /// Write phases Postgres chose as a deadlock's victim (40P01), retried in place.
    pub const WRITE_LOCK_DEADLOCKS: Metric = counter("WriteLockDeadlocks");
}

/// Where a record's time goes: each step of the record path, timed with [`stage`](crate::telemetry::metrics::stage), per
/// `stage` (the names below). What `make bench` breaks the pipeline's time down by, and
/// in CloudWatch the answer to "which step got slow".
pub mod stages {
    use super::*;
    pub const DURATION: Metric = millis("StageDuration");

    /// Claiming the work in the database (every function).
    pub const CLAIM: &str = "claim";
    /// Ingestion: reading the stored file (or a stored transcription) from S3.
    pub const FETCH: &str = "fetch";
    /// Ingestion: the structured e-invoice, looked for in a PDF and read (an XML upload
    /// or a hybrid), before any transcription.
    pub const EINVOICE: &str = "einvoice";
    /// Ingestion: the text of the file (text layer, or OCR).
    pub const TRANSCRIBE: &str = "transcribe";
    /// Ingestion: writing the transcription to S3 and its row.
    pub const STORE_TRANSCRIPTION: &str = "store_transcription";
    /// Ingestion: structured data from the text (LLM, or the rules extractor).
    pub const EXTRACT: &str = "extract";
    /// Recording the finished work: ingestion's document data and status (one
    /// transaction), document output's accepted export (one statement).
    pub const COMPLETE: &str = "complete";
    /// Ingestion: the matching message.
    pub const HAND_OFF: &str = "hand_off";
    /// Matching: the normalised fields of the document, saved.
    pub const NORMALIZE: &str = "normalize";
    /// Matching: the candidate search (and the embeddings' nearest neighbours).
    pub const CANDIDATES: &str = "candidates";
    /// Matching: scoring and the decisions (the LLM for the ambiguous ones).
    pub const DECIDE: &str = "decide";
    /// Matching: the cluster writes and the succeeded status, in one transaction.
    pub const WRITE: &str = "write";
    /// Document output: the visibility extension before work (seed 002).
    pub const EXTEND_VISIBILITY: &str = "extend_visibility";
    /// Document output: the checks before an export (an earlier attempt's audit, the
    /// document's eligibility, the export context).
    pub const CHECKS: &str = "checks";
    /// Document output: the document's file from S3.
    pub const READ_FILE: &str = "read_file";
    /// Document output: the audit row committed before the Maesn call.
    pub const AUDIT: &str = "audit";
    /// Document output: the Maesn call (with its in-process retries).
    pub const MAESN: &str = "maesn";

    /// Every stage name (the values of the `stage` dimension).
    pub const ALL: &[&str] = &[
        CLAIM,
        FETCH,
        EINVOICE,
        TRANSCRIBE,
        STORE_TRANSCRIPTION,
        EXTRACT,
        COMPLETE,
        HAND_OFF,
        NORMALIZE,
        CANDIDATES,
        DECIDE,
        WRITE,
        EXTEND_VISIBILITY,
        CHECKS,
        READ_FILE,
        AUDIT,
        MAESN,
    ];
}

/// Admin notifications that reached no channel (matching, output, sweeper).
pub const NOTIFICATIONS_FAILED: Metric = counter("NotificationsFailed");

/// Document output's own metrics.
pub mod output {
    use super::*;
    pub const EXPORTS_DISPATCHED: Metric = counter("ExportsDispatched");
    pub const EXPORTS_FAILED: Metric = counter("ExportsFailed");
    pub const EXPORTS_IN_DOUBT: Metric = counter("ExportsInDoubt");
    pub const MAESN_LATENCY: Metric = millis("MaesnLatency");
}

/// The sweeper's metrics, per `kind` (`ingestion`, `matching`, `output`) and for DATEV
/// tasks.
pub mod sweeper {
    use super::*;
    pub const FOUND: Metric = counter("StuckFound");
    pub const RESENT: Metric = counter("Resent");
    pub const GIVEN_UP: Metric = counter("GivenUp");
    pub const TASKS_POLLED: Metric = counter("TasksPolled");
    pub const TASKS_SUCCEEDED: Metric = counter("TasksSucceeded");
    pub const TASKS_FAILED: Metric = counter("TasksFailed");
    pub const STEPS_FAILED: Metric = counter("StepsFailed");
    /// Age of the oldest DATEV task still open after the poll (0: none); the alarm on
    /// tasks nobody ends watches its maximum.
    pub const OLDEST_OPEN_TASK_AGE: Metric = seconds("OldestOpenTaskAge");
    /// DATEV tasks ended `PARTIAL_SUCCESS` (booked with remarks; admins told).
    pub const TASKS_PARTIAL: Metric = counter("TasksPartiallySucceeded");
    /// DATEV tasks given up after the maximum task age (failed, "check DATEV").
    pub const TASKS_EXPIRED: Metric = counter("TasksExpired");
}

pub(super) fn unit_from(unit: &str) -> Option<Unit> {
    [Unit::Count, Unit::Milliseconds, Unit::Seconds]
        .into_iter()
        .find(|u| u.as_str() == unit)
}

pub(super) fn known_dimension(name: &str) -> Option<&'static str> {
    [
        dimension::REASON,
        dimension::PROVIDER,
        dimension::OUTCOME,
        dimension::KIND,
        dimension::STAGE,
    ]
    .into_iter()
    .find(|d| *d == name)
}

/// Every metric docflow writes.
pub const ALL: &[Metric] = &[
    batch::RECORDS_RECEIVED,
    batch::RECORDS_DONE,
    batch::RECORDS_DISCARDED,
    batch::RECORDS_RETRIED,
    batch::RETRY_DELAY,
    batch::RECORDS_RELEASED,
    batch::RECORD_PANICS,
    batch::RECORDS_CUT_OFF,
    batch::RECORDS_NOT_STARTED,
    batch::RECORDS_SKIPPED,
    batch::RECORDS_FAILED_PERMANENTLY,
    batch::VISIBILITY_CHANGES_FAILED,
    batch::BATCH_DURATION,
    batch::RECORD_DURATION,
    batch::OLDEST_RECORD_AGE,
    ingestion::PAGES,
    ingestion::OCR_PAGES,
    ingestion::PREPROCESSING_PASSES,
    ingestion::QUALITY_GATE_FAILURES,
    ingestion::EINVOICES_READ,
    ingestion::EINVOICE_FALLBACKS,
    ingestion::EINVOICE_DISAGREEMENTS,
    llm::INPUT_TOKENS,
    llm::OUTPUT_TOKENS,
    llm::LATENCY,
    llm::CALLS_FAILED,
    matching::CANDIDATES_CONSIDERED,
    matching::LLM_DECISIONS,
    matching::CLUSTERS_MERGED,
    matching::CLUSTERS_SPLIT,
    matching::WRITE_LOCK_WAIT,
    matching::WRITE_LOCK_TIMEOUTS,
    matching::WRITE_LOCK_DEADLOCKS,
    NOTIFICATIONS_FAILED,
    output::EXPORTS_DISPATCHED,
    output::EXPORTS_FAILED,
    output::EXPORTS_IN_DOUBT,
    output::MAESN_LATENCY,
    stages::DURATION,
    sweeper::FOUND,
    sweeper::RESENT,
    sweeper::GIVEN_UP,
    sweeper::TASKS_POLLED,
    sweeper::TASKS_SUCCEEDED,
    sweeper::TASKS_FAILED,
    sweeper::STEPS_FAILED,
    sweeper::OLDEST_OPEN_TASK_AGE,
    sweeper::TASKS_PARTIAL,
    sweeper::TASKS_EXPIRED,
];

pub(super) fn known_metric(name: &str, unit: Unit) -> Option<Metric> {
    ALL.iter()
        .copied()
        .find(|m| m.name == name && m.unit == unit)
}
