/*-------------------------------------------------------------------------
 *
 * layout.hpp
 *		The bit layout of an ID (sign | timestamp | shard | sequence): its
 *		bounds and checks, encoding and decoding, epoch parsing and UTC
 *		formatting, and the layouts of other systems' IDs, for decoding.
 *
 * Part of the core: plain C++ that never includes postgres.h, allocates or
 * throws (every function is noexcept and works on caller-owned memory), so it
 * can run inside the glue's LWLocks and be unit-tested without a server.
 * It may call nothing but the C++ standard library.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_LAYOUT_HPP
#define SNOWFLAKE_LAYOUT_HPP

#include <cstddef>
#include <cstdint>

namespace snowflake
{

/*
 * Bounds of the layout settings; the timestamp takes what the shard and the
 * sequence leave of the ID's width (id_bits, 63 by default: every positive
 * bigint; 53 and below: every ID is a safe JavaScript integer).
 */
constexpr int kMinShardBits = 0;
constexpr int kMaxShardBits = 20;
constexpr int kMinSequenceBits = 1;
constexpr int kMaxSequenceBits = 24;
constexpr int kIdBits = 63;
constexpr int kMinIdBits = 40;
/* 2^53 - 1, the largest integer a JavaScript number holds exactly. */
constexpr int kJavaScriptSafeBits = 53;
/*
 * The timestamp field must last at least 2^38 ms (8.7 years): anything
 * shorter is a trap.  With 1 ms units that is 38 bits, with 10 ms units 35.
 */
constexpr int kMinLifetimeLog2Ms = 38;
constexpr int kMinTimestampBits = 38;	/* with 1 ms units */
/* Time units: whole milliseconds that divide a second. */
constexpr int64_t kMaxUnitMs = 1000;

/* Unix milliseconds of 2024-01-01 00:00:00 UTC, the default epoch. */
constexpr int64_t kDefaultEpochMs = INT64_C(1704067200000);

/* Milliseconds between the Unix epoch and PostgreSQL's (2000-01-01). */
constexpr int64_t kPostgresEpochUnixMs = INT64_C(946684800000);

/*
 * The last Unix millisecond a PostgreSQL timestamptz can hold (its END_TIMESTAMP,
 * 294277-01-01, is exclusive).  Layouts with more than 43 timestamp bits reach
 * past it: IDs beyond it cannot be decoded to a timestamptz.
 */
constexpr int64_t kEndTimestamptzPgUs = INT64_C(9223371331200000000);
constexpr int64_t kLastTimestamptzUnixMs =
	(kEndTimestamptzPgUs - 1) / 1000 + kPostgresEpochUnixMs;

/*
 * The bit layout of an ID: zeros above id_bits | timestamp | shard | sequence,
 * the timestamp counted in units of unit_ms since epoch_ms, and the shard
 * field split into datacenter (its top datacenter_bits) | worker.
 * Timestamps ("offsets") everywhere in the generator are in these units.
 */
struct Layout
{
	int64_t		epoch_ms;		/* Unix milliseconds of timestamp 0 */
	int			shard_bits;
	int			sequence_bits;
	int			id_bits = kIdBits;	/* the ID's width; bits above it are 0 */
	int64_t		unit_ms = 1;	/* milliseconds per timestamp unit */
	int			datacenter_bits = 0;	/* the top part of the shard field */

