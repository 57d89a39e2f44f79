/*-------------------------------------------------------------------------
 *
 * colmax.cpp
 *		The largest value of a bigint column, read without planning or
 *		running anything over the table: for snowflake_adopt_database()
 *		(adopt.cpp) and snowflake_convert_column() (through
 *		snowflake_column_max()).
 *
 * "SELECT max(id) FROM t" looks harmless, but planning it evaluates t's index
 * expressions and partial-index predicates: an IMMUTABLE function there that
 * calls a VOLATILE one runs as whoever plans the query, and both functions
 * above run as a superuser over tables other roles own (issue 25).  So the
 * maximum is read here directly, as origin.cpp reads snowflake_origin:
 *
 *	- from a btree whose first key column is exactly that column (a plain
 *	  column: no expression, no predicate) with the built-in integer_ops
 *	  operator family, whose support functions are PostgreSQL's own C and
 *	  which only a superuser may change: read from its high end, skipping
 *	  NULLs and index entries whose rows the snapshot does not see, as the
 *	  planner's own max() over an index does; or, without such a btree,
 *	- from the table itself, every row the snapshot sees.
 *
 * A partitioned table or a parent of inheritance is read through every table
 * under it.  Two kinds cannot be read so, and are refused, or skipped with a
 * NOTICE by adopt (which reads every table of the database):
 *
 *	- another session's temporary table: its pages live in that session's
 *	  memory, and its rows (and their IDs) end with that session.  It is
 *	  recognised from the catalog and never locked or opened;
 *	- a foreign table: reading it runs its foreign data wrapper as the
 *	  caller, with the caller's user mapping, against a server that the
 *	  table's owner chose.
 *
 * The SQL layer: it calls nothing of ours.
 *
 *-------------------------------------------------------------------------
 */
#include "sql/colmax.hpp"

extern "C"
{
#include "postgres.h"
#include "access/attnum.h"
#include "access/genam.h"
#include "access/htup.h"
#include "access/htup_details.h"
#include "access/nbtree.h"
#include "access/relation.h"
#include "access/relscan.h"
#include "access/sdir.h"
#include "access/skey.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "catalog/dependency.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_am_d.h"
#include "catalog/pg_class.h"
#include "catalog/pg_depend.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_index.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_opfamily.h"
#include "catalog/pg_opfamily_d.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/snapmgr.h"
#include "utils/snapshot.h"
#include "utils/syscache.h"
}

extern "C"
{
PG_FUNCTION_INFO_V1(snowflake_column_max);
}

/* One table read (or skipped) already, so that adopt reads each once. */
struct SfLeafSeen
{
	Oid			relid;
	AttrNumber	attnum;
	SfColumnMax result;
	int64		max;
};

/* The relation's schema-qualified, quoted name, for messages. */
char *
sf_relation_name(Oid relid)
{
	char	   *name = get_rel_name(relid);
	char	   *nsp = get_namespace_name(get_rel_namespace(relid));

	if (name == NULL || nsp == NULL)
		return psprintf("with OID %u", relid);
	return quote_qualified_identifier(nsp, name);
}

/* Whether relid is a temporary table of another session (from the catalog). */
static bool
sf_other_sessions_temp(Oid relid)
{
	return get_rel_persistence(relid) == RELPERSISTENCE_TEMP &&
		!isTempOrTempToastNamespace(get_rel_namespace(relid));
}

/* The objects of class "classid" that depend on (refclassid, refobjid). */
List *
sf_dependents(Oid refclassid, Oid refobjid, Oid classid, char deptype)
{
	Relation	depend = table_open(DependRelationId, AccessShareLock);
	ScanKeyData key[2];
	SysScanDesc scan;
	HeapTuple	tup;
	List	   *result = NIL;

	ScanKeyInit(&key[0], Anum_pg_depend_refclassid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(refclassid));
	ScanKeyInit(&key[1], Anum_pg_depend_refobjid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(refobjid));
	scan = systable_beginscan(depend, DependReferenceIndexId, true, NULL, 2, key);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Form_pg_depend dep = (Form_pg_depend) GETSTRUCT(tup);

		if (dep->classid == classid && (deptype == 0 || dep->deptype == deptype))
			result = lappend_oid(result, dep->objid);
	}
	systable_endscan(scan);
	table_close(depend, AccessShareLock);
	return result;
}

