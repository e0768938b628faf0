//! Maesn's answers read: the `{meta, data}` envelope of a 2xx, the status and body of
//! an error, a task id salvaged from a 2xx cut short, and `Retry-After`. Pure functions
//! of the status, body and headers (what the fuzz targets call).

use std::time::Duration;

use serde::Deserialize;

use super::{DatevError, TaskState, said_by_maesn};

#[derive(Deserialize)]
struct Envelope<T> {
    data: Option<T>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CreatedTask {
    task_id: Option<String>,
}

#[derive(Deserialize)]
struct TaskInfo {
    status: Option<String>,
    #[serde(default)]
    information: Vec<Information>,
}

#[derive(Deserialize)]
struct Information {
    message: Option<String>,
}

pub(super) const CREATE: &str = "POST /accounting/bookingProposals/async";
pub(super) const TASK: &str = "GET /accounting/asyncTask";

/// The most of a broken answer's body an audit keeps.
pub const KEPT_BODY_CHARS: usize = 4096;

/// A task id in an answer that could not be read as a whole: the string value of the
/// first `"taskId"` member, when its closing quote arrived and it holds no escape or
/// control character. What the sweeper then polls either is Maesn's task or is unknown
/// to Maesn (which ends it as "check DATEV"), so a wrong salvage cannot book anything.
pub fn salvage_task_id(body: &str) -> Option<String> {
    const MEMBER: &str = "\"taskId\"";
    let rest = &body[body.find(MEMBER)? + MEMBER.len()..];
    let rest = rest.trim_start().strip_prefix(':')?.trim_start();
    let rest = rest.strip_prefix('"')?;
    let id = &rest[..rest.find('"')?];
    let usable = !id.is_empty()
        && id.len() <= 200
        && !id.contains('\\')
        && !id.chars().any(char::is_control);
    usable.then(|| id.to_owned())
}

/// The booking proposal's answer when it was a 2xx that could not be read. A task id is
/// salvaged only from a body that is not whole JSON (cut off, or garbled): JSON of
/// another shape than Maesn's envelope is an answer someone else composed, and its
/// `taskId` proves nothing.
pub(super) fn broken_answer(reason: String, body: &str) -> DatevError {
    let whole_json = serde_json::from_str::<serde_json::Value>(body).is_ok();
    DatevError::BrokenAnswer {
        operation: CREATE,
        reason,
        body: body.chars().take(KEPT_BODY_CHARS).collect(),
        task_id: if whole_json {
            None
        } else {
            salvage_task_id(body)
        },
    }
}

/// Reads one Maesn answer (status and body, the `Retry-After` already parsed): a
/// non-2xx status is [`DatevError::Status`] (body cut to 500 characters), a 2xx body that
/// is not the `{meta, data}` envelope of `T` is [`DatevError::UnexpectedBody`].
fn read_answer<T: for<'de> Deserialize<'de>>(
    operation: &'static str,
    status: u16,
    body: &str,
    retry_after: Option<Duration>,
    server: Option<&str>,
) -> Result<T, DatevError> {
    if !(200..300).contains(&status) {
        return Err(DatevError::Status {
            operation,
            status,
            body: body.chars().take(500).collect(),
            retry_after,
            from_maesn: said_by_maesn(body, server),
        });
    }
    let envelope: Envelope<T> =
        serde_json::from_str(body).map_err(|e| DatevError::UnexpectedBody {
            operation,
            reason: format!("not the JSON envelope {{meta, data}}: {e}"),
        })?;
    envelope.data.ok_or(DatevError::UnexpectedBody {
        operation,
        reason: "no `data` object".into(),
    })
}

/// Maesn's answer to `POST /accounting/bookingProposals/async`: the task id, or why the
/// answer is not one. Pure (what the fuzz targets call; no `server` header).
pub fn read_created_task(
    status: u16,
    body: &str,
    retry_after: Option<Duration>,
) -> Result<String, DatevError> {
    read_created_task_from(status, body, retry_after, None)
}

/// [`read_created_task`] with the answer's `server` header (a proxy's mark).
pub fn read_created_task_from(
    status: u16,
    body: &str,
    retry_after: Option<Duration>,
    server: Option<&str>,
) -> Result<String, DatevError> {
    let created: CreatedTask = read_answer(CREATE, status, body, retry_after, server)?;
    created
        .task_id
        .filter(|id| !id.trim().is_empty())
        .ok_or(DatevError::UnexpectedBody {
            operation: CREATE,
            reason: "no `data.taskId`".into(),
        })
}

/// Maesn's answer to `GET /accounting/asyncTask/{id}`: the task's state, or why the answer
/// is not one (an unknown status is [`DatevError::UnexpectedBody`]). Pure.
pub fn read_task_state(
    status: u16,
    body: &str,
    retry_after: Option<Duration>,
) -> Result<TaskState, DatevError> {
    let info: TaskInfo = read_answer(TASK, status, body, retry_after, None)?;
    let information = info
        .information
        .into_iter()
        .filter_map(|i| i.message)
        .collect();
    match info.status.as_deref() {
        Some("SUCCESS" | "FINISHED") => Ok(TaskState::Succeeded { information }),
        Some("PARTIAL_SUCCESS") => Ok(TaskState::PartiallySucceeded { information }),
        Some("FAILED" | "CANCELLED_SUCCESSFULLY") => Ok(TaskState::Failed { information }),
        Some("OPEN" | "IN_PROGRESS" | "CANCEL_FAILED") => Ok(TaskState::InProgress),
        other => Err(DatevError::UnexpectedBody {
            operation: TASK,
            reason: format!("unknown task status {other:?}"),
        }),
    }
}

/// `Retry-After` as delay-seconds or an HTTP date (a date in the past is no wait).
pub(super) fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    parse_retry_after(headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?)
}

