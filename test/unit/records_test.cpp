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
 *	 ImportsRecordTest   parse_imports_line/record(): pg_snowflake/imports
 *	 LiveRecordTest      parse_live_line/record(), add_live_shard():
 *	                     pg_snowflake/live
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

/*===========================================================================
 * ImportsRecordTest: pg_snowflake/imports, every value within the layout's
 * bounds (a damaged record is refused, never a place to resume).
 *===========================================================================*/

namespace
{

/* The bounds of the default layout: shards 0..1023, times from its epoch to its end. */
snowflake::RecordBounds
DefaultBounds()
{
	Layout		l = DefaultLayout();

	return snowflake::RecordBounds{l.max_shard_id(), l.epoch_ms, l.unix_ms_end_of(l.max_offset())};
}

struct Entry
{
	int64_t		shard;
	int64_t		ms;
};

/* Parses an imports record; entries as fn saw them (shard -1: the floor). */
bool
ParseImports(const std::string &text, std::vector<Entry> *out)
{
	out->clear();
	return snowflake::parse_imports_record(text.data(), text.size(), DefaultBounds(),
										   [&](int64_t shard, int64_t ms) {
											   out->push_back(Entry{shard, ms});
										   });
}

snowflake::ImportsLine
KindOf(const char *line)
{
	int64_t		shard = -7, ms = -7;

	return snowflake::parse_imports_line(line, DefaultBounds(), &shard, &ms);
}

}								/* namespace */

TEST(ImportsRecordTest, ParsesReservationsAndTheFloor)
{
	snowflake::RecordBounds b = DefaultBounds();
	std::vector<Entry> got;
	std::string text = "# a comment\nformat 1\nshard 0 reserved_unix_ms " +
		std::to_string(b.epoch_ms) + "\nshard 1023 reserved_unix_ms " + std::to_string(b.end_ms) +
		"\nshard 5 reserved_unix_ms -1\nfloor_unix_ms " + std::to_string(b.epoch_ms + 1000) + "\n";

	ASSERT_TRUE(ParseImports(text, &got));
	ASSERT_EQ(got.size(), 4u);
	EXPECT_EQ(got[0].shard, 0);
	EXPECT_EQ(got[0].ms, b.epoch_ms);
	EXPECT_EQ(got[1].shard, 1023);
	EXPECT_EQ(got[1].ms, b.end_ms);
	EXPECT_EQ(got[2].shard, 5);
	EXPECT_EQ(got[2].ms, -1);
	EXPECT_EQ(got[3].shard, -1);
	EXPECT_EQ(got[3].ms, b.epoch_ms + 1000);
}

TEST(ImportsRecordTest, EmptyIsARecordWithNothing)
{
	std::vector<Entry> got;

	EXPECT_TRUE(ParseImports("", &got));
	EXPECT_TRUE(got.empty());
	/* but text without "format 1" is not */
	EXPECT_FALSE(ParseImports("# only a comment\n", &got));
}

TEST(ImportsRecordTest, RejectsOutOfRangeValues)
{
	snowflake::RecordBounds b = DefaultBounds();
	std::string epoch = std::to_string(b.epoch_ms);
	const std::string bad[] = {
		"shard -1 reserved_unix_ms " + epoch,	/* a negative shard */
		"shard 1024 reserved_unix_ms " + epoch, /* past the layout's shards */
		"shard 1 reserved_unix_ms " + std::to_string(b.epoch_ms - 1),	/* before the epoch */
		"shard 1 reserved_unix_ms " + std::to_string(b.end_ms + 1),	/* past the layout's end */
		"shard 1 reserved_unix_ms -2",
		"shard 1 reserved_unix_ms 99999999999999999999999",	/* beyond 64 bits */
		"shard 99999999999999999999999 reserved_unix_ms " + epoch,
		"floor_unix_ms " + std::to_string(b.end_ms + 1),
		"floor_unix_ms -9223372036854775808",
	};

	for (const std::string &line : bad)
	{
		std::vector<Entry> got;

		EXPECT_EQ(KindOf(line.c_str()), snowflake::ImportsLine::Bad) << line;
		EXPECT_FALSE(ParseImports("format 1\n" + line + "\n", &got)) << line;
	}
}

