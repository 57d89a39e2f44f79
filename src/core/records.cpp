/*-------------------------------------------------------------------------
 *
 * records.cpp
 *		Formatting and parsing the records of pg_snowflake/ (see records.hpp).
 *
 *-------------------------------------------------------------------------
 */
#include "core/records.hpp"

#include <cinttypes>
#include <cstdio>
#include <cstring>

namespace snowflake
{

namespace
{

/*
 * Parses "key value" lines (integers; "#" comments and blank lines skipped),
 * calling on_pair(key, value) for each; false on a malformed line or when
 * on_pair rejects a pair.
 */
template <typename F>
bool
parse_records(const char *text, size_t len, F &&on_pair) noexcept
{
	return for_each_record_line(text, len, [&](const char *line) {
		long long	v;
		char		key[32];
		char		tail;

		return sscanf(line, "%31s %lld%c", key, &v, &tail) == 2 && on_pair(key, (int64_t) v);
	});
}

}								/* namespace */

int
format_layout_record(const Layout &l, char *buf, size_t buflen) noexcept
{
	char		epoch[40];

	format_utc(l.epoch_ms, epoch, sizeof(epoch));
	int			n = snprintf(buf, buflen,
							 "# snowflake: the ID layout this data directory generated with.\n"
							 "# Do not edit. See README.md, \"Changing the layout\".\n"
							 "format 1\n"
							 "epoch_ms %" PRId64 "\n"
							 "shard_bits %d\n"
							 "sequence_bits %d\n"
							 "# epoch %s\n",
							 l.epoch_ms, l.shard_bits, l.sequence_bits, epoch);

	/*
	 * What 1.2 added, only when it differs from what every earlier layout
	 * had, so that the record of a default layout stays byte for byte the
	 * same (and readable by 1.1 after a downgrade).
	 */
	if (n >= 0 && (size_t) n < buflen && l.id_bits != kIdBits)
		n += snprintf(buf + n, buflen - (size_t) n, "id_bits %d\n", l.id_bits);
	if (n >= 0 && (size_t) n < buflen && l.unit_ms != 1)
		n += snprintf(buf + n, buflen - (size_t) n, "unit_ms %" PRId64 "\n", l.unit_ms);
	if (n >= 0 && (size_t) n < buflen && l.datacenter_bits != 0)
		n += snprintf(buf + n, buflen - (size_t) n, "datacenter_bits %d\n", l.datacenter_bits);
	return (n < 0 || (size_t) n >= buflen) ? -1 : n;
}

bool
parse_layout_record(const char *text, size_t len, Layout *layout) noexcept
{
	bool		have_format = false, have_epoch = false, have_shard = false,
				have_seq = false;
	Layout		l = {0, 0, 0};
	bool		ok = parse_records(text, len, [&](const char *key, int64_t v) noexcept {
		if (strcmp(key, "format") == 0 && v == 1)
			return have_format = true;
		if (strcmp(key, "epoch_ms") == 0)
		{
			l.epoch_ms = v;
			return have_epoch = true;
		}
		if (strcmp(key, "shard_bits") == 0 && v >= 0 && v <= 63)
		{
			l.shard_bits = (int) v;
			return have_shard = true;
		}
		if (strcmp(key, "sequence_bits") == 0 && v >= 0 && v <= 63)
		{
			l.sequence_bits = (int) v;
			return have_seq = true;
		}
		if (strcmp(key, "id_bits") == 0 && v >= 1 && v <= 63)
			return l.id_bits = (int) v, true;
		if (strcmp(key, "unit_ms") == 0 && v >= 1 && v <= kMaxUnitMs)
			return l.unit_ms = v, true;
		if (strcmp(key, "datacenter_bits") == 0 && v >= 0 && v <= 63)
			return l.datacenter_bits = (int) v, true;
		return false;
	});

	if (!(ok && have_format && have_epoch && have_shard && have_seq))
		return false;
	*layout = l;
	return true;
}

int
format_mark_record(int64_t mark_unix_ms, char *buf, size_t buflen) noexcept
{
	char		when[40];

	format_utc(mark_unix_ms, when, sizeof(when));
	int			n = snprintf(buf, buflen,
							 "# snowflake: IDs of this data directory never carry a time above this mark.\n"
							 "# Do not edit. See README.md, \"The durable mark\".\n"
							 "format 1\n"
							 "mark_unix_ms %" PRId64 "\n"
							 "# mark %s\n",
							 mark_unix_ms, when);

	return (n < 0 || (size_t) n >= buflen) ? -1 : n;
}

bool
parse_mark_record(const char *text, size_t len, int64_t *mark_unix_ms) noexcept
{
	bool		have_format = false, have_mark = false;
	int64_t		mark = 0;
	bool		ok = parse_records(text, len, [&](const char *key, int64_t v) noexcept {
		if (strcmp(key, "format") == 0 && v == 1)
			return have_format = true;
		if (strcmp(key, "mark_unix_ms") == 0)
		{
			mark = v;
			return have_mark = true;
		}
		return false;
	});

	if (!(ok && have_format && have_mark))
		return false;
	*mark_unix_ms = mark;
	return true;
}

int
format_lineage_record(const uint64_t *ids, int count, char *buf, size_t buflen) noexcept
{
	size_t		used = 0;
	int			n = snprintf(buf, buflen,
							 "# snowflake: the clusters (system identifiers) whose IDs this\n"
							 "# directory's mark covers.  Do not edit. See README.md, \"pg_upgrade\".\n"
							 "format 1\n");

	if (n < 0 || (size_t) n >= buflen)
		return -1;
	used = (size_t) n;
	for (int i = 0; i < count; i++)
	{
		n = snprintf(buf + used, buflen - used, "system_identifier %" PRId64 "\n",
					 (int64_t) ids[i]);
		if (n < 0 || (size_t) n >= buflen - used || ids[i] > (uint64_t) INT64_MAX)
			return -1;
		used += (size_t) n;
	}
	return (int) used;
}

bool
parse_lineage_record(const char *text, size_t len, uint64_t *ids, int capacity,
					 int *count) noexcept
{
	bool		have_format = false;
	int			found = 0;
	bool		ok = parse_records(text, len, [&](const char *key, int64_t v) noexcept {
		if (strcmp(key, "format") == 0 && v == 1)
			return have_format = true;
		if (strcmp(key, "system_identifier") == 0 && v >= 0 && found < capacity)
		{
			ids[found++] = (uint64_t) v;
			return true;
		}
		return false;
	});

	if (!(ok && have_format))
		return false;
	*count = found;
	return true;
}

ImportsLine
parse_imports_line(const char *line, const RecordBounds &b, int64_t *shard, int64_t *ms) noexcept
{
	long long	s, m;
	char		tail;
	auto		time_ok = [&](long long t) {
		return t == -1 || (t >= b.epoch_ms && t <= b.end_ms);
	};

	if (strcmp(line, "format 1") == 0)
		return ImportsLine::Format;
	if (sscanf(line, "shard %lld reserved_unix_ms %lld%c", &s, &m, &tail) == 2 &&
		s >= 0 && s <= b.max_shard && time_ok(m))
	{
		*shard = (int64_t) s;
		*ms = (int64_t) m;
		return ImportsLine::Reservation;
	}
	if (sscanf(line, "floor_unix_ms %lld%c", &m, &tail) == 1 && time_ok(m))
	{
		*ms = (int64_t) m;
		return ImportsLine::Floor;
	}
	return ImportsLine::Bad;
}

bool
parse_live_line(const char *line, const RecordBounds &b, LiveRange *range) noexcept
{
	long long	lo, hi, ms;
	char		tail;

	if (sscanf(line, "shards %lld-%lld live_from_unix_ms %lld%c", &lo, &hi, &ms, &tail) != 3 ||
		lo < 0 || lo > hi || hi > b.max_shard || ms < 0 || ms > b.end_ms)
		return false;
	*range = LiveRange{(int64_t) lo, (int64_t) hi, (int64_t) ms};
	return true;
}

bool
parse_live_record(const char *text, size_t len, const RecordBounds &bounds, LiveRange *ranges,
				  int capacity, int *count) noexcept
{
	bool		have_format = false;

	*count = 0;
	if (!for_each_record_line(text, len, [&](const char *line) {
			LiveRange	r;

			if (strcmp(line, "format 1") == 0)
				return have_format = true;
			if (!parse_live_line(line, bounds, &r) || *count >= capacity ||
				(*count > 0 && r.lo <= ranges[*count - 1].hi))
				return false;
			ranges[(*count)++] = r;
			return true;
		}))
		return false;
	return have_format || len == 0;
}

bool
add_live_shard(LiveRange *r, int *count, int capacity, int64_t shard, int64_t from_ms) noexcept
{
	int			at = 0;

	while (at < *count && r[at].hi < shard)
		at++;
	if (at < *count && r[at].lo <= shard)
	{
		/* recorded: only ever lowered (the range then says "from" for all of it) */
		if (r[at].from_ms <= from_ms)
			return false;
		r[at].from_ms = from_ms;
	}
	else
	{
		memmove(r + at + 1, r + at, sizeof(LiveRange) * (size_t) (*count - at));
		r[at] = LiveRange{shard, shard, from_ms};
		(*count)++;
	}
	for (;;)
	{
		int			best = -1;
		int64_t		gap = INT64_MAX;

		for (int i = 0; i + 1 < *count; i++)
			if (r[i + 1].lo - r[i].hi < gap)
			{
				gap = r[i + 1].lo - r[i].hi;
				best = i;
			}
		if (best < 0 || (gap > 1 && *count <= capacity))
			break;
		r[best].hi = r[best + 1].hi;
		r[best].from_ms = r[best].from_ms < r[best + 1].from_ms ? r[best].from_ms : r[best + 1].from_ms;
		memmove(r + best + 1, r + best + 2, sizeof(LiveRange) * (size_t) (*count - best - 2));
		(*count)--;
	}
	return true;
}

}								/* namespace snowflake */
