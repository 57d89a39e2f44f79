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
 * snowflake_adopt_database(), which resumes above its largest ID).
 *
 *-------------------------------------------------------------------------
 */
#include <cstring>

#include "glue.hpp"
#include "statefile.hpp"

extern "C"
{
#include "commands/dbcommands.h"
#include "executor/spi.h"
#include "utils/lsyscache.h"

PG_FUNCTION_INFO_V1(snowflake_raise_floor);
}

static const char *const kLineageName = "lineage";
static const char *const kLineageFile = "pg_snowflake/lineage";

/* Set once this backend's database has passed the check (see glue.hpp). */
bool		sf_origin_checked = false;

/* Whether a lineage covers a system identifier (no lock: read-only after start). */
static bool
sf_lineage_covers(const SnowflakeShared *state, uint64 sysid)
{
	for (int i = 0; i < state->lineage_count; i++)
		if (state->lineage[i] == sysid)
			return true;
	return false;
}

/*
 * At start, in the postmaster: reads pg_snowflake/lineage into "out", and
 * adds this cluster to it (on disk too) unless it is there.  A state
 * directory made before 1.1 has a mark or layout but no lineage: it is taken
 * to be this cluster's.  A file that cannot be read or written refuses the
 * state, as an unreadable mark or layout does.
 */
void
sf_load_lineage(SnowflakeShared *out)
{
	char		buf[4096];
	char		detail[512];
	size_t		len = 0;
	bool		missing;
	uint64		sysid = GetSystemIdentifier();
	snowflake::FileError error = {"", "", 0};
	int			count = 0;

	out->lineage_count = 0;
	if (sf_read_record(out, kLineageFile, "lineage", buf, sizeof(buf), &len, &missing))
	{
		if (!snowflake::parse_lineage_record(buf, len, out->lineage, SF_MAX_LINEAGE, &count))
		{
			snprintf(detail, sizeof(detail), "File \"%s\" is not a valid lineage record",
					 kLineageFile);
			sf_refuse(out, "could not read the recorded snowflake lineage", detail);
			return;
		}
		out->lineage_count = count;
	}
	else if (!missing)
		return;					/* refused by sf_read_record */
	if (sf_lineage_covers(out, sysid))
		return;

	/* keep the newest SF_MAX_LINEAGE - 1 and add this cluster */
	if (out->lineage_count == SF_MAX_LINEAGE)
	{
		memmove(out->lineage, out->lineage + 1, sizeof(uint64) * (SF_MAX_LINEAGE - 1));
		out->lineage_count--;
	}
	out->lineage[out->lineage_count++] = sysid;

	len = (size_t) snowflake::format_lineage_record(out->lineage, out->lineage_count,
												   buf, sizeof(buf));
	if (!snowflake::write_file_durably(kLineageName, buf, len, &error))
	{
		snprintf(detail, sizeof(detail), "Could not %s file \"%s\": %s",
				 error.operation, error.path, strerror(error.err));
		sf_refuse(out, "could not record the snowflake lineage", detail);
	}
}

/*
 * The first generating call of a backend: refuses when this database's
 * snowflake_origin names a cluster the state does not cover.  "fn_oid" is the
 * calling function, whose schema is the extension's.  A database whose
 * extension predates 1.1 has no snowflake_origin and is not checked.
 */
void
sf_check_origin_slow(Oid fn_oid)
{
	Oid			nsp;
	char	   *query;
	uint64		foreign_sysid = 0;
	bool		foreign = false;

	nsp = get_func_namespace(fn_oid);
	if (!OidIsValid(nsp) || !OidIsValid(get_relname_relid("snowflake_origin", nsp)))
	{
		sf_origin_checked = true;
		return;
	}
	query = psprintf("SELECT system_identifier FROM %s.snowflake_origin",
					 quote_identifier(get_namespace_name(nsp)));

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute(query, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read snowflake_origin");
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		Datum		d = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull);
		uint64		sysid = isnull ? 0 : (uint64) DatumGetInt64(d);

		if (!isnull && !sf_lineage_covers(sf_shared, sysid))
		{
			foreign = true;
			foreign_sysid = sysid;
		}
	}
	SPI_finish();

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
 * snowflake_raise_floor(ts): makes every shard of this server resume strictly
 * above the millisecond of ts: the durable mark first (written, fsynced and
 * WAL-logged), then the point shards resume above and every shard in use.
 * Used by snowflake_adopt_database(); superusers only.
 */
extern "C" Datum
snowflake_raise_floor(PG_FUNCTION_ARGS)
{
	TimestampTz ts = PG_GETARG_TIMESTAMPTZ(0);
	int64		pg_ms = ts / 1000 - (ts % 1000 < 0 ? 1 : 0);
	int64		offset = pg_ms + snowflake::kPostgresEpochUnixMs - sf_layout.epoch_ms;

	sf_require_ready();
	if (TIMESTAMP_NOT_FINITE(ts) || offset > sf_layout.max_offset_ms())
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("timestamp out of range for snowflake IDs: \"%s\"",
						timestamptz_to_str(ts))));
	if (offset >= 0)
		sf_raise_floor(offset);
	PG_RETURN_VOID();
}
