/*-------------------------------------------------------------------------
 *
 * watermark.cpp
 *		The commit watermark: what open and prepared transactions may still
 *		commit below a shard's position, so that snowflake_commit_watermark()
 *		(sql/watermark.cpp) can say "every ID below this that will ever be
 *		committed is committed".
 *
 * The shared state.
 *	- One entry per backend (MaxBackends of them; PG 15/16 index them by
 *	  MyBackendId - 1, 17+ by MyProcNumber), one cache line each: up to
 *	  SF_WM_PAIRS pairs (slot number + 1, floor), where floor is the lowest
 *	  ID the backend's current top-level transaction may have taken from
 *	  that slot, and "used", the pairs claimed.  A transaction that takes
 *	  IDs from more slots than there are pairs claims past the end: "used"
 *	  above SF_WM_PAIRS holds every slot at floor 0 until it ends
 *	  (conservative).  A parallel worker publishes into its leader's entry,
 *	  since the leader may insert the worker's IDs and commits after the
 *	  worker has ended.  An entry is written by its backend (and its
 *	  workers while the leader waits for them) and read by any reader.
 *	- The prepared table (under its own LWLock, tranche
 *	  SF_WATERMARK_TRANCHE): rows (xid, shard, floor) of prepared
 *	  transactions, shard -1 for every shard; each prepared transaction's
 *	  rows are also in pg_snowflake/prepared.<xid>, written durably before
 *	  the PREPARE completes and loaded at server start, so that they hold
 *	  across a restart until COMMIT PREPARED or ROLLBACK PREPARED.  A row
 *	  holds while TransactionIdIsInProgress(xid): a prepared transaction
 *	  keeps a dummy PGPROC in the procarray, which the restarted server
 *	  restores before it accepts connections.  Rows whose transaction is
 *	  no longer in progress are dropped, and their file removed, by the
 *	  next reader or PREPARE.  Nothing under the lock does I/O or ereports;
 *	  TransactionIdIsInProgress is called after release.
 *
 * The ordering argument (a writer W takes IDs from a slot; a reader R
 * computes the slot's watermark).
 *	W, on its top-level transaction's first ID from the slot, before the
 *	step that issues it: reads the slot's position S (the atomic
 *	generator's state word; the LWLock generator's gen.last_*, under the
 *	slot lock its step holds), stores the pair (slot, floor = ID(S) + 1),
 *	then a full barrier.  Every ID W then takes from the slot is above S,
 *	since a slot's position only grows and each ID lies above the position
 *	it was issued from.
 *	R: reads the slot's position G (the state word then a full barrier;
 *	or gen.last_* under the slot lock, shared), THEN reads every backend
 *	entry, THEN the prepared table; watermark = min(ID(G) + 1, the
 *	floors found).
 *	Take an ID x of W.  Either G's read saw the position move past x: the
 *	atomic generator moves it only by full-barrier CASes (W's own issued
 *	x), so W's pair store, before its barrier, is visible to R's reads after
 *	its barrier (fence to fence through the CAS chain); with the LWLock
 *	generator, W stored its pair under the slot lock before x's step
 *	released it, and R took that lock after.  So R finds W's floor <= x,
 *	unless W's transaction has ended by then (its entry cleared, below).
 *	Or G's read did not see x: then x > G, so x >= ID(G) + 1 >= the
 *	watermark.  Either way x lies at or above the watermark while W may
 *	still commit it.
 *	W's transaction ends: the entry is cleared by the COMMIT/ABORT
 *	callback, which runs after ProcArrayEndTransaction (xact.c's
 *	CommitTransaction: "ProcArrayEndTransaction(MyProc, latestXid)" comes
 *	before "CallXactCallbacks(XACT_EVENT_COMMIT)"), so once R sees the
 *	entry cleared, W's rows are visible to any snapshot taken after R's
 *	read: the poller's next statement.  At PREPARE, W's rows go into the
 *	prepared table (XACT_EVENT_PRE_PREPARE, while W's entry still holds)
 *	before its entry is cleared (XACT_EVENT_PREPARE); R reads the entries
 *	before the table, so it finds one of the two.  The prepared
 *	transaction's dummy PGPROC joins the procarray before W's own xid
 *	leaves it (EndPrepare, then ProcArrayClearTransaction), so the row's
 *	xid stays in progress until COMMIT/ROLLBACK PREPARED removes it, with
 *	the commit visible from then on.
 *	Subtransactions: the pairs stay until the top level ends
 *	(conservative: a rolled-back savepoint's IDs are never committed).
 *	A backend that exits aborts its transaction first (ShutdownPostgres,
 *	a before_shmem_exit callback: AbortOutOfAnyTransaction), which clears
 *	its entry; one that dies resets shared memory with the crash restart.
 *
 * Idle shards (sf_watermark_advance, before either form reads).  What a
 * shard with no open transaction contributes is the lowest ID it could
 * still issue; without help that is just above its last ID (a slot's
 * position) or the first ID above the point it resumes from (a shard with
 * no slot: resume_offset), which stand still while the shard is idle and
 * hold the server-wide minimum back.  The clock alone is no bound (it can
 * step back, also across a restart), so the reader makes it one before
 * using it: mark.cpp's sf_advance_shards(now - 1) first makes the durable
 * mark cover it, then raises resume_offset and each live slot's position
 * to it (never past the slot's reserved_offset).  What then bounds a
 * shard's next ID from below, whatever the clock does:
 *	- a slot: its position, which only grows; the step issues above it and
 *	  never goes back with the clock (it waits, or borrows up to the lead).
 *	  Moving the position is a CAS on the state word (atomic) or a write
 *	  under the slot lock held exclusively (lwlock), the same as a step, so
 *	  the ordering argument above holds with it as one more step that
 *	  issues nothing, before the reader reads G;
 *	- a shard with no slot yet: its slot resumes above resume_offset, read
 *	  under file_lock, which the maker holds shared until the slot is
 *	  published and sf_advance_shards holds exclusive while it raises the
 *	  value: a slot made concurrently is either among used_slots there or
 *	  resumes above the raised value (sf_watermark_unslotted's read);
 *	- after a restart (clean, crash, or with the clock set back): every
 *	  shard resumes above the mark found at start, which covers every
 *	  position and resume_offset of the run before (the clean-shutdown
 *	  settle lowers it to no less than both);
 *	- a promoted standby: it resumes above the highest mark it replayed;
 *	  the mark's WAL record is inserted before the positions move and
 *	  flushed before the read returns (so a streaming standby receives it
 *	  at once), but the read does not wait for a standby to replay it
 *	  (docs/commit-watermark.md says what a poller does after a failover).
 * A backward clock step moves nothing (the shards stand above it already),
 * so no value returned before is passed by an ID issued after.
 *
 * Prepared transactions, server-wide: the form without argument takes the
 * minimum over every prepared row still in progress, whatever its shard
 * (sf_watermark_prepared), after it has read every slot and the entries,
 * so a transaction prepared while it reads is found in one of the two.
 * The shards this server generates for may have changed across a restart;
 * a prepared transaction of an earlier shard still holds until it ends.
 *
 *-------------------------------------------------------------------------
 */
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>

