/*-------------------------------------------------------------------------
 *
 * backfill.cpp
 *		Imports with original creation times: snowflake_nextval_at(created_at,
 *		shard) and its array form, on shards reserved for imports
 *		(snowflake.import_shards), which live generation never uses.
 *
 * Why no imported ID can equal a live one or another import's: import shards
 * are disjoint from every shard live generation uses (nextval.cpp refuses
 * them), and each import shard issues strictly increasing IDs under its
 * slot's lock (times must not decrease; a unit's sequence is never borrowed
 * from the next unit, since that would change the time the ID carries).
 *
 * Durability.  An import shard reserves time ahead in whole UTC days: before
 * its first ID of a day it records "up to the end of that day" in
 * pg_snowflake/imports (fsynced) and in WAL, and its slot's cap keeps every
 * ID within what is recorded; a day not yet ended only up to
 * SF_RESERVE_AHEAD_MS beyond the clock + lead, since a live slot of the
 * shard in a later run starts above the reservation (history.cpp).  After a restart, a crash or a promotion the
 * shard resumes above its recorded reservation, so an interrupted import goes
 * on with the rows of later days (or on another import shard); one write per
 * imported day, not per row.  The server's mark (for live shards) is not
 * involved: an import slot's reserved_offset is its own reservation, and the
 * mark worker leaves import slots out.  A floor raised by
 * snowflake_adopt_database() (a database whose pg_snowflake/ was lost, as
 * after pg_upgrade) is recorded in pg_snowflake/imports too, and every import
 * shard resumes above it.  created_at may not lie beyond the clock +
 * snowflake.max_clock_lead, as live IDs.  A shard that generated live IDs in
 * an earlier run refuses times within that live history (history.cpp).
 *
 * The SQL layer: it may call the state layer (shmem, fastpath, mark), origin
 * and decode.
 *
 *-------------------------------------------------------------------------
 */
#include <cstring>

#include "sql/decode.hpp"
#include "state/fastpath.hpp"
#include "state/history.hpp"
#include "sql/origin.hpp"
#include "state/datadir.hpp"
#include "state/wal.hpp"

extern "C"
{
#include "postgres.h"
#include "access/attnum.h"
#include "access/tupdesc.h"
#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "datatype/timestamp.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/execnodes.h"
#include "nodes/nodes.h"
#include "port/atomics.h"
#include "storage/lwlock.h"
#include "utils/array.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"
}

extern "C"
{
PG_FUNCTION_INFO_V1(snowflake_nextval_at);
PG_FUNCTION_INFO_V1(snowflake_nextval_at_batch);
}

/* Checks what an import needs and returns the import shard's slot. */
static ShardSlot *
sf_import_prepare(int64 shard)
{
	sf_require_generation_ready();
	sf_check_shard_range(shard);
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot import snowflake IDs on a standby server"),
				 errhint("Import on the primary.")));
	if (!sf_import_shard(shard))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("shard " INT64_FORMAT " is not reserved for imports", shard),
				 errdetail("snowflake_nextval_at() generates only for the shards of "
						   "snowflake.import_shards (\"%s\"), which live generation never uses, "
						   "so that an ID with a past time can never equal a live one.",
						   sf_import_shards),
				 errhint("Add a shard no server uses for live IDs to snowflake.import_shards "
						 "(postgresql.conf or ALTER SYSTEM), reload, and import into it.")));
	/*
	 * The layout is recorded before the first ID, imported or live: a later
	 * change of the layout must be refused, or new IDs would collide with
	 * imported ones (standbys learn it from the same WAL record).
	 */
	if (pg_atomic_read_u32(&sf_shared->layout_recorded) == 0)
	{
		if (sf_now_offset() < 0)
			ereport(ERROR,
					(errcode(ERRCODE_SYSTEM_ERROR),
					 errmsg("could not import snowflake IDs: the clock reads earlier than "
							"snowflake.epoch"),
					 errhint("Check the server's time synchronisation, or snowflake.epoch.")));
		sf_record_layout();
	}
	/* the recorded reservation matters only to the slot's first use */
	{
		ShardSlot  *slot = sf_slot_if_any(shard);

		if (slot != NULL && slot->import_slot)
			return slot;
	}
	{
		int64		reserved_ms;
		int64		floor_ms;
		snowflake::FileError error = {"", "", 0};
		bool		damaged;

		if (!sf_read_import_reservation(shard, &reserved_ms, &floor_ms, &error, &damaged))
		{
			if (damaged)
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("could not read the snowflake import reservations"),
						 errdetail("File \"pg_snowflake/imports\" is not a valid record."),
						 errhint("Restore it from a backup; without it, no import shard can "
								 "be used.")));
			sf_report_file_error("import reservations", error);
		}
		/* above its own reservation, and above the floor adopt_database raised */
		reserved_ms = Max(reserved_ms, floor_ms);
		/* clear of the live IDs it generated in an earlier run, if it did */
		return sf_slot_for_import(shard, reserved_ms < 0 ? -1 : sf_layout.offset_of(reserved_ms),
								  sf_live_from(shard));
	}
}

