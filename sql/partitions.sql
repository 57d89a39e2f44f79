--
-- partitions: range partitions of a fixed number of IDs (pg_partman's integer
-- partitioning) that line up with days, hours or weeks
--
\set SHOW_CONTEXT never
SET timezone = 'UTC';
-- intervals as users see them by default (pg_regress sets postgres_verbose)
SET intervalstyle = 'postgres';

-- one day of IDs is the distance between the smallest IDs of two midnights
SELECT snowflake_partition_interval() = snowflake_min_id('2026-11-02') - snowflake_min_id('2026-11-01') AS one_day,
       snowflake_partition_interval('1 day') = snowflake_partition_interval() AS default_is_a_day,
       snowflake_partition_interval('24 hours') = snowflake_partition_interval('1 day') AS hours_are_days,
       snowflake_partition_interval('1 day') = (86400000::bigint << (shard_bits + sequence_bits)) AS day_in_bits
FROM snowflake_layout();
SELECT snowflake_partition_interval('1 hour') = snowflake_min_id('2026-11-01 01:00') - snowflake_min_id('2026-11-01') AS one_hour,
       snowflake_partition_interval('15 minutes') * 4 = snowflake_partition_interval('1 hour') AS quarter_hours,
       snowflake_partition_interval('7 days') = 7 * snowflake_partition_interval() AS one_week,
       snowflake_partition_interval('1 millisecond') = snowflake_min_id('2026-11-01 00:00:00.001') - snowflake_min_id('2026-11-01') AS one_ms;

-- and back: the span a number of IDs covers
SELECT snowflake_partition_span(snowflake_partition_interval()) AS day,
       snowflake_partition_span(snowflake_partition_interval('1 hour')) AS hour,
       snowflake_partition_span(snowflake_partition_interval('7 days')) AS week,
       snowflake_partition_span(snowflake_partition_interval('250 ms')) AS quarter_second;

-- a week of daily partitions: each starts at a UTC midnight, its ID bounds
-- are snowflake_min_id() of its day and of the next, and they tile the IDs
SELECT starts, ends,
       from_id = snowflake_min_id(starts) AS from_is_min_id,
       to_id = snowflake_min_id(ends) AS to_is_min_id,
       from_id % snowflake_partition_interval() = 0 AS multiple_of_interval,
       to_id = lead(from_id) OVER (ORDER BY starts) AS adjacent
FROM snowflake_partition_bounds('2026-11-01', '2026-11-08')
ORDER BY starts;

-- a range that starts or ends within a day gets the whole days around it
SELECT count(*) AS partitions, min(starts) AS first_start, max(ends) AS last_end
FROM snowflake_partition_bounds('2026-11-01 13:00', '2026-11-03 00:00:00.001');
SELECT count(*) AS empty FROM snowflake_partition_bounds('2026-11-03', '2026-11-03');
SELECT count(*) AS backwards FROM snowflake_partition_bounds('2026-11-03', '2026-11-01');

-- hourly and weekly partitions: weeks count from the epoch (a Monday)
SELECT starts, ends, from_id = snowflake_min_id(starts) AS from_is_min_id
FROM snowflake_partition_bounds('2026-11-01 22:30', '2026-11-02 01:00', '1 hour') ORDER BY starts;
SELECT starts, to_char(starts, 'Dy') AS weekday, ends, to_id = snowflake_min_id(ends) AS to_is_min_id
FROM snowflake_partition_bounds('2026-11-01', '2026-11-20', '7 days') ORDER BY starts;

-- days are UTC days whatever the session's time zone, across a DST change
SET timezone = 'America/New_York';
SELECT starts AT TIME ZONE 'UTC' AS starts_utc, ends - starts AS length,
       from_id = snowflake_min_id(starts) AS from_is_min_id
FROM snowflake_partition_bounds('2026-10-31 12:00+00', '2026-11-03 00:00+00') ORDER BY starts;
SET timezone = 'UTC';

-- the partitions route rows to their day, at the first and last millisecond
CREATE TABLE events (id bigint PRIMARY KEY, note text) PARTITION BY RANGE (id);
DO $$
DECLARE
    b record;
BEGIN
    FOR b IN SELECT * FROM snowflake_partition_bounds('2026-11-01', '2026-11-04') LOOP
        EXECUTE format('CREATE TABLE %I PARTITION OF events FOR VALUES FROM (%s) TO (%s)',
                       'events_' || to_char(b.starts, 'YYYYMMDD'), b.from_id, b.to_id);
    END LOOP;
END
$$;
INSERT INTO events VALUES
    (snowflake_min_id('2026-11-01'), 'first of the 1st'),
    (snowflake_max_id('2026-11-01 23:59:59.999', 1023), 'last of the 1st'),
    (snowflake_min_id('2026-11-02'), 'first of the 2nd'),
    (snowflake_min_id('2026-11-03 12:00', 42) + 7, 'noon on the 3rd');
SELECT tableoid::regclass AS partition, note,
       date_trunc('day', snowflake_timestamp(id))::date = to_date(right(tableoid::regclass::text, 8), 'YYYYMMDD') AS own_day
FROM events ORDER BY id;
DROP TABLE events;

-- a span that neither divides a day nor is a whole number of days is refused,
-- unless alignment is not required
SELECT snowflake_partition_interval('36 hours');
SELECT snowflake_partition_interval('7 hours');
SELECT snowflake_partition_span(snowflake_partition_interval('36 hours', require_alignment => false)) AS accepted;
SELECT starts, ends FROM snowflake_partition_bounds('2026-11-01', '2026-11-03', '36 hours', false) ORDER BY starts;

-- bad spans
SELECT snowflake_partition_interval('0');
SELECT snowflake_partition_interval('-1 day');
SELECT snowflake_partition_interval('1 month');
SELECT snowflake_partition_interval('1 year');
SELECT snowflake_partition_interval('1.5 milliseconds');
SELECT snowflake_partition_interval('80000 days');
SELECT snowflake_partition_bounds('2026-11-01', '2026-11-02', '1 mon');
SELECT snowflake_partition_bounds('2023-12-31', '2024-01-02');
SELECT snowflake_partition_interval(NULL) IS NULL AS null_in,
       snowflake_partition_span(NULL) IS NULL AS null_span;

-- an interval that is not whole milliseconds of IDs, as passing milliseconds
-- (or seconds) to pg_partman would be
SELECT snowflake_partition_span(86400000);
SELECT snowflake_partition_span(0);
SELECT snowflake_partition_span(-4194304);

-- a range that reaches the layout's last unit: its first ID past the range
-- would be 2^63, so the last partition ends at MAXVALUE (to_id NULL)
WITH edge AS (SELECT snowflake_timestamp(9223372036854775807) + interval '1 millisecond' AS t)
SELECT count(*) > 0 AS rows,
       count(*) FILTER (WHERE b.to_id IS NULL) AS open_ended,
       bool_and(b.to_id IS NULL OR b.to_id = b.from_id + snowflake_partition_interval('1 day')) AS contiguous,
       bool_and(b.ends IS NULL OR b.ends > b.starts) AS ordered
FROM edge, snowflake_partition_bounds(edge.t - interval '3 days', edge.t) b;

-- labels
SELECT p.oid::regprocedure AS function, p.provolatile, p.proisstrict, p.proparallel, p.proconfig
FROM pg_proc p WHERE p.proname LIKE 'snowflake\_partition\_%' ORDER BY 1::text;
