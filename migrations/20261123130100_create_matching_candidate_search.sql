-- Tenant-scoped, bounded candidate search (issue 11, docs/matching.md "Candidates").
-- Every path of the search is one index scan with a LIMIT; none grows with the tenant.
CREATE EXTENSION IF NOT EXISTS btree_gist;

-- The document's own date (its extracted date, else the day it was created), written by
-- matching with the other normalised fields: the supplier paths take the documents
-- nearest in date.
ALTER TABLE document ADD COLUMN document_date DATE;
UPDATE document SET document_date = created_at::date WHERE normalized_counterparty IS NOT NULL;

-- Shared references: the tenant-scoped GIN index is created by
-- 20261123140000_create_portable_reference_index.sql. Amended (issue 16): this file
-- created it over (tenant_id, normalized_references) with btree_gin, which the local
-- PostgreSQL of `make up` lacks; databases migrated before get their recorded checksum
-- updated (docflow::db::AMENDED) and the index replaced by that migration.
DROP INDEX IF EXISTS idx_document_references;

-- Same supplier (VAT id, IBAN, normalised name): the documents nearest in date.
DROP INDEX IF EXISTS idx_document_vat_id;
CREATE INDEX idx_document_vat_date ON document (tenant_id, normalized_vat_id, document_date)
    WHERE normalized_vat_id IS NOT NULL;
CREATE INDEX idx_document_iban_date ON document (tenant_id, normalized_iban, document_date)
    WHERE normalized_iban IS NOT NULL;
CREATE INDEX idx_document_counterparty_date ON document (tenant_id, normalized_counterparty, document_date)
    WHERE normalized_counterparty IS NOT NULL;

-- The trigram search runs over the distinct counterparty names of a tenant (a few
-- hundred), not over its documents; the nearest names then lead to documents through
-- idx_document_counterparty_date.
DROP INDEX IF EXISTS idx_document_counterparty_trgm;
CREATE TABLE matching_counterparty (
    tenant_id UUID NOT NULL REFERENCES tenant(id) ON DELETE CASCADE,
    name      TEXT NOT NULL,
    PRIMARY KEY (tenant_id, name)
);
CREATE INDEX idx_matching_counterparty_trgm ON matching_counterparty USING gist (tenant_id, name gist_trgm_ops);

INSERT INTO matching_counterparty (tenant_id, name)
SELECT DISTINCT tenant_id, normalized_counterparty
  FROM document
 WHERE normalized_counterparty IS NOT NULL;