#include "core/records.hpp"
#include "core/statefile.hpp"
#include "state/datadir.hpp"
#include "state/fastpath.hpp"
#include "state/mark.hpp"
#include "state/watermark.hpp"

extern "C"
{
#include "postgres.h"
#include "access/transam.h"
#include "access/twophase.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/lwlock.h"
#include "storage/procarray.h"
#include "storage/shmem.h"
}

/* pairs per entry: one PG_CACHE_LINE_SIZE (128) line on x86 */
#define SF_WM_PAIRS 10
/*
 * The record of a prepared transaction: "format 1" and a line "floor <int32>
 * <int64>" (at most 38 characters) per pair, plus one for an overflowed
 * entry; its lines are counted by SF_WM_PAIRS, never by an input.
 */
#define SF_WM_RECORD_SIZE 1024
static_assert(sizeof("format 1\n") + (SF_WM_PAIRS + 1) * sizeof("floor -2147483648 -9223372036854775808\n")
			  <= SF_WM_RECORD_SIZE, "a prepared transaction's record fits its buffer");
/* the file of a prepared transaction: pg_snowflake/prepared.<xid> */
#define SF_WM_FILE_PREFIX "prepared."

typedef struct alignas(PG_CACHE_LINE_SIZE) SfWmEntry
{
	pg_atomic_uint32 used;		/* pairs claimed; > SF_WM_PAIRS: every slot held at 0 */
	pg_atomic_uint32 slot[SF_WM_PAIRS];	/* slot number + 1; 0: not written */
	pg_atomic_uint64 floor[SF_WM_PAIRS];	/* int64: lowest ID it may have taken */
} SfWmEntry;

