-- ===========================================================================
-- 50_move.sql: moving a database from the extension to the SQL edition
-- (owner: moves).  docs/moving.md, "Moving to and from the extension".
--
-- snowflake_adopt_database(at_least, allow_future), with the extension's
-- name, argument names and types: after a database that used the extension (or another SQL
-- edition) was restored here, every shard of this SQL edition resumes above
-- the largest ID found, so no ID below one already issued is issued again.
--
-- What it reads:
--   * every bigint column whose DEFAULT calls one of this SQL edition's
--     generators, found through pg_depend on the generators' OIDs (bound at
--     install by snowflake__generators(), whose body is parsed at creation:
--     never by name at run time).  A restored table's "DEFAULT
--     snowflake_nextval()" resolves to this edition's function because the
--     edition is installed before the restore.
--   * only tables (and all their partitions and inheritance children) owned
--     by this edition's owner: it runs as the owner (SECURITY DEFINER), and
--     planning "SELECT max(id)" over another role's table would run that
--     role's index expressions as the owner.  The others are listed in a
--     NOTICE; give their largest ID's time as at_least => ....
--   * at_least: a time the user knows IDs were issued up to, e.g. the
--     extension's high-water mark read on the source just before the dump
--     (IDs issued but never stored are in no table: docs/moving.md).
-- Every value read (and at_least) is bounded: more than max_clock_lead +
-- max_clock_wait ahead of the clock is refused (22023) unless allow_future,
-- as the extension's adopt does, so one far-future row inserted by anyone
-- cannot stop generation.
--
-- How it moves a shard: under the shard's jump lock (the FOR UPDATE of its
-- row in snowflake__shard, 20_generate.sql), it re-reads the cap C; if C's
-- unit is not above the top unit F, it sets S to T = the first value of
-- unit F + 1 of that shard (setval(S, T, false)), then C to T + 2^q: the
-- slow path's jump, in the same order.  Invariant J (20_generate.sql) holds:
-- C only grew before, C's last unit is <= F < F + 1, so T >= every value C
-- ever held; C only grows (T + 2^q > C).  A shard already above F is left
-- alone: only ever up.  The lock is released right after each move, as the
-- slow path releases it.
-- ===========================================================================

