/*-------------------------------------------------------------------------
 *
 * timebound_test.cpp
 *		GoogleTest unit tests of the core behind the snowflake type:
 *		time_bound() and compare_with_bound() (where a time falls among the
 *		IDs, for "id >= t" and "id < t") and parse_decimal() (its input).
 *
 * Built into core_test by "make unitcheck".  The property checked is the
 * definition: an ID compares as created at or after t exactly when decode()
 * gives it a time at or after t, for several layouts, at and around unit
 * boundaries and at random.
 *
 *-------------------------------------------------------------------------
 */
#include "core/core.hpp"

#include <random>

#include <gtest/gtest.h>

using snowflake::DecimalProblem;
using snowflake::Layout;
using snowflake::TimeBound;

namespace
{

/* The layouts the type's tests cover: widths, units, epochs. */
std::vector<Layout>
TestLayouts()
{
	std::vector<Layout> ls;
	Layout		l{snowflake::kDefaultEpochMs, 10, 12};

	ls.push_back(l);				/* the default */
	l = Layout{snowflake::kDefaultEpochMs, 6, 8, 53, 10};
	ls.push_back(l);				/* the JavaScript preset: 53 bits, 10 ms */
	l = Layout{INT64_C(1288834974657), 10, 12};
	ls.push_back(l);				/* an epoch that is not a whole second */
	l = Layout{0, 0, 13, 63, 1000};
	ls.push_back(l);				/* 1 s units from the Unix epoch, 50 timestamp bits */
	l = Layout{snowflake::kDefaultEpochMs, 4, 1, 40, 4};
	ls.push_back(l);				/* the narrowest width with 4 ms units */
	return ls;
}

/* Whether an ID of the layout was created at or after a Unix millisecond. */
bool
AtOrAfter(const Layout &l, int64_t id, int64_t unix_ms)
{
	return snowflake::decode(l, id).unix_ms >= unix_ms;
}

}								/* namespace */

TEST(TimeBoundTest, AgreesWithDecodeAroundBoundaries)
{
	std::mt19937_64 rng(28);

	for (const Layout &l : TestLayouts())
	{
		int			shift = l.shard_bits + l.sequence_bits;

		for (int i = 0; i < 20000; i++)
		{
			/* a unit, then a time at, just before or just after its start */
			int64_t		u = (int64_t) (rng() % (uint64_t) (l.max_offset() + 1));
			int64_t		t = l.unix_ms_of(u) + (int64_t) (rng() % 5) - 2;
			TimeBound	b = snowflake::time_bound(l, t);

			/* the first and last IDs of the units around it, and one at random */
			for (int64_t v : {u - 1, u, u + 1})
			{
				if (v < 0 || v > l.max_offset())
					continue;
				for (int64_t id : {v << shift, (v << shift) | ((INT64_C(1) << shift) - 1),
								   (v << shift) | (int64_t) (rng() & ((UINT64_C(1) << shift) - 1))})
				{
					int			c = snowflake::compare_with_bound(l, id, b);

					ASSERT_NE(c, 0);
					ASSERT_EQ(c > 0, AtOrAfter(l, id, t))
						<< "id_bits " << l.id_bits << " unit " << l.unit_ms << " t " << t << " id " << id;
				}
			}
		}
	}
}

TEST(TimeBoundTest, OutsideTheLayout)
{
	for (const Layout &l : TestLayouts())
	{
		TimeBound	b;

		/* at or before the epoch: every ID is at or after */
		for (int64_t t : {l.epoch_ms, l.epoch_ms - 1, l.epoch_ms - INT64_C(100000000000000),
						  INT64_MIN / 2})
		{
			b = snowflake::time_bound(l, t);
			EXPECT_FALSE(b.past_end);
			EXPECT_EQ(b.first_id, 0);
			EXPECT_GT(snowflake::compare_with_bound(l, 0, b), 0);
		}
		/* just after the epoch: the second unit's first ID */
		b = snowflake::time_bound(l, l.epoch_ms + 1);
		EXPECT_EQ(b.first_id, snowflake::encode(l, 1, 0, 0));
		/* the start of the last unit is in; a millisecond later is past the end */
		b = snowflake::time_bound(l, l.last_unix_ms());
		EXPECT_FALSE(b.past_end);
		EXPECT_EQ(b.first_id, snowflake::encode(l, l.max_offset(), 0, 0));
		b = snowflake::time_bound(l, l.last_unix_ms() + 1);
		EXPECT_TRUE(b.past_end);
		EXPECT_LT(snowflake::compare_with_bound(l, l.max_id(), b), 0);
		if (l.id_bits < 63)
		{
			EXPECT_GT(snowflake::compare_with_bound(l, l.max_id() + 1, b), 0);
		}
		b = snowflake::time_bound(l, INT64_MAX / 2);
		EXPECT_TRUE(b.past_end);
	}
}

