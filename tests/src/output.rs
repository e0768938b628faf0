//! Fixtures of the document-output tests: a tenant with an approved invoice, its file
//! in a fresh S3 bucket, an active DATEV integration whose account key is in the
//! tenant's own secret, a wiremock server answering like Maesn, another answering like
//! a Slack webhook (the admin notifications), a fresh queue, and the function's `Deps`
//! wired to all of them.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use docflow::datev::{MaesnClient, MaesnConfig};
use docflow::notify::{Notifier, NotifySettings};
use docflow::output::Dispatcher;
use docflow::output::worker::{Backoff, WorkerSettings};
use docflow::retry::{ReceivePolicy, RetryPolicy};
use docflow::secrets::SecretStore;
use docflow::settings::Env;
use docflow::sqs::{BatchConfig, BatchRuntime, Heartbeat, Outcome};
use docflow_dev::local::{Completion, EventSourceMapping, QueuePair, QueueSpec};
use document_output::Deps;
use sqlx::PgPool;
use uuid::Uuid;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::{aws, fresh_bucket, fresh_queue, lambda_event, mapping, poll_n, unique};

pub const API_KEY: &str = "maesn-api-key-test";
pub const ACCOUNT_KEY: &str = "acct-key-4711";
pub const COMPANY_ID: &str = "company-42";
pub const FILE_NAME: &str = "RE-2026-0042.pdf";
/// PDF-looking bytes with a non-UTF-8 tail, so a test can find them in a multipart body.
pub const FILE_BYTES: &[u8] =
    b"%PDF-1.7\n% docflow test invoice RE-2026-0042\n\xde\xad\xbe\xef\x00\x01\x02%%EOF\n";

/// The organization, tenant, approver and the first document.
#[derive(Debug, Clone)]
pub struct Tenant {
    pub organization_id: Uuid,
    pub tenant_id: Uuid,
    pub approver_id: Uuid,
    pub document_id: Uuid,
}

/// Everything a document-output test runs against.
pub struct OutputEnv {
    pub pool: PgPool,
    pub sqs: aws_sdk_sqs::Client,
    pub s3: aws_sdk_s3::Client,
    pub secrets: aws_sdk_secretsmanager::Client,
    pub bucket: String,
    pub queue: QueuePair,
    pub esm: EventSourceMapping,
    pub maesn: MockServer,
    /// Answers like a Slack incoming webhook; every admin notice lands here.
    pub slack: MockServer,
    pub deps: Deps,
    pub dispatcher: Dispatcher,
    pub tenant: Tenant,
    /// `DATEV_CREDENTIALS_PREFIX` of this test (unique).
    pub credentials_prefix: String,
    /// The test's app secret (Maesn API key, Slack webhook).
    pub app_secret_id: String,
    /// The EMF lines the runtime wrote (instead of stdout).
    pub metrics: docflow::telemetry::metrics::Captured,
}

/// Knobs of [`setup`].
#[derive(Debug, Clone)]
pub struct Options {
    pub queue_visibility: Duration,
    pub heartbeat: Heartbeat,
    pub stale_running: Duration,
    pub maesn_timeout: Duration,
    pub maesn_connect_timeout: Duration,
    /// Another Maesn than the wiremock server (e.g. a listener that never accepts).
    pub maesn_base_url: Option<String>,
    pub backoff: Backoff,
    pub record_reserve: Duration,
    /// Base delay of the in-process retries.
    pub retry_base: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            // Terraform's for document output (6 × its 120 s timeout): what is left of
            // a receive's visibility covers the extension before work, so the runtime
            // makes no call, as in AWS. Tests of the extension itself set a shorter one.
            queue_visibility: Duration::from_secs(720),
            heartbeat: Heartbeat::default(),
            stale_running: Duration::from_secs(600),
            maesn_timeout: Duration::from_secs(10),
            maesn_connect_timeout: Duration::from_secs(2),
            maesn_base_url: None,
            backoff: Backoff {
                base: Duration::from_secs(1),
                max: Duration::from_secs(900),
            },
            record_reserve: Duration::from_secs(15),
            retry_base: Duration::from_millis(20),
        }
    }
}

/// The path of the Slack webhook on [`OutputEnv::slack`].
pub const SLACK_HOOK: &str = "/services/T000/B000/XXXX";

pub async fn setup(pool: PgPool) -> OutputEnv {
    setup_with(pool, Options::default()).await
}

