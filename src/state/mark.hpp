/*-------------------------------------------------------------------------
 *
 * mark.hpp
 *		The durable high-water mark (pg_snowflake/mark) that no ID passes:
 *		moving it ahead before an ID would need it, raising the floor, the
 *		settle at a clean shutdown, and the mark worker that keeps it ahead.
 *
 * The top of the state layer: it may call the core, the settings,
 * datadir.cpp, shmem.cpp, fastpath.cpp and wal.cpp.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_MARK_HPP
#define SNOWFLAKE_MARK_HPP

#include "state/state.hpp"

void		sf_mark_init(void);
void		sf_mark_shmem_init(void);
void		sf_extend_mark(ShardSlot *slot, int64 wanted_offset);
void		sf_reraise_reserved(void);
void		sf_raise_floor(int64 offset);
int64		sf_advance_shards(int64 offset);
void		sf_register_worker(const char *function, const char *name, int flags);

extern "C" PGDLLEXPORT void snowflake_mark_worker_main(Datum arg);

#endif							/* SNOWFLAKE_MARK_HPP */