typedef struct SfWmPrepared
{
	TransactionId xid;			/* InvalidTransactionId: a free row */
	int32		shard;			/* -1: every shard */
	int64		floor;
} SfWmPrepared;

typedef struct SfWmShared
{
	LWLock	   *lock;			/* guards the rows and "lost" */
	int			entries;		/* backend entries */
	int			capacity;		/* prepared rows */
	bool		lost;			/* the files at start did not fit: refuse */
	/* followed by the entries (cache-line aligned), the rows, then per slot
	 * the highest watermark returned (pg_atomic_uint64, see sf_wm_monotone) */
} SfWmShared;

static SfWmShared *sf_wm = NULL;
static SfWmEntry *sf_wm_entries = NULL;
static SfWmPrepared *sf_wm_rows = NULL;
static pg_atomic_uint64 *sf_wm_returned = NULL;

/*
 * The postmaster counts the files once, when it asks for shared memory, to
 * size the prepared table; a crash restart makes the same size again.
 */
static int	sf_wm_files_at_start = -1;

/* this backend: the slot it last published in this transaction (watermark.hpp) */
ShardSlot  *sf_watermark_held_slot = NULL;

/* this backend: the xid whose rows PRE_PREPARE added, until PREPARE or ABORT */
static TransactionId sf_wm_preparing = InvalidTransactionId;

/*---- shared memory ----*/

/* Backend entries: every process that can run SQL has an index below this. */
static int
sf_wm_entry_count(void)
{
	return MaxBackends;
}

/* Files pg_snowflake/prepared.<xid> (not .tmp); calls f(xid, name) for each. */
template <typename F>
static void
sf_wm_each_file(F &&f)
{
	DIR		   *dir = opendir(snowflake::kStateDir);
	struct dirent *de;

	if (dir == NULL)
		return;
	while ((de = readdir(dir)) != NULL)
	{
		const char *name = de->d_name;
		const char *digits = name + strlen(SF_WM_FILE_PREFIX);
		char	   *end;
		unsigned long xid;

		if (strncmp(name, SF_WM_FILE_PREFIX, strlen(SF_WM_FILE_PREFIX)) != 0 ||
			*digits < '0' || *digits > '9')
			continue;
		errno = 0;
		xid = strtoul(digits, &end, 10);
		if (*end != '\0' || errno != 0 || xid == 0 || xid > PG_UINT32_MAX)
			continue;
		f((TransactionId) xid, name);
	}
	closedir(dir);
}

static int
sf_wm_capacity(void)
{
	/* each prepared transaction has at most SF_WM_PAIRS rows (or one for every shard) */
	return (max_prepared_xacts + sf_wm_files_at_start + 4) * SF_WM_PAIRS;
}

static Size
sf_wm_entries_offset(void)
{
	return TYPEALIGN(PG_CACHE_LINE_SIZE, sizeof(SfWmShared));
}

static Size
sf_wm_rows_offset(void)
{
	return sf_wm_entries_offset() + sizeof(SfWmEntry) * (Size) sf_wm_entry_count();
}

static Size
sf_wm_returned_offset(void)
{
	return MAXALIGN(sf_wm_rows_offset() + sizeof(SfWmPrepared) * (Size) sf_wm_capacity());
}

