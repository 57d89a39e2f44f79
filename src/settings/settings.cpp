/*-------------------------------------------------------------------------
 *
 * settings.cpp
 *		The generator's snowflake.* settings: definitions, checks, and the
 *		layout they describe, validated at server start.  Every setting is
 *		defined through sf_define_setting() (guc.cpp), which keeps the rule
 *		every snowflake.* setting follows at start (nonsense stops the server).
 *
 * Layout settings (epoch, field widths) are fixed at server start and the
 * shard ID follows reloads; none can be changed by a session, so no session
 * can generate IDs as another shard or with another layout.  Other
 * subsystems define their own settings (seqstart.cpp, registry.cpp,
 * public_ids.cpp) between sf_settings_define() and sf_settings_finish(),
 * which runs any start-time check not run yet and reserves the prefix.
 *
 * The bottom of the PostgreSQL glue: it may call the core and PostgreSQL.
 *
 *-------------------------------------------------------------------------
 */
#include <cinttypes>
#include <cstdlib>
#include <cstring>

#include "core/clocks.hpp"
#include "settings/guc.hpp"
#include "settings/settings.hpp"

extern "C"
{
#include "postgres.h"
#include "miscadmin.h"
#include "utils/guc.h"
#include "utils/guc_tables.h"
}

/*---- GUC variables ----*/

int			sf_shard_id = -1;
int			sf_max_clock_lead = 1000;
int			sf_max_clock_wait = 5000;
int			sf_max_shards = 1024;
bool		sf_allow_on_standby = false;
int			sf_generator = SF_GENERATOR_ATOMIC;
char	   *sf_shard_ids = NULL;

static char *sf_epoch = NULL;
static int	sf_shard_bits = 10;
static int	sf_sequence_bits = 12;
static int	sf_id_bits = snowflake::kIdBits;
static int	sf_time_unit = 1;
static int	sf_datacenter_bits = 0;
int			sf_datacenter_id = -1;

snowflake::Layout sf_layout = {snowflake::kDefaultEpochMs, 10, 12};

using snowflake::LayoutProblem;

/* The parsed snowflake.shard_ids: the GUC's "extra", owned by the GUC code. */
typedef struct SfShardList
{
	int			count;
	snowflake::ShardRange ranges[FLEXIBLE_ARRAY_MEMBER];
} SfShardList;

static SfShardList *sf_shard_list = NULL;
/* snowflake.import_shards, parsed the same way */
char	   *sf_import_shards = NULL;
static SfShardList *sf_import_list = NULL;

static const struct config_enum_entry sf_generator_options[] = {
	{"atomic", SF_GENERATOR_ATOMIC, false},
	{"lwlock", SF_GENERATOR_LWLOCK, false},
	{NULL, 0, false}
};

/* A shard ID must fit the shard field; -1 means "not set". */
static bool
sf_check_shard_id(int *newval, void **, GucSource)
{
	int64		max = sf_layout.max_shard_id();

	if (*newval != -1 && *newval > max)
	{
		GUC_check_errdetail("snowflake.shard_id must be between 0 and " INT64_FORMAT
							" because snowflake.shard_bits is %d.", max, sf_shard_bits);
		return false;
	}
	/* with datacenters, this server's shards lie in its datacenter (at start: see below) */
	if (*newval != -1 && sf_layout.datacenter_bits > 0 && sf_datacenter_id >= 0 &&
		!process_shared_preload_libraries_in_progress &&
		(*newval >> sf_layout.worker_bits()) != sf_datacenter_id)
	{
		GUC_check_errdetail("Shard %d lies in datacenter %d, and this server's "
							"snowflake.datacenter_id is %d: its shards are " INT64_FORMAT
							" to " INT64_FORMAT ".", *newval,
							*newval >> sf_layout.worker_bits(), sf_datacenter_id,
							(int64) sf_datacenter_id << sf_layout.worker_bits(),
							(((int64) sf_datacenter_id + 1) << sf_layout.worker_bits()) - 1);
		return false;
	}
	return true;
}

