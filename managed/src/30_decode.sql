-- ===========================================================================
-- 30_decode.sql: decoders, time bounds, created_after/before/between, the
-- text form and snowflake_layout(), all layout-dependent ones generated with
-- the layout's constants inlined (owner: sqldec).
--
-- THE INTERFACE (final signature; sqled's snowflake_configure calls it):
--
--   snowflake__define_decoders(
--       epoch_ms        bigint,   -- Unix milliseconds of timestamp 0 (snowflake.epoch)
--       time_unit_ms    integer,  -- ms per timestamp unit: 1..1000, divides 1000 (snowflake.time_unit)
--       id_bits         integer,  -- ID width, 40..63 (snowflake.id_bits; 53 = JavaScript-safe)
--       shard_bits      integer,  -- 0..20 (snowflake.shard_bits)
--       sequence_bits   integer,  -- 1..24 (snowflake.sequence_bits)
--       datacenter_bits integer,  -- 0..shard_bits, top part of the shard field
--       shard_id        integer DEFAULT NULL,  -- shown by snowflake_layout(); NULL = unset
--       datacenter_id   integer DEFAULT NULL)  -- shown by snowflake_layout(); NULL = unset
--   RETURNS void
--
-- The timestamp field takes id_bits - shard_bits - sequence_bits, as in the
-- extension.  It checks the layout exactly as the extension's check_layout()
-- does (22023 with the same reasons), then (re)creates every layout-dependent
-- function with CREATE OR REPLACE FUNCTION (same OIDs: indexes keep
-- depending).  It does not check for issued IDs or dependent objects: the
-- caller (snowflake_configure) refuses those first.  Not SECURITY DEFINER,
-- REVOKEd from PUBLIC: only the owner (or a SECURITY DEFINER function the
-- owner made) runs it.  Install calls it once with the default layout
-- (2024-01-01, 1 ms, 63, 10, 12, 0).
-- ===========================================================================

-- Exact Unix milliseconds -> timestamp (UTC, without time zone), for the
-- constants the generated functions carry.  Counted from 2000-01-01 in two
-- exact steps (a float product is exact below 2^53), so every millisecond a
-- timestamptz can hold comes out right, 1970 epochs and year 294276 included.
CREATE FUNCTION snowflake__utc_of_unix_ms(unix_ms bigint) RETURNS timestamp
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN timestamp '2000-01-01 00:00:00'
    + interval '4294967296 milliseconds' * ((unix_ms - 946684800000) >> 32)
    + interval '1 millisecond' * ((unix_ms - 946684800000) & 4294967295);

-- The extension's format_utc(): "YYYY-MM-DD HH:MM:SS.mmm+00", for messages.
CREATE FUNCTION snowflake__utc_text(unix_ms bigint) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN pg_catalog.to_char(snowflake__utc_of_unix_ms(unix_ms), 'YYYY-MM-DD HH24:MI:SS.MS') || '+00';

DO $install$
BEGIN
EXECUTE pg_catalog.replace($src$
CREATE FUNCTION @extschema@.snowflake__define_decoders(
    epoch_ms bigint, time_unit_ms integer, id_bits integer, shard_bits integer,
    sequence_bits integer, datacenter_bits integer,
    shard_id integer DEFAULT NULL, datacenter_id integer DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET datestyle = 'ISO, YMD'
SET timezone = 'UTC'
SET intervalstyle = 'postgres'
SET lc_numeric = 'C'
AS $fn$
DECLARE
    int64_max constant bigint := 9223372036854775807;
    -- the last Unix millisecond a timestamptz holds (294276-12-31 23:59:59.999)
    last_tz_ms constant bigint := 9224318015999999;
    tb integer;                 -- timestamp bits
    s integer;                  -- shard + sequence bits: the timestamp's shift
    max_id bigint;
    max_shard bigint;
    max_seq bigint;
    max_off bigint;
    max_worker bigint;
    worker_bits integer;
    last_unix bigint;           -- start of the last unit (saturating)
    last_usable bigint;         -- ... or the last a timestamptz holds
    last_off_tz bigint;         -- the last unit whose start a timestamptz holds
    max_x bigint;               -- the most milliseconds after the epoch decoded
    epoch_ts text;              -- the epoch as a timestamp literal (UTC)
    epoch_tstz text;
    last_end_tstz text;         -- the last microsecond of the last usable millisecond
    last_start_tstz text;       -- time_bound: later times are past the layout's end
    first_txt text;
    last_txt text;
    x text;                     -- the ID's milliseconds after the epoch
    ts_expr text;
    id_checks text;
    ts_check text := '';
    ms_of_ts text;
    ts_range_error text;
    shard_error text;
    sch constant text := '@extschema@';
BEGIN
    -- the extension's check_layout(), same bounds, same order
    IF shard_bits IS NULL OR shard_bits < 0 OR shard_bits > 20 THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'shard_bits must be 0 to 20';
    END IF;
    IF sequence_bits IS NULL OR sequence_bits < 1 OR sequence_bits > 24 THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'sequence_bits must be 1 to 24';
    END IF;
    IF id_bits IS NULL OR id_bits < 40 OR id_bits > 63 THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'id_bits must be 40 to 63';
    END IF;
    IF time_unit_ms IS NULL OR time_unit_ms < 1 OR time_unit_ms > 1000 OR 1000 % time_unit_ms <> 0 THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = 'time_unit_ms must divide a second: 1, 2, 4, 5, 8, 10, 20, 25, 40, 50, 100, 125, 200, 250, 500 or 1000';
    END IF;
    IF datacenter_bits IS NULL OR datacenter_bits < 0 OR datacenter_bits > shard_bits THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'datacenter_bits must be 0 to shard_bits';
    END IF;
    tb := id_bits - shard_bits - sequence_bits;
    IF tb < 1 OR (tb < 38 AND (2::numeric ^ tb) * time_unit_ms < 2::numeric ^ 38) THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = pg_catalog.format('id_bits %s less %s + %s leaves %s timestamp bits of %s ms: less than 2^38 ms (8.7 years)',
                                        id_bits, shard_bits, sequence_bits, tb, time_unit_ms);
    END IF;
    IF epoch_ms IS NULL OR epoch_ms < 0 THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'the epoch must not be earlier than 1970-01-01 00:00:00+00';
    END IF;
    IF epoch_ms > (extract(epoch FROM clock_timestamp()) * 1000)::bigint THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'the epoch must not be in the future';
    END IF;

    s := shard_bits + sequence_bits;
    max_id := CASE WHEN id_bits >= 63 THEN int64_max ELSE (1::bigint << id_bits) - 1 END;
    max_shard := (1::bigint << shard_bits) - 1;
    max_seq := (1::bigint << sequence_bits) - 1;
    max_off := (1::bigint << tb) - 1;
    worker_bits := shard_bits - datacenter_bits;
    max_worker := (1::bigint << worker_bits) - 1;
    last_unix := CASE WHEN max_off > (int64_max - epoch_ms) / time_unit_ms THEN int64_max
                      ELSE epoch_ms + max_off * time_unit_ms END;
    IF (extract(epoch FROM clock_timestamp()) * 1000)::bigint > last_unix THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'the layout is used up: the clock is past its last time';
    END IF;
    last_usable := least(last_unix, last_tz_ms);
    last_off_tz := (last_tz_ms - epoch_ms) / time_unit_ms;
    max_x := least(max_off, last_off_tz) * time_unit_ms;

    epoch_ts := quote_literal(to_char(@extschema@.snowflake__utc_of_unix_ms(epoch_ms), 'YYYY-MM-DD HH24:MI:SS.US'));
    epoch_tstz := quote_literal(to_char(@extschema@.snowflake__utc_of_unix_ms(epoch_ms), 'YYYY-MM-DD HH24:MI:SS.US') || '+00');
    last_end_tstz := quote_literal(to_char(@extschema@.snowflake__utc_of_unix_ms(last_usable)
                                           + interval '999 microseconds', 'YYYY-MM-DD HH24:MI:SS.US') || '+00');
    last_start_tstz := CASE WHEN last_unix <= last_tz_ms
        THEN quote_literal(to_char(@extschema@.snowflake__utc_of_unix_ms(last_unix), 'YYYY-MM-DD HH24:MI:SS.US') || '+00')
        ELSE last_end_tstz END;
    first_txt := @extschema@.snowflake__utc_text(epoch_ms);
    last_txt := @extschema@.snowflake__utc_text(last_usable);

    -- checks shared by every decoder of an ID (sf_check_id, sf_check_id_width)
    id_checks := pg_catalog.format(
        $$WHEN id < 0 THEN %1$s.snowflake__raise(NULL::@type@, '22003', 'invalid snowflake ID: ' || id::text, 'Snowflake IDs are never negative.')$$, sch);
    IF max_id < int64_max THEN
        id_checks := id_checks || pg_catalog.format(
            $$ WHEN id > %2$s THEN %1$s.snowflake__raise(NULL::@type@, '22003', 'invalid snowflake ID: ' || id::text, %3$L)$$,
            sch, max_id, pg_catalog.format('These IDs are %s bits wide (snowflake_layout().id_bits): at most %s.', id_bits, max_id));
    END IF;

    -- the time of an ID: a timestamptz built from the epoch without a float
    -- product past 2^53 and without a STABLE operator (so it inlines)
    x := CASE WHEN time_unit_ms = 1 THEN pg_catalog.format('(id >> %s)', s)
              ELSE pg_catalog.format('((id >> %s) * %s)', s, time_unit_ms) END;
    IF max_x < 9007199254740 THEN
        ts_expr := pg_catalog.format($$pg_catalog.timezone(interval '0', timestamp %s + interval '1 millisecond' * %s)$$, epoch_ts, x);
    ELSE
        ts_expr := pg_catalog.format($$pg_catalog.timezone(interval '0', timestamp '2000-01-01 00:00:00'
            + interval '4294967296 milliseconds' * ((%1$s + %2$s) >> 32)
            + interval '1 millisecond' * ((%1$s + %2$s) & 4294967295))$$, x, epoch_ms - 946684800000);
    END IF;
    IF max_off > last_off_tz THEN
        ts_check := pg_catalog.format(
            $$ WHEN (id >> %2$s) > %3$s THEN %1$s.snowflake__raise(NULL::timestamptz, '22008', 'timestamp out of range for snowflake ID ' || id::text,
                'Its timestamp field is ' || (id >> %2$s)::text || ' units of %4$s ms after the epoch, beyond the last time a timestamptz can hold (294276-12-31).')$$,
            sch, s, last_off_tz, time_unit_ms);
    END IF;

    EXECUTE pg_catalog.format($$CREATE OR REPLACE FUNCTION %1$s.snowflake_timestamp(id bigint) RETURNS timestamptz
        LANGUAGE sql IMMUTABLE PARALLEL SAFE
        RETURN CASE %2$s%3$s ELSE %4$s END$$, sch, pg_catalog.replace(id_checks, '@type@', 'timestamptz'), ts_check, ts_expr);
    EXECUTE pg_catalog.format($$CREATE OR REPLACE FUNCTION %1$s.snowflake_shard_id(id bigint) RETURNS integer
        LANGUAGE sql IMMUTABLE PARALLEL SAFE
        RETURN CASE %2$s ELSE ((id >> %3$s) & %4$s)::integer END$$, sch, pg_catalog.replace(id_checks, '@type@', 'integer'), sequence_bits, max_shard);
    EXECUTE pg_catalog.format($$CREATE OR REPLACE FUNCTION %1$s.snowflake_sequence(id bigint) RETURNS integer
        LANGUAGE sql IMMUTABLE PARALLEL SAFE
        RETURN CASE %2$s ELSE (id & %3$s)::integer END$$, sch, pg_catalog.replace(id_checks, '@type@', 'integer'), max_seq);
    EXECUTE pg_catalog.format($$CREATE OR REPLACE FUNCTION %1$s.snowflake_datacenter(id bigint) RETURNS integer
        LANGUAGE sql IMMUTABLE PARALLEL SAFE
        RETURN CASE %2$s ELSE (((id >> %3$s) & %4$s) >> %5$s)::integer END$$, sch, pg_catalog.replace(id_checks, '@type@', 'integer'), sequence_bits, max_shard, worker_bits);
    EXECUTE pg_catalog.format($$CREATE OR REPLACE FUNCTION %1$s.snowflake_worker(id bigint) RETURNS integer
        LANGUAGE sql IMMUTABLE PARALLEL SAFE
        RETURN CASE %2$s ELSE ((id >> %3$s) & %4$s)::integer END$$, sch, pg_catalog.replace(id_checks, '@type@', 'integer'), sequence_bits, max_worker);
    EXECUTE pg_catalog.format($$CREATE OR REPLACE FUNCTION %1$s.snowflake_decode(id bigint,
            OUT created_at timestamptz, OUT shard_id integer, OUT sequence integer) RETURNS record
        LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
        BEGIN ATOMIC
            SELECT %1$s.snowflake_timestamp(id), %1$s.snowflake_shard_id(id), %1$s.snowflake_sequence(id);
        END$$, sch);

    -- time ranges (sf_offset_of_timestamptz, then the shard's range)
    -- Unix milliseconds of ts, floored, exactly: counted from 2000-01-01 (an
    -- interval's epoch is exact; a timestamp's is rounded for the last
    -- millennia a timestamptz holds, whose distance from 1970 overflows int64)
    ms_of_ts := $$((pg_catalog.floor(EXTRACT(epoch FROM pg_catalog.timezone(interval '0', ts) - timestamp '2000-01-01') * 1000))::bigint + 946684800000)$$;
    ts_range_error := pg_catalog.format(
        $$WHEN NOT (ts >= %2$s::timestamptz AND ts <= %3$s::timestamptz) THEN %1$s.snowflake__raise(NULL::bigint, '22008',
            'timestamp out of range for snowflake IDs: "' || ts::text || '"', %4$L)$$,
        sch, epoch_tstz, last_end_tstz, pg_catalog.format('This layout covers %s to %s.', first_txt, last_txt));
    shard_error := pg_catalog.format(
        $$WHEN shard_id < 0 OR shard_id > %2$s THEN %1$s.snowflake__raise(NULL::bigint, '22023',
            'shard ID ' || shard_id::text || ' is out of range', %3$L)$$,
        sch, max_shard, pg_catalog.format('Shard IDs go from 0 to %s because snowflake.shard_bits is %s.', max_shard, shard_bits));
    EXECUTE pg_catalog.format($$CREATE OR REPLACE FUNCTION %1$s.snowflake_min_id(ts timestamptz) RETURNS bigint
        LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
        RETURN CASE %2$s ELSE ((%3$s - %4$s) / %5$s) << %6$s END$$,
        sch, ts_range_error, ms_of_ts, epoch_ms, time_unit_ms, s);
    EXECUTE pg_catalog.format($$CREATE OR REPLACE FUNCTION %1$s.snowflake_min_id(ts timestamptz, shard_id integer) RETURNS bigint
        LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
        RETURN CASE %2$s %7$s ELSE (((%3$s - %4$s) / %5$s) << %6$s) | (shard_id::bigint << %8$s) END$$,
        sch, ts_range_error, ms_of_ts, epoch_ms, time_unit_ms, s, shard_error, sequence_bits);
    EXECUTE pg_catalog.format($$CREATE OR REPLACE FUNCTION %1$s.snowflake_max_id(ts timestamptz) RETURNS bigint
        LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
        RETURN CASE %2$s ELSE (((%3$s - %4$s) / %5$s) << %6$s) | %7$s END$$,
        sch, ts_range_error, ms_of_ts, epoch_ms, time_unit_ms, s, (max_shard << sequence_bits) | max_seq);
    EXECUTE pg_catalog.format($$CREATE OR REPLACE FUNCTION %1$s.snowflake_max_id(ts timestamptz, shard_id integer) RETURNS bigint
        LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
        RETURN CASE %2$s %7$s ELSE (((%3$s - %4$s) / %5$s) << %6$s) | (shard_id::bigint << %8$s) | %9$s END$$,
        sch, ts_range_error, ms_of_ts, epoch_ms, time_unit_ms, s, shard_error, sequence_bits, max_seq);

    -- the first ID created at or after ts (snowflake::time_bound)
    EXECUTE pg_catalog.format($$CREATE OR REPLACE FUNCTION %1$s.snowflake_time_bound(ts timestamptz) RETURNS bigint
        LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
        RETURN CASE WHEN ts <= %2$s::timestamptz THEN 0::bigint
            WHEN ts > %3$s::timestamptz THEN %1$s.snowflake__raise(NULL::bigint, '22008',
                'timestamp out of range for snowflake IDs: "' || ts::text || '"', %4$L,
                'Compare with a time within the layout.')
            ELSE (((pg_catalog.ceil(EXTRACT(epoch FROM pg_catalog.timezone(interval '0', ts) - timestamp '2000-01-01') * 1000))::bigint
                   + 946684800000 - 1 - %5$s) / %6$s + 1) << %7$s END$$,
        sch, epoch_tstz, last_start_tstz, pg_catalog.format('This layout covers %s to %s.', first_txt, last_txt),
        epoch_ms, time_unit_ms, s);

    -- the named layouts of other systems and this one's (layout.cpp's
    -- kNamedLayouts and own_named_layout), for the two-argument decoders
    EXECUTE pg_catalog.format($$CREATE OR REPLACE FUNCTION %1$s.snowflake__named_layout(layout text,
            OUT name text, OUT epoch_ms bigint, OUT unit_ms bigint, OUT shard_bits integer,
            OUT shard_low_bits integer, OUT sequence_bits integer, OUT sequence_above_shard boolean,
            OUT max_id bigint, OUT timestamp_bits integer) RETURNS record
        LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
        SET search_path = pg_catalog, pg_temp
        AS $body$
        BEGIN
            SELECT * INTO name, epoch_ms, unit_ms, shard_bits, shard_low_bits, sequence_bits,
                          sequence_above_shard, max_id, timestamp_bits
            FROM (VALUES ('twitter', 1288834974657, 1, 10, 5, 12, false, 9223372036854775807, 41),
                         ('discord', 1420070400000, 1, 10, 5, 12, false, 9223372036854775807, 41),
                         ('instagram', 1314220021721, 1, 13, 0, 10, false, 9223372036854775807, 40),
                         ('sonyflake', 1409529600000, 10, 16, 0, 8, true, 9223372036854775807, 39),
                         ('sonyflake_v2', 1735689600000, 10, 16, 0, 8, true, 9223372036854775807, 39),
                         ('mastodon', 0, 1, 0, 0, 16, false, 9223372036854775807, 47),
                         ('snowflake', %2$s, %3$s, %4$s, %5$s, %6$s, false, %7$s, %8$s)) v
            WHERE v.column1 = lower(layout) AND layout ~ '^[A-Za-z_0-9]+$';
            IF name IS NULL THEN
                RAISE EXCEPTION USING ERRCODE = '22023',
                    MESSAGE = format('unknown snowflake ID layout: "%%s"', layout),
                    DETAIL = 'Known layouts: twitter, discord, instagram, sonyflake, sonyflake_v2, mastodon, and snowflake (this server''s own).';
            END IF;
        END
        $body$
        $$,
        sch, epoch_ms, time_unit_ms, shard_bits, CASE WHEN datacenter_bits > 0 THEN worker_bits ELSE 0 END,
        sequence_bits, max_id, tb);

    -- the layout (STABLE, as the extension's: the shard ID may change)
    EXECUTE pg_catalog.format($$CREATE OR REPLACE FUNCTION %1$s.snowflake_layout(
            OUT epoch timestamptz, OUT timestamp_bits integer, OUT shard_bits integer,
            OUT sequence_bits integer, OUT max_shard_id integer, OUT ids_per_ms_per_shard bigint,
            OUT last_timestamp timestamptz, OUT shard_id integer, OUT id_bits integer,
            OUT time_unit_ms integer, OUT ids_per_unit_per_shard bigint,
            OUT datacenter_bits integer, OUT datacenter_id integer) RETURNS record
        LANGUAGE sql STABLE PARALLEL SAFE
        BEGIN ATOMIC
            SELECT %2$s::timestamptz, %3$s, %4$s, %5$s, %6$s, %7$s::bigint, %8$s::timestamptz,
                   %9$s::integer, %10$s, %11$s, %12$s::bigint, %13$s, %14$s::integer;
        END$$,
        sch, epoch_tstz, tb, shard_bits, sequence_bits, max_shard, (max_seq + 1) / time_unit_ms,
        quote_literal(to_char(@extschema@.snowflake__utc_of_unix_ms(last_usable), 'YYYY-MM-DD HH24:MI:SS.US') || '+00'),
        coalesce(shard_id::text, 'NULL'), id_bits, time_unit_ms, max_seq + 1, datacenter_bits,
        coalesce(datacenter_id::text, 'NULL'));
END
$fn$
$src$, '@extschema@', pg_catalog.quote_ident(pg_catalog.current_schema()));
END
$install$;

REVOKE ALL ON FUNCTION snowflake__define_decoders(bigint, integer, integer, integer, integer, integer, integer, integer) FROM PUBLIC;

-- The default layout: 2024-01-01, 1 ms, 63 bits, 10 shard bits, 12 sequence bits.
SELECT snowflake__define_decoders(1704067200000, 1, 63, 10, 12, 0);

-- The bigint time filters: "snowflake_created_after(id, t)" inlines to
-- "id >= snowflake_time_bound(t)", folded to a constant for a constant t, so
-- the key's index answers it with a range scan.  Not STRICT (as the
-- extension's), so that the planner inlines them; NULL in, NULL out.
CREATE FUNCTION snowflake_created_after(id bigint, ts timestamptz) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN id >= snowflake_time_bound(ts);

CREATE FUNCTION snowflake_created_before(id bigint, ts timestamptz) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN id < snowflake_time_bound(ts);

CREATE FUNCTION snowflake_created_between(id bigint, from_ts timestamptz, to_ts timestamptz) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN id >= snowflake_time_bound(from_ts) AND id < snowflake_time_bound(to_ts);

-- The text form: 13 characters of Crockford base32, independent of the
-- layout.  Not STRICT, so that the planner inlines them (NULL in, NULL out).
CREATE FUNCTION snowflake_to_text(id bigint) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN id < 0 THEN snowflake__raise(NULL::text, '22003', 'invalid snowflake ID: ' || id::text,
                                              'Snowflake IDs are never negative.')
    ELSE substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ', ((id >> 60) & 31)::integer + 1, 1)
      || substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ', ((id >> 55) & 31)::integer + 1, 1)
      || substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ', ((id >> 50) & 31)::integer + 1, 1)
      || substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ', ((id >> 45) & 31)::integer + 1, 1)
      || substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ', ((id >> 40) & 31)::integer + 1, 1)
      || substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ', ((id >> 35) & 31)::integer + 1, 1)
      || substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ', ((id >> 30) & 31)::integer + 1, 1)
      || substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ', ((id >> 25) & 31)::integer + 1, 1)
      || substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ', ((id >> 20) & 31)::integer + 1, 1)
      || substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ', ((id >> 15) & 31)::integer + 1, 1)
      || substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ', ((id >> 10) & 31)::integer + 1, 1)
      || substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ', ((id >> 5) & 31)::integer + 1, 1)
      || substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ', (id & 31)::integer + 1, 1)
    END;

-- The errors of snowflake_from_text(), in the extension's order: the length
-- (in bytes), then the first character (not a digit, or above 7), then the
-- first character that is not a digit.
CREATE FUNCTION snowflake__from_text_error(t text) RETURNS bigint
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    digits constant text := '0123456789ABCDEFGHJKMNPQRSTVWXYZabcdefghjkmnpqrstvwxyz';
BEGIN
    IF octet_length(t) <> 13 THEN
        RAISE EXCEPTION USING ERRCODE = '22P02',
            MESSAGE = format('invalid input syntax for a snowflake ID: "%s"', t),
            DETAIL = format('A snowflake ID in text form has 13 characters, not %s.', char_length(t));
    END IF;
    FOR i IN 1 .. char_length(t) LOOP
        IF strpos(digits, substr(t, i, 1)) = 0 THEN
            RAISE EXCEPTION USING ERRCODE = '22P02',
                MESSAGE = format('invalid input syntax for a snowflake ID: "%s"', t),
                DETAIL = format('Character %s is not a Crockford base32 digit (0-9 and A-Z without I, L, O, U).', i);
        END IF;
        IF i = 1 AND strpos('01234567', substr(t, 1, 1)) = 0 THEN
            RAISE EXCEPTION USING ERRCODE = '22P02',
                MESSAGE = format('invalid input syntax for a snowflake ID: "%s"', t),
                DETAIL = 'The value is larger than the largest bigint; the first character of a snowflake ID is 0 to 7.';
        END IF;
    END LOOP;
    RAISE EXCEPTION 'snowflake__from_text_error called on valid text';
END
$fn$;

CREATE FUNCTION snowflake_from_text(text) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN $1 ~ '^[0-7][0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{12}$' AND octet_length($1) = 13
    THEN ((strpos('0123456789ABCDEFGHJKMNPQRSTVWXYZ', upper(substr($1, 1, 1))) - 1)::bigint << 60)
       | ((strpos('0123456789ABCDEFGHJKMNPQRSTVWXYZ', upper(substr($1, 2, 1))) - 1)::bigint << 55)
       | ((strpos('0123456789ABCDEFGHJKMNPQRSTVWXYZ', upper(substr($1, 3, 1))) - 1)::bigint << 50)
       | ((strpos('0123456789ABCDEFGHJKMNPQRSTVWXYZ', upper(substr($1, 4, 1))) - 1)::bigint << 45)
       | ((strpos('0123456789ABCDEFGHJKMNPQRSTVWXYZ', upper(substr($1, 5, 1))) - 1)::bigint << 40)
       | ((strpos('0123456789ABCDEFGHJKMNPQRSTVWXYZ', upper(substr($1, 6, 1))) - 1)::bigint << 35)
       | ((strpos('0123456789ABCDEFGHJKMNPQRSTVWXYZ', upper(substr($1, 7, 1))) - 1)::bigint << 30)
       | ((strpos('0123456789ABCDEFGHJKMNPQRSTVWXYZ', upper(substr($1, 8, 1))) - 1)::bigint << 25)
       | ((strpos('0123456789ABCDEFGHJKMNPQRSTVWXYZ', upper(substr($1, 9, 1))) - 1)::bigint << 20)
       | ((strpos('0123456789ABCDEFGHJKMNPQRSTVWXYZ', upper(substr($1, 10, 1))) - 1)::bigint << 15)
       | ((strpos('0123456789ABCDEFGHJKMNPQRSTVWXYZ', upper(substr($1, 11, 1))) - 1)::bigint << 10)
       | ((strpos('0123456789ABCDEFGHJKMNPQRSTVWXYZ', upper(substr($1, 12, 1))) - 1)::bigint << 5)
       | (strpos('0123456789ABCDEFGHJKMNPQRSTVWXYZ', upper(substr($1, 13, 1))) - 1)::bigint
    ELSE snowflake__from_text_error($1) END;

-- Decoding other systems' IDs by layout name (layout.cpp's decode_named):
-- the fields, and the time as Unix milliseconds, checked by the callers.
DO $install$
BEGIN
EXECUTE pg_catalog.replace($src$
CREATE FUNCTION @extschema@.snowflake__decode_named(id bigint, layout text,
    OUT unix_ms bigint, OUT shard_id integer, OUT sequence integer,
    OUT shard_high integer, OUT shard_low integer)
RETURNS record
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    l record;
    units bigint;
    shard bigint;
BEGIN
    l := @extschema@.snowflake__named_layout(layout);
    IF id < 0 THEN
        RAISE EXCEPTION USING ERRCODE = '22003', MESSAGE = format('invalid snowflake ID: %s', id),
            DETAIL = 'Snowflake IDs are never negative.';
    END IF;
    IF l.name = 'snowflake' AND id > l.max_id THEN
        RAISE EXCEPTION USING ERRCODE = '22003', MESSAGE = format('invalid snowflake ID: %s', id),
            DETAIL = format('These IDs are at most %s.', l.max_id);
    END IF;
    units := id >> (l.shard_bits + l.sequence_bits);
    IF l.sequence_above_shard THEN
        shard := id & ((1::bigint << l.shard_bits) - 1);
        sequence := (id >> l.shard_bits) & ((1::bigint << l.sequence_bits) - 1);
    ELSE
        shard := (id >> l.sequence_bits) & ((1::bigint << l.shard_bits) - 1);
        sequence := id & ((1::bigint << l.sequence_bits) - 1);
    END IF;
    IF units > (9223372036854775807 - greatest(l.epoch_ms, 0)) / l.unit_ms THEN
        RAISE EXCEPTION USING ERRCODE = '22008', MESSAGE = 'timestamp out of range',
            DETAIL = format('ID %s carries a time beyond the range of the "%s" layout''s arithmetic.', id, l.name);
    END IF;
    unix_ms := l.epoch_ms + units * l.unit_ms;
    shard_id := CASE WHEN l.shard_bits > 0 THEN shard END;
    shard_high := CASE WHEN l.shard_low_bits > 0 THEN shard >> l.shard_low_bits END;
    shard_low := CASE WHEN l.shard_low_bits > 0 THEN shard & ((1::bigint << l.shard_low_bits) - 1) END;
END
$fn$;
$src$, '@extschema@', pg_catalog.quote_ident(pg_catalog.current_schema()));
END
$install$;

-- Unix milliseconds as a timestamptz, or 22008 past the last a timestamptz holds.
CREATE FUNCTION snowflake__timestamptz_checked(unix_ms bigint) RETURNS timestamptz
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN CASE WHEN unix_ms > 9224318015999999 THEN snowflake__raise(NULL::timestamptz, '22008', 'timestamp out of range',
        'The ID carries Unix time ' || unix_ms::text || ' ms, beyond the last time a timestamptz can hold (294276-12-31).')
    ELSE pg_catalog.timezone(interval '0', snowflake__utc_of_unix_ms(unix_ms)) END;

CREATE FUNCTION snowflake_timestamp(id bigint, layout text) RETURNS timestamptz
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN snowflake__timestamptz_checked((snowflake__decode_named(id, layout)).unix_ms);

CREATE FUNCTION snowflake_shard_id(id bigint, layout text) RETURNS integer
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN (snowflake__decode_named(id, layout)).shard_id;

CREATE FUNCTION snowflake_sequence(id bigint, layout text) RETURNS integer
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN (snowflake__decode_named(id, layout)).sequence;

CREATE FUNCTION snowflake_decode(id bigint, layout text,
    OUT created_at timestamptz, OUT shard_id integer, OUT sequence integer,
    OUT shard_high integer, OUT shard_low integer)
RETURNS record
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
BEGIN ATOMIC
    SELECT snowflake__timestamptz_checked(d.unix_ms), d.shard_id, d.sequence, d.shard_high, d.shard_low
    FROM snowflake__decode_named(id, layout) d;
END;

-- Partitioning by the key (the extension's partitions.cpp): the number of
-- IDs in a span of time for pg_partman's integer partitioning, the bounds
-- of such partitions, and the span a number of IDs covers.  PL/pgSQL over
-- the configured layout (snowflake__named_layout('snowflake')).
DO $install$
BEGIN
EXECUTE pg_catalog.replace($src$
-- The number of timestamp units in a span, with the extension's checks.
CREATE FUNCTION @extschema@.snowflake__span_units(span interval, require_alignment boolean) RETURNS bigint
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    l record := @extschema@.snowflake__named_layout('snowflake');
    span_us numeric;
    span_ms bigint;
    units bigint;
    align_ms bigint;
    off_ms bigint;
BEGIN
    IF EXTRACT(year FROM span) <> 0 OR EXTRACT(month FROM span) <> 0 THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('partition span "%s" has months or years, which have no fixed number of IDs', span),
            DETAIL = 'IDs count milliseconds; months and years vary in length.',
            HINT = 'Use a span of days or less, such as ''1 day'' or ''7 days'', or create monthly partitions yourself with bounds from snowflake_min_id().';
    END IF;
    span_us := EXTRACT(epoch FROM span) * 1000000;
    IF span_us > 9223372036854775807 OR span_us < -9223372036854775808 THEN
        RAISE EXCEPTION USING ERRCODE = '22003',
            MESSAGE = format('partition span "%s" is longer than the layout''s whole range of time', span);
    END IF;
    IF span_us <= 0 THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('partition span "%s" is not positive', span);
    END IF;
    IF span_us % 1000 <> 0 OR (span_us / 1000)::bigint % l.unit_ms <> 0 THEN
        IF l.unit_ms = 1 THEN
            RAISE EXCEPTION USING ERRCODE = '22023',
                MESSAGE = format('partition span "%s" is not a whole number of milliseconds', span),
                DETAIL = 'IDs carry their time to the millisecond.';
        END IF;
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('partition span "%s" is not a whole number of time units', span),
            DETAIL = format('IDs carry their time in units of %s ms (the layout''s time_unit_ms).', l.unit_ms);
    END IF;
    span_ms := (span_us / 1000)::bigint;
    units := span_ms / l.unit_ms;
    IF units > (1::bigint << l.timestamp_bits) - 1 THEN
        RAISE EXCEPTION USING ERRCODE = '22003',
            MESSAGE = format('partition span "%s" is longer than the layout''s whole range of time', span),
            DETAIL = format('With %s timestamp bits of %s ms, IDs cover %s years.', l.timestamp_bits, l.unit_ms,
                            round((l.unit_ms * 2::numeric ^ l.timestamp_bits) / (365.25 * 86400000), 1));
    END IF;
    IF require_alignment THEN
        IF 86400000 % span_ms = 0 THEN
            align_ms := span_ms;
        ELSIF span_ms % 86400000 = 0 THEN
            align_ms := 86400000;
        ELSE
            RAISE EXCEPTION USING ERRCODE = '22023',
                MESSAGE = format('partition span "%s" neither divides a day nor is a whole number of days', span),
                DETAIL = 'Its partitions would start at a different time of day each time.',
                HINT = 'Choose a span such as ''1 hour'', ''6 hours'', ''1 day'' or ''7 days'', or pass require_alignment => false to accept it.';
        END IF;
        off_ms := l.epoch_ms % align_ms;
        IF off_ms <> 0 THEN
            RAISE EXCEPTION USING ERRCODE = '55000',
                MESSAGE = format('the layout''s epoch is not aligned to partitions of "%s"', span),
                DETAIL = format('Partitions of a fixed number of IDs start at multiples of it counted from ID 0, which is the epoch (%s); every partition would start %s after a UTC %s.',
                                @extschema@.snowflake__utc_text(l.epoch_ms), justify_hours(off_ms * interval '1 millisecond'),
                                CASE WHEN align_ms = 86400000 THEN 'midnight' ELSE format('multiple of %s', span) END),
                HINT = 'Pass require_alignment => false to accept partitions that start at the epoch''s offset; pg_partman 5.5 and later can also shift them back to UTC boundaries with create_parent(p_offset_id => ...).';
        END IF;
    END IF;
    RETURN units;
END
$fn$;

CREATE FUNCTION @extschema@.snowflake_partition_interval(span interval DEFAULT '1 day',
                                                          require_alignment boolean DEFAULT true)
RETURNS bigint
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    l record := @extschema@.snowflake__named_layout('snowflake');
BEGIN
    RETURN @extschema@.snowflake__span_units(span, require_alignment) << (l.shard_bits + l.sequence_bits);
END
$fn$;

CREATE FUNCTION @extschema@.snowflake_partition_span(ids bigint) RETURNS interval
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    l record := @extschema@.snowflake__named_layout('snowflake');
    per_unit bigint := 1::bigint << (l.shard_bits + l.sequence_bits);
    us numeric;
BEGIN
    IF ids <= 0 THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('a partition interval of %s IDs is not positive', ids);
    END IF;
    IF ids % per_unit <> 0 THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('a partition interval of %s IDs is not a whole number of %s in this layout',
                             ids, CASE WHEN l.unit_ms = 1 THEN 'milliseconds' ELSE 'time units' END),
            DETAIL = CASE WHEN l.unit_ms = 1
                THEN format('A millisecond holds %s IDs (shard and sequence bits); %s IDs is %s ms.',
                            per_unit, ids, to_char(ids::numeric / per_unit, 'FM999999999999999990.000'))
                ELSE format('A time unit of %s ms holds %s IDs (shard and sequence bits); %s IDs is %s units.',
                            l.unit_ms, per_unit, ids, to_char(ids::numeric / per_unit, 'FM999999999999999990.000')) END,
            HINT = 'Take the interval from snowflake_partition_interval(), for example snowflake_partition_interval(''1 day'').';
    END IF;
    us := (ids / per_unit)::numeric * l.unit_ms * 1000;
    IF us > 9223372036854775807 THEN
        RAISE EXCEPTION USING ERRCODE = '22008',
            MESSAGE = format('a partition interval of %s IDs spans more time than an interval holds', ids);
    END IF;
    -- justify_hours() of so many microseconds: whole days, then the rest (exact)
    RETURN interval '1 day' * floor(us / 86400000000)::bigint + interval '1 microsecond' * (us % 86400000000)::bigint;
END
$fn$;

CREATE FUNCTION @extschema@.snowflake_partition_bounds(from_time timestamptz, to_time timestamptz,
                                                        span interval DEFAULT '1 day',
                                                        require_alignment boolean DEFAULT true,
                                                        OUT starts timestamptz, OUT ends timestamptz,
                                                        OUT from_id bigint, OUT to_id bigint)
RETURNS SETOF record
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE ROWS 100
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    l record := @extschema@.snowflake__named_layout('snowflake');
    bits integer := l.shard_bits + l.sequence_bits;
    units bigint := @extschema@.snowflake__span_units(span, require_alignment);
    step bigint := units << bits;
    lo bigint;
    last bigint;
    k bigint;
    end_ms numeric;
BEGIN
    IF to_time <= from_time THEN
        RETURN;
    END IF;
    lo := @extschema@.snowflake_min_id(from_time);
    last := @extschema@.snowflake_max_id(to_time - interval '1 microsecond');
    k := lo / step;
    WHILE k::numeric * step <= last LOOP
        starts := pg_catalog.timezone(interval '0', @extschema@.snowflake__utc_of_unix_ms(l.epoch_ms + k * units * l.unit_ms));
        end_ms := (k + 1)::numeric * units * l.unit_ms + l.epoch_ms;
        ends := CASE WHEN end_ms <= 9224318015999999
            THEN pg_catalog.timezone(interval '0', @extschema@.snowflake__utc_of_unix_ms(end_ms::bigint)) END;
        from_id := k * step;
        IF (k + 1)::numeric * step > 9223372036854775807 THEN
            to_id := NULL;
            RETURN NEXT;
            RETURN;
        END IF;
        to_id := (k + 1) * step;
        RETURN NEXT;
        k := k + 1;
    END LOOP;
END
$fn$;
$src$, '@extschema@', pg_catalog.quote_ident(pg_catalog.current_schema()));
END
$install$;
