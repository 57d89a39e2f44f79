/*-------------------------------------------------------------------------
 *
 * wal.cpp
 *		The custom WAL resource manager "snowflake" (ID 128): the records of
 *		the durable mark, the layout, the primary's shards, import
 *		reservations and live shards (from when each generates live IDs),
 *		their redo on standbys, and the standby's refusal of its primary's
 *		shards.  See wal.hpp.
 *
 * Every new mark is written to WAL before any ID under it is issued, so WAL
 * order puts it ahead of every row that carries such an ID.  A standby's redo
 * raises its own mark, on disk and in memory; once promoted, every shard
 * resumes above the highest mark replayed, that is above every ID the old
 * primary could have issued into the data the standby holds.
 *
 *-------------------------------------------------------------------------
 */
#include <cerrno>
#include <cstring>

#include "state/datadir.hpp"
#include "state/wal.hpp"

extern "C"
{
#include "postgres.h"
#include "access/xlog.h"
#include "access/xlog_internal.h"
#include "access/xloginsert.h"
#include "access/xlogreader.h"
#include "lib/stringinfo.h"
#include "port/atomics.h"
#include "storage/lwlock.h"
}

/* The custom WAL resource manager that carries the mark to standbys. */
#define SF_RMGR_ID RM_EXPERIMENTAL_ID
#define SF_RMGR_NAME "snowflake"
#define XLOG_SNOWFLAKE_MARK 0x10
#define XLOG_SNOWFLAKE_LAYOUT 0x20
#define XLOG_SNOWFLAKE_SHARDS 0x30
#define XLOG_SNOWFLAKE_IMPORT 0x40
#define XLOG_SNOWFLAKE_LIVE 0x50

/* The payload of a live record: from when a shard generates live IDs. */
typedef struct SfLiveRecord
{
	int64		shard;
	int64		from_ms;
} SfLiveRecord;

/* The payload of an import reservation record. */
typedef struct SfImportRecord
{
	int64		shard;
	int64		reserved_ms;
} SfImportRecord;

/* The payload of a layout record. */
typedef struct SfLayoutRecord
{
	int64		epoch_ms;
	int32		shard_bits;
	int32		sequence_bits;
	/* 1.2: written only when one differs from 63 bits, 1 ms, no datacenters */
	int32		id_bits;
	int32		unit_ms;
	int32		datacenter_bits;
	int32		pad;
} SfLayoutRecord;

/* The length of a layout record without what 1.2 added (what 1.1 reads). */
#define SF_LAYOUT_RECORD_1_1 offsetof(SfLayoutRecord, id_bits)

/* The payload of a shards record: a count, then that many ranges. */
typedef struct SfShardsRecord
{
	int32		count;
	int32		pad;
	snowflake::ShardRange ranges[FLEXIBLE_ARRAY_MEMBER];
} SfShardsRecord;

static void sf_log_layout(void);

/*
 * Writes pg_snowflake/layout once, and its WAL record: before the first use
 * of the layout (layoutpin.cpp: CREATE EXTENSION, the first decoder call) or
 * the first ID, whichever comes first.
 */
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
 * Writes a new mark to WAL for standbys (caller holds file_lock, before any
 * ID under the mark is issued).  Nothing to do during recovery.
 */
void
sf_log_mark(int64 mark_ms)
{
	if (RecoveryInProgress())
		return;
	XLogBeginInsert();
	XLogRegisterData((char *) &mark_ms, sizeof(mark_ms));
	/* under file_lock: the records' ends grow in this order */
	pg_atomic_write_u64(&sf_shared->mark_lsn,
						(uint64) XLogInsert(SF_RMGR_ID, XLOG_SNOWFLAKE_MARK));
}

