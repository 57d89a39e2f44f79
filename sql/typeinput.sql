--
-- typeinput: the snowflake type's input reports soft errors (PostgreSQL 16
-- and later): pg_input_is_valid() answers false and pg_input_error_info()
-- gives the message instead of raising.  PostgreSQL 15 has neither function
-- (expected/typeinput_1.out).
--
SELECT v AS input, pg_input_is_valid(v, 'snowflake') AS valid,
       (pg_input_error_info(v, 'snowflake')).*
FROM (VALUES ('384004287098785976'), ('0'), ('-0'), ('x'), (''), (' 1'), ('-1'),
             ('9223372036854775808')) t(v);
-- a hard error still where no one asks for a soft one
SELECT 'x'::snowflake;
