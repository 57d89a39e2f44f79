--
-- type: the snowflake type (issue 28): decimal text, JSON strings, casts,
-- the index and partition pruning for "=" and for time comparisons, answers
-- equal to filtering on snowflake_timestamp(id) around unit boundaries, and
-- the same time filters for bigint columns
--
\set SHOW_CONTEXT never
SET timezone = 'UTC';
SET intervalstyle = 'postgres';

-- the tables a query scans and the partitions pruned at executor start-up,
-- from EXPLAIN's JSON (stable across versions, unlike its text with ANALYZE)
CREATE FUNCTION sf_scans(query text, run boolean DEFAULT false,
                         OUT scanned text, OUT removed_at_start integer)
LANGUAGE plpgsql AS $$
DECLARE
    plan jsonb;
BEGIN
    EXECUTE format('EXPLAIN (FORMAT JSON, COSTS OFF%s) %s',
                   CASE WHEN run THEN ', ANALYZE, TIMING OFF, SUMMARY OFF' ELSE '' END, query)
        INTO plan;
    SELECT string_agg(r #>> '{}', ', ' ORDER BY r #>> '{}') INTO scanned
    FROM jsonb_path_query(plan, 'strict $.**."Relation Name"') r;
    SELECT sum((x #>> '{}')::int) INTO removed_at_start
    FROM jsonb_path_query(plan, 'strict $.**."Subplans Removed"') x;
END $$;

-- text: decimal digits only, never negative, at most the largest bigint
SELECT '0'::snowflake AS zero, '384004287098785976'::snowflake AS id,
       '9223372036854775807'::snowflake AS largest, '000123'::snowflake AS leading_zeros;
SELECT ''::snowflake;
SELECT 'abc'::snowflake;
SELECT ' 1'::snowflake;
SELECT '+1'::snowflake;
SELECT '1.0'::snowflake;
SELECT '-1'::snowflake;
SELECT '9223372036854775808'::snowflake;
SELECT pg_typeof('1'::snowflake), 'snowflake'::regtype::oid <> 'bigint'::regtype::oid AS own_type;
SELECT typlen, typbyval, typcategory, typalign FROM pg_type WHERE oid = 'snowflake'::regtype;

-- casts: bigint on assignment, integer and smallint implicitly (1.3, issue
-- 33; see typeexpr), refusing negative values; to bigint implicitly
SELECT 5::snowflake AS from_int4, 5::bigint::snowflake AS from_int8, snowflake(7) AS by_name;
SELECT (-1)::bigint::snowflake;
SELECT (-1)::snowflake;
SELECT '42'::snowflake + 1 AS bigint_arithmetic, pg_typeof('42'::snowflake + 1) AS arithmetic_type,
       '42'::snowflake::bigint AS to_bigint, '42'::snowflake::text AS to_text;

-- binary form: int8's, byte for byte
SELECT snowflake_send('384004287098785976') = int8send(384004287098785976) AS same_wire_format;

CREATE TABLE sf_items (id snowflake PRIMARY KEY DEFAULT snowflake_nextval(), n integer);
INSERT INTO sf_items (n) SELECT g FROM generate_series(1, 2000) g;
INSERT INTO sf_items (id, n) VALUES (7, 0);   -- an integer on assignment
INSERT INTO sf_items (id, n) VALUES (-7, 0);
ANALYZE sf_items;

-- the decoders and bigint functions take the type as it is
SELECT count(*) FILTER (WHERE snowflake_shard_id(id) = 42) AS shard_42,
       count(*) FILTER (WHERE snowflake_timestamp(id) <= now()) AS decoded,
       count(*) FILTER (WHERE snowflake_from_text(snowflake_to_text(id)) = id) AS text_form
FROM sf_items WHERE n > 0;

-- JSON: a string, equal to the ID's decimal text, from every builder
SELECT json_typeof(to_json(id)) AS to_json, jsonb_typeof(to_jsonb(id)) AS to_jsonb,
       json_typeof(row_to_json(i)->'id') AS row_to_json,
       json_typeof(json_build_object('id', id)->'id') AS json_build_object,
       to_json(id)#>>'{}' = id::text AS exact
FROM sf_items i WHERE n = 1;
SELECT json_typeof(a->0) AS json_agg, jsonb_typeof(b->0) AS jsonb_agg,
       json_array_length(a) AS ids,
       (SELECT bool_and(e #>> '{}' = i.id::text) FROM json_array_elements(a) WITH ORDINALITY x(e, k)
        JOIN (SELECT id, row_number() OVER (ORDER BY id) AS k FROM sf_items WHERE n > 0) i USING (k)) AS exact
FROM (SELECT json_agg(id ORDER BY id) AS a, jsonb_agg(id ORDER BY id) AS b FROM sf_items WHERE n > 0) s;
-- min() and max() stay snowflakes
SELECT pg_typeof(max(id)) AS max_type, json_typeof(to_json(max(id))) AS max_json,
       max(id) = (SELECT id FROM sf_items ORDER BY id DESC LIMIT 1) AS max_ok,
       min(id) = 7 AS min_ok
FROM sf_items;
-- a bigint is a number (what loses digits in JavaScript)
SELECT json_typeof(to_json(id::bigint)) AS bigint_in_json FROM sf_items WHERE n = 1;

-- "=": an int8 literal, an int4 literal, a quoted literal, a smallint and a
-- bigint or integer parameter all resolve to an operator of the type's btree
-- family: an Index Cond on the primary key
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT * FROM sf_items WHERE id = 384004287098785976;
EXPLAIN (COSTS OFF) SELECT * FROM sf_items WHERE id = 7;
EXPLAIN (COSTS OFF) SELECT * FROM sf_items WHERE id = '384004287098785976';
EXPLAIN (COSTS OFF) SELECT * FROM sf_items WHERE id = 7::smallint;
EXPLAIN (COSTS OFF) SELECT * FROM sf_items WHERE id = ANY ('{1,2,3}'::bigint[]);
SET plan_cache_mode = force_generic_plan;
PREPARE by_bigint(bigint) AS SELECT n FROM sf_items WHERE id = $1;
EXPLAIN (COSTS OFF) EXECUTE by_bigint(7);
EXECUTE by_bigint(7);
PREPARE by_int(integer) AS SELECT n FROM sf_items WHERE id = $1;
EXPLAIN (COSTS OFF) EXECUTE by_int(7);
RESET plan_cache_mode;
SELECT n FROM sf_items WHERE id = 7;
SELECT n FROM sf_items WHERE id = 7::bigint;
SELECT n FROM sf_items WHERE id IN (7, 8, 9);
SELECT n FROM sf_items WHERE 7 = id;

-- time: "id >= t" (created at or after), "id < t" (before): an Index Cond,
-- with a constant and with now()
EXPLAIN (COSTS OFF) SELECT * FROM sf_items WHERE id >= timestamptz '2026-01-01' AND id < timestamptz '2026-02-01';
EXPLAIN (COSTS OFF) SELECT * FROM sf_items WHERE id >= now() - interval '1 day';
EXPLAIN (COSTS OFF) SELECT * FROM sf_items WHERE now() - interval '1 day' <= id;
RESET enable_seqscan;
RESET enable_bitmapscan;
SELECT count(*) AS last_day FROM sf_items WHERE id >= now() - interval '1 day';
SELECT count(*) AS future FROM sf_items WHERE id >= now() + interval '1 day';
-- a time never equals an ID
-- (terse: the hint's wording differs between major versions)
\set VERBOSITY terse
SELECT count(*) FROM sf_items WHERE id = now();
\set VERBOSITY default

-- Exactly snowflake_timestamp(id) compared with t, at and around unit
-- boundaries: IDs at both ends of units near a boundary, times from 1 ms
-- before to 1 ms after it, to the microsecond
CREATE TEMP TABLE sf_times AS
SELECT timestamptz '2026-03-01 12:00:00' + d * interval '1 microsecond' AS t
FROM unnest(ARRAY[-2000, -1001, -1000, -999, -500, -1, 0, 1, 500, 999, 1000, 1001, 2000]) d;
CREATE TEMP TABLE sf_ids AS
SELECT DISTINCT x::snowflake AS id
FROM sf_times, LATERAL (VALUES (snowflake_min_id(t)), (snowflake_min_id(t) + 1), (snowflake_max_id(t)),
                               (snowflake_max_id(t) - 1), (snowflake_min_id(t, 5) + 17)) v(x);
SELECT count(*) AS pairs,
       count(*) FILTER (WHERE (id >= t) IS DISTINCT FROM (snowflake_timestamp(id) >= t)) AS ge_differs,
       count(*) FILTER (WHERE (id > t) IS DISTINCT FROM (snowflake_timestamp(id) >= t)) AS gt_differs,
       count(*) FILTER (WHERE (id < t) IS DISTINCT FROM (snowflake_timestamp(id) < t)) AS lt_differs,
       count(*) FILTER (WHERE (id <= t) IS DISTINCT FROM (snowflake_timestamp(id) < t)) AS le_differs,
       count(*) FILTER (WHERE (t <= id) IS DISTINCT FROM (snowflake_timestamp(id) >= t)) AS commuted_differs,
       count(*) FILTER (WHERE snowflake_created_after(id::bigint, t) IS DISTINCT FROM (snowflake_timestamp(id) >= t)) AS after_differs,
       count(*) FILTER (WHERE snowflake_created_before(id::bigint, t) IS DISTINCT FROM (snowflake_timestamp(id) < t)) AS before_differs,
       count(*) FILTER (WHERE snowflake_created_after(id, t) IS DISTINCT FROM (snowflake_timestamp(id) >= t)) AS type_after_differs,
       count(*) FILTER (WHERE id >= t) > 0 AND count(*) FILTER (WHERE id < t) > 0 AS both_sides
FROM sf_ids, sf_times;
-- the bound itself: the first ID at or after t
SELECT count(*) FILTER (WHERE snowflake_time_bound(t) <> CASE WHEN snowflake_min_id(t) = snowflake_min_id(t - interval '1 microsecond')
                                                           THEN snowflake_max_id(t) + 1 ELSE snowflake_min_id(t) END) AS bound_differs
FROM sf_times;

-- outside the layout: before the epoch every ID is at or after, nothing is
-- before; the type's comparisons take any time, snowflake_time_bound() ends
-- with the layout
SELECT count(*) FILTER (WHERE id >= timestamptz '1999-01-01') = count(*) AS all_after_1999,
       count(*) FILTER (WHERE id < timestamptz '1999-01-01') AS before_1999,
       count(*) FILTER (WHERE id >= timestamptz '-infinity') = count(*) AS all_after_minus_infinity,
       count(*) FILTER (WHERE id < timestamptz 'infinity') = count(*) AS all_before_infinity,
       count(*) FILTER (WHERE id >= timestamptz '3000-01-01') AS after_3000,
       count(*) FILTER (WHERE snowflake_created_before(id::bigint, '1999-01-01')) AS bigint_before_1999
FROM sf_items;
SELECT snowflake_time_bound('1999-01-01') AS bound_before_epoch, snowflake_time_bound('-infinity') AS bound_minus_infinity;
SELECT snowflake_time_bound('3000-01-01');
SELECT snowflake_time_bound('infinity');

-- hash and merge: DISTINCT, GROUP BY, joins with bigint, NOT IN
CREATE TABLE sf_refs (item_id bigint);
INSERT INTO sf_refs SELECT id FROM sf_items WHERE n % 10 = 0;
ANALYZE sf_refs;
SELECT count(DISTINCT id) = count(*) AS distinct_ok FROM sf_items;
SELECT count(*) FROM (SELECT id FROM sf_items GROUP BY id) g;
SET enable_mergejoin = off;
SET enable_nestloop = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM sf_items JOIN sf_refs ON id = item_id;
SELECT count(*) FROM sf_items JOIN sf_refs ON id = item_id;
RESET enable_mergejoin;
RESET enable_nestloop;
SELECT count(*) FROM sf_items WHERE id NOT IN (SELECT item_id FROM sf_refs);
SELECT count(*) FROM sf_refs WHERE item_id NOT IN (SELECT id FROM sf_items);
SELECT count(*) FROM sf_items i1 JOIN sf_items i2 USING (id);
-- a bigint foreign key to a key of the type cannot be implemented (the
-- type's btree family does not hold bigint's own order); a column of the
-- type can reference a key of the type or a bigint key
\set VERBOSITY terse
ALTER TABLE sf_refs ADD FOREIGN KEY (item_id) REFERENCES sf_items (id);
\set VERBOSITY default
CREATE TABLE sf_child (item_id snowflake REFERENCES sf_items (id));
INSERT INTO sf_child SELECT id FROM sf_items WHERE n = 1;
CREATE TABLE sf_bigint_keys (id bigint PRIMARY KEY);
INSERT INTO sf_bigint_keys SELECT id FROM sf_items WHERE n = 1;
CREATE TABLE sf_child2 (key_id snowflake REFERENCES sf_bigint_keys (id));
INSERT INTO sf_child2 SELECT id FROM sf_items WHERE n = 1;
INSERT INTO sf_child2 VALUES (5);
DROP TABLE sf_child, sf_child2, sf_bigint_keys;

-- a bigint key becomes a key of the type with ALTER COLUMN ... TYPE
CREATE TABLE sf_convert (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), n integer);
INSERT INTO sf_convert (n) SELECT g FROM generate_series(1, 100) g;
CREATE TEMP TABLE sf_convert_before AS SELECT id, n FROM sf_convert;
ALTER TABLE sf_convert ALTER COLUMN id TYPE snowflake;
INSERT INTO sf_convert (n) VALUES (101);
SELECT format_type(atttypid, atttypmod) AS type,
       (SELECT count(*) FROM sf_convert c JOIN sf_convert_before b ON c.id = b.id AND c.n = b.n) AS kept,
       (SELECT count(*) FROM sf_convert WHERE id >= now() - interval '1 hour') AS recent
FROM pg_attribute WHERE attrelid = 'sf_convert'::regclass AND attname = 'id';
DROP TABLE sf_convert;

-- operator classes: btree (default), hash, BRIN minmax with time
CREATE INDEX sf_items_brin ON sf_items USING brin (id);
SET enable_seqscan = off;
SET enable_indexscan = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM sf_items WHERE id >= timestamptz '2026-01-01';
SELECT count(*) = (SELECT count(*) FROM sf_items WHERE snowflake_timestamp(id) >= '2026-01-01') AS brin_exact
FROM sf_items WHERE id >= timestamptz '2026-01-01';
RESET enable_seqscan;
RESET enable_indexscan;
DROP INDEX sf_items_brin;
CREATE TABLE sf_hashed (id snowflake) PARTITION BY HASH (id);
CREATE TABLE sf_hashed_0 PARTITION OF sf_hashed FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE sf_hashed_1 PARTITION OF sf_hashed FOR VALUES WITH (MODULUS 2, REMAINDER 1);
INSERT INTO sf_hashed SELECT id FROM sf_items;
SELECT count(*) = (SELECT count(*) FROM sf_items) AS all_routed,
       (SELECT count(*) FROM sf_hashed_0) > 0 AND (SELECT count(*) FROM sf_hashed_1) > 0 AS both_used
FROM sf_hashed;
DROP TABLE sf_hashed;

-- Partition pruning: three monthly partitions on a key of the type; a time
-- range of one month scans that partition alone (at plan time for constants)
CREATE TABLE sf_events (id snowflake PRIMARY KEY, note text) PARTITION BY RANGE (id);
CREATE TABLE sf_events_jan PARTITION OF sf_events
    FOR VALUES FROM (snowflake_min_id('2026-01-01')) TO (snowflake_min_id('2026-02-01'));
CREATE TABLE sf_events_feb PARTITION OF sf_events
    FOR VALUES FROM (snowflake_min_id('2026-02-01')) TO (snowflake_min_id('2026-03-01'));
CREATE TABLE sf_events_mar PARTITION OF sf_events
    FOR VALUES FROM (snowflake_min_id('2026-03-01')) TO (snowflake_min_id('2026-04-01'));
INSERT INTO sf_events SELECT snowflake_min_id(d) + 3, 'x'
FROM generate_series(timestamptz '2026-01-01', '2026-03-31', '1 day') d;
-- (a constant time becomes the first ID at or after it, here the bounds of
-- the partition, so the partition that ends where February begins is pruned)
SELECT snowflake_time_bound('2026-02-01') = snowflake_min_id('2026-02-01') AS feb_bound,
       snowflake_time_bound('2026-03-01') = snowflake_min_id('2026-03-01') AS mar_bound;
SELECT * FROM sf_scans($$SELECT * FROM sf_events WHERE id >= timestamptz '2026-02-01' AND id < timestamptz '2026-03-01'$$);
SELECT * FROM sf_scans($$SELECT * FROM sf_events WHERE id >= timestamptz '2026-02-01 00:00:00.0005' AND id < timestamptz '2026-02-28'$$);
SELECT * FROM sf_scans($$SELECT * FROM sf_events WHERE snowflake_created_between(id, '2026-02-01', '2026-03-01')$$);
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT * FROM sf_events WHERE id >= timestamptz '2026-02-01' AND id < timestamptz '2026-03-01';
RESET enable_seqscan;
RESET enable_bitmapscan;
SELECT count(*) AS february FROM sf_events WHERE id >= timestamptz '2026-02-01' AND id < timestamptz '2026-03-01';
SELECT * FROM sf_scans($$SELECT * FROM sf_events WHERE id = 384004287098785976$$);
SELECT * FROM sf_scans($$SELECT * FROM sf_events WHERE id = $$ || snowflake_min_id('2026-03-05'));
-- with a stable time (now()): pruned at executor start-up; three partitions
-- around the current time, of which the last and the next day lie in the
-- middle one
CREATE TABLE sf_recent (id snowflake PRIMARY KEY DEFAULT snowflake_nextval()) PARTITION BY RANGE (id);
CREATE TABLE sf_recent_bigint (id bigint PRIMARY KEY DEFAULT snowflake_nextval()) PARTITION BY RANGE (id);
DO $$
DECLARE
    tbl text;
BEGIN
    FOREACH tbl IN ARRAY ARRAY['sf_recent', 'sf_recent_bigint'] LOOP
        EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (MINVALUE) TO (%s)',
                       tbl || '_past', tbl, snowflake_min_id(now() - interval '7 days'));
        EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%s) TO (%s)',
                       tbl || '_now', tbl, snowflake_min_id(now() - interval '7 days'),
                       snowflake_min_id(now() + interval '7 days'));
        EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%s) TO (MAXVALUE)',
                       tbl || '_future', tbl, snowflake_min_id(now() + interval '7 days'));
        EXECUTE format('INSERT INTO %I DEFAULT VALUES', tbl);
    END LOOP;
