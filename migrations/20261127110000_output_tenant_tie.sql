-- Issue 25, item 9: the tenant tie. An output job and an export audit belong to the
-- tenant of their document: the export reads `companyId` from the document's tenant and
-- the account key from the job's, so a job of another tenant would book one tenant's
-- document into another tenant's DATEV. Enforced here with composite foreign keys
-- (the worker refuses such a job too, for rows written before this migration).
--
-- NOT VALID: existing rows are not scanned (a mismatch among them is the worker's to
-- refuse, visibly); every row inserted or updated from now on is checked.
ALTER TABLE document
    ADD CONSTRAINT document_id_tenant_id_key UNIQUE (id, tenant_id);

ALTER TABLE document_output_job
    ADD CONSTRAINT document_output_job_document_tenant_fkey
    FOREIGN KEY (document_id, tenant_id) REFERENCES document (id, tenant_id)
    ON DELETE CASCADE NOT VALID;

ALTER TABLE ap_datev_export_audit
    ADD CONSTRAINT ap_datev_export_audit_document_tenant_fkey
    FOREIGN KEY (document_id, tenant_id) REFERENCES document (id, tenant_id)
    ON DELETE CASCADE NOT VALID;
