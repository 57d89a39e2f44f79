/*-------------------------------------------------------------------------
 *
 * state.cpp
 *		The generator's shared state and what keeps it safe across restarts:
 *		shared memory, the recorded layout (pg_snowflake/layout) and the
 *		durable high-water mark (pg_snowflake/mark) with the background
 *		worker that keeps it ahead of the clock.
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
 * long (bounded by max_clock_wait).  See glue.hpp for the locking rules.
 *
 * Standbys.  Every new mark is also written to WAL (a custom resource
 * manager, PostgreSQL 15 and later), before any ID under it is issued, so
 * WAL order puts it ahead of every row that carries such an ID.  A standby's
 * redo raises its own mark, on disk and in memory; once promoted, every
 * shard resumes above the highest mark replayed, that is above every ID the
 * old primary could have issued into the data the standby holds.
 *
 *-------------------------------------------------------------------------
 */
#include <cerrno>
#include <cstring>
#include <ctime>
#include <unistd.h>

#include "glue.hpp"
#include "registry.hpp"
#include "statefile.hpp"

SnowflakeShared *sf_shared = NULL;

#define SNOWFLAKE_TRANCHE "snowflake"
#define SF_FIXED_LOCKS 2		/* file_lock, assign_lock; then one per slot */

static const char *const kMarkName = "mark";
static const char *const kMarkFile = "pg_snowflake/mark";

/* The custom WAL resource manager that carries the mark to standbys. */
#define SF_RMGR_ID RM_EXPERIMENTAL_ID
#define SF_RMGR_NAME "snowflake"
#define XLOG_SNOWFLAKE_MARK 0x10
#define XLOG_SNOWFLAKE_LAYOUT 0x20
#define XLOG_SNOWFLAKE_SHARDS 0x30

/* The payload of a layout record. */
typedef struct SfLayoutRecord
{
	int64		epoch_ms;
	int32		shard_bits;
	int32		sequence_bits;
} SfLayoutRecord;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/* The payload of a shards record: a count, then that many ranges. */
typedef struct SfShardsRecord
{
	int32		count;
	int32		pad;
	snowflake::ShardRange ranges[FLEXIBLE_ARRAY_MEMBER];
} SfShardsRecord;

static void sf_shmem_exit(int code, Datum arg);
static void sf_log_layout(void);

/* Wall-clock Unix milliseconds: what IDs carry. */
int64
sf_wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * How far ahead of the clock a floor that comes from data or from outside
 * (snowflake_raise_floor(), snowflake_adopt_database(), a mark in the
 * registry) may lie: the lead IDs may take plus the longest a call may wait.
 * Within it generation goes on (at worst a call waits); beyond it every
 * generating call would fail until the clock reaches the floor, so such a
 * floor is refused unless the operator says it is real.
 */
int64
sf_floor_bound_ms(void)
{
	return (int64) sf_max_clock_lead + sf_max_clock_wait;
}

/*---- shared memory ----*/

/* Slots: one per shard usable since start, never more than there are shards. */
static int
sf_num_slots(void)
{
	return (int) Min((int64) sf_max_shards, sf_layout.max_shard_id() + 1);
}

static Size
sf_index_offset(void)
{
	return MAXALIGN(sizeof(SnowflakeShared));
}

static Size
sf_slots_offset(void)
{
	return sf_index_offset() +
		MAXALIGN(sizeof(pg_atomic_uint32) * (Size) (sf_layout.max_shard_id() + 1));
}

static Size
sf_shmem_size(void)
{
	/* room to align the slots to a cache line (see sf_slot) */
	return sf_slots_offset() + PG_CACHE_LINE_SIZE + sizeof(ShardSlot) * (Size) sf_num_slots();
}

/* The shard index: slot number + 1 of each shard, 0 when it has none. */
static pg_atomic_uint32 *
sf_index(void)
{
	return (pg_atomic_uint32 *) ((char *) sf_shared + sf_index_offset());
}

