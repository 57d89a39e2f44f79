/*-------------------------------------------------------------------------
 *
 * shmem.cpp
 *		The generator's shared memory: SnowflakeShared and the shard slots
 *		(state.hpp), created at server start from the records in
 *		pg_snowflake/, and a slot for each shard on its first use.
 *
 * It may call the core, the settings, slots.cpp (where the memory and
 * each slot are), counters.cpp, datadir.cpp (the records read at start) and
 * fastpath.cpp (a slot's lock-free words).  The locking rules are
 * in state.hpp.
 *
 *-------------------------------------------------------------------------
 */
#include <cstring>
#include <unistd.h>

#include "state/counters.hpp"
#include "state/fastpath.hpp"
#include "state/datadir.hpp"

extern "C"
{
#include "postgres.h"
#include "common/file_perm.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/timestamp.h"
}

#define SF_FIXED_LOCKS 2		/* file_lock, assign_lock; then one per slot */

/*---- shared memory ----*/

/* The shared memory to ask for (the module's shmem_request_hook, snowflake.cpp). */
Size
sf_shmem_size(void)
{
	/* the slots (slots.cpp), then the counters' cells */
	return sf_slots_size() + sf_counters_size();
}

/* The LWLocks of the tranche SNOWFLAKE_TRANCHE to ask for. */
int
sf_shmem_lock_count(void)
{
	return SF_FIXED_LOCKS + sf_num_slots();
}

/* Creates and initialises the shared state (the module's shmem_startup_hook). */
void
sf_shmem_init(void)
{
	bool		found;
	SnowflakeShared fresh;

	/* the cluster's modes (group access or not) for pg_snowflake/ and its files */
	snowflake::set_create_modes(pg_dir_create_mode, pg_file_create_mode);
	if (!IsUnderPostmaster)
	{
		snowflake::FileError error = {"", "", 0};

		if (!snowflake::apply_create_modes(&error))
		{
			errno = error.err;
			ereport(WARNING,
					(errcode_for_file_access(),
					 errmsg("could not %s \"%s\": %m", error.operation, error.path)));
		}
	}

	/* read the files before taking any lock */
	memset(&fresh, 0, sizeof(fresh));
	/* a data directory restored from a backup: its mark may be older than its IDs */
	fresh.started_from_backup = access("backup_label", F_OK) == 0 ||
		access("recovery.signal", F_OK) == 0;
	fresh.resume_offset = -1;
	fresh.durable_mark_ms = -1;
	pg_atomic_init_u32(&fresh.layout_recorded, 0);
	sf_load_recorded_state(&fresh);

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	sf_shared = (SnowflakeShared *) ShmemInitStruct("snowflake", sf_shmem_size(), &found);
	if (!found)
	{
		LWLockPadded *locks = GetNamedLWLockTranche(SNOWFLAKE_TRANCHE);
		int64		shards = sf_layout.max_shard_id() + 1;

		memcpy(sf_shared, &fresh, sizeof(fresh));
		sf_shared->file_lock = &locks[0].lock;
		sf_shared->assign_lock = &locks[1].lock;
		sf_shared->num_slots = sf_num_slots();
		pg_atomic_init_u32(&sf_shared->used_slots, 0);
		pg_atomic_init_u32(&sf_shared->layout_recorded,
						   pg_atomic_read_u32(&fresh.layout_recorded));
		pg_atomic_init_u64(&sf_shared->mark_writes, 0);
		pg_atomic_init_u64(&sf_shared->mark_lsn, 0);
		pg_atomic_init_u64(&sf_shared->ready_generation, 0);
		pg_atomic_init_u32(&sf_shared->registry_shard, 0);
		for (int64 i = 0; i < shards; i++)
			pg_atomic_init_u32(&sf_index()[i], 0);
		for (int i = 0; i < sf_shared->num_slots; i++)
			sf_slot(i)->lock = &locks[SF_FIXED_LOCKS + i].lock;
	}
	/* the cells of counters.cpp follow the slots (cache-line aligned, as they are) */
	sf_counters_init(sf_slot(sf_shared->num_slots), found);
	LWLockRelease(AddinShmemInitLock);

	if (!found)
		sf_warn_recorded_state(&fresh);

}