/* The shared memory to ask for (the module's shmem_request_hook). */
Size
sf_watermark_shmem_size(void)
{
	if (sf_wm_files_at_start < 0)
	{
		sf_wm_files_at_start = 0;
		sf_wm_each_file([](TransactionId, const char *) { sf_wm_files_at_start++; });
	}
	/* room to align the start to a cache line */
	return PG_CACHE_LINE_SIZE + sf_wm_returned_offset() +
		sizeof(pg_atomic_uint64) * (Size) sf_num_slots();
}

/* Adds a row; false when the table is full.  Caller holds the lock exclusively. */
static bool
sf_wm_add_row(TransactionId xid, int32 shard, int64 floor)
{
	for (int i = 0; i < sf_wm->capacity; i++)
		if (!TransactionIdIsValid(sf_wm_rows[i].xid))
		{
			sf_wm_rows[i].xid = xid;
			sf_wm_rows[i].shard = shard;
			sf_wm_rows[i].floor = floor;
			return true;
		}
	return false;
}

/*
 * Parses a prepared transaction's record: "format 1", then "floor <shard>
 * <id>" lines (shard -1: every shard).  False on anything else.
 */
static bool
sf_wm_parse(const char *text, size_t len, TransactionId xid, bool add)
{
	bool		format_seen = false;

	return snowflake::for_each_record_line(text, len, [&](const char *line) {
		long long	shard, floor;
		int			n = 0;

		if (!format_seen)
		{
			format_seen = strcmp(line, "format 1") == 0;
			return format_seen;
		}
		if (sscanf(line, "floor %lld %lld%n", &shard, &floor, &n) != 2 ||
			line[n] != '\0' || shard < -1 || shard > sf_layout.max_shard_id() || floor < 0)
			return false;
		return !add || sf_wm_add_row(xid, (int32) shard, (int64) floor);
	}) && format_seen;
}

/* Loads pg_snowflake/prepared.* into the table (the postmaster, at start). */
static void
sf_wm_load(void)
{
	sf_wm_each_file([](TransactionId xid, const char *name) {
		char		path[MAXPGPATH];
		char		buf[2048];
		size_t		len = 0;
		snowflake::FileError error = {"", "", 0};
		snowflake::ReadResult r;

		snprintf(path, sizeof(path), "%s/%s", snowflake::kStateDir, name);
		r = snowflake::read_small_file(path, buf, sizeof(buf), &len, &error);
		if (r == snowflake::ReadResult::Missing)
			return;
		if (r != snowflake::ReadResult::Ok || !sf_wm_parse(buf, len, xid, false))
		{
			/* unreadable: hold every shard at 0 while the transaction is in progress */
			ereport(WARNING,
					(errmsg("could not read the snowflake record \"%s\"", path),
					 errdetail("The commit watermark is held at 0 while transaction %u is "
							   "in progress.", xid)));
			if (!sf_wm_add_row(xid, -1, 0))
				sf_wm->lost = true;
			return;
		}
		if (!sf_wm_parse(buf, len, xid, true))
			sf_wm->lost = true;
	});
	if (sf_wm->lost)
		ereport(WARNING,
				(errmsg("too many snowflake records of prepared transactions in pg_snowflake/"),
				 errdetail("snowflake_commit_watermark() refuses until the server restarts.")));
}

/* Creates the shared state (the module's shmem_startup_hook). */
void
sf_watermark_shmem_init(void)
{
	bool		found;
	char	   *base;

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	base = (char *) ShmemInitStruct("snowflake_watermark", sf_watermark_shmem_size(), &found);
	base = (char *) TYPEALIGN(PG_CACHE_LINE_SIZE, base);
	sf_wm = (SfWmShared *) base;
	sf_wm_entries = (SfWmEntry *) (base + sf_wm_entries_offset());
	sf_wm_rows = (SfWmPrepared *) (base + sf_wm_rows_offset());
	sf_wm_returned = (pg_atomic_uint64 *) (base + sf_wm_returned_offset());
	if (!found)
	{
		sf_wm->lock = &GetNamedLWLockTranche(SF_WATERMARK_TRANCHE)[0].lock;
		sf_wm->entries = sf_wm_entry_count();
		sf_wm->capacity = sf_wm_capacity();
		sf_wm->lost = false;
		for (int b = 0; b < sf_wm->entries; b++)
		{
			pg_atomic_init_u32(&sf_wm_entries[b].used, 0);
			for (int i = 0; i < SF_WM_PAIRS; i++)
			{
				pg_atomic_init_u32(&sf_wm_entries[b].slot[i], 0);
				pg_atomic_init_u64(&sf_wm_entries[b].floor[i], 0);
			}
		}
		for (int i = 0; i < sf_wm->capacity; i++)
			sf_wm_rows[i].xid = InvalidTransactionId;
		for (int i = 0; i < sf_num_slots(); i++)
			pg_atomic_init_u64(&sf_wm_returned[i], 0);
	}
	LWLockRelease(AddinShmemInitLock);

	/* the postmaster, before any backend: no lock needed, and ereport is fine */
	if (!found)
		sf_wm_load();
}