ShardSlot *
sf_slot(int i)
{
	/* cache-line aligned, so that two shards never share a line */
	return (ShardSlot *) TYPEALIGN(PG_CACHE_LINE_SIZE,
								   (char *) sf_shared + sf_slots_offset()) + i;
}

/* Asks for the shared memory and the lock tranche. */
static void
sf_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(sf_shmem_size());
	RequestNamedLWLockTranche(SNOWFLAKE_TRANCHE, SF_FIXED_LOCKS + sf_num_slots());
}

/* Marks the layout or the state as refused, keeping the first reason found. */
void
sf_refuse(SnowflakeShared *out, SfRefusal kind, const char *message, const char *detail)
{
	bool		layout = kind == SF_REFUSE_LAYOUT;

	if (layout ? out->refused : out->state_refused)
		return;
	strlcpy(layout ? out->refusal_message : out->state_message, message,
			sizeof(out->refusal_message));
	strlcpy(layout ? out->refusal_detail : out->state_detail, detail,
			sizeof(out->refusal_detail));
	/* readers see the flag only after the text (sf_require_ready) */
	pg_write_barrier();
	if (layout)
		out->refused = true;
	else
		out->state_refused = true;
}

/* Reads a small record file; Missing is not an error, the rest refuse. */
bool
sf_read_record(SnowflakeShared *out, SfRefusal kind, const char *path, const char *what,
			   char *buf, size_t buflen, size_t *len, bool *missing)
{
	snowflake::FileError error = {"", "", 0};
	char		message[128];
	char		detail[512];

	*missing = false;
	snprintf(message, sizeof(message), "could not read the recorded snowflake %s", what);
	switch (snowflake::read_small_file(path, buf, buflen, len, &error))
	{
		case snowflake::ReadResult::Ok:
			return true;
		case snowflake::ReadResult::Missing:
			*missing = true;
			return false;
		case snowflake::ReadResult::Failed:
			snprintf(detail, sizeof(detail), "Could not %s file \"%s\": %s",
					 error.operation, error.path, strerror(error.err));
			break;
		case snowflake::ReadResult::TooLarge:
			snprintf(detail, sizeof(detail), "File \"%s\" is too large to be a %s record",
					 path, what);
			break;
	}
	sf_refuse(out, kind, message, detail);
	return false;
}

/*
 * Compares pg_snowflake/layout, if present, with the running layout, and
 * resumes the generator above pg_snowflake/mark, if present.
 */
static void
sf_load_recorded_state(SnowflakeShared *out)
{
	char		buf[1024];
	char		detail[512];
	size_t		len = 0;
	bool		missing;
	snowflake::Layout recorded;
	int64		mark;

	if (sf_read_record(out, SF_REFUSE_LAYOUT, snowflake::kLayoutFile, "ID layout", buf,
					   sizeof(buf), &len, &missing))
	{
		if (!snowflake::parse_layout_record(buf, len, &recorded))
		{
			snprintf(detail, sizeof(detail), "File \"%s\" is not a valid layout record",
					 snowflake::kLayoutFile);
			sf_refuse(out, SF_REFUSE_LAYOUT, "could not read the recorded snowflake ID layout",
					  detail);
		}
		else if (recorded != sf_layout)
		{
			snowflake::describe_layout_change(recorded, sf_layout, detail, sizeof(detail));
			sf_refuse(out, SF_REFUSE_LAYOUT, "the snowflake ID layout differs from the one this "
					  "data directory generated with", detail);
		}
		else
			pg_atomic_init_u32(&out->layout_recorded, 1);
	}

	sf_load_lineage(out);

	if (sf_read_record(out, SF_REFUSE_STATE, kMarkFile, "high-water mark", buf, sizeof(buf),
					   &len, &missing))
	{
		if (!snowflake::parse_mark_record(buf, len, &mark))
		{
			snprintf(detail, sizeof(detail), "File \"%s\" is not a valid mark record", kMarkFile);
			sf_refuse(out, SF_REFUSE_STATE, "could not read the recorded snowflake high-water mark",
					  detail);
		}
		else if (mark < sf_layout.epoch_ms || mark > sf_layout.last_unix_ms())
		{
			char		when[40];

			/* a mark the layout cannot represent: damaged, or another layout's */
			snowflake::format_utc(mark, when, sizeof(when));
			snprintf(detail, sizeof(detail), "File \"%s\" holds %s, outside the times this "
					 "layout can represent", kMarkFile, when);
			sf_refuse(out, SF_REFUSE_STATE, "could not read the recorded snowflake high-water mark",
					  detail);
		}
		else
		{
			out->resume_offset = mark - sf_layout.epoch_ms;
			out->durable_mark_ms = mark;
		}
	}
}

