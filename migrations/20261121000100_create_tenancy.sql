-- Organizations own tenants (legal entities in the old system) and identities.
-- Naming: the old `legal_entity` is `tenant`, the old `tenant` is `organization`.
-- gen_random_uuid() is core PostgreSQL (13+). Amended (issue 16): this file created
-- pgcrypto, which nothing uses and the local PostgreSQL of `make up` lacks; databases
-- migrated before get their recorded checksum updated (docflow::db::AMENDED).

CREATE TABLE organization (
    id         UUID PRIMARY KEY DEFAULT gen_random_uuid(),
    name       TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE tenant (
    id              UUID PRIMARY KEY DEFAULT gen_random_uuid(),
    organization_id UUID NOT NULL REFERENCES organization(id) ON DELETE CASCADE,
    name            TEXT NOT NULL,
    vat_id          TEXT,
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at      TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX idx_tenant_organization ON tenant (organization_id);

CREATE TABLE identity (
    id              UUID PRIMARY KEY DEFAULT gen_random_uuid(),
    organization_id UUID NOT NULL REFERENCES organization(id) ON DELETE CASCADE,
    email           TEXT NOT NULL UNIQUE,
    name            TEXT,
    is_admin        BOOLEAN NOT NULL DEFAULT false,
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX idx_identity_organization ON identity (organization_id);
