--
-- layouts: decoding other systems' IDs by layout name
--
SET timezone = 'UTC';

-- Discord's documentation: 2016-04-30 11:18:25.796 UTC, worker 1, process 0, increment 7
SELECT * FROM snowflake_decode(175928847299117063, 'discord');
SELECT snowflake_timestamp(175928847299117063, 'discord') AS ts,
       snowflake_shard_id(175928847299117063, 'discord') AS shard,
       snowflake_sequence(175928847299117063, 'discord') AS increment;

-- Instagram's engineering post: 1387263000 ms into the epoch, shard 1341,
-- sequence 5001 % 1024 = 905 (September 9th, 2011)
SELECT * FROM snowflake_decode((1387263000::bigint << 23) | (1341 << 10) | 905, 'instagram');

-- Mastodon's API documentation: status 103270115826048975, created_at
-- 2019-12-08T03:48:33.901Z; the ID's time is 52 ms earlier; no shard field
SELECT created_at, shard_id IS NULL AS no_shard, shard_high IS NULL AS no_parts,
       created_at <= '2019-12-08T03:48:33.901Z' AND
       created_at > timestamptz '2019-12-08T03:48:33.901Z' - interval '1 second' AS near_created_at
FROM snowflake_decode(103270115826048975, 'mastodon');
SELECT snowflake_shard_id(103270115826048975, 'mastodon') IS NULL AS no_shard;

-- Twitter: epoch 1288834974657 (2010-11-04 01:42:54.657 UTC); datacenter 10, worker 7
SELECT snowflake_timestamp(0, 'twitter') AS epoch;
SELECT * FROM snowflake_decode(
    ((extract(epoch FROM timestamptz '2021-04-14 15:30:06.417+00') * 1000)::bigint - 1288834974657) << 22
    | (10 << 17) | (7 << 12) | 4, 'twitter');

-- Sonyflake: 10 ms units since 2014-09-01, sequence above the 16-bit machine ID
SELECT snowflake_timestamp(0, 'sonyflake') AS epoch;
SELECT * FROM snowflake_decode(
    ((extract(epoch FROM timestamptz '2024-06-01 12:00:00.12+00') * 100)::bigint
      - (extract(epoch FROM timestamptz '2014-09-01 00:00:00+00') * 100)::bigint) << 24
    | (200 << 16) | 43009, 'sonyflake');

-- names are case-insensitive; "snowflake" is this server's own layout
SELECT snowflake_timestamp(175928847299117063, 'Discord') =
       snowflake_timestamp(175928847299117063, 'DISCORD') AS case_insensitive;
SELECT count(*) FILTER (WHERE (d.created_at, d.shard_id, d.sequence) IS DISTINCT FROM
                              (o.created_at, o.shard_id, o.sequence)
                           OR d.shard_high IS NOT NULL) AS own_layout_differs
FROM (SELECT snowflake_nextval() AS id FROM generate_series(1, 100)) s,
     snowflake_decode(s.id, 'snowflake') d, snowflake_decode(s.id) o;

-- an unknown name lists the known ones; negative IDs and NULLs as for the own decoders
SELECT snowflake_timestamp(1, 'flickr');
SELECT snowflake_decode(-1, 'discord');
SELECT snowflake_timestamp(NULL, 'discord') IS NULL AS null_id,
       snowflake_timestamp(1, NULL) IS NULL AS null_layout;

-- the largest bigint stays within timestamptz for every named layout
SELECT l, snowflake_timestamp(9223372036854775807, l) AS last_time
FROM unnest(ARRAY['twitter', 'discord', 'instagram', 'sonyflake', 'mastodon']) l;

-- labels: IMMUTABLE STRICT PARALLEL SAFE, usable in an expression index
SELECT p.oid::regprocedure AS function, p.provolatile, p.proisstrict, p.proparallel
FROM pg_proc p WHERE p.proname LIKE 'snowflake_%' AND p.pronargs = 2
  AND p.proargtypes[1] = 'text'::regtype ORDER BY 1::text;
CREATE TABLE messages (id bigint PRIMARY KEY);
CREATE INDEX ON messages (snowflake_timestamp(id, 'discord'));
INSERT INTO messages VALUES (175928847299117063);
SELECT count(*) FROM messages
WHERE snowflake_timestamp(id, 'discord') >= '2016-04-30' AND snowflake_timestamp(id, 'discord') < '2016-05-01';
DROP TABLE messages;
RESET timezone;
