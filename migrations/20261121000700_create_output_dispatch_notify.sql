-- NOTIFY on channel `output_dispatch` whenever a job is inserted or its status changes,
-- so the document detail page can re-render its DATEV export section (seed 002).
CREATE FUNCTION notify_output_dispatch() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    org_id UUID;
BEGIN
    SELECT organization_id INTO org_id FROM tenant WHERE id = NEW.tenant_id;
    PERFORM pg_notify('output_dispatch', json_build_object(
        'event/type', 'output-dispatch',
        'document-output-job/id', NEW.id,
        'document-output-job/status', NEW.status,
        'document/id', NEW.document_id,
        'tenant/id', NEW.tenant_id,
        'organization/id', org_id,
        'old-status', CASE WHEN TG_OP = 'UPDATE' THEN OLD.status END
    )::text);
    RETURN NEW;
END;
$$;

CREATE TRIGGER trg_document_output_job_notify_insert
    AFTER INSERT ON document_output_job
    FOR EACH ROW EXECUTE FUNCTION notify_output_dispatch();

CREATE TRIGGER trg_document_output_job_notify_update
    AFTER UPDATE OF status ON document_output_job
    FOR EACH ROW
    WHEN (OLD.status IS DISTINCT FROM NEW.status)
    EXECUTE FUNCTION notify_output_dispatch();
