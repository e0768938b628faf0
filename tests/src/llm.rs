//! Local stand-ins for the LLM APIs: responses shaped exactly like Anthropic's Messages
//! API, for wiremock.

use serde_json::json;
use wiremock::ResponseTemplate;

/// The model name the stand-in reports.
pub const MODEL: &str = "claude-test-1";

/// A Messages API success whose only content block is `text`
/// (usage: 1234 input, 321 output tokens).
pub fn anthropic_text(text: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "id": "msg_01XYZ",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 1234, "output_tokens": 321}
    }))
}

/// A Messages API error: `kind` is e.g. `rate_limit_error` (429), `authentication_error`
/// (401), `invalid_request_error` (400), `api_error` (500), `overloaded_error` (529).
pub fn anthropic_error(status: u16, kind: &str, message: &str) -> ResponseTemplate {
    ResponseTemplate::new(status).set_body_json(json!({
        "type": "error",
        "error": {"type": kind, "message": message}
    }))
}
