//! Every AWS API call a function makes in a test, checked against the IAM actions the
//! function declares.
//!
//! moto does not enforce IAM, so a call the function's role is not granted (the runtime's
//! old `sqs:GetQueueUrl`) would pass every test and fail every time in AWS. The chain that
//! closes the gap has two links, each checked in its own test binary so that no test
//! depends on another having run:
//!
//! 1. here: the SDK clients a test gives the code under test carry an [`AwsCalls`]
//!    interceptor. It records every operation as its IAM action and **fails the call**
//!    when the action is not in the function's declared list (`<function>::aws_actions`),
//!    and [`AwsCalls::assert_declared`] fails the test afterwards (a failed call may have
//!    been logged and swallowed, as a heartbeat's is);
//! 2. `tests/tests/it/iam_calls.rs`: every declared list is granted by the function's role
//!    in Terraform (parsed with hcl-rs, as the infra contract tests do).
//!
//! Recording lives in the test's own clients, never in the emulator: several agents run
//! test binaries against one moto server at the same time.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use aws_config::SdkConfig;
use aws_sdk_sqs::config::ConfigBag;
use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::interceptors::context::{
    BeforeSerializationInterceptorContextMut, BeforeSerializationInterceptorContextRef,
};
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;

/// One recorded call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    /// The IAM action, e.g. `sqs:ChangeMessageVisibility`; for a [`AwsCalls::note`], the
    /// note itself.
    pub action: String,
    /// The SDK operation, e.g. `ChangeMessageVisibilityBatch` (empty for a note): IAM
    /// names a batch call after its single form.
    pub operation: String,
    /// The entries of a batch call (`ChangeMessageVisibilityBatch`, `SendMessageBatch`).
    pub entries: usize,
    /// `ChangeMessageVisibility`'s timeout in seconds.
    pub visibility_timeout: Option<i32>,
    /// The queue URL of an SQS call, the S3 key of an S3 call, the document of a Textract
    /// call (`bucket/key`).
    pub target: Option<String>,
}

#[derive(Debug, Default)]
struct State {
    calls: Vec<Call>,
    undeclared: Vec<String>,
    /// Message bodies whose `SendMessageBatch` entry SQS is made to refuse.
    refused_bodies: BTreeSet<String>,
}

/// The recorder of one test: cheap to clone, all clones share the record.
#[derive(Debug, Clone)]
pub struct AwsCalls {
    function: &'static str,
    declared: Arc<BTreeSet<String>>,
    state: Arc<Mutex<State>>,
}

/// A batch runtime whose SQS client records every call and refuses any not in `declared`:
/// the runtime's own `docflow::sqs::AWS_ACTIONS`, plus whatever the function the test
/// stands for declares besides (ingestion's `sqs:SendMessage`).
pub async fn recorded_runtime(
    config: docflow::sqs::BatchConfig,
    declared: &[&str],
) -> (docflow::sqs::BatchRuntime, AwsCalls) {
    let calls = AwsCalls::new("the batch runtime", declared);
    let runtime = docflow::sqs::BatchRuntime::new(calls.sqs(&crate::aws().await), config);
    (runtime, calls)
}

impl AwsCalls {
    /// A recorder for `function`, which declares it calls exactly `declared`.
    pub fn new(function: &'static str, declared: &[&str]) -> Self {
        AwsCalls {
            function,
            declared: Arc::new(declared.iter().map(|a| a.to_string()).collect()),
            state: Arc::default(),
        }
    }

    fn interceptor(&self) -> Recorder {
        Recorder(self.clone())
    }

    /// An SQS client whose every call is recorded and checked.
    pub fn sqs(&self, config: &SdkConfig) -> aws_sdk_sqs::Client {
        aws_sdk_sqs::Client::from_conf(
            aws_sdk_sqs::config::Builder::from(config)
                .interceptor(self.interceptor())
                .build(),
        )
    }

    /// An S3 client (path-style, as `docflow::aws::s3_client` builds it) whose every call
    /// is recorded and checked.
    pub fn s3(&self, config: &SdkConfig) -> aws_sdk_s3::Client {
        aws_sdk_s3::Client::from_conf(
            aws_sdk_s3::config::Builder::from(config)
                .force_path_style(config.endpoint_url().is_some())
                .interceptor(self.interceptor())
                .build(),
        )
    }

