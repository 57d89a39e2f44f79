--
-- setup: the temporary instance preloads snowflake but has no shard ID yet
--
CREATE EXTENSION snowflake;

SHOW snowflake.shard_id;

-- generation refuses until a shard ID is set, and says how to set it
SELECT snowflake_nextval();

-- layout works without a shard ID; shard_id reads NULL
SELECT shard_id IS NULL AS shard_unset FROM snowflake_layout();

-- a session cannot set it ...
SET snowflake.shard_id = 1;
SELECT set_config('snowflake.shard_id', '1', false);
ALTER ROLE CURRENT_USER SET snowflake.shard_id = 1;
ALTER DATABASE contrib_regression SET snowflake.shard_id = 1;

-- ... only the configuration can, within the range of the shard field
ALTER SYSTEM SET snowflake.shard_id = 1024;
ALTER SYSTEM SET snowflake.shard_id = 42;
SELECT pg_reload_conf();
-- the postmaster rereads the configuration; new sessions start with it
SELECT pg_sleep(0.5);
\c
SHOW snowflake.shard_id;
SELECT snowflake_shard_id(snowflake_nextval()) AS shard;
