/*-------------------------------------------------------------------------
 *
 * registry.hpp
 *		The shard registry as the rest of the library sees it: its settings,
 *		the fencing check every generating call makes, the wait for a
 *		freshness mark, and what snowflake_registry() shows.  See
 *		registry.cpp; the worker that holds the lease is lease.cpp.
 *
 * The registry layer stands on the state layer; the SQL functions stand on
 * it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_REGISTRY_HPP
#define SNOWFLAKE_REGISTRY_HPP

#include <ctime>

#include "state/state.hpp"

extern "C"
{
#include "datatype/timestamp.h"
#include "port/atomics.h"
}

/* snowflake.registry is set (fixed at server start). */
extern bool sf_registry_enabled;

/* Defines the snowflake.registry* settings (from _PG_init, after sf_settings_define). */
void		sf_registry_define_settings(void);
/* The utility hook and the worker (preload only, after the settings). */
void		sf_registry_init(void);
/* Its shared fields, asked for and created by the module's hooks (snowflake.cpp). */
Size		sf_registry_shmem_size(void);
void		sf_registry_shmem_init(void);

/*
 * The grant the registry worker publishes: (shard + 1) << SF_GRANT_SHIFT |
 * the lease deadline in CLOCK_MONOTONIC milliseconds, less the coarse
 * clock's resolution; 0 while nothing is held.
 */
#define SF_GRANT_SHIFT 43
#define SF_GRANT_MASK ((UINT64CONST(1) << SF_GRANT_SHIFT) - 1)
extern pg_atomic_uint64 *sf_registry_grant;

/* Raises the error that says why this server may not generate now. */
[[noreturn]] void sf_registry_refuse(int64 shard, bool explicit_shard, int64 held);

/* CLOCK_MONOTONIC_COARSE in ms: a few ns (the precise clock costs about 24). */
static inline int64
sf_registry_coarse_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (int64) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Whether the grant allows generating now: a shard held and its lease
 * deadline not passed.  *held gets the grant's shard (-1: none), passed or
 * not.
 */
static inline bool
sf_registry_granted(int64 *held)
{
	uint64		grant = pg_atomic_read_u64(sf_registry_grant);

	*held = (int64) (grant >> SF_GRANT_SHIFT) - 1;
	return *held >= 0 && sf_registry_coarse_ms() < (int64) (grant & SF_GRANT_MASK);
}

/*
 * The fencing check of every generating call: returns the shard this server
 * holds, or errors out unless it holds one under a lease known to be valid
 * (and, for an explicit shard, unless it is that one).  One atomic read and
 * one coarse monotonic clock read, inline.
 */
static inline int64
sf_registry_check(int64 shard, bool explicit_shard)
{
	int64		held;

	if (likely(sf_registry_granted(&held) && (!explicit_shard || shard == held)))
		return held;
	sf_registry_refuse(shard, explicit_shard, held);
}

/*
 * Whether the freshness mark published for a slot (its cap) covers an ID at
 * "offset": a call that would issue there needs nothing from the registry.
 * The other half of what a call needs, besides the grant; the view's
 * "generating" asks both (sf_registry_describe).
 */
static inline bool
sf_registry_covers(ShardSlot *slot, int64 offset)
{
	return (int64) pg_atomic_read_u64(&slot->cap) >= offset;
}

/*
 * Called by a generating call whose next ID lies beyond the published
 * freshness mark (the slot's cap): asks the worker to publish one and waits a
 * little (no network here), bounded by snowflake.max_clock_wait from
 * *started_us.
 */
void		sf_registry_await(ShardSlot *slot, int64 wanted, int64 *started_us);

/* What snowflake_registry() shows (stats.cpp): one row. */
typedef struct SfRegistryView
{
	bool		enabled;
	const char *backend;		/* "etcd", "postgresql" */
	const char *endpoints;		/* snowflake.registry, no password */
	const char *prefix;
	char		endpoint[256];	/* in use, "" if none */
	const char *state;
	int32		shard;			/* -1: none */
	int32		datacenter;		/* of the shard, -1: none */
	int32		worker;			/* of the shard within its datacenter, -1: none */
	int64		lease_id;		/* 0: none */
	int64		lease_ttl;		/* 0: none */
	TimestampTz lease_deadline; /* 0: none */
	TimestampTz last_keepalive; /* 0: none */
	int64		published_ms;	/* -1: none */
	bool		skew_known;
	int64		skew_ms;		/* this server's clock minus the registry's */
	int64		skew_error_ms;
	int32		max_skew_ms;	/* snowflake.registry_max_skew */
	char		last_error[512];
	uint64		requests;
	uint64		bytes_sent;
	uint64		bytes_received;
	bool		generating;
	uint64		errors;			/* failed requests of the worker */
	uint64		refusals;		/* generating calls refused: no valid lease */
	char		replication[32];	/* how the registry replicates, "" unknown */
} SfRegistryView;

void		sf_registry_describe(SfRegistryView *view);

extern "C" PGDLLEXPORT void snowflake_registry_worker_main(Datum arg);

#endif							/* SNOWFLAKE_REGISTRY_HPP */
