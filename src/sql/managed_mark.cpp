/*-------------------------------------------------------------------------
 *
 * managed_mark.cpp
 *		The SQL edition's high-water mark, for snowflake_adopt_database()
 *		(adopt.cpp): a database that ran the SQL edition (managed/) and was
 *		restored into a server with the extension keeps the edition's tables
 *		as ordinary objects; adopt resumes above what they say was issued.
 *
 * The SQL edition keeps one row per shard in snowflake__shard: seq (a
 * sequence whose values are the IDs) and cap (every ID it issued on that
 * shard is below the cap's value); and its layout in snowflake__config.  A
 * dump carries both sequences' positions, so the caps cover IDs the edition
 * issued that no table holds.  Adopt reads:
 *
 *	- every schema's snowflake__shard and snowflake__config with the edition's
 *	  columns and types, both owned by the database owner (or a superuser),
 *	  and only those: any role may create tables of those names in a schema of
 *	  its own; the others are named in a NOTICE and not read;
 *	- the layout (refused unless it is this server's: the edition's IDs would
 *	  decode to other times here);
 *	- each cap (a sequence of that owner; pg_sequence_last_value, no SQL);
 *	- the generators of that schema (snowflake_nextval() and
 *	  snowflake_nextval(integer): functions of that owner returning bigint),
 *	  whose callers in column defaults adopt then
 *	  reads with the extension's own columns (colmax.cpp).
 *
 * Nothing is planned or run: the two tables are read row by row with the
 * catalog scan origin.cpp uses, so none of their owner's index expressions,
 * policies or functions runs as the superuser adopting.  Every cap is bounded
 * as adopt bounds a column's largest value: more than max_clock_lead +
 * max_clock_wait ahead of the clock is refused unless allow_future.
 *
 * The SQL layer: it may call the state layer.
 *
 *-------------------------------------------------------------------------
 */
#include "sql/colmax.hpp"
#include "sql/decode.hpp"
#include "sql/managed_mark.hpp"

extern "C"
{
#include "postgres.h"
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/skey.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/pg_class.h"
#include "catalog/pg_database.h"
#include "catalog/pg_depend.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "catalog/dependency.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/catcache.h"
#include "utils/fmgroids.h"
#include "utils/fmgrprotos.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
}

/* The columns of snowflake__config the layout is read from, in Layout's terms. */
static const char *const sf_config_columns[] = {
	"epoch_ms", "time_unit_ms", "id_bits", "shard_bits", "sequence_bits", "datacenter_bits"
};

/* The owner of relation relid (InvalidOid if none). */
static Oid
sf_rel_owner(Oid relid)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Oid			owner = InvalidOid;

	if (HeapTupleIsValid(tup))
	{
		owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
		ReleaseSysCache(tup);
	}
	return owner;
}

/* Whether objects of role "owner" are trusted: the database owner's, or a superuser's. */
static bool
sf_trusted_owner(Oid owner)
{
	HeapTuple	tup = SearchSysCache1(DATABASEOID, ObjectIdGetDatum(MyDatabaseId));
	Oid			dba;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for database %u", MyDatabaseId);
	dba = ((Form_pg_database) GETSTRUCT(tup))->datdba;
	ReleaseSysCache(tup);
	return OidIsValid(owner) && (owner == dba || superuser_arg(owner));
}

/* Whether relid has a live column "name" of type typid. */
static bool
sf_has_column(Oid relid, const char *name, Oid typid)
{
	AttrNumber	attnum = get_attnum(relid, name);

	return attnum != InvalidAttrNumber && get_atttype(relid, attnum) == typid;
}

/*
 * The SQL edition's snowflake__config beside the snowflake__shard "shard" if
 * both have the edition's shape (ordinary tables, the columns adopt reads,
 * one owner); else InvalidOid.
 */
static Oid
sf_managed_config(Oid shard)
{
	Oid			nsp = get_rel_namespace(shard);
	Oid			config = get_relname_relid("snowflake__config", nsp);

	/*
	 * permanent tables only: another session's temporary table lives in that
	 * session's memory (and is no installation of this database)
	 */
	if (!OidIsValid(config) || get_rel_relkind(shard) != RELKIND_RELATION ||
		get_rel_relkind(config) != RELKIND_RELATION ||
		get_rel_persistence(shard) != RELPERSISTENCE_PERMANENT ||
		get_rel_persistence(config) != RELPERSISTENCE_PERMANENT ||
		sf_rel_owner(config) != sf_rel_owner(shard) ||
		!sf_has_column(shard, "shard_id", INT4OID) ||
		!sf_has_column(shard, "seq", REGCLASSOID) ||
		!sf_has_column(shard, "cap", REGCLASSOID) ||
		!sf_has_column(config, "epoch_ms", INT8OID))
		return InvalidOid;
	for (int i = 1; i < (int) lengthof(sf_config_columns); i++)
		if (!sf_has_column(config, sf_config_columns[i], INT4OID))
			return InvalidOid;
	return config;
}

