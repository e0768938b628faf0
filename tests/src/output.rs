//! Fixtures of the document-output tests: a tenant with an approved invoice, its file
//! in a fresh S3 bucket, an active DATEV integration, a wiremock server answering like
//! Maesn, a fresh queue, and the function's `Deps` wired to all of them.

use std::sync::Arc;
use std::time::Duration;

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use docflow::datev::{MaesnClient, MaesnConfig};
use docflow::local::{Completion, EventSourceMapping, QueuePair, QueueSpec};
use docflow::output::Dispatcher;
use docflow::output::worker::WorkerSettings;
use docflow::retry::RetryPolicy;
use docflow::secrets::SecretStore;
use docflow::sqs::{BatchConfig, BatchRuntime, Heartbeat};
use document_output::Deps;
use sqlx::PgPool;
use uuid::Uuid;
use wiremock::MockServer;

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
    pub bucket: String,
    pub queue: QueuePair,
    pub esm: EventSourceMapping,
    pub maesn: MockServer,
    pub deps: Deps,
    pub dispatcher: Dispatcher,
    pub tenant: Tenant,
}

/// Knobs of [`setup`].
#[derive(Debug, Clone, Copy)]
pub struct Options {
    pub queue_visibility: Duration,
    pub heartbeat: Heartbeat,
    pub stale_running: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            queue_visibility: Duration::from_secs(60),
            heartbeat: Heartbeat::default(),
            stale_running: Duration::from_secs(600),
        }
    }
}

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

    let secrets = aws_sdk_secretsmanager::Client::new(&config);
    let secret_id = unique("docflow-test/output");
    secrets
        .create_secret()
        .name(&secret_id)
        .secret_string(serde_json::json!({ "maesn_api_key": API_KEY }).to_string())
        .send()
        .await
        .expect("create secret");
    let store = SecretStore::new(secrets, &secret_id, Duration::from_secs(300));

    let maesn = MockServer::start().await;
    let client = MaesnClient::new(
        &MaesnConfig {
            base_url: maesn.uri(),
            timeout: Duration::from_secs(10),
        },
        Arc::new(store),
    )
    .expect("maesn client");
    let deps = Deps {
        pool: pool.clone(),
        runtime: BatchRuntime::new(
            sqs.clone(),
            BatchConfig {
                heartbeat: options.heartbeat,
                ..BatchConfig::default()
            },
        ),
        s3: s3.clone(),
        maesn: client,
        settings: WorkerSettings {
            stale_running: options.stale_running,
            retry: RetryPolicy::with_base_delay(Duration::from_millis(20)),
            documents_bucket: bucket.clone(),
        },
    };
    let dispatcher = Dispatcher::new(sqs.clone(), &queue.url);
    let tenant = tenant(&pool).await;
    let env = OutputEnv {
        pool,
        sqs,
        s3,
        bucket,
        queue,
        esm,
        maesn,
        deps,
        dispatcher,
        tenant,
    };
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
    sqlx::query(
        r#"INSERT INTO tenant_datev_integration (tenant_id, status, account_key, company_id)
           VALUES ($1, 'active', $2, $3)"#,
    )
    .bind(tenant_id)
    .bind(ACCOUNT_KEY)
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
    .bind(serde_json::json!({
        "invoice_number": "RE-2026-0042",
        "invoice_date": "2026-01-15",
        "vendor_name": "Lieferant GmbH",
        "total_gross_amount": 119.0,
        "currency": "EUR"
    }))
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
            r#"SELECT id, dispatch_job_id, status, task_id, error
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
