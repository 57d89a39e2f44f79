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
#include <cstring>
#include <ctime>

#include "glue.hpp"
#include "registry.hpp"

extern "C"
{
PG_MODULE_MAGIC;

void		_PG_init(void);

PG_FUNCTION_INFO_V1(snowflake_nextval);
PG_FUNCTION_INFO_V1(snowflake_nextval_shard);
PG_FUNCTION_INFO_V1(snowflake_nextval_batch);
PG_FUNCTION_INFO_V1(snowflake_min_id);
PG_FUNCTION_INFO_V1(snowflake_max_id);
PG_FUNCTION_INFO_V1(snowflake_to_text);
PG_FUNCTION_INFO_V1(snowflake_from_text);
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
	sf_seqstart_init();			/* before sf_settings_init reserves the prefix */
	sf_settings_init();
	sf_state_init();
	sf_registry_init();
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

/* A Unix millisecond time the caller knows to be within timestamptz's range. */
static TimestampTz
sf_timestamptz(int64 unix_ms)
{
	return (TimestampTz) snowflake::unix_ms_to_pg_us(unix_ms);
}

/*
 * The timestamptz of a decoded ID's time, or an error when the time lies
 * beyond what a timestamptz can hold (possible only with layouts of more than
 * 43 timestamp bits, and only for IDs far beyond any that can be generated).
 */
TimestampTz
sf_decoded_timestamptz(int64 unix_ms, int64 id)
{
	/* IDs are never negative, so unix_ms is at least the epoch (>= 1970) */
	if (unix_ms > snowflake::kLastTimestamptzUnixMs)
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("timestamp out of range for snowflake ID " INT64_FORMAT, id),
				 errdetail("Its timestamp field is " INT64_FORMAT " ms after the epoch, "
						   "beyond the last time a timestamptz can hold (294276-12-31).",
						   id >> (sf_layout.shard_bits + sf_layout.sequence_bits))));
	return sf_timestamptz(unix_ms);
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
sf_fail_wait(ShardSlot *slot, const snowflake::Step &step, int64 now, const SfWaitContext *ctx)
{
	char		last[40], when[40];
	int64		ahead = step.wait_until + sf_max_clock_lead - now;

	pg_atomic_fetch_add_u64(&slot->refusals, 1);
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
sf_wait_for_clock(ShardSlot *slot, const snowflake::Step &step, int64 now, SfWaitContext *ctx)
{
	int64		mono = sf_monotonic_us();
	int64		waited_ms;
	long		sleep_ms;

	if (ctx->started_us < 0)
	{
		ctx->started_us = mono;
		pg_atomic_fetch_add_u64(&slot->waits, 1);
	}
	waited_ms = (mono - ctx->started_us) / 1000;
	if (waited_ms >= sf_max_clock_wait)
		sf_fail_wait(slot, step, now, ctx);

	sleep_ms = (long) Min(step.wait_until - now, (int64) sf_max_clock_wait - waited_ms);
	sleep_ms = Max(Min(sleep_ms, 100L), 1L);
	(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
					 sleep_ms, PG_WAIT_EXTENSION);
	ResetLatch(MyLatch);
	pg_atomic_fetch_add_u64(&slot->wait_us, (uint64) (sf_monotonic_us() - mono));
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

/* The refusal while the clock reads earlier than the epoch (now < 0). */
static void
sf_fail_before_epoch(int64 now)
{
	char		epoch[40], clock[40];

	snowflake::format_utc(sf_layout.epoch_ms, epoch, sizeof(epoch));
	snowflake::format_utc(sf_layout.epoch_ms + now, clock, sizeof(clock));
	ereport(ERROR,
			(errcode(ERRCODE_SYSTEM_ERROR),
			 errmsg("could not generate a snowflake ID: the clock reads earlier "
					"than snowflake.epoch"),
			 errdetail("snowflake.epoch is %s and the clock reads %s.", epoch, clock),
			 errhint("Check the server's time synchronisation, or snowflake.epoch; "
					 "generation resumes by itself once the clock passes the epoch.")));
}

/* Errors out unless a shard ID fits the layout's shard field. */
static void
sf_check_shard_range(int64 shard)
{
	if (shard < 0 || shard > sf_layout.max_shard_id())
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("shard ID " INT64_FORMAT " is out of range", shard),
				 errdetail("Shard IDs go from 0 to " INT64_FORMAT
						   " because snowflake.shard_bits is %d.",
						   sf_layout.max_shard_id(), sf_layout.shard_bits)));
}