/* Creates and initialises the shared state. */
static void
sf_shmem_startup(void)
{
	bool		found;
	SnowflakeShared fresh;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

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
		pg_atomic_init_u32(&sf_shared->registry_shard, 0);
		for (int64 i = 0; i < shards; i++)
			pg_atomic_init_u32(&sf_index()[i], 0);
		for (int i = 0; i < sf_shared->num_slots; i++)
			sf_slot(i)->lock = &locks[SF_FIXED_LOCKS + i].lock;
	}
	LWLockRelease(AddinShmemInitLock);

	/* the postmaster settles the mark when it exits after a clean shutdown */
	if (!IsUnderPostmaster)
		on_shmem_exit(sf_shmem_exit, (Datum) 0);

	if (!found && fresh.refused)
		ereport(WARNING,
				(errmsg("%s", fresh.refusal_message),
				 errdetail("%s.", fresh.refusal_detail),
				 errhint("snowflake_nextval() and the decoding functions will refuse to run; "
						 "see \"Errors and what to do\" in the snowflake README.")));
	if (!found && fresh.state_refused)
		ereport(WARNING,
				(errmsg("%s", fresh.state_message),
				 errdetail("%s.", fresh.state_detail),
				 errhint("snowflake_nextval() will refuse to run; the decoding functions work. "
						 "See \"Errors and what to do\" in the snowflake README.")));
	if (!found && !fresh.refused && !fresh.state_refused && fresh.durable_mark_ms >= 0 &&
		fresh.durable_mark_ms > sf_wall_ms() + sf_floor_bound_ms())
	{
		char		when[40];

		snowflake::format_utc(fresh.durable_mark_ms, when, sizeof(when));
		ereport(WARNING,
				(errmsg("the snowflake high-water mark is " INT64_FORMAT " ms ahead of the clock",
						fresh.durable_mark_ms - sf_wall_ms()),
				 errdetail("pg_snowflake/mark holds %s. IDs resume above it, so generating "
						   "calls wait for the clock and fail after snowflake.max_clock_wait "
						   "until the clock is within snowflake.max_clock_lead of it.", when),
				 errhint("Check the server's time synchronisation. If the clock is right and the "
						 "mark came from elsewhere (a restored or copied pg_snowflake/), see "
						 "\"The durable mark\" in the snowflake README.")));
	}
}

/*
 * The slot of a shard, given one on its first use: resumed above the mark
 * found at start or replayed from WAL, which covers every ID any shard issued
 * before the start or, on a promoted standby, on the old primary.
 *
 * The last free slot is kept for snowflake.shard_id while it has none, so
 * logical shards (snowflake_nextval(shard), which only roles granted EXECUTE
 * may call) can never take away the slot of this server's own shard.
 */
ShardSlot *
sf_slot_for_shard(int64 shard, bool logical)
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
		slot->gen = snowflake::kFreshState;
		/*
		 * file_lock (shared) is held until the slot is published, so that a
		 * concurrent raise of resume_offset (WAL replay, snowflake_raise_floor)
		 * either comes first and is seen here, or comes after and finds the
		 * slot in used_slots.
		 */
		LWLockAcquire(sf_shared->file_lock, LW_SHARED);
		snowflake::resume_above(slot->gen, sf_layout, sf_shared->resume_offset);
		sf_fastpath_init_slot(slot);
		slot->stats_reset = GetCurrentTimestamp();
		pg_atomic_init_u64(&slot->waits, 0);
		pg_atomic_init_u64(&slot->wait_us, 0);
		pg_atomic_init_u64(&slot->refusals, 0);
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

