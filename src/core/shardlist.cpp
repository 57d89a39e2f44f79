/*-------------------------------------------------------------------------
 *
 * shardlist.cpp
 *		Lists of shard IDs and ranges (see shardlist.hpp).
 *
 *-------------------------------------------------------------------------
 */
#include "core/shardlist.hpp"

#include <cstdlib>

namespace snowflake
{

RangeProblem
parse_shard_ranges(const char *text, int64_t max_shard, ShardRange *out, int capacity,
				   int *count) noexcept
{
	const char *p = text;
	int			n = 0;

	auto		skip_spaces = [&p]() noexcept {
		while (*p == ' ' || *p == '\t')
			p++;
	};
	auto		read_number = [&p](int64_t *v) noexcept {
		if (*p < '0' || *p > '9')
			return false;
		*v = 0;
		while (*p >= '0' && *p <= '9')
		{
			if (*v > (INT64_C(1) << 40))
				return false;
			*v = *v * 10 + (*p++ - '0');
		}
		return true;
	};

	*count = 0;
	skip_spaces();
	if (*p == '\0')
		return RangeProblem::None;
	for (;;)
	{
		ShardRange	r;

		skip_spaces();
		if (!read_number(&r.lo))
			return RangeProblem::Syntax;
		skip_spaces();
		r.hi = r.lo;
		if (*p == '-')
		{
			p++;
			skip_spaces();
			if (!read_number(&r.hi))
				return RangeProblem::Syntax;
			skip_spaces();
		}
		if (r.lo > max_shard || r.hi > max_shard)
			return RangeProblem::OutOfRange;
		if (r.hi < r.lo)
			return RangeProblem::Reversed;
		if (n < capacity)
			out[n] = r;
		n++;
		if (*p == '\0')
			break;
		if (*p++ != ',')
			return RangeProblem::Syntax;
	}
	*count = n;
	return RangeProblem::None;
}

bool
shard_in_ranges(const ShardRange *ranges, int count, int64_t shard) noexcept
{
	for (int i = 0; i < count; i++)
		if (shard >= ranges[i].lo && shard <= ranges[i].hi)
			return true;
	return false;
}

}								/* namespace snowflake */