/*
 * The extension's own type snowflake (1.3): its one base type member, found
 * by membership (pg_depend), never by name; InvalidOid before 1.3.
 */
Oid
sf_extension_type(Oid ext)
{
	List	   *types = OidIsValid(ext) ?
		sf_dependents(ExtensionRelationId, ext, TypeRelationId, DEPENDENCY_EXTENSION) : NIL;
	ListCell   *lc;
	Oid			result = InvalidOid;

	foreach(lc, types)
		if (get_typtype(lfirst_oid(lc)) == TYPTYPE_BASE && get_typlen(lfirst_oid(lc)) == 8)
			result = lfirst_oid(lc);
	list_free(types);
	return result;
}

/* Whether a column of type typid holds IDs: bigint, or the snowflake type. */
bool
sf_id_type(Oid typid, Oid idtype)
{
	return typid == INT8OID || (OidIsValid(idtype) && typid == idtype);
}

/*
 * Whether "index" orders exactly column attnum of bigints with PostgreSQL's
 * own comparison, and in which direction its largest values come first.
 */
static bool
sf_plain_int8_btree(Relation index, AttrNumber attnum, Oid idtype, ScanDirection *dir)
{
	Form_pg_index ix = index->rd_index;
	/* int8's own order, or the snowflake type's, whose order is btint8cmp */
	bool		int8_order = index->rd_rel->relam == BTREE_AM_OID &&
		((index->rd_opfamily[0] == INTEGER_BTREE_FAM_OID && index->rd_opcintype[0] == INT8OID) ||
		 (OidIsValid(idtype) && index->rd_opcintype[0] == idtype &&
		  get_opfamily_proc(index->rd_opfamily[0], idtype, idtype, BTORDER_PROC) == F_BTINT8CMP));

	if (index->rd_rel->relkind != RELKIND_INDEX || index->rd_rel->relam != BTREE_AM_OID ||
		!ix->indisvalid || ix->indcheckxmin || ix->indnkeyatts < 1 ||
		ix->indkey.values[0] != attnum ||
		!heap_attisnull(index->rd_indextuple, Anum_pg_index_indexprs, NULL) ||
		!heap_attisnull(index->rd_indextuple, Anum_pg_index_indpred, NULL) ||
		!int8_order)
		return false;
	*dir = (index->rd_indoption[0] & INDOPTION_DESC) ? ForwardScanDirection
		: BackwardScanDirection;
	return true;
}

/*
 * The largest value of column attnum of "rel" through a plain btree on it;
 * false when the table has none (nothing was read).
 */
static bool
sf_max_by_btree(Relation rel, AttrNumber attnum, Oid idtype, Snapshot snapshot,
				SfColumnMax *result, int64 *max)
{
	List	   *indexes = RelationGetIndexList(rel);
	ListCell   *lc;
	bool		done = false;

	foreach(lc, indexes)
	{
		Relation	index = index_open(lfirst_oid(lc), AccessShareLock);
		ScanDirection dir;

		if (sf_plain_int8_btree(index, attnum, idtype, &dir))
		{
			ScanKeyData key;
			SysScanDesc scan;
			HeapTuple	tup;

			/* attnum IS NOT NULL: no operator, no function */
			ScanKeyEntryInitialize(&key, SK_ISNULL | SK_SEARCHNOTNULL, attnum,
								   InvalidStrategy, InvalidOid, InvalidOid, InvalidOid,
								   (Datum) 0);
			scan = systable_beginscan_ordered(rel, index, snapshot, 1, &key);
			tup = systable_getnext_ordered(scan, dir);
			*result = SF_MAX_NONE;
			if (HeapTupleIsValid(tup))
			{
				bool		isnull;
				Datum		d = heap_getattr(tup, attnum, RelationGetDescr(rel), &isnull);

				if (!isnull)
				{
					*max = DatumGetInt64(d);
					*result = SF_MAX_FOUND;
				}
			}
			systable_endscan_ordered(scan);
			done = true;
		}
		index_close(index, AccessShareLock);
		if (done)
			break;
	}
	list_free(indexes);
	return done;
}

