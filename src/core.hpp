/*-------------------------------------------------------------------------
 *
 * core.hpp
 *		The Snowflake ID algorithm in plain C++: bit layout, encode/decode,
 *		epoch parsing, the recorded-layout format and the generator's state
 *		machine with an injected clock.
 *
 * Nothing here includes postgres.h, allocates, or throws: every function is
 * noexcept and works on caller-owned memory, so the generator step can run
 * inside the PostgreSQL glue's LWLock and the whole file can be unit-tested
 * without a server (test/unit/).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_CORE_HPP
#define SNOWFLAKE_CORE_HPP

#include <cstddef>
#include <cstdint>

namespace snowflake
{

/* Bounds of the layout settings; the timestamp takes the rest of 63 bits. */
constexpr int kMinShardBits = 0;
constexpr int kMaxShardBits = 20;
constexpr int kMinSequenceBits = 1;
constexpr int kMaxSequenceBits = 24;
/* 38 bits of milliseconds last 8.7 years: anything narrower is a trap. */
constexpr int kMinTimestampBits = 38;
constexpr int kIdBits = 63;

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

/* The bit layout of an ID: sign | timestamp | shard | sequence. */
struct Layout
{
	int64_t		epoch_ms;		/* Unix milliseconds of timestamp 0 */
	int			shard_bits;
	int			sequence_bits;

	constexpr int timestamp_bits() const noexcept
	{
		return kIdBits - shard_bits - sequence_bits;
	}
	constexpr int64_t max_shard_id() const noexcept
	{
		return (INT64_C(1) << shard_bits) - 1;
	}
	constexpr int64_t max_sequence() const noexcept
	{
		return (INT64_C(1) << sequence_bits) - 1;
	}
	constexpr int64_t max_offset_ms() const noexcept
	{
		return (INT64_C(1) << timestamp_bits()) - 1;
	}
	/* Unix milliseconds of the last representable timestamp. */
	constexpr int64_t last_unix_ms() const noexcept
	{
		return epoch_ms + max_offset_ms();
	}
	/* The last one a timestamptz can also hold: what SQL may see and ask for. */
	constexpr int64_t last_usable_unix_ms() const noexcept
	{
		return last_unix_ms() < kLastTimestamptzUnixMs ? last_unix_ms() : kLastTimestamptzUnixMs;
	}
	bool operator==(const Layout &o) const noexcept
	{
		return epoch_ms == o.epoch_ms && shard_bits == o.shard_bits &&
			sequence_bits == o.sequence_bits;
	}
	bool operator!=(const Layout &o) const noexcept { return !(*this == o); }
};

/* What is wrong with a layout, if anything. */
enum class LayoutProblem
{
	None,
	ShardBitsOutOfRange,
	SequenceBitsOutOfRange,
	TimestampTooNarrow,		/* shard_bits + sequence_bits too large */
	EpochBeforeUnixEpoch,
	EpochInFuture,
	Expired					/* the clock is past the last representable time */
};

/* Checks a layout against the bounds above and the current Unix time. */
LayoutProblem check_layout(const Layout &layout, int64_t now_unix_ms) noexcept;

/* Builds an ID; the caller guarantees every field is in range. */
constexpr int64_t
encode(const Layout &l, int64_t offset_ms, int64_t shard, int64_t sequence) noexcept
{
	return (offset_ms << (l.shard_bits + l.sequence_bits)) |
		(shard << l.sequence_bits) | sequence;
}

/* The fields of an ID. */
struct Decoded
{
	int64_t		unix_ms;
	int64_t		shard;
	int64_t		sequence;
};