pub async fn setup_with(pool: PgPool, options: Options) -> OutputEnv {
    let config = aws().await;
    let sqs = aws_sdk_sqs::Client::new(&config);
    let s3 = docflow::aws::s3_client(&config);
    let bucket = fresh_bucket(&s3).await;
    let queue = fresh_queue(
        &sqs,
        "document-output",
        QueueSpec {
            visibility_timeout: options.queue_visibility,
            ..QueueSpec::default()
        },
    )
    .await;
    let esm = mapping(&sqs, &queue.url).await;

    let maesn = MockServer::start().await;
    let slack = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(SLACK_HOOK))
        .respond_with(ResponseTemplate::new(200).set_body_string("ok"))
        .mount(&slack)
        .await;

    let secrets = aws_sdk_secretsmanager::Client::new(&config);
    let secret_id = unique("docflow-test/output");
    secrets
        .create_secret()
        .name(&secret_id)
        .secret_string(
            serde_json::json!({
                "maesn_api_key": API_KEY,
                "slack_webhook_url": format!("{}{SLACK_HOOK}", slack.uri()),
            })
            .to_string(),
        )
        .send()
        .await
        .expect("create secret");
    let store = SecretStore::new(secrets.clone(), &secret_id, Duration::from_secs(300));
    let notifier = Notifier::from_settings(
        &NotifySettings::from_env(&Env::new(|_| None)).expect("notify defaults"),
        &store,
        &config,
    )
    .await
    .expect("notifier");

    let credentials_prefix = format!("{}/", unique("docflow-test/datev"));
    let maesn_config = MaesnConfig {
        base_url: options
            .maesn_base_url
            .clone()
            .unwrap_or_else(|| maesn.uri()),
        timeout: options.maesn_timeout,
        connect_timeout: options.maesn_connect_timeout,
        credentials_prefix: credentials_prefix.clone(),
    };
    let client = MaesnClient::new(&maesn_config, Arc::new(store)).expect("maesn client");
    let (metrics_sink, metrics) = docflow::telemetry::metrics::MetricsSink::capture("docflow/test");
    let function_pool = crate::function_pool(&pool, "document-output");
    let deps = Deps {
        pool: function_pool.clone(),
        runtime: BatchRuntime::new(
            sqs.clone(),
            document_output::batch_config(BatchConfig {
                heartbeat: options.heartbeat,
                // As Terraform sets QUEUE_VISIBILITY_TIMEOUT_SECONDS from the queue.
                queue_visibility: Some(options.queue_visibility),
                ..BatchConfig::default()
            }),
        )
        .with_function(document_output::FUNCTION)
        .with_metrics(metrics_sink)
        .with_database_gate(function_pool),
        s3: s3.clone(),
        maesn: client,
        settings: WorkerSettings {
            stale_running: options.stale_running,
            retry: RetryPolicy::with_base_delay(options.retry_base),
            documents_bucket: bucket.clone(),
            backoff: options.backoff,
            maesn_timeout: options.maesn_timeout,
            record_reserve: options.record_reserve,
            max_file_bytes: docflow::output::worker::DEFAULT_MAX_FILE_BYTES,
        },
        notifier,
        receive_policy: ReceivePolicy {
            max_receive_count: 3,
        },
    };
    // A warm instance: its session checked and a connection open (see
    // `ingestion_harness::harness`).
    let _ = deps.runtime.check_database().await;
    let dispatcher = Dispatcher::new(sqs.clone(), &queue.url);
    let tenant = tenant(&pool).await;
    let env = OutputEnv {
        pool,
        sqs,
        s3,
        secrets,
        bucket,
        queue,
        esm,
        maesn,
        slack,
        deps,
        dispatcher,
        tenant,
        credentials_prefix,
        app_secret_id: secret_id,
        metrics,
    };
    env.put_account_key(env.tenant.tenant_id, ACCOUNT_KEY).await;
    env.put_file(env.tenant.document_id).await;
    env
}