TEST(ImportsRecordTest, RejectsGarbageAndTruncatedLines)
{
	std::string epoch = std::to_string(DefaultBounds().epoch_ms);
	const std::string bad[] = {
		"shard 1 reserved_unix_ms " + epoch + "x",	/* trailing garbage */
		"shard 1 reserved_unix_ms " + epoch + " 5",
		"shard 1 reserved_unix_ms",	/* truncated */
		"shard 1",
		"shard",
		"floor_unix_ms",
		"floor_unix_ms 12abc",
		"format 2",
		"format 1 ",
		"shards 1-2 live_from_unix_ms 5",	/* a line of the live record */
		"\x01\x02garbage",
	};

	for (const std::string &line : bad)
	{
		std::vector<Entry> got;

		EXPECT_EQ(KindOf(line.c_str()), snowflake::ImportsLine::Bad) << line;
		EXPECT_FALSE(ParseImports("format 1\n" + line + "\n", &got)) << line;
	}
	EXPECT_EQ(KindOf("format 1"), snowflake::ImportsLine::Format);
}

TEST(ImportsRecordTest, RejectsALineTooLongAndRespectsLength)
{
	std::vector<Entry> got;
	std::string epoch = std::to_string(DefaultBounds().epoch_ms);
	std::string text = "format 1\nshard 3 reserved_unix_ms " + epoch + "\nshard 4 x";
	auto parse = [&](size_t len) {
		got.clear();
		return snowflake::parse_imports_record(text.data(), len, DefaultBounds(),
											   [&](int64_t shard, int64_t ms) {
												   got.push_back(Entry{shard, ms});
											   });
	};

	EXPECT_FALSE(ParseImports("format 1\n" + std::string(200, 'a') + "\n", &got));
	/* only len bytes are read: up to the end of the good line, it parses */
	ASSERT_TRUE(parse(text.size() - strlen("shard 4 x")));
	ASSERT_EQ(got.size(), 1u);
	EXPECT_EQ(got[0].shard, 3);
	EXPECT_EQ(got[0].ms, DefaultBounds().epoch_ms);
	/* cut inside the time, what is left is before the epoch: damage */
	EXPECT_FALSE(parse(text.size() - strlen("shard 4 x") - 4));
	/* the whole text ends in garbage */
	EXPECT_FALSE(parse(text.size()));
}

/*===========================================================================
 * LiveRecordTest: pg_snowflake/live, sorted disjoint ranges of shards, and
 * how a shard is added.
 *===========================================================================*/

namespace
{

bool
ParseLive(const std::string &text, std::vector<snowflake::LiveRange> *out, int capacity = 16)
{
	snowflake::LiveRange ranges[16];
	int			count = -1;
	bool		ok = snowflake::parse_live_record(text.data(), text.size(), DefaultBounds(),
												  ranges, capacity, &count);

	out->assign(ranges, ranges + (count > 0 ? count : 0));
	return ok;
}

}								/* namespace */

TEST(LiveRecordTest, ParsesSortedDisjointRanges)
{
	std::vector<snowflake::LiveRange> got;
	std::string end = std::to_string(DefaultBounds().end_ms);

	ASSERT_TRUE(ParseLive("# c\nformat 1\nshards 0-0 live_from_unix_ms 0\n"
						  "shards 2-9 live_from_unix_ms 1000\nshards 10-1023 live_from_unix_ms " +
						  end + "\n", &got));
	ASSERT_EQ(got.size(), 3u);
	EXPECT_EQ(got[0].lo, 0);
	EXPECT_EQ(got[0].hi, 0);
	EXPECT_EQ(got[0].from_ms, 0);	/* before the epoch is no damage */
	EXPECT_EQ(got[1].lo, 2);
	EXPECT_EQ(got[1].hi, 9);
	EXPECT_EQ(got[1].from_ms, 1000);
	EXPECT_EQ(got[2].hi, 1023);
	EXPECT_TRUE(ParseLive("", &got));
	EXPECT_TRUE(got.empty());
}

