-- ===========================================================================
-- 10_config.sql: the configuration of the SQL edition (owner: sqled).
--
-- The layout (epoch, widths, time unit) and the shards live in one table
-- owned by the installing role, readable by every role, changed only through
-- snowflake_configure(), which the owner alone may run (EXECUTE is revoked
-- from PUBLIC: other roles get 42501).  There is no GUC: a session's
-- "SET snowflake.shard_id = ..." sets a placeholder nothing reads.
--
-- snowflake_configure() then regenerates the functions whose bodies carry
-- the layout's constants: the generators (20_generate.sql, through
-- snowflake__define_generators) and the decoders (30_decode.sql, through
-- snowflake__define_decoders), with CREATE OR REPLACE, so their OIDs and
-- whatever depends on them stay.
-- ===========================================================================

-- One row: the layout, this database's shard and its logical shards, the
-- lead and the wait.  Columns are named after the extension's settings
-- (snowflake.epoch, snowflake.time_unit, ...), in milliseconds.
CREATE TABLE snowflake__config (
    singleton        boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    epoch_ms         bigint  NOT NULL,
    time_unit_ms     integer NOT NULL,
    id_bits          integer NOT NULL,
    shard_bits       integer NOT NULL,
    sequence_bits    integer NOT NULL,
    datacenter_bits  integer NOT NULL,
    shard_id         integer,                          -- NULL: not set
    shard_ids        integer[] NOT NULL DEFAULT '{}',  -- logical shards
    import_shards    integer[] NOT NULL DEFAULT '{}',  -- for snowflake_nextval_at
    max_clock_lead   integer NOT NULL,                 -- ms
    max_clock_wait   integer NOT NULL                  -- ms
);

COMMENT ON TABLE snowflake__config IS
'the SQL edition''s configuration (layout, shard, lead, wait); change it with snowflake_configure()';

-- The table holds no row until the first snowflake_configure(): until then
-- snowflake__settings() gives the defaults (the extension's).  So a pg_tle
-- install can register it as a configuration table (pg_dump then writes its
-- row, and the restore's CREATE EXTENSION, which creates the table empty,
-- does not collide with it).
CREATE FUNCTION snowflake__settings()
RETURNS snowflake__config
LANGUAGE sql STABLE PARALLEL SAFE
RETURN (SELECT s.c FROM (SELECT c, 0 AS o FROM snowflake__config c
                         UNION ALL
                         SELECT ROW(true, 1704067200000, 1, 63, 10, 12, 0, NULL, '{}', '{}', 1000, 5000)::snowflake__config, 1) s
        ORDER BY s.o LIMIT 1);

COMMENT ON FUNCTION snowflake__settings() IS
'the SQL edition''s configuration: the row of snowflake__config, or the defaults before the first snowflake_configure()';

-- One row per shard this database has generated for (or is configured to):
-- the shard's sequence (whose values ARE the IDs), its cap (see
-- 20_generate.sql) and counters, all sequences so that nothing on the hot
-- path or in the slow path updates a row.  The row is also the shard's jump
-- lock (SELECT ... FOR UPDATE needs UPDATE on this table, which no other role
-- has).  Rows are never deleted: a shard's sequence keeps its position
-- across reconfigurations, so returning to a shard continues above it.
CREATE TABLE snowflake__shard (
    shard_id     integer PRIMARY KEY,
    seq          regclass NOT NULL,   -- the IDs
    cap          regclass NOT NULL,   -- the first value not yet usable
    jumps        regclass NOT NULL,   -- moves of seq to a new unit
    waits        regclass NOT NULL,   -- calls that waited for the clock
    refusals     regclass NOT NULL,   -- calls that failed after waiting
    issued       regclass NOT NULL    -- values drawn in finished units
);

COMMENT ON TABLE snowflake__shard IS
'one row per shard: its sequences (the IDs, the cap, counters); the row is the shard''s jump lock';

GRANT SELECT ON snowflake__config TO PUBLIC;
GRANT SELECT ON snowflake__shard TO PUBLIC;

-- @tle-only-begin
SELECT pg_catalog.pg_extension_config_dump('snowflake__config', '');
SELECT pg_catalog.pg_extension_config_dump('snowflake__shard', '');
-- @tle-only-end

