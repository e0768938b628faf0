//! A local stand-in for the Maesn API (DATEV booking proposals), for `make demo` and the
//! demo test: an HTTP server that answers the two calls docflow makes the way Maesn does.
//!
//! - `POST /accounting/bookingProposals/async?companyId=…` with `X-API-KEY`,
//!   `X-ACCOUNT-KEY` and a multipart body (`bookingProposal` JSON, `bookingType`,
//!   `folderManagement` JSON, `files`): checks all of it (401 for a wrong or missing key,
//!   400 naming what is missing, 400 with `validationErrors` for a proposal that fails
//!   Maesn's documented schema: [`proposal_problems`]) and answers
//!   `{"meta": …, "data": {"taskId": …}}`.
//! - `GET /accounting/asyncTask/{taskId}?companyId=…`: the asynchronous task. It is
//!   `IN_PROGRESS` for the first `polls_until_done` polls, then `SUCCESS` — or `FAILED`
//!   with DATEV's message when the booking proposal repeats a document number already
//!   booked for that company (DATEV rejects duplicates). Unknown tasks: 404. A task of
//!   the `never_ending` fault stays `IN_PROGRESS` for ever.
//! - Booking proposals whose number is in `rate_limit_once` are first answered
//!   `429 Too Many Requests` (with `Retry-After`), once per company: a transient failure
//!   the caller must retry.
//! - `GET /_standin/exports`: what was booked (for the demo's summary and tests).

mod schema;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use serde::Serialize;
use serde_json::{Value, json};
use wiremock::matchers::{method, path, path_regex};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

pub use schema::{REQUIRED, proposal_problems};

/// How the stand-in behaves.
#[derive(Debug, Clone)]
pub struct Options {
    /// The `X-API-KEY` it accepts (the secret's `maesn_api_key`).
    pub api_key: String,
    /// Polls answered `IN_PROGRESS` before the task ends.
    pub polls_until_done: u32,
    /// Booking proposal numbers answered 429 the first time.
    pub rate_limit_once: HashSet<String>,
    /// Where the stand-in keeps what it was sent, so a restarted stand-in still knows
    /// the tasks of earlier runs (as Maesn would); `None`: in memory only.
    pub state_file: Option<std::path::PathBuf>,
    /// Seeded faults on booking proposals (the soak); `None`: Maesn behaves.
    pub faults: Option<Faults>,
}

/// Faults the stand-in injects into booking proposals that passed its checks, drawn
/// from a seeded generator (the draw order follows the order requests arrive).
#[derive(Debug, Clone, Default)]
pub struct Faults {
    pub seed: u64,
    /// Share answered `503 Service Unavailable` with Maesn's JSON envelope: nothing
    /// booked (a passing refusal).
    pub unavailable: f64,
    /// Share booked and then answered only after `late_by`: a caller whose timeout is
    /// shorter gives up after Maesn received the request (the export is in doubt).
    pub answer_late: f64,
    pub late_by: std::time::Duration,
    /// Share booked, then answered by a proxy's 503 (`server: envoy`, "upstream connect
    /// error", no JSON): in doubt.
    pub proxy_503: f64,
    /// Share booked, then answered `303 See Other`: in doubt.
    pub see_other: f64,
    /// Share booked, then answered 200 with the header [`CUT_BODY`]: a hostile front
    /// (`docflow_tests::hostile`) cuts the body off with a reset; in doubt.
    pub cut_body: f64,
    /// After [`StandIn::rotate_api_key`]: how long a request with the revoked key waits
    /// for its 401 (Maesn answering late in the caller's budget, "a 401 at 25 s").
    pub revoked_key_answer_after: std::time::Duration,
    /// Share booked and answered at once, whose task then never ends: every poll says
    /// `IN_PROGRESS` (a task Maesn or DATEV lost track of). Drawn from the same number
    /// as the others, so adding it changes no other fault of a seed's schedule.
    pub never_ending: f64,
}

/// The response header by which the stand-in asks a hostile front to cut the body off
/// (the same as `docflow_tests::hostile::CUT_BODY`).
pub const CUT_BODY: &str = "x-standin-fault";