	constexpr int timestamp_bits() const noexcept
	{
		return id_bits - shard_bits - sequence_bits;
	}
	constexpr int worker_bits() const noexcept
	{
		return shard_bits - datacenter_bits;
	}
	constexpr int64_t max_datacenter_id() const noexcept
	{
		return (INT64_C(1) << datacenter_bits) - 1;
	}
	constexpr int64_t max_worker_id() const noexcept
	{
		return (INT64_C(1) << worker_bits()) - 1;
	}
	/* The largest ID of this width. */
	constexpr int64_t max_id() const noexcept
	{
		return id_bits >= 63 ? INT64_MAX : (INT64_C(1) << id_bits) - 1;
	}
	/*
	 * ms / unit_ms, exactly as C++ divides (truncating), without a run-time
	 * division for the units a layout may have (whole milliseconds that
	 * divide a second: check_layout): each case divides by a constant, which
	 * the compiler turns into a multiplication and shifts, and 1 ms (the
	 * default) into nothing.  Every generating call divides its clock
	 * reading and snowflake.max_clock_lead by the unit; a 64-bit idiv was
	 * about a sixth of a call.  Other units (other systems' layouts) divide.
	 */
	constexpr int64_t div_unit(int64_t ms) const noexcept
	{
		if (unit_ms == 1)
			return ms;			/* the default, before any table */
		switch (unit_ms)
		{
			case 2: return ms / 2;
			case 4: return ms / 4;
			case 5: return ms / 5;
			case 8: return ms / 8;
			case 10: return ms / 10;
			case 20: return ms / 20;
			case 25: return ms / 25;
			case 40: return ms / 40;
			case 50: return ms / 50;
			case 100: return ms / 100;
			case 125: return ms / 125;
			case 200: return ms / 200;
			case 250: return ms / 250;
			case 500: return ms / 500;
			case 1000: return ms / 1000;
			default: return ms / unit_ms;
		}
	}
	/* The unit (offset) that holds a Unix millisecond (floor: may be < 0). */
	constexpr int64_t offset_of(int64_t unix_ms) const noexcept
	{
		int64_t		d = unix_ms - epoch_ms;

		return d >= 0 ? div_unit(d) : -div_unit(-d + unit_ms - 1);
	}
	/*
	 * The first Unix millisecond of a unit; INT64_MAX for a unit past what
	 * int64 milliseconds can hold (a layout of many timestamp bits of coarse
	 * units can outlast them).
	 */
	constexpr int64_t unix_ms_of(int64_t offset) const noexcept
	{
		return offset > (INT64_MAX - epoch_ms) / unit_ms ? INT64_MAX :
			epoch_ms + offset * unit_ms;
	}
	/* The last Unix millisecond of a unit (what a mark covering it records), saturating. */
	constexpr int64_t unix_ms_end_of(int64_t offset) const noexcept
	{
		return offset >= (INT64_MAX - epoch_ms) / unit_ms ? INT64_MAX :
			epoch_ms + offset * unit_ms + unit_ms - 1;
	}
	/* Whole units in a duration of ms milliseconds (rounded down). */
	constexpr int64_t units(int64_t ms) const noexcept
	{
		return div_unit(ms);
	}
	constexpr int64_t max_shard_id() const noexcept
	{
		return (INT64_C(1) << shard_bits) - 1;
	}
	constexpr int64_t max_sequence() const noexcept
	{
		return (INT64_C(1) << sequence_bits) - 1;
	}
	/* The largest timestamp (in units). */
	constexpr int64_t max_offset() const noexcept
	{
		return (INT64_C(1) << timestamp_bits()) - 1;
	}
	/* Unix milliseconds of the start of the last representable unit (saturating). */
	constexpr int64_t last_unix_ms() const noexcept
	{
		return max_offset() > (INT64_MAX - epoch_ms) / unit_ms ? INT64_MAX :
			epoch_ms + max_offset() * unit_ms;
	}
	/* The last one a timestamptz can also hold: what SQL may see and ask for. */
	constexpr int64_t last_usable_unix_ms() const noexcept
	{
		return last_unix_ms() < kLastTimestamptzUnixMs ? last_unix_ms() : kLastTimestamptzUnixMs;
	}
	bool operator==(const Layout &o) const noexcept
	{
		return epoch_ms == o.epoch_ms && shard_bits == o.shard_bits &&
			sequence_bits == o.sequence_bits && id_bits == o.id_bits &&
			unit_ms == o.unit_ms && datacenter_bits == o.datacenter_bits;
	}
	bool operator!=(const Layout &o) const noexcept { return !(*this == o); }
};

