/* snowflake--1.2--1.3.sql: upgrade from 1.2 to 1.3 (ALTER EXTENSION snowflake UPDATE) */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION snowflake UPDATE TO '1.3'" to load this file. \quit

-- Issue 25, defects 3 and 4 (adopt and convert ran a table owner's code as
-- the superuser; one open session blocked adopt): nothing plans a query over
-- a user's table any more.  snowflake_adopt_database() becomes C (same
-- signature, so nothing that depends on it is dropped; its ACL stays);
-- snowflake_column_max() is new; snowflake_convert_column() reads the largest
-- value through it.  See src/adopt.cpp and src/colmax.cpp.
CREATE OR REPLACE FUNCTION snowflake_adopt_database(at_least timestamptz DEFAULT NULL,
                                                    allow_future boolean DEFAULT false)
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'snowflake_adopt_database'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION snowflake_column_max(tbl regclass, col name)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowflake_column_max'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION snowflake_column_max(regclass, name) IS
'largest value of a bigint column of a table the caller owns (and of every table under it), read without running any code of the table''s; refuses other sessions'' temporary tables and foreign tables; used by snowflake_convert_column()';

CREATE OR REPLACE FUNCTION snowflake_convert_column(tbl regclass, col name, shard integer,
                                                    drop_sequence boolean DEFAULT true)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $convert$
DECLARE
    ext name;
    rel record;
    att record;
    r record;
    tree regclass[];
    new_default text;
    seqs regclass[] := '{}';
    owned regclass[] := '{}';
    foreign_default text;
    already boolean := false;
    citus_key boolean := false;
    old_default text;
    seq_rel regclass;
    probe bigint;
    id_floor bigint;
    max_value bigint;
    users text;
    changes text[] := '{}';
    last_value bigint;
BEGIN
    IF tbl IS NULL OR col IS NULL OR drop_sequence IS NULL THEN
        RAISE EXCEPTION 'snowflake_convert_column: arguments must not be NULL'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    SELECT n.nspname INTO ext

-- ===========================================================================
-- The snowflake type (1.3, issue 28): a bigint that JSON writes as a string,
-- with time comparisons the planner understands.  One block, kept the same in
-- snowflake--1.3.sql and snowflake--1.2--1.3.sql.  See docs/operations.md,
-- "The snowflake type", and src/sftype.cpp.
--
-- Its output, send, comparison, sort and hash functions are int8's own
-- (LANGUAGE internal): a key of the type costs what a bigint key does.  Only
-- its input (decimal digits, never negative), binary receive, the casts from
-- integers and the comparisons with timestamptz are ours.
-- ===========================================================================

CREATE TYPE snowflake;

CREATE FUNCTION snowflake_in(cstring) RETURNS snowflake
AS 'MODULE_PATHNAME', 'snowflake_in' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION snowflake_in(cstring) IS 'input function of type snowflake: decimal digits, never negative';
CREATE FUNCTION snowflake_out(snowflake) RETURNS cstring
AS 'int8out' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION snowflake_out(snowflake) IS 'output function of type snowflake: decimal (int8''s)';
CREATE FUNCTION snowflake_recv(internal) RETURNS snowflake
AS 'MODULE_PATHNAME', 'snowflake_recv' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION snowflake_recv(internal) IS 'binary receive function of type snowflake: int8''s form, never negative';
CREATE FUNCTION snowflake_send(snowflake) RETURNS bytea
AS 'int8send' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION snowflake_send(snowflake) IS 'binary send function of type snowflake: int8''s form';

-- int8's size, passing and alignment; category U (user-defined), not N:
-- to_json() and the rest write it as a JSON string
CREATE TYPE snowflake (
    INPUT = snowflake_in,
    OUTPUT = snowflake_out,
    RECEIVE = snowflake_recv,
    SEND = snowflake_send,
    LIKE = pg_catalog.int8,
    CATEGORY = 'U'
);

COMMENT ON TYPE snowflake IS
'a Snowflake ID: a non-negative bigint, written in decimal, that JSON built on the server writes as a string; compares with bigint and, as its creation time, with timestamptz';

-- Casts: bigint and integer to snowflake on assignment (DEFAULT
-- snowflake_nextval(), INSERT ... VALUES (1)), refusing negative values;
-- snowflake to bigint implicitly and for free (the decoders and bigint
-- arithmetic take it as it is).
CREATE FUNCTION snowflake(bigint) RETURNS snowflake
AS 'MODULE_PATHNAME', 'snowflake_from_int8' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION snowflake(bigint) IS 'cast from bigint to snowflake (on assignment), refusing negative values';
CREATE FUNCTION snowflake(integer) RETURNS snowflake
AS 'MODULE_PATHNAME', 'snowflake_from_int4' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION snowflake(integer) IS 'cast from integer to snowflake (on assignment), refusing negative values';
CREATE CAST (bigint AS snowflake) WITH FUNCTION snowflake(bigint) AS ASSIGNMENT;
CREATE CAST (integer AS snowflake) WITH FUNCTION snowflake(integer) AS ASSIGNMENT;
CREATE CAST (snowflake AS bigint) WITHOUT FUNCTION AS IMPLICIT;

