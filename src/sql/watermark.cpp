/*-------------------------------------------------------------------------
 *
 * watermark.cpp
 *		snowflake_commit_watermark() and snowflake_commit_watermark(shard):
 *		every ID below the value, generated on this server (for that shard)
 *		and ever to be committed by the transaction that took it, is already
 *		committed.  The shared state and the ordering argument are in
 *		state/watermark.cpp; docs/commit-watermark.md says how to poll.
 *
 * The SQL layer: it may call the state layer (shmem, watermark), the
 * registry (the shard it holds) and decode (the shard range check).
 *
 *-------------------------------------------------------------------------
 */
#include "sql/decode.hpp"
#include "registry/registry.hpp"
#include "state/watermark.hpp"

extern "C"
{
#include "postgres.h"
#include "access/xlog.h"
#include "fmgr.h"
#include "port/atomics.h"
}

extern "C"
{
PG_FUNCTION_INFO_V1(snowflake_commit_watermark);
PG_FUNCTION_INFO_V1(snowflake_commit_watermark_shard);
}

/* The checks both forms make: preloaded, a sound layout, not a standby. */
static void
sf_watermark_check(void)
{
	sf_require_ready();
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot compute the snowflake commit watermark on a standby server"),
				 errdetail("The watermark covers the transactions of the server that "
						   "generates the IDs; a standby does not see them."),
				 errhint("Read the watermark and the rows on the primary.")));
}

/* A live shard this server may generate for now (configured, or the registry's). */
static bool
sf_watermark_live_shard(int64 shard)
{
	uint32		held = pg_atomic_read_u32(&sf_shared->registry_shard);

	if (sf_import_shard(shard))
		return false;
	if (sf_registry_enabled)
		return held > 0 && (int64) held - 1 == shard;
	return sf_shard_allowed(shard);
}

/* The watermark of one live shard, with or without a slot. */
static int64
sf_watermark_of_shard(int64 shard)
{
	ShardSlot  *slot = sf_slot_if_any(shard);
	int64		watermark;

	if (slot != NULL)
		return sf_watermark_of_slot(slot);
	watermark = sf_watermark_unslotted(shard, &slot);
	return slot != NULL ? sf_watermark_of_slot(slot) : watermark;
}

/*
 * snowflake_commit_watermark(): the minimum over this server's live shards:
 * every slot made for live IDs since the start, and every shard it may
 * generate for (snowflake.shard_id, shard_ids, or the registry's shard)
 * that has no slot yet; and over every prepared transaction still in
 * progress, whatever its shard.  NULL when there is no live shard.  Idle
 * shards are first moved up to the clock (sf_watermark_advance), so that
 * they do not hold it back.
 *
 * The shards without a slot are looked at first, the slots after: a slot
 * made after a shard was seen without one resumes above what that shard
 * contributed (sf_watermark_unslotted), and every slot that exists when the
 * second pass starts is in it.  Within a range of shards, the first one
 * without a slot bounds the later ones (IDs grow with the shard at equal
 * time), so the scan of a range stops there.
 */
extern "C" Datum
snowflake_commit_watermark(PG_FUNCTION_ARGS)
{
	snowflake::ShardRange *ranges;
	int			count;
	int64		watermark = PG_INT64_MAX;
	bool		found = false;
	int			used;

	sf_watermark_check();
	sf_watermark_advance();
	if (sf_registry_enabled)
	{
		uint32		held = pg_atomic_read_u32(&sf_shared->registry_shard);

		count = 0;
		ranges = (snowflake::ShardRange *) palloc(sizeof(snowflake::ShardRange));
		if (held > 0)
			ranges[count++] = snowflake::ShardRange{(int64) held - 1, (int64) held - 1};
	}
	else
	{
		count = sf_configured_shards(NULL, 0);
		ranges = (snowflake::ShardRange *) palloc(sizeof(snowflake::ShardRange) * (count + 1));
		count = Min(sf_configured_shards(ranges, count + 1), count + 1);
	}

	for (int r = 0; r < count; r++)
		for (int64 shard = ranges[r].lo; shard <= ranges[r].hi; shard++)
		{
			ShardSlot  *slot;
			int64		bound;

			if (sf_slot_if_any(shard) != NULL || !sf_watermark_live_shard(shard))
				continue;
			bound = sf_watermark_unslotted(shard, &slot);
			if (slot != NULL)
				continue;		/* made meanwhile: the second pass has it */
			watermark = Min(watermark, bound);
			found = true;
			break;
		}

	used = (int) pg_atomic_read_u32(&sf_shared->used_slots);
	for (int i = 0; i < used; i++)
	{
		ShardSlot  *slot = sf_slot(i);

		/* imported IDs are outside the guarantee */
		if (slot->import_slot)
			continue;
		watermark = Min(watermark, sf_watermark_of_slot(slot));
		found = true;
	}
	if (!found)
		PG_RETURN_NULL();
	/* last: every prepared transaction, whatever its shard */
	PG_RETURN_INT64(sf_watermark_prepared(watermark));
}

/*
 * snowflake_commit_watermark(shard): the same for one shard this server
 * holds, or that a prepared transaction still holds.
 */
extern "C" Datum
snowflake_commit_watermark_shard(PG_FUNCTION_ARGS)
{
	int64		shard = PG_GETARG_INT32(0);
	ShardSlot  *slot;

	sf_watermark_check();
	sf_check_shard_range(shard);
	sf_watermark_advance();
	slot = sf_slot_if_any(shard);
	if (sf_import_shard(shard) || (slot != NULL && slot->import_slot))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("shard " INT64_FORMAT " is an import shard", shard),
				 errdetail("Imported IDs carry past times; the commit watermark covers live "
						   "IDs only."),
				 errhint("Ask for the watermark of a live shard of this server.")));
	/* a shard no longer generated here answers while prepared transactions hold it */
	if (slot == NULL && !sf_watermark_live_shard(shard) && !sf_watermark_prepared_holds(shard))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("shard " INT64_FORMAT " is not generated on this server", shard),
				 errdetail("This server generates for snowflake.shard_id (%d) and "
						   "snowflake.shard_ids (\"%s\")%s.", sf_shard_id,
						   sf_shard_ids ? sf_shard_ids : "",
						   sf_registry_enabled ? ", or the shard it holds in the registry" : ""),
				 errhint("Read the watermark of a shard on the server that generates for it; "
						 "for a cluster, take the minimum over its servers.")));
	PG_RETURN_INT64(sf_watermark_of_shard(shard));
}