/*
 * Makes the import shard's reservation cover the unit "at": records the end
 * of its UTC day (pg_snowflake/imports, fsynced, then WAL), then raises the
 * slot's cap.  A day that has not ended is reserved only SF_RESERVE_AHEAD_MS
 * beyond the clock + max_clock_lead: should the shard later go live, its
 * live IDs start above the reservation (history.cpp), which must then lie
 * close to the clock.
 */
static void
sf_import_reserve(ShardSlot *slot, int64 at)
{
	int64		day_ms = INT64CONST(86400000);
	int64		start_ms = sf_layout.unix_ms_of(at);
	int64		end_ms = start_ms - start_ms % day_ms + day_ms - 1;
	int64		ahead = sf_now_offset() + sf_lead_units() +
		Max(sf_layout.units(SF_RESERVE_AHEAD_MS), (int64) 1);
	int64		end = Min(Min(sf_layout.offset_of(end_ms), Max(at, ahead)),
						  sf_layout.max_offset());
	snowflake::FileError error = {"", "", 0};
	bool		damaged = false;
	bool		ok;

	LWLockAcquire(sf_shared->file_lock, LW_EXCLUSIVE);
	ok = sf_write_import_reservation(slot->shard_id, sf_layout.unix_ms_end_of(end), &error,
									 &damaged);
	if (ok)
		sf_log_import_reservation(slot->shard_id, sf_layout.unix_ms_end_of(end));
	LWLockRelease(sf_shared->file_lock);
	if (!ok && damaged)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("could not record a snowflake import reservation"),
				 errdetail("File \"pg_snowflake/imports\" is not a valid record.")));
	if (!ok)
		sf_report_file_error("import reservation", error);

	/* the recorded reservation bounds the shard's IDs: its cap and reserved_offset */
	LWLockAcquire(slot->lock, LW_EXCLUSIVE);
	if ((int64) pg_atomic_read_u64(&slot->cap) < end)
		pg_atomic_write_u64(&slot->cap, (uint64) end);
	if (sf_reserved(slot) < end)
		sf_set_reserved(slot, end);
	LWLockRelease(slot->lock);
}

/* The layout offset of a creation time, refusing what cannot be imported. */
static int64
sf_import_offset(TimestampTz ts)
{
	int64		pg_ms = ts / 1000 - (ts % 1000 < 0 ? 1 : 0);
	int64		unix_ms = pg_ms + snowflake::kPostgresEpochUnixMs;
	int64		limit = sf_now_offset() + sf_lead_units();
	char		first[40], last[40];

	if (TIMESTAMP_NOT_FINITE(ts) || unix_ms < sf_layout.epoch_ms ||
		unix_ms > sf_layout.last_usable_unix_ms())
	{
		snowflake::format_utc(sf_layout.epoch_ms, first, sizeof(first));
		snowflake::format_utc(sf_layout.last_usable_unix_ms(), last, sizeof(last));
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("creation time out of range for snowflake IDs: \"%s\"",
						timestamptz_to_str(ts)),
				 errdetail("This layout covers %s to %s.", first, last),
				 errhint("Rows created before snowflake.epoch cannot carry their time in a "
						 "snowflake ID.")));
	}
	if (sf_layout.offset_of(unix_ms) > limit)
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("creation time \"%s\" is in the future", timestamptz_to_str(ts)),
				 errdetail("An import carries times up to the clock plus "
						   "snowflake.max_clock_lead (%d ms), as live IDs do.",
						   sf_max_clock_lead)));
	return sf_layout.offset_of(unix_ms);
}

/*
 * Refuses a time within the live history of the shard (an earlier run
 * generated live IDs on it, from slot->live_from up to the mark found at
 * start): an imported ID with that time could equal a live one.
 */
static void
sf_check_live_history(ShardSlot *slot, TimestampTz ts, int64 at)
{
	char		from[40], to[40];

	if (slot->live_from < 0 || at < slot->live_from || at > slot->live_to)
		return;
	snowflake::format_utc(sf_layout.unix_ms_of(slot->live_from), from, sizeof(from));
	snowflake::format_utc(sf_layout.unix_ms_end_of(slot->live_to), to, sizeof(to));
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("shard %d generated live IDs from %s to %s", slot->shard_id, from, to),
			 errdetail("Creation time \"%s\" lies within them: an imported ID carrying it "
					   "could equal a live one. This server recorded, before an earlier run "
					   "generated live IDs on the shard, from when it did "
					   "(pg_snowflake/live), and its durable mark bounds them.",
					   timestamptz_to_str(ts)),
			 errhint("Import on a shard that never generated live IDs. On this one, only rows "
					 "created before %s or after %s can be imported.", from, to)));
}