/* The largest value of column attnum of "rel", from every row the snapshot sees. */
static SfColumnMax
sf_max_by_heap(Relation rel, AttrNumber attnum, Snapshot snapshot, int64 *max)
{
	SysScanDesc scan = systable_beginscan(rel, InvalidOid, false, snapshot, 0, NULL);
	HeapTuple	tup;
	SfColumnMax result = SF_MAX_NONE;

	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		bool		isnull;
		Datum		d = heap_getattr(tup, attnum, RelationGetDescr(rel), &isnull);

		CHECK_FOR_INTERRUPTS();
		if (isnull)
			continue;
		if (result == SF_MAX_NONE || DatumGetInt64(d) > *max)
			*max = DatumGetInt64(d);
		result = SF_MAX_FOUND;
	}
	systable_endscan(scan);
	return result;
}

/*
 * Refuses a table that cannot be read without running code or reaching into
 * another session, or (adopting) says that it is skipped.
 */
static void
sf_unreadable(Oid relid, bool adopting, bool foreign)
{
	char	   *name = sf_relation_name(relid);

	if (foreign)
		ereport(adopting ? NOTICE : ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 adopting ? errmsg("snowflake: skipped foreign table %s", name)
				 : errmsg("cannot read foreign table %s", name),
				 errdetail("Reading it would run its foreign data wrapper as you, against a "
						   "server its owner chose."),
				 adopting ? errhint("If it holds snowflake IDs, pass a time past the largest "
									"of them: snowflake_adopt_database(at_least => ...).")
				 : errhint("Check that its values are below snowflake_min_id(now()), detach "
						   "it, convert the column, and attach it again.")));
	else
		ereport(adopting ? NOTICE : ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 adopting ? errmsg("snowflake: skipped temporary table %s of another session", name)
				 : errmsg("cannot read temporary table %s of another session", name),
				 errdetail("Its rows can be read only by that session, and they go when it "
						   "ends.")));
}

/*
 * The largest value of one table's column "attname", locked here
 * (AccessShareLock) and read as the file's header says; SF_MAX_SKIPPED when
 * adopting and it cannot be read, or it was dropped meanwhile.
 */
static SfColumnMax
sf_leaf_max(Oid relid, const char *attname, Oid idtype, bool adopting, int64 *max)
{
	char		relkind;
	AttrNumber	attnum;
	Relation	rel;
	Snapshot	snapshot;
	SfColumnMax result;

	if (sf_other_sessions_temp(relid))
	{
		sf_unreadable(relid, adopting, false);
		return SF_MAX_SKIPPED;
	}
	LockRelationOid(relid, AccessShareLock);
	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid)))
	{
		UnlockRelationOid(relid, AccessShareLock);
		return SF_MAX_SKIPPED;
	}
	relkind = get_rel_relkind(relid);
	if (relkind == RELKIND_FOREIGN_TABLE)
	{
		sf_unreadable(relid, adopting, true);
		return SF_MAX_SKIPPED;
	}
	/* a partitioned table has no rows of its own; nothing else has rows */
	if (relkind != RELKIND_RELATION)
		return SF_MAX_NONE;
	attnum = get_attnum(relid, attname);
	if (attnum == InvalidAttrNumber)
		return SF_MAX_NONE;
	if (!sf_id_type(get_atttype(relid, attnum), idtype))
		elog(ERROR, "column \"%s\" of %s is not a bigint", attname, sf_relation_name(relid));

	rel = table_open(relid, NoLock);
	snapshot = ActiveSnapshotSet() ? GetActiveSnapshot() : GetTransactionSnapshot();
	if (!sf_max_by_btree(rel, attnum, idtype, snapshot, &result, max))
		result = sf_max_by_heap(rel, attnum, snapshot, max);
	table_close(rel, NoLock);
	return result;
}