/*
 * Checks this server's right to generate for a shard now: not a standby, and
 * the shard is snowflake.shard_id or one of snowflake.shard_ids.  Called by
 * every generating call and again before each run a batch reserves, so that
 * a reload that takes a shard away stops a batch already under way.
 * "explicit_shard" is false for this server's own shard (snowflake.shard_id),
 * which the batch captured at its first call: it must still be the same.
 * With a registry (snowflake.registry), the right is the fencing check: the
 * shard held in etcd under a lease known to be valid (registry.cpp).
 * "during" names what a reload could have interrupted (for the error).
 * Returns the shard to generate for.
 */
static int64
sf_check_right(int64 shard, bool explicit_shard, const char *during)
{
	if (unlikely(RecoveryInProgress()))
	{
		if (!sf_allow_on_standby)
			ereport(ERROR,
					(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
					 errmsg("cannot generate snowflake IDs on a standby server"),
					 errdetail("A standby normally carries its primary's snowflake.shard_id, "
							   "so its IDs would collide with the primary's."),
					 errhint("Generate IDs on the primary. On a standby that has a shard ID "
							 "of its own, set snowflake.allow_on_standby = on.")));
		/* and then only for a shard its primary does not generate for */
		sf_check_standby_shard(explicit_shard ? shard : sf_shard_id);
	}
	if (sf_registry_enabled)
	{
		if (explicit_shard)
			sf_check_shard_range(shard);
		/* a known shard (explicit, configured or a batch's) must be the one held */
		return sf_registry_check(shard, shard >= 0);
	}
	if (!explicit_shard && sf_shard_id < 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("snowflake.shard_id is not set"),
				 errdetail("Every server that generates IDs needs a shard ID of its own; "
						   "two servers sharing one would issue duplicate IDs."),
				 errhint("Choose a shard ID between 0 and " INT64_FORMAT " that no other "
						 "server uses and set it, for example: ALTER SYSTEM SET "
						 "snowflake.shard_id = 1; SELECT pg_reload_conf();",
						 sf_layout.max_shard_id())));
	if (!explicit_shard && shard != sf_shard_id)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("snowflake.shard_id changed from " INT64_FORMAT " to %d while %s",
						shard, sf_shard_id, during),
				 errdetail("A reload changed this server's shard; the rest of the batch "
						   "would carry a shard this server no longer owns."),
				 errhint("Run the statement again: it will generate for the new shard.")));
	if (explicit_shard && !sf_shard_allowed(shard))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("shard " INT64_FORMAT " is not assigned to this server", shard),
				 errdetail("This server generates for snowflake.shard_id (%d) and "
						   "snowflake.shard_ids (\"%s\").", sf_shard_id, sf_shard_ids),
				 errhint("Add the shard to snowflake.shard_ids in postgresql.conf or with "
						 "ALTER SYSTEM, then reload. No other server may generate for it.")));
	return shard;
}

/*
 * Checks what every generating call needs, and returns the slot of "shard":
 * the library preloaded and its state sound, and the right to the shard.
 */
static ShardSlot *
sf_prepare(int64 shard, bool explicit_shard)
{
	ShardSlot  *slot;

	sf_require_generation_ready();
	if (explicit_shard)
		sf_check_shard_range(shard);
	shard = sf_check_right(shard, explicit_shard, "a call was starting");
	slot = sf_slot_for_shard(shard, explicit_shard);
	if (pg_atomic_read_u32(&sf_shared->layout_recorded) == 0)
	{
		int64		now = sf_wall_ms() - sf_layout.epoch_ms;

		/* a mistaken epoch must not be recorded before any ID could be issued */
		if (now < 0)
		{
			pg_atomic_fetch_add_u64(&slot->refusals, 1);
			sf_fail_before_epoch(now);
		}
		sf_record_layout();
	}
	return slot;
}

