/*-------------------------------------------------------------------------
 *
 * registry.cpp
 *		Shard IDs from etcd: the snowflake.registry* settings, the registry
 *		worker (claims a shard under a lease, keeps the lease alive, publishes
 *		the freshness mark, releases at shutdown), the fencing check of every
 *		generating call, and the snowflake_registry view.
 *
 * Keys, under snowflake.registry_prefix P:
 *	P/shards/<id>/holder	created only if absent, attached to this server's
 *							lease; says who holds the shard.  It disappears
 *							when the lease expires or is revoked.
 *	P/shards/<id>/mark		the freshness mark: Unix ms at or above every ID
 *							the holder may issue.  Written only while the
 *							holder key is attached to the writer's lease.
 *
 * Fencing.  Only this worker talks to etcd, never under a lock.  It publishes
 * "grant": the shard held and a deadline on CLOCK_MONOTONIC (ms), one 64-bit
 * atomic.  The deadline is the send time of the last successful keep-alive
 * (or grant) plus the lease TTL minus a margin of TTL/5, minus the coarse
 * clock's resolution; every generating call compares it with
 * CLOCK_MONOTONIC_COARSE and refuses past it.  etcd starts a lease's TTL
 * when it processes the request, which is after we sent it, so the lease
 * cannot expire in etcd before our deadline unless the two clocks run at
 * rates 20% apart; the margin also covers a backend paused between the check
 * and the ID.  Even then no ID repeats: see freshness.
 *
 * Freshness.  The slot of the held shard never gets a reserved_offset above
 * "published", the mark this worker has put into etcd (sf_registry_cap(),
 * applied in state.cpp's sf_raise_reserved).  The worker publishes a mark
 * 2 to 5 s ahead of clock + max_clock_lead while IDs are being issued, so
 * generating calls never wait for it in steady state; a call that needs a
 * later mark asks the worker and waits for it (sf_registry_await).  A server
 * that claims a shard resumes strictly above its mark, whoever published it,
 * so whatever a previous, perhaps still running, holder issued lies below.
 *
 * Errors.  Nothing about etcd is ever an ERROR: a failed or garbled request
 * is a state and a last_error in the view, and the worker retries.  The
 * worker's libcurl handle lives in plain memory with no destructor; should
 * something else raise an ERROR in the worker (out of memory), the process
 * exits, its exit callback clears the grant, and the postmaster restarts it.
 *
 * Locking.  "grant", "published", "pub_shard" and "wanted" are atomics.  The
 * display fields (state, errors, counters for the view) are guarded by the
 * spinlock "mutex", held only to copy them.  The worker resumes the slot of
 * a claimed shard and settles it at release under the slot's LWLock, doing
 * no I/O while holding it.
 *
 *-------------------------------------------------------------------------
 */
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <unistd.h>

#include "etcd.hpp"
#include "registry.hpp"
#include "statefile.hpp"

extern "C"
{
PG_FUNCTION_INFO_V1(snowflake_registry);
}

/*---- settings ----*/

static char *sf_registry = NULL;
static char *sf_registry_prefix = NULL;
static int	sf_registry_lease = 30;
static char *sf_registry_shards = NULL;

bool		sf_registry_enabled = false;

/* The parsed pool: the GUC's "extra". */
typedef struct SfPool
{
	int			count;
	snowflake::ShardRange ranges[FLEXIBLE_ARRAY_MEMBER];
} SfPool;

static SfPool *sf_pool = NULL;

/*---- shared state ----*/


typedef enum SfRegState
{
	REG_OFF,
	REG_CLAIMING,
	REG_HELD,
	REG_EXPIRED,
	REG_POOL_FULL,
	REG_UNREACHABLE,
	REG_REFUSED
} SfRegState;

static const char *const sf_state_names[] = {
	"off", "claiming", "held", "expired", "pool full", "unreachable", "mark refused"
};

typedef struct SfRegistryShared
{
	/* (shard + 1) << 43 | deadline (CLOCK_MONOTONIC ms); 0: nothing held */
	pg_atomic_uint64 grant;
	/* the freshness mark in etcd for pub_shard - 1, as a layout offset + 1 */
	pg_atomic_uint64 published;
	pg_atomic_uint32 pub_shard;
	/* a generating call waits for the mark to cover this offset + 1 */
	pg_atomic_uint64 wanted;
	/* the last attempt to publish a mark failed (etcd unreachable): 1 */
	pg_atomic_uint32 publish_failed;

	slock_t		mutex;
	/* under mutex: what the view shows */
	Latch	   *worker_latch;
	SfRegState	state;
	int32		shard;			/* held or being claimed, -1 */
	int64		lease_id;
	int64		lease_ttl;
	int64		deadline_ns;	/* CLOCK_MONOTONIC; 0: none */
	TimestampTz last_keepalive;
	int64		published_ms;	/* Unix ms, -1: none */
	char		endpoint[etcd::kMaxEndpointLen + 1];
	char		last_error[256];
	char		holder[256];	/* holder of the shard we could not claim */
	uint64		requests;
	uint64		bytes_sent;
	uint64		bytes_received;
} SfRegistryShared;

static SfRegistryShared *sf_reg = NULL;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/* Resolution of CLOCK_MONOTONIC_COARSE, in ms, rounded up (at least 1). */
static int64 sf_coarse_res_ms = 1;

/*---- settings: checks ----*/

