/*-------------------------------------------------------------------------
 *
 * state.hpp
 *		The generator's shared state: SnowflakeShared and the shard slots in
 *		shared memory, and the rules for touching them; with shmem.cpp, which
 *		creates them and gives shards their slots.
 *
 * The state layer (this file, datadir, fastpath, shmem, wal, mark) stands on
 * the core (core.hpp) and the settings; the registry and the SQL functions
 * stand on it.  Nothing here calls a file of those higher layers: what the
 * registry must tell the state (the freshness mark of a shard it holds, the
 * shard it holds) it publishes into fields of this struct (ShardSlot.cap,
 * SnowflakeShared.registry_shard).
 *
 * Locking and memory ordering (see also mark.cpp and atomicgen.hpp).
 * SnowflakeShared is created once at postmaster start, followed by the shard
 * index and the cache-line aligned shard slots.  LWLocks come from the
 * "snowflake" tranche:
 *	- each ShardSlot's lock guards gen and stats_reset.  With
 *	  snowflake.generator = lwlock it is held exclusively for one call of
 *	  snowflake::next_run() (a clock read and a few integer operations: no
 *	  allocation, no ereport, no I/O, no sleep); with atomic, only to count a
 *	  backward clock step in gen.  Also held in shared mode to copy fields for
 *	  snowflake_stats() and the mark worker, and exclusively by every writer
 *	  of reserved_offset (so that they never interleave), and of cap (the
 *	  registry worker publishing a freshness mark; sf_raise_reserved reads it
 *	  under the same lock, so no reservation passes a cap it did not see).
 *	  Waiting for the clock happens after releasing it.  Shards never share a
 *	  lock or a cache line, so they do not contend.
 *	- assign_lock serialises giving a shard its slot (first use of a shard).
 *	- file_lock serialises writers of pg_snowflake/ files and guards
 *	  durable_mark_ms; sf_move_mark raises reserved_offset under it (and the
 *	  slot lock).  While it is held only plain POSIX I/O runs
 *	  (statefile.cpp: the mark, the layout, the import reservations in
 *	  pg_snowflake/imports, the live shards in pg_snowflake/live), plus the
 *	  WAL insertion of a new mark, reservation or live shard, which must
 *	  precede any ID under it; errors are reported
 *	  after release.  An import slot's reserved_offset and cap are its own
 *	  recorded reservation (backfill.cpp), raised under its slot lock.  Slot locks may
 *	  be taken briefly inside file_lock, never the other way round.
 *	  file_lock also guards resume_offset, which WAL replay, the floor and
 *	  the commit watermark's read (mark.cpp's sf_advance_shards, which also
 *	  moves the live slots' positions under their locks) raise; it may be
 *	  taken in shared mode inside assign_lock.  It also guards the primary's
 *	  shards a standby remembers (primary_shards_known, primary_shard_count,
 *	  primary_shards), written by the redo of a shards record and read, in
 *	  shared mode, by a standby's generating call.
 *
 * The lock-free generator (snowflake.generator = atomic, fastpath.cpp) reads
 * a slot's state, clock and reserved_offset words without any lock.  PG's
 * pg_atomic_compare_exchange_u64 and fetch_add are full barriers;
 * pg_atomic_read/write_u64 are plain, so the order is made explicit:
 *	- A call loads the clock word, then reads the clock (then CASes the clock
 *	  word if the reading differs), then loads the state word, then (after
 *	  pg_read_barrier) reserved_offset; it installs the new state word with
 *	  one CAS.  The state word strictly increases with
 *	  every install (it orders like the IDs), so a CAS that expects an old
 *	  value always fails: IDs of a shard strictly increase in CAS order.
 *	  The first CAS of a call may instead expect the word this backend's own
 *	  last CAS on the slot installed (sf_guess, atomicgen.hpp's StateGuess)
 *	  without loading it: that CAS succeeds only if the word has not moved
 *	  since this backend's full-barrier CAS, and reserved_offset is read
 *	  after that CAS, so the seal argument below holds as for a load; a
 *	  failed CAS returns the current word, and the call goes on from it as
 *	  from a load.  A guess is never acted on unless it issues.
 *	- The mark is durable before reserved_offset is raised: sf_move_mark
 *	  fsyncs the file and inserts the WAL record, then writes reserved_offset
 *	  (inside the slot lock, a full barrier).  A call that read the raised
 *	  value read it after that write, so after the fsync; a call that read an
 *	  older, lower value only takes the slow path sooner.
 *	- Lowering reserved_offset while calls may run (the registry releasing
 *	  or claiming a shard; sf_slot_seal, sf_slot_resume_above), with the slot
 *	  lock held as by every other writer of it: store the lower value, then
 *	  CAS the state word to a later word ("sealed": it uses up its
 *	  millisecond; full barrier).  A call whose CAS succeeds after that
 *	  loaded the new word or a later one, so its read barrier makes it read
 *	  the lowered value (or a later, durable raise); a call that loaded the
 *	  word before fails its CAS.  So no ID passes the lowered mark.  The
 *	  clean-shutdown settle lowers only the mark file, in the postmaster's
 *	  exit, when no backend is left (it reads the word without a lock).
 *	- Backward clock steps: a call compares its clock reading with the clock
 *	  word it loaded before reading the clock, and reports a step only if its
 *	  CAS of the clock word replaced exactly that word; the word was
 *	  installed after its reading was taken, so a lower reading is a real
 *	  step, never two calls' readings arriving in the other order
 *	  (atomicgen.hpp has the whole argument).  Each step is counted once, in
 *	  gen under the slot lock, and warned about by that call.
 *	- Counters: after the CAS, a call adds the IDs it issued to its own
 *	  backend's cell for the shard (counters.cpp: a plain load and store on a
 *	  line no other backend writes; no locked instruction); snowflake_stats()
 *	  sums the slot's issued word and the cells.  sequence_exhausted (rare)
 *	  is a fetch_add.  Both are exact once every call has returned; a
 *	  snapshot may miss calls in flight.  A reset records the sum in
 *	  issued_base under the slot lock (it never writes a backend's cell), and
 *	  races with calls in flight the same way.
 * The ready test (nextval.cpp): a backend remembers the slot of a call that
 * passed every check, with this backend's settings generation and
 * ready_generation, both read before the checks; the next call for the same
 * shard skips the checks while both are unchanged (with a registry, the
 * grant is still checked on every call).  Whoever changes what the checks
 * depend on for every backend makes the change, then bumps ready_generation
 * with a fetch_add (a full barrier): a call that reads the new generation
 * sees the change, one that read the old generation before its checks saw
 * the change or records a generation the next call finds outdated.  The
 * changes: sf_refuse on shared memory (WAL replay), the registry worker's
 * grant to another shard or none (sf_set_grant: the grant itself is written
 * first, and every call compares its shard anyway), sf_raise_floor.
 * A slot's shard_id, import_slot, live_from and live_to are written once,
 * before the slot is published, and read without a lock.
 * The shard index entries, layout_recorded, registry_shard (written by the
 * registry worker, read by the mark worker for the shards record) and the
 * other atomic counters are read and written without a lock (a slot is published in the index
 * after a write barrier).  The refusal fields are written by the postmaster
 * before any backend starts, or once by the redo of a layout record that
 * differs from this server's (text, write barrier, then the flag; readers
 * read the flag, then a read barrier, then the text); never cleared.  The
 * lineage and started_from_backup are written by the postmaster at start and
 * read-only afterwards.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_STATE_HPP
#define SNOWFLAKE_STATE_HPP

#include "core/clocks.hpp"
#include "core/core.hpp"
#include "settings/pg.hpp"
#include "settings/settings.hpp"

extern "C"
{
#include "datatype/timestamp.h"
#include "port/atomics.h"
#include "storage/lwlock.h"
#if PG_VERSION_NUM >= 170000
#include "storage/procnumber.h"		/* MyProcNumber, ParallelLeaderProcNumber */
#else
#include "storage/backendid.h"		/* MyBackendId, ParallelLeaderBackendId */
#endif
}

