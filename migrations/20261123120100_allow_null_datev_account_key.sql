-- DATEV account keys live in Secrets Manager, one secret per tenant
-- (DATEV_CREDENTIALS_PREFIX + tenant id, JSON key "account_key"); the functions no longer
-- read this column. It stays for the app until the app writes the secret instead; rows
-- whose key has been moved are set to NULL (docs/document-output.md, "Credentials").
ALTER TABLE tenant_datev_integration ALTER COLUMN account_key DROP NOT NULL;