static bool
sf_check_registry(char **newval, void **, GucSource)
{
	char		endpoints[etcd::kMaxEndpoints][etcd::kMaxEndpointLen + 1];
	char		err[256];
	int			count;

	if (etcd::parse_endpoints(*newval ? *newval : "", endpoints, etcd::kMaxEndpoints, &count,
							  err, sizeof(err)))
		return true;
	GUC_check_errdetail("snowflake.registry must be a comma-separated list of etcd client "
						"URLs such as \"http://10.0.0.1:2379,http://10.0.0.2:2379\": %s.", err);
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

	/* the built-in default '0-1023' means the whole shard field, whatever its width */
	if (source == PGC_S_DEFAULT && strcmp(text, "0-1023") == 0)
	{
		static char whole[32];

		snprintf(whole, sizeof(whole), "0-" INT64_FORMAT, max);
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

#if PG_VERSION_NUM >= 160000
		pool = (SfPool *) guc_malloc(LOG, size);
#else
		pool = (SfPool *) malloc(size);
#endif
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

void
sf_registry_define_settings(void)
{
	char	   *raw_registry = sf_raw_setting("snowflake.registry");
	char	   *raw_prefix = sf_raw_setting("snowflake.registry_prefix");
	char	   *raw_lease = sf_raw_setting("snowflake.registry_lease");
	char	   *raw_shards = sf_raw_setting("snowflake.registry_shards");
	int			parsed;

	DefineCustomStringVariable("snowflake.registry",
							   "etcd client URLs of the shard registry, comma-separated; empty: no registry.",
							   "With a registry this server claims its shard in etcd under a lease. "
							   "Fixed at server start.",
							   &sf_registry,
							   "",
							   PGC_POSTMASTER,
							   0,
							   sf_check_registry,
							   NULL,
							   NULL);
	DefineCustomStringVariable("snowflake.registry_prefix",
							   "Key prefix in etcd that names this ID space.",
							   "Servers that share a prefix share the shard field. Fixed at server start.",
							   &sf_registry_prefix,
							   "/snowflake/default",
							   PGC_POSTMASTER,
							   0,
							   sf_check_prefix,
							   NULL,
							   NULL);
	DefineCustomIntVariable("snowflake.registry_lease",
							"TTL of this server's lease in the shard registry.",
							"Generation stops within this time of losing etcd. Fixed at server start.",
							&sf_registry_lease,
							30,
							2,
							3600,
							PGC_POSTMASTER,
							GUC_UNIT_S,
							NULL,
							NULL,
							NULL);
	DefineCustomStringVariable("snowflake.registry_shards",
							   "Shards this server may claim from the registry, such as 0-1023.",
							   "The default is the whole shard field. Fixed at server start.",
							   &sf_registry_shards,
							   "0-1023",
							   PGC_POSTMASTER,
							   0,
							   sf_check_pool,
							   sf_assign_pool,
							   NULL);

	sf_require_applied("snowflake.registry", raw_registry,
					   raw_registry && strcmp(raw_registry, sf_registry) == 0);
	sf_require_applied("snowflake.registry_prefix", raw_prefix,
					   raw_prefix && strcmp(raw_prefix, sf_registry_prefix) == 0);
	sf_require_applied("snowflake.registry_lease", raw_lease,
					   raw_lease && parse_int(raw_lease, &parsed, GUC_UNIT_S, NULL) &&
					   parsed == sf_registry_lease);
	sf_require_applied("snowflake.registry_shards", raw_shards,
					   raw_shards && strcmp(raw_shards, sf_registry_shards) == 0);
	sf_registry_enabled = sf_registry[0] != '\0';
}

/* The grant in shared memory, for the inline check in registry.hpp. */
pg_atomic_uint64 *sf_registry_grant = NULL;

/*---- clocks ----*/

static int64
sf_clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (int64) ts.tv_sec * 1000000000 + ts.tv_nsec;
}


/* A monotonic instant (ns) as wall-clock time, for the view. */
static TimestampTz
sf_mono_to_timestamptz(int64 mono_ns)
{
	int64		delta_us = (mono_ns - sf_clock_ns(CLOCK_MONOTONIC)) / 1000;

	return GetCurrentTimestamp() + delta_us;
}

/*---- shared memory ----*/

static void
sf_registry_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(sizeof(SfRegistryShared)));
}

static void
sf_registry_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	sf_reg = (SfRegistryShared *) ShmemInitStruct("snowflake registry",
												  sizeof(SfRegistryShared), &found);
	if (!found)
	{
		memset(sf_reg, 0, sizeof(*sf_reg));
		pg_atomic_init_u64(&sf_reg->grant, 0);
		pg_atomic_init_u64(&sf_reg->published, 0);
		pg_atomic_init_u32(&sf_reg->pub_shard, 0);
		pg_atomic_init_u64(&sf_reg->wanted, 0);
		pg_atomic_init_u32(&sf_reg->publish_failed, 0);
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
	char		error[256], holder[256];
	int32		target;

	SpinLockAcquire(&sf_reg->mutex);
	state = sf_reg->state;
	target = sf_reg->shard;
	memcpy(error, sf_reg->last_error, sizeof(error));
	memcpy(holder, sf_reg->holder, sizeof(holder));
	SpinLockRelease(&sf_reg->mutex);

	if (held >= 0 && explicit_shard && shard != held)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("shard " INT64_FORMAT " is not held by this server", shard),
				 errdetail("With snowflake.registry set, a server generates IDs only for the "
						   "shard it holds in the registry, shard " INT64_FORMAT ".", held),
				 errhint("Call snowflake_nextval() without a shard ID.")));
	if (state == REG_REFUSED)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 target >= 0 ?
				 errmsg("cannot generate snowflake IDs: the freshness mark of shard %d in the "
						"registry is refused", target) :
				 errmsg("cannot generate snowflake IDs: the freshness marks of the free shards "
						"of the pool \"%s\" in the registry are refused", sf_registry_shards),
				 errdetail("%s", error),
				 errhint("Set the key to a time (Unix ms) at or above the last ID any server "
						 "issued on that shard; the registry worker tries again on its own.")));
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
				 errhint("Check that etcd (snowflake.registry) is reachable and has a quorum; "
						 "generation resumes on its own once the lease is renewed or a "
						 "shard is claimed again.")));
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("cannot generate snowflake IDs: this server holds no shard in the "
					"registry yet"),
			 errdetail("The registry worker is %s (%s) in etcd at \"%s\", prefix \"%s\"; "
					   "last error: %s.",
					   state == REG_POOL_FULL ? "waiting for a free shard" :
					   state == REG_UNREACHABLE ? "trying to reach etcd" : "claiming a shard",
					   sf_shard_id >= 0 ? "snowflake.shard_id" : "snowflake.registry_shards",
					   sf_registry, sf_registry_prefix, error[0] ? error : "none"),
			 errhint("The worker keeps trying; see the snowflake_registry view.")));
}

int64
sf_registry_cap(int64 shard)
{
	if (!sf_registry_enabled || sf_reg == NULL)
		return PG_INT64_MAX;
	uint32		pub = pg_atomic_read_u32(&sf_reg->pub_shard);
	int64		published;

	if ((int64) pub != shard + 1)
		return -1;
	pg_read_barrier();
	published = (int64) pg_atomic_read_u64(&sf_reg->published) - 1;
	/* seqlock: a claim of another shard in between may have stored its mark */
	pg_read_barrier();
	if (pg_atomic_read_u32(&sf_reg->pub_shard) != pub)
		return -1;
	return published;
}

void
sf_registry_await(int64 shard, int64 wanted, int64 *started_us)
{
	int64		now_us;
	uint64		cur;
	Latch	   *latch;

	if (!sf_registry_enabled)
		return;
	if (sf_registry_cap(shard) >= wanted)
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
		*started_us = now_us;
	else if (now_us - *started_us >= (int64) sf_max_clock_wait * 1000)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("could not generate a snowflake ID: the registry has not published a "
						"freshness mark far enough ahead"),
				 errdetail("IDs of shard " INT64_FORMAT " may only carry timestamps up to the "
						   "mark published in etcd, and this call waited "
						   "snowflake.max_clock_wait (%d ms) for the registry worker to move it.",
						   shard, sf_max_clock_wait),
				 errhint("Check that etcd (snowflake.registry) is reachable; see the "
						 "snowflake_registry view.")));
	(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 2,
					 PG_WAIT_EXTENSION);
	ResetLatch(MyLatch);
	CHECK_FOR_INTERRUPTS();
}

