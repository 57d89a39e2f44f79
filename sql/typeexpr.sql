--
-- typeexpr: the snowflake type in ordinary expressions (issue 33): COALESCE,
-- GREATEST/LEAST, CASE, NULLIF, IN, UNION/INTERSECT/EXCEPT and VALUES with
-- integer, smallint and bigint literals and columns; the type of the result,
-- its JSON, the same values as the bigint query, the index conditions, no
-- "operator is not unique"; smallint casts and columns; '-0'
--
\set SHOW_CONTEXT never
SET timezone = 'UTC';
SET client_min_messages = notice;

CREATE TABLE te (id snowflake PRIMARY KEY DEFAULT snowflake_nextval(), n integer, s smallint, b bigint);
INSERT INTO te (n, s, b) SELECT g, g, g FROM generate_series(1, 1000) g;
INSERT INTO te VALUES (5, 0, 0, 0);
CREATE TABLE te_old (b bigint PRIMARY KEY);
INSERT INTO te_old VALUES (1), (5), (9);
ANALYZE te;
ANALYZE te_old;

-- A query with %s for the ID: the type of its column, that type's JSON, and
-- whether its rows equal those of the same query over id::bigint (or the
-- SQLSTATE it fails with)
CREATE FUNCTION te_expr(query text, OUT type text, OUT "json" text, OUT same_as_bigint boolean)
LANGUAGE plpgsql AS $$
DECLARE
    mine text;
    theirs text;
BEGIN
    EXECUTE format('SELECT pg_typeof(x)::text, json_typeof(to_json(x)) FROM (%s) q(x) LIMIT 1',
                   format(query, 'id')) INTO type, "json";
    EXECUTE format('SELECT string_agg(x::text, '','' ORDER BY x::text) FROM (%s) q(x)',
                   format(query, 'id')) INTO mine;
    EXECUTE format('SELECT string_agg(x::text, '','' ORDER BY x::text) FROM (%s) q(x)',
                   format(query, 'id::bigint')) INTO theirs;
    same_as_bigint := mine IS NOT DISTINCT FROM theirs AND mine IS NOT NULL;
EXCEPTION WHEN OTHERS THEN
    type := 'error ' || SQLSTATE;
END $$;

-- with integer and smallint literals and columns the result stays a
-- snowflake, a JSON string
SELECT q AS query, (te_expr(q)).* FROM (VALUES
    ('SELECT coalesce(max(%s), 0) FROM te WHERE n < 0'),
    ('SELECT coalesce(max(%s), 0) FROM te'),
    ('SELECT coalesce(%s, 0::smallint) FROM te'),
    ('SELECT coalesce(%s, n) FROM te'),
    ('SELECT coalesce(n, %s) FROM te'),
    ('SELECT coalesce(s, %s) FROM te'),
    ('SELECT coalesce(NULL, %s) FROM te'),
    ('SELECT greatest(%s, 7) FROM te'),
    ('SELECT least(%s, 7) FROM te'),
    ('SELECT greatest(n, %s, s) FROM te'),
    ('SELECT CASE WHEN n > 500 THEN %s ELSE 0 END FROM te'),
    ('SELECT CASE WHEN n > 500 THEN 0 ELSE %s END FROM te'),
    ('SELECT CASE n WHEN 1 THEN %s WHEN 2 THEN s ELSE n END FROM te'),
    ('SELECT nullif(%s, 5) FROM te'),
    ('SELECT %s FROM te UNION SELECT 7'),
    ('SELECT 7 UNION SELECT %s FROM te'),
    ('SELECT %s FROM te UNION ALL SELECT n FROM te WHERE n < 3'),
    ('SELECT s FROM te WHERE n < 3 UNION SELECT %s FROM te'),
    ('SELECT %s FROM te INTERSECT SELECT 5'),
    ('SELECT %s FROM te EXCEPT SELECT 5'),
    ('VALUES ((SELECT max(%s) FROM te)), (6), (7::smallint)'),
    ('VALUES (6), ((SELECT max(%s) FROM te))'),
    ('SELECT (SELECT max(%s) FROM te) IN (5, 6)')
) v(q);

