/*-------------------------------------------------------------------------
 *
 * snowflake.cpp
 *		PostgreSQL glue for the snowflake extension: settings, shared memory,
 *		the generator lock and the SQL-callable functions.
 *
 * The algorithm lives in core.cpp (plain C++, no PostgreSQL); this file only
 * connects it to the server.  Every core and statefile function is noexcept
 * and never allocates, so no C++ exception can reach PostgreSQL, and no frame
 * here that may ereport holds a C++ object with a destructor.
 *
 * Locking.  Shared state is one SnowflakeShared struct, created at postmaster
 * start.  Its two LWLocks come from the "snowflake" tranche:
 *	- gen_lock (exclusive) guards "gen", the generator state.  It is held only
 *	  for one call of snowflake::next_id(): a few integer operations, no
 *	  allocation, no ereport, no I/O, no sleep.  Waiting for the clock happens
 *	  after releasing it.
 *	- file_lock (exclusive) serialises writers of pg_snowflake/ files.  While
 *	  held, only plain POSIX I/O runs (statefile.cpp); errors are reported
 *	  after release.  gen_lock is never taken while file_lock is held.
 * layout_recorded is an atomic flag, set once under file_lock and read
 * without a lock.  layout_refused and refusal are written only by the
 * postmaster before any backend starts and are read-only afterwards.
 *
 *-------------------------------------------------------------------------
 */
#include <cerrno>
#include <cinttypes>
#include <cstring>
#include <ctime>

#include "core.hpp"
#include "statefile.hpp"

extern "C"
{
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xlog.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

PG_FUNCTION_INFO_V1(snowflake_nextval);
PG_FUNCTION_INFO_V1(snowflake_timestamp);
PG_FUNCTION_INFO_V1(snowflake_shard_id);
PG_FUNCTION_INFO_V1(snowflake_sequence);
PG_FUNCTION_INFO_V1(snowflake_decode);
PG_FUNCTION_INFO_V1(snowflake_layout);
}

using snowflake::Layout;
using snowflake::LayoutProblem;
using snowflake::Outcome;

/*---- shared state ----*/

typedef struct SnowflakeShared
{
	LWLock	   *gen_lock;
	LWLock	   *file_lock;
	snowflake::GeneratorState gen;	/* under gen_lock */
	pg_atomic_uint32 layout_recorded;	/* pg_snowflake/layout matches */
	bool		layout_refused; /* recorded layout differs or is unreadable */
	char		refusal_message[128];
	char		refusal_detail[512];
} SnowflakeShared;

#define SNOWFLAKE_TRANCHE "snowflake"
#define SNOWFLAKE_NUM_LOCKS 2

/*---- local variables ----*/

static SnowflakeShared *sf_shared = NULL;
static Layout sf_layout = {snowflake::kDefaultEpochMs, 10, 12};

#if PG_VERSION_NUM >= 150000
static shmem_request_hook_type prev_shmem_request_hook = NULL;
#endif
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/*---- GUC variables ----*/

static int	sf_shard_id = -1;
static char *sf_epoch = NULL;
static int	sf_shard_bits = 10;
static int	sf_sequence_bits = 12;
static int	sf_max_clock_lead = 1000;
static int	sf_max_clock_wait = 5000;
static bool sf_allow_on_standby = false;

/*---- function declarations ----*/

static void sf_shmem_request(void);
static void sf_shmem_startup(void);
static void sf_define_settings(void);
static void sf_check_layout_settings(void);
static int64 sf_generate(void);

/*---- clocks ----*/

/* Wall-clock Unix milliseconds: what IDs carry. */
static int64
sf_wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Monotonic milliseconds: to bound how long we wait. */
static int64
sf_monotonic_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static TimestampTz
sf_timestamptz(int64 unix_ms)
{
	return (TimestampTz) snowflake::unix_ms_to_pg_us(unix_ms);
}

/*---- settings ----*/

/* A shard ID must fit the shard field; -1 means "not set". */
static bool
sf_check_shard_id(int *newval, void **extra, GucSource source)
{
	int64		max = sf_layout.max_shard_id();

	if (*newval == -1 || *newval <= max)
		return true;
	GUC_check_errdetail("snowflake.shard_id must be between 0 and " INT64_FORMAT
						" because snowflake.shard_bits is %d.", max, sf_shard_bits);
	return false;
}

