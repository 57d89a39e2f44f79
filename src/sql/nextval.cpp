/*-------------------------------------------------------------------------
 *
 * nextval.cpp
 *		Generation: snowflake_nextval(), snowflake_nextval(shard_id) and
 *		snowflake_nextval_batch(), with the checks every generating call makes
 *		(preloaded, sound state, its right to the shard, the database's
 *		origin), the generator step under either snowflake.generator, and the
 *		waits and refusals when the clock or the marks do not allow an ID.
 *
 * The SQL layer, at the top: it may call the state layer (shmem, fastpath,
 * mark, wal), the registry (the fencing check, the freshness mark), origin
 * and decode.  Every core and statefile function is noexcept and never
 * allocates, so no C++ exception can reach PostgreSQL, and no frame that may
 * ereport holds a C++ object with a destructor.  The locking rules are in
 * state.hpp.
 *
 *-------------------------------------------------------------------------
 */
#include <cinttypes>
#include <cstring>

#include "sql/decode.hpp"
#include "state/fastpath.hpp"
#include "state/history.hpp"
#include "state/mark.hpp"
#include "sql/origin.hpp"
#include "registry/registry.hpp"
#include "settings/seqstart.hpp"
#include "state/wal.hpp"
#include "state/watermark.hpp"

extern "C"
{
#include "postgres.h"
#include "access/xlog.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "utils/wait_event.h"
}

extern "C"
{
PG_FUNCTION_INFO_V1(snowflake_nextval);
PG_FUNCTION_INFO_V1(snowflake_nextval_shard);
PG_FUNCTION_INFO_V1(snowflake_nextval_batch);
}

using snowflake::Outcome;

/* Formats a layout offset as a UTC time. */
static void
sf_format_offset(int64 offset, char *buf, size_t buflen)
{
	snowflake::format_utc(sf_layout.unix_ms_of(offset), buf, buflen);
}

/*---- generation ----*/

/* What a waiting call knows about why it waits, copied under the lock. */
typedef struct SfWaitContext
{
	int64		started_us;		/* -1 until the first wait */
	int64		last_step_ms;	/* latest backward step in ms (to the unit), 0 if none */
	int64		last_step_at;	/* clock offset just after it */
} SfWaitContext;