/* Splits a non-negative ID into its fields. */
constexpr Decoded
decode(const Layout &l, int64_t id) noexcept
{
	return Decoded{
		l.epoch_ms + (id >> (l.shard_bits + l.sequence_bits)),
		(id >> l.sequence_bits) & l.max_shard_id(),
		id & l.max_sequence()};
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
 * The layout record kept in the data directory: a few "key value" lines.
 * format_layout_record returns the length written (< buflen) or -1.
 */
int format_layout_record(const Layout &layout, char *buf, size_t buflen) noexcept;
bool parse_layout_record(const char *text, size_t len, Layout *layout) noexcept;

/*
 * Describes how "recorded" differs from "current" for an error detail, e.g.
 * "snowflake.sequence_bits was 12 and is now 14".  Returns the length.
 */
int describe_layout_change(const Layout &recorded, const Layout &current,
						   char *buf, size_t buflen) noexcept;

/*
 * The generator's state: plain data, placed in shared memory by the glue and
 * only ever touched under its lock.  The counters feed snowflake_stats().
 */
struct GeneratorState
{
	int64_t		last_offset;	/* ms since the epoch of the last ID; -1: none */
	int64_t		last_sequence;	/* sequence of the last ID */
	int64_t		last_clock;		/* the previous clock reading */
	uint64_t	issued;			/* IDs issued */
	uint64_t	sequence_exhausted; /* times a millisecond's sequence ran out */
	uint64_t	clock_steps_back;	/* backward clock steps seen */
	int64_t		largest_step_back_ms;
	int64_t		last_step_back_ms;	/* the latest backward step ... */
	int64_t		last_step_back_at;	/* ... and the clock reading just after it */
};

constexpr GeneratorState kFreshState = {-1, 0, INT64_MIN, 0, 0, 0, 0, 0, 0};

/* Clears the counters, keeping what generation depends on. */
void reset_counters(GeneratorState &state) noexcept;

/*
 * Resumes a state strictly above a durable mark (ms since the epoch): the
 * next ID's timestamp is at least mark + 1.
 */
void resume_above(GeneratorState &state, const Layout &layout, int64_t mark_offset) noexcept;

enum class Outcome
{
	Issued,					/* id is valid; the state has advanced */
	Wait,					/* come back once the clock reaches wait_until */
	NeedReservation,		/* make the mark cover "wanted" durably, then retry */
	ClockBeforeEpoch,		/* the clock reads earlier than the epoch */
	Exhausted				/* the timestamp field is used up */
};

struct Step
{
	Outcome		outcome;
	int64_t		id;				/* Issued: the (first) ID */
	int64_t		count;			/* Issued: IDs in the run, id .. id + count - 1 */
	int64_t		wait_until;		/* Wait: clock offset that allows progress */
	int64_t		wanted;			/* NeedReservation: the timestamp to cover */
	int64_t		behind_ms;		/* how far the clock read behind last_offset */
	int64_t		stepped_back_ms;	/* > 0: this reading was a backward step */
};

constexpr int64_t kNoReservation = INT64_MAX;

/*
 * One generator step: issue the next ID for "shard" given the clock reading
 * "now_offset" (ms since the layout's epoch), or say why not.
 *
 * The ID's timestamp is the clock reading, or the last timestamp used when the
 * clock has not passed it, or the next millisecond when the sequence of the
 * last one is used up; so IDs strictly increase whatever the clock does.  Its
 * timestamp may run ahead of the clock by at most max_lead_ms; beyond that the
 * step returns Wait.  With max_lead_ms = 0 this is the classic generator that
 * waits for the next millisecond.  No ID is issued with a timestamp above
 * reserved_offset (the durable mark): the step returns NeedReservation.
 *
 * Only an Issued step advances last_offset/last_sequence; every step records
 * the clock reading and counts a backward step if it sees one.
 */
Step next_id(GeneratorState &state, const Layout &layout, int64_t shard,
			 int64_t now_offset, int64_t max_lead_ms,
			 int64_t reserved_offset = kNoReservation,
			 int64_t start_sequence = 0) noexcept;

/*
 * Like next_id, but issues a run of up to max_count consecutive IDs at once:
 * the rest of one millisecond's sequence at most.  The run's IDs are
 * step.id .. step.id + step.count - 1, exactly what step.count calls of
 * next_id at the same clock reading would have returned.
 */
Step next_run(GeneratorState &state, const Layout &layout, int64_t shard,
			  int64_t now_offset, int64_t max_lead_ms, int64_t reserved_offset,
			  int64_t max_count, int64_t start_sequence = 0) noexcept;

/*
 * Random sequence start (snowflake.sequence_start = 'random').  When the
 * clock has moved past the last ID's millisecond, next_run() starts the new
 * millisecond at start_sequence instead of 0; a millisecond borrowed because
 * the previous one's sequence ran out still starts at 0, so the per-shard
 * ceiling under sustained load is unchanged.  The caller draws
 * start_sequence in [0, random_start_bound(layout)): a sixteenth of the
 * sequence range (256 of 4,096 with 12 bits), so a millisecond whose clock
 * tick starts it loses at most 1/16 of its IDs (1/32 on average).  The core
 * stays deterministic: the draw is a parameter, the generator below is the
 * glue's per-backend source of it.
 */
constexpr int64_t
random_start_bound(const Layout &l) noexcept
{
	return l.sequence_bits > 4 ? INT64_C(1) << (l.sequence_bits - 4) : 1;
}

/* xorshift64*: a tiny, lock-free, per-backend pseudo-random generator. */
struct Xorshift64
{
	uint64_t	state;			/* never 0 */

	uint64_t next() noexcept
	{
		state ^= state >> 12;
		state ^= state << 25;
		state ^= state >> 27;
		return state * UINT64_C(2685821657736338717);
	}
};

/* A start sequence in [0, random_start_bound(l)) from one draw of rng. */
inline int64_t
draw_start_sequence(Xorshift64 &rng, const Layout &l) noexcept
{
	/* the high bits of xorshift64* are the best ones */
	return (int64_t) (rng.next() >> 40) & (random_start_bound(l) - 1);
}

/*
 * The text form of an ID: 13 characters of Crockford base32 (digits and
 * upper-case letters without I, L, O, U), fixed width, so that the strings
 * sort like the IDs.
 */
constexpr int kTextLength = 13;

/* Writes the text form of a non-negative ID and a NUL into out[14]. */
void to_text(int64_t id, char out[kTextLength + 1]) noexcept;

enum class TextProblem
{
	None,
	WrongLength,
	BadCharacter,				/* *bad_pos is its index */
	OutOfRange					/* above the largest bigint */
};

/* Parses a text form (either case); strict about everything else. */
TextProblem from_text(const char *text, size_t len, int64_t *id, size_t *bad_pos) noexcept;

/* An inclusive range of shard IDs, from a list such as "0-63,128". */
struct ShardRange
{
	int64_t		lo;
	int64_t		hi;
};

enum class RangeProblem
{
	None,
	Syntax,						/* not "N", "N-M", separated by commas */
	OutOfRange,					/* a shard above max_shard */
	Reversed					/* N-M with M < N */
};

/*
 * Parses a shard list ("" means none; spaces allowed) into out[0..capacity).
 * Returns the problem, if any; *count gets the number of ranges, which may
 * exceed capacity (call again with more room).
 */
RangeProblem parse_shard_ranges(const char *text, int64_t max_shard, ShardRange *out,
								int capacity, int *count) noexcept;

/* Whether shard lies in one of ranges[0..count). */
bool shard_in_ranges(const ShardRange *ranges, int count, int64_t shard) noexcept;

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

/* This server's own layout as a NamedLayout (named "snowflake"). */
constexpr NamedLayout
own_named_layout(const Layout &l) noexcept
{
	return NamedLayout{"snowflake", l.epoch_ms, 1, l.shard_bits, 0, l.sequence_bits, false};
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

}								/* namespace snowflake */

#endif							/* SNOWFLAKE_CORE_HPP */
