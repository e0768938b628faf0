//! reqwest clients built at their first request instead of at a cold start.
//!
//! Building a reqwest client sets up its TLS (the root store, the rustls configuration)
//! and its connection pool: 0.1-0.2 ms each, paid by every cold start even when the
//! instance never calls that API (a document-output instance whose batch is all
//! duplicates never reaches Maesn; ingestion's LLM is only asked when the rules fall
//! short). `make bench` counted 0.25-0.33 ms of `function_clients` per cold start
//! (issue 27 item 4: "build the clients a cold start does not need lazily").
//!
//! Building can fail only where the TLS backend cannot be initialised; that failure now
//! surfaces as the first request's error, [`reqwest::Error::is_builder`], which the
//! callers classify as "nothing was sent".

use std::sync::{Arc, OnceLock};

type Build = dyn Fn() -> reqwest::ClientBuilder + Send + Sync;

/// A [`reqwest::Client`] built once, at the first [`LazyClient::get`]; clones share it.
#[derive(Clone)]
pub struct LazyClient(Arc<Inner>);

struct Inner {
    builder: Box<Build>,
    client: OnceLock<reqwest::Client>,
}

impl std::fmt::Debug for LazyClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LazyClient")
            .field("built", &self.is_built())
            .finish()
    }
}

impl LazyClient {
    /// A client of the builder `builder` returns; nothing is built yet.
    pub fn new(builder: impl Fn() -> reqwest::ClientBuilder + Send + Sync + 'static) -> Self {
        LazyClient(Arc::new(Inner {
            builder: Box::new(builder),
            client: OnceLock::new(),
        }))
    }

    /// The client, built now if this is the first request. Two first requests at once
    /// may both build one; the first stored is kept and the other dropped (no
    /// connection exists yet), so every caller uses the same pool afterwards.
    pub fn get(&self) -> Result<&reqwest::Client, reqwest::Error> {
        if let Some(client) = self.0.client.get() {
            return Ok(client);
        }
        let built = (self.0.builder)().build()?;
        Ok(self.0.client.get_or_init(|| built))
    }

    /// Whether the client has been built (tests, and the cold-start accounting).
    pub fn is_built(&self) -> bool {
        self.0.client.get().is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn the_client_is_built_at_the_first_get_once_and_shared_by_clones() {
        let builds = Arc::new(AtomicUsize::new(0));
        let counter = builds.clone();
        let lazy = LazyClient::new(move || {
            counter.fetch_add(1, Ordering::SeqCst);
            reqwest::Client::builder()
        });
        let clone = lazy.clone();
        assert!(!lazy.is_built());
        assert_eq!(builds.load(Ordering::SeqCst), 0, "nothing at construction");
        let first = lazy.get().unwrap() as *const reqwest::Client;
        let second = clone.get().unwrap() as *const reqwest::Client;
        assert_eq!(
            first, second,
            "clones share one client (one connection pool)"
        );
        assert_eq!(builds.load(Ordering::SeqCst), 1);
        assert!(clone.is_built());
    }

    #[test]
    fn a_builder_that_cannot_build_fails_the_request_as_a_builder_error() {
        // No TLS version to offer fails `build()`, as a broken TLS backend would.
        let lazy = LazyClient::new(|| {
            reqwest::Client::builder()
                .min_tls_version(reqwest::tls::Version::TLS_1_3)
                .max_tls_version(reqwest::tls::Version::TLS_1_2)
        });
        let error = lazy.get().expect_err("an impossible TLS version range");
        assert!(error.is_builder(), "{error:?}");
        assert!(!lazy.is_built());
    }
}
