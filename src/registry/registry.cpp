/*-------------------------------------------------------------------------
 *
 * registry.cpp
 *		The shard registry, as the rest of the library sees it: the
 *		snowflake.registry* settings, its shared memory, the fencing check of
 *		every generating call, the wait for a freshness mark, and what
 *		snowflake_registry() shows.  The worker that talks to the registry
 *		is lease.cpp; the backends are backend_*.cpp.
 *
 * Backends.  snowflake.registry chooses one by its form: etcd client URLs
 * (backend_etcd.cpp) or a libpq connection string (backend_pg.cpp).  Both
 * serve the one lease, fencing and freshness logic of lease.cpp through the
 * small interface of backend.hpp.
 *
 * Fencing.  Only the registry worker talks to the registry, never under a
 * lock.  It publishes "grant": the shard held and a deadline on
 * CLOCK_MONOTONIC (ms), one 64-bit atomic.  The deadline is the send time of
 * the last successful renewal (or grant) plus the lease TTL minus a margin of
 * TTL/5, minus the coarse clock's resolution; every generating call compares
 * it with CLOCK_MONOTONIC_COARSE and refuses past it.  The registry starts a
 * lease's TTL when it processes the request (etcd), or stamps the heartbeat
 * with now() when it starts the statement (PostgreSQL), either way after we
 * sent it, so the lease cannot expire there before our deadline unless the
 * two clocks run at rates 20% apart; the margin also covers a backend paused
 * between the check and the ID.  Even then no ID repeats: see freshness.
 *
 * Freshness.  The slot of the held shard never gets a reserved_offset above
 * "published", the mark the worker has put into the registry (the slot's
 * cap, applied in mark.cpp's sf_raise_reserved).  The worker publishes a mark
 * up to its lease deadline (+ max_clock_lead + 1 s) after every renewal,
 * idle or not, so generating calls never wait for it in steady state and go
 * on to the deadline when the registry fails; a call that needs a later mark
 * (IDs ahead of the clock, a clock stepped forward) asks the worker and
 * waits for it (sf_registry_await).  A
 * server that claims a shard resumes strictly above its mark, whoever
 * published it, so whatever a previous, perhaps still running, holder issued
 * lies below.
 *
 * Errors.  Nothing about the registry is ever an ERROR: a failed or garbled
 * request is a state and a last_error in the view, and the worker retries.
 * The worker's clients live in plain memory with no destructor; should
 * something else raise an ERROR in the worker (out of memory), the process
 * exits, its exit callback clears the grant, and the postmaster restarts it.
 *
 * The registry layer: it may call the state layer (state.hpp, shmem, mark).
 *
 *-------------------------------------------------------------------------
 */
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "registry/backend_etcd.hpp"
#include "registry/backend_pg.hpp"
#include "registry/etcd.hpp"
#include "state/fastpath.hpp"
#include "state/mark.hpp"
#include "registry/registry.hpp"
#include "settings/guc.hpp"
#include "registry/registry_shared.hpp"

extern "C"
{
#include "postgres.h"
#include "access/xlog.h"
#include "miscadmin.h"
#include "nodes/nodes.h"
#include "postmaster/bgworker.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "tcop/utility.h"
#include "utils/guc.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"
}

/*---- settings ----*/

char	   *sf_registry = NULL;
char	   *sf_registry_prefix = NULL;
int			sf_registry_lease = 30;
char	   *sf_registry_shards = NULL;
int			sf_registry_max_skew = 1000;

bool		sf_registry_enabled = false;

SfPool	   *sf_pool = NULL;

/*---- shared state ----*/

const char *const sf_state_names[] = {
	"off", "claiming", "held", "expired", "pool full", "unreachable", "mark refused",
	"clock skew", "failover pause", "registry refused"
};

SfRegistryShared *sf_reg = NULL;
const SfRegistryBackend *sf_backend = &sf_etcd_backend;
int64		sf_coarse_res_ms = 1;

static ProcessUtility_hook_type prev_process_utility_hook = NULL;

/*---- settings: checks ----*/