/* Every table named snowflake__shard, in any schema. */
static List *
sf_shard_tables(void)
{
	Relation	rel = table_open(RelationRelationId, AccessShareLock);
	NameData	name;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	List	   *result = NIL;

	namestrcpy(&name, "snowflake__shard");
	ScanKeyInit(&key, Anum_pg_class_relname, BTEqualStrategyNumber, F_NAMEEQ,
				NameGetDatum(&name));
	scan = systable_beginscan(rel, ClassNameNspIndexId, true, NULL, 1, &key);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
		result = lappend_oid(result, ((Form_pg_class) GETSTRUCT(tup))->oid);
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return result;
}

/*
 * Calls fn on each row of relid the snapshot sees, with the values of
 * columns "names" (nnames of them), without planning anything.
 */
template <typename Fn>
static void
sf_scan_rows(Oid relid, const char *const *names, int nnames, Fn fn)
{
	Relation	rel = table_open(relid, AccessShareLock);
	SysScanDesc scan = systable_beginscan(rel, InvalidOid, false,
										  ActiveSnapshotSet() ? GetActiveSnapshot()
										  : GetTransactionSnapshot(), 0, NULL);
	HeapTuple	tup;
	AttrNumber	attnums[8];
	Datum		values[8];
	bool		nulls[8];

	Assert(nnames <= 8);
	for (int i = 0; i < nnames; i++)
		attnums[i] = get_attnum(relid, names[i]);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		CHECK_FOR_INTERRUPTS();
		for (int i = 0; i < nnames; i++)
			values[i] = heap_getattr(tup, attnums[i], RelationGetDescr(rel), &nulls[i]);
		fn(values, nulls);
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
}

/* Errors out unless the SQL edition's layout in "config" is this server's. */
static void
sf_check_managed_layout(Oid config)
{
	bool		found = false;
	int64		v[6] = {0, 0, 0, 0, 0, 0};
	const snowflake::Layout &l = sf_layout;

	sf_scan_rows(config, sf_config_columns, 6, [&](Datum *values, bool *nulls) {
		for (int i = 0; i < 6; i++)
			v[i] = nulls[i] ? -1 : i == 0 ? DatumGetInt64(values[i]) : DatumGetInt32(values[i]);
		found = true;
	});
	if (!found)
		return;
	if (v[0] != l.epoch_ms || v[1] != l.unit_ms || v[2] != l.id_bits || v[3] != l.shard_bits ||
		v[4] != l.sequence_bits || v[5] != l.datacenter_bits)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the SQL edition in schema \"%s\" used another snowflake layout than this server",
						get_namespace_name(get_rel_namespace(config))),
				 errdetail("Its layout: epoch " INT64_FORMAT " ms, time unit " INT64_FORMAT
						   " ms, id_bits " INT64_FORMAT ", shard_bits " INT64_FORMAT
						   ", sequence_bits " INT64_FORMAT ", datacenter_bits " INT64_FORMAT
						   "; this server's: epoch " INT64_FORMAT " ms, time unit " INT64_FORMAT
						   " ms, id_bits %d, shard_bits %d, sequence_bits %d, datacenter_bits %d. "
						   "Its IDs would decode to other times here. Nothing was changed.",
						   v[0], v[1], v[2], v[3], v[4], v[5], (int64) l.epoch_ms,
						   (int64) l.unit_ms, l.id_bits, l.shard_bits, l.sequence_bits,
						   l.datacenter_bits),
				 errhint("Set this server's snowflake.epoch, snowflake.time_unit and widths to the "
						 "SQL edition's layout (docs/moving.md), restart, and adopt again. If that "
						 "schema's IDs are not this database's, drop the SQL edition there.")));
}

/* The last value of sequence seq (false: never set), as pg_sequence_last_value() gives it. */
static bool
sf_sequence_last_value(Oid seq, int64 *value)
{
	LOCAL_FCINFO(fcinfo, 1);
	Datum		d;

	InitFunctionCallInfoData(*fcinfo, NULL, 1, InvalidOid, NULL, NULL);
	fcinfo->args[0].value = ObjectIdGetDatum(seq);
	fcinfo->args[0].isnull = false;
	d = pg_sequence_last_value(fcinfo);
	if (fcinfo->isnull)
		return false;
	*value = DatumGetInt64(d);
	return true;
}

/*
 * The time of the largest ID below the caps of "shard" (a trusted
 * snowflake__shard, its layout in "config"), bounded by limit_ts unless
 * allow_future; false if no cap was ever set (no ID issued: then its layout
 * does not matter).
 */
