/*-------------------------------------------------------------------------
 *
 * snowflake.cpp
 *		Entry point of the snowflake extension: module load, ID generation
 *		and the SQL-callable functions.
 *
 * The algorithm lives in core.cpp (plain C++, no PostgreSQL); settings.cpp
 * holds the settings and state.cpp the shared state, the recorded layout and
 * the durable mark.  Every core and statefile function is noexcept and never
 * allocates, so no C++ exception can reach PostgreSQL, and no frame of the
 * glue that may ereport holds a C++ object with a destructor.  The locking
 * rules are in glue.hpp.
 *
 *-------------------------------------------------------------------------
 */
#include <cinttypes>
#include <ctime>

#include "glue.hpp"

extern "C"
{
PG_MODULE_MAGIC;

void		_PG_init(void);

PG_FUNCTION_INFO_V1(snowflake_nextval);
PG_FUNCTION_INFO_V1(snowflake_timestamp);
PG_FUNCTION_INFO_V1(snowflake_shard_id);
PG_FUNCTION_INFO_V1(snowflake_sequence);
PG_FUNCTION_INFO_V1(snowflake_decode);
PG_FUNCTION_INFO_V1(snowflake_layout);
PG_FUNCTION_INFO_V1(snowflake_stats);
PG_FUNCTION_INFO_V1(snowflake_stats_reset);
}

using snowflake::Outcome;

/*---- module load ----*/

extern "C" void
_PG_init(void)
{
	/*
	 * Outside shared_preload_libraries there is no shared state, and
	 * server-start settings can no longer be defined: define nothing, and let
	 * every function report that the library must be preloaded.
	 */
	if (!process_shared_preload_libraries_in_progress)
		return;
	sf_settings_init();
	sf_state_init();
}

/*---- clocks ----*/

/* Monotonic microseconds: to bound and account for waits. */
static int64
sf_monotonic_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static TimestampTz
sf_timestamptz(int64 unix_ms)
{
	return (TimestampTz) snowflake::unix_ms_to_pg_us(unix_ms);
}

/* Formats a layout offset as a UTC time. */
static void
sf_format_offset(int64 offset, char *buf, size_t buflen)
{
	snowflake::format_utc(sf_layout.epoch_ms + offset, buf, buflen);
}

/*---- generation ----*/

/* What a waiting call knows about why it waits, copied under the lock. */
typedef struct SfWaitContext
{
	int64		started_us;		/* -1 until the first wait */
	int64		last_step_ms;	/* latest backward step, 0 if none */
	int64		last_step_at;	/* clock offset just after it */
} SfWaitContext;

/* Counts a refusal and raises the error for a wait that ran out. */
static void
sf_fail_wait(const snowflake::Step &step, int64 now, const SfWaitContext *ctx)
{
	char		last[40], when[40];
	int64		ahead = step.wait_until + sf_max_clock_lead - now;

	pg_atomic_fetch_add_u64(&sf_shared->refusals, 1);
	sf_format_offset(step.wait_until + sf_max_clock_lead, last, sizeof(last));
	if (ctx->last_step_ms > 0)
	{
		sf_format_offset(ctx->last_step_at, when, sizeof(when));
		ereport(ERROR,
				(errcode(ERRCODE_SYSTEM_ERROR),
				 errmsg("could not generate a snowflake ID: the clock moved backwards by "
						INT64_FORMAT " ms", ctx->last_step_ms),
				 errdetail("The clock stepped back at %s and is " INT64_FORMAT " ms behind "
						   "the IDs already issued (up to %s). IDs may run ahead of the clock by "
						   "at most snowflake.max_clock_lead (%d ms), and this call waited "
						   "snowflake.max_clock_wait (%d ms) for it to catch up.",
						   when, ahead, last, sf_max_clock_lead, sf_max_clock_wait),
				 errhint("Check the server's time synchronisation (NTP steps, VM migration "
						 "or resume). Retry once the clock has caught up, or raise "
						 "snowflake.max_clock_wait or snowflake.max_clock_lead.")));
	}
	ereport(ERROR,
			(errcode(ERRCODE_SYSTEM_ERROR),
			 errmsg("could not generate a snowflake ID: IDs are " INT64_FORMAT
					" ms ahead of the clock", ahead),
			 errdetail("IDs of this shard have reached %s. They may run ahead of the clock by "
					   "at most snowflake.max_clock_lead (%d ms), and this call waited "
					   "snowflake.max_clock_wait (%d ms) for it to catch up. Either more "
					   "than " INT64_FORMAT " IDs per millisecond were requested for that "
					   "long, or the server restarted with its clock behind the IDs it had "
					   "issued before.",
					   last, sf_max_clock_lead, sf_max_clock_wait,
					   sf_layout.max_sequence() + 1),
			 errhint("Check the server's time synchronisation, or raise "
					 "snowflake.max_clock_wait or snowflake.max_clock_lead.")));
}

