/*-------------------------------------------------------------------------
 *
 * layout_test.cpp
 *		GoogleTest unit tests of src/core/layout.*: the bit layout and its
 *		limits, encode/decode, check_layout(), parse_epoch(), format_utc(),
 *		describe_layout_change() and other systems' named layouts.
 *
 * Built into test/unit/core_test and run by "make unitcheck".  Expected
 * values are derived from the layout arithmetic, from timegm() or from
 * well-known constants, never copied from a run.
 *
 * Suites:
 *	 LayoutTest          widths, limits, check_layout()
 *	 EncodeDecodeTest    round trips and ordering of IDs
 *	 ParseEpochTest      parse_epoch() and format_utc()
 *	 ParseEpochStrictTest  parse_epoch() refuses half-written zones
 *	 LayoutRecordTest    (Describe* only) describe_layout_change(); the
 *	                     record's own tests are in records_test.cpp
 *	 NamedLayoutTest     other systems' IDs against their published examples
 *	 LayoutWidthUnit     1.2's ID width, time unit and datacenters (its
 *	                     RecordKeepsTheDefaultFormat is in records_test.cpp)
 *
 *-------------------------------------------------------------------------
 */
#include "core/layout.hpp"
#include "unit_helpers.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <vector>

using snowflake::Decoded;
using snowflake::Layout;
using snowflake::LayoutProblem;
using namespace snowflake_unit;

namespace
{

constexpr int64_t kMsPerDay = INT64_C(86400000);

/* The UTC year of a Unix millisecond time, computed with the C library. */
int
UtcYear(int64_t unix_ms)
{
	time_t		t = (time_t) (unix_ms / 1000);
	struct tm	tm;

	gmtime_r(&t, &tm);
	return tm.tm_year + 1900;
}

}								/* namespace */

/*===========================================================================
 * LayoutTest: widths, limits and check_layout().
 *===========================================================================*/

TEST(LayoutTest, DefaultLayoutArithmetic)
{
	const Layout l = DefaultLayout();

	EXPECT_EQ(snowflake::kDefaultEpochMs, kDefaultEpoch);
	EXPECT_EQ(snowflake::kDefaultEpochMs, UtcMs(2024, 1, 1));
	EXPECT_EQ(l.timestamp_bits(), 41);
	EXPECT_EQ(1 + l.timestamp_bits() + l.shard_bits + l.sequence_bits, 64);
	EXPECT_EQ(l.max_shard_id(), 1023);
	EXPECT_EQ(l.max_sequence(), 4095);
	EXPECT_EQ(l.max_offset(), (INT64_C(1) << 41) - 1);
	EXPECT_EQ(l.last_unix_ms(), kDefaultEpoch + (INT64_C(1) << 41) - 1);
	/* 2^41 ms is about 69.7 years: the default layout ends in 2093. */
	EXPECT_EQ(UtcYear(l.last_unix_ms()), 2093);
	EXPECT_EQ(FormatUtc(l.last_unix_ms()).substr(0, 5), "2093-");
}

TEST(LayoutTest, OtherWidths)
{
	struct Case
	{
		int			shard_bits;
		int			sequence_bits;
	};
	const Case	cases[] = {{0, 1}, {0, 24}, {20, 1}, {20, 5}, {5, 20}, {13, 12},
	{8, 8}, {1, 1}, {16, 9}};

	for (const Case &c : cases)
	{
		SCOPED_TRACE(testing::Message() << "shard_bits=" << c.shard_bits
					 << " sequence_bits=" << c.sequence_bits);
		const Layout l{kDefaultEpoch, c.shard_bits, c.sequence_bits};
		const int	ts_bits = 63 - c.shard_bits - c.sequence_bits;

		EXPECT_EQ(l.timestamp_bits(), ts_bits);
		EXPECT_EQ(l.max_shard_id(), (INT64_C(1) << c.shard_bits) - 1);
		EXPECT_EQ(l.max_sequence(), (INT64_C(1) << c.sequence_bits) - 1);
		EXPECT_EQ(l.max_offset(), (INT64_C(1) << ts_bits) - 1);
		EXPECT_EQ(l.last_unix_ms(), kDefaultEpoch + (INT64_C(1) << ts_bits) - 1);
		EXPECT_GT(l.last_unix_ms(), l.epoch_ms);
	}
	/* The narrowest allowed timestamp (38 bits) still lasts more than 8 years. */
	const Layout narrow{kDefaultEpoch, 13, 12};

	EXPECT_EQ(narrow.timestamp_bits(), snowflake::kMinTimestampBits);
	EXPECT_GT(narrow.max_offset(), INT64_C(8) * 365 * kMsPerDay);
	EXPECT_EQ(UtcYear(narrow.last_unix_ms()), 2032);
}

TEST(LayoutTest, Equality)
{
	const Layout a = DefaultLayout();
	Layout		b = a;

	EXPECT_TRUE(a == b);
	EXPECT_FALSE(a != b);
	b.epoch_ms++;
	EXPECT_TRUE(a != b);
	b = a;
	b.shard_bits++;
	EXPECT_TRUE(a != b);
	b = a;
	b.sequence_bits++;
	EXPECT_TRUE(a != b);
}

TEST(LayoutTest, CheckLayoutValid)
{
	const int64_t now = kDefaultEpoch + 100 * kMsPerDay;

	EXPECT_EQ(snowflake::check_layout(DefaultLayout(), now), LayoutProblem::None);
	/* Boundaries of every width. */
	EXPECT_EQ(snowflake::check_layout({kDefaultEpoch, 0, 1}, now), LayoutProblem::None);
	EXPECT_EQ(snowflake::check_layout({kDefaultEpoch, 20, 5}, now), LayoutProblem::None);
	EXPECT_EQ(snowflake::check_layout({kDefaultEpoch, 1, 24}, now), LayoutProblem::None);
	EXPECT_EQ(snowflake::check_layout({kDefaultEpoch, 13, 12}, now), LayoutProblem::None);
	/* The epoch may be the Unix epoch itself, or exactly now. */
	EXPECT_EQ(snowflake::check_layout({0, 10, 12}, now), LayoutProblem::None);
	EXPECT_EQ(snowflake::check_layout({now, 10, 12}, now), LayoutProblem::None);
	/* The last representable millisecond is still usable. */
	const Layout l = DefaultLayout();

	EXPECT_EQ(snowflake::check_layout(l, l.last_unix_ms()), LayoutProblem::None);
}