/*
 * The slot of a shard, given one on its first use: resumed above the mark
 * found at start or replayed from WAL, which covers every live ID any shard
 * issued before the start or, on a promoted standby, on the old primary, and
 * above "start_above" (history.cpp: for a live shard, every ID it imported
 * in an earlier run).  An import shard resumes above its own recorded
 * reservation instead ("start_above"); "live_from" is where its live history
 * begins (-1: none), which ends at that same mark.
 *
 * The last free slot is kept for snowflake.shard_id while it has none, so
 * logical shards (snowflake_nextval(shard), which only roles granted EXECUTE
 * may call) can never take away the slot of this server's own shard.
 */
static ShardSlot *
sf_slot_for(int64 shard, bool logical, bool import, int64 start_above, int64 live_from)
{
	uint32		n = pg_atomic_read_u32(&sf_index()[shard]);
	ShardSlot  *slot;
	int			used;
	int			limit;

	if (n > 0)
		return sf_slot((int) n - 1);

	LWLockAcquire(sf_shared->assign_lock, LW_EXCLUSIVE);
	n = pg_atomic_read_u32(&sf_index()[shard]);
	used = (int) pg_atomic_read_u32(&sf_shared->used_slots);
	limit = sf_shared->num_slots;
	if (logical && shard != sf_shard_id && sf_shard_id >= 0 &&
		sf_shard_id <= sf_layout.max_shard_id() &&
		pg_atomic_read_u32(&sf_index()[sf_shard_id]) == 0)
		limit--;
	if (n == 0 && used < limit)
	{
		slot = sf_slot(used);
		slot->shard_id = (int32) shard;
		slot->import_slot = import;
		slot->live_recorded = false;
		slot->gen = snowflake::kFreshState;
		/*
		 * file_lock (shared) is held until the slot is published, so that a
		 * concurrent raise of resume_offset (WAL replay, snowflake_raise_floor)
		 * either comes first and is seen here, or comes after and finds the
		 * slot in used_slots.
		 */
		LWLockAcquire(sf_shared->file_lock, LW_SHARED);
		/*
		 * An import shard resumes above its own recorded reservation, which
		 * bounds every ID it ever issued (backfill.cpp), and reserves no
		 * further than that until it records more; every other shard
		 * resumes above the server's mark and what it imported before.
		 */
		if (import)
			snowflake::resume_above(slot->gen, sf_layout, start_above);
		else
			snowflake::resume_above(slot->gen, sf_layout,
									Max(sf_shared->resume_offset, start_above));
		/* the live IDs of an import shard, if any, all lie at or below the mark */
		slot->live_from = import ? live_from : -1;
		slot->live_to = import && live_from >= 0 ? sf_shared->resume_offset : -1;
		sf_fastpath_init_slot(slot);
		if (import)
			pg_atomic_write_u64(&slot->cap, (uint64) start_above);
		slot->stats_reset = GetCurrentTimestamp();
		pg_atomic_init_u64(&slot->waits, 0);
		pg_atomic_init_u64(&slot->wait_us, 0);
		pg_atomic_init_u64(&slot->refusals_clock, 0);
		pg_atomic_init_u64(&slot->refusals_epoch, 0);
		pg_atomic_init_u64(&slot->refusals_exhausted, 0);
		pg_atomic_init_u64(&slot->refusals_registry_mark, 0);
		pg_atomic_init_u64(&slot->registry_waits, 0);
		pg_atomic_init_u64(&slot->registry_wait_us, 0);
		pg_atomic_init_u64(&slot->inline_mark_writes, 0);
		/* publish the slot only once it is initialised */
		pg_write_barrier();
		n = (uint32) used + 1;
		pg_atomic_write_u32(&sf_index()[shard], n);
		pg_atomic_write_u32(&sf_shared->used_slots, n);
		LWLockRelease(sf_shared->file_lock);
	}
	LWLockRelease(sf_shared->assign_lock);

	if (n == 0)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("too many shards: this server has generated IDs for %d shards since it "
						"started", used),
				 errdetail("Shard " INT64_FORMAT " would need state of its own, and "
						   "snowflake.max_shards is %d%s.", shard, sf_max_shards,
						   limit < sf_shared->num_slots ?
						   " (one of them kept for snowflake.shard_id)" : ""),
				 errhint("Raise snowflake.max_shards and restart the server.")));
	return sf_slot((int) n - 1);
}

