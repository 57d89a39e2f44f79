/*-------------------------------------------------------------------------
 *
 * type.cpp
 *		The snowflake type (issue 28): its input, binary receive and casts
 *		from integers, and its time comparisons ("id >= timestamptz": created
 *		at or after), with snowflake_time_bound(), the same bound for bigint
 *		columns.
 *
 * The type is a bigint that JSON does not take for a number: 8 bytes, passed
 * like int8, the same binary form, printed in decimal; JSON built on the
 * server (to_json, row_to_json, json_agg) writes it as a string, as it does
 * every type but PostgreSQL's own numbers.  It is of type category 'N' with
 * implicit casts from integer and smallint, so that COALESCE, CASE, UNION
 * and the rest find a common type with integers (see the SQL script and
 * docs/json-and-javascript.md).  Its output, send, equality, order and
 * hash functions are int8's own (LANGUAGE internal in the SQL script), so a
 * key of the type costs what a bigint key does; this file holds only what
 * differs: input that refuses negative values and anything but digits (a
 * soft error from PostgreSQL 16 on), the casts, and the comparisons with time.
 *
 * A time never equals an ID: it sits between the last ID of the unit before
 * the first unit that starts at or after it, and that unit's first ID
 * (snowflake::time_bound()).  So "id >= t" is exactly
 * "snowflake_timestamp(id) >= t", "id < t" is "snowflake_timestamp(id) < t",
 * ">" means ">=" and "<=" means "<", and these operators belong to the type's
 * btree family with a consistent order: the primary key's index and range
 * partitions on the key use them (see docs/operations.md, "The snowflake
 * type").  The bound is computed once per time and kept in fn_extra, not
 * once per row.  IMMUTABLE for the reason the decoders are: the layout is
 * fixed at server start, recorded before its first use (by the first bound
 * computed, at the latest) and guarded by the record.
 *
 * The SQL layer: PostgreSQL glue over the core (layout.hpp, textform.hpp).
 *
 *-------------------------------------------------------------------------
 */
#include "sql/decode.hpp"
#include "state/layoutpin.hpp"

extern "C"
{
#include "postgres.h"
#include "access/stratnum.h"
#include "catalog/pg_type.h"
#include "datatype/timestamp.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "libpq/pqformat.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "nodes/nodes.h"
#include "nodes/pg_list.h"
#include "nodes/primnodes.h"
#include "nodes/supportnodes.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"
#include "utils/typcache.h"
#if PG_VERSION_NUM >= 160000
#include "nodes/miscnodes.h"
#endif
}

/*
 * An error of the type's input: from PostgreSQL 16 on a soft error when the
 * caller asks for one (pg_input_is_valid(), pg_input_error_info(), COPY ...
 * ON_ERROR), returning no value; before 16 always an ERROR.
 */
#if PG_VERSION_NUM >= 160000
#define sf_input_error(fcinfo, ...) ereturn((fcinfo)->context, (Datum) 0, __VA_ARGS__)
#else
#define sf_input_error(fcinfo, ...) \
	do { ereport(ERROR, (__VA_ARGS__)); pg_unreachable(); } while (0)
#endif

extern "C"
{
PG_FUNCTION_INFO_V1(snowflake_in);
PG_FUNCTION_INFO_V1(snowflake_recv);
PG_FUNCTION_INFO_V1(snowflake_from_int8);
PG_FUNCTION_INFO_V1(snowflake_from_int4);
PG_FUNCTION_INFO_V1(snowflake_from_int2);
PG_FUNCTION_INFO_V1(snowflake_cmp_time);
PG_FUNCTION_INFO_V1(snowflake_lt_time);
PG_FUNCTION_INFO_V1(snowflake_le_time);
PG_FUNCTION_INFO_V1(snowflake_gt_time);
PG_FUNCTION_INFO_V1(snowflake_ge_time);
PG_FUNCTION_INFO_V1(snowflake_time_cmp);
PG_FUNCTION_INFO_V1(snowflake_time_lt);
PG_FUNCTION_INFO_V1(snowflake_time_le);
PG_FUNCTION_INFO_V1(snowflake_time_gt);
PG_FUNCTION_INFO_V1(snowflake_time_ge);
PG_FUNCTION_INFO_V1(snowflake_time_bound);
PG_FUNCTION_INFO_V1(snowflake_time_support);
}

/*---- input and casts ----*/

/* The decimal form of an ID; errors for anything else. */
extern "C" Datum
snowflake_in(PG_FUNCTION_ARGS)
{
	const char *str = PG_GETARG_CSTRING(0);
	int64		id = 0;
	size_t		bad = 0;

	switch (snowflake::parse_decimal(str, strlen(str), &id, &bad))
	{
		case snowflake::DecimalProblem::None:
			PG_RETURN_INT64(id);
		case snowflake::DecimalProblem::Empty:
		case snowflake::DecimalProblem::BadCharacter:
			sf_input_error(fcinfo,
						   errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
						   errmsg("invalid input syntax for type snowflake: \"%s\"", str),
						   errdetail("A snowflake is written in decimal digits only (0-9), "
									 "without a sign or spaces."));
		case snowflake::DecimalProblem::Negative:
			sf_input_error(fcinfo,
						   errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
						   errmsg("value \"%s\" is out of range for type snowflake", str),
						   errdetail("Snowflake IDs are never negative."));
		case snowflake::DecimalProblem::OutOfRange:
			sf_input_error(fcinfo,
						   errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
						   errmsg("value \"%s\" is out of range for type snowflake", str),
						   errdetail("The largest snowflake is 9223372036854775807, as for bigint."));
	}
	PG_RETURN_NULL();
}