END $$;
SELECT * FROM sf_scans($$SELECT count(*) FROM sf_recent
    WHERE id >= now() - interval '1 day' AND id < now() + interval '1 day'$$, run => true);
SELECT count(*) AS recent FROM sf_recent WHERE id >= now() - interval '1 day' AND id < now() + interval '1 day';
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM sf_recent WHERE id >= now() - interval '1 day' AND id < now() + interval '1 day';
RESET enable_seqscan;
RESET enable_bitmapscan;

-- the same for bigint keys: snowflake_created_between() is inlined into ID
-- bounds, so the plans are those of hand-written bounds
CREATE TABLE sf_bigint_events (id bigint PRIMARY KEY, note text) PARTITION BY RANGE (id);
CREATE TABLE sf_bigint_events_jan PARTITION OF sf_bigint_events
    FOR VALUES FROM (snowflake_min_id('2026-01-01')) TO (snowflake_min_id('2026-02-01'));
CREATE TABLE sf_bigint_events_feb PARTITION OF sf_bigint_events
    FOR VALUES FROM (snowflake_min_id('2026-02-01')) TO (snowflake_min_id('2026-03-01'));
CREATE TABLE sf_bigint_events_mar PARTITION OF sf_bigint_events
    FOR VALUES FROM (snowflake_min_id('2026-03-01')) TO (snowflake_min_id('2026-04-01'));