-- with a bigint the result is a bigint, whichever comes first: snowflake
-- converts to bigint implicitly, bigint to snowflake only on assignment (as
-- integer and bigint give bigint); cast the bigint to snowflake to keep one
SELECT q AS query, (te_expr(q)).* FROM (VALUES
    ('SELECT coalesce(max(%s), 0::bigint) FROM te'),
    ('SELECT coalesce(%s, b) FROM te'),
    ('SELECT greatest(%s, b) FROM te'),
    ('SELECT CASE WHEN n > 500 THEN %s ELSE b END FROM te'),
    ('SELECT %s FROM te UNION SELECT b FROM te_old'),
    ('SELECT b FROM te_old UNION SELECT %s FROM te'),
    ('SELECT %s FROM te INTERSECT SELECT b FROM te_old'),
    ('SELECT %s FROM te EXCEPT SELECT b FROM te_old'),
    ('VALUES ((SELECT max(%s) FROM te)), (6::bigint)'),
    ('SELECT %s FROM te UNION SELECT b::snowflake FROM te_old'),
    ('SELECT coalesce(max(%s), o.b::snowflake) FROM te, te_old o GROUP BY o.b')
) v(q);

-- a snowflake is never negative: a negative integer in the expression fails
-- (for -1 as "none", compare as bigint); numeric does not mix
SELECT q AS query, (te_expr(q)).type FROM (VALUES
    ('SELECT coalesce(max(%s), -1) FROM te WHERE n < 0'),
    ('SELECT coalesce(max(%s)::bigint, -1) FROM te WHERE n < 0'),
    ('SELECT coalesce(max(%s), 1.5) FROM te')
) v(q);

-- IN lists: the same rows as bigint's
SELECT count(*) FILTER (WHERE id IN (5, 7, 9)) AS int_list,
       count(*) FILTER (WHERE id IN (5::bigint, 7)) AS bigint_list,
       count(*) FILTER (WHERE id IN (5::smallint, 7::smallint)) AS smallint_list,
       count(*) FILTER (WHERE id NOT IN (5, 7)) = count(*) - 1 AS not_in,
       count(*) FILTER (WHERE id IN (SELECT b FROM te_old)) AS subquery,
       count(*) FILTER (WHERE id = ANY (ARRAY[5, 7])) AS any_array
FROM te;

-- operators and functions resolve as before: no "is not unique"
SELECT pg_typeof(id = 5) AS eq_int, pg_typeof(id < 10) AS lt_int, pg_typeof(b = id) AS bigint_eq,
       pg_typeof(id = b) AS eq_bigint, pg_typeof(n = id) AS int_eq, pg_typeof(s < id) AS smallint_lt,
       pg_typeof(id + 1) AS plus, pg_typeof(id - n) AS minus, pg_typeof(id * 2::bigint) AS times,
       pg_typeof(sum(id)) AS sum, pg_typeof(abs(id)) AS abs, pg_typeof(max(id)) AS max,
       pg_typeof(snowflake_timestamp(id)) AS decoded
FROM te GROUP BY id, b, n, s LIMIT 1;
SELECT count(*) FROM te JOIN te_old ON id = te_old.b;
SELECT count(*) FROM te JOIN te_old ON te_old.b = id;

-- the index conditions: "=", "<", the time comparisons and parameters stay
-- Index Conds on the key, and IN lists too (one array, no longer ORs)
CREATE FUNCTION te_plan(query text) RETURNS TABLE (index_cond text, filter text)
LANGUAGE plpgsql AS $$
DECLARE
    plan jsonb;
BEGIN
    EXECUTE 'EXPLAIN (FORMAT JSON, COSTS OFF) ' || query INTO plan;
    RETURN QUERY
    SELECT regexp_replace(p ->> 'Index Cond', '[0-9]{10,}', 'N', 'g'),
           regexp_replace(p ->> 'Filter', '[0-9]{10,}', 'N', 'g')
    FROM jsonb_path_query(plan, 'strict $.**') p
    WHERE jsonb_typeof(p) = 'object' AND (p ? 'Index Cond' OR p ? 'Filter')
    ORDER BY 1, 2;
END $$;
SET enable_seqscan = off;
SELECT q AS query, p.* FROM (VALUES
    ('SELECT * FROM te WHERE id = 5'),
    ('SELECT * FROM te WHERE id = 5::bigint'),
    ('SELECT * FROM te WHERE id = 5::smallint'),
    ('SELECT * FROM te WHERE id < 10'),
    ('SELECT * FROM te WHERE id = ''5'''),
    ('SELECT * FROM te WHERE id >= timestamptz ''2026-01-01'''),
    ('SELECT * FROM te WHERE id >= now() - interval ''1 day'''),
    ('SELECT * FROM te WHERE id IN (5, 7, 9)'),
    ('SELECT * FROM te WHERE id IN (5::bigint, 7)'),
    ('SELECT * FROM te WHERE id = ANY (ARRAY[5, 7]::bigint[])')
) v(q), te_plan(q) p;
SET plan_cache_mode = force_generic_plan;
PREPARE te_by_bigint(bigint) AS SELECT * FROM te WHERE id = $1;
PREPARE te_by_int(integer) AS SELECT * FROM te WHERE id = $1;
PREPARE te_by_any AS SELECT * FROM te WHERE id = $1;
EXPLAIN (COSTS OFF) EXECUTE te_by_bigint(5);
EXPLAIN (COSTS OFF) EXECUTE te_by_int(5);
EXPLAIN (COSTS OFF) EXECUTE te_by_any(5);
RESET plan_cache_mode;
RESET enable_seqscan;

