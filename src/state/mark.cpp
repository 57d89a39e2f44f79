/*-------------------------------------------------------------------------
 *
 * mark.cpp
 *		The durable mark and its worker (see mark.hpp).
 *
 * The durable mark.  One mark serves every shard of the server.  No ID
 * carries a timestamp above its slot's reserved_offset, and no
 * reserved_offset exceeds what pg_snowflake/mark holds on disk: a call that
 * needs a later timestamp first moves the mark ahead, fsyncs it, and only
 * then raises reserved_offset.  After any restart, clean or crash, every
 * shard resumes strictly above the mark on disk, so it never repeats an
 * ID even if the clock was set back.  The mark worker keeps the mark
 * SF_RESERVE_AHEAD_MS ahead of "clock + max_clock_lead" while IDs are being
 * issued, so steady generation never writes; on a clean shutdown it lowers
 * the mark to the last timestamp actually used, so a clean restart resumes
 * without waiting.  After a crash the generator resumes at most
 * SF_RESERVE_AHEAD_MS + max_clock_lead ahead of the clock and may wait that
 * long (bounded by max_clock_wait).  See state.hpp for the locking rules.
 *
 *-------------------------------------------------------------------------
 */
#include <cerrno>
#include <cstring>

#include "state/fastpath.hpp"
#include "state/mark.hpp"
#include "state/datadir.hpp"
#include "state/wal.hpp"

extern "C"
{
#include "postgres.h"
#include "access/xlog.h"
#include "catalog/pg_control.h"
#include "common/controldata_utils.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "utils/backend_status.h"
#include "utils/guc.h"
#include "utils/wait_event.h"
}

static void sf_shmem_exit(int code, Datum arg);

/* The durable mark as a layout offset (caller holds file_lock). */
static int64
sf_durable_offset(void)
{
	return sf_shared->durable_mark_ms < 0 ? -1 :
		sf_layout.offset_of(sf_shared->durable_mark_ms);
}

/*
 * Raises a slot's reserved_offset to "offset" if lower (caller holds
 * file_lock), but never above the slot's cap: the freshness mark the
 * registry published for the shard (state.hpp).
 */
static void
sf_raise_reserved(ShardSlot *slot, int64 offset)
{
	LWLockAcquire(slot->lock, LW_EXCLUSIVE);
	offset = Min(offset, (int64) pg_atomic_read_u64(&slot->cap));
	if (offset > sf_reserved(slot))
		sf_set_reserved(slot, offset);
	LWLockRelease(slot->lock);
}

/*
 * Makes the durable mark cover at least "wanted" (a layout offset): unless it
 * already does, writes max(wanted, clock + lead + SF_RESERVE_AHEAD_MS).  Then
 * raises the reserved_offset of "slot" (or, for the worker, of every slot) to
 * the mark.  Returns false with *error filled when the write fails.  Caller
 * must not hold any snowflake lock.
 */
static bool
sf_move_mark(ShardSlot *slot, int64 wanted, snowflake::FileError *error)
{
	bool		ok = true;

	LWLockAcquire(sf_shared->file_lock, LW_EXCLUSIVE);
	if (sf_durable_offset() < wanted)
	{
		int64		now = sf_now_offset();
		int64		target = Max(wanted, now + sf_lead_units() +
								 Max(sf_layout.units(SF_RESERVE_AHEAD_MS), (int64) 1));

		/* never a mark the layout cannot represent (wanted never is one) */
		target = Max(Min(target, sf_layout.max_offset()), wanted);

		/* the mark records the last millisecond of its unit */
		ok = sf_write_mark(sf_layout.unix_ms_end_of(target), error);
		if (ok)
		{
			sf_log_mark(sf_shared->durable_mark_ms);
			pg_atomic_fetch_add_u64(&sf_shared->mark_writes, 1);
			if (slot != NULL)
				pg_atomic_fetch_add_u64(&slot->inline_mark_writes, 1);
		}
	}
	if (ok)
	{
		int64		mark = sf_durable_offset();

		if (slot != NULL)
			sf_raise_reserved(slot, mark);
		else
		{
			int			used = (int) pg_atomic_read_u32(&sf_shared->used_slots);

			for (int i = 0; i < used; i++)
				sf_raise_reserved(sf_slot(i), mark);
		}
	}
	LWLockRelease(sf_shared->file_lock);
	return ok;
}