/* A time unit is a whole number of milliseconds that divides a second. */
static bool
sf_check_time_unit(int *newval, void **, GucSource)
{
	if (*newval >= 1 && *newval <= 1000 && 1000 % *newval == 0)
		return true;
	GUC_check_errdetail("snowflake.time_unit must divide a second: 1, 2, 4, 5, 8, 10, 20, 25, "
						"40, 50, 100, 125, 200, 250, 500 or 1000 ms; 1000 ms is not a multiple "
						"of %d ms.", *newval);
	return false;
}

/* The range of shard IDs of this server's datacenter (all of them without datacenters). */
void
sf_datacenter_shards(int64 *lo, int64 *hi)
{
	if (sf_layout.datacenter_bits == 0 || sf_datacenter_id < 0)
	{
		*lo = 0;
		*hi = sf_layout.max_shard_id();
		return;
	}
	*lo = (int64) sf_datacenter_id << sf_layout.worker_bits();
	*hi = *lo + sf_layout.max_worker_id();
}

/*
 * Outside server start (ALTER SYSTEM, reload), a new field width is checked
 * against the other width as the server runs now: together they must leave
 * kMinTimestampBits.  At start both are checked together by
 * sf_check_layout_settings(), which stops the server if they do not fit.
 */
static bool
sf_check_width(int width, int other, const char *other_name)
{
	int			max = sf_layout.id_bits - snowflake::min_timestamp_bits(sf_layout.unit_ms);

	if (process_shared_preload_libraries_in_progress || width + other <= max)
		return true;
	GUC_check_errdetail("snowflake.shard_bits + snowflake.sequence_bits must be at most %d "
						"(snowflake.id_bits %d less the %d timestamp bits that last 8.7 years "
						"in units of %d ms), and %s is %d.", max, sf_layout.id_bits,
						snowflake::min_timestamp_bits(sf_layout.unit_ms),
						(int) sf_layout.unit_ms, other_name, other);
	GUC_check_errhint("The sum is checked against the running value of %s: change "
					  "the widths one restart at a time, and see \"Changing the layout\" "
					  "in the README first.", other_name);
	return false;
}

static bool
sf_check_shard_bits(int *newval, void **, GucSource)
{
	return sf_check_width(*newval, sf_layout.sequence_bits, "snowflake.sequence_bits");
}

static bool
sf_check_sequence_bits(int *newval, void **, GucSource)
{
	return sf_check_width(*newval, sf_layout.shard_bits, "snowflake.shard_bits");
}

/*
 * At server start, a snowflake.* line in the configuration that names no
 * setting is a misspelling: PostgreSQL would only warn and drop it (the
 * prefix is reserved), so the server would run without the intended value.
 * Stop instead, as PostgreSQL does for a misspelled setting of its own.
 */
static void
sf_refuse_unknown_settings(void)
{
	struct config_generic **vars;
	int			n;

#if PG_VERSION_NUM >= 160000
	vars = get_guc_variables(&n);
#else
	vars = get_guc_variables();
	n = GetNumConfigOptions();
#endif
	for (int i = 0; i < n; i++)
	{
		if ((vars[i]->flags & GUC_CUSTOM_PLACEHOLDER) &&
			strncmp(vars[i]->name, "snowflake.", 10) == 0)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("unrecognized configuration parameter \"%s\"", vars[i]->name),
					 errdetail("The snowflake extension has no setting of that name."),
					 errhint("Fix or remove the line; \"SELECT name FROM pg_settings WHERE "
							 "name LIKE 'snowflake.%%'\" lists the settings.")));
	}
}

static bool
sf_check_epoch(char **newval, void **, GucSource)
{
	int64		ms;

	if (*newval == NULL || !snowflake::parse_epoch(*newval, &ms))
	{
		GUC_check_errdetail("snowflake.epoch must be a date or date-time in ISO 8601 form, "
							"in UTC unless it carries an offset, such as \"2024-01-01 00:00:00+00\".");
		return false;
	}
	if (ms < 0)
	{
		GUC_check_errdetail("snowflake.epoch must not be earlier than 1970-01-01.");
		return false;
	}

	/*
	 * An epoch in the future is a typo when someone sets it (ALTER SYSTEM),
	 * but at server start it may as well be the clock that is wrong (a host
	 * whose clock is not synchronised yet): then the server starts and only
	 * generation refuses, see sf_check_layout_settings().
	 */
	if (ms > sf_wall_ms() && !process_shared_preload_libraries_in_progress)
	{
		GUC_check_errdetail("snowflake.epoch must not be in the future.");
		return false;
	}
	return true;
}