/*---- the writer ----*/

/* This backend's entry, or its parallel leader's. */
static SfWmEntry *
sf_wm_entry(bool leader)
{
	int			index = sf_backend_number(leader);

	/*
	 * Every process that runs SQL has a number below MaxBackends (sinval's
	 * slots); one without (an auxiliary process) never generates, and gets
	 * none rather than a write out of bounds.
	 */
	if (index < 0 || index >= sf_wm->entries)
		return NULL;
	return &sf_wm_entries[index];
}

/* The lowest ID a slot may issue after position (offset, sequence). */
static int64
sf_wm_floor_after(ShardSlot *slot, int64 offset, int64 sequence)
{
	if (offset < 0)
		return 0;
	return snowflake::encode(sf_layout, offset, slot->shard_id, sequence) + 1;
}

/*
 * Publishes, before the first ID of this top-level transaction from "slot",
 * the lowest ID the transaction may take from it (see the argument above).
 * Called with slot->lock held for the LWLock generator: no allocation, no
 * ereport, no I/O.
 */
void
sf_watermark_publish(ShardSlot *slot, bool locked)
{
	SfWmEntry  *entry;
	uint32		number;
	uint32		used;
	int64		sequence;
	int64		offset;
	uint32		i;

	if (sf_wm == NULL)
		return;
	Assert(locked || sf_generator == SF_GENERATOR_ATOMIC);
	(void) locked;
	entry = sf_wm_entry(true);
	if (entry == NULL)
		return;					/* not a process that runs SQL (see sf_wm_entry) */
	number = (uint32) (slot - sf_slot(0)) + 1;

	/* already held in this transaction (by this backend, its leader or a worker)? */
	used = pg_atomic_read_u32(&entry->used);
	for (i = 0; i < Min(used, (uint32) SF_WM_PAIRS); i++)
		if (pg_atomic_read_u32(&entry->slot[i]) == number)
			break;
	if (used > SF_WM_PAIRS || i < Min(used, (uint32) SF_WM_PAIRS))
	{
		sf_watermark_held_slot = slot;
		return;
	}

	offset = sf_slot_last(slot, &sequence);
	i = pg_atomic_fetch_add_u32(&entry->used, 1);
	if (i < SF_WM_PAIRS)
	{
		pg_atomic_write_u64(&entry->floor[i], (uint64) sf_wm_floor_after(slot, offset, sequence));
		pg_atomic_write_u32(&entry->slot[i], number);
	}
	/* the pair before the step that issues the ID (a CAS, or under the slot lock) */
	pg_memory_barrier();
	sf_watermark_held_slot = slot;
}

/* Clears this backend's entry (its top-level transaction ended or was prepared). */
static void
sf_wm_clear(void)
{
	SfWmEntry  *entry = sf_wm_entry(false);
	uint32		used = entry != NULL ? pg_atomic_read_u32(&entry->used) : 0;

	if (used == 0)
		return;
	for (uint32 i = 0; i < Min(used, (uint32) SF_WM_PAIRS); i++)
		pg_atomic_write_u32(&entry->slot[i], 0);
	pg_atomic_write_u32(&entry->used, 0);
	pg_memory_barrier();
}