/// A `Retry-After` value: delay-seconds or an HTTP date (a date in the past is no wait);
/// `None` when it is neither.
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    Some(
        (at.with_timezone(&chrono::Utc) - chrono::Utc::now())
            .to_std()
            .unwrap_or(Duration::ZERO),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_id_is_salvaged_only_when_it_arrived_whole() {
        assert_eq!(
            salvage_task_id(r#"{"meta":{},"data":{"taskId" : "8f1c-42","sta"#).as_deref(),
            Some("8f1c-42")
        );
        assert_eq!(
            salvage_task_id(r#"{"meta":{},"data":{"taskId":"8f1c"#),
            None
        );
        assert_eq!(salvage_task_id(r#"{"data":{"taskId":""}}"#), None);
        assert_eq!(salvage_task_id(r#"{"data":{"taskId":"a\"b"}}"#), None);
        assert_eq!(salvage_task_id("<html>502</html>"), None);
        let kept = |body: &str| match broken_answer("x".into(), body) {
            DatevError::BrokenAnswer { task_id, .. } => task_id,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            kept(r#"{"data":{"taskId":"t-1"},"me"#).as_deref(),
            Some("t-1")
        );
        assert_eq!(
            kept(r#"{"taskId": "t-1"}"#),
            None,
            "whole JSON of another shape is someone else's answer"
        );
    }

    #[test]
    fn retry_after_is_read_as_seconds_or_as_an_http_date() {
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(reqwest::header::RETRY_AFTER, "120".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(120)));
        let at = chrono::Utc::now() + chrono::Duration::seconds(300);
        headers.insert(
            reqwest::header::RETRY_AFTER,
            at.format("%a, %d %b %Y %H:%M:%S GMT")
                .to_string()
                .parse()
                .unwrap(),
        );
        let wait = retry_after(&headers).unwrap();
        assert!(
            wait > Duration::from_secs(290) && wait <= Duration::from_secs(300),
            "{wait:?}"
        );
        headers.insert(
            reqwest::header::RETRY_AFTER,
            "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap(),
        );
        assert_eq!(retry_after(&headers), Some(Duration::ZERO));
        headers.insert(reqwest::header::RETRY_AFTER, "soon".parse().unwrap());
        assert_eq!(retry_after(&headers), None);
    }
}
