-- The sweeper's short claim on a row it is about to re-send (docs/sweeper.md): taken
-- before the send, replaced by the re-send's bookkeeping (count, swept_at) only after
-- the send, so a sweep killed in between loses nothing and uses up no re-send.
ALTER TABLE ingestion ADD COLUMN sweep_claimed_at TIMESTAMPTZ;
ALTER TABLE document ADD COLUMN matching_sweep_claimed_at TIMESTAMPTZ;
ALTER TABLE document_output_job ADD COLUMN sweep_claimed_at TIMESTAMPTZ;
