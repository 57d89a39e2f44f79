/*-------------------------------------------------------------------------
 *
 * adopt.cpp
 *		snowflake_adopt_database(): adopting a database moved from another
 *		cluster without its snowflake state (see origin.cpp).
 *
 * It finds every bigint column whose default calls a function of this
 * extension, reads the largest value of each (colmax.cpp: no SQL, no
 * planning, nothing of the tables' owners run), makes every shard of this
 * server resume above the time of the largest, and records this cluster as
 * the database's origin.  It was PL/pgSQL until 1.2, which planned
 * "SELECT max(id)" over tables other roles own as the superuser running it
 * (index expressions and partial-index predicates run at planning), failed on
 * other sessions' temporary tables, and called our own functions by name
 * through the extension's schema.  Here everything is found by OID: the
 * extension through the calling function, the columns through pg_depend and
 * pg_attrdef, snowflake_origin through pg_depend (origin.cpp); the decoding
 * and the floor are our own C.
 *
 * The SQL layer: it may call the state layer (mark, through origin.cpp).
 *
 *-------------------------------------------------------------------------
 */
#include <algorithm>

#include "sql/colmax.hpp"
#include "sql/decode.hpp"
#include "sql/managed_mark.hpp"
#include "sql/origin.hpp"
#include "state/datadir.hpp"
#include "state/layoutpin.hpp"

extern "C"
{
#include "postgres.h"
#include "access/attnum.h"
#include "access/genam.h"
#include "access/htup.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/dependency.h"
#include "catalog/indexing.h"
#include "catalog/objectaddress.h"
#include "catalog/pg_attrdef.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_class.h"
#include "catalog/pg_depend.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "datatype/timestamp.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "nodes/pg_list.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
}

extern "C"
{
PG_FUNCTION_INFO_V1(snowflake_adopt_database);
}

/* A column that may hold this extension's IDs. */
struct SfAdoptColumn
{
	Oid			relid;
	AttrNumber	attnum;
};

/*
 * Every bigint or snowflake (1.3) column of a table (or partitioned or foreign table) whose
 * default calls a function of extension "ext" or one of more_functions (the
 * SQL edition's generators, managed_mark.cpp), by the default's
 * dependencies, never by its text; in OID order, each once.  *count gets
 * their number.
 */
static SfAdoptColumn *
sf_adopt_columns(Oid ext, Oid idtype, List *more_functions, int *count)
{
	List	   *functions = list_concat(sf_dependents(ExtensionRelationId, ext, ProcedureRelationId,
													DEPENDENCY_EXTENSION),
										more_functions);
	ListCell   *fc;
	SfAdoptColumn *cols = NULL;
	int			n = 0;
	int			size = 0;

	foreach(fc, functions)
	{
		List	   *defaults = sf_dependents(ProcedureRelationId, lfirst_oid(fc),
											 AttrDefaultRelationId, 0);
		ListCell   *dc;

		foreach(dc, defaults)
		{
			ObjectAddress col = GetAttrDefaultColumnAddress(lfirst_oid(dc));
			HeapTuple	att;
			bool		wanted;
			char		relkind;

			if (!OidIsValid(col.objectId))
				continue;
			relkind = get_rel_relkind(col.objectId);
			if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE &&
				relkind != RELKIND_FOREIGN_TABLE)
				continue;
			att = SearchSysCache2(ATTNUM, ObjectIdGetDatum(col.objectId),
								  Int16GetDatum((int16) col.objectSubId));
			if (!HeapTupleIsValid(att))
				continue;
			wanted = sf_id_type(((Form_pg_attribute) GETSTRUCT(att))->atttypid, idtype) &&
				!((Form_pg_attribute) GETSTRUCT(att))->attisdropped;
			ReleaseSysCache(att);
			if (!wanted)
				continue;
			if (n == size)
			{
				size = size == 0 ? 16 : size * 2;
				cols = cols == NULL ? (SfAdoptColumn *) palloc(size * sizeof(SfAdoptColumn))
					: (SfAdoptColumn *) repalloc(cols, size * sizeof(SfAdoptColumn));
			}
			cols[n].relid = col.objectId;
			cols[n].attnum = (AttrNumber) col.objectSubId;
			n++;
		}
		list_free(defaults);
	}
	list_free(functions);
	if (n > 1)
	{
		std::sort(cols, cols + n, [](const SfAdoptColumn &a, const SfAdoptColumn &b) {
			return a.relid != b.relid ? a.relid < b.relid : a.attnum < b.attnum;
		});
		n = (int) (std::unique(cols, cols + n, [](const SfAdoptColumn &a, const SfAdoptColumn &b) {
			return a.relid == b.relid && a.attnum == b.attnum;
		}) - cols);
	}
	*count = n;
	return cols;
}

/* "a - clock" truncated to the second, as text (as the PL/pgSQL version said it). */
static char *
sf_ahead_text(TimestampTz a)
{
	Datum		diff = DirectFunctionCall2(timestamp_mi, TimestampTzGetDatum(a),
										   TimestampTzGetDatum(GetCurrentTimestamp()));

	diff = DirectFunctionCall2(interval_trunc, CStringGetTextDatum("second"), diff);
	return DatumGetCString(DirectFunctionCall1(interval_out, diff));
}

static char *
sf_timestamptz_text(TimestampTz ts)
{
	return DatumGetCString(DirectFunctionCall1(timestamptz_out, TimestampTzGetDatum(ts)));
}

/*
 * Records this cluster as the database's origin: the extension's own
 * snowflake_origin (found by OID, origin.cpp), locked, then updated through
 * its schema-qualified name, which names exactly that locked table (names are
 * unique within a schema), with the values as parameters.
 */
