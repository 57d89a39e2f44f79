/* snowflake--1.1--1.2.sql: upgrade from 1.1 to 1.2 (ALTER EXTENSION snowflake UPDATE) */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION snowflake UPDATE TO '1.2'" to load this file. \quit

-- Partitioning by the key (1.2): the number of IDs in a span of time, for
-- range partitioning in fixed steps of IDs (pg_partman's integer
-- partitioning), the bounds such partitions have, and the span a step of IDs
-- covers.  Integer partitions start at multiples of the step counted from
-- ID 0, which is snowflake.epoch, so they start at UTC midnights (or whole
-- hours, ...) only when the epoch does; the functions refuse a span that
-- would not, unless require_alignment is false.  PL/pgSQL with a fixed
-- search_path; the layout is read through the extension's schema, found at
-- run time.  IMMUTABLE for the reason the decoders are: the layout is fixed at
-- server start and checked against the data directory.  See
-- docs/operations.md, "Partitioning by the key with pg_partman".
CREATE FUNCTION snowflake_partition_interval(span interval DEFAULT '1 day',
                                             require_alignment boolean DEFAULT true)
RETURNS bigint
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $partition$
DECLARE
    ext name;
    lay record;
    span_ms numeric;
    epoch_ms numeric;
    unit_ms numeric;
    day_ms constant numeric := 86400000;
    off_ms numeric;