/*---- the worker ----*/

/* Shards with a refused freshness mark, remembered for a while. */
#define SF_MAX_REFUSED 16
/* How far beyond the lease deadline + lead a published mark reaches. */
#define SF_PUBLISH_MARGIN_MS 1000

/* What the worker keeps between ticks (its own memory). */
typedef struct SfWorker
{
	etcd::Client client;
	int64		lease;			/* 0: none */
	int64		ttl_s;
	int64		renewed_ns;		/* send time of the last successful renewal */
	int64		deadline_ns;
	int64		held;			/* -1: none */
	ShardSlot  *slot;			/* of the held shard */
	int64		remembered;		/* shard held before, -1 */
	int64		remembered_lease;
	int64		remembered_floor_ms;	/* what it resumed above at that claim (-1:
										 * nothing), -2: not recorded */
	bool		reclaimed_own;	/* the last claim revoked this server's own lease */
	int64		floor_ms;		/* what the held shard resumed above (Unix ms), -1 */
	int64		refused[SF_MAX_REFUSED];	/* shards whose mark was refused */
	int64		refused_until_ns[SF_MAX_REFUSED];
	int64		next_keepalive_ns;
	int64		retry_ns;		/* next claim attempt */
	int64		backoff_ms;
	bool		expired;		/* the deadline passed while held */
	bool		failing;		/* keep-alives are failing (logged once) */
	uint64		seen_issued;
	int64		active_until;	/* layout offset */
	int64		suspend_ref_ns; /* CLOCK_BOOTTIME - CLOCK_MONOTONIC */
	char		identity[256];
	uint8	   *taken;			/* bitmap of held shards while listing */
} SfWorker;

static const char *const kRegistryName = "registry";
static const char *const kRegistryFile = "pg_snowflake/registry";

static void
sf_key(char *buf, size_t len, int64 shard, const char *what)
{
	snprintf(buf, len, "%s/shards/" INT64_FORMAT "/%s", sf_registry_prefix, shard, what);
}

static void
sf_set_state(SfRegState state, const char *error)
{
	SpinLockAcquire(&sf_reg->mutex);
	sf_reg->state = state;
	if (error)
		strlcpy(sf_reg->last_error, error, sizeof(sf_reg->last_error));
	SpinLockRelease(&sf_reg->mutex);
}

/* Copies the client's view fields and traffic counters into shared memory. */
static void
sf_publish_view(SfWorker *w)
{
	SpinLockAcquire(&sf_reg->mutex);
	strlcpy(sf_reg->endpoint, w->client.endpoints[w->client.current], sizeof(sf_reg->endpoint));
	sf_reg->requests = w->client.traffic.requests;
	sf_reg->bytes_sent = w->client.traffic.bytes_sent;
	sf_reg->bytes_received = w->client.traffic.bytes_received;
	sf_reg->lease_id = w->lease;
	sf_reg->lease_ttl = w->ttl_s;
	sf_reg->deadline_ns = w->held >= 0 ? w->deadline_ns : 0;
	SpinLockRelease(&sf_reg->mutex);
}

/* Sets the grant every generating call checks. */
static void
sf_set_grant(SfWorker *w)
{
	uint64		grant = 0;

	if (w->held >= 0 && !w->expired)
	{
		int64		deadline_ms = w->deadline_ns / 1000000 - sf_coarse_res_ms;

		if (deadline_ms > 0)
			grant = ((uint64) (w->held + 1) << SF_GRANT_SHIFT) | ((uint64) deadline_ms & SF_GRANT_MASK);
	}
	pg_atomic_write_u64(&sf_reg->grant, grant);
	/* the shard held, even past its deadline, for the shards record of standbys */
	pg_atomic_write_u32(&sf_shared->registry_shard, (uint32) (w->held + 1));
}

/* A renewal sent at sent_ns succeeded with ttl seconds. */
static void
sf_renewed(SfWorker *w, int64 sent_ns, int64 ttl)
{
	int64		ttl_ns = ttl * INT64CONST(1000000000);

	w->ttl_s = ttl;
	w->renewed_ns = sent_ns;
	/* the margin: TTL/5 (see the file header) */
	w->deadline_ns = sent_ns + ttl_ns - ttl_ns / 5;
	w->next_keepalive_ns = sent_ns + ttl_ns / 3;
	SpinLockAcquire(&sf_reg->mutex);
	sf_reg->last_keepalive = sf_mono_to_timestamptz(sent_ns);
	SpinLockRelease(&sf_reg->mutex);
}

static void
sf_remember(SfWorker *w)
{
	char		record[160];
	int			len = snprintf(record, sizeof(record), "format 2\nshard " INT64_FORMAT
							   "\nlease " INT64_FORMAT "\nfloor_unix_ms " INT64_FORMAT "\n",
							   w->held, w->lease, w->floor_ms);
	snowflake::FileError error = {"", "", 0};
	bool		ok;

	LWLockAcquire(sf_shared->file_lock, LW_EXCLUSIVE);
	ok = snowflake::write_file_durably(kRegistryName, record, (size_t) len, &error);
	LWLockRelease(sf_shared->file_lock);
	if (!ok)
	{
		errno = error.err;
		ereport(LOG,
				(errcode_for_file_access(),
				 errmsg("could not record the claimed snowflake shard: could not %s \"%s\": %m",
						error.operation, error.path),
				 errdetail("A restart may claim another shard.")));
	}
}

static void
sf_recall(SfWorker *w)
{
	char		buf[256];
	size_t		len;
	snowflake::FileError error = {"", "", 0};
	long long	shard, lease, floor_ms;

	w->remembered = -1;
	w->remembered_lease = 0;
	w->remembered_floor_ms = -2;
	if (snowflake::read_small_file(kRegistryFile, buf, sizeof(buf), &len, &error) !=
		snowflake::ReadResult::Ok)
		return;
	/* format 1 (1.1) has no floor: a restart then resumes above etcd's mark */
	if (sscanf(buf, "format 2\nshard %lld\nlease %lld\nfloor_unix_ms %lld", &shard, &lease,
			   &floor_ms) == 3 && floor_ms >= -1 && floor_ms <= sf_layout.last_unix_ms())
		w->remembered_floor_ms = floor_ms;
	else if (sscanf(buf, "format 1\nshard %lld\nlease %lld", &shard, &lease) != 2)
		return;
	if (shard >= 0 && shard <= sf_layout.max_shard_id())
	{
		w->remembered = shard;
		w->remembered_lease = lease;
	}
	else
		w->remembered_floor_ms = -2;
}

