/*-------------------------------------------------------------------------
 *
 * backend.hpp
 *		The one small interface every registry backend implements: a lease
 *		(granted, renewed, revoked), a shard claimed under it (exclusive,
 *		readable by others as held), and the shard's freshness mark, written
 *		only while the claim is still the writer's.
 *
 * Only the registry worker (lease.cpp) calls a backend, never under a lock;
 * every call is bounded by the timeout given to open() and by the budget;
 * nothing here raises an error: a failure is a result, with error() saying
 * why.  Backends, each its operations over a transport: backend_etcd.cpp
 * (etcd's v3 API, over etcd.cpp's HTTP client) and backend_pg.cpp (tables in
 * a PostgreSQL database, over pgconn.cpp's libpq connection).
 *
 * A shard is named by the ID space (snowflake.registry_prefix), its
 * datacenter and its worker number (shard = datacenter << worker_bits |
 * worker); with no datacenter bits, datacenter 0 and the worker is the
 * shard.  list_held lists the datacenter given to open().
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_BACKEND_HPP
#define SNOWFLAKE_BACKEND_HPP

#include <cstddef>
#include <cstdint>

/* The result of a call: done, a definite "no such lease", or no usable answer. */
typedef enum SfBackendResult
{
	SF_BACKEND_OK,
	SF_BACKEND_NOT_FOUND,		/* the lease does not exist (any more) */
	SF_BACKEND_FAILED			/* no answer that could be used: see error() */
} SfBackendResult;

/* What a claim found. */
typedef struct SfClaim
{
	bool		created;		/* the shard is now held under the caller's lease */
	char		holder[256];	/* !created: who holds it, as the holder wrote it */
	int64_t		holder_lease;	/* !created: the holder's lease (0: unknown) */
	bool		mark_found;		/* either way: the shard's freshness mark ... */
	char		mark[64];		/* ... as stored, read in the same transaction */
	/*
	 * !created because the registry failed over lately and takes no claim
	 * until paused_until_ms (its clock, Unix ms; 0: not paused): since
	 * failover_ms, onto timeline (PostgreSQL's).
	 */
	int64_t		paused_until_ms;
	int64_t		failover_ms;
	int64_t		timeline;
	/*
	 * created after such a pause: its end (Unix ms), at or above every ID
	 * of the old primary's holders, lost claims' too (0: none).
	 */
	int64_t		epoch_floor_ms;
} SfClaim;

/* What a backend is opened with. */
typedef struct SfBackendConfig
{
	const char *target;			/* snowflake.registry */
	const char *prefix;			/* snowflake.registry_prefix: the ID space */
	bool		datacenters;	/* snowflake.datacenter_bits > 0 */
	int64_t		datacenter;		/* this server's datacenter (0 without) */
	int			worker_bits;	/* shard = datacenter << worker_bits | worker */
	long		timeout_ms;		/* of each request */
	const char *schema_script;	/* the shipped schema script (PostgreSQL) */
	const char *host;			/* this server, for the claims it makes */
	int			pid;			/* its postmaster's PID */
	const int  *max_clock_lead_ms;	/* snowflake.max_clock_lead, as it is now */
} SfBackendConfig;

typedef struct SfRegistryBackend
{
	const char *name;			/* "etcd", "postgresql" */

	/* Sets up the client (no request yet); false with err. */
	bool		(*open) (const SfBackendConfig *config, char *err, size_t errlen);
	void		(*close) (void);

	/* For the view and the logs. */
	const char *(*endpoint) (void);	/* in use now */
	const char *(*error) (void);	/* why the last call failed */
	void		(*traffic) (uint64_t *requests, uint64_t *bytes_sent,
							uint64_t *bytes_received);
	/* Where the shard's mark lives, for messages (a key, a row). */
	void		(*describe_mark) (int64_t shard, char *buf, size_t buflen);

	/* CLOCK_MONOTONIC ns just before the last answered request was sent. */
	int64_t		(*sent_ns) (void);
	/*
	 * The registry's clock, from the answers since the last call: this
	 * server's wall clock minus the registry's lay within [*lo_ms, *hi_ms]
	 * (the round trip and the resolution of what the answer carries); false
	 * if no answer carried it.
	 */
	bool		(*clock_sample) (int64_t *lo_ms, int64_t *hi_ms);
	/* No request starts or goes on past this CLOCK_MONOTONIC ns (0: none). */
	void		(*set_budget) (int64_t budget_ns);

	SfBackendResult (*grant) (int64_t ttl_s, int64_t *lease, int64_t *granted_ttl);
	/* Renews the lease: *ttl > 0, from sent_ns() at the latest. */
	SfBackendResult (*renew) (int64_t lease, int64_t *ttl);
	SfBackendResult (*revoke) (int64_t lease);
	/* Calls fn for every shard held now (by anyone). */
	SfBackendResult (*list_held) (void (*fn) (void *arg, int64_t shard), void *arg);
	/* Holds shard under lease if nobody does; reads its mark either way. */
	SfBackendResult (*claim) (int64_t shard, int64_t lease, const char *identity,
							  SfClaim *out);
	/* Gives a claimed shard back, if it is still held under lease. */
	SfBackendResult (*give_back) (int64_t shard, int64_t lease, bool *done);
	/* Writes the mark, only while shard is held under lease (*applied). */
	SfBackendResult (*publish) (int64_t shard, int64_t lease, int64_t mark_ms, bool *applied);
	/* Who holds shard now: *found, and under which lease. */
	SfBackendResult (*holder) (int64_t shard, bool *found, int64_t *lease);
	/*
	 * How the registry replicates, as its last answer showed: "synchronous",
	 * "asynchronous" (standbys, none synchronous), "no standby", or NULL
	 * (unknown, or a quorum like etcd's where it does not matter).
	 */
	const char *(*replication) (void);
	/*
	 * The last failure was a refusal of the registry itself, not a failure
	 * to reach it: its settings cannot keep what it acknowledges (a
	 * PostgreSQL registry with fsync = off).  error() says why.
	 */
	bool		(*refused) (void);
} SfRegistryBackend;

#endif							/* SNOWFLAKE_BACKEND_HPP */
