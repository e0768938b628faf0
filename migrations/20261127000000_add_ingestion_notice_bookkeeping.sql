-- Whether the admins were told that the sweeper gave up on an ingestion (docs/sweeper.md):
-- the give-up claims the notice (`notice_claimed_at`), a delivered notice sets
-- `admins_told_at`. A notice no channel took keeps its claim, which the sweeper's
-- notices step takes over once it is old, so a give-up during a Slack or SES outage is
-- still told, once.
ALTER TABLE ingestion ADD COLUMN notice_claimed_at TIMESTAMPTZ;
ALTER TABLE ingestion ADD COLUMN admins_told_at TIMESTAMPTZ;
