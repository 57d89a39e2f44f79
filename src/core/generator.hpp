/*-------------------------------------------------------------------------
 *
 * generator.hpp
 *		The generator's state machine with an injected clock: one step
 *		issues the next ID (or a run of them) for a shard, or says why not
 *		(wait for the clock, reserve further, the clock before the epoch, the
 *		timestamp field used up); and the random start of a millisecond's
 *		sequence.
 *
 * Part of the core: plain C++ that never includes postgres.h, allocates or
 * throws (every function is noexcept and works on caller-owned memory), so it
 * can run inside the glue's LWLocks and be unit-tested without a server.
 * It may call layout.hpp.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_GENERATOR_HPP
#define SNOWFLAKE_GENERATOR_HPP

#include <cstddef>
#include <cstdint>

#include "core/layout.hpp"

namespace snowflake
{

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
	int64_t		largest_step_back;	/* in timestamp units, as all of these */
	int64_t		last_step_back;	/* the latest backward step ... */
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
	Exhausted,				/* the timestamp field is used up */
	TimeDecreased,			/* next_import: the time is before the last ID's */
	UnitFull				/* next_import: the unit's sequence is used up */
};

struct Step
{
	Outcome		outcome;
	int64_t		id;				/* Issued: the (first) ID */
	int64_t		count;			/* Issued: IDs in the run, id .. id + count - 1 */
	int64_t		wait_until;		/* Wait: clock offset that allows progress */
	int64_t		wanted;			/* NeedReservation: the timestamp to cover */
	int64_t		behind;			/* how far the clock read behind last_offset (units) */
	int64_t		stepped_back;	/* > 0: this reading was a backward step (units) */
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
 * The step of an import (backfill): the next ID carrying exactly the unit
 * at_offset, for rows imported in non-decreasing time order.  Its sequence
 * follows the last ID's when the unit is the same, and starts at 0 in a
 * later unit.  It refuses a time before the last ID's (TimeDecreased), a
 * unit whose sequence is used up (UnitFull; it never borrows the next unit,
 * which would change the time the ID carries), and a unit beyond
 * reserved_offset (NeedReservation), as next_id does.  The caller checks
 * at_offset against the layout's range.
 */
Step next_import(GeneratorState &state, const Layout &layout, int64_t shard,
				 int64_t at_offset, int64_t reserved_offset) noexcept;

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

}								/* namespace snowflake */

#endif							/* SNOWFLAKE_GENERATOR_HPP */
