/*-------------------------------------------------------------------------
 *
 * history.hpp
 *		A shard's history across runs, where it meets its first slot of a
 *		run: a live shard starts above every ID it imported before, and an
 *		import shard learns from when it generated live IDs (see
 *		history.cpp).
 *
 * The top of the state layer, beside mark.cpp: it may call the core, the
 * settings, recorded.cpp, shmem.cpp and wal.cpp.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_HISTORY_HPP
#define SNOWFLAKE_HISTORY_HPP

#include "state/state.hpp"

ShardSlot  *sf_live_slot(int64 shard, bool logical, bool may_refuse);
int64		sf_live_from(int64 shard);

#endif							/* SNOWFLAKE_HISTORY_HPP */