/*
 * Sleeps until the clock may reach step.wait_until, outside any lock,
 * answering query cancel and showing as an Extension wait event; fails once
 * this call has waited snowflake.max_clock_wait in all.
 */
static void
sf_wait_for_clock(const snowflake::Step &step, int64 now, SfWaitContext *ctx)
{
	int64		mono = sf_monotonic_us();
	int64		waited_ms;
	long		sleep_ms;

	if (ctx->started_us < 0)
	{
		ctx->started_us = mono;
		pg_atomic_fetch_add_u64(&sf_shared->waits, 1);
	}
	waited_ms = (mono - ctx->started_us) / 1000;
	if (waited_ms >= sf_max_clock_wait)
		sf_fail_wait(step, now, ctx);

	sleep_ms = (long) Min(step.wait_until - now, (int64) sf_max_clock_wait - waited_ms);
	sleep_ms = Max(Min(sleep_ms, 100L), 1L);
	(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
					 sleep_ms, PG_WAIT_EXTENSION);
	ResetLatch(MyLatch);
	pg_atomic_fetch_add_u64(&sf_shared->wait_us, (uint64) (sf_monotonic_us() - mono));
	CHECK_FOR_INTERRUPTS();
}

/* Logs a backward clock step once: only the call that saw it gets here. */
static void
sf_warn_step(int64 step_ms, int64 shard)
{
	ereport(WARNING,
			(errmsg("the system clock moved backwards by " INT64_FORMAT " ms", step_ms),
			 errdetail("Snowflake IDs of shard " INT64_FORMAT " continue from the last one "
					   "issued, up to snowflake.max_clock_lead (%d ms) ahead of the clock; "
					   "beyond that, calls wait up to snowflake.max_clock_wait (%d ms), then fail.",
					   shard, sf_max_clock_lead, sf_max_clock_wait),
			 errhint("Check the server's time synchronisation (NTP, VM migration or resume).")));
}