/* Removes the rows of "xid" (and with unlink, its file). */
static void
sf_wm_forget(TransactionId xid, bool unlink_file)
{
	char		path[MAXPGPATH];

	LWLockAcquire(sf_wm->lock, LW_EXCLUSIVE);
	for (int i = 0; i < sf_wm->capacity; i++)
		if (TransactionIdEquals(sf_wm_rows[i].xid, xid))
			sf_wm_rows[i].xid = InvalidTransactionId;
	LWLockRelease(sf_wm->lock);
	if (unlink_file)
	{
		snprintf(path, sizeof(path), "%s/%s%u", snowflake::kStateDir, SF_WM_FILE_PREFIX, xid);
		(void) unlink(path);	/* a file left by a crash is dropped again later */
	}
}

/* Drops rows (and files) of transactions no longer in progress; returns free rows. */
static int
sf_wm_prune(void)
{
	TransactionId *xids;
	int			n = 0;
	int			free_rows = 0;

	xids = (TransactionId *) palloc(sizeof(TransactionId) * sf_wm->capacity);
	LWLockAcquire(sf_wm->lock, LW_SHARED);
	for (int i = 0; i < sf_wm->capacity; i++)
	{
		TransactionId xid = sf_wm_rows[i].xid;
		bool		seen = false;

		if (!TransactionIdIsValid(xid))
		{
			free_rows++;
			continue;
		}
		for (int j = 0; j < n && !seen; j++)
			seen = TransactionIdEquals(xids[j], xid);
		if (!seen)
			xids[n++] = xid;
	}
	LWLockRelease(sf_wm->lock);
	for (int j = 0; j < n; j++)
		if (!TransactionIdIsInProgress(xids[j]))
		{
			sf_wm_forget(xids[j], true);
			free_rows++;		/* at least one */
		}
	pfree(xids);
	return free_rows;
}

/*
 * PRE_PREPARE: the transaction's pairs become rows of the prepared table and
 * pg_snowflake/prepared.<xid>, durably, before the PREPARE completes; an
 * error here fails the PREPARE.
 */
static void
sf_wm_pre_prepare(void)
{
	SfWmEntry  *entry = sf_wm_entry(false);
	uint32		used = entry != NULL ? pg_atomic_read_u32(&entry->used) : 0;
	TransactionId xid = GetTopTransactionIdIfAny();
	int32		shards[SF_WM_PAIRS + 1];
	int64		floors[SF_WM_PAIRS + 1];
	int			n = 0;
	char		record[SF_WM_RECORD_SIZE];
	char		name[64];
	int			len;
	bool		added = true;
	snowflake::FileError error = {"", "", 0};

	/* PrepareTransaction assigns an xid first; without one no row was written */
	if (used == 0 || !TransactionIdIsValid(xid))
		return;
	if (used > SF_WM_PAIRS)
	{
		shards[n] = -1;
		floors[n++] = 0;
	}
	else
		for (uint32 i = 0; i < used; i++)
		{
			uint32		number = pg_atomic_read_u32(&entry->slot[i]);

			if (number == 0)
				continue;
			shards[n] = sf_slot((int) number - 1)->shard_id;
			floors[n++] = (int64) pg_atomic_read_u64(&entry->floor[i]);
		}
	if (n == 0)
		return;

	len = snprintf(record, sizeof(record), "format 1\n");
	for (int i = 0; i < n; i++)
		len += snprintf(record + len, sizeof(record) - len, "floor %d " INT64_FORMAT "\n",
						shards[i], floors[i]);

	if (sf_wm_prune() < n)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("no room to record the snowflake IDs of this prepared transaction"),
				 errdetail("The commit watermark's table of prepared transactions is full."),
				 errhint("Finish other prepared transactions (COMMIT PREPARED or ROLLBACK "
						 "PREPARED), or restart the server.")));
	LWLockAcquire(sf_wm->lock, LW_EXCLUSIVE);
	for (int i = 0; i < n && added; i++)
		added = sf_wm_add_row(xid, shards[i], floors[i]);
	LWLockRelease(sf_wm->lock);
	sf_wm_preparing = xid;		/* removed again if the PREPARE fails */
	if (!added)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("no room to record the snowflake IDs of this prepared transaction"),
				 errhint("Finish other prepared transactions, then retry.")));
	snprintf(name, sizeof(name), SF_WM_FILE_PREFIX "%u", xid);
	if (!snowflake::write_file_durably(name, record, (size_t) len, &error))
		sf_report_file_error("IDs of a prepared transaction", error);
}

