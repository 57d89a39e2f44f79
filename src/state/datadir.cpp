/*-------------------------------------------------------------------------
 *
 * datadir.cpp
 *		The records in pg_snowflake/: reading them at start into the shared
 *		state (with the refusals a damaged or foreign record causes), the
 *		lineage this server adds itself to, writing the mark file, and the
 *		level and wording of file errors.  See datadir.hpp.
 *
 * Refusals.  A layout that differs from the running one, or cannot be read,
 * refuses decoding and generation (IDs would decode wrongly); a mark or
 * lineage that cannot be read, or a mark the layout cannot represent,
 * refuses generation only.
 *
 *-------------------------------------------------------------------------
 */
#include <cerrno>
#include <cstring>

#include "state/datadir.hpp"

extern "C"
{
#include "postgres.h"
#include "access/xlog.h"
#include "port/atomics.h"
#include "storage/fd.h"
}

static const char *const kMarkName = "mark";
static const char *const kMarkFile = "pg_snowflake/mark";
static const char *const kLineageName = "lineage";
static const char *const kLineageFile = "pg_snowflake/lineage";

/*
 * How far ahead of the clock a floor that comes from data or from outside
 * (snowflake_raise_floor(), snowflake_adopt_database(), a mark in the
 * registry) may lie: the lead IDs may take plus the longest a call may wait.
 * Within it generation goes on (at worst a call waits); beyond it every
 * generating call would fail until the clock reaches the floor, so such a
 * floor is refused unless the operator says it is real.
 */
int64
sf_floor_bound_ms(void)
{
	return (int64) sf_max_clock_lead + sf_max_clock_wait;
}

/* Marks the layout or the state as refused, keeping the first reason found. */
void
sf_refuse(SnowflakeShared *out, SfRefusal kind, const char *message, const char *detail)
{
	bool		layout = kind == SF_REFUSE_LAYOUT;

	if (layout ? out->refused : out->state_refused)
		return;
	strlcpy(layout ? out->refusal_message : out->state_message, message,
			sizeof(out->refusal_message));
	strlcpy(layout ? out->refusal_detail : out->state_detail, detail,
			sizeof(out->refusal_detail));
	/* readers see the flag only after the text (sf_require_ready) */
	pg_write_barrier();
	if (layout)
		out->refused = true;
	else
		out->state_refused = true;
	/* a refusal in force (WAL replay): calls that passed the checks check again */
	if (out == sf_shared)
		sf_invalidate_ready();
}

/* Reads a small record file; Missing is not an error, the rest refuse. */
bool
sf_read_record(SnowflakeShared *out, SfRefusal kind, const char *path, const char *what,
			   char *buf, size_t buflen, size_t *len, bool *missing)
{
	snowflake::FileError error = {"", "", 0};
	char		message[128];
	char		detail[512];

	*missing = false;
	snprintf(message, sizeof(message), "could not read the recorded snowflake %s", what);
	switch (snowflake::read_small_file(path, buf, buflen, len, &error))
	{
		case snowflake::ReadResult::Ok:
			return true;
		case snowflake::ReadResult::Missing:
			*missing = true;
			return false;
		case snowflake::ReadResult::Failed:
			snprintf(detail, sizeof(detail), "Could not %s file \"%s\": %s",
					 error.operation, error.path, strerror(error.err));
			break;
		case snowflake::ReadResult::TooLarge:
			snprintf(detail, sizeof(detail), "File \"%s\" is too large to be a %s record",
					 path, what);
			break;
	}
	sf_refuse(out, kind, message, detail);
	return false;
}

/* Whether a lineage covers a system identifier (no lock: read-only after start). */
bool
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
	if (sf_read_record(out, SF_REFUSE_STATE, kLineageFile, "lineage", buf, sizeof(buf), &len,
					   &missing))
	{
		if (!snowflake::parse_lineage_record(buf, len, out->lineage, SF_MAX_LINEAGE, &count))
		{
			snprintf(detail, sizeof(detail), "File \"%s\" is not a valid lineage record",
					 kLineageFile);
			sf_refuse(out, SF_REFUSE_STATE, "could not read the recorded snowflake lineage", detail);
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
		sf_refuse(out, SF_REFUSE_STATE, "could not record the snowflake lineage", detail);
	}
}

/*
 * Compares pg_snowflake/layout, if present, with the running layout, and
 * resumes the generator above pg_snowflake/mark, if present.
 */
