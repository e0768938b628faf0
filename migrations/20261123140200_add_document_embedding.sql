-- Semantic candidates (issue 16, docs/matching.md "Semantic candidates"): matching's
-- pre-processing stores the embedding of the document's searchable text and the model
-- that made it (a changed model or text is embedded again on the next match).
ALTER TABLE document
    ADD COLUMN embedding       vector,
    ADD COLUMN embedding_model TEXT;

-- An HNSW index needs one dimension: one partial expression index per dimension
-- matching supports (docflow::embeddings::INDEXED_DIMENSIONS; EMBEDDING_DIMENSIONS must
-- be one of them). Empty indexes cost nothing; the nearest-neighbour query names the
-- same expression and predicate, with the tenant, types and model as filters
-- (pgvector's iterative index scan keeps going until enough rows pass them).
CREATE INDEX idx_document_embedding_256 ON document
    USING hnsw ((embedding::vector(256)) vector_cosine_ops)
    WHERE vector_dims(embedding) = 256;
CREATE INDEX idx_document_embedding_384 ON document
    USING hnsw ((embedding::vector(384)) vector_cosine_ops)
    WHERE vector_dims(embedding) = 384;
CREATE INDEX idx_document_embedding_512 ON document
    USING hnsw ((embedding::vector(512)) vector_cosine_ops)
    WHERE vector_dims(embedding) = 512;
CREATE INDEX idx_document_embedding_768 ON document
    USING hnsw ((embedding::vector(768)) vector_cosine_ops)
    WHERE vector_dims(embedding) = 768;
CREATE INDEX idx_document_embedding_1024 ON document
    USING hnsw ((embedding::vector(1024)) vector_cosine_ops)
    WHERE vector_dims(embedding) = 1024;
CREATE INDEX idx_document_embedding_1536 ON document
    USING hnsw ((embedding::vector(1536)) vector_cosine_ops)
    WHERE vector_dims(embedding) = 1536;
