/*-------------------------------------------------------------------------
 *
 * core_test.cpp
 *		GoogleTest unit tests of the server-free parts of snowflake:
 *		src/core.cpp (bit layout, encode/decode, check_layout, parse_epoch,
 *		format_utc, the layout record, and the next_id() state machine driven
 *		by an injected clock) and src/statefile.cpp (durable small files
 *		under ./pg_snowflake/).
 *
 * Built and run by "make unitcheck".  Expected values are derived from the
 * layout arithmetic, from timegm() or from well-known constants, never
 * copied from a run.
 *
 * Suites:
 *	 LayoutTest          widths, limits, check_layout()
 *	 EncodeDecodeTest    round trips and ordering of IDs
 *	 ParseEpochTest      parse_epoch() and format_utc()
 *	 LayoutRecordTest    format/parse_layout_record(), describe_layout_change()
 *	 GeneratorTest       next_id() with an injected clock
 *	 GeneratorRandomTest randomized clock walks over next_id()
 *	 StateFileTest       write_file_durably(), read_small_file()
 *	 StateFileBoundaryTest  read_small_file() at the edges of its buffer
 *
 *-------------------------------------------------------------------------
 */
#include "core/core.hpp"
#include "core/statefile.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <ftw.h>
#include <iterator>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

using snowflake::Decoded;
using snowflake::GeneratorState;
using snowflake::Layout;
using snowflake::LayoutProblem;
using snowflake::Outcome;
using snowflake::RangeProblem;
using snowflake::TextProblem;
using snowflake::Step;