/*
 * Issues a run of up to max_count consecutive IDs for a shard: waits for the
 * clock and moves the durable mark as needed, or raises the error that says
 * why it cannot.  Returns the first ID; *count (if given) gets the run's
 * length.  (Plain integers rather than a Step: this is the hot path.)
 *
 * A call that waited (for the clock, or for the durable or the registry's
 * mark) checks its right to the shard again before it issues: a lease
 * deadline or a reload may have passed while it slept.
 */
static int64
sf_issue(ShardSlot *slot, int64 max_count, int64 *count, bool explicit_shard)
{
	SfWaitContext ctx = {-1, 0, 0};
	int64		registry_wait_us = -1;
	bool		waited = false;

	for (;;)
	{
		snowflake::Step step;
		int64		now;
		int64		start = sf_draw_start_sequence();	/* per backend, no lock */

		if (unlikely(waited))
			(void) sf_check_right(slot->shard_id, explicit_shard, "this call waited");

		if (sf_generator == SF_GENERATOR_ATOMIC)
		{
			/* lock-free; the LWLock only for the slow path below */
			sf_fastpath_step(slot, max_count, &now, &step, start);
			if (step.outcome == Outcome::Wait)
			{
				LWLockAcquire(slot->lock, LW_SHARED);
				ctx.last_step_ms = slot->gen.last_step_back_ms;
				ctx.last_step_at = slot->gen.last_step_back_at;
				LWLockRelease(slot->lock);
			}
		}
		else
		{
			/* the clock is read under the lock so that readings are ordered */
			LWLockAcquire(slot->lock, LW_EXCLUSIVE);
			now = sf_wall_ms() - sf_layout.epoch_ms;
			step = snowflake::next_run(slot->gen, sf_layout, slot->shard_id, now,
									   sf_max_clock_lead, sf_reserved(slot), max_count, start);
			if (step.outcome == Outcome::Wait)
			{
				ctx.last_step_ms = slot->gen.last_step_back_ms;
				ctx.last_step_at = slot->gen.last_step_back_at;
			}
			LWLockRelease(slot->lock);
		}

		if (step.stepped_back_ms >= SF_WARN_STEP_MS)
			sf_warn_step(step.stepped_back_ms, slot->shard_id);

		switch (step.outcome)
		{
			case Outcome::Issued:
				if (count)
					*count = step.count;
				return step.id;
			case Outcome::Wait:
				sf_wait_for_clock(slot, step, now, &ctx);
				waited = true;
				break;
			case Outcome::NeedReservation:
				sf_extend_mark(slot, step.wanted);
				sf_registry_await(slot->shard_id, step.wanted, &registry_wait_us);
				waited = true;
				break;
			case Outcome::ClockBeforeEpoch:
				pg_atomic_fetch_add_u64(&slot->refusals, 1);
				sf_fail_before_epoch(now);
				break;
			case Outcome::Exhausted:
				{
					char		last[40];

					pg_atomic_fetch_add_u64(&slot->refusals, 1);
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
	ShardSlot  *slot = sf_prepare(sf_shard_id, false);

	sf_check_origin(fcinfo->flinfo->fn_oid);
	PG_RETURN_INT64(sf_issue(slot, 1, NULL, false));
}

extern "C" Datum
snowflake_nextval_shard(PG_FUNCTION_ARGS)
{
	ShardSlot  *slot = sf_prepare(PG_GETARG_INT32(0), true);

	sf_check_origin(fcinfo->flinfo->fn_oid);
	PG_RETURN_INT64(sf_issue(slot, 1, NULL, true));
}

#define SF_MAX_BATCH 10000000

/* State of a batch between calls: the current run and what is left. */
typedef struct SfBatch
{
	ShardSlot  *slot;
	int64		shard;
	bool		explicit_shard;
	int64		remaining;		/* IDs still to return, the current run included */
	int64		next_id;		/* next ID of the current run */
	int64		run_left;		/* IDs left in the current run */
} SfBatch;

/*
 * snowflake_nextval_batch(count [, shard_id]): count distinct, increasing
 * IDs, taken a run (up to one millisecond's sequence) per lock acquisition.
 */
extern "C" Datum
snowflake_nextval_batch(PG_FUNCTION_ARGS)
{
	FuncCallContext *funcctx;
	SfBatch    *batch;

	if (SRF_IS_FIRSTCALL())
	{
		int32		count = PG_GETARG_INT32(0);
		bool		explicit_shard = PG_NARGS() > 1;
		int64		shard = explicit_shard ? PG_GETARG_INT32(1) : sf_shard_id;
		ShardSlot  *slot;
		MemoryContext old;

		if (count < 1 || count > SF_MAX_BATCH)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("batch size must be between 1 and %d", SF_MAX_BATCH),
					 errdetail("The requested size was %d.", count),
					 count > SF_MAX_BATCH ? errhint("Split larger loads into several batches.") : 0));
		slot = sf_prepare(shard, explicit_shard);
		sf_check_origin(fcinfo->flinfo->fn_oid);

		funcctx = SRF_FIRSTCALL_INIT();
		old = MemoryContextSwitchTo(funcctx->multi_call_memory_ctx);
		batch = (SfBatch *) palloc0(sizeof(SfBatch));
		MemoryContextSwitchTo(old);
		batch->slot = slot;
		batch->shard = slot->shard_id;	/* with a registry: the shard held */
		batch->explicit_shard = explicit_shard;
		batch->remaining = count;
		funcctx->max_calls = (uint64) count;
		funcctx->user_fctx = batch;
	}

	funcctx = SRF_PERCALL_SETUP();
	batch = (SfBatch *) funcctx->user_fctx;
	if (batch->remaining == 0)
		SRF_RETURN_DONE(funcctx);
	if (batch->run_left == 0)
	{
		/* the first run was checked by sf_prepare; a reload may since have moved the shard */
		if ((uint64) batch->remaining < funcctx->max_calls)
			(void) sf_check_right(batch->shard, batch->explicit_shard, "a batch was generating");
		batch->next_id = sf_issue(batch->slot, batch->remaining, &batch->run_left,
								  batch->explicit_shard);
	}
	batch->remaining--;
	batch->run_left--;
	SRF_RETURN_NEXT(funcctx, Int64GetDatum(batch->next_id++));
}

/* Errors out for a negative value: no Snowflake ID is negative. */
void
sf_check_id(int64 id)
{
	if (id < 0)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("invalid snowflake ID: " INT64_FORMAT, id),
				 errdetail("Snowflake IDs are never negative.")));
}

