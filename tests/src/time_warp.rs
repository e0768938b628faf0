//! The functions' hard-coded SQS backoffs, scaled down for tests that run them through a
//! queue but do not test the backoff itself (the soak, the secret-leak run, the matching
//! evaluation): [`TimeWarp`], an SDK interceptor on the functions' SQS client, divides a
//! `ChangeMessageVisibility` of 30 s or more by [`WARP`] (at least 1 s). Shorter ones
//! (heartbeats, the output worker's configured backoffs) are left as they are. Nothing
//! in the functions changes: they still ask for production's 300 s, 1800 s, 30 s·2ⁿ.

use aws_sdk_sqs::config::interceptors::BeforeSerializationInterceptorContextMut;
use aws_sdk_sqs::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_sqs::error::BoxError;
use aws_sdk_sqs::operation::change_message_visibility::ChangeMessageVisibilityInput;
use aws_sdk_sqs::operation::change_message_visibility_batch::ChangeMessageVisibilityBatchInput;

/// How much faster the hard-coded backoffs run.
pub const WARP: i32 = 120;

/// The visibility a warped client sets for `seconds`.
pub fn warp(seconds: i32) -> i32 {
    if seconds >= 30 {
        (seconds / WARP).max(1)
    } else {
        seconds
    }
}

/// Scales the backoffs a function sets (see the module docs).
#[derive(Debug, Clone, Copy)]
pub struct TimeWarp;

impl Intercept for TimeWarp {
    fn name(&self) -> &'static str {
        "docflow-test-time-warp"
    }

    fn modify_before_serialization(
        &self,
        context: &mut BeforeSerializationInterceptorContextMut<'_>,
        _runtime_components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let input = context.input_mut();
        if let Some(i) = input.downcast_mut::<ChangeMessageVisibilityInput>() {
            i.visibility_timeout = i.visibility_timeout.map(warp);
        }
        if let Some(i) = input.downcast_mut::<ChangeMessageVisibilityBatchInput>() {
            for entry in i.entries.iter_mut().flatten() {
                entry.visibility_timeout = entry.visibility_timeout.map(warp);
            }
        }
        Ok(())
    }
}

/// An SQS client on `config` whose visibility changes are warped.
pub fn warped(config: &aws_config::SdkConfig) -> aws_sdk_sqs::Client {
    aws_sdk_sqs::Client::from_conf(
        aws_sdk_sqs::config::Builder::from(config)
            .interceptor(TimeWarp)
            .build(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoffs_are_scaled_and_heartbeats_kept() {
        assert_eq!(warp(300), 2);
        assert_eq!(warp(1800), 15);
        assert_eq!(warp(30), 1);
        assert_eq!(warp(29), 29);
        assert_eq!(warp(0), 0);
    }
}
