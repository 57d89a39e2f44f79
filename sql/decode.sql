--
-- decode: the decoding functions and snowflake_layout()
--
SET timezone = 'UTC';

-- labels chosen on purpose, and every function documented
SELECT p.proname, oidvectortypes(p.proargtypes) AS args,
       p.provolatile, p.proisstrict, p.proparallel,
       obj_description(p.oid, 'pg_proc') IS NOT NULL AS has_comment
FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.deptype = 'e'
     JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'snowflake'
ORDER BY 1, 2;

-- the default layout
SELECT * FROM snowflake_layout();

-- NULL in, NULL out
SELECT snowflake_timestamp(NULL) IS NULL AS ts,
       snowflake_shard_id(NULL) IS NULL AS shard,
       snowflake_sequence(NULL) IS NULL AS seq,
       snowflake_decode(NULL) IS NULL AS rec;

-- negative IDs are errors, not silent decodes
SELECT snowflake_timestamp(-1);
SELECT snowflake_shard_id(-9223372036854775808);
SELECT snowflake_sequence(-42);
SELECT * FROM snowflake_decode(-1);

-- the extremes: 0 is the epoch, the largest bigint the last timestamp
SELECT snowflake_timestamp(0) = epoch AS zero_is_epoch,
       snowflake_timestamp(9223372036854775807) = last_timestamp AS max_is_last,
       snowflake_shard_id(9223372036854775807) = max_shard_id AS max_shard,
       snowflake_sequence(9223372036854775807) = ids_per_ms_per_shard - 1 AS max_seq
FROM snowflake_layout();

-- round trips: IDs built from fields decode to the same fields
WITH fields AS (
    SELECT (random() * 2199023255551)::bigint AS ms,
           (random() * 1023)::int AS shard,
           (random() * 4095)::int AS seq
    FROM generate_series(1, 10000)
), ids AS (
    SELECT ms, shard, seq, (ms << 22) | (shard::bigint << 12) | seq AS id FROM fields
)
SELECT count(*) AS checked,
       count(*) FILTER (WHERE snowflake_timestamp(id)
             <> (SELECT epoch FROM snowflake_layout()) + ms * interval '1 millisecond') AS bad_ts,
       count(*) FILTER (WHERE snowflake_shard_id(id) <> shard) AS bad_shard,
       count(*) FILTER (WHERE snowflake_sequence(id) <> seq) AS bad_seq,
       count(*) FILTER (WHERE (snowflake_decode(id)).created_at <> snowflake_timestamp(id)
                           OR (snowflake_decode(id)).shard_id <> shard
                           OR (snowflake_decode(id)).sequence <> seq) AS bad_record
FROM ids;

-- a timestamp decodes to millisecond precision
SELECT snowflake_timestamp((1234::bigint << 22) | (5 << 12) | 6)
     - snowflake_timestamp(0) AS offset_1234ms;

-- IMMUTABLE: usable in generated columns and expression indexes
CREATE TABLE events (
    id bigint PRIMARY KEY DEFAULT snowflake_nextval(),
    created_at timestamptz GENERATED ALWAYS AS (snowflake_timestamp(id)) STORED,
    note text
);
CREATE INDEX events_shard_idx ON events (snowflake_shard_id(id));
INSERT INTO events (note) SELECT 'n' || g FROM generate_series(1, 100) g;
SELECT count(*) AS rows,
       count(*) FILTER (WHERE created_at = snowflake_timestamp(id)) AS generated_ok,
       count(*) FILTER (WHERE created_at BETWEEN now() - interval '1 minute'
                                               AND now() + interval '1 minute') AS recent
FROM events;
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM events WHERE snowflake_shard_id(id) = 42;
SELECT count(*) FROM events WHERE snowflake_shard_id(id) = 42;
RESET enable_seqscan;
DROP TABLE events;