/*
 * Whether a value of snowflake.registry is usable: etcd client URLs (http://
 * or https://, comma-separated) choose the etcd backend; a postgresql:// or
 * postgres:// URI or a key=value libpq connection string, the PostgreSQL
 * backend.  If not, *detail says why, never quoting the value (it may hold a
 * password).
 */
static bool
sf_registry_value_ok(const char *value, char *detail, size_t len)
{
	char		endpoints[etcd::kMaxEndpoints][etcd::kMaxEndpointLen + 1];
	char		err[256];
	int			count;

	if (sf_pg_target_is(value))
	{
		if (sf_pg_target_check(value, err, sizeof(err)))
			return true;
		snprintf(detail, len, "snowflake.registry is not a valid PostgreSQL connection "
				 "string: %s.", err);
		return false;
	}
	if (etcd::parse_endpoints(value, endpoints, etcd::kMaxEndpoints, &count, err, sizeof(err)))
		return true;
	snprintf(detail, len, "snowflake.registry must be a comma-separated list of etcd client "
			 "URLs such as \"http://10.0.0.1:2379,http://10.0.0.2:2379\", or a PostgreSQL "
			 "connection string such as \"postgresql://registry.example.com/snowflake\" or "
			 "\"host=registry.example.com dbname=snowflake\": %s.", err);
	return false;
}

/*
 * snowflake.registry's check.  PostgreSQL's own message for a refused value
 * ("invalid value for parameter ...: VALUE") would print the value, password
 * included: the message is ours, at start (a WARNING, then the FATAL of
 * sf_registry_define_settings), at a reload (the postmaster's LOG) and for
 * ALTER SYSTEM (sf_registry_utility refuses it first, without the statement).
 */
static bool
sf_check_registry(char **newval, void **, GucSource)
{
	char		detail[768];

	if (sf_registry_value_ok(*newval ? *newval : "", detail, sizeof(detail)))
		return true;
	GUC_check_errmsg("invalid value for parameter \"snowflake.registry\"");
	GUC_check_errdetail("%s The value is not shown, since it may hold a password.", detail);
	return false;
}

static bool
sf_check_prefix(char **newval, void **, GucSource)
{
	const char *p = *newval ? *newval : "";
	size_t		len = strlen(p);

	if (len >= 2 && len <= 200 && p[0] == '/' && p[len - 1] != '/')
	{
		bool		ok = true;

		for (const char *q = p; *q; q++)
			if ((unsigned char) *q <= 0x20 || (unsigned char) *q >= 0x7f)
				ok = false;
		if (ok)
			return true;
	}
	GUC_check_errdetail("snowflake.registry_prefix must start with \"/\", not end with \"/\", "
						"and be 2 to 200 printable ASCII characters without spaces, such as "
						"\"/snowflake/default\".");
	return false;
}
static bool
sf_check_pool(char **newval, void **extra, GucSource source)
{
	int64		max = sf_layout.max_shard_id();
	const char *text = *newval ? *newval : "";
	int			count = 0;
	SfPool	   *pool;
	snowflake::RangeProblem problem;

	/*
	 * The built-in default '0-1023' means the whole shard field, whatever its
	 * width; with datacenters, this server's datacenter's part of it.
	 */
	if (source == PGC_S_DEFAULT && strcmp(text, "0-1023") == 0)
	{
		static char whole[64];
		int64		lo, hi;

		sf_datacenter_shards(&lo, &hi);
		snprintf(whole, sizeof(whole), INT64_FORMAT "-" INT64_FORMAT, lo, hi);
		text = whole;
	}
	problem = snowflake::parse_shard_ranges(text, max, NULL, 0, &count);
	if (problem == snowflake::RangeProblem::None && count == 0)
	{
		GUC_check_errdetail("snowflake.registry_shards must name at least one shard.");
		return false;
	}
	if (problem == snowflake::RangeProblem::None)
	{
		size_t		size = offsetof(SfPool, ranges) + sizeof(snowflake::ShardRange) * count;
		pool = (SfPool *) sf_guc_malloc(size);
		if (pool == NULL)
		{
			GUC_check_errcode(ERRCODE_OUT_OF_MEMORY);
			return false;
		}
		(void) snowflake::parse_shard_ranges(text, max, pool->ranges, count, &pool->count);
		*extra = pool;
		return true;
	}
	if (problem == snowflake::RangeProblem::OutOfRange)
		GUC_check_errdetail("Shard IDs go from 0 to " INT64_FORMAT
							" because snowflake.shard_bits is %d.", max, sf_layout.shard_bits);
	else if (problem == snowflake::RangeProblem::Reversed)
		GUC_check_errdetail("A range N-M needs N <= M.");
	else
		GUC_check_errdetail("snowflake.registry_shards is a comma-separated list of shard IDs "
							"and ranges, such as \"0-1023\" or \"0-63,128\".");
	return false;
}

