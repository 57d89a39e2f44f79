/*-------------------------------------------------------------------------
 *
 * origin.cpp
 *		Where a database's IDs came from: the guard against moving a database
 *		to another cluster (pg_upgrade, a file-level copy) without the
 *		snowflake state that bounds the IDs issued there.
 *
 * pg_upgrade carries relation files, not pg_snowflake/.  A cluster upgraded
 * without it would start with no durable mark, and if the old cluster's IDs
 * ran ahead of the new one's clock (a clock that was ahead, or a burst within
 * max_clock_lead), new IDs would repeat old ones.  Two records close that:
 *
 *	- each database that has the extension holds snowflake_origin, a table
 *	  whose one row is the system identifier of the cluster where the
 *	  extension was created (CREATE EXTENSION or the update to 1.1).
 *	  pg_upgrade copies it with the other relation files;
 *	- pg_snowflake/lineage lists the system identifiers of the clusters whose
 *	  IDs this server's durable mark covers: the cluster that made the state,
 *	  and every cluster the directory was carried to since (each start adds
 *	  its own).
 *
 * The first generating call of each backend compares the two: a database
 * from a cluster this state does not cover is refused, with what to do (copy
 * pg_snowflake/ from the old data directory, or adopt the database with
 * snowflake_adopt_database() (adopt.cpp), which resumes above its largest
 * ID through sf_raise_floor_to(), here).  The lineage is read and extended at
 * start by datadir.cpp.
 *
 * The SQL layer: it may call the state layer (datadir.cpp for the lineage,
 * mark.cpp to raise the floor).
 *
 *-------------------------------------------------------------------------
 */
#include <cstring>

#include "state/mark.hpp"
#include "sql/origin.hpp"
#include "state/datadir.hpp"

extern "C"
{
#include "postgres.h"
#include "access/genam.h"
#include "access/htup.h"
#include "access/htup_details.h"
#include "access/skey.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tupdesc.h"
#include "catalog/dependency.h"
#include "catalog/indexing.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_class.h"
#include "catalog/pg_depend.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
}

extern "C"
{
PG_FUNCTION_INFO_V1(snowflake_raise_floor);
}

/* Set once this backend's database has passed the check (see origin.hpp). */
bool		sf_origin_checked = false;

/*
 * The snowflake_origin table of the extension that "fn_oid" belongs to, found
 * through pg_depend (a member of the extension, deptype 'e', a plain table of
 * that name), never through a name lookup in a schema: any role that may
 * create objects in the extension's schema could otherwise plant a view or a
 * function there that the caller would run.  InvalidOid when the extension
 * has no such member (version 1.0, before the update to 1.1).
 */
Oid
sf_origin_table(Oid fn_oid)
{
	Oid			ext = getExtensionOfObject(ProcedureRelationId, fn_oid);
	Oid			found = InvalidOid;
	Relation	depend;
	ScanKeyData key[3];
	SysScanDesc scan;
	HeapTuple	tup;

	if (!OidIsValid(ext))
		return InvalidOid;
	depend = table_open(DependRelationId, AccessShareLock);
	ScanKeyInit(&key[0], Anum_pg_depend_refclassid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(ExtensionRelationId));
	ScanKeyInit(&key[1], Anum_pg_depend_refobjid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(ext));
	ScanKeyInit(&key[2], Anum_pg_depend_refobjsubid, BTEqualStrategyNumber, F_INT4EQ,
				Int32GetDatum(0));
	scan = systable_beginscan(depend, DependReferenceIndexId, true, NULL, 3, key);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Form_pg_depend dep = (Form_pg_depend) GETSTRUCT(tup);
		char	   *name;

		if (dep->classid != RelationRelationId || dep->deptype != DEPENDENCY_EXTENSION ||
			get_rel_relkind(dep->objid) != RELKIND_RELATION)
			continue;
		name = get_rel_name(dep->objid);
		if (name != NULL && strcmp(name, "snowflake_origin") == 0)
			found = dep->objid;
	}
	systable_endscan(scan);
	table_close(depend, AccessShareLock);
	return found;
}

/*
 * The first generating call of a backend: refuses when this database's
 * snowflake_origin names a cluster the state does not cover.  "fn_oid" is the
 * calling function, a member of the extension.  The table is read directly
 * (a heap scan under the current snapshot), with no SQL and nothing run as
 * the caller.  A database whose extension predates 1.1 has no
 * snowflake_origin and is not checked.
 */
