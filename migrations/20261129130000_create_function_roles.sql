-- The database roles the functions connect as, each holding only the grants its
-- function uses; the migrating role (the schema owner) owns every object. A role is
-- created here without LOGIN when it does not exist yet: its password and LOGIN come from
-- the bootstrap (the migrate function in AWS, scripts/postgres-up.sh locally), never from
-- a migration. Roles belong to the cluster, grants to this database.
DO $$
DECLARE
    name TEXT;
BEGIN
    FOREACH name IN ARRAY ARRAY['docflow_ingestion', 'docflow_matching',
                                'docflow_document_output', 'docflow_sweeper'] LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = name) THEN
            BEGIN
                EXECUTE format('CREATE ROLE %I NOLOGIN', name);
            EXCEPTION WHEN duplicate_object OR unique_violation THEN
                -- Another database of the cluster migrating at the same moment.
                NULL;
            END;
        END IF;
        -- The session settings every docflow session needs, per role: RDS Proxy refuses
        -- them as startup options ("Feature not supported: RDS Proxy currently doesn't
        -- support command-line options"), and a session-level SET would pin every proxy
        -- session. A function checks them when it connects (docflow::db) and refuses to
        -- consume while they are off. Values: docflow::db::LOCK_TIMEOUT and
        -- IDLE_IN_TRANSACTION_TIMEOUT.
        EXECUTE format('ALTER ROLE %I SET lock_timeout = %L', name, '20s');
        EXECUTE format('ALTER ROLE %I SET idle_in_transaction_session_timeout = %L', name, '15s');
        -- Every function checks the schema version it was built for (docflow::db).
        IF to_regclass('_sqlx_migrations') IS NOT NULL THEN
            EXECUTE format('GRANT SELECT ON _sqlx_migrations TO %I', name);
        END IF;
    END LOOP;
END
$$;

-- Ingestion: claims and finishes its ingestion row; the document takes the result
-- (the trigger update_document_from_ingestion runs as the function's role).
GRANT SELECT, UPDATE ON ingestion TO docflow_ingestion;
GRANT SELECT, UPDATE ON document TO docflow_ingestion;
GRANT SELECT ON tenant TO docflow_ingestion;

-- Matching: reads the tenant's documents and counterparties, writes its decisions, the
-- documents' matching fields, and (through the document triggers) the VAT id counts.
GRANT SELECT, UPDATE ON document TO docflow_matching;
GRANT SELECT, INSERT, UPDATE, DELETE ON document_match TO docflow_matching;
GRANT SELECT, INSERT, UPDATE ON matching_counterparty TO docflow_matching;
GRANT SELECT, INSERT, UPDATE ON counterparty_vat_id TO docflow_matching;
GRANT SELECT ON tenant TO docflow_matching;

-- Document output: runs export jobs, books them through Maesn and keeps the audit.
GRANT SELECT, UPDATE ON document_output_job TO docflow_document_output;
GRANT SELECT, INSERT, UPDATE ON ap_datev_export_audit TO docflow_document_output;
GRANT SELECT ON document, document_match, ap_approval, identity, tenant,
                tenant_datev_integration, ap_datev_export_resolution
    TO docflow_document_output;

-- Sweeper: finds stale work of every function and re-sends it, polls open DATEV tasks
-- (as document output does) and records what it gave up on.
GRANT SELECT, UPDATE ON ingestion, document, document_output_job TO docflow_sweeper;
GRANT SELECT, INSERT, UPDATE ON ap_datev_export_audit TO docflow_sweeper;
GRANT SELECT ON document_match, ap_approval, identity, tenant, tenant_datev_integration,
                ap_datev_export_resolution
    TO docflow_sweeper;

-- Tables a later migration creates are readable by every function; a migration whose
-- table a function writes grants that write itself, next to the table.
ALTER DEFAULT PRIVILEGES IN SCHEMA public
    GRANT SELECT ON TABLES TO docflow_ingestion, docflow_matching, docflow_document_output,
                              docflow_sweeper;
