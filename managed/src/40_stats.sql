-- ===========================================================================
-- 40_stats.sql: snowflake_stats in the SQL edition (owner: sqled).
--
-- The extension's view, with what SQL can know, one row per shard: nothing
-- on the fast path counts (no counter UPDATE per ID); the figures come from
-- the shard's sequences.  Columns the SQL edition cannot know (the durable
-- mark, backward steps, wait time, stats reset) are NULL, so a query written
-- for the extension's view runs here too.  jumps is the SQL edition's own:
-- how often the slow path moved the shard to a new time unit.
-- ===========================================================================

DO $install$
BEGIN
EXECUTE pg_catalog.replace($src$
CREATE FUNCTION @extschema@.snowflake__stats(
    OUT shard_id integer,
    OUT ids_issued bigint,
    OUT last_timestamp timestamptz,
    OUT current_lead_ms bigint,
    OUT reserved_until timestamptz,
    OUT sequence_exhausted bigint,
    OUT clock_steps_back bigint,
    OUT largest_step_back_ms bigint,
    OUT waits bigint,
    OUT wait_time_ms double precision,
    OUT refusals bigint,
    OUT mark_writes bigint,
    OUT inline_mark_writes bigint,
    OUT stats_reset timestamptz,
    OUT jumps bigint)
RETURNS SETOF record
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    cfg @extschema@.snowflake__config;
    sh @extschema@.snowflake__shard;
    q integer;
    cap bigint;
    last_v bigint;
    unit bigint;
BEGIN
    cfg := @extschema@.snowflake__settings();
    q := cfg.sequence_bits;
    FOR sh IN SELECT * FROM @extschema@.snowflake__shard s ORDER BY s.shard_id LOOP
        cap := pg_sequence_last_value(sh.cap);
        last_v := pg_sequence_last_value(sh.seq);
        shard_id := sh.shard_id;
        -- values drawn: those of finished units (counted at each jump) and
        -- of the current one; an upper bound of the IDs issued (values
        -- drawn but refused by the test, or drawn directly, count too)
        ids_issued := coalesce(pg_sequence_last_value(sh.issued), 0)
            + CASE WHEN cap IS NOT NULL AND last_v IS NOT NULL AND last_v >= cap - (1::bigint << q)
                   THEN least(last_v, cap - 1) - (cap - (1::bigint << q)) + 1 ELSE 0 END;
        IF last_v IS NOT NULL AND cap IS NOT NULL THEN
            last_v := least(last_v, cap - 1);
            unit := last_v >> (cfg.shard_bits + q);
            last_timestamp := to_timestamp((cfg.epoch_ms + unit * cfg.time_unit_ms) / 1000.0);
            current_lead_ms := (cfg.epoch_ms + unit * cfg.time_unit_ms)
                               - floor(date_part('epoch', clock_timestamp()) * 1000)::bigint;
        ELSE
            last_timestamp := NULL;
            current_lead_ms := NULL;
        END IF;
        waits := coalesce(pg_sequence_last_value(sh.waits), 0);
        refusals := coalesce(pg_sequence_last_value(sh.refusals), 0);
        jumps := coalesce(pg_sequence_last_value(sh.jumps), 0);
        RETURN NEXT;
    END LOOP;
END
$fn$;
$src$, '@extschema@', pg_catalog.quote_ident(pg_catalog.current_schema()));
END
$install$;

CREATE VIEW snowflake_stats AS SELECT * FROM snowflake__stats();

COMMENT ON VIEW snowflake_stats IS
'generator statistics of the SQL edition, one row per shard: values drawn, last unit used and its lead over the clock, waits, refusals, jumps';

-- the owner and pg_monitor read it (the function reads the sequences with
-- the owner's rights; a view's functions run with the caller's EXECUTE)
REVOKE ALL ON FUNCTION snowflake__stats() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION snowflake__stats() TO pg_monitor;
GRANT SELECT ON snowflake_stats TO pg_monitor;
