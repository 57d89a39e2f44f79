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
-- refuses tables of another version.  Running it again on tables it made
-- before adds what a newer release needs (the epochs of 1.3, below) and
-- leaves the rest as it is.
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
    mark_ms        bigint,                       -- the last freshness mark this claim published
    lead_ms        integer                       -- how far past its deadline its marks reach (1.3)
);
-- tables made by 1.2 and older lack it
ALTER TABLE snowflake_registry.claims ADD COLUMN IF NOT EXISTS lead_ms integer;
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

-- Limits (1.3): the longest lease and mark lead any claim may have, one
-- row.  A failover to a standby that lacks the last claims pauses claims for
-- at least these (epoch(), below): a bound that does not depend on rows the
-- standby may have lost.  Every claim and renewal must respect them (the
-- trigger claims_limits refuses one that does not).  Made from the claims
-- there are (at least 60 s and 10 s); raise them as the operations guide
-- says (before any server uses a longer lease, and let the standbys have
-- the change first).
CREATE TABLE IF NOT EXISTS snowflake_registry.limits (
    max_lease_s integer NOT NULL CHECK (max_lease_s BETWEEN 1 AND 3600),
    max_lead_ms integer NOT NULL CHECK (max_lead_ms BETWEEN 0 AND 3601000),
    single      boolean PRIMARY KEY DEFAULT true CHECK (single)
);
INSERT INTO snowflake_registry.limits (max_lease_s, max_lead_ms)
SELECT greatest(60, max(c.lease_ttl_s)), greatest(10000, max(c.lead_ms))
  FROM snowflake_registry.claims c
ON CONFLICT DO NOTHING;

CREATE OR REPLACE FUNCTION snowflake_registry.claims_limits() RETURNS trigger
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    l record;
BEGIN
    SELECT * INTO l FROM snowflake_registry.limits;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'the registry has no limits row (snowflake_registry.limits)'
            USING ERRCODE = '55000',
                  HINT = 'Run snowflake_registry.sql again as the role that made the tables.';
    END IF;
    IF NEW.lease_ttl_s > l.max_lease_s THEN
        RAISE EXCEPTION 'a lease of % s is longer than the registry allows (max_lease_s = % s)',
            NEW.lease_ttl_s, l.max_lease_s
            USING ERRCODE = '23514',
                  HINT = 'Lower snowflake.registry_lease, or raise max_lease_s in snowflake_registry.limits as the operations guide says.';
    END IF;
    IF NEW.lead_ms > l.max_lead_ms THEN
        RAISE EXCEPTION 'a mark lead of % ms is longer than the registry allows (max_lead_ms = % ms)',
            NEW.lead_ms, l.max_lead_ms
            USING ERRCODE = '23514',
                  HINT = 'Lower snowflake.max_clock_lead, or raise max_lead_ms in snowflake_registry.limits as the operations guide says.';
    END IF;
    RETURN NEW;
END
$$;

-- Epochs (1.3): the registry database's history of failovers.  A standby
-- promoted after asynchronous replication may lack the last writes of the
-- old primary: heartbeats, freshness marks, releases, even whole claims.  So
-- on a database seen for the first time under a new (system identifier,
-- timeline), nothing is claimed and no active claim is marked expired until
-- claims_from: the longest lease any claim may have (limits.max_lease_s, or
-- a longer one among the claims of the last day), plus how far marks may
-- reach past the deadline (limits.max_lead_ms, or more among those claims),
-- plus a margin of 5 s for the clocks, after the first claim that saw the
-- epoch (at or after the promotion).  The limits, not the claims the new
-- primary knows: a lost claim may have had a longer lease than any of them.  By then every holder of the old primary has
-- passed its deadline; a claim then resumes above claims_from too (the
-- shard's mark is raised to it), above every ID such a holder issued.  The
-- triggers below enforce it for every claimer, whatever its version.  A
-- fresh database on timeline 1, with no claim and no epoch yet, does not
-- wait.
CREATE TABLE IF NOT EXISTS snowflake_registry.epochs (
    system_identifier bigint NOT NULL,           -- pg_control_system()
    timeline          integer NOT NULL,          -- of the WAL written now
    first_seen_at     timestamptz NOT NULL,      -- now() of the first claim that saw it
    claims_from       timestamptz NOT NULL,      -- no claim, no expiry before
    PRIMARY KEY (system_identifier, timeline)
);

-- The current epoch's row, made on first sight (NULLs on a standby, which
-- takes no claim anyway).
CREATE OR REPLACE FUNCTION snowflake_registry.epoch(
    OUT system_identifier bigint, OUT timeline integer,
    OUT first_seen_at timestamptz, OUT claims_from timestamptz)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    pause_ms bigint;
