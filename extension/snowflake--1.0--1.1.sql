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

-- like pg_stat_activity's details: the lease, holders' hosts, ports and data
-- directories are for monitoring roles, not for every login role
REVOKE ALL ON FUNCTION snowflake_registry() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION snowflake_registry() TO pg_read_all_stats;
GRANT SELECT ON snowflake_registry TO pg_read_all_stats;

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

-- Converting an existing key column to snowflake IDs.  PL/pgSQL, SECURITY
-- INVOKER (the caller must own the table, as for ALTER TABLE), with a fixed
-- search_path; every name is quoted with format() and the extension's own
-- functions are called through its schema, found at run time (the extension
-- is relocatable).  It runs in the caller's transaction: any refusal raises
-- an error, so nothing it did stays.  See README.md, "Converting existing
-- key columns".
CREATE FUNCTION snowflake_convert_column(tbl regclass, col name, shard integer,
                                         drop_sequence boolean DEFAULT true)
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
BEGIN
    IF tbl IS NULL OR col IS NULL OR drop_sequence IS NULL THEN
        RAISE EXCEPTION 'snowflake_convert_column: arguments must not be NULL'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    SELECT n.nspname INTO ext
    FROM pg_catalog.pg_extension e JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace
    WHERE e.extname = 'snowflake';

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
    IF att.atttypid <> 'pg_catalog.int8'::pg_catalog.regtype THEN
        RAISE EXCEPTION 'column "%" of % is of type %, not bigint', col, tbl,
                        pg_catalog.format_type(att.atttypid, NULL)
            USING ERRCODE = 'datatype_mismatch',
                  DETAIL = 'Snowflake IDs need all 64 bits of a bigint.',
                  HINT = format('Change its type first: ALTER TABLE %s ALTER COLUMN %I TYPE bigint;',
                                tbl, col);
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
            IF r.expr ~ 'snowflake_nextval\(' THEN
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
    EXECUTE format('SELECT pg_catalog.max(%I) FROM %s', col, tbl) INTO max_value;
    IF max_value >= id_floor THEN
        RAISE EXCEPTION 'existing values of column "%" of % could collide with snowflake IDs', col, tbl
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = format('Its largest value is %s; snowflake IDs issued from now on are '
                                  'at least %s (snowflake_min_id(now())).', max_value, id_floor),
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
                      HINT = format('Add a partition for the new IDs first, for example: CREATE TABLE ... '
                                    'PARTITION OF %s FOR VALUES FROM (%s.snowflake_min_id(''...'')) TO (MAXVALUE);',
                                    r.parent, pg_catalog.quote_ident(ext));
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
    EXECUTE format('ALTER TABLE %s ALTER COLUMN %I SET DEFAULT %s', tbl, col, new_default);
    IF old_default IS NOT NULL THEN
        changes := changes || format('replaced DEFAULT %s', old_default);
    END IF;
    IF already THEN
        changes := changes || 'the column already used snowflake IDs';
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

    RAISE NOTICE 'column "%" of % now defaults to %', col, tbl, new_default
        USING DETAIL = pg_catalog.array_to_string(changes || CASE WHEN max_value IS NULL THEN 'no existing rows'
                           ELSE format('existing values (up to %s) stay below every new ID', max_value) END,
                           '; ') || '.';
END
$convert$;

COMMENT ON FUNCTION snowflake_convert_column(regclass, name, integer, boolean) IS
'switches a bigint key fed by a sequence (bigserial, DEFAULT nextval, identity) to DEFAULT snowflake_nextval(shard) in the caller''s transaction, without touching rows; drops the column''s own sequence unless drop_sequence is false';

CREATE FUNCTION snowflake_convert_column(tbl regclass, col name, drop_sequence boolean DEFAULT true)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $convert$
BEGIN
    EXECUTE format('SELECT %I.snowflake_convert_column($1, $2, NULL::integer, $3)',
                   (SELECT n.nspname FROM pg_catalog.pg_extension e
                    JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace
                    WHERE e.extname = 'snowflake'))
        USING tbl, col, drop_sequence;
END
$convert$;

COMMENT ON FUNCTION snowflake_convert_column(regclass, name, boolean) IS
'switches a bigint key fed by a sequence (bigserial, DEFAULT nextval, identity) to DEFAULT snowflake_nextval() in the caller''s transaction, without touching rows; drops the column''s own sequence unless drop_sequence is false';