TEST(LayoutTest, CheckLayoutWidthsOutOfRange)
{
	const int64_t now = kDefaultEpoch + kMsPerDay;

	EXPECT_EQ(snowflake::check_layout({kDefaultEpoch, -1, 12}, now),
			  LayoutProblem::ShardBitsOutOfRange);
	EXPECT_EQ(snowflake::check_layout({kDefaultEpoch, snowflake::kMaxShardBits + 1, 1}, now),
			  LayoutProblem::ShardBitsOutOfRange);
	EXPECT_EQ(snowflake::check_layout({kDefaultEpoch, 10, 0}, now),
			  LayoutProblem::SequenceBitsOutOfRange);
	EXPECT_EQ(snowflake::check_layout({kDefaultEpoch, 10, -3}, now),
			  LayoutProblem::SequenceBitsOutOfRange);
	EXPECT_EQ(snowflake::check_layout({kDefaultEpoch, 0, snowflake::kMaxSequenceBits + 1}, now),
			  LayoutProblem::SequenceBitsOutOfRange);
}

TEST(LayoutTest, CheckLayoutTimestampTooNarrow)
{
	const int64_t now = kDefaultEpoch + kMsPerDay;

	/* shard_bits + sequence_bits > 25 leaves fewer than 38 timestamp bits. */
	for (int shard = 0; shard <= snowflake::kMaxShardBits; shard++)
		for (int seq = 1; seq <= snowflake::kMaxSequenceBits; seq++)
		{
			SCOPED_TRACE(testing::Message() << "shard_bits=" << shard
						 << " sequence_bits=" << seq);
			LayoutProblem p = snowflake::check_layout({kDefaultEpoch, shard, seq}, now);

			if (shard + seq > 25)
				EXPECT_EQ(p, LayoutProblem::TimestampTooNarrow);
			else
				EXPECT_EQ(p, LayoutProblem::None);
		}
}

TEST(LayoutTest, CheckLayoutEpoch)
{
	const int64_t now = kDefaultEpoch + kMsPerDay;

	EXPECT_EQ(snowflake::check_layout({now + 1, 10, 12}, now), LayoutProblem::EpochInFuture);
	EXPECT_EQ(snowflake::check_layout({now + 365 * kMsPerDay, 10, 12}, now),
			  LayoutProblem::EpochInFuture);
	EXPECT_EQ(snowflake::check_layout({-1, 10, 12}, now), LayoutProblem::EpochBeforeUnixEpoch);
	EXPECT_EQ(snowflake::check_layout({UtcMs(1969, 7, 20), 10, 12}, now),
			  LayoutProblem::EpochBeforeUnixEpoch);
}

TEST(LayoutTest, CheckLayoutExpired)
{
	const Layout l = DefaultLayout();

	EXPECT_EQ(snowflake::check_layout(l, l.last_unix_ms() + 1), LayoutProblem::Expired);
	EXPECT_EQ(snowflake::check_layout(l, UtcMs(2100, 1, 1)), LayoutProblem::Expired);

	/* A narrow layout with an old epoch is already expired. */
	const Layout old{UtcMs(1990, 1, 1), 13, 12};

	EXPECT_EQ(snowflake::check_layout(old, UtcMs(2024, 1, 1)), LayoutProblem::Expired);
	EXPECT_EQ(snowflake::check_layout(old, old.last_unix_ms()), LayoutProblem::None);
}

/*===========================================================================
 * EncodeDecodeTest: round trips and ordering of IDs.
 *===========================================================================*/

namespace
{

const Layout kEncodeLayouts[] = {
	{kDefaultEpoch, 10, 12},
	{kDefaultEpoch, 0, 1},
	{kDefaultEpoch, 0, 24},
	{kDefaultEpoch, 20, 5},
	{kDefaultEpoch, 5, 20},
	{kDefaultEpoch, 13, 12},
	{0, 8, 8},
};

struct Fields
{
	int64_t		offset;
	int64_t		shard;
	int64_t		sequence;
};

Fields
RandomFields(std::mt19937_64 &rng, const Layout &l)
{
	Fields		f;

	f.offset = std::uniform_int_distribution<int64_t>(0, l.max_offset())(rng);
	f.shard = std::uniform_int_distribution<int64_t>(0, l.max_shard_id())(rng);
	f.sequence = std::uniform_int_distribution<int64_t>(0, l.max_sequence())(rng);
	return f;
}

}								/* namespace */

TEST(EncodeDecodeTest, RoundTripRandomFields)
{
	std::mt19937_64 rng(20240101);

	for (const Layout &l : kEncodeLayouts)
	{
		SCOPED_TRACE(testing::Message() << "shard_bits=" << l.shard_bits
					 << " sequence_bits=" << l.sequence_bits);
		for (int i = 0; i < 100000; i++)
		{
			const Fields f = RandomFields(rng, l);
			const int64_t id = snowflake::encode(l, f.offset, f.shard, f.sequence);
			const Decoded d = snowflake::decode(l, id);

			ASSERT_GE(id, 0);
			ASSERT_EQ(d.unix_ms, l.epoch_ms + f.offset);
			ASSERT_EQ(d.shard, f.shard);
			ASSERT_EQ(d.sequence, f.sequence);
			/* And back: the ID is the unique encoding of its fields. */
			ASSERT_EQ(snowflake::encode(l, d.unix_ms - l.epoch_ms, d.shard, d.sequence), id);
		}
	}
}

TEST(EncodeDecodeTest, Extremes)
{
	for (const Layout &l : kEncodeLayouts)
	{
		SCOPED_TRACE(testing::Message() << "shard_bits=" << l.shard_bits
					 << " sequence_bits=" << l.sequence_bits);
		EXPECT_EQ(snowflake::encode(l, 0, 0, 0), 0);
		/* All fields at their maximum fill the 63 value bits exactly. */
		const int64_t top = snowflake::encode(l, l.max_offset(), l.max_shard_id(),
											  l.max_sequence());

		EXPECT_EQ(top, INT64_MAX);
		const Decoded d = snowflake::decode(l, top);

		EXPECT_EQ(d.unix_ms, l.last_unix_ms());
		EXPECT_EQ(d.shard, l.max_shard_id());
		EXPECT_EQ(d.sequence, l.max_sequence());

		const Decoded z = snowflake::decode(l, 0);

		EXPECT_EQ(z.unix_ms, l.epoch_ms);
		EXPECT_EQ(z.shard, 0);
		EXPECT_EQ(z.sequence, 0);
	}
}

