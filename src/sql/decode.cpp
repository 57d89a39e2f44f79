/*-------------------------------------------------------------------------
 *
 * decode.cpp
 *		Decoding IDs of this server's layout, time-range bounds, the text
 *		form and snowflake_layout() (see decode.hpp).  The decoders are
 *		IMMUTABLE: the layout is fixed at server start, recorded before its
 *		first use (layoutpin.hpp) and guarded by the record (datadir.cpp).
 *
 *-------------------------------------------------------------------------
 */
#include <cstring>

#include "sql/decode.hpp"
#include "registry/registry.hpp"
#include "state/layoutpin.hpp"

extern "C"
{
#include "postgres.h"
#include "access/htup_details.h"
#include "access/tupdesc.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "port/atomics.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
}

extern "C"
{
PG_FUNCTION_INFO_V1(snowflake_min_id);
PG_FUNCTION_INFO_V1(snowflake_max_id);
PG_FUNCTION_INFO_V1(snowflake_to_text);
PG_FUNCTION_INFO_V1(snowflake_from_text);
PG_FUNCTION_INFO_V1(snowflake_timestamp);
PG_FUNCTION_INFO_V1(snowflake_shard_id);
PG_FUNCTION_INFO_V1(snowflake_sequence);
PG_FUNCTION_INFO_V1(snowflake_decode);
PG_FUNCTION_INFO_V1(snowflake_layout);
PG_FUNCTION_INFO_V1(snowflake_record_layout);
PG_FUNCTION_INFO_V1(snowflake_datacenter);
PG_FUNCTION_INFO_V1(snowflake_worker);
}

/* A Unix millisecond time the caller knows to be within timestamptz's range. */
TimestampTz
sf_timestamptz(int64 unix_ms)
{
	return (TimestampTz) snowflake::unix_ms_to_pg_us(unix_ms);
}

/*
 * The timestamptz of a decoded ID's time, or an error when the time lies
 * beyond what a timestamptz can hold (possible only with layouts of more than
 * 43 timestamp bits, and only for IDs far beyond any that can be generated).
 */
TimestampTz
sf_decoded_timestamptz(int64 unix_ms, int64 id)
{
	/* IDs are never negative, so unix_ms is at least the epoch (>= 1970) */
	if (unix_ms > snowflake::kLastTimestamptzUnixMs)
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("timestamp out of range for snowflake ID " INT64_FORMAT, id),
				 errdetail("Its timestamp field is " INT64_FORMAT " units of " INT64_FORMAT
						   " ms after the epoch, beyond the last time a timestamptz can hold "
						   "(294276-12-31).",
						   id >> (sf_layout.shard_bits + sf_layout.sequence_bits),
						   sf_layout.unit_ms)));
	return sf_timestamptz(unix_ms);
}

/* Errors out unless a shard ID fits the layout's shard field. */
void
sf_check_shard_range(int64 shard)
{
	if (shard < 0 || shard > sf_layout.max_shard_id())
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("shard ID " INT64_FORMAT " is out of range", shard),
				 errdetail("Shard IDs go from 0 to " INT64_FORMAT
						   " because snowflake.shard_bits is %d.",
						   sf_layout.max_shard_id(), sf_layout.shard_bits)));
}

/* Errors out for a negative value: no Snowflake ID is negative. */
void
sf_check_id(int64 id)
{
	if (id < 0)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("invalid snowflake ID: " INT64_FORMAT, id),
				 errdetail("Snowflake IDs are never negative.")));
}

/* Errors out for a value wider than this server's IDs (snowflake.id_bits). */
void
sf_check_id_width(int64 id)
{
	if (id > sf_layout.max_id())
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("invalid snowflake ID: " INT64_FORMAT, id),
				 errdetail("This server's IDs are %d bits wide (snowflake.id_bits): at most "
						   INT64_FORMAT ".", sf_layout.id_bits, sf_layout.max_id())));
}

/* Fetches argument 0 as an ID, rejecting negative values. */
static snowflake::Decoded
sf_decode_arg(FunctionCallInfo fcinfo)
{
	int64		id = PG_GETARG_INT64(0);

	sf_require_layout();
	sf_check_id(id);
	sf_check_id_width(id);
	return snowflake::decode(sf_layout, id);
}