/* The binary form: int8's (8 bytes, big-endian); negative values refused. */
extern "C" Datum
snowflake_recv(PG_FUNCTION_ARGS)
{
	StringInfo	buf = (StringInfo) PG_GETARG_POINTER(0);
	int64		id = pq_getmsgint64(buf);

	sf_check_id(id);
	PG_RETURN_INT64(id);
}

/* bigint -> snowflake (on assignment only): the same value, never negative. */
extern "C" Datum
snowflake_from_int8(PG_FUNCTION_ARGS)
{
	int64		id = PG_GETARG_INT64(0);

	sf_check_id(id);
	PG_RETURN_INT64(id);
}

/* integer -> snowflake (implicit): "INSERT ... VALUES (1)", "COALESCE(max(id), 0)". */
extern "C" Datum
snowflake_from_int4(PG_FUNCTION_ARGS)
{
	int64		id = PG_GETARG_INT32(0);

	sf_check_id(id);
	PG_RETURN_INT64(id);
}

/* smallint -> snowflake (implicit), as integer's. */
extern "C" Datum
snowflake_from_int2(PG_FUNCTION_ARGS)
{
	int64		id = PG_GETARG_INT16(0);

	sf_check_id(id);
	PG_RETURN_INT64(id);
}

/*---- time comparisons ----*/

/* Where a timestamptz falls among this layout's IDs (infinities included). */
static snowflake::TimeBound
sf_time_bound(TimestampTz ts)
{
	int64		pg_ms;

	sf_require_layout();
	if (TIMESTAMP_IS_NOBEGIN(ts))
		return snowflake::TimeBound{0, false};
	if (TIMESTAMP_IS_NOEND(ts))
		return snowflake::TimeBound{0, true};
	/* the first whole millisecond at or after ts (C division truncates to 0) */
	pg_ms = ts / 1000 + (ts % 1000 > 0 ? 1 : 0);
	return snowflake::time_bound(sf_layout, pg_ms + snowflake::kPostgresEpochUnixMs);
}

/* One time's bound, remembered in fn_extra: one computation per time, not per row. */
struct SfBoundCache
{
	TimestampTz ts;
	snowflake::TimeBound bound;
	bool		valid;			/* bound is ts's */
};

static snowflake::TimeBound
sf_cached_bound(FunctionCallInfo fcinfo, TimestampTz ts)
{
	SfBoundCache *cache;

	if (fcinfo->flinfo == NULL)
		return sf_time_bound(ts);
	cache = (SfBoundCache *) fcinfo->flinfo->fn_extra;
	if (cache != NULL && cache->valid && cache->ts == ts)
		return cache->bound;
	if (cache == NULL)
	{
		cache = (SfBoundCache *) MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt,
														sizeof(SfBoundCache));
		fcinfo->flinfo->fn_extra = cache;
	}
	cache->valid = false;
	cache->bound = sf_time_bound(ts);	/* may error: then the cache stays invalid */
	cache->ts = ts;
	cache->valid = true;
	return cache->bound;
}

/* -1 when the ID (argument id_arg) was created before the time, 1 when at or after. */
static int
sf_compare(FunctionCallInfo fcinfo, int id_arg)
{
	int64		id = PG_GETARG_INT64(id_arg);
	TimestampTz ts = PG_GETARG_TIMESTAMPTZ(1 - id_arg);

	return snowflake::compare_with_bound(sf_layout, id, sf_cached_bound(fcinfo, ts));
}

/* snowflake op timestamptz: btree support 1, and <, <=, >, >= */
extern "C" Datum
snowflake_cmp_time(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT32(sf_compare(fcinfo, 0));
}

extern "C" Datum
snowflake_lt_time(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(sf_compare(fcinfo, 0) < 0);
}

extern "C" Datum
snowflake_le_time(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(sf_compare(fcinfo, 0) <= 0);
}

extern "C" Datum
snowflake_gt_time(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(sf_compare(fcinfo, 0) > 0);
}

extern "C" Datum
snowflake_ge_time(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(sf_compare(fcinfo, 0) >= 0);
}

/* timestamptz op snowflake: the same, seen from the time */
extern "C" Datum
snowflake_time_cmp(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT32(-sf_compare(fcinfo, 1));
}

extern "C" Datum
snowflake_time_lt(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(-sf_compare(fcinfo, 1) < 0);
}

extern "C" Datum
snowflake_time_le(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(-sf_compare(fcinfo, 1) <= 0);
}

extern "C" Datum
snowflake_time_gt(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(-sf_compare(fcinfo, 1) > 0);
}