/*---- durable files ----*/

/*
 * The level of a failed write of a state file: an fsync failure PANICs unless
 * data_sync_retry is on, as PostgreSQL does for its own files (after a failed
 * fsync the kernel may have dropped the data and a retried fsync can report
 * success for it); anything else stays at "elevel".
 */
static int
sf_file_error_level(const snowflake::FileError &error, int elevel)
{
	return snowflake::is_sync_failure(error) ? data_sync_elevel(elevel) : elevel;
}

static void
sf_report_file_error(const char *what, const snowflake::FileError &error)
{
	errno = error.err;
	ereport(sf_file_error_level(error, ERROR),
			(errcode_for_file_access(),
			 errmsg("could not record the snowflake %s: could not %s \"%s\": %m",
					what, error.operation, error.path)));
}

/* Writes pg_snowflake/layout once, before the first ID is issued. */
void
sf_record_layout(void)
{
	char		record[512];
	int			len = snowflake::format_layout_record(sf_layout, record, sizeof(record));
	snowflake::FileError error = {"", "", 0};
	bool		ok = true;

	if (len < 0)
		elog(ERROR, "snowflake layout record does not fit its buffer");

	LWLockAcquire(sf_shared->file_lock, LW_EXCLUSIVE);
	if (pg_atomic_read_u32(&sf_shared->layout_recorded) == 0)
	{
		ok = snowflake::write_file_durably("layout", record, (size_t) len, &error);
		if (ok)
		{
			sf_log_layout();
			pg_atomic_write_u32(&sf_shared->layout_recorded, 1);
		}
	}
	LWLockRelease(sf_shared->file_lock);

	if (!ok)
		sf_report_file_error("ID layout", error);
}

/*
 * Writes pg_snowflake/mark durably and records it as durable_mark_ms (caller
 * holds file_lock exclusively).  False with *error filled when it fails.
 */
static bool
sf_write_mark(int64 mark_ms, snowflake::FileError *error)
{
	char		record[256];
	int			len = snowflake::format_mark_record(mark_ms, record, sizeof(record));

	if (len < 0 || !snowflake::write_file_durably(kMarkName, record, (size_t) len, error))
		return false;
	sf_shared->durable_mark_ms = mark_ms;
	return true;
}

/*---- the mark in WAL ----*/

/*
 * Writes a new mark to WAL for standbys (caller holds file_lock, before any
 * ID under the mark is issued).  Nothing to do during recovery.
 */
static void
sf_log_mark(int64 mark_ms)
{
	if (RecoveryInProgress())
		return;
	XLogBeginInsert();
	XLogRegisterData((char *) &mark_ms, sizeof(mark_ms));
	(void) XLogInsert(SF_RMGR_ID, XLOG_SNOWFLAKE_MARK);
}

/*
 * Writes the layout to WAL for standbys (caller holds file_lock, before the
 * first ID is issued), so that a standby made before the first ID records
 * its primary's layout and refuses if its own settings differ.
 */
static void
sf_log_layout(void)
{
	SfLayoutRecord rec;

	if (RecoveryInProgress())
		return;
	memset(&rec, 0, sizeof(rec));
	rec.epoch_ms = sf_layout.epoch_ms;
	rec.shard_bits = sf_layout.shard_bits;
	rec.sequence_bits = sf_layout.sequence_bits;
	XLogBeginInsert();
	XLogRegisterData((char *) &rec, sizeof(rec));
	(void) XLogInsert(SF_RMGR_ID, XLOG_SNOWFLAKE_LAYOUT);
}

/*
 * A failed write during redo.  An error in the startup process stops replay
 * and shuts the server down: a standby that carried on without the mark could,
 * once promoted, issue IDs the old primary already issued.  Started again,
 * replay resumes from the last restartpoint and writes the file.
 */
