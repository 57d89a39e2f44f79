--
-- shards: logical shards, each with its own generator
--
SHOW snowflake.shard_ids;

-- a shard in snowflake.shard_ids, and snowflake.shard_id itself, are allowed
SELECT snowflake_shard_id(snowflake_nextval(1)) AS s1,
       snowflake_shard_id(snowflake_nextval(3)) AS s3,
       snowflake_shard_id(snowflake_nextval(100)) AS s100,
       snowflake_shard_id(snowflake_nextval(42)) AS s42;

-- any other shard is refused, naming the shard and the settings
SELECT snowflake_nextval(4);
SELECT snowflake_nextval(0);
SELECT snowflake_nextval(1024);
SELECT snowflake_nextval(-1);
SELECT snowflake_nextval(NULL) IS NULL AS null_shard;

-- logical shards are for roles granted EXECUTE (they take server-wide slots);
-- this server's own shard is for everyone
CREATE ROLE sf_app;
SET ROLE sf_app;
SELECT snowflake_nextval(1);
SELECT count(*) FROM snowflake_nextval_batch(3, 1);
SELECT snowflake_nextval() > 0 AS own_shard_ok;
SELECT count(*) FROM snowflake_nextval_batch(3);
RESET ROLE;
GRANT EXECUTE ON FUNCTION snowflake_nextval(integer) TO sf_app;
SET ROLE sf_app;
SELECT snowflake_shard_id(snowflake_nextval(1)) AS granted_shard;
RESET ROLE;
REVOKE EXECUTE ON FUNCTION snowflake_nextval(integer) FROM sf_app;
DROP ROLE sf_app;

-- a session cannot widen its own set
SET snowflake.shard_ids = '0-1023';
ALTER SYSTEM SET snowflake.shard_ids = '5-2';
ALTER SYSTEM SET snowflake.shard_ids = '1,2,x';
ALTER SYSTEM SET snowflake.shard_ids = '1000-1024';

-- shards are independent: interleaving them in one millisecond leaves each
-- one's sequence counting up by one, without gaps from the others
CREATE TEMP TABLE mixed AS
SELECT n, s, snowflake_nextval(s) AS id
FROM generate_series(1, 6000) AS n, LATERAL (SELECT 1 + n % 3 AS s) x;

SELECT count(*) AS ids, count(DISTINCT id) AS distinct_ids,
       count(*) FILTER (WHERE snowflake_shard_id(id) <> s) AS wrong_shard
FROM mixed;

SELECT s,
       count(*) FILTER (WHERE id <= prev) AS not_increasing,
       count(*) FILTER (WHERE snowflake_timestamp(id) = snowflake_timestamp(prev)
                          AND snowflake_sequence(id) <> snowflake_sequence(prev) + 1) AS seq_gaps
FROM (SELECT s, id, lag(id) OVER (PARTITION BY s ORDER BY n) AS prev FROM mixed) t
GROUP BY s ORDER BY s;

-- each shard used has its own row of statistics
SELECT shard_id, ids_issued >= 1 AS used FROM snowflake_stats ORDER BY shard_id;

-- as a column default, per schema (Instagram-style logical shards)
CREATE SCHEMA shard_2;
CREATE TABLE shard_2.photos (
    id bigint PRIMARY KEY DEFAULT snowflake_nextval(2),
    caption text
);
INSERT INTO shard_2.photos (caption) SELECT 'p' || g FROM generate_series(1, 100) g;
SELECT count(*), bool_and(snowflake_shard_id(id) = 2) AS all_shard_2 FROM shard_2.photos;
DROP SCHEMA shard_2 CASCADE;

--
-- batches
--
SELECT count(*) AS ids, count(DISTINCT id) AS distinct_ids,
       bool_and(snowflake_shard_id(id) = 42) AS default_shard
FROM snowflake_nextval_batch(50000) AS id;

-- a batch is strictly increasing in the order it is returned
SELECT count(*) FILTER (WHERE id <= prev) AS not_increasing
FROM (SELECT id, lag(id) OVER (ORDER BY n) AS prev
      FROM snowflake_nextval_batch(20000, 3) WITH ORDINALITY AS b(id, n)) t;

-- and continues the shard's single IDs, above and below
SELECT snowflake_nextval(100) AS before_batch \gset
SELECT min(id) > :before_batch AS above_before, max(id) AS batch_max
FROM snowflake_nextval_batch(10000, 100) AS id \gset
SELECT :'above_before' AS above_before, snowflake_nextval(100) > :batch_max AS below_after;

-- bulk load with a batch
CREATE TABLE bulk (id bigint PRIMARY KEY, payload int);
INSERT INTO bulk SELECT id, 1 FROM snowflake_nextval_batch(100000) AS id;
SELECT count(*) FROM bulk;
DROP TABLE bulk;

-- limits
SELECT count(*) FROM snowflake_nextval_batch(1);
SELECT * FROM snowflake_nextval_batch(0);
SELECT * FROM snowflake_nextval_batch(-5);
SELECT * FROM snowflake_nextval_batch(10000001);
SELECT * FROM snowflake_nextval_batch(10, 7);
SELECT count(*) FROM snowflake_nextval_batch(NULL);
