/*-------------------------------------------------------------------------
 *
 * layout.cpp
 *		The bit layout, epochs and times, and the named layouts of other
 *		systems (see layout.hpp).
 *
 *-------------------------------------------------------------------------
 */
#include "core/layout.hpp"

#include <cinttypes>
#include <cstdio>
#include <cstring>

namespace snowflake
{

namespace
{

/* Days since 1970-01-01 of a proleptic Gregorian date (month 1..12). */
int64_t
days_from_civil(int64_t y, int64_t m, int64_t d) noexcept
{
	y -= m <= 2;
	const int64_t era = (y >= 0 ? y : y - 399) / 400;
	const int64_t yoe = y - era * 400;
	const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;

	return era * 146097 + doe - 719468;
}

/* The inverse of days_from_civil. */
void
civil_from_days(int64_t z, int64_t *y, int64_t *m, int64_t *d) noexcept
{
	z += 719468;
	const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	const int64_t doe = z - era * 146097;
	const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	const int64_t mp = (5 * doy + 2) / 153;

	*d = doy - (153 * mp + 2) / 5 + 1;
	*m = mp < 10 ? mp + 3 : mp - 9;
	*y = yoe + era * 400 + (*m <= 2);
}

bool
leap_year(int64_t y) noexcept
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* Reads exactly n digits at *p into *out, advancing *p. */
bool
read_digits(const char **p, int n, int64_t *out) noexcept
{
	int64_t		v = 0;

	for (int i = 0; i < n; i++)
	{
		char		c = (*p)[i];

		if (c < '0' || c > '9')
			return false;
		v = v * 10 + (c - '0');
	}
	*p += n;
	*out = v;
	return true;
}

bool
ascii_ieq(const char *a, const char *b) noexcept
{
	for (; *a && *b; a++, b++)
	{
		char		x = (*a >= 'a' && *a <= 'z') ? *a - 32 : *a;
		char		y = (*b >= 'a' && *b <= 'z') ? *b - 32 : *b;

		if (x != y)
			return false;
	}
	return *a == *b;
}

}								/* namespace */

/* Whether the timestamp field lasts 2^kMinLifetimeLog2Ms ms or more. */
bool
lasts_long_enough(const Layout &l) noexcept
{
	if (l.timestamp_bits() < 1)
		return false;
	if (l.timestamp_bits() >= kMinLifetimeLog2Ms)
		return true;
	/* (2^bits) units of unit_ms ms each, against 2^38 ms: no overflow below 38 bits */
	return (INT64_C(1) << l.timestamp_bits()) * l.unit_ms >= (INT64_C(1) << kMinLifetimeLog2Ms);
}

LayoutProblem
check_layout(const Layout &l, int64_t now_unix_ms) noexcept
{
	if (l.shard_bits < kMinShardBits || l.shard_bits > kMaxShardBits)
		return LayoutProblem::ShardBitsOutOfRange;
	if (l.sequence_bits < kMinSequenceBits || l.sequence_bits > kMaxSequenceBits)
		return LayoutProblem::SequenceBitsOutOfRange;
	if (l.id_bits < kMinIdBits || l.id_bits > kIdBits)
		return LayoutProblem::IdBitsOutOfRange;
	if (l.unit_ms < 1 || l.unit_ms > kMaxUnitMs || 1000 % l.unit_ms != 0)
		return LayoutProblem::UnitInvalid;
	if (l.datacenter_bits < 0 || l.datacenter_bits > l.shard_bits)
		return LayoutProblem::DatacenterBitsOutOfRange;
	if (!lasts_long_enough(l))
		return LayoutProblem::TimestampTooNarrow;
	if (l.epoch_ms < 0)
		return LayoutProblem::EpochBeforeUnixEpoch;
	if (l.epoch_ms > now_unix_ms)
		return LayoutProblem::EpochInFuture;
	if (now_unix_ms > l.last_unix_ms())
		return LayoutProblem::Expired;
	return LayoutProblem::None;
}

bool
parse_epoch(const char *text, int64_t *unix_ms) noexcept
{
	const char *p = text;
	int64_t		y, mo, d, h = 0, mi = 0, s = 0, ms = 0, offset_min = 0;
	static const int month_days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

	if (text == nullptr)
		return false;
	while (*p == ' ')
		p++;
	if (!read_digits(&p, 4, &y) || *p++ != '-' || !read_digits(&p, 2, &mo) ||
		*p++ != '-' || !read_digits(&p, 2, &d))
		return false;
	if (mo < 1 || mo > 12 || d < 1 ||
		d > month_days[mo - 1] + (mo == 2 && leap_year(y)))
		return false;

	if ((*p == ' ' || *p == 'T' || *p == 't') && p[1] >= '0' && p[1] <= '9')
	{
		p++;
		if (!read_digits(&p, 2, &h) || *p++ != ':' || !read_digits(&p, 2, &mi))
			return false;
		if (*p == ':')
		{
			p++;
			if (!read_digits(&p, 2, &s))
				return false;
			if (*p == '.')
			{
				int			scale = 100;

				p++;
				if (*p < '0' || *p > '9')
					return false;
				/* keep milliseconds, ignore finer digits */
				for (; *p >= '0' && *p <= '9'; p++)
				{
					ms += (*p - '0') * scale;
					scale /= 10;
				}
			}
		}
		if (h > 23 || mi > 59 || s > 59)
			return false;
	}

	const char *before_zone = p;

	while (*p == ' ')
		p++;
	if (*p == 'Z' || *p == 'z')
		p++;
	else if (*p == '+' || *p == '-')
	{
		int			sign = *p++ == '-' ? -1 : 1;
		int64_t		oh, om = 0;

		if (!read_digits(&p, 2, &oh))
			return false;
		if (*p == ':')
		{
			p++;
			if (!read_digits(&p, 2, &om))
				return false;
		}
		else if (*p >= '0' && *p <= '9' && !read_digits(&p, 2, &om))
			return false;
		if (oh > 15 || om > 59)
			return false;
		offset_min = sign * (oh * 60 + om);
	}
	else if (*p != '\0')
	{
		char		zone[4] = {0, 0, 0, 0};
		int			n = 0;

		while (*p != '\0' && *p != ' ' && n < 4)
			zone[n < 3 ? n : 3] = *p++, n++;
		/* a zone name needs a space before it: "2024-01-01 UTC" */
		if (n != 3 || !ascii_ieq(zone, "UTC") || p - 3 == before_zone)
			return false;
	}
	while (*p == ' ')
		p++;
	if (*p != '\0')
		return false;

	*unix_ms = (((days_from_civil(y, mo, d) * 24 + h) * 60 + mi - offset_min) * 60 + s)
		* 1000 + ms;
	return true;
}

void
format_utc(int64_t unix_ms, char *buf, size_t buflen) noexcept
{
	int64_t		days = unix_ms / 86400000;
	int64_t		rem = unix_ms % 86400000;
	int64_t		y, m, d;

	if (rem < 0)
	{
		rem += 86400000;
		days--;
	}
	civil_from_days(days, &y, &m, &d);
	snprintf(buf, buflen, "%04" PRId64 "-%02" PRId64 "-%02" PRId64
			 " %02" PRId64 ":%02" PRId64 ":%02" PRId64 ".%03" PRId64 "+00",
			 y, m, d, rem / 3600000, rem / 60000 % 60, rem / 1000 % 60, rem % 1000);
}

int
describe_layout_change(const Layout &was, const Layout &now, char *buf,
					   size_t buflen) noexcept
{
	size_t		n = 0;

	auto		append = [&](const char *fmt, auto a, auto b) noexcept {
		if (n >= buflen)
			return;
		int			w = snprintf(buf + n, buflen - n, fmt, n ? "; " : "", a, b);

		if (w > 0)
			n += (size_t) w;
	};

	if (buflen == 0)
		return 0;
	buf[0] = '\0';
	if (was.epoch_ms != now.epoch_ms)
	{
		char		a[40], b[40];

		format_utc(was.epoch_ms, a, sizeof(a));
		format_utc(now.epoch_ms, b, sizeof(b));
		append("%ssnowflake.epoch was %s and is now %s", a, b);
	}
	if (was.shard_bits != now.shard_bits)
		append("%ssnowflake.shard_bits was %d and is now %d", was.shard_bits,
			   now.shard_bits);
	if (was.sequence_bits != now.sequence_bits)
		append("%ssnowflake.sequence_bits was %d and is now %d",
			   was.sequence_bits, now.sequence_bits);
	if (was.id_bits != now.id_bits)
		append("%ssnowflake.id_bits was %d and is now %d", was.id_bits, now.id_bits);
	if (was.unit_ms != now.unit_ms)
		append("%ssnowflake.time_unit was %lld ms and is now %lld ms",
			   (long long) was.unit_ms, (long long) now.unit_ms);
	if (was.datacenter_bits != now.datacenter_bits)
		append("%ssnowflake.datacenter_bits was %d and is now %d", was.datacenter_bits,
			   now.datacenter_bits);
	return n < buflen ? (int) n : (int) buflen - 1;
}

/*
 * Published descriptions (see README, "Decoding other systems' IDs"):
 *	twitter		41 bits ms since 1288834974657 | 5 datacenter | 5 worker | 12 sequence
 *	discord		42 bits ms since 2015-01-01 | 5 worker | 5 process | 12 increment
 *	instagram	41 bits ms since 1314220021721 | 13 shard | 10 sequence
 *	sonyflake	39 bits of 10 ms since 2014-09-01 | 8 sequence | 16 machine
 *	sonyflake_v2	as sonyflake, with v2's default start time 2025-01-01
 *	mastodon	48 bits ms since 1970-01-01 | 16 bits (hashed sequence)
 * The time field takes every bit above the others, so a 41- and a 42-bit
 * field decode alike for the non-negative IDs a bigint holds.
 */
const NamedLayout kNamedLayouts[] = {
	{"twitter", INT64_C(1288834974657), 1, 10, 5, 12, false},
	{"discord", INT64_C(1420070400000), 1, 10, 5, 12, false},
	{"instagram", INT64_C(1314220021721), 1, 13, 0, 10, false},
	{"sonyflake", INT64_C(1409529600000), 10, 16, 0, 8, true},
	{"sonyflake_v2", INT64_C(1735689600000), 10, 16, 0, 8, true},
	{"mastodon", 0, 1, 0, 0, 16, false},
};
const int	kNamedLayoutCount = (int) (sizeof(kNamedLayouts) / sizeof(kNamedLayouts[0]));

const NamedLayout *
find_named_layout(const char *name, size_t len) noexcept
{
	for (int i = 0; i < kNamedLayoutCount; i++)
	{
		const char *known = kNamedLayouts[i].name;
		size_t		k = 0;

		for (; k < len && known[k] != '\0'; k++)
		{
			char		c = name[k];

			if (c >= 'A' && c <= 'Z')
				c = (char) (c - 'A' + 'a');
			if (c != known[k])
				break;
		}
		if (k == len && known[k] == '\0')
			return &kNamedLayouts[i];
	}
	return nullptr;
}

int
list_named_layouts(char *buf, size_t buflen) noexcept
{
	size_t		n = 0;

	if (buflen == 0)
		return 0;
	buf[0] = '\0';
	for (int i = 0; i < kNamedLayoutCount && n < buflen; i++)
	{
		int			w = snprintf(buf + n, buflen - n, "%s%s", i ? ", " : "",
								 kNamedLayouts[i].name);

		if (w > 0)
			n += (size_t) w;
	}
	return n < buflen ? (int) n : (int) buflen - 1;
}

bool
decode_named(const NamedLayout &l, int64_t id, NamedDecoded *out) noexcept
{
	const uint64_t u = (uint64_t) id;
	const int	low = l.shard_bits + l.sequence_bits;
	const uint64_t shard_mask = (UINT64_C(1) << l.shard_bits) - 1;
	const uint64_t seq_mask = (UINT64_C(1) << l.sequence_bits) - 1;
	const int64_t units = (int64_t) (u >> low);

	if (l.sequence_above_shard)
	{
		out->shard = (int64_t) (u & shard_mask);
		out->sequence = (int64_t) ((u >> l.shard_bits) & seq_mask);
	}
	else
	{
		out->shard = (int64_t) ((u >> l.sequence_bits) & shard_mask);
		out->sequence = (int64_t) (u & seq_mask);
	}
	out->shard_high = out->shard >> l.shard_low_bits;
	out->shard_low = out->shard & ((INT64_C(1) << l.shard_low_bits) - 1);
	if (l.unit_ms <= 0 || units > (INT64_MAX - (l.epoch_ms > 0 ? l.epoch_ms : 0)) / l.unit_ms)
		return false;
	out->unix_ms = l.epoch_ms + units * l.unit_ms;
	return true;
}

}								/* namespace snowflake */