static void
sf_assign_pool(const char *, void *extra)
{
	sf_pool = (SfPool *) extra;
}

/*
 * With datacenters a server claims a worker of its own datacenter: it must
 * have one, and an explicit pool must lie in it.  Stops the server otherwise
 * (at start, like every other disagreement of the layout settings).
 */
static void
sf_check_datacenter_pool(void)
{
	int64		lo, hi;

	if (sf_layout.datacenter_bits == 0)
		return;
	if (sf_datacenter_id < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("snowflake.registry with snowflake.datacenter_bits %d needs "
						"snowflake.datacenter_id", sf_layout.datacenter_bits),
				 errdetail("With datacenters, a server claims a worker within its own "
						   "datacenter's part of the shard field."),
				 errhint("Set snowflake.datacenter_id to this server's datacenter, 0 to "
						 INT64_FORMAT ".", sf_layout.max_datacenter_id())));
	sf_datacenter_shards(&lo, &hi);
	for (int i = 0; sf_pool != NULL && i < sf_pool->count; i++)
		if (sf_pool->ranges[i].lo < lo || sf_pool->ranges[i].hi > hi)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("snowflake.registry_shards \"%s\" reaches outside datacenter %d",
							sf_registry_shards, sf_datacenter_id),
					 errdetail("With snowflake.datacenter_bits %d, datacenter %d has shards "
							   INT64_FORMAT " to " INT64_FORMAT " (workers 0 to " INT64_FORMAT ").",
							   sf_layout.datacenter_bits, sf_datacenter_id, lo, hi,
							   sf_layout.max_worker_id()),
					 errhint("List only shards of this server's datacenter, or leave "
							 "snowflake.registry_shards unset to claim from all of them.")));
}

void
sf_registry_define_settings(void)
{
	/* never printed: a connection string may hold a password */
	static const SfStringStart registry_start = {
		NULL, "The value is not shown, since it may hold a password.",
		"See the warning above for what is wrong with it; the snowflake "
		"extension refuses to start rather than fall back to a default."
	};

	/* superusers only: a connection string may hold a password */
	sf_define_setting("snowflake.registry",
					  "The shard registry: etcd client URLs (comma-separated) or a "
					  "PostgreSQL connection string; empty: no registry.",
					  "With a registry this server claims its shard there under a lease. "
					  "Fixed at server start.",
					  &sf_registry, "", PGC_POSTMASTER, GUC_SUPERUSER_ONLY, sf_check_registry,
					  NULL, NULL, &registry_start);
	sf_define_setting("snowflake.registry_prefix",
					  "Name of this ID space in the registry (etcd's key prefix).",
					  "Servers that share a prefix share the shard field. Fixed at server start.",
					  &sf_registry_prefix, "/snowflake/default", PGC_POSTMASTER, 0,
					  sf_check_prefix);
	sf_define_setting("snowflake.registry_lease",
					  "TTL of this server's lease in the shard registry.",
					  "Generation stops within this time of losing the registry. Fixed at server start.",
					  &sf_registry_lease, 30, 2, 3600, PGC_POSTMASTER, GUC_UNIT_S);
	sf_define_setting("snowflake.registry_shards",
					  "Shards this server may claim from the registry, such as 0-1023.",
					  "The default is the whole shard field. Fixed at server start.",
					  &sf_registry_shards, "0-1023", PGC_POSTMASTER, 0, sf_check_pool,
					  sf_assign_pool);
	sf_define_setting("snowflake.registry_max_skew",
					  "How far this server's clock may be from the registry's for it to claim a shard.",
					  "Beyond it (by the round trip's measure) the server claims nothing and "
					  "a holder warns; 0 turns the check off.",
					  &sf_registry_max_skew, 1000, 0, 3600000, PGC_SIGHUP, GUC_UNIT_MS);
	/* at start nonsense stops the server, before the pool is checked against the datacenter */
	sf_require_settings_applied();
	sf_registry_enabled = sf_registry[0] != '\0';
	if (sf_registry_enabled)
		sf_check_datacenter_pool();
	sf_backend = sf_registry_enabled && sf_pg_target_is(sf_registry) ? &sf_pg_backend :
		&sf_etcd_backend;
}