/*
 * This backend's number, 0-based (below MaxBackends for every process that
 * runs SQL; -1 for one without), or with "leader" its parallel leader's when
 * it is a parallel worker: the row of the per-backend arrays in shared
 * memory (state/counters.cpp, state/watermark.cpp).  15 and 16 count
 * BackendIds from 1, 17 and later ProcNumbers from 0.
 */
static inline int
sf_backend_number(bool leader)
{
#if PG_VERSION_NUM >= 170000
	return leader && ParallelLeaderProcNumber != INVALID_PROC_NUMBER ?
		ParallelLeaderProcNumber : MyProcNumber;
#else
	return (leader && ParallelLeaderBackendId != InvalidBackendId ?
			ParallelLeaderBackendId : MyBackendId) - 1;
#endif
}

/* How far the durable mark is kept ahead of the clock plus the lead. */
#define SF_RESERVE_AHEAD_MS 1000
/* How often the mark worker looks at the generator. */
#define SF_WORKER_TICK_MS 100
/* The worker keeps the mark ahead while IDs were issued this recently. */
#define SF_WORKER_ACTIVE_MS 60000
/* Clusters remembered in pg_snowflake/lineage. */
#define SF_MAX_LINEAGE 32
/* Ranges of the primary's shards a standby remembers (more: all shards). */
#define SF_MAX_PRIMARY_RANGES 64
/* How often the primary re-logs its shards while WAL is being written. */
#define SF_SHARDS_LOG_MS 15000
/* Backward clock steps at least this large are logged as a WARNING. */
#define SF_WARN_STEP_MS 10

