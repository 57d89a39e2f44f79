/*-------------------------------------------------------------------------
 *
 * glue.hpp
 *		Declarations shared by the PostgreSQL glue: the shared-memory struct,
 *		the settings, and each subsystem's entry points.
 *
 * Locking (see also state.cpp).  SnowflakeShared is created once at
 * postmaster start.  Its two LWLocks come from the "snowflake" tranche:
 *	- gen_lock guards "gen" and "reserved_offset".  Held exclusively for one
 *	  call of snowflake::next_id() (a clock read and a few integer operations:
 *	  no allocation, no ereport, no I/O, no sleep), or in shared mode to copy
 *	  fields for snowflake_stats() and the mark worker.  Waiting for the clock
 *	  happens after releasing it.
 *	- file_lock serialises writers of pg_snowflake/ files and guards
 *	  "durable_mark_ms".  While it is held only plain POSIX I/O runs
 *	  (statefile.cpp) and errors are reported after release.  gen_lock may be
 *	  taken briefly inside file_lock, never the other way round.
 * layout_recorded and the wait/refusal counters are atomics read and written
 * without a lock.  The refusal fields are written only by the postmaster
 * before any backend starts and are read-only afterwards.
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
/* Backward clock steps at least this large are logged as a WARNING. */
#define SF_WARN_STEP_MS 10

typedef struct SnowflakeShared
{
	LWLock	   *gen_lock;
	LWLock	   *file_lock;

	/* under gen_lock */
	snowflake::GeneratorState gen;
	int64		reserved_offset;	/* IDs may carry timestamps up to this */
	TimestampTz stats_reset;

	/* under file_lock */
	int64		durable_mark_ms;	/* Unix ms in pg_snowflake/mark; -1: none */

	/* atomics */
	pg_atomic_uint32 layout_recorded;	/* pg_snowflake/layout matches */
	pg_atomic_uint64 waits;		/* calls that waited for the clock */
	pg_atomic_uint64 wait_us;	/* total time they waited */
	pg_atomic_uint64 refusals;	/* calls that failed for clock or capacity */
	pg_atomic_uint64 mark_writes;	/* durable mark writes, all */
	pg_atomic_uint64 inline_mark_writes;	/* ... done by a generating call */

	/* written by the postmaster at start, read-only afterwards */
	bool		refused;		/* recorded state differs or is unreadable */
	char		refusal_message[128];
	char		refusal_detail[512];
} SnowflakeShared;

extern SnowflakeShared *sf_shared;
extern snowflake::Layout sf_layout;

/* settings.cpp */
extern int	sf_shard_id;
extern int	sf_max_clock_lead;
extern int	sf_max_clock_wait;
extern bool sf_allow_on_standby;
void		sf_settings_init(void);

/* state.cpp */
void		sf_state_init(void);
void		sf_require_ready(void);
void		sf_record_layout(void);
void		sf_extend_mark(int64 wanted_offset);
int64		sf_wall_ms(void);

extern "C" PGDLLEXPORT void snowflake_mark_worker_main(Datum arg);

#endif							/* SNOWFLAKE_GLUE_HPP */