static void
sf_report_redo_error(const char *what, const snowflake::FileError &error)
{
	errno = error.err;
	ereport(sf_file_error_level(error, ERROR),
			(errcode_for_file_access(),
			 errmsg("could not record the snowflake %s replayed from WAL: "
					"could not %s \"%s\": %m", what, error.operation, error.path),
			 errhint("Make pg_snowflake/ in the standby's data directory writable (disk "
					 "space, permissions) and start the server again: replay continues "
					 "where it stopped.")));
}

/*
 * Redo of a layout record: the primary's layout becomes this data
 * directory's recorded layout.  If this server runs with another layout, it
 * refuses from now on (decoding on the standby, and generation once
 * promoted), as it would at start with a recorded layout that differs.
 */
static void
sf_redo_layout(XLogReaderState *record)
{
	SfLayoutRecord rec;
	snowflake::Layout primary;
	char		text[512];
	char		detail[512];
	int			len;
	snowflake::FileError error = {"", "", 0};
	bool		ok = true;

	if (XLogRecGetDataLen(record) != sizeof(rec))
		elog(PANIC, "snowflake redo: layout record of %u bytes", XLogRecGetDataLen(record));
	memcpy(&rec, XLogRecGetData(record), sizeof(rec));
	primary.epoch_ms = rec.epoch_ms;
	primary.shard_bits = rec.shard_bits;
	primary.sequence_bits = rec.sequence_bits;
	len = snowflake::format_layout_record(primary, text, sizeof(text));
	if (sf_shared == NULL || len < 0)
		return;

	LWLockAcquire(sf_shared->file_lock, LW_EXCLUSIVE);
	ok = snowflake::write_file_durably("layout", text, (size_t) len, &error);
	if (ok && primary == sf_layout)
		pg_atomic_write_u32(&sf_shared->layout_recorded, 1);
	else if (ok)
	{
		snowflake::describe_layout_change(primary, sf_layout, detail, sizeof(detail));
		sf_refuse(sf_shared, SF_REFUSE_LAYOUT, "the snowflake ID layout differs from the one "
				  "this data directory generated with", detail);
	}
	LWLockRelease(sf_shared->file_lock);

	if (!ok)
		sf_report_redo_error("ID layout", error);
	if (primary != sf_layout)
		ereport(WARNING,
				(errmsg("the snowflake ID layout differs from the one this data directory "
						"generated with"),
				 errdetail("%s.", detail),
				 errhint("The primary generates with the layout recorded now; this server's "
						 "decoding functions, and generation once promoted, refuse until its "
						 "settings match and it is restarted.")));
}

/*
 * Redo of a shards record: the shards the primary generates for, which a
 * standby with snowflake.allow_on_standby refuses (sf_check_standby_shard).
 */
static void
sf_redo_shards(XLogReaderState *record)
{
	SfShardsRecord head;
	uint32		len = XLogRecGetDataLen(record);

	if (len < offsetof(SfShardsRecord, ranges))
		elog(PANIC, "snowflake redo: shards record of %u bytes", len);
	memcpy(&head, XLogRecGetData(record), offsetof(SfShardsRecord, ranges));
	if (head.count < 0 ||
		len != offsetof(SfShardsRecord, ranges) + sizeof(snowflake::ShardRange) * (Size) head.count)
		elog(PANIC, "snowflake redo: shards record of %u bytes for %d ranges", len, head.count);
	if (sf_shared == NULL)
		return;

	LWLockAcquire(sf_shared->file_lock, LW_EXCLUSIVE);
	if (head.count > SF_MAX_PRIMARY_RANGES)
		sf_shared->primary_shard_count = -1;
	else
	{
		memcpy(sf_shared->primary_shards, XLogRecGetData(record) + offsetof(SfShardsRecord, ranges),
			   sizeof(snowflake::ShardRange) * (Size) head.count);
		sf_shared->primary_shard_count = head.count;
	}
	sf_shared->primary_shards_known = true;
	LWLockRelease(sf_shared->file_lock);
}