/* The slot of a shard if it has one, NULL otherwise (never gives one). */
ShardSlot *
sf_slot_if_any(int64 shard)
{
	uint32		n = pg_atomic_read_u32(&sf_index()[shard]);

	return n > 0 ? sf_slot((int) n - 1) : NULL;
}

/*
 * The slot of a live shard, given one on its first use (see sf_slot_for);
 * history.cpp's sf_live_slot() says what it must start above.
 */
ShardSlot *
sf_slot_for_shard(int64 shard, bool logical, int64 start_above)
{
	ShardSlot  *slot = sf_slot_for(shard, logical, false, start_above, -1);

	/* a shard imported into since the start stays an import shard until a restart */
	if (slot->import_slot)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("shard %d was used for imports since the server started",
						slot->shard_id),
				 errdetail("Its IDs carry past times; live IDs on it could equal imported ones."),
				 errhint("Generate live IDs on a shard that was never an import shard.")));
	return slot;
}

/*
 * The slot of an import shard; on its first use it resumes above
 * reserved_offset, the reservation recorded for it, and its cap is that;
 * live_from is where the shard's live history begins (-1: it has none).
 * Refuses a shard that has a slot made for live IDs since the start.
 */
ShardSlot *
sf_slot_for_import(int64 shard, int64 reserved_offset, int64 live_from)
{
	ShardSlot  *slot = sf_slot_for(shard, true, true, reserved_offset, live_from);

	if (!slot->import_slot)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("shard %d generated live IDs since the server started",
						slot->shard_id),
				 errdetail("An import shard must be one that no server ever generated live "
						   "IDs for; this one did, here, before it was listed in "
						   "snowflake.import_shards."),
				 errhint("Choose another shard for imports.")));
	return slot;
}

/*
 * Whether a shard has a slot or could get one now (the registry worker asks
 * before it claims a shard, so that it never holds a shard it cannot use).
 */
bool
sf_slot_available(int64 shard)
{
	return pg_atomic_read_u32(&sf_index()[shard]) > 0 ||
		(int) pg_atomic_read_u32(&sf_shared->used_slots) < sf_shared->num_slots;
}

/* Errors out unless the library was preloaded and its recorded layout is sound. */
void
sf_require_ready(void)
{
	if (sf_shared == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("snowflake must be loaded via shared_preload_libraries"),
				 errhint("Add snowflake to shared_preload_libraries in postgresql.conf "
						 "and restart the server.")));
	if (sf_shared->refused)
	{
		pg_read_barrier();
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("%s", sf_shared->refusal_message),
				 errdetail("%s.", sf_shared->refusal_detail),
				 errhint("Restore the previous settings and restart the server. IDs issued "
						 "under one layout decode wrongly and can collide under another; "
						 "to change it deliberately, see \"Changing the layout\" in the "
						 "snowflake README.")));
	}
}

/* Errors out unless generation may run: sf_require_ready(), and a sound mark and lineage. */
void
sf_require_generation_ready(void)
{
	sf_require_ready();
	if (sf_shared->state_refused)
	{
		pg_read_barrier();
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("%s", sf_shared->state_message),
				 errdetail("%s.", sf_shared->state_detail),
				 errhint("Generation refuses until the file is fixed or restored and the server "
						 "restarted; decoding works. See \"The durable mark\" in the snowflake "
						 "README.")));
	}
}
