--
-- units: range errors of settings that have a unit.  PostgreSQL 17 prints
-- the unit with the bounds, "(0 ms .. 3600000 ms)": expected/units_1.out.
-- Only such statements belong here, so that other tests need one output.
--
ALTER SYSTEM SET snowflake.max_clock_lead = -1;
ALTER SYSTEM SET snowflake.max_clock_wait = '2h';
