/* snowflake--1.2--1.3.sql: upgrade from 1.2 to 1.3 (ALTER EXTENSION snowflake UPDATE) */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION snowflake UPDATE TO '1.3'" to load this file. \quit

-- Issue 25, defects 3 and 4 (adopt and convert ran a table owner's code as
-- the superuser; one open session blocked adopt): nothing plans a query over
-- a user's table any more.  snowflake_adopt_database() becomes C (same
-- signature, so nothing that depends on it is dropped; its ACL stays);
-- snowflake_column_max() is new; snowflake_convert_column() reads the largest
-- value through it.  See src/adopt.cpp and src/colmax.cpp.
CREATE OR REPLACE FUNCTION snowflake_adopt_database(at_least timestamptz DEFAULT NULL,
                                                    allow_future boolean DEFAULT false)
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'snowflake_adopt_database'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION snowflake_column_max(tbl regclass, col name)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowflake_column_max'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION snowflake_column_max(regclass, name) IS
'largest value of a bigint column of a table the caller owns (and of every table under it), read without running any code of the table''s; refuses other sessions'' temporary tables and foreign tables; used by snowflake_convert_column()';

CREATE OR REPLACE FUNCTION snowflake_convert_column(tbl regclass, col name, shard integer,
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
    EXECUTE format('SELECT %I.snowflake_column_max($1, $2)', ext) INTO max_value USING tbl, col;
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

    RAISE NOTICE 'column "%" of % now defaults to %', col, tbl, new_default
        USING DETAIL = pg_catalog.array_to_string(changes || CASE WHEN max_value IS NULL THEN 'no existing rows'
                           ELSE format('existing values (up to %s) stay below every new ID', max_value) END,
                           '; ') || '.';
END
$convert$;
-- end of issue 25, defects 3 and 4

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

CREATE OR REPLACE VIEW snowflake_registry AS
    SELECT r.*, snowflake_registry_replication() AS registry_replication
    FROM snowflake_registry() r;
-- end of the registry's replication block

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
