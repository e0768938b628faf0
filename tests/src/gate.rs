//! A gated HTTP stand-in for wiremock: every request is held until the test opens the
//! gate, so a test can stop the code under test inside a call (an LLM answer, a Maesn
//! export, a Slack notice) for exactly as long as it needs, without any sleep.
//!
//! The wiremock server answers on its own thread, so blocking it holds only the calls to
//! that server. While a request is held, that server's `received_requests()` waits too
//! (wiremock answers under its state lock): use [`Gate::arrived`] instead.

use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use wiremock::ResponseTemplate;

/// How long [`Gate::arrived`] waits for a request before failing the test.
pub const ARRIVAL_TIMEOUT: Duration = Duration::from_secs(60);

/// How long a held request waits for [`Gate::open`] before it is answered anyway, so that
/// a failing test cannot hang the server thread for ever. Longer than any test holds one.
pub const HOLD_LIMIT: Duration = Duration::from_secs(120);

/// A stand-in that holds every request until [`Gate::open`], then answers each with the
/// same response.
#[derive(Clone)]
pub struct Gate {
    arrived: Arc<tokio::sync::Semaphore>,
    open: Arc<(Mutex<bool>, Condvar)>,
    answer: ResponseTemplate,
}

impl Gate {
    /// A Messages API (LLM) stand-in answering `text`.
    pub fn new(text: &str) -> Self {
        Gate::answering(crate::llm::anthropic_text(text))
    }

    /// A gate that, once open, answers with `response` (an API error, say).
    pub fn answering(response: ResponseTemplate) -> Self {
        Gate {
            arrived: Arc::new(tokio::sync::Semaphore::new(0)),
            open: Arc::default(),
            answer: response,
        }
    }

    /// Waits until a request reached the stand-in (and is being held); panics when none
    /// arrives within [`ARRIVAL_TIMEOUT`].
    pub async fn arrived(&self) {
        match tokio::time::timeout(ARRIVAL_TIMEOUT, self.arrived.acquire()).await {
            Ok(permit) => permit.expect("gate semaphore open").forget(),
            Err(_) => panic!(
                "no request reached the gated stand-in within {} s",
                ARRIVAL_TIMEOUT.as_secs()
            ),
        }
    }

    /// Lets every held and later request through.
    pub fn open(&self) {
        let (lock, cvar) = &*self.open;
        *lock.lock().unwrap() = true;
        cvar.notify_all();
    }
}

impl wiremock::Respond for Gate {
    fn respond(&self, _request: &wiremock::Request) -> ResponseTemplate {
        self.arrived.add_permits(1);
        let (lock, cvar) = &*self.open;
        let open = lock.lock().unwrap();
        let (open, waited) = cvar
            .wait_timeout_while(open, HOLD_LIMIT, |open| !*open)
            .unwrap();
        if waited.timed_out() && !*open {
            eprintln!(
                "gated stand-in: not opened within {} s; answering anyway",
                HOLD_LIMIT.as_secs()
            );
        }
        self.answer.clone()
    }
}