TEST(EncodeDecodeTest, FieldsDoNotOverlap)
{
	const Layout l = DefaultLayout();

	EXPECT_EQ(snowflake::encode(l, 0, 0, 1), 1);
	EXPECT_EQ(snowflake::encode(l, 0, 1, 0), INT64_C(1) << l.sequence_bits);
	EXPECT_EQ(snowflake::encode(l, 1, 0, 0), INT64_C(1) << (l.sequence_bits + l.shard_bits));
	EXPECT_EQ(snowflake::encode(l, 0, 0, l.max_sequence()) + 1, snowflake::encode(l, 0, 1, 0));
	EXPECT_EQ(snowflake::encode(l, 0, l.max_shard_id(), l.max_sequence()) + 1,
			  snowflake::encode(l, 1, 0, 0));
}

TEST(EncodeDecodeTest, OrderingByTimestampThenSequence)
{
	std::mt19937_64 rng(42);

	for (const Layout &l : kEncodeLayouts)
	{
		SCOPED_TRACE(testing::Message() << "shard_bits=" << l.shard_bits
					 << " sequence_bits=" << l.sequence_bits);
		for (int i = 0; i < 50000; i++)
		{
			Fields		a = RandomFields(rng, l);
			Fields		b = RandomFields(rng, l);

			/* Larger timestamp => larger ID, whatever the shard and sequence. */
			if (a.offset != b.offset)
			{
				if (a.offset > b.offset)
					std::swap(a.offset, b.offset);
				ASSERT_LT(snowflake::encode(l, a.offset, a.shard, a.sequence),
						  snowflake::encode(l, b.offset, b.shard, b.sequence));
			}
			/* Adjacent milliseconds, worst case for the lower fields. */
			if (a.offset < l.max_offset())
			{
				ASSERT_LT(snowflake::encode(l, a.offset, l.max_shard_id(), l.max_sequence()),
						  snowflake::encode(l, a.offset + 1, 0, 0));
			}

			/* Same ms and shard: larger sequence => larger ID. */
			if (a.sequence != b.sequence)
			{
				int64_t		lo = std::min(a.sequence, b.sequence);
				int64_t		hi = std::max(a.sequence, b.sequence);

				ASSERT_LT(snowflake::encode(l, a.offset, a.shard, lo),
						  snowflake::encode(l, a.offset, a.shard, hi));
			}
		}
	}
}

TEST(EncodeDecodeTest, UnixMsToPostgresMicroseconds)
{
	EXPECT_EQ(snowflake::kPostgresEpochUnixMs, UtcMs(2000, 1, 1));
	EXPECT_EQ(snowflake::unix_ms_to_pg_us(snowflake::kPostgresEpochUnixMs), 0);
	EXPECT_EQ(snowflake::unix_ms_to_pg_us(snowflake::kPostgresEpochUnixMs + 1), 1000);
	EXPECT_EQ(snowflake::unix_ms_to_pg_us(0), -snowflake::kPostgresEpochUnixMs * 1000);
	EXPECT_EQ(snowflake::unix_ms_to_pg_us(kDefaultEpoch),
			  (kDefaultEpoch - UtcMs(2000, 1, 1)) * 1000);
}

/*===========================================================================
 * ParseEpochTest: parse_epoch() and format_utc().
 *===========================================================================*/

namespace
{

::testing::AssertionResult
ParsesTo(const char *text, int64_t expected)
{
	int64_t		got = INT64_MIN;

	if (!snowflake::parse_epoch(text, &got))
		return ::testing::AssertionFailure() << "\"" << text << "\" was rejected";
	if (got != expected)
		return ::testing::AssertionFailure() << "\"" << text << "\" parsed to " << got
			<< ", expected " << expected;
	return ::testing::AssertionSuccess();
}

::testing::AssertionResult
Rejects(const char *text)
{
	int64_t		got = INT64_MIN;

	if (snowflake::parse_epoch(text, &got))
		return ::testing::AssertionFailure() << "\"" << (text ? text : "(null)")
			<< "\" was accepted as " << got;
	return ::testing::AssertionSuccess();
}

}								/* namespace */

TEST(ParseEpochTest, DateForms)
{
	const int64_t jan1 = UtcMs(2024, 1, 1);

	EXPECT_EQ(jan1, INT64_C(1704067200000));
	EXPECT_TRUE(ParsesTo("2024-01-01", jan1));
	EXPECT_TRUE(ParsesTo("2024-01-01 00:00:00", jan1));
	EXPECT_TRUE(ParsesTo("2024-01-01 00:00", jan1));
	EXPECT_TRUE(ParsesTo("2024-01-01T00:00:00", jan1));
	EXPECT_TRUE(ParsesTo("2024-01-01t00:00:00", jan1));
	EXPECT_TRUE(ParsesTo("2024-01-01T00:00:00Z", jan1));
	EXPECT_TRUE(ParsesTo("2024-01-01T00:00:00z", jan1));
	EXPECT_TRUE(ParsesTo("2024-01-01 00:00:00+00", jan1));
	EXPECT_TRUE(ParsesTo("2024-01-01 00:00:00+00:00", jan1));
	EXPECT_TRUE(ParsesTo("2024-01-01 00:00:00-00", jan1));
	EXPECT_TRUE(ParsesTo("2024-01-01 00:00:00 UTC", jan1));
	EXPECT_TRUE(ParsesTo("2024-01-01 00:00:00 utc", jan1));
	EXPECT_TRUE(ParsesTo("2024-01-01 UTC", jan1));
	EXPECT_TRUE(ParsesTo("2024-01-01Z", jan1));
	EXPECT_TRUE(ParsesTo("  2024-01-01 00:00:00  ", jan1));
	EXPECT_TRUE(ParsesTo("2024-01-01 00:00:00.000+00", jan1));
}

