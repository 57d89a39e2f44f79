/*-------------------------------------------------------------------------
 *
 * stats.cpp
 *		What operators watch: snowflake_stats() and snowflake_stats_reset()
 *		(per shard, from the slots), and snowflake_registry() (the registry's
 *		state, from registry.cpp).
 *
 * The SQL layer: it may call the state layer and the registry.
 *
 *-------------------------------------------------------------------------
 */
#include <cinttypes>
#include <cstring>

#include "sql/decode.hpp"
#include "state/counters.hpp"
#include "state/fastpath.hpp"
#include "registry/registry.hpp"

extern "C"
{
#include "postgres.h"
#include "access/tupdesc.h"
#include "datatype/timestamp.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/execnodes.h"
#include "nodes/nodes.h"
#include "port/atomics.h"
#include "storage/lwlock.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"
}

extern "C"
{
PG_FUNCTION_INFO_V1(snowflake_stats);
PG_FUNCTION_INFO_V1(snowflake_stats_reset);
PG_FUNCTION_INFO_V1(snowflake_registry);
PG_FUNCTION_INFO_V1(snowflake_registry_replication);
}

/* The result set of a materialising set-returning function. */
static Tuplestorestate *
sf_materialize(FunctionCallInfo fcinfo, TupleDesc *tupdesc)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	MemoryContext old;
	Tuplestorestate *store;

	if (rsinfo == NULL || !IsA(rsinfo, ReturnSetInfo) ||
		!(rsinfo->allowedModes & SFRM_Materialize))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("set-valued function called in context that cannot accept a set")));
	if (get_call_result_type(fcinfo, NULL, tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	old = MemoryContextSwitchTo(rsinfo->econtext->ecxt_per_query_memory);
	*tupdesc = CreateTupleDescCopy(*tupdesc);
	store = tuplestore_begin_heap(true, false, work_mem);
	MemoryContextSwitchTo(old);
	rsinfo->returnMode = SFRM_Materialize;
	rsinfo->setResult = store;
	rsinfo->setDesc = *tupdesc;
	return store;
}

/* One row per shard this server has generated for since it started. */
extern "C" Datum
snowflake_stats(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Tuplestorestate *store;
	int			used;
	int64		mark_writes;

	sf_require_ready();
	store = sf_materialize(fcinfo, &tupdesc);
	used = (int) pg_atomic_read_u32(&sf_shared->used_slots);
	mark_writes = (int64) pg_atomic_read_u64(&sf_shared->mark_writes);

	for (int i = 0; i < used; i++)
	{
		ShardSlot  *slot = sf_slot(i);
		snowflake::GeneratorState gen;
		int64		reserved;
		TimestampTz reset_at;
		int64		now;
		Datum		values[14];
		bool		nulls[14];

		sf_slot_snapshot(slot, &gen, &reserved, &reset_at);
		now = sf_wall_ms();

		memset(nulls, 0, sizeof(nulls));
		values[0] = Int32GetDatum(slot->shard_id);
		values[1] = Int64GetDatum((int64) gen.issued);
		values[2] = TimestampTzGetDatum(sf_timestamptz(sf_layout.unix_ms_of(gen.last_offset)));
		nulls[2] = gen.last_offset < 0;
		values[3] = Int64GetDatum(gen.last_offset < 0 ? 0 :
								  Max(sf_layout.unix_ms_of(gen.last_offset) - now, (int64) 0));
		values[4] = TimestampTzGetDatum(sf_timestamptz(sf_layout.unix_ms_of(reserved)));
		nulls[4] = reserved < 0;
		values[5] = Int64GetDatum((int64) gen.sequence_exhausted);
		values[6] = Int64GetDatum((int64) gen.clock_steps_back);
		values[7] = Int64GetDatum(gen.largest_step_back * sf_layout.unit_ms);
		values[8] = Int64GetDatum((int64) pg_atomic_read_u64(&slot->waits));
		values[9] = Float8GetDatum(pg_atomic_read_u64(&slot->wait_us) / 1000.0);
		/* the causes of 1.0's refusals; the registry's are in the metrics */
		values[10] = Int64GetDatum((int64) (pg_atomic_read_u64(&slot->refusals_clock) +
											pg_atomic_read_u64(&slot->refusals_epoch) +
											pg_atomic_read_u64(&slot->refusals_exhausted)));
		values[11] = Int64GetDatum(mark_writes);
		values[12] = Int64GetDatum((int64) pg_atomic_read_u64(&slot->inline_mark_writes));
		values[13] = TimestampTzGetDatum(reset_at);
		tuplestore_putvalues(store, tupdesc, values, nulls);
	}
	return (Datum) 0;
}

extern "C" Datum
snowflake_stats_reset(PG_FUNCTION_ARGS)
{
	int			used;

	sf_require_ready();
	used = (int) pg_atomic_read_u32(&sf_shared->used_slots);
	for (int i = 0; i < used; i++)
	{
		ShardSlot  *slot = sf_slot(i);
		TimestampTz now = GetCurrentTimestamp();

		LWLockAcquire(slot->lock, LW_EXCLUSIVE);
		snowflake::reset_counters(slot->gen);
		slot->stats_reset = now;
		/* backends' cells are theirs to write: the count restarts from their sum */
		slot->issued_base = sf_issued_total(slot);
		LWLockRelease(slot->lock);
		pg_atomic_write_u64(&slot->waits, 0);
		pg_atomic_write_u64(&slot->wait_us, 0);
		pg_atomic_write_u64(&slot->refusals_clock, 0);
		pg_atomic_write_u64(&slot->refusals_epoch, 0);
		pg_atomic_write_u64(&slot->refusals_exhausted, 0);
		pg_atomic_write_u64(&slot->refusals_registry_mark, 0);
		pg_atomic_write_u64(&slot->registry_waits, 0);
		pg_atomic_write_u64(&slot->registry_wait_us, 0);
		pg_atomic_write_u64(&slot->inline_mark_writes, 0);
		pg_atomic_write_u64(&slot->sequence_exhausted, 0);
	}
	pg_atomic_write_u64(&sf_shared->mark_writes, 0);
	PG_RETURN_VOID();
}

/* The shard registry, one row (sf_registry_describe). */
extern "C" Datum
snowflake_registry(PG_FUNCTION_ARGS)
{
	SfRegistryView v;
	Datum		values[20];
	bool		nulls[20];
	int			i = 0;

	sf_require_ready();
	sf_registry_describe(&v);
	memset(nulls, 0, sizeof(nulls));
	values[i] = CStringGetTextDatum(v.backend);
	nulls[i++] = !v.enabled;
	values[i] = CStringGetTextDatum(v.endpoints);
	nulls[i++] = !v.enabled;
	values[i] = CStringGetTextDatum(v.endpoint);
	nulls[i++] = v.endpoint[0] == '\0';
	values[i] = CStringGetTextDatum(v.prefix);
	nulls[i++] = !v.enabled;
	values[i++] = CStringGetTextDatum(v.state);
	values[i] = Int32GetDatum(v.shard);
	nulls[i++] = v.shard < 0;
	values[i] = Int32GetDatum(v.datacenter);
	nulls[i++] = v.datacenter < 0;
	values[i] = Int32GetDatum(v.worker);
	nulls[i++] = v.worker < 0;
	{
		char		hex[24];

		snprintf(hex, sizeof(hex), "%" PRIx64, (uint64) v.lease_id);
		values[i] = CStringGetTextDatum(hex);
		nulls[i++] = v.lease_id == 0;
	}
	values[i] = Int32GetDatum((int32) v.lease_ttl);
	nulls[i++] = v.lease_ttl == 0;
	values[i] = TimestampTzGetDatum(v.lease_deadline);
	nulls[i++] = v.lease_deadline == 0;
	values[i] = TimestampTzGetDatum(v.last_keepalive);
	nulls[i++] = v.last_keepalive == 0;
	values[i] = TimestampTzGetDatum(sf_timestamptz(v.published_ms));
	nulls[i++] = v.published_ms < 0;
	values[i] = Int64GetDatum(v.skew_ms);
	nulls[i++] = !v.skew_known;
	values[i] = Int64GetDatum(v.skew_error_ms);
	nulls[i++] = !v.skew_known;
	values[i] = CStringGetTextDatum(v.last_error);
	nulls[i++] = v.last_error[0] == '\0';
	values[i++] = Int64GetDatum((int64) v.requests);
	values[i++] = Int64GetDatum((int64) v.bytes_sent);
	values[i++] = Int64GetDatum((int64) v.bytes_received);
	values[i++] = BoolGetDatum(v.generating);
	Assert(i == 20);
	PG_RETURN_DATUM(sf_make_record(fcinfo, values, nulls));
}

/*
 * How the PostgreSQL registry replicates, as the worker last saw it (1.3,
 * the view's registry_replication): NULL when unknown or etcd.
 */
extern "C" Datum
snowflake_registry_replication(PG_FUNCTION_ARGS)
{
	SfRegistryView v;

	sf_require_ready();
	sf_registry_describe(&v);
	if (!v.enabled || v.replication[0] == '\0')
		PG_RETURN_NULL();
	PG_RETURN_TEXT_P(cstring_to_text(v.replication));
}
