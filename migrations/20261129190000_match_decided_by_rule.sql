-- A match a rule made rather than a score or the LLM: a corrected invoice (UNTDID 1001
-- 384) and the invoice it replaces, linked on the corrected invoice's BT-25
-- (docs/matching.md, "Corrected invoices"). Its evidence is one `replaces` entry naming
-- the replaced document.
ALTER TABLE document_match DROP CONSTRAINT document_match_decided_by_check;
ALTER TABLE document_match
    ADD CONSTRAINT document_match_decided_by_check
    CHECK (decided_by IN ('score', 'llm', 'rule'));
