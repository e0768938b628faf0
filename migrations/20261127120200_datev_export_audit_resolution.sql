-- A person's decision on an export docflow could not settle (issue 25, item 1): after
-- checking DATEV, `docflow export resolve <audit> --absent | --present` records who
-- decided, when, and why. `absent`: nothing was booked, the audit is failed and
-- retryable, a re-export may run. `present`: DATEV has it, the audit is succeeded.
ALTER TABLE ap_datev_export_audit
    ADD COLUMN resolution      TEXT CHECK (resolution IN ('absent', 'present')),
    ADD COLUMN resolved_by     UUID REFERENCES identity(id) ON DELETE SET NULL,
    ADD COLUMN resolved_at     TIMESTAMPTZ,
    ADD COLUMN resolution_note TEXT,
    -- DATEV's `information` messages of a task that ended PARTIAL_SUCCESS (issue 25,
    -- item 7): booked, but DATEV dropped or changed something a person should look at.
    ADD COLUMN information     JSONB,
    ADD CONSTRAINT ap_datev_export_audit_resolution_complete CHECK (
        (resolution IS NULL AND resolved_at IS NULL AND resolution_note IS NULL)
        OR (resolution IS NOT NULL AND resolved_at IS NOT NULL AND resolution_note IS NOT NULL));