void
sf_load_recorded_state(SnowflakeShared *out)
{
	char		buf[1024];
	char		detail[512];
	size_t		len = 0;
	bool		missing;
	snowflake::Layout recorded;
	int64		mark;

	if (sf_read_record(out, SF_REFUSE_LAYOUT, snowflake::kLayoutFile, "ID layout", buf,
					   sizeof(buf), &len, &missing))
	{
		if (!snowflake::parse_layout_record(buf, len, &recorded))
		{
			snprintf(detail, sizeof(detail), "File \"%s\" is not a valid layout record",
					 snowflake::kLayoutFile);
			sf_refuse(out, SF_REFUSE_LAYOUT, "could not read the recorded snowflake ID layout",
					  detail);
		}
		else if (recorded != sf_layout)
		{
			snowflake::describe_layout_change(recorded, sf_layout, detail, sizeof(detail));
			sf_refuse(out, SF_REFUSE_LAYOUT, "the snowflake ID layout differs from the one this "
					  "data directory generated with", detail);
		}
		else
			pg_atomic_init_u32(&out->layout_recorded, 1);
	}

	sf_load_lineage(out);

	if (sf_read_record(out, SF_REFUSE_STATE, kMarkFile, "high-water mark", buf, sizeof(buf),
					   &len, &missing))
	{
		if (!snowflake::parse_mark_record(buf, len, &mark))
		{
			snprintf(detail, sizeof(detail), "File \"%s\" is not a valid mark record", kMarkFile);
			sf_refuse(out, SF_REFUSE_STATE, "could not read the recorded snowflake high-water mark",
					  detail);
		}
		else if (mark < sf_layout.epoch_ms ||
				 mark > sf_layout.unix_ms_end_of(sf_layout.max_offset()))
		{
			char		when[40];

			/* a mark the layout cannot represent: damaged, or another layout's */
			snowflake::format_utc(mark, when, sizeof(when));
			snprintf(detail, sizeof(detail), "File \"%s\" holds %s, outside the times this "
					 "layout can represent", kMarkFile, when);
			sf_refuse(out, SF_REFUSE_STATE, "could not read the recorded snowflake high-water mark",
					  detail);
		}
		else
		{
			out->resume_offset = sf_layout.offset_of(mark);
			out->durable_mark_ms = mark;
		}
	}
}

/*
 * At start, in the postmaster: WARNINGs for what the records say is wrong,
 * each with what still works.
 */
void
sf_warn_recorded_state(const SnowflakeShared *state)
{
	if (state->refused)
		ereport(WARNING,
				(errmsg("%s", state->refusal_message),
				 errdetail("%s.", state->refusal_detail),
				 errhint("snowflake_nextval(), the decoding functions and the time comparisons "
						 "will refuse to run: restore the settings named and restart the server. "
						 "To change the layout deliberately, see \"Changing the layout\" in the "
						 "snowflake README.")));
	if (state->state_refused)
		ereport(WARNING,
				(errmsg("%s", state->state_message),
				 errdetail("%s.", state->state_detail),
				 errhint("snowflake_nextval() will refuse to run; the decoding functions work. "
						 "See \"Errors and what to do\" in the snowflake README.")));
	if (!state->refused && !state->state_refused && state->durable_mark_ms >= 0 &&
		state->durable_mark_ms > sf_wall_ms() + sf_floor_bound_ms())
	{
		char		when[40];

		snowflake::format_utc(state->durable_mark_ms, when, sizeof(when));
		ereport(WARNING,
				(errmsg("the snowflake high-water mark is " INT64_FORMAT " ms ahead of the clock",
						state->durable_mark_ms - sf_wall_ms()),
				 errdetail("pg_snowflake/mark holds %s. IDs resume above it, so generating "
						   "calls wait for the clock and fail after snowflake.max_clock_wait "
						   "until the clock is within snowflake.max_clock_lead of it.", when),
				 errhint("Check the server's time synchronisation. If the clock is right and the "
						 "mark came from elsewhere (a restored or copied pg_snowflake/), see "
						 "\"The durable mark\" in the snowflake README.")));
	}
}

/*
 * The level of a failed write of a state file: an fsync failure PANICs unless
 * data_sync_retry is on, as PostgreSQL does for its own files (after a failed
 * fsync the kernel may have dropped the data and a retried fsync can report
 * success for it); anything else stays at "elevel".
 */
int
sf_file_error_level(const snowflake::FileError &error, int elevel)
{
	return snowflake::is_sync_failure(error) ? data_sync_elevel(elevel) : elevel;
}

