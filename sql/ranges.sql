--
-- ranges: IDs that bound a millisecond, for time-range queries on the key
--
SET timezone = 'UTC';

-- plans, without the constant IDs they contain
CREATE FUNCTION plan_of(query text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
    line text;
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
        RETURN NEXT regexp_replace(line, '[0-9]{6,}', 'N', 'g');
    END LOOP;
END
$$;

-- the bounds carry the millisecond and the extreme shard and sequence
SELECT snowflake_timestamp(snowflake_min_id('2026-11-01 12:34:56.789+00')) AS min_ts,
       snowflake_timestamp(snowflake_max_id('2026-11-01 12:34:56.789+00')) AS max_ts,
       snowflake_shard_id(snowflake_min_id('2026-11-01')) AS min_shard,
       snowflake_sequence(snowflake_min_id('2026-11-01')) AS min_seq,
       snowflake_shard_id(snowflake_max_id('2026-11-01')) AS max_shard,
       snowflake_sequence(snowflake_max_id('2026-11-01')) AS max_seq;

-- sub-millisecond input falls in its millisecond
SELECT snowflake_min_id('2026-11-01 00:00:00.0009+00') = snowflake_min_id('2026-11-01') AS floors;

-- per shard
SELECT snowflake_shard_id(snowflake_min_id('2026-11-01', 7)) AS min_shard,
       snowflake_shard_id(snowflake_max_id('2026-11-01', 7)) AS max_shard,
       snowflake_sequence(snowflake_max_id('2026-11-01', 7)) AS max_seq,
       snowflake_min_id('2026-11-01', 0) = snowflake_min_id('2026-11-01') AS shard0_is_min;

-- consecutive milliseconds tile the ID space without gaps or overlaps
SELECT snowflake_max_id('2026-11-01 00:00:00.000+00') + 1
     = snowflake_min_id('2026-11-01 00:00:00.001+00') AS adjacent;

-- every generated ID lies between the bounds of its own millisecond
SELECT count(*) FILTER (WHERE id NOT BETWEEN snowflake_min_id(snowflake_timestamp(id))
                                         AND snowflake_max_id(snowflake_timestamp(id))) AS outside,
       count(*) FILTER (WHERE id NOT BETWEEN snowflake_min_id(snowflake_timestamp(id), 42)
                                         AND snowflake_max_id(snowflake_timestamp(id), 42)) AS outside_shard
FROM snowflake_nextval_batch(5000) AS id;

-- outside the layout's range, and bad shards
SELECT snowflake_min_id('2023-12-31 23:59:59.999+00');
SELECT snowflake_max_id('2100-01-01');
SELECT snowflake_min_id('infinity');
SELECT snowflake_min_id('-infinity');
SELECT snowflake_min_id('2026-11-01', 1024);
SELECT snowflake_max_id('2026-11-01', -1);
SELECT snowflake_min_id(NULL) IS NULL AS null_in;
SELECT snowflake_min_id('2024-01-01') = 0 AS epoch_is_zero;

-- the recipe: rows created in a time window use the primary-key index
CREATE TABLE events (id bigint PRIMARY KEY, note text);
INSERT INTO events
SELECT snowflake_min_id('2026-11-01'::timestamptz + g * interval '1 minute', 42) + g % 7, 'e' || g
FROM generate_series(0, 3 * 1440 - 1) AS g;
ANALYZE events;
SELECT plan_of($q$SELECT count(*) FROM events
WHERE id >= snowflake_min_id('2026-11-02') AND id < snowflake_min_id('2026-11-03')$q$);
SELECT count(*) FROM events
WHERE id >= snowflake_min_id('2026-11-02') AND id < snowflake_min_id('2026-11-03');

-- per-day counts from the ID alone
SELECT date_trunc('day', snowflake_timestamp(id)) AS day, count(*)
FROM events GROUP BY 1 ORDER BY 1;

-- keyset pagination: newest first, a page at a time
SELECT count(*) AS page, bool_and(id < snowflake_min_id('2026-11-03')) AS older
FROM (SELECT id FROM events WHERE id < snowflake_min_id('2026-11-03')
      ORDER BY id DESC LIMIT 50) p;
DROP TABLE events;

-- monthly partitions with bounds derived from dates
CREATE TABLE orders (id bigint NOT NULL, item text) PARTITION BY RANGE (id);
CREATE TABLE orders_2026_11 PARTITION OF orders
    FOR VALUES FROM (snowflake_min_id('2026-11-01')) TO (snowflake_min_id('2026-12-01'));
CREATE TABLE orders_2026_12 PARTITION OF orders
    FOR VALUES FROM (snowflake_min_id('2026-12-01')) TO (snowflake_min_id('2027-01-01'));
INSERT INTO orders VALUES
    (snowflake_min_id('2026-11-15', 42), 'november'),
    (snowflake_max_id('2026-11-30 23:59:59.999+00', 42), 'last of november'),
    (snowflake_min_id('2026-12-01', 42), 'first of december');
SELECT tableoid::regclass AS partition, item FROM orders ORDER BY id;
SELECT plan_of($q$SELECT * FROM orders
WHERE id >= snowflake_min_id('2026-12-05') AND id < snowflake_min_id('2026-12-06')$q$);
DROP TABLE orders;
DROP FUNCTION plan_of(text);