-- Comparisons among snowflakes and with bigint, integer and smallint: int8's
-- functions.  The cross-type operators make "id = 384004287098785976",
-- "id = 1" and "id = $1" (a bigint or integer parameter) resolve to an
-- operator of the type's btree family, without "operator is not unique": an
-- Index Cond on a key of the type.  They are not MERGES: a merge join would
-- sort the bigint side with the family's bigint order, which it does not
-- hold (keeping int8's own operators out of it keeps them in one family).

CREATE FUNCTION snowflake_lt(snowflake, snowflake) RETURNS boolean
AS 'int8lt' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION snowflake_lt(snowflake, snowflake) IS 'implements snowflake < snowflake (int8''s comparison)';
CREATE FUNCTION snowflake_le(snowflake, snowflake) RETURNS boolean
AS 'int8le' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION snowflake_le(snowflake, snowflake) IS 'implements snowflake <= snowflake (int8''s comparison)';
CREATE FUNCTION snowflake_eq(snowflake, snowflake) RETURNS boolean
AS 'int8eq' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION snowflake_eq(snowflake, snowflake) IS 'implements snowflake = snowflake (int8''s comparison)';
CREATE FUNCTION snowflake_ne(snowflake, snowflake) RETURNS boolean
AS 'int8ne' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION snowflake_ne(snowflake, snowflake) IS 'implements snowflake <> snowflake (int8''s comparison)';
CREATE FUNCTION snowflake_ge(snowflake, snowflake) RETURNS boolean
AS 'int8ge' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION snowflake_ge(snowflake, snowflake) IS 'implements snowflake >= snowflake (int8''s comparison)';
CREATE FUNCTION snowflake_gt(snowflake, snowflake) RETURNS boolean
AS 'int8gt' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION snowflake_gt(snowflake, snowflake) IS 'implements snowflake > snowflake (int8''s comparison)';
CREATE OPERATOR < (LEFTARG = snowflake, RIGHTARG = snowflake, FUNCTION = snowflake_lt,
    COMMUTATOR = >, NEGATOR = >=, RESTRICT = scalarltsel, JOIN = scalarltjoinsel);
CREATE OPERATOR <= (LEFTARG = snowflake, RIGHTARG = snowflake, FUNCTION = snowflake_le,
    COMMUTATOR = >=, NEGATOR = >, RESTRICT = scalarlesel, JOIN = scalarlejoinsel);
CREATE OPERATOR = (LEFTARG = snowflake, RIGHTARG = snowflake, FUNCTION = snowflake_eq,
    COMMUTATOR = =, NEGATOR = <>, RESTRICT = eqsel, JOIN = eqjoinsel,
    HASHES, MERGES);
CREATE OPERATOR <> (LEFTARG = snowflake, RIGHTARG = snowflake, FUNCTION = snowflake_ne,
    COMMUTATOR = <>, NEGATOR = =, RESTRICT = neqsel, JOIN = neqjoinsel);
CREATE OPERATOR >= (LEFTARG = snowflake, RIGHTARG = snowflake, FUNCTION = snowflake_ge,
    COMMUTATOR = <=, NEGATOR = <, RESTRICT = scalargesel, JOIN = scalargejoinsel);
CREATE OPERATOR > (LEFTARG = snowflake, RIGHTARG = snowflake, FUNCTION = snowflake_gt,
    COMMUTATOR = <, NEGATOR = <=, RESTRICT = scalargtsel, JOIN = scalargtjoinsel);

CREATE FUNCTION snowflake_int8_lt(snowflake, bigint) RETURNS boolean
AS 'int8lt' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION snowflake_int8_lt(snowflake, bigint) IS 'implements snowflake < bigint (int8''s comparison)';
CREATE FUNCTION snowflake_int8_le(snowflake, bigint) RETURNS boolean
AS 'int8le' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION snowflake_int8_le(snowflake, bigint) IS 'implements snowflake <= bigint (int8''s comparison)';
CREATE FUNCTION snowflake_int8_eq(snowflake, bigint) RETURNS boolean
AS 'int8eq' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION snowflake_int8_eq(snowflake, bigint) IS 'implements snowflake = bigint (int8''s comparison)';
CREATE FUNCTION snowflake_int8_ne(snowflake, bigint) RETURNS boolean
AS 'int8ne' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION snowflake_int8_ne(snowflake, bigint) IS 'implements snowflake <> bigint (int8''s comparison)';
CREATE FUNCTION snowflake_int8_ge(snowflake, bigint) RETURNS boolean
AS 'int8ge' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION snowflake_int8_ge(snowflake, bigint) IS 'implements snowflake >= bigint (int8''s comparison)';
CREATE FUNCTION snowflake_int8_gt(snowflake, bigint) RETURNS boolean
AS 'int8gt' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION snowflake_int8_gt(snowflake, bigint) IS 'implements snowflake > bigint (int8''s comparison)';
CREATE OPERATOR < (LEFTARG = snowflake, RIGHTARG = bigint, FUNCTION = snowflake_int8_lt,
    COMMUTATOR = >, NEGATOR = >=, RESTRICT = scalarltsel, JOIN = scalarltjoinsel);
CREATE OPERATOR <= (LEFTARG = snowflake, RIGHTARG = bigint, FUNCTION = snowflake_int8_le,
    COMMUTATOR = >=, NEGATOR = >, RESTRICT = scalarlesel, JOIN = scalarlejoinsel);
CREATE OPERATOR = (LEFTARG = snowflake, RIGHTARG = bigint, FUNCTION = snowflake_int8_eq,
    COMMUTATOR = =, NEGATOR = <>, RESTRICT = eqsel, JOIN = eqjoinsel,
    HASHES);
CREATE OPERATOR <> (LEFTARG = snowflake, RIGHTARG = bigint, FUNCTION = snowflake_int8_ne,
    COMMUTATOR = <>, NEGATOR = =, RESTRICT = neqsel, JOIN = neqjoinsel);
CREATE OPERATOR >= (LEFTARG = snowflake, RIGHTARG = bigint, FUNCTION = snowflake_int8_ge,
    COMMUTATOR = <=, NEGATOR = <, RESTRICT = scalargesel, JOIN = scalargejoinsel);
CREATE OPERATOR > (LEFTARG = snowflake, RIGHTARG = bigint, FUNCTION = snowflake_int8_gt,
    COMMUTATOR = <, NEGATOR = <=, RESTRICT = scalargtsel, JOIN = scalargtjoinsel);

CREATE FUNCTION int8_snowflake_lt(bigint, snowflake) RETURNS boolean
AS 'int8lt' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION int8_snowflake_lt(bigint, snowflake) IS 'implements bigint < snowflake (int8''s comparison)';
CREATE FUNCTION int8_snowflake_le(bigint, snowflake) RETURNS boolean
AS 'int8le' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION int8_snowflake_le(bigint, snowflake) IS 'implements bigint <= snowflake (int8''s comparison)';
CREATE FUNCTION int8_snowflake_eq(bigint, snowflake) RETURNS boolean
AS 'int8eq' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION int8_snowflake_eq(bigint, snowflake) IS 'implements bigint = snowflake (int8''s comparison)';
CREATE FUNCTION int8_snowflake_ne(bigint, snowflake) RETURNS boolean
AS 'int8ne' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION int8_snowflake_ne(bigint, snowflake) IS 'implements bigint <> snowflake (int8''s comparison)';
CREATE FUNCTION int8_snowflake_ge(bigint, snowflake) RETURNS boolean
AS 'int8ge' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION int8_snowflake_ge(bigint, snowflake) IS 'implements bigint >= snowflake (int8''s comparison)';
CREATE FUNCTION int8_snowflake_gt(bigint, snowflake) RETURNS boolean
AS 'int8gt' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION int8_snowflake_gt(bigint, snowflake) IS 'implements bigint > snowflake (int8''s comparison)';
CREATE OPERATOR < (LEFTARG = bigint, RIGHTARG = snowflake, FUNCTION = int8_snowflake_lt,
    COMMUTATOR = >, NEGATOR = >=, RESTRICT = scalarltsel, JOIN = scalarltjoinsel);
CREATE OPERATOR <= (LEFTARG = bigint, RIGHTARG = snowflake, FUNCTION = int8_snowflake_le,
    COMMUTATOR = >=, NEGATOR = >, RESTRICT = scalarlesel, JOIN = scalarlejoinsel);
CREATE OPERATOR = (LEFTARG = bigint, RIGHTARG = snowflake, FUNCTION = int8_snowflake_eq,
    COMMUTATOR = =, NEGATOR = <>, RESTRICT = eqsel, JOIN = eqjoinsel,
    HASHES);
CREATE OPERATOR <> (LEFTARG = bigint, RIGHTARG = snowflake, FUNCTION = int8_snowflake_ne,
    COMMUTATOR = <>, NEGATOR = =, RESTRICT = neqsel, JOIN = neqjoinsel);
CREATE OPERATOR >= (LEFTARG = bigint, RIGHTARG = snowflake, FUNCTION = int8_snowflake_ge,
    COMMUTATOR = <=, NEGATOR = <, RESTRICT = scalargesel, JOIN = scalargejoinsel);
CREATE OPERATOR > (LEFTARG = bigint, RIGHTARG = snowflake, FUNCTION = int8_snowflake_gt,
    COMMUTATOR = <, NEGATOR = <=, RESTRICT = scalargtsel, JOIN = scalargtjoinsel);

CREATE FUNCTION snowflake_int4_lt(snowflake, integer) RETURNS boolean
AS 'int84lt' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION snowflake_int4_lt(snowflake, integer) IS 'implements snowflake < integer (int8''s comparison)';
CREATE FUNCTION snowflake_int4_le(snowflake, integer) RETURNS boolean
AS 'int84le' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION snowflake_int4_le(snowflake, integer) IS 'implements snowflake <= integer (int8''s comparison)';
CREATE FUNCTION snowflake_int4_eq(snowflake, integer) RETURNS boolean
AS 'int84eq' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION snowflake_int4_eq(snowflake, integer) IS 'implements snowflake = integer (int8''s comparison)';
CREATE FUNCTION snowflake_int4_ne(snowflake, integer) RETURNS boolean
AS 'int84ne' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION snowflake_int4_ne(snowflake, integer) IS 'implements snowflake <> integer (int8''s comparison)';
CREATE FUNCTION snowflake_int4_ge(snowflake, integer) RETURNS boolean
AS 'int84ge' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION snowflake_int4_ge(snowflake, integer) IS 'implements snowflake >= integer (int8''s comparison)';
CREATE FUNCTION snowflake_int4_gt(snowflake, integer) RETURNS boolean
AS 'int84gt' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION snowflake_int4_gt(snowflake, integer) IS 'implements snowflake > integer (int8''s comparison)';
CREATE OPERATOR < (LEFTARG = snowflake, RIGHTARG = integer, FUNCTION = snowflake_int4_lt,
    COMMUTATOR = >, NEGATOR = >=, RESTRICT = scalarltsel, JOIN = scalarltjoinsel);
CREATE OPERATOR <= (LEFTARG = snowflake, RIGHTARG = integer, FUNCTION = snowflake_int4_le,
    COMMUTATOR = >=, NEGATOR = >, RESTRICT = scalarlesel, JOIN = scalarlejoinsel);
CREATE OPERATOR = (LEFTARG = snowflake, RIGHTARG = integer, FUNCTION = snowflake_int4_eq,
    COMMUTATOR = =, NEGATOR = <>, RESTRICT = eqsel, JOIN = eqjoinsel,
    HASHES);
CREATE OPERATOR <> (LEFTARG = snowflake, RIGHTARG = integer, FUNCTION = snowflake_int4_ne,
    COMMUTATOR = <>, NEGATOR = =, RESTRICT = neqsel, JOIN = neqjoinsel);
CREATE OPERATOR >= (LEFTARG = snowflake, RIGHTARG = integer, FUNCTION = snowflake_int4_ge,
    COMMUTATOR = <=, NEGATOR = <, RESTRICT = scalargesel, JOIN = scalargejoinsel);
CREATE OPERATOR > (LEFTARG = snowflake, RIGHTARG = integer, FUNCTION = snowflake_int4_gt,
    COMMUTATOR = <, NEGATOR = <=, RESTRICT = scalargtsel, JOIN = scalargtjoinsel);

CREATE FUNCTION int4_snowflake_lt(integer, snowflake) RETURNS boolean
AS 'int48lt' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION int4_snowflake_lt(integer, snowflake) IS 'implements integer < snowflake (int8''s comparison)';
CREATE FUNCTION int4_snowflake_le(integer, snowflake) RETURNS boolean
AS 'int48le' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION int4_snowflake_le(integer, snowflake) IS 'implements integer <= snowflake (int8''s comparison)';
CREATE FUNCTION int4_snowflake_eq(integer, snowflake) RETURNS boolean
AS 'int48eq' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION int4_snowflake_eq(integer, snowflake) IS 'implements integer = snowflake (int8''s comparison)';
CREATE FUNCTION int4_snowflake_ne(integer, snowflake) RETURNS boolean
AS 'int48ne' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION int4_snowflake_ne(integer, snowflake) IS 'implements integer <> snowflake (int8''s comparison)';
CREATE FUNCTION int4_snowflake_ge(integer, snowflake) RETURNS boolean
AS 'int48ge' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION int4_snowflake_ge(integer, snowflake) IS 'implements integer >= snowflake (int8''s comparison)';
CREATE FUNCTION int4_snowflake_gt(integer, snowflake) RETURNS boolean
AS 'int48gt' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION int4_snowflake_gt(integer, snowflake) IS 'implements integer > snowflake (int8''s comparison)';
CREATE OPERATOR < (LEFTARG = integer, RIGHTARG = snowflake, FUNCTION = int4_snowflake_lt,
    COMMUTATOR = >, NEGATOR = >=, RESTRICT = scalarltsel, JOIN = scalarltjoinsel);
CREATE OPERATOR <= (LEFTARG = integer, RIGHTARG = snowflake, FUNCTION = int4_snowflake_le,
    COMMUTATOR = >=, NEGATOR = >, RESTRICT = scalarlesel, JOIN = scalarlejoinsel);
CREATE OPERATOR = (LEFTARG = integer, RIGHTARG = snowflake, FUNCTION = int4_snowflake_eq,
    COMMUTATOR = =, NEGATOR = <>, RESTRICT = eqsel, JOIN = eqjoinsel,
    HASHES);
CREATE OPERATOR <> (LEFTARG = integer, RIGHTARG = snowflake, FUNCTION = int4_snowflake_ne,
    COMMUTATOR = <>, NEGATOR = =, RESTRICT = neqsel, JOIN = neqjoinsel);
CREATE OPERATOR >= (LEFTARG = integer, RIGHTARG = snowflake, FUNCTION = int4_snowflake_ge,
    COMMUTATOR = <=, NEGATOR = <, RESTRICT = scalargesel, JOIN = scalargejoinsel);
CREATE OPERATOR > (LEFTARG = integer, RIGHTARG = snowflake, FUNCTION = int4_snowflake_gt,
    COMMUTATOR = <, NEGATOR = <=, RESTRICT = scalargtsel, JOIN = scalargtjoinsel);

CREATE FUNCTION snowflake_int2_lt(snowflake, smallint) RETURNS boolean
AS 'int82lt' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION snowflake_int2_lt(snowflake, smallint) IS 'implements snowflake < smallint (int8''s comparison)';
CREATE FUNCTION snowflake_int2_le(snowflake, smallint) RETURNS boolean
AS 'int82le' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION snowflake_int2_le(snowflake, smallint) IS 'implements snowflake <= smallint (int8''s comparison)';
CREATE FUNCTION snowflake_int2_eq(snowflake, smallint) RETURNS boolean
AS 'int82eq' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION snowflake_int2_eq(snowflake, smallint) IS 'implements snowflake = smallint (int8''s comparison)';
CREATE FUNCTION snowflake_int2_ne(snowflake, smallint) RETURNS boolean
AS 'int82ne' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION snowflake_int2_ne(snowflake, smallint) IS 'implements snowflake <> smallint (int8''s comparison)';
CREATE FUNCTION snowflake_int2_ge(snowflake, smallint) RETURNS boolean
AS 'int82ge' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION snowflake_int2_ge(snowflake, smallint) IS 'implements snowflake >= smallint (int8''s comparison)';
CREATE FUNCTION snowflake_int2_gt(snowflake, smallint) RETURNS boolean
AS 'int82gt' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION snowflake_int2_gt(snowflake, smallint) IS 'implements snowflake > smallint (int8''s comparison)';
CREATE OPERATOR < (LEFTARG = snowflake, RIGHTARG = smallint, FUNCTION = snowflake_int2_lt,
    COMMUTATOR = >, NEGATOR = >=, RESTRICT = scalarltsel, JOIN = scalarltjoinsel);
CREATE OPERATOR <= (LEFTARG = snowflake, RIGHTARG = smallint, FUNCTION = snowflake_int2_le,
    COMMUTATOR = >=, NEGATOR = >, RESTRICT = scalarlesel, JOIN = scalarlejoinsel);
CREATE OPERATOR = (LEFTARG = snowflake, RIGHTARG = smallint, FUNCTION = snowflake_int2_eq,
    COMMUTATOR = =, NEGATOR = <>, RESTRICT = eqsel, JOIN = eqjoinsel,
    HASHES);
CREATE OPERATOR <> (LEFTARG = snowflake, RIGHTARG = smallint, FUNCTION = snowflake_int2_ne,
    COMMUTATOR = <>, NEGATOR = =, RESTRICT = neqsel, JOIN = neqjoinsel);
CREATE OPERATOR >= (LEFTARG = snowflake, RIGHTARG = smallint, FUNCTION = snowflake_int2_ge,
    COMMUTATOR = <=, NEGATOR = <, RESTRICT = scalargesel, JOIN = scalargejoinsel);
CREATE OPERATOR > (LEFTARG = snowflake, RIGHTARG = smallint, FUNCTION = snowflake_int2_gt,
    COMMUTATOR = <, NEGATOR = <=, RESTRICT = scalargtsel, JOIN = scalargtjoinsel);

CREATE FUNCTION int2_snowflake_lt(smallint, snowflake) RETURNS boolean
AS 'int28lt' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION int2_snowflake_lt(smallint, snowflake) IS 'implements smallint < snowflake (int8''s comparison)';
CREATE FUNCTION int2_snowflake_le(smallint, snowflake) RETURNS boolean
AS 'int28le' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION int2_snowflake_le(smallint, snowflake) IS 'implements smallint <= snowflake (int8''s comparison)';
CREATE FUNCTION int2_snowflake_eq(smallint, snowflake) RETURNS boolean
AS 'int28eq' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION int2_snowflake_eq(smallint, snowflake) IS 'implements smallint = snowflake (int8''s comparison)';
CREATE FUNCTION int2_snowflake_ne(smallint, snowflake) RETURNS boolean
AS 'int28ne' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION int2_snowflake_ne(smallint, snowflake) IS 'implements smallint <> snowflake (int8''s comparison)';
CREATE FUNCTION int2_snowflake_ge(smallint, snowflake) RETURNS boolean
AS 'int28ge' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION int2_snowflake_ge(smallint, snowflake) IS 'implements smallint >= snowflake (int8''s comparison)';
CREATE FUNCTION int2_snowflake_gt(smallint, snowflake) RETURNS boolean
AS 'int28gt' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION int2_snowflake_gt(smallint, snowflake) IS 'implements smallint > snowflake (int8''s comparison)';
CREATE OPERATOR < (LEFTARG = smallint, RIGHTARG = snowflake, FUNCTION = int2_snowflake_lt,
    COMMUTATOR = >, NEGATOR = >=, RESTRICT = scalarltsel, JOIN = scalarltjoinsel);
CREATE OPERATOR <= (LEFTARG = smallint, RIGHTARG = snowflake, FUNCTION = int2_snowflake_le,
    COMMUTATOR = >=, NEGATOR = >, RESTRICT = scalarlesel, JOIN = scalarlejoinsel);
CREATE OPERATOR = (LEFTARG = smallint, RIGHTARG = snowflake, FUNCTION = int2_snowflake_eq,
    COMMUTATOR = =, NEGATOR = <>, RESTRICT = eqsel, JOIN = eqjoinsel,
    HASHES);
CREATE OPERATOR <> (LEFTARG = smallint, RIGHTARG = snowflake, FUNCTION = int2_snowflake_ne,
    COMMUTATOR = <>, NEGATOR = =, RESTRICT = neqsel, JOIN = neqjoinsel);
CREATE OPERATOR >= (LEFTARG = smallint, RIGHTARG = snowflake, FUNCTION = int2_snowflake_ge,
    COMMUTATOR = <=, NEGATOR = <, RESTRICT = scalargesel, JOIN = scalargejoinsel);
CREATE OPERATOR > (LEFTARG = smallint, RIGHTARG = snowflake, FUNCTION = int2_snowflake_gt,
    COMMUTATOR = <, NEGATOR = <=, RESTRICT = scalargtsel, JOIN = scalargtjoinsel);

CREATE FUNCTION snowflake_cmp(snowflake, snowflake) RETURNS integer
AS 'btint8cmp' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION snowflake_cmp(snowflake, snowflake) IS 'btree comparison of snowflakes (int8''s)';
CREATE FUNCTION snowflake_int8_cmp(snowflake, bigint) RETURNS integer
AS 'btint8cmp' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION snowflake_int8_cmp(snowflake, bigint) IS 'btree comparison of snowflake with bigint (int8''s)';
CREATE FUNCTION int8_snowflake_cmp(bigint, snowflake) RETURNS integer
AS 'btint8cmp' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION int8_snowflake_cmp(bigint, snowflake) IS 'btree comparison of bigint with snowflake (int8''s)';
CREATE FUNCTION snowflake_int4_cmp(snowflake, integer) RETURNS integer
AS 'btint84cmp' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION snowflake_int4_cmp(snowflake, integer) IS 'btree comparison of snowflake with integer (int8''s)';
CREATE FUNCTION int4_snowflake_cmp(integer, snowflake) RETURNS integer
AS 'btint48cmp' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION int4_snowflake_cmp(integer, snowflake) IS 'btree comparison of integer with snowflake (int8''s)';
CREATE FUNCTION snowflake_int2_cmp(snowflake, smallint) RETURNS integer
AS 'btint82cmp' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION snowflake_int2_cmp(snowflake, smallint) IS 'btree comparison of snowflake with smallint (int8''s)';
CREATE FUNCTION int2_snowflake_cmp(smallint, snowflake) RETURNS integer
AS 'btint28cmp' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION int2_snowflake_cmp(smallint, snowflake) IS 'btree comparison of smallint with snowflake (int8''s)';
CREATE FUNCTION snowflake_sortsupport(internal) RETURNS void
AS 'btint8sortsupport' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION snowflake_sortsupport(internal) IS 'btree sort support of snowflakes (int8''s)';
CREATE FUNCTION snowflake_hash(snowflake) RETURNS integer
AS 'hashint8' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION snowflake_hash(snowflake) IS 'hash of a snowflake (int8''s, equal to the bigint''s)';
CREATE FUNCTION snowflake_hash_extended(snowflake, bigint) RETURNS bigint
AS 'hashint8extended' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION snowflake_hash_extended(snowflake, bigint) IS 'seeded hash of a snowflake (int8''s, equal to the bigint''s)';

-- min() and max() of snowflakes are snowflakes (JSON strings), answered
-- from the index like bigint's
CREATE FUNCTION snowflake_larger(snowflake, snowflake) RETURNS snowflake
AS 'int8larger' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION snowflake_larger(snowflake, snowflake) IS 'the larger of two snowflakes (int8''s), for max()';
CREATE FUNCTION snowflake_smaller(snowflake, snowflake) RETURNS snowflake
AS 'int8smaller' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION snowflake_smaller(snowflake, snowflake) IS 'the smaller of two snowflakes (int8''s), for min()';
CREATE AGGREGATE max(snowflake) (SFUNC = snowflake_larger, STYPE = snowflake,
    COMBINEFUNC = snowflake_larger, SORTOP = >, PARALLEL = SAFE);
CREATE AGGREGATE min(snowflake) (SFUNC = snowflake_smaller, STYPE = snowflake,
    COMBINEFUNC = snowflake_smaller, SORTOP = <, PARALLEL = SAFE);
COMMENT ON AGGREGATE max(snowflake) IS 'the largest snowflake (the newest ID), as a snowflake';
COMMENT ON AGGREGATE min(snowflake) IS 'the smallest snowflake (the oldest ID), as a snowflake';

-- Time comparisons: "id >= t" is "created at or after t", exactly
-- "snowflake_timestamp(id) >= t"; "id < t" is "created before t".  A time
-- never equals an ID (it sits just below the first ID of the first unit
-- that starts at or after it), so there is no "=", ">" means ">=" and "<="
-- means "<".  IMMUTABLE as the decoders: the layout is fixed.
CREATE FUNCTION snowflake_cmp_time(snowflake, timestamptz) RETURNS integer
AS 'MODULE_PATHNAME', 'snowflake_cmp_time' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION snowflake_cmp_time(snowflake, timestamptz) IS 'btree comparison of a snowflake with a time: -1 created before, 1 at or after (never 0)';
CREATE FUNCTION snowflake_time_cmp(timestamptz, snowflake) RETURNS integer
AS 'MODULE_PATHNAME', 'snowflake_time_cmp' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION snowflake_time_cmp(timestamptz, snowflake) IS 'btree comparison of a time with a snowflake: 1 created before, -1 at or after (never 0)';
-- with a constant time, the planner's support turns "id >= t" into "id >= <the
-- first ID at or after t>": the same rows, and partition pruning exact at
-- partition bounds
CREATE FUNCTION snowflake_time_support(internal) RETURNS internal
AS 'MODULE_PATHNAME', 'snowflake_time_support' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION snowflake_time_support(internal) IS 'planner support of the time comparisons: a constant time becomes the first ID at or after it';
CREATE FUNCTION snowflake_lt_time(snowflake, timestamptz) RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_lt_time' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
SUPPORT snowflake_time_support;
COMMENT ON FUNCTION snowflake_lt_time(snowflake, timestamptz) IS 'implements snowflake < timestamptz: created before the time';
CREATE FUNCTION snowflake_le_time(snowflake, timestamptz) RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_le_time' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
SUPPORT snowflake_time_support;
COMMENT ON FUNCTION snowflake_le_time(snowflake, timestamptz) IS 'implements snowflake <= timestamptz: created before the time';
CREATE FUNCTION snowflake_ge_time(snowflake, timestamptz) RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_ge_time' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
SUPPORT snowflake_time_support;
COMMENT ON FUNCTION snowflake_ge_time(snowflake, timestamptz) IS 'implements snowflake >= timestamptz: created at or after the time';
CREATE FUNCTION snowflake_gt_time(snowflake, timestamptz) RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_gt_time' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
SUPPORT snowflake_time_support;
COMMENT ON FUNCTION snowflake_gt_time(snowflake, timestamptz) IS 'implements snowflake > timestamptz: created at or after the time';
CREATE FUNCTION snowflake_time_lt(timestamptz, snowflake) RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_time_lt' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
SUPPORT snowflake_time_support;
COMMENT ON FUNCTION snowflake_time_lt(timestamptz, snowflake) IS 'implements timestamptz < snowflake: created at or after the time';
CREATE FUNCTION snowflake_time_le(timestamptz, snowflake) RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_time_le' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
SUPPORT snowflake_time_support;
COMMENT ON FUNCTION snowflake_time_le(timestamptz, snowflake) IS 'implements timestamptz <= snowflake: created at or after the time';
CREATE FUNCTION snowflake_time_ge(timestamptz, snowflake) RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_time_ge' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
SUPPORT snowflake_time_support;
COMMENT ON FUNCTION snowflake_time_ge(timestamptz, snowflake) IS 'implements timestamptz >= snowflake: created before the time';
CREATE FUNCTION snowflake_time_gt(timestamptz, snowflake) RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_time_gt' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
SUPPORT snowflake_time_support;
COMMENT ON FUNCTION snowflake_time_gt(timestamptz, snowflake) IS 'implements timestamptz > snowflake: created before the time';
CREATE OPERATOR < (LEFTARG = snowflake, RIGHTARG = timestamptz, FUNCTION = snowflake_lt_time,
    COMMUTATOR = >, NEGATOR = >=, RESTRICT = scalarltsel, JOIN = scalarltjoinsel);
CREATE OPERATOR <= (LEFTARG = snowflake, RIGHTARG = timestamptz, FUNCTION = snowflake_le_time,
    COMMUTATOR = >=, NEGATOR = >, RESTRICT = scalarlesel, JOIN = scalarlejoinsel);
CREATE OPERATOR >= (LEFTARG = snowflake, RIGHTARG = timestamptz, FUNCTION = snowflake_ge_time,
    COMMUTATOR = <=, NEGATOR = <, RESTRICT = scalargesel, JOIN = scalargejoinsel);
CREATE OPERATOR > (LEFTARG = snowflake, RIGHTARG = timestamptz, FUNCTION = snowflake_gt_time,
    COMMUTATOR = <, NEGATOR = <=, RESTRICT = scalargtsel, JOIN = scalargtjoinsel);
CREATE OPERATOR < (LEFTARG = timestamptz, RIGHTARG = snowflake, FUNCTION = snowflake_time_lt,
    COMMUTATOR = >, NEGATOR = >=, RESTRICT = scalarltsel, JOIN = scalarltjoinsel);
CREATE OPERATOR <= (LEFTARG = timestamptz, RIGHTARG = snowflake, FUNCTION = snowflake_time_le,
    COMMUTATOR = >=, NEGATOR = >, RESTRICT = scalarlesel, JOIN = scalarlejoinsel);
CREATE OPERATOR >= (LEFTARG = timestamptz, RIGHTARG = snowflake, FUNCTION = snowflake_time_ge,
    COMMUTATOR = <=, NEGATOR = <, RESTRICT = scalargesel, JOIN = scalargejoinsel);
CREATE OPERATOR > (LEFTARG = timestamptz, RIGHTARG = snowflake, FUNCTION = snowflake_time_gt,
    COMMUTATOR = <, NEGATOR = <=, RESTRICT = scalargtsel, JOIN = scalargtjoinsel);

-- btree: the default operator class, with the integers and timestamptz in its
-- family (an Index Cond on a key of the type, and partition pruning of range
-- partitions on it); equalimage lets the index deduplicate as int8's does.
CREATE OPERATOR CLASS snowflake_ops DEFAULT FOR TYPE snowflake USING btree AS
    OPERATOR 1 <, OPERATOR 2 <=, OPERATOR 3 =, OPERATOR 4 >=, OPERATOR 5 >,
    FUNCTION 1 snowflake_cmp(snowflake, snowflake),
    FUNCTION 2 snowflake_sortsupport(internal),
    FUNCTION 4 btequalimage(oid);
ALTER OPERATOR FAMILY snowflake_ops USING btree ADD
    OPERATOR 1 < (snowflake, bigint), OPERATOR 2 <= (snowflake, bigint),
    OPERATOR 3 = (snowflake, bigint), OPERATOR 4 >= (snowflake, bigint),
    OPERATOR 5 > (snowflake, bigint),
    FUNCTION 1 (snowflake, bigint) snowflake_int8_cmp(snowflake, bigint),
    OPERATOR 1 < (bigint, snowflake), OPERATOR 2 <= (bigint, snowflake),
    OPERATOR 3 = (bigint, snowflake), OPERATOR 4 >= (bigint, snowflake),
    OPERATOR 5 > (bigint, snowflake),
    FUNCTION 1 (bigint, snowflake) int8_snowflake_cmp(bigint, snowflake),
    OPERATOR 1 < (snowflake, integer), OPERATOR 2 <= (snowflake, integer),
    OPERATOR 3 = (snowflake, integer), OPERATOR 4 >= (snowflake, integer),
    OPERATOR 5 > (snowflake, integer),
    FUNCTION 1 (snowflake, integer) snowflake_int4_cmp(snowflake, integer),
    OPERATOR 1 < (integer, snowflake), OPERATOR 2 <= (integer, snowflake),
    OPERATOR 3 = (integer, snowflake), OPERATOR 4 >= (integer, snowflake),
    OPERATOR 5 > (integer, snowflake),
    FUNCTION 1 (integer, snowflake) int4_snowflake_cmp(integer, snowflake),
    OPERATOR 1 < (snowflake, smallint), OPERATOR 2 <= (snowflake, smallint),
    OPERATOR 3 = (snowflake, smallint), OPERATOR 4 >= (snowflake, smallint),
    OPERATOR 5 > (snowflake, smallint),
    FUNCTION 1 (snowflake, smallint) snowflake_int2_cmp(snowflake, smallint),
    OPERATOR 1 < (smallint, snowflake), OPERATOR 2 <= (smallint, snowflake),
    OPERATOR 3 = (smallint, snowflake), OPERATOR 4 >= (smallint, snowflake),
    OPERATOR 5 > (smallint, snowflake),
    FUNCTION 1 (smallint, snowflake) int2_snowflake_cmp(smallint, snowflake),
    OPERATOR 1 < (snowflake, timestamptz), OPERATOR 2 <= (snowflake, timestamptz),
    OPERATOR 4 >= (snowflake, timestamptz), OPERATOR 5 > (snowflake, timestamptz),
    FUNCTION 1 (snowflake, timestamptz) snowflake_cmp_time(snowflake, timestamptz),
    OPERATOR 1 < (timestamptz, snowflake), OPERATOR 2 <= (timestamptz, snowflake),
    OPERATOR 4 >= (timestamptz, snowflake), OPERATOR 5 > (timestamptz, snowflake),
    FUNCTION 1 (timestamptz, snowflake) snowflake_time_cmp(timestamptz, snowflake);

-- hash: DISTINCT, GROUP BY, hash joins (with the integers too) and hash
-- partitions.  A hashed "id NOT IN (SELECT bigint ...)" needs each side's own
-- equality in the family of the cross-type one: the integers' "=" are here
-- too, with their own hash functions (a hash family adds no order, so this
-- changes nothing for bigint columns).
CREATE OPERATOR CLASS snowflake_ops DEFAULT FOR TYPE snowflake USING hash AS
    OPERATOR 1 =,
    FUNCTION 1 snowflake_hash(snowflake),
    FUNCTION 2 snowflake_hash_extended(snowflake, bigint);
ALTER OPERATOR FAMILY snowflake_ops USING hash ADD
    OPERATOR 1 = (snowflake, bigint), OPERATOR 1 = (bigint, snowflake),
    OPERATOR 1 = (snowflake, integer), OPERATOR 1 = (integer, snowflake),
    OPERATOR 1 = (snowflake, smallint), OPERATOR 1 = (smallint, snowflake),
    OPERATOR 1 = (bigint, bigint), OPERATOR 1 = (integer, integer),
    OPERATOR 1 = (smallint, smallint),
    FUNCTION 1 (bigint, bigint) hashint8(bigint),
    FUNCTION 2 (bigint, bigint) hashint8extended(bigint, bigint),
    FUNCTION 1 (integer, integer) hashint4(integer),
    FUNCTION 2 (integer, integer) hashint4extended(integer, bigint),
    FUNCTION 1 (smallint, smallint) hashint2(smallint),
    FUNCTION 2 (smallint, smallint) hashint2extended(smallint, bigint);

-- BRIN minmax, for large append-only tables filtered by ID or by time
CREATE OPERATOR CLASS snowflake_minmax_ops DEFAULT FOR TYPE snowflake USING brin AS
    OPERATOR 1 <, OPERATOR 2 <=, OPERATOR 3 =, OPERATOR 4 >=, OPERATOR 5 >,
    FUNCTION 1 brin_minmax_opcinfo(internal),
    FUNCTION 2 brin_minmax_add_value(internal, internal, internal, internal),
    FUNCTION 3 brin_minmax_consistent(internal, internal, internal),
    FUNCTION 4 brin_minmax_union(internal, internal, internal);
ALTER OPERATOR FAMILY snowflake_minmax_ops USING brin ADD
    OPERATOR 1 < (snowflake, bigint), OPERATOR 2 <= (snowflake, bigint),
    OPERATOR 3 = (snowflake, bigint), OPERATOR 4 >= (snowflake, bigint),
    OPERATOR 5 > (snowflake, bigint),
    OPERATOR 1 < (snowflake, integer), OPERATOR 2 <= (snowflake, integer),
    OPERATOR 3 = (snowflake, integer), OPERATOR 4 >= (snowflake, integer),
    OPERATOR 5 > (snowflake, integer),
    OPERATOR 1 < (snowflake, smallint), OPERATOR 2 <= (snowflake, smallint),
    OPERATOR 3 = (snowflake, smallint), OPERATOR 4 >= (snowflake, smallint),
    OPERATOR 5 > (snowflake, smallint),
    OPERATOR 1 < (snowflake, timestamptz), OPERATOR 2 <= (snowflake, timestamptz),
    OPERATOR 4 >= (snowflake, timestamptz), OPERATOR 5 > (snowflake, timestamptz);

-- The same time filters for bigint columns.  snowflake_time_bound() is the
-- first ID created at or after a time; the snowflake_created_*() functions
-- are SQL functions with bodies parsed at creation (no name is looked up when
-- they run) that the planner inlines: "snowflake_created_after(id, t)"
-- becomes "id >= snowflake_time_bound(t)", folded to a constant for a
-- constant t, so the primary key's index and partition pruning apply (at
-- executor start-up for now()).  Not STRICT, so that the planner may inline
-- them; NULL in, NULL out all the same.
CREATE FUNCTION snowflake_time_bound(ts timestamptz) RETURNS bigint
AS 'MODULE_PATHNAME', 'snowflake_time_bound' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_time_bound(timestamptz) IS
'the first ID created at or after ts (IDs below it were created before ts); 0 before the epoch, an error past the layout''s last unit';