/*
 * The generator of one shard.  Slots are cache-line aligned, so shards do
 * not share a line.  The first line holds the state word alone: every call
 * of the lock-free generator CASes it, and nothing else there is written or
 * read, so backends sharing a shard contend on that one word only.  The
 * second holds what every call only reads (written on the slow paths), so
 * that it stays cached in every backend; the third the clock word (read by
 * every call, written about once per time unit); then the counters, written
 * on the slow paths and by the LWLock generator.
 */
typedef struct alignas(PG_CACHE_LINE_SIZE) ShardSlot
{
	/* lock-free generator (atomic): see atomicgen.hpp and the locking notes */
	pg_atomic_uint64 state;		/* packed (timestamp, sequence) of the last ID */

	/* read by every call */
	alignas(PG_CACHE_LINE_SIZE) pg_atomic_uint64 reserved_offset;	/* int64: IDs may
																	 * carry timestamps up
																	 * to this */
	pg_atomic_uint64 cap;		/* int64: reserved_offset never goes above it (the
								 * registry's freshness mark; INT64_MAX without one) */
	LWLock	   *lock;
	int32		shard_id;
	bool		import_slot;	/* made for imports (backfill.cpp): never live */
	volatile bool live_recorded;	/* its live history is in pg_snowflake/live
									 * (history.cpp; under file_lock) */
	/* an import slot's shard generated live IDs from..to (layout offsets; -1: never) */
	int64		live_from;
	int64		live_to;

	/* read by every call, written when the clock reaches a new unit */
	alignas(PG_CACHE_LINE_SIZE) pg_atomic_uint64 clock;	/* last clock reading, tagged */

	/* counters (atomic generator): issued also in cells per backend (counters.cpp) */
	alignas(PG_CACHE_LINE_SIZE) pg_atomic_uint64 issued;	/* IDs counted here, not in a
															 * backend's cell */
	pg_atomic_uint64 sequence_exhausted;

	/* atomics, written only on the slow paths (waits and refusals) */
	pg_atomic_uint64 waits;		/* calls that waited for the clock */
	pg_atomic_uint64 wait_us;	/* total time they waited */
	pg_atomic_uint64 inline_mark_writes;	/* mark writes a call waited for */
	/* calls refused, by cause (snowflake_stats' refusals: the first three) */
	pg_atomic_uint64 refusals_clock;	/* waited max_clock_wait for the clock */
	pg_atomic_uint64 refusals_epoch;	/* the clock read before the epoch */
	pg_atomic_uint64 refusals_exhausted;	/* the timestamp field is used up */
	pg_atomic_uint64 refusals_registry_mark;	/* waited max_clock_wait for
												 * the registry's mark */
	pg_atomic_uint64 registry_waits;	/* calls that waited for that mark */
	pg_atomic_uint64 registry_wait_us;	/* total time they waited */

	/* under lock */
	TimestampTz stats_reset;
	uint64		issued_base;	/* atomic generator: IDs counted at the last reset */
	snowflake::GeneratorState gen;
} ShardSlot;

/* A slot's reserved_offset (int64 in an unsigned atomic). */
static inline int64
sf_reserved(ShardSlot *slot)
{
	return (int64) pg_atomic_read_u64(&slot->reserved_offset);
}

static inline void
sf_set_reserved(ShardSlot *slot, int64 offset)
{
	pg_atomic_write_u64(&slot->reserved_offset, (uint64) offset);
}

