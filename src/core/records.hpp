/*-------------------------------------------------------------------------
 *
 * records.hpp
 *		The text of the records kept in pg_snowflake/: the layout, the
 *		durable mark and the lineage ("key value" lines).
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

}								/* namespace snowflake */

#endif							/* SNOWFLAKE_RECORDS_HPP */
