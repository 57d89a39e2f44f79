/*-------------------------------------------------------------------------
 *
 * unit_helpers.hpp
 *		Helpers shared by the unit tests of several core modules
 *		(layout_test.cpp, records_test.cpp, generator_test.cpp,
 *		statefile_test.cpp): the default layout, UTC civil times computed
 *		with the C library, and a substring test.  Helpers that one file
 *		uses stay in that file.
 *
 * Everything here is inline (or constexpr), so a file that leaves a helper
 * unused builds without a warning and the one binary links once.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_UNIT_HELPERS_HPP
#define SNOWFLAKE_UNIT_HELPERS_HPP

#include "core/layout.hpp"

#include <cstdint>
#include <cstring>
#include <ctime>
#include <string>

namespace snowflake_unit
{

constexpr int64_t kDefaultEpoch = INT64_C(1704067200000);	/* 2024-01-01 UTC */

inline snowflake::Layout
DefaultLayout()
{
	return snowflake::Layout{snowflake::kDefaultEpochMs, 10, 12};
}

/* Unix milliseconds of a UTC civil time, computed with the C library. */
inline int64_t
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

inline std::string
FormatUtc(int64_t unix_ms)
{
	char		buf[64];

	snowflake::format_utc(unix_ms, buf, sizeof(buf));
	return buf;
}

inline bool
Contains(const std::string &haystack, const std::string &needle)
{
	return haystack.find(needle) != std::string::npos;
}

}								/* namespace snowflake_unit */

#endif							/* SNOWFLAKE_UNIT_HELPERS_HPP */
