/* snowflake--1.0--1.1.sql: upgrade from 1.0 to 1.1 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION snowflake UPDATE TO '1.1'" to load this file. \quit

-- Every object added or changed in 1.1 appears here and, in its final form, in
-- snowflake--1.1.sql; a test checks that both give the same objects.

-- Logical shards (1.1): only roles granted EXECUTE may generate for them, as
-- only roles granted USAGE may draw from a sequence.  Each shard takes one of
-- the server's snowflake.max_shards slots until a restart, and the operator
-- assigns them (snowflake.shard_ids); see README.md, "Logical shards".
REVOKE ALL ON FUNCTION snowflake_nextval(integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION snowflake_nextval_batch(integer, integer) FROM PUBLIC;

-- The shard registry in etcd (snowflake.registry): one row, VOLATILE.
CREATE FUNCTION snowflake_registry(
    OUT endpoints text,
    OUT endpoint text,
    OUT prefix text,
    OUT state text,
    OUT shard_id integer,
    OUT lease_id text,
    OUT lease_ttl integer,
    OUT lease_deadline timestamptz,
    OUT last_keepalive timestamptz,
    OUT freshness_mark timestamptz,
    OUT last_error text,
    OUT requests bigint,
    OUT bytes_sent bigint,
    OUT bytes_received bigint,
    OUT generating boolean)
RETURNS record
AS 'MODULE_PATHNAME', 'snowflake_registry'
LANGUAGE C VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_registry() IS
'the shard registry: etcd endpoints and the one in use, key prefix, state (off, claiming, held, expired, pool full, unreachable), shard and lease held, lease deadline, last keep-alive, published freshness mark, last error, traffic, and whether generation is allowed now';

CREATE VIEW snowflake_registry AS SELECT * FROM snowflake_registry();

COMMENT ON VIEW snowflake_registry IS 'the shard registry in etcd (see snowflake_registry())';

GRANT SELECT ON snowflake_registry TO PUBLIC;
