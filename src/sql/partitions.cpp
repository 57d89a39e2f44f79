/*-------------------------------------------------------------------------
 *
 * partitions.cpp
 *		Partitioning by the key in fixed steps of IDs (pg_partman's integer
 *		partitioning): snowflake_partition_interval(span, require_alignment),
 *		snowflake_partition_bounds(from, to, span, require_alignment) and
 *		snowflake_partition_span(ids).
 *
 * A span of time holds span / unit timestamps, each shard_bits +
 * sequence_bits wide, so a step of IDs is units << (shard_bits +
 * sequence_bits).  Steps count from ID 0, which is snowflake.epoch: their
 * partitions start at UTC midnights (or whole multiples of the span within a
 * UTC day) only when the epoch does, and require_alignment refuses spans
 * whose partitions would not.  IMMUTABLE for the reason the decoders are: the
 * layout is fixed at server start and guarded by the recorded layout.  In C,
 * reading the layout itself, so that nothing is looked up by name at run time.
 * See docs/operations.md, "Partitioning by the key with pg_partman".
 *
 *-------------------------------------------------------------------------
 */
#include <cmath>

#include "sql/decode.hpp"
#include "state/layoutpin.hpp"

extern "C"
{
#include "postgres.h"
#include "access/htup_details.h"
#include "access/tupdesc.h"
#include "common/int.h"
#include "datatype/timestamp.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
}

extern "C"
{
PG_FUNCTION_INFO_V1(snowflake_partition_interval);
PG_FUNCTION_INFO_V1(snowflake_partition_bounds);
PG_FUNCTION_INFO_V1(snowflake_partition_span);
}

static const int64 kDayMs = INT64CONST(86400000);

/* An interval as the session prints it, for messages. */
static char *
sf_interval_text(Interval *span)
{
	return DatumGetCString(DirectFunctionCall1(interval_out, IntervalPGetDatum(span)));
}

/*
 * The number of timestamp units in a span (a whole, positive number of them,
 * within the layout's range); with require_alignment, an error unless the
 * partitions of that span start at UTC midnights or at multiples of the span
 * within a UTC day.  Every check names the span and what is wrong.
 */
static int64
sf_span_units(Interval *span, bool require_alignment)
{
	int64		span_us;
	int64		span_ms;
	int64		units;
	const snowflake::Layout &l = sf_layout;

	sf_require_layout();
	if (span->month != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("partition span \"%s\" has months or years, which have no fixed number of IDs",
						sf_interval_text(span)),
				 errdetail("IDs count milliseconds; months and years vary in length."),
				 errhint("Use a span of days or less, such as '1 day' or '7 days', or create "
						 "monthly partitions yourself with bounds from snowflake_min_id().")));
	/* days of the span are 24 hours: partitions are in UTC */
	if (pg_mul_s64_overflow((int64) span->day, USECS_PER_DAY, &span_us) ||
		pg_add_s64_overflow(span_us, span->time, &span_us))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("partition span \"%s\" is longer than the layout's whole range of time",
						sf_interval_text(span))));
	if (span_us <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("partition span \"%s\" is not positive", sf_interval_text(span))));
	if (span_us % 1000 != 0 || (span_us / 1000) % l.unit_ms != 0)
	{
		if (l.unit_ms == 1)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("partition span \"%s\" is not a whole number of milliseconds",
							sf_interval_text(span)),
					 errdetail("IDs carry their time to the millisecond.")));
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("partition span \"%s\" is not a whole number of time units",
						sf_interval_text(span)),
				 errdetail("IDs carry their time in units of " INT64_FORMAT " ms (snowflake.time_unit).",
						   l.unit_ms)));
	}
	span_ms = span_us / 1000;
	units = span_ms / l.unit_ms;
	if (units > l.max_offset())
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("partition span \"%s\" is longer than the layout's whole range of time",
						sf_interval_text(span)),
				 errdetail("With %d timestamp bits of " INT64_FORMAT " ms, IDs cover %.1f years.",
						   l.timestamp_bits(), l.unit_ms,
						   ldexp((double) l.unit_ms, l.timestamp_bits()) / (365.25 * kDayMs))));

	if (require_alignment)
	{
		int64		align_ms;
		int64		off_ms;

		if (kDayMs % span_ms == 0)
			align_ms = span_ms;		/* divides a day: at multiples of it in UTC */
		else if (span_ms % kDayMs == 0)
			align_ms = kDayMs;		/* whole days: at UTC midnights */
		else
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("partition span \"%s\" neither divides a day nor is a whole number of days",
							sf_interval_text(span)),
					 errdetail("Its partitions would start at a different time of day each time."),
					 errhint("Choose a span such as '1 hour', '6 hours', '1 day' or '7 days', "
							 "or pass require_alignment => false to accept it.")));
		off_ms = l.epoch_ms % align_ms;
		if (off_ms < 0)
			off_ms += align_ms;
		if (off_ms != 0)
		{
			char		epoch[40];
			Interval	off = {};

			snowflake::format_utc(l.epoch_ms, epoch, sizeof(epoch));
			off.time = off_ms * 1000;
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("snowflake.epoch is not aligned to partitions of \"%s\"",
							sf_interval_text(span)),
					 errdetail("Partitions of a fixed number of IDs start at multiples of it counted "
							   "from ID 0, which is the epoch (%s); every partition would start %s "
							   "after a UTC %s.", epoch,
							   DatumGetCString(DirectFunctionCall1(interval_out,
																   DirectFunctionCall1(interval_justify_hours,
																					   IntervalPGetDatum(&off)))),
							   align_ms == kDayMs ? "midnight" :
							   psprintf("multiple of %s", sf_interval_text(span))),
					 errhint("Pass require_alignment => false to accept partitions that start at the "
							 "epoch's offset; pg_partman 5.5 and later can also shift them back to UTC "
							 "boundaries with create_parent(p_offset_id => ...).")));
		}
	}
	return units;
}