extern "C" Datum
snowflake_timestamp(PG_FUNCTION_ARGS)
{
	PG_RETURN_TIMESTAMPTZ(sf_decoded_timestamptz(sf_decode_arg(fcinfo).unix_ms,
												 PG_GETARG_INT64(0)));
}

extern "C" Datum
snowflake_shard_id(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT32((int32) sf_decode_arg(fcinfo).shard);
}

extern "C" Datum
snowflake_sequence(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT32((int32) sf_decode_arg(fcinfo).sequence);
}

/* Builds a tuple of the function's declared row type. */
Datum
sf_make_record(FunctionCallInfo fcinfo, Datum *values, bool *nulls)
{
	TupleDesc	tupdesc;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	tupdesc = BlessTupleDesc(tupdesc);
	return HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls));
}

extern "C" Datum
snowflake_decode(PG_FUNCTION_ARGS)
{
	snowflake::Decoded d = sf_decode_arg(fcinfo);
	Datum		values[3];
	bool		nulls[3] = {false, false, false};

	values[0] = TimestampTzGetDatum(sf_decoded_timestamptz(d.unix_ms, PG_GETARG_INT64(0)));
	values[1] = Int32GetDatum((int32) d.shard);
	values[2] = Int32GetDatum((int32) d.sequence);
	PG_RETURN_DATUM(sf_make_record(fcinfo, values, nulls));
}

extern "C" Datum
snowflake_layout(PG_FUNCTION_ARGS)
{
	Datum		values[13];
	bool		nulls[13];

	if (sf_shared == NULL)
		sf_require_ready();
	memset(nulls, 0, sizeof(nulls));

	values[0] = TimestampTzGetDatum(sf_timestamptz(sf_layout.epoch_ms));
	values[1] = Int32GetDatum(sf_layout.timestamp_bits());
	values[2] = Int32GetDatum(sf_layout.shard_bits);
	values[3] = Int32GetDatum(sf_layout.sequence_bits);
	values[4] = Int32GetDatum((int32) sf_layout.max_shard_id());
	/* per millisecond on average: a unit's sequence spread over its milliseconds */
	values[5] = Int64GetDatum((sf_layout.max_sequence() + 1) / sf_layout.unit_ms);
	values[6] = TimestampTzGetDatum(sf_timestamptz(sf_layout.last_usable_unix_ms()));
	{
		/* with a registry: the shard held now (NULL while none is) */
		int64		shard = sf_registry_enabled ?
			(int64) (pg_atomic_read_u64(sf_registry_grant) >> SF_GRANT_SHIFT) - 1 : sf_shard_id;

		values[7] = Int32GetDatum((int32) shard);
		nulls[7] = shard < 0;
	}
	values[8] = Int32GetDatum(sf_layout.id_bits);
	values[9] = Int32GetDatum((int32) sf_layout.unit_ms);
	values[10] = Int64GetDatum(sf_layout.max_sequence() + 1);
	values[11] = Int32GetDatum(sf_layout.datacenter_bits);
	values[12] = Int32GetDatum(sf_datacenter_id);
	nulls[12] = sf_datacenter_id < 0;
	PG_RETURN_DATUM(sf_make_record(fcinfo, values, nulls));
}

/*
 * Records this server's layout in pg_snowflake/layout (and WAL) unless it is
 * recorded: CREATE EXTENSION and ALTER EXTENSION UPDATE call it, so that the
 * layout is fixed before anything computed with it can be stored.  Errors
 * out when a recorded layout differs; records nothing, quietly, without the
 * preload (CREATE EXTENSION works without it), on a standby, or while the
 * clock reads earlier than the epoch (the first use records it then).
 */
extern "C" Datum
snowflake_record_layout(PG_FUNCTION_ARGS)
{
	if (sf_shared != NULL)
		(void) sf_pin_layout(false);
	PG_RETURN_VOID();
}

/* The datacenter part of an ID's shard field (0 without datacenters). */
extern "C" Datum
snowflake_datacenter(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT32((int32) (sf_decode_arg(fcinfo).shard >> sf_layout.worker_bits()));
}

/* The worker part of an ID's shard field (the whole field without datacenters). */
extern "C" Datum
snowflake_worker(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT32((int32) (sf_decode_arg(fcinfo).shard & sf_layout.max_worker_id()));
}

/*---- time ranges ----*/

