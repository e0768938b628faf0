-- Per tenant and normalised counterparty name: how many documents carry each VAT id.
-- Matching reads it to tell look-alike suppliers ("Müller GmbH" / "Mueller GmbH" of two
-- companies) whose name alone says nothing: a name counts as ambiguous only when two or
-- more VAT ids each carried by at least 2 documents stand behind it, so one misread VAT
-- id does not zero a supplier's name evidence for good (docs/matching.md). Kept by
-- triggers on document, whoever writes; the lookup is one index range per name instead
-- of a grouping over the tenant's documents on every message.
CREATE TABLE counterparty_vat_id (
    tenant_id         UUID NOT NULL REFERENCES tenant(id) ON DELETE CASCADE,
    normalized_name   TEXT NOT NULL,
    normalized_vat_id TEXT NOT NULL,
    documents         INTEGER NOT NULL CHECK (documents >= 0),
    PRIMARY KEY (tenant_id, normalized_name, normalized_vat_id)
);

CREATE FUNCTION count_counterparty_vat_id() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE')
       AND OLD.normalized_counterparty IS NOT NULL
       AND OLD.normalized_vat_id IS NOT NULL THEN
        UPDATE counterparty_vat_id
           SET documents = documents - 1
         WHERE tenant_id = OLD.tenant_id
           AND normalized_name = OLD.normalized_counterparty
           AND normalized_vat_id = OLD.normalized_vat_id
           AND documents > 0;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE')
       AND NEW.normalized_counterparty IS NOT NULL
       AND NEW.normalized_vat_id IS NOT NULL THEN
        INSERT INTO counterparty_vat_id AS c
               (tenant_id, normalized_name, normalized_vat_id, documents)
        VALUES (NEW.tenant_id, NEW.normalized_counterparty, NEW.normalized_vat_id, 1)
        ON CONFLICT (tenant_id, normalized_name, normalized_vat_id)
        DO UPDATE SET documents = c.documents + 1;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER trg_count_counterparty_vat_id_insert_delete
AFTER INSERT OR DELETE ON document
FOR EACH ROW EXECUTE FUNCTION count_counterparty_vat_id();

-- Matching saves the normalised fields on every run: only a real change counts.
CREATE TRIGGER trg_count_counterparty_vat_id_update
AFTER UPDATE OF tenant_id, normalized_counterparty, normalized_vat_id ON document
FOR EACH ROW
WHEN (OLD.tenant_id IS DISTINCT FROM NEW.tenant_id
      OR OLD.normalized_counterparty IS DISTINCT FROM NEW.normalized_counterparty
      OR OLD.normalized_vat_id IS DISTINCT FROM NEW.normalized_vat_id)
EXECUTE FUNCTION count_counterparty_vat_id();

INSERT INTO counterparty_vat_id (tenant_id, normalized_name, normalized_vat_id, documents)
SELECT tenant_id, normalized_counterparty, normalized_vat_id, count(*)
  FROM document
 WHERE normalized_counterparty IS NOT NULL
   AND normalized_vat_id IS NOT NULL
 GROUP BY tenant_id, normalized_counterparty, normalized_vat_id;
