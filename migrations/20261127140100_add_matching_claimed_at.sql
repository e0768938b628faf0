-- When the delivery that holds an in-progress matching run claimed it (issue 24 item 8,
-- docs/matching.md "A live claim"): a second delivery of the same document that meets
-- a claim younger than the lease does not run (and does not pay for the LLM) but comes
-- back after the lease. A run that ends (success, recorded error, failure) releases it.
ALTER TABLE document ADD COLUMN matching_claimed_at TIMESTAMPTZ;