/*
 * The unit (layout offset) that holds a timestamptz, which must lie within
 * the layout's range.
 */
int64
sf_offset_of_timestamptz(TimestampTz ts)
{
	int64		unix_ms;
	char		first[40], last[40];

	sf_require_layout();
	if (!TIMESTAMP_NOT_FINITE(ts))
	{
		/* floor division: the millisecond that contains ts */
		int64		pg_ms = ts / 1000 - (ts % 1000 < 0 ? 1 : 0);

		unix_ms = pg_ms + snowflake::kPostgresEpochUnixMs;
		if (unix_ms >= sf_layout.epoch_ms && unix_ms <= sf_layout.last_usable_unix_ms())
			return sf_layout.offset_of(unix_ms);
	}
	snowflake::format_utc(sf_layout.epoch_ms, first, sizeof(first));
	snowflake::format_utc(sf_layout.last_usable_unix_ms(), last, sizeof(last));
	ereport(ERROR,
			(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
			 errmsg("timestamp out of range for snowflake IDs: \"%s\"", timestamptz_to_str(ts)),
			 errdetail("This layout covers %s to %s.", first, last)));
	return 0;					/* keep the compiler quiet */
}

/* The optional shard argument of min/max_id: -1 for "all shards". */
static int64
sf_shard_arg(FunctionCallInfo fcinfo)
{
	int64		shard;

	if (PG_NARGS() < 2)
		return -1;
	shard = PG_GETARG_INT32(1);
	sf_check_shard_range(shard);
	return shard;
}

/* The smallest ID that can carry the millisecond of ts (for one shard or all). */
extern "C" Datum
snowflake_min_id(PG_FUNCTION_ARGS)
{
	int64		offset = sf_offset_of_timestamptz(PG_GETARG_TIMESTAMPTZ(0));
	int64		shard = sf_shard_arg(fcinfo);

	PG_RETURN_INT64(snowflake::encode(sf_layout, offset, shard < 0 ? 0 : shard, 0));
}

/* The largest ID that can carry the millisecond of ts (for one shard or all). */
extern "C" Datum
snowflake_max_id(PG_FUNCTION_ARGS)
{
	int64		offset = sf_offset_of_timestamptz(PG_GETARG_TIMESTAMPTZ(0));
	int64		shard = sf_shard_arg(fcinfo);

	PG_RETURN_INT64(snowflake::encode(sf_layout, offset,
									  shard < 0 ? sf_layout.max_shard_id() : shard,
									  sf_layout.max_sequence()));
}

/*---- text form ----*/

extern "C" Datum
snowflake_to_text(PG_FUNCTION_ARGS)
{
	int64		id = PG_GETARG_INT64(0);
	char		text[snowflake::kTextLength + 1];

	sf_check_id(id);
	snowflake::to_text(id, text);
	PG_RETURN_TEXT_P(cstring_to_text(text));
}

extern "C" Datum
snowflake_from_text(PG_FUNCTION_ARGS)
{
	text	   *arg = PG_GETARG_TEXT_PP(0);
	const char *data = VARDATA_ANY(arg);
	size_t		len = VARSIZE_ANY_EXHDR(arg);
	char	   *shown = text_to_cstring(arg);
	int64		id = 0;
	size_t		bad = 0;

	switch (snowflake::from_text(data, len, &id, &bad))
	{
		case snowflake::TextProblem::None:
			PG_RETURN_INT64(id);
		case snowflake::TextProblem::WrongLength:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
					 errmsg("invalid input syntax for a snowflake ID: \"%s\"", shown),
					 errdetail("A snowflake ID in text form has %d characters, not %d.",
							   snowflake::kTextLength, (int) pg_mbstrlen_with_len(data, (int) len))));
			break;
		case snowflake::TextProblem::BadCharacter:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
					 errmsg("invalid input syntax for a snowflake ID: \"%s\"", shown),
					 errdetail("Character %d is not a Crockford base32 digit "
							   "(0-9 and A-Z without I, L, O, U).", (int) bad + 1)));
			break;
		case snowflake::TextProblem::OutOfRange:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
					 errmsg("invalid input syntax for a snowflake ID: \"%s\"", shown),
					 errdetail("The value is larger than the largest bigint; the first "
							   "character of a snowflake ID is 0 to 7.")));
			break;
	}
	PG_RETURN_NULL();
}
