/* snowflake--1.1--1.2.sql: upgrade from 1.1 to 1.2 (ALTER EXTENSION snowflake UPDATE) */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION snowflake UPDATE TO '1.2'" to load this file. \quit

-- snowflake_raise_floor() and snowflake_adopt_database(): a floor more than
-- snowflake.max_clock_lead + snowflake.max_clock_wait ahead of the clock is
-- refused unless allow_future (one far-future value inserted by any role with
-- INSERT would otherwise stop generation on the whole server)
DROP FUNCTION snowflake_adopt_database(timestamptz);
DROP FUNCTION snowflake_raise_floor(timestamptz);

CREATE FUNCTION snowflake_raise_floor(ts timestamptz, allow_future boolean DEFAULT false)
RETURNS void
AS 'MODULE_PATHNAME', 'snowflake_raise_floor'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION snowflake_raise_floor(timestamptz, boolean) IS
'makes every shard of this server resume strictly above the millisecond of ts (durable, WAL-logged); refuses a ts more than snowflake.max_clock_lead + snowflake.max_clock_wait ahead of the clock unless allow_future; used by snowflake_adopt_database()';

REVOKE ALL ON FUNCTION snowflake_raise_floor(timestamptz, boolean) FROM PUBLIC;

CREATE FUNCTION snowflake_adopt_database(at_least timestamptz DEFAULT NULL,
                                         allow_future boolean DEFAULT false)
RETURNS timestamptz
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    ext_schema name;
    col record;
    top bigint;
    top_ts timestamptz;
    m bigint;
    m_ts timestamptz;
    checked int := 0;
    floor_ts timestamptz;
    lead_text text;
    wait_text text;
    bound interval;
    limit_ts timestamptz;
BEGIN
    IF allow_future IS NULL THEN
        RAISE EXCEPTION 'snowflake_adopt_database: allow_future must not be NULL'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    SELECT n.nspname INTO ext_schema
    FROM pg_catalog.pg_extension e JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace
    WHERE e.extname = 'snowflake';

    -- functions of our names in our schema that are not ours would make the
    -- calls below ambiguous: say so instead (they never run: see the README,
    -- "Privileges")
    PERFORM 1 FROM pg_catalog.pg_proc p
    JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace AND n.nspname = ext_schema
    WHERE p.proname IN ('snowflake_timestamp', 'snowflake_raise_floor')
      AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend d
                      JOIN pg_catalog.pg_extension e ON e.oid = d.refobjid AND e.extname = 'snowflake'
                      WHERE d.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND d.objid = p.oid
                        AND d.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass
                        AND d.deptype = 'e');
    IF FOUND THEN
        RAISE EXCEPTION 'schema % holds functions named like snowflake''s own that are not the extension''s',
                        ext_schema
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Drop them, or move the extension to a schema only trusted roles may create in '
                         '(ALTER EXTENSION snowflake SET SCHEMA ...).';
    END IF;

    -- a floor further ahead of the clock than the lead plus the wait would
    -- make every generating call of the server fail until the clock reaches
    -- it: one far-future value inserted by anyone with INSERT must not do that
    lead_text := pg_catalog.current_setting('snowflake.max_clock_lead', true);
    wait_text := pg_catalog.current_setting('snowflake.max_clock_wait', true);
    IF lead_text IS NOT NULL AND wait_text IS NOT NULL THEN
        bound := lead_text::pg_catalog.interval + wait_text::pg_catalog.interval;
        limit_ts := pg_catalog.clock_timestamp() + bound;
    END IF;

    -- every bigint column whose default calls a function of this extension
    FOR col IN
        SELECT DISTINCT ad.adrelid::pg_catalog.regclass AS tbl, a.attname
        FROM pg_catalog.pg_attrdef ad
        JOIN pg_catalog.pg_attribute a ON a.attrelid = ad.adrelid AND a.attnum = ad.adnum
        JOIN pg_catalog.pg_class c ON c.oid = ad.adrelid
        JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_attrdef'::pg_catalog.regclass
                        AND d.objid = ad.oid
                        AND d.refclassid = 'pg_catalog.pg_proc'::pg_catalog.regclass
        JOIN pg_catalog.pg_depend x ON x.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass
                        AND x.objid = d.refobjid
                        AND x.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass
                        AND x.deptype = 'e'
        JOIN pg_catalog.pg_extension e ON e.oid = x.refobjid AND e.extname = 'snowflake'
        WHERE a.atttypid = 'pg_catalog.int8'::pg_catalog.regtype AND NOT a.attisdropped
          AND c.relkind IN ('r', 'p')
    LOOP
        EXECUTE format('SELECT pg_catalog.max(%I) FROM %s', col.attname, col.tbl) INTO m;
        checked := checked + 1;
        CONTINUE WHEN m IS NULL;
        EXECUTE format('SELECT %I.snowflake_timestamp($1::pg_catalog.int8)', ext_schema)
            INTO m_ts USING m;
        IF m_ts > limit_ts AND NOT allow_future THEN
            RAISE EXCEPTION 'the largest snowflake ID in column "%" of % is too far ahead of the clock',
                            col.attname, col.tbl
                USING ERRCODE = 'invalid_parameter_value',
                      DETAIL = format('Its value %s carries %s, %s ahead of the clock; a floor more than '
                                      'snowflake.max_clock_lead + snowflake.max_clock_wait (%s ms) ahead would '
                                      'make every generating call on this server fail until the clock '
                                      'reaches it. Nothing was changed.',
                                      m, m_ts, pg_catalog.date_trunc('second', m_ts - pg_catalog.clock_timestamp()),
                                      (pg_catalog.date_part('epoch', bound) * 1000)::pg_catalog.int8),
                      HINT = 'If that row does not hold a real snowflake ID, fix or delete it and run '
                             'snowflake_adopt_database() again; if IDs really were issued that far ahead, '
                             'run snowflake_adopt_database(allow_future => true).';
        END IF;
        IF top IS NULL OR m > top THEN
            top := m;
            top_ts := m_ts;
        END IF;
    END LOOP;

    IF at_least > limit_ts AND NOT allow_future THEN
        RAISE EXCEPTION 'snowflake floor % is too far ahead of the clock', at_least
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = format('It is %s ahead; a floor more than snowflake.max_clock_lead + '
                                  'snowflake.max_clock_wait (%s ms) ahead would make every generating '
                                  'call on this server fail until the clock reaches it. Nothing was changed.',
                                  pg_catalog.date_trunc('second', at_least - pg_catalog.clock_timestamp()),
                                  (pg_catalog.date_part('epoch', bound) * 1000)::pg_catalog.int8),
                  HINT = 'Check the value; if IDs really were issued that far ahead, pass allow_future => true.';
    END IF;
    floor_ts := greatest(top_ts, at_least);
    IF floor_ts IS NOT NULL THEN
        EXECUTE format('SELECT %I.snowflake_raise_floor($1::pg_catalog.timestamptz, $2::pg_catalog.bool)',
                       ext_schema)
            USING floor_ts, allow_future;
    END IF;
    EXECUTE format('UPDATE %I.snowflake_origin SET system_identifier = '
                   '(SELECT system_identifier FROM pg_catalog.pg_control_system()), '
                   'recorded_at = pg_catalog.now()', ext_schema);
    RAISE NOTICE 'snowflake: checked % column(s); this server now generates above %',
        checked, coalesce(floor_ts::text, 'the clock (no IDs found)');
    RETURN floor_ts;