TEST(ParseEpochTest, TimesAndKnownDates)
{
	EXPECT_TRUE(ParsesTo("1970-01-01", 0));
	EXPECT_TRUE(ParsesTo("1970-01-01 00:00:00.001", 1));
	EXPECT_TRUE(ParsesTo("1969-12-31 23:59:59.999", -1));
	EXPECT_TRUE(ParsesTo("2000-01-01", snowflake::kPostgresEpochUnixMs));
	EXPECT_TRUE(ParsesTo("2024-01-01T08:00:00Z", UtcMs(2024, 1, 1, 8)));
	EXPECT_TRUE(ParsesTo("2023-12-31 23:59:59", UtcMs(2023, 12, 31, 23, 59, 59)));
	EXPECT_TRUE(ParsesTo("2024-06-15 12:34", UtcMs(2024, 6, 15, 12, 34)));
	EXPECT_TRUE(ParsesTo("2038-01-19 03:14:08", INT64_C(2147483648000)));
	EXPECT_TRUE(ParsesTo("2100-03-01", UtcMs(2100, 3, 1)));
}

TEST(ParseEpochTest, LeapDays)
{
	EXPECT_TRUE(ParsesTo("2024-02-29", UtcMs(2024, 2, 29)));
	EXPECT_TRUE(ParsesTo("2024-02-29", INT64_C(1704067200000) + 59 * kMsPerDay));
	EXPECT_TRUE(ParsesTo("2000-02-29", UtcMs(2000, 2, 29)));
	EXPECT_TRUE(ParsesTo("2024-03-01", UtcMs(2024, 2, 29) + kMsPerDay));
	EXPECT_TRUE(Rejects("2023-02-29"));
	EXPECT_TRUE(Rejects("1900-02-29"));		/* divisible by 100, not by 400 */
	EXPECT_TRUE(Rejects("2100-02-29"));
	EXPECT_TRUE(Rejects("2024-02-30"));
}

TEST(ParseEpochTest, Offsets)
{
	const int64_t jan1 = UtcMs(2024, 1, 1);
	const int64_t hour = 3600 * 1000;

	/* Local time minus the offset is UTC. */
	EXPECT_TRUE(ParsesTo("2024-01-01 00:00:00+02:00", jan1 - 2 * hour));
	EXPECT_TRUE(ParsesTo("2024-01-01 02:00:00+02:00", jan1));
	EXPECT_TRUE(ParsesTo("2024-01-01 00:00:00+02", jan1 - 2 * hour));
	EXPECT_TRUE(ParsesTo("2024-01-01 00:00:00+0200", jan1 - 2 * hour));
	EXPECT_TRUE(ParsesTo("2024-01-01 00:00:00-0530", jan1 + 5 * hour + 30 * 60 * 1000));
	EXPECT_TRUE(ParsesTo("2024-01-01 00:00:00-05:30", jan1 + 5 * hour + 30 * 60 * 1000));
	EXPECT_TRUE(ParsesTo("2024-01-01T05:45:00+05:45", jan1));
	EXPECT_TRUE(ParsesTo("2024-01-01 00:00:00 +02:00", jan1 - 2 * hour));
	EXPECT_TRUE(ParsesTo("2024-01-01+02:00", jan1 - 2 * hour));
	EXPECT_TRUE(ParsesTo("2024-01-01 00:00:00+14:00", jan1 - 14 * hour));
	/* The documented example. */
	EXPECT_TRUE(ParsesTo("2024-01-01 00:00:00.5+02:00", jan1 - 2 * hour + 500));
}

TEST(ParseEpochTest, FractionalSeconds)
{
	const int64_t jan1 = UtcMs(2024, 1, 1);

	EXPECT_TRUE(ParsesTo("2024-01-01 00:00:00.5", jan1 + 500));
	EXPECT_TRUE(ParsesTo("2024-01-01 00:00:00.05", jan1 + 50));
	EXPECT_TRUE(ParsesTo("2024-01-01 00:00:00.123", jan1 + 123));
	/* Digits finer than milliseconds are ignored (truncated). */
	EXPECT_TRUE(ParsesTo("2024-01-01 00:00:00.123456", jan1 + 123));
	EXPECT_TRUE(ParsesTo("2024-01-01 00:00:00.9999999999", jan1 + 999));
	EXPECT_TRUE(ParsesTo("2024-01-01 00:00:01.250Z", jan1 + 1250));
	EXPECT_TRUE(ParsesTo("2024-01-01T12:30:15.007 UTC", UtcMs(2024, 1, 1, 12, 30, 15, 7)));
}

TEST(ParseEpochTest, Rejected)
{
	EXPECT_TRUE(Rejects(nullptr));
	EXPECT_TRUE(Rejects(""));
	EXPECT_TRUE(Rejects("   "));
	EXPECT_TRUE(Rejects("yesterday"));
	EXPECT_TRUE(Rejects("now"));
	EXPECT_TRUE(Rejects("2024-13-01"));
	EXPECT_TRUE(Rejects("2024-00-10"));
	EXPECT_TRUE(Rejects("2024-01-00"));
	EXPECT_TRUE(Rejects("2024-01-32"));
	EXPECT_TRUE(Rejects("2024-04-31"));
	EXPECT_TRUE(Rejects("2024-01-01 25:00"));
	EXPECT_TRUE(Rejects("2024-01-01 24:00:00"));
	EXPECT_TRUE(Rejects("2024-01-01 00:60"));
	EXPECT_TRUE(Rejects("2024-01-01 00:00:60"));
	EXPECT_TRUE(Rejects("2024-01-01 00"));
	EXPECT_TRUE(Rejects("2024-01-01 0:00"));
	EXPECT_TRUE(Rejects("2024-01-01 00:00:0"));
	EXPECT_TRUE(Rejects("2024-01-01 00:00:00."));
	EXPECT_TRUE(Rejects("2024-01-01x"));
	EXPECT_TRUE(Rejects("2024-01-01T"));
	EXPECT_TRUE(Rejects("2024-01-01 00:00:00 garbage"));
	EXPECT_TRUE(Rejects("2024-01-01 00:00:00Zjunk"));
	EXPECT_TRUE(Rejects("2024-01-01 00:00:00 UTC junk"));
	EXPECT_TRUE(Rejects("2024-01-01 00:00:00 UTCX"));
	EXPECT_TRUE(Rejects("2024-01-01 00:00:00 EST"));
	EXPECT_TRUE(Rejects("2024-01-01 00:00:00 UT"));
	EXPECT_TRUE(Rejects("2024-01-01 00:00:00+"));
	EXPECT_TRUE(Rejects("2024-01-01 00:00:00+2"));
	EXPECT_TRUE(Rejects("2024-01-01 00:00:00+020"));
	EXPECT_TRUE(Rejects("2024-01-01 00:00:00+02:0"));
	EXPECT_TRUE(Rejects("2024-01-01 00:00:00+16:00"));
	EXPECT_TRUE(Rejects("2024-01-01 00:00:00+02:60"));
	EXPECT_TRUE(Rejects("2024-01-01 00:00:00+02:00 UTC"));
	EXPECT_TRUE(Rejects("2024/01/01"));
	EXPECT_TRUE(Rejects("24-01-01"));
	EXPECT_TRUE(Rejects("2024-1-1"));
	EXPECT_TRUE(Rejects("20240101"));
	EXPECT_TRUE(Rejects("-2024-01-01"));
	EXPECT_TRUE(Rejects("2024-01"));
	EXPECT_TRUE(Rejects("2024"));
}