/* The grant in shared memory, for the inline check in registry.hpp. */
pg_atomic_uint64 *sf_registry_grant = NULL;

/*---- clocks ----*/

/* A monotonic instant (ns) as wall-clock time, for the view. */
TimestampTz
sf_mono_to_timestamptz(int64 mono_ns)
{
	int64		delta_us = (mono_ns - sf_clock_ns(CLOCK_MONOTONIC)) / 1000;

	return GetCurrentTimestamp() + delta_us;
}

/*---- how messages name the registry ----*/

/* snowflake.registry as messages and the view show it: no password. */
const char *
sf_registry_display(void)
{
	static char shown[1024];
	static bool done = false;

	if (!done)
	{
		if (sf_backend == &sf_pg_backend)
			sf_pg_target_display(sf_registry, shown, sizeof(shown));
		else
			strlcpy(shown, sf_registry, sizeof(shown));
		done = true;
	}
	return shown;
}

const char *
sf_registry_noun(void)
{
	return sf_backend == &sf_pg_backend ? "the PostgreSQL registry" : "etcd";
}

/* What snowflake.registry_prefix is to the registry: "etcd prefix", "ID space". */
const char *
sf_registry_prefix_noun(void)
{
	return sf_backend == &sf_pg_backend ? "ID space" : "etcd prefix";
}

/* The width of the worker field of a shard (the whole shard field without datacenters). */
int
sf_registry_worker_bits(void)
{
	return sf_layout.worker_bits();
}

/*---- shared memory ----*/

/* The registry's shared memory to ask for (the module's shmem_request_hook). */
Size
sf_registry_shmem_size(void)
{
	return MAXALIGN(sizeof(SfRegistryShared));
}

/* Creates the registry's shared fields (the module's shmem_startup_hook). */
void
sf_registry_shmem_init(void)
{
	bool		found;

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	sf_reg = (SfRegistryShared *) ShmemInitStruct("snowflake registry",
												  sizeof(SfRegistryShared), &found);
	if (!found)
	{
		memset(sf_reg, 0, sizeof(*sf_reg));
		pg_atomic_init_u64(&sf_reg->grant, 0);
		pg_atomic_init_u64(&sf_reg->wanted, 0);
		pg_atomic_init_u32(&sf_reg->failing, 0);
		pg_atomic_init_u64(&sf_reg->refusals, 0);
		SpinLockInit(&sf_reg->mutex);
		sf_reg->state = sf_registry_enabled ? REG_CLAIMING : REG_OFF;
		sf_reg->shard = -1;
		sf_reg->published_ms = -1;
	}
	LWLockRelease(AddinShmemInitLock);
	sf_registry_grant = &sf_reg->grant;
}

/*---- the checks of generating calls ----*/

