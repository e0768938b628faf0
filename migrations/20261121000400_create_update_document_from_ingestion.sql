-- When an ingestion reaches a terminal status, the document takes its result (seed 003):
-- completed with valid data → structured_data copied, no review needed;
-- failed (or completed without valid data) → needs_human_review, existing data kept.
CREATE FUNCTION update_document_from_ingestion() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE document
       SET structured_data    = COALESCE(NEW.structured_data, document.structured_data),
           needs_human_review = NEW.status = 'failed' OR NOT COALESCE(NEW.valid_structured_data, false),
           updated_at         = now()
     WHERE id = NEW.document_id;
    RETURN NEW;
END;
$$;

CREATE TRIGGER trg_update_document_from_ingestion
    AFTER UPDATE OF status ON ingestion
    FOR EACH ROW
    WHEN (NEW.status IN ('completed', 'failed') AND OLD.status IS DISTINCT FROM NEW.status)
    EXECUTE FUNCTION update_document_from_ingestion();