static bool
sf_in_pool(int64 shard)
{
	return sf_pool != NULL && snowflake::shard_in_ranges(sf_pool->ranges, sf_pool->count, shard);
}

/* How many shards the pool has. */
static int64
sf_pool_size(void)
{
	int64		n = 0;

	for (int i = 0; i < sf_pool->count; i++)
		n += sf_pool->ranges[i].hi - sf_pool->ranges[i].lo + 1;
	return n;
}

/* The transport failed: note it and back off. */
static void
sf_unreachable(SfWorker *w, const char *what)
{
	char		error[300];

	snprintf(error, sizeof(error), "%s: %s", what, w->client.error);
	sf_set_state(w->held >= 0 ? (w->expired ? REG_EXPIRED : REG_HELD) : REG_UNREACHABLE, error);
}

static void
sf_backoff(SfWorker *w, int64 now_ns)
{
	int64		cap = Min((int64) 1000, (int64) sf_registry_lease * 1000 / 2);

	w->backoff_ms = w->backoff_ms == 0 ? 100 : Min(w->backoff_ms * 2, cap);
	w->retry_ns = now_ns + w->backoff_ms * 1000000;
}

/* Marks shards listed under the prefix as taken. */
static bool
sf_on_key(void *arg, const char *key, size_t len)
{
	SfWorker   *w = (SfWorker *) arg;
	size_t		plen = strlen(sf_registry_prefix) + strlen("/shards/");
	const char *suffix = "/holder";
	size_t		slen = strlen(suffix);
	long long	shard = 0;
	size_t		i;

	if (len <= plen + slen || memcmp(key + len - slen, suffix, slen) != 0)
		return true;
	for (i = plen; i < len - slen; i++)
	{
		if (key[i] < '0' || key[i] > '9' || shard > sf_layout.max_shard_id())
			return true;
		shard = shard * 10 + (key[i] - '0');
	}
	if (shard <= sf_layout.max_shard_id())
		w->taken[shard / 8] |= (uint8) (1 << (shard % 8));
	return true;
}

/*
 * Checks the freshness mark read from etcd.  A mark that is not a plain
 * number, lies outside what the layout can represent, or lies further ahead
 * of the clock than any holder with sane settings could have published (the
 * lease, the lead, the longest wait and the publication margin) was edited by
 * hand or written for another layout: resuming above it could stop
 * generation for years and would write it into the durable mark, so the
 * shard is refused (true: usable, with *fresh_ms; -1 when absent).
 */
static bool
sf_check_fresh(int64 shard, const char *value, bool found, int64 *fresh_ms, char *why,
			   size_t why_len)
{
	char	   *end;
	long long	v;
	int64		now = sf_wall_ms();
	int64		bound = (int64) sf_registry_lease * 1000 + sf_floor_bound_ms() + SF_PUBLISH_MARGIN_MS;
	char		key[300];

	*fresh_ms = -1;
	if (!found)
		return true;
	sf_key(key, sizeof(key), shard, "mark");
	errno = 0;
	v = strtoll(value, &end, 10);
	if (end == value || *end != '\0' || errno != 0 || v < 0)
		snprintf(why, why_len, "The freshness mark %s is \"%.40s\", not a time in Unix "
				 "milliseconds.", key, value);
	else if (v > sf_layout.last_unix_ms())
		snprintf(why, why_len, "The freshness mark %s is %lld, beyond the last time this "
				 "layout can represent.", key, v);
	else if (v > now + bound)
		snprintf(why, why_len, "The freshness mark %s is %lld, " INT64_FORMAT " ms ahead of the "
				 "clock; no holder publishes more than " INT64_FORMAT " ms ahead.", key, v,
				 (int64) v - now, bound);
	else
	{
		*fresh_ms = v;
		return true;
	}
	return false;
}

/*
 * Tries to create the holder key of one shard.  Returns 1 when claimed (with
 * *fresh_ms the shard's freshness mark, -1 if none), 0 when another server
 * holds it (its description in holder), 2 when the shard's freshness mark is
 * refused (why in holder; the key is not kept), -1 when etcd did not answer.
 */
static int
sf_try_shard(SfWorker *w, int64 shard, int64 *fresh_ms, char *holder, size_t holder_len)
{
	char		key[300], mark_key[300], value[64];
	bool		created = false, found = false;
	int64		holder_lease = 0;
	etcd::Result r;

	sf_key(key, sizeof(key), shard, "holder");
	sf_key(mark_key, sizeof(mark_key), shard, "mark");
	r = etcd::create_if_absent(&w->client, key, w->identity, w->lease, mark_key, &created,
							   holder, holder_len, &holder_lease, value, sizeof(value), &found);
	if (r != etcd::Result::Ok)
		return -1;
	if (!created && holder_lease != 0 && holder_lease == w->lease)
	{
		/*
		 * Under this server's current lease: our own claim, whose answer was
		 * lost (a proxy or a timeout dropped it after etcd applied it).  It
		 * is ours, and the mark was read in the same transaction.
		 */
		ereport(LOG,
				(errmsg("snowflake registry: shard " INT64_FORMAT " is already held under this "
						"server's lease %" PRIx64 "; taking it (the answer to an earlier claim "
						"was lost)", shard, (uint64) w->lease)));
		created = true;
	}
	if (!created)
	{
		/*
		 * Our own holder key from before a crash, under the lease we
		 * recorded: that server is gone (this data directory is ours), so
		 * revoke its lease and try again.
		 */
		if (holder_lease != 0 && holder_lease == w->remembered_lease &&
			strcmp(holder, w->identity) == 0)
		{
			ereport(LOG,
					(errmsg("snowflake registry: revoking lease %" PRIx64 " of this server's "
							"previous run, which still holds shard " INT64_FORMAT,
							(uint64) holder_lease, shard)));
			w->remembered_lease = 0;
			if (etcd::lease_revoke(&w->client, holder_lease) == etcd::Result::Failed)
				return -1;
			w->reclaimed_own = shard == w->remembered;
			return sf_try_shard(w, shard, fresh_ms, holder, holder_len);
		}
		return 0;
	}
	if (!sf_check_fresh(shard, value, found, fresh_ms, holder, holder_len))
	{
		bool		deleted = false;

		ereport(LOG,
				(errmsg("snowflake registry: refusing shard " INT64_FORMAT, shard),
				 errdetail("%s", holder),
				 errhint("Set the key to a time (Unix ms) at or above the last ID any server "
						 "issued on that shard, or remove it only if no server ever did.")));
		/* give the shard back; if etcd cannot be told, drop the lease so it expires */
		if (etcd::delete_if_lease(&w->client, key, w->lease, &deleted) != etcd::Result::Ok)
		{
			(void) etcd::lease_revoke(&w->client, w->lease);
			w->lease = 0;
		}
		return 2;
	}
	return 1;
}