static bool
sf_check_epoch(char **newval, void **extra, GucSource source)
{
	int64		ms;

	if (*newval == NULL || !snowflake::parse_epoch(*newval, &ms))
	{
		GUC_check_errdetail("snowflake.epoch must be a date or date-time in ISO 8601 form, "
							"in UTC unless it carries an offset, such as \"2024-01-01 00:00:00+00\".");
		return false;
	}
	if (ms < 0 || ms > sf_wall_ms())
	{
		GUC_check_errdetail("snowflake.epoch must lie between 1970-01-01 and now.");
		return false;
	}
	return true;
}

/*
 * A value from postgresql.conf that fails a custom setting's checks is only
 * warned about when the library defines the setting, and the default is used
 * instead.  For settings that shape every ID that would silently change the
 * layout or the shard, so at server start a rejected value stops the server.
 */
static void
sf_require_applied(const char *name, const char *raw, bool applied)
{
	if (raw != NULL && !applied)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid value for parameter \"%s\": \"%s\"", name, raw),
				 errhint("See the warning above for the allowed values; the snowflake "
						 "extension refuses to start rather than fall back to a default.")));
}

/* The raw text of a setting from the configuration, before it is defined. */
static char *
sf_raw_setting(const char *name)
{
	const char *raw = GetConfigOption(name, true, false);

	return raw ? pstrdup(raw) : NULL;
}

static bool
sf_int_matches(const char *raw, int value, int flags)
{
	int			parsed;

	return raw != NULL && parse_int(raw, &parsed, flags, NULL) && parsed == value;
}

/* Defines the snowflake.* settings. */
static void
sf_define_settings(void)
{
	bool		at_start = process_shared_preload_libraries_in_progress;
	char	   *raw_epoch = sf_raw_setting("snowflake.epoch");
	char	   *raw_shard_bits = sf_raw_setting("snowflake.shard_bits");
	char	   *raw_sequence_bits = sf_raw_setting("snowflake.sequence_bits");
	char	   *raw_shard_id = sf_raw_setting("snowflake.shard_id");

	DefineCustomStringVariable("snowflake.epoch",
							   "Time from which ID timestamps count, in UTC unless an offset is given.",
							   "Fixed at server start; recorded in pg_snowflake/layout.",
							   &sf_epoch,
							   "2024-01-01 00:00:00+00",
							   PGC_POSTMASTER,
							   0,
							   sf_check_epoch,
							   NULL,
							   NULL);

	DefineCustomIntVariable("snowflake.shard_bits",
							"Width of the shard field of an ID, in bits.",
							"Fixed at server start; recorded in pg_snowflake/layout.",
							&sf_shard_bits,
							10,
							snowflake::kMinShardBits,
							snowflake::kMaxShardBits,
							PGC_POSTMASTER,
							0,
							NULL,
							NULL,
							NULL);

	DefineCustomIntVariable("snowflake.sequence_bits",
							"Width of the per-millisecond sequence field of an ID, in bits.",
							"Fixed at server start; recorded in pg_snowflake/layout.",
							&sf_sequence_bits,
							12,
							snowflake::kMinSequenceBits,
							snowflake::kMaxSequenceBits,
							PGC_POSTMASTER,
							0,
							NULL,
							NULL,
							NULL);

	/* the shard_id check hook needs the layout */
	sf_layout.shard_bits = sf_shard_bits;
	sf_layout.sequence_bits = sf_sequence_bits;

	DefineCustomIntVariable("snowflake.shard_id",
							"Shard ID of this server, unique across the cluster; -1 means not set.",
							"Settable only in the configuration file or with ALTER SYSTEM, so that "
							"no session can generate IDs as another shard.",
							&sf_shard_id,
							-1,
							-1,
							(1 << snowflake::kMaxShardBits) - 1,
							PGC_SIGHUP,
							0,
							sf_check_shard_id,
							NULL,
							NULL);

	DefineCustomIntVariable("snowflake.max_clock_lead",
							"How far ID timestamps may run ahead of the wall clock.",
							"Absorbs bursts and small backward clock steps without waiting.",
							&sf_max_clock_lead,
							1000,
							0,
							3600 * 1000,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL,
							NULL,
							NULL);

	DefineCustomIntVariable("snowflake.max_clock_wait",
							"How long a call may wait for the wall clock before failing.",
							NULL,
							&sf_max_clock_wait,
							5000,
							0,
							3600 * 1000,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL,
							NULL,
							NULL);

	DefineCustomBoolVariable("snowflake.allow_on_standby",
							 "Allows generating IDs on a hot standby.",
							 "Only safe if the standby has a shard ID of its own.",
							 &sf_allow_on_standby,
							 false,
							 PGC_SIGHUP,
							 0,
							 NULL,
							 NULL,
							 NULL);

	MarkGUCPrefixReserved("snowflake");

	if (at_start)
	{
		int64		raw_ms, applied_ms;

		sf_require_applied("snowflake.epoch", raw_epoch,
						   raw_epoch && snowflake::parse_epoch(raw_epoch, &raw_ms) &&
						   snowflake::parse_epoch(sf_epoch, &applied_ms) &&
						   raw_ms == applied_ms);
		sf_require_applied("snowflake.shard_bits", raw_shard_bits,
						   sf_int_matches(raw_shard_bits, sf_shard_bits, 0));
		sf_require_applied("snowflake.sequence_bits", raw_sequence_bits,
						   sf_int_matches(raw_sequence_bits, sf_sequence_bits, 0));
		sf_require_applied("snowflake.shard_id", raw_shard_id,
						   sf_int_matches(raw_shard_id, sf_shard_id, 0));
	}
}

