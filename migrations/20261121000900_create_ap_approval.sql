-- The app's AP approval steps: one row per step of a document. A document is approved
-- when it has steps and all of them are approved (see document_is_approved).
CREATE TABLE ap_approval (
    id          UUID PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id   UUID NOT NULL REFERENCES tenant(id) ON DELETE CASCADE,
    document_id UUID NOT NULL REFERENCES document(id) ON DELETE CASCADE,
    step        INTEGER NOT NULL CHECK (step >= 1),
    approver_id UUID REFERENCES identity(id) ON DELETE SET NULL,
    status      TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'rejected')),
    decided_at  TIMESTAMPTZ,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (document_id, step)
);

CREATE FUNCTION document_is_approved(doc UUID) RETURNS BOOLEAN
LANGUAGE sql STABLE AS $$
    SELECT count(*) > 0 AND bool_and(status = 'approved')
      FROM ap_approval
     WHERE document_id = doc
$$;
