//! docflow patch: a per-thread budget for the bytes that stream filters may produce.
//!
//! Without it a few kilobytes of `FlateDecode` (or `LZWDecode`) inflate to gigabytes
//! while a document is loaded (object and xref streams) or read (content streams,
//! CMaps), and the process is killed for memory. Code that reads untrusted PDFs runs
//! inside [`with_limits`]; outside of it nothing changes.

use std::cell::Cell;

#[derive(Clone, Copy)]
struct Budget {
    left: u64,
    per_stream: u64,
    exceeded: bool,
}

thread_local! {
    static BUDGET: Cell<Option<Budget>> = const { Cell::new(None) };
}

/// What a run under [`with_limits`] used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Inflation {
    /// Bytes the filters produced.
    pub inflated: u64,
    /// Whether a stream would have produced more than a limit allowed: its filter
    /// failed instead, and what the run read is incomplete.
    pub exceeded: bool,
}

/// Runs `f` with at most `total` bytes inflated by all stream filters on this thread
/// together, and at most `per_stream` by any one stream. A stream that would exceed
/// either fails to decode (`Error::Decompress`) after producing at most the limit.
pub fn with_limits<T>(total: u64, per_stream: u64, f: impl FnOnce() -> T) -> (T, Inflation) {
    let outer = BUDGET.with(|b| {
        b.replace(Some(Budget {
            left: total,
            per_stream,
            exceeded: false,
        }))
    });
    struct Restore(Option<Budget>);
    impl Drop for Restore {
        fn drop(&mut self) {
            BUDGET.with(|b| b.set(self.0));
        }
    }
    let restore = Restore(outer);
    let value = f();
    let used = BUDGET.with(|b| b.get()).expect("set above");
    drop(restore);
    (
        value,
        Inflation {
            inflated: total - used.left,
            exceeded: used.exceeded,
        },
    )
}

/// The most bytes the next stream may produce, `None` without a budget.
pub(crate) fn stream_limit() -> Option<u64> {
    BUDGET.with(|b| b.get()).map(|b| b.left.min(b.per_stream))
}

/// Records `bytes` produced by one stream; `false` (and the run marked exceeded) when
/// they are more than the budget allowed.
pub(crate) fn spend(bytes: u64) -> bool {
    BUDGET.with(|cell| match cell.get() {
        None => true,
        Some(mut b) => {
            let allowed = b.left.min(b.per_stream);
            let ok = bytes <= allowed;
            b.left -= bytes.min(allowed);
            b.exceeded |= !ok;
            cell.set(Some(b));
            ok
        }
    })
}

/// A writer that fails once more than `limit` bytes were written into `out`.
pub(crate) struct Capped<'a> {
    pub out: &'a mut Vec<u8>,
    pub limit: u64,
}

impl std::io::Write for Capped<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let room = self.limit.saturating_sub(self.out.len() as u64);
        if buf.len() as u64 > room {
            // One byte past the limit marks it exceeded for the caller.
            self.out.extend_from_slice(&buf[..(room as usize + 1).min(buf.len())]);
            return Err(std::io::Error::other("the stream inflates beyond its limit"));
        }
        self.out.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

// ---- objects (docflow patch) ---------------------------------------------------------

thread_local! {
    /// Objects the parser may still create on this thread, and whether a run ran out.
    static OBJECTS: Cell<Option<(u64, bool)>> = const { Cell::new(None) };
}

/// What a run under [`with_object_limit`] parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Objects {
    /// Direct objects the parser created (or began: a failed alternative counts too).
    pub parsed: u64,
    /// Whether the parser stopped at the limit: what the run read is incomplete.
    pub exceeded: bool,
}

/// Runs `f` with at most `max` direct objects (numbers, names, strings, arrays,
/// dictionaries, references) parsed on this thread. The parser builds about 120 bytes of
/// objects from as little as 2 bytes of file (`[0 0 0 …]`): a file's size says nothing of
/// its memory without this limit. Beyond it, parsing fails (a nom failure).
pub fn with_object_limit<T>(max: u64, f: impl FnOnce() -> T) -> (T, Objects) {
    let outer = OBJECTS.with(|o| o.replace(Some((max, false))));
    struct Restore(Option<(u64, bool)>);
    impl Drop for Restore {
        fn drop(&mut self) {
            OBJECTS.with(|o| o.set(self.0));
        }
    }
    let restore = Restore(outer);
    let value = f();
    let (left, exceeded) = OBJECTS.with(|o| o.get()).expect("set above");
    drop(restore);
    (
        value,
        Objects {
            parsed: max - left,
            exceeded,
        },
    )
}

/// Counts one object about to be parsed; `false` (and the run marked exceeded) when the
/// limit is reached.
pub(crate) fn count_object() -> bool {
    OBJECTS.with(|cell| match cell.get() {
        None => true,
        Some((0, _)) => {
            cell.set(Some((0, true)));
            false
        }
        Some((left, exceeded)) => {
            cell.set(Some((left - 1, exceeded)));
            true
        }
    })
}