END
$$;

COMMENT ON FUNCTION snowflake_adopt_database(timestamptz, boolean) IS
'adopts a database moved from another cluster without its snowflake state: resumes above its largest ID in columns defaulting to snowflake functions (and above at_least), then records this cluster as its origin; refuses a floor more than snowflake.max_clock_lead + snowflake.max_clock_wait ahead of the clock unless allow_future';

REVOKE ALL ON FUNCTION snowflake_adopt_database(timestamptz, boolean) FROM PUBLIC;

-- snowflake_convert_column(): a column already fed by snowflake_nextval() is
-- recognised by the function's OID, not the default's text, and just gets the
-- new default; the refusal for a list or multi-column partition key says what
-- to do instead.  Dropped and created again (our scripts never replace a
-- function in place: see test/integration/051_trusted.pl); nothing depends on it, and
-- the 3-argument form calls it by name at run time.
DROP FUNCTION snowflake_convert_column(regclass, name, integer, boolean);
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

    -- functions of our names in our schema that are not ours would make the
    -- calls below ambiguous: say so instead (they never run: see the README,
    -- "Privileges")
    PERFORM 1 FROM pg_catalog.pg_proc p
    JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace AND n.nspname = ext
    WHERE p.proname IN ('snowflake_nextval', 'snowflake_min_id', 'snowflake_convert_column')
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

COMMENT ON FUNCTION snowflake_convert_column(regclass, name, integer, boolean) IS
'switches a bigint key fed by a sequence (bigserial, DEFAULT nextval, identity) to DEFAULT snowflake_nextval(shard) in the caller''s transaction, without touching rows; drops the column''s own sequence unless drop_sequence is false';

-- snowflake_layout(): the ID width, the time unit and the datacenter (1.2).
-- Its columns change, so it is dropped and created again: a view of yours
-- over snowflake_layout() must be dropped before the update and made again
-- after (see README, "Releases and upgrades").
DROP FUNCTION snowflake_layout();

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

-- snowflake_registry(): a PostgreSQL backend besides etcd, datacenters and
-- the clock skew (new columns), the states 'mark refused' and 'clock skew'
DROP VIEW snowflake_registry;
DROP FUNCTION snowflake_registry();

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

CREATE VIEW snowflake_registry AS SELECT * FROM snowflake_registry();

COMMENT ON VIEW snowflake_registry IS 'the shard registry, etcd or PostgreSQL (see snowflake_registry())';

-- like pg_stat_activity's details: the lease, holders' hosts, ports and data
-- directories are for monitoring roles, not for every login role
REVOKE ALL ON FUNCTION snowflake_registry() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION snowflake_registry() TO pg_read_all_stats;
GRANT SELECT ON snowflake_registry TO pg_read_all_stats;