/* Publishes a freshness mark (Unix ms); false if it could not. */
static bool
sf_publish_mark(SfWorker *w, int64 mark_ms, bool *lost)
{
	char		guard[300], key[300], value[32];
	bool		applied = false;

	*lost = false;
	sf_key(guard, sizeof(guard), w->held, "holder");
	sf_key(key, sizeof(key), w->held, "mark");
	snprintf(value, sizeof(value), INT64_FORMAT, mark_ms);
	if (etcd::put_if_lease(&w->client, guard, w->lease, key, value, &applied) != etcd::Result::Ok)
	{
		sf_unreachable(w, "publishing the freshness mark");
		pg_atomic_write_u32(&sf_reg->publish_failed, 1);
		return false;
	}
	pg_atomic_write_u32(&sf_reg->publish_failed, 0);
	if (!applied)
	{
		*lost = true;
		return false;
	}
	SpinLockAcquire(&sf_reg->mutex);
	sf_reg->published_ms = mark_ms;
	SpinLockRelease(&sf_reg->mutex);
	return true;
}

/* Gives up the held shard locally: nothing more is generated for it. */
static void
sf_drop(SfWorker *w, const char *why)
{
	if (w->held >= 0)
		ereport(LOG,
				(errmsg("snowflake registry: lost shard " INT64_FORMAT, w->held),
				 errdetail("%s", why)));
	w->held = -1;
	w->expired = false;
	sf_set_grant(w);
	SpinLockAcquire(&sf_reg->mutex);
	sf_reg->state = REG_CLAIMING;
	sf_reg->published_ms = -1;	/* the view shows no mark of a shard no longer held */
	SpinLockRelease(&sf_reg->mutex);
}

/* The lease is gone in etcd: drop the shard and start over with a new lease. */
static void
sf_lease_gone(SfWorker *w)
{
	char		why[300];

	snprintf(why, sizeof(why), "The lease %" PRIx64 " expired in etcd (%s); the shard may "
			 "now belong to another server.", (uint64) w->lease, w->client.error);
	if (w->held >= 0)
		w->remembered = w->held;
	sf_drop(w, why);
	w->lease = 0;
	w->retry_ns = 0;
	w->backoff_ms = 0;
}

/*
 * The freshness mark that covers every ID this server may issue under its
 * current lease: the lease deadline as wall-clock time, plus max_clock_lead
 * (IDs may run that far ahead of the clock), plus a margin; at least
 * floor_offset + the margin.  Generation stops at the deadline (fencing), so
 * with this mark published it lasts exactly to the deadline, whatever
 * happens to etcd.  A successor claims only once the lease has expired in
 * etcd, at least TTL/5 after the deadline, so with clocks in step it finds
 * the mark already behind its clock and does not wait.
 */
static int64
sf_fresh_target(SfWorker *w, int64 floor_offset)
{
	int64		now = sf_wall_ms() - sf_layout.epoch_ms;
	int64		to_deadline = Max((int64) 0, (w->deadline_ns - sf_clock_ns(CLOCK_MONOTONIC)) / 1000000);
	int64		target = Max(now + to_deadline + sf_max_clock_lead, floor_offset) + SF_PUBLISH_MARGIN_MS;

	return Min(target, sf_layout.max_offset_ms());
}

/* Publishes a mark covering the lease (sf_fresh_target), and lets the slot use it. */
static void
sf_publish_ahead(SfWorker *w, int64 floor_offset)
{
	int64		target = sf_fresh_target(w, floor_offset);
	bool		lost;

	if (sf_publish_mark(w, target + sf_layout.epoch_ms, &lost))
	{
		pg_atomic_write_u64(&sf_reg->published, (uint64) (target + 1));
		sf_reraise_reserved();
	}
	else if (lost)
	{
		w->remembered = w->held;
		sf_drop(w, "The shard's holder key is no longer attached to this server's lease.");
		w->retry_ns = 0;
	}
}

/* Whether a shard's mark was refused lately (sf_try_shard returned 2). */
static bool
sf_refused_now(SfWorker *w, int64 shard, int64 now_ns)
{
	for (int i = 0; i < SF_MAX_REFUSED; i++)
		if (w->refused[i] == shard && w->refused_until_ns[i] > now_ns)
			return true;
	return false;
}

/* Remembers a refused shard until the lease or 10 s have passed, whichever is longer. */
static void
sf_note_refused(SfWorker *w, int64 shard, int64 now_ns)
{
	int			slot = 0;

	for (int i = 0; i < SF_MAX_REFUSED; i++)
		if (w->refused[i] == shard || w->refused_until_ns[i] < w->refused_until_ns[slot])
			slot = i;
	w->refused[slot] = shard;
	w->refused_until_ns[slot] = now_ns + Max((int64) 10, (int64) sf_registry_lease) * INT64CONST(1000000000);
}