/* What is wrong with a layout, if anything. */
enum class LayoutProblem
{
	None,
	ShardBitsOutOfRange,
	SequenceBitsOutOfRange,
	IdBitsOutOfRange,
	UnitInvalid,				/* not a whole number of ms dividing a second */
	DatacenterBitsOutOfRange,	/* more than shard_bits */
	TimestampTooNarrow,		/* the field lasts less than 2^38 ms (8.7 years) */
	EpochBeforeUnixEpoch,
	EpochInFuture,
	Expired					/* the clock is past the last representable time */
};

/* Checks a layout against the bounds above and the current Unix time. */
LayoutProblem check_layout(const Layout &layout, int64_t now_unix_ms) noexcept;

/* Whether the timestamp field lasts at least 2^38 ms (8.7 years). */
bool lasts_long_enough(const Layout &layout) noexcept;

/* The fewest timestamp bits that last 2^38 ms with units of unit_ms. */
constexpr int
min_timestamp_bits(int64_t unit_ms) noexcept
{
	int			b = 1;

	while (b < kMinLifetimeLog2Ms && (INT64_C(1) << b) * unit_ms < (INT64_C(1) << kMinLifetimeLog2Ms))
		b++;
	return b;
}

/* Builds an ID; the caller guarantees every field is in range. */
constexpr int64_t
encode(const Layout &l, int64_t offset, int64_t shard, int64_t sequence) noexcept
{
	return (offset << (l.shard_bits + l.sequence_bits)) |
		(shard << l.sequence_bits) | sequence;
}

/* The fields of an ID. */
struct Decoded
{
	int64_t		unix_ms;
	int64_t		shard;
	int64_t		sequence;
};

/*
 * Splits a non-negative ID of the layout's width into its fields; the time is
 * the start of its unit (saturating at INT64_MAX for widths that reach past
 * what Unix milliseconds hold).
 */
constexpr Decoded
decode(const Layout &l, int64_t id) noexcept
{
	return Decoded{
		(id >> (l.shard_bits + l.sequence_bits)) > (INT64_MAX - l.epoch_ms) / l.unit_ms ?
		INT64_MAX : l.unix_ms_of(id >> (l.shard_bits + l.sequence_bits)),
		(id >> l.sequence_bits) & l.max_shard_id(),
		id & l.max_sequence()};
}

/*
 * Where a time falls among the IDs, for "created at or after / before t"
 * (the snowflake type's time comparisons): an ID was created at or after t
 * when its unit starts at or after t (what decode() gives), so the IDs at or
 * after t are those from the first ID of the first unit that starts at or
 * after t; every smaller ID was created before t.  A time is never equal to
 * an ID: it sits between the last ID of the unit before that one and the
 * first ID of that unit.
 */
struct TimeBound
{
	int64_t		first_id;		/* the first ID at or after the time ... */
	bool		past_end;		/* ... unless no unit of the layout starts at or after it */
};

/*
 * The bound of a time given as the first whole Unix millisecond at or after it
 * (unit starts are whole milliseconds, so that is all it takes).  Times at or
 * before the epoch give ID 0 (every ID is at or after them); times after the
 * start of the last unit give past_end (every ID of the layout is before them).
 */
constexpr TimeBound
time_bound(const Layout &l, int64_t ceil_unix_ms) noexcept
{
	/* the first unit starting at or after ceil_unix_ms: ceiling division */
	int64_t		u = l.offset_of(ceil_unix_ms - 1) + 1;

	return u <= 0 ? TimeBound{0, false} :
		u > l.max_offset() ? TimeBound{0, true} :
		TimeBound{encode(l, u, 0, 0), false};
}

