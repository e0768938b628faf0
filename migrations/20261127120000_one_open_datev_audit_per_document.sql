-- At most one open DATEV export per document (issue 25, item 12): an audit that is
-- `requested`, `submitted` or `in_progress` blocks every new export of the document
-- (check_eligibility), so a second open one can only come from a race or a bug, and
-- would mean two bookings. The index makes the database refuse it.
--
-- Rows from before this migration: of several open audits of one document the newest
-- stays open; the older ones are ended the way docflow ends an export nobody can vouch
-- for — failed, not retryable, "check DATEV", with an admin notice due — so the index
-- can be built and nothing is hidden.
WITH ranked AS (
    SELECT id, row_number() OVER (PARTITION BY document_id ORDER BY created_at DESC, id DESC) AS n
      FROM ap_datev_export_audit
     WHERE status IN ('requested', 'submitted', 'in_progress'))
UPDATE ap_datev_export_audit a
   SET status = 'failed', retryable = false, notice_due = true, updated_at = now(),
       error = 'DATEV export in doubt: a newer export of the document was open at the same time '
               || '(closed by migration 20261127120000); check DATEV before exporting again'
  FROM ranked
 WHERE a.id = ranked.id AND ranked.n > 1;

CREATE UNIQUE INDEX idx_ap_datev_export_audit_document_open
    ON ap_datev_export_audit (document_id)
    WHERE status IN ('requested', 'submitted', 'in_progress');