INSERT INTO sf_bigint_events SELECT id, note FROM sf_events;
SELECT * FROM sf_scans($$SELECT * FROM sf_bigint_events WHERE snowflake_created_between(id, '2026-02-01', '2026-03-01')$$);
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT * FROM sf_bigint_events WHERE snowflake_created_between(id, '2026-02-01', '2026-03-01');
RESET enable_seqscan;
RESET enable_bitmapscan;
SELECT count(*) AS february FROM sf_bigint_events WHERE snowflake_created_between(id, '2026-02-01', '2026-03-01');
SELECT count(*) AS before_march FROM sf_bigint_events WHERE snowflake_created_before(id, '2026-03-01');
SELECT * FROM sf_scans($$SELECT count(*) FROM sf_recent_bigint
    WHERE snowflake_created_between(id, now() - interval '1 day', now() + interval '1 day')$$, run => true);
SELECT count(*) AS recent FROM sf_recent_bigint
WHERE snowflake_created_between(id, now() - interval '1 day', now() + interval '1 day');
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT * FROM sf_bigint_events_feb WHERE snowflake_created_after(id, now() - interval '1 day');
RESET enable_seqscan;
RESET enable_bitmapscan;

DROP TABLE sf_items, sf_refs, sf_events, sf_bigint_events, sf_recent, sf_recent_bigint;
DROP FUNCTION sf_scans(text, boolean);