/*
 * The largest value of the bigint column "attname" of relid and of every
 * table under it (partitions, inheritance children).  adopting: what cannot
 * be read is skipped with a NOTICE, otherwise refused.  "seen" (or NULL)
 * remembers the tables read so far, so that a partition whose own default
 * also matched is read and reported once.
 */
SfColumnMax
sf_column_max(Oid relid, const char *attname, Oid idtype, bool adopting, List **seen, int64 *max)
{
	List	   *rels;
	ListCell   *lc;
	bool		read = false;
	bool		found = false;

	/* the top first: another session's temporary table is not even locked */
	if (sf_other_sessions_temp(relid))
	{
		sf_unreadable(relid, adopting, false);
		return SF_MAX_SKIPPED;
	}
	LockRelationOid(relid, AccessShareLock);
	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid)))
		return SF_MAX_SKIPPED;
	/* each table under it is locked (or skipped) one by one, below */
	rels = find_all_inheritors(relid, NoLock, NULL);
	foreach(lc, rels)
	{
		Oid			leaf = lfirst_oid(lc);
		AttrNumber	attnum = get_attnum(leaf, attname);
		SfLeafSeen *entry = NULL;
		ListCell   *sc;
		int64		leaf_max = 0;
		SfColumnMax leaf_result;

		if (seen != NULL)
			foreach(sc, *seen)
			{
				SfLeafSeen *s = (SfLeafSeen *) lfirst(sc);

				if (s->relid == leaf && s->attnum == attnum)
					entry = s;
			}
		if (entry != NULL)
		{
			leaf_result = entry->result;
			leaf_max = entry->max;
		}
		else
		{
			leaf_result = sf_leaf_max(leaf, attname, idtype, adopting, &leaf_max);
			if (seen != NULL)
			{
				entry = (SfLeafSeen *) palloc(sizeof(SfLeafSeen));
				entry->relid = leaf;
				entry->attnum = attnum;
				entry->result = leaf_result;
				entry->max = leaf_max;
				*seen = lappend(*seen, entry);
			}
		}
		if (leaf_result == SF_MAX_SKIPPED)
			continue;
		read = true;
		if (leaf_result == SF_MAX_FOUND && (!found || leaf_max > *max))
		{
			*max = leaf_max;
			found = true;
		}
	}
	list_free(rels);
	return found ? SF_MAX_FOUND : read ? SF_MAX_NONE : SF_MAX_SKIPPED;
}

/*
 * snowflake_column_max(tbl, col): the largest value of the bigint column col
 * of tbl and every table under it, or NULL, read as this file's header says;
 * for snowflake_convert_column(), which runs as its caller.  Only the table's
 * owner (or a member of that role) may read it: the read passes by the
 * table's privileges and row-level security as an owner's does.
 */
extern "C" Datum
snowflake_column_max(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	Name		col = PG_GETARG_NAME(1);
	HeapTuple	tup;
	Oid			owner;
	char		relkind;
	AttrNumber	attnum;
	Oid			idtype;
	int64		max = 0;

	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tup))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
	relkind = ((Form_pg_class) GETSTRUCT(tup))->relkind;
	ReleaseSysCache(tup);
	if (!has_privs_of_role(GetUserId(), owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of table %s", sf_relation_name(relid))));
	if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE &&
		relkind != RELKIND_FOREIGN_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a table", sf_relation_name(relid))));
	attnum = get_attnum(relid, NameStr(*col));
	if (attnum <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" of relation %s does not exist", NameStr(*col),
						sf_relation_name(relid))));
	idtype = sf_extension_type(getExtensionOfObject(ProcedureRelationId, fcinfo->flinfo->fn_oid));
	if (!sf_id_type(get_atttype(relid, attnum), idtype))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("column \"%s\" of %s is not bigint or snowflake", NameStr(*col),
						sf_relation_name(relid))));
	if (sf_column_max(relid, NameStr(*col), idtype, false, NULL, &max) != SF_MAX_FOUND)
		PG_RETURN_NULL();
	PG_RETURN_INT64(max);
}
