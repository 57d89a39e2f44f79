/*-------------------------------------------------------------------------
 *
 * snowflake.cpp
 *		The module: PG_MODULE_MAGIC and _PG_init, which has each subsystem
 *		define its settings and install its hooks, in layer order; and the
 *		one pair of shared-memory hooks, which ask for and create every
 *		subsystem's shared memory in one visible order.
 *
 * The layers, one folder each, each calling only those below it (src/README.md
 * has the list, the words and the locks; make layercheck checks the order):
 *	core/		plain C++, no postgres.h: layout, generator, atomicgen, ...
 *	settings/	the GUCs and the sequence start
 *	state/		shared memory, slots, the fast path, pg_snowflake/, WAL, the mark
 *	registry/	shard leases from etcd or PostgreSQL
 *	sql/		the SQL-callable functions
 *	and this file on top.
 *
 *-------------------------------------------------------------------------
 */
#include "state/mark.hpp"
#include "registry/registry.hpp"
#include "sql/public_ids.hpp"
#include "settings/seqstart.hpp"
#include "state/wal.hpp"
#include "state/watermark.hpp"

extern "C"
{
#include "postgres.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
}

extern "C"
{
PG_MODULE_MAGIC;

void		_PG_init(void);
}

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/*---- shared memory ----*/

/* Asks for every subsystem's shared memory and locks. */
static void
sf_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	/* state: SnowflakeShared, the shard index and slots; their locks */
	RequestAddinShmemSpace(sf_shmem_size());
	RequestNamedLWLockTranche(SNOWFLAKE_TRANCHE, sf_shmem_lock_count());
	/* registry: its shared fields */
	RequestAddinShmemSpace(sf_registry_shmem_size());
	/* state: the commit watermark's entries and prepared table, its lock */
	RequestAddinShmemSpace(sf_watermark_shmem_size());
	RequestNamedLWLockTranche(SF_WATERMARK_TRANCHE, 1);
}

/* Creates every subsystem's shared memory, lower layers first. */
static void
sf_shmem_startup(void)
{
	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	sf_shmem_init();			/* state: from the records in pg_snowflake/ */
	sf_mark_shmem_init();		/* state: settle the mark when the postmaster exits */
	sf_registry_shmem_init();	/* registry: its shared fields */
	sf_watermark_shmem_init();	/* state: the commit watermark (after the slots) */
}

/*---- module load ----*/

extern "C" void
_PG_init(void)
{
	/*
	 * Outside shared_preload_libraries there is no shared state, and
	 * server-start settings can no longer be defined: define nothing, and let
	 * every function report that the library must be preloaded.
	 */
	if (!process_shared_preload_libraries_in_progress)
		return;
	sf_settings_define();
	sf_seqstart_init();
	sf_registry_define_settings();
	sf_publicid_define_settings();
	sf_settings_finish();		/* misspelled snowflake.* lines; the prefix reserved */

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = sf_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = sf_shmem_startup;
	sf_mark_init();
	sf_wal_init();
	sf_registry_init();
	sf_watermark_init();		/* the commit watermark's transaction callback */
}