/*
 * Writes the layout to WAL for standbys (caller holds file_lock, before the
 * layout's first use), so that a standby made before the record records its
 * primary's layout and refuses if its own settings differ.
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
	rec.id_bits = sf_layout.id_bits;
	rec.unit_ms = (int32) sf_layout.unit_ms;
	rec.datacenter_bits = sf_layout.datacenter_bits;
	XLogBeginInsert();
	/* a default layout's record stays the one earlier libraries replay */
	if (rec.id_bits == snowflake::kIdBits && rec.unit_ms == 1 && rec.datacenter_bits == 0)
		XLogRegisterData((char *) &rec, SF_LAYOUT_RECORD_1_1);
	else
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

	if (XLogRecGetDataLen(record) != sizeof(rec) &&
		XLogRecGetDataLen(record) != SF_LAYOUT_RECORD_1_1)
		elog(PANIC, "snowflake redo: layout record of %u bytes", XLogRecGetDataLen(record));
	memset(&rec, 0, sizeof(rec));
	rec.id_bits = snowflake::kIdBits;
	rec.unit_ms = 1;
	memcpy(&rec, XLogRecGetData(record), XLogRecGetDataLen(record));
	primary.epoch_ms = rec.epoch_ms;
	primary.shard_bits = rec.shard_bits;
	primary.sequence_bits = rec.sequence_bits;
	primary.id_bits = rec.id_bits;
	primary.unit_ms = rec.unit_ms;
	primary.datacenter_bits = rec.datacenter_bits;
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
 * Writes an import shard's new reservation (shard -1: the import floor) to
 * WAL (caller holds file_lock, after writing pg_snowflake/imports and before
 * any ID under it), so that a standby records it too and, once promoted,
 * resumes the shard above it.
 */
void
sf_log_import_reservation(int64 shard, int64 reserved_ms)
{
	SfImportRecord rec;

	if (RecoveryInProgress())
		return;
	rec.shard = shard;
	rec.reserved_ms = reserved_ms;
	XLogBeginInsert();
	XLogRegisterData((char *) &rec, sizeof(rec));
	(void) XLogInsert(SF_RMGR_ID, XLOG_SNOWFLAKE_IMPORT);
}

/* Redo of an import reservation: pg_snowflake/imports records it. */
static void
sf_redo_import(XLogReaderState *record)
{
	SfImportRecord rec;
	snowflake::FileError error = {"", "", 0};
	bool		damaged = false;
	bool		ok;

	if (XLogRecGetDataLen(record) != sizeof(rec))
		elog(PANIC, "snowflake redo: import record of %u bytes", XLogRecGetDataLen(record));
	memcpy(&rec, XLogRecGetData(record), sizeof(rec));
	if (sf_shared == NULL)
		return;
	/* shard -1 is the floor; a value this layout cannot hold is never recorded */
	if (rec.shard < -1 || rec.shard > sf_layout.max_shard_id() ||
		(rec.reserved_ms != -1 &&
		 (rec.reserved_ms < sf_layout.epoch_ms ||
		  rec.reserved_ms > sf_layout.unix_ms_end_of(sf_layout.max_offset()))))
	{
		ereport(WARNING,
				(errmsg("snowflake redo: ignoring an import reservation this layout cannot hold "
						"(shard " INT64_FORMAT ", " INT64_FORMAT " ms)",
						(int64) rec.shard, (int64) rec.reserved_ms)));
		return;
	}
	LWLockAcquire(sf_shared->file_lock, LW_EXCLUSIVE);
	ok = sf_write_import_reservation(rec.shard, rec.reserved_ms, &error, &damaged);
	LWLockRelease(sf_shared->file_lock);
	if (!ok && damaged)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("could not record the snowflake import reservation replayed from WAL: "
						"pg_snowflake/imports is damaged"),
				 errhint("Restore pg_snowflake/imports from the primary and start the server "
						 "again: replay continues where it stopped.")));
	if (!ok)
		sf_report_redo_error("import reservation", error);
}

/*
 * Writes from when a shard generates live IDs to WAL (caller holds
 * file_lock, after writing pg_snowflake/live and before the shard's first
 * live ID), so that a standby records it too and, once promoted, refuses
 * imports on that shard within its live history.
 */
void
sf_log_live_from(int64 shard, int64 from_ms)
{
	SfLiveRecord rec;

	if (RecoveryInProgress())
		return;
	rec.shard = shard;
	rec.from_ms = from_ms;
	XLogBeginInsert();
	XLogRegisterData((char *) &rec, sizeof(rec));
	(void) XLogInsert(SF_RMGR_ID, XLOG_SNOWFLAKE_LIVE);
}