/* IDs per timestamp unit: one step of the timestamp field. */
static int64
sf_ids_per_unit(void)
{
	return INT64CONST(1) << (sf_layout.shard_bits + sf_layout.sequence_bits);
}

/* The number of IDs in a span of time: pg_partman's partition interval. */
extern "C" Datum
snowflake_partition_interval(PG_FUNCTION_ARGS)
{
	int64		units = sf_span_units(PG_GETARG_INTERVAL_P(0), PG_GETARG_BOOL(1));

	/* units <= max_offset(), so this stays within the layout's width */
	PG_RETURN_INT64(units * sf_ids_per_unit());
}

/* The span of time a partition interval of ids IDs covers. */
extern "C" Datum
snowflake_partition_span(PG_FUNCTION_ARGS)
{
	int64		ids = PG_GETARG_INT64(0);
	int64		per_unit;
	int64		ms;
	Interval   *result;

	sf_require_layout();
	per_unit = sf_ids_per_unit();
	if (ids <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a partition interval of " INT64_FORMAT " IDs is not positive", ids)));
	if (ids % per_unit != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a partition interval of " INT64_FORMAT " IDs is not a whole number of %s in this layout",
						ids, sf_layout.unit_ms == 1 ? "milliseconds" : "time units"),
				 sf_layout.unit_ms == 1 ?
				 errdetail("A millisecond holds " INT64_FORMAT " IDs (shard and sequence bits); "
						   INT64_FORMAT " IDs is %.3f ms.",
						   per_unit, ids, (double) ids / (double) per_unit) :
				 errdetail("A time unit of " INT64_FORMAT " ms holds " INT64_FORMAT " IDs (shard and "
						   "sequence bits); " INT64_FORMAT " IDs is %.3f units.",
						   sf_layout.unit_ms, per_unit, ids, (double) ids / (double) per_unit),
				 errhint("Take the interval from snowflake_partition_interval(), for example "
						 "snowflake_partition_interval('1 day').")));
	if (pg_mul_s64_overflow(ids / per_unit, sf_layout.unit_ms * 1000, &ms))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("a partition interval of " INT64_FORMAT " IDs spans more time than an interval holds",
						ids)));
	result = (Interval *) palloc0(sizeof(Interval));
	result->time = ms;			/* microseconds, justified into days below */
	return DirectFunctionCall1(interval_justify_hours, IntervalPGetDatum(result));
}