/* Raises the error that says why this server may not generate now. */
void
sf_registry_refuse(int64 shard, bool explicit_shard, int64 held)
{
	SfRegState	state;
	char		error[512], holder[256];
	int32		target;
	bool		skew_known;
	int64		skew_ms, skew_error_ms;

	SpinLockAcquire(&sf_reg->mutex);
	state = sf_reg->state;
	target = sf_reg->shard;
	memcpy(error, sf_reg->last_error, sizeof(error));
	memcpy(holder, sf_reg->holder, sizeof(holder));
	skew_known = sf_reg->skew_known;
	skew_ms = sf_reg->skew_ms;
	skew_error_ms = sf_reg->skew_error_ms;
	SpinLockRelease(&sf_reg->mutex);

	if (held >= 0 && explicit_shard && shard != held)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("shard " INT64_FORMAT " is not held by this server", shard),
				 errdetail("With snowflake.registry set, a server generates IDs only for the "
						   "shard it holds in the registry, shard " INT64_FORMAT ".", held),
				 errhint("Call snowflake_nextval() without a shard ID.")));
	/* the registry refuses generation itself (not a call's wrong shard) */
	pg_atomic_fetch_add_u64(&sf_reg->refusals, 1);
	if (state == REG_REFUSED)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 target >= 0 ?
				 errmsg("cannot generate snowflake IDs: the freshness mark of shard %d in the "
						"registry is refused", target) :
				 errmsg("cannot generate snowflake IDs: the freshness marks of the free shards "
						"of the pool \"%s\" in the registry are refused", sf_registry_shards),
				 errdetail("%s", error),
				 errhint("Set the mark to a time (Unix ms) at or above the last ID any server "
						 "issued on that shard; the registry worker tries again on its own.")));
	if (state == REG_SKEW)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot generate snowflake IDs: this server's clock is too far from "
						"the registry's to claim a shard"),
				 skew_known ?
				 errdetail("This server's clock is " INT64_FORMAT " ms %s %s's (give or take "
						   INT64_FORMAT " ms), more than snowflake.registry_max_skew (%d ms).",
						   skew_ms < 0 ? -skew_ms : skew_ms, skew_ms < 0 ? "behind" : "ahead of",
						   sf_registry_noun(), skew_error_ms, sf_registry_max_skew) :
				 errdetail("%s", error),
				 errhint("Check the time synchronisation (NTP) of this server and of the "
						 "registry; the registry worker claims a shard once the clocks agree.")));
	if (state == REG_FAILOVER)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot generate snowflake IDs: the registry failed over lately and "
						"takes no claim yet"),
				 errdetail("%s", error),
				 errhint("Nothing to do: the registry worker claims a shard once the pause "
						 "is over.  A registry with synchronous replication needs no pause; "
						 "see the operations guide.")));
	if (state == REG_UNSAFE)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot generate snowflake IDs: %s cannot keep what it acknowledges, "
						"so no shard is taken from it", sf_registry_noun()),
				 errdetail("%s", error),
				 errhint("Set fsync = on on the registry's server; the registry worker claims "
						 "a shard once it is.")));
	if (holder[0] != '\0' && (state == REG_CLAIMING || state == REG_POOL_FULL))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 state == REG_POOL_FULL ?
				 errmsg("cannot generate snowflake IDs: every shard of the pool \"%s\" is held "
						"by another server", sf_registry_shards) :
				 errmsg("cannot generate snowflake IDs: shard %d is held by another server",
						target),
				 errdetail("%s", holder),
				 errhint("The registry worker keeps trying and takes a shard as soon as one is "
						 "free; see the snowflake_registry view.")));
	if (state == REG_EXPIRED || state == REG_HELD)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot generate snowflake IDs: the registry lease of shard %d is not "
						"known to be valid", target),
				 errdetail("No keep-alive of the lease has succeeded in time (last error: %s); "
						   "another server may take the shard once the lease expires.",
						   error[0] ? error : "none"),
				 sf_backend == &sf_pg_backend ?
				 errhint("Check that the registry database (snowflake.registry) is reachable "
						 "and writable; generation resumes on its own once the lease is renewed "
						 "or a shard is claimed again.") :
				 errhint("Check that etcd (snowflake.registry) is reachable and has a quorum; "
						 "generation resumes on its own once the lease is renewed or a "
						 "shard is claimed again.")));
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("cannot generate snowflake IDs: this server holds no shard in the "
					"registry yet"),
			 state == REG_UNREACHABLE ?
			 errdetail("The registry worker is trying to reach %s at \"%s\" (%s \"%s\"); "
					   "last error: %s.",
					   sf_registry_noun(), sf_registry_display(), sf_registry_prefix_noun(),
					   sf_registry_prefix, error[0] ? error : "none") :
			 errdetail("The registry worker is %s (%s) in %s at \"%s\", %s \"%s\"; "
					   "last error: %s.",
					   state == REG_POOL_FULL ? "waiting for a free shard" : "claiming a shard",
					   sf_shard_id >= 0 ? "snowflake.shard_id" : "snowflake.registry_shards",
					   sf_registry_noun(), sf_registry_display(), sf_registry_prefix_noun(),
					   sf_registry_prefix, error[0] ? error : "none"),
			 errhint("The worker keeps trying; see the snowflake_registry view.")));
}

