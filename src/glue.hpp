/*-------------------------------------------------------------------------
 *
 * glue.hpp
 *		Declarations shared by the PostgreSQL glue: the shared-memory struct,
 *		the settings, and each subsystem's entry points.
 *
 * Locking (see also state.cpp).  SnowflakeShared is created once at
 * postmaster start, followed by the shard index and the shard slots.  LWLocks
 * come from the "snowflake" tranche:
 *	- each ShardSlot's lock guards its gen, reserved_offset and stats_reset.
 *	  Held exclusively for one call of snowflake::next_run() (a clock read and
 *	  a few integer operations: no allocation, no ereport, no I/O, no sleep),
 *	  or in shared mode to copy fields for snowflake_stats() and the mark
 *	  worker.  Waiting for the clock happens after releasing it.  Shards never
 *	  share a lock, so they do not contend.
 *	- assign_lock serialises giving a shard its slot (first use of a shard).
 *	- file_lock serialises writers of pg_snowflake/ files and guards
 *	  durable_mark_ms.  While it is held only plain POSIX I/O runs
 *	  (statefile.cpp), plus the WAL insertion of a new mark, which must
 *	  precede any ID under it; errors are reported after release.  Slot locks may
 *	  be taken briefly inside file_lock, never the other way round.
 *	  file_lock also guards resume_offset, which WAL replay raises; it may be
 *	  taken in shared mode inside assign_lock.
 * The shard index entries, layout_recorded and the counters that are atomics
 * are read and written without a lock.  The refusal fields are written only
 * by the postmaster before any backend starts and are read-only afterwards.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_GLUE_HPP
#define SNOWFLAKE_GLUE_HPP

#include "core.hpp"
#include "pg.hpp"

/* How far the durable mark is kept ahead of the clock plus the lead. */
#define SF_RESERVE_AHEAD_MS 1000
/* How often the mark worker looks at the generator. */
#define SF_WORKER_TICK_MS 100
/* The worker keeps the mark ahead while IDs were issued this recently. */
#define SF_WORKER_ACTIVE_MS 60000
/* Clusters remembered in pg_snowflake/lineage. */
#define SF_MAX_LINEAGE 32
/* Backward clock steps at least this large are logged as a WARNING. */
#define SF_WARN_STEP_MS 10

/* The generator of one shard. */
typedef struct ShardSlot
{
	LWLock	   *lock;
	int32		shard_id;

	/* under lock */
	snowflake::GeneratorState gen;
	int64		reserved_offset;	/* IDs may carry timestamps up to this */
	TimestampTz stats_reset;

	/* atomics */
	pg_atomic_uint64 waits;		/* calls that waited for the clock */
	pg_atomic_uint64 wait_us;	/* total time they waited */
	pg_atomic_uint64 refusals;	/* calls that failed for clock or capacity */
	pg_atomic_uint64 inline_mark_writes;	/* mark writes a call waited for */
} ShardSlot;

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
	 * Written by the postmaster at start, or once by WAL replay of a layout
	 * record that differs from this server's (the message first, then a
	 * write barrier, then the flag), and never cleared.
	 */
	volatile bool refused;		/* recorded state differs or is unreadable */
	char		refusal_message[128];
	char		refusal_detail[512];

	/* written by the postmaster at start, read-only afterwards (origin.cpp) */
	int32		lineage_count;
	uint64		lineage[SF_MAX_LINEAGE];	/* pg_snowflake/lineage */

	/* atomics */
	pg_atomic_uint32 layout_recorded;	/* pg_snowflake/layout matches */
	pg_atomic_uint64 mark_writes;	/* durable mark writes, all */

	/*
	 * Followed in shared memory by pg_atomic_uint32 index[2^shard_bits]
	 * (slot number + 1 of each shard, 0 if it has none) and ShardSlot
	 * slots[num_slots]; see sf_index() and sf_slot().
	 */
} SnowflakeShared;

extern SnowflakeShared *sf_shared;
extern snowflake::Layout sf_layout;

/* settings.cpp */
extern int	sf_shard_id;
extern int	sf_max_clock_lead;
extern int	sf_max_clock_wait;
extern int	sf_max_shards;
extern bool sf_allow_on_standby;
extern char *sf_shard_ids;
void		sf_settings_init(void);
bool		sf_shard_allowed(int64 shard);
char	   *sf_raw_setting(const char *name);
void		sf_require_applied(const char *name, const char *raw, bool applied);

/* state.cpp */
void		sf_state_init(void);
void		sf_require_ready(void);
void		sf_record_layout(void);
ShardSlot  *sf_slot(int i);
ShardSlot  *sf_slot_for_shard(int64 shard, bool logical);
void		sf_extend_mark(ShardSlot *slot, int64 wanted_offset);
void		sf_reraise_reserved(void);
int64		sf_wall_ms(void);

void		sf_raise_floor(int64 offset);

/* origin.cpp */
bool		sf_load_lineage(SnowflakeShared *out, char *message, size_t message_len,
							char *detail, size_t detail_len);
void		sf_check_origin(Oid fn_oid);

/* snowflake.cpp */
TimestampTz sf_decoded_timestamptz(int64 unix_ms, int64 id);

extern "C" PGDLLEXPORT void snowflake_mark_worker_main(Datum arg);

#endif							/* SNOWFLAKE_GLUE_HPP */