/* Stops the server (or the loading session) when the layout makes no sense. */
static void
sf_check_layout_settings(void)
{
	char		epoch[40], last[40], now_text[40];
	int64		now = sf_wall_ms();

	if (!snowflake::parse_epoch(sf_epoch, &sf_layout.epoch_ms))
		elog(ERROR, "snowflake.epoch \"%s\" passed its check but does not parse", sf_epoch);
	sf_layout.shard_bits = sf_shard_bits;
	sf_layout.sequence_bits = sf_sequence_bits;

	snowflake::format_utc(sf_layout.epoch_ms, epoch, sizeof(epoch));
	snowflake::format_utc(sf_layout.last_unix_ms(), last, sizeof(last));
	snowflake::format_utc(now, now_text, sizeof(now_text));

	switch (snowflake::check_layout(sf_layout, now))
	{
		case LayoutProblem::None:
			break;
		case LayoutProblem::ShardBitsOutOfRange:
		case LayoutProblem::SequenceBitsOutOfRange:
			/* the settings' own bounds prevent these */
			elog(ERROR, "snowflake field widths out of range");
			break;
		case LayoutProblem::TimestampTooNarrow:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("snowflake.shard_bits + snowflake.sequence_bits must be at most %d",
							snowflake::kIdBits - snowflake::kMinTimestampBits),
					 errdetail("They are %d + %d, which leaves %d bits of milliseconds: "
							   "IDs would run out on %s.",
							   sf_shard_bits, sf_sequence_bits, sf_layout.timestamp_bits(),
							   last),
					 errhint("Lower snowflake.shard_bits or snowflake.sequence_bits; the "
							 "timestamp needs at least %d bits (8.7 years).",
							 snowflake::kMinTimestampBits)));
			break;
		case LayoutProblem::EpochBeforeUnixEpoch:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("snowflake.epoch must not be earlier than 1970-01-01 00:00:00+00"),
					 errdetail("snowflake.epoch is %s.", epoch)));
			break;
		case LayoutProblem::EpochInFuture:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("snowflake.epoch must not be in the future"),
					 errdetail("snowflake.epoch is %s and the clock reads %s.", epoch, now_text),
					 errhint("Choose an epoch in the past, such as the default "
							 "2024-01-01 00:00:00+00.")));
			break;
		case LayoutProblem::Expired:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("the snowflake layout has no timestamps left"),
					 errdetail("With snowflake.epoch %s and %d timestamp bits, the last "
							   "representable time is %s; the clock reads %s.",
							   epoch, sf_layout.timestamp_bits(), last, now_text),
					 errhint("Choose a later snowflake.epoch or fewer shard or sequence bits.")));
			break;
	}
}

/*---- module load ----*/

