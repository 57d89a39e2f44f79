/*-------------------------------------------------------------------------
 *
 * snowflake.cpp
 *		The module: PG_MODULE_MAGIC and _PG_init, which has each subsystem
 *		define its settings and install its hooks, in layer order.
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
	sf_publicid_define_settings();
	sf_settings_finish();		/* misspelled snowflake.* lines; the prefix reserved */

	sf_shmem_init();
	sf_mark_init();
	sf_wal_init();
	sf_registry_init();
}
