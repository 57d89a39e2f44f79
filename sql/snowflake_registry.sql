-- snowflake_registry.sql: the tables of snowflake's shard registry in a
-- PostgreSQL database (snowflake.registry = '<a libpq connection string>').
--
-- Not an extension script: it goes into the registry database, which needs
-- no extension at all.  A server whose registry role may create the schema
-- runs this file itself the first time it finds the schema absent; otherwise
-- run it once as a role that may, then grant the registry role what
-- docs/operations.md lists ("The PostgreSQL registry: roles and grants"):
--
--     psql -d <registry database> -f .../extension/snowflake_registry.sql
--
-- It creates only what is missing, in one transaction, under an advisory
-- lock, so servers that start together make it once.  Version 1; a server
-- refuses tables of another version.
BEGIN;
SET LOCAL search_path = pg_catalog, pg_temp;
SET LOCAL client_min_messages = warning;
-- 'snowflak' in ASCII: one lock for everyone who creates these tables
SELECT pg_catalog.pg_advisory_xact_lock(8317708120410055019);

CREATE SCHEMA IF NOT EXISTS snowflake_registry;

CREATE TABLE IF NOT EXISTS snowflake_registry.schema_version (
    version integer NOT NULL,
    single  boolean PRIMARY KEY DEFAULT true CHECK (single)
);
INSERT INTO snowflake_registry.schema_version (version) VALUES (1) ON CONFLICT DO NOTHING;

-- One row per claim of a shard, never deleted by snowflake: who held which
-- shard, when.  Times are the registry server's (now() there); a claim whose
-- last_heartbeat + lease_ttl_s has passed by that clock is over, and the next
-- claimer marks it expired.
CREATE TABLE IF NOT EXISTS snowflake_registry.claims (
    claim_id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id_space       text NOT NULL,                -- snowflake.registry_prefix
    datacenter     integer NOT NULL CHECK (datacenter >= 0),
    worker         integer NOT NULL CHECK (worker >= 0),
    status         text NOT NULL CHECK (status IN ('active', 'released', 'expired')),
    lease          bigint NOT NULL,              -- a random token of the holder
    lease_ttl_s    integer NOT NULL CHECK (lease_ttl_s BETWEEN 1 AND 3600),
    allocated_at   timestamptz NOT NULL,
    last_heartbeat timestamptz NOT NULL,
    released_at    timestamptz,                  -- released, or expired at
    holder         text NOT NULL,                -- host, port, data directory, system identifier
    host           text NOT NULL,
    pid            integer NOT NULL,             -- of the holder's postmaster
    holder_clock   timestamptz,                  -- the holder's clock when it sent its last heartbeat
    mark_ms        bigint                        -- the last freshness mark this claim published
);
-- at most one active claim per shard; also every lookup of a live claim
CREATE UNIQUE INDEX IF NOT EXISTS claims_active
    ON snowflake_registry.claims (id_space, datacenter, worker) WHERE status = 'active';
CREATE INDEX IF NOT EXISTS claims_active_lease
    ON snowflake_registry.claims (lease) WHERE status = 'active';

-- The freshness mark of every shard ever claimed (Unix ms): at or above
-- every ID its holders may have issued; the next holder resumes above it.
CREATE TABLE IF NOT EXISTS snowflake_registry.shards (
    id_space   text NOT NULL,
    datacenter integer NOT NULL CHECK (datacenter >= 0),
    worker     integer NOT NULL CHECK (worker >= 0),
    mark_ms    bigint,
    PRIMARY KEY (id_space, datacenter, worker)
);

COMMIT;
