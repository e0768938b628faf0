-- Every decision a person recorded on a DATEV export in doubt (`docflow export
-- resolve`), oldest first: a later decision supersedes an earlier one, and none is
-- forgotten. The audit's own `resolution`, `resolved_by`, `resolved_at` and
-- `resolution_note` are the latest of these rows.
--
-- `forced_reason`: `--absent` is refused while the export's asynchronous task may still
-- land in DATEV (the audit is younger than the resolve window); `--force "<reason>"`
-- overrides that, and the reason is kept here.
CREATE TABLE ap_datev_export_resolution (
    id            UUID PRIMARY KEY DEFAULT gen_random_uuid(),
    audit_id      UUID NOT NULL REFERENCES ap_datev_export_audit(id) ON DELETE CASCADE,
    decision      TEXT NOT NULL CHECK (decision IN ('absent', 'present')),
    decided_by    UUID REFERENCES identity(id) ON DELETE SET NULL,
    decided_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    note          TEXT NOT NULL CHECK (btrim(note) <> ''),
    forced_reason TEXT CHECK (forced_reason IS NULL OR btrim(forced_reason) <> ''),
    -- What the audit was before this decision (`failed`/`succeeded`, retryable or not).
    status_before    TEXT NOT NULL,
    retryable_before BOOLEAN NOT NULL
);

CREATE INDEX idx_ap_datev_export_resolution_audit
    ON ap_datev_export_resolution (audit_id, decided_at);

-- Decisions recorded before the history existed: the one each audit holds. Only an
-- audit in doubt (failed, not retryable) could be resolved, once.
INSERT INTO ap_datev_export_resolution
       (audit_id, decision, decided_by, decided_at, note, status_before, retryable_before)
SELECT id, resolution, resolved_by, resolved_at, resolution_note, 'failed', false
  FROM ap_datev_export_audit
 WHERE resolution IS NOT NULL;
