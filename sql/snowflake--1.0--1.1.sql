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
