-- Who is telling the admins about a matching failure: set by the delivery that records
-- the failure (and by a later delivery that takes over an untold notice), cleared when
-- its notice reached no channel. A duplicate delivery that meets a failure whose notice
-- is claimed, and not stale, leaves the telling to its owner: one notice per failure.
ALTER TABLE document ADD COLUMN matching_notice_claimed_at timestamptz;
