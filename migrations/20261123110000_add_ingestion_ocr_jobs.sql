-- Textract's asynchronous jobs (multi-page scans) of an ingestion, by the S3 key each one
-- reads: {"documents/<id>.pdf": "<JobId>", "ingestions/<id>/preprocessed.pdf": "<JobId>"}.
-- A retry resumes polling the stored job instead of starting (and paying for) another.
ALTER TABLE ingestion ADD COLUMN ocr_jobs JSONB NOT NULL DEFAULT '{}'::jsonb;