/* Claims a shard: the explicit one, the remembered one, or a free one of the pool. */
static void
sf_claim(SfWorker *w, int64 now_ns)
{
	int64		candidates[8];
	int			ncand = 0;
	int64		fresh_ms = -1;
	int64		shard = -1;
	char		holder[256] = "";
	int			rc = 0;
	bool		full = false;

	if (w->lease == 0)
	{
		int64		id, ttl;

		if (etcd::lease_grant(&w->client, sf_registry_lease, &id, &ttl) != etcd::Result::Ok)
		{
			sf_unreachable(w, "granting a lease");
			sf_backoff(w, now_ns);
			return;
		}
		w->lease = id;
		sf_renewed(w, w->client.sent_ns, ttl);
	}

	if (sf_shard_id >= 0)
		candidates[ncand++] = sf_shard_id;
	else
	{
		int64		max = sf_layout.max_shard_id();
		int64		nfree = 0, nrefused = 0, pick;

		if (w->remembered >= 0 && sf_in_pool(w->remembered) &&
			!sf_refused_now(w, w->remembered, now_ns))
			candidates[ncand++] = w->remembered;
		memset(w->taken, 0, (size_t) (max / 8 + 1));
		{
			char		prefix[300];

			snprintf(prefix, sizeof(prefix), "%s/shards/", sf_registry_prefix);
			if (etcd::list_keys(&w->client, prefix, sf_on_key, w) != etcd::Result::Ok)
			{
				sf_unreachable(w, "listing the held shards");
				sf_backoff(w, now_ns);
				return;
			}
		}
		for (int i = 0; i < sf_pool->count; i++)
			for (int64 s = sf_pool->ranges[i].lo; s <= sf_pool->ranges[i].hi; s++)
				if (!(w->taken[s / 8] & (1 << (s % 8))))
				{
					if (sf_refused_now(w, s, now_ns))
						nrefused++;
					else
						nfree++;
				}
		/* a random free shard: servers starting together rarely collide */
		pick = nfree > 0 ? (int64) (random() % nfree) : 0;
		for (int i = 0; i < sf_pool->count && ncand < (int) lengthof(candidates); i++)
			for (int64 s = sf_pool->ranges[i].lo;
				 s <= sf_pool->ranges[i].hi && ncand < (int) lengthof(candidates); s++)
			{
				if ((w->taken[s / 8] & (1 << (s % 8))) || sf_refused_now(w, s, now_ns))
					continue;
				if (pick > 0)
				{
					pick--;
					continue;
				}
				if (s != w->remembered)
					candidates[ncand++] = s;
			}
		full = nfree == 0 && nrefused == 0;
		if (ncand == 0 && nrefused > 0 && nfree == 0)
		{
			/* every free shard was refused lately: say so */
			SpinLockAcquire(&sf_reg->mutex);
			sf_reg->state = REG_REFUSED;
			sf_reg->shard = -1;
			sf_reg->holder[0] = '\0';
			SpinLockRelease(&sf_reg->mutex);
			sf_backoff(w, now_ns);
			return;
		}
	}

	for (int i = 0; i < ncand; i++)
	{
		/*
		 * A shard this server has no slot for could not be generated for
		 * (snowflake.max_shards used up by earlier claims): never claim it,
		 * since giving it a slot after the claim would fail with the lease
		 * held.
		 */
		if (!sf_slot_available(candidates[i]))
		{
			snprintf(holder, sizeof(holder), "no slot left on this server "
					 "(snowflake.max_shards = %d; restart it to free the slots)",
					 sf_max_shards);
			continue;
		}
		w->reclaimed_own = false;
		rc = sf_try_shard(w, candidates[i], &fresh_ms, holder, sizeof(holder));
		if (rc == 2)
		{
			/* its mark is refused: remember it, and try the next if the lease is left */
			sf_note_refused(w, candidates[i], now_ns);
			if (w->lease == 0)
				break;
			continue;
		}
		if (rc != 0)
		{
			shard = candidates[i];
			break;
		}
	}
	if (rc < 0)
	{
		sf_unreachable(w, "claiming a shard");
		sf_backoff(w, now_ns);
		return;
	}
	if (rc == 0 || rc == 2)
	{
		char		detail[512];
		SfRegState	state = rc == 2 ? REG_REFUSED :
			sf_shard_id >= 0 ? REG_CLAIMING : REG_POOL_FULL;

		if (rc == 2)
			snprintf(detail, sizeof(detail), "%s", holder);
		else if (sf_shard_id >= 0)
			snprintf(detail, sizeof(detail), "Shard %d is held by %s.", sf_shard_id, holder);
		else if (full)
			snprintf(detail, sizeof(detail), "All " INT64_FORMAT " shards of the pool \"%s\" "
					 "are held by other servers (etcd prefix \"%s\").",
					 sf_pool_size(), sf_registry_shards, sf_registry_prefix);
		else
			snprintf(detail, sizeof(detail), "The free shards of the pool \"%s\" were taken "
					 "by other servers while this one tried them; the last by %s.",
					 sf_registry_shards, holder);
		SpinLockAcquire(&sf_reg->mutex);
		sf_reg->state = state;
		sf_reg->shard = (int32) (sf_shard_id >= 0 ? sf_shard_id : -1);
		strlcpy(sf_reg->holder, rc == 2 ? "" : detail, sizeof(sf_reg->holder));
		strlcpy(sf_reg->last_error, detail, sizeof(sf_reg->last_error));
		SpinLockRelease(&sf_reg->mutex);
		sf_backoff(w, now_ns);
		return;
	}

	/*
	 * Claimed: resume strictly above the freshness mark, then publish ahead.
	 *
	 * Except after a crash of this very server: it revoked its own lease,
	 * under which the holder key stayed since its claim, so nobody else
	 * issued on the shard since then; every ID issued before that claim lies
	 * at or below the floor it recorded (pg_snowflake/registry), and every ID
	 * it issued itself at or below its own durable mark, which every slot
	 * resumes above anyway.  The mark in etcd is only what it had reserved up
	 * to its lease deadline; resuming above it would make the restarted
	 * server wait up to a lease for nothing.  Not when the data directory
	 * came from a backup (its durable mark may be older than what was issued
	 * after the backup).
	 */
	{
		bool		own = w->reclaimed_own && w->remembered_floor_ms >= -1 &&
			w->remembered_floor_ms <= fresh_ms && shard == w->remembered &&
			!sf_shared->started_from_backup;
		int64		floor_ms = own ? w->remembered_floor_ms : fresh_ms;
		int64		fresh_offset = floor_ms >= 0 ? floor_ms - sf_layout.epoch_ms : -1;
		ShardSlot  *slot = sf_slot_for_shard(shard, false);

		w->floor_ms = floor_ms;
		LWLockAcquire(slot->lock, LW_EXCLUSIVE);
		sf_slot_resume_above(slot, fresh_offset);
		{
			int64		last_seq;
			int64		last = sf_slot_last(slot, &last_seq);

			w->seen_issued = ((uint64) last << sf_layout.sequence_bits) + (uint64) last_seq;
			fresh_offset = Max(fresh_offset, last);
		}
		LWLockRelease(slot->lock);

		/* the cap of the new shard is its mark in etcd (see sf_registry_cap) */
		pg_atomic_write_u32(&sf_reg->pub_shard, 0);
		pg_write_barrier();
		pg_atomic_write_u64(&sf_reg->published, (uint64) (Max(fresh_offset, (int64) -1) + 1));
		w->remembered_floor_ms = -2;
		pg_write_barrier();
		pg_atomic_write_u32(&sf_reg->pub_shard, (uint32) (shard + 1));
		w->held = shard;
		w->slot = slot;
		w->remembered = shard;
		w->expired = false;
		w->failing = false;
		w->backoff_ms = 0;
		w->active_until = 0;	/* until IDs are issued */
		sf_remember(w);

		SpinLockAcquire(&sf_reg->mutex);
		sf_reg->state = REG_HELD;
		sf_reg->shard = (int32) shard;
		sf_reg->holder[0] = '\0';
		sf_reg->published_ms = fresh_ms;
		SpinLockRelease(&sf_reg->mutex);

		{
			char		mark[40];

			if (floor_ms >= 0)
				snowflake::format_utc(floor_ms, mark, sizeof(mark));
			ereport(LOG,
					(errmsg("snowflake registry: claimed shard " INT64_FORMAT " under lease %"
							PRIx64, shard, (uint64) w->lease),
					 own ?
					 errdetail("This server held it before it stopped without releasing it: "
							   "IDs resume above its own durable mark and the floor of its "
							   "earlier claim (%s).", floor_ms >= 0 ? mark : "none") :
					 errdetail("IDs resume above the shard's freshness mark (%s).",
							   floor_ms >= 0 ? mark : "none")));
		}
		sf_publish_ahead(w, fresh_offset);
		if (w->held >= 0)
			sf_set_grant(w);
	}
}