typedef struct SnowflakeShared
{
	LWLock	   *file_lock;
	LWLock	   *assign_lock;
	int32		num_slots;		/* capacity: shards usable since start */
	pg_atomic_uint32 used_slots;

	/* under file_lock */
	int64		durable_mark_ms;	/* Unix ms in pg_snowflake/mark; -1: none */

	/* under file_lock: the mark found at start, raised by WAL replay */
	int64		resume_offset;	/* layout offset; -1: none */

	/*
	 * Refusals, written by the postmaster at start, or once by WAL replay of
	 * a layout record that differs from this server's (the message first,
	 * then a write barrier, then the flag), and never cleared.  A layout
	 * refusal stops decoding and generation (IDs would decode wrongly); a
	 * state refusal (the mark or the lineage unreadable) stops generation
	 * only, since decoding depends on the layout alone.
	 */
	volatile bool refused;		/* recorded layout differs or is unreadable */
	char		refusal_message[128];
	char		refusal_detail[512];
	volatile bool state_refused;	/* recorded mark or lineage unreadable */
	char		state_message[128];
	char		state_detail[512];

	/* written by the postmaster at start, read-only afterwards */
	bool		started_from_backup;	/* backup_label or recovery.signal at start */

	/* written by the postmaster at start, read-only afterwards (origin.cpp) */
	int32		lineage_count;
	uint64		lineage[SF_MAX_LINEAGE];	/* pg_snowflake/lineage */

	/*
	 * On a standby, under file_lock: the shards its primary generates for,
	 * from the last shards record replayed (none before the first).
	 */
	bool		primary_shards_known;
	int32		primary_shard_count;	/* -1: too many ranges, every shard */
	snowflake::ShardRange primary_shards[SF_MAX_PRIMARY_RANGES];

	/* atomics */
	pg_atomic_uint32 registry_shard;	/* the registry's held shard + 1; 0: none */
	pg_atomic_uint32 layout_recorded;	/* pg_snowflake/layout matches */
	pg_atomic_uint64 mark_writes;	/* durable mark writes, all */
	pg_atomic_uint64 mark_lsn;	/* XLogRecPtr: end of the last mark record
								 * inserted (wal.cpp, under file_lock); 0: none */

	/*
	 * Bumped when something a generating call checks changes for every
	 * backend (a refusal, the registry's shard, the floor): each backend's
	 * ready test (nextval.cpp) then checks everything again.
	 */
	pg_atomic_uint64 ready_generation;

	/*
	 * Followed in shared memory by pg_atomic_uint32 index[2^shard_bits]
	 * (slot number + 1 of each shard, 0 if it has none) and ShardSlot
	 * slots[num_slots]; see sf_index() and sf_slot().
	 */
} SnowflakeShared;

extern SnowflakeShared *sf_shared;

/* What a refusal stops: see SnowflakeShared. */
typedef enum SfRefusal
{
	SF_REFUSE_LAYOUT,			/* decoding and generation */
	SF_REFUSE_STATE				/* generation only */
} SfRefusal;

/* slots.cpp: where the shared memory and each slot are (see SnowflakeShared). */
int			sf_num_slots(void);
Size		sf_slots_size(void);
pg_atomic_uint32 *sf_index(void);
ShardSlot  *sf_slot(int i);
void		sf_invalidate_ready(void);

/*
 * shmem.cpp.  The module's one shmem_request_hook asks for sf_shmem_size()
 * bytes and sf_shmem_lock_count() locks of SNOWFLAKE_TRANCHE; its one
 * shmem_startup_hook calls sf_shmem_init() (snowflake.cpp).
 */
#define SNOWFLAKE_TRANCHE "snowflake"
Size		sf_shmem_size(void);
int			sf_shmem_lock_count(void);
void		sf_shmem_init(void);
void		sf_require_ready(void);
void		sf_require_generation_ready(void);
ShardSlot  *sf_slot_for_shard(int64 shard, bool logical, int64 start_above);
ShardSlot  *sf_slot_if_any(int64 shard);
ShardSlot  *sf_slot_for_import(int64 shard, int64 reserved_offset, int64 live_from);
bool		sf_slot_available(int64 shard);

/*
 * A hook for the registry (set in _PG_init, before shared memory exists;
 * defined in slots.cpp):
 * slots start with cap -1, so that no shard reserves anything until the
 * registry has published a freshness mark for it.
 */
extern bool sf_slot_caps;

#endif							/* SNOWFLAKE_STATE_HPP */