BEGIN
    IF pg_catalog.pg_is_in_recovery() THEN
        RETURN;
    END IF;
    system_identifier := (SELECT c.system_identifier FROM pg_catalog.pg_control_system() c);
    timeline := ('x' || pg_catalog.substr(pg_catalog.pg_walfile_name(pg_catalog.pg_current_wal_lsn()),
                                          1, 8))::bit(32)::integer;
    SELECT e.first_seen_at, e.claims_from INTO first_seen_at, claims_from
      FROM snowflake_registry.epochs e
     WHERE e.system_identifier = epoch.system_identifier AND e.timeline = epoch.timeline;
    IF FOUND THEN
        RETURN;
    END IF;
    IF timeline = 1 AND NOT EXISTS (SELECT FROM snowflake_registry.epochs)
       AND NOT EXISTS (SELECT FROM snowflake_registry.claims) THEN
        pause_ms := 0;
    ELSE
        SELECT greatest(coalesce(max(c.lease_ttl_s), 0),
                        coalesce((SELECT l.max_lease_s FROM snowflake_registry.limits l), 3600)) * 1000
               + greatest(coalesce(max(coalesce(c.lead_ms, 2000)), 2000),
                          coalesce((SELECT l.max_lead_ms FROM snowflake_registry.limits l), 3601000))
               + 5000
          INTO pause_ms
          FROM snowflake_registry.claims c
         WHERE c.last_heartbeat > (SELECT max(m.last_heartbeat) FROM snowflake_registry.claims m)
                                  - interval '1 day';
    END IF;
    INSERT INTO snowflake_registry.epochs
    VALUES (system_identifier, timeline, now(), now() + pause_ms * interval '1 millisecond')
    ON CONFLICT DO NOTHING;
    SELECT e.first_seen_at, e.claims_from INTO first_seen_at, claims_from
      FROM snowflake_registry.epochs e
     WHERE e.system_identifier = epoch.system_identifier AND e.timeline = epoch.timeline;
END
$$;

-- Before a claim is inserted or an active one marked expired: nothing
-- before claims_from (the row is skipped); a claim in an epoch that paused
-- raises its shard's mark to claims_from.
CREATE OR REPLACE FUNCTION snowflake_registry.claims_guard() RETURNS trigger
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    e record;
BEGIN
    SELECT * INTO e FROM snowflake_registry.epoch();
    IF e.claims_from IS NULL THEN
        RETURN NEW;             -- a standby: the write fails anyway
    END IF;
    IF now() < e.claims_from THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'INSERT' AND e.claims_from > e.first_seen_at THEN
        UPDATE snowflake_registry.shards s
           SET mark_ms = (extract(epoch FROM e.claims_from) * 1000)::bigint
         WHERE s.id_space = NEW.id_space AND s.datacenter = NEW.datacenter
           AND s.worker = NEW.worker
           AND (s.mark_ms IS NULL OR s.mark_ms < (extract(epoch FROM e.claims_from) * 1000)::bigint);
    END IF;
    RETURN NEW;
END
$$;

DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_trigger
                   WHERE tgrelid = 'snowflake_registry.claims'::regclass
                     AND tgname = 'claims_guard_insert') THEN
        CREATE TRIGGER claims_guard_insert BEFORE INSERT ON snowflake_registry.claims
            FOR EACH ROW WHEN (NEW.status = 'active')
            EXECUTE FUNCTION snowflake_registry.claims_guard();
    END IF;
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_trigger
                   WHERE tgrelid = 'snowflake_registry.claims'::regclass
                     AND tgname = 'claims_limits') THEN
        CREATE TRIGGER claims_limits BEFORE INSERT OR UPDATE OF lease_ttl_s, lead_ms
            ON snowflake_registry.claims
            FOR EACH ROW WHEN (NEW.status = 'active')
            EXECUTE FUNCTION snowflake_registry.claims_limits();
    END IF;
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_trigger
                   WHERE tgrelid = 'snowflake_registry.claims'::regclass
                     AND tgname = 'claims_guard_expire') THEN
        CREATE TRIGGER claims_guard_expire BEFORE UPDATE ON snowflake_registry.claims
            FOR EACH ROW WHEN (OLD.status = 'active' AND NEW.status = 'expired')
            EXECUTE FUNCTION snowflake_registry.claims_guard();
    END IF;
END
$$;

COMMIT;
