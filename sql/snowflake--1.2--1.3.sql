/* snowflake--1.2--1.3.sql: upgrade from 1.2 to 1.3 (ALTER EXTENSION snowflake UPDATE) */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION snowflake UPDATE TO '1.3'" to load this file. \quit

-- ---- Public IDs (issue 29, part 2) ----------------------------------------
-- A keyed permutation of the 64-bit space (a 10-round Feistel network over
-- HMAC-SHA-256) in a fixed 14-character URL-safe form whose first character
-- is the key version.  Keys come from snowflake.public_id_keys (superuser
-- only).  STABLE, not IMMUTABLE: the keys change at a reload, so the result
-- may differ from one statement to the next; no expression index or
-- generated column may hold a public ID (decode and use the bigint key).

CREATE FUNCTION snowflake_public_id(id bigint)
RETURNS text
AS 'MODULE_PATHNAME', 'snowflake_public_id'
LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_public_id(bigint) IS
'the public ID of an ID: 14 URL-safe characters (a key version, then the ID encrypted under the first key of snowflake.public_id_keys); consecutive IDs give unrelated strings';

CREATE FUNCTION snowflake_public_id(id bigint, tweak text)
RETURNS text
AS 'MODULE_PATHNAME', 'snowflake_public_id'
LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_public_id(bigint, text) IS
'the public ID of an ID under a tweak (such as a table or tenant name): the same ID under two tweaks gives unrelated strings; decode with the same tweak';

CREATE FUNCTION snowflake_from_public_id(public_id text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowflake_from_public_id'
LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_from_public_id(text) IS
'the ID of a public ID (either case), under the key of its version; 22P02 if it is not a public ID, 22023 if snowflake.public_id_keys does not list its version';

CREATE FUNCTION snowflake_from_public_id(public_id text, tweak text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowflake_from_public_id'
LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_from_public_id(text, text) IS
'the ID of a public ID made with snowflake_public_id(id, tweak) and the same tweak';
-- ---- end of Public IDs ------------------------------------------------------