/*
 * The freshness mark the held slot of shard may reserve up to (its cap), or
 * -1 when it has no slot (never given one here: this only looks).
 */
int64
sf_registry_cap(int64 shard)
{
	ShardSlot  *slot = sf_slot_if_any(shard);

	return slot == NULL ? -1 : (int64) pg_atomic_read_u64(&slot->cap);
}

void
sf_registry_await(ShardSlot *slot, int64 wanted, int64 *started_us)
{
	int64		shard = slot->shard_id;
	int64		now_us;
	uint64		cur;
	Latch	   *latch;

	if (!sf_registry_enabled)
		return;
	if (sf_registry_covers(slot, wanted))
		return;
	(void) sf_registry_check(shard, true);

	/* ask for it: wanted = max(wanted, ours) */
	cur = pg_atomic_read_u64(&sf_reg->wanted);
	while (cur < (uint64) (wanted + 1) &&
		   !pg_atomic_compare_exchange_u64(&sf_reg->wanted, &cur, (uint64) (wanted + 1)))
		;
	SpinLockAcquire(&sf_reg->mutex);
	latch = sf_reg->worker_latch;
	SpinLockRelease(&sf_reg->mutex);
	if (latch)
		SetLatch(latch);

	now_us = sf_clock_ns(CLOCK_MONOTONIC) / 1000;
	if (*started_us < 0)
	{
		*started_us = now_us;
		pg_atomic_fetch_add_u64(&slot->registry_waits, 1);
	}
	else if (now_us - *started_us >= (int64) sf_max_clock_wait * 1000)
	{
		pg_atomic_fetch_add_u64(&slot->refusals_registry_mark, 1);
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("could not generate a snowflake ID: the registry has not published a "
						"freshness mark far enough ahead"),
				 errdetail("IDs of shard " INT64_FORMAT " may only carry timestamps up to the "
						   "mark published in the registry, and this call waited "
						   "snowflake.max_clock_wait (%d ms) for the registry worker to move it.",
						   shard, sf_max_clock_wait),
				 errhint("Check that the registry (snowflake.registry) is reachable; see the "
						 "snowflake_registry view.")));
	}
	(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 2,
					 PG_WAIT_EXTENSION);
	ResetLatch(MyLatch);
	pg_atomic_fetch_add_u64(&slot->registry_wait_us,
							(uint64) (sf_clock_ns(CLOCK_MONOTONIC) / 1000 - now_us));
	CHECK_FOR_INTERRUPTS();
}

/*---- ALTER SYSTEM ----*/

/*
 * ALTER SYSTEM SET snowflake.registry with a value its check refuses: refused
 * here, with the same message, and with the statement kept out of the log
 * (log_min_error_statement would log it with the error, and it holds the
 * value, which may hold a password).  Everything else goes on as before.
 */
static void
sf_registry_utility(PlannedStmt *pstmt, const char *query, bool read_only_tree,
					ProcessUtilityContext context, ParamListInfo params,
					QueryEnvironment *query_env, DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *parsetree = pstmt->utilityStmt;

	if (IsA(parsetree, AlterSystemStmt))
	{
		VariableSetStmt *set = ((AlterSystemStmt *) parsetree)->setstmt;

		if (set->kind == VAR_SET_VALUE && set->name != NULL &&
			pg_strcasecmp(set->name, "snowflake.registry") == 0)
		{
			char	   *value = ExtractSetVariableArgs(set);
			char		detail[768];

			if (value != NULL && !sf_registry_value_ok(value, detail, sizeof(detail)))
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("invalid value for parameter \"snowflake.registry\""),
						 errdetail("%s The value is not shown, since it may hold a password.",
								   detail),
						 errhidestmt(true)));
		}
	}
	if (prev_process_utility_hook)
		prev_process_utility_hook(pstmt, query, read_only_tree, context, params, query_env,
								  dest, qc);
	else
		standard_ProcessUtility(pstmt, query, read_only_tree, context, params, query_env,
								dest, qc);
}