extern "C" void
_PG_init(void)
{
	sf_define_settings();
	sf_check_layout_settings();

	if (!process_shared_preload_libraries_in_progress)
		return;

#if PG_VERSION_NUM >= 150000
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = sf_shmem_request;
#else
	sf_shmem_request();
#endif
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = sf_shmem_startup;
}

/*---- shared memory hooks ----*/

/* Asks for the shared struct and the lock tranche. */
static void
sf_shmem_request(void)
{
#if PG_VERSION_NUM >= 150000
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
#endif
	RequestAddinShmemSpace(MAXALIGN(sizeof(SnowflakeShared)));
	RequestNamedLWLockTranche(SNOWFLAKE_TRANCHE, SNOWFLAKE_NUM_LOCKS);
}

/*
 * Compares pg_snowflake/layout, if present, with the running layout.  Fills
 * the refusal fields of "out" when they differ or the file is unreadable.
 */
static void
sf_verify_recorded_layout(SnowflakeShared *out)
{
	char		buf[1024];
	size_t		len = 0;
	Layout		recorded;
	snowflake::FileError error = {"", "", 0};

	out->layout_refused = false;
	pg_atomic_init_u32(&out->layout_recorded, 0);

	switch (snowflake::read_small_file(snowflake::kLayoutFile, buf, sizeof(buf), &len, &error))
	{
		case snowflake::ReadResult::Missing:
			return;				/* recorded when the first ID is generated */
		case snowflake::ReadResult::Ok:
			if (!snowflake::parse_layout_record(buf, len, &recorded))
				break;
			if (recorded == sf_layout)
			{
				pg_atomic_init_u32(&out->layout_recorded, 1);
				return;
			}
			out->layout_refused = true;
			strlcpy(out->refusal_message,
					"the snowflake ID layout differs from the one this data directory generated with",
					sizeof(out->refusal_message));
			snowflake::describe_layout_change(recorded, sf_layout, out->refusal_detail,
											  sizeof(out->refusal_detail));
			return;
		case snowflake::ReadResult::Failed:
			out->layout_refused = true;
			strlcpy(out->refusal_message, "could not read the recorded snowflake ID layout",
					sizeof(out->refusal_message));
			snprintf(out->refusal_detail, sizeof(out->refusal_detail),
					 "Could not %s file \"%s\": %s", error.operation, error.path,
					 strerror(error.err));
			return;
		case snowflake::ReadResult::TooLarge:
			break;
	}
	out->layout_refused = true;
	strlcpy(out->refusal_message, "could not read the recorded snowflake ID layout",
			sizeof(out->refusal_message));
	snprintf(out->refusal_detail, sizeof(out->refusal_detail),
			 "File \"%s\" is not a valid layout record", snowflake::kLayoutFile);
}

/* Creates and initialises the shared struct. */
static void
sf_shmem_startup(void)
{
	bool		found;
	SnowflakeShared fresh;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	/* file I/O before taking any lock */
	memset(&fresh, 0, sizeof(fresh));
	sf_verify_recorded_layout(&fresh);

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	sf_shared = (SnowflakeShared *) ShmemInitStruct("snowflake", sizeof(SnowflakeShared), &found);
	if (!found)
	{
		LWLockPadded *locks = GetNamedLWLockTranche(SNOWFLAKE_TRANCHE);

		memcpy(sf_shared, &fresh, sizeof(fresh));
		pg_atomic_init_u32(&sf_shared->layout_recorded,
						   pg_atomic_read_u32(&fresh.layout_recorded));
		sf_shared->gen_lock = &locks[0].lock;
		sf_shared->file_lock = &locks[1].lock;
		sf_shared->gen = snowflake::kFreshState;
	}
	LWLockRelease(AddinShmemInitLock);

	if (!found && fresh.layout_refused)
		ereport(WARNING,
				(errmsg("%s", fresh.refusal_message),
				 errdetail("%s.", fresh.refusal_detail),
				 errhint("snowflake_nextval() and the decoding functions will refuse to run; "
						 "see \"Changing the layout\" in the snowflake README.")));
}

/*---- checks shared by the SQL functions ----*/