/* Raises every slot's reserved_offset to the durable mark (the registry worker). */
void
sf_reraise_reserved(void)
{
	snowflake::FileError error = {"", "", 0};

	(void) sf_move_mark(NULL, -1, &error);	/* never writes: the mark covers -1 */
}

/*
 * Makes every shard resume strictly above "offset": the durable mark covers
 * it first (fsynced and WAL-logged), then the point shards resume above at
 * their first use, then each shard in use.  For snowflake_adopt_database().
 */
void
sf_raise_floor(int64 offset)
{
	int			used;
	snowflake::FileError error = {"", "", 0};
	bool		damaged = false;
	bool		ok;

	sf_extend_mark(NULL, offset);
	LWLockAcquire(sf_shared->file_lock, LW_EXCLUSIVE);
	/*
	 * Import shards resume above their own reservations, not above the mark:
	 * the floor is recorded for them too (pg_snowflake/imports and WAL), so
	 * that an import shard whose reservation was lost with pg_snowflake/
	 * (pg_upgrade, a copied database) never reissues an ID below it.
	 */
	ok = sf_write_import_reservation(-1, sf_layout.unix_ms_end_of(offset), &error, &damaged);
	if (ok)
		sf_log_import_reservation(-1, sf_layout.unix_ms_end_of(offset));
	else
	{
		LWLockRelease(sf_shared->file_lock);
		if (damaged)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("could not record the snowflake import floor"),
					 errdetail("File \"pg_snowflake/imports\" is not a valid record.")));
		sf_report_file_error("import floor", error);
	}
	if (offset > sf_shared->resume_offset)
		sf_shared->resume_offset = offset;
	used = (int) pg_atomic_read_u32(&sf_shared->used_slots);
	for (int i = 0; i < used; i++)
	{
		ShardSlot  *slot = sf_slot(i);

		/* both generators; the next call re-reserves up to the mark if needed */
		LWLockAcquire(slot->lock, LW_EXCLUSIVE);
		sf_slot_resume_above(slot, offset);
		LWLockRelease(slot->lock);
	}
	LWLockRelease(sf_shared->file_lock);
	sf_invalidate_ready();		/* every backend's calls check everything again */
}

/*
 * Moves every live shard of this server up to "offset" without issuing an
 * ID (the commit watermark, for idle shards; watermark.cpp): afterwards no
 * live shard issues an ID at a timestamp at or below the value returned,
 * in this run or any later one.  In order:
 *	- the durable mark covers it (fsynced and WAL-logged: a restart, and a
 *	  standby that replayed the record, resume above it).  sf_move_mark
 *	  writes only when the mark is below, and then SF_RESERVE_AHEAD_MS
 *	  ahead of the clock; the positions moved below count as activity for
 *	  the mark worker, which then keeps the mark ahead as while IDs are
 *	  issued (about two writes a second on a polled idle server);
 *	- resume_offset, above which a shard without a slot resumes when it
 *	  gets one (shmem.cpp's sf_slot_for reads it under file_lock, held
 *	  shared until the slot is published; it is raised here under file_lock
 *	  exclusive, so a slot is either in used_slots below or made after);
 *	- each live slot's position, never past its reserved_offset (which
 *	  never passes the durable mark, nor the registry's cap).
 * The value moved to never exceeds the mark; returns it (-1: nothing
 * moved).  A failed write of the mark is not reported here (the generating
 * calls report it): the shards then move only as far as the mark allows.
 * Raises no error of its own (XLogFlush fails as at any commit).
 */
int64
sf_advance_shards(int64 offset)
{
	snowflake::FileError error = {"", "", 0};
	int			used;

	if (offset < 0 || sf_shared->refused || sf_shared->state_refused)
		return -1;
	(void) sf_move_mark(NULL, offset, &error);
	LWLockAcquire(sf_shared->file_lock, LW_EXCLUSIVE);
	offset = Min(offset, sf_durable_offset());
	if (offset > sf_shared->resume_offset)
		sf_shared->resume_offset = offset;
	used = (int) pg_atomic_read_u32(&sf_shared->used_slots);
	for (int i = 0; i < used && offset >= 0; i++)
	{
		ShardSlot  *slot = sf_slot(i);

		if (slot->import_slot)
			continue;			/* import shards keep their own reservations */
		LWLockAcquire(slot->lock, LW_EXCLUSIVE);
		sf_slot_advance(slot, Min(offset, sf_reserved(slot)));
		LWLockRelease(slot->lock);
	}
	LWLockRelease(sf_shared->file_lock);

	/*
	 * The mark's WAL record out of the buffers, so that a streaming standby
	 * receives it now rather than at the next flush (which on an idle
	 * primary can be many seconds later): a standby that replayed it
	 * resumes above "offset" once promoted.  At most once per record.
	 */
	if (offset >= 0 && !RecoveryInProgress())
		XLogFlush((XLogRecPtr) pg_atomic_read_u64(&sf_shared->mark_lsn));
	return offset;
}

