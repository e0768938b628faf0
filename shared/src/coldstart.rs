//! Where a cold start's time goes: each phase of the wiring (tracing, settings, AWS
//! config, SDK clients, the secret fetch, the pool, the function's own clients) is
//! timed and reported once, as one log line `cold start` with the field
//! `phases_us` (a JSON object of microseconds per phase, in order), just before the
//! function asks the Runtime API for its first event. `make bench` reads that line;
//! in CloudWatch it explains a slow `Init Duration`.

use std::sync::Mutex;
use std::time::Instant;

struct Clock {
    last: Option<Instant>,
    phases: Vec<(&'static str, u128)>,
    reported: bool,
}

static CLOCK: Mutex<Clock> = Mutex::new(Clock {
    last: None,
    phases: Vec::new(),
    reported: false,
});

/// Starts the clock (the first thing `main` does, through [`crate::telemetry::init`]).
pub fn start() {
    let mut clock = CLOCK.lock().unwrap_or_else(|e| e.into_inner());
    if clock.last.is_none() {
        clock.last = Some(Instant::now());
    }
}

/// Ends the phase `name`: the time since the previous mark (or [`start`]). Does
/// nothing before [`start`] or after [`report`] (tests build `Deps` many times).
pub fn mark(name: &'static str) {
    let now = Instant::now();
    let mut clock = CLOCK.lock().unwrap_or_else(|e| e.into_inner());
    if clock.reported {
        return;
    }
    if let Some(last) = clock.last.replace(now) {
        clock
            .phases
            .push((name, now.duration_since(last).as_micros()));
    }
}

/// Ends the last phase (`function_clients`: what the function builds after the
/// shared wiring) and logs the phases once.
pub fn report() {
    mark("function_clients");
    let mut clock = CLOCK.lock().unwrap_or_else(|e| e.into_inner());
    if clock.reported || clock.phases.is_empty() {
        return;
    }
    clock.reported = true;
    let phases: serde_json::Map<String, serde_json::Value> = clock
        .phases
        .iter()
        .map(|(name, us)| {
            (
                (*name).to_owned(),
                serde_json::Value::from(u64::try_from(*us).unwrap_or(u64::MAX)),
            )
        })
        .collect();
    let total: u128 = clock.phases.iter().map(|(_, us)| us).sum();
    tracing::info!(
        phases_us = %serde_json::Value::Object(phases),
        total_us = u64::try_from(total).unwrap_or(u64::MAX),
        "cold start"
    );
}
