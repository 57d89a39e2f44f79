/*-------------------------------------------------------------------------
 *
 * counters.cpp
 *		The lock-free generator's count of IDs issued per shard (see
 *		counters.hpp): cells per backend slot in shared memory, summed by the
 *		readers.
 *
 * Why.  A shared counter in the shard's slot took a second locked
 * read-modify-write per call (a lock xadd besides the CAS of the state
 * word), and backends sharing a shard bounced its cache line once more per
 * call.  Each backend now adds to a cell on a cache line of its own, with a
 * plain load and store; snowflake_stats() and the metrics sum the slot's word
 * (the counts of backends without a cell, and of imports) and every cell
 * given that slot.
 *
 * Ordering.  A cell is written only by the backend that holds its backend
 * slot (PostgreSQL gives a backend slot to one process at a time, under a
 * lock, so the next holder continues from the last one's count).  Its words
 * are 64-bit atomics written whole (pg_atomic_write_u64), so a reader never
 * sees a torn value.  A cell is given a shard slot once, before its first
 * count, and never another: a reader that finds the slot number reads a
 * count of that shard only.  Counts only grow, so the sum only grows; it is
 * exact once every call has returned (a snapshot may miss calls in flight),
 * as the fetch_add it replaces was.  snowflake_stats_reset() records the sum
 * at the reset (issued_base, under the slot's lock) instead of zeroing words
 * other backends write.
 *
 *-------------------------------------------------------------------------
 */
#include "state/counters.hpp"

extern "C"
{
#include "postgres.h"
#include "miscadmin.h"
}

ShardSlot  *sf_counted_slot = NULL;
pg_atomic_uint64 *sf_counted_cell = NULL;

/* The slot counted in its shared word by this backend (no cell left for it). */
static ShardSlot *sf_uncounted_slot = NULL;

/* The cells in shared memory, and how many backend slots they cover. */
static SfBackendCells *sf_cells = NULL;
static int	sf_cell_rows = 0;

/* Backend slots that have given a cell a shard, at most: readers stop there. */
static pg_atomic_uint32 *sf_cell_rows_used = NULL;

/* This backend's row: its backend slot, 0-based; -1 when it has none. */
static int
sf_my_row(void)
{
	int			row = sf_backend_number(false);

	return row >= 0 && row < sf_cell_rows ? row : -1;
}

/* The shared memory of the cells (added to shmem.cpp's request). */
Size
sf_counters_size(void)
{
	/* the count of used rows on a line of its own, then one line per backend slot */
	return add_size(PG_CACHE_LINE_SIZE, mul_size(sizeof(SfBackendCells), (Size) MaxBackends));
}

/* Attaches to the cells at "at" (cache-line aligned), initialised unless found. */
void
sf_counters_init(void *at, bool found)
{
	sf_cell_rows_used = (pg_atomic_uint32 *) at;
	sf_cells = (SfBackendCells *) ((char *) at + PG_CACHE_LINE_SIZE);
	sf_cell_rows = MaxBackends;
	if (found)
		return;
	pg_atomic_init_u32(sf_cell_rows_used, 0);
	for (int row = 0; row < sf_cell_rows; row++)
		for (int k = 0; k < SF_BACKEND_CELLS; k++)
		{
			pg_atomic_init_u32(&sf_cells[row].slot[k], 0);
			pg_atomic_init_u64(&sf_cells[row].issued[k], 0);
		}
}

/* The number of a slot in shared memory. */
static uint32
sf_slot_number(ShardSlot *slot)
{
	return (uint32) (slot - sf_slot(0));
}

/*
 * Counts n IDs on a slot this backend did not count on last: finds its cell
 * for the slot, or gives it a free one, and counts there from now on; with no
 * row or no free cell, counts in the slot's shared word (a locked add, as
 * before 1.3).
 */
void
sf_count_issued_slow(ShardSlot *slot, uint64 n)
{
	int			row = sf_my_row();
	uint32		want = sf_slot_number(slot) + 1;

	if (slot != sf_uncounted_slot && row >= 0)
	{
		SfBackendCells *cells = &sf_cells[row];

		for (int k = 0; k < SF_BACKEND_CELLS; k++)
		{
			uint32		has = pg_atomic_read_u32(&cells->slot[k]);

			if (has == 0)
			{
				uint32		used = pg_atomic_read_u32(sf_cell_rows_used);

				/* readers look at this row from now on (a full barrier) ... */
				while (used < (uint32) row + 1 &&
					   !pg_atomic_compare_exchange_u32(sf_cell_rows_used, &used,
													   (uint32) row + 1))
					;
				/* ... and find the cell's shard before any count (it holds 0) */
				pg_atomic_write_u32(&cells->slot[k], want);
				has = want;
			}
			if (has == want)
			{
				sf_counted_slot = slot;
				sf_counted_cell = &cells->issued[k];
				pg_atomic_write_u64(sf_counted_cell, pg_atomic_read_u64(sf_counted_cell) + n);
				return;
			}
		}
	}
	sf_uncounted_slot = slot;
	pg_atomic_fetch_add_u64(&slot->issued, n);
}

/* The IDs counted for a slot: its shared word and every cell given it. */
uint64
sf_issued_total(ShardSlot *slot)
{
	uint32		want = sf_slot_number(slot) + 1;
	uint32		rows = pg_atomic_read_u32(sf_cell_rows_used);
	uint64		total = pg_atomic_read_u64(&slot->issued);

	pg_read_barrier();
	for (uint32 row = 0; row < rows && (int) row < sf_cell_rows; row++)
		for (int k = 0; k < SF_BACKEND_CELLS; k++)
		{
			uint32		has = pg_atomic_read_u32(&sf_cells[row].slot[k]);

			if (has == 0)
				break;			/* cells are given in order */
			if (has == want)
			{
				pg_read_barrier();
				total += pg_atomic_read_u64(&sf_cells[row].issued[k]);
				break;			/* a row gives a slot one cell */
			}
		}
	return total;
}
