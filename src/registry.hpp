/*-------------------------------------------------------------------------
 *
 * registry.hpp
 *		The shard registry in etcd, PostgreSQL side: settings, the registry
 *		worker that claims a shard under a lease and keeps it, and the checks
 *		the generating calls make.  See registry.cpp.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_REGISTRY_HPP
#define SNOWFLAKE_REGISTRY_HPP

#include "glue.hpp"

/* snowflake.registry is set (fixed at server start). */
extern bool sf_registry_enabled;

/* Defines the snowflake.registry* settings (from sf_define_settings). */
void		sf_registry_define_settings(void);
/* Shared memory and the worker (preload only, after the settings). */
void		sf_registry_init(void);

/*
 * The fencing check of every generating call: returns the shard this server
 * holds, or errors out unless it holds one under a lease known to be valid
 * (and, for an explicit shard, unless it is that one).  One atomic read and
 * one coarse monotonic clock read.
 */
int64		sf_registry_check(int64 shard, bool explicit_shard);

/*
 * The highest layout offset a slot's reserved_offset may reach: the
 * freshness mark published in etcd for the shard this server holds, -1 for
 * any other shard, no limit without a registry.  Caller holds the slot lock.
 */
int64		sf_registry_cap(int64 shard);

/*
 * Called by a generating call whose next ID lies beyond the published
 * freshness mark: asks the worker to publish one and waits a little (no
 * network here), bounded by snowflake.max_clock_wait from *started_us.
 */
void		sf_registry_await(int64 shard, int64 wanted, int64 *started_us);

extern "C" PGDLLEXPORT void snowflake_registry_worker_main(Datum arg);

#endif							/* SNOWFLAKE_REGISTRY_HPP */
