--
-- stats: snowflake_stats() and its view count what the generator does
--
SELECT snowflake_stats_reset();
SELECT ids_issued, sequence_exhausted, clock_steps_back, waits, refusals,
       stats_reset <= now() AS reset_recorded
FROM snowflake_stats WHERE shard_id = 42;

-- 10,000 IDs in one statement are counted
SELECT count(snowflake_nextval()) FROM generate_series(1, 10000);
SELECT ids_issued,
       shard_id,
       last_timestamp IS NOT NULL AS has_last,
       reserved_until >= last_timestamp AS mark_covers_last,
       current_lead_ms BETWEEN 0 AND 1000 AS lead_within_limit,
       clock_steps_back, refusals
FROM snowflake_stats WHERE shard_id = 42;

-- the last timestamp is the one carried by the newest ID
SELECT snowflake_timestamp(snowflake_nextval())
     = (SELECT last_timestamp FROM snowflake_stats WHERE shard_id = 42) AS last_matches;

-- the function and the view agree
SELECT (SELECT ids_issued FROM snowflake_stats() WHERE shard_id = 42)
     = (SELECT ids_issued FROM snowflake_stats WHERE shard_id = 42) AS view_matches;

-- one row per shard used since start, each counting only its own IDs
SELECT count(*) > 1 AS several_shards, count(DISTINCT shard_id) = count(*) AS one_row_each
FROM snowflake_stats;
SELECT snowflake_stats_reset();
SELECT count(snowflake_nextval(2)) FROM generate_series(1, 300);
SELECT shard_id, ids_issued FROM snowflake_stats WHERE shard_id IN (2, 42) ORDER BY shard_id;

-- resetting clears the counters but not the generator: IDs keep increasing
SELECT snowflake_nextval() AS before_reset \gset
SELECT snowflake_stats_reset();
SELECT count(*) FILTER (WHERE ids_issued <> 0 OR sequence_exhausted <> 0 OR waits <> 0)
    AS nonzero FROM snowflake_stats;
SELECT snowflake_nextval() > :before_reset AS still_increasing;

-- only superusers (and whom they grant it to) may reset
CREATE ROLE snowflake_reader;
SET ROLE snowflake_reader;
SELECT ids_issued >= 1 AS readable FROM snowflake_stats WHERE shard_id = 42;
SELECT snowflake_stats_reset();
RESET ROLE;
DROP ROLE snowflake_reader;

-- without snowflake.registry the registry view says "off" and holds nothing
SELECT endpoints IS NULL AS no_endpoints, state, shard_id IS NULL AS no_shard,
       lease_id IS NULL AS no_lease, generating, requests
FROM snowflake_registry;

-- the metrics for Prometheus: the same counters, times in seconds
SELECT count(snowflake_nextval()) FROM generate_series(1, 100);
SELECT m.ids_issued = s.ids_issued AS ids, m.waits = s.waits AS waits,
       m.sequence_exhausted = s.sequence_exhausted AS exhausted,
       m.clock_steps_back = s.clock_steps_back AS steps,
       m.refusals_clock + m.refusals_before_epoch + m.refusals_timestamp_end = s.refusals AS refusals,
       m.inline_mark_writes = s.inline_mark_writes AS inline,
       m.lead_seconds BETWEEN 0 AND 1 AS lead_within_limit,
       m.mark_headroom_seconds > -60 AS mark_recent,
       m.refusals_registry_mark = 0 AND m.registry_waits = 0 AS no_registry
FROM snowflake_metrics() m JOIN snowflake_stats s USING (shard_id)
WHERE shard_id = 42;
SELECT count(*) = (SELECT count(*) FROM snowflake_stats) AS one_row_per_shard
FROM snowflake_metrics();
SELECT shards_used = (SELECT count(*) FROM snowflake_stats) AS shards, max_shards,
       max_clock_lead_seconds, max_clock_wait_seconds,
       timestamp_end = (SELECT last_timestamp FROM snowflake_layout()) AS end_matches,
       abs(timestamp_seconds_left - extract(epoch FROM timestamp_end - clock_timestamp())) < 5
           AS seconds_left,
       generation_refused, registry_enabled, registry_state, registry_shard_id,
       registry_generating, registry_lease_seconds_left, registry_errors, registry_refusals
FROM snowflake_server_metrics();

-- the shard counters are for everyone, the server's (with the registry) for
-- monitoring roles
CREATE ROLE snowflake_reader;
CREATE ROLE snowflake_monitor IN ROLE pg_monitor;
SET ROLE snowflake_reader;
SELECT count(*) > 0 AS readable FROM snowflake_metrics();
SELECT max_shards FROM snowflake_server_metrics();
SET ROLE snowflake_monitor;
SELECT max_shards FROM snowflake_server_metrics();
RESET ROLE;
DROP ROLE snowflake_reader;
DROP ROLE snowflake_monitor;