/* The transaction callback: publish at PREPARE, release at the top level's end. */
static void
sf_wm_xact_callback(XactEvent event, void *)
{
	if (sf_wm == NULL)
		return;
	switch (event)
	{
		case XACT_EVENT_PRE_PREPARE:
			sf_wm_pre_prepare();
			return;
		case XACT_EVENT_PREPARE:
			/* the rows hold it now, until COMMIT/ROLLBACK PREPARED */
			sf_wm_preparing = InvalidTransactionId;
			sf_wm_clear();
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_ABORT:
			/* after ProcArrayEndTransaction: the rows are visible or gone */
			if (TransactionIdIsValid(sf_wm_preparing))
			{
				/* a PREPARE that failed after PRE_PREPARE */
				sf_wm_forget(sf_wm_preparing, true);
				sf_wm_preparing = InvalidTransactionId;
			}
			sf_wm_clear();
			break;
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_PARALLEL_ABORT:
			/* a worker's pairs are its leader's, who clears them */
			break;
		default:
			return;
	}
	sf_watermark_held_slot = NULL;
}

/* _PG_init: the transaction callback (every backend inherits it). */
void
sf_watermark_init(void)
{
	RegisterXactCallback(sf_wm_xact_callback, NULL);
}

/*---- the reader ----*/

/* Raises a refusal if the prepared records did not fit at start. */
static void
sf_wm_require_sound(void)
{
	if (sf_wm == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("snowflake must be loaded via shared_preload_libraries")));
	if (sf_wm->lost)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the snowflake commit watermark is not known"),
				 errdetail("The records of prepared transactions in pg_snowflake/ did not fit "
						   "in the table sized at the server's start."),
				 errhint("Finish the prepared transactions (pg_prepared_xacts) and restart "
						 "the server.")));
}

/* sf_wm_prepared_floor's shard for the rows of every shard */
#define SF_WM_ANY_SHARD (-2)

/*
 * The lowest floor of the prepared rows of a shard (SF_WM_ANY_SHARD: of any
 * shard) that are still in progress, or "watermark" if lower.
 */
static int64
sf_wm_prepared_floor(int32 shard, int64 watermark)
{
	SfWmPrepared *rows;
	int			n = 0;

	(void) sf_wm_prune();
	rows = (SfWmPrepared *) palloc(sizeof(SfWmPrepared) * sf_wm->capacity);
	LWLockAcquire(sf_wm->lock, LW_SHARED);
	for (int i = 0; i < sf_wm->capacity; i++)
		if (TransactionIdIsValid(sf_wm_rows[i].xid) &&
			(sf_wm_rows[i].shard == shard || sf_wm_rows[i].shard == -1 ||
			 shard == SF_WM_ANY_SHARD) &&
			sf_wm_rows[i].floor < watermark)
			rows[n++] = sf_wm_rows[i];
	LWLockRelease(sf_wm->lock);
	for (int i = 0; i < n; i++)
		if (TransactionIdIsInProgress(rows[i].xid))
			watermark = Min(watermark, rows[i].floor);
	pfree(rows);
	return watermark;
}

/*
 * A slot's watermark never goes down: a writer that read the slot's position
 * just before a reader read it, and published its floor just after, has a
 * floor below what that reader returned, though all its IDs lie above the
 * position the reader read.  What a reader returned stays true (every ID
 * below it that will ever be committed is committed, and no new ID falls
 * below it), so each slot keeps the highest value returned, and a reader
 * returns at least that.
 */
static int64
sf_wm_monotone(uint32 index, int64 watermark)
{
	uint64		seen = pg_atomic_read_u64(&sf_wm_returned[index]);

	while (seen < (uint64) watermark &&
		   !pg_atomic_compare_exchange_u64(&sf_wm_returned[index], &seen, (uint64) watermark))
		;
	return Max(watermark, (int64) seen);
}