void
sf_report_file_error(const char *what, const snowflake::FileError &error)
{
	errno = error.err;
	ereport(sf_file_error_level(error, ERROR),
			(errcode_for_file_access(),
			 errmsg("could not record the snowflake %s: could not %s \"%s\": %m",
					what, error.operation, error.path)));
}

/*
 * Writes pg_snowflake/mark durably and records it as durable_mark_ms (caller
 * holds file_lock exclusively).  False with *error filled when it fails.
 */
bool
sf_write_mark(int64 mark_ms, snowflake::FileError *error)
{
	char		record[256];
	int			len = snowflake::format_mark_record(mark_ms, record, sizeof(record));

	if (len < 0 || !snowflake::write_file_durably(kMarkName, record, (size_t) len, error))
		return false;
	sf_shared->durable_mark_ms = mark_ms;
	return true;
}

/*---- import reservations (pg_snowflake/imports) ----*/

static const char *const kImportsName = "imports";
static const char *const kImportsFile = "pg_snowflake/imports";
#define SF_IMPORTS_MAX 65536

/* This backend's buffers for the record (no allocation under file_lock). */
static char sf_imports_in[SF_IMPORTS_MAX];
static char sf_imports_out[SF_IMPORTS_MAX];

/*
 * What a value of pg_snowflake/imports or live may be under this layout
 * (core/records.hpp): anything else is damage, never a place to resume.
 */
static snowflake::RecordBounds
sf_record_bounds(void)
{
	return snowflake::RecordBounds{sf_layout.max_shard_id(), sf_layout.epoch_ms,
								   sf_layout.unix_ms_end_of(sf_layout.max_offset())};
}

/*
 * Parses the imports record (snowflake::parse_imports_record): calls
 * fn(shard, ms) for each reservation, with shard -1 for the floor; false
 * when the text is not such a record.
 */
template <typename F>
static bool
sf_parse_imports(const char *text, size_t len, F &&fn)
{
	return snowflake::parse_imports_record(text, len, sf_record_bounds(), fn);
}

bool
sf_read_import_reservation(int64 shard, int64 *reserved_ms, int64 *floor_ms,
						   snowflake::FileError *error, bool *damaged)
{
	char	   *buf = sf_imports_in;
	size_t		len = 0;
	bool		ok = true;

	*reserved_ms = -1;
	*floor_ms = -1;
	*damaged = false;
	switch (snowflake::read_small_file(kImportsFile, buf, SF_IMPORTS_MAX, &len, error))
	{
		case snowflake::ReadResult::Ok:
			ok = sf_parse_imports(buf, len, [&](int64 s, int64 ms) {
				if (s == -1)
					*floor_ms = ms;
				else if (s == shard)
					*reserved_ms = ms;
			});
			*damaged = !ok;
			break;
		case snowflake::ReadResult::Missing:
			break;
		case snowflake::ReadResult::TooLarge:
			*damaged = true;
			ok = false;
			break;
		case snowflake::ReadResult::Failed:
			ok = false;
			break;
	}
	return ok;
}

/* One line of the imports record: a shard's reservation, or (shard -1) the floor. */
static size_t
sf_format_import_line(char *out, size_t size, int64 shard, int64 ms)
{
	int			n = shard < 0 ?
		snprintf(out, size, "floor_unix_ms " INT64_FORMAT "\n", ms) :
		snprintf(out, size, "shard " INT64_FORMAT " reserved_unix_ms " INT64_FORMAT "\n",
				 shard, ms);

	return n < 0 ? size : (size_t) n;
}

bool
sf_write_import_reservation(int64 shard, int64 reserved_ms, snowflake::FileError *error,
							bool *damaged)
{
	char	   *buf = sf_imports_in;
	char	   *out = sf_imports_out;
	size_t		len = 0;
	size_t		n = 0;
	bool		ok = true;
	bool		written = false;

	*damaged = false;
	n = (size_t) snprintf(out, SF_IMPORTS_MAX, "# snowflake: how far each import shard has "
						  "reserved. Do not edit.\nformat 1\n");
	switch (snowflake::read_small_file(kImportsFile, buf, SF_IMPORTS_MAX, &len, error))
	{
		case snowflake::ReadResult::Ok:
			ok = sf_parse_imports(buf, len, [&](int64 s, int64 ms) {
				if (s == shard)
				{
					ms = Max(ms, reserved_ms);	/* never lowered */
					written = true;
				}
				if (n < SF_IMPORTS_MAX)
					n += sf_format_import_line(out + n, SF_IMPORTS_MAX - n, s, ms);
			});
			*damaged = !ok;
			break;
		case snowflake::ReadResult::Missing:
			break;
		case snowflake::ReadResult::TooLarge:
			*damaged = true;
			ok = false;
			break;
		case snowflake::ReadResult::Failed:
			ok = false;
			break;
	}
	if (ok && !written && n < SF_IMPORTS_MAX)
		n += sf_format_import_line(out + n, SF_IMPORTS_MAX - n, shard, reserved_ms);
	if (ok && n >= SF_IMPORTS_MAX)
	{
		/* about 1,400 import shards with reservations fill the record */
		error->operation = "add another import shard's reservation to";
		error->path = kImportsFile;
		error->err = EFBIG;
		ok = false;
	}
	if (ok)
		ok = snowflake::write_file_durably(kImportsName, out, n, error);
	return ok;
}