/*
 * On a standby with snowflake.allow_on_standby: refuses a shard its primary
 * generates for (as of the WAL replayed so far), and every shard until the
 * first shards record has been replayed.
 */
void
sf_check_standby_shard(int64 shard)
{
	bool		known;
	bool		primary = false;

	LWLockAcquire(sf_shared->file_lock, LW_SHARED);
	known = sf_shared->primary_shards_known;
	if (known)
		primary = sf_shared->primary_shard_count < 0 ||
			snowflake::shard_in_ranges(sf_shared->primary_shards,
									   sf_shared->primary_shard_count, shard);
	LWLockRelease(sf_shared->file_lock);

	if (!known)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot generate snowflake IDs on this standby yet"),
				 errdetail("It has not replayed which shards its primary generates for, so it "
						   "cannot tell shard " INT64_FORMAT " from one of the primary's.", shard),
				 errhint("The primary logs its shards when it starts, when its configuration is "
						 "reloaded, and every %d s while it writes WAL; retry once the standby "
						 "has replayed that.", SF_SHARDS_LOG_MS / 1000)));
	if (primary)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot generate snowflake IDs for shard " INT64_FORMAT " on this standby",
						shard),
				 errdetail("Its primary generates for that shard (its snowflake.shard_id, "
						   "snowflake.shard_ids or the shard it holds in the registry), so "
						   "IDs issued here would collide with the primary's."),
				 errhint("Give this standby a shard ID of its own in its postgresql.conf "
						 "(snowflake.shard_id), or generate on the primary.")));
}

/*
 * Redo of a mark record on a standby (or in crash recovery): raise the mark
 * on disk and the point every shard resumes above.  Runs in the startup
 * process; a failed write stops recovery rather than lose the mark.
 */
static void
sf_redo(XLogReaderState *record)
{
	uint8		info = XLogRecGetInfo(record) & ~XLR_INFO_MASK;
	int64		mark;
	snowflake::FileError error = {"", "", 0};
	bool		ok = true;

	if (info == XLOG_SNOWFLAKE_LAYOUT)
	{
		sf_redo_layout(record);
		return;
	}
	if (info == XLOG_SNOWFLAKE_SHARDS)
	{
		sf_redo_shards(record);
		return;
	}
	if (info != XLOG_SNOWFLAKE_MARK || XLogRecGetDataLen(record) != sizeof(int64))
		elog(PANIC, "snowflake redo: unknown WAL record (info 0x%02X)", info);
	memcpy(&mark, XLogRecGetData(record), sizeof(mark));
	if (sf_shared == NULL)
		return;

	LWLockAcquire(sf_shared->file_lock, LW_EXCLUSIVE);
	if (mark > sf_shared->durable_mark_ms)
		ok = sf_write_mark(mark, &error);
	if (ok && mark - sf_layout.epoch_ms > sf_shared->resume_offset)
		sf_shared->resume_offset = mark - sf_layout.epoch_ms;
	LWLockRelease(sf_shared->file_lock);

	if (!ok)
		sf_report_redo_error("high-water mark", error);
}

