-- NOTIFY on channel `datev_export_audit` when a DATEV export audit is inserted or its
-- status changes (issue 25, item 8): the document detail page waits for "the audit event"
-- (seed 002) to replace its transient dispatched/exporting state with the audit's. A
-- channel of its own, so listeners of `output_dispatch` keep getting only job events; the
-- payload has the same keys for document, tenant, organization and old status.
CREATE FUNCTION notify_datev_export_audit() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    org_id UUID;
BEGIN
    SELECT organization_id INTO org_id FROM tenant WHERE id = NEW.tenant_id;
    PERFORM pg_notify('datev_export_audit', json_build_object(
        'event/type', 'datev-export-audit',
        'ap-datev-export-audit/id', NEW.id,
        'ap-datev-export-audit/status', NEW.status,
        'ap-datev-export-audit/retryable', NEW.retryable,
        'document-output-job/id', NEW.dispatch_job_id,
        'document/id', NEW.document_id,
        'tenant/id', NEW.tenant_id,
        'organization/id', org_id,
        'old-status', CASE WHEN TG_OP = 'UPDATE' THEN OLD.status END
    )::text);
    RETURN NEW;
END;
$$;

CREATE TRIGGER trg_ap_datev_export_audit_notify_insert
    AFTER INSERT ON ap_datev_export_audit
    FOR EACH ROW EXECUTE FUNCTION notify_datev_export_audit();

-- `retryable` too: `docflow export resolve --absent` changes only it on a failed audit,
-- and the page must then offer the re-export.
CREATE TRIGGER trg_ap_datev_export_audit_notify_update
    AFTER UPDATE OF status, retryable ON ap_datev_export_audit
    FOR EACH ROW
    WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.retryable IS DISTINCT FROM NEW.retryable)
    EXECUTE FUNCTION notify_datev_export_audit();
