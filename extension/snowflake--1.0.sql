/* snowflake--1.0.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION snowflake" to load this file. \quit

-- Generation: VOLATILE (every call differs), PARALLEL SAFE (the generator lives
-- in shared memory, so parallel workers draw from the same one as the leader).
CREATE FUNCTION snowflake_nextval()
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowflake_nextval'
LANGUAGE C VOLATILE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_nextval() IS
'next Snowflake ID of this server''s shard (snowflake.shard_id): unique in the cluster, strictly increasing within the shard';

CREATE FUNCTION snowflake_nextval(shard_id integer)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowflake_nextval_shard'
LANGUAGE C VOLATILE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_nextval(integer) IS
'next Snowflake ID of a logical shard this server generates for (snowflake.shard_ids): each shard has its own generator';

-- Batches: VOLATILE like nextval; ROWS 1000 is only a planning guess.
CREATE FUNCTION snowflake_nextval_batch(count integer)
RETURNS SETOF bigint
AS 'MODULE_PATHNAME', 'snowflake_nextval_batch'
LANGUAGE C VOLATILE STRICT PARALLEL SAFE ROWS 1000;

COMMENT ON FUNCTION snowflake_nextval_batch(integer) IS
'count (1 .. 10,000,000) distinct, increasing IDs of this server''s shard, taken a millisecond''s run per lock acquisition';

CREATE FUNCTION snowflake_nextval_batch(count integer, shard_id integer)
RETURNS SETOF bigint
AS 'MODULE_PATHNAME', 'snowflake_nextval_batch'
LANGUAGE C VOLATILE STRICT PARALLEL SAFE ROWS 1000;

COMMENT ON FUNCTION snowflake_nextval_batch(integer, integer) IS
'count (1 .. 10,000,000) distinct, increasing IDs of a logical shard, taken a millisecond''s run per lock acquisition';

-- Decoding: IMMUTABLE so that they can serve expression indexes and generated
-- columns.  The layout they decode with is fixed at server start, and the
-- extension refuses to run (generation and decoding alike) when it differs
-- from the layout recorded in the data directory, so a given ID always decodes
-- the same way on a given server.  See README.md, "Decoding and IMMUTABLE".
CREATE FUNCTION snowflake_timestamp(id bigint)
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'snowflake_timestamp'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_timestamp(bigint) IS
'creation time (millisecond precision) carried by a Snowflake ID';

CREATE FUNCTION snowflake_shard_id(id bigint)
RETURNS integer
AS 'MODULE_PATHNAME', 'snowflake_shard_id'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_shard_id(bigint) IS
'shard ID carried by a Snowflake ID';

CREATE FUNCTION snowflake_sequence(id bigint)
RETURNS integer
AS 'MODULE_PATHNAME', 'snowflake_sequence'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_sequence(bigint) IS
'per-millisecond sequence number carried by a Snowflake ID';

CREATE FUNCTION snowflake_decode(id bigint,
    OUT created_at timestamptz,
    OUT shard_id integer,
    OUT sequence integer)
RETURNS record
AS 'MODULE_PATHNAME', 'snowflake_decode'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_decode(bigint) IS
'all fields of a Snowflake ID: creation time, shard ID and sequence';

-- Time ranges: IMMUTABLE for the same reason as the decoders, so that
-- "id >= snowflake_min_id('2026-11-01')" is folded to a constant at planning
-- and answered by a range scan of the primary key.
CREATE FUNCTION snowflake_min_id(ts timestamptz)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowflake_min_id'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_min_id(timestamptz) IS
'smallest ID of any shard that can carry the millisecond of ts';

CREATE FUNCTION snowflake_min_id(ts timestamptz, shard_id integer)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowflake_min_id'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_min_id(timestamptz, integer) IS
'smallest ID of one shard that can carry the millisecond of ts';

CREATE FUNCTION snowflake_max_id(ts timestamptz)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowflake_max_id'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_max_id(timestamptz) IS
'largest ID of any shard that can carry the millisecond of ts';

CREATE FUNCTION snowflake_max_id(ts timestamptz, shard_id integer)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowflake_max_id'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_max_id(timestamptz, integer) IS
'largest ID of one shard that can carry the millisecond of ts';

-- Text form: pure functions of their argument, independent of the layout.
CREATE FUNCTION snowflake_to_text(id bigint)
RETURNS text
AS 'MODULE_PATHNAME', 'snowflake_to_text'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_to_text(bigint) IS
'13-character Crockford base32 form of an ID; the strings sort like the IDs (safe for JavaScript and JSON)';

CREATE FUNCTION snowflake_from_text(text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowflake_from_text'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_from_text(text) IS
'the ID of a 13-character Crockford base32 form (either case); anything else is an error';

-- STABLE: the layout is fixed at server start, but shard_id follows reloads.
CREATE FUNCTION snowflake_layout(
    OUT epoch timestamptz,
    OUT timestamp_bits integer,
    OUT shard_bits integer,
    OUT sequence_bits integer,
    OUT max_shard_id integer,
    OUT ids_per_ms_per_shard bigint,
    OUT last_timestamp timestamptz,
    OUT shard_id integer)
RETURNS record
AS 'MODULE_PATHNAME', 'snowflake_layout'
LANGUAGE C STABLE PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_layout() IS
'the ID layout of this server (epoch, field widths, per-shard ceiling, last representable time) and its shard ID (NULL when unset)';

-- Observability: VOLATILE (counters move), PARALLEL SAFE (shared memory).
CREATE FUNCTION snowflake_stats(
    OUT shard_id integer,
    OUT ids_issued bigint,
    OUT last_timestamp timestamptz,
    OUT current_lead_ms bigint,
    OUT reserved_until timestamptz,
    OUT sequence_exhausted bigint,
    OUT clock_steps_back bigint,
    OUT largest_step_back_ms bigint,
    OUT waits bigint,
    OUT wait_time_ms double precision,
    OUT refusals bigint,
    OUT mark_writes bigint,
    OUT inline_mark_writes bigint,
    OUT stats_reset timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'snowflake_stats'
LANGUAGE C VOLATILE PARALLEL SAFE ROWS 1;

COMMENT ON FUNCTION snowflake_stats() IS
'generator statistics, one row per shard used since the server started: IDs issued, last timestamp used and its lead over the clock, the durable mark, sequence exhaustion, backward clock steps, waits, refusals, mark writes';

CREATE VIEW snowflake_stats AS SELECT * FROM snowflake_stats();

COMMENT ON VIEW snowflake_stats IS 'generator statistics (see snowflake_stats())';

-- like pg_stat_statements: everyone may read the statistics
GRANT SELECT ON snowflake_stats TO PUBLIC;

CREATE FUNCTION snowflake_stats_reset()
RETURNS void
AS 'MODULE_PATHNAME', 'snowflake_stats_reset'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

COMMENT ON FUNCTION snowflake_stats_reset() IS
'resets the counters of snowflake_stats(); generation state is untouched';

-- like pg_stat_statements_reset(): superusers, and whom they grant it to
REVOKE ALL ON FUNCTION snowflake_stats_reset() FROM PUBLIC;
