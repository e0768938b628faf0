-- Which extraction of a document a matching run read (issue 24 item 1, docs/matching.md
-- "Stale runs"): every change of `structured_data` or `type`, by whichever writer (the
-- ingestion trigger, a re-extraction, the app), counts `data_version` up. A matching run
-- remembers the version it claimed, and its writes (normalised fields, edges, `succeeded`)
-- only land while the row still carries it, so a run that read an older extraction
-- cannot overwrite a newer one.
ALTER TABLE document ADD COLUMN data_version BIGINT NOT NULL DEFAULT 1;

CREATE FUNCTION bump_document_data_version() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.structured_data IS DISTINCT FROM OLD.structured_data
       OR NEW.type IS DISTINCT FROM OLD.type THEN
        NEW.data_version := OLD.data_version + 1;
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER trg_bump_document_data_version
    BEFORE UPDATE OF structured_data, type ON document
    FOR EACH ROW
    EXECUTE FUNCTION bump_document_data_version();
