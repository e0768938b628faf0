-- A job Maesn asked to come back to later than a queue backoff can wait (a `Retry-After`
-- longer than the worker's longest backoff, up to a day): the job is `pending` with
-- `not_before`, its message is deleted, no claim takes it before then, and the sweeper
-- sends it again once `not_before` has passed (docs/document-output.md, docs/sweeper.md).
ALTER TABLE document_output_job ADD COLUMN not_before TIMESTAMPTZ;

-- The sweeper's look for parked jobs that are due.
CREATE INDEX idx_document_output_job_not_before ON document_output_job (not_before)
    WHERE status = 'pending' AND not_before IS NOT NULL;
