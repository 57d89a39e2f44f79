/*-------------------------------------------------------------------------
 *
 * registry_shared.hpp
 *		What registry.cpp (the face of the registry to the rest of the
 *		library) and lease.cpp (the registry worker) share: the shared
 *		memory of the registry, its states, its settings, and the backend
 *		chosen at start.  Not for any other file.
 *
 * Locking.  "grant", "wanted", "failing" and "refusals" are atomics.
 * The display fields (state, errors, counters for the view) are guarded by
 * the spinlock "mutex", held only to copy them.  The freshness mark a slot may reserve up
 * to is the slot's cap (state.hpp), written by the worker under the slot's
 * LWLock, as every writer of reserved_offset holds it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_REGISTRY_SHARED_HPP
#define SNOWFLAKE_REGISTRY_SHARED_HPP

#include "registry/backend.hpp"
#include "state/state.hpp"

extern "C"
{
#include "datatype/timestamp.h"
#include "port/atomics.h"
#include "storage/latch.h"
#include "storage/spin.h"
}

/* the snowflake.registry* settings (registry.cpp) */
extern char *sf_registry;
extern char *sf_registry_prefix;
extern int	sf_registry_lease;
extern char *sf_registry_shards;
extern int	sf_registry_max_skew;

/* The parsed pool: the GUC's "extra". */
typedef struct SfPool
{
	int			count;
	snowflake::ShardRange ranges[FLEXIBLE_ARRAY_MEMBER];
} SfPool;

extern SfPool *sf_pool;

typedef enum SfRegState
{
	REG_OFF,
	REG_CLAIMING,
	REG_HELD,
	REG_EXPIRED,
	REG_POOL_FULL,
	REG_UNREACHABLE,
	REG_REFUSED,
	REG_SKEW,					/* this server's clock is too far from the registry's */
	REG_FAILOVER,				/* the registry failed over lately: no claim yet */
	REG_UNSAFE					/* the registry cannot keep a commit (fsync = off): refused */
} SfRegState;

extern const char *const sf_state_names[];

typedef struct SfRegistryShared
{
	/* (shard + 1) << 43 | deadline (CLOCK_MONOTONIC ms); 0: nothing held */
	pg_atomic_uint64 grant;
	/* a generating call waits for the mark to cover this offset + 1 */
	pg_atomic_uint64 wanted;
	/* the worker's last request to the registry failed: 1 (a call's mark could not be had) */
	pg_atomic_uint32 failing;
	/* generating calls refused by the registry (no valid lease, no shard) */
	pg_atomic_uint64 refusals;

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
	bool		skew_known;		/* this server's clock minus the registry's: */
	int64		skew_ms;		/* ... the middle of what the answers allow */
	int64		skew_error_ms;	/* ... give or take this */
	char		endpoint[256];
	char		last_error[512];
	char		holder[256];	/* holder of the shard we could not claim */
	uint64		requests;
	uint64		bytes_sent;
	uint64		bytes_received;
	uint64		errors;			/* failed requests (each sets last_error) */
	char		replication[32];	/* how the registry replicates, "" unknown */
} SfRegistryShared;

extern SfRegistryShared *sf_reg;

/* The backend snowflake.registry names (etcd or PostgreSQL). */
extern const SfRegistryBackend *sf_backend;

/* Resolution of CLOCK_MONOTONIC_COARSE, in ms, rounded up (at least 1). */
extern int64 sf_coarse_res_ms;

/* The freshness mark a slot may reserve up to (its cap), -1 without a slot. */
int64		sf_registry_cap(int64 shard);

/* A monotonic instant (ns) as wall-clock time, for the view. */
TimestampTz sf_mono_to_timestamptz(int64 mono_ns);

/* snowflake.registry as messages and the view show it (no password). */
const char *sf_registry_display(void);

/* What the registry is called in messages: "etcd", "the PostgreSQL registry". */
const char *sf_registry_noun(void);

/* What snowflake.registry_prefix names there: "etcd prefix", "ID space". */
const char *sf_registry_prefix_noun(void);

/* The width of a shard's worker field (shard = datacenter << it | worker). */
int			sf_registry_worker_bits(void);

#endif							/* SNOWFLAKE_REGISTRY_SHARED_HPP */
