-- DATEV connection per tenant (through Maesn) and the DATEV-specific export audit.
CREATE TABLE tenant_datev_integration (
    id          UUID PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id   UUID NOT NULL UNIQUE REFERENCES tenant(id) ON DELETE CASCADE,
    status      TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'inactive', 'error')),
    -- Maesn's per-connection key, sent as X-ACCOUNT-KEY.
    account_key TEXT NOT NULL,
    company_id  TEXT NOT NULL,
    config      JSONB NOT NULL DEFAULT '{}',
    metadata    JSONB NOT NULL DEFAULT '{}',
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- One row per export attempt. Terminal statuses: succeeded, failed.
-- dispatch_job_id links the attempt to the output job that started it (NULL for
-- historical rows).
CREATE TABLE ap_datev_export_audit (
    id              UUID PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id       UUID NOT NULL REFERENCES tenant(id) ON DELETE CASCADE,
    document_id     UUID NOT NULL REFERENCES document(id) ON DELETE CASCADE,
    dispatch_job_id UUID REFERENCES document_output_job(id) ON DELETE SET NULL,
    status          TEXT NOT NULL DEFAULT 'requested'
                    CHECK (status IN ('requested', 'submitted', 'in_progress', 'succeeded', 'failed')),
    task_id         TEXT,
    request_payload JSONB,
    payload_hash    TEXT,
    error           TEXT,
    -- false when a failure may not be retried by a new export (e.g. DATEV rejected a duplicate).
    retryable       BOOLEAN NOT NULL DEFAULT true,
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at      TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE INDEX idx_ap_datev_export_audit_document ON ap_datev_export_audit (document_id, created_at DESC);
CREATE INDEX idx_ap_datev_export_audit_dispatch_job ON ap_datev_export_audit (dispatch_job_id)
    WHERE dispatch_job_id IS NOT NULL;
CREATE INDEX idx_ap_datev_export_audit_open_task ON ap_datev_export_audit (updated_at)
    WHERE task_id IS NOT NULL AND status IN ('submitted', 'in_progress');