/* Counts a refusal and raises the error for a wait that ran out. */
static void
sf_fail_wait(ShardSlot *slot, const snowflake::Step &step, int64 now, const SfWaitContext *ctx)
{
	char		last[40], when[40];
	int64		ahead = (step.wait_until + sf_lead_units() - now) * sf_layout.unit_ms;

	pg_atomic_fetch_add_u64(&slot->refusals_clock, 1);
	sf_format_offset(step.wait_until + sf_lead_units(), last, sizeof(last));
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

	sleep_ms = (long) Min((step.wait_until - now) * sf_layout.unit_ms,
						  (int64) sf_max_clock_wait - waited_ms);
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
	snowflake::format_utc(sf_layout.unix_ms_of(now), clock, sizeof(clock));
	ereport(ERROR,
			(errcode(ERRCODE_SYSTEM_ERROR),
			 errmsg("could not generate a snowflake ID: the clock reads earlier "
					"than snowflake.epoch"),
			 errdetail("snowflake.epoch is %s and the clock reads %s.", epoch, clock),
			 errhint("Check the server's time synchronisation, or snowflake.epoch; "
					 "generation resumes by itself once the clock passes the epoch.")));
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
	if (unlikely(sf_import_shard(explicit_shard || sf_registry_enabled ? shard : sf_shard_id)))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("shard " INT64_FORMAT " is reserved for imports",
						explicit_shard || sf_registry_enabled ? shard : (int64) sf_shard_id),
				 errdetail("It is listed in snowflake.import_shards (\"%s\"): only "
						   "snowflake_nextval_at() generates for it, so that imported IDs "
						   "never meet live ones.", sf_import_shards),
				 errhint("Generate live IDs on another shard, or remove it from "
						 "snowflake.import_shards.")));
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
	slot = sf_live_slot(shard, explicit_shard, true);
	if (pg_atomic_read_u32(&sf_shared->layout_recorded) == 0)
	{
		int64		now = sf_now_offset();

		/* a mistaken epoch must not be recorded before any ID could be issued */
		if (now < 0)
		{
			pg_atomic_fetch_add_u64(&slot->refusals_epoch, 1);
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
 * length.  With the atomic generator, "first" is the step sf_issue took
 * (and now_first its clock reading): the loop starts from it.
 *
 * A call that waited (for the clock, or for the durable or the registry's
 * mark) checks its right to the shard again before it issues: a lease
 * deadline or a reload may have passed while it slept.
 */
static pg_noinline int64
sf_issue_slow(ShardSlot *slot, int64 max_count, int64 *count, bool explicit_shard,
			  const snowflake::Step *first, int64 now_first)
{
	SfWaitContext ctx = {-1, 0, 0};
	int64		registry_wait_us = -1;
	bool		waited = false;
	bool		reread = false;

	for (;;)
	{
		snowflake::Step step;
		int64		now;

		if (unlikely(waited))
			(void) sf_check_right(slot->shard_id, explicit_shard, "this call waited");

		if (sf_generator == SF_GENERATOR_ATOMIC)
		{
			/* lock-free; the LWLock only for the slow path below */
			if (first != NULL)
			{
				/* sf_issue's step, which it did not finish (it held the watermark) */
				step = *first;
				now = now_first;
				first = NULL;
			}
			else
			{
				sf_watermark_hold(slot, false);	/* commit watermark: first ID of the transaction */
				(void) sf_fastpath_step(slot, max_count, &now, &step, sf_start_sequence());
			}
			if (step.outcome == Outcome::Wait)
			{
				LWLockAcquire(slot->lock, LW_SHARED);
				ctx.last_step_ms = slot->gen.last_step_back * sf_layout.unit_ms;
				ctx.last_step_at = slot->gen.last_step_back_at;
				LWLockRelease(slot->lock);
			}
		}
		else
		{
			/* the clock is read under the lock so that readings are ordered */
			int64		start = sf_draw_start_sequence();	/* per backend, no lock */

			LWLockAcquire(slot->lock, LW_EXCLUSIVE);
			now = sf_now_offset();
			sf_watermark_hold(slot, true);	/* commit watermark: first ID of the transaction */
			step = snowflake::next_run(slot->gen, sf_layout, slot->shard_id, now,
									   sf_lead_units(), sf_reserved(slot), max_count, start);
			if (step.outcome == Outcome::Wait)
			{
				ctx.last_step_ms = slot->gen.last_step_back * sf_layout.unit_ms;
				ctx.last_step_at = slot->gen.last_step_back_at;
			}
			LWLockRelease(slot->lock);
		}

		if (step.stepped_back * sf_layout.unit_ms >= SF_WARN_STEP_MS)
			sf_warn_step(step.stepped_back * sf_layout.unit_ms, slot->shard_id);

		switch (step.outcome)
		{
			case Outcome::Issued:
				if (count)
					*count = step.count;
				return step.id;
			case Outcome::Wait:

				/*
				 * The lock-free step reads the clock before it loads the
				 * word, so a backend descheduled in between (a loaded
				 * machine) brings a reading that is stale by then, and IDs
				 * issued meanwhile look further ahead of it than the lead.
				 * Before the first wait, one more step with a fresh reading:
				 * only a call that is still ahead waits (and counts).  The
				 * LWLock generator reads the clock under the lock.
				 */
				if (sf_generator == SF_GENERATOR_ATOMIC && !reread)
				{
					reread = true;
					break;
				}
				sf_wait_for_clock(slot, step, now, &ctx);
				waited = true;
				break;
			case Outcome::NeedReservation:
				sf_extend_mark(slot, step.wanted);
				sf_registry_await(slot, step.wanted, &registry_wait_us);
				waited = true;
				CHECK_FOR_INTERRUPTS();	/* never a loop that cannot be cancelled */
				break;
			case Outcome::ClockBeforeEpoch:
				pg_atomic_fetch_add_u64(&slot->refusals_epoch, 1);
				sf_fail_before_epoch(now);
				break;
			case Outcome::Exhausted:
				{
					char		last[40];

					pg_atomic_fetch_add_u64(&slot->refusals_exhausted, 1);
					snowflake::format_utc(sf_layout.last_unix_ms(), last, sizeof(last));
					ereport(ERROR,
							(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
							 errmsg("could not generate a snowflake ID: the timestamp field "
									"is used up"),
							 errdetail("This layout represents times up to %s.", last)));
				}
				break;
			case Outcome::TimeDecreased:
			case Outcome::UnitFull:
				/* outcomes of imports (backfill.cpp), never of a live step */
				elog(ERROR, "snowflake: unexpected outcome of a live generator step");
				break;
		}
	}
}

/*
 * sf_issue_slow's common case, inline: one lock-free step that issued
 * without anything to report (a backward clock step, a wait, a reservation,
 * a refusal); anything else goes on in sf_issue_slow with that step, which
 * is not repeated.
 */
static pg_attribute_always_inline int64
sf_issue(ShardSlot *slot, int64 max_count, int64 *count, bool explicit_shard)
{
	if (likely(sf_generator == SF_GENERATOR_ATOMIC))
	{
		snowflake::Step step;
		int64		now;

		sf_watermark_hold(slot, false);	/* commit watermark: first ID of the transaction */
		/* the draw is per backend, no lock */
		if (likely(sf_fastpath_step(slot, max_count, &now, &step, sf_start_sequence())))
		{
			if (count)
				*count = step.count;
			return step.id;
		}
		return sf_issue_slow(slot, max_count, count, explicit_shard, &step, now);
	}
	return sf_issue_slow(slot, max_count, count, explicit_shard, NULL, 0);
}

/*---- the ready test ----*/

/*
 * What a call that passed every check of sf_prepare() and sf_check_origin()
 * leaves for the next call of this backend: the slot it found, and what the
 * checks depended on.  The next call for the same shard skips them while
 * nothing they depend on changed:
 *	- this backend's settings (sf_settings_generation: an assignment of
 *	  shard_id, shard_ids, import_shards or allow_on_standby, i.e. a reload);
 *	- the server's state, for every backend (SnowflakeShared.ready_generation:
 *	  a refusal put in force by WAL replay, a shard claimed or released by the
 *	  registry worker, the floor raised, see sf_invalidate_ready);
 *	- and, with a registry, the fencing check itself, which stays per call:
 *	  the grant read, its deadline against the coarse clock, and its shard,
 *	  which must still be the one the slot is for.  A server that lost its
 *	  lease stops at once, as before.
 * What the checks found does not change otherwise: the library is preloaded,
 * a refusal is only ever put in force by WAL replay (so never once a backend
 * has left recovery, and never cleared), a backend never goes back into
 * recovery, a slot's shard and kind are fixed once published, its live
 * history once recorded stays recorded, the layout once recorded stays
 * recorded, and the database's origin is checked once per backend anyway.
 * So no call is let through that the checks would refuse.  Nothing is
 * remembered in recovery (a standby's calls take every check).  What the
 * generator itself checks (the reservation, the registry's mark, the clock)
 * it checks on every call, on the slot's words.
 * [0]: snowflake_nextval(); [1]: the last shard of snowflake_nextval(shard).
 */
typedef struct SfReady
{
	ShardSlot  *slot;			/* NULL: check everything */
	int64		shard;			/* the shard asked for (sf_shard_id for [0]) */
	int64		held;			/* the shard generated for (with a registry: held) */
	uint32		settings_generation;
	uint64		shared_generation;
} SfReady;

static SfReady sf_ready[2];

/* The slot of a call that may skip sf_prepare's checks, or NULL (see SfReady). */
static pg_attribute_always_inline ShardSlot *
sf_ready_slot(int64 shard, bool explicit_shard)
{
	SfReady    *r = &sf_ready[explicit_shard];
	int64		held;

	if (likely(r->slot != NULL && r->shard == shard &&
			   r->settings_generation == sf_settings_generation &&
			   r->shared_generation == pg_atomic_read_u64(&sf_shared->ready_generation)) &&
		(!sf_registry_enabled || (sf_registry_granted(&held) && held == r->held)))
		return r->slot;
	return NULL;
}

/*
 * Every check of a generating call (sf_prepare, then the database's
 * origin), and the slot it found remembered for the next call (SfReady).
 */
static ShardSlot *
sf_prepare_ready(int64 shard, bool explicit_shard, Oid fn_oid)
{
	SfReady    *r = &sf_ready[explicit_shard];
	/* read before the checks: a change after it is seen by the next call */
	uint32		settings_generation = sf_settings_generation;
	uint64		shared_generation = 0;
	ShardSlot  *slot;

	r->slot = NULL;
	if (sf_shared != NULL)
		shared_generation = pg_atomic_read_u64(&sf_shared->ready_generation);
	slot = sf_prepare(shard, explicit_shard);
	sf_check_origin(fn_oid);
	/* a standby's calls take every check each time (RecoveryInProgress is cached) */
	if (sf_origin_checked && !RecoveryInProgress())
	{
		r->shard = shard;
		r->held = slot->shard_id;
		r->settings_generation = settings_generation;
		r->shared_generation = shared_generation;
		r->slot = slot;
	}
	return slot;
}

/*---- SQL-callable functions ----*/

extern "C" Datum
snowflake_nextval(PG_FUNCTION_ARGS)
{
	ShardSlot  *slot = sf_ready_slot(sf_shard_id, false);

	if (unlikely(slot == NULL))
		slot = sf_prepare_ready(sf_shard_id, false, fcinfo->flinfo->fn_oid);
	PG_RETURN_INT64(sf_issue(slot, 1, NULL, false));
}

extern "C" Datum
snowflake_nextval_shard(PG_FUNCTION_ARGS)
{
	ShardSlot  *slot = sf_ready_slot(PG_GETARG_INT32(0), true);

	if (unlikely(slot == NULL))
		slot = sf_prepare_ready(PG_GETARG_INT32(0), true, fcinfo->flinfo->fn_oid);
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
