-- Ingestion runs (seed 003). `started_at` is the lease: NULL = never claimed, recent = live
-- elsewhere, older than the stale threshold = its worker died and it may be reclaimed.
-- `last_error` is docflow's addition: the ingestion row always says what happened last.
CREATE TABLE ingestion (
    id                          UUID PRIMARY KEY DEFAULT gen_random_uuid(),
    document_id                 UUID NOT NULL REFERENCES document(id) ON DELETE CASCADE,
    status                      TEXT NOT NULL DEFAULT 'in-progress'
                                CHECK (status IN ('in-progress', 'completed', 'failed')),
    started_at                  TIMESTAMPTZ,
    attempt_count               INTEGER NOT NULL DEFAULT 0,
    last_error                  TEXT,
    transcription_file_path     TEXT,
    transcription_quality_score DOUBLE PRECISION,
    transcription_page_count    INTEGER,
    preprocessed_file_path      TEXT,
    structured_data             JSONB,
    valid_structured_data       BOOLEAN,
    extraction_input_tokens     INTEGER,
    extraction_output_tokens    INTEGER,
    extraction_model            TEXT,
    created_at                  TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at                  TIMESTAMPTZ NOT NULL DEFAULT now(),
    completed_at                TIMESTAMPTZ
);

CREATE INDEX idx_ingestion_document ON ingestion (document_id, created_at DESC);
-- The sweeper's scan for stale leases.
CREATE INDEX idx_ingestion_in_progress ON ingestion (started_at) WHERE status = 'in-progress';
