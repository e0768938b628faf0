//! The database side of the evaluation: the set inserted, and run through a real
//! queue to the matching function.

use super::*;

/// Inserts the set's tenants (under one new organization) and documents, every document
/// `pending` as ingestion leaves it. Returns the document ids, indexed like
/// `set.documents`.
pub async fn insert(pool: &PgPool, set: &EvalSet) -> anyhow::Result<Vec<Uuid>> {
    let organization: Uuid =
        sqlx::query_scalar(r#"INSERT INTO organization (name) VALUES ($1) RETURNING id"#)
            .bind(format!("matching eval, seed {}", set.seed))
            .fetch_one(pool)
            .await
            .context("failed to create the eval organization")?;
    let mut tenants = Vec::new();
    for name in &set.tenants {
        let id: Uuid = sqlx::query_scalar(
            r#"INSERT INTO tenant (organization_id, name) VALUES ($1, $2) RETURNING id"#,
        )
        .bind(organization)
        .bind(name)
        .fetch_one(pool)
        .await
        .context("failed to create an eval tenant")?;
        tenants.push(id);
    }
    let tenant_ids: Vec<Uuid> = set.documents.iter().map(|d| tenants[d.tenant]).collect();
    let types: Vec<DocumentType> = set.documents.iter().map(|d| d.doc_type).collect();
    // A document re-extracted during the run starts with its first, wrong extraction.
    let mut data: Vec<Value> = set.documents.iter().map(|d| d.data.clone()).collect();
    for (index, first) in &set.re_extractions {
        data[*index] = first.clone();
    }
    // The label travels in the file path, so a kept evaluation database can be queried
    // for wrong links (`split_part(file_path, '/', 3)` is the true cluster).
    let paths: Vec<String> = set
        .documents
        .iter()
        .enumerate()
        .map(|(i, d)| format!("eval/{:?}/{}/{i}.json", d.scenario, d.case))
        .collect();
    let ids: Vec<Uuid> = sqlx::query_scalar(
        r#"
        INSERT INTO document (tenant_id, type, file_path, structured_data, matching_status)
        SELECT t, ty, p, sd, 'pending'
          FROM unnest($1::uuid[], $2::document_type[], $3::jsonb[], $4::text[]) WITH ORDINALITY AS v(t, ty, sd, p, n)
         ORDER BY n
        RETURNING id
        "#,
    )
    .bind(&tenant_ids)
    .bind(&types)
    .bind(&data)
    .bind(&paths)
    .fetch_all(pool)
    .await
    .context("failed to insert the eval documents")?;
    anyhow::ensure!(
        ids.len() == set.documents.len(),
        "not every document was inserted"
    );
    Ok(ids)
}

/// What the queue run did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunStats {
    pub batches: usize,
    /// Documents that did not reach `succeeded` or `failed`.
    pub unfinished: usize,
    pub failed: usize,
    /// The first few unfinished or failed documents as `id status attempts: error`:
    /// what a run that did not finish has to go on.
    pub not_done: Vec<String>,
}