/// What the stand-in did with one booking proposal request.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq, Eq)]
pub struct Attempt {
    /// The proposal's `id` (docflow sends the document id), when the body had one.
    pub document_id: Option<String>,
    /// `booked`, `booked-late` (booked, answer delayed), `booked-proxy-503`,
    /// `booked-see-other`, `booked-cut-off` (booked, then an answer that leaves the
    /// caller in doubt), `booked-never-ends` (booked, its task stays `IN_PROGRESS` for
    /// ever), `unavailable` (503), `refused-rotated` (a late 401 for a key revoked by a
    /// rotation), `refused-invalid` (400: the proposal fails Maesn's documented schema,
    /// [`proposal_problems`]), or `refused` (401/400/429).
    pub outcome: String,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            api_key: DEMO_API_KEY.to_owned(),
            polls_until_done: 1,
            rate_limit_once: HashSet::new(),
            state_file: None,
            faults: None,
        }
    }
}

/// The API key `docflow seed` puts into the local secret.
pub const DEMO_API_KEY: &str = "local-maesn-key";

/// One accepted booking proposal.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub struct Export {
    pub task_id: String,
    /// The proposal's `id`: docflow sends the document id.
    pub document_id: Option<String>,
    pub number: Option<String>,
    pub company_id: String,
    pub booking_type: String,
    pub file_name: Option<String>,
    pub file_bytes: usize,
    /// `SUCCESS` or `FAILED` once polled to the end, else `IN_PROGRESS`.
    pub status: String,
    /// The proposal's `totalGrossAmount` and `currency`: what DATEV received.
    #[serde(default)]
    pub total_gross_amount: Option<f64>,
    #[serde(default)]
    pub currency: Option<String>,
    /// The whole `bookingProposal` part, as received.
    #[serde(default)]
    pub proposal: Value,
}

#[derive(Debug, Default, Serialize, serde::Deserialize)]
struct State {
    exports: Vec<Export>,
    polls: HashMap<String, u32>,
    duplicates: HashSet<String>,
    booked: HashSet<(String, String)>,
    /// (company, number) pairs already answered with a rate limit.
    rate_limited: HashSet<(String, String)>,
    /// Tasks that never end (the `never_ending` fault).
    #[serde(default)]
    never_ending: HashSet<String>,
    refused: u32,
    /// Every booking proposal request, in arrival order.
    #[serde(default)]
    attempts: Vec<Attempt>,
    /// The fault generator's state (splitmix64).
    #[serde(skip)]
    fault_state: Option<u64>,
    /// The API key accepted since a rotation, and the one it revoked.
    #[serde(default)]
    rotated: Option<(String, String)>,
}

/// A running stand-in. Dropping it stops the server.
pub struct StandIn {
    server: MockServer,
    state: Arc<Mutex<State>>,
    api_key: String,
}

impl StandIn {
    /// Starts on a random local port.
    pub async fn start(options: Options) -> Self {
        Self::serve(MockServer::start().await, options).await
    }

    /// Starts on `addr` (e.g. `127.0.0.1:4599`).
    pub async fn start_on(addr: &str, options: Options) -> anyhow::Result<Self> {
        let listener = std::net::TcpListener::bind(addr)
            .map_err(|e| anyhow::anyhow!("cannot listen on {addr}: {e}"))?;
        let server = MockServer::builder().listener(listener).start().await;
        Ok(Self::serve(server, options).await)
    }

    async fn serve(server: MockServer, options: Options) -> Self {
        let loaded = options
            .state_file
            .as_ref()
            .and_then(|path| std::fs::read(path).ok())
            .and_then(|bytes| serde_json::from_slice::<State>(&bytes).ok())
            .unwrap_or_default();
        let state = Arc::new(Mutex::new(loaded));
        let api_key = options.api_key.clone();
        let options = Arc::new(options);
        Mock::given(method("POST"))
            .and(path("/accounting/bookingProposals/async"))
            .respond_with(Create {
                state: state.clone(),
                options: options.clone(),
            })
            .mount(&server)
            .await;
        Mock::given(method("GET"))
            .and(path_regex(r"^/accounting/asyncTask/[^/]+$"))
            .respond_with(Task {
                state: state.clone(),
                options,
            })
            .mount(&server)
            .await;
        let listing = state.clone();
        Mock::given(method("GET"))
            .and(path("/_standin/exports"))
            .respond_with(move |_: &Request| {
                let exports = listing.lock().expect("state").exports.clone();
                ResponseTemplate::new(200).set_body_json(exports)
            })
            .mount(&server)
            .await;
        StandIn {
            server,
            state,
            api_key,
        }
    }

    pub fn uri(&self) -> String {
        self.server.uri()
    }

    /// Accepted booking proposals, in order.
    pub fn exports(&self) -> Vec<Export> {
        self.state.lock().expect("state").exports.clone()
    }

    /// Requests answered with an error status (401/400/429, and injected 503s).
    pub fn refused(&self) -> u32 {
        self.state.lock().expect("state").refused
    }