TEST(ParseEpochTest, RandomDatesAgreeWithTimegm)
{
	std::mt19937_64 rng(7);
	std::uniform_int_distribution<int> year(1970, 2200), month(1, 12), hour(0, 23),
				minute(0, 59), second(0, 59), milli(0, 999), off_h(0, 14), off_m(0, 59);

	for (int i = 0; i < 20000; i++)
	{
		static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
		int			y = year(rng), mo = month(rng);
		bool		leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
		int			d = std::uniform_int_distribution<int>(1, mdays[mo - 1] +
															  (mo == 2 && leap))(rng);
		int			h = hour(rng), mi = minute(rng), s = second(rng), ms = milli(rng);
		int			oh = off_h(rng), om = off_m(rng);
		int			sign = (rng() & 1) ? 1 : -1;
		char		text[80];

		snprintf(text, sizeof(text), "%04d-%02d-%02dT%02d:%02d:%02d.%03d%c%02d:%02d",
				 y, mo, d, h, mi, s, ms, sign > 0 ? '+' : '-', oh, om);
		ASSERT_TRUE(ParsesTo(text, UtcMs(y, mo, d, h, mi, s, ms) -
							 (int64_t) sign * (oh * 60 + om) * 60 * 1000));
	}
}

TEST(ParseEpochTest, FormatUtc)
{
	EXPECT_EQ(FormatUtc(INT64_C(1704067200000)), "2024-01-01 00:00:00.000+00");
	EXPECT_EQ(FormatUtc(0), "1970-01-01 00:00:00.000+00");
	EXPECT_EQ(FormatUtc(-1), "1969-12-31 23:59:59.999+00");
	EXPECT_EQ(FormatUtc(UtcMs(2024, 2, 29, 23, 59, 58, 7)), "2024-02-29 23:59:58.007+00");

	/* Truncates safely into a short buffer. */
	char		small[11];

	snowflake::format_utc(INT64_C(1704067200000), small, sizeof(small));
	EXPECT_STREQ(small, "2024-01-01");
}

TEST(ParseEpochTest, FormatUtcRoundTripsThroughParseEpoch)
{
	std::mt19937_64 rng(99);
	const Layout l = DefaultLayout();
	std::uniform_int_distribution<int64_t> dist(-UtcMs(2100, 1, 1) / 4, l.last_unix_ms());
	std::vector<int64_t> samples = {0, -1, 1, kDefaultEpoch, l.last_unix_ms(),
		UtcMs(2024, 2, 29), UtcMs(2000, 2, 29, 23, 59, 59, 999)};

	for (int i = 0; i < 50000; i++)
		samples.push_back(dist(rng));
	for (int64_t ms : samples)
	{
		const std::string text = FormatUtc(ms);

		ASSERT_TRUE(ParsesTo(text.c_str(), ms));
	}
}

TEST(ParseEpochStrictTest, RejectsHalfWrittenZones)
{
	int64_t		ms;

	EXPECT_FALSE(snowflake::parse_epoch("2024-01-01 00:00:00+02:", &ms));
	EXPECT_FALSE(snowflake::parse_epoch("2024-01-01 00:00:00+02:3", &ms));
	EXPECT_FALSE(snowflake::parse_epoch("2024-01-01UTC", &ms));
	EXPECT_FALSE(snowflake::parse_epoch("2024-01-01 00:00:00UTC", &ms));
	ASSERT_TRUE(snowflake::parse_epoch("2024-01-01 00:00:00 UTC", &ms));
	EXPECT_EQ(ms, snowflake::kDefaultEpochMs);
	ASSERT_TRUE(snowflake::parse_epoch("2024-01-01 02:30:00+02:30", &ms));
	EXPECT_EQ(ms, snowflake::kDefaultEpochMs);
}

/*===========================================================================
 * LayoutRecordTest (describe_layout_change): how a recorded layout differs.
 *===========================================================================*/

namespace
{

std::string
Describe(const Layout &was, const Layout &now)
{
	char		buf[512];
	int			n = snowflake::describe_layout_change(was, now, buf, sizeof(buf));

	EXPECT_EQ((size_t) n, strlen(buf));
	return buf;
}

}								/* namespace */

TEST(LayoutRecordTest, DescribeNamesEachChangedSettingOnly)
{
	const Layout was = DefaultLayout();
	const std::string names[] = {"snowflake.epoch", "snowflake.shard_bits",
	"snowflake.sequence_bits"};

	/* Nothing changed: nothing to say. */
	EXPECT_EQ(Describe(was, was), "");

	/* Every non-empty subset of the three settings. */
	for (int mask = 1; mask < 8; mask++)
	{
		Layout		now = was;

		if (mask & 1)
			now.epoch_ms = UtcMs(2025, 3, 1);
		if (mask & 2)
			now.shard_bits = 8;
		if (mask & 4)
			now.sequence_bits = 14;

		const std::string text = Describe(was, now);

		SCOPED_TRACE(text);
		for (int i = 0; i < 3; i++)
		{
			/* "snowflake.shard_bits" must not match inside another name. */
			bool		named = Contains(text, names[i] + " was");

			EXPECT_EQ(named, (mask & (1 << i)) != 0) << names[i];
		}
		if (mask & 1)
		{
			EXPECT_TRUE(Contains(text, "snowflake.epoch was " + FormatUtc(was.epoch_ms) +
								 " and is now " + FormatUtc(now.epoch_ms)));
		}
		if (mask & 2)
		{
			EXPECT_TRUE(Contains(text, "snowflake.shard_bits was 10 and is now 8"));
		}
		if (mask & 4)
		{
			EXPECT_TRUE(Contains(text, "snowflake.sequence_bits was 12 and is now 14"));
		}
		/* Several changes are separated by "; ". */
		int			changes = __builtin_popcount(mask);
		size_t		seps = 0;

		for (size_t p = text.find("; "); p != std::string::npos; p = text.find("; ", p + 1))
			seps++;
		EXPECT_EQ(seps, (size_t) changes - 1);
	}
}

