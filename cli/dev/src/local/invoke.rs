//! How the local event-source mapping calls a function: in process (the function crate's
//! `handler` on this process's runtime) or over HTTP (the invoke endpoint of `cargo
//! lambda watch`, which runs each function's real binary). Either way the result is an
//! [`Invocation`]: what Lambda would have seen come back.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use futures::FutureExt as _;
use lambda_runtime::{Context, LambdaEvent};

/// A boxed, sendable future (what [`Invoke`] and [`super::Scheduled`] return).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What came back from one invocation.
#[derive(Debug, Clone, PartialEq)]
pub enum Invocation {
    /// The function returned this JSON (`Null` for an empty response).
    Returned(serde_json::Value),
    /// The function failed: it returned an error, panicked or crashed, timed out, or
    /// its answer was not JSON. Lambda retries the whole batch.
    Failed(String),
}

/// A function an event source mapping can invoke.
pub trait Invoke: Send + Sync {
    /// Invokes the function with one batch. Never fails itself: every failure is an
    /// [`Invocation::Failed`].
    fn invoke(&self, event: LambdaEvent<SqsEvent>) -> BoxFuture<'_, Invocation>;
}

/// A function crate's `handler`, called on this process's runtime. A panic is caught
/// and, as a crashed Lambda runtime would, fails the whole batch.
pub struct InProcess<F>(pub F);

impl<F, Fut> Invoke for InProcess<F>
where
    F: Fn(LambdaEvent<SqsEvent>) -> Fut + Send + Sync,
    Fut: Future<Output = Result<SqsBatchResponse, lambda_runtime::Error>> + Send + 'static,
{
    fn invoke(&self, event: LambdaEvent<SqsEvent>) -> BoxFuture<'_, Invocation> {
        let call = (self.0)(event);
        Box::pin(async move {
            match AssertUnwindSafe(call).catch_unwind().await {
                Ok(Ok(response)) => match serde_json::to_value(&response) {
                    Ok(value) => Invocation::Returned(value),
                    Err(e) => Invocation::Failed(format!("response did not serialize: {e}")),
                },
                Ok(Err(error)) => {
                    Invocation::Failed(format!("function returned an error: {error}"))
                }
                Err(panic) => Invocation::Failed(format!(
                    "function panicked: {}",
                    panic_message(panic.as_ref())
                )),
            }
        })
    }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".to_owned())
}

/// A function behind the Lambda Invoke API's path, as `cargo lambda watch` serves it:
/// `POST {base}/2015-03-31/functions/{name}/invocations` with the event as the body.
/// A non-2xx status or an `X-Amz-Function-Error` header is a failed invocation; a body
/// that is not JSON too.
#[derive(Debug, Clone)]
pub struct HttpInvoke {
    client: reqwest::Client,
    url: String,
}

impl HttpInvoke {
    /// `base` is e.g. `http://127.0.0.1:9000` (cargo lambda watch's default address).
    pub fn new(client: reqwest::Client, base: &str, function: &str) -> Self {
        HttpInvoke {
            client,
            url: format!(
                "{}/2015-03-31/functions/{function}/invocations",
                base.trim_end_matches('/')
            ),
        }
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// Posts any JSON payload and interprets the answer (also used for the sweeper's
    /// scheduled event).
    pub async fn call(&self, payload: &serde_json::Value) -> Invocation {
        let response = match self.client.post(&self.url).json(payload).send().await {
            Ok(response) => response,
            Err(e) => return Invocation::Failed(format!("could not reach {}: {e}", self.url)),
        };
        let status = response.status();
        let function_error = response
            .headers()
            .get("x-amz-function-error")
            .map(|v| v.to_str().unwrap_or("").to_owned());
        let body = match response.bytes().await {
            Ok(body) => body,
            Err(e) => return Invocation::Failed(format!("reading the response failed: {e}")),
        };
        let text = String::from_utf8_lossy(&body);
        let excerpt: String = text.chars().take(300).collect();
        if !status.is_success() || function_error.is_some() {
            return Invocation::Failed(format!("function failed (HTTP {status}): {excerpt}"));
        }
        if body.iter().all(u8::is_ascii_whitespace) {
            return Invocation::Returned(serde_json::Value::Null);
        }
        match serde_json::from_slice(&body) {
            Ok(value) => Invocation::Returned(value),
            Err(e) => Invocation::Failed(format!("response is not JSON ({e}): {excerpt}")),
        }
    }
}

impl Invoke for HttpInvoke {
    fn invoke(&self, event: LambdaEvent<SqsEvent>) -> BoxFuture<'_, Invocation> {
        Box::pin(async move {
            match serde_json::to_value(&event.payload) {
                Ok(payload) => self.call(&payload).await,
                Err(e) => Invocation::Failed(format!("event did not serialize: {e}")),
            }
        })
    }
}

/// A Lambda context for one invocation: a fresh request id, the deadline `timeout` from
/// now (as Lambda sets it, in epoch milliseconds) and the function's ARN.
pub fn lambda_context(function_arn: &str, timeout: Duration) -> Context {
    let mut context = Context::default();
    context.request_id = uuid::Uuid::new_v4().to_string();
    context.deadline = (SystemTime::now() + timeout)
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or_default();
    context.invoked_function_arn = function_arn.to_owned();
    context
}