/* Redo of a live record: pg_snowflake/live records it. */
static void
sf_redo_live(XLogReaderState *record)
{
	SfLiveRecord rec;
	snowflake::FileError error = {"", "", 0};
	bool		damaged = false;
	bool		ok;

	if (XLogRecGetDataLen(record) != sizeof(rec))
		elog(PANIC, "snowflake redo: live record of %u bytes", XLogRecGetDataLen(record));
	memcpy(&rec, XLogRecGetData(record), sizeof(rec));
	if (sf_shared == NULL)
		return;
	if (rec.shard < 0 || rec.shard > sf_layout.max_shard_id() || rec.from_ms < 0 ||
		rec.from_ms > sf_layout.unix_ms_end_of(sf_layout.max_offset()))
	{
		ereport(WARNING,
				(errmsg("snowflake redo: ignoring a live record this layout cannot hold "
						"(shard " INT64_FORMAT ", " INT64_FORMAT " ms)",
						(int64) rec.shard, (int64) rec.from_ms)));
		return;
	}
	LWLockAcquire(sf_shared->file_lock, LW_EXCLUSIVE);
	ok = sf_write_live_from(rec.shard, rec.from_ms, &error, &damaged);
	LWLockRelease(sf_shared->file_lock);
	if (!ok && damaged)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("could not record the snowflake live shard replayed from WAL: "
						"pg_snowflake/live is damaged"),
				 errhint("Restore pg_snowflake/live from the primary and start the server "
						 "again: replay continues where it stopped.")));
	if (!ok)
		sf_report_redo_error("live shard", error);
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
	if (info == XLOG_SNOWFLAKE_IMPORT)
	{
		sf_redo_import(record);
		return;
	}
	if (info == XLOG_SNOWFLAKE_LIVE)
	{
		sf_redo_live(record);
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
	if (ok && sf_layout.offset_of(mark) > sf_shared->resume_offset)
		sf_shared->resume_offset = sf_layout.offset_of(mark);
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
		(XLogRecGetDataLen(record) == sizeof(SfLayoutRecord) ||
		 XLogRecGetDataLen(record) == SF_LAYOUT_RECORD_1_1))
	{
		SfLayoutRecord rec;

		memset(&rec, 0, sizeof(rec));
		rec.id_bits = snowflake::kIdBits;
		rec.unit_ms = 1;
		memcpy(&rec, XLogRecGetData(record), XLogRecGetDataLen(record));
		snowflake::format_utc(rec.epoch_ms, when, sizeof(when));
		appendStringInfo(buf, "epoch %s, shard_bits %d, sequence_bits %d, id_bits %d, "
						 "unit %d ms, datacenter_bits %d", when, rec.shard_bits,
						 rec.sequence_bits, rec.id_bits, rec.unit_ms, rec.datacenter_bits);
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
	if ((XLogRecGetInfo(record) & ~XLR_INFO_MASK) == XLOG_SNOWFLAKE_IMPORT &&
		XLogRecGetDataLen(record) == sizeof(SfImportRecord))
	{
		SfImportRecord rec;

		memcpy(&rec, XLogRecGetData(record), sizeof(rec));
		snowflake::format_utc(rec.reserved_ms, when, sizeof(when));
		if (rec.shard < 0)
			appendStringInfo(buf, "import floor %s", when);
		else
			appendStringInfo(buf, "import shard " INT64_FORMAT " reserved to %s",
							 (int64) rec.shard, when);
		return;
	}
	if ((XLogRecGetInfo(record) & ~XLR_INFO_MASK) == XLOG_SNOWFLAKE_LIVE &&
		XLogRecGetDataLen(record) == sizeof(SfLiveRecord))
	{
		SfLiveRecord rec;

		memcpy(&rec, XLogRecGetData(record), sizeof(rec));
		snowflake::format_utc(rec.from_ms, when, sizeof(when));
		appendStringInfo(buf, "shard " INT64_FORMAT " live from %s", (int64) rec.shard, when);
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
		case XLOG_SNOWFLAKE_IMPORT:
			return "IMPORT";
		case XLOG_SNOWFLAKE_LIVE:
			return "LIVE";
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

/*
 * Writes a shards record when what this primary may generate for has changed
 * (configuration, the registry's shard), and again every SF_SHARDS_LOG_MS
 * while other WAL is written (marked unimportant, so that an idle server
 * stays idle), so that a standby made from a base backup soon learns them.
 */
void
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

/* Registers the resource manager (preload only). */
void
sf_wal_init(void)
{
	RegisterCustomRmgr(SF_RMGR_ID, &sf_rmgr);
}
