-- ===========================================================================
-- 20_generate.sql: generation in the SQL edition (owner: sqled):
-- snowflake_nextval(), snowflake_nextval(shard_id), the batches, and the
-- slow path that moves a shard to a new time unit or waits for the clock.
--
-- DESIGN
--
-- Each shard has two sequences (10_config.sql, snowflake__shard):
--   S, whose values ARE the IDs: (unit << (shard_bits + sequence_bits)) |
--      (shard << sequence_bits) | seq.  Within a unit S counts up by one;
--      moving to another unit is a jump (setval), done by the slow path.
--   C, the cap: the first value of S that may NOT be issued.  The slow path
--      sets it to the end of the unit it moved S into, so the fast path
--      never issues a value past its unit's sequence space (which would be
--      the next shard's field).
--
-- The fast path, generated per shard with the constants and the sequences'
-- OIDs inlined (SQL-standard body: bound by OID at creation, and inlined
-- into the caller's query, so a call costs its expression only):
--
--   CASE WHEN pg_sequence_last_value(C)                        -- (1)
--             > GREATEST(nextval(S),                             -- (2)
--                        <clock in units - lag - 1> * 2^(shard_bits+sequence_bits))  -- (3)
--        THEN lastval()                                        -- the value of (2)
--        ELSE snowflake__nextval_slow(shard) END
--
-- that is: v < C and (3) < C.  (1) reads C, then (2) draws v from S: the
-- operands of ">" are evaluated left to right, so C is read before v is
-- drawn.  An accepted v lies in C's unit (v < C, and S is never below the
-- first value of C's unit once C is set: S is moved first, C after, and
-- every later jump moves S to at least C), so testing C against the clock
-- tests v's unit: (3) rejects a v whose
-- unit lags the clock by more than lag = max_clock_lead (S lags when fewer
-- IDs are drawn than the clock's units hold, or after idle time), so an
-- ID's time is within max_clock_lead of the clock either way (plus one unit
-- behind: the test compares in floating point, against the clock's
-- fractional unit).  Tying the lag to the lead keeps the extension's one
-- bound on decoded times, and keeps the slow path rare: at low rates a
-- shard jumps to the clock once per lead, not once per call.  lastval() is
-- this session's last nextval(): v, without drawing again (nextval cannot
-- appear twice: a volatile argument used twice stops the inlining, and it
-- would draw twice).  Everything else goes to the slow path.  Evaluation
-- order: PostgreSQL's executor evaluates an operator's arguments in order,
-- and the planner does not reorder them inside a CASE.
--
-- The slow path (snowflake__nextval_slow, SECURITY DEFINER: the only code
-- that calls setval, which no other role may) takes the same test with a
-- fresh v; if it fails, it chooses the unit u to move to: the clock's unit,
-- or the one after C's unit if that is later (a burst used C's unit up).  If
-- u is beyond the clock + max_clock_lead it waits (pg_sleep, answering
-- cancel) up to max_clock_wait in all, then fails with SQLSTATE 58000 as the
-- extension does.  Else it takes the shard's jump lock (a FOR UPDATE of the
-- shard's row in snowflake__shard, which only the owner may lock), re-reads
-- C, and if C is unchanged (else someone jumped: it just retries):
--     setval(S, T, false)   with T = the first value of unit u (T >= C)
--     setval(C, T + 2^sequence_bits)
-- in that order, then leaves the lock at once: the lock is taken inside a
-- BEGIN ... EXCEPTION block that ends by raising a private SQLSTATE it
-- catches itself, and the abort of that subtransaction releases the row
-- lock; setval is not transactional, so S and C stay moved.  A long
-- transaction that jumped once does not hold the jump lock until it ends.
--
-- WHY NO VALUE IS ISSUED TWICE (also in docs/managed.md)
--
-- Facts relied on: nextval and setval on one sequence are atomic (each
-- under the sequence page's buffer lock), nextval never returns the same
-- value twice unless a setval moved the sequence back in between, and S and
-- C are moved by setval only in the slow path, under the jump lock.
--
-- Invariant J: every setval(S, T) stores T >= every value C ever held
-- before it.  Proof: C only grows (each jump sets it to T + 2^q > T >= the C
-- it read under the lock), only jumpers set it, one at a time, and a jumper
-- computes T from the C it re-read under the lock, which is the largest C so
-- far; T >= C because u > C's unit (u is at least C's unit + 1, or the
-- clock's unit when S lags, which is later still) and T is the first value
-- of unit u.
--
-- Claim: no value is issued twice.  A value v is issued only if v < c, c
-- being the value of C that the same call read BEFORE drawing v (test (1);
-- the slow path uses the same test).  Suppose v were issued twice: S handed
-- out v, then a setval(S, T) with T <= v moved S back below v (nothing else
-- moves S down), then S handed out v again.  The first draw of v came after
-- its call read c, and before that setval, so c is a value C held before
-- the setval: by J, T >= c > v, a contradiction.  So no interleaving of
-- sessions, and nothing done between reading S and moving it (a jumper
-- reads no S at all: it only relies on C), can issue a value twice.
--
-- What a hostile role can do: any role allowed to generate holds USAGE on S
-- (the inlined fast path runs with the caller's rights), so it may call
-- nextval(S) directly, as fast as it likes.  That only burns values: a value
-- drawn outside the test is never issued by us, and the proof above does not
-- count draws.  Burning past C sends the other sessions to the slow path,
-- which jumps S to a fresh unit (possibly below the burnt values: they were
-- never issued, and J still holds).  It cannot setval (no UPDATE), take the
-- jump lock (no UPDATE on snowflake__shard), or move C (no USAGE on C).
--
-- IDs of a shard increase in the order they are drawn: within a unit S
-- counts up; a jump moves S to T >= C > every value issued before it.
--
-- Crashes and standbys: nextval and setval are WAL-logged (nextval ahead by
-- 32 values, so S restarts above what it handed out), and S, C and their
-- changes are replayed by crash recovery and by standbys.  A transaction
-- that stored an ID (it wrote a row, so it has a transaction ID) flushes at
-- commit all WAL inserted before its commit record: the nextval that drew
-- the ID and the setvals of C and S that the call had read before.  With
-- synchronous replication that WAL reached the standby before the commit
-- returned.  So after a crash (pg_ctl -m immediate) or the promotion of a
-- synchronous standby, S and C are at least where they were when any
-- committed ID was drawn, and by the claim above no committed ID is issued
-- again.  As with native sequences, an ID returned by a transaction that
-- neither committed nor had its WAL flushed (a bare SELECT
-- snowflake_nextval() with synchronous_commit = off, or a crash before
-- the flush) may be issued again after the crash: it was never stored.
--
-- The clock: it is only read to choose the unit of a jump and to reject
-- lagging values; uniqueness never depends on it.  Set back by seconds, S
-- stays ahead: the current unit's values are still issued (at most
-- 2^sequence_bits of them), then the next unit is beyond the clock + lead,
-- so calls wait, then fail with the extension's SQLSTATE (58000).
-- ===========================================================================

DO $install$
BEGIN
EXECUTE pg_catalog.replace($src$
-- The slow path of every generator: see DESIGN above.  Returns the ID, or
-- raises the extension's errors: shard not set or not assigned (55000),
-- clock beyond the lead for longer than max_clock_wait (58000), clock before
-- the epoch (58000), timestamp field used up (22008).
CREATE FUNCTION @extschema@.snowflake__nextval_slow(shard integer)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    cfg @extschema@.snowflake__config;
    sh @extschema@.snowflake__shard;
    q integer;              -- sequence bits
    w bigint;               -- values per unit in S: 2^(shard_bits + q)
    lead_units bigint;
    max_unit bigint;
    cap bigint;
    v bigint;
    now_units double precision;
    c bigint;
    u bigint;
    target bigint;
    last_v bigint;
    waited_ms double precision;   -- NULL until the call first waits
    sleep_ms double precision;
BEGIN
    cfg := @extschema@.snowflake__settings();
    IF shard IS NULL AND cfg.shard_id IS NOT NULL THEN
        -- a snowflake_nextval() generated before the configuration was
        -- restored (a pg_tle install after pg_restore: CREATE EXTENSION
        -- recreates it unconfigured)
        RAISE EXCEPTION USING ERRCODE = '55000',
            MESSAGE = 'the SQL edition''s generators are older than its configuration',
            DETAIL = format('The configuration names shard %s, but snowflake_nextval() was generated without a shard, as after a restore of a pg_tle install.', cfg.shard_id),
            HINT = 'Run SELECT snowflake_configure() as the owner to generate the functions again.';
    END IF;
    IF shard IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '55000',
            MESSAGE = 'snowflake.shard_id is not set',
            DETAIL = 'Every database that generates IDs needs a shard ID of its own; the SQL edition keeps it in its configuration table.',
            HINT = format('Choose a shard ID between 0 and %s that no other server or database uses, and run SELECT snowflake_configure(shard_id => ...) as the owner.',
                          (1::bigint << cfg.shard_bits) - 1);
    END IF;
    SELECT * INTO sh FROM @extschema@.snowflake__shard s WHERE s.shard_id = shard;
    IF NOT FOUND OR NOT coalesce(shard = cfg.shard_id OR shard = ANY (cfg.shard_ids), false) THEN
        RAISE EXCEPTION USING ERRCODE = '55000',
            MESSAGE = format('shard %s is not assigned to this database', shard),
            DETAIL = format('This database generates for shard_id (%s) and shard_ids (%s).',
                            coalesce(cfg.shard_id::text, 'not set'), array_to_string(cfg.shard_ids, ', ')),
            HINT = 'Add the shard with snowflake_configure(shard_ids => ...) as the owner.';
    END IF;
    q := cfg.sequence_bits;
    w := 1::bigint << (cfg.shard_bits + q);
    lead_units := cfg.max_clock_lead / cfg.time_unit_ms;
    max_unit := (1::bigint << (cfg.id_bits - cfg.shard_bits - q)) - 1;

    LOOP
        -- the fast path's test, with a fresh value: C first, then v
        cap := coalesce(pg_sequence_last_value(sh.cap), 0);
        v := nextval(sh.seq);
        now_units := (date_part('epoch', clock_timestamp()) * 1000 - cfg.epoch_ms) / cfg.time_unit_ms;
        IF v < cap AND least((now_units - lead_units - 1) * w, 9.2e18) < cap THEN
            RETURN v;
        END IF;
        IF now_units < 0 THEN
            RAISE EXCEPTION USING ERRCODE = '58000',
                MESSAGE = 'could not generate a snowflake ID: the clock reads earlier than the epoch',
                DETAIL = format('The epoch is %s and the clock reads %s.',
                                to_timestamp(cfg.epoch_ms / 1000.0), clock_timestamp()),
                HINT = 'Check the server''s time synchronisation, or the epoch in snowflake_configure().';
        END IF;
        c := floor(now_units)::bigint;
        -- the unit to move to: the clock's, or the one after C's if later
        u := CASE WHEN cap = 0 THEN c ELSE greatest(c, ((cap - 1) >> (cfg.shard_bits + q)) + 1) END;
        IF u > max_unit THEN
            RAISE EXCEPTION USING ERRCODE = '22008',
                MESSAGE = 'could not generate a snowflake ID: the timestamp field is used up',
                DETAIL = format('This layout represents times up to %s.',
                                to_timestamp((cfg.epoch_ms + max_unit * cfg.time_unit_ms) / 1000.0));
        END IF;
        IF u > c + lead_units THEN
            -- beyond the lead (a burst, or the clock set back): wait
            -- the time waited is the sum of the sleeps (pg_sleep runs on
            -- the monotonic clock), so a wall clock that steps again during
            -- the wait neither stretches nor cuts it
            IF waited_ms IS NULL THEN
                waited_ms := 0;
                PERFORM nextval(sh.waits);
            END IF;
            IF waited_ms >= cfg.max_clock_wait THEN
                PERFORM nextval(sh.refusals);
                RAISE EXCEPTION USING ERRCODE = '58000',
                    MESSAGE = format('could not generate a snowflake ID: IDs are %s ms ahead of the clock',
                                     ((u - now_units) * cfg.time_unit_ms)::bigint),
                    DETAIL = format('IDs of this shard have reached %s. They may run ahead of the clock by at most max_clock_lead (%s ms), and this call waited max_clock_wait (%s ms) for it to catch up. Either more than %s IDs per millisecond were requested for that long, or the clock was set back.',
                                    to_timestamp((cfg.epoch_ms + u * cfg.time_unit_ms) / 1000.0),
                                    cfg.max_clock_lead, cfg.max_clock_wait,
                                    (1::bigint << q) / cfg.time_unit_ms),
                    HINT = 'Check the server''s time synchronisation, or raise max_clock_wait or max_clock_lead with snowflake_configure().';
            END IF;
            sleep_ms := least(cfg.max_clock_wait - waited_ms,
                              greatest(1, (u - lead_units - now_units) * cfg.time_unit_ms));
            PERFORM pg_sleep(sleep_ms / 1000.0);
            waited_ms := waited_ms + sleep_ms;
            CONTINUE;
        END IF;
        -- jump, under the shard's lock, released right after (see DESIGN)
        BEGIN
            PERFORM 1 FROM @extschema@.snowflake__shard s WHERE s.shard_id = shard FOR UPDATE;
            IF coalesce(pg_sequence_last_value(sh.cap), 0) = cap THEN
                target := (u * w) | (shard::bigint << q);
                -- the values drawn in the unit being left, for snowflake_stats
                last_v := pg_sequence_last_value(sh.seq);
                IF cap > 0 AND last_v IS NOT NULL AND last_v >= cap - (1::bigint << q) THEN
                    PERFORM setval(sh.issued, coalesce(pg_sequence_last_value(sh.issued), 0)
                                              + least(last_v, cap - 1) - (cap - (1::bigint << q)) + 1);
                END IF;
                PERFORM setval(sh.seq, target, false);          -- first S ...
                PERFORM setval(sh.cap, target + (1::bigint << q));  -- ... then C
                PERFORM nextval(sh.jumps);
            END IF;
            RAISE SQLSTATE 'SFJ01';
        EXCEPTION WHEN SQLSTATE 'SFJ01' THEN
            NULL;   -- the lock is released; the setvals stay
        END;
    END LOOP;
END
$fn$;

-- The fast path of one shard, as SQL text (see DESIGN).
CREATE FUNCTION @extschema@.snowflake__fast_path(cfg @extschema@.snowflake__config, shard integer)
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    sh @extschema@.snowflake__shard;
    w double precision := (1::bigint << (cfg.shard_bits + cfg.sequence_bits))::double precision;
BEGIN
    SELECT * INTO STRICT sh FROM @extschema@.snowflake__shard s WHERE s.shard_id = shard;
    -- v >= (now_units - lag - 1) * w, now_units = (seconds * 1000 - epoch_ms) / unit,
    -- lag = the lead in units
    RETURN format($$CASE WHEN pg_catalog.pg_sequence_last_value(%s::regclass) > GREATEST(pg_catalog.nextval(%s::regclass),
                  LEAST(pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) * %s::double precision - %s::double precision,
                        '9.2e18'::double precision)::bigint)
             THEN pg_catalog.lastval()
             ELSE %s.snowflake__nextval_slow(%s) END$$,
        quote_literal(sh.cap::oid::regclass::text), quote_literal(sh.seq::oid::regclass::text),
        -- quoted: a float8 constant in the stored body, not a cast of a
        -- numeric one (a smaller body inlines faster: planning counts)
        quote_literal((1000.0 * w / cfg.time_unit_ms)::double precision),
        quote_literal(((cfg.epoch_ms::double precision / cfg.time_unit_ms + cfg.max_clock_lead / cfg.time_unit_ms + 1) * w)::double precision),
        '@extschema@', shard);
END
$fn$;

-- (Re)creates the generators from the configuration: snowflake_nextval()
-- for shard_id, snowflake_nextval(shard_id) over shard_id and shard_ids, and
-- the batches.  CREATE OR REPLACE keeps their OIDs and grants.
CREATE FUNCTION @extschema@.snowflake__define_generators()
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    cfg @extschema@.snowflake__config;
    one text;
    cases text := '';
    s integer;
BEGIN
    cfg := @extschema@.snowflake__settings();
    IF cfg.shard_id IS NULL THEN
        one := '@extschema@.snowflake__nextval_slow(NULL)';
    ELSE
        one := @extschema@.snowflake__fast_path(cfg, cfg.shard_id);
    END IF;
    EXECUTE format($$CREATE OR REPLACE FUNCTION %s.snowflake_nextval() RETURNS bigint
        LANGUAGE sql VOLATILE PARALLEL UNSAFE
        RETURN %s$$, '@extschema@', one);

    FOR s IN SELECT DISTINCT x FROM unnest(ARRAY[cfg.shard_id] || cfg.shard_ids) x WHERE x IS NOT NULL ORDER BY x LOOP
        cases := cases || format(' WHEN %s THEN %s', s, @extschema@.snowflake__fast_path(cfg, s));
    END LOOP;
    IF cases = '' THEN
        one := '@extschema@.snowflake__nextval_slow(shard_id)';
    ELSE
        one := format('CASE shard_id%s ELSE %s.snowflake__nextval_slow(shard_id) END', cases, '@extschema@');
    END IF;
    EXECUTE format($$CREATE OR REPLACE FUNCTION %s.snowflake_nextval(shard_id integer) RETURNS bigint
        LANGUAGE sql VOLATILE STRICT PARALLEL UNSAFE
        RETURN %s$$, '@extschema@', one);
END
$fn$;

-- The batch size, checked as the extension checks it.
CREATE FUNCTION @extschema@.snowflake__batch_size(count integer)
RETURNS integer
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
    IF count < 1 OR count > 10000000 THEN
        IF count > 10000000 THEN
            RAISE EXCEPTION USING ERRCODE = '22023',
                MESSAGE = 'batch size must be between 1 and 10000000',
                DETAIL = format('The requested size was %s.', count),
                HINT = 'Split larger loads into several batches.';
        END IF;
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = 'batch size must be between 1 and 10000000',
            DETAIL = format('The requested size was %s.', count);
    END IF;
    RETURN count;
END
$fn$;
$src$, '@extschema@', pg_catalog.quote_ident(pg_catalog.current_schema()));
END
$install$;