TEST(LayoutRecordTest, DescribeTruncatesSafely)
{
	const Layout was = DefaultLayout();
	const Layout now{UtcMs(2025, 3, 1), 8, 14};
	const std::string full = Describe(was, now);

	for (size_t len = 1; len < full.size() + 5; len++)
	{
		std::vector<char> buf(len + 8, '#');
		int			n = snowflake::describe_layout_change(was, now, buf.data(), len);

		SCOPED_TRACE(len);
		ASSERT_EQ((size_t) n, strlen(buf.data()));
		ASSERT_EQ((size_t) n, std::min(len - 1, full.size()));
		ASSERT_EQ(std::string(buf.data()), full.substr(0, (size_t) n));
		/* Nothing written beyond the buffer. */
		for (size_t i = len; i < buf.size(); i++)
			ASSERT_EQ(buf[i], '#');
	}
}

/*-------------------------------------------------------------------------
 * NamedLayoutTest: other systems' IDs against their published examples
 *-------------------------------------------------------------------------
 */

namespace
{

const snowflake::NamedLayout &
Named(const char *name)
{
	const snowflake::NamedLayout *l = snowflake::find_named_layout(name, strlen(name));

	EXPECT_NE(l, nullptr) << name;
	return *l;
}

snowflake::NamedDecoded
DecodeNamed(const char *name, int64_t id)
{
	snowflake::NamedDecoded d{};

	EXPECT_TRUE(snowflake::decode_named(Named(name), id, &d)) << name << " " << id;
	return d;
}

}								/* namespace */

/* Discord's documentation: 175928847299117063 is 2016-04-30 11:18:25.796 UTC,
 * worker 1, process 0, increment 7. */
TEST(NamedLayoutTest, DiscordDocumentationExample)
{
	snowflake::NamedDecoded d = DecodeNamed("discord", INT64_C(175928847299117063));

	EXPECT_EQ(d.unix_ms, UtcMs(2016, 4, 30, 11, 18, 25, 796));
	EXPECT_EQ(FormatUtc(d.unix_ms), "2016-04-30 11:18:25.796+00");
	EXPECT_EQ(d.shard_high, 1);		/* worker */
	EXPECT_EQ(d.shard_low, 0);		/* process */
	EXPECT_EQ(d.shard, 1 << 5);		/* the whole 10-bit field */
	EXPECT_EQ(d.sequence, 7);		/* increment */
	/* the epoch: 2015-01-01 00:00:00 UTC */
	EXPECT_EQ(DecodeNamed("discord", 0).unix_ms, UtcMs(2015, 1, 1));
}

/* Instagram's engineering post: 1387263000 ms into the epoch, logical shard
 * 1341, sequence 5001 % 1024 = 905.  With the epoch of their published code
 * (1314220021721) that is 2011-09-09 22:28:04.721 UTC: "September 9th". */
TEST(NamedLayoutTest, InstagramBlogExample)
{
	const int64_t id = (INT64_C(1387263000) << 23) | (INT64_C(1341) << 10) | 905;
	snowflake::NamedDecoded d = DecodeNamed("instagram", id);

	EXPECT_EQ(d.unix_ms, UtcMs(2011, 9, 9, 22, 28, 4, 721));
	EXPECT_EQ(d.shard, 1341);
	EXPECT_EQ(d.sequence, 5001 % 1024);
	EXPECT_EQ(d.shard_high, 1341);	/* one-part field: high is the field, low is 0 */
	EXPECT_EQ(d.shard_low, 0);
}

/* Mastodon's API documentation (Status entity): 103270115826048975, created_at
 * 2019-12-08T03:48:33.901Z; the ID's own time is 52 ms earlier. */
TEST(NamedLayoutTest, MastodonDocumentationExample)
{
	snowflake::NamedDecoded d = DecodeNamed("mastodon", INT64_C(103270115826048975));

	EXPECT_EQ(d.unix_ms, UtcMs(2019, 12, 8, 3, 48, 33, 849));
	EXPECT_LE(UtcMs(2019, 12, 8, 3, 48, 33, 901) - d.unix_ms, 1000);
	EXPECT_EQ(d.sequence, INT64_C(103270115826048975) & 0xFFFF);
	EXPECT_EQ(d.shard, 0);			/* no shard field */
	EXPECT_EQ(Named("mastodon").shard_bits, 0);
}

/* Twitter: the epoch is 1288834974657 (2010-11-04 01:42:54.657 UTC); 5 bits
 * datacenter above 5 bits worker above 12 bits sequence. */
TEST(NamedLayoutTest, TwitterFields)
{
	EXPECT_EQ(FormatUtc(DecodeNamed("twitter", 0).unix_ms), "2010-11-04 01:42:54.657+00");
	const int64_t offset = UtcMs(2021, 4, 14, 15, 30, 6, 417) - INT64_C(1288834974657);
	const int64_t id = (offset << 22) | (INT64_C(10) << 17) | (INT64_C(7) << 12) | 4;
	snowflake::NamedDecoded d = DecodeNamed("twitter", id);

	EXPECT_EQ(FormatUtc(d.unix_ms), "2021-04-14 15:30:06.417+00");
	EXPECT_EQ(d.shard_high, 10);	/* datacenter */
	EXPECT_EQ(d.shard_low, 7);		/* worker */
	EXPECT_EQ(d.shard, (10 << 5) | 7);
	EXPECT_EQ(d.sequence, 4);
}

/* Sonyflake: 10 ms units since 2014-09-01 UTC; the sequence sits ABOVE the
 * 16-bit machine ID (the lower 16 bits of the private IP by default). */
TEST(NamedLayoutTest, SonyflakeFieldOrderAndUnit)
{
	EXPECT_EQ(DecodeNamed("sonyflake", 0).unix_ms, UtcMs(2014, 9, 1));
	const int64_t units = (UtcMs(2024, 6, 1, 12, 0, 0, 120) - UtcMs(2014, 9, 1)) / 10;
	const int64_t machine = (168 << 8) | 1;	/* lower 16 bits of 10.0.168.1 */
	const int64_t id = (units << 24) | (INT64_C(200) << 16) | machine;
	snowflake::NamedDecoded d = DecodeNamed("sonyflake", id);

	EXPECT_EQ(FormatUtc(d.unix_ms), "2024-06-01 12:00:00.120+00");
	EXPECT_EQ(d.sequence, 200);
	EXPECT_EQ(d.shard, machine);
	/* 39 bits of 10 ms last 174 years: the largest ID decodes in 2188 */
	EXPECT_EQ(UtcYear(DecodeNamed("sonyflake", INT64_MAX).unix_ms), 2188);
}

