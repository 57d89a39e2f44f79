--
-- text: the Crockford base32 form of an ID
--
SELECT snowflake_to_text(0) AS zero, snowflake_to_text(9223372036854775807) AS max,
       length(snowflake_to_text(snowflake_nextval())) AS len;

-- round trips and order preservation over many random IDs
WITH ids AS (
    SELECT (random() * 9223372036854775807)::bigint AS id FROM generate_series(1, 20000)
    UNION ALL SELECT 0 UNION ALL SELECT 9223372036854775807
    UNION ALL SELECT snowflake_nextval_batch(5000)
)
SELECT count(*) AS checked,
       count(*) FILTER (WHERE snowflake_from_text(snowflake_to_text(id)) <> id) AS bad_round_trip,
       count(*) FILTER (WHERE snowflake_from_text(lower(snowflake_to_text(id))) <> id) AS bad_lower,
       count(*) FILTER (WHERE length(snowflake_to_text(id)) <> 13) AS bad_length,
       count(*) FILTER (WHERE snowflake_to_text(id) !~ '^[0-7][0-9A-HJKMNP-TV-Z]{12}$') AS bad_alphabet
FROM ids;

WITH ids AS (
    SELECT DISTINCT (random() * 9223372036854775807)::bigint AS id FROM generate_series(1, 20000)
), ranked AS (
    SELECT row_number() OVER (ORDER BY id) AS by_id,
           row_number() OVER (ORDER BY snowflake_to_text(id) COLLATE "C") AS by_text
    FROM ids
)
SELECT count(*) FILTER (WHERE by_id <> by_text) AS order_mismatches FROM ranked;

-- NULL, negative, and strict parsing (SQLSTATE 22P02, input shown)
SELECT snowflake_to_text(NULL) IS NULL AS n1, snowflake_from_text(NULL) IS NULL AS n2;
SELECT snowflake_to_text(-1);
SELECT snowflake_from_text('');
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_from_text('0ABCDEFGH');
SELECT snowflake_from_text('0123456789ABCD');
SELECT snowflake_from_text('0123456789ABU');
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_from_text('0123456789ABO');
SELECT snowflake_from_text('012345-789ABC');
SELECT snowflake_from_text(' 0123456789AB');
SELECT snowflake_from_text('8000000000000');
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_from_text('ZZZZZZZZZZZZZ');
SELECT snowflake_from_text('7ZZZZZZZZZZZZ') = 9223372036854775807 AS max_ok,
       snowflake_from_text('0000000000000') = 0 AS zero_ok,
       snowflake_from_text('0000000000zZz') = snowflake_from_text('0000000000ZZZ') AS any_case;