static void
sf_desc(StringInfo buf, XLogReaderState *record)
{
	int64		mark;
	char		when[40];

	if ((XLogRecGetInfo(record) & ~XLR_INFO_MASK) == XLOG_SNOWFLAKE_LAYOUT &&
		XLogRecGetDataLen(record) == sizeof(SfLayoutRecord))
	{
		SfLayoutRecord rec;

		memcpy(&rec, XLogRecGetData(record), sizeof(rec));
		snowflake::format_utc(rec.epoch_ms, when, sizeof(when));
		appendStringInfo(buf, "epoch %s, shard_bits %d, sequence_bits %d",
						 when, rec.shard_bits, rec.sequence_bits);
		return;
	}
	if ((XLogRecGetInfo(record) & ~XLR_INFO_MASK) == XLOG_SNOWFLAKE_SHARDS &&
		XLogRecGetDataLen(record) >= offsetof(SfShardsRecord, ranges))
	{
		SfShardsRecord head;
		snowflake::ShardRange range;

		memcpy(&head, XLogRecGetData(record), offsetof(SfShardsRecord, ranges));
		appendStringInfo(buf, "shards");
		for (int i = 0; i < head.count &&
			 offsetof(SfShardsRecord, ranges) + sizeof(range) * (Size) (i + 1) <=
			 XLogRecGetDataLen(record); i++)
		{
			memcpy(&range, XLogRecGetData(record) + offsetof(SfShardsRecord, ranges) +
				   sizeof(range) * (Size) i, sizeof(range));
			if (range.lo == range.hi)
				appendStringInfo(buf, "%s" INT64_FORMAT, i ? "," : " ", (int64) range.lo);
			else
				appendStringInfo(buf, "%s" INT64_FORMAT "-" INT64_FORMAT, i ? "," : " ",
								 (int64) range.lo, (int64) range.hi);
		}
		if (head.count == 0)
			appendStringInfo(buf, " none");
		return;
	}
	if (XLogRecGetDataLen(record) != sizeof(int64))
		return;
	memcpy(&mark, XLogRecGetData(record), sizeof(mark));
	snowflake::format_utc(mark, when, sizeof(when));
	appendStringInfo(buf, "mark %s", when);
}

static const char *
sf_identify(uint8 info)
{
	switch (info & ~XLR_INFO_MASK)
	{
		case XLOG_SNOWFLAKE_MARK:
			return "MARK";
		case XLOG_SNOWFLAKE_LAYOUT:
			return "LAYOUT";
		case XLOG_SNOWFLAKE_SHARDS:
			return "SHARDS";
	}
	return NULL;
}

static RmgrData sf_rmgr = {
	SF_RMGR_NAME,				/* rm_name */
	sf_redo,					/* rm_redo */
	sf_desc,					/* rm_desc */
	sf_identify,				/* rm_identify */
	NULL,						/* rm_startup */
	NULL,						/* rm_cleanup */
	NULL,						/* rm_mask */
	NULL						/* rm_decode: nothing to decode */
};

/*---- the durable mark ----*/

/* The durable mark as a layout offset (caller holds file_lock). */
static int64
sf_durable_offset(void)
{
	return sf_shared->durable_mark_ms < 0 ? -1 :
		sf_shared->durable_mark_ms - sf_layout.epoch_ms;
}

/*
 * Raises a slot's reserved_offset to "offset" if lower (caller holds
 * file_lock), but never above the freshness mark the registry published.
 */