/// Sends the ids in the set's arrival order to the queue of `mapping` (as it drains, a
/// few batches ahead) and lets `pollers` local event-source mappings (each a concurrent "Lambda instance" running
/// `handler` on batches of up to 10 records, themselves run concurrently) drain it, until
/// every document finished matching or nothing moved for `stall`.
pub async fn run_through_queue<H, Fut>(
    pool: &PgPool,
    mapping: &EventSourceMapping,
    set: &EvalSet,
    ids: &[Uuid],
    pollers: usize,
    stall: Duration,
    handler: H,
) -> anyhow::Result<RunStats>
where
    H: Fn(LambdaEvent<SqsEvent>) -> Fut,
    Fut: Future<Output = Result<SqsBatchResponse, lambda_runtime::Error>>,
{
    let order: Vec<Uuid> = set.arrival.iter().map(|&i| ids[i]).collect();
    // The queue is fed in arrival order as it drains, a few batches ahead of the
    // pollers: moto's ReceiveMessage slows down with the number of queued messages.
    let window = 20 * pollers.max(1);
    let sent = tokio::sync::Mutex::new(0usize);
    let total = ids.len() as i64;
    let finished = || async {
        sqlx::query_scalar::<_, i64>(
            r#"SELECT count(*) FROM document WHERE id = ANY($1) AND matching_status IN ('succeeded', 'failed')"#,
        )
        .bind(ids)
        .fetch_one(pool)
        .await
        .context("failed to count finished documents")
    };
    let batches = std::sync::atomic::AtomicUsize::new(0);
    let done = std::sync::atomic::AtomicBool::new(false);
    // Re-extractions not yet made: the document id and its true data.
    let re_extract = tokio::sync::Mutex::new(
        set.re_extractions
            .iter()
            .map(|(i, _)| (ids[*i], set.documents[*i].data.clone()))
            .collect::<Vec<(Uuid, Value)>>(),
    );
    let (handler, batches_ref, done_ref, finished) = (&handler, &batches, &done, &finished);
    let (sent_ref, order_ref, re_extract_ref) = (&sent, &order, &re_extract);
    let poller = move |_: usize| async move {
        let (batches, done) = (batches_ref, done_ref);
        let mut last_progress = tokio::time::Instant::now();
        let mut last_finished = -1;
        let mut now_finished = 0;
        while !done.load(std::sync::atomic::Ordering::Relaxed) {
            {
                let mut sent = sent_ref.lock().await;
                while *sent < order_ref.len() && *sent < now_finished as usize + window {
                    let chunk = &order_ref[*sent..(*sent + 10).min(order_ref.len())];
                    send_batch(mapping, chunk).await?;
                    *sent += chunk.len();
                }
            }
            re_extract_claimed(pool, mapping, re_extract_ref).await?;
            if let Some(event) = mapping.poll().await? {
                let mut context = Context::default();
                context.request_id = Uuid::new_v4().to_string();
                let response = handler(LambdaEvent::new(event.clone(), context))
                    .await
                    .map_err(|e| anyhow::anyhow!("the handler failed the whole batch: {e}"))?;
                mapping.complete(&event, &response).await?;
                batches.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            now_finished = finished().await?;
            if now_finished >= total && re_extract_ref.lock().await.is_empty() {
                done.store(true, std::sync::atomic::Ordering::Relaxed);
            } else if now_finished != last_finished {
                last_finished = now_finished;
                last_progress = tokio::time::Instant::now();
            } else if last_progress.elapsed() > stall {
                tracing::warn!(finished = now_finished, total, "eval stalled; stopping");
                done.store(true, std::sync::atomic::Ordering::Relaxed);
            }
        }
        anyhow::Ok(())
    };
    let results = futures::future::join_all((0..pollers.max(1)).map(poller)).await;
    for result in results {
        result?;
    }
    let (unfinished, failed): (i64, i64) = sqlx::query_as(
        r#"
        SELECT count(*) FILTER (WHERE matching_status IS DISTINCT FROM 'succeeded' AND matching_status IS DISTINCT FROM 'failed'),
               count(*) FILTER (WHERE matching_status = 'failed')
          FROM document WHERE id = ANY($1)
        "#,
    )
    .bind(ids)
    .fetch_one(pool)
    .await
    .context("failed to count the outcome")?;
    let not_done: Vec<(Uuid, Option<String>, i32, Option<String>)> = sqlx::query_as(
        r#"
        SELECT id, matching_status, matching_attempts, matching_error
          FROM document
         WHERE id = ANY($1) AND matching_status IS DISTINCT FROM 'succeeded'
         ORDER BY updated_at
         LIMIT 10
        "#,
    )
    .bind(ids)
    .fetch_all(pool)
    .await
    .context("failed to read the unfinished documents")?;
    Ok(RunStats {
        batches: batches.into_inner(),
        unfinished: unfinished as usize,
        failed: failed as usize,
        not_done: not_done
            .into_iter()
            .map(|(id, status, attempts, error)| {
                format!(
                    "{id} {} after {attempts} attempt(s): {}",
                    status.as_deref().unwrap_or("no status"),
                    error.as_deref().unwrap_or("no error recorded")
                )
            })
            .collect(),
    })
}

/// Re-extracts, as ingestion would, the documents of `pending` whose first extraction a
/// run has claimed (or finished): the true data, `pending` again, a new message. A run
/// still deciding on the first extraction is then stale (docs/matching.md, *Stale runs*).
pub(super) async fn re_extract_claimed(
    pool: &PgPool,
    mapping: &EventSourceMapping,
    pending: &tokio::sync::Mutex<Vec<(Uuid, Value)>>,
) -> anyhow::Result<()> {
    let mut pending = pending.lock().await;
    if pending.is_empty() {
        return Ok(());
    }
    let ids: Vec<Uuid> = pending.iter().map(|(id, _)| *id).collect();
    let claimed: Vec<Uuid> = sqlx::query_scalar(
        r#"SELECT id FROM document WHERE id = ANY($1) AND matching_status IN ('in-progress', 'succeeded', 'failed')"#,
    )
    .bind(&ids)
    .fetch_all(pool)
    .await
    .context("failed to read the documents to re-extract")?;
    let mut due = Vec::new();
    pending.retain(|(id, data)| {
        if claimed.contains(id) {
            due.push((*id, data.clone()));
            false
        } else {
            true
        }
    });
    drop(pending);
    for (id, data) in due {
        sqlx::query(
            r#"UPDATE document SET structured_data = $2, matching_status = 'pending', updated_at = now() WHERE id = $1"#,
        )
        .bind(id)
        .bind(&data)
        .execute(pool)
        .await
        .context("failed to re-extract an eval document")?;
        send_batch(mapping, &[id]).await?;
    }
    Ok(())
}

pub(super) async fn send_batch(mapping: &EventSourceMapping, ids: &[Uuid]) -> anyhow::Result<()> {
    use aws_sdk_sqs::types::SendMessageBatchRequestEntry;
    let entries = ids
        .iter()
        .enumerate()
        .map(|(i, id)| {
            SendMessageBatchRequestEntry::builder()
                .id(format!("m{i}"))
                .message_body(id.to_string())
                .build()
                .context("SendMessageBatch entry")
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let out = mapping
        .sqs
        .send_message_batch()
        .queue_url(&mapping.queue_url)
        .set_entries(Some(entries))
        .send()
        .await
        .context("failed to send the eval documents to the queue")?;
    anyhow::ensure!(
        out.failed.is_empty(),
        "SendMessageBatch failed for {} entries",
        out.failed.len()
    );
    Ok(())
}
