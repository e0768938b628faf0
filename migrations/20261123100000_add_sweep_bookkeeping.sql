-- The sweeper's bookkeeping (docs/sweeper.md): how often it re-sent the message of a
-- stuck piece of work, and when last. After SWEEP_MAX_RESENDS re-sends without the work
-- finishing, the sweeper fails it visibly instead of re-sending again.
ALTER TABLE ingestion
    ADD COLUMN sweep_count INTEGER NOT NULL DEFAULT 0,
    ADD COLUMN swept_at    TIMESTAMPTZ;

ALTER TABLE document
    ADD COLUMN matching_sweep_count INTEGER NOT NULL DEFAULT 0,
    ADD COLUMN matching_swept_at    TIMESTAMPTZ;

ALTER TABLE document_output_job
    ADD COLUMN sweep_count INTEGER NOT NULL DEFAULT 0,
    ADD COLUMN swept_at    TIMESTAMPTZ;

-- A document whose matching starts over (ingestion completed again, an edit asked for a
-- re-match) starts a new cycle: earlier re-sends do not count against it.
CREATE FUNCTION reset_matching_sweeps() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.matching_sweep_count := 0;
    NEW.matching_swept_at    := NULL;
    RETURN NEW;
END;
$$;

CREATE TRIGGER trg_document_reset_matching_sweeps
    BEFORE UPDATE OF matching_status ON document
    FOR EACH ROW
    WHEN (NEW.matching_status = 'pending' AND OLD.matching_status IS DISTINCT FROM 'pending')
    EXECUTE FUNCTION reset_matching_sweeps();

-- The sweeper's scans.
CREATE INDEX idx_document_matching_open ON document (updated_at)
    WHERE matching_status IN ('pending', 'in-progress');
CREATE INDEX idx_document_output_job_open ON document_output_job (updated_at)
    WHERE status IN ('pending', 'running');