/* Errors out unless the library was preloaded and its layout is verified. */
static void
sf_require_ready(void)
{
	if (sf_shared == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("snowflake must be loaded via shared_preload_libraries"),
				 errhint("Add snowflake to shared_preload_libraries in postgresql.conf "
						 "and restart the server.")));
	if (sf_shared->layout_refused)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("%s", sf_shared->refusal_message),
				 errdetail("%s.", sf_shared->refusal_detail),
				 errhint("Restore the previous settings and restart the server. IDs issued "
						 "under one layout decode wrongly and can collide under another; "
						 "to change it deliberately, see \"Changing the layout\" in the "
						 "snowflake README.")));
}

/* Writes pg_snowflake/layout once, before the first ID is issued. */
static void
sf_record_layout(void)
{
	char		record[512];
	int			len = snowflake::format_layout_record(sf_layout, record, sizeof(record));
	snowflake::FileError error = {"", "", 0};
	bool		ok = true;

	if (len < 0)
		elog(ERROR, "snowflake layout record does not fit its buffer");

	LWLockAcquire(sf_shared->file_lock, LW_EXCLUSIVE);
	if (pg_atomic_read_u32(&sf_shared->layout_recorded) == 0)
	{
		ok = snowflake::write_file_durably("layout", record, (size_t) len, &error);
		if (ok)
			pg_atomic_write_u32(&sf_shared->layout_recorded, 1);
	}
	LWLockRelease(sf_shared->file_lock);

	if (!ok)
	{
		errno = error.err;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not record the snowflake ID layout: could not %s \"%s\": %m",
						error.operation, error.path)));
	}
}

/*---- generation ----*/

/*
 * Sleeps until the clock may reach "wait_until" (a layout offset), outside
 * any lock, answering query cancel; fails once the total wait of this call,
 * counted from *wait_started, exceeds snowflake.max_clock_wait.
 */
static void
sf_wait_for_clock(const snowflake::Step &step, int64 now, int64 *wait_started)
{
	int64		mono = sf_monotonic_ms();
	int64		waited;
	long		sleep_ms;

	if (*wait_started < 0)
		*wait_started = mono;
	waited = mono - *wait_started;

	if (waited >= sf_max_clock_wait)
	{
		char		last[40];

		snowflake::format_utc(sf_layout.epoch_ms + step.wait_until + sf_max_clock_lead,
							  last, sizeof(last));
		ereport(ERROR,
				(errcode(ERRCODE_SYSTEM_ERROR),
				 errmsg("could not generate a snowflake ID: the clock is " INT64_FORMAT
						" ms behind the last ID issued",
						step.wait_until - now + sf_max_clock_lead),
				 errdetail("IDs of this shard have reached %s; they may run ahead of the "
						   "clock by at most snowflake.max_clock_lead (%d ms), and this call "
						   "waited snowflake.max_clock_wait (%d ms) for the clock to catch up.",
						   last, sf_max_clock_lead, sf_max_clock_wait),
				 errhint("Check the server clock (NTP steps, VM migration or resume). "
						 "Retry once it has caught up, or raise snowflake.max_clock_wait.")));
	}

	sleep_ms = (long) Min(step.wait_until - now, (int64) sf_max_clock_wait - waited);
	sleep_ms = Max(Min(sleep_ms, 100L), 1L);
	(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
					 sleep_ms, PG_WAIT_EXTENSION);
	ResetLatch(MyLatch);
	CHECK_FOR_INTERRUPTS();
}

