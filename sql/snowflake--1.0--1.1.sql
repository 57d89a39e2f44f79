/* snowflake--1.0--1.1.sql: upgrade from 1.0 to 1.1 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION snowflake UPDATE TO '1.1'" to load this file. \quit

-- Every object added or changed in 1.1 appears here and, in its final form, in
-- snowflake--1.1.sql; a test checks that both give the same objects.

-- Logical shards (1.1): only roles granted EXECUTE may generate for them, as
-- only roles granted USAGE may draw from a sequence.  Each shard takes one of
-- the server's snowflake.max_shards slots until a restart, and the operator
-- assigns them (snowflake.shard_ids); see README.md, "Logical shards".
REVOKE ALL ON FUNCTION snowflake_nextval(integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION snowflake_nextval_batch(integer, integer) FROM PUBLIC;

-- The shard registry in etcd (snowflake.registry): one row, VOLATILE.
CREATE FUNCTION snowflake_registry(
    OUT endpoints text,
    OUT endpoint text,
    OUT prefix text,
    OUT state text,
    OUT shard_id integer,
    OUT lease_id text,
    OUT lease_ttl integer,
    OUT lease_deadline timestamptz,
    OUT last_keepalive timestamptz,
    OUT freshness_mark timestamptz,
    OUT last_error text,
    OUT requests bigint,
    OUT bytes_sent bigint,
    OUT bytes_received bigint,
    OUT generating boolean)
RETURNS record
AS 'MODULE_PATHNAME', 'snowflake_registry'
LANGUAGE C VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_registry() IS
'the shard registry: etcd endpoints and the one in use, key prefix, state (off, claiming, held, expired, pool full, unreachable), shard and lease held, lease deadline, last keep-alive, published freshness mark, last error, traffic, and whether generation is allowed now';

CREATE VIEW snowflake_registry AS SELECT * FROM snowflake_registry();

COMMENT ON VIEW snowflake_registry IS 'the shard registry in etcd (see snowflake_registry())';

GRANT SELECT ON snowflake_registry TO PUBLIC;

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

CREATE FUNCTION snowflake_raise_floor(ts timestamptz)
RETURNS void
AS 'MODULE_PATHNAME', 'snowflake_raise_floor'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION snowflake_raise_floor(timestamptz) IS
'makes every shard of this server resume strictly above the millisecond of ts (durable, WAL-logged); used by snowflake_adopt_database()';

REVOKE ALL ON FUNCTION snowflake_raise_floor(timestamptz) FROM PUBLIC;

CREATE FUNCTION snowflake_adopt_database(at_least timestamptz DEFAULT NULL)
RETURNS timestamptz
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    ext_schema text;
    col record;
    top bigint;
    m bigint;
    checked int := 0;
    floor_ts timestamptz;
BEGIN
    SELECT n.nspname INTO ext_schema
    FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
    WHERE e.extname = 'snowflake';

    -- every bigint column whose default calls a function of this extension
    FOR col IN
        SELECT DISTINCT ad.adrelid::regclass AS tbl, a.attname
        FROM pg_attrdef ad
        JOIN pg_attribute a ON a.attrelid = ad.adrelid AND a.attnum = ad.adnum
        JOIN pg_class c ON c.oid = ad.adrelid
        JOIN pg_depend d ON d.classid = 'pg_attrdef'::regclass AND d.objid = ad.oid
                        AND d.refclassid = 'pg_proc'::regclass
        JOIN pg_depend x ON x.classid = 'pg_proc'::regclass AND x.objid = d.refobjid
                        AND x.refclassid = 'pg_extension'::regclass AND x.deptype = 'e'
        JOIN pg_extension e ON e.oid = x.refobjid AND e.extname = 'snowflake'
        WHERE a.atttypid = 'bigint'::regtype AND NOT a.attisdropped
          AND c.relkind IN ('r', 'p')
    LOOP
        EXECUTE format('SELECT max(%I) FROM %s', col.attname, col.tbl) INTO m;
        checked := checked + 1;
        IF m IS NOT NULL AND (top IS NULL OR m > top) THEN
            top := m;
        END IF;
    END LOOP;

    IF top IS NOT NULL THEN
        EXECUTE format('SELECT %I.snowflake_timestamp($1)', ext_schema) INTO floor_ts USING top;
    END IF;
    floor_ts := greatest(floor_ts, at_least);
    IF floor_ts IS NOT NULL THEN
        EXECUTE format('SELECT %I.snowflake_raise_floor($1)', ext_schema) USING floor_ts;
    END IF;
    EXECUTE format('UPDATE %I.snowflake_origin SET system_identifier = '
                   '(SELECT system_identifier FROM pg_catalog.pg_control_system()), '
                   'recorded_at = now()', ext_schema);
    RAISE NOTICE 'snowflake: checked % column(s); this server now generates above %',
        checked, coalesce(floor_ts::text, 'the clock (no IDs found)');
    RETURN floor_ts;
END
$$;

COMMENT ON FUNCTION snowflake_adopt_database(timestamptz) IS
'adopts a database moved from another cluster without its snowflake state: resumes above its largest ID in columns defaulting to snowflake functions (and above at_least), then records this cluster as its origin';

REVOKE ALL ON FUNCTION snowflake_adopt_database(timestamptz) FROM PUBLIC;
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
