--
-- nextval: uniqueness, ordering and decoded fields of generated IDs
--

-- many IDs in one statement: distinct, strictly increasing in call order,
-- carrying this server's shard, stamped with the current time (within the
-- default clock lead of one second)
CREATE TEMP TABLE ids AS
SELECT n, snowflake_nextval() AS id, clock_timestamp() AS called_at
FROM generate_series(1, 20000) AS n;

SELECT count(*) AS ids,
       count(DISTINCT id) AS distinct_ids,
       count(*) FILTER (WHERE id <= 0) AS non_positive,
       count(*) FILTER (WHERE snowflake_shard_id(id) <> 42) AS wrong_shard
FROM ids;

SELECT count(*) FILTER (WHERE id <= prev) AS not_increasing
FROM (SELECT id, lag(id) OVER (ORDER BY n) AS prev FROM ids) s;

SELECT count(*) FILTER (WHERE snowflake_timestamp(id)
                        NOT BETWEEN date_trunc('milliseconds', called_at) - interval '1 second'
                                AND called_at + interval '1 second') AS off_clock
FROM ids;

-- within one millisecond the sequence counts up by one; a new millisecond
-- starts again from zero
SELECT count(*) FILTER (WHERE snowflake_timestamp(id) = snowflake_timestamp(prev)
                          AND snowflake_sequence(id) <> snowflake_sequence(prev) + 1) AS seq_gaps,
       count(*) FILTER (WHERE snowflake_timestamp(id) < snowflake_timestamp(prev)) AS time_backwards
FROM (SELECT id, lag(id) OVER (ORDER BY n) AS prev FROM ids) s;

-- IDs keep increasing across statements and sessions
SELECT max(id) AS last_id FROM ids \gset
\c
SELECT snowflake_nextval() > :last_id AS increases_across_sessions;

-- the main use: a primary key default
CREATE TABLE orders (
    id bigint PRIMARY KEY DEFAULT snowflake_nextval(),
    item text NOT NULL
);
INSERT INTO orders (item) SELECT 'item ' || g FROM generate_series(1, 5000) g;
INSERT INTO orders (item) VALUES ('one more') RETURNING snowflake_shard_id(id) AS shard;
SELECT count(*) AS rows, count(DISTINCT id) AS distinct_ids,
       min(id) > :last_id AS above_earlier_ids,
       bool_and(snowflake_shard_id(id) = 42) AS all_shard_42
FROM orders;
-- rows sort by creation order when sorted by ID
SELECT count(*) FILTER (WHERE item_no < prev_item_no) AS out_of_order
FROM (SELECT substr(item, 6)::int AS item_no,
             lag(substr(item, 6)::int) OVER (ORDER BY id) AS prev_item_no
      FROM orders WHERE item LIKE 'item %') s;
DROP TABLE orders;