CREATE FUNCTION snowflake_created_after(id bigint, ts timestamptz) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN id >= snowflake_time_bound(ts);

COMMENT ON FUNCTION snowflake_created_after(bigint, timestamptz) IS
'whether the ID was created at or after ts (snowflake_timestamp(id) >= ts), as "id >= snowflake_time_bound(ts)": index range scans and partition pruning';

CREATE FUNCTION snowflake_created_before(id bigint, ts timestamptz) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN id < snowflake_time_bound(ts);

COMMENT ON FUNCTION snowflake_created_before(bigint, timestamptz) IS
'whether the ID was created before ts (snowflake_timestamp(id) < ts), as "id < snowflake_time_bound(ts)": index range scans and partition pruning';

CREATE FUNCTION snowflake_created_between(id bigint, from_ts timestamptz, to_ts timestamptz) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN id >= snowflake_time_bound(from_ts) AND id < snowflake_time_bound(to_ts);

COMMENT ON FUNCTION snowflake_created_between(bigint, timestamptz, timestamptz) IS
'whether the ID was created at or after from_ts and before to_ts, as two ID bounds: index range scans and partition pruning';

-- the same names for the type: its own operators, which take any time
CREATE FUNCTION snowflake_created_after(id snowflake, ts timestamptz) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN id >= ts;

COMMENT ON FUNCTION snowflake_created_after(snowflake, timestamptz) IS
'whether the ID was created at or after ts: "id >= ts"';

CREATE FUNCTION snowflake_created_before(id snowflake, ts timestamptz) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN id < ts;

COMMENT ON FUNCTION snowflake_created_before(snowflake, timestamptz) IS
'whether the ID was created before ts: "id < ts"';

CREATE FUNCTION snowflake_created_between(id snowflake, from_ts timestamptz, to_ts timestamptz) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN id >= from_ts AND id < to_ts;

COMMENT ON FUNCTION snowflake_created_between(snowflake, timestamptz, timestamptz) IS
'whether the ID was created at or after from_ts and before to_ts: "id >= from_ts AND id < to_ts"';

-- snowflake_adopt_database() also reads columns of the type: it is C in 1.3
-- (above), and src/sql/adopt.cpp takes the type's columns with bigint ones

-- ===== end of the snowflake type =====