extern "C" Datum
snowflake_time_ge(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(-sf_compare(fcinfo, 1) >= 0);
}

/*
 * The planner support of the time comparisons: with a constant time, "id >= t"
 * becomes "id >= <the first ID at or after t>" (and "id < t" becomes
 * "id < <that ID>"), a comparison among snowflakes.  The answer is the same;
 * what changes is that partition pruning, which compares the constant with
 * the partitions' bounds, sees an ID: a time sits just below the first ID of
 * its unit, so a month's range would otherwise also keep the partition that
 * ends where the month begins (no ID lies between the time and that bound,
 * but pruning cannot know it).  And no row compares with a time at all.
 * Which comparison a call is, is told by the C function it calls, never by a
 * name.
 */
extern "C" Datum
snowflake_time_support(PG_FUNCTION_ARGS)
{
	Node	   *rawreq = (Node *) PG_GETARG_POINTER(0);
	SupportRequestSimplify *req;
	FuncExpr   *call;
	FmgrInfo	finfo;
	PGFunction	fn;
	Node	   *idarg;
	Const	   *tsarg;
	bool		after;
	bool		time_first;
	snowflake::TimeBound b;
	Oid			typid;
	TypeCacheEntry *tc;
	Oid			opno;
	int16		typlen;
	bool		typbyval;
	OpExpr	   *op;

	if (!IsA(rawreq, SupportRequestSimplify))
		PG_RETURN_POINTER(NULL);
	req = (SupportRequestSimplify *) rawreq;
	call = req->fcall;
	if (list_length(call->args) != 2)
		PG_RETURN_POINTER(NULL);
	fmgr_info(call->funcid, &finfo);
	fn = finfo.fn_addr;
	/* "id >= t", "id > t", "t <= id", "t < id": created at or after t */
	if (fn == snowflake_ge_time || fn == snowflake_gt_time ||
		fn == snowflake_time_le || fn == snowflake_time_lt)
		after = true;
	else if (fn == snowflake_lt_time || fn == snowflake_le_time ||
			 fn == snowflake_time_gt || fn == snowflake_time_ge)
		after = false;
	else
		PG_RETURN_POINTER(NULL);
	time_first = (fn == snowflake_time_le || fn == snowflake_time_lt ||
				  fn == snowflake_time_gt || fn == snowflake_time_ge);
	idarg = (Node *) (time_first ? lsecond(call->args) : linitial(call->args));
	if (!IsA(time_first ? linitial(call->args) : lsecond(call->args), Const))
		PG_RETURN_POINTER(NULL);
	tsarg = (Const *) (time_first ? linitial(call->args) : lsecond(call->args));
	if (tsarg->constisnull)
		PG_RETURN_POINTER(NULL);

	/* the type's own "<=", ">", "<" or ">=", from its btree family */
	typid = exprType(idarg);
	tc = lookup_type_cache(typid, TYPECACHE_BTREE_OPFAMILY);
	if (!OidIsValid(tc->btree_opf))
		PG_RETURN_POINTER(NULL);
	b = sf_time_bound(DatumGetTimestampTz(tsarg->constvalue));
	/* past the layout's last unit: after it means wider than the layout */
	opno = get_opfamily_member(tc->btree_opf, typid, typid,
							   after ? (b.past_end ? BTGreaterStrategyNumber : BTGreaterEqualStrategyNumber) :
							   (b.past_end ? BTLessEqualStrategyNumber : BTLessStrategyNumber));
	if (!OidIsValid(opno))
		PG_RETURN_POINTER(NULL);
	get_typlenbyval(typid, &typlen, &typbyval);
	op = (OpExpr *) make_opclause(opno, BOOLOID, false, (Expr *) idarg,
								  (Expr *) makeConst(typid, -1, InvalidOid, typlen,
													 Int64GetDatum(b.past_end ? sf_layout.max_id() : b.first_id),
													 false, typbyval),
								  InvalidOid, InvalidOid);
	op->location = call->location;
	set_opfuncid(op);
	PG_RETURN_POINTER(op);
}

/*
 * The first ID created at or after ts, as a bigint: the bound the
 * snowflake_created_*() functions compare bigint columns with.  0 for times
 * at or before the epoch; an error past the start of the layout's last unit,
 * where the bound (the ID after the largest) may not fit in a bigint.
 */
extern "C" Datum
snowflake_time_bound(PG_FUNCTION_ARGS)
{
	TimestampTz ts = PG_GETARG_TIMESTAMPTZ(0);
	snowflake::TimeBound b = sf_time_bound(ts);

	if (b.past_end)
	{
		char		first[40], last[40];

		snowflake::format_utc(sf_layout.epoch_ms, first, sizeof(first));
		snowflake::format_utc(sf_layout.last_usable_unix_ms(), last, sizeof(last));
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("timestamp out of range for snowflake IDs: \"%s\"", timestamptz_to_str(ts)),
				 errdetail("This layout covers %s to %s.", first, last),
				 errhint("Compare with a time within the layout, or store the IDs in a column "
						 "of type snowflake, whose comparisons take any time.")));
	}
	PG_RETURN_INT64(b.first_id);
}