/*
 * An ID (or any bigint) against a time's bound: -1 when it was created before
 * the time, 1 when at or after it; never 0.  Values wider than the layout come
 * after every time within it, as they do numerically.
 */
constexpr int
compare_with_bound(const Layout &l, int64_t id, TimeBound b) noexcept
{
	return b.past_end ? (id <= l.max_id() ? -1 : 1) : (id < b.first_id ? -1 : 1);
}

/* Unix milliseconds -> microseconds since 2000-01-01 (PostgreSQL TimestampTz). */
constexpr int64_t
unix_ms_to_pg_us(int64_t unix_ms) noexcept
{
	return (unix_ms - kPostgresEpochUnixMs) * 1000;
}

/*
 * Parses an epoch written as an ISO 8601 date or date-time in UTC or with a
 * numeric offset: "2024-01-01", "2024-01-01 00:00:00", "2024-01-01T08:00:00Z",
 * "2024-01-01 00:00:00.5+02:00", "... UTC".  Returns false on anything else.
 */
bool parse_epoch(const char *text, int64_t *unix_ms) noexcept;

/* Writes a Unix millisecond time as "YYYY-MM-DD HH:MM:SS.mmm+00". */
void format_utc(int64_t unix_ms, char *buf, size_t buflen) noexcept;

/*
 * Describes how "recorded" differs from "current" for an error detail, e.g.
 * "snowflake.sequence_bits was 12 and is now 14".  Returns the length.
 */
int describe_layout_change(const Layout &recorded, const Layout &current,
						   char *buf, size_t buflen) noexcept;

/*
 * Layouts of other systems' Snowflake IDs, for decoding only.  An ID is
 * time | shard | sequence from the top, or time | sequence | shard when
 * sequence_above_shard (Sonyflake).  The time field is every bit above the
 * other two, counted in units of unit_ms from epoch_ms.  A shard field in two
 * parts (Twitter's datacenter + worker, Discord's worker + process) keeps
 * shard_low_bits for its low part: decode_named() returns the whole field as
 * the shard and the two parts separately.
 */
struct NamedLayout
{
	const char *name;
	int64_t		epoch_ms;		/* Unix milliseconds of time 0 */
	int64_t		unit_ms;		/* milliseconds per time unit */
	int			shard_bits;		/* 0: the layout has no shard field */
	int			shard_low_bits; /* 0: the shard field is one part */
	int			sequence_bits;
	bool		sequence_above_shard;
};

/* The named layouts, in the order error messages list them. */
extern const NamedLayout kNamedLayouts[];
extern const int kNamedLayoutCount;

/* The named layout called name (ASCII case-insensitive), or nullptr. */
const NamedLayout *find_named_layout(const char *name, size_t len) noexcept;

/* Writes "a, b, c" (the known names) into buf; returns the length. */
int list_named_layouts(char *buf, size_t buflen) noexcept;

/*
 * This server's own layout as a NamedLayout (named "snowflake"): a shard field
 * split into datacenter and worker shows them as shard_high and shard_low.
 */
constexpr NamedLayout
own_named_layout(const Layout &l) noexcept
{
	return NamedLayout{"snowflake", l.epoch_ms, l.unit_ms, l.shard_bits,
					   l.datacenter_bits > 0 ? l.worker_bits() : 0, l.sequence_bits, false};
}

/* The fields of an ID under a named layout. */
struct NamedDecoded
{
	int64_t		unix_ms;
	int64_t		shard;			/* the whole shard field */
	int64_t		shard_high;		/* two-part fields: the high part ... */
	int64_t		shard_low;		/* ... and the low part */
	int64_t		sequence;
};

/*
 * Splits a non-negative ID under a named layout.  False when the time does
 * not fit in int64 Unix milliseconds (never for the built-in layouts).
 */
bool decode_named(const NamedLayout &l, int64_t id, NamedDecoded *out) noexcept;

}								/* namespace snowflake */

#endif							/* SNOWFLAKE_LAYOUT_HPP */