/* What snowflake_partition_bounds() walks through, one partition per call. */
struct SfBoundsWalk
{
	int64		k;				/* the partition: IDs [k * step, (k + 1) * step) */
	int64		step;			/* IDs per partition */
	int64		units;			/* timestamp units per partition */
	int64		last;			/* the last ID of the range */
	bool		more;			/* partitions are left to return */
};

/*
 * The partitions of a span that hold the IDs of [from_time, to_time): their
 * start and end times and ID bounds (from_id inclusive, to_id exclusive;
 * to_id NULL where the partition would reach past the largest bigint).
 * One row per call, so that a long range streams.
 */
extern "C" Datum
snowflake_partition_bounds(PG_FUNCTION_ARGS)
{
	FuncCallContext *fctx;
	SfBoundsWalk *walk;

	if (SRF_IS_FIRSTCALL())
	{
		TimestampTz from_time = PG_GETARG_TIMESTAMPTZ(0);
		TimestampTz to_time = PG_GETARG_TIMESTAMPTZ(1);
		int64		units = sf_span_units(PG_GETARG_INTERVAL_P(2), PG_GETARG_BOOL(3));
		int			bits = sf_layout.shard_bits + sf_layout.sequence_bits;
		TupleDesc	desc;
		MemoryContext old;

		fctx = SRF_FIRSTCALL_INIT();
		old = MemoryContextSwitchTo(fctx->multi_call_memory_ctx);
		if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("snowflake_partition_bounds() must be called where a record is expected")));
		fctx->tuple_desc = BlessTupleDesc(desc);
		walk = (SfBoundsWalk *) palloc0(sizeof(SfBoundsWalk));
		walk->units = units;
		walk->step = units << bits;
		if (to_time > from_time)
		{
			/* the smallest IDs of the two times (errors outside the layout) */
			int64		lo = sf_offset_of_timestamptz(from_time) << bits;

			/*
			 * The last ID of the range: the last of the unit that holds the
			 * last instant before to_time (a unit that begins before to_time
			 * holds IDs of the range, even if to_time lies within it).  Kept
			 * inclusive: the first ID past the layout's last unit would be
			 * 2^63, past the largest bigint.
			 */
			walk->last = (sf_offset_of_timestamptz(to_time - 1) << bits) |
				((INT64CONST(1) << bits) - 1);
			walk->k = lo / walk->step;
			walk->more = true;
		}
		fctx->user_fctx = walk;
		MemoryContextSwitchTo(old);
	}
	fctx = SRF_PERCALL_SETUP();
	walk = (SfBoundsWalk *) fctx->user_fctx;

	/* k * step is the previous partition's to_id, which did not overflow */
	if (walk->more && walk->k * walk->step <= walk->last)
	{
		const snowflake::Layout &l = sf_layout;
		Datum		values[4];
		bool		nulls[4] = {false, false, false, false};
		int64		to_id;
		int64		end_ms;

		/* k * units is a unit of the layout (its first ID is in the range) */
		values[0] = TimestampTzGetDatum(sf_timestamptz(l.unix_ms_of(walk->k * walk->units)));
		/* the end may lie past what a timestamptz holds: NULL then */
		if (!pg_mul_s64_overflow(walk->k + 1, walk->units * l.unit_ms, &end_ms) &&
			!pg_add_s64_overflow(end_ms, l.epoch_ms, &end_ms) &&
			end_ms <= snowflake::kLastTimestamptzUnixMs)
			values[1] = TimestampTzGetDatum(sf_timestamptz(end_ms));
		else
			nulls[1] = true;
		values[2] = Int64GetDatum(walk->k * walk->step);
		if (pg_mul_s64_overflow(walk->k + 1, walk->step, &to_id))
		{
			nulls[3] = true;	/* MAXVALUE: the last partition */
			walk->more = false;
		}
		else
			values[3] = Int64GetDatum(to_id);
		walk->k++;
		SRF_RETURN_NEXT(fctx, HeapTupleGetDatum(heap_form_tuple(fctx->tuple_desc, values, nulls)));
	}
	SRF_RETURN_DONE(fctx);
}
