--
-- settings: what sessions can and cannot change
--

-- the layout is fixed at server start
SHOW snowflake.epoch;
SHOW snowflake.shard_bits;
SHOW snowflake.sequence_bits;
SET snowflake.shard_bits = 12;
SET snowflake.sequence_bits = 8;
SET snowflake.epoch = '2020-01-01';

-- clock handling follows the configuration file, not sessions
SHOW snowflake.max_clock_lead;
SHOW snowflake.max_clock_wait;
SET snowflake.max_clock_lead = 0;
SET snowflake.max_clock_wait = '1min';
SET snowflake.allow_on_standby = on;

-- the prefix is reserved: no typo or invented setting is accepted
SET snowflake.shardid = 3;
SET snowflake.anything = 'x';

-- ALTER SYSTEM validates values before writing them
ALTER SYSTEM SET snowflake.sequence_bits = 30;
ALTER SYSTEM SET snowflake.shard_bits = -1;
ALTER SYSTEM SET snowflake.epoch = 'yesterday';
ALTER SYSTEM SET snowflake.epoch = '2999-01-01';
ALTER SYSTEM SET snowflake.epoch = '1969-12-31';
ALTER SYSTEM SET snowflake.shard_id = -2;

-- the two widths must leave 38 timestamp bits: each is checked against the
-- other's running value (12 and 10 here), so a start cannot fail on the sum
ALTER SYSTEM SET snowflake.shard_bits = 20;
ALTER SYSTEM SET snowflake.sequence_bits = 16;
ALTER SYSTEM SET snowflake.shard_bits = 13;
ALTER SYSTEM SET snowflake.sequence_bits = 15;
ALTER SYSTEM RESET snowflake.shard_bits;
ALTER SYSTEM RESET snowflake.sequence_bits;