BEGIN
    IF EXTRACT(year FROM span) <> 0 OR EXTRACT(month FROM span) <> 0 THEN
        RAISE EXCEPTION 'partition span "%" has months or years, which have no fixed number of IDs', span
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'IDs count milliseconds; months and years vary in length.',
                  HINT = 'Use a span of days or less, such as ''1 day'' or ''7 days'', or create monthly '
                         'partitions yourself with bounds from snowflake_min_id().';
    END IF;
    span_ms := EXTRACT(epoch FROM span) * 1000;
    IF span_ms <= 0 THEN
        RAISE EXCEPTION 'partition span "%" is not positive', span
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF span_ms <> pg_catalog.trunc(span_ms) THEN
        RAISE EXCEPTION 'partition span "%" is not a whole number of milliseconds', span
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'IDs carry their time to the millisecond.';
    END IF;

    SELECT n.nspname INTO ext
    FROM pg_catalog.pg_extension e JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace
    WHERE e.extname = 'snowflake';
    EXECUTE format('SELECT epoch, timestamp_bits, shard_bits, sequence_bits FROM %I.snowflake_layout()', ext)
        INTO lay;
    IF span_ms >= (1::bigint << lay.timestamp_bits) THEN
        RAISE EXCEPTION 'partition span "%" is longer than the layout''s whole range of time', span
            USING ERRCODE = 'numeric_value_out_of_range',
                  DETAIL = format('With %s timestamp bits, IDs cover %s ms.',
                                  lay.timestamp_bits, 1::bigint << lay.timestamp_bits);
    END IF;

    -- partitions of IDs start at epoch + k * span: where does that fall?
    IF require_alignment THEN
        IF day_ms % span_ms = 0 THEN
            unit_ms := span_ms;         -- divides a day: at multiples of it in UTC
        ELSIF span_ms % day_ms = 0 THEN
            unit_ms := day_ms;          -- whole days: at UTC midnights
        ELSE
            RAISE EXCEPTION 'partition span "%" neither divides a day nor is a whole number of days', span
                USING ERRCODE = 'invalid_parameter_value',
                      DETAIL = 'Its partitions would start at a different time of day each time.',
                      HINT = 'Choose a span such as ''1 hour'', ''6 hours'', ''1 day'' or ''7 days'', '
                             'or pass require_alignment => false to accept it.';
        END IF;
        epoch_ms := EXTRACT(epoch FROM lay.epoch) * 1000;
        off_ms := epoch_ms % unit_ms;
        IF off_ms <> 0 THEN
            RAISE EXCEPTION 'snowflake.epoch is not aligned to partitions of "%"', span
                USING ERRCODE = 'object_not_in_prerequisite_state',
                      DETAIL = format('Partitions of a fixed number of IDs start at multiples of it counted '
                                      'from ID 0, which is the epoch (%s); every partition would start %s '
                                      'after a UTC %s.',
                                      pg_catalog.to_char(lay.epoch AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.MS "UTC"'),
                                      pg_catalog.justify_hours(off_ms * interval '1 millisecond'),
                                      CASE WHEN unit_ms = day_ms THEN 'midnight'
                                           ELSE 'multiple of ' || span::text END),
                      HINT = 'Pass require_alignment => false to accept partitions that start at the '
                             'epoch''s offset; pg_partman 5.5 and later can also shift them back to UTC '
                             'boundaries with create_parent(p_offset_id => ...).';
        END IF;
    END IF;
    RETURN (span_ms * (1::bigint << (lay.shard_bits + lay.sequence_bits)))::bigint;
END
$partition$;

COMMENT ON FUNCTION snowflake_partition_interval(interval, boolean) IS
'the number of IDs in a span of time (default 1 day): the interval for pg_partman''s integer partitioning on a snowflake key; refuses spans whose partitions would not start at UTC midnights (or multiples of the span in the UTC day) unless require_alignment is false';

CREATE FUNCTION snowflake_partition_bounds(from_time timestamptz, to_time timestamptz,
                                           span interval DEFAULT '1 day',
                                           require_alignment boolean DEFAULT true,
                                           OUT starts timestamptz, OUT ends timestamptz,
                                           OUT from_id bigint, OUT to_id bigint)
RETURNS SETOF record
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $partition$
DECLARE
    ext name;
    step numeric;
    span_ms numeric;
    epoch_ms numeric;
    lo numeric;
    hi numeric;
    k numeric;
BEGIN
    SELECT n.nspname INTO ext
    FROM pg_catalog.pg_extension e JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace
    WHERE e.extname = 'snowflake';
    EXECUTE format('SELECT %I.snowflake_partition_interval($1, $2)', ext)
        INTO step USING span, require_alignment;
    IF to_time <= from_time THEN
        RETURN;
    END IF;
    span_ms := EXTRACT(epoch FROM span) * 1000;
    EXECUTE format('SELECT EXTRACT(epoch FROM epoch) * 1000 FROM %I.snowflake_layout()', ext)
        INTO epoch_ms;
    EXECUTE format('SELECT %I.snowflake_min_id($1), %I.snowflake_min_id($2)', ext, ext)
        INTO lo, hi USING from_time, to_time;
    -- every partition [k * step, (k + 1) * step) holding IDs of [from_time, to_time)
    k := pg_catalog.floor(lo / step);
    WHILE k * step < hi LOOP
        starts := pg_catalog.to_timestamp((epoch_ms + k * span_ms) / 1000);
        ends := pg_catalog.to_timestamp((epoch_ms + (k + 1) * span_ms) / 1000);
        from_id := k * step;
        -- NULL (MAXVALUE) where the layout ends inside the partition
        to_id := CASE WHEN (k + 1) * step <= 9223372036854775807 THEN (k + 1) * step END;
        RETURN NEXT;
        k := k + 1;
    END LOOP;
END
$partition$;

COMMENT ON FUNCTION snowflake_partition_bounds(timestamptz, timestamptz, interval, boolean) IS
'the partitions of a fixed number of IDs (snowflake_partition_interval(span), as pg_partman makes them) that hold the IDs of [from_time, to_time): each one''s start and end times and ID bounds (from_id inclusive, to_id exclusive)';

CREATE FUNCTION snowflake_partition_span(ids bigint)
RETURNS interval
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $partition$
DECLARE
    ext name;
    per_ms bigint;
BEGIN
    SELECT n.nspname INTO ext
    FROM pg_catalog.pg_extension e JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace
    WHERE e.extname = 'snowflake';
    EXECUTE format('SELECT 1::bigint << (shard_bits + sequence_bits) FROM %I.snowflake_layout()', ext)
        INTO per_ms;
    IF ids <= 0 THEN
        RAISE EXCEPTION 'a partition interval of % IDs is not positive', ids
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF ids % per_ms <> 0 THEN
        RAISE EXCEPTION 'a partition interval of % IDs is not a whole number of milliseconds in this layout', ids
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = format('A millisecond holds %s IDs (shard and sequence bits); %s IDs is %s ms.',
                                  per_ms, ids, pg_catalog.round(ids::numeric / per_ms, 3)),
                  HINT = 'Take the interval from snowflake_partition_interval(), for example '
                         'snowflake_partition_interval(''1 day'').';
    END IF;
    RETURN pg_catalog.justify_hours((ids / per_ms) * interval '1 millisecond');
END
$partition$;

COMMENT ON FUNCTION snowflake_partition_span(bigint) IS
'the span of time a partition interval of ids IDs covers in this layout (the reverse of snowflake_partition_interval), to check pg_partman''s partition_interval; an error if it is not a whole number of milliseconds';
