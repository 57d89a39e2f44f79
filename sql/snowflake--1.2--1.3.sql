/* snowflake--1.2--1.3.sql: upgrade from 1.2 to 1.3 (ALTER EXTENSION snowflake UPDATE) */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION snowflake UPDATE TO '1.3'" to load this file. \quit

-- 1.3, the registry's replication (issue 25, defect 1): how the PostgreSQL
-- registry replicates, as the registry worker last saw it, appended to the
-- snowflake_registry view as registry_replication (the view keeps its other
-- columns, so views built on it stay).
CREATE FUNCTION snowflake_registry_replication()
RETURNS text
AS 'MODULE_PATHNAME', 'snowflake_registry_replication'
LANGUAGE C VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_registry_replication() IS
'how the PostgreSQL registry replicates, as its last answer showed: synchronous, asynchronous (standbys, none synchronous: a failover pauses claims), no standby; NULL when unknown or with etcd';

REVOKE ALL ON FUNCTION snowflake_registry_replication() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION snowflake_registry_replication() TO pg_read_all_stats;

CREATE OR REPLACE VIEW snowflake_registry AS
    SELECT r.*, snowflake_registry_replication() AS registry_replication
    FROM snowflake_registry() r;
-- end of the registry's replication block