/*
 * Memory for a check hook's "extra".  The GUC code frees it: with free() up to
 * PostgreSQL 15, with guc_free() (a pfree of GUC memory) from 16 on, which
 * kills the postmaster on a malloc()ed pointer.  guc_malloc(LOG, ...) reports
 * and returns NULL when out of memory instead of raising an error.
 */
void *
sf_guc_malloc(size_t size)
{
#if PG_VERSION_NUM >= 160000
	return guc_malloc(LOG, size);
#else
	return malloc(size);
#endif
}

/* Frees what sf_guc_malloc gave, when a check hook refuses after all. */
static void
sf_guc_free(void *p)
{
#if PG_VERSION_NUM >= 160000
	guc_free(p);
#else
	free(p);
#endif
}

/*
 * The first shard of a list that lies outside this server's datacenter, or
 * -1 (always -1 without datacenters).
 */
static int64
sf_shard_outside_datacenter(const SfShardList *list)
{
	int64		lo, hi;

	if (list == NULL || sf_layout.datacenter_bits == 0 || sf_datacenter_id < 0)
		return -1;
	sf_datacenter_shards(&lo, &hi);
	for (int i = 0; i < list->count; i++)
	{
		if (list->ranges[i].lo < lo)
			return list->ranges[i].lo;
		if (list->ranges[i].hi > hi)
			return Max((int64) list->ranges[i].lo, hi + 1);	/* the first one past it */
	}
	return -1;
}

/* Parses snowflake.shard_ids (and snowflake.import_shards) into an SfShardList. */
static bool
sf_check_shard_ids(char **newval, void **extra, GucSource)
{
	int64		max = sf_layout.max_shard_id();
	int			count = 0;
	SfShardList *list;
	snowflake::RangeProblem problem;

	problem = snowflake::parse_shard_ranges(*newval ? *newval : "", max, NULL, 0, &count);
	if (problem == snowflake::RangeProblem::None)
	{
		list = (SfShardList *) sf_guc_malloc(offsetof(SfShardList, ranges) +
											 sizeof(snowflake::ShardRange) * Max(count, 1));
		if (list == NULL)
		{
			GUC_check_errcode(ERRCODE_OUT_OF_MEMORY);
			return false;
		}
		(void) snowflake::parse_shard_ranges(*newval ? *newval : "", max, list->ranges,
											 count, &list->count);
		/* with datacenters, the shards lie in this server's datacenter (at start: below) */
		if (!process_shared_preload_libraries_in_progress)
		{
			int64		bad = sf_shard_outside_datacenter(list);

			if (bad >= 0)
			{
				int64		lo, hi;

				sf_datacenter_shards(&lo, &hi);
				GUC_check_errdetail("Shard " INT64_FORMAT " lies in datacenter " INT64_FORMAT
									", and this server's snowflake.datacenter_id is %d: its "
									"shards are " INT64_FORMAT " to " INT64_FORMAT ".", bad,
									bad >> sf_layout.worker_bits(), sf_datacenter_id, lo, hi);
				sf_guc_free(list);
				return false;
			}
		}
		*extra = list;
		return true;
	}
	switch (problem)
	{
		case snowflake::RangeProblem::OutOfRange:
			GUC_check_errdetail("Shard IDs go from 0 to " INT64_FORMAT
								" because snowflake.shard_bits is %d.", max, sf_shard_bits);
			break;
		case snowflake::RangeProblem::Reversed:
			GUC_check_errdetail("A range N-M needs N <= M.");
			break;
		default:
			GUC_check_errdetail("The value is a comma-separated list of shard IDs and ranges, "
								"such as \"0-63,128\".");
			break;
	}
	return false;
}