/*---- when each shard first generated live IDs (pg_snowflake/live) ----*/

static const char *const kLiveName = "live";
static const char *const kLiveFile = "pg_snowflake/live";
/* ranges kept; more are merged, which only makes the record more cautious */
#define SF_LIVE_MAX_RANGES 1024

/* This backend's copy of the record, parsed (no allocation under file_lock). */
static snowflake::LiveRange sf_live_ranges[SF_LIVE_MAX_RANGES + 1];

/*
 * Parses the live record into sf_live_ranges (snowflake::parse_live_record);
 * false when the text is not such a record.
 */
static bool
sf_parse_live(const char *text, size_t len, int *count)
{
	return snowflake::parse_live_record(text, len, sf_record_bounds(), sf_live_ranges,
										SF_LIVE_MAX_RANGES, count);
}

/* Reads and parses the live record into sf_live_ranges; see sf_read_live_from. */
static bool
sf_load_live(int *count, snowflake::FileError *error, bool *damaged)
{
	size_t		len = 0;

	*count = 0;
	*damaged = false;
	switch (snowflake::read_small_file(kLiveFile, sf_imports_in, SF_IMPORTS_MAX, &len, error))
	{
		case snowflake::ReadResult::Ok:
			*damaged = !sf_parse_live(sf_imports_in, len, count);
			return !*damaged;
		case snowflake::ReadResult::Missing:
			return true;
		case snowflake::ReadResult::TooLarge:
			*damaged = true;
			return false;
		case snowflake::ReadResult::Failed:
			break;
	}
	return false;
}

bool
sf_read_live_from(int64 shard, int64 *from_ms, snowflake::FileError *error, bool *damaged)
{
	int			count;

	*from_ms = -1;
	if (!sf_load_live(&count, error, damaged))
		return false;
	/* a time before the epoch (a layout changed since) is the epoch for this layout's IDs */
	for (int i = 0; i < count; i++)
		if (sf_live_ranges[i].lo <= shard && shard <= sf_live_ranges[i].hi)
			*from_ms = Max(sf_live_ranges[i].from_ms, sf_layout.epoch_ms);
	return true;
}

bool
sf_write_live_from(int64 shard, int64 from_ms, snowflake::FileError *error, bool *damaged)
{
	snowflake::LiveRange *r = sf_live_ranges;
	int			count;
	size_t		n;

	if (!sf_load_live(&count, error, damaged))
		return false;
	if (!snowflake::add_live_shard(r, &count, SF_LIVE_MAX_RANGES, shard, from_ms))
		return true;			/* recorded already, from as early */
	n = (size_t) snprintf(sf_imports_out, SF_IMPORTS_MAX, "# snowflake: from when each shard "
						  "generated live IDs. Do not edit.\nformat 1\n");
	for (int i = 0; i < count && n < SF_IMPORTS_MAX; i++)
	{
		int			len = snprintf(sf_imports_out + n, SF_IMPORTS_MAX - n,
								   "shards " INT64_FORMAT "-" INT64_FORMAT " live_from_unix_ms "
								   INT64_FORMAT "\n", r[i].lo, r[i].hi, r[i].from_ms);

		n = len < 0 ? SF_IMPORTS_MAX : n + (size_t) len;
	}
	if (n >= SF_IMPORTS_MAX)
	{
		/* cannot happen: SF_LIVE_MAX_RANGES lines fit */
		error->operation = "write";
		error->path = kLiveFile;
		error->err = EFBIG;
		return false;
	}
	return snowflake::write_file_durably(kLiveName, sf_imports_out, n, error);
}
