--
-- seqstart: snowflake.sequence_start, the random start of each new millisecond
--

-- the default is random; sessions cannot change it (reload only)
SHOW snowflake.sequence_start;
SET snowflake.sequence_start = 'zero';
ALTER SYSTEM SET snowflake.sequence_start = 'sometimes';

-- Calls one at a time, a few milliseconds apart (low traffic), after any
-- lead borrowed by earlier tests has drained, so each ID opens a millisecond.
CREATE FUNCTION low_traffic_ids(n integer)
RETURNS TABLE (k integer, id bigint) LANGUAGE plpgsql AS $$
BEGIN
    FOR i IN 1 .. 50 LOOP
        EXIT WHEN coalesce((SELECT current_lead_ms FROM snowflake_stats WHERE shard_id = 42), 0) = 0;
        PERFORM pg_sleep(0.1);
    END LOOP;
    FOR i IN 1 .. n LOOP
        PERFORM pg_sleep(0.002);
        k := i;
        id := snowflake_nextval();
        RETURN NEXT;
    END LOOP;
END $$;

-- random: sequences spread over [0, 4096 / 16), IDs still strictly increasing
CREATE TEMP TABLE r AS SELECT * FROM low_traffic_ids(60);
SELECT count(*) FILTER (WHERE id <= prev) AS not_increasing,
       count(DISTINCT snowflake_sequence(id)) >= 20 AS spread,
       max(snowflake_sequence(id)) < (SELECT ids_per_ms_per_shard / 16 FROM snowflake_layout())
           AS within_lower_sixteenth,
       count(*) FILTER (WHERE id % 4096 = 0) < 10 AS few_multiples_of_4096
FROM (SELECT id, lag(id) OVER (ORDER BY k) AS prev FROM r) s;

-- zero: the classic generator, every low-traffic ID a multiple of 4096
ALTER SYSTEM SET snowflake.sequence_start = 'zero';
SELECT pg_reload_conf();
SELECT pg_sleep(0.5);
\c
SHOW snowflake.sequence_start;
CREATE TEMP TABLE z AS SELECT * FROM low_traffic_ids(30);
SELECT count(*) FILTER (WHERE id <= prev) AS not_increasing,
       count(*) FILTER (WHERE snowflake_sequence(id) <> 0) AS nonzero_sequences
FROM (SELECT id, lag(id) OVER (ORDER BY k) AS prev FROM z) s;

-- a burst within one millisecond still counts up by one from the start
ALTER SYSTEM RESET snowflake.sequence_start;
SELECT pg_reload_conf();
SELECT pg_sleep(0.5);
\c
SHOW snowflake.sequence_start;
CREATE TEMP TABLE b AS SELECT n, snowflake_nextval() AS id FROM generate_series(1, 20000) n;
SELECT count(*) FILTER (WHERE id <= prev) AS not_increasing,
       count(*) FILTER (WHERE snowflake_timestamp(id) = snowflake_timestamp(prev)
                          AND snowflake_sequence(id) <> snowflake_sequence(prev) + 1) AS seq_gaps
FROM (SELECT id, lag(id) OVER (ORDER BY n) AS prev FROM b) s;
DROP FUNCTION low_traffic_ids(integer);