/*
 * Counts assignments of the settings a generating call checks its right to a
 * shard against (shard_id, shard_ids, import_shards, allow_on_standby), in
 * this backend: a call that found everything in order remembers the count
 * (nextval.cpp's ready test) and checks again once it changed.
 */
uint32		sf_settings_generation = 0;

static void
sf_assign_shard_id(int, void *)
{
	sf_settings_generation++;
}

static void
sf_assign_allow_on_standby(bool, void *)
{
	sf_settings_generation++;
}

static void
sf_assign_shard_ids(const char *, void *extra)
{
	sf_shard_list = (SfShardList *) extra;
	sf_settings_generation++;
}

static void
sf_assign_import_shards(const char *, void *extra)
{
	sf_import_list = (SfShardList *) extra;
	sf_settings_generation++;
}

/* Whether a shard is reserved for imports (snowflake.import_shards). */
bool
sf_import_shard(int64 shard)
{
	return sf_import_list != NULL &&
		snowflake::shard_in_ranges(sf_import_list->ranges, sf_import_list->count, shard);
}

/*
 * The shards this server's configuration lets it generate for
 * (snowflake.shard_id, then snowflake.shard_ids) into out[0..capacity);
 * returns how many ranges there are, which may exceed capacity.
 */
int
sf_configured_shards(snowflake::ShardRange *out, int capacity)
{
	int			n = 0;

	if (sf_shard_id >= 0)
	{
		if (n < capacity)
			out[n] = snowflake::ShardRange{sf_shard_id, sf_shard_id};
		n++;
	}
	for (int i = 0; sf_shard_list != NULL && i < sf_shard_list->count; i++, n++)
		if (n < capacity)
			out[n] = sf_shard_list->ranges[i];
	for (int i = 0; sf_import_list != NULL && i < sf_import_list->count; i++, n++)
		if (n < capacity)
			out[n] = sf_import_list->ranges[i];
	return n;
}

/*
 * Whether this server may generate live IDs for a shard: snowflake.shard_id
 * or shard_ids, and never an import shard.
 */
bool
sf_shard_allowed(int64 shard)
{
	if (sf_import_shard(shard))
		return false;
	if (shard == sf_shard_id)
		return true;
	return sf_shard_list != NULL &&
		snowflake::shard_in_ranges(sf_shard_list->ranges, sf_shard_list->count, shard);
}

/* Whether snowflake.epoch's raw text is the epoch in force (as a time, not as text). */
static bool
sf_epoch_applied(const char *raw)
{
	int64		raw_ms, applied_ms;

	return snowflake::parse_epoch(raw, &raw_ms) &&
		snowflake::parse_epoch(sf_epoch, &applied_ms) && raw_ms == applied_ms;
}