async fn tenant(pool: &PgPool) -> Tenant {
    let organization_id: Uuid =
        sqlx::query_scalar("INSERT INTO organization (name) VALUES ('Acme Group') RETURNING id")
            .fetch_one(pool)
            .await
            .unwrap();
    let tenant_id: Uuid = sqlx::query_scalar(
        "INSERT INTO tenant (organization_id, name) VALUES ($1, 'Acme GmbH') RETURNING id",
    )
    .bind(organization_id)
    .fetch_one(pool)
    .await
    .unwrap();
    let approver_id: Uuid = sqlx::query_scalar(
        "INSERT INTO identity (organization_id, email, name) VALUES ($1, $2, 'Anna Approver') RETURNING id",
    )
    .bind(organization_id)
    .bind(format!("{}@acme.test", unique("anna")))
    .fetch_one(pool)
    .await
    .unwrap();
    // No account key in the database: it is in the tenant's secret (put_account_key).
    sqlx::query(
        r#"INSERT INTO tenant_datev_integration (tenant_id, status, company_id)
           VALUES ($1, 'active', $2)"#,
    )
    .bind(tenant_id)
    .bind(COMPANY_ID)
    .execute(pool)
    .await
    .unwrap();
    let document_id = insert_document(pool, tenant_id).await;
    Tenant {
        organization_id,
        tenant_id,
        approver_id,
        document_id,
    }
}

/// The extraction of the test invoice, as ingestion stores it in `structured_data`
/// ([`docflow::extract::Extraction::to_stored`]).
pub fn invoice_extraction() -> docflow::extract::Extraction {
    serde_json::from_value(serde_json::json!({
        "extraction_successful": true,
        "confidence": "high",
        "document_type": "invoice",
        "invoice_number": "RE-2026-0042",
        "invoice_date": "2026-01-15",
        "due_date": "2026-02-14",
        "supplier_name": "Lieferant GmbH",
        "supplier_vat_id": "DE123456789",
        "supplier_iban": "DE89370400440532013000",
        "currency": "EUR",
        "subtotal": 100.0,
        "vat_amount": 19.0,
        "total": 119.0,
        "po_reference": "PO-4711",
        "line_items": [{"description": "Druckerpapier A4", "quantity": 10, "unit_price": 10.0, "amount": 100.0}]
    }))
    .expect("the test invoice's extraction")
}

/// An invoice with extracted data and one approval step, still pending.
pub async fn insert_document(pool: &PgPool, tenant_id: Uuid) -> Uuid {
    let id = Uuid::new_v4();
    sqlx::query(
        r#"INSERT INTO document (id, tenant_id, type, file_path, file_name, mime_type, structured_data, version)
           VALUES ($1, $2, 'invoice', $3, $4, 'application/pdf', $5, 3)"#,
    )
    .bind(id)
    .bind(tenant_id)
    .bind(format!("documents/{id}.pdf"))
    .bind(FILE_NAME)
    .bind(invoice_extraction().to_stored())
    .execute(pool)
    .await
    .unwrap();
    sqlx::query("INSERT INTO ap_approval (tenant_id, document_id, step) VALUES ($1, $2, 1)")
        .bind(tenant_id)
        .bind(id)
        .execute(pool)
        .await
        .unwrap();
    id
}

impl OutputEnv {
    /// Creates the tenant's DATEV secret (`DATEV_CREDENTIALS_PREFIX` + tenant id).
    pub async fn put_account_key(&self, tenant_id: Uuid, account_key: &str) {
        self.secrets
            .create_secret()
            .name(format!("{}{tenant_id}", self.credentials_prefix))
            .secret_string(serde_json::json!({ "account_key": account_key }).to_string())
            .send()
            .await
            .expect("create the tenant's DATEV secret");
    }

    /// A Maesn client with this test's secrets, for another base URL and timeouts.
    pub fn maesn_client(
        &self,
        base_url: &str,
        timeout: Duration,
        connect: Duration,
    ) -> MaesnClient {
        let store = SecretStore::new(
            self.secrets.clone(),
            &self.app_secret_id,
            Duration::from_secs(300),
        );
        let config = MaesnConfig {
            base_url: base_url.to_owned(),
            timeout,
            connect_timeout: connect,
            credentials_prefix: self.credentials_prefix.clone(),
        };
        MaesnClient::new(&config, Arc::new(store)).expect("maesn client")
    }

    /// The admin notices Slack received, as the webhook's JSON bodies.
    pub async fn notices(&self) -> Vec<serde_json::Value> {
        self.slack
            .received_requests()
            .await
            .unwrap_or_default()
            .into_iter()
            .filter(|r| r.url.path() == SLACK_HOOK)
            .map(|r| serde_json::from_slice(&r.body).expect("Slack body is JSON"))
            .collect()
    }