    /// A Textract client on `endpoint` (a local server that speaks Textract's protocol)
    /// whose every call is recorded and checked.
    pub fn textract(&self, config: &SdkConfig, endpoint: &str) -> aws_sdk_textract::Client {
        aws_sdk_textract::Client::from_conf(
            aws_sdk_textract::config::Builder::from(config)
                .endpoint_url(endpoint)
                .interceptor(self.interceptor())
                .build(),
        )
    }

    /// A marker in the record, e.g. from a heartbeat hook, to check the order of calls
    /// against other work.
    pub fn note(&self, marker: &str) {
        self.state.lock().unwrap().calls.push(Call {
            action: marker.to_owned(),
            operation: String::new(),
            entries: 0,
            visibility_timeout: None,
            target: None,
        });
    }

    /// Makes the emulator itself refuse the `SendMessageBatch` entry whose body is
    /// `body`, and only that entry: the entry goes out with `DelaySeconds` 901, beyond
    /// SQS's 900 s maximum, which moto answers in that entry's `Failed` result (as SQS
    /// answers an entry it refuses) while the call and its other entries succeed. The
    /// code under test parses a real partial failure, not a stub's.
    pub fn refuse_batch_entry(&self, body: &str) {
        self.state
            .lock()
            .unwrap()
            .refused_bodies
            .insert(body.to_owned());
    }

    /// Lets SQS take every `SendMessageBatch` entry again.
    pub fn accept_batch_entries(&self) {
        self.state.lock().unwrap().refused_bodies.clear();
    }

    /// Every call (and note) so far, in order.
    pub fn calls(&self) -> Vec<Call> {
        self.state.lock().unwrap().calls.clone()
    }

    /// The IAM actions called so far, in order.
    pub fn actions(&self) -> Vec<String> {
        self.calls().into_iter().map(|c| c.action).collect()
    }

    /// How many calls of `action` were made.
    pub fn count(&self, action: &str) -> usize {
        self.calls().iter().filter(|c| c.action == action).count()
    }

    /// How many calls of the SDK operation `operation` were made (a batch call counts
    /// once, whatever its entries).
    pub fn operations(&self, operation: &str) -> usize {
        self.calls()
            .iter()
            .filter(|c| c.operation == operation)
            .count()
    }

    /// The calls of the SDK operation `operation`, in order.
    pub fn calls_of(&self, operation: &str) -> Vec<Call> {
        self.calls()
            .into_iter()
            .filter(|c| c.operation == operation)
            .collect()
    }

    /// The timeouts of every `ChangeMessageVisibility`, in order.
    pub fn visibility_timeouts(&self) -> Vec<i32> {
        self.calls()
            .into_iter()
            .filter_map(|c| c.visibility_timeout)
            .collect()
    }

    /// Panics when any call was made whose action the function does not declare.
    pub fn assert_declared(&self) {
        let undeclared = self.state.lock().unwrap().undeclared.clone();
        assert!(
            undeclared.is_empty(),
            "{} called AWS actions it does not declare (and so Terraform need not grant): {undeclared:?}",
            self.function
        );
    }
}

/// The IAM action an SDK operation needs. Mostly `<prefix>:<operation>`; the
/// exceptions are the operations IAM authorizes under another action's name.
pub fn iam_action(service: &str, operation: &str) -> String {
    let prefix = match service {
        "SQS" => "sqs",
        "S3" => "s3",
        "Textract" => "textract",
        "Secrets Manager" => "secretsmanager",
        "SESv2" | "SES" => "ses",
        other => {
            return format!(
                "{}:{operation}",
                other.to_ascii_lowercase().replace(' ', "")
            );
        }
    };
    let action = match (prefix, operation) {
        ("s3", "HeadObject") => "GetObject",
        ("s3", "ListObjects" | "ListObjectsV2" | "HeadBucket") => "ListBucket",
        ("sqs", "SendMessageBatch") => "SendMessage",
        ("sqs", "DeleteMessageBatch") => "DeleteMessage",
        ("sqs", "ChangeMessageVisibilityBatch") => "ChangeMessageVisibility",
        (_, operation) => operation,
    };
    format!("{prefix}:{action}")
}

