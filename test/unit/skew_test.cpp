/*-------------------------------------------------------------------------
 *
 * skew_test.cpp
 *		GoogleTest unit tests of src/core/skew.*: the estimate of this
 *		server's clock minus the registry's, from the bounds each answer
 *		gives (the skew guard, snowflake.registry_max_skew).
 *
 * Built into test/unit/core_test and run by "make unitcheck".
 *
 * Suites:
 *	 SkewTest    skew_add() intersects agreeing recent samples, drops
 *	             disagreeing or stale ones, keeps 64; skew_forget();
 *	             skew_mid_ms()/skew_error_ms(); skew_beyond()
 *
 *-------------------------------------------------------------------------
 */
#include "core/skew.hpp"

#include <gtest/gtest.h>

#include <cstdint>

using snowflake::SkewEstimate;

namespace
{

constexpr int64_t kSecond = INT64_C(1000000000);

SkewEstimate
Empty()
{
	return SkewEstimate{};
}

}								/* namespace */

TEST(SkewTest, EmptyIsUnknownAndNeverBeyond)
{
	SkewEstimate e = Empty();

	EXPECT_FALSE(e.known);
	EXPECT_FALSE(snowflake::skew_beyond(e, 1));
}

TEST(SkewTest, OneSampleIsTheEstimate)
{
	SkewEstimate e = Empty();

	snowflake::skew_add(e, 5 * kSecond, -7, 12);
	EXPECT_TRUE(e.known);
	EXPECT_EQ(e.lo_ms, -7);
	EXPECT_EQ(e.hi_ms, 12);
	EXPECT_EQ(e.count, 1);
}

TEST(SkewTest, AgreeingSamplesIntersect)
{
	SkewEstimate e = Empty();

	snowflake::skew_add(e, 1 * kSecond, -10, 20);
	snowflake::skew_add(e, 2 * kSecond, 0, 30);
	snowflake::skew_add(e, 3 * kSecond, -5, 15);
	EXPECT_EQ(e.lo_ms, 0);
	EXPECT_EQ(e.hi_ms, 15);
	EXPECT_EQ(e.count, 3);
}

TEST(SkewTest, ASteppedClockLeavesOlderSamplesBehind)
{
	SkewEstimate e = Empty();

	snowflake::skew_add(e, 1 * kSecond, 0, 20);
	snowflake::skew_add(e, 2 * kSecond, 5, 25);
	/* the registry's clock (or ours) stepped by a second */
	snowflake::skew_add(e, 3 * kSecond, 1000, 1010);
	EXPECT_EQ(e.lo_ms, 1000);
	EXPECT_EQ(e.hi_ms, 1010);
	EXPECT_EQ(e.count, 1);
	/* and the old samples stay out even when a later one would agree with them */
	snowflake::skew_add(e, 4 * kSecond, 0, 1005);
	EXPECT_EQ(e.lo_ms, 1000);
	EXPECT_EQ(e.hi_ms, 1005);
	EXPECT_EQ(e.count, 2);
}

TEST(SkewTest, SamplesOlderThanTheWindowStopCounting)
{
	SkewEstimate e = Empty();

	snowflake::skew_add(e, 1 * kSecond, 0, 10);
	snowflake::skew_add(e, 1 * kSecond + snowflake::kSkewWindowNs + 1, -50, 50);
	EXPECT_EQ(e.lo_ms, -50);
	EXPECT_EQ(e.hi_ms, 50);
	EXPECT_EQ(e.count, 1);
	/* exactly at the window's edge a sample still counts */
	snowflake::skew_add(e, 1 * kSecond + snowflake::kSkewWindowNs + 1 + snowflake::kSkewWindowNs,
						-20, 80);
	EXPECT_EQ(e.lo_ms, -20);
	EXPECT_EQ(e.hi_ms, 50);
}

TEST(SkewTest, KeepsTheNewestSamplesOnly)
{
	SkewEstimate e = Empty();
	const int	n = snowflake::kSkewSamples + 36;

	/* sample i: [i, 1000 + i]; the newest kSkewSamples intersect to [n - 1, 1000 + n - kSkewSamples] */
	for (int i = 0; i < n; i++)
		snowflake::skew_add(e, i * kSecond, i, 1000 + i);
	EXPECT_EQ(e.count, snowflake::kSkewSamples);
	EXPECT_EQ(e.lo_ms, n - 1);
	EXPECT_EQ(e.hi_ms, 1000 + n - snowflake::kSkewSamples);
}

TEST(SkewTest, ForgetStartsAgainWithTheNextSample)
{
	SkewEstimate e = Empty();

	snowflake::skew_add(e, 1 * kSecond, 0, 10);
	snowflake::skew_forget(e);
	EXPECT_TRUE(e.known);		/* the last estimate stands until the next sample */
	EXPECT_EQ(e.count, 0);
	snowflake::skew_add(e, 2 * kSecond, 500, 600);
	EXPECT_EQ(e.lo_ms, 500);
	EXPECT_EQ(e.hi_ms, 600);
	EXPECT_EQ(e.count, 1);
}

TEST(SkewTest, MiddleAndError)
{
	SkewEstimate e = Empty();

	snowflake::skew_add(e, kSecond, 10, 20);
	EXPECT_EQ(snowflake::skew_mid_ms(e), 15);
	EXPECT_EQ(snowflake::skew_error_ms(e), 5);
	e = Empty();
	snowflake::skew_add(e, kSecond, -3, 4);
	EXPECT_EQ(snowflake::skew_mid_ms(e), 0);
	EXPECT_EQ(snowflake::skew_error_ms(e), 4);
	e = Empty();
	snowflake::skew_add(e, kSecond, -2000, -1990);
	EXPECT_EQ(snowflake::skew_mid_ms(e), -1995);
	EXPECT_EQ(snowflake::skew_error_ms(e), 5);
}

TEST(SkewTest, BeyondOnlyWhenTheWholeEstimateIs)
{
	SkewEstimate e = Empty();

	snowflake::skew_add(e, kSecond, 1001, 1200);
	EXPECT_TRUE(snowflake::skew_beyond(e, 1000));
	EXPECT_FALSE(snowflake::skew_beyond(e, 1001));	/* it may be exactly 1001 */
	EXPECT_FALSE(snowflake::skew_beyond(e, 0));	/* the guard off */
	e = Empty();
	snowflake::skew_add(e, kSecond, -1200, -1001);
	EXPECT_TRUE(snowflake::skew_beyond(e, 1000));
	e = Empty();
	snowflake::skew_add(e, kSecond, 900, 1100);
	EXPECT_FALSE(snowflake::skew_beyond(e, 1000));	/* maybe within */
}

TEST(SkewTest, AbsurdSamplesAreBoundedNotOverflowed)
{
	SkewEstimate e = Empty();

	snowflake::skew_add(e, kSecond, INT64_MIN, INT64_MAX);
	EXPECT_EQ(e.lo_ms, -snowflake::kSkewLimitMs);
	EXPECT_EQ(e.hi_ms, snowflake::kSkewLimitMs);
	EXPECT_EQ(snowflake::skew_mid_ms(e), 0);
	EXPECT_EQ(snowflake::skew_error_ms(e), snowflake::kSkewLimitMs);
	EXPECT_FALSE(snowflake::skew_beyond(e, 1000));
	e = Empty();
	snowflake::skew_add(e, kSecond, INT64_MAX - 1, INT64_MAX);
	EXPECT_TRUE(snowflake::skew_beyond(e, 1000));
	EXPECT_EQ(snowflake::skew_mid_ms(e), snowflake::kSkewLimitMs);
}