/* One imported ID: the next of the shard at created_at, or the error that says why not. */
static int64
sf_import_one(ShardSlot *slot, TimestampTz ts)
{
	int64		at = sf_import_offset(ts);

	sf_check_live_history(slot, ts, at);

	for (;;)
	{
		snowflake::Step step;
		snowflake::GeneratorState before;
		int64		reserved;
		char		last[40];

		LWLockAcquire(slot->lock, LW_EXCLUSIVE);
		step = sf_slot_import(slot, at);
		LWLockRelease(slot->lock);

		switch (step.outcome)
		{
			case snowflake::Outcome::Issued:
				return step.id;
			case snowflake::Outcome::NeedReservation:
				/*
				 * The shard's own reservation (a UTC day at a time) bounds
				 * its IDs; the server's mark, which covers live shards, is
				 * not involved.
				 */
				sf_import_reserve(slot, step.wanted);
				continue;
			case snowflake::Outcome::TimeDecreased:
				sf_slot_snapshot(slot, &before, &reserved, NULL);
				snowflake::format_utc(sf_layout.unix_ms_of(before.last_offset), last,
									  sizeof(last));
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("creation time \"%s\" is earlier than the last ID of import "
								"shard %d", timestamptz_to_str(ts), slot->shard_id),
						 errdetail("Import shard %d has issued IDs up to %s; its IDs strictly "
								   "increase, so times must not decrease.", slot->shard_id,
								   last),
						 errhint("Import rows in order of their creation time (ORDER BY the "
								 "time), one sorted stream per import shard. After a restart an "
								 "import shard continues above the present: import older rows "
								 "on another import shard.")));
				break;
			case snowflake::Outcome::UnitFull:
				ereport(ERROR,
						(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
						 errmsg("more than " INT64_FORMAT " rows with one creation time on "
								"import shard %d", sf_layout.max_sequence() + 1, slot->shard_id),
						 errdetail("An ID carries its row's time to the unit (%d ms) and has "
								   INT64_FORMAT " sequence numbers a unit; the next unit would "
								   "carry another time.", (int) sf_layout.unit_ms,
								   sf_layout.max_sequence() + 1),
						 errhint("Spread rows of the same time over several import shards. After a "
								 "restart an import shard resumes above the day it had reserved: "
								 "import that day's remaining rows on another import shard.")));
				break;
			default:
				elog(ERROR, "snowflake: unexpected outcome of an import step");
		}
	}
}

/* snowflake_nextval_at(created_at, shard): one ID carrying created_at. */
extern "C" Datum
snowflake_nextval_at(PG_FUNCTION_ARGS)
{
	TimestampTz ts = PG_GETARG_TIMESTAMPTZ(0);
	ShardSlot  *slot = sf_import_prepare(PG_GETARG_INT32(1));

	sf_check_origin(fcinfo->flinfo->fn_oid);
	PG_RETURN_INT64(sf_import_one(slot, ts));
}

/* snowflake_nextval_at(created_at[], shard): one ID per element, in order. */
extern "C" Datum
snowflake_nextval_at_batch(PG_FUNCTION_ARGS)
{
	ArrayType  *arr = PG_GETARG_ARRAYTYPE_P(0);
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ShardSlot  *slot = sf_import_prepare(PG_GETARG_INT32(1));
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	Tuplestorestate *store;
	TupleDesc	tupdesc;
	MemoryContext old;

	sf_check_origin(fcinfo->flinfo->fn_oid);
	if (rsinfo == NULL || !IsA(rsinfo, ReturnSetInfo) ||
		!(rsinfo->allowedModes & SFRM_Materialize))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("set-valued function called in context that cannot accept a set")));
	deconstruct_array(arr, TIMESTAMPTZOID, sizeof(TimestampTz), true, TYPALIGN_DOUBLE,
					  &elems, &nulls, &n);

	old = MemoryContextSwitchTo(rsinfo->econtext->ecxt_per_query_memory);
	tupdesc = CreateTemplateTupleDesc(1);
	TupleDescInitEntry(tupdesc, (AttrNumber) 1, "id", INT8OID, -1, 0);
	store = tuplestore_begin_heap(true, false, work_mem);
	MemoryContextSwitchTo(old);
	for (int i = 0; i < n; i++)
	{
		Datum		value;
		bool		isnull = false;

		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("creation time %d of the array is NULL", i + 1)));
		CHECK_FOR_INTERRUPTS();
		value = Int64GetDatum(sf_import_one(slot, DatumGetTimestampTz(elems[i])));
		tuplestore_putvalues(store, tupdesc, &value, &isnull);
	}
	rsinfo->returnMode = SFRM_Materialize;
	rsinfo->setResult = store;
	rsinfo->setDesc = tupdesc;
	return (Datum) 0;
}
