-- Matching's write phase runs a recursive cluster query whose row estimates are wild by
-- nature; with JIT on, PostgreSQL compiles it for a quarter of a second every time while
-- the region locks are held. Off for the matching role as a whole, instead of a `SET
-- LOCAL jit = off` per write phase: RDS Proxy pins a session on any SET (its PostgreSQL
-- list exempts none), and the role's setting reaches every session it opens.
ALTER ROLE docflow_matching SET jit = off;