namespace
{

constexpr int64_t kMsPerDay = INT64_C(86400000);
constexpr int64_t kDefaultEpoch = INT64_C(1704067200000);	/* 2024-01-01 UTC */

Layout
DefaultLayout()
{
	return Layout{snowflake::kDefaultEpochMs, 10, 12};
}

/* Unix milliseconds of a UTC civil time, computed with the C library. */
int64_t
UtcMs(int y, int mo, int d, int h = 0, int mi = 0, int s = 0, int ms = 0)
{
	struct tm	tm;

	memset(&tm, 0, sizeof(tm));
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = s;
	return (int64_t) timegm(&tm) * 1000 + ms;
}

/* The UTC year of a Unix millisecond time, computed with the C library. */
int
UtcYear(int64_t unix_ms)
{
	time_t		t = (time_t) (unix_ms / 1000);
	struct tm	tm;

	gmtime_r(&t, &tm);
	return tm.tm_year + 1900;
}

std::string
FormatUtc(int64_t unix_ms)
{
	char		buf[64];

	snowflake::format_utc(unix_ms, buf, sizeof(buf));
	return buf;
}

bool
Contains(const std::string &haystack, const std::string &needle)
{
	return haystack.find(needle) != std::string::npos;
}

void
ExpectSameState(const GeneratorState &a, const GeneratorState &b)
{
	EXPECT_EQ(a.last_offset, b.last_offset);
	EXPECT_EQ(a.last_sequence, b.last_sequence);
}

/* A valid shard ID of the layout: k reduced modulo the number of shards. */
int64_t
ShardFor(const Layout &l, int64_t k)
{
	return k % (l.max_shard_id() + 1);
}

/* Offset (ms since the layout epoch) of an ID's timestamp. */
int64_t
OffsetOf(const Layout &l, int64_t id)
{
	return snowflake::decode(l, id).unix_ms - l.epoch_ms;
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

/*===========================================================================
 * LayoutRecordTest: the recorded-layout file format.
 *===========================================================================*/

namespace
{

std::string
FormatRecord(const Layout &l)
{
	char		buf[1024];
	int			n = snowflake::format_layout_record(l, buf, sizeof(buf));

	EXPECT_GT(n, 0);
	if (n < 0)
		return "";
	EXPECT_EQ((size_t) n, strlen(buf));
	return std::string(buf, (size_t) n);
}

bool
ParseRecord(const std::string &text, Layout *l)
{
	return snowflake::parse_layout_record(text.data(), text.size(), l);
}

/* The record with every line that starts with "key " removed. */
std::string
WithoutKey(const std::string &record, const std::string &key)
{
	std::istringstream in(record);
	std::string out, line;

	while (std::getline(in, line))
		if (line.compare(0, key.size() + 1, key + " ") != 0)
			out += line + "\n";
	return out;
}

std::string
Describe(const Layout &was, const Layout &now)
{
	char		buf[512];
	int			n = snowflake::describe_layout_change(was, now, buf, sizeof(buf));

	EXPECT_EQ((size_t) n, strlen(buf));
	return buf;
}

}								/* namespace */

TEST(LayoutRecordTest, FormatThenParseRoundTrips)
{
	const Layout layouts[] = {
		DefaultLayout(),
		{0, 0, 1},
		{kDefaultEpoch + 123, 20, 5},
		{UtcMs(2030, 6, 1, 12), 5, 20},
		{UtcMs(1969, 1, 1), 13, 12},
	};

	for (const Layout &l : layouts)
	{
		const std::string rec = FormatRecord(l);
		Layout		parsed{-7, -7, -7};

		SCOPED_TRACE(rec);
		ASSERT_TRUE(ParseRecord(rec, &parsed));
		EXPECT_TRUE(parsed == l);
		EXPECT_EQ(parsed.epoch_ms, l.epoch_ms);
		EXPECT_EQ(parsed.shard_bits, l.shard_bits);
		EXPECT_EQ(parsed.sequence_bits, l.sequence_bits);
		/* The human-readable epoch comment is there too. */
		EXPECT_TRUE(Contains(rec, "# epoch " + FormatUtc(l.epoch_ms)));
		EXPECT_TRUE(Contains(rec, "format 1\n"));
	}
}

TEST(LayoutRecordTest, FormatIntoTooSmallBuffer)
{
	const std::string rec = FormatRecord(DefaultLayout());
	std::vector<char> buf(rec.size() + 1);

	/* Exactly enough room for the text and its terminator. */
	EXPECT_EQ(snowflake::format_layout_record(DefaultLayout(), buf.data(), buf.size()),
			  (int) rec.size());
	EXPECT_EQ(std::string(buf.data()), rec);
	/* One byte less. */
	EXPECT_EQ(snowflake::format_layout_record(DefaultLayout(), buf.data(), rec.size()), -1);
	EXPECT_EQ(snowflake::format_layout_record(DefaultLayout(), buf.data(), 10), -1);
}

TEST(LayoutRecordTest, ParseToleratesCommentsBlankLinesAndMissingNewline)
{
	const std::string text =
		"# a comment\n"
		"\n"
		"sequence_bits 12\n"
		"# another\n"
		"shard_bits 10\n"
		"epoch_ms 1704067200000\n"
		"format 1";			/* no trailing newline */
	Layout		l{0, 0, 0};

	ASSERT_TRUE(ParseRecord(text, &l));
	EXPECT_TRUE(l == DefaultLayout());
}

TEST(LayoutRecordTest, ParseRespectsLength)
{
	const std::string rec = FormatRecord(DefaultLayout());
	Layout		l{0, 0, 0};

	/* The length bounds the text: cut before the sequence_bits line. */
	size_t		cut = rec.find("sequence_bits");

	ASSERT_NE(cut, std::string::npos);
	EXPECT_FALSE(snowflake::parse_layout_record(rec.data(), cut, &l));
	EXPECT_TRUE(snowflake::parse_layout_record(rec.data(), rec.size(), &l));
}

TEST(LayoutRecordTest, ParseRejectsMissingKeys)
{
	const std::string rec = FormatRecord(DefaultLayout());

	for (const char *key : {"format", "epoch_ms", "shard_bits", "sequence_bits"})
	{
		SCOPED_TRACE(key);
		const std::string text = WithoutKey(rec, key);
		Layout		l{0, 0, 0};

		ASSERT_NE(text, rec);
		EXPECT_FALSE(ParseRecord(text, &l));
	}
	Layout		l{0, 0, 0};

	EXPECT_FALSE(ParseRecord("", &l));
	EXPECT_FALSE(ParseRecord("# only a comment\n", &l));
}

TEST(LayoutRecordTest, ParseRejectsUnknownKeysGarbageAndWrongVersion)
{
	const std::string rec = FormatRecord(DefaultLayout());
	const std::string bad[] = {
		rec + "timestamp_bits 41\n",		/* unknown key */
		rec + "foo 1\n",
		rec + "hello\n",					/* garbage */
		rec + "shard_bits\n",
		rec + "\x01\x02\x03\n",
		"garbage",
		std::string(200, 'x') + "\n" + rec, /* over-long line */
		WithoutKey(rec, "format") + "format 2\n",	/* wrong format version */
		WithoutKey(rec, "format") + "format 0\n",
		WithoutKey(rec, "format") + "format -1\n",
		WithoutKey(rec, "shard_bits") + "shard_bits 10x\n",	/* trailing junk */
		WithoutKey(rec, "shard_bits") + "shard_bits ten\n",
		WithoutKey(rec, "shard_bits") + "shard_bits 64\n",
		WithoutKey(rec, "shard_bits") + "shard_bits -1\n",
		WithoutKey(rec, "sequence_bits") + "sequence_bits 99\n",
		WithoutKey(rec, "epoch_ms") + "epoch_ms 1704067200000.5\n",
		WithoutKey(rec, "epoch_ms") + "epoch_ms 2024-01-01\n",
	};

	for (const std::string &text : bad)
	{
		SCOPED_TRACE(text);
		Layout		l{0, 0, 0};

		EXPECT_FALSE(ParseRecord(text, &l));
	}
}

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

/*===========================================================================
 * GeneratorTest: next_id() driven by an injected clock.
 *===========================================================================*/

namespace
{

/* A generator with its layout, shard and lead; "now" is the injected clock. */
struct Gen
{
	Layout		layout;
	int64_t		shard;
	int64_t		lead;
	GeneratorState state = snowflake::kFreshState;

	Step		step(int64_t now)
	{
		return snowflake::next_id(state, layout, shard, now, lead);
	}
};

/* Issues one ID at "now" and checks the invariants every issued ID obeys. */
::testing::AssertionResult
IssueOne(Gen &g, int64_t now, int64_t *id)
{
	const GeneratorState before = g.state;
	const Step	s = g.step(now);

	if (s.outcome != Outcome::Issued)
		return ::testing::AssertionFailure() << "not issued at now=" << now
			<< " outcome=" << (int) s.outcome << " wait_until=" << s.wait_until;
	const Decoded d = snowflake::decode(g.layout, s.id);
	const int64_t ts = d.unix_ms - g.layout.epoch_ms;

	if (s.id < 0)
		return ::testing::AssertionFailure() << "negative id " << s.id;
	if (d.shard != g.shard)
		return ::testing::AssertionFailure() << "shard " << d.shard << " != " << g.shard;
	if (g.state.last_offset != ts || g.state.last_sequence != d.sequence)
		return ::testing::AssertionFailure() << "state does not match the ID";
	if (ts < now || ts - now > g.lead)
		return ::testing::AssertionFailure() << "timestamp " << ts << " outside [now, now+lead]"
			<< " now=" << now << " lead=" << g.lead;
	if (before.last_offset >= 0 &&
		s.id <= snowflake::encode(g.layout, before.last_offset, g.shard, before.last_sequence))
		return ::testing::AssertionFailure() << "ID did not increase";
	const int64_t behind = before.last_offset >= now ? before.last_offset - now : 0;

	if (s.behind != behind)
		return ::testing::AssertionFailure() << "behind " << s.behind << " != " << behind;
	*id = s.id;
	return ::testing::AssertionSuccess();
}

}								/* namespace */

TEST(GeneratorTest, FreshStateAdvancingClock)
{
	for (const Layout &l : {DefaultLayout(), Layout{kDefaultEpoch, 0, 1},
							Layout{kDefaultEpoch, 20, 5}})
	{
		for (int64_t lead : {0, 1, 1000})
		{
			SCOPED_TRACE(testing::Message() << "shard_bits=" << l.shard_bits
						 << " sequence_bits=" << l.sequence_bits << " lead=" << lead);
			Gen			g{l, l.max_shard_id() / 3 * 2, lead};
			std::mt19937_64 rng(5);
			int64_t		prev = -1;
			int64_t		now = 0;

			for (int i = 0; i < 5000; i++)
			{
				const Step	s = g.step(now);

				ASSERT_EQ(s.outcome, Outcome::Issued);
				ASSERT_GT(s.id, prev);
				ASSERT_EQ(s.behind, 0);
				const Decoded d = snowflake::decode(l, s.id);

				ASSERT_EQ(d.unix_ms, l.epoch_ms + now);
				ASSERT_EQ(d.unix_ms - l.epoch_ms, OffsetOf(l, s.id));
				ASSERT_EQ(d.shard, g.shard);
				ASSERT_EQ(d.sequence, 0);
				ASSERT_EQ(g.state.last_offset, now);
				ASSERT_EQ(g.state.last_sequence, 0);
				prev = s.id;
				now += 1 + (int64_t) (rng() % 5);
			}
		}
	}
}

TEST(GeneratorTest, FirstIdAtEpochAndLargeClock)
{
	const Layout l = DefaultLayout();
	Gen			g{l, 3, 0};
	int64_t		id;

	ASSERT_TRUE(IssueOne(g, 0, &id));
	EXPECT_EQ(id, snowflake::encode(l, 0, 3, 0));
	EXPECT_EQ(snowflake::decode(l, id).unix_ms, l.epoch_ms);

	/* A realistic clock: 2025-06-01 on the default epoch. */
	Gen			h{l, l.max_shard_id(), 0};
	const int64_t now = UtcMs(2025, 6, 1) - l.epoch_ms;

	ASSERT_TRUE(IssueOne(h, now, &id));
	EXPECT_EQ(snowflake::decode(l, id).unix_ms, UtcMs(2025, 6, 1));
	EXPECT_EQ(snowflake::decode(l, id).shard, l.max_shard_id());
}

TEST(GeneratorTest, SameMillisecondCountsSequenceThenWaits)
{
	for (const Layout &l : {DefaultLayout(), Layout{kDefaultEpoch, 0, 1},
							Layout{kDefaultEpoch, 4, 4}})
	{
		SCOPED_TRACE(testing::Message() << "sequence_bits=" << l.sequence_bits);
		Gen			g{l, ShardFor(l, 1), 0};
		const int64_t now = 100;
		int64_t		prev = -1;

		for (int64_t seq = 0; seq <= l.max_sequence(); seq++)
		{
			const Step	s = g.step(now);

			ASSERT_EQ(s.outcome, Outcome::Issued);
			ASSERT_GT(s.id, prev);
			const Decoded d = snowflake::decode(l, s.id);

			ASSERT_EQ(d.unix_ms, l.epoch_ms + now);
			ASSERT_EQ(d.sequence, seq);
			ASSERT_EQ(d.shard, g.shard);
			ASSERT_EQ(s.behind, 0);
			prev = s.id;
		}

		/* Sequence used up, lead 0: wait for the next millisecond, state untouched. */
		const GeneratorState before = g.state;
		const Step	w = g.step(now);

		EXPECT_EQ(w.outcome, Outcome::Wait);
		EXPECT_EQ(w.wait_until, now + 1);
		EXPECT_EQ(w.behind, 0);
		ExpectSameState(g.state, before);
		/* Asking again changes nothing either. */
		EXPECT_EQ(g.step(now).outcome, Outcome::Wait);
		ExpectSameState(g.state, before);

		/* With a lead of 1 ms the same call borrows the next millisecond. */
		Gen			borrow = g;

		borrow.lead = 1;
		const Step	b = borrow.step(now);

		ASSERT_EQ(b.outcome, Outcome::Issued);
		EXPECT_GT(b.id, prev);
		EXPECT_EQ(snowflake::decode(l, b.id).unix_ms, l.epoch_ms + now + 1);
		EXPECT_EQ(snowflake::decode(l, b.id).sequence, 0);

		/* Lead 0 again, the clock reaches wait_until: issuing resumes at seq 0. */
		const Step	r = g.step(w.wait_until);

		ASSERT_EQ(r.outcome, Outcome::Issued);
		EXPECT_GT(r.id, prev);
		EXPECT_EQ(snowflake::decode(l, r.id).unix_ms, l.epoch_ms + now + 1);
		EXPECT_EQ(snowflake::decode(l, r.id).sequence, 0);
	}
}

TEST(GeneratorTest, BurstInFrozenMillisecondWithinLead)
{
	for (const Layout &l : {Layout{kDefaultEpoch, 10, 12}, Layout{kDefaultEpoch, 0, 1},
							Layout{kDefaultEpoch, 6, 6}})
	{
		SCOPED_TRACE(testing::Message() << "sequence_bits=" << l.sequence_bits);
		const int64_t space = l.max_sequence() + 1;
		const int64_t now = 5000;

		/* Lead large enough for ten sequence spaces. */
		for (int64_t lead : {9, 10, 50})
		{
			SCOPED_TRACE(testing::Message() << "lead=" << lead);
			Gen			g{l, ShardFor(l, 2), lead};
			std::set<int64_t> seen;
			int64_t		prev = -1;
			int64_t		max_ts = -1;

			for (int64_t i = 0; i < 10 * space; i++)
			{
				int64_t		id;

				ASSERT_TRUE(IssueOne(g, now, &id)) << "i=" << i;
				ASSERT_GT(id, prev);
				ASSERT_TRUE(seen.insert(id).second);
				const int64_t ts = OffsetOf(l, id);

				ASSERT_LE(ts - now, lead);
				/* Dense: the i-th ID is sequence i % space of ms now + i / space. */
				ASSERT_EQ(ts, now + i / space);
				ASSERT_EQ(snowflake::decode(l, id).sequence, i % space);
				max_ts = std::max(max_ts, ts);
				prev = id;
			}
			EXPECT_EQ(seen.size(), (size_t) (10 * space));
			EXPECT_EQ(max_ts, now + 9);
		}
	}
}

TEST(GeneratorTest, BurstStopsExactlyWhenLeadIsUsedUp)
{
	for (const Layout &l : {Layout{kDefaultEpoch, 10, 12}, Layout{kDefaultEpoch, 0, 1},
							Layout{kDefaultEpoch, 6, 6}})
	{
		for (int64_t lead : {0, 1, 3, 7})
		{
			SCOPED_TRACE(testing::Message() << "sequence_bits=" << l.sequence_bits
						 << " lead=" << lead);
			Gen			g{l, 0, lead};
			const int64_t now = 777;
			int64_t		issued = 0;
			int64_t		prev = -1;
			Step		s;

			for (;;)
			{
				s = g.step(now);
				if (s.outcome != Outcome::Issued)
					break;
				ASSERT_GT(s.id, prev);
				ASSERT_LE(OffsetOf(l, s.id) - now, lead);
				prev = s.id;
				issued++;
				ASSERT_LE(issued, 10 * (l.max_sequence() + 1) * (lead + 1));
			}
			EXPECT_EQ(issued, (lead + 1) * (INT64_C(1) << l.sequence_bits));
			ASSERT_EQ(s.outcome, Outcome::Wait);
			/* The next ID would be ms now + lead + 1: allowed once the clock reads now + 1. */
			EXPECT_EQ(s.wait_until, now + 1);
			EXPECT_EQ(g.state.last_offset, now + lead);
			EXPECT_EQ(g.state.last_sequence, l.max_sequence());

			/* One ms before wait_until still waits; at wait_until one ID is issued. */
			if (lead > 0)
			{
				EXPECT_EQ(g.step(s.wait_until - 1).outcome, Outcome::Wait);
			}
			int64_t		id;

			ASSERT_TRUE(IssueOne(g, s.wait_until, &id));
			EXPECT_GT(id, prev);
			EXPECT_EQ(OffsetOf(l, id), now + lead + 1);
			EXPECT_EQ(snowflake::decode(l, id).sequence, 0);
		}
	}
}

TEST(GeneratorTest, ClockStepsBackWithinAndBeyondLead)
{
	for (const Layout &l : {DefaultLayout(), Layout{kDefaultEpoch, 0, 1},
							Layout{kDefaultEpoch, 4, 4}})
	{
		for (int64_t lead : {1, 10, 1000})
		{
			/* Step back by 1, exactly the lead, lead + 1, and much more. */
			for (int64_t back : {INT64_C(1), lead, lead + 1, 3 * lead + 17})
			{
				SCOPED_TRACE(testing::Message() << "sequence_bits=" << l.sequence_bits
							 << " lead=" << lead << " back=" << back);
				Gen			g{l, ShardFor(l, 5), lead};
				const int64_t t0 = 100000;
				int64_t		prev;

				ASSERT_TRUE(IssueOne(g, t0, &prev));
				ASSERT_EQ(OffsetOf(l, prev), t0);

				const int64_t now = t0 - back;
				const GeneratorState before = g.state;
				const Step	s = g.step(now);

				EXPECT_EQ(s.behind, back);
				if (back <= lead)
				{
					/* Within the lead: IDs continue after the last one. */
					ASSERT_EQ(s.outcome, Outcome::Issued);
					EXPECT_GT(s.id, prev);
					EXPECT_GE(OffsetOf(l, s.id), t0);
					EXPECT_LE(OffsetOf(l, s.id) - now, lead);
					/* The sequence of ms t0 was not used up: same ms, next sequence. */
					EXPECT_EQ(OffsetOf(l, s.id), t0);
					EXPECT_EQ(snowflake::decode(l, s.id).sequence, 1);
					prev = s.id;

					/* Keep issuing at the stale clock until the lead is used up. */
					Step		t;
					int64_t		n = 0;

					while ((t = g.step(now)).outcome == Outcome::Issued)
					{
						ASSERT_GT(t.id, prev);
						ASSERT_LE(OffsetOf(l, t.id) - now, lead);
						prev = t.id;
						n++;
						ASSERT_LT(n, (lead + 2) * (l.max_sequence() + 1));
					}
					ASSERT_EQ(t.outcome, Outcome::Wait);
					EXPECT_EQ(g.state.last_offset, now + lead);
					EXPECT_EQ(t.wait_until, now + 1);
				}
				else
				{
					/* Beyond the lead: wait, and nothing changes. */
					ASSERT_EQ(s.outcome, Outcome::Wait);
					ExpectSameState(g.state, before);
					EXPECT_EQ(s.wait_until, t0 - lead);
					EXPECT_GT(s.wait_until, now);
					/* Still too early one ms before wait_until. */
					const Step	early = g.step(s.wait_until - 1);

					EXPECT_EQ(early.outcome, Outcome::Wait);
					ExpectSameState(g.state, before);
				}

				/* Once the injected clock reaches wait_until (or moves on), IDs resume. */
				const int64_t resume = s.outcome == Outcome::Wait ? s.wait_until :
					g.state.last_offset - lead + 1;
				int64_t		id;

				if (s.outcome == Outcome::Wait)
				{
					ASSERT_TRUE(IssueOne(g, resume, &id));
					EXPECT_GT(id, prev);
					EXPECT_GE(OffsetOf(l, id), t0);
					prev = id;
				}
				/* And the clock catching up fully gives fresh milliseconds again. */
				const int64_t later = std::max(resume, g.state.last_offset) + 1;

				ASSERT_TRUE(IssueOne(g, later, &id));
				EXPECT_GT(id, prev);
				EXPECT_EQ(OffsetOf(l, id), later);
				EXPECT_EQ(snowflake::decode(l, id).sequence, 0);
			}
		}
	}
}

TEST(GeneratorTest, ClockBackWithSequenceUsedUp)
{
	/* The last ms is full: stepping back by exactly the lead must wait one ms more. */
	const Layout l{kDefaultEpoch, 0, 1};
	const int64_t lead = 5;
	Gen			g{l, 0, lead};
	const int64_t t0 = 1000;
	int64_t		id;

	ASSERT_TRUE(IssueOne(g, t0, &id));
	ASSERT_TRUE(IssueOne(g, t0, &id));
	ASSERT_EQ(g.state.last_sequence, l.max_sequence());

	const GeneratorState before = g.state;
	const Step	s = g.step(t0 - lead);

	ASSERT_EQ(s.outcome, Outcome::Wait);
	EXPECT_EQ(s.behind, lead);
	EXPECT_EQ(s.wait_until, t0 + 1 - lead);
	ExpectSameState(g.state, before);

	int64_t		next;

	ASSERT_TRUE(IssueOne(g, s.wait_until, &next));
	EXPECT_GT(next, id);
	EXPECT_EQ(OffsetOf(l, next), t0 + 1);
}

TEST(GeneratorTest, LeadZeroIsClassicGenerator)
{
	const Layout l = DefaultLayout();
	Gen			g{l, 9, 0};
	int64_t		prev;
	const int64_t t0 = 50000;

	ASSERT_TRUE(IssueOne(g, t0, &prev));

	for (int64_t back : {1, 2, 10, 1000, 50000})
	{
		SCOPED_TRACE(back);
		const GeneratorState before = g.state;
		const Step	s = g.step(g.state.last_offset - back);

		ASSERT_EQ(s.outcome, Outcome::Wait);
		EXPECT_EQ(s.wait_until, g.state.last_offset);
		EXPECT_EQ(s.behind, back);
		ExpectSameState(g.state, before);
	}

	/* The clock catches up to the last ms: the same ms continues its sequence. */
	int64_t		id;

	ASSERT_TRUE(IssueOne(g, t0, &id));
	EXPECT_GT(id, prev);
	EXPECT_EQ(OffsetOf(l, id), t0);
	EXPECT_EQ(snowflake::decode(l, id).sequence, 1);
	prev = id;

	/* Never ahead of the clock. */
	std::mt19937_64 rng(11);
	int64_t		now = t0;

	for (int i = 0; i < 100000; i++)
	{
		now += (int64_t) (rng() % 3) - 1;	/* -1, 0 or +1 */
		const Step	s = g.step(now);

		if (s.outcome == Outcome::Issued)
		{
			ASSERT_GT(s.id, prev);
			ASSERT_EQ(OffsetOf(l, s.id), now);
			prev = s.id;
		}
		else
		{
			ASSERT_EQ(s.outcome, Outcome::Wait);
			ASSERT_GT(s.wait_until, now);
		}
	}
}

TEST(GeneratorTest, BehindMsReportsHowFarTheClockReadBehind)
{
	const Layout l = DefaultLayout();
	Gen			g{l, 0, 100};
	int64_t		id;

	ASSERT_TRUE(IssueOne(g, 1000, &id));
	EXPECT_EQ(g.step(1001).behind, 0);	/* clock ahead */
	EXPECT_EQ(g.state.last_offset, 1001);
	EXPECT_EQ(g.step(1001).behind, 0);	/* same ms */
	EXPECT_EQ(g.step(1000).behind, 1);
	EXPECT_EQ(g.step(960).behind, 41);
	EXPECT_EQ(g.step(901).behind, 100);	/* exactly the lead: still issued */
	EXPECT_EQ(g.state.last_offset, 1001);

	const Step	w = g.step(500);			/* beyond the lead: reported too */

	EXPECT_EQ(w.outcome, Outcome::Wait);
	EXPECT_EQ(w.behind, 501);
	EXPECT_EQ(w.wait_until, 901);
}

TEST(GeneratorTest, ClockBeforeEpoch)
{
	const Layout l = DefaultLayout();

	for (int64_t lead : {0, 1, 1000, 1000000})
	{
		for (int64_t now : {-1, -2, -1000, -86400000})
		{
			SCOPED_TRACE(testing::Message() << "lead=" << lead << " now=" << now);
			Gen			g{l, 0, lead};
			const Step	s = g.step(now);

			EXPECT_EQ(s.outcome, Outcome::ClockBeforeEpoch);
			EXPECT_EQ(g.state.last_offset, snowflake::kFreshState.last_offset);
			EXPECT_EQ(g.state.last_sequence, snowflake::kFreshState.last_sequence);
		}
	}
	/* Offset 0 is the epoch itself and is fine. */
	Gen			g{l, 0, 0};
	int64_t		id;

	ASSERT_TRUE(IssueOne(g, 0, &id));
	EXPECT_EQ(snowflake::decode(l, id).unix_ms, l.epoch_ms);
}

TEST(GeneratorTest, ExhaustedAtEndOfLayout)
{
	for (const Layout &l : {DefaultLayout(), Layout{kDefaultEpoch, 13, 12},
							Layout{kDefaultEpoch, 0, 1}})
	{
		SCOPED_TRACE(testing::Message() << "timestamp_bits=" << l.timestamp_bits());
		const int64_t end = l.max_offset();

		/* The clock past the last representable millisecond. */
		for (int64_t lead : {0, 10})
		{
			Gen			g{l, 1, lead};

			EXPECT_EQ(g.step(end + 1).outcome, Outcome::Exhausted);
			EXPECT_EQ(g.step(end + 1000).outcome, Outcome::Exhausted);
			EXPECT_EQ(g.state.last_offset, -1);
		}

		/* The last millisecond itself works, up to its last sequence. */
		Gen			g{l, l.max_shard_id(), 10};
		int64_t		prev = -1;

		for (int64_t seq = 0; seq <= l.max_sequence(); seq++)
		{
			int64_t		id;

			ASSERT_TRUE(IssueOne(g, end, &id));
			ASSERT_GT(id, prev);
			ASSERT_EQ(snowflake::decode(l, id).unix_ms, l.last_unix_ms());
			prev = id;
		}
		EXPECT_EQ(prev, INT64_MAX);

		/* No next millisecond to borrow, whatever the lead or the clock. */
		const GeneratorState before = g.state;

		EXPECT_EQ(g.step(end).outcome, Outcome::Exhausted);
		EXPECT_EQ(g.step(end - 3).outcome, Outcome::Exhausted);
		EXPECT_EQ(g.step(end + 1).outcome, Outcome::Exhausted);
		ExpectSameState(g.state, before);
	}
}

TEST(GeneratorTest, ShardsNeverCollide)
{
	const Layout l{kDefaultEpoch, 2, 3};
	std::set<int64_t> all;
	std::mt19937_64 rng(3);
	Gen			gens[] = {{l, 0, 4}, {l, 1, 4}, {l, 2, 4}, {l, 3, 4}};
	int64_t		now = 10;
	size_t		issued = 0;

	for (int i = 0; i < 200000; i++)
	{
		now += (int64_t) (rng() % 4 == 0);
		Gen		   &g = gens[rng() % 4];
		const Step	s = g.step(now);

		if (s.outcome == Outcome::Issued)
		{
			ASSERT_EQ(snowflake::decode(l, s.id).shard, g.shard);
			ASSERT_TRUE(all.insert(s.id).second);
			issued++;
		}
	}
	EXPECT_EQ(all.size(), issued);
	EXPECT_GT(issued, (size_t) 1000);
}

/*===========================================================================
 * GeneratorRandomTest: random clock walks.
 *===========================================================================*/

namespace
{

struct WalkStats
{
	int64_t		issued = 0;
	int64_t		strict_increases = 0;
	int64_t		waits = 0;
	int64_t		borrowed = 0;		/* IDs whose timestamp is ahead of the clock */
	int64_t		backward_steps = 0;
};

void
RandomWalk(const Layout &l, int64_t lead, uint64_t seed, int steps, WalkStats *stats)
{
	std::mt19937_64 rng(seed);
	Gen			g{l, ShardFor(l, (int64_t) seed), lead};
	const int64_t max_back = std::max<int64_t>(2 * lead, 3);
	int64_t		now = 1000000;
	int64_t		prev_id = -1;
	int64_t		prev_ts = -1;
	int64_t		prev_seq = -1;

	for (int i = 0; i < steps; i++)
	{
		/*
		 * Move the injected clock: mostly forward, often frozen (bursts),
		 * sometimes backward by up to 2 x lead, now and then a jump forward.
		 */
		const unsigned r = (unsigned) (rng() % 100);

		if (r < 60)
			now += 1 + (int64_t) (rng() % 3);
		else if (r < 88)
			;					/* frozen */
		else if (r < 95)
		{
			now -= 1 + (int64_t) (rng() % (uint64_t) max_back);
			stats->backward_steps++;
		}
		else
			now += 1 + (int64_t) (rng() % (uint64_t) (4 * lead + 10));

		/* A small burst of calls at this clock reading. */
		const int	calls = 1 + (int) (rng() % 4);

		for (int c = 0; c < calls; c++)
		{
			const GeneratorState before = g.state;
			const Step	s = g.step(now);

			ASSERT_EQ(s.behind, before.last_offset >= now ? before.last_offset - now : 0)
				<< "step " << i;
			if (s.outcome == Outcome::Issued)
			{
				const Decoded d = snowflake::decode(l, s.id);
				const int64_t ts = d.unix_ms - l.epoch_ms;

				ASSERT_GE(s.id, 0);
				ASSERT_GT(s.id, prev_id) << "step " << i << " now=" << now;
				ASSERT_GE(ts, now);
				ASSERT_LE(ts - now, lead) << "step " << i;
				ASSERT_GE(ts, prev_ts);
				ASSERT_EQ(d.shard, g.shard);
				/* No sequence number is skipped: new ms start at 0, same ms count on. */
				if (ts == prev_ts)
					ASSERT_EQ(d.sequence, prev_seq + 1);
				else
					ASSERT_EQ(d.sequence, 0);
				ASSERT_EQ(g.state.last_offset, ts);
				ASSERT_EQ(g.state.last_sequence, d.sequence);
				if (s.id > prev_id)
					stats->strict_increases++;
				if (ts > now)
					stats->borrowed++;
				stats->issued++;
				prev_id = s.id;
				prev_ts = ts;
				prev_seq = d.sequence;
			}
			else
			{
				ASSERT_EQ(s.outcome, Outcome::Wait) << "step " << i;
				ASSERT_EQ(g.state.last_offset, before.last_offset);
				ASSERT_EQ(g.state.last_sequence, before.last_sequence);
				ASSERT_GT(s.wait_until, now);
				ASSERT_LE(s.wait_until, g.state.last_offset + 1);
				/* wait_until is exact: one ms earlier still waits, at it an ID comes. */
				GeneratorState probe = g.state;

				ASSERT_EQ(snowflake::next_id(probe, l, g.shard, s.wait_until - 1, lead).outcome,
						  Outcome::Wait);
				ASSERT_EQ(snowflake::next_id(probe, l, g.shard, s.wait_until, lead).outcome,
						  Outcome::Issued);
				stats->waits++;
				/* Half the time the caller sleeps until wait_until, as the glue does. */
				if (rng() & 1)
					now = s.wait_until;
				break;
			}
		}
	}
}

}								/* namespace */

TEST(GeneratorRandomTest, RandomClockWalkNeverDecreasesOrDuplicates)
{
	struct Config
	{
		Layout		layout;
		int64_t		lead;
	};
	const Config configs[] = {
		{{kDefaultEpoch, 10, 12}, 1000},
		{{kDefaultEpoch, 10, 12}, 0},
		{{kDefaultEpoch, 0, 1}, 5},
		{{kDefaultEpoch, 6, 2}, 0},
		{{kDefaultEpoch, 13, 3}, 20},
	};
	uint64_t	seed = 1;

	for (const Config &c : configs)
	{
		SCOPED_TRACE(testing::Message() << "shard_bits=" << c.layout.shard_bits
					 << " sequence_bits=" << c.layout.sequence_bits << " lead=" << c.lead);
		WalkStats	stats;

		RandomWalk(c.layout, c.lead, seed++, 1000000, &stats);
		if (HasFatalFailure())
			return;
		EXPECT_EQ(stats.strict_increases, stats.issued);
		EXPECT_GT(stats.issued, 1000000);
		EXPECT_GT(stats.backward_steps, 50000);
		/* Small sequence spaces exercise both borrowing (if allowed) and waiting. */
		if (c.layout.sequence_bits <= 3)
		{
			EXPECT_GT(stats.waits, 0);
			if (c.lead > 0)
			{
				EXPECT_GT(stats.borrowed, 0);
			}
		}
		if (c.lead == 0)
		{
			EXPECT_EQ(stats.borrowed, 0);
		}
		EXPECT_GT(stats.waits, 0);
	}
}

/*===========================================================================
 * StateFileTest: durable small files under ./pg_snowflake/.
 *===========================================================================*/

namespace
{

int
RemoveEntry(const char *path, const struct stat *, int, struct FTW *)
{
	return remove(path);
}

/* Runs each test in a fresh temporary directory. */
class StateFileTest : public ::testing::Test
{
protected:
	void		SetUp() override
	{
		char		cwd[4096];

		ASSERT_NE(getcwd(cwd, sizeof(cwd)), nullptr);
		old_cwd_ = cwd;
		char		tmpl[] = "/tmp/snowflake_unit_XXXXXX";

		ASSERT_NE(mkdtemp(tmpl), nullptr) << strerror(errno);
		dir_ = tmpl;
		ASSERT_EQ(chdir(dir_.c_str()), 0) << strerror(errno);
	}

	void		TearDown() override
	{
		if (!old_cwd_.empty())
		{
			EXPECT_EQ(chdir(old_cwd_.c_str()), 0) << strerror(errno);
		}
		if (!dir_.empty())
			nftw(dir_.c_str(), RemoveEntry, 16, FTW_DEPTH | FTW_PHYS);
	}

	static std::string Slurp(const char *path)
	{
		std::ifstream in(path, std::ios::binary);

		return std::string(std::istreambuf_iterator<char>(in),
						   std::istreambuf_iterator<char>());
	}

	static bool Exists(const char *path)
	{
		struct stat st;

		return lstat(path, &st) == 0;
	}

	static void WriteRaw(const char *path, const std::string &data)
	{
		std::ofstream out(path, std::ios::binary | std::ios::trunc);

		out << data;
	}

	std::string old_cwd_;
	std::string dir_;
};

/* The same fixture, for buffer-boundary cases of read_small_file(). */
class StateFileBoundaryTest : public StateFileTest
{
};

}								/* namespace */

TEST_F(StateFileTest, WriteCreatesDirectoryAndFileWithExactBytes)
{
	snowflake::FileError err = {"", "", 0};
	const std::string data("format 1\nbinary\0bytes\xff no newline", 33);

	ASSERT_FALSE(Exists(snowflake::kStateDir));
	ASSERT_TRUE(snowflake::write_file_durably("layout", data.data(), data.size(), &err))
		<< err.operation << " " << err.path << ": " << strerror(err.err);

	struct stat st;

	ASSERT_EQ(stat(snowflake::kStateDir, &st), 0);
	EXPECT_TRUE(S_ISDIR(st.st_mode));
	EXPECT_EQ(st.st_mode & 0777, 0700u);
	ASSERT_EQ(stat(snowflake::kLayoutFile, &st), 0);
	EXPECT_TRUE(S_ISREG(st.st_mode));
	EXPECT_EQ(st.st_mode & 0077, 0u);		/* private to the owner */
	EXPECT_EQ((size_t) st.st_size, data.size());
	EXPECT_EQ(Slurp("pg_snowflake/layout"), data);
	EXPECT_FALSE(Exists("pg_snowflake/layout.tmp"));
}

TEST_F(StateFileTest, SecondWriteReplacesFile)
{
	snowflake::FileError err = {"", "", 0};
	const std::string first(500, 'a');
	const std::string second = "short\n";

	ASSERT_TRUE(snowflake::write_file_durably("layout", first.data(), first.size(), &err));
	EXPECT_EQ(Slurp(snowflake::kLayoutFile), first);
	ASSERT_TRUE(snowflake::write_file_durably("layout", second.data(), second.size(), &err));
	EXPECT_EQ(Slurp(snowflake::kLayoutFile), second);	/* nothing left of the first */
	ASSERT_TRUE(snowflake::write_file_durably("layout", "", 0, &err));
	EXPECT_EQ(Slurp(snowflake::kLayoutFile), "");
	EXPECT_FALSE(Exists("pg_snowflake/layout.tmp"));

	/* Other names live next to it. */
	ASSERT_TRUE(snowflake::write_file_durably("other", "x", 1, &err));
	EXPECT_EQ(Slurp("pg_snowflake/other"), "x");
	EXPECT_EQ(Slurp(snowflake::kLayoutFile), "");
}

TEST_F(StateFileTest, WriteReplacesStaleTemporaryFile)
{
	snowflake::FileError err = {"", "", 0};

	ASSERT_EQ(mkdir(snowflake::kStateDir, 0700), 0);
	WriteRaw("pg_snowflake/layout.tmp", std::string(100, 'z'));
	ASSERT_TRUE(snowflake::write_file_durably("layout", "new", 3, &err));
	EXPECT_EQ(Slurp(snowflake::kLayoutFile), "new");
	EXPECT_FALSE(Exists("pg_snowflake/layout.tmp"));
}

TEST_F(StateFileTest, ReadMissing)
{
	char		buf[64];
	size_t		len = 12345;
	snowflake::FileError err = {"", "", 0};

	EXPECT_EQ(snowflake::read_small_file(snowflake::kLayoutFile, buf, sizeof(buf), &len, &err),
			  snowflake::ReadResult::Missing);
	ASSERT_EQ(mkdir(snowflake::kStateDir, 0700), 0);
	EXPECT_EQ(snowflake::read_small_file(snowflake::kLayoutFile, buf, sizeof(buf), &len, &err),
			  snowflake::ReadResult::Missing);
}

TEST_F(StateFileTest, ReadOkReturnsContent)
{
	snowflake::FileError err = {"", "", 0};
	const std::string data = "hello\nworld\n";

	ASSERT_TRUE(snowflake::write_file_durably("layout", data.data(), data.size(), &err));

	char		buf[64];
	size_t		len = 0;

	memset(buf, 'X', sizeof(buf));
	ASSERT_EQ(snowflake::read_small_file(snowflake::kLayoutFile, buf, sizeof(buf), &len, &err),
			  snowflake::ReadResult::Ok);
	EXPECT_EQ(len, data.size());
	EXPECT_EQ(std::string(buf, len), data);
	EXPECT_EQ(buf[len], '\0');

	/* An empty file is Ok and empty. */
	ASSERT_TRUE(snowflake::write_file_durably("layout", "", 0, &err));
	len = 99;
	ASSERT_EQ(snowflake::read_small_file(snowflake::kLayoutFile, buf, sizeof(buf), &len, &err),
			  snowflake::ReadResult::Ok);
	EXPECT_EQ(len, 0u);
	EXPECT_EQ(buf[0], '\0');
}

TEST_F(StateFileTest, ReadTooLarge)
{
	snowflake::FileError err = {"", "", 0};
	const std::string data(100, 'q');

	ASSERT_TRUE(snowflake::write_file_durably("layout", data.data(), data.size(), &err));

	for (size_t buflen : {2, 10, 50, 100})
	{
		SCOPED_TRACE(buflen);
		std::vector<char> buf(buflen + 16, '#');
		size_t		len = 0;

		EXPECT_EQ(snowflake::read_small_file(snowflake::kLayoutFile, buf.data(), buflen, &len,
											 &err),
				  snowflake::ReadResult::TooLarge);
		/* Nothing written beyond the buffer. */
		for (size_t i = buflen; i < buf.size(); i++)
			ASSERT_EQ(buf[i], '#');
	}
	/* With room for the content and its terminator (and more), it is read. */
	std::vector<char> big(1024);
	size_t		len = 0;

	EXPECT_EQ(snowflake::read_small_file(snowflake::kLayoutFile, big.data(), big.size(), &len,
										 &err),
			  snowflake::ReadResult::Ok);
	EXPECT_EQ(len, data.size());
}

TEST_F(StateFileTest, ReadDirectoryFails)
{
	snowflake::FileError err = {nullptr, nullptr, 0};
	char		buf[64];
	size_t		len = 0;

	ASSERT_EQ(mkdir(snowflake::kStateDir, 0700), 0);
	EXPECT_EQ(snowflake::read_small_file(snowflake::kStateDir, buf, sizeof(buf), &len, &err),
			  snowflake::ReadResult::Failed);
	ASSERT_NE(err.operation, nullptr);
	EXPECT_STREQ(err.operation, "read");
	ASSERT_NE(err.path, nullptr);
	EXPECT_STREQ(err.path, snowflake::kStateDir);
	EXPECT_EQ(err.err, EISDIR);
}

TEST_F(StateFileTest, WriteFailsCleanlyWhenStateDirIsARegularFile)
{
	snowflake::FileError err = {nullptr, nullptr, 0};

	WriteRaw(snowflake::kStateDir, "I am not a directory");
	EXPECT_FALSE(snowflake::write_file_durably("layout", "data", 4, &err));
	ASSERT_NE(err.operation, nullptr);
	EXPECT_STREQ(err.operation, "open");
	ASSERT_NE(err.path, nullptr);
	EXPECT_TRUE(Contains(err.path, "pg_snowflake/layout")) << err.path;
	EXPECT_EQ(err.err, ENOTDIR);
	/* The file in the way is left alone. */
	EXPECT_EQ(Slurp(snowflake::kStateDir), "I am not a directory");

	/* Reading through it fails too, rather than claiming the file is missing. */
	char		buf[64];
	size_t		len = 0;
	snowflake::FileError rerr = {nullptr, nullptr, 0};

	EXPECT_EQ(snowflake::read_small_file(snowflake::kLayoutFile, buf, sizeof(buf), &len, &rerr),
			  snowflake::ReadResult::Failed);
	ASSERT_NE(rerr.operation, nullptr);
	EXPECT_STREQ(rerr.operation, "open");
	EXPECT_EQ(rerr.err, ENOTDIR);
}

TEST_F(StateFileTest, LayoutRecordSurvivesWriteAndRead)
{
	const Layout l{UtcMs(2024, 7, 1), 12, 10};
	char		rec[512];
	int			n = snowflake::format_layout_record(l, rec, sizeof(rec));
	snowflake::FileError err = {"", "", 0};

	ASSERT_GT(n, 0);
	ASSERT_TRUE(snowflake::write_file_durably("layout", rec, (size_t) n, &err));

	char		buf[1024];
	size_t		len = 0;
	Layout		back{0, 0, 0};

	ASSERT_EQ(snowflake::read_small_file(snowflake::kLayoutFile, buf, sizeof(buf), &len, &err),
			  snowflake::ReadResult::Ok);
	ASSERT_EQ(len, (size_t) n);
	ASSERT_TRUE(snowflake::parse_layout_record(buf, len, &back));
	EXPECT_TRUE(back == l);
}

/* A file of exactly buflen - 1 bytes fits, with its terminator. */
TEST_F(StateFileBoundaryTest, FileThatExactlyFitsTheBufferIsReadOk)
{
	snowflake::FileError err = {"", "", 0};
	const std::string data(9, 'q');

	ASSERT_TRUE(snowflake::write_file_durably("layout", data.data(), data.size(), &err));

	char		buf[10];		/* 9 bytes + NUL */
	size_t		len = 0;

	EXPECT_EQ(snowflake::read_small_file(snowflake::kLayoutFile, buf, sizeof(buf), &len, &err),
			  snowflake::ReadResult::Ok);
}

/* A non-empty file never reads as empty, however small the buffer. */
TEST_F(StateFileBoundaryTest, NonEmptyFileIntoOneByteBufferIsTooLarge)
{
	snowflake::FileError err = {"", "", 0};

	ASSERT_TRUE(snowflake::write_file_durably("layout", "abc", 3, &err));

	char		buf[1];
	size_t		len = 777;
	snowflake::ReadResult r =
		snowflake::read_small_file(snowflake::kLayoutFile, buf, sizeof(buf), &len, &err);

	EXPECT_EQ(r, snowflake::ReadResult::TooLarge)
		<< "got Ok with len=" << len << " for a 3-byte file";
}

/*-------------------------------------------------------------------------
 * Durable mark, backward-step detection and counters of next_id()
 *-------------------------------------------------------------------------
 */

TEST(GeneratorMarkTest, NoIdBeyondTheReservedMark)
{
	const Layout l = DefaultLayout();
	GeneratorState st = snowflake::kFreshState;
	const int64_t now = 5000;

	/* nothing reserved yet: the first ID asks for a reservation, state unchanged */
	Step s = snowflake::next_id(st, l, 1, now, 1000, -1);
	ASSERT_EQ(s.outcome, Outcome::NeedReservation);
	EXPECT_EQ(s.wanted, now);
	EXPECT_EQ(st.last_offset, -1);
	EXPECT_EQ(st.issued, 0u);

	/* reserved up to now + 2: a burst fills 3 ms and then asks again */
	const int64_t reserved = now + 2;
	uint64_t	issued = 0;
	int64_t		prev = -1;

	for (;;)
	{
		s = snowflake::next_id(st, l, 1, now, 1000, reserved);
		if (s.outcome != Outcome::Issued)
			break;
		EXPECT_GT(s.id, prev);
		EXPECT_LE(snowflake::decode(l, s.id).unix_ms - l.epoch_ms, reserved);
		prev = s.id;
		issued++;
	}
	EXPECT_EQ(s.outcome, Outcome::NeedReservation);
	EXPECT_EQ(s.wanted, reserved + 1);
	EXPECT_EQ(issued, 3u * (uint64_t) (l.max_sequence() + 1));
	EXPECT_EQ(st.issued, issued);
	EXPECT_EQ(st.sequence_exhausted, 2u);

	/* once the mark moves, generation continues above everything issued */
	s = snowflake::next_id(st, l, 1, now, 1000, reserved + 1000);
	ASSERT_EQ(s.outcome, Outcome::Issued);
	EXPECT_GT(s.id, prev);
}

TEST(GeneratorMarkTest, LeadIsCheckedBeforeTheMark)
{
	const Layout l = DefaultLayout();
	GeneratorState st = snowflake::kFreshState;

	st.last_offset = 10000;
	st.last_sequence = l.max_sequence();
	/* beyond the lead: Wait, even though the mark does not cover it either */
	Step s = snowflake::next_id(st, l, 1, 8000, 1000, 9000);
	EXPECT_EQ(s.outcome, Outcome::Wait);
	EXPECT_EQ(s.wait_until, 10001 - 1000);
}

TEST(GeneratorMarkTest, ResumeAboveMarkAfterRestart)
{
	const Layout l = DefaultLayout();
	const int64_t mark = 20000;

	/* a restart: fresh state resumed above the mark; clock set back 3 s */
	for (int64_t lead : {0, 1000, 5000})
	{
		GeneratorState st = snowflake::kFreshState;

		snowflake::resume_above(st, l, mark);
		Step s = snowflake::next_id(st, l, 2, mark - 3000, lead, mark + 10000);
		if (lead < 3001)
		{
			ASSERT_EQ(s.outcome, Outcome::Wait) << "lead " << lead;
			EXPECT_EQ(s.wait_until, mark + 1 - lead);
			s = snowflake::next_id(st, l, 2, s.wait_until, lead, mark + 10000);
		}
		ASSERT_EQ(s.outcome, Outcome::Issued) << "lead " << lead;
		EXPECT_EQ(snowflake::decode(l, s.id).unix_ms - l.epoch_ms, mark + 1);
		EXPECT_EQ(snowflake::decode(l, s.id).sequence, 0);
		EXPECT_GT(s.id, snowflake::encode(l, mark, l.max_shard_id(), l.max_sequence()));
	}

	/* resuming never moves a state backwards */
	GeneratorState st = snowflake::kFreshState;

	st.last_offset = mark + 50;
	st.last_sequence = 7;
	snowflake::resume_above(st, l, mark);
	EXPECT_EQ(st.last_offset, mark + 50);
	EXPECT_EQ(st.last_sequence, 7);
}

TEST(GeneratorStepTest, BackwardStepsAreCountedOncePerStep)
{
	const Layout l = DefaultLayout();
	GeneratorState st = snowflake::kFreshState;

	ASSERT_EQ(snowflake::next_id(st, l, 1, 1000, 1000).outcome, Outcome::Issued);
	EXPECT_EQ(snowflake::next_id(st, l, 1, 1005, 1000).stepped_back, 0);

	/* one step back of 300 ms, then the clock runs forward again */
	Step s = snowflake::next_id(st, l, 1, 705, 1000);
	EXPECT_EQ(s.outcome, Outcome::Issued);
	EXPECT_EQ(s.stepped_back, 300);
	EXPECT_EQ(s.behind, 300);
	for (int64_t t = 705; t < 720; t++)
		EXPECT_EQ(snowflake::next_id(st, l, 1, t, 1000).stepped_back, 0);
	EXPECT_EQ(st.clock_steps_back, 1u);
	EXPECT_EQ(st.largest_step_back, 300);
	EXPECT_EQ(st.last_step_back, 300);
	EXPECT_EQ(st.last_step_back_at, 705);

	/* a second, larger step beyond the lead: seen on the Wait, not again on retries */
	/* (IDs are still at 1005: a reading of 0 is more than the lead behind) */
	s = snowflake::next_id(st, l, 1, 0, 1000);
	EXPECT_EQ(s.outcome, Outcome::Wait);
	EXPECT_EQ(s.stepped_back, 719);
	EXPECT_EQ(snowflake::next_id(st, l, 1, 0, 1000).stepped_back, 0);
	EXPECT_EQ(snowflake::next_id(st, l, 1, 1, 1000).stepped_back, 0);
	EXPECT_EQ(st.clock_steps_back, 2u);
	EXPECT_EQ(st.largest_step_back, 719);

	/* a smaller later step keeps the largest */
	(void) snowflake::next_id(st, l, 1, 10, 1000);
	(void) snowflake::next_id(st, l, 1, 0, 1000);
	EXPECT_EQ(st.largest_step_back, 719);
	EXPECT_EQ(st.last_step_back, 10);
}

TEST(GeneratorStepTest, ResetCountersKeepsTheGenerator)
{
	const Layout l = DefaultLayout();
	GeneratorState st = snowflake::kFreshState;

	for (int i = 0; i < 10000; i++)
		(void) snowflake::next_id(st, l, 1, 100, 1000);
	(void) snowflake::next_id(st, l, 1, 50, 1000);
	ASSERT_GT(st.issued, 0u);
	ASSERT_GT(st.sequence_exhausted, 0u);
	ASSERT_GT(st.clock_steps_back, 0u);

	const int64_t last_offset = st.last_offset;
	const int64_t last_sequence = st.last_sequence;

	snowflake::reset_counters(st);
	EXPECT_EQ(st.issued, 0u);
	EXPECT_EQ(st.sequence_exhausted, 0u);
	EXPECT_EQ(st.clock_steps_back, 0u);
	EXPECT_EQ(st.largest_step_back, 0);
	EXPECT_EQ(st.last_offset, last_offset);
	EXPECT_EQ(st.last_sequence, last_sequence);
}

TEST(MarkRecordTest, RoundTripAndRejects)
{
	char		buf[256];

	for (int64_t mark : {INT64_C(0), snowflake::kDefaultEpochMs, INT64_C(1795238641916)})
	{
		int			n = snowflake::format_mark_record(mark, buf, sizeof(buf));
		int64_t		back = -1;

		ASSERT_GT(n, 0);
		ASSERT_TRUE(snowflake::parse_mark_record(buf, (size_t) n, &back));
		EXPECT_EQ(back, mark);
	}
	EXPECT_EQ(snowflake::format_mark_record(1, buf, 10), -1);

	int64_t		out = 42;
	const char *bad[] = {
		"", "format 1\n", "mark_unix_ms 5\n", "format 2\nmark_unix_ms 5\n",
		"format 1\nmark_unix_ms five\n", "format 1\nmark_unix_ms 5x\n",
		"format 1\nmark_unix_ms 5\nextra 1\n",
	};

	for (const char *text : bad)
	{
		EXPECT_FALSE(snowflake::parse_mark_record(text, strlen(text), &out)) << text;
		EXPECT_EQ(out, 42) << text;
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

/*-------------------------------------------------------------------------
 * Runs (batches), the text form and shard lists
 *-------------------------------------------------------------------------
 */

TEST(GeneratorRunTest, RunsEqualSingleSteps)
{
	const Layout l{snowflake::kDefaultEpochMs, 10, 6};	/* 64 per ms */
	std::mt19937_64 rng(7);

	for (int round = 0; round < 200; round++)
	{
		GeneratorState a = snowflake::kFreshState;
		GeneratorState b = snowflake::kFreshState;
		int64_t		now = 1000;

		for (int call = 0; call < 50; call++)
		{
			int64_t		want = 1 + (int64_t) (rng() % 150);

			now += (int64_t) (rng() % 3) - 1;	/* frozen, forward or back a ms */
			Step run = snowflake::next_run(a, l, 5, now, 3, snowflake::kNoReservation, want);

			if (run.outcome != Outcome::Issued)
			{
				EXPECT_EQ(snowflake::next_id(b, l, 5, now, 3).outcome, run.outcome);
				continue;
			}
			ASSERT_GE(run.count, 1);
			ASSERT_LE(run.count, want);
			/* a run never crosses a millisecond */
			EXPECT_EQ(snowflake::decode(l, run.id).unix_ms,
					  snowflake::decode(l, run.id + run.count - 1).unix_ms);
			for (int64_t k = 0; k < run.count; k++)
			{
				Step one = snowflake::next_id(b, l, 5, now, 3);

				ASSERT_EQ(one.outcome, Outcome::Issued);
				ASSERT_EQ(one.id, run.id + k);
			}
		}
		EXPECT_EQ(a.issued, b.issued);
		EXPECT_EQ(a.last_offset, b.last_offset);
		EXPECT_EQ(a.last_sequence, b.last_sequence);
	}
}

TEST(GeneratorRunTest, RunTakesTheRestOfTheMillisecond)
{
	const Layout l = DefaultLayout();
	GeneratorState st = snowflake::kFreshState;

	Step s = snowflake::next_run(st, l, 1, 100, 1000, snowflake::kNoReservation, 10);
	EXPECT_EQ(s.count, 10);
	s = snowflake::next_run(st, l, 1, 100, 1000, snowflake::kNoReservation, 100000);
	EXPECT_EQ(s.count, l.max_sequence() + 1 - 10);
	EXPECT_EQ(snowflake::decode(l, s.id).sequence, 10);
	s = snowflake::next_run(st, l, 1, 100, 1000, snowflake::kNoReservation, 100000);
	EXPECT_EQ(s.count, l.max_sequence() + 1);
	EXPECT_EQ(snowflake::decode(l, s.id).unix_ms - l.epoch_ms, 101);
	EXPECT_EQ(st.sequence_exhausted, 1u);
	/* a count below one still issues one ID */
	s = snowflake::next_run(st, l, 1, 200, 1000, snowflake::kNoReservation, 0);
	EXPECT_EQ(s.count, 1);
}

TEST(TextFormTest, RoundTripAndOrder)
{
	std::mt19937_64 rng(11);
	char		a[14], b[14];
	int64_t		back;
	size_t		bad;

	snowflake::to_text(0, a);
	EXPECT_STREQ(a, "0000000000000");
	snowflake::to_text(INT64_MAX, a);
	EXPECT_STREQ(a, "7ZZZZZZZZZZZZ");
	for (int i = 0; i < 100000; i++)
	{
		int64_t		x = (int64_t) (rng() >> 1);
		int64_t		y = (int64_t) (rng() >> (1 + rng() % 60));

		snowflake::to_text(x, a);
		snowflake::to_text(y, b);
		ASSERT_EQ(strlen(a), 13u);
		ASSERT_EQ(snowflake::from_text(a, 13, &back, &bad), TextProblem::None);
		ASSERT_EQ(back, x);
		/* byte order of the strings is the numeric order of the IDs */
		ASSERT_EQ(strcmp(a, b) < 0, x < y) << a << " " << b;
		for (char &c : a)
			c = (char) tolower(c);
		ASSERT_EQ(snowflake::from_text(a, 13, &back, &bad), TextProblem::None);
		ASSERT_EQ(back, x);
	}
}

TEST(TextFormTest, StrictParsing)
{
	int64_t		id = 42;
	size_t		bad = 99;

	EXPECT_EQ(snowflake::from_text("", 0, &id, &bad), TextProblem::WrongLength);
	EXPECT_EQ(snowflake::from_text("000000000000", 12, &id, &bad), TextProblem::WrongLength);
	EXPECT_EQ(snowflake::from_text("00000000000000", 14, &id, &bad), TextProblem::WrongLength);
	for (const char *text : {"000000000000I", "000000000000L", "000000000000O",
							 "000000000000U", "00000 0000000", "0000000000-00",
							 "000000000000\xc3"})
	{
		EXPECT_EQ(snowflake::from_text(text, 13, &id, &bad), TextProblem::BadCharacter) << text;
		EXPECT_EQ(text[bad], strpbrk(text, "ILOU -\xc3")[0]) << text;
	}
	EXPECT_EQ(snowflake::from_text("8000000000000", 13, &id, &bad), TextProblem::OutOfRange);
	EXPECT_EQ(snowflake::from_text("Z000000000000", 13, &id, &bad), TextProblem::OutOfRange);
	EXPECT_EQ(id, 42);
}

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

/*
 * LineageTest: the pg_snowflake/lineage record round-trips, and anything
 * malformed or larger than the caller's room is rejected.
 */
TEST(LineageTest, RoundTripAndRejects)
{
	const uint64_t ids[] = {UINT64_C(7312345678901234567), UINT64_C(1), UINT64_C(42)};
	char		buf[1024];
	uint64_t	out[4] = {0, 0, 0, 0};
	int			count = -1;
	int			len = snowflake::format_lineage_record(ids, 3, buf, sizeof(buf));

	ASSERT_GT(len, 0);
	ASSERT_TRUE(snowflake::parse_lineage_record(buf, (size_t) len, out, 4, &count));
	EXPECT_EQ(count, 3);
	for (int i = 0; i < 3; i++)
		EXPECT_EQ(out[i], ids[i]);
	/* no room for all three */
	EXPECT_FALSE(snowflake::parse_lineage_record(buf, (size_t) len, out, 2, &count));
	/* an empty lineage is valid; a missing format line or a stray key is not */
	len = snowflake::format_lineage_record(ids, 0, buf, sizeof(buf));
	ASSERT_TRUE(snowflake::parse_lineage_record(buf, (size_t) len, out, 4, &count));
	EXPECT_EQ(count, 0);
	const std::string no_format = "system_identifier 5\n";
	EXPECT_FALSE(snowflake::parse_lineage_record(no_format.data(), no_format.size(), out, 4, &count));
	const std::string stray = "format 1\nsystem_identifier 5\nowner 3\n";
	EXPECT_FALSE(snowflake::parse_lineage_record(stray.data(), stray.size(), out, 4, &count));
	const std::string negative = "format 1\nsystem_identifier -5\n";
	EXPECT_FALSE(snowflake::parse_lineage_record(negative.data(), negative.size(), out, 4, &count));
	/* a buffer too small to format into */
	EXPECT_EQ(snowflake::format_lineage_record(ids, 3, buf, 40), -1);
}

/*-------------------------------------------------------------------------
 * SequenceStartTest: the random start of each new millisecond
 *-------------------------------------------------------------------------
 */

TEST(SequenceStartTest, BoundIsASixteenthOfTheRange)
{
	EXPECT_EQ(snowflake::random_start_bound(DefaultLayout()), 256);
	EXPECT_EQ(snowflake::random_start_bound(Layout{kDefaultEpoch, 0, 24}), INT64_C(1) << 20);
	EXPECT_EQ(snowflake::random_start_bound(Layout{kDefaultEpoch, 10, 5}), 2);
	/* four sequence bits or fewer: no room to spare, always zero */
	for (int bits = 1; bits <= 4; bits++)
		EXPECT_EQ(snowflake::random_start_bound(Layout{kDefaultEpoch, 10, bits}), 1) << bits;
}

TEST(SequenceStartTest, DrawsStayBelowTheBoundAndCoverIt)
{
	for (int bits : {5, 8, 12, 16, 24})
	{
		const Layout l{kDefaultEpoch, 0, bits};
		const int64_t bound = snowflake::random_start_bound(l);
		snowflake::Xorshift64 rng{UINT64_C(0x1234567887654321)};
		std::vector<int64_t> hits((size_t) std::min<int64_t>(bound, 4096), 0);
		const int	draws = 200000;

		for (int i = 0; i < draws; i++)
		{
			int64_t		v = snowflake::draw_start_sequence(rng, l);

			ASSERT_GE(v, 0);
			ASSERT_LT(v, bound);
			if (bound <= 4096)
				hits[(size_t) v]++;
		}
		if (bound > 4096)
			continue;
		/* uniform: every value near draws / bound (at least half of it) */
		int64_t		lo = *std::min_element(hits.begin(), hits.end());
		int64_t		hi = *std::max_element(hits.begin(), hits.end());

		EXPECT_GE(lo, draws / bound / 2) << bits;
		EXPECT_LE(hi, draws / bound * 2) << bits;
	}
}

/* At low traffic (one call per millisecond) each ID starts its millisecond. */
TEST(SequenceStartTest, LowTrafficIdsTakeTheDrawnStart)
{
	const Layout l = DefaultLayout();
	GeneratorState st = snowflake::kFreshState;
	snowflake::Xorshift64 rng{42};
	std::set<int64_t> residues;
	int64_t		prev = -1;

	for (int64_t now = 1000; now < 3000; now++)
	{
		int64_t		start = snowflake::draw_start_sequence(rng, l);
		Step		s = snowflake::next_id(st, l, 7, now, 1000, snowflake::kNoReservation, start);

		ASSERT_EQ(s.outcome, Outcome::Issued);
		ASSERT_GT(s.id, prev);
		prev = s.id;
		Decoded		d = snowflake::decode(l, s.id);

		EXPECT_EQ(d.sequence, start);
		EXPECT_EQ(d.shard, 7);
		EXPECT_EQ(d.unix_ms - l.epoch_ms, now);
		residues.insert(s.id % 4096);
	}
	/* 2,000 draws from 256 values miss hardly any of them */
	EXPECT_GE(residues.size(), 250u);
	EXPECT_LE(residues.size(), 256u);
}

/* Zero start: the classic behaviour, every low-traffic ID a multiple of 4,096. */
TEST(SequenceStartTest, ZeroStartIsTheClassicGenerator)
{
	const Layout l = DefaultLayout();
	GeneratorState st = snowflake::kFreshState;

	for (int64_t now = 1000; now < 1100; now++)
	{
		Step		s = snowflake::next_id(st, l, 7, now, 1000, snowflake::kNoReservation, 0);

		ASSERT_EQ(s.outcome, Outcome::Issued);
		EXPECT_EQ(snowflake::decode(l, s.id).sequence, 0);
	}
}

/* A start outside the sequence range is ignored (zero), never trusted. */
TEST(SequenceStartTest, OutOfRangeStartIsIgnored)
{
	const Layout l = DefaultLayout();

	for (int64_t bad : {INT64_C(-1), l.max_sequence() + 1, INT64_MAX})
	{
		GeneratorState st = snowflake::kFreshState;
		Step		s = snowflake::next_id(st, l, 1, 100, 1000, snowflake::kNoReservation, bad);

		ASSERT_EQ(s.outcome, Outcome::Issued);
		EXPECT_EQ(snowflake::decode(l, s.id).sequence, 0) << bad;
	}
}

/*
 * Capacity: a millisecond the clock starts loses exactly its start; a
 * millisecond borrowed because the previous one ran out starts at zero, so a
 * saturated shard still issues 2^sequence_bits IDs per millisecond.
 */
TEST(SequenceStartTest, CapacityLossIsBoundedAndSaturationKeepsTheCeiling)
{
	const Layout l = DefaultLayout();
	GeneratorState st = snowflake::kFreshState;
	const int64_t start = 200;

	Step		s = snowflake::next_run(st, l, 1, 100, 1000, snowflake::kNoReservation,
										100000, start);

	ASSERT_EQ(s.outcome, Outcome::Issued);
	EXPECT_EQ(s.count, l.max_sequence() + 1 - start);
	EXPECT_EQ(snowflake::decode(l, s.id).sequence, start);
	/* the clock has not moved: the next run borrows ms 101, from zero, whatever the draw */
	s = snowflake::next_run(st, l, 1, 100, 1000, snowflake::kNoReservation, 100000, start);
	ASSERT_EQ(s.outcome, Outcome::Issued);
	EXPECT_EQ(snowflake::decode(l, s.id).unix_ms - l.epoch_ms, 101);
	EXPECT_EQ(snowflake::decode(l, s.id).sequence, 0);
	EXPECT_EQ(s.count, l.max_sequence() + 1);

	/*
	 * Sustained overload with a lead: the shard runs ahead by the lead and
	 * every later millisecond is borrowed, so only the first one loses its
	 * start and the ceiling binds exactly.  With max_clock_lead = 0 every
	 * millisecond is started by the clock and each loses its draw (1/32 of
	 * the range on average, 1/16 at most).
	 */
	for (int64_t lead : {INT64_C(10), INT64_C(0)})
	{
		GeneratorState sat = snowflake::kFreshState;
		snowflake::Xorshift64 rng{99};
		int64_t		issued_total = 0;
		int64_t		lost = 0;
		int64_t		prev = -1;

		for (int64_t now = 0; now < 1000; now++)
			for (;;)
			{
				int64_t		draw = snowflake::draw_start_sequence(rng, l);
				bool		fresh = now > sat.last_offset;
				Step		r = snowflake::next_run(sat, l, 1, now, lead, snowflake::kNoReservation,
													100000, draw);

				if (r.outcome == Outcome::Wait)
					break;
				ASSERT_EQ(r.outcome, Outcome::Issued);
				ASSERT_GT(r.id, prev);
				prev = r.id + r.count - 1;
				issued_total += r.count;
				if (fresh)
					lost += draw;
				EXPECT_EQ(snowflake::decode(l, r.id).sequence, fresh ? draw : 0);
			}
		/* the last millisecond issued is now + lead: 1,000 + lead in all */
		EXPECT_EQ(issued_total, (1000 + lead) * 4096 - lost) << lead;
		if (lead > 0)
			EXPECT_LT(lost, 256) << "only the first millisecond starts with the clock";
		else
		{
			EXPECT_GT(lost, 1000 * 256 / 2 / 2);	/* about 1/32 of 4,096 per ms */
			EXPECT_LT(lost, 1000 * 256 / 2 * 3 / 2);
		}
	}
}

/* Random starts keep every other guarantee: strictly increasing, bounded lead, runs. */
TEST(SequenceStartTest, RandomWalksStayStrictlyIncreasingWithBoundedLead)
{
	const Layout l{snowflake::kDefaultEpochMs, 10, 8};	/* 256 per ms, starts in [0, 16) */
	std::mt19937_64 walk(2026);

	for (int round = 0; round < 100; round++)
	{
		GeneratorState st = snowflake::kFreshState;
		snowflake::Xorshift64 rng{(uint64_t) round + 1};
		int64_t		now = 5000;
		int64_t		prev = -1;
		const int64_t lead = 5;

		for (int call = 0; call < 2000; call++)
		{
			int			r = (int) (walk() % 10);

			if (r < 4)
				now += 1;
			else if (r == 4)
				now -= (int64_t) (walk() % 4);	/* small backward steps */
			else if (r == 5)
				now += (int64_t) (walk() % 50);
			Step		s = snowflake::next_run(st, l, 3, now, lead, snowflake::kNoReservation,
											1 + (int64_t) (walk() % 300),
											snowflake::draw_start_sequence(rng, l));

			if (s.outcome == Outcome::Wait)
			{
				EXPECT_GT(s.wait_until, now);
				continue;
			}
			ASSERT_EQ(s.outcome, Outcome::Issued);
			ASSERT_GT(s.id, prev);
			prev = s.id + s.count - 1;
			Decoded		d = snowflake::decode(l, s.id);

			EXPECT_LE(d.unix_ms - l.epoch_ms - now, lead);
			EXPECT_EQ(snowflake::decode(l, prev).unix_ms, d.unix_ms);
		}
	}
}

/*-------------------------------------------------------------------------
 * NamedLayoutTest: other systems' IDs against their published examples
 *-------------------------------------------------------------------------
 */

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

TEST(LayoutWidthUnit, RecordKeepsTheDefaultFormat)
{
	char		buf[512];
	Layout		def = {kDefaultEpochMs, 10, 12};
	Layout		back = {0, 0, 0};
	int			n = format_layout_record(def, buf, sizeof(buf));

	ASSERT_GT(n, 0);
	// a default layout's record carries none of 1.2's keys (1.1 reads it)
	EXPECT_EQ(std::string(buf).find("id_bits"), std::string::npos);
	EXPECT_EQ(std::string(buf).find("unit_ms"), std::string::npos);
	ASSERT_TRUE(parse_layout_record(buf, (size_t) n, &back));
	EXPECT_TRUE(back == def);

	Layout		js = def;

	js.id_bits = 53;
	js.unit_ms = 10;
	js.datacenter_bits = 4;
	n = format_layout_record(js, buf, sizeof(buf));
	ASSERT_GT(n, 0);
	ASSERT_TRUE(parse_layout_record(buf, (size_t) n, &back));
	EXPECT_TRUE(back == js);
	EXPECT_FALSE(back == def);
	char		why[256];

	describe_layout_change(def, js, why, sizeof(why));
	EXPECT_NE(std::string(why).find("snowflake.id_bits was 63 and is now 53"), std::string::npos);
	EXPECT_NE(std::string(why).find("snowflake.time_unit was 1 ms and is now 10 ms"),
			  std::string::npos);
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