/*---- module load ----*/

void
sf_registry_init(void)
{
	prev_process_utility_hook = ProcessUtility_hook;
	ProcessUtility_hook = sf_registry_utility;

	if (!sf_registry_enabled)
		return;
	/* no slot reserves anything before the worker publishes its mark */
	sf_slot_caps = true;
	/* a standby claims nothing: the worker starts at promotion */
	sf_register_worker("snowflake_registry_worker_main", "snowflake registry worker",
					   BGWORKER_SHMEM_ACCESS);
}

/*---- the view ----*/

/*
 * Whether a generating call would issue an ID now, as far as the registry
 * decides: the call path's two checks, the grant (sf_registry_check) and a
 * published mark that covers the next ID (sf_registry_covers, as
 * sf_registry_await asks it), or else a worker in contact with the registry,
 * which publishes the mark such a call asks for within its wait.  The next ID
 * lies at the clock or, when IDs ran ahead of it, at the last one's
 * timestamp.
 */
static bool
sf_registry_would_issue(void)
{
	int64		held;
	int64		reserved;
	ShardSlot  *slot;
	snowflake::GeneratorState gen;

	if (!sf_registry_granted(&held) || (slot = sf_slot_if_any(held)) == NULL)
		return false;
	sf_slot_snapshot(slot, &gen, &reserved, NULL);
	return sf_registry_covers(slot, Max(sf_now_offset(), gen.last_offset)) ||
		pg_atomic_read_u32(&sf_reg->failing) == 0;
}

/* What snowflake_registry() shows: one consistent copy. */
void
sf_registry_describe(SfRegistryView *view)
{
	SfRegistryShared copy;
	int64		held;

	memset(view, 0, sizeof(*view));
	view->enabled = sf_registry_enabled;
	view->backend = sf_backend->name;
	view->endpoints = sf_registry_enabled ? sf_registry_display() : "";
	view->prefix = sf_registry_prefix;
	view->shard = -1;
	view->datacenter = -1;
	view->worker = -1;
	view->published_ms = -1;
	if (sf_reg == NULL)
	{
		view->state = sf_state_names[REG_OFF];
		return;
	}
	SpinLockAcquire(&sf_reg->mutex);
	memcpy(&copy, sf_reg, sizeof(copy));
	SpinLockRelease(&sf_reg->mutex);

	/* the worker may be busy with a request when the deadline passes */
	if (copy.state == REG_HELD && !sf_registry_granted(&held))
		copy.state = REG_EXPIRED;
	/* a standby claims nothing: its worker starts at promotion */
	if (RecoveryInProgress())
		copy.state = REG_OFF;
	strlcpy(view->endpoint, copy.endpoint, sizeof(view->endpoint));
	view->state = sf_state_names[copy.state];
	view->shard = copy.shard;
	if (copy.shard >= 0)
	{
		int			bits = sf_registry_worker_bits();

		view->datacenter = copy.shard >> bits;
		view->worker = copy.shard & (int32) ((INT64CONST(1) << bits) - 1);
	}
	view->skew_known = copy.skew_known;
	view->skew_ms = copy.skew_ms;
	view->skew_error_ms = copy.skew_error_ms;
	view->max_skew_ms = sf_registry_max_skew;
	view->lease_id = copy.lease_id;
	view->lease_ttl = copy.lease_ttl;
	view->lease_deadline = copy.deadline_ns == 0 ? 0 : sf_mono_to_timestamptz(copy.deadline_ns);
	view->last_keepalive = copy.last_keepalive;
	view->published_ms = copy.published_ms;
	strlcpy(view->last_error, copy.last_error, sizeof(view->last_error));
	view->requests = copy.requests;
	view->bytes_sent = copy.bytes_sent;
	view->bytes_received = copy.bytes_received;
	view->errors = copy.errors;
	view->refusals = pg_atomic_read_u64(&sf_reg->refusals);
	strlcpy(view->replication, copy.replication, sizeof(view->replication));
	view->generating = sf_registry_enabled && sf_registry_would_issue();
}