static void
sf_raise_reserved(ShardSlot *slot, int64 offset)
{
	LWLockAcquire(slot->lock, LW_EXCLUSIVE);
	offset = Min(offset, sf_registry_cap(slot->shard_id));
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
		int64		now = sf_wall_ms() - sf_layout.epoch_ms;
		int64		target = Max(wanted, now + sf_max_clock_lead + SF_RESERVE_AHEAD_MS);

		/* never a mark the layout cannot represent (wanted never is one) */
		target = Max(Min(target, sf_layout.max_offset_ms()), wanted);

		ok = sf_write_mark(target + sf_layout.epoch_ms, error);
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

	sf_extend_mark(NULL, offset);
	LWLockAcquire(sf_shared->file_lock, LW_EXCLUSIVE);
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
		last = Max(last, sf_slot_last(sf_slot(i), NULL));

	/*
	 * Never below the point shards resume above: the mark found at start,
	 * raised by WAL replay (on a standby that generated with
	 * allow_on_standby, the primary's mark) and by snowflake_raise_floor().
	 * Replay after a restart begins at the restartpoint and would not raise
	 * it again.
	 */
	last = Max(last, sf_shared->resume_offset);
	if (last < 0 || last >= sf_durable_offset() || sf_write_mark(last + sf_layout.epoch_ms, &error))
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

/*---- the primary's shards, for standbys ----*/

/* What the last shards record said, and when it was written (the mark worker's). */
typedef struct SfShardsLogged
{
	bool		done;
	int32		count;
	snowflake::ShardRange ranges[SF_MAX_PRIMARY_RANGES + 2];
	int64		at_ms;			/* wall clock */
	XLogRecPtr	important;		/* GetLastImportantRecPtr() just after it */
} SfShardsLogged;

/*
 * Writes a shards record when what this primary may generate for has changed
 * (configuration, the registry's shard), and again every SF_SHARDS_LOG_MS
 * while other WAL is written (marked unimportant, so that an idle server
 * stays idle), so that a standby made from a base backup soon learns them.
 */
static void
sf_keep_shards_logged(SfShardsLogged *last)
{
	SfShardsRecord *rec;
	snowflake::ShardRange ranges[SF_MAX_PRIMARY_RANGES + 2];
	int			n = sf_configured_shards(ranges, SF_MAX_PRIMARY_RANGES + 1);
	int64		held = (int64) pg_atomic_read_u32(&sf_shared->registry_shard) - 1;
	int64		now = sf_wall_ms();
	bool		changed;
	size_t		size;

	if (RecoveryInProgress())
		return;
	/* more ranges than a standby keeps: say "every shard" with one range too many */
	n = Min(n, SF_MAX_PRIMARY_RANGES + 1);
	if (held >= 0)
		ranges[n++] = snowflake::ShardRange{held, held};
	changed = !last->done || n != last->count ||
		memcmp(ranges, last->ranges, sizeof(snowflake::ShardRange) * (Size) n) != 0;
	if (!changed && (now - last->at_ms < SF_SHARDS_LOG_MS ||
					 GetLastImportantRecPtr() == last->important))
		return;

	size = offsetof(SfShardsRecord, ranges) + sizeof(snowflake::ShardRange) * (Size) n;
	rec = (SfShardsRecord *) palloc0(size);
	rec->count = n;
	memcpy(rec->ranges, ranges, sizeof(snowflake::ShardRange) * (Size) n);
	XLogBeginInsert();
	XLogRegisterData((char *) rec, (uint32) size);
	if (!changed)
		XLogSetRecordFlags(XLOG_MARK_UNIMPORTANT);
	(void) XLogInsert(SF_RMGR_ID, XLOG_SNOWFLAKE_SHARDS);
	pfree(rec);

	last->done = true;
	last->count = n;
	memcpy(last->ranges, ranges, sizeof(snowflake::ShardRange) * (Size) n);
	last->at_ms = now;
	last->important = GetLastImportantRecPtr();
}

/*---- the mark worker ----*/

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
	int64		now = sf_wall_ms() - sf_layout.epoch_ms;
	int64		last = -1;
	int64		reserved = PG_INT64_MAX;
	int64		horizon;
	int			used = (int) pg_atomic_read_u32(&sf_shared->used_slots);
	uint64		activity = sf_activity(used, &last, &reserved);
	snowflake::FileError error = {"", "", 0};

	if (activity != *seen_activity)
	{
		*seen_activity = activity;
		*active_until = now + SF_WORKER_ACTIVE_MS;
	}
	if (used == 0 || now > *active_until || reserved == PG_INT64_MAX || now < 0)
		return;					/* idle, nothing issued yet, or before the epoch: no writes */

	horizon = Max(now + sf_max_clock_lead, last);
	if (reserved - horizon >= SF_RESERVE_AHEAD_MS / 2)
		return;
	if (!sf_move_mark(NULL, horizon + SF_RESERVE_AHEAD_MS / 2, &error))
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

/* Installs the shared-memory hooks and the worker (preload only). */
void
sf_state_init(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = sf_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = sf_shmem_startup;
	sf_register_worker("snowflake_mark_worker_main", "snowflake mark worker",
					   BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION);
	RegisterCustomRmgr(SF_RMGR_ID, &sf_rmgr);
}