TEST(TimeBoundTest, MonotoneInTime)
{
	std::mt19937_64 rng(29);

	for (const Layout &l : TestLayouts())
	{
		for (int i = 0; i < 20000; i++)
		{
			int64_t		span = l.last_unix_ms() - l.epoch_ms + 10;
			int64_t		t1 = l.epoch_ms - 5 + (int64_t) (rng() % (uint64_t) span);
			int64_t		t2 = t1 + (int64_t) (rng() % 3000);
			TimeBound	a = snowflake::time_bound(l, t1);
			TimeBound	b = snowflake::time_bound(l, t2);

			/* a later time never sits below an earlier one (a consistent order) */
			ASSERT_TRUE(b.past_end || (!a.past_end && a.first_id <= b.first_id)) << t1 << " " << t2;
		}
	}
}

TEST(DecimalTest, Parses)
{
	int64_t		id = 42;
	size_t		bad = 99;

	ASSERT_EQ(snowflake::parse_decimal("0", 1, &id, &bad), DecimalProblem::None);
	EXPECT_EQ(id, 0);
	ASSERT_EQ(snowflake::parse_decimal("384004287098785976", 18, &id, &bad), DecimalProblem::None);
	EXPECT_EQ(id, INT64_C(384004287098785976));
	ASSERT_EQ(snowflake::parse_decimal("9223372036854775807", 19, &id, &bad), DecimalProblem::None);
	EXPECT_EQ(id, INT64_MAX);
	ASSERT_EQ(snowflake::parse_decimal("000123", 6, &id, &bad), DecimalProblem::None);
	EXPECT_EQ(id, 123);
	/* "-0" is 0, as bigint reads it */
	id = 42;
	ASSERT_EQ(snowflake::parse_decimal("-0", 2, &id, &bad), DecimalProblem::None);
	EXPECT_EQ(id, 0);
	id = 42;
	ASSERT_EQ(snowflake::parse_decimal("-000", 4, &id, &bad), DecimalProblem::None);
	EXPECT_EQ(id, 0);
	EXPECT_EQ(snowflake::parse_decimal("-01", 3, &id, &bad), DecimalProblem::Negative);
}

TEST(DecimalTest, Refuses)
{
	int64_t		id = 42;
	size_t		bad = 99;

	EXPECT_EQ(snowflake::parse_decimal("", 0, &id, &bad), DecimalProblem::Empty);
	EXPECT_EQ(snowflake::parse_decimal("-1", 2, &id, &bad), DecimalProblem::Negative);
	EXPECT_EQ(snowflake::parse_decimal("-9223372036854775808", 20, &id, &bad), DecimalProblem::Negative);
	EXPECT_EQ(snowflake::parse_decimal("9223372036854775808", 19, &id, &bad), DecimalProblem::OutOfRange);
	EXPECT_EQ(snowflake::parse_decimal("99999999999999999999", 20, &id, &bad), DecimalProblem::OutOfRange);
	for (const char *text : {"-", "+1", " 1", "1 ", "12a", "1.0", "1e3", "0x10", "--1", "1-"})
	{
		EXPECT_EQ(snowflake::parse_decimal(text, strlen(text), &id, &bad), DecimalProblem::BadCharacter)
			<< text;
		EXPECT_TRUE(text[bad] < '0' || text[bad] > '9') << text;
	}
	/* a NUL inside the length is a bad character, not the end */
	EXPECT_EQ(snowflake::parse_decimal("1\0002", 3, &id, &bad), DecimalProblem::BadCharacter);
	EXPECT_EQ(bad, 1u);
	EXPECT_EQ(id, 42);
}