    /// Runs the function's `process` on `event` through the shared batch runtime (as the
    /// handler does), with an invocation deadline `budget` from now (or none), and
    /// returns the batch response and each record's outcome by message id.
    pub async fn run(
        &self,
        event: SqsEvent,
        budget: Option<Duration>,
    ) -> (SqsBatchResponse, Vec<(String, Outcome)>) {
        let outcomes = Mutex::new(Vec::new());
        let response = self
            .deps
            .runtime
            .run(lambda_event(event, budget), |msg| {
                let outcomes = &outcomes;
                async move {
                    let id = msg.message_id.clone();
                    let outcome = document_output::process(&self.deps, msg).await;
                    outcomes.lock().unwrap().push((id, outcome.clone()));
                    outcome
                }
            })
            .await
            .expect("batch");
        (response, outcomes.into_inner().unwrap())
    }

    /// Receives one message, runs it (see [`OutputEnv::run`]), applies the partial
    /// batch response as Lambda would, and returns the record's outcome.
    pub async fn deliver_one(&self, budget: Option<Duration>) -> (Outcome, Completion) {
        let event = poll_n(&self.esm, 1).await;
        let (response, mut outcomes) = self.run(event.clone(), budget).await;
        let completion = self.esm.complete(&event, &response).await.unwrap();
        let (_, outcome) = outcomes
            .pop()
            .expect("the record reached an outcome before the invocation deadline");
        (outcome, completion)
    }

    pub async fn put_file(&self, document_id: Uuid) {
        self.s3
            .put_object()
            .bucket(&self.bucket)
            .key(format!("documents/{document_id}.pdf"))
            .body(FILE_BYTES.to_vec().into())
            .send()
            .await
            .expect("put document file");
    }

    /// Approves every step of the document (outside any other transaction).
    pub async fn approve(&self, document_id: Uuid) {
        sqlx::query(
            r#"UPDATE ap_approval SET status = 'approved', approver_id = $2, decided_at = now()
                WHERE document_id = $1"#,
        )
        .bind(document_id)
        .bind(self.tenant.approver_id)
        .execute(&self.pool)
        .await
        .unwrap();
    }

    /// A second approved document of the same tenant, with its file.
    pub async fn another_approved_document(&self) -> Uuid {
        let id = insert_document(&self.pool, self.tenant.tenant_id).await;
        self.put_file(id).await;
        self.approve(id).await;
        id
    }

    /// A job row inserted directly (the state a test starts from).
    pub async fn insert_job(&self, document_id: Uuid, status: &str) -> Uuid {
        sqlx::query_scalar(
            r#"INSERT INTO document_output_job (tenant_id, document_id, document_domain, trigger, status, document_version)
               VALUES ($1, $2, 'ap', 'manual', $3::document_output_status, 3) RETURNING id"#,
        )
        .bind(self.tenant.tenant_id)
        .bind(document_id)
        .bind(status)
        .fetch_one(&self.pool)
        .await
        .unwrap()
    }

    pub async fn job(&self, job_id: Uuid) -> JobRow {
        sqlx::query_as(
            r#"SELECT status::text AS status, last_error, started_at, completed_at, updated_at
                 FROM document_output_job WHERE id = $1"#,
        )
        .bind(job_id)
        .fetch_one(&self.pool)
        .await
        .unwrap()
    }

    pub async fn audits(&self, document_id: Uuid) -> Vec<AuditRow> {
        sqlx::query_as(
            r#"SELECT id, dispatch_job_id, status, task_id, error, retryable, payload_hash
                 FROM ap_datev_export_audit WHERE document_id = $1 ORDER BY created_at"#,
        )
        .bind(document_id)
        .fetch_all(&self.pool)
        .await
        .unwrap()
    }

    /// Sends `body` to the test queue.
    pub async fn send(&self, body: &str) -> String {
        crate::send(&self.sqs, &self.queue.url, body).await
    }

    /// Receives `n` messages, runs the function's handler on them as Lambda would, and
    /// applies the partial batch response.
    pub async fn deliver(&self, n: usize) -> (SqsEvent, SqsBatchResponse, Completion) {
        let event = poll_n(&self.esm, n).await;
        let response = self.invoke(event.clone()).await;
        let completion = self.esm.complete(&event, &response).await.unwrap();
        (event, response, completion)
    }