    /// Rotates the API key: from now on only `new` is accepted, and a request with the
    /// old one is answered 401 (after `Faults::revoked_key_answer_after` for a booking
    /// proposal). Returns the revoked key.
    pub fn rotate_api_key(&self, new: &str) -> String {
        let mut state = self.state.lock().expect("state");
        let old = state
            .rotated
            .as_ref()
            .map(|(now, _)| now.clone())
            .unwrap_or_else(|| self.api_key.clone());
        state.rotated = Some((new.to_owned(), old.clone()));
        old
    }

    /// Every booking proposal request and what the stand-in did with it.
    pub fn attempts(&self) -> Vec<Attempt> {
        self.state.lock().expect("state").attempts.clone()
    }
}

fn meta() -> Value {
    json!({ "requestId": uuid::Uuid::new_v4(), "timestamp": chrono::Utc::now().to_rfc3339() })
}

fn error(status: u16, code: &str, message: &str) -> ResponseTemplate {
    ResponseTemplate::new(status)
        .set_body_json(json!({ "meta": meta(), "error": { "code": code, "message": message } }))
}

/// What the stand-in at `base_url` booked (`GET /_standin/exports`). Fails where the
/// Maesn there is not the stand-in.
pub async fn exports_at(base_url: &str) -> anyhow::Result<Vec<Export>> {
    let url = format!("{}/_standin/exports", base_url.trim_end_matches('/'));
    let response = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(5))
        .build()?
        .get(&url)
        .send()
        .await?
        .error_for_status()?;
    Ok(response.json().await?)
}

/// Maesn's 400 for a proposal that fails validation: "Client-side validation failed.
/// See validationErrors for details." (docs.maesn.com, Error handling v2), one entry per
/// problem.
fn invalid_proposal(problems: &[String]) -> ResponseTemplate {
    ResponseTemplate::new(400).set_body_json(json!({
        "meta": meta(),
        "error": {
            "code": "BAD_REQUEST",
            "message": "Client-side validation failed. See validationErrors for details.",
            "validationErrors": problems,
        }
    }))
}

/// An error answer (boxed: a `ResponseTemplate` is large).
type Refusal = Box<ResponseTemplate>;

fn refuse(status: u16, code: &str, message: &str) -> Refusal {
    Box::new(error(status, code, message))
}

fn query(request: &Request, name: &str) -> Option<String> {
    request
        .url
        .query_pairs()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
        .filter(|v| !v.is_empty())
}

fn header(request: &Request, name: &str) -> Option<String> {
    request
        .headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .filter(|v| !v.is_empty())
}

/// Checks the credentials both calls need; `Err` is the error response.
fn authorize(request: &Request, options: &Options, state: &State) -> Result<String, Refusal> {
    let accepted = state
        .rotated
        .as_ref()
        .map_or(options.api_key.as_str(), |(now, _)| now.as_str());
    if header(request, "x-api-key").as_deref() != Some(accepted) {
        return Err(refuse(401, "UNAUTHORIZED", "invalid or missing X-API-KEY"));
    }
    if header(request, "x-account-key").is_none() {
        return Err(refuse(401, "UNAUTHORIZED", "missing X-ACCOUNT-KEY"));
    }
    query(request, "companyId")
        .ok_or_else(|| refuse(400, "BAD_REQUEST", "query parameter companyId is required"))
}

struct Create {
    state: Arc<Mutex<State>>,
    options: Arc<Options>,
}

impl Respond for Create {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let mut state = self.state.lock().expect("state");
        let recorded = state.attempts.len();
        let response = self.create(&mut state, request);
        if response.is_err() {
            state.refused += 1;
        }
        if state.attempts.len() == recorded {
            // Refused before the proposal was read (credentials, body).
            state.attempts.push(Attempt {
                document_id: None,
                outcome: "refused".into(),
            });
        }
        save(&state, &self.options);
        response.unwrap_or_else(|e| *e)
    }
}

