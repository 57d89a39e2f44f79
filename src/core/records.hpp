/*-------------------------------------------------------------------------
 *
 * records.hpp
 *		The text of the records kept in pg_snowflake/: the layout, the
 *		durable mark and the lineage ("key value" lines), and the lines of
 *		the import reservations (imports) and of when shards went live
 *		(live), each value checked against the layout's bounds.
 *
 * Part of the core: plain C++ that never includes postgres.h, allocates or
 * throws (every function is noexcept and works on caller-owned memory), so it
 * can run inside the glue's LWLocks and be unit-tested without a server.
 * It may call layout.hpp (to write and compare layouts and times).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_RECORDS_HPP
#define SNOWFLAKE_RECORDS_HPP

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/layout.hpp"

namespace snowflake
{

/*
 * The layout record kept in the data directory: a few "key value" lines.
 * format_layout_record returns the length written (< buflen) or -1.
 */
int format_layout_record(const Layout &layout, char *buf, size_t buflen) noexcept;
bool parse_layout_record(const char *text, size_t len, Layout *layout) noexcept;

/* The durable mark record: "format 1" and "mark_unix_ms N" lines. */
int format_mark_record(int64_t mark_unix_ms, char *buf, size_t buflen) noexcept;
bool parse_mark_record(const char *text, size_t len, int64_t *mark_unix_ms) noexcept;

/*
 * The lineage record: the system identifiers of the clusters whose IDs the
 * state directory's mark covers (the cluster that made it, and each one it
 * was carried to, as after pg_upgrade).  parse_lineage_record fails on more
 * than "capacity" identifiers.
 */
int format_lineage_record(const uint64_t *ids, int count, char *buf, size_t buflen) noexcept;
bool parse_lineage_record(const char *text, size_t len, uint64_t *ids, int capacity,
						  int *count) noexcept;

/*
 * Calls on_line(line) for each line of a record that is neither empty nor a
 * "#" comment, the line NUL-terminated in a buffer of its own; false as soon
 * as a line is too long (127 bytes) or on_line returns false.
 */
template <typename F>
bool
for_each_record_line(const char *text, size_t len, F &&on_line) noexcept
{
	size_t		i = 0;

	while (i < len)
	{
		size_t		end = i;
		char		line[128];

		while (end < len && text[end] != '\n')
			end++;
		if (end - i >= sizeof(line))
			return false;
		memcpy(line, text + i, end - i);
		line[end - i] = '\0';
		i = end + 1;
		if (line[0] == '#' || line[0] == '\0')
			continue;
		if (!on_line(line))
			return false;
	}
	return true;
}

/*
 * What a value read from pg_snowflake/imports or live may be, from the
 * layout: a shard 0..max_shard, a time (Unix ms) at most end_ms (the last
 * one the layout can hold), an import's also at least epoch_ms.  Anything
 * else is damage, never a place to resume.
 */
struct RecordBounds
{
	int64_t		max_shard;
	int64_t		epoch_ms;
	int64_t		end_ms;
};

/* What a line of pg_snowflake/imports is. */
enum class ImportsLine
{
	Format,						/* "format 1" */
	Reservation,				/* "shard N reserved_unix_ms M": *shard, *ms */
	Floor,						/* "floor_unix_ms M" (snowflake_adopt_database()): *ms */
	Bad							/* anything else, or a value out of bounds */
};

/*
 * Parses one line of the imports record (NUL-terminated, as
 * for_each_record_line gives it).  A time is -1 (none) or within
 * [epoch_ms, end_ms].
 */
ImportsLine parse_imports_line(const char *line, const RecordBounds &bounds, int64_t *shard,
							   int64_t *ms) noexcept;

/*
 * Parses the imports record: "format 1", then a line per shard with a
 * reservation and at most one floor (which every import shard resumes
 * above).  Calls fn(shard, ms) for each, with shard -1 for the floor; false
 * when the text is not such a record (an empty text is one, with nothing).
 */
template <typename F>
bool
parse_imports_record(const char *text, size_t len, const RecordBounds &bounds, F &&fn) noexcept
{
	bool		have_format = false;

	if (!for_each_record_line(text, len, [&](const char *line) {
			int64_t		shard = -1, ms = -1;

			switch (parse_imports_line(line, bounds, &shard, &ms))
			{
				case ImportsLine::Format:
					have_format = true;
					return true;
				case ImportsLine::Reservation:
					fn(shard, ms);
					return true;
				case ImportsLine::Floor:
					fn((int64_t) -1, ms);
					return true;
				case ImportsLine::Bad:
					break;
			}
			return false;
		}))
		return false;
	return have_format || len == 0;
}

/* Shards lo..hi generated no live ID before from_ms (Unix ms): a range of pg_snowflake/live. */
struct LiveRange
{
	int64_t		lo;
	int64_t		hi;
	int64_t		from_ms;
};

/*
 * Parses one line "shards LO-HI live_from_unix_ms M" of the live record:
 * true with *range when 0 <= LO <= HI <= max_shard and 0 <= M <= end_ms.  A
 * time before the epoch is no damage (the epoch may have been moved on
 * deliberately since); one past the layout's end is.
 */
bool		parse_live_line(const char *line, const RecordBounds &bounds, LiveRange *range) noexcept;

/*
 * Parses the live record: "format 1", then range lines sorted by shard and
 * disjoint, at most capacity of them, into ranges[0..*count); false when the
 * text is not such a record (an empty text is one, with no range).
 */
bool		parse_live_record(const char *text, size_t len, const RecordBounds &bounds,
							  LiveRange *ranges, int capacity, int *count) noexcept;

/*
 * Records that shard generated live IDs from from_ms in ranges[0..*count)
 * (sorted, disjoint; room for capacity + 1): a shard already in a range only
 * ever lowers the range's time; then neighbours that touch are merged, and
 * while there are more than capacity ranges the two closest, a merged range
 * taking the earlier time (which can only refuse more imports, never allow
 * one that could equal a live ID).  False when nothing changed.
 */
bool		add_live_shard(LiveRange *ranges, int *count, int capacity, int64_t shard,
						   int64_t from_ms) noexcept;

}								/* namespace snowflake */

#endif							/* SNOWFLAKE_RECORDS_HPP */
