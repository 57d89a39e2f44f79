/*-------------------------------------------------------------------------
 *
 * foreign_layouts.cpp
 *		Decoding other systems' Snowflake IDs by layout name:
 *		snowflake_timestamp/shard_id/sequence/decode(id, layout text).
 *
 * The layouts themselves (field widths, order, epoch, time unit) are plain
 * data in layout.cpp, unit-tested against published examples; this file only
 * resolves a name, checks the argument and builds the SQL results.  The name
 * "snowflake" means this server's own layout and needs the library preloaded,
 * like snowflake_decode(id); the other layouts are constants and work on any
 * server where the extension is installed.
 *
 *-------------------------------------------------------------------------
 */
#include <cstring>

#include "sql/decode.hpp"
#include "state/layoutpin.hpp"

extern "C"
{
#include "postgres.h"
#include "datatype/timestamp.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
}

extern "C"
{
PG_FUNCTION_INFO_V1(snowflake_timestamp_layout);
PG_FUNCTION_INFO_V1(snowflake_shard_id_layout);
PG_FUNCTION_INFO_V1(snowflake_sequence_layout);
PG_FUNCTION_INFO_V1(snowflake_decode_layout);
}

/*
 * Unix milliseconds as a timestamptz, or an error beyond the last time a
 * timestamptz can hold (snowflake::kLastTimestamptzUnixMs, shared with the
 * one-argument decoders).  Named layouts start at or after 1970, so there is
 * no lower bound to check; none of the built-in ones reaches the upper one,
 * but "snowflake" with few shard and sequence bits can.
 */
TimestampTz
sf_timestamptz_checked(int64 unix_ms)
{
	if (unix_ms > snowflake::kLastTimestamptzUnixMs)
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("timestamp out of range"),
				 errdetail("The ID carries Unix time " INT64_FORMAT " ms, beyond the last "
						   "time a timestamptz can hold (294276-12-31).", unix_ms)));
	return (TimestampTz) snowflake::unix_ms_to_pg_us(unix_ms);
}

/* The layout named by argument 1; "snowflake" is this server's own. */
static snowflake::NamedLayout
sf_layout_arg(FunctionCallInfo fcinfo)
{
	text	   *arg = PG_GETARG_TEXT_PP(1);
	const char *name = VARDATA_ANY(arg);
	size_t		len = VARSIZE_ANY_EXHDR(arg);
	const snowflake::NamedLayout *named;
	char		known[256];

	if (len == strlen("snowflake") && pg_strncasecmp(name, "snowflake", len) == 0)
	{
		sf_require_layout();
		return snowflake::own_named_layout(sf_layout);
	}
	named = snowflake::find_named_layout(name, len);
	if (named != NULL)
		return *named;
	snowflake::list_named_layouts(known, sizeof(known));
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unknown snowflake ID layout: \"%s\"", text_to_cstring(arg)),
			 errdetail("Known layouts: %s, and snowflake (this server's own).", known)));
	return snowflake::kNamedLayouts[0];	/* keep the compiler quiet */
}

/* Decodes argument 0 under the layout named by argument 1. */
static snowflake::NamedDecoded
sf_decode_named_args(FunctionCallInfo fcinfo, snowflake::NamedLayout *layout)
{
	int64		id = PG_GETARG_INT64(0);
	snowflake::NamedDecoded d;

	*layout = sf_layout_arg(fcinfo);
	sf_check_id(id);
	if (strcmp(layout->name, "snowflake") == 0)
		sf_check_id_width(id);		/* this server's own IDs are id_bits wide */
	if (!snowflake::decode_named(*layout, id, &d))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("timestamp out of range"),
				 errdetail("ID " INT64_FORMAT " carries a time beyond the range of the "
						   "\"%s\" layout's arithmetic.", id, layout->name)));
	return d;
}

extern "C" Datum
snowflake_timestamp_layout(PG_FUNCTION_ARGS)
{
	snowflake::NamedLayout layout;
	snowflake::NamedDecoded d = sf_decode_named_args(fcinfo, &layout);

	PG_RETURN_TIMESTAMPTZ(sf_timestamptz_checked(d.unix_ms));
}

/* The whole shard field; NULL for a layout without one (mastodon). */
extern "C" Datum
snowflake_shard_id_layout(PG_FUNCTION_ARGS)
{
	snowflake::NamedLayout layout;
	snowflake::NamedDecoded d = sf_decode_named_args(fcinfo, &layout);

	if (layout.shard_bits == 0)
		PG_RETURN_NULL();
	PG_RETURN_INT32((int32) d.shard);
}

extern "C" Datum
snowflake_sequence_layout(PG_FUNCTION_ARGS)
{
	snowflake::NamedLayout layout;
	snowflake::NamedDecoded d = sf_decode_named_args(fcinfo, &layout);

	PG_RETURN_INT32((int32) d.sequence);
}

/*
 * (created_at, shard_id, sequence, shard_high, shard_low): shard_high and
 * shard_low are the two parts of a two-part shard field (twitter: datacenter
 * and worker; discord: worker and process), NULL for one-part fields;
 * shard_id is NULL when the layout has no shard field.
 */
extern "C" Datum
snowflake_decode_layout(PG_FUNCTION_ARGS)
{
	snowflake::NamedLayout layout;
	snowflake::NamedDecoded d = sf_decode_named_args(fcinfo, &layout);
	Datum		values[5];
	bool		nulls[5] = {false, false, false, false, false};
	bool		two_parts = layout.shard_low_bits > 0;

	values[0] = TimestampTzGetDatum(sf_timestamptz_checked(d.unix_ms));
	values[1] = Int32GetDatum((int32) d.shard);
	nulls[1] = layout.shard_bits == 0;
	values[2] = Int32GetDatum((int32) d.sequence);
	values[3] = Int32GetDatum((int32) d.shard_high);
	nulls[3] = !two_parts;
	values[4] = Int32GetDatum((int32) d.shard_low);
	nulls[4] = !two_parts;
	PG_RETURN_DATUM(sf_make_record(fcinfo, values, nulls));
}
