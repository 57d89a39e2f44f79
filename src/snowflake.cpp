/*-------------------------------------------------------------------------
 *
 * snowflake.cpp
 *		The module: PG_MODULE_MAGIC and _PG_init, which has each subsystem
 *		define its settings and install its hooks, in layer order.
 *
 * The layers, each calling only those below it:
 *	core		layout, generator, atomicgen, textform, shardlist, records,
 *				statefile, clocks: plain C++, no postgres.h (core.hpp)
 *	settings	settings, seqstart: the GUCs
 *	state		recorded (pg_snowflake/ at start), fastpath (a slot's lock-free
 *				words), shmem (shared memory and slots), wal (WAL records and
 *				redo), mark (the durable mark and its worker), history (a
 *				shard's imports and live IDs across runs)
 *	registry	registry (settings, fencing, the published mark), lease (the
 *				worker: lease, claim, freshness, release), backend_etcd over
 *				etcd and etcd_json (the etcd protocol)
 *	SQL			generate, decode, layouts, stats, metrics, origin, and this file
 *
 *-------------------------------------------------------------------------
 */
#include "mark.hpp"
#include "registry.hpp"
#include "seqstart.hpp"
#include "wal.hpp"

extern "C"
{
PG_MODULE_MAGIC;

void		_PG_init(void);
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
	sf_settings_finish();		/* misspelled snowflake.* lines; the prefix reserved */

	sf_shmem_init();
	sf_mark_init();
	sf_wal_init();
	sf_registry_init();
}
