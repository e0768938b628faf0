-- Which claim holds an in-progress ingestion (docs/ingestion.md): every claim writes a
-- fresh token, every write after the claim matches it, so a worker whose lease went
-- stale and was claimed by another delivery can no longer renew, release, fail or
-- complete that ingestion.
ALTER TABLE ingestion ADD COLUMN claim_token UUID;