/* Issues one ID for snowflake.shard_id. */
static int64
sf_generate(void)
{
	int64		shard = sf_shard_id;
	int64		wait_started = -1;

	sf_require_ready();
	if (RecoveryInProgress() && !sf_allow_on_standby)
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot generate snowflake IDs on a standby server"),
				 errdetail("A standby normally carries its primary's snowflake.shard_id, "
						   "so its IDs would collide with the primary's."),
				 errhint("Generate IDs on the primary. On a standby that has a shard ID "
						 "of its own, set snowflake.allow_on_standby = on.")));
	if (shard < 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("snowflake.shard_id is not set"),
				 errdetail("Every server that generates IDs needs a shard ID of its own; "
						   "two servers sharing one would issue duplicate IDs."),
				 errhint("Choose a shard ID between 0 and " INT64_FORMAT " that no other "
						 "server uses and set it, for example: ALTER SYSTEM SET "
						 "snowflake.shard_id = 1; SELECT pg_reload_conf();",
						 sf_layout.max_shard_id())));
	if (pg_atomic_read_u32(&sf_shared->layout_recorded) == 0)
		sf_record_layout();

	for (;;)
	{
		int64		now = sf_wall_ms() - sf_layout.epoch_ms;
		snowflake::Step step;

		LWLockAcquire(sf_shared->gen_lock, LW_EXCLUSIVE);
		step = snowflake::next_id(sf_shared->gen, sf_layout, shard, now, sf_max_clock_lead);
		LWLockRelease(sf_shared->gen_lock);

		switch (step.outcome)
		{
			case Outcome::Issued:
				return step.id;
			case Outcome::Wait:
				sf_wait_for_clock(step, now, &wait_started);
				break;
			case Outcome::ClockBeforeEpoch:
				ereport(ERROR,
						(errcode(ERRCODE_SYSTEM_ERROR),
						 errmsg("could not generate a snowflake ID: the clock reads earlier "
								"than snowflake.epoch"),
						 errhint("Check the server clock.")));
				break;
			case Outcome::Exhausted:
				{
					char		last[40];

					snowflake::format_utc(sf_layout.last_unix_ms(), last, sizeof(last));
					ereport(ERROR,
							(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
							 errmsg("could not generate a snowflake ID: the timestamp field "
									"is used up"),
							 errdetail("This layout represents times up to %s.", last)));
				}
				break;
		}
	}
}

/*---- SQL-callable functions ----*/

extern "C" Datum
snowflake_nextval(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(sf_generate());
}

/* Fetches argument 0 as an ID, rejecting negative values. */
static snowflake::Decoded
sf_decode_arg(FunctionCallInfo fcinfo)
{
	int64		id = PG_GETARG_INT64(0);

	sf_require_ready();
	if (id < 0)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("invalid snowflake ID: " INT64_FORMAT, id),
				 errdetail("Snowflake IDs are never negative.")));
	return snowflake::decode(sf_layout, id);
}

extern "C" Datum
snowflake_timestamp(PG_FUNCTION_ARGS)
{
	PG_RETURN_TIMESTAMPTZ(sf_timestamptz(sf_decode_arg(fcinfo).unix_ms));
}

extern "C" Datum
snowflake_shard_id(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT32((int32) sf_decode_arg(fcinfo).shard);
}

extern "C" Datum
snowflake_sequence(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT32((int32) sf_decode_arg(fcinfo).sequence);
}

/* Builds a tuple of the function's declared row type. */
static Datum
sf_make_record(FunctionCallInfo fcinfo, Datum *values, bool *nulls)
{
	TupleDesc	tupdesc;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	tupdesc = BlessTupleDesc(tupdesc);
	return HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls));
}

extern "C" Datum
snowflake_decode(PG_FUNCTION_ARGS)
{
	snowflake::Decoded d = sf_decode_arg(fcinfo);
	Datum		values[3];
	bool		nulls[3] = {false, false, false};

	values[0] = TimestampTzGetDatum(sf_timestamptz(d.unix_ms));
	values[1] = Int32GetDatum((int32) d.shard);
	values[2] = Int32GetDatum((int32) d.sequence);
	PG_RETURN_DATUM(sf_make_record(fcinfo, values, nulls));
}

extern "C" Datum
snowflake_layout(PG_FUNCTION_ARGS)
{
	Datum		values[8];
	bool		nulls[8] = {false, false, false, false, false, false, false, false};

	values[0] = TimestampTzGetDatum(sf_timestamptz(sf_layout.epoch_ms));
	values[1] = Int32GetDatum(sf_layout.timestamp_bits());
	values[2] = Int32GetDatum(sf_layout.shard_bits);
	values[3] = Int32GetDatum(sf_layout.sequence_bits);
	values[4] = Int32GetDatum((int32) sf_layout.max_shard_id());
	values[5] = Int64GetDatum(sf_layout.max_sequence() + 1);
	values[6] = TimestampTzGetDatum(sf_timestamptz(sf_layout.last_unix_ms()));
	values[7] = Int32GetDatum(sf_shard_id);
	nulls[7] = sf_shard_id < 0;
	PG_RETURN_DATUM(sf_make_record(fcinfo, values, nulls));
}