#[derive(Debug)]
struct Recorder(AwsCalls);

impl Intercept for Recorder {
    fn name(&self) -> &'static str {
        "docflow-tests-aws-calls"
    }

    fn modify_before_serialization(
        &self,
        context: &mut BeforeSerializationInterceptorContextMut<'_>,
        _runtime_components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let refused = self.0.state.lock().unwrap().refused_bodies.clone();
        if refused.is_empty() {
            return Ok(());
        }
        if let Some(input) = context
            .input_mut()
            .downcast_mut::<aws_sdk_sqs::operation::send_message_batch::SendMessageBatchInput>(
        ) {
            for entry in input.entries.iter_mut().flatten() {
                if refused.contains(&entry.message_body) {
                    entry.delay_seconds = Some(901);
                }
            }
        }
        Ok(())
    }

    // After the operation's own configuration is applied (its Metadata is in the bag)
    // and before anything is sent.
    fn read_before_serialization(
        &self,
        context: &BeforeSerializationInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let metadata = cfg
            .load::<Metadata>()
            .ok_or("the SDK put no operation metadata in the config bag")?;
        let action = iam_action(metadata.service(), metadata.name());
        let input = context.input();
        let mut call = Call {
            action: action.clone(),
            operation: metadata.name().to_owned(),
            entries: 0,
            visibility_timeout: None,
            target: None,
        };
        if let Some(i) = input.downcast_ref::<
            aws_sdk_sqs::operation::change_message_visibility::ChangeMessageVisibilityInput,
        >() {
            call.visibility_timeout = i.visibility_timeout();
            call.target = i.queue_url().map(str::to_owned);
        } else if let Some(i) = input.downcast_ref::<
            aws_sdk_sqs::operation::change_message_visibility_batch::ChangeMessageVisibilityBatchInput,
        >() {
            call.entries = i.entries().len();
            call.target = i.queue_url().map(str::to_owned);
        } else if let Some(i) = input
            .downcast_ref::<aws_sdk_sqs::operation::send_message_batch::SendMessageBatchInput>()
        {
            call.entries = i.entries().len();
            call.target = i.queue_url().map(str::to_owned);
        } else if let Some(i) =
            input.downcast_ref::<aws_sdk_sqs::operation::send_message::SendMessageInput>()
        {
            call.target = i.queue_url().map(str::to_owned);
        } else if let Some(i) =
            input.downcast_ref::<aws_sdk_s3::operation::get_object::GetObjectInput>()
        {
            call.target = i.key().map(str::to_owned);
        } else if let Some(i) =
            input.downcast_ref::<aws_sdk_s3::operation::put_object::PutObjectInput>()
        {
            call.target = i.key().map(str::to_owned);
        }
        let declared = self.0.declared.contains(&action);
        let mut state = self.0.state.lock().unwrap();
        state.calls.push(call);
        if declared {
            Ok(())
        } else {
            state.undeclared.push(action.clone());
            Err(format!(
                "IAM check: {} does not declare {action} among the AWS actions it calls, so its role is not granted it",
                self.0.function
            )
            .into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_map_to_the_iam_actions_that_authorize_them() {
        assert_eq!(
            iam_action("SQS", "ChangeMessageVisibility"),
            "sqs:ChangeMessageVisibility"
        );
        assert_eq!(iam_action("SQS", "GetQueueUrl"), "sqs:GetQueueUrl");
        assert_eq!(iam_action("S3", "HeadObject"), "s3:GetObject");
        assert_eq!(iam_action("S3", "ListObjectsV2"), "s3:ListBucket");
        assert_eq!(
            iam_action("Secrets Manager", "GetSecretValue"),
            "secretsmanager:GetSecretValue"
        );
        assert_eq!(iam_action("SESv2", "SendEmail"), "ses:SendEmail");
        assert_eq!(
            iam_action("Textract", "StartDocumentTextDetection"),
            "textract:StartDocumentTextDetection"
        );
    }
}
