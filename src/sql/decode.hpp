/*-------------------------------------------------------------------------
 *
 * decode.hpp
 *		The SQL functions that read IDs with this server's layout: the
 *		decoders, the time-range bounds, the text form and snowflake_layout(),
 *		and the argument checks the other SQL functions share.
 *
 * The SQL layer: it may call the state layer and the registry.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_DECODE_HPP
#define SNOWFLAKE_DECODE_HPP

#include "state/state.hpp"

extern "C"
{
#include "datatype/timestamp.h"
#include "fmgr.h"
}

void		sf_check_id(int64 id);
void		sf_check_id_width(int64 id);
void		sf_check_shard_range(int64 shard);
Datum		sf_make_record(FunctionCallInfo fcinfo, Datum *values, bool *nulls);
TimestampTz sf_timestamptz(int64 unix_ms);
int64		sf_offset_of_timestamptz(TimestampTz ts);
TimestampTz sf_decoded_timestamptz(int64 unix_ms, int64 id);

#endif							/* SNOWFLAKE_DECODE_HPP */