-- snowflake_convert_column(..., as_type => true): a bigserial key becomes a
-- snowflake key with DEFAULT snowflake_nextval(), its rows kept, and JSON
-- built on the server now carries new IDs as strings
CREATE TABLE sf_convert (id bigserial PRIMARY KEY, note text);
INSERT INTO sf_convert (note) VALUES ('a'), ('b');
SELECT snowflake_convert_column('sf_convert', 'id', as_type => true);
SELECT format_type(a.atttypid, a.atttypmod) AS type, pg_get_expr(d.adbin, d.adrelid) AS default
FROM pg_attribute a JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
WHERE a.attrelid = 'sf_convert'::regclass AND a.attname = 'id';
INSERT INTO sf_convert (note) VALUES ('c');
SELECT count(*) AS rows, count(*) FILTER (WHERE id > 2) AS new_rows,
       bool_and(json_typeof(to_json(id)) = 'string') AS json_strings
FROM sf_convert;
-- a negative value cannot become a snowflake: refused, nothing stays
CREATE TABLE sf_convert_neg (id bigserial PRIMARY KEY);
INSERT INTO sf_convert_neg VALUES (-5);
SELECT snowflake_convert_column('sf_convert_neg', 'id', as_type => true);
SELECT format_type(atttypid, atttypmod) AS still FROM pg_attribute
WHERE attrelid = 'sf_convert_neg'::regclass AND attname = 'id';
DROP TABLE sf_convert, sf_convert_neg;
-- as_type only by the table's owner itself: the rewrite evaluates the owner's
-- constraints as the caller, so a superuser is refused too
CREATE ROLE sf_convert_owner;
CREATE TABLE sf_convert_other (id bigserial PRIMARY KEY);
ALTER TABLE sf_convert_other OWNER TO sf_convert_owner;
ALTER SEQUENCE sf_convert_other_id_seq OWNER TO sf_convert_owner;
SELECT snowflake_convert_column('sf_convert_other', 'id', as_type => true);
SELECT format_type(atttypid, atttypmod) AS still FROM pg_attribute
WHERE attrelid = 'sf_convert_other'::regclass AND attname = 'id';
DROP TABLE sf_convert_other;
DROP ROLE sf_convert_owner;