TEST(NamedLayoutTest, LookupAndList)
{
	EXPECT_NE(snowflake::find_named_layout("Discord", 7), nullptr);
	EXPECT_NE(snowflake::find_named_layout("TWITTER", 7), nullptr);
	EXPECT_EQ(snowflake::find_named_layout("discordx", 8), nullptr);
	EXPECT_EQ(snowflake::find_named_layout("discor", 6), nullptr);
	EXPECT_EQ(snowflake::find_named_layout("", 0), nullptr);
	/* the own layout is not in the table: the glue builds it from the settings */
	EXPECT_EQ(snowflake::find_named_layout("snowflake", 9), nullptr);
	char		buf[128];

	snowflake::list_named_layouts(buf, sizeof(buf));
	EXPECT_STREQ(buf, "twitter, discord, instagram, sonyflake, sonyflake_v2, mastodon");
	/* a short buffer is cut, never overrun */
	EXPECT_EQ(snowflake::list_named_layouts(buf, 8), 7);
	EXPECT_EQ(strlen(buf), 7u);
}

/* The own layout decodes exactly like decode(). */
TEST(NamedLayoutTest, OwnLayoutMatchesDecode)
{
	std::mt19937_64 rng(5);

	for (const Layout &l : {DefaultLayout(), Layout{kDefaultEpoch, 0, 24}, Layout{0, 20, 5}})
	{
		const snowflake::NamedLayout own = snowflake::own_named_layout(l);

		for (int i = 0; i < 10000; i++)
		{
			int64_t		id = (int64_t) (rng() >> 1);
			snowflake::NamedDecoded n{};
			Decoded		d = snowflake::decode(l, id);

			ASSERT_TRUE(snowflake::decode_named(own, id, &n));
			ASSERT_EQ(n.unix_ms, d.unix_ms);
			ASSERT_EQ(n.shard, d.shard);
			ASSERT_EQ(n.sequence, d.sequence);
		}
	}
}

/* Every field recomposes to the ID, for every named layout. */
TEST(NamedLayoutTest, FieldsRecompose)
{
	std::mt19937_64 rng(9);

	for (int k = 0; k < snowflake::kNamedLayoutCount; k++)
	{
		const snowflake::NamedLayout &l = snowflake::kNamedLayouts[k];

		for (int i = 0; i < 10000; i++)
		{
			int64_t		id = (int64_t) (rng() >> 1);
			snowflake::NamedDecoded d{};

			ASSERT_TRUE(snowflake::decode_named(l, id, &d));
			int64_t		units = (d.unix_ms - l.epoch_ms) / l.unit_ms;
			int64_t		low = l.sequence_above_shard
				? (d.sequence << l.shard_bits) | d.shard
				: (d.shard << l.sequence_bits) | d.sequence;

			ASSERT_EQ((units << (l.shard_bits + l.sequence_bits)) | low, id) << l.name;
			ASSERT_EQ((d.shard_high << l.shard_low_bits) | d.shard_low, d.shard) << l.name;
		}
	}
}

// ---- 1.2: ID width, time unit, datacenters -------------------------------

using namespace snowflake;

TEST(LayoutWidthUnit, WidthAndUnitShapeTheTimestamp)
{
	// the JavaScript preset: 53 bits, 10 ms, 6 shard bits, 8 sequence bits
	Layout		js = {kDefaultEpochMs, 6, 8};

	js.id_bits = 53;
	js.unit_ms = 10;
	EXPECT_EQ(js.timestamp_bits(), 39);
	EXPECT_EQ(js.max_id(), (INT64_C(1) << 53) - 1);
	EXPECT_EQ(check_layout(js, kDefaultEpochMs + 1000), LayoutProblem::None);
	// the largest ID is a safe JavaScript integer
	EXPECT_LE(encode(js, js.max_offset(), js.max_shard_id(), js.max_sequence()),
			  (INT64_C(1) << 53) - 1);
	// 2^39 units of 10 ms: about 174 years
	EXPECT_GT(js.last_unix_ms() - js.epoch_ms, INT64_C(174) * 365 * 86400000);

	// units: a millisecond maps to the unit that holds it, and back to its start
	EXPECT_EQ(js.offset_of(kDefaultEpochMs + 25), 2);
	EXPECT_EQ(js.unix_ms_of(2), kDefaultEpochMs + 20);
	EXPECT_EQ(js.unix_ms_end_of(2), kDefaultEpochMs + 29);
	EXPECT_EQ(js.offset_of(kDefaultEpochMs - 1), -1);	// floor, before the epoch
	EXPECT_EQ(js.offset_of(kDefaultEpochMs - 10), -1);
	EXPECT_EQ(js.offset_of(kDefaultEpochMs - 11), -2);
	EXPECT_EQ(js.units(1000), 100);
	// decoding returns the exact start of the unit
	int64_t		id = encode(js, 12345, 7, 3);
	Decoded		d = decode(js, id);
	EXPECT_EQ(d.unix_ms, kDefaultEpochMs + 123450);
	EXPECT_EQ(d.shard, 7);
	EXPECT_EQ(d.sequence, 3);

	// a layout that outlasts int64 milliseconds (54 timestamp bits of 1 s):
	// accepted, and its times saturate instead of wrapping
	Layout		wide = js;
	wide.id_bits = 63;
	wide.unit_ms = 1000;
	wide.shard_bits = 0;
	wide.sequence_bits = 9;
	ASSERT_EQ(check_layout(wide, kDefaultEpochMs + 1000), LayoutProblem::None);
	EXPECT_EQ(wide.unix_ms_end_of(wide.max_offset()), INT64_MAX);
	EXPECT_EQ(wide.unix_ms_of(wide.max_offset()), INT64_MAX);
	EXPECT_EQ(wide.last_unix_ms(), INT64_MAX);
	EXPECT_EQ(wide.unix_ms_end_of(5), kDefaultEpochMs + 5999);
	// the last unit that int64 ms still hold ends within them
	int64_t		last_whole = (INT64_MAX - wide.epoch_ms) / wide.unit_ms - 1;
	EXPECT_GT(wide.unix_ms_end_of(last_whole), wide.unix_ms_of(last_whole));
	EXPECT_LT(wide.unix_ms_end_of(last_whole), INT64_MAX);
}