impl Create {
    fn create(&self, state: &mut State, request: &Request) -> Result<ResponseTemplate, Refusal> {
        let revoked = state
            .rotated
            .as_ref()
            .is_some_and(|(_, old)| header(request, "x-api-key").as_deref() == Some(old));
        if revoked {
            state.attempts.push(Attempt {
                document_id: None,
                outcome: "refused-rotated".into(),
            });
            let after = self
                .options
                .faults
                .as_ref()
                .map(|f| f.revoked_key_answer_after)
                .unwrap_or_default();
            return Err(Box::new(
                error(401, "UNAUTHORIZED", "the X-API-KEY was revoked").set_delay(after),
            ));
        }
        let company_id = authorize(request, &self.options, state)?;
        let content_type = header(request, "content-type").unwrap_or_default();
        let boundary = content_type
            .strip_prefix("multipart/form-data")
            .and_then(|rest| rest.split("boundary=").nth(1))
            .map(|b| b.trim_matches('"').to_owned())
            .ok_or_else(|| refuse(400, "BAD_REQUEST", "expected a multipart/form-data body"))?;
        let parts = multipart(&request.body, &boundary);
        let part = |name: &str| parts.iter().find(|p| p.name == name);
        let proposal: Value = part("bookingProposal")
            .and_then(|p| serde_json::from_slice(&p.body).ok())
            .filter(Value::is_object)
            .ok_or_else(|| {
                refuse(
                    400,
                    "BAD_REQUEST",
                    "part bookingProposal (a JSON object) is required",
                )
            })?;
        let problems = proposal_problems(&proposal);
        if !problems.is_empty() {
            state.attempts.push(Attempt {
                document_id: proposal
                    .get("id")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                outcome: "refused-invalid".into(),
            });
            return Err(Box::new(invalid_proposal(&problems)));
        }
        let booking_type = part("bookingType")
            .map(|p| String::from_utf8_lossy(&p.body).trim().to_owned())
            .filter(|t| !t.is_empty())
            .ok_or_else(|| refuse(400, "BAD_REQUEST", "part bookingType is required"))?;
        if part("folderManagement")
            .and_then(|p| serde_json::from_slice::<Value>(&p.body).ok())
            .is_none()
        {
            return Err(refuse(
                400,
                "BAD_REQUEST",
                "part folderManagement (JSON) is required",
            ));
        }
        let file =
            part("files").ok_or_else(|| refuse(400, "BAD_REQUEST", "part files is required"))?;
        if file.body.is_empty() {
            return Err(refuse(400, "BAD_REQUEST", "the uploaded file is empty"));
        }
        let number = proposal
            .get("number")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let document_id = proposal
            .get("id")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let attempt = |outcome: &str| Attempt {
            document_id: document_id.clone(),
            outcome: outcome.to_owned(),
        };
        if let Some(n) = &number
            && self.options.rate_limit_once.contains(n)
            && state.rate_limited.insert((company_id.clone(), n.clone()))
        {
            state.attempts.push(attempt("refused"));
            return Err(Box::new(
                error(429, "TOO_MANY_REQUESTS", "rate limit exceeded, retry later")
                    .insert_header("Retry-After", "1"),
            ));
        }
        let mut late = None;
        let mut after_booking: Option<&str> = None;
        let mut never_ends = false;
        if let Some(faults) = &self.options.faults {
            let draw = next_unit(state.fault_state.get_or_insert(faults.seed));
            if draw < faults.unavailable {
                state.attempts.push(attempt("unavailable"));
                return Err(refuse(
                    503,
                    "SERVICE_UNAVAILABLE",
                    "service temporarily unavailable",
                ));
            }
            let mut bound = faults.unavailable + faults.answer_late;
            if draw < bound {
                late = Some(faults.late_by);
            } else {
                for (share, kind) in [
                    (faults.proxy_503, "booked-proxy-503"),
                    (faults.see_other, "booked-see-other"),
                    (faults.cut_body, "booked-cut-off"),
                ] {
                    let lower = bound;
                    bound += share;
                    if draw >= lower && draw < bound {
                        after_booking = Some(kind);
                        break;
                    }
                }
                // The range after the others': adding it changes no other fault of a
                // seed's schedule.
                if after_booking.is_none() && draw >= bound && draw < bound + faults.never_ending {
                    never_ends = true;
                }
            }
        }
        state.attempts.push(attempt(match (late, after_booking) {
            (Some(_), _) => "booked-late",
            (None, Some(kind)) => kind,
            (None, None) if never_ends => "booked-never-ends",
            (None, None) => "booked",
        }));
        let task_id = uuid::Uuid::new_v4().to_string();
        if never_ends {
            state.never_ending.insert(task_id.clone());
        }
        if let Some(n) = &number
            && !state.booked.insert((company_id.clone(), n.clone()))
        {
            state.duplicates.insert(task_id.clone());
        }
        state.exports.push(Export {
            task_id: task_id.clone(),
            document_id,
            number,
            company_id,
            booking_type,
            file_name: file.file_name.clone(),
            file_bytes: file.body.len(),
            status: "IN_PROGRESS".into(),
            total_gross_amount: proposal.get("totalGrossAmount").and_then(Value::as_f64),
            currency: proposal
                .get("currency")
                .and_then(Value::as_str)
                .map(str::to_owned),
            proposal: proposal.clone(),
        });
        let response = ResponseTemplate::new(200)
            .set_body_json(json!({ "meta": meta(), "data": { "taskId": task_id } }));
        // Booked; what the caller sees may still leave it in doubt.
        Ok(match (late, after_booking) {
            (Some(delay), _) => response.set_delay(delay),
            (None, Some("booked-proxy-503")) => ResponseTemplate::new(503)
                .insert_header("server", "envoy")
                .set_body_string(
                    "upstream connect error or disconnect/reset before headers. reset reason: \
                     connection termination",
                ),
            (None, Some("booked-see-other")) => ResponseTemplate::new(303)
                .insert_header("location", format!("/accounting/asyncTask/{task_id}")),
            (None, Some(_)) => response.insert_header(CUT_BODY, "cut-body"),
            (None, None) => response,
        })
    }
}