DO $install$
BEGIN
EXECUTE pg_catalog.replace($src$
-- The OIDs of this edition's generators: the functions whose calls in a
-- column DEFAULT make the column hold its IDs.  The regprocedure constants
-- are bound at creation (and by name again by a dump's restore, which
-- recreates them with the functions of the restored schema).
CREATE FUNCTION @extschema@.snowflake__generators()
RETURNS oid[]
LANGUAGE sql STABLE PARALLEL SAFE
RETURN ARRAY['@extschema@.snowflake_nextval()'::pg_catalog.regprocedure::pg_catalog.oid,
             '@extschema@.snowflake_nextval(integer)'::pg_catalog.regprocedure::pg_catalog.oid];

CREATE FUNCTION @extschema@.snowflake_adopt_database(
    at_least timestamptz DEFAULT NULL,
    allow_future boolean DEFAULT false)
RETURNS timestamptz
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
AS $fn$
DECLARE
    cfg @extschema@.snowflake__config;
    me oid := (SELECT r.oid FROM pg_roles r WHERE r.rolname = current_user);  -- the owner (SECURITY DEFINER)
    bits integer;
    limit_ms double precision;              -- Unix ms: clock + lead + wait
    col record;
    sh record;
    m bigint;
    m_ms double precision;
    top_unit bigint;                        -- NULL: nothing found
    u bigint;
    c bigint;
    target bigint;
    checked integer := 0;
    skipped text[] := '{}';
    max_unit bigint;
BEGIN
    IF allow_future IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22004',
            MESSAGE = 'snowflake_adopt_database: allow_future must not be NULL';
    END IF;
    -- no configure while adopting (configure locks this row too)
    SELECT * INTO cfg FROM @extschema@.snowflake__config FOR UPDATE;
    bits := cfg.shard_bits + cfg.sequence_bits;
    max_unit := (1::bigint << (cfg.id_bits - bits)) - 1;
    limit_ms := date_part('epoch', clock_timestamp()) * 1000
                + cfg.max_clock_lead + cfg.max_clock_wait;

    FOR col IN
        SELECT DISTINCT c.oid AS relid, a.attname
          FROM pg_depend d
          JOIN pg_attrdef ad ON d.classid = 'pg_attrdef'::regclass AND ad.oid = d.objid
          JOIN pg_class c ON c.oid = ad.adrelid
          JOIN pg_attribute a ON a.attrelid = ad.adrelid AND a.attnum = ad.adnum
         WHERE d.refclassid = 'pg_proc'::regclass
           AND d.refobjid = ANY (@extschema@.snowflake__generators())
           AND a.atttypid = 'bigint'::regtype AND NOT a.attisdropped
           AND c.relkind IN ('r', 'p')
           AND c.relpersistence <> 't'
         ORDER BY c.oid, a.attname
    LOOP
        -- the rows "SELECT max(...) FROM t" reads: t and its descendants;
        -- each must be the owner's, else planning would run another role's
        -- index expressions and predicates as the owner
        IF EXISTS (WITH RECURSIVE tree(oid) AS (
                       SELECT col.relid
                       UNION
                       SELECT i.inhrelid FROM pg_inherits i JOIN tree t ON i.inhparent = t.oid)
                   SELECT 1 FROM tree JOIN pg_class k ON k.oid = tree.oid
                    WHERE k.relowner <> me) THEN
            skipped := skipped || format('%s.%I', col.relid::regclass, col.attname);
            CONTINUE;
        END IF;
        EXECUTE format('SELECT max(%I) FROM %s', col.attname, col.relid::regclass) INTO m;
        checked := checked + 1;
        IF m IS NULL OR m < 0 THEN
            CONTINUE;
        END IF;
        u := m >> bits;
        m_ms := cfg.epoch_ms + u::double precision * cfg.time_unit_ms;
        IF m_ms > limit_ms AND NOT allow_future THEN
            RAISE EXCEPTION USING ERRCODE = '22023',
                MESSAGE = format('the largest snowflake ID in column "%s" of %s is too far ahead of the clock',
                                 col.attname, col.relid::regclass),
                DETAIL = format('Its value %s carries %s, %s ahead of the clock; a floor more than max_clock_lead + max_clock_wait (%s ms) ahead would make every generating call fail until the clock reaches it. Nothing was changed.',
                                m, to_timestamp(m_ms / 1000.0),
                                date_trunc('second', to_timestamp(m_ms / 1000.0) - clock_timestamp()),
                                cfg.max_clock_lead + cfg.max_clock_wait),
                HINT = 'If that row does not hold a real snowflake ID, fix or delete it and run snowflake_adopt_database() again; if IDs really were issued that far ahead, run snowflake_adopt_database(allow_future => true).';
        END IF;
        top_unit := greatest(top_unit, u);
    END LOOP;

    IF at_least IS NOT NULL THEN
        IF NOT isfinite(at_least)
           OR (date_part('epoch', at_least) * 1000 > limit_ms AND NOT allow_future) THEN
            RAISE EXCEPTION USING ERRCODE = '22023',
                MESSAGE = format('snowflake floor %s is too far ahead of the clock', at_least),
                DETAIL = format('A floor more than max_clock_lead + max_clock_wait (%s ms) ahead would make every generating call fail until the clock reaches it. Nothing was changed.',
                                cfg.max_clock_lead + cfg.max_clock_wait),
                HINT = 'Check the value; if IDs really were issued that far ahead, pass allow_future => true.';
        END IF;
        -- the unit holding at_least's millisecond (earlier than the epoch: none)
        u := pg_catalog.floor((date_part('epoch', at_least) * 1000 - cfg.epoch_ms) / cfg.time_unit_ms)::bigint;
        IF u >= 0 THEN
            top_unit := greatest(top_unit, u);
        END IF;
    END IF;

    IF skipped <> '{}' THEN
        RAISE NOTICE USING
            MESSAGE = format('snowflake: skipped %s column(s) of tables not owned by %s: %s',
                             cardinality(skipped), current_user, array_to_string(skipped, ', ')),
            HINT = 'Reading them as the owner would run their owners'' index expressions. Find their largest ID''s time yourself and pass it as snowflake_adopt_database(at_least => ...).';
    END IF;

    IF top_unit IS NOT NULL THEN
        IF top_unit >= max_unit THEN
            RAISE EXCEPTION USING ERRCODE = '22008',
                MESSAGE = 'cannot adopt: the largest ID found is in the last unit of the timestamp field',
                DETAIL = format('This layout represents times up to %s.',
                                to_timestamp((cfg.epoch_ms + max_unit * cfg.time_unit_ms) / 1000.0));
        END IF;
        FOR sh IN SELECT s.shard_id, s.seq, s.cap FROM @extschema@.snowflake__shard s ORDER BY s.shard_id LOOP
            -- the slow path's jump, under the same lock, released at once
            BEGIN
                PERFORM 1 FROM @extschema@.snowflake__shard s WHERE s.shard_id = sh.shard_id FOR UPDATE;
                c := coalesce(pg_sequence_last_value(sh.cap), 0);
                IF c = 0 OR ((c - 1) >> bits) <= top_unit THEN
                    target := ((top_unit + 1) << bits) | (sh.shard_id::bigint << cfg.sequence_bits);
                    PERFORM setval(sh.seq, target, false);                          -- first S ...
                    PERFORM setval(sh.cap, target + (1::bigint << cfg.sequence_bits)); -- ... then C
                END IF;
                RAISE SQLSTATE 'SFJ01';
            EXCEPTION WHEN SQLSTATE 'SFJ01' THEN
                NULL;   -- the lock is released; the setvals stay
            END;
        END LOOP;
    END IF;

    RAISE NOTICE '%', format('snowflake: checked %s column(s); this database now generates above %s',
                             checked,
                             CASE WHEN top_unit IS NULL THEN 'the clock (no IDs found)'
                                  ELSE to_timestamp((cfg.epoch_ms + top_unit * cfg.time_unit_ms) / 1000.0)::text END);
    IF top_unit IS NULL THEN
        RETURN NULL;
    END IF;
    RETURN to_timestamp((cfg.epoch_ms + top_unit * cfg.time_unit_ms) / 1000.0);
END
$fn$;
$src$, '@extschema@', pg_catalog.quote_ident(pg_catalog.current_schema()));
END
$install$;

REVOKE ALL ON FUNCTION snowflake__generators() FROM PUBLIC;
-- the owner alone adopts (others: 42501), as the extension's is revoked
REVOKE ALL ON FUNCTION snowflake_adopt_database(timestamptz, boolean) FROM PUBLIC;

COMMENT ON FUNCTION snowflake_adopt_database(timestamptz, boolean) IS
'after a restore: resumes every shard above the largest ID in bigint columns defaulting to this edition''s generators (tables of the owner; others listed) and above at_least; refuses a floor more than max_clock_lead + max_clock_wait ahead unless allow_future';
