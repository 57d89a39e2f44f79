/*-------------------------------------------------------------------------
 *
 * shardlist_test.cpp
 *		GoogleTest unit tests of src/core/shardlist.*: lists of shards such
 *		as "0-63,128" (parse_shard_ranges(), shard_in_ranges()).
 *
 * Built into test/unit/core_test and run by "make unitcheck".
 *
 * Suites:
 *	 ShardRangesTest     lists, ranges, bounds and syntax errors
 *
 *-------------------------------------------------------------------------
 */
#include "core/shardlist.hpp"

#include <gtest/gtest.h>

#include <cstdint>

using snowflake::RangeProblem;

TEST(ShardRangesTest, ParsesListsAndRanges)
{
	snowflake::ShardRange r[8];
	int			n = -1;

	EXPECT_EQ(snowflake::parse_shard_ranges("", 1023, r, 8, &n), RangeProblem::None);
	EXPECT_EQ(n, 0);
	EXPECT_EQ(snowflake::parse_shard_ranges("  ", 1023, r, 8, &n), RangeProblem::None);
	EXPECT_EQ(n, 0);
	ASSERT_EQ(snowflake::parse_shard_ranges("0-63, 128 ,200 - 201", 1023, r, 8, &n),
			  RangeProblem::None);
	ASSERT_EQ(n, 3);
	EXPECT_EQ(r[0].lo, 0);
	EXPECT_EQ(r[0].hi, 63);
	EXPECT_EQ(r[1].lo, 128);
	EXPECT_EQ(r[1].hi, 128);
	EXPECT_EQ(r[2].lo, 200);
	EXPECT_EQ(r[2].hi, 201);
	for (int64_t s : {0, 63, 128, 200, 201})
		EXPECT_TRUE(snowflake::shard_in_ranges(r, n, s)) << s;
	for (int64_t s : {-1, 64, 127, 129, 199, 202, 1023})
		EXPECT_FALSE(snowflake::shard_in_ranges(r, n, s)) << s;

	/* counting without room, then filling */
	EXPECT_EQ(snowflake::parse_shard_ranges("1,2,3,4,5", 1023, nullptr, 0, &n), RangeProblem::None);
	EXPECT_EQ(n, 5);

	EXPECT_EQ(snowflake::parse_shard_ranges("1024", 1023, r, 8, &n), RangeProblem::OutOfRange);
	EXPECT_EQ(snowflake::parse_shard_ranges("5-1024", 1023, r, 8, &n), RangeProblem::OutOfRange);
	EXPECT_EQ(snowflake::parse_shard_ranges("5-2", 1023, r, 8, &n), RangeProblem::Reversed);
	for (const char *bad : {",", "1,", ",1", "1,,2", "a", "1-", "-1", "1-2-3", "1 2",
							"99999999999999999999"})
		EXPECT_EQ(snowflake::parse_shard_ranges(bad, 1023, r, 8, &n), RangeProblem::Syntax) << bad;
}
