-- ===========================================================================
-- 60_unconfigured.sql: no decoding with a layout nobody configured.
--
-- Until the first snowflake_configure() the layout-dependent functions
-- raise 55000 instead of decoding with the default layout: an expression
-- index, a generated column or a CHECK built before the owner configures
-- would otherwise store the default layout's answers (the "stale index"
-- trap of issue 33).  This matters most in a pg_tle restore, where CREATE
-- EXTENSION makes the functions afresh while the configuration comes back
-- with the data: so a trigger on the configuration table regenerates the
-- decoders (and, once the shards' rows are there, the generators) from the
-- row the restore writes, before the post-data section builds the indexes.
-- The trigger acts only on a write its writer may already do: no role but
-- the owner has any privilege on the table, and the functions it calls are
-- not SECURITY DEFINER.  snowflake_configure() stays the way to change it.
-- ===========================================================================

DO $install$
BEGIN
EXECUTE pg_catalog.replace($src$
-- Replaces every layout-dependent function by one that raises 55000.
CREATE FUNCTION @extschema@.snowflake__define_unconfigured()
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    f record;
BEGIN
    FOR f IN
        SELECT p.oid, p.proname, p.provolatile, p.proisstrict, p.proparallel
          FROM pg_proc p
         WHERE p.oid IN (SELECT to_regprocedure('@extschema@.' || x) FROM unnest(ARRAY[
                   'snowflake_timestamp(bigint)', 'snowflake_shard_id(bigint)', 'snowflake_sequence(bigint)',
                   'snowflake_datacenter(bigint)', 'snowflake_worker(bigint)',
                   'snowflake_min_id(timestamptz)', 'snowflake_min_id(timestamptz,integer)',
                   'snowflake_max_id(timestamptz)', 'snowflake_max_id(timestamptz,integer)',
                   'snowflake_time_bound(timestamptz)', 'snowflake__named_layout(text)',
                   'snowflake_layout()']) x)
    LOOP
        EXECUTE format($q$CREATE OR REPLACE FUNCTION %s.%I(%s) RETURNS %s
            LANGUAGE plpgsql %s %s PARALLEL %s
            AS $body$
            BEGIN
                RAISE EXCEPTION USING ERRCODE = '55000',
                    MESSAGE = 'the snowflake SQL edition is not configured',
                    DETAIL = 'Its layout-dependent functions do not decode until a layout is configured, so that no index or stored value is built with a layout other than the one the IDs carry.',
                    HINT = 'As the database owner, run snowflake_configure() (with the layout the IDs were made with, and this database''s shard).';
            END
            $body$$q$,
            '@extschema@', f.proname, pg_get_function_arguments(f.oid), pg_get_function_result(f.oid),
            CASE f.provolatile WHEN 'i' THEN 'IMMUTABLE' WHEN 's' THEN 'STABLE' ELSE 'VOLATILE' END,
            CASE WHEN f.proisstrict THEN 'STRICT' ELSE 'CALLED ON NULL INPUT' END,
            CASE f.proparallel WHEN 's' THEN 'SAFE' WHEN 'r' THEN 'RESTRICTED' ELSE 'UNSAFE' END);
    END LOOP;
END
$fn$;

-- The configuration row was written (snowflake_configure, or a restore's
-- COPY of the row): regenerate the decoders from it, and the generators
-- once every shard it names has its row.
CREATE FUNCTION @extschema@.snowflake__config_written()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
    PERFORM @extschema@.snowflake__define_decoders(NEW.epoch_ms, NEW.time_unit_ms, NEW.id_bits,
        NEW.shard_bits, NEW.sequence_bits, NEW.datacenter_bits, NEW.shard_id);
    PERFORM @extschema@.snowflake__shards_written_generators();
    RETURN NULL;
END
$fn$;

CREATE FUNCTION @extschema@.snowflake__shards_written_generators()
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    cfg @extschema@.snowflake__config;
BEGIN
    SELECT * INTO cfg FROM @extschema@.snowflake__config;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM unnest(ARRAY[cfg.shard_id] || cfg.shard_ids) x
                    WHERE x IS NOT NULL
                      AND NOT EXISTS (SELECT 1 FROM @extschema@.snowflake__shard s WHERE s.shard_id = x)) THEN
        PERFORM @extschema@.snowflake__define_generators();
    END IF;
END
$fn$;

CREATE FUNCTION @extschema@.snowflake__shards_written()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
    PERFORM @extschema@.snowflake__shards_written_generators();
    RETURN NULL;
END
$fn$;

CREATE TRIGGER snowflake__config_written AFTER INSERT OR UPDATE ON @extschema@.snowflake__config
    FOR EACH ROW EXECUTE FUNCTION @extschema@.snowflake__config_written();
CREATE TRIGGER snowflake__shards_written AFTER INSERT ON @extschema@.snowflake__shard
    FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.snowflake__shards_written();
$src$, '@extschema@', pg_catalog.quote_ident(pg_catalog.current_schema()));
END
$install$;

REVOKE ALL ON FUNCTION snowflake__define_unconfigured() FROM PUBLIC;
REVOKE ALL ON FUNCTION snowflake__config_written() FROM PUBLIC;
REVOKE ALL ON FUNCTION snowflake__shards_written_generators() FROM PUBLIC;
REVOKE ALL ON FUNCTION snowflake__shards_written() FROM PUBLIC;

-- not configured yet
SELECT snowflake__define_unconfigured();