REVOKE ALL ON FUNCTION snowflake__fast_path(snowflake__config, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION snowflake__define_generators() FROM PUBLIC;

-- the generators of the initial configuration (no shard yet)
DO $$ BEGIN PERFORM snowflake__define_generators(); END $$;

-- Logical shards: only roles granted EXECUTE, as in the extension.
REVOKE ALL ON FUNCTION snowflake_nextval(integer) FROM PUBLIC;

COMMENT ON FUNCTION snowflake_nextval() IS
'next Snowflake ID of this database''s shard (snowflake_configure(shard_id => ...)): unique, strictly increasing within the shard';
COMMENT ON FUNCTION snowflake_nextval(integer) IS
'next Snowflake ID of a logical shard this database generates for (snowflake_configure(shard_ids => ...))';

-- Batches: each ID goes through snowflake_nextval()'s test (inlined), so
-- every guarantee of single calls holds per ID; the IDs increase, but are
-- not consecutive when other sessions draw at the same time.
CREATE FUNCTION snowflake_nextval_batch(count integer)
RETURNS SETOF bigint
LANGUAGE sql VOLATILE STRICT PARALLEL UNSAFE ROWS 1000
BEGIN ATOMIC
    SELECT snowflake_nextval() FROM pg_catalog.generate_series(1, snowflake__batch_size(count));
END;

CREATE FUNCTION snowflake_nextval_batch(count integer, shard_id integer)
RETURNS SETOF bigint
LANGUAGE sql VOLATILE STRICT PARALLEL UNSAFE ROWS 1000
BEGIN ATOMIC
    SELECT snowflake_nextval(shard_id) FROM pg_catalog.generate_series(1, snowflake__batch_size(count));
END;

REVOKE ALL ON FUNCTION snowflake_nextval_batch(integer, integer) FROM PUBLIC;

COMMENT ON FUNCTION snowflake_nextval_batch(integer) IS
'count (1 .. 10,000,000) distinct, increasing IDs of this database''s shard';
COMMENT ON FUNCTION snowflake_nextval_batch(integer, integer) IS
'count (1 .. 10,000,000) distinct, increasing IDs of a logical shard';

-- ===========================================================================
-- Backfill: snowflake_nextval_at(created_at, shard_id), IDs carrying a past
-- time on an import shard (snowflake_configure(import_shards => ...)), which
-- live generation never uses (configure refuses a shard on both sides).
-- The same two sequences and the same protocol as live generation, with
-- created_at's unit in place of the clock's: a value is issued only if it is
-- below the cap read before drawing it and in created_at's unit; a new unit
-- is entered by a jump under the shard's lock (S first, then C), to a unit
-- after C's; so the invariant and the claim of DESIGN hold unchanged: no ID
-- is issued twice, and an import shard's IDs increase.  A time earlier than
-- the shard's last ID (C's unit) is refused (22023), as is a unit whose
-- sequence is used up (54000), a time before the epoch or past the layout
-- (22008), or in the future beyond the clock + max_clock_lead (22008).  An
-- import shard's sequence is used by this SECURITY DEFINER function only
-- (configure revokes USAGE), so the protocol's robustness to burns is a
-- margin here, not a need.  Every call is one PL/pgSQL call, and every new
-- unit one jump: for bulk history, not for the hot path.
-- ===========================================================================
DO $install$
BEGIN
EXECUTE pg_catalog.replace($src$
CREATE FUNCTION @extschema@.snowflake_nextval_at(created_at timestamptz, shard_id integer)
RETURNS bigint
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    cfg @extschema@.snowflake__config;
    sh @extschema@.snowflake__shard;
    q integer;
    w bigint;
    u bigint;
    cap bigint;
    cap_unit bigint;
    v bigint;
    target bigint;
    ms double precision := date_part('epoch', created_at) * 1000;
    now_ms double precision := date_part('epoch', clock_timestamp()) * 1000;
BEGIN
    cfg := @extschema@.snowflake__settings();
    SELECT * INTO sh FROM @extschema@.snowflake__shard s WHERE s.shard_id = snowflake_nextval_at.shard_id;
    IF NOT FOUND OR NOT (snowflake_nextval_at.shard_id = ANY (cfg.import_shards)) THEN
        RAISE EXCEPTION USING ERRCODE = '55000',
            MESSAGE = format('shard %s is not an import shard', snowflake_nextval_at.shard_id),
            DETAIL = format('The import shards are {%s}.', array_to_string(cfg.import_shards, ',')),
            HINT = 'Reserve shards that never generate live IDs with snowflake_configure(import_shards => ...) as the owner.';
    END IF;
    q := cfg.sequence_bits;
    w := 1::bigint << (cfg.shard_bits + q);
    u := floor((ms - cfg.epoch_ms) / cfg.time_unit_ms)::bigint;
    IF u < 0 OR u > (1::bigint << (cfg.id_bits - cfg.shard_bits - q)) - 1
       OR ms > now_ms + cfg.max_clock_lead THEN
        RAISE EXCEPTION USING ERRCODE = '22008',
            MESSAGE = format('created_at %s is out of range for snowflake IDs', created_at),
            DETAIL = 'It must lie between the epoch and the clock + max_clock_lead (live IDs cover the present), within the layout.';
    END IF;
    LOOP
        cap := coalesce(pg_sequence_last_value(sh.cap), 0);
        v := nextval(sh.seq);
        IF v < cap AND v >= u * w THEN
            IF v < (u + 1) * w THEN
                RETURN v;
            END IF;
        END IF;
        cap_unit := CASE WHEN cap = 0 THEN -1 ELSE (cap - 1) / w END;
        IF cap_unit > u OR (v < cap AND v >= (u + 1) * w) THEN
            RAISE EXCEPTION USING ERRCODE = '22023',
                MESSAGE = format('created_at %s is earlier than the last ID of import shard %s', created_at, snowflake_nextval_at.shard_id),
                DETAIL = 'Times must not decrease per import shard.',
                HINT = 'Import in order of the time (ORDER BY created_at), one sorted stream per import shard.';
        END IF;
        IF cap_unit = u THEN
            -- v >= cap: the unit's sequence is used up (or was burnt)
            RAISE EXCEPTION USING ERRCODE = '54000',
                MESSAGE = format('more than %s IDs in one time unit on import shard %s', 1::bigint << q, snowflake_nextval_at.shard_id),
                DETAIL = format('created_at %s: its unit holds %s IDs per shard.', created_at, 1::bigint << q),
                HINT = 'Spread rows of the same time over several import shards.';
        END IF;
        -- cap_unit < u: jump to u under the lock (as in the slow path)
        BEGIN
            PERFORM 1 FROM @extschema@.snowflake__shard s WHERE s.shard_id = snowflake_nextval_at.shard_id FOR UPDATE;
            IF coalesce(pg_sequence_last_value(sh.cap), 0) = cap THEN
                target := (u * w) | (snowflake_nextval_at.shard_id::bigint << q);
                PERFORM setval(sh.seq, target, false);
                PERFORM setval(sh.cap, target + (1::bigint << q));
                PERFORM nextval(sh.jumps);
            END IF;
            RAISE SQLSTATE 'SFJ01';
        EXCEPTION WHEN SQLSTATE 'SFJ01' THEN
            NULL;
        END;
    END LOOP;
END
$fn$;
$src$, '@extschema@', pg_catalog.quote_ident(pg_catalog.current_schema()));
END
$install$;

CREATE FUNCTION snowflake_nextval_at_batch(created_at timestamptz[], shard_id integer)
RETURNS SETOF bigint
LANGUAGE sql VOLATILE STRICT PARALLEL UNSAFE ROWS 1000
BEGIN ATOMIC
    SELECT snowflake_nextval_at(t.c, shard_id)
    FROM unnest(created_at) WITH ORDINALITY AS t(c, i) ORDER BY t.i;
END;

-- Granted like logical shards: the owner chooses who may import.
REVOKE ALL ON FUNCTION snowflake_nextval_at(timestamptz, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION snowflake_nextval_at_batch(timestamptz[], integer) FROM PUBLIC;

COMMENT ON FUNCTION snowflake_nextval_at(timestamptz, integer) IS
'an ID of an import shard (snowflake_configure(import_shards => ...)) carrying created_at (to the time unit); times must not decrease per shard';
COMMENT ON FUNCTION snowflake_nextval_at_batch(timestamptz[], integer) IS
'one ID per element of a sorted array of creation times, in order, on an import shard';
