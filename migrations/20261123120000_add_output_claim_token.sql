-- Which claim holds a running output job (docs/document-output.md): every claim writes a
-- fresh token, every worker-side update matches it, so a worker whose job went stale and
-- was claimed by another delivery can no longer change that job.
ALTER TABLE document_output_job ADD COLUMN claim_token UUID;