static bool
sf_managed_caps(Oid shard, Oid config, TimestampTz limit_ts, int64 bound_ms, bool allow_future,
				TimestampTz *top_ts)
{
	static const char *const cols[] = {"cap"};
	Oid			owner = sf_rel_owner(shard);
	List	   *caps = NIL;
	ListCell   *lc;
	bool		found = false;

	sf_scan_rows(shard, cols, 1, [&](Datum *values, bool *nulls) {
		if (!nulls[0])
			caps = lappend_oid(caps, DatumGetObjectId(values[0]));
	});
	foreach(lc, caps)
	{
		Oid			cap = lfirst_oid(lc);
		int64		c = 0;
		int64		id;
		TimestampTz ts;

		/* the edition's own sequence: of the tables' owner */
		if (get_rel_relkind(cap) != RELKIND_SEQUENCE || sf_rel_owner(cap) != owner ||
			get_rel_persistence(cap) != RELPERSISTENCE_PERMANENT ||
			!sf_sequence_last_value(cap, &c) || c <= 0)
			continue;
		/* IDs were issued: they must decode here as they did there */
		if (!found)
			sf_check_managed_layout(config);
		id = c - 1;				/* every ID issued below the cap */
		if (id > sf_layout.max_id())
			id = sf_layout.max_id();
		ts = sf_decoded_timestamptz(snowflake::decode(sf_layout, id).unix_ms, id);
		if (ts > limit_ts && !allow_future)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("the SQL edition's high-water mark in %s is too far ahead of the clock",
							sf_relation_name(cap)),
					 errdetail("Its value " INT64_FORMAT " covers IDs up to %s; a floor more than "
							   "snowflake.max_clock_lead + snowflake.max_clock_wait (" INT64_FORMAT
							   " ms) ahead would make every generating call on this server fail "
							   "until the clock reaches it. Nothing was changed.",
							   c, DatumGetCString(DirectFunctionCall1(timestamptz_out,
																	  TimestampTzGetDatum(ts))),
							   bound_ms),
					 errhint("If IDs really were issued that far ahead, run "
							 "snowflake_adopt_database(allow_future => true).")));
		if (!found || ts > *top_ts)
			*top_ts = ts;
		found = true;
	}
	list_free(caps);
	return found;
}

/*
 * The SQL edition's generators in schema nsp: snowflake_nextval() and
 * snowflake_nextval(integer) of that owner, returning bigint (also when they
 * are members of a pg_tle extension).
 */
static List *
sf_managed_generators(Oid nsp, Oid owner, List *result)
{
	CatCList   *procs = SearchSysCacheList1(PROCNAMEARGSNSP, CStringGetDatum("snowflake_nextval"));

	for (int i = 0; i < procs->n_members; i++)
	{
		HeapTuple	tup = &procs->members[i]->tuple;
		Form_pg_proc p = (Form_pg_proc) GETSTRUCT(tup);

		if (p->pronamespace == nsp && p->proowner == owner && p->prorettype == INT8OID)
			result = lappend_oid(result, p->oid);
	}
	ReleaseSysCacheList(procs);
	return result;
}

void
sf_managed_mark(TimestampTz limit_ts, int64 bound_ms, bool allow_future, SfManagedMark *mark)
{
	List	   *shards = sf_shard_tables();
	ListCell   *lc;

	mark->generators = NIL;
	mark->have_top = false;
	mark->top_ts = 0;
	foreach(lc, shards)
	{
		Oid			shard = lfirst_oid(lc);
		Oid			config = sf_managed_config(shard);
		TimestampTz ts = 0;

		if (!OidIsValid(config))
			continue;
		if (!sf_trusted_owner(sf_rel_owner(shard)))
		{
			ereport(NOTICE,
					(errmsg("snowflake: skipped %s: not owned by the database owner",
							quote_qualified_identifier(get_namespace_name(get_rel_namespace(shard)),
													   "snowflake__shard")),
					 errdetail("Only the SQL edition installed by the database owner (or a "
							   "superuser) is read; any role may create tables of that name.")));
			continue;
		}
		sf_require_ready();
		if (sf_managed_caps(shard, config, limit_ts, bound_ms, allow_future, &ts) &&
			(!mark->have_top || ts > mark->top_ts))
		{
			mark->top_ts = ts;
			mark->have_top = true;
		}
		mark->generators = sf_managed_generators(get_rel_namespace(shard), sf_rel_owner(shard),
												 mark->generators);
		ereport(NOTICE,
				(errmsg("snowflake: read the SQL edition's high-water mark in schema \"%s\"",
						get_namespace_name(get_rel_namespace(shard)))));
	}
	list_free(shards);
}