struct Task {
    state: Arc<Mutex<State>>,
    options: Arc<Options>,
}

impl Respond for Task {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let authorized = {
            let state = self.state.lock().expect("state");
            authorize(request, &self.options, &state)
        };
        if let Err(response) = authorized {
            self.state.lock().expect("state").refused += 1;
            return *response;
        }
        let task_id = request
            .url
            .path()
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .to_owned();
        let mut state = self.state.lock().expect("state");
        let Some(index) = state.exports.iter().position(|e| e.task_id == task_id) else {
            return error(404, "NOT_FOUND", &format!("no task {task_id}"));
        };
        let never_ends = state.never_ending.contains(&task_id);
        let polls = state.polls.entry(task_id.clone()).or_default();
        *polls += 1;
        let (status, information) = if never_ends || *polls <= self.options.polls_until_done {
            ("IN_PROGRESS", vec![])
        } else if state.duplicates.contains(&task_id) {
            let number = state.exports[index].number.clone().unwrap_or_default();
            (
                "FAILED",
                vec![json!({
                    "type": "ERROR",
                    "message": format!("DATEV: Belegnummer {number} ist bereits vorhanden (Dublette)")
                })],
            )
        } else {
            ("SUCCESS", vec![])
        };
        state.exports[index].status = status.to_owned();
        save(&state, &self.options);
        ResponseTemplate::new(200).set_body_json(json!({
            "meta": meta(),
            "data": { "id": task_id, "type": "BOOKING_PROPOSAL", "status": status, "information": information }
        }))
    }
}

/// A uniform draw in [0, 1) from a splitmix64 state (no generator crate needed).
fn next_unit(state: &mut u64) -> f64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

/// Writes the state to the state file, if there is one (best effort: a stand-in that
/// cannot write only forgets earlier runs).
fn save(state: &State, options: &Options) {
    if let Some(path) = &options.state_file
        && let Ok(bytes) = serde_json::to_vec(state)
        && let Err(e) = std::fs::write(path, bytes)
    {
        tracing::warn!(path = %path.display(), error = %e, "could not save the stand-in's state");
    }
}

struct Part {
    name: String,
    file_name: Option<String>,
    body: Vec<u8>,
}

/// The parts of a multipart/form-data body (RFC 7578), enough for what reqwest sends.
fn multipart(body: &[u8], boundary: &str) -> Vec<Part> {
    let delimiter = format!("--{boundary}").into_bytes();
    let mut parts = Vec::new();
    let mut chunks = split(body, &delimiter).into_iter().skip(1);
    for chunk in chunks.by_ref() {
        if chunk.starts_with(b"--") {
            break;
        }
        let chunk = chunk.strip_prefix(b"\r\n").unwrap_or(chunk);
        let Some(split_at) = find(chunk, b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&chunk[..split_at]);
        let mut content = &chunk[split_at + 4..];
        content = content.strip_suffix(b"\r\n").unwrap_or(content);
        let disposition = head
            .lines()
            .find(|l| l.to_ascii_lowercase().starts_with("content-disposition"))
            .unwrap_or_default();
        let param = |key: &str| {
            disposition
                .split(';')
                .map(str::trim)
                .find_map(|p| p.strip_prefix(&format!("{key}=")))
                .map(|v| v.trim_matches('"').to_owned())
        };
        if let Some(name) = param("name") {
            parts.push(Part {
                name,
                file_name: param("filename"),
                body: content.to_vec(),
            });
        }
    }
    parts
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn split<'a>(mut body: &'a [u8], delimiter: &[u8]) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    while let Some(at) = find(body, delimiter) {
        out.push(&body[..at]);
        body = &body[at + delimiter.len()..];
    }
    out.push(body);
    out
}
