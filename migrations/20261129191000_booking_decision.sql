-- A person's decision that a document may be booked in DATEV although the invoice it is
-- paired with as a corrected invoice and the invoice it replaces (a `replaces` match,
-- docs/matching.md "Corrected invoices") already has an export: both belong in DATEV
-- (docs/document-output.md "Corrected invoices"). Recorded by
-- `docflow export allow-both <document> --by <identity> --note <why>`; document output
-- reads it. One decision per document; a later one replaces it.
CREATE TABLE document_booking_decision (
    document_id UUID PRIMARY KEY REFERENCES document(id) ON DELETE CASCADE,
    tenant_id   UUID NOT NULL REFERENCES tenant(id) ON DELETE CASCADE,
    decided_by  UUID REFERENCES identity(id) ON DELETE SET NULL,
    decided_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    note        TEXT NOT NULL CHECK (btrim(note) <> '')
);