/* The ID layout: the epoch, the field widths, the time unit, the datacenter. */
static void
sf_define_layout_settings(void)
{
	static const SfStringStart epoch_start = {sf_epoch_applied, NULL, NULL};

	sf_define_setting("snowflake.epoch",
					  "Time from which ID timestamps count, in UTC unless an offset is given.",
					  "Fixed at server start; recorded in pg_snowflake/layout.",
					  &sf_epoch, "2024-01-01 00:00:00+00", PGC_POSTMASTER, 0,
					  sf_check_epoch, NULL, NULL, &epoch_start);
	sf_define_setting("snowflake.shard_bits",
					  "Width of the shard field of an ID, in bits.",
					  "Fixed at server start; recorded in pg_snowflake/layout.",
					  &sf_shard_bits, 10, snowflake::kMinShardBits, snowflake::kMaxShardBits,
					  PGC_POSTMASTER, 0, sf_check_shard_bits);
	sf_define_setting("snowflake.sequence_bits",
					  "Width of the per-millisecond sequence field of an ID, in bits.",
					  "Fixed at server start; recorded in pg_snowflake/layout.",
					  &sf_sequence_bits, 12, snowflake::kMinSequenceBits,
					  snowflake::kMaxSequenceBits, PGC_POSTMASTER, 0, sf_check_sequence_bits);
	sf_define_setting("snowflake.id_bits",
					  "Total width of an ID, in bits: 63 uses every positive bigint, 53 keeps "
					  "every ID a safe JavaScript integer.",
					  "Fixed at server start; recorded in pg_snowflake/layout. The timestamp "
					  "takes what the shard and the sequence leave.",
					  &sf_id_bits, snowflake::kIdBits, snowflake::kMinIdBits, snowflake::kIdBits,
					  PGC_POSTMASTER);
	sf_define_setting("snowflake.time_unit",
					  "Unit of the timestamp field of an ID: a whole number of milliseconds "
					  "that divides a second.",
					  "Fixed at server start; recorded in pg_snowflake/layout. The clock lead, "
					  "the waits, the mark and the time-range bounds count in it.",
					  &sf_time_unit, 1, 1, 1000, PGC_POSTMASTER, GUC_UNIT_MS, sf_check_time_unit);
	sf_define_setting("snowflake.datacenter_bits",
					  "Width of the datacenter part of the shard field, in bits; 0: no datacenters.",
					  "The shard field is datacenter | worker. Fixed at server start; recorded "
					  "in pg_snowflake/layout.",
					  &sf_datacenter_bits, 0, 0, snowflake::kMaxShardBits, PGC_POSTMASTER);
	sf_define_setting("snowflake.datacenter_id",
					  "Datacenter of this server, with snowflake.datacenter_bits; -1 means not set.",
					  "Its shards (snowflake.shard_id, and those it claims from a registry) lie "
					  "in this datacenter's part of the shard field. Fixed at server start.",
					  &sf_datacenter_id, -1, -1, (1 << snowflake::kMaxShardBits) - 1,
					  PGC_POSTMASTER);

	/* the shard_id check hook needs the layout */
	sf_layout.shard_bits = sf_shard_bits;
	sf_layout.sequence_bits = sf_sequence_bits;
	sf_layout.id_bits = sf_id_bits;
	sf_layout.unit_ms = sf_time_unit;
	sf_layout.datacenter_bits = sf_datacenter_bits;
}

/* The shards this server generates for, and how many it can hold. */
static void
sf_define_shard_settings(void)
{
	sf_define_setting("snowflake.shard_id",
					  "Shard ID of this server, unique across the cluster; -1 means not set.",
					  "Settable only in the configuration file or with ALTER SYSTEM, so that "
					  "no session can generate IDs as another shard.",
					  &sf_shard_id, -1, -1, (1 << snowflake::kMaxShardBits) - 1, PGC_SIGHUP, 0,
					  sf_check_shard_id, sf_assign_shard_id);
	sf_define_setting("snowflake.shard_ids",
					  "Logical shards this server may generate IDs for, such as 0-63,128.",
					  "Used by snowflake_nextval(shard_id); snowflake.shard_id is always "
					  "allowed. Settable only in the configuration file or with ALTER SYSTEM.",
					  &sf_shard_ids, "", PGC_SIGHUP, 0, sf_check_shard_ids, sf_assign_shard_ids);
	sf_define_setting("snowflake.import_shards",
					  "Shards reserved for imports with their original creation times, such "
					  "as 900-903: only snowflake_nextval_at() generates for them.",
					  "Never used by live generation. Settable only in the configuration file "
					  "or with ALTER SYSTEM.",
					  &sf_import_shards, "", PGC_SIGHUP, 0, sf_check_shard_ids,
					  sf_assign_import_shards);
	sf_define_setting("snowflake.max_shards",
					  "How many distinct shards this server can generate for between restarts.",
					  "Sizes the shared memory for per-shard state: 640 bytes a shard.",
					  &sf_max_shards, 1024, 1, 1 << snowflake::kMaxShardBits, PGC_POSTMASTER);
}

/* The clock: how far IDs may run ahead of it, how long a call may wait for it. */
static void
sf_define_clock_settings(void)
{
	sf_define_setting("snowflake.max_clock_lead",
					  "How far ID timestamps may run ahead of the wall clock.",
					  "Absorbs bursts and small backward clock steps without waiting.",
					  &sf_max_clock_lead, 1000, 0, 3600 * 1000, PGC_SIGHUP, GUC_UNIT_MS);
	sf_define_setting("snowflake.max_clock_wait",
					  "How long a call may wait for the wall clock before failing.",
					  NULL,
					  &sf_max_clock_wait, 5000, 0, 3600 * 1000, PGC_SIGHUP, GUC_UNIT_MS);
}

