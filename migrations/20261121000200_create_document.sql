-- Documents: the uploaded file, its extracted data, its matching state (seed 000/001)
-- and the normalised fields the matching candidate search runs on.
CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE TYPE document_type AS ENUM ('invoice', 'purchase_order', 'delivery_note', 'credit_note', 'other');

CREATE TABLE document (
    id                 UUID PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id          UUID NOT NULL REFERENCES tenant(id) ON DELETE CASCADE,
    type               document_type NOT NULL DEFAULT 'other',
    -- S3 key of the original file: documents/{id}.{ext}
    file_path          TEXT NOT NULL,
    file_name          TEXT,
    mime_type          TEXT,
    structured_data    JSONB,
    needs_human_review BOOLEAN NOT NULL DEFAULT false,
    cluster_id         UUID,
    -- Bumped by the app on every user edit; output jobs record the version they exported.
    version            INTEGER NOT NULL DEFAULT 1,

    -- Matching state machine (seed 001): NULL → pending → in-progress → succeeded | failed.
    matching_status    TEXT CHECK (matching_status IN ('pending', 'in-progress', 'succeeded', 'failed')),
    matching_error     TEXT,
    matching_attempts  INTEGER NOT NULL DEFAULT 0,
    matching_failed_at TIMESTAMPTZ,

    -- Normalised fields written by matching before its transaction (safe to overwrite on retry).
    normalized_counterparty TEXT,
    normalized_vat_id       TEXT,
    normalized_iban         TEXT,
    normalized_references   TEXT[] NOT NULL DEFAULT '{}',
    searchable_text         TEXT,

    created_at         TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at         TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE INDEX idx_document_tenant_type ON document (tenant_id, type);
CREATE INDEX idx_document_cluster ON document (cluster_id) WHERE cluster_id IS NOT NULL;
CREATE INDEX idx_document_matching_status ON document (matching_status) WHERE matching_status IS NOT NULL;
CREATE INDEX idx_document_counterparty_trgm ON document USING gin (normalized_counterparty gin_trgm_ops);
CREATE INDEX idx_document_references ON document USING gin (normalized_references);
CREATE INDEX idx_document_vat_id ON document (tenant_id, normalized_vat_id) WHERE normalized_vat_id IS NOT NULL;