static void
sf_record_origin(Oid fn_oid)
{
	Oid			origin = sf_origin_table(fn_oid);
	Oid			types[2] = {INT8OID, TIMESTAMPTZOID};
	Datum		values[2];
	char	   *sql;

	if (!OidIsValid(origin))
		elog(ERROR, "the snowflake extension has no snowflake_origin table");
	LockRelationOid(origin, RowExclusiveLock);
	values[0] = Int64GetDatum((int64) GetSystemIdentifier());
	values[1] = TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());
	sql = psprintf("UPDATE %s SET system_identifier = $1, recorded_at = $2",
				   sf_relation_name(origin));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args(sql, 2, types, values, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not update snowflake_origin");
	SPI_finish();
}

/*
 * snowflake_adopt_database([at_least] [, allow_future]): see the file's
 * header and README.md, "pg_upgrade and moving databases".  Returns the floor
 * it raised to, or NULL when it found no ID and got no at_least.
 */
extern "C" Datum
snowflake_adopt_database(PG_FUNCTION_ARGS)
{
	bool		has_at_least = !PG_ARGISNULL(0);
	TimestampTz at_least = has_at_least ? PG_GETARG_TIMESTAMPTZ(0) : 0;
	bool		allow_future;
	Oid			ext;
	Oid			idtype;
	int64		bound_ms = sf_floor_bound_ms();
	TimestampTz limit_ts;
	SfAdoptColumn *cols;
	int			ncols;
	List	   *seen = NIL;
	int			checked = 0;
	bool		have_top = false;
	TimestampTz top_ts = 0;
	bool		have_floor;
	TimestampTz floor_ts;
	SfManagedMark managed;

	if (PG_NARGS() < 2 || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("snowflake_adopt_database: allow_future must not be NULL")));
	allow_future = PG_GETARG_BOOL(1);
	ext = getExtensionOfObject(ProcedureRelationId, fcinfo->flinfo->fn_oid);
	if (!OidIsValid(ext))
		elog(ERROR, "snowflake_adopt_database() is not a member of the snowflake extension");

	/*
	 * A floor further ahead of the clock than the lead plus the wait would
	 * make every generating call of the server fail until the clock reaches
	 * it: one far-future value inserted by anyone with INSERT must not do
	 * that.
	 */
	limit_ts = GetCurrentTimestamp() + bound_ms * 1000;

	/* the SQL edition's mark and generators, if it ran here (managed_mark.cpp) */
	sf_managed_mark(limit_ts, bound_ms, allow_future, &managed);
	have_top = managed.have_top;
	top_ts = managed.top_ts;
	idtype = sf_extension_type(ext);
	cols = sf_adopt_columns(ext, idtype, managed.generators, &ncols);
	for (int i = 0; i < ncols; i++)
	{
		char	   *attname = get_attname(cols[i].relid, cols[i].attnum, true);
		int64		m = 0;
		TimestampTz m_ts;

		if (attname == NULL)
			continue;
		switch (sf_column_max(cols[i].relid, attname, idtype, true, &seen, &m))
		{
			case SF_MAX_SKIPPED:
				continue;
			case SF_MAX_NONE:
				checked++;
				continue;
			case SF_MAX_FOUND:
				checked++;
				break;
		}
		/* as snowflake_timestamp(m) decodes it */
		sf_require_layout();
		sf_check_id(m);
		sf_check_id_width(m);
		m_ts = sf_decoded_timestamptz(snowflake::decode(sf_layout, m).unix_ms, m);
		if (m_ts > limit_ts && !allow_future)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("the largest snowflake ID in column \"%s\" of %s is too far ahead of the clock",
							attname, sf_relation_name(cols[i].relid)),
					 errdetail("Its value " INT64_FORMAT " carries %s, %s ahead of the clock; a floor "
							   "more than snowflake.max_clock_lead + snowflake.max_clock_wait ("
							   INT64_FORMAT " ms) ahead would make every generating call on this "
							   "server fail until the clock reaches it. Nothing was changed.",
							   m, sf_timestamptz_text(m_ts), sf_ahead_text(m_ts), bound_ms),
					 errhint("If that row does not hold a real snowflake ID, fix or delete it and run "
							 "snowflake_adopt_database() again; if IDs really were issued that far "
							 "ahead, run snowflake_adopt_database(allow_future => true).")));
		if (!have_top || m_ts > top_ts)
		{
			top_ts = m_ts;
			have_top = true;
		}
	}

	if (has_at_least && at_least > limit_ts && !allow_future)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("snowflake floor %s is too far ahead of the clock",
						sf_timestamptz_text(at_least)),
				 errdetail("It is %s ahead; a floor more than snowflake.max_clock_lead + "
						   "snowflake.max_clock_wait (" INT64_FORMAT " ms) ahead would make every "
						   "generating call on this server fail until the clock reaches it. "
						   "Nothing was changed.",
						   TIMESTAMP_NOT_FINITE(at_least) ? "infinitely" : sf_ahead_text(at_least),
						   bound_ms),
				 errhint("Check the value; if IDs really were issued that far ahead, pass "
						 "allow_future => true.")));
	have_floor = have_top || has_at_least;
	floor_ts = !have_top ? at_least : !has_at_least ? top_ts : std::max(top_ts, at_least);
	if (have_floor)
		sf_raise_floor_to(floor_ts, allow_future);
	sf_record_origin(fcinfo->flinfo->fn_oid);
	ereport(NOTICE,
			(errmsg("snowflake: checked %d column(s); this server now generates above %s",
					checked, have_floor ? sf_timestamptz_text(floor_ts)
					: "the clock (no IDs found)")));
	if (!have_floor)
		PG_RETURN_NULL();
	PG_RETURN_TIMESTAMPTZ(floor_ts);
}