/* Called by a generating backend whose next ID lies beyond its slot's mark. */
void
sf_extend_mark(ShardSlot *slot, int64 wanted_offset)
{
	snowflake::FileError error = {"", "", 0};

	if (!sf_move_mark(slot, wanted_offset, &error))
		sf_report_file_error("high-water mark", error);
}

/*
 * On a clean shutdown: lower the mark to the last timestamp actually used by
 * any shard, so that a clean restart resumes without waiting.  Runs in the
 * postmaster as it exits (see sf_shmem_exit), when no other process is left,
 * so it takes no lock.
 */
static void
sf_settle_mark(void)
{
	snowflake::FileError error = {"", "", 0};
	int64		last = -1;
	int			used = (int) pg_atomic_read_u32(&sf_shared->used_slots);

	if (used == 0)
		return;					/* nothing issued here: the mark stays as it is */
	for (int i = 0; i < used; i++)
		if (!sf_slot(i)->import_slot)	/* imports have their own reservations */
			last = Max(last, sf_slot_last(sf_slot(i), NULL));

	/*
	 * Never below the point shards resume above: the mark found at start,
	 * raised by WAL replay (on a standby that generated with
	 * allow_on_standby, the primary's mark) and by snowflake_raise_floor().
	 * Replay after a restart begins at the restartpoint and would not raise
	 * it again.
	 */
	last = Max(last, sf_shared->resume_offset);
	if (last < 0 || last >= sf_durable_offset() ||
		sf_write_mark(sf_layout.unix_ms_end_of(last), &error))
		return;
	errno = error.err;
	ereport(LOG,
			(errcode_for_file_access(),
			 errmsg("could not lower the snowflake high-water mark at shutdown: "
					"could not %s \"%s\": %m", error.operation, error.path),
			 errdetail("The higher mark stays in place; the next start may wait up "
					   "to %d ms for the clock.", SF_RESERVE_AHEAD_MS)));
}

/*
 * The postmaster's exit: settle the mark if, and only if, the server shut
 * down cleanly (pg_control says so: a shutdown checkpoint was written after
 * every backend had exited).  After an immediate stop or a crash the mark
 * stays where it was, which is always safe.  A worker that is merely
 * terminated (pg_terminate_backend, kill) never lowers the mark.
 */
static void
sf_shmem_exit(int code, Datum)
{
	bool		crc_ok = false;
	ControlFileData *control;

	if (code != 0 || sf_shared == NULL || sf_shared->refused || sf_shared->state_refused)
		return;
	control = get_controlfile(".", &crc_ok);
	if (crc_ok && (control->state == DB_SHUTDOWNED ||
				   control->state == DB_SHUTDOWNED_IN_RECOVERY))
		sf_settle_mark();
}

/*
 * A number that changes whenever any shard issues an ID: the sum of every
 * slot's last (timestamp, sequence) position, which strictly increases per
 * slot.  Unlike the ids_issued counters, snowflake_stats_reset() leaves it
 * alone, so a reset cannot make the worker think the server is idle.
 */
static uint64
sf_activity(int used, int64 *last, int64 *reserved)
{
	uint64		activity = 0;

	for (int i = 0; i < used; i++)
	{
		snowflake::GeneratorState gen;
		int64		slot_reserved;

		/*
		 * Import shards are bounded by their own reservations (a UTC day
		 * at a time, backfill.cpp), not by the mark: a resumed import slot
		 * stands at the end of its reserved day, which must not carry the
		 * mark, and so every live shard, ahead of the clock.
		 */
		if (sf_slot(i)->import_slot)
			continue;
		sf_slot_snapshot(sf_slot(i), &gen, &slot_reserved, NULL);
		if (gen.last_offset < 0)
			continue;			/* a slot that has issued nothing needs no mark */
		activity += ((uint64) gen.last_offset << sf_layout.sequence_bits) +
			(uint64) gen.last_sequence;
		*last = Max(*last, gen.last_offset);
		*reserved = Min(*reserved, slot_reserved);
	}
	return activity;
}