/* Issues one ID for snowflake.shard_id. */
static int64
sf_generate(void)
{
	int64		shard = sf_shard_id;
	SfWaitContext ctx = {-1, 0, 0};

	sf_require_ready();
	if (RecoveryInProgress() && !sf_allow_on_standby)
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot generate snowflake IDs on a standby server"),
				 errdetail("A standby normally carries its primary's snowflake.shard_id, "
						   "so its IDs would collide with the primary's."),
				 errhint("Generate IDs on the primary. On a standby that has a shard ID "
						 "of its own, set snowflake.allow_on_standby = on.")));
	if (shard < 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("snowflake.shard_id is not set"),
				 errdetail("Every server that generates IDs needs a shard ID of its own; "
						   "two servers sharing one would issue duplicate IDs."),
				 errhint("Choose a shard ID between 0 and " INT64_FORMAT " that no other "
						 "server uses and set it, for example: ALTER SYSTEM SET "
						 "snowflake.shard_id = 1; SELECT pg_reload_conf();",
						 sf_layout.max_shard_id())));
	if (pg_atomic_read_u32(&sf_shared->layout_recorded) == 0)
		sf_record_layout();

	for (;;)
	{
		snowflake::Step step;
		int64		now;

		/* the clock is read under the lock so that readings are ordered */
		LWLockAcquire(sf_shared->gen_lock, LW_EXCLUSIVE);
		now = sf_wall_ms() - sf_layout.epoch_ms;
		step = snowflake::next_id(sf_shared->gen, sf_layout, shard, now,
								  sf_max_clock_lead, sf_shared->reserved_offset);
		if (step.outcome == Outcome::Wait)
		{
			ctx.last_step_ms = sf_shared->gen.last_step_back_ms;
			ctx.last_step_at = sf_shared->gen.last_step_back_at;
		}
		LWLockRelease(sf_shared->gen_lock);

		if (step.stepped_back_ms >= SF_WARN_STEP_MS)
			sf_warn_step(step.stepped_back_ms, shard);

		switch (step.outcome)
		{
			case Outcome::Issued:
				return step.id;
			case Outcome::Wait:
				sf_wait_for_clock(step, now, &ctx);
				break;
			case Outcome::NeedReservation:
				sf_extend_mark(step.wanted);
				break;
			case Outcome::ClockBeforeEpoch:
				pg_atomic_fetch_add_u64(&sf_shared->refusals, 1);
				ereport(ERROR,
						(errcode(ERRCODE_SYSTEM_ERROR),
						 errmsg("could not generate a snowflake ID: the clock reads earlier "
								"than snowflake.epoch"),
						 errhint("Check the server clock.")));
				break;
			case Outcome::Exhausted:
				{
					char		last[40];

					pg_atomic_fetch_add_u64(&sf_shared->refusals, 1);
					snowflake::format_utc(sf_layout.last_unix_ms(), last, sizeof(last));
					ereport(ERROR,
							(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
							 errmsg("could not generate a snowflake ID: the timestamp field "
									"is used up"),
							 errdetail("This layout represents times up to %s.", last)));
				}
				break;
		}
	}
}

/*---- SQL-callable functions ----*/

extern "C" Datum
snowflake_nextval(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(sf_generate());
}

/* Fetches argument 0 as an ID, rejecting negative values. */
static snowflake::Decoded
sf_decode_arg(FunctionCallInfo fcinfo)
{
	int64		id = PG_GETARG_INT64(0);

	sf_require_ready();
	if (id < 0)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("invalid snowflake ID: " INT64_FORMAT, id),
				 errdetail("Snowflake IDs are never negative.")));
	return snowflake::decode(sf_layout, id);
}

extern "C" Datum
snowflake_timestamp(PG_FUNCTION_ARGS)
{
	PG_RETURN_TIMESTAMPTZ(sf_timestamptz(sf_decode_arg(fcinfo).unix_ms));
}

extern "C" Datum
snowflake_shard_id(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT32((int32) sf_decode_arg(fcinfo).shard);
}

extern "C" Datum
snowflake_sequence(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT32((int32) sf_decode_arg(fcinfo).sequence);
}

/* Builds a tuple of the function's declared row type. */
static Datum
sf_make_record(FunctionCallInfo fcinfo, Datum *values, bool *nulls)
{
	TupleDesc	tupdesc;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	tupdesc = BlessTupleDesc(tupdesc);
	return HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls));
}

extern "C" Datum
snowflake_decode(PG_FUNCTION_ARGS)
{
	snowflake::Decoded d = sf_decode_arg(fcinfo);
	Datum		values[3];
	bool		nulls[3] = {false, false, false};

	values[0] = TimestampTzGetDatum(sf_timestamptz(d.unix_ms));
	values[1] = Int32GetDatum((int32) d.shard);
	values[2] = Int32GetDatum((int32) d.sequence);
	PG_RETURN_DATUM(sf_make_record(fcinfo, values, nulls));
}

