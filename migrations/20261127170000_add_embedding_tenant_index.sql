-- Filtered HNSW for small tenants (issue 24 item 10, docs/matching.md "Semantic
-- candidates"). The nearest-neighbour search counts the tenant's embeddings of the
-- configured model and dimension (at most up to the exact-search limit) and, for a
-- tenant below it, ranks them all exactly instead of walking the shared HNSW graph:
-- both read this index, never the whole table.
-- The model and dimension are one key, `<model>/<dimension>`, which only those two
-- queries name: the HNSW search (tenant compared as text) can use no condition of this
-- index, so a misestimate cannot turn a large tenant's search into ranking all its rows.
CREATE INDEX idx_document_embedding_tenant ON document
    (tenant_id, (embedding_model || '/' || vector_dims(embedding)::text))
    WHERE embedding IS NOT NULL;
