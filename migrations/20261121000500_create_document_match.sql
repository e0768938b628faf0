-- Match edges between two documents of one tenant. Stored once per pair with
-- document_a_id < document_b_id so "delete this document's edges" is one predicate.
CREATE TABLE document_match (
    id            UUID PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id     UUID NOT NULL REFERENCES tenant(id) ON DELETE CASCADE,
    document_a_id UUID NOT NULL REFERENCES document(id) ON DELETE CASCADE,
    document_b_id UUID NOT NULL REFERENCES document(id) ON DELETE CASCADE,
    score         DOUBLE PRECISION NOT NULL,
    confidence    TEXT NOT NULL CHECK (confidence IN ('high', 'medium', 'low')),
    -- 'score' when the score alone decided, 'llm' when the LLM decided an ambiguous pair.
    decided_by    TEXT NOT NULL CHECK (decided_by IN ('score', 'llm')),
    evidence      JSONB NOT NULL DEFAULT '[]',
    reasoning     TEXT,
    created_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    CHECK (document_a_id < document_b_id),
    UNIQUE (document_a_id, document_b_id)
);

CREATE INDEX idx_document_match_b ON document_match (document_b_id);
