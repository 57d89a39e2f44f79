/*-------------------------------------------------------------------------
 *
 * shardlist.hpp
 *		Lists of shard IDs and ranges, such as "0-63,128": parsing and
 *		membership (snowflake.shard_ids, snowflake.registry_shards, the
 *		primary's shards a standby refuses).
 *
 * Part of the core: plain C++ that never includes postgres.h, allocates or
 * throws (every function is noexcept and works on caller-owned memory), so it
 * can run inside the glue's LWLocks and be unit-tested without a server.
 * It may call nothing but the C++ standard library.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_SHARDLIST_HPP
#define SNOWFLAKE_SHARDLIST_HPP

#include <cstddef>
#include <cstdint>

namespace snowflake
{

/* An inclusive range of shard IDs, from a list such as "0-63,128". */
struct ShardRange
{
	int64_t		lo;
	int64_t		hi;
};

enum class RangeProblem
{
	None,
	Syntax,						/* not "N", "N-M", separated by commas */
	OutOfRange,					/* a shard above max_shard */
	Reversed					/* N-M with M < N */
};

/*
 * Parses a shard list ("" means none; spaces allowed) into out[0..capacity).
 * Returns the problem, if any; *count gets the number of ranges, which may
 * exceed capacity (call again with more room).
 */
RangeProblem parse_shard_ranges(const char *text, int64_t max_shard, ShardRange *out,
								int capacity, int *count) noexcept;

/* Whether shard lies in one of ranges[0..count). */
bool shard_in_ranges(const ShardRange *ranges, int count, int64_t shard) noexcept;

}								/* namespace snowflake */

#endif							/* SNOWFLAKE_SHARDLIST_HPP */
