-- Whether the admins were told about a failed output job or a failed DATEV task
-- (docs/sweeper.md, "Notices"). A notice that could not be delivered when the failure
-- happened (the invocation ran out of time, Slack was down, the poll that found it was
-- cut short) is delivered by a later sweep instead of being lost.
ALTER TABLE document_output_job
    ADD COLUMN admins_told_at    TIMESTAMPTZ,
    ADD COLUMN notice_claimed_at TIMESTAMPTZ;

ALTER TABLE ap_datev_export_audit
    -- Set by the task poll when it fails the audit; the worker's own failures are told
    -- through their output job.
    ADD COLUMN notice_due        BOOLEAN NOT NULL DEFAULT false,
    ADD COLUMN admins_told_at    TIMESTAMPTZ,
    ADD COLUMN notice_claimed_at TIMESTAMPTZ;

-- Failures from before this migration were handled when they happened.
UPDATE document_output_job SET admins_told_at = COALESCE(completed_at, updated_at)
 WHERE status = 'failed';

CREATE INDEX idx_document_output_job_untold ON document_output_job (completed_at)
    WHERE status = 'failed' AND admins_told_at IS NULL;
CREATE INDEX idx_ap_datev_export_audit_untold ON ap_datev_export_audit (updated_at)
    WHERE notice_due AND admins_told_at IS NULL;