-- what PostgreSQL's rules decide otherwise: an integer compared with a time
-- is taken as an ID (integers convert to snowflake implicitly), and an
-- integer argument of snowflake_created_after() matches both its bigint and
-- its snowflake form (cast it)
-- (the SQLSTATE and message of a statement: the hints of failed look-ups
-- differ between PostgreSQL versions)
CREATE FUNCTION te_error(stmt text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE stmt;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END $$;
SELECT 5 >= now() AS int_vs_time;
SELECT te_error('SELECT snowflake_created_after(5, now())');
SELECT snowflake_created_after(5::bigint, now()) AS as_bigint, snowflake_created_after(5::snowflake, now()) AS as_snowflake;
-- a bigint still does not compare with a time (snowflake_created_after(), or a cast)
SELECT te_error('SELECT 5::bigint >= now()');

-- smallint: a cast like integer's and bigint's, refusing negative values
SELECT 5::smallint::snowflake AS from_int2, pg_typeof(5::smallint::snowflake) AS type;
SELECT (-5)::smallint::snowflake;
INSERT INTO te (id, n) VALUES (3::smallint, -1);
SELECT count(*) FROM te WHERE id = 3 AND n = -1;

-- '-0' reads as 0, as bigint reads it; other negative values are refused
SELECT '-0'::snowflake AS minus_zero, '-000'::snowflake AS minus_zeros, '-0'::bigint AS bigint_reads;
SELECT '-1'::snowflake;
SELECT '-'::snowflake;

-- a converted column keeps its queries: COALESCE(max(id), 0) and the rest
CREATE TABLE te_conv (id bigserial PRIMARY KEY, v text);
INSERT INTO te_conv (v) VALUES ('a'), ('b');
SELECT snowflake_convert_column('te_conv', 'id', as_type => true);
INSERT INTO te_conv (v) VALUES ('c');
SELECT pg_typeof(coalesce(max(id), 0)) AS coalesce, json_typeof(to_json(coalesce(max(id), 0))) AS json,
       count(*) FILTER (WHERE id = greatest(id, 1)) AS greatest
FROM te_conv;

-- smallint and integer keys convert with as_type (the new type holds the
-- IDs); without it they are refused as before (a bigint ID does not fit)
CREATE TABLE te_small (id smallserial PRIMARY KEY, v text);
INSERT INTO te_small (v) VALUES ('a'), ('b');
CREATE TABLE te_int (id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v text);
INSERT INTO te_int (v) VALUES ('a'), ('b');
SELECT snowflake_convert_column('te_small', 'id');
SELECT snowflake_convert_column('te_small', 'id', as_type => true);
SELECT snowflake_convert_column('te_int', 'id', as_type => true);
INSERT INTO te_small (v) VALUES ('c');
INSERT INTO te_int (v) VALUES ('c');
SELECT t, format_type(a.atttypid, NULL) AS type, pg_get_expr(d.adbin, d.adrelid) AS default_expr,
       a.attidentity AS identity,
       (SELECT count(*) FROM pg_depend dep JOIN pg_class c ON c.oid = dep.objid AND c.relkind = 'S'
        WHERE dep.refobjid = t AND dep.classid = 'pg_class'::regclass) AS sequences
FROM unnest(ARRAY['te_small', 'te_int']::regclass[]) t
JOIN pg_attribute a ON a.attrelid = t AND a.attname = 'id'
LEFT JOIN pg_attrdef d ON d.adrelid = t AND d.adnum = a.attnum;
SELECT 'te_small' AS t, count(*) FILTER (WHERE v = 'c' AND snowflake_shard_id(id) = 42
                                      AND id >= snowflake_min_id(now() - interval '1 hour')) AS new_ids,
       count(*) FILTER (WHERE v <> 'c' AND id IN (1, 2)) AS kept
FROM te_small
UNION ALL
SELECT 'te_int', count(*) FILTER (WHERE v = 'c' AND snowflake_shard_id(id) = 42
                                  AND id >= snowflake_min_id(now() - interval '1 hour')),
       count(*) FILTER (WHERE v <> 'c' AND id IN (1, 2))
FROM te_int;

DROP TABLE te, te_old, te_conv, te_small, te_int;
DROP FUNCTION te_expr(text), te_plan(text), te_error(text);
