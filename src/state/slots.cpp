/*-------------------------------------------------------------------------
 *
 * slots.cpp
 *		Where the generator's shared memory is: the pointer to it
 *		(sf_shared), the registry's hook on new slots (sf_slot_caps), how
 *		many slots there are, and the address of the shard index and of
 *		each slot (state.hpp); and the ready generation, which every
 *		backend's ready test compares with.
 *
 * The lowest file of the state layer: counters.cpp, datadir.cpp and
 * fastpath.cpp find the shared state through it, and shmem.cpp, which
 * creates that memory and gives shards their slots, calls them, so that
 * none of them calls back up into shmem.cpp.  It may call the core and the
 * settings.
 *
 *-------------------------------------------------------------------------
 */
#include "state/state.hpp"

extern "C"
{
#include "postgres.h"
#include "port/atomics.h"
}

SnowflakeShared *sf_shared = NULL;

/* Set by the registry's init when a registry is in use (state.hpp). */
bool		sf_slot_caps = false;

/*
 * Slots: one per shard usable since start, never more than there are shards
 * (known from the settings alone, before sf_shared exists).
 */
int
sf_num_slots(void)
{
	return (int) Min((int64) sf_max_shards, sf_layout.max_shard_id() + 1);
}

static Size
sf_index_offset(void)
{
	return MAXALIGN(sizeof(SnowflakeShared));
}

static Size
sf_slots_offset(void)
{
	return sf_index_offset() +
		MAXALIGN(sizeof(pg_atomic_uint32) * (Size) (sf_layout.max_shard_id() + 1));
}

/*
 * The bytes of SnowflakeShared, the shard index and the slots, with room to
 * align the slots to a cache line (see sf_slot).
 */
Size
sf_slots_size(void)
{
	return sf_slots_offset() + PG_CACHE_LINE_SIZE + sizeof(ShardSlot) * (Size) sf_num_slots();
}

/* The shard index: slot number + 1 of each shard, 0 when it has none. */
pg_atomic_uint32 *
sf_index(void)
{
	return (pg_atomic_uint32 *) ((char *) sf_shared + sf_index_offset());
}

ShardSlot *
sf_slot(int i)
{
	/* cache-line aligned, so that two shards never share a line */
	return (ShardSlot *) TYPEALIGN(PG_CACHE_LINE_SIZE,
								   (char *) sf_shared + sf_slots_offset()) + i;
}

/*
 * Makes every backend's next generating call take all its checks again
 * (nextval.cpp's ready test), after a change they depend on; a full barrier,
 * so the change is seen by a call that sees the new generation.
 */
void
sf_invalidate_ready(void)
{
	pg_atomic_fetch_add_u64(&sf_shared->ready_generation, 1);
}
