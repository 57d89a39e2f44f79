/*-------------------------------------------------------------------------
 *
 * counters.hpp
 *		How many IDs the lock-free generator issued per shard, counted by
 *		each backend in cells of its own in shared memory, without a locked
 *		instruction, and summed when snowflake_stats() or the metrics read
 *		them (see counters.cpp).
 *
 * In the state layer, under fastpath.cpp: it may call the core and the
 * settings.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_COUNTERS_HPP
#define SNOWFLAKE_COUNTERS_HPP

#include "state/state.hpp"

extern "C"
{
#include "port/atomics.h"
}

/* Shards one backend slot counts in cells of its own (then in the slot's word). */
#define SF_BACKEND_CELLS 8

/*
 * The cells of one backend slot (MyBackendId, MyProcNumber from 17): a cache
 * line only its current backend writes.  A cell, once given a shard slot, keeps
 * it for the life of the server (a later backend with the same number
 * continues its counts), so a reader never meets a cell that changes shard.
 */
typedef struct alignas(PG_CACHE_LINE_SIZE) SfBackendCells
{
	pg_atomic_uint32 slot[SF_BACKEND_CELLS];	/* shard slot number + 1; 0: free */
	pg_atomic_uint64 issued[SF_BACKEND_CELLS];	/* IDs issued on it from this backend slot */
} SfBackendCells;

/* The cell this backend counts the last slot it issued on in (counters.cpp). */
extern ShardSlot *sf_counted_slot;
extern pg_atomic_uint64 *sf_counted_cell;

Size		sf_counters_size(void);
void		sf_counters_init(void *at, bool found);
void		sf_count_issued_slow(ShardSlot *slot, uint64 n);
uint64		sf_issued_total(ShardSlot *slot);

/*
 * Counts n IDs issued on a slot by this backend.  The common case (the same
 * slot as the last call) is one plain load and store to a cache line no other
 * backend writes: no locked read-modify-write on the hot path.
 */
static inline void
sf_count_issued(ShardSlot *slot, uint64 n)
{
	if (likely(slot == sf_counted_slot))
	{
		/* only this backend writes the cell: a plain add, read whole by others */
		pg_atomic_write_u64(sf_counted_cell, pg_atomic_read_u64(sf_counted_cell) + n);
		return;
	}
	sf_count_issued_slow(slot, n);
}

#endif							/* SNOWFLAKE_COUNTERS_HPP */