/*
 * A slot's watermark: its position first, then every backend's pairs, then
 * the prepared rows (the order the argument above needs).
 */
int64
sf_watermark_of_slot(ShardSlot *slot)
{
	int64		sequence;
	int64		offset;
	int64		watermark;
	uint32		number = (uint32) (slot - sf_slot(0)) + 1;

	sf_wm_require_sound();
	if (sf_generator == SF_GENERATOR_ATOMIC)
	{
		offset = sf_slot_last(slot, &sequence);
		pg_memory_barrier();
	}
	else
	{
		LWLockAcquire(slot->lock, LW_SHARED);
		offset = sf_slot_last(slot, &sequence);
		LWLockRelease(slot->lock);
	}
	watermark = sf_wm_floor_after(slot, offset, sequence);

	for (int b = 0; b < sf_wm->entries && watermark > 0; b++)
	{
		SfWmEntry  *entry = &sf_wm_entries[b];
		uint32		used = pg_atomic_read_u32(&entry->used);

		if (used == 0)
			continue;
		if (used > SF_WM_PAIRS)
		{
			watermark = 0;		/* a transaction over more slots than pairs */
			break;
		}
		for (uint32 i = 0; i < used; i++)
			if (pg_atomic_read_u32(&entry->slot[i]) == number)
				watermark = Min(watermark, (int64) pg_atomic_read_u64(&entry->floor[i]));
	}
	pg_memory_barrier();
	watermark = sf_wm_prepared_floor(slot->shard_id, watermark);
	return sf_wm_monotone(number - 1, watermark);
}

/*
 * A live shard without a slot: it has issued nothing since the start (a
 * prepared transaction of an earlier run holds through its rows), and its
 * slot, when made, resumes above resume_offset (shmem.cpp), which only
 * grows, and which file_lock, held shared by the maker until the slot is
 * published, keeps from moving meanwhile.  So the first ID of the shard's
 * first unit after it bounds what it will issue.  If the shard got a slot
 * meanwhile, *slot is set and the caller asks sf_watermark_of_slot().
 */
int64
sf_watermark_unslotted(int64 shard, ShardSlot **slot)
{
	int64		resume;

	sf_wm_require_sound();
	LWLockAcquire(sf_shared->file_lock, LW_SHARED);
	*slot = sf_slot_if_any(shard);
	resume = sf_shared->resume_offset;
	LWLockRelease(sf_shared->file_lock);
	if (*slot != NULL)
		return -1;
	return sf_wm_prepared_floor((int32) shard,
								snowflake::encode(sf_layout, Max(resume, (int64) -1) + 1,
												  shard, 0));
}

/*
 * The server-wide form's last step: every prepared transaction still in
 * progress holds the watermark at its floor, whatever its shard, also one
 * this server no longer generates for (its shards changed across a
 * restart), or one the scan of the live shards stopped before.  Read after
 * every slot's position and backend entries (the order of the argument
 * above).
 */
int64
sf_watermark_prepared(int64 watermark)
{
	sf_wm_require_sound();
	return sf_wm_prepared_floor(SF_WM_ANY_SHARD, watermark);
}

/* Whether a prepared transaction still in progress holds "shard". */
bool
sf_watermark_prepared_holds(int64 shard)
{
	sf_wm_require_sound();
	return sf_wm_prepared_floor((int32) shard, PG_INT64_MAX) < PG_INT64_MAX;
}

/*
 * Moves the idle shards up to the clock before a reader reads them
 * (mark.cpp's sf_advance_shards, which says why no ID comes below them
 * afterwards): every live slot's position to at least the clock's previous
 * unit, and the point a shard without a slot resumes above.  A shard
 * therefore answers at most the clock's current unit, unless a
 * transaction holds it lower.  Only moves up: after a backward clock step
 * it moves nothing until the clock passes the positions again.
 */
void
sf_watermark_advance(void)
{
	int64		now = sf_now_offset();

	sf_wm_require_sound();
	if (now > 0)
		(void) sf_advance_shards(now - 1);
}
