/*-------------------------------------------------------------------------
 *
 * records_test.cpp
 *		GoogleTest unit tests of src/core/records.*: the text of the records
 *		in pg_snowflake/ (the layout, the durable mark, the lineage).
 *
 * Built into test/unit/core_test and run by "make unitcheck".  Expected
 * values are derived from the layout arithmetic, from timegm() or from
 * well-known constants, never copied from a run.
 *
 * Suites:
 *	 LayoutRecordTest    format/parse_layout_record() (its Describe* tests
 *	                     of describe_layout_change() are in layout_test.cpp)
 *	 MarkRecordTest      format/parse_mark_record()
 *	 LineageTest         format/parse_lineage_record()
 *	 LayoutWidthUnit     (RecordKeepsTheDefaultFormat only) a default
 *	                     layout's record carries none of 1.2's keys
 *
 *-------------------------------------------------------------------------
 */
#include "core/layout.hpp"
#include "core/records.hpp"
#include "unit_helpers.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

using snowflake::Layout;
using namespace snowflake_unit;

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

// ---- 1.2: ID width, time unit, datacenters -------------------------------

using namespace snowflake;

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