/* Fetches argument 0 as an ID, rejecting negative values. */
static snowflake::Decoded
sf_decode_arg(FunctionCallInfo fcinfo)
{
	int64		id = PG_GETARG_INT64(0);

	sf_require_ready();
	sf_check_id(id);
	return snowflake::decode(sf_layout, id);
}

extern "C" Datum
snowflake_timestamp(PG_FUNCTION_ARGS)
{
	PG_RETURN_TIMESTAMPTZ(sf_decoded_timestamptz(sf_decode_arg(fcinfo).unix_ms,
												 PG_GETARG_INT64(0)));
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
Datum
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

	values[0] = TimestampTzGetDatum(sf_decoded_timestamptz(d.unix_ms, PG_GETARG_INT64(0)));
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
	values[6] = TimestampTzGetDatum(sf_timestamptz(sf_layout.last_usable_unix_ms()));
	{
		/* with a registry: the shard held now (NULL while none is) */
		int64		shard = sf_registry_enabled ?
			(int64) (pg_atomic_read_u64(sf_registry_grant) >> SF_GRANT_SHIFT) - 1 : sf_shard_id;

		values[7] = Int32GetDatum((int32) shard);
		nulls[7] = shard < 0;
	}
	PG_RETURN_DATUM(sf_make_record(fcinfo, values, nulls));
}

