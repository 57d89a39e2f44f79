/*-------------------------------------------------------------------------
 *
 * watermark.hpp
 *		The commit watermark (snowflake_commit_watermark()): what each
 *		backend's open transaction may hold below it, per shard slot, and
 *		what prepared transactions hold, in shared memory and in
 *		pg_snowflake/prepared.<xid>; see watermark.cpp for the ordering
 *		argument.
 *
 * In the state layer, beside mark.cpp: it may call the core, the settings,
 * shmem.cpp (the slots), fastpath.cpp (a slot's position), datadir.cpp
 * (file errors) and mark.cpp (moving idle shards up to the clock).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_WATERMARK_HPP
#define SNOWFLAKE_WATERMARK_HPP

#include "state/state.hpp"

/* The module's shared-memory hooks (snowflake.cpp) and _PG_init. */
#define SF_WATERMARK_TRANCHE "snowflake_watermark"
Size		sf_watermark_shmem_size(void);
void		sf_watermark_shmem_init(void);
void		sf_watermark_init(void);

/*
 * The writer's side, called by a generating call before its step issues an
 * ID from "slot" (nextval.cpp): on the first ID of the top-level transaction
 * for that slot it publishes where the slot stands, so that every ID the
 * transaction takes from it lies above what it published.  With the LWLock
 * generator the caller holds slot->lock (and "locked" is true); with the
 * atomic one it holds no lock.  Later calls of the transaction for the same
 * slot pay one compare.  Never allocates, ereports or sleeps.
 */
extern ShardSlot *sf_watermark_held_slot;
void		sf_watermark_publish(ShardSlot *slot, bool locked);

static inline void
sf_watermark_hold(ShardSlot *slot, bool locked)
{
	if (unlikely(slot != sf_watermark_held_slot))
		sf_watermark_publish(slot, locked);
}

/*
 * The reader's side: the lowest ID of "slot" that an open or prepared
 * transaction may still commit, or the first one the slot may issue next,
 * whichever is lower (every smaller ID of the slot's shard that will ever be
 * committed is committed).  sf_watermark_unslotted() is the same for a live
 * shard that has no slot yet.  Both ereport only outside locks.
 */
int64		sf_watermark_of_slot(ShardSlot *slot);
int64		sf_watermark_unslotted(int64 shard, ShardSlot **slot);

/*
 * The server-wide form's prepared transactions (of every shard), whether
 * one holds a given shard, and the idle shards' move to the clock that
 * both forms make before they read (watermark.cpp, mark.cpp).
 */
int64		sf_watermark_prepared(int64 watermark);
bool		sf_watermark_prepared_holds(int64 shard);
void		sf_watermark_advance(void);

#endif							/* SNOWFLAKE_WATERMARK_HPP */
