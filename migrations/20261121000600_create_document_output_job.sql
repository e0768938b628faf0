-- Output intent and worker execution state (seed 002). No target column on purpose:
-- a job means "dispatch this document's outputs".
CREATE TYPE document_output_domain AS ENUM ('ap', 'ar');
CREATE TYPE document_output_trigger AS ENUM ('approval_completed', 'manual');
CREATE TYPE document_output_status AS ENUM ('pending', 'running', 'dispatched', 'failed');

CREATE TABLE document_output_job (
    id               UUID PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id        UUID NOT NULL REFERENCES tenant(id) ON DELETE CASCADE,
    document_id      UUID NOT NULL REFERENCES document(id) ON DELETE CASCADE,
    document_domain  document_output_domain NOT NULL,
    trigger          document_output_trigger NOT NULL,
    status           document_output_status NOT NULL DEFAULT 'pending',
    document_version INTEGER,
    requested_by     UUID REFERENCES identity(id) ON DELETE SET NULL,
    started_at       TIMESTAMPTZ,
    completed_at     TIMESTAMPTZ,
    last_error       TEXT,
    created_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at       TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE INDEX idx_document_output_job_document ON document_output_job (document_id, created_at DESC);
CREATE INDEX idx_document_output_job_tenant ON document_output_job (tenant_id, created_at DESC);
CREATE INDEX idx_document_output_job_status ON document_output_job (status, created_at);
-- One job in flight per document: rejects a second manual re-export and races with
-- the final-approval enqueue.
CREATE UNIQUE INDEX idx_document_output_job_document_active
    ON document_output_job (document_id) WHERE status IN ('pending', 'running');
