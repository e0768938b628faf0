//! Tests of the batch loop's parts: units of work (FIFO groups) and the invocation deadline.

use super::*;

const FIFO: &str = "arn:aws:sqs:eu-central-1:123456789012:docflow-ingestion.fifo";
const STANDARD: &str = "arn:aws:sqs:eu-central-1:123456789012:docflow-ingestion";

fn record(id: &str, queue: &str, group: Option<&str>) -> SqsMessage {
    let mut r = SqsMessage::default();
    r.message_id = Some(id.into());
    r.event_source_arn = Some(queue.into());
    if let Some(g) = group {
        r.attributes.insert("MessageGroupId".into(), g.into());
    }
    r
}

#[test]
fn fifo_records_are_grouped_in_order_and_standard_records_stand_alone() {
    let records = vec![
        record("a1", FIFO, Some("a")),
        record("s1", FIFO, None),
        record("b1", FIFO, Some("b")),
        record("a2", FIFO, Some("a")),
        record("s2", FIFO, None),
    ];
    assert_eq!(
        units_of_work(&records),
        vec![vec![0, 3], vec![1], vec![2], vec![4]]
    );
}

#[test]
fn group_ids_on_a_standard_queue_order_nothing() {
    // Fair queues: standard queues accept a MessageGroupId to share capacity between
    // tenants; their records stay independent.
    let records = vec![
        record("a1", STANDARD, Some("tenant-a")),
        record("a2", STANDARD, Some("tenant-a")),
        record("b1", STANDARD, Some("tenant-b")),
    ];
    assert_eq!(units_of_work(&records), vec![vec![0], vec![1], vec![2]]);
}

fn deadline_in(offset_ms: i64) -> lambda_runtime::Context {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let mut context = lambda_runtime::Context::default();
    context.deadline = (now + offset_ms) as u64;
    context
}

#[test]
fn the_margin_is_kept_before_a_real_deadline() {
    let left = remaining_time(&deadline_in(10_000), Duration::from_secs(2)).unwrap();
    assert!(
        left > Duration::from_secs(7) && left <= Duration::from_secs(8),
        "{left:?}"
    );
    let none_left = remaining_time(&deadline_in(1_500), Duration::from_secs(2));
    assert_eq!(
        none_left,
        Some(Duration::ZERO),
        "inside the margin: stop at once"
    );
}

#[test]
fn implausible_deadlines_from_local_emulators_are_ignored() {
    let mut context = lambda_runtime::Context::default();
    assert_eq!(
        remaining_time(&context, Duration::from_secs(2)),
        None,
        "absent"
    );
    context.deadline = 600_000; // cargo lambda watch: a duration, i.e. January 1970
    assert_eq!(remaining_time(&context, Duration::from_secs(2)), None);
    assert_eq!(
        remaining_time(&deadline_in(-5_000), Duration::from_secs(2)),
        None,
        "already past"
    );
    assert_eq!(
        remaining_time(&deadline_in(3_600_000), Duration::from_secs(2)),
        None,
        "an hour away"
    );
}