/* How and where IDs are generated. */
static void
sf_define_generation_settings(void)
{
	sf_define_setting("snowflake.allow_on_standby",
					  "Allows generating IDs on a hot standby.",
					  "Only safe if the standby has a shard ID of its own.",
					  &sf_allow_on_standby, false, PGC_SIGHUP, 0, NULL,
					  sf_assign_allow_on_standby);
	sf_define_setting("snowflake.generator",
					  "How calls advance a shard's generator: atomic (lock-free) or lwlock.",
					  "atomic installs each ID with a compare-and-swap and takes the shard's "
					  "LWLock only to wait or to move the durable mark; lwlock takes it for "
					  "every call (the reference implementation).",
					  &sf_generator, SF_GENERATOR_ATOMIC, sf_generator_options, PGC_POSTMASTER);
}

/* Defines the generator's snowflake.* settings (only at server start, see _PG_init). */
static void
sf_define_settings(void)
{
	sf_define_layout_settings();
	sf_define_shard_settings();
	sf_define_clock_settings();
	sf_define_generation_settings();
	/* nonsense stops the server, before the layout's own checks */
	sf_require_settings_applied();
}

/* Stops the server when the layout makes no sense. */
static void
sf_check_layout_settings(void)
{
	char		epoch[40], last[40], now_text[40];
	int64		now = sf_wall_ms();

	if (!snowflake::parse_epoch(sf_epoch, &sf_layout.epoch_ms))
		elog(ERROR, "snowflake.epoch \"%s\" passed its check but does not parse", sf_epoch);
	sf_layout.shard_bits = sf_shard_bits;
	sf_layout.sequence_bits = sf_sequence_bits;
	sf_layout.id_bits = sf_id_bits;
	sf_layout.unit_ms = sf_time_unit;
	sf_layout.datacenter_bits = sf_datacenter_bits;

	snowflake::format_utc(sf_layout.epoch_ms, epoch, sizeof(epoch));
	snowflake::format_utc(sf_layout.last_unix_ms(), last, sizeof(last));
	snowflake::format_utc(now, now_text, sizeof(now_text));

	switch (snowflake::check_layout(sf_layout, now))
	{
		case LayoutProblem::None:
			break;
		case LayoutProblem::ShardBitsOutOfRange:
		case LayoutProblem::SequenceBitsOutOfRange:
		case LayoutProblem::IdBitsOutOfRange:
		case LayoutProblem::UnitInvalid:
			/* the settings' own bounds and checks prevent these */
			elog(ERROR, "snowflake field widths or time unit out of range");
			break;
		case LayoutProblem::DatacenterBitsOutOfRange:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("snowflake.datacenter_bits must be at most snowflake.shard_bits"),
					 errdetail("snowflake.datacenter_bits is %d and snowflake.shard_bits is %d: "
							   "the datacenter is the top part of the shard field.",
							   sf_datacenter_bits, sf_shard_bits)));
			break;
		case LayoutProblem::TimestampTooNarrow:
			{
				int			need = snowflake::min_timestamp_bits(sf_layout.unit_ms);

				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("snowflake.shard_bits + snowflake.sequence_bits must be at most %d",
								sf_id_bits - need),
						 errdetail("snowflake.id_bits %d less %d + %d leaves %d timestamp bits "
								   "of %d ms: IDs would run out on %s, less than 8.7 years "
								   "(2^38 ms) after the epoch.",
								   sf_id_bits, sf_shard_bits, sf_sequence_bits,
								   sf_layout.timestamp_bits(), sf_time_unit, last),
						 errhint("The timestamp needs at least %d bits with units of %d ms: "
								 "lower snowflake.shard_bits or snowflake.sequence_bits, raise "
								 "snowflake.id_bits, or choose a coarser snowflake.time_unit.",
								 need, sf_time_unit)));
			}
			break;
		case LayoutProblem::EpochBeforeUnixEpoch:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("snowflake.epoch must not be earlier than 1970-01-01 00:00:00+00"),
					 errdetail("snowflake.epoch is %s.", epoch)));
			break;
		case LayoutProblem::EpochInFuture:
			/* the clock may be what is wrong: start, and refuse to generate */
			ereport(WARNING,
					(errmsg("the system clock reads earlier than snowflake.epoch"),
					 errdetail("snowflake.epoch is %s and the clock reads %s.", epoch, now_text),
					 errhint("snowflake_nextval() refuses until the clock passes the epoch; "
							 "everything else works. Check the server's time synchronisation, "
							 "or snowflake.epoch.")));
			break;
		case LayoutProblem::Expired:
			ereport(WARNING,
					(errmsg("the snowflake layout has no timestamps left"),
					 errdetail("With snowflake.epoch %s and %d timestamp bits, the last "
							   "representable time is %s; the clock reads %s.",
							   epoch, sf_layout.timestamp_bits(), last, now_text),
					 errhint("snowflake_nextval() refuses; everything else works. If the clock "
							 "is right, choose a later snowflake.epoch or fewer shard or "
							 "sequence bits (see \"Changing the layout\" in the README).")));
			break;
	}
}

