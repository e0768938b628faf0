-- Matching bookkeeping (issue 11):
-- - matching_succeeded_at: when matching last succeeded, set in the write transaction.
--   A message sent before it is a duplicate of finished work (compared with the
--   message's SentTimestamp) and is discarded instead of re-run.
-- - matching_notified_at: when the admins were told about the current failure (at least
--   one channel delivered the notice); NULL while a recorded failure reached no one.
ALTER TABLE document
    ADD COLUMN matching_succeeded_at TIMESTAMPTZ,
    ADD COLUMN matching_notified_at  TIMESTAMPTZ;