void
sf_check_origin_slow(Oid fn_oid)
{
	Oid			relid = sf_origin_table(fn_oid);
	Relation	rel;
	SysScanDesc scan;
	HeapTuple	tup;
	uint64		foreign_sysid = 0;
	bool		foreign = false;

	if (!OidIsValid(relid))
	{
		sf_origin_checked = true;
		return;
	}
	rel = table_open(relid, AccessShareLock);
	if (RelationGetDescr(rel)->natts < 1 ||
		TupleDescAttr(RelationGetDescr(rel), 0)->atttypid != INT8OID)
		elog(ERROR, "snowflake_origin does not have the shape the extension created");
	scan = systable_beginscan(rel, InvalidOid, false,
							  ActiveSnapshotSet() ? GetActiveSnapshot() : GetTransactionSnapshot(),
							  0, NULL);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		bool		isnull;
		Datum		d = heap_getattr(tup, 1, RelationGetDescr(rel), &isnull);
		uint64		sysid = isnull ? 0 : (uint64) DatumGetInt64(d);

		if (!isnull && !sf_lineage_covers(sf_shared, sysid))
		{
			foreign = true;
			foreign_sysid = sysid;
		}
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);

	if (foreign)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("database \"%s\" comes from another cluster, whose snowflake state "
						"is not here", get_database_name(MyDatabaseId)),
				 errdetail("Its snowflake extension was created on the cluster with system "
						   "identifier " UINT64_FORMAT ", and this server's pg_snowflake/ does "
						   "not cover the IDs issued there: pg_upgrade and file-level copies "
						   "carry tables, not pg_snowflake/. New IDs could repeat old ones.",
						   foreign_sysid),
				 errhint("After pg_upgrade: stop this server, copy pg_snowflake/ from the old "
						 "data directory into the new one, and start it again. If the old "
						 "state is lost, a superuser can run SELECT snowflake_adopt_database(); "
						 "in this database to resume above its largest snowflake ID.")));
	sf_origin_checked = true;
}

/*
 * Makes every shard of this server resume strictly above the millisecond of
 * ts: the durable mark first (written, fsynced and WAL-logged), then the
 * point shards resume above and every shard in use.  A floor further ahead of
 * the clock than sf_floor_bound_ms() would stop generation until the clock
 * reaches it, so it is refused unless allow_future is true.
 */
void
sf_raise_floor_to(TimestampTz ts, bool allow_future)
{
	int64		pg_ms = ts / 1000 - (ts % 1000 < 0 ? 1 : 0);
	int64		unix_ms = pg_ms + snowflake::kPostgresEpochUnixMs;
	int64		offset = sf_layout.offset_of(unix_ms);
	int64		now_ms = sf_wall_ms();

	sf_require_generation_ready();
	if (TIMESTAMP_NOT_FINITE(ts) || offset > sf_layout.max_offset())
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("timestamp out of range for snowflake IDs: \"%s\"",
						timestamptz_to_str(ts))));
	if (unix_ms > now_ms + sf_floor_bound_ms() && !allow_future)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("snowflake floor %s is too far ahead of the clock", timestamptz_to_str(ts)),
				 errdetail("It is " INT64_FORMAT " ms ahead; a floor more than "
						   "snowflake.max_clock_lead + snowflake.max_clock_wait (" INT64_FORMAT
						   " ms) ahead would make every generating call on this server fail "
						   "until the clock reaches it.", unix_ms - now_ms, sf_floor_bound_ms()),
				 errhint("Check the value and the server's clock. If IDs really were issued "
						 "that far ahead, pass allow_future => true.")));
	if (offset >= 0)
		sf_raise_floor(offset);
}

/*
 * snowflake_raise_floor(ts [, allow_future]): sf_raise_floor_to() from SQL.
 * Used by snowflake_adopt_database() before 1.3 (it calls sf_raise_floor_to()
 * directly since); superusers only.
 */
extern "C" Datum
snowflake_raise_floor(PG_FUNCTION_ARGS)
{
	sf_raise_floor_to(PG_GETARG_TIMESTAMPTZ(0),
					  PG_NARGS() > 1 && !PG_ARGISNULL(1) && PG_GETARG_BOOL(1));
	PG_RETURN_VOID();
}