TEST(LayoutWidthUnit, RefusesWhatLeavesNoRoom)
{
	Layout		l = {kDefaultEpochMs, 10, 12};

	l.id_bits = 39;
	EXPECT_EQ(check_layout(l, kDefaultEpochMs + 1), LayoutProblem::IdBitsOutOfRange);
	l.id_bits = 53;		// 53 - 22 = 31 bits of 1 ms: 24.9 days
	EXPECT_EQ(check_layout(l, kDefaultEpochMs + 1), LayoutProblem::TimestampTooNarrow);
	l.unit_ms = 1000;	// 31 bits of seconds: 68 years
	EXPECT_EQ(check_layout(l, kDefaultEpochMs + 1), LayoutProblem::None);
	l.unit_ms = 3;		// does not divide a second
	EXPECT_EQ(check_layout(l, kDefaultEpochMs + 1), LayoutProblem::UnitInvalid);
	l.unit_ms = 1;
	l.id_bits = 63;
	l.datacenter_bits = 11;	// more than the shard field
	EXPECT_EQ(check_layout(l, kDefaultEpochMs + 1), LayoutProblem::DatacenterBitsOutOfRange);
	EXPECT_EQ(min_timestamp_bits(1), 38);
	EXPECT_EQ(min_timestamp_bits(10), 35);
	EXPECT_EQ(min_timestamp_bits(1000), 29);	// 2^28 s is 8.5 years: one short
}

TEST(LayoutWidthUnit, DatacenterAndWorker)
{
	Layout		l = {kDefaultEpochMs, 10, 12};

	l.datacenter_bits = 5;
	EXPECT_EQ(l.worker_bits(), 5);
	EXPECT_EQ(l.max_datacenter_id(), 31);
	EXPECT_EQ(l.max_worker_id(), 31);
	NamedLayout own = own_named_layout(l);
	NamedDecoded nd;
	// datacenter 3, worker 17 (shard 3 << 5 | 17)
	ASSERT_TRUE(decode_named(own, encode(l, 1000, (3 << 5) | 17, 9), &nd));
	EXPECT_EQ(nd.shard, (3 << 5) | 17);
	EXPECT_EQ(nd.shard_high, 3);
	EXPECT_EQ(nd.shard_low, 17);
	EXPECT_EQ(nd.sequence, 9);
	EXPECT_EQ(nd.unix_ms, kDefaultEpochMs + 1000);
}

TEST(NamedLayoutTest, SonyflakeV2)
{
	const NamedLayout *v2 = find_named_layout("sonyflake_v2", 12);
	NamedDecoded d;

	ASSERT_NE(v2, nullptr);
	// composed as Sonyflake v2 does: 2025-06-01 12:00:00 UTC, sequence 5, machine 42;
	// elapsed units of 10 ms since 2025-01-01 00:00:00 UTC
	int64_t		elapsed = (INT64_C(1748779200000) - INT64_C(1735689600000)) / 10;
	int64_t		id = (elapsed << (8 + 16)) | (INT64_C(5) << 16) | 42;

	ASSERT_TRUE(decode_named(*v2, id, &d));
	EXPECT_EQ(d.unix_ms, INT64_C(1748779200000));
	EXPECT_EQ(d.sequence, 5);
	EXPECT_EQ(d.shard, 42);
}

/*
 * The hot path's division by the unit (Layout::div_unit, issue 27): without a
 * run-time division for the units a layout may have, and exactly C++'s
 * truncating division for every unit and every int64 it may meet, so that
 * offset_of (floor, also before the epoch) and units() keep their meaning.
 * The expected values are computed here with the division operator.
 */
TEST(LayoutUnitDivision, ExactForEveryUnitAndValue)
{
	std::mt19937_64 rng(27);
	std::vector<int64_t> units;

	// every unit check_layout accepts, and others (other systems' layouts)
	for (int64_t u = 1; u <= kMaxUnitMs; u++)
		if (kMaxUnitMs % u == 0)
			units.push_back(u);
	ASSERT_EQ(units.size(), 16u);
	for (int64_t u : {3, 7, 60, 1024, 4096, 60000})
		units.push_back(u);

	for (int64_t u : units)
	{
		Layout		l = {kDefaultEpochMs, 10, 12};
		std::vector<int64_t> values = {0, 1, -1, INT64_MAX, INT64_MIN + 1, INT64_MAX - 1,
									   INT64_C(1) << 62, -(INT64_C(1) << 62),
									   INT64_C(3600000), kDefaultEpochMs};

		l.unit_ms = u;
		// around multiples of the unit, small and large
		for (int64_t k : {INT64_C(0), INT64_C(1), INT64_C(2), INT64_C(999),
						  INT64_C(1) << 20, INT64_C(1) << 40, INT64_MAX / u - 3})
			for (int64_t delta = -2; delta <= 2; delta++)
			{
				values.push_back(k * u + delta);
				values.push_back(-(k * u) + delta);
			}
		for (int i = 0; i < 20000; i++)
		{
			int64_t		v = (int64_t) rng();

			values.push_back(v);
			values.push_back(v >> (rng() % 63));	/* every magnitude */
		}
		for (int64_t v : values)
		{
			ASSERT_EQ(l.div_unit(v), v / u) << "unit " << u << " value " << v;
			ASSERT_EQ(l.units(v), v / u) << "unit " << u << " value " << v;
		}
		// offset_of: the floor of (ms - epoch) / unit, also before the epoch
		for (int64_t v : values)
		{
			int64_t		ms = v % (INT64_C(1) << 61);	/* no overflow of ms - epoch */
			int64_t		d = ms - l.epoch_ms;
			int64_t		floor = d / u - ((d % u != 0 && d < 0) ? 1 : 0);

			ASSERT_EQ(l.offset_of(ms), floor) << "unit " << u << " ms " << ms;
			// the unit holds the millisecond
			if (floor >= 0)
			{
				ASSERT_LE(l.unix_ms_of(floor), ms);
				ASSERT_GE(l.unix_ms_end_of(floor), ms);
			}
		}
	}
}