TEST(LiveRecordTest, RejectsMalformedRecords)
{
	std::vector<snowflake::LiveRange> got;
	std::string end = std::to_string(DefaultBounds().end_ms);
	const std::string bad[] = {
		"shards 3-2 live_from_unix_ms 5",	/* lo > hi */
		"shards -1-2 live_from_unix_ms 5",
		"shards 0-1024 live_from_unix_ms 5",	/* past the layout's shards */
		"shards 0-1 live_from_unix_ms -1",
		"shards 0-1 live_from_unix_ms " + std::to_string(DefaultBounds().end_ms + 1),
		"shards 0-1 live_from_unix_ms 99999999999999999999999",
		"shards 0-1 live_from_unix_ms 5 extra",
		"shards 0-1 live_from_unix_ms",	/* truncated */
		"shards 0-",
		"shard 0 reserved_unix_ms 5",	/* a line of the imports record */
		"format 2",
		"\x7f\x01",
	};

	for (const std::string &line : bad)
	{
		snowflake::LiveRange r;

		EXPECT_FALSE(snowflake::parse_live_line(line.c_str(), DefaultBounds(), &r)) << line;
		EXPECT_FALSE(ParseLive("format 1\n" + line + "\n", &got)) << line;
	}
	/* unsorted, overlapping, or more than fit */
	EXPECT_FALSE(ParseLive("format 1\nshards 5-6 live_from_unix_ms 1\nshards 1-2 live_from_unix_ms 1\n",
						   &got));
	EXPECT_FALSE(ParseLive("format 1\nshards 1-5 live_from_unix_ms 1\nshards 5-6 live_from_unix_ms 1\n",
						   &got));
	EXPECT_FALSE(ParseLive("format 1\nshards 1-1 live_from_unix_ms 1\nshards 3-3 live_from_unix_ms 1\n",
						   &got, 1));
	EXPECT_FALSE(ParseLive("shards 1-1 live_from_unix_ms 1\n", &got));	/* no format line */
}

TEST(LiveRecordTest, AddingAShardInsertsLowersAndMerges)
{
	snowflake::LiveRange r[5];
	int			count = 0;

	EXPECT_TRUE(snowflake::add_live_shard(r, &count, 4, 10, 500));
	EXPECT_TRUE(snowflake::add_live_shard(r, &count, 4, 20, 700));
	ASSERT_EQ(count, 2);
	/* recorded from as early or earlier: nothing changes */
	EXPECT_FALSE(snowflake::add_live_shard(r, &count, 4, 10, 500));
	EXPECT_FALSE(snowflake::add_live_shard(r, &count, 4, 10, 900));
	/* an earlier time lowers it */
	EXPECT_TRUE(snowflake::add_live_shard(r, &count, 4, 10, 400));
	EXPECT_EQ(r[0].from_ms, 400);
	/* a neighbour that touches merges, taking the earlier time */
	EXPECT_TRUE(snowflake::add_live_shard(r, &count, 4, 11, 600));
	ASSERT_EQ(count, 2);
	EXPECT_EQ(r[0].lo, 10);
	EXPECT_EQ(r[0].hi, 11);
	EXPECT_EQ(r[0].from_ms, 400);
	EXPECT_EQ(r[1].lo, 20);
}

TEST(LiveRecordTest, TooManyRangesMergeTheClosestTwoCautiously)
{
	snowflake::LiveRange r[4];
	int			count = 0;

	for (int64_t shard : {0, 10, 13})
		snowflake::add_live_shard(r, &count, 3, shard, 1000 + shard);
	ASSERT_EQ(count, 3);
	/* a fourth range: 13 and 15 are the closest, merged from the earlier time */
	EXPECT_TRUE(snowflake::add_live_shard(r, &count, 3, 15, 900));
	ASSERT_EQ(count, 3);
	EXPECT_EQ(r[2].lo, 13);
	EXPECT_EQ(r[2].hi, 15);
	EXPECT_EQ(r[2].from_ms, 900);
	/* every shard added is still covered, from no later than it was added */
	for (int64_t shard : {0, 10, 13, 15})
	{
		bool		covered = false;

		for (int i = 0; i < count; i++)
			if (r[i].lo <= shard && shard <= r[i].hi)
				covered = r[i].from_ms <= 1000 + shard;
		EXPECT_TRUE(covered) << shard;
	}
}