/* Keeps the lease alive; handles its loss and its return. */
static void
sf_keep_lease(SfWorker *w, int64 now_ns)
{
	int64		ttl = 0;
	etcd::Result r;

	if (now_ns < w->next_keepalive_ns)
		return;
	/* while the lease is valid, no request outlasts its deadline, so the loop notes it on time */
	w->client.budget_ns = w->held >= 0 && !w->expired ? w->deadline_ns : 0;
	r = etcd::lease_keepalive(&w->client, w->lease, &ttl);
	w->client.budget_ns = 0;
	if (r == etcd::Result::NotFound)
	{
		sf_lease_gone(w);
		return;
	}
	if (r == etcd::Result::Failed)
	{
		if (!w->failing)
			ereport(LOG,
					(errmsg("snowflake registry: could not renew lease %" PRIx64 ": %s",
							(uint64) w->lease, w->client.error),
					 errdetail("Generation goes on until the lease deadline, in %d ms.",
							   (int) Max((int64) 0, (w->deadline_ns - now_ns) / 1000000))));
		w->failing = true;
		sf_unreachable(w, "renewing the lease");
		/* try again soon: a tenth of the TTL, at least 100 ms */
		w->next_keepalive_ns = now_ns + Max((int64) 100, (int64) sf_registry_lease * 100) * 1000000;
		return;
	}

	sf_renewed(w, w->client.sent_ns, ttl);
	w->failing = false;
	if (w->held >= 0 && w->expired)
	{
		char		key[300], value[256];
		bool		found = false;
		int64		lease = 0;

		/* the lease survived: make sure the holder key is still ours */
		sf_key(key, sizeof(key), w->held, "holder");
		if (etcd::get(&w->client, key, value, sizeof(value), &found, &lease) != etcd::Result::Ok)
		{
			sf_unreachable(w, "checking the holder key");
			return;
		}
		if (!found || lease != w->lease)
		{
			sf_drop(w, "The lease was renewed after its deadline, but the shard's holder "
					"key is no longer attached to it.");
			return;
		}
		w->expired = false;
		ereport(LOG,
				(errmsg("snowflake registry: regained shard " INT64_FORMAT, w->held),
				 errdetail("Lease %" PRIx64 " was renewed after its deadline had passed; "
						   "generation resumes.", (uint64) w->lease)));
	}
	if (w->held >= 0)
		sf_set_state(REG_HELD, NULL);
	sf_set_grant(w);
}

/* Keeps the freshness mark ahead while IDs are issued or a call waits for it. */
static void
sf_keep_fresh(SfWorker *w)
{
	int64		now = sf_wall_ms() - sf_layout.epoch_ms;
	int64		published = (int64) pg_atomic_read_u64(&sf_reg->published) - 1;
	int64		wanted = (int64) pg_atomic_read_u64(&sf_reg->wanted) - 1;
	uint64		issued;
	int64		last;
	int64		reserved;
	snowflake::GeneratorState gen;

	/* activity: the last ID's position, not the resettable counters */
	sf_slot_snapshot(w->slot, &gen, &reserved, NULL);
	last = gen.last_offset;
	issued = ((uint64) last << sf_layout.sequence_bits) + (uint64) gen.last_sequence;
	if (issued != w->seen_issued)
	{
		w->seen_issued = issued;
		w->active_until = now + SF_WORKER_ACTIVE_MS;
	}
	if (wanted > published)
		sf_publish_ahead(w, Max(wanted, last));
	else if (now <= w->active_until &&
			 published < sf_fresh_target(w, last) - SF_PUBLISH_MARGIN_MS / 2)
		sf_publish_ahead(w, last);	/* once per renewal: the deadline moved */
}

/*
 * Releases the held shard: stops generation, lowers the mark to the last ID
 * issued, publishes it, and revokes the lease so the shard is free at once.
 */
static void
sf_release(SfWorker *w)
{
	int64		final_offset;
	bool		lost;

	if (w->held >= 0)
	{
		int64		shard = w->held;

		w->expired = true;		/* grant off first */
		sf_set_grant(w);
		LWLockAcquire(w->slot->lock, LW_EXCLUSIVE);
		/* lowers reserved_offset to the last ID's timestamp, calls in flight too */
		final_offset = sf_slot_seal(w->slot);
		/* from here on no reservation goes above the final mark */
		pg_atomic_write_u64(&sf_reg->published, (uint64) (final_offset + 1));
		LWLockRelease(w->slot->lock);
		if (final_offset >= 0)
			(void) sf_publish_mark(w, final_offset + sf_layout.epoch_ms, &lost);
		ereport(LOG,
				(errmsg("snowflake registry: released shard " INT64_FORMAT, shard)));
		w->held = -1;
		w->expired = false;
	}
	if (w->lease != 0)
		(void) etcd::lease_revoke(&w->client, w->lease);
	w->lease = 0;
	SpinLockAcquire(&sf_reg->mutex);
	sf_reg->state = REG_CLAIMING;
	sf_reg->deadline_ns = 0;
	SpinLockRelease(&sf_reg->mutex);
}

static void
sf_worker_exit(int, Datum)
{
	if (sf_reg == NULL)
		return;
	pg_atomic_write_u64(&sf_reg->grant, 0);
	SpinLockAcquire(&sf_reg->mutex);
	sf_reg->worker_latch = NULL;
	SpinLockRelease(&sf_reg->mutex);
}

