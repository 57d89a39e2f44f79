/*-------------------------------------------------------------------------
 *
 * history.cpp
 *		A shard's history across runs (see history.hpp).
 *
 * Imported IDs carry their rows' times, up to the clock +
 * snowflake.max_clock_lead; live IDs carry the time they are issued.  Within
 * a run the two never meet on one shard: a shard's slot is made either for
 * imports or for live IDs, and the other kind is refused (shmem.cpp).
 * Across runs a shard may change sides, and each side keeps a durable record
 * of the other's IDs, in pg_snowflake/ (fsynced) and in WAL (for crash
 * recovery and standbys), written before the first ID it covers:
 *	- an import shard's reservation (pg_snowflake/imports, backfill.cpp)
 *	  bounds every ID it imported, so a live slot of that shard resumes above
 *	  it as well as above the server's mark.  For rows of the present the
 *	  reservation is about a second beyond clock + lead, so at most that much
 *	  waiting; a reservation too far ahead to wait for (max_clock_lead
 *	  lowered since, or a whole day reserved by a library before 1.3) is
 *	  refused with the time when it will work.
 *	- a live shard records from when it generates live IDs
 *	  (pg_snowflake/live), before its first live ID, and its slot starts at
 *	  that time or later; the durable mark bounds its live IDs from above.
 *	  An import on that shard in a later run is refused for times from that
 *	  record to the mark found at start (backfill.cpp): its IDs could equal
 *	  live ones.  Older and later times are imported.
 * The record of live shards begins with 1.3: a shard that generated live IDs
 * only under an earlier library is not known (README).
 *
 *-------------------------------------------------------------------------
 */
#include <cstring>

#include "state/history.hpp"
#include "state/fastpath.hpp"
#include "state/datadir.hpp"
#include "state/wal.hpp"

extern "C"
{
#include "postgres.h"
#include "storage/lwlock.h"
}

/* Reports a failed read or write of pg_snowflake/imports or live (after the lock). */
static void
sf_history_error(const char *file, const char *what, bool damaged,
				 const snowflake::FileError &error)
{
	if (damaged)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("could not read the snowflake %s", what),
				 errdetail("File \"%s\" is not a valid record.", file),
				 errhint("Restore it from a backup; without it, no shard can start generating "
						 "in this run, since it could repeat an ID of an earlier one.")));
	sf_report_file_error(what, error);
}

/*
 * The slot of a live shard.  On its first use in this run it records from
 * when the shard generates live IDs (unless recorded), and starts above the
 * shard's import reservation, if it was an import shard before; with
 * may_refuse, a reservation too far ahead for a call to wait for is refused
 * (the registry's worker, which claims shards, may not fail: its calls wait
 * and fail as for a clock behind the IDs).
 */
ShardSlot *
sf_live_slot(int64 shard, bool logical, bool may_refuse)
{
	int64		now;
	int64		reserved_ms = -1;
	int64		floor_ms;
	int64		from_ms = -1;
	int64		start_above = -1;
	snowflake::FileError error = {"", "", 0};
	bool		damaged = false;
	const char *failed = NULL;

	ShardSlot  *slot = sf_slot_if_any(shard);

	if (slot != NULL && (slot->live_recorded || slot->import_slot))
		return sf_slot_for_shard(shard, logical, -1);

	/*
	 * Before the epoch no ID can be issued (the call refuses; a mistaken
	 * epoch may still be corrected, as for the layout): nothing recorded yet,
	 * the slot only counts the refusals.  A later call records it.
	 */
	now = sf_now_offset();
	if (now < 0)
		return sf_slot_for_shard(shard, logical, -1);

	/* the first live ID carries this unit or a later one: see start_above */
	LWLockAcquire(sf_shared->file_lock, LW_EXCLUSIVE);
	if (!sf_read_import_reservation(shard, &reserved_ms, &floor_ms, &error, &damaged))
		failed = "import reservations";
	else if (!sf_read_live_from(shard, &from_ms, &error, &damaged))
		failed = "live shards";
	else if (from_ms < 0)
	{
		from_ms = sf_layout.unix_ms_of(now);
		if (sf_write_live_from(shard, from_ms, &error, &damaged))
			sf_log_live_from(shard, from_ms);
		else
			failed = "live shard";
	}
	LWLockRelease(sf_shared->file_lock);
	if (failed != NULL)
		sf_history_error(strcmp(failed, "import reservations") == 0 ?
						 "pg_snowflake/imports" : "pg_snowflake/live", failed, damaged, error);

	/* no live ID before the recorded time, none at or below an imported one */
	start_above = sf_layout.offset_of(from_ms) - 1;
	if (reserved_ms >= 0)
	{
		int64		reserved = sf_layout.offset_of(reserved_ms);
		int64		wait_ms = (reserved + 1 - now - sf_lead_units()) * sf_layout.unit_ms;

		start_above = Max(start_above, reserved);
		if (may_refuse && wait_ms > sf_max_clock_wait)
		{
			char		until[40], imported[40];

			snowflake::format_utc(sf_layout.unix_ms_of(reserved + 1 - sf_lead_units()), until,
								  sizeof(until));
			snowflake::format_utc(reserved_ms, imported, sizeof(imported));
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("shard " INT64_FORMAT " cannot generate live IDs before %s", shard,
							until),
					 errdetail("It was an import shard: the IDs imported on it may carry times "
							   "up to %s (its reservation in pg_snowflake/imports), and live IDs "
							   "must lie above them. Live IDs may run at most "
							   "snowflake.max_clock_lead (%d ms) ahead of the clock, so a call "
							   "would wait " INT64_FORMAT " ms, longer than "
							   "snowflake.max_clock_wait (%d ms).", imported, sf_max_clock_lead,
							   wait_ms, sf_max_clock_wait),
					 errhint("Retry after %s, or raise snowflake.max_clock_lead (to what it "
							 "was when the rows were imported), or generate on another shard.",
							 until)));
		}
	}
	slot = sf_slot_for_shard(shard, logical, start_above);
	if (!slot->live_recorded)
	{
		/* a slot made before the epoch did not start above that */
		LWLockAcquire(slot->lock, LW_EXCLUSIVE);
		if (sf_slot_last(slot, NULL) < start_above)
			sf_slot_resume_above(slot, start_above);
		slot->live_recorded = true;
		LWLockRelease(slot->lock);
	}
	return slot;
}

/*
 * From when an import shard generated live IDs in an earlier run (a layout
 * offset), or -1 if it never did (that this data directory knows of).
 */
int64
sf_live_from(int64 shard)
{
	int64		from_ms = -1;
	snowflake::FileError error = {"", "", 0};
	bool		damaged = false;

	if (!sf_read_live_from(shard, &from_ms, &error, &damaged))
		sf_history_error("pg_snowflake/live", "live shards", damaged, error);
	return from_ms < 0 ? -1 : sf_layout.offset_of(from_ms);
}