/* Moves the mark ahead when IDs were issued recently and it is running out. */
static void
sf_keep_mark_ahead(uint64 *seen_activity, int64 *active_until)
{
	int64		now = sf_now_offset();
	int64		ahead = Max(sf_layout.units(SF_RESERVE_AHEAD_MS) / 2, (int64) 1);
	int64		last = -1;
	int64		reserved = PG_INT64_MAX;
	int64		horizon;
	int			used = (int) pg_atomic_read_u32(&sf_shared->used_slots);
	uint64		activity = sf_activity(used, &last, &reserved);
	snowflake::FileError error = {"", "", 0};

	if (activity != *seen_activity)
	{
		*seen_activity = activity;
		*active_until = now + sf_layout.units(SF_WORKER_ACTIVE_MS);
	}
	if (used == 0 || now > *active_until || reserved == PG_INT64_MAX || now < 0)
		return;					/* idle, nothing issued yet, or before the epoch: no writes */

	horizon = Max(now + sf_lead_units(), last);
	if (reserved - horizon >= ahead)
		return;
	if (!sf_move_mark(NULL, horizon + ahead, &error))
	{
		errno = error.err;
		ereport(sf_file_error_level(error, WARNING),
				(errcode_for_file_access(),
				 errmsg("could not move the snowflake high-water mark ahead: could not %s \"%s\": %m",
						error.operation, error.path),
				 errdetail("Generating calls will try to write it themselves.")));
	}
}

/*
 * The mark worker.  It connects to no database (like the logical replication
 * launcher) so that it shows in pg_stat_activity.  On SIGTERM it exits with
 * code 1, so that the postmaster starts it again a second later unless the
 * server is shutting down; the mark is settled by the postmaster at a clean
 * shutdown, never by the worker.
 */
extern "C" void
snowflake_mark_worker_main(Datum)
{
	uint64		seen_activity = 0;
	int64		active_until = 0;
	SfShardsLogged shards_logged;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
	BackgroundWorkerUnblockSignals();

	if (sf_shared == NULL || sf_shared->refused || sf_shared->state_refused)
		proc_exit(0);			/* nothing to maintain; do not restart */
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	pgstat_report_activity(STATE_RUNNING, "keeping the snowflake high-water mark ahead");
	memset(&shards_logged, 0, sizeof(shards_logged));
	sf_keep_shards_logged(&shards_logged);

	for (;;)
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 SF_WORKER_TICK_MS, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		/* absorbs procsignal barriers (DROP DATABASE waits for them) */
		CHECK_FOR_INTERRUPTS();

		if (ShutdownRequestPending)
			proc_exit(1);
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		sf_keep_mark_ahead(&seen_activity, &active_until);
		sf_keep_shards_logged(&shards_logged);
	}
}

/*
 * Registers one of snowflake's background workers: started once recovery is
 * over (a standby runs none), restarted a second after it exits with code 1.
 */
void
sf_register_worker(const char *function, const char *name, int flags)
{
	BackgroundWorker worker;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = flags;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = 1;
	strlcpy(worker.bgw_library_name, "snowflake", BGW_MAXLEN);
	strlcpy(worker.bgw_function_name, function, BGW_MAXLEN);
	strlcpy(worker.bgw_name, name, BGW_MAXLEN);
	strlcpy(worker.bgw_type, name, BGW_MAXLEN);
	RegisterBackgroundWorker(&worker);
}

/*
 * At start, in the postmaster: settle the mark when it exits (sf_shmem_exit).
 * Called by the module's shmem_startup_hook (snowflake.cpp), after
 * sf_shmem_init().
 */
void
sf_mark_shmem_init(void)
{
	if (!IsUnderPostmaster)
		on_shmem_exit(sf_shmem_exit, (Datum) 0);
}

/* Registers the mark worker (preload only). */
void
sf_mark_init(void)
{
	sf_register_worker("snowflake_mark_worker_main", "snowflake mark worker",
					   BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION);
}