/* The result set of a materialising set-returning function. */
static Tuplestorestate *
sf_materialize(FunctionCallInfo fcinfo, TupleDesc *tupdesc)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	MemoryContext old;
	Tuplestorestate *store;

	if (rsinfo == NULL || !IsA(rsinfo, ReturnSetInfo) ||
		!(rsinfo->allowedModes & SFRM_Materialize))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("set-valued function called in context that cannot accept a set")));
	if (get_call_result_type(fcinfo, NULL, tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	old = MemoryContextSwitchTo(rsinfo->econtext->ecxt_per_query_memory);
	*tupdesc = CreateTupleDescCopy(*tupdesc);
	store = tuplestore_begin_heap(true, false, work_mem);
	MemoryContextSwitchTo(old);
	rsinfo->returnMode = SFRM_Materialize;
	rsinfo->setResult = store;
	rsinfo->setDesc = *tupdesc;
	return store;
}

/* One row per shard this server has generated for since it started. */
extern "C" Datum
snowflake_stats(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Tuplestorestate *store;
	int			used;
	int64		mark_writes;

	sf_require_ready();
	store = sf_materialize(fcinfo, &tupdesc);
	used = (int) pg_atomic_read_u32(&sf_shared->used_slots);
	mark_writes = (int64) pg_atomic_read_u64(&sf_shared->mark_writes);

	for (int i = 0; i < used; i++)
	{
		ShardSlot  *slot = sf_slot(i);
		snowflake::GeneratorState gen;
		int64		reserved;
		TimestampTz reset_at;
		int64		now;
		Datum		values[14];
		bool		nulls[14];

		sf_slot_snapshot(slot, &gen, &reserved, &reset_at);
		now = sf_wall_ms() - sf_layout.epoch_ms;

		memset(nulls, 0, sizeof(nulls));
		values[0] = Int32GetDatum(slot->shard_id);
		values[1] = Int64GetDatum((int64) gen.issued);
		values[2] = TimestampTzGetDatum(sf_timestamptz(sf_layout.epoch_ms + gen.last_offset));
		nulls[2] = gen.last_offset < 0;
		values[3] = Int64GetDatum(Max(gen.last_offset - now, (int64) 0));
		values[4] = TimestampTzGetDatum(sf_timestamptz(sf_layout.epoch_ms + reserved));
		nulls[4] = reserved < 0;
		values[5] = Int64GetDatum((int64) gen.sequence_exhausted);
		values[6] = Int64GetDatum((int64) gen.clock_steps_back);
		values[7] = Int64GetDatum(gen.largest_step_back_ms);
		values[8] = Int64GetDatum((int64) pg_atomic_read_u64(&slot->waits));
		values[9] = Float8GetDatum(pg_atomic_read_u64(&slot->wait_us) / 1000.0);
		values[10] = Int64GetDatum((int64) pg_atomic_read_u64(&slot->refusals));
		values[11] = Int64GetDatum(mark_writes);
		values[12] = Int64GetDatum((int64) pg_atomic_read_u64(&slot->inline_mark_writes));
		values[13] = TimestampTzGetDatum(reset_at);
		tuplestore_putvalues(store, tupdesc, values, nulls);
	}
	return (Datum) 0;
}

extern "C" Datum
snowflake_stats_reset(PG_FUNCTION_ARGS)
{
	int			used;

	sf_require_ready();
	used = (int) pg_atomic_read_u32(&sf_shared->used_slots);
	for (int i = 0; i < used; i++)
	{
		ShardSlot  *slot = sf_slot(i);
		TimestampTz now = GetCurrentTimestamp();

		LWLockAcquire(slot->lock, LW_EXCLUSIVE);
		snowflake::reset_counters(slot->gen);
		slot->stats_reset = now;
		LWLockRelease(slot->lock);
		pg_atomic_write_u64(&slot->waits, 0);
		pg_atomic_write_u64(&slot->wait_us, 0);
		pg_atomic_write_u64(&slot->refusals, 0);
		pg_atomic_write_u64(&slot->inline_mark_writes, 0);
		pg_atomic_write_u64(&slot->issued, 0);
		pg_atomic_write_u64(&slot->sequence_exhausted, 0);
	}
	pg_atomic_write_u64(&sf_shared->mark_writes, 0);
	PG_RETURN_VOID();
}

/*---- time ranges ----*/

/*
 * The millisecond (layout offset) of a timestamptz argument, which must lie
 * within the layout's range.
 */
static int64
sf_offset_arg(FunctionCallInfo fcinfo)
{
	TimestampTz ts = PG_GETARG_TIMESTAMPTZ(0);
	int64		unix_ms;
	char		first[40], last[40];

	sf_require_ready();
	if (!TIMESTAMP_NOT_FINITE(ts))
	{
		/* floor division: the millisecond that contains ts */
		int64		pg_ms = ts / 1000 - (ts % 1000 < 0 ? 1 : 0);

		unix_ms = pg_ms + snowflake::kPostgresEpochUnixMs;
		if (unix_ms >= sf_layout.epoch_ms && unix_ms <= sf_layout.last_usable_unix_ms())
			return unix_ms - sf_layout.epoch_ms;
	}
	snowflake::format_utc(sf_layout.epoch_ms, first, sizeof(first));
	snowflake::format_utc(sf_layout.last_usable_unix_ms(), last, sizeof(last));
	ereport(ERROR,
			(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
			 errmsg("timestamp out of range for snowflake IDs: \"%s\"", timestamptz_to_str(ts)),
			 errdetail("This layout covers %s to %s.", first, last)));
	return 0;					/* keep the compiler quiet */
}

/* The optional shard argument of min/max_id: -1 for "all shards". */
static int64
sf_shard_arg(FunctionCallInfo fcinfo)
{
	int64		shard;

	if (PG_NARGS() < 2)
		return -1;
	shard = PG_GETARG_INT32(1);
	sf_check_shard_range(shard);
	return shard;
}

/* The smallest ID that can carry the millisecond of ts (for one shard or all). */
extern "C" Datum
snowflake_min_id(PG_FUNCTION_ARGS)
{
	int64		offset = sf_offset_arg(fcinfo);
	int64		shard = sf_shard_arg(fcinfo);

	PG_RETURN_INT64(snowflake::encode(sf_layout, offset, shard < 0 ? 0 : shard, 0));
}

/* The largest ID that can carry the millisecond of ts (for one shard or all). */
extern "C" Datum
snowflake_max_id(PG_FUNCTION_ARGS)
{
	int64		offset = sf_offset_arg(fcinfo);
	int64		shard = sf_shard_arg(fcinfo);

	PG_RETURN_INT64(snowflake::encode(sf_layout, offset,
									  shard < 0 ? sf_layout.max_shard_id() : shard,
									  sf_layout.max_sequence()));
}

/*---- text form ----*/

extern "C" Datum
snowflake_to_text(PG_FUNCTION_ARGS)
{
	int64		id = PG_GETARG_INT64(0);
	char		text[snowflake::kTextLength + 1];

	sf_check_id(id);
	snowflake::to_text(id, text);
	PG_RETURN_TEXT_P(cstring_to_text(text));
}

extern "C" Datum
snowflake_from_text(PG_FUNCTION_ARGS)
{
	text	   *arg = PG_GETARG_TEXT_PP(0);
	const char *data = VARDATA_ANY(arg);
	size_t		len = VARSIZE_ANY_EXHDR(arg);
	char	   *shown = text_to_cstring(arg);
	int64		id = 0;
	size_t		bad = 0;

	switch (snowflake::from_text(data, len, &id, &bad))
	{
		case snowflake::TextProblem::None:
			PG_RETURN_INT64(id);
		case snowflake::TextProblem::WrongLength:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
					 errmsg("invalid input syntax for a snowflake ID: \"%s\"", shown),
					 errdetail("A snowflake ID in text form has %d characters, not %d.",
							   snowflake::kTextLength, (int) pg_mbstrlen_with_len(data, (int) len))));
			break;
		case snowflake::TextProblem::BadCharacter:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
					 errmsg("invalid input syntax for a snowflake ID: \"%s\"", shown),
					 errdetail("Character %d is not a Crockford base32 digit "
							   "(0-9 and A-Z without I, L, O, U).", (int) bad + 1)));
			break;
		case snowflake::TextProblem::OutOfRange:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
					 errmsg("invalid input syntax for a snowflake ID: \"%s\"", shown),
					 errdetail("The value is larger than the largest bigint; the first "
							   "character of a snowflake ID is 0 to 7.")));
			break;
	}
	PG_RETURN_NULL();
}