extern "C" Datum
snowflake_layout(PG_FUNCTION_ARGS)
{
	Datum		values[8];
	bool		nulls[8] = {false, false, false, false, false, false, false, false};

	if (sf_shared == NULL)
		sf_require_ready();

	values[0] = TimestampTzGetDatum(sf_timestamptz(sf_layout.epoch_ms));
	values[1] = Int32GetDatum(sf_layout.timestamp_bits());
	values[2] = Int32GetDatum(sf_layout.shard_bits);
	values[3] = Int32GetDatum(sf_layout.sequence_bits);
	values[4] = Int32GetDatum((int32) sf_layout.max_shard_id());
	values[5] = Int64GetDatum(sf_layout.max_sequence() + 1);
	values[6] = TimestampTzGetDatum(sf_timestamptz(sf_layout.last_unix_ms()));
	values[7] = Int32GetDatum(sf_shard_id);
	nulls[7] = sf_shard_id < 0;
	PG_RETURN_DATUM(sf_make_record(fcinfo, values, nulls));
}

extern "C" Datum
snowflake_stats(PG_FUNCTION_ARGS)
{
	snowflake::GeneratorState gen;
	int64		reserved;
	TimestampTz reset_at;
	int64		now;
	Datum		values[14];
	bool		nulls[14];

	sf_require_ready();
	LWLockAcquire(sf_shared->gen_lock, LW_SHARED);
	gen = sf_shared->gen;
	reserved = sf_shared->reserved_offset;
	reset_at = sf_shared->stats_reset;
	LWLockRelease(sf_shared->gen_lock);
	now = sf_wall_ms() - sf_layout.epoch_ms;

	memset(nulls, 0, sizeof(nulls));
	values[0] = Int32GetDatum(sf_shard_id);
	nulls[0] = sf_shard_id < 0;
	values[1] = Int64GetDatum((int64) gen.issued);
	values[2] = TimestampTzGetDatum(sf_timestamptz(sf_layout.epoch_ms + gen.last_offset));
	nulls[2] = gen.last_offset < 0;
	values[3] = Int64GetDatum(Max(gen.last_offset - now, (int64) 0));
	values[4] = TimestampTzGetDatum(sf_timestamptz(sf_layout.epoch_ms + reserved));
	nulls[4] = reserved < 0;
	values[5] = Int64GetDatum((int64) gen.sequence_exhausted);
	values[6] = Int64GetDatum((int64) gen.clock_steps_back);
	values[7] = Int64GetDatum(gen.largest_step_back_ms);
	values[8] = Int64GetDatum((int64) pg_atomic_read_u64(&sf_shared->waits));
	values[9] = Float8GetDatum(pg_atomic_read_u64(&sf_shared->wait_us) / 1000.0);
	values[10] = Int64GetDatum((int64) pg_atomic_read_u64(&sf_shared->refusals));
	values[11] = Int64GetDatum((int64) pg_atomic_read_u64(&sf_shared->mark_writes));
	values[12] = Int64GetDatum((int64) pg_atomic_read_u64(&sf_shared->inline_mark_writes));
	values[13] = TimestampTzGetDatum(reset_at);
	PG_RETURN_DATUM(sf_make_record(fcinfo, values, nulls));
}

extern "C" Datum
snowflake_stats_reset(PG_FUNCTION_ARGS)
{
	sf_require_ready();
	LWLockAcquire(sf_shared->gen_lock, LW_EXCLUSIVE);
	snowflake::reset_counters(sf_shared->gen);
	sf_shared->stats_reset = GetCurrentTimestamp();
	LWLockRelease(sf_shared->gen_lock);
	pg_atomic_write_u64(&sf_shared->waits, 0);
	pg_atomic_write_u64(&sf_shared->wait_us, 0);
	pg_atomic_write_u64(&sf_shared->refusals, 0);
	pg_atomic_write_u64(&sf_shared->mark_writes, 0);
	pg_atomic_write_u64(&sf_shared->inline_mark_writes, 0);
	PG_RETURN_VOID();
}