DO $install$
BEGIN
EXECUTE pg_catalog.replace($src$
-- Creates the sequences of a shard (if it has none yet) and returns its row.
CREATE FUNCTION @extschema@.snowflake__ensure_shard(shard integer)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    kind text;
    names text[] := '{}';
BEGIN
    IF EXISTS (SELECT 1 FROM @extschema@.snowflake__shard s WHERE s.shard_id = shard) THEN
        RETURN;
    END IF;
    FOREACH kind IN ARRAY ARRAY['seq', 'cap', 'jumps', 'waits', 'refusals', 'issued'] LOOP
        -- CACHE 1 (the default) so every value goes through the shared state;
        -- NO CYCLE so the sequence never wraps back to its start.
        EXECUTE format('CREATE SEQUENCE %s.%I AS bigint MINVALUE 0 START 1 NO CYCLE',
                       '@extschema@', 'snowflake__' || kind || '_' || shard);
        names := names || format('%s.%I', '@extschema@', 'snowflake__' || kind || '_' || shard);
    END LOOP;
    -- Every role that may call snowflake_nextval() draws from the sequence
    -- (USAGE: nextval, never setval) and reads the cap (SELECT); nobody but
    -- the owner may setval either.  A role drawing values directly only
    -- burns them (20_generate.sql says why that never repeats an ID).
    EXECUTE format('GRANT USAGE ON SEQUENCE %s TO PUBLIC', names[1]);
    EXECUTE format('GRANT SELECT ON SEQUENCE %s TO PUBLIC', names[2]);
    INSERT INTO @extschema@.snowflake__shard
        (shard_id, seq, cap, jumps, waits, refusals, issued)
    VALUES (shard, names[1]::regclass, names[2]::regclass, names[3]::regclass,
            names[4]::regclass, names[5]::regclass, names[6]::regclass);
END
$fn$;

-- Whether any ID was drawn or placed on this database: a shard's sequence
-- was drawn from, or its cap was set (a jump or an adopt leaves the
-- sequence at setval(S, T, false), which reads as never called, but its
-- next value, and every ID the adopt stepped over, carry this layout).
CREATE FUNCTION @extschema@.snowflake__any_issued()
RETURNS boolean
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
    RETURN EXISTS (SELECT 1 FROM @extschema@.snowflake__shard s
                   WHERE pg_sequence_last_value(s.seq) IS NOT NULL
                      OR coalesce(pg_sequence_last_value(s.cap), 0) > 0);
END
$fn$;

-- The objects outside the SQL edition that depend on one of its functions
-- (an expression index, a constraint, a generated column, a view...), as
-- text for a message; NULL if none.
CREATE FUNCTION @extschema@.snowflake__dependents()
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    ns oid := '@extschema@'::regnamespace;
    found text;
BEGIN
    SELECT string_agg(DISTINCT pg_describe_object(d.classid, d.objid, d.objsubid), ', ')
      INTO found
      FROM pg_depend d
      JOIN pg_proc p ON d.refclassid = 'pg_proc'::regclass AND p.oid = d.refobjid
     WHERE p.pronamespace = ns
       AND p.proname LIKE 'snowflake%'
       AND p.provolatile = 'i'          -- the layout-dependent decoders
       AND d.deptype = 'n'
       -- but not the SQL edition's own functions and views
       AND NOT (d.classid = 'pg_proc'::regclass
                AND EXISTS (SELECT 1 FROM pg_proc q
                            WHERE q.oid = d.objid AND q.pronamespace = ns
                              AND q.proname LIKE 'snowflake%'))
       AND NOT (d.classid = 'pg_rewrite'::regclass
                AND EXISTS (SELECT 1 FROM pg_rewrite r JOIN pg_class v ON v.oid = r.ev_class
                            WHERE r.oid = d.objid AND v.relnamespace = ns
                              AND v.relname LIKE 'snowflake%'));
    RETURN found;
END
$fn$;

-- Sets the configuration (NULL arguments keep what is set) and regenerates
-- the functions that carry it.  preset: 'default' or 'javascript' (the
-- extension's JavaScript layout: 53 bits, 10 ms, 6 shard bits, 8 sequence
-- bits), applied first, then the explicit widths.
CREATE FUNCTION @extschema@.snowflake_configure(
    shard_id integer DEFAULT NULL,
    shard_ids integer[] DEFAULT NULL,
    preset text DEFAULT NULL,
    epoch timestamptz DEFAULT NULL,
    time_unit text DEFAULT NULL,
    id_bits integer DEFAULT NULL,
    shard_bits integer DEFAULT NULL,
    sequence_bits integer DEFAULT NULL,
    datacenter_bits integer DEFAULT NULL,
    max_clock_lead integer DEFAULT NULL,
    max_clock_wait integer DEFAULT NULL,
    import_shards integer[] DEFAULT NULL,
    allow_future boolean DEFAULT false)
RETURNS SETOF @extschema@.snowflake__config
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    old @extschema@.snowflake__config;
    n @extschema@.snowflake__config;
    unit_iv interval;
    ts_bits integer;
    deps text;
    s integer;
    new_shard boolean;
BEGIN
    -- one configure at a time, and no generation across a layout change
    SELECT * INTO old FROM @extschema@.snowflake__config FOR UPDATE;
    IF NOT FOUND THEN
        old := @extschema@.snowflake__settings();
    END IF;
    n := old;
    IF preset IS NOT NULL THEN
        CASE lower(preset)
            WHEN 'default' THEN
                n.epoch_ms := 1704067200000; n.time_unit_ms := 1; n.id_bits := 63;
                n.shard_bits := 10; n.sequence_bits := 12; n.datacenter_bits := 0;
            WHEN 'javascript' THEN
                n.epoch_ms := 1704067200000; n.time_unit_ms := 10; n.id_bits := 53;
                n.shard_bits := 6; n.sequence_bits := 8; n.datacenter_bits := 0;
            ELSE
                RAISE EXCEPTION USING ERRCODE = '22023',
                    MESSAGE = format('unknown layout preset "%s"', preset),
                    HINT = 'The presets are ''default'' and ''javascript''.';
        END CASE;
    END IF;
    IF epoch IS NOT NULL THEN
        n.epoch_ms := floor(extract(epoch FROM epoch) * 1000)::bigint;
    END IF;
    IF time_unit IS NOT NULL THEN
        BEGIN
            unit_iv := time_unit::interval;
        EXCEPTION WHEN invalid_datetime_format OR datetime_field_overflow OR interval_field_overflow THEN
            unit_iv := NULL;
        END;
        IF unit_iv IS NULL OR extract(epoch FROM unit_iv) * 1000 <> floor(extract(epoch FROM unit_iv) * 1000)
           OR extract(epoch FROM unit_iv) * 1000 NOT BETWEEN 1 AND 1000
           OR 1000 % (extract(epoch FROM unit_iv) * 1000)::integer <> 0 THEN
            RAISE EXCEPTION USING ERRCODE = '22023',
                MESSAGE = format('invalid time unit "%s"', time_unit),
                HINT = 'The time unit is a whole number of milliseconds that divides a second, such as ''1ms'', ''10ms'' or ''1s''.';
        END IF;
        n.time_unit_ms := (extract(epoch FROM unit_iv) * 1000)::integer;
    END IF;
    n.id_bits := coalesce(id_bits, n.id_bits);
    n.shard_bits := coalesce(shard_bits, n.shard_bits);
    n.sequence_bits := coalesce(sequence_bits, n.sequence_bits);
    n.datacenter_bits := coalesce(datacenter_bits, n.datacenter_bits);
    n.max_clock_lead := coalesce(max_clock_lead, n.max_clock_lead);
    n.max_clock_wait := coalesce(max_clock_wait, n.max_clock_wait);
    n.shard_ids := coalesce(shard_ids, n.shard_ids);
    n.import_shards := coalesce(import_shards, n.import_shards);
    IF snowflake_configure.shard_id IS NOT NULL THEN
        n.shard_id := snowflake_configure.shard_id;
    END IF;

    -- the layout's rules (the extension's check_layout(); the decoders'
    -- generator checks them again, with the same messages)
    IF n.id_bits NOT BETWEEN 40 AND 63 OR n.shard_bits NOT BETWEEN 0 AND 20
       OR n.sequence_bits NOT BETWEEN 1 AND 24 OR n.datacenter_bits NOT BETWEEN 0 AND n.shard_bits THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = 'invalid snowflake layout',
            DETAIL = format('id_bits %s (40 .. 63), shard_bits %s (0 .. 20), sequence_bits %s (1 .. 24), datacenter_bits %s (0 .. shard_bits)',
                            n.id_bits, n.shard_bits, n.sequence_bits, n.datacenter_bits);
    END IF;
    ts_bits := n.id_bits - n.shard_bits - n.sequence_bits;
    IF ts_bits < 1 OR ts_bits + log(2, n.time_unit_ms::numeric) < 38 THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('id_bits %s less %s + %s leaves %s timestamp bits of %s ms: the timestamp field must last at least 2^38 ms (8.7 years)',
                             n.id_bits, n.shard_bits, n.sequence_bits, ts_bits, n.time_unit_ms);
    END IF;
    IF n.max_clock_lead NOT BETWEEN 0 AND 3600000 OR n.max_clock_wait NOT BETWEEN 0 AND 3600000 THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = 'max_clock_lead and max_clock_wait must be between 0 and 3600000 ms';
    END IF;
    IF n.import_shards && ((CASE WHEN n.shard_id IS NULL THEN '{}'::integer[] ELSE ARRAY[n.shard_id] END) || n.shard_ids) THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = 'a shard cannot be both live and reserved for imports',
            DETAIL = format('shard_id %s, shard_ids {%s}, import_shards {%s}.', coalesce(n.shard_id::text, 'not set'),
                            array_to_string(n.shard_ids, ','), array_to_string(n.import_shards, ',')),
            HINT = 'Reserve for imports shards that never generate live IDs.';
    END IF;
    FOREACH s IN ARRAY (CASE WHEN n.shard_id IS NULL THEN '{}'::integer[] ELSE ARRAY[n.shard_id] END) || n.shard_ids || n.import_shards LOOP
        IF s IS NULL OR s < 0 OR s > (1::bigint << n.shard_bits) - 1 THEN
            RAISE EXCEPTION USING ERRCODE = '22023',
                MESSAGE = format('shard ID %s is out of range', coalesce(s::text, 'NULL')),
                DETAIL = format('This layout has %s shard bits: shard IDs 0 .. %s.', n.shard_bits, (1::bigint << n.shard_bits) - 1);
        END IF;
    END LOOP;

    -- a layout change is refused once an ID was drawn (they would decode
    -- wrongly and could collide with new ones), and once anything outside
    -- the SQL edition depends on a layout-dependent function (an expression
    -- index or generated column over a decoder would silently change)
    IF (n.epoch_ms, n.time_unit_ms, n.id_bits, n.shard_bits, n.sequence_bits, n.datacenter_bits)
       IS DISTINCT FROM (old.epoch_ms, old.time_unit_ms, old.id_bits, old.shard_bits, old.sequence_bits, old.datacenter_bits) THEN
        IF @extschema@.snowflake__any_issued() THEN
            RAISE EXCEPTION USING ERRCODE = '55000',
                MESSAGE = 'cannot change the snowflake layout: IDs were already issued with it',
                DETAIL = 'Existing IDs would decode wrongly, and new IDs could collide with them.',
                HINT = 'Keep the layout, or install the SQL edition afresh in a new database (or schema) for the new layout.';
        END IF;
        deps := @extschema@.snowflake__dependents();
        IF deps IS NOT NULL THEN
            RAISE EXCEPTION USING ERRCODE = '2BP01',
                MESSAGE = 'cannot change the snowflake layout: objects depend on its decoders',
                DETAIL = format('Depending: %s.', deps),
                HINT = 'Drop those objects, change the layout, then create them again.';
        END IF;
    END IF;

    INSERT INTO @extschema@.snowflake__config AS c
        (singleton, epoch_ms, time_unit_ms, id_bits, shard_bits, sequence_bits, datacenter_bits,
         shard_id, shard_ids, import_shards, max_clock_lead, max_clock_wait)
    VALUES (true, n.epoch_ms, n.time_unit_ms, n.id_bits, n.shard_bits, n.sequence_bits, n.datacenter_bits,
            n.shard_id, n.shard_ids, n.import_shards, n.max_clock_lead, n.max_clock_wait)
    ON CONFLICT (singleton) DO UPDATE SET
        epoch_ms = excluded.epoch_ms, time_unit_ms = excluded.time_unit_ms, id_bits = excluded.id_bits,
        shard_bits = excluded.shard_bits, sequence_bits = excluded.sequence_bits,
        datacenter_bits = excluded.datacenter_bits, shard_id = excluded.shard_id,
        shard_ids = excluded.shard_ids, import_shards = excluded.import_shards,
        max_clock_lead = excluded.max_clock_lead, max_clock_wait = excluded.max_clock_wait;
    -- a live shard set for the first time in this database
    new_shard := EXISTS (SELECT 1 FROM unnest(ARRAY[n.shard_id] || n.shard_ids) x
                          WHERE x IS NOT NULL
                            AND NOT EXISTS (SELECT 1 FROM @extschema@.snowflake__shard sh WHERE sh.shard_id = x));
    FOREACH s IN ARRAY (CASE WHEN n.shard_id IS NULL THEN '{}'::integer[] ELSE ARRAY[n.shard_id] END) || n.shard_ids || n.import_shards LOOP
        PERFORM @extschema@.snowflake__ensure_shard(s);
    END LOOP;
    -- an import shard's sequence is drawn from by snowflake_nextval_at()
    -- (owner's rights) only: no role keeps USAGE on it from a live past
    FOR s IN SELECT x FROM unnest(n.import_shards) x LOOP
        EXECUTE format('REVOKE ALL ON SEQUENCE %s FROM PUBLIC',
                       (SELECT sh.seq::oid::regclass::text FROM @extschema@.snowflake__shard sh WHERE sh.shard_id = s));
    END LOOP;
    PERFORM @extschema@.snowflake__define_generators();
    -- the decoders (30_decode.sql), where that part is installed
    IF to_regprocedure('@extschema@.snowflake__define_decoders(bigint,integer,integer,integer,integer,integer,integer,integer)') IS NOT NULL THEN
        EXECUTE 'SELECT @extschema@.snowflake__define_decoders($1, $2, $3, $4, $5, $6, $7)'
          USING n.epoch_ms, n.time_unit_ms, n.id_bits, n.shard_bits, n.sequence_bits,
                n.datacenter_bits, n.shard_id;
    END IF;
    -- a new shard in a database that already holds IDs (a restore from the
    -- extension, or from another install): start above every stored one,
    -- as snowflake_adopt_database() does (50_move.sql)
    IF new_shard AND to_regprocedure('@extschema@.snowflake_adopt_database(timestamptz,boolean)') IS NOT NULL THEN
        -- (allow_future: as the adopt step's own argument, for stored IDs
        -- further ahead of this clock than the lead and the wait allow)
        EXECUTE 'SELECT @extschema@.snowflake_adopt_database(NULL, $1)' USING allow_future;
    END IF;
    RETURN QUERY SELECT * FROM @extschema@.snowflake__config;
END
$fn$;
$src$, '@extschema@', pg_catalog.quote_ident(pg_catalog.current_schema()));
END
$install$;

REVOKE ALL ON FUNCTION snowflake__ensure_shard(integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION snowflake__any_issued() FROM PUBLIC;
REVOKE ALL ON FUNCTION snowflake__dependents() FROM PUBLIC;
-- the owner alone configures (others: 42501, permission denied)
REVOKE ALL ON FUNCTION snowflake_configure(integer, integer[], text, timestamptz, text, integer, integer, integer, integer, integer, integer, integer[], boolean) FROM PUBLIC;

COMMENT ON FUNCTION snowflake_configure(integer, integer[], text, timestamptz, text, integer, integer, integer, integer, integer, integer, integer[], boolean) IS
'sets the SQL edition''s shard, logical shards, import shards, layout (refused once an ID was issued), lead and wait (ms); NULL keeps a setting; the first shard set adopts the IDs the database holds (allow_future as snowflake_adopt_database''s)';