    pub async fn invoke(&self, event: SqsEvent) -> SqsBatchResponse {
        document_output::handler(&self.deps, lambda_event(event, None))
            .await
            .expect("handler")
    }

    /// Requests received by the Maesn mock for `method path`.
    pub async fn maesn_requests(&self, method: &str, path: &str) -> Vec<wiremock::Request> {
        self.maesn
            .received_requests()
            .await
            .unwrap_or_default()
            .into_iter()
            .filter(|r| r.method.as_str() == method && r.url.path() == path)
            .collect()
    }
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct JobRow {
    pub status: String,
    pub last_error: Option<String>,
    pub started_at: Option<chrono::DateTime<chrono::Utc>>,
    pub completed_at: Option<chrono::DateTime<chrono::Utc>>,
    pub updated_at: chrono::DateTime<chrono::Utc>,
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct AuditRow {
    pub id: Uuid,
    pub dispatch_job_id: Option<Uuid>,
    pub status: String,
    pub task_id: Option<String>,
    pub error: Option<String>,
    pub retryable: bool,
    pub payload_hash: Option<String>,
}

/// A sample event from `events/document-output/` with its body replaced and, when a
/// queue ARN is given, its source ARN.
pub fn sample_event(json: &str, body: &str, queue_arn: Option<&str>) -> SqsEvent {
    let mut event: SqsEvent =
        serde_json::from_str(json).expect("sample event is a Lambda SQS event");
    for record in &mut event.records {
        record.body = Some(body.to_owned());
        if let Some(arn) = queue_arn {
            record.event_source_arn = Some(arn.to_owned());
        }
    }
    event
}

/// A TCP address that never completes a connection: a listener with a backlog of 0
/// whose one queue slot is taken by a connection nobody accepts. The kernel drops the
/// SYNs of every further connect, so they hang until the client's connect timeout —
/// what a NAT or firewall black hole looks like, deterministic and offline.
pub struct HangingListener {
    pub url: String,
    _listener: tokio::net::TcpListener,
    _fillers: Vec<std::net::TcpStream>,
}

pub fn hanging_listener() -> HangingListener {
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket.bind("127.0.0.1:0".parse().unwrap()).expect("bind");
    let listener = socket.listen(0).expect("listen");
    let addr = listener.local_addr().unwrap();
    let mut fillers = Vec::new();
    for _ in 0..8 {
        match std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(300)) {
            Ok(stream) => fillers.push(stream),
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                return HangingListener {
                    url: format!("http://{addr}"),
                    _listener: listener,
                    _fillers: fillers,
                };
            }
            Err(e) => panic!("unexpected connect error while filling the backlog: {e}"),
        }
    }
    panic!("the listen backlog never filled; connects to it would not hang");
}

/// The parts of a `multipart/form-data` request, by name (the boundary from its
/// `content-type`).
pub fn multipart_parts(request: &wiremock::Request) -> Vec<(String, Vec<u8>)> {
    let content_type = request
        .headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let Some(boundary) = content_type.split("boundary=").nth(1) else {
        return Vec::new();
    };
    let delimiter = format!("--{}", boundary.trim_matches('"'));
    let body = &request.body;
    let mut parts = Vec::new();
    let positions: Vec<usize> = body
        .windows(delimiter.len())
        .enumerate()
        .filter(|(_, w)| *w == delimiter.as_bytes())
        .map(|(i, _)| i)
        .collect();
    for pair in positions.windows(2) {
        let part = &body[pair[0] + delimiter.len()..pair[1]];
        let Some(split) = part.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&part[..split]);
        let Some(name) = head
            .split("name=\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
        else {
            continue;
        };
        let mut content = &part[split + 4..];
        if content.ends_with(b"\r\n") {
            content = &content[..content.len() - 2];
        }
        parts.push((name.to_owned(), content.to_vec()));
    }
    parts
}

/// The `bookingProposal` part of a Maesn create request, as JSON.
pub fn booking_proposal_part(request: &wiremock::Request) -> serde_json::Value {
    let parts = multipart_parts(request);
    let (_, bytes) = parts
        .iter()
        .find(|(name, _)| name == "bookingProposal")
        .expect("a bookingProposal part");
    serde_json::from_slice(bytes).expect("the bookingProposal part is JSON")
}
