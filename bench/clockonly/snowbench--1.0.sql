-- bench/clockonly: functions for bench/run.sh only (not part of snowflake)
\echo Use "CREATE EXTENSION snowbench" to load this file. \quit

CREATE FUNCTION snowbench_clock() RETURNS bigint
AS 'MODULE_PATHNAME', 'snowbench_clock'
LANGUAGE C VOLATILE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION snowbench_clock() IS
  'the wall clock snowflake_nextval() reads (CLOCK_REALTIME, Unix ms): a clock-only floor';

CREATE FUNCTION snowbench_cpu_ns() RETURNS bigint
AS 'MODULE_PATHNAME', 'snowbench_cpu_ns'
LANGUAGE C VOLATILE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION snowbench_cpu_ns() IS
  'CPU time this backend has used (CLOCK_THREAD_CPUTIME_ID, ns)';
