/* snowflake.sql: a fresh install of the current version (default_version in snowflake.control), kept equal to the previous version + its upgrade script (030_extension_upgrade checks that); the build copies it to snowflake--<version>.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION snowflake" to load this file. \quit

-- Generation: VOLATILE (every call differs), PARALLEL SAFE (the generator lives
-- in shared memory, so parallel workers draw from the same one as the leader).
CREATE FUNCTION snowflake_nextval()
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowflake_nextval'
LANGUAGE C VOLATILE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_nextval() IS
'next Snowflake ID of this server''s shard (snowflake.shard_id): unique in the cluster, strictly increasing within the shard';

CREATE FUNCTION snowflake_nextval(shard_id integer)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowflake_nextval_shard'
LANGUAGE C VOLATILE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_nextval(integer) IS
'next Snowflake ID of a logical shard this server generates for (snowflake.shard_ids): each shard has its own generator';

-- Batches: VOLATILE like nextval; ROWS 1000 is only a planning guess.
CREATE FUNCTION snowflake_nextval_batch(count integer)
RETURNS SETOF bigint
AS 'MODULE_PATHNAME', 'snowflake_nextval_batch'
LANGUAGE C VOLATILE STRICT PARALLEL SAFE ROWS 1000;

COMMENT ON FUNCTION snowflake_nextval_batch(integer) IS
'count (1 .. 10,000,000) distinct, increasing IDs of this server''s shard, taken a millisecond''s run per lock acquisition';

CREATE FUNCTION snowflake_nextval_batch(count integer, shard_id integer)
RETURNS SETOF bigint
AS 'MODULE_PATHNAME', 'snowflake_nextval_batch'
LANGUAGE C VOLATILE STRICT PARALLEL SAFE ROWS 1000;

COMMENT ON FUNCTION snowflake_nextval_batch(integer, integer) IS
'count (1 .. 10,000,000) distinct, increasing IDs of a logical shard, taken a millisecond''s run per lock acquisition';

-- Logical shards (1.1): only roles granted EXECUTE may generate for them, as
-- only roles granted USAGE may draw from a sequence.  Each shard takes one of
-- the server's snowflake.max_shards slots until a restart, and the operator
-- assigns them (snowflake.shard_ids); see README.md, "Logical shards".
REVOKE ALL ON FUNCTION snowflake_nextval(integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION snowflake_nextval_batch(integer, integer) FROM PUBLIC;

-- Decoding: IMMUTABLE so that they can serve expression indexes and generated
-- columns.  The layout they decode with is fixed at server start, and the
-- extension refuses to run (generation and decoding alike) when it differs
-- from the layout recorded in the data directory, so a given ID always decodes
-- the same way on a given server.  See README.md, "Decoding and IMMUTABLE".
CREATE FUNCTION snowflake_timestamp(id bigint)
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'snowflake_timestamp'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_timestamp(bigint) IS
'creation time (millisecond precision) carried by a Snowflake ID';

CREATE FUNCTION snowflake_shard_id(id bigint)
RETURNS integer
AS 'MODULE_PATHNAME', 'snowflake_shard_id'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_shard_id(bigint) IS
'shard ID carried by a Snowflake ID';

CREATE FUNCTION snowflake_sequence(id bigint)
RETURNS integer
AS 'MODULE_PATHNAME', 'snowflake_sequence'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_sequence(bigint) IS
'per-millisecond sequence number carried by a Snowflake ID';

CREATE FUNCTION snowflake_decode(id bigint,
    OUT created_at timestamptz,
    OUT shard_id integer,
    OUT sequence integer)
RETURNS record
AS 'MODULE_PATHNAME', 'snowflake_decode'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_decode(bigint) IS
'all fields of a Snowflake ID: creation time, shard ID and sequence';

-- Time ranges: IMMUTABLE for the same reason as the decoders, so that
-- "id >= snowflake_min_id('2026-11-01')" is folded to a constant at planning
-- and answered by a range scan of the primary key.
CREATE FUNCTION snowflake_min_id(ts timestamptz)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowflake_min_id'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_min_id(timestamptz) IS
'smallest ID of any shard that can carry the millisecond of ts';

CREATE FUNCTION snowflake_min_id(ts timestamptz, shard_id integer)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowflake_min_id'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_min_id(timestamptz, integer) IS
'smallest ID of one shard that can carry the millisecond of ts';

CREATE FUNCTION snowflake_max_id(ts timestamptz)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowflake_max_id'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_max_id(timestamptz) IS
'largest ID of any shard that can carry the millisecond of ts';

CREATE FUNCTION snowflake_max_id(ts timestamptz, shard_id integer)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowflake_max_id'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_max_id(timestamptz, integer) IS
'largest ID of one shard that can carry the millisecond of ts';

-- Text form: pure functions of their argument, independent of the layout.
CREATE FUNCTION snowflake_to_text(id bigint)
RETURNS text
AS 'MODULE_PATHNAME', 'snowflake_to_text'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_to_text(bigint) IS
'13-character Crockford base32 form of an ID; the strings sort like the IDs (safe for JavaScript and JSON)';

CREATE FUNCTION snowflake_from_text(text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowflake_from_text'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_from_text(text) IS
'the ID of a 13-character Crockford base32 form (either case); anything else is an error';

-- STABLE: the layout is fixed at server start, but shard_id follows reloads.
CREATE FUNCTION snowflake_layout(
    OUT epoch timestamptz,
    OUT timestamp_bits integer,
    OUT shard_bits integer,
    OUT sequence_bits integer,
    OUT max_shard_id integer,
    OUT ids_per_ms_per_shard bigint,
    OUT last_timestamp timestamptz,
    OUT shard_id integer,
    OUT id_bits integer,
    OUT time_unit_ms integer,
    OUT ids_per_unit_per_shard bigint,
    OUT datacenter_bits integer,
    OUT datacenter_id integer)
RETURNS record
AS 'MODULE_PATHNAME', 'snowflake_layout'
LANGUAGE C STABLE PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_layout() IS
'the ID layout of this server (epoch, field widths, per-shard ceiling, last representable time, ID width, time unit, datacenter bits) and its shard ID and datacenter (NULL when unset)';

-- Observability: VOLATILE (counters move), PARALLEL SAFE (shared memory).
CREATE FUNCTION snowflake_stats(
    OUT shard_id integer,
    OUT ids_issued bigint,
    OUT last_timestamp timestamptz,
    OUT current_lead_ms bigint,
    OUT reserved_until timestamptz,
    OUT sequence_exhausted bigint,
    OUT clock_steps_back bigint,
    OUT largest_step_back_ms bigint,
    OUT waits bigint,
    OUT wait_time_ms double precision,
    OUT refusals bigint,
    OUT mark_writes bigint,
    OUT inline_mark_writes bigint,
    OUT stats_reset timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'snowflake_stats'
LANGUAGE C VOLATILE PARALLEL SAFE ROWS 1;

COMMENT ON FUNCTION snowflake_stats() IS
'generator statistics, one row per shard used since the server started: IDs issued, last timestamp used and its lead over the clock, the durable mark, sequence exhaustion, backward clock steps, waits, refusals, mark writes';

CREATE VIEW snowflake_stats AS SELECT * FROM snowflake_stats();

COMMENT ON VIEW snowflake_stats IS 'generator statistics (see snowflake_stats())';

-- like pg_stat_statements: everyone may read the statistics
GRANT SELECT ON snowflake_stats TO PUBLIC;

CREATE FUNCTION snowflake_stats_reset()
RETURNS void
AS 'MODULE_PATHNAME', 'snowflake_stats_reset'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

COMMENT ON FUNCTION snowflake_stats_reset() IS
'resets the counters of snowflake_stats(); generation state is untouched';

-- like pg_stat_statements_reset(): superusers, and whom they grant it to
REVOKE ALL ON FUNCTION snowflake_stats_reset() FROM PUBLIC;

-- The shard registry (snowflake.registry: etcd or PostgreSQL): one row, VOLATILE.
CREATE FUNCTION snowflake_registry(
    OUT backend text,
    OUT endpoints text,
    OUT endpoint text,
    OUT prefix text,
    OUT state text,
    OUT shard_id integer,
    OUT datacenter integer,
    OUT worker integer,
    OUT lease_id text,
    OUT lease_ttl integer,
    OUT lease_deadline timestamptz,
    OUT last_keepalive timestamptz,
    OUT freshness_mark timestamptz,
    OUT clock_skew_ms bigint,
    OUT clock_skew_error_ms bigint,
    OUT last_error text,
    OUT requests bigint,
    OUT bytes_sent bigint,
    OUT bytes_received bigint,
    OUT generating boolean)
RETURNS record
AS 'MODULE_PATHNAME', 'snowflake_registry'
LANGUAGE C VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_registry() IS
'the shard registry: backend (etcd or postgresql), its endpoints (no password) and the one in use, ID space (prefix), state (off, claiming, held, expired, pool full, unreachable, mark refused, clock skew), shard held with its datacenter and worker, lease and its deadline, last keep-alive, published freshness mark, this server''s clock minus the registry''s (give or take the error), last error, traffic, and whether generation is allowed now';

-- 1.3, the registry's replication (issue 25, defect 1): how the PostgreSQL
-- registry replicates, as the registry worker last saw it, appended to the
-- snowflake_registry view as registry_replication (the view keeps its other
-- columns, so views built on it stay).
CREATE FUNCTION snowflake_registry_replication()
RETURNS text
AS 'MODULE_PATHNAME', 'snowflake_registry_replication'
LANGUAGE C VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_registry_replication() IS
'how the PostgreSQL registry replicates, as its last answer showed: synchronous, asynchronous (standbys, none synchronous: a failover pauses claims), no standby; NULL when unknown or with etcd';

REVOKE ALL ON FUNCTION snowflake_registry_replication() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION snowflake_registry_replication() TO pg_read_all_stats;

CREATE VIEW snowflake_registry AS
    SELECT r.*, snowflake_registry_replication() AS registry_replication
    FROM snowflake_registry() r;

COMMENT ON VIEW snowflake_registry IS 'the shard registry, etcd or PostgreSQL (see snowflake_registry())';

-- like pg_stat_activity's details: the lease, holders' hosts, ports and data
-- directories are for monitoring roles, not for every login role
REVOKE ALL ON FUNCTION snowflake_registry() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION snowflake_registry() TO pg_read_all_stats;
GRANT SELECT ON snowflake_registry TO pg_read_all_stats;
-- end of the registry's replication block


-- Metrics for Prometheus (postgres_exporter with monitoring/snowflake.queries.yml;
-- docs/monitoring.md): per shard, and for the server and its registry.
-- VOLATILE (counters move), PARALLEL SAFE (shared memory only); times in
-- seconds, counts since snowflake_stats_reset() or the server's start.
CREATE FUNCTION snowflake_metrics(
    OUT shard_id integer,
    OUT ids_issued bigint,
    OUT sequence_exhausted bigint,
    OUT clock_steps_back bigint,
    OUT largest_step_back_seconds double precision,
    OUT waits bigint,
    OUT wait_seconds double precision,
    OUT registry_waits bigint,
    OUT registry_wait_seconds double precision,
    OUT refusals_clock bigint,
    OUT refusals_before_epoch bigint,
    OUT refusals_timestamp_end bigint,
    OUT refusals_registry_mark bigint,
    OUT lead_seconds double precision,
    OUT mark_headroom_seconds double precision,
    OUT inline_mark_writes bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'snowflake_metrics'
LANGUAGE C VOLATILE PARALLEL SAFE ROWS 1;

COMMENT ON FUNCTION snowflake_metrics() IS
'metrics per shard used since the server started, for Prometheus: IDs issued, sequence exhaustions, backward clock steps, waits for the clock and for the registry''s mark and their seconds, refusals by cause (clock, before_epoch, timestamp_end, registry_mark), the lead over the clock and the durable mark''s headroom in seconds, inline mark writes';

-- EXECUTE stays with PUBLIC: the same counters as snowflake_stats, which
-- every role may read

CREATE FUNCTION snowflake_server_metrics(
    OUT shards_used integer,
    OUT max_shards integer,
    OUT mark_writes bigint,
    OUT max_clock_lead_seconds double precision,
    OUT max_clock_wait_seconds double precision,
    OUT timestamp_end timestamptz,
    OUT timestamp_seconds_left double precision,
    OUT generation_refused boolean,
    OUT registry_enabled boolean,
    OUT registry_state text,
    OUT registry_shard_id integer,
    OUT registry_generating boolean,
    OUT registry_lease_ttl_seconds double precision,
    OUT registry_lease_seconds_left double precision,
    OUT registry_mark_ahead_seconds double precision,
    OUT registry_errors bigint,
    OUT registry_refusals bigint,
    OUT registry_clock_skew_seconds double precision,
    OUT registry_clock_skew_error_seconds double precision,
    OUT registry_max_skew_seconds double precision)
RETURNS record
AS 'MODULE_PATHNAME', 'snowflake_server_metrics'
LANGUAGE C VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_server_metrics() IS
'metrics of the server, for Prometheus: shards used and max_shards, mark writes, max_clock_lead and max_clock_wait in seconds, the end of the timestamp field and the seconds left to it, whether generation is refused (damaged or foreign state), and the registry: state, shard held, whether it allows generation, lease TTL, seconds to the lease deadline, freshness mark ahead of the clock, failed requests, calls refused, this server''s clock minus the registry''s with its error (NULL until measured), and snowflake.registry_max_skew, in seconds';

-- the registry's state and lease, like snowflake_registry: for monitoring
-- roles (pg_monitor is a member of pg_read_all_stats), not every login role
REVOKE ALL ON FUNCTION snowflake_server_metrics() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION snowflake_server_metrics() TO pg_read_all_stats;

-- Origin (1.1): the cluster where this database's extension was created, so
-- that a database moved to another cluster without pg_snowflake/ (pg_upgrade,
-- a file-level copy) is refused rather than allowed to repeat old IDs; see
-- README.md, "pg_upgrade and moving databases".  Not dumped by pg_dump: a
-- restored dump gets the row of the cluster it is restored into.
CREATE TABLE snowflake_origin (
    system_identifier bigint NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now()
);

INSERT INTO snowflake_origin (system_identifier)
SELECT system_identifier FROM pg_catalog.pg_control_system();

COMMENT ON TABLE snowflake_origin IS
'system identifier of the cluster whose snowflake state covers this database''s IDs (set by CREATE EXTENSION and snowflake_adopt_database())';

-- every generating call reads it once per session
GRANT SELECT ON snowflake_origin TO PUBLIC;

CREATE FUNCTION snowflake_raise_floor(ts timestamptz, allow_future boolean DEFAULT false)
RETURNS void
AS 'MODULE_PATHNAME', 'snowflake_raise_floor'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION snowflake_raise_floor(timestamptz, boolean) IS
'makes every shard of this server resume strictly above the millisecond of ts (durable, WAL-logged); refuses a ts more than snowflake.max_clock_lead + snowflake.max_clock_wait ahead of the clock unless allow_future; used by snowflake_adopt_database()';

REVOKE ALL ON FUNCTION snowflake_raise_floor(timestamptz, boolean) FROM PUBLIC;

-- Adopting a moved database (1.3: C, was PL/pgSQL).  It reads the largest
-- value of each column without planning a query over the table (planning
-- runs the table owner's index expressions and partial-index predicates),
-- skips other sessions' temporary tables and foreign tables with a NOTICE,
-- and finds everything by OID, never by name: see src/adopt.cpp and
-- README.md, "pg_upgrade and moving databases".
CREATE FUNCTION snowflake_adopt_database(at_least timestamptz DEFAULT NULL,
                                         allow_future boolean DEFAULT false)
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'snowflake_adopt_database'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION snowflake_adopt_database(timestamptz, boolean) IS
'adopts a database moved from another cluster without its snowflake state: resumes above its largest ID in columns defaulting to snowflake functions (and above at_least), then records this cluster as its origin; refuses a floor more than snowflake.max_clock_lead + snowflake.max_clock_wait ahead of the clock unless allow_future';

REVOKE ALL ON FUNCTION snowflake_adopt_database(timestamptz, boolean) FROM PUBLIC;
-- Decoding other systems' IDs by layout name (twitter, discord, instagram,
-- sonyflake, mastodon, or snowflake for this server's own).  IMMUTABLE: the
-- named layouts are constants; "snowflake" is fixed at server start and
-- checked against the data directory, as for snowflake_decode(id).
CREATE FUNCTION snowflake_timestamp(id bigint, layout text)
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'snowflake_timestamp_layout'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_timestamp(bigint, text) IS
'creation time carried by an ID of a named layout: twitter, discord, instagram, sonyflake, mastodon, or snowflake (this server''s)';

CREATE FUNCTION snowflake_shard_id(id bigint, layout text)
RETURNS integer
AS 'MODULE_PATHNAME', 'snowflake_shard_id_layout'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_shard_id(bigint, text) IS
'the whole shard field (machine, worker, ...) of an ID of a named layout; NULL for a layout without one (mastodon)';

CREATE FUNCTION snowflake_sequence(id bigint, layout text)
RETURNS integer
AS 'MODULE_PATHNAME', 'snowflake_sequence_layout'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_sequence(bigint, text) IS
'sequence field of an ID of a named layout';

CREATE FUNCTION snowflake_decode(id bigint, layout text,
    OUT created_at timestamptz,
    OUT shard_id integer,
    OUT sequence integer,
    OUT shard_high integer,
    OUT shard_low integer)
RETURNS record
AS 'MODULE_PATHNAME', 'snowflake_decode_layout'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_decode(bigint, text) IS
'all fields of an ID of a named layout; shard_high/shard_low split a two-part shard field (twitter: datacenter, worker; discord: worker, process)';

-- The largest value of a bigint column (1.3), read in C from a btree on the
-- plain column or from the table itself, never through a planned query:
-- planning "SELECT max(id)" runs the table owner's index expressions and
-- partial-index predicates as the caller.  Owner only; for
-- snowflake_convert_column(), which runs as its caller.  See src/colmax.cpp.
CREATE FUNCTION snowflake_column_max(tbl regclass, col name)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowflake_column_max'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION snowflake_column_max(regclass, name) IS
'largest value of a bigint column of a table the caller owns (and of every table under it), read without running any code of the table''s; refuses other sessions'' temporary tables and foreign tables; used by snowflake_convert_column()';

-- Converting an existing key column to snowflake IDs.  PL/pgSQL, SECURITY
-- INVOKER (the caller must own the table, as for ALTER TABLE), with a fixed
-- search_path; every name is quoted with format() and the extension's own
-- functions are called through its schema, found at run time (the extension
-- is relocatable).  It plans no query over the table: the largest existing
-- value comes from snowflake_column_max() (1.3).  It runs in the caller's
-- transaction: any refusal raises an error, so nothing it did stays.  See
-- README.md, "Converting existing key columns".
CREATE FUNCTION snowflake_convert_column(tbl regclass, col name, shard integer,
                                         drop_sequence boolean DEFAULT true,
                                         as_type boolean DEFAULT false)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $convert$
DECLARE
    ext name;
    rel record;
    att record;
    r record;
    tree regclass[];
    new_default text;
    seqs regclass[] := '{}';
    owned regclass[] := '{}';
    foreign_default text;
    already boolean := false;
    citus_key boolean := false;
    old_default text;
    seq_rel regclass;
    probe bigint;
    id_floor bigint;
    max_value bigint;
    users text;
    changes text[] := '{}';
    last_value bigint;
    sf_type regtype;
    small_max bigint;
    done text;
BEGIN
    IF tbl IS NULL OR col IS NULL OR drop_sequence IS NULL OR as_type IS NULL THEN
        RAISE EXCEPTION 'snowflake_convert_column: arguments must not be NULL'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    SELECT n.nspname INTO ext
    FROM pg_catalog.pg_extension e JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace
    WHERE e.extname = 'snowflake';

    -- functions of our names in our schema that are not ours would make the
    -- calls below ambiguous: say so instead (they never run: see the README,
    -- "Privileges")
    PERFORM 1 FROM pg_catalog.pg_proc p
    JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace AND n.nspname = ext
    WHERE p.proname IN ('snowflake_nextval', 'snowflake_min_id', 'snowflake_convert_column',
                        'snowflake_column_max')
      AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend d
                      JOIN pg_catalog.pg_extension e ON e.oid = d.refobjid AND e.extname = 'snowflake'
                      WHERE d.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND d.objid = p.oid
                        AND d.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass
                        AND d.deptype = 'e');
    IF FOUND THEN
        RAISE EXCEPTION 'schema % holds functions named like snowflake''s own that are not the extension''s',
                        ext
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Drop them, or move the extension to a schema only trusted roles may create in '
                         '(ALTER EXTENSION snowflake SET SCHEMA ...).';
    END IF;

    -- what it is, and whose
    SELECT c.relkind, c.relispartition, c.relowner INTO rel
    FROM pg_catalog.pg_class c WHERE c.oid = tbl;
    IF rel.relkind NOT IN ('r', 'p') THEN
        RAISE EXCEPTION '"%" is not a table', tbl
            USING ERRCODE = 'wrong_object_type';
    END IF;
    IF rel.relispartition THEN
        RAISE EXCEPTION 'cannot convert a column of partition %', tbl
            USING ERRCODE = 'wrong_object_type',
                  DETAIL = 'Inserts through the partitioned table use its default, not the partition''s.',
                  HINT = format('Convert the column of the partitioned table %s: that changes every partition.',
                                pg_catalog.pg_partition_root(tbl));
    END IF;
    IF NOT pg_catalog.pg_has_role(current_user, rel.relowner, 'USAGE') THEN
        RAISE EXCEPTION 'must be owner of table %', tbl
            USING ERRCODE = 'insufficient_privilege',
                  HINT = format('Run snowflake_convert_column() as %I or a member of that role.',
                                pg_catalog.pg_get_userbyid(rel.relowner));
    END IF;
    SELECT a.attnum, a.atttypid, a.attidentity, a.attgenerated INTO att
    FROM pg_catalog.pg_attribute a
    WHERE a.attrelid = tbl AND a.attname = col AND a.attnum > 0 AND NOT a.attisdropped;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'column "%" of relation % does not exist', col, tbl
            USING ERRCODE = 'undefined_column';
    END IF;
    -- an integer or smallint key converts with as_type (1.3, issue 33): the
    -- new type holds the IDs, and no value of the old one reaches them
    small_max := CASE att.atttypid WHEN 'pg_catalog.int2'::pg_catalog.regtype THEN 32767
                                   WHEN 'pg_catalog.int4'::pg_catalog.regtype THEN 2147483647 END;
    IF att.atttypid <> 'pg_catalog.int8'::pg_catalog.regtype AND NOT (as_type AND small_max IS NOT NULL) THEN
        RAISE EXCEPTION 'column "%" of % is of type %, not bigint', col, tbl,
                        pg_catalog.format_type(att.atttypid, NULL)
            USING ERRCODE = 'datatype_mismatch',
                  DETAIL = 'Snowflake IDs need all 64 bits of a bigint.',
                  HINT = CASE WHEN small_max IS NOT NULL
                              THEN format('Convert it with as_type => true (to the type snowflake), or change its '
                                          'type first: ALTER TABLE %s ALTER COLUMN %I TYPE bigint;', tbl, col)
                              ELSE format('Change its type first: ALTER TABLE %s ALTER COLUMN %I TYPE bigint;',
                                          tbl, col) END;
    END IF;
    IF att.attgenerated <> '' THEN
        RAISE EXCEPTION 'column "%" of % is a generated column', col, tbl
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;

    -- no one inserts with the old default while we look and change
    EXECUTE format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE', tbl);

    -- Citus: a default on a distribution column cannot be added or changed
    IF pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL THEN
        EXECUTE 'SELECT count(*) > 0 FROM pg_catalog.pg_dist_partition
                 WHERE logicalrelid = $1 AND partkey ~ $2'
            INTO STRICT citus_key USING tbl, format(':varattno %s( |$)', att.attnum);
        IF citus_key THEN
            RAISE EXCEPTION 'cannot convert the distribution column "%" of %', col, tbl
                USING ERRCODE = 'feature_not_supported',
                      DETAIL = 'Citus refuses to add or change a default on a distribution column.',
                      HINT = 'Create a new table with DEFAULT snowflake_nextval() in CREATE TABLE, '
                             'distribute it with create_distributed_table(), and copy the rows over.';
        END IF;
    END IF;

    -- the table and its partitions, and each one's copy of the column
    SELECT pg_catalog.array_agg(t.relid ORDER BY t.level) INTO tree
    FROM pg_catalog.pg_partition_tree(tbl) t;
    IF tree IS NULL THEN
        tree := ARRAY[tbl];
    END IF;
    FOR r IN
        SELECT c.oid::regclass AS relid, a.attnum, a.attidentity, d.oid AS defoid,
               pg_catalog.pg_get_expr(d.adbin, d.adrelid) AS expr
        FROM pg_catalog.unnest(tree) AS c(oid)
        JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid AND a.attname = col AND NOT a.attisdropped
        LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
    LOOP
        -- sequences the column owns: serial (auto) and identity (internal)
        owned := owned || ARRAY(
            SELECT dep.objid::regclass FROM pg_catalog.pg_depend dep
            JOIN pg_catalog.pg_class s ON s.oid = dep.objid AND s.relkind = 'S'
            WHERE dep.classid = 'pg_catalog.pg_class'::regclass
              AND dep.refclassid = 'pg_catalog.pg_class'::regclass
              AND dep.refobjid = r.relid AND dep.refobjsubid = r.attnum
              AND dep.deptype IN ('a', 'i'));
        IF r.defoid IS NOT NULL THEN
            -- sequences the default reads, whatever their names
            seqs := seqs || ARRAY(
                SELECT dep.refobjid::regclass FROM pg_catalog.pg_depend dep
                JOIN pg_catalog.pg_class s ON s.oid = dep.refobjid AND s.relkind = 'S'
                WHERE dep.classid = 'pg_catalog.pg_attrdef'::regclass AND dep.objid = r.defoid
                  AND dep.refclassid = 'pg_catalog.pg_class'::regclass);
            -- ours if the default calls snowflake_nextval of this extension:
            -- the function by OID (a member of the extension), never by text
            IF EXISTS (
                SELECT 1 FROM pg_catalog.pg_depend dep
                JOIN pg_catalog.pg_depend x
                  ON x.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND x.objid = dep.refobjid
                 AND x.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass AND x.deptype = 'e'
                JOIN pg_catalog.pg_extension e ON e.oid = x.refobjid AND e.extname = 'snowflake'
                JOIN pg_catalog.pg_proc p ON p.oid = dep.refobjid AND p.proname = 'snowflake_nextval'
                WHERE dep.classid = 'pg_catalog.pg_attrdef'::pg_catalog.regclass AND dep.objid = r.defoid
                  AND dep.refclassid = 'pg_catalog.pg_proc'::pg_catalog.regclass) THEN
                already := true;
            ELSIF NOT EXISTS (
                SELECT 1 FROM pg_catalog.pg_depend dep
                JOIN pg_catalog.pg_class s ON s.oid = dep.refobjid AND s.relkind = 'S'
                WHERE dep.classid = 'pg_catalog.pg_attrdef'::regclass AND dep.objid = r.defoid) THEN
                foreign_default := r.expr;
            END IF;
        END IF;
    END LOOP;
    SELECT pg_catalog.array_agg(DISTINCT o.x) INTO owned FROM pg_catalog.unnest(owned) AS o(x);
    owned := coalesce(owned, '{}');
    SELECT pg_catalog.array_agg(DISTINCT o.x) INTO seqs FROM pg_catalog.unnest(owned || seqs) AS o(x);
    IF foreign_default IS NOT NULL THEN
        RAISE EXCEPTION 'column "%" of % has a default that is not a sequence: %', col, tbl, foreign_default
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = format('If snowflake IDs should replace it, drop it first: '
                                'ALTER TABLE %s ALTER COLUMN %I DROP DEFAULT;', tbl, col);
    END IF;

    -- can this server generate here at all?  (one ID is spent on the check)
    IF shard IS NULL THEN
        EXECUTE format('SELECT %I.snowflake_nextval()', ext) INTO probe;
        new_default := format('%I.snowflake_nextval()', ext);
    ELSE
        EXECUTE format('SELECT %I.snowflake_nextval($1)', ext) INTO probe USING shard;
        new_default := format('%I.snowflake_nextval(%s)', ext, shard);
    END IF;

    -- existing values must stay below every ID issued from now on
    EXECUTE format('SELECT %I.snowflake_min_id(now())', ext) INTO id_floor;
    -- read without planning anything over the table (its index expressions
    -- and predicates would run as the caller)
    -- (an integer or smallint column: its type's largest value, without reading)
    IF small_max IS NULL THEN
        EXECUTE format('SELECT %I.snowflake_column_max($1, $2)', ext) INTO max_value USING tbl, col;
    ELSE
        max_value := small_max;
    END IF;
    IF max_value >= id_floor THEN
        RAISE EXCEPTION 'existing values of column "%" of % could collide with snowflake IDs', col, tbl
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = format('Its largest value %s %s; snowflake IDs issued from now on are '
                                  'at least %s (snowflake_min_id(now())).',
                                  CASE WHEN small_max IS NULL THEN 'is' ELSE 'may be (as its type allows)' END,
                                  max_value, id_floor),
                  HINT = 'Give those rows smaller keys first, or keep the column as it is.';
    END IF;

    -- a partition key must still route new IDs to a partition
    FOR r IN
        SELECT pt.partrelid::regclass AS parent, pt.partstrat, pt.partnatts
        FROM pg_catalog.pg_partitioned_table pt
        JOIN pg_catalog.pg_attribute a ON a.attrelid = pt.partrelid AND a.attname = col
        WHERE pt.partrelid = ANY (tree) AND a.attnum = ANY (pt.partattrs::int2[])
          AND pt.partstrat <> 'h'
    LOOP
        IF r.partstrat = 'l' OR r.partnatts > 1 OR NOT EXISTS (
            SELECT 1
            FROM pg_catalog.pg_inherits i
            JOIN pg_catalog.pg_class c ON c.oid = i.inhrelid
            CROSS JOIN LATERAL pg_catalog.pg_get_expr(c.relpartbound, c.oid) AS bound(text)
            LEFT JOIN LATERAL pg_catalog.regexp_match(bound.text,
                '^FOR VALUES FROM \((MINVALUE|''?(-?[0-9]+)''?(?:::bigint)?)\) '
                'TO \((MAXVALUE|''?(-?[0-9]+)''?(?:::bigint)?)\)$') AS b(v) ON true
            WHERE i.inhparent = r.parent
              AND (bound.text = 'DEFAULT'
                   OR ((b.v[1] = 'MINVALUE' OR b.v[2]::numeric <= probe)
                       AND (b.v[3] = 'MAXVALUE' OR b.v[4]::numeric > probe)))) THEN
            RAISE EXCEPTION 'no partition of % would accept new snowflake IDs in column "%"', r.parent, col
                USING ERRCODE = 'object_not_in_prerequisite_state',
                      DETAIL = CASE WHEN r.partstrat = 'l'
                                    THEN 'The column is a list partition key.'
                                    WHEN r.partnatts > 1
                                    THEN 'The column is part of a multi-column partition key.'
                                    ELSE format('New IDs are about %s; no range partition (and no default partition) holds that.', probe) END,
                      HINT = CASE WHEN r.partstrat = 'l' OR r.partnatts > 1
                                  THEN 'New snowflake IDs cannot be routed by a list of values or a multi-column '
                                       'key: partition by RANGE on the ID alone (bounds from snowflake_min_id()) '
                                       'or by HASH, or keep the column as it is.'
                                  ELSE format('Add a partition for the new IDs first, for example: CREATE TABLE ... '
                                              'PARTITION OF %s FOR VALUES FROM (%s.snowflake_min_id(''...'')) TO (MAXVALUE);',
                                              r.parent, pg_catalog.quote_ident(ext)) END;
        END IF;
    END LOOP;

    -- the change: identity off, new default on, sequences dropped or kept
    SELECT pg_catalog.pg_get_expr(d.adbin, d.adrelid) INTO old_default
    FROM pg_catalog.pg_attrdef d WHERE d.adrelid = tbl AND d.adnum = att.attnum;
    FOR r IN
        SELECT c.oid::regclass AS relid, a.attidentity,
               (SELECT k.relkind FROM pg_catalog.pg_class k WHERE k.oid = c.oid) AS relkind,
               (SELECT dep.objid::regclass::text FROM pg_catalog.pg_depend dep
                WHERE dep.classid = 'pg_catalog.pg_class'::regclass
                  AND dep.refclassid = 'pg_catalog.pg_class'::regclass
                  AND dep.refobjid = c.oid AND dep.refobjsubid = a.attnum
                  AND dep.deptype = 'i') AS seq,
               (SELECT pg_catalog.pg_sequence_last_value(dep.objid::regclass) FROM pg_catalog.pg_depend dep
                WHERE dep.classid = 'pg_catalog.pg_class'::regclass
                  AND dep.refclassid = 'pg_catalog.pg_class'::regclass
                  AND dep.refobjid = c.oid AND dep.refobjsubid = a.attnum
                  AND dep.deptype = 'i') AS last
        FROM pg_catalog.unnest(tree) WITH ORDINALITY AS c(oid, n)
        JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid AND a.attname = col AND NOT a.attisdropped
        WHERE a.attidentity <> ''
        ORDER BY c.n
    LOOP
        -- PostgreSQL 17 gives partitions their parent's identity and drops it
        -- from the whole tree at once; before 17 each table has its own
        CONTINUE WHEN NOT EXISTS (
            SELECT 1 FROM pg_catalog.pg_attribute a
            WHERE a.attrelid = r.relid AND a.attname = col AND a.attidentity <> '');
        IF r.relkind = 'p' AND pg_catalog.current_setting('server_version_num')::int >= 170000 THEN
            EXECUTE format('ALTER TABLE %s ALTER COLUMN %I DROP IDENTITY', r.relid, col);
        ELSE
            EXECUTE format('ALTER TABLE ONLY %s ALTER COLUMN %I DROP IDENTITY', r.relid, col);
        END IF;
        changes := changes || format('dropped the identity (GENERATED %s AS IDENTITY) of %s with its sequence %s (last value %s)',
                                     CASE r.attidentity WHEN 'a' THEN 'ALWAYS' ELSE 'BY DEFAULT' END,
                                     r.relid, r.seq, coalesce(r.last::text, 'none'));
    END LOOP;
    -- as_type (1.3): the column becomes of the extension's own type snowflake,
    -- found by membership, never by name (a rewrite of the table; a negative
    -- value, a partition key or a bigint column referencing it refuses, and
    -- then nothing stays)
    -- the change of type rewrites the table and checks its constraints as the
    -- caller: only the owner itself may do that (a superuser would run the
    -- owner's code with its own rights)
    IF as_type AND rel.relowner <> (SELECT ro.oid FROM pg_catalog.pg_roles ro WHERE ro.rolname = current_user) THEN
        RAISE EXCEPTION 'only the owner of table % may convert its column to the type snowflake', tbl
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = 'The change of type rewrites the table and evaluates its constraints as the caller.',
                  HINT = format('Run it as %I (SET ROLE %I), or convert without as_type.',
                                pg_catalog.pg_get_userbyid(rel.relowner), pg_catalog.pg_get_userbyid(rel.relowner));
    END IF;
    IF as_type THEN
        SELECT t.oid::pg_catalog.regtype INTO STRICT sf_type
        FROM pg_catalog.pg_depend d
        JOIN pg_catalog.pg_extension e ON e.oid = d.refobjid AND e.extname = 'snowflake'
        JOIN pg_catalog.pg_type t ON t.oid = d.objid AND t.typtype = 'b' AND t.typelem = 0
        WHERE d.classid = 'pg_catalog.pg_type'::pg_catalog.regclass
          AND d.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass AND d.deptype = 'e';
        EXECUTE format('ALTER TABLE %s ALTER COLUMN %I TYPE %s', tbl, col, sf_type);
        changes := changes || format('changed its type from %s to %s (JSON built on the server carries it as a string)',
                                     pg_catalog.format_type(att.atttypid, NULL), sf_type);
    END IF;
    -- after the change of type: a default set before it would be converted
    -- through the old type (an integer's would overflow)
    EXECUTE format('ALTER TABLE %s ALTER COLUMN %I SET DEFAULT %s', tbl, col, new_default);
    IF old_default IS NOT NULL THEN
        changes := changes || format('replaced DEFAULT %s', old_default);
    END IF;
    IF already THEN
        changes := changes || 'the column already used snowflake IDs'::text;
    END IF;

    FOREACH seq_rel IN ARRAY coalesce(seqs, '{}') LOOP
        CONTINUE WHEN NOT EXISTS (SELECT 1 FROM pg_catalog.pg_class c WHERE c.oid = seq_rel);
        SELECT pg_catalog.string_agg(pg_catalog.pg_describe_object(d.classid, d.objid, d.objsubid), ', ')
        INTO users
        FROM pg_catalog.pg_depend d
        WHERE d.refclassid = 'pg_catalog.pg_class'::regclass AND d.refobjid = seq_rel AND d.deptype = 'n';
        last_value := pg_catalog.pg_sequence_last_value(seq_rel);
        IF seq_rel = ANY (owned) AND drop_sequence THEN
            IF users IS NOT NULL THEN
                RAISE EXCEPTION 'cannot drop sequence % because other objects still use it', seq_rel
                    USING ERRCODE = 'dependent_objects_still_exist',
                          DETAIL = format('Still using it: %s.', users),
                          HINT = 'Convert those columns first, or pass drop_sequence => false to keep the sequence.';
            END IF;
            changes := changes || format('dropped sequence %s (last value %s)', seq_rel, coalesce(last_value::text, 'none'));
            EXECUTE format('DROP SEQUENCE %s', seq_rel);
        ELSE
            changes := changes || format('kept sequence %s (last value %s%s)', seq_rel, coalesce(last_value::text, 'none'),
                                         CASE WHEN NOT seq_rel = ANY (owned) THEN '; the column does not own it'
                                              ELSE '; drop_sequence => false' END
                                         || CASE WHEN users IS NOT NULL THEN '; still used by ' || users ELSE '' END);
        END IF;
    END LOOP;

    done := pg_catalog.array_to_string(changes || CASE WHEN small_max IS NOT NULL
                  THEN format('existing values (of type %s, at most %s) stay below every new ID',
                              pg_catalog.format_type(att.atttypid, NULL), small_max)
                  WHEN max_value IS NULL THEN 'no existing rows'
                  ELSE format('existing values (up to %s) stay below every new ID', max_value) END,
                  '; ') || '.';
    IF as_type THEN
        -- what PostgreSQL's rules for common types make of the new type
        -- (docs/json-and-javascript.md, "The type in expressions")
        RAISE NOTICE 'column "%" of % now defaults to %', col, tbl, new_default
            USING DETAIL = done,
                  HINT = 'With integer values (COALESCE(max(id), 0), CASE ... ELSE 0, GREATEST, UNION, VALUES, IN) '
                         'the column stays a snowflake; with a bigint (a bigint column or parameter, 0::bigint) '
                         'the result is a bigint, a JSON number: cast that side to snowflake to keep a snowflake. '
                         'A negative integer there fails (snowflakes are never negative).';
    ELSE
        RAISE NOTICE 'column "%" of % now defaults to %', col, tbl, new_default
            USING DETAIL = done;
    END IF;
END
$convert$;

COMMENT ON FUNCTION snowflake_convert_column(regclass, name, integer, boolean, boolean) IS
'switches a bigint key fed by a sequence (bigserial, DEFAULT nextval, identity) to DEFAULT snowflake_nextval(shard) in the caller''s transaction, without touching rows; drops the column''s own sequence unless drop_sequence is false; with as_type, also changes the column to the type snowflake (an integer or smallint key too)';

CREATE FUNCTION snowflake_convert_column(tbl regclass, col name, drop_sequence boolean DEFAULT true,
                                         as_type boolean DEFAULT false)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $convert$
BEGIN
    EXECUTE format('SELECT %I.snowflake_convert_column($1, $2, NULL::integer, $3, $4)',
                   (SELECT n.nspname FROM pg_catalog.pg_extension e
                    JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace
                    WHERE e.extname = 'snowflake'))
        USING tbl, col, drop_sequence, as_type;
END
$convert$;

COMMENT ON FUNCTION snowflake_convert_column(regclass, name, boolean, boolean) IS
'switches a bigint key fed by a sequence (bigserial, DEFAULT nextval, identity) to DEFAULT snowflake_nextval() in the caller''s transaction, without touching rows; drops the column''s own sequence unless drop_sequence is false; with as_type, also changes the column to the type snowflake (an integer or smallint key too)';

-- Datacenters (1.2): the shard field is datacenter | worker with
-- snowflake.datacenter_bits; IMMUTABLE like the other decoders.
CREATE FUNCTION snowflake_datacenter(id bigint)
RETURNS integer
AS 'MODULE_PATHNAME', 'snowflake_datacenter'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_datacenter(bigint) IS
'datacenter part of the shard field of a Snowflake ID (snowflake.datacenter_bits; 0 without datacenters)';

CREATE FUNCTION snowflake_worker(id bigint)
RETURNS integer
AS 'MODULE_PATHNAME', 'snowflake_worker'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_worker(bigint) IS
'worker part of the shard field of a Snowflake ID (the whole shard field without datacenters)';

-- Backfill (1.2): IDs carrying an imported row's original creation time, on
-- shards reserved for imports (snowflake.import_shards), never used live.
-- Granted like logical shards: the operator chooses who may import.
CREATE FUNCTION snowflake_nextval_at(created_at timestamptz, shard_id integer)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowflake_nextval_at'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION snowflake_nextval_at(timestamptz, integer) IS
'an ID of an import shard (snowflake.import_shards) carrying created_at (to the time unit); times must not decrease per shard';

CREATE FUNCTION snowflake_nextval_at_batch(created_at timestamptz[], shard_id integer)
RETURNS SETOF bigint
AS 'MODULE_PATHNAME', 'snowflake_nextval_at_batch'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE ROWS 1000;

COMMENT ON FUNCTION snowflake_nextval_at_batch(timestamptz[], integer) IS
'one ID per element of a sorted array of creation times, in order, on an import shard (snowflake.import_shards)';

REVOKE ALL ON FUNCTION snowflake_nextval_at(timestamptz, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION snowflake_nextval_at_batch(timestamptz[], integer) FROM PUBLIC;

-- Partitioning by the key (1.2): the number of IDs in a span of time, for
-- range partitioning in fixed steps of IDs (pg_partman's integer
-- partitioning), the bounds such partitions have, and the span a step of IDs
-- covers.  Integer partitions start at multiples of the step counted from
-- ID 0, which is snowflake.epoch, so they start at UTC midnights (or whole
-- hours, ...) only when the epoch does; the functions refuse a span that
-- would not, unless require_alignment is false.  In C, reading the layout
-- (time unit included) itself.  IMMUTABLE for the reason the decoders are:
-- the layout is fixed at server start and checked against the data
-- directory.  See docs/operations.md, "Partitioning by the key with pg_partman".
CREATE FUNCTION snowflake_partition_interval(span interval DEFAULT '1 day',
                                             require_alignment boolean DEFAULT true)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowflake_partition_interval'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_partition_interval(interval, boolean) IS
'the number of IDs in a span of time (default 1 day): the interval for pg_partman''s integer partitioning on a snowflake key; refuses spans whose partitions would not start at UTC midnights (or multiples of the span in the UTC day) unless require_alignment is false';

CREATE FUNCTION snowflake_partition_bounds(from_time timestamptz, to_time timestamptz,
                                           span interval DEFAULT '1 day',
                                           require_alignment boolean DEFAULT true,
                                           OUT starts timestamptz, OUT ends timestamptz,
                                           OUT from_id bigint, OUT to_id bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'snowflake_partition_bounds'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE ROWS 100;

COMMENT ON FUNCTION snowflake_partition_bounds(timestamptz, timestamptz, interval, boolean) IS
'the partitions of a fixed number of IDs (snowflake_partition_interval(span), as pg_partman makes them) that hold the IDs of [from_time, to_time): each one''s start and end times and ID bounds (from_id inclusive, to_id exclusive)';

CREATE FUNCTION snowflake_partition_span(ids bigint)
RETURNS interval
AS 'MODULE_PATHNAME', 'snowflake_partition_span'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_partition_span(bigint) IS
'the span of time a partition interval of ids IDs covers in this layout (the reverse of snowflake_partition_interval), to check pg_partman''s partition_interval; an error if it is not a whole number of time units';

-- ---- Public IDs (issue 29, part 2) ----------------------------------------
-- A keyed permutation of the 64-bit space (a 10-round Feistel network over
-- HMAC-SHA-256) in a fixed 14-character URL-safe form whose first character
-- is the key version.  Keys come from snowflake.public_id_keys (superuser
-- only).  STABLE, not IMMUTABLE: the keys change at a reload, so the result
-- may differ from one statement to the next; no expression index or
-- generated column may hold a public ID (decode and use the bigint key).

CREATE FUNCTION snowflake_public_id(id bigint)
RETURNS text
AS 'MODULE_PATHNAME', 'snowflake_public_id'
LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_public_id(bigint) IS
'the public ID of an ID: 14 URL-safe characters (a key version, then the ID encrypted under the first key of snowflake.public_id_keys); consecutive IDs give unrelated strings';

CREATE FUNCTION snowflake_public_id(id bigint, tweak text)
RETURNS text
AS 'MODULE_PATHNAME', 'snowflake_public_id'
LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_public_id(bigint, text) IS
'the public ID of an ID under a tweak (such as a table or tenant name): the same ID under two tweaks gives unrelated strings; decode with the same tweak';

CREATE FUNCTION snowflake_from_public_id(public_id text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowflake_from_public_id'
LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_from_public_id(text) IS
'the ID of a public ID (either case), under the key of its version; 22P02 if it is not a public ID, 22023 if snowflake.public_id_keys does not list its version';

CREATE FUNCTION snowflake_from_public_id(public_id text, tweak text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowflake_from_public_id'
LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_from_public_id(text, text) IS
'the ID of a public ID made with snowflake_public_id(id, tweak) and the same tweak';
-- ---- end of Public IDs ------------------------------------------------------

-- ===========================================================================
-- The snowflake type (1.3, issue 28): a bigint that JSON writes as a string,
-- with time comparisons the planner understands.  One block, kept the same in
-- snowflake--1.3.sql and snowflake--1.2--1.3.sql.  See docs/operations.md,
-- "The snowflake type", and src/sftype.cpp.
--
-- Its output, send, comparison, sort and hash functions are int8's own
-- (LANGUAGE internal): a key of the type costs what a bigint key does.  Only
-- its input (decimal digits, never negative), binary receive, the casts from
-- integers and the comparisons with timestamptz are ours.
-- ===========================================================================

CREATE TYPE snowflake;

CREATE FUNCTION snowflake_in(cstring) RETURNS snowflake
AS 'MODULE_PATHNAME', 'snowflake_in' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION snowflake_in(cstring) IS 'input function of type snowflake: decimal digits, never negative';
CREATE FUNCTION snowflake_out(snowflake) RETURNS cstring
AS 'int8out' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION snowflake_out(snowflake) IS 'output function of type snowflake: decimal (int8''s)';
CREATE FUNCTION snowflake_recv(internal) RETURNS snowflake
AS 'MODULE_PATHNAME', 'snowflake_recv' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION snowflake_recv(internal) IS 'binary receive function of type snowflake: int8''s form, never negative';
CREATE FUNCTION snowflake_send(snowflake) RETURNS bytea
AS 'int8send' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION snowflake_send(snowflake) IS 'binary send function of type snowflake: int8''s form';

-- int8's size, passing and alignment.  Category N (numeric), not preferred,
-- as bigint's (1.3, issue 33): PostgreSQL finds a common type for COALESCE,
-- CASE, GREATEST, UNION and VALUES only within one category, so with U
-- "COALESCE(max(id), 0)" failed (42804).  JSON does not follow the category:
-- to_json() and the rest write every type but PostgreSQL's own numbers as a
-- string, so a snowflake stays a JSON string.
CREATE TYPE snowflake (
    INPUT = snowflake_in,
    OUTPUT = snowflake_out,
    RECEIVE = snowflake_recv,
    SEND = snowflake_send,
    LIKE = pg_catalog.int8,
    CATEGORY = 'N'
);

COMMENT ON TYPE snowflake IS
'a Snowflake ID: a non-negative bigint, written in decimal, that JSON built on the server writes as a string; compares with bigint and, as its creation time, with timestamptz';

-- Casts, all refusing negative values.  integer and smallint to snowflake
-- implicitly (1.3, issue 33): "COALESCE(max(id), 0)", "GREATEST(id, 7)",
-- "CASE ... ELSE 0", "id IN (1, 2)" and UNION with integers give a snowflake
-- (the integers' cross-type comparisons stay exact matches, so "id = 5"
-- resolves as before).  bigint to snowflake on assignment only (DEFAULT
-- snowflake_nextval(), INSERT, UPDATE): implicit both ways, the first of a
-- UNION would decide its type, and any bigint would compare with a time as
-- an ID.  snowflake to bigint implicitly and for free (the decoders and
-- bigint arithmetic take it as it is), so a snowflake mixed with a bigint
-- gives a bigint, as integer and bigint give bigint.
CREATE FUNCTION snowflake(bigint) RETURNS snowflake
AS 'MODULE_PATHNAME', 'snowflake_from_int8' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION snowflake(bigint) IS 'cast from bigint to snowflake (on assignment), refusing negative values';
CREATE FUNCTION snowflake(integer) RETURNS snowflake
AS 'MODULE_PATHNAME', 'snowflake_from_int4' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION snowflake(integer) IS 'cast from integer to snowflake (implicit), refusing negative values';
CREATE FUNCTION snowflake(smallint) RETURNS snowflake
AS 'MODULE_PATHNAME', 'snowflake_from_int2' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION snowflake(smallint) IS 'cast from smallint to snowflake (implicit), refusing negative values';
CREATE CAST (bigint AS snowflake) WITH FUNCTION snowflake(bigint) AS ASSIGNMENT;
CREATE CAST (integer AS snowflake) WITH FUNCTION snowflake(integer) AS IMPLICIT;
CREATE CAST (smallint AS snowflake) WITH FUNCTION snowflake(smallint) AS IMPLICIT;
CREATE CAST (snowflake AS bigint) WITHOUT FUNCTION AS IMPLICIT;

-- Comparisons among snowflakes and with bigint, integer and smallint: int8's
-- functions.  The cross-type operators make "id = 384004287098785976",
-- "id = 1" and "id = $1" (a bigint or integer parameter) resolve to an
-- operator of the type's btree family, without "operator is not unique": an
-- Index Cond on a key of the type.  They are not MERGES: a merge join would
-- sort the bigint side with the family's bigint order, which it does not
-- hold (keeping int8's own operators out of it keeps them in one family).

CREATE FUNCTION snowflake_lt(snowflake, snowflake) RETURNS boolean
AS 'int8lt' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION snowflake_lt(snowflake, snowflake) IS 'implements snowflake < snowflake (int8''s comparison)';
CREATE FUNCTION snowflake_le(snowflake, snowflake) RETURNS boolean
AS 'int8le' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION snowflake_le(snowflake, snowflake) IS 'implements snowflake <= snowflake (int8''s comparison)';
CREATE FUNCTION snowflake_eq(snowflake, snowflake) RETURNS boolean
AS 'int8eq' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION snowflake_eq(snowflake, snowflake) IS 'implements snowflake = snowflake (int8''s comparison)';
CREATE FUNCTION snowflake_ne(snowflake, snowflake) RETURNS boolean
AS 'int8ne' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION snowflake_ne(snowflake, snowflake) IS 'implements snowflake <> snowflake (int8''s comparison)';
CREATE FUNCTION snowflake_ge(snowflake, snowflake) RETURNS boolean
AS 'int8ge' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION snowflake_ge(snowflake, snowflake) IS 'implements snowflake >= snowflake (int8''s comparison)';
CREATE FUNCTION snowflake_gt(snowflake, snowflake) RETURNS boolean
AS 'int8gt' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION snowflake_gt(snowflake, snowflake) IS 'implements snowflake > snowflake (int8''s comparison)';
CREATE OPERATOR < (LEFTARG = snowflake, RIGHTARG = snowflake, FUNCTION = snowflake_lt,
    COMMUTATOR = >, NEGATOR = >=, RESTRICT = scalarltsel, JOIN = scalarltjoinsel);
CREATE OPERATOR <= (LEFTARG = snowflake, RIGHTARG = snowflake, FUNCTION = snowflake_le,
    COMMUTATOR = >=, NEGATOR = >, RESTRICT = scalarlesel, JOIN = scalarlejoinsel);
CREATE OPERATOR = (LEFTARG = snowflake, RIGHTARG = snowflake, FUNCTION = snowflake_eq,
    COMMUTATOR = =, NEGATOR = <>, RESTRICT = eqsel, JOIN = eqjoinsel,
    HASHES, MERGES);
CREATE OPERATOR <> (LEFTARG = snowflake, RIGHTARG = snowflake, FUNCTION = snowflake_ne,
    COMMUTATOR = <>, NEGATOR = =, RESTRICT = neqsel, JOIN = neqjoinsel);
CREATE OPERATOR >= (LEFTARG = snowflake, RIGHTARG = snowflake, FUNCTION = snowflake_ge,
    COMMUTATOR = <=, NEGATOR = <, RESTRICT = scalargesel, JOIN = scalargejoinsel);
CREATE OPERATOR > (LEFTARG = snowflake, RIGHTARG = snowflake, FUNCTION = snowflake_gt,
    COMMUTATOR = <, NEGATOR = <=, RESTRICT = scalargtsel, JOIN = scalargtjoinsel);

CREATE FUNCTION snowflake_int8_lt(snowflake, bigint) RETURNS boolean
AS 'int8lt' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION snowflake_int8_lt(snowflake, bigint) IS 'implements snowflake < bigint (int8''s comparison)';
CREATE FUNCTION snowflake_int8_le(snowflake, bigint) RETURNS boolean
AS 'int8le' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION snowflake_int8_le(snowflake, bigint) IS 'implements snowflake <= bigint (int8''s comparison)';
CREATE FUNCTION snowflake_int8_eq(snowflake, bigint) RETURNS boolean
AS 'int8eq' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION snowflake_int8_eq(snowflake, bigint) IS 'implements snowflake = bigint (int8''s comparison)';
CREATE FUNCTION snowflake_int8_ne(snowflake, bigint) RETURNS boolean
AS 'int8ne' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION snowflake_int8_ne(snowflake, bigint) IS 'implements snowflake <> bigint (int8''s comparison)';
CREATE FUNCTION snowflake_int8_ge(snowflake, bigint) RETURNS boolean
AS 'int8ge' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION snowflake_int8_ge(snowflake, bigint) IS 'implements snowflake >= bigint (int8''s comparison)';
CREATE FUNCTION snowflake_int8_gt(snowflake, bigint) RETURNS boolean
AS 'int8gt' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION snowflake_int8_gt(snowflake, bigint) IS 'implements snowflake > bigint (int8''s comparison)';
CREATE OPERATOR < (LEFTARG = snowflake, RIGHTARG = bigint, FUNCTION = snowflake_int8_lt,
    COMMUTATOR = >, NEGATOR = >=, RESTRICT = scalarltsel, JOIN = scalarltjoinsel);
CREATE OPERATOR <= (LEFTARG = snowflake, RIGHTARG = bigint, FUNCTION = snowflake_int8_le,
    COMMUTATOR = >=, NEGATOR = >, RESTRICT = scalarlesel, JOIN = scalarlejoinsel);
CREATE OPERATOR = (LEFTARG = snowflake, RIGHTARG = bigint, FUNCTION = snowflake_int8_eq,
    COMMUTATOR = =, NEGATOR = <>, RESTRICT = eqsel, JOIN = eqjoinsel,
    HASHES);
CREATE OPERATOR <> (LEFTARG = snowflake, RIGHTARG = bigint, FUNCTION = snowflake_int8_ne,
    COMMUTATOR = <>, NEGATOR = =, RESTRICT = neqsel, JOIN = neqjoinsel);
CREATE OPERATOR >= (LEFTARG = snowflake, RIGHTARG = bigint, FUNCTION = snowflake_int8_ge,
    COMMUTATOR = <=, NEGATOR = <, RESTRICT = scalargesel, JOIN = scalargejoinsel);
CREATE OPERATOR > (LEFTARG = snowflake, RIGHTARG = bigint, FUNCTION = snowflake_int8_gt,
    COMMUTATOR = <, NEGATOR = <=, RESTRICT = scalargtsel, JOIN = scalargtjoinsel);

CREATE FUNCTION int8_snowflake_lt(bigint, snowflake) RETURNS boolean
AS 'int8lt' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION int8_snowflake_lt(bigint, snowflake) IS 'implements bigint < snowflake (int8''s comparison)';
CREATE FUNCTION int8_snowflake_le(bigint, snowflake) RETURNS boolean
AS 'int8le' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION int8_snowflake_le(bigint, snowflake) IS 'implements bigint <= snowflake (int8''s comparison)';
CREATE FUNCTION int8_snowflake_eq(bigint, snowflake) RETURNS boolean
AS 'int8eq' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION int8_snowflake_eq(bigint, snowflake) IS 'implements bigint = snowflake (int8''s comparison)';
CREATE FUNCTION int8_snowflake_ne(bigint, snowflake) RETURNS boolean
AS 'int8ne' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION int8_snowflake_ne(bigint, snowflake) IS 'implements bigint <> snowflake (int8''s comparison)';
CREATE FUNCTION int8_snowflake_ge(bigint, snowflake) RETURNS boolean
AS 'int8ge' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION int8_snowflake_ge(bigint, snowflake) IS 'implements bigint >= snowflake (int8''s comparison)';
CREATE FUNCTION int8_snowflake_gt(bigint, snowflake) RETURNS boolean
AS 'int8gt' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION int8_snowflake_gt(bigint, snowflake) IS 'implements bigint > snowflake (int8''s comparison)';
CREATE OPERATOR < (LEFTARG = bigint, RIGHTARG = snowflake, FUNCTION = int8_snowflake_lt,
    COMMUTATOR = >, NEGATOR = >=, RESTRICT = scalarltsel, JOIN = scalarltjoinsel);
CREATE OPERATOR <= (LEFTARG = bigint, RIGHTARG = snowflake, FUNCTION = int8_snowflake_le,
    COMMUTATOR = >=, NEGATOR = >, RESTRICT = scalarlesel, JOIN = scalarlejoinsel);
CREATE OPERATOR = (LEFTARG = bigint, RIGHTARG = snowflake, FUNCTION = int8_snowflake_eq,
    COMMUTATOR = =, NEGATOR = <>, RESTRICT = eqsel, JOIN = eqjoinsel,
    HASHES);
CREATE OPERATOR <> (LEFTARG = bigint, RIGHTARG = snowflake, FUNCTION = int8_snowflake_ne,
    COMMUTATOR = <>, NEGATOR = =, RESTRICT = neqsel, JOIN = neqjoinsel);
CREATE OPERATOR >= (LEFTARG = bigint, RIGHTARG = snowflake, FUNCTION = int8_snowflake_ge,
    COMMUTATOR = <=, NEGATOR = <, RESTRICT = scalargesel, JOIN = scalargejoinsel);
CREATE OPERATOR > (LEFTARG = bigint, RIGHTARG = snowflake, FUNCTION = int8_snowflake_gt,
    COMMUTATOR = <, NEGATOR = <=, RESTRICT = scalargtsel, JOIN = scalargtjoinsel);

CREATE FUNCTION snowflake_int4_lt(snowflake, integer) RETURNS boolean
AS 'int84lt' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION snowflake_int4_lt(snowflake, integer) IS 'implements snowflake < integer (int8''s comparison)';
CREATE FUNCTION snowflake_int4_le(snowflake, integer) RETURNS boolean
AS 'int84le' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION snowflake_int4_le(snowflake, integer) IS 'implements snowflake <= integer (int8''s comparison)';
CREATE FUNCTION snowflake_int4_eq(snowflake, integer) RETURNS boolean
AS 'int84eq' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION snowflake_int4_eq(snowflake, integer) IS 'implements snowflake = integer (int8''s comparison)';
CREATE FUNCTION snowflake_int4_ne(snowflake, integer) RETURNS boolean
AS 'int84ne' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION snowflake_int4_ne(snowflake, integer) IS 'implements snowflake <> integer (int8''s comparison)';
CREATE FUNCTION snowflake_int4_ge(snowflake, integer) RETURNS boolean
AS 'int84ge' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION snowflake_int4_ge(snowflake, integer) IS 'implements snowflake >= integer (int8''s comparison)';
CREATE FUNCTION snowflake_int4_gt(snowflake, integer) RETURNS boolean
AS 'int84gt' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION snowflake_int4_gt(snowflake, integer) IS 'implements snowflake > integer (int8''s comparison)';
CREATE OPERATOR < (LEFTARG = snowflake, RIGHTARG = integer, FUNCTION = snowflake_int4_lt,
    COMMUTATOR = >, NEGATOR = >=, RESTRICT = scalarltsel, JOIN = scalarltjoinsel);
CREATE OPERATOR <= (LEFTARG = snowflake, RIGHTARG = integer, FUNCTION = snowflake_int4_le,
    COMMUTATOR = >=, NEGATOR = >, RESTRICT = scalarlesel, JOIN = scalarlejoinsel);
CREATE OPERATOR = (LEFTARG = snowflake, RIGHTARG = integer, FUNCTION = snowflake_int4_eq,
    COMMUTATOR = =, NEGATOR = <>, RESTRICT = eqsel, JOIN = eqjoinsel,
    HASHES);
CREATE OPERATOR <> (LEFTARG = snowflake, RIGHTARG = integer, FUNCTION = snowflake_int4_ne,
    COMMUTATOR = <>, NEGATOR = =, RESTRICT = neqsel, JOIN = neqjoinsel);
CREATE OPERATOR >= (LEFTARG = snowflake, RIGHTARG = integer, FUNCTION = snowflake_int4_ge,
    COMMUTATOR = <=, NEGATOR = <, RESTRICT = scalargesel, JOIN = scalargejoinsel);
CREATE OPERATOR > (LEFTARG = snowflake, RIGHTARG = integer, FUNCTION = snowflake_int4_gt,
    COMMUTATOR = <, NEGATOR = <=, RESTRICT = scalargtsel, JOIN = scalargtjoinsel);

CREATE FUNCTION int4_snowflake_lt(integer, snowflake) RETURNS boolean
AS 'int48lt' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION int4_snowflake_lt(integer, snowflake) IS 'implements integer < snowflake (int8''s comparison)';
CREATE FUNCTION int4_snowflake_le(integer, snowflake) RETURNS boolean
AS 'int48le' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION int4_snowflake_le(integer, snowflake) IS 'implements integer <= snowflake (int8''s comparison)';
CREATE FUNCTION int4_snowflake_eq(integer, snowflake) RETURNS boolean
AS 'int48eq' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION int4_snowflake_eq(integer, snowflake) IS 'implements integer = snowflake (int8''s comparison)';
CREATE FUNCTION int4_snowflake_ne(integer, snowflake) RETURNS boolean
AS 'int48ne' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION int4_snowflake_ne(integer, snowflake) IS 'implements integer <> snowflake (int8''s comparison)';
CREATE FUNCTION int4_snowflake_ge(integer, snowflake) RETURNS boolean
AS 'int48ge' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION int4_snowflake_ge(integer, snowflake) IS 'implements integer >= snowflake (int8''s comparison)';
CREATE FUNCTION int4_snowflake_gt(integer, snowflake) RETURNS boolean
AS 'int48gt' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION int4_snowflake_gt(integer, snowflake) IS 'implements integer > snowflake (int8''s comparison)';
CREATE OPERATOR < (LEFTARG = integer, RIGHTARG = snowflake, FUNCTION = int4_snowflake_lt,
    COMMUTATOR = >, NEGATOR = >=, RESTRICT = scalarltsel, JOIN = scalarltjoinsel);
CREATE OPERATOR <= (LEFTARG = integer, RIGHTARG = snowflake, FUNCTION = int4_snowflake_le,
    COMMUTATOR = >=, NEGATOR = >, RESTRICT = scalarlesel, JOIN = scalarlejoinsel);
CREATE OPERATOR = (LEFTARG = integer, RIGHTARG = snowflake, FUNCTION = int4_snowflake_eq,
    COMMUTATOR = =, NEGATOR = <>, RESTRICT = eqsel, JOIN = eqjoinsel,
    HASHES);
CREATE OPERATOR <> (LEFTARG = integer, RIGHTARG = snowflake, FUNCTION = int4_snowflake_ne,
    COMMUTATOR = <>, NEGATOR = =, RESTRICT = neqsel, JOIN = neqjoinsel);
CREATE OPERATOR >= (LEFTARG = integer, RIGHTARG = snowflake, FUNCTION = int4_snowflake_ge,
    COMMUTATOR = <=, NEGATOR = <, RESTRICT = scalargesel, JOIN = scalargejoinsel);
CREATE OPERATOR > (LEFTARG = integer, RIGHTARG = snowflake, FUNCTION = int4_snowflake_gt,
    COMMUTATOR = <, NEGATOR = <=, RESTRICT = scalargtsel, JOIN = scalargtjoinsel);

CREATE FUNCTION snowflake_int2_lt(snowflake, smallint) RETURNS boolean
AS 'int82lt' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION snowflake_int2_lt(snowflake, smallint) IS 'implements snowflake < smallint (int8''s comparison)';
CREATE FUNCTION snowflake_int2_le(snowflake, smallint) RETURNS boolean
AS 'int82le' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION snowflake_int2_le(snowflake, smallint) IS 'implements snowflake <= smallint (int8''s comparison)';
CREATE FUNCTION snowflake_int2_eq(snowflake, smallint) RETURNS boolean
AS 'int82eq' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION snowflake_int2_eq(snowflake, smallint) IS 'implements snowflake = smallint (int8''s comparison)';
CREATE FUNCTION snowflake_int2_ne(snowflake, smallint) RETURNS boolean
AS 'int82ne' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION snowflake_int2_ne(snowflake, smallint) IS 'implements snowflake <> smallint (int8''s comparison)';
CREATE FUNCTION snowflake_int2_ge(snowflake, smallint) RETURNS boolean
AS 'int82ge' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION snowflake_int2_ge(snowflake, smallint) IS 'implements snowflake >= smallint (int8''s comparison)';
CREATE FUNCTION snowflake_int2_gt(snowflake, smallint) RETURNS boolean
AS 'int82gt' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION snowflake_int2_gt(snowflake, smallint) IS 'implements snowflake > smallint (int8''s comparison)';
CREATE OPERATOR < (LEFTARG = snowflake, RIGHTARG = smallint, FUNCTION = snowflake_int2_lt,
    COMMUTATOR = >, NEGATOR = >=, RESTRICT = scalarltsel, JOIN = scalarltjoinsel);
CREATE OPERATOR <= (LEFTARG = snowflake, RIGHTARG = smallint, FUNCTION = snowflake_int2_le,
    COMMUTATOR = >=, NEGATOR = >, RESTRICT = scalarlesel, JOIN = scalarlejoinsel);
CREATE OPERATOR = (LEFTARG = snowflake, RIGHTARG = smallint, FUNCTION = snowflake_int2_eq,
    COMMUTATOR = =, NEGATOR = <>, RESTRICT = eqsel, JOIN = eqjoinsel,
    HASHES);
CREATE OPERATOR <> (LEFTARG = snowflake, RIGHTARG = smallint, FUNCTION = snowflake_int2_ne,
    COMMUTATOR = <>, NEGATOR = =, RESTRICT = neqsel, JOIN = neqjoinsel);
CREATE OPERATOR >= (LEFTARG = snowflake, RIGHTARG = smallint, FUNCTION = snowflake_int2_ge,
    COMMUTATOR = <=, NEGATOR = <, RESTRICT = scalargesel, JOIN = scalargejoinsel);
CREATE OPERATOR > (LEFTARG = snowflake, RIGHTARG = smallint, FUNCTION = snowflake_int2_gt,
    COMMUTATOR = <, NEGATOR = <=, RESTRICT = scalargtsel, JOIN = scalargtjoinsel);

CREATE FUNCTION int2_snowflake_lt(smallint, snowflake) RETURNS boolean
AS 'int28lt' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION int2_snowflake_lt(smallint, snowflake) IS 'implements smallint < snowflake (int8''s comparison)';
CREATE FUNCTION int2_snowflake_le(smallint, snowflake) RETURNS boolean
AS 'int28le' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION int2_snowflake_le(smallint, snowflake) IS 'implements smallint <= snowflake (int8''s comparison)';
CREATE FUNCTION int2_snowflake_eq(smallint, snowflake) RETURNS boolean
AS 'int28eq' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION int2_snowflake_eq(smallint, snowflake) IS 'implements smallint = snowflake (int8''s comparison)';
CREATE FUNCTION int2_snowflake_ne(smallint, snowflake) RETURNS boolean
AS 'int28ne' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION int2_snowflake_ne(smallint, snowflake) IS 'implements smallint <> snowflake (int8''s comparison)';
CREATE FUNCTION int2_snowflake_ge(smallint, snowflake) RETURNS boolean
AS 'int28ge' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION int2_snowflake_ge(smallint, snowflake) IS 'implements smallint >= snowflake (int8''s comparison)';
CREATE FUNCTION int2_snowflake_gt(smallint, snowflake) RETURNS boolean
AS 'int28gt' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION int2_snowflake_gt(smallint, snowflake) IS 'implements smallint > snowflake (int8''s comparison)';
CREATE OPERATOR < (LEFTARG = smallint, RIGHTARG = snowflake, FUNCTION = int2_snowflake_lt,
    COMMUTATOR = >, NEGATOR = >=, RESTRICT = scalarltsel, JOIN = scalarltjoinsel);
CREATE OPERATOR <= (LEFTARG = smallint, RIGHTARG = snowflake, FUNCTION = int2_snowflake_le,
    COMMUTATOR = >=, NEGATOR = >, RESTRICT = scalarlesel, JOIN = scalarlejoinsel);
CREATE OPERATOR = (LEFTARG = smallint, RIGHTARG = snowflake, FUNCTION = int2_snowflake_eq,
    COMMUTATOR = =, NEGATOR = <>, RESTRICT = eqsel, JOIN = eqjoinsel,
    HASHES);
CREATE OPERATOR <> (LEFTARG = smallint, RIGHTARG = snowflake, FUNCTION = int2_snowflake_ne,
    COMMUTATOR = <>, NEGATOR = =, RESTRICT = neqsel, JOIN = neqjoinsel);
CREATE OPERATOR >= (LEFTARG = smallint, RIGHTARG = snowflake, FUNCTION = int2_snowflake_ge,
    COMMUTATOR = <=, NEGATOR = <, RESTRICT = scalargesel, JOIN = scalargejoinsel);
CREATE OPERATOR > (LEFTARG = smallint, RIGHTARG = snowflake, FUNCTION = int2_snowflake_gt,
    COMMUTATOR = <, NEGATOR = <=, RESTRICT = scalargtsel, JOIN = scalargtjoinsel);

CREATE FUNCTION snowflake_cmp(snowflake, snowflake) RETURNS integer
AS 'btint8cmp' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION snowflake_cmp(snowflake, snowflake) IS 'btree comparison of snowflakes (int8''s)';
CREATE FUNCTION snowflake_int8_cmp(snowflake, bigint) RETURNS integer
AS 'btint8cmp' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION snowflake_int8_cmp(snowflake, bigint) IS 'btree comparison of snowflake with bigint (int8''s)';
CREATE FUNCTION int8_snowflake_cmp(bigint, snowflake) RETURNS integer
AS 'btint8cmp' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION int8_snowflake_cmp(bigint, snowflake) IS 'btree comparison of bigint with snowflake (int8''s)';
CREATE FUNCTION snowflake_int4_cmp(snowflake, integer) RETURNS integer
AS 'btint84cmp' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION snowflake_int4_cmp(snowflake, integer) IS 'btree comparison of snowflake with integer (int8''s)';
CREATE FUNCTION int4_snowflake_cmp(integer, snowflake) RETURNS integer
AS 'btint48cmp' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION int4_snowflake_cmp(integer, snowflake) IS 'btree comparison of integer with snowflake (int8''s)';
CREATE FUNCTION snowflake_int2_cmp(snowflake, smallint) RETURNS integer
AS 'btint82cmp' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION snowflake_int2_cmp(snowflake, smallint) IS 'btree comparison of snowflake with smallint (int8''s)';
CREATE FUNCTION int2_snowflake_cmp(smallint, snowflake) RETURNS integer
AS 'btint28cmp' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION int2_snowflake_cmp(smallint, snowflake) IS 'btree comparison of smallint with snowflake (int8''s)';
CREATE FUNCTION snowflake_sortsupport(internal) RETURNS void
AS 'btint8sortsupport' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION snowflake_sortsupport(internal) IS 'btree sort support of snowflakes (int8''s)';
CREATE FUNCTION snowflake_hash(snowflake) RETURNS integer
AS 'hashint8' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION snowflake_hash(snowflake) IS 'hash of a snowflake (int8''s, equal to the bigint''s)';
CREATE FUNCTION snowflake_hash_extended(snowflake, bigint) RETURNS bigint
AS 'hashint8extended' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION snowflake_hash_extended(snowflake, bigint) IS 'seeded hash of a snowflake (int8''s, equal to the bigint''s)';

-- min() and max() of snowflakes are snowflakes (JSON strings), answered
-- from the index like bigint's
CREATE FUNCTION snowflake_larger(snowflake, snowflake) RETURNS snowflake
AS 'int8larger' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION snowflake_larger(snowflake, snowflake) IS 'the larger of two snowflakes (int8''s), for max()';
CREATE FUNCTION snowflake_smaller(snowflake, snowflake) RETURNS snowflake
AS 'int8smaller' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION snowflake_smaller(snowflake, snowflake) IS 'the smaller of two snowflakes (int8''s), for min()';
CREATE AGGREGATE max(snowflake) (SFUNC = snowflake_larger, STYPE = snowflake,
    COMBINEFUNC = snowflake_larger, SORTOP = >, PARALLEL = SAFE);
CREATE AGGREGATE min(snowflake) (SFUNC = snowflake_smaller, STYPE = snowflake,
    COMBINEFUNC = snowflake_smaller, SORTOP = <, PARALLEL = SAFE);
COMMENT ON AGGREGATE max(snowflake) IS 'the largest snowflake (the newest ID), as a snowflake';
COMMENT ON AGGREGATE min(snowflake) IS 'the smallest snowflake (the oldest ID), as a snowflake';

-- Time comparisons: "id >= t" is "created at or after t", exactly
-- "snowflake_timestamp(id) >= t"; "id < t" is "created before t".  A time
-- never equals an ID (it sits just below the first ID of the first unit
-- that starts at or after it), so there is no "=", ">" means ">=" and "<="
-- means "<".  IMMUTABLE as the decoders: the layout is fixed.
CREATE FUNCTION snowflake_cmp_time(snowflake, timestamptz) RETURNS integer
AS 'MODULE_PATHNAME', 'snowflake_cmp_time' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION snowflake_cmp_time(snowflake, timestamptz) IS 'btree comparison of a snowflake with a time: -1 created before, 1 at or after (never 0)';
CREATE FUNCTION snowflake_time_cmp(timestamptz, snowflake) RETURNS integer
AS 'MODULE_PATHNAME', 'snowflake_time_cmp' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION snowflake_time_cmp(timestamptz, snowflake) IS 'btree comparison of a time with a snowflake: 1 created before, -1 at or after (never 0)';
-- with a constant time, the planner's support turns "id >= t" into "id >= <the
-- first ID at or after t>": the same rows, and partition pruning exact at
-- partition bounds
CREATE FUNCTION snowflake_time_support(internal) RETURNS internal
AS 'MODULE_PATHNAME', 'snowflake_time_support' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION snowflake_time_support(internal) IS 'planner support of the time comparisons: a constant time becomes the first ID at or after it';
CREATE FUNCTION snowflake_lt_time(snowflake, timestamptz) RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_lt_time' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
SUPPORT snowflake_time_support;
COMMENT ON FUNCTION snowflake_lt_time(snowflake, timestamptz) IS 'implements snowflake < timestamptz: created before the time';
CREATE FUNCTION snowflake_le_time(snowflake, timestamptz) RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_le_time' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
SUPPORT snowflake_time_support;
COMMENT ON FUNCTION snowflake_le_time(snowflake, timestamptz) IS 'implements snowflake <= timestamptz: created before the time';
CREATE FUNCTION snowflake_ge_time(snowflake, timestamptz) RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_ge_time' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
SUPPORT snowflake_time_support;
COMMENT ON FUNCTION snowflake_ge_time(snowflake, timestamptz) IS 'implements snowflake >= timestamptz: created at or after the time';
CREATE FUNCTION snowflake_gt_time(snowflake, timestamptz) RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_gt_time' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
SUPPORT snowflake_time_support;
COMMENT ON FUNCTION snowflake_gt_time(snowflake, timestamptz) IS 'implements snowflake > timestamptz: created at or after the time';
CREATE FUNCTION snowflake_time_lt(timestamptz, snowflake) RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_time_lt' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
SUPPORT snowflake_time_support;
COMMENT ON FUNCTION snowflake_time_lt(timestamptz, snowflake) IS 'implements timestamptz < snowflake: created at or after the time';
CREATE FUNCTION snowflake_time_le(timestamptz, snowflake) RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_time_le' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
SUPPORT snowflake_time_support;
COMMENT ON FUNCTION snowflake_time_le(timestamptz, snowflake) IS 'implements timestamptz <= snowflake: created at or after the time';
CREATE FUNCTION snowflake_time_ge(timestamptz, snowflake) RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_time_ge' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
SUPPORT snowflake_time_support;
COMMENT ON FUNCTION snowflake_time_ge(timestamptz, snowflake) IS 'implements timestamptz >= snowflake: created before the time';
CREATE FUNCTION snowflake_time_gt(timestamptz, snowflake) RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_time_gt' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
SUPPORT snowflake_time_support;
COMMENT ON FUNCTION snowflake_time_gt(timestamptz, snowflake) IS 'implements timestamptz > snowflake: created before the time';
CREATE OPERATOR < (LEFTARG = snowflake, RIGHTARG = timestamptz, FUNCTION = snowflake_lt_time,
    COMMUTATOR = >, NEGATOR = >=, RESTRICT = scalarltsel, JOIN = scalarltjoinsel);
CREATE OPERATOR <= (LEFTARG = snowflake, RIGHTARG = timestamptz, FUNCTION = snowflake_le_time,
    COMMUTATOR = >=, NEGATOR = >, RESTRICT = scalarlesel, JOIN = scalarlejoinsel);
CREATE OPERATOR >= (LEFTARG = snowflake, RIGHTARG = timestamptz, FUNCTION = snowflake_ge_time,
    COMMUTATOR = <=, NEGATOR = <, RESTRICT = scalargesel, JOIN = scalargejoinsel);
CREATE OPERATOR > (LEFTARG = snowflake, RIGHTARG = timestamptz, FUNCTION = snowflake_gt_time,
    COMMUTATOR = <, NEGATOR = <=, RESTRICT = scalargtsel, JOIN = scalargtjoinsel);
CREATE OPERATOR < (LEFTARG = timestamptz, RIGHTARG = snowflake, FUNCTION = snowflake_time_lt,
    COMMUTATOR = >, NEGATOR = >=, RESTRICT = scalarltsel, JOIN = scalarltjoinsel);
CREATE OPERATOR <= (LEFTARG = timestamptz, RIGHTARG = snowflake, FUNCTION = snowflake_time_le,
    COMMUTATOR = >=, NEGATOR = >, RESTRICT = scalarlesel, JOIN = scalarlejoinsel);
CREATE OPERATOR >= (LEFTARG = timestamptz, RIGHTARG = snowflake, FUNCTION = snowflake_time_ge,
    COMMUTATOR = <=, NEGATOR = <, RESTRICT = scalargesel, JOIN = scalargejoinsel);
CREATE OPERATOR > (LEFTARG = timestamptz, RIGHTARG = snowflake, FUNCTION = snowflake_time_gt,
    COMMUTATOR = <, NEGATOR = <=, RESTRICT = scalargtsel, JOIN = scalargtjoinsel);

-- btree: the default operator class, with the integers and timestamptz in its
-- family (an Index Cond on a key of the type, and partition pruning of range
-- partitions on it); equalimage lets the index deduplicate as int8's does.
CREATE OPERATOR CLASS snowflake_ops DEFAULT FOR TYPE snowflake USING btree AS
    OPERATOR 1 <, OPERATOR 2 <=, OPERATOR 3 =, OPERATOR 4 >=, OPERATOR 5 >,
    FUNCTION 1 snowflake_cmp(snowflake, snowflake),
    FUNCTION 2 snowflake_sortsupport(internal),
    FUNCTION 4 btequalimage(oid);
ALTER OPERATOR FAMILY snowflake_ops USING btree ADD
    OPERATOR 1 < (snowflake, bigint), OPERATOR 2 <= (snowflake, bigint),
    OPERATOR 3 = (snowflake, bigint), OPERATOR 4 >= (snowflake, bigint),
    OPERATOR 5 > (snowflake, bigint),
    FUNCTION 1 (snowflake, bigint) snowflake_int8_cmp(snowflake, bigint),
    OPERATOR 1 < (bigint, snowflake), OPERATOR 2 <= (bigint, snowflake),
    OPERATOR 3 = (bigint, snowflake), OPERATOR 4 >= (bigint, snowflake),
    OPERATOR 5 > (bigint, snowflake),
    FUNCTION 1 (bigint, snowflake) int8_snowflake_cmp(bigint, snowflake),
    OPERATOR 1 < (snowflake, integer), OPERATOR 2 <= (snowflake, integer),
    OPERATOR 3 = (snowflake, integer), OPERATOR 4 >= (snowflake, integer),
    OPERATOR 5 > (snowflake, integer),
    FUNCTION 1 (snowflake, integer) snowflake_int4_cmp(snowflake, integer),
    OPERATOR 1 < (integer, snowflake), OPERATOR 2 <= (integer, snowflake),
    OPERATOR 3 = (integer, snowflake), OPERATOR 4 >= (integer, snowflake),
    OPERATOR 5 > (integer, snowflake),
    FUNCTION 1 (integer, snowflake) int4_snowflake_cmp(integer, snowflake),
    OPERATOR 1 < (snowflake, smallint), OPERATOR 2 <= (snowflake, smallint),
    OPERATOR 3 = (snowflake, smallint), OPERATOR 4 >= (snowflake, smallint),
    OPERATOR 5 > (snowflake, smallint),
    FUNCTION 1 (snowflake, smallint) snowflake_int2_cmp(snowflake, smallint),
    OPERATOR 1 < (smallint, snowflake), OPERATOR 2 <= (smallint, snowflake),
    OPERATOR 3 = (smallint, snowflake), OPERATOR 4 >= (smallint, snowflake),
    OPERATOR 5 > (smallint, snowflake),
    FUNCTION 1 (smallint, snowflake) int2_snowflake_cmp(smallint, snowflake),
    OPERATOR 1 < (snowflake, timestamptz), OPERATOR 2 <= (snowflake, timestamptz),
    OPERATOR 4 >= (snowflake, timestamptz), OPERATOR 5 > (snowflake, timestamptz),
    FUNCTION 1 (snowflake, timestamptz) snowflake_cmp_time(snowflake, timestamptz),
    OPERATOR 1 < (timestamptz, snowflake), OPERATOR 2 <= (timestamptz, snowflake),
    OPERATOR 4 >= (timestamptz, snowflake), OPERATOR 5 > (timestamptz, snowflake),
    FUNCTION 1 (timestamptz, snowflake) snowflake_time_cmp(timestamptz, snowflake),
    -- the integers' own order, no operators: PostgreSQL 19 sorts the array of
    -- an "id IN (1, 2, 3)" with the family's support for the elements' type
    FUNCTION 1 (bigint, bigint) btint8cmp(bigint, bigint),
    FUNCTION 1 (integer, integer) btint4cmp(integer, integer),
    FUNCTION 1 (smallint, smallint) btint2cmp(smallint, smallint);

-- hash: DISTINCT, GROUP BY, hash joins (with the integers too) and hash
-- partitions.  A hashed "id NOT IN (SELECT bigint ...)" needs each side's own
-- equality in the family of the cross-type one: the integers' "=" are here
-- too, with their own hash functions (a hash family adds no order, so this
-- changes nothing for bigint columns).
CREATE OPERATOR CLASS snowflake_ops DEFAULT FOR TYPE snowflake USING hash AS
    OPERATOR 1 =,
    FUNCTION 1 snowflake_hash(snowflake),
    FUNCTION 2 snowflake_hash_extended(snowflake, bigint);
ALTER OPERATOR FAMILY snowflake_ops USING hash ADD
    OPERATOR 1 = (snowflake, bigint), OPERATOR 1 = (bigint, snowflake),
    OPERATOR 1 = (snowflake, integer), OPERATOR 1 = (integer, snowflake),
    OPERATOR 1 = (snowflake, smallint), OPERATOR 1 = (smallint, snowflake),
    OPERATOR 1 = (bigint, bigint), OPERATOR 1 = (integer, integer),
    OPERATOR 1 = (smallint, smallint),
    FUNCTION 1 (bigint, bigint) hashint8(bigint),
    FUNCTION 2 (bigint, bigint) hashint8extended(bigint, bigint),
    FUNCTION 1 (integer, integer) hashint4(integer),
    FUNCTION 2 (integer, integer) hashint4extended(integer, bigint),
    FUNCTION 1 (smallint, smallint) hashint2(smallint),
    FUNCTION 2 (smallint, smallint) hashint2extended(smallint, bigint);

-- BRIN minmax, for large append-only tables filtered by ID or by time
CREATE OPERATOR CLASS snowflake_minmax_ops DEFAULT FOR TYPE snowflake USING brin AS
    OPERATOR 1 <, OPERATOR 2 <=, OPERATOR 3 =, OPERATOR 4 >=, OPERATOR 5 >,
    FUNCTION 1 brin_minmax_opcinfo(internal),
    FUNCTION 2 brin_minmax_add_value(internal, internal, internal, internal),
    FUNCTION 3 brin_minmax_consistent(internal, internal, internal),
    FUNCTION 4 brin_minmax_union(internal, internal, internal);
ALTER OPERATOR FAMILY snowflake_minmax_ops USING brin ADD
    OPERATOR 1 < (snowflake, bigint), OPERATOR 2 <= (snowflake, bigint),
    OPERATOR 3 = (snowflake, bigint), OPERATOR 4 >= (snowflake, bigint),
    OPERATOR 5 > (snowflake, bigint),
    OPERATOR 1 < (snowflake, integer), OPERATOR 2 <= (snowflake, integer),
    OPERATOR 3 = (snowflake, integer), OPERATOR 4 >= (snowflake, integer),
    OPERATOR 5 > (snowflake, integer),
    OPERATOR 1 < (snowflake, smallint), OPERATOR 2 <= (snowflake, smallint),
    OPERATOR 3 = (snowflake, smallint), OPERATOR 4 >= (snowflake, smallint),
    OPERATOR 5 > (snowflake, smallint),
    OPERATOR 1 < (snowflake, timestamptz), OPERATOR 2 <= (snowflake, timestamptz),
    OPERATOR 4 >= (snowflake, timestamptz), OPERATOR 5 > (snowflake, timestamptz);

-- The same time filters for bigint columns.  snowflake_time_bound() is the
-- first ID created at or after a time; the snowflake_created_*() functions
-- are SQL functions with bodies parsed at creation (no name is looked up when
-- they run) that the planner inlines: "snowflake_created_after(id, t)"
-- becomes "id >= snowflake_time_bound(t)", folded to a constant for a
-- constant t, so the primary key's index and partition pruning apply (at
-- executor start-up for now()).  Not STRICT, so that the planner may inline
-- them; NULL in, NULL out all the same.
CREATE FUNCTION snowflake_time_bound(ts timestamptz) RETURNS bigint
AS 'MODULE_PATHNAME', 'snowflake_time_bound' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_time_bound(timestamptz) IS
'the first ID created at or after ts (IDs below it were created before ts); 0 before the epoch, an error past the layout''s last unit';

CREATE FUNCTION snowflake_created_after(id bigint, ts timestamptz) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN id >= snowflake_time_bound(ts);

COMMENT ON FUNCTION snowflake_created_after(bigint, timestamptz) IS
'whether the ID was created at or after ts (snowflake_timestamp(id) >= ts), as "id >= snowflake_time_bound(ts)": index range scans and partition pruning';

CREATE FUNCTION snowflake_created_before(id bigint, ts timestamptz) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN id < snowflake_time_bound(ts);

COMMENT ON FUNCTION snowflake_created_before(bigint, timestamptz) IS
'whether the ID was created before ts (snowflake_timestamp(id) < ts), as "id < snowflake_time_bound(ts)": index range scans and partition pruning';

CREATE FUNCTION snowflake_created_between(id bigint, from_ts timestamptz, to_ts timestamptz) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN id >= snowflake_time_bound(from_ts) AND id < snowflake_time_bound(to_ts);

COMMENT ON FUNCTION snowflake_created_between(bigint, timestamptz, timestamptz) IS
'whether the ID was created at or after from_ts and before to_ts, as two ID bounds: index range scans and partition pruning';

-- the same names for the type: its own operators, which take any time
CREATE FUNCTION snowflake_created_after(id snowflake, ts timestamptz) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN id >= ts;

COMMENT ON FUNCTION snowflake_created_after(snowflake, timestamptz) IS
'whether the ID was created at or after ts: "id >= ts"';

CREATE FUNCTION snowflake_created_before(id snowflake, ts timestamptz) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN id < ts;

COMMENT ON FUNCTION snowflake_created_before(snowflake, timestamptz) IS
'whether the ID was created before ts: "id < ts"';

CREATE FUNCTION snowflake_created_between(id snowflake, from_ts timestamptz, to_ts timestamptz) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN id >= from_ts AND id < to_ts;

COMMENT ON FUNCTION snowflake_created_between(snowflake, timestamptz, timestamptz) IS
'whether the ID was created at or after from_ts and before to_ts: "id >= from_ts AND id < to_ts"';

-- ===== end of the snowflake type =====

-- ===== the commit watermark (issue 29) =====
-- VOLATILE: the value moves within a statement.  PARALLEL RESTRICTED: it is
-- read in its own statement before the rows (docs/commit-watermark.md), in
-- the leader only, which also drops the records of finished prepared
-- transactions.
CREATE FUNCTION snowflake_commit_watermark()
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowflake_commit_watermark'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION snowflake_commit_watermark() IS
'every ID below it that this server generated (live shards) and that will ever be committed by the transaction that took it is committed; NULL without a live shard';

CREATE FUNCTION snowflake_commit_watermark(shard_id integer)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowflake_commit_watermark_shard'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

COMMENT ON FUNCTION snowflake_commit_watermark(integer) IS
'the commit watermark of one live shard of this server: every ID of the shard below it that will ever be committed is committed';
-- ===== end of the commit watermark =====

-- ===== the layout recorded before its first use (issue 33) =====
-- VOLATILE, PARALLEL UNSAFE: it writes pg_snowflake/layout and WAL.  Records
-- this server's layout unless it is recorded, as the first ID does, so that
-- nothing computed with the layout (an index over a decoder, a partial index
-- "id >= t", a generated column) can be stored before the layout is fixed.
-- An error when a recorded layout differs; without the preload, on a standby
-- or while the clock reads earlier than snowflake.epoch it records nothing
-- (the first decoder call records it then).  Called here, so that CREATE
-- EXTENSION and ALTER EXTENSION UPDATE record the layout.
CREATE FUNCTION snowflake_record_layout()
RETURNS void
AS 'MODULE_PATHNAME', 'snowflake_record_layout'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION snowflake_record_layout() IS
'records this server''s ID layout in pg_snowflake/layout (and WAL) unless it is recorded; CREATE EXTENSION calls it';

-- superusers only, as the other functions that write pg_snowflake/ on demand
-- (every role's first decoder call records the layout all the same)
REVOKE ALL ON FUNCTION snowflake_record_layout() FROM PUBLIC;

SELECT snowflake_record_layout();
-- ===== end of the layout record =====
