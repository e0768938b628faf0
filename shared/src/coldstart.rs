//! Where a cold start's time goes: each phase of the wiring (tracing, settings, AWS
//! config, SDK clients, the secret fetch, the pool, the function's own clients) is
//! timed and reported once, as one log line `cold start` with the field
//! `phases_us` (a JSON object of microseconds per phase, in order), just before the
//! function asks the Runtime API for its first event. `make bench` reads that line;
//! in CloudWatch it explains a slow `Init Duration`.
//!
//! A fetch that happens inside some phase (the secret: fetched by whichever phase
//! first reads it, `pool` in AWS, a function's own clients when the database URL is
//! a setting) is timed as a phase of its own with [`nested`]: its time is taken out
//! of the phase it happened in, so the phases still add up to the cold start.

use std::sync::Mutex;
use std::time::Instant;

struct Clock {
    last: Option<Instant>,
    phases: Vec<(&'static str, u128)>,
    /// Time [`nested`] recorded since the last mark, taken out of the next phase.
    inside: u128,
    reported: bool,
}

static CLOCK: Mutex<Clock> = Mutex::new(Clock {
    last: None,
    phases: Vec::new(),
    inside: 0,
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
    CLOCK
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .mark(name, now);
}

/// Records `took` as the phase `name` inside the current one (which is not yet
/// marked); a name recorded twice adds up. Does nothing before [`start`] or after
/// [`report`]: a fetch of a warm instance is not a cold start's.
pub fn nested(name: &'static str, took: std::time::Duration) {
    CLOCK
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .nested(name, took);
}

impl Clock {
    fn mark(&mut self, name: &'static str, now: Instant) {
        if self.reported {
            return;
        }
        if let Some(last) = self.last.replace(now) {
            let inside = std::mem::take(&mut self.inside);
            let own = now.duration_since(last).as_micros().saturating_sub(inside);
            self.phases.push((name, own));
        }
    }

    fn nested(&mut self, name: &'static str, took: std::time::Duration) {
        if self.reported || self.last.is_none() {
            return;
        }
        let us = took.as_micros();
        self.inside += us;
        match self.phases.iter_mut().find(|(n, _)| *n == name) {
            Some((_, total)) => *total += us,
            None => self.phases.push((name, us)),
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn clock(at: Instant) -> Clock {
        Clock {
            last: Some(at),
            phases: Vec::new(),
            inside: 0,
            reported: false,
        }
    }

    #[test]
    fn a_fetch_inside_a_phase_is_its_own_phase_and_the_phases_still_add_up() {
        let t0 = Instant::now();
        let mut c = clock(t0);
        c.mark("settings", t0 + Duration::from_millis(2));
        c.nested("secret_fetch", Duration::from_millis(7));
        c.mark("function_clients", t0 + Duration::from_millis(12));
        assert_eq!(
            c.phases,
            vec![
                ("settings", 2_000),
                ("secret_fetch", 7_000),
                ("function_clients", 3_000)
            ]
        );
        let total: u128 = c.phases.iter().map(|(_, us)| us).sum();
        assert_eq!(total, 12_000);
    }

    #[test]
    fn a_fetch_after_the_report_or_before_the_start_is_not_a_cold_starts() {
        let mut c = clock(Instant::now());
        c.last = None;
        c.nested("secret_fetch", Duration::from_millis(7));
        assert!(c.phases.is_empty());
        let mut c = clock(Instant::now());
        c.reported = true;
        c.nested("secret_fetch", Duration::from_millis(7));
        assert!(c.phases.is_empty() && c.inside == 0);
    }
}
