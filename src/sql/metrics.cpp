/*-------------------------------------------------------------------------
 *
 * metrics.cpp
 *		What Prometheus scrapes (through postgres_exporter and the query file
 *		monitoring/snowflake.queries.yml; see docs/monitoring.md):
 *		snowflake_metrics(), one row per shard, and
 *		snowflake_server_metrics(), one row for the server and its registry.
 *
 * Values come in Prometheus' base units: counts since the last
 * snowflake_stats_reset() (or start), times in seconds as double precision.
 * Both functions read shared memory only: the counters without a lock (as
 * snowflake_stats() does), a shard's position under its slot lock in shared
 * mode, the registry through sf_registry_describe(); nothing is written.
 * Unlike snowflake_stats() they answer while generation is refused (a
 * damaged or foreign layout or mark), so that the refusal itself can be
 * exported and alerted on.
 *
 * The SQL layer: it may call the state layer and the registry.
 *
 *-------------------------------------------------------------------------
 */
#include <cstring>

#include "sql/decode.hpp"
#include "state/fastpath.hpp"
#include "registry/registry.hpp"

extern "C"
{
#include "postgres.h"
#include "datatype/timestamp.h"
#include "fmgr.h"
#include "funcapi.h"
#include "nodes/execnodes.h"
#include "port/atomics.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"
}

extern "C"
{
PG_FUNCTION_INFO_V1(snowflake_metrics);
PG_FUNCTION_INFO_V1(snowflake_server_metrics);
}

/* Errors out unless the library was preloaded (there is no state otherwise). */
static void
sf_metrics_require_state(void)
{
	if (sf_shared == NULL)
		sf_require_ready();
}

/* A count of microseconds as seconds. */
static inline double
sf_us_seconds(uint64 us)
{
	return (double) us / 1e6;
}

/* One row per shard this server has generated for since it started. */
extern "C" Datum
snowflake_metrics(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			used;

	sf_metrics_require_state();
	InitMaterializedSRF(fcinfo, 0);
	used = (int) pg_atomic_read_u32(&sf_shared->used_slots);

	for (int i = 0; i < used; i++)
	{
		ShardSlot  *slot = sf_slot(i);
		snowflake::GeneratorState gen;
		int64		reserved;
		int64		now_ms;
		Datum		values[16];
		bool		nulls[16];

		sf_slot_snapshot(slot, &gen, &reserved, NULL);
		now_ms = sf_wall_ms();

		memset(nulls, 0, sizeof(nulls));
		values[0] = Int32GetDatum(slot->shard_id);
		values[1] = Int64GetDatum((int64) gen.issued);
		values[2] = Int64GetDatum((int64) gen.sequence_exhausted);
		values[3] = Int64GetDatum((int64) gen.clock_steps_back);
		/* clock readings, and so steps, count in the layout's time units */
		values[4] = Float8GetDatum(gen.largest_step_back * sf_layout.unit_ms / 1000.0);
		values[5] = Int64GetDatum((int64) pg_atomic_read_u64(&slot->waits));
		values[6] = Float8GetDatum(sf_us_seconds(pg_atomic_read_u64(&slot->wait_us)));
		values[7] = Int64GetDatum((int64) pg_atomic_read_u64(&slot->registry_waits));
		values[8] = Float8GetDatum(sf_us_seconds(pg_atomic_read_u64(&slot->registry_wait_us)));
		values[9] = Int64GetDatum((int64) pg_atomic_read_u64(&slot->refusals_clock));
		values[10] = Int64GetDatum((int64) pg_atomic_read_u64(&slot->refusals_epoch));
		values[11] = Int64GetDatum((int64) pg_atomic_read_u64(&slot->refusals_exhausted));
		values[12] = Int64GetDatum((int64) pg_atomic_read_u64(&slot->refusals_registry_mark));
		/* how far the last ID runs ahead of the clock (0 when behind) */
		values[13] = Float8GetDatum(gen.last_offset < 0 ? 0.0 :
									Max(sf_layout.unix_ms_of(gen.last_offset) - now_ms,
										(int64) 0) / 1000.0);
		/* how far the durable mark lies ahead of the clock (negative: behind) */
		values[14] = Float8GetDatum((sf_layout.unix_ms_of(reserved) - now_ms) / 1000.0);
		nulls[14] = reserved < 0;
		values[15] = Int64GetDatum((int64) pg_atomic_read_u64(&slot->inline_mark_writes));
		/*
		 * An import shard carries past times and is bounded by its own
		 * reservation (a UTC day at a time), not by the mark: no lead over
		 * the clock, no mark headroom.
		 */
		if (slot->import_slot)
		{
			values[13] = Float8GetDatum(0.0);
			nulls[14] = true;
		}
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/* One row: the server's settings, layout and state, and its registry. */
extern "C" Datum
snowflake_server_metrics(PG_FUNCTION_ARGS)
{
	SfRegistryView reg;
	TimestampTz now_ts;
	int64		now_ms;
	uint32		held;
	Datum		values[20];
	bool		nulls[20];

	sf_metrics_require_state();
	sf_registry_describe(&reg);
	now_ts = GetCurrentTimestamp();
	now_ms = sf_wall_ms();
	held = pg_atomic_read_u32(&sf_shared->registry_shard);

	memset(nulls, 0, sizeof(nulls));
	values[0] = Int32GetDatum((int32) pg_atomic_read_u32(&sf_shared->used_slots));
	values[1] = Int32GetDatum(sf_shared->num_slots);
	values[2] = Int64GetDatum((int64) pg_atomic_read_u64(&sf_shared->mark_writes));
	values[3] = Float8GetDatum(sf_max_clock_lead / 1000.0);
	values[4] = Float8GetDatum(sf_max_clock_wait / 1000.0);
	values[5] = TimestampTzGetDatum(sf_timestamptz(sf_layout.last_usable_unix_ms()));
	values[6] = Float8GetDatum((sf_layout.last_unix_ms() - now_ms) / 1000.0);
	/* flags written once, before the text they guard; only the flags are read */
	values[7] = BoolGetDatum(sf_shared->refused || sf_shared->state_refused);

	values[8] = BoolGetDatum(reg.enabled);
	values[9] = CStringGetTextDatum(reg.state);
	values[10] = Int32GetDatum((int32) held - 1);
	nulls[10] = !reg.enabled || held == 0;
	values[11] = BoolGetDatum(reg.generating);
	values[12] = Float8GetDatum((double) reg.lease_ttl);
	nulls[12] = reg.lease_ttl == 0;
	/* until the fencing deadline: generation stops there without a renewal */
	values[13] = Float8GetDatum(Max(reg.lease_deadline - now_ts, (TimestampTz) 0) / 1e6);
	nulls[13] = reg.lease_deadline == 0;
	values[14] = Float8GetDatum((reg.published_ms - now_ms) / 1000.0);
	nulls[14] = reg.published_ms < 0;
	values[15] = Int64GetDatum((int64) reg.errors);
	values[16] = Int64GetDatum((int64) reg.refusals);
	/* this server's clock minus the registry's, measured at each renewal */
	values[17] = Float8GetDatum(reg.skew_ms / 1000.0);
	nulls[17] = !reg.enabled || !reg.skew_known;
	values[18] = Float8GetDatum(reg.skew_error_ms / 1000.0);
	nulls[18] = nulls[17];
	values[19] = Float8GetDatum(reg.max_skew_ms / 1000.0);
	nulls[19] = !reg.enabled;
	PG_RETURN_DATUM(sf_make_record(fcinfo, values, nulls));
}
