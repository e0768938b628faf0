-- Own and cited reference keys apart (issue 24 item 9, docs/matching.md "Candidates").
-- normalized_references pooled a document's own number, the numbers it cites and their
-- number parts in one key space: at a million documents the `12345` of many suppliers'
-- `RE-12345`, `LS-12345`, … filled every candidate slot of a document citing order
-- `PO-12345`. Matching now writes typed keys (`<kind>:<form>`, `po:PO-12345`,
-- `po:12345`, docflow::matching::normalize::SearchKeys) into two columns, each behind
-- its own tenant-scoped GIN index, and looks a source's cited numbers up in the others'
-- own keys and its own (and cited) numbers in the others' cited keys.
ALTER TABLE document
    ADD COLUMN matching_own_keys   TEXT[],
    ADD COLUMN matching_cited_keys TEXT[];

CREATE INDEX idx_document_tenant_own_keys ON document
    USING gin (matching_tenant_keys(tenant_id, matching_own_keys));
CREATE INDEX idx_document_tenant_cited_keys ON document
    USING gin (matching_tenant_keys(tenant_id, matching_cited_keys));

-- Documents normalised before this migration have no typed keys until they are matched
-- again; the search still finds them through the pooled keys, in an index that holds
-- only them (matching writes the typed keys, never NULL, so it empties as they are
-- re-matched).
DROP INDEX IF EXISTS idx_document_tenant_references;
CREATE INDEX idx_document_tenant_references_legacy ON document
    USING gin (matching_tenant_keys(tenant_id, normalized_references))
    WHERE matching_own_keys IS NULL AND cardinality(normalized_references) > 0;