extern "C" void
snowflake_registry_worker_main(Datum)
{
	SfWorker   *w;
	long		timeout_ms;
	char		host[128];

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
	BackgroundWorkerUnblockSignals();

	if (sf_shared == NULL || sf_shared->refused || sf_shared->state_refused || sf_reg == NULL ||
		!sf_registry_enabled)
		proc_exit(0);

	before_shmem_exit(sf_worker_exit, (Datum) 0);
	SpinLockAcquire(&sf_reg->mutex);
	sf_reg->worker_latch = MyLatch;
	SpinLockRelease(&sf_reg->mutex);

	w = (SfWorker *) MemoryContextAllocZero(TopMemoryContext, sizeof(SfWorker));
	w->taken = (uint8 *) MemoryContextAllocZero(TopMemoryContext,
												(Size) (sf_layout.max_shard_id() / 8 + 1));
	w->held = -1;
	srandom((unsigned int) (MyProcPid ^ sf_clock_ns(CLOCK_MONOTONIC)));
	{
		struct timespec res;

		if (clock_getres(CLOCK_MONOTONIC_COARSE, &res) == 0)
			sf_coarse_res_ms = Max((int64) 1, (int64) ((res.tv_nsec + 999999) / 1000000));
	}
	if (gethostname(host, sizeof(host)) != 0)
		strlcpy(host, "unknown", sizeof(host));
	host[sizeof(host) - 1] = '\0';
	snprintf(w->identity, sizeof(w->identity),
			 "host %s, port %d, data directory %s, system identifier " UINT64_FORMAT,
			 host, PostPortNumber, DataDir, GetSystemIdentifier());
	sf_recall(w);

	/* requests must fit well within a keep-alive interval (TTL/3) */
	timeout_ms = (long) Min((int64) 2000, Max((int64) 200, (int64) sf_registry_lease * 1000 / 8));
	if (!etcd::open(&w->client, sf_registry, timeout_ms))
	{
		ereport(LOG,
				(errmsg("snowflake registry: could not set up the etcd client: %s",
						w->client.error)));
		proc_exit(1);			/* restarted by the postmaster */
	}
	w->suspend_ref_ns = sf_clock_ns(CLOCK_BOOTTIME) - sf_clock_ns(CLOCK_MONOTONIC);
	sf_set_state(REG_CLAIMING, NULL);

	for (;;)
	{
		int64		now_ns;
		int64		suspend;

		CHECK_FOR_INTERRUPTS();
		if (ShutdownRequestPending)
		{
			/*
			 * Release the shard.  Exit 1 so that the postmaster restarts the
			 * worker if it is still running (pg_terminate_backend): it then
			 * claims again.  At shutdown nothing is restarted.
			 */
			sf_release(w);
			sf_publish_view(w);
			etcd::close(&w->client);
			proc_exit(1);
		}
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			if (w->held >= 0 && sf_shard_id >= 0 && sf_shard_id != w->held)
			{
				ereport(LOG,
						(errmsg("snowflake registry: snowflake.shard_id is now %d; releasing "
								"shard " INT64_FORMAT, sf_shard_id, w->held)));
				sf_release(w);
				w->retry_ns = 0;
			}
		}

		now_ns = sf_clock_ns(CLOCK_MONOTONIC);

		/* a suspended machine: CLOCK_MONOTONIC stood still, the lease did not */
		suspend = sf_clock_ns(CLOCK_BOOTTIME) - now_ns;
		if (suspend - w->suspend_ref_ns > 50 * INT64CONST(1000000) && w->held >= 0)
		{
			ereport(LOG,
					(errmsg("snowflake registry: the system was suspended for " INT64_FORMAT
							" ms; generation waits for the lease to be renewed",
							(suspend - w->suspend_ref_ns) / 1000000)));
			w->deadline_ns = now_ns;
			w->next_keepalive_ns = now_ns;
		}
		w->suspend_ref_ns = suspend;

		if (w->held >= 0 || w->lease != 0)
		{
			if (w->held >= 0 && !w->expired && now_ns >= w->deadline_ns)
			{
				w->expired = true;
				sf_set_grant(w);
				sf_set_state(REG_EXPIRED, NULL);
				ereport(LOG,
						(errmsg("snowflake registry: the lease deadline of shard " INT64_FORMAT
								" passed; generation stops until the lease is renewed", w->held)));
			}
			sf_keep_lease(w, now_ns);
		}
		if (w->held < 0 && now_ns >= w->retry_ns)
			sf_claim(w, now_ns);
		if (w->held >= 0 && !w->expired)
			sf_keep_fresh(w);
		sf_publish_view(w);

		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 w->held >= 0 ? 20 : 50, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}

/*---- module load ----*/

void
sf_registry_init(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = sf_registry_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = sf_registry_shmem_startup;

	if (!sf_registry_enabled)
		return;
	/* a standby claims nothing: the worker starts at promotion */
	sf_register_worker("snowflake_registry_worker_main", "snowflake registry worker",
					   BGWORKER_SHMEM_ACCESS);
}

/*---- the view ----*/

/*
 * Whether the fencing check passes now and, with_mark, whether a call could
 * also get a freshness mark covering the clock: it does already, or the last
 * publication succeeded (an idle server's mark lags the clock until the next
 * call asks for one).
 */
static bool
sf_registry_check_quiet(bool with_mark)
{
	uint64		grant = pg_atomic_read_u64(&sf_reg->grant);
	int64		held = (int64) (grant >> SF_GRANT_SHIFT) - 1;

	return held >= 0 && sf_registry_coarse_ms() < (int64) (grant & SF_GRANT_MASK) &&
		(!with_mark || sf_registry_cap(held) >= sf_wall_ms() - sf_layout.epoch_ms ||
		 pg_atomic_read_u32(&sf_reg->publish_failed) == 0);
}

extern "C" Datum
snowflake_registry(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[15];
	bool		nulls[15];
	SfRegistryShared copy;

	sf_require_ready();
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	tupdesc = BlessTupleDesc(tupdesc);

	SpinLockAcquire(&sf_reg->mutex);
	memcpy(&copy, sf_reg, sizeof(copy));
	SpinLockRelease(&sf_reg->mutex);

	memset(nulls, 0, sizeof(nulls));
	values[0] = CStringGetTextDatum(sf_registry);
	nulls[0] = !sf_registry_enabled;
	values[1] = CStringGetTextDatum(copy.endpoint);
	nulls[1] = copy.endpoint[0] == '\0';
	values[2] = CStringGetTextDatum(sf_registry_prefix);
	nulls[2] = !sf_registry_enabled;
	/* the worker may be busy with a request when the deadline passes */
	if (copy.state == REG_HELD && !sf_registry_check_quiet(false))
		copy.state = REG_EXPIRED;
	/* a standby claims nothing: its worker starts at promotion */
	if (RecoveryInProgress())
		copy.state = REG_OFF;
	values[3] = CStringGetTextDatum(sf_state_names[copy.state]);
	values[4] = Int32GetDatum(copy.shard);
	nulls[4] = copy.shard < 0;
	{
		char		hex[24];

		snprintf(hex, sizeof(hex), "%" PRIx64, (uint64) copy.lease_id);
		values[5] = CStringGetTextDatum(hex);
		nulls[5] = copy.lease_id == 0;
	}
	values[6] = Int32GetDatum((int32) copy.lease_ttl);
	nulls[6] = copy.lease_ttl == 0;
	values[7] = TimestampTzGetDatum(sf_mono_to_timestamptz(copy.deadline_ns));
	nulls[7] = copy.deadline_ns == 0;
	values[8] = TimestampTzGetDatum(copy.last_keepalive);
	nulls[8] = copy.last_keepalive == 0;
	values[9] = TimestampTzGetDatum((TimestampTz) snowflake::unix_ms_to_pg_us(copy.published_ms));
	nulls[9] = copy.published_ms < 0;
	values[10] = CStringGetTextDatum(copy.last_error);
	nulls[10] = copy.last_error[0] == '\0';
	values[11] = Int64GetDatum((int64) copy.requests);
	values[12] = Int64GetDatum((int64) copy.bytes_sent);
	values[13] = Int64GetDatum((int64) copy.bytes_received);
	values[14] = BoolGetDatum(sf_registry_enabled && sf_registry_check_quiet(true));
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
