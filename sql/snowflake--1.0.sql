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