/* Stops the server when the datacenter and the shard ID do not agree. */
static void
sf_check_datacenter_settings(void)
{
	if (sf_datacenter_id >= 0 && sf_datacenter_id > sf_layout.max_datacenter_id())
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("snowflake.datacenter_id %d does not fit snowflake.datacenter_bits %d",
						sf_datacenter_id, sf_datacenter_bits),
				 errdetail("Datacenter IDs go from 0 to " INT64_FORMAT ".",
						   sf_layout.max_datacenter_id())));
	if (sf_datacenter_id >= 0 && sf_datacenter_bits == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("snowflake.datacenter_id is set but snowflake.datacenter_bits is 0"),
				 errhint("Set snowflake.datacenter_bits to the width of the datacenter part of "
						 "the shard field, or remove snowflake.datacenter_id.")));
	if (sf_shard_id >= 0 && sf_datacenter_bits > 0 && sf_datacenter_id >= 0 &&
		(sf_shard_id >> sf_layout.worker_bits()) != sf_datacenter_id)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("snowflake.shard_id %d is not in datacenter %d", sf_shard_id,
						sf_datacenter_id),
				 errdetail("With snowflake.datacenter_bits %d the shard field is datacenter | "
						   "worker, and shard %d lies in datacenter %d; datacenter %d has shards "
						   INT64_FORMAT " to " INT64_FORMAT ".", sf_datacenter_bits, sf_shard_id,
						   sf_shard_id >> sf_layout.worker_bits(), sf_datacenter_id,
						   (int64) sf_datacenter_id << sf_layout.worker_bits(),
						   (((int64) sf_datacenter_id + 1) << sf_layout.worker_bits()) - 1)));
	for (int which = 0; which < 2; which++)
	{
		int64		bad = sf_shard_outside_datacenter(which == 0 ? sf_shard_list : sf_import_list);
		int64		lo, hi;

		if (bad < 0)
			continue;
		sf_datacenter_shards(&lo, &hi);
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s lists shard " INT64_FORMAT ", which is not in datacenter %d",
						which == 0 ? "snowflake.shard_ids" : "snowflake.import_shards", bad,
						sf_datacenter_id),
				 errdetail("Shard " INT64_FORMAT " lies in datacenter " INT64_FORMAT
						   "; datacenter %d has shards " INT64_FORMAT " to " INT64_FORMAT ".",
						   bad, bad >> sf_layout.worker_bits(), sf_datacenter_id, lo, hi)));
	}
}

/* Defines the generator's settings and checks the layout they make. */
void
sf_settings_define(void)
{
	sf_define_settings();
	sf_check_layout_settings();
	sf_check_datacenter_settings();
}

/*
 * Once every subsystem has defined its settings: a misspelled snowflake.*
 * line stops the server, and the prefix is reserved.  Only called at server
 * start (see _PG_init).
 */
void
sf_settings_finish(void)
{
	sf_require_settings_applied();	/* any setting's check not run yet */
	sf_refuse_unknown_settings();
	MarkGUCPrefixReserved("snowflake");
}
