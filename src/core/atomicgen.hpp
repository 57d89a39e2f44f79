/*-------------------------------------------------------------------------
 *
 * atomicgen.hpp
 *		The lock-free generator (snowflake.generator = 'atomic') in plain
 *		C++: one shard's (timestamp, sequence) state packed into one 64-bit
 *		word that calls advance with compare-and-swap, the clock word that
 *		detects backward clock steps, and the seal that lowers the reserved
 *		offset under running calls.
 *
 * The loops (atomic_issue, atomic_seal) are templates over the atomic
 * operations, so that the PostgreSQL glue (fastpath.cpp, pg_atomic_*) and
 * the unit tests (std::atomic, many std::threads, ThreadSanitizer) run the
 * same code.  Nothing here includes postgres.h, allocates, or throws.
 *
 * The words.
 *	state word:  (offset + 1) << sequence_bits | sequence of the last ID
 *				 issued (offset: ms since the layout's epoch); 0 before the
 *				 first ID (offset -1, as in kFreshState).  It orders like the
 *				 IDs and every install strictly increases it, so it never
 *				 returns to an earlier value (no ABA).  At most
 *				 timestamp_bits + 1 + sequence_bits <= 64 bits.
 *	clock word:  tag << kClockBits | the last clock reading (layout offset),
 *				 the tag counting installs; kNoClock before the first.
 *	reserved:	 the slot's reserved_offset (int64 bits): no ID may carry a
 *				 later timestamp.
 *
 * Ops, supplied by the caller, must provide (barriers as PostgreSQL's):
 *	uint64_t load_clock();		 the clock word
 *	uint64_t load_state();		 the state word, then a read barrier
 *	int64_t	 load_reserved();	 reserved
 *	int64_t	 now();				 the clock, as a layout offset (may be < 0)
 *	bool	 cas_clock(uint64_t &expected, uint64_t desired);	full barrier
 *	bool	 cas_state(uint64_t &expected, uint64_t desired);	full barrier;
 *			 on failure both update expected to the current value
 * and, for atomic_seal:
 *	void	 store_reserved(int64_t);
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_ATOMICGEN_HPP
#define SNOWFLAKE_ATOMICGEN_HPP

#include <cstdint>

#include "core/core.hpp"

/*
 * The step of every generating call is inlined into the glue's caller, so
 * that its Step and AtomicStep stay in registers, whatever the compiler's
 * size heuristics say (the unit tests call it the same way).
 */
#if defined(__GNUC__)
#define SF_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define SF_ALWAYS_INLINE inline
#endif

namespace snowflake
{

/* The state word of a shard that has issued nothing (offset -1, sequence 0). */
constexpr uint64_t kFreshWord = 0;

/* Packs a (timestamp offset, sequence) pair; offset >= -1. */
constexpr uint64_t
pack_state(const Layout &l, int64_t offset, int64_t sequence) noexcept
{
	return ((uint64_t) (offset + 1) << l.sequence_bits) | (uint64_t) sequence;
}

/* The timestamp offset of a state word (-1: nothing issued). */
constexpr int64_t
word_offset(const Layout &l, uint64_t word) noexcept
{
	return (int64_t) (word >> l.sequence_bits) - 1;
}

/* The sequence of a state word. */
constexpr int64_t
word_sequence(const Layout &l, uint64_t word) noexcept
{
	return (int64_t) (word & (uint64_t) l.max_sequence());
}

/* Clock word: the low kClockBits hold the reading (year 4200 and more). */
constexpr int kClockBits = 46;
constexpr uint64_t kClockMask = (UINT64_C(1) << kClockBits) - 1;
constexpr uint64_t kNoClock = kClockMask;	/* no reading yet, tag 0 */

/* What a step of the lock-free generator decided. */
struct AtomicStep
{
	Step		step;			/* as next_run's; stepped_back from the clock word */
	uint64_t	word;			/* Issued: the state word to install */
	bool		exhausted;		/* Issued: the last millisecond's sequence was used up */
	bool		drew;			/* start_sequence may have been used (a unit the clock
								 * opened): the caller draws a new one for the next */
};

/* advance_word's general case: next_run() on the unpacked state. */
AtomicStep advance_word_slow(const Layout &l, int64_t shard, uint64_t word, int64_t now,
							 int64_t max_lead_ms, int64_t reserved_offset,
							 int64_t max_count, int64_t start_sequence = 0) noexcept;

/*
 * The pure step: given the state word read, the clock reading and the
 * limits, the word to install (and the ID run it stands for), or why not.
 * Exactly next_run() on the unpacked state, so both generators issue the
 * same IDs from the same state and clock (the unit tests compare them).  The
 * two common cases, a new millisecond and the next sequence number of the
 * current one, are computed here, inline; everything else (a used-up
 * millisecond, waits, reservations, refusals) goes to advance_word_slow.
 */
SF_ALWAYS_INLINE AtomicStep
advance_word(const Layout &l, int64_t shard, uint64_t word, int64_t now,
			 int64_t max_lead_ms, int64_t reserved_offset, int64_t max_count,
			 int64_t start_sequence = 0) noexcept
{
	int64_t		last = word_offset(l, word);
	int64_t		seq = word_sequence(l, word);
	int64_t		ts;
	int64_t		behind = 0;
	bool		opened = now > last;

	if (opened)
	{
		/* the clock opened a new millisecond: it starts at the draw (next_run) */
		ts = now;
		seq = (start_sequence > 0 && start_sequence <= l.max_sequence()) ? start_sequence : 0;
	}
	else if (seq < l.max_sequence())
	{
		ts = last;
		seq++;
		behind = last - now;
	}
	else
		return advance_word_slow(l, shard, word, now, max_lead_ms, reserved_offset, max_count,
								 start_sequence);
	if (ts < 0 || ts > l.max_offset() || behind > max_lead_ms || ts > reserved_offset)
		return advance_word_slow(l, shard, word, now, max_lead_ms, reserved_offset, max_count,
								 start_sequence);

	int64_t		count = l.max_sequence() - seq + 1;
	AtomicStep	s;

	if (max_count < count)
		count = max_count < 1 ? 1 : max_count;
	s.step = Step{Outcome::Issued, encode(l, ts, shard, seq), count, 0, 0, behind, 0};
	s.word = pack_state(l, ts, seq + count - 1);
	s.exhausted = false;
	s.drew = opened;
	return s;
}

/* Counts a backward clock step in a state's counters, as next_run does. */
void note_step_back(GeneratorState &state, int64_t stepped_back, int64_t now) noexcept;

/* What a clock reading does to the clock word. */
struct ClockObservation
{
	bool		changed;		/* install word (the reading differs) */
	uint64_t	word;
	int64_t		stepped_back;	/* > 0: the reading is below the last one */
};

/* Compares a reading with the clock word read before it (inline: every call). */
SF_ALWAYS_INLINE ClockObservation
observe_clock(uint64_t clock_word, int64_t now) noexcept
{
	ClockObservation o = {false, clock_word, 0};
	uint64_t	last = clock_word & kClockMask;

	/* readings outside the field (before the epoch) are not recorded */
	if (now < 0 || (uint64_t) now >= kNoClock || (uint64_t) now == last)
		return o;
	o.changed = true;
	o.word = (((clock_word >> kClockBits) + 1) << kClockBits) | (uint64_t) now;
	if (last != kNoClock && (int64_t) last > now)
		o.stepped_back = (int64_t) last - now;
	return o;
}

/*
 * The word atomic_seal installs: the next word above "word" that uses up a
 * millisecond, (offset, max) or, when that is the word already,
 * (offset + 1, max).  Returns word itself when no later word exists
 * (the layout is used up: nothing can be issued any more anyway).
 */
uint64_t seal_word(const Layout &l, uint64_t word) noexcept;

/*
 * Issues a run of up to max_count IDs, lock-free: reads the clock word and
 * the clock, in that order, and records the reading in the clock word (once,
 * without retrying: a later call sees any step that persists); then reads
 * the state word and reserved, in that order, and installs the next state
 * word with compare-and-swap, retrying with the word the CAS found (and a
 * fresh reserved) until it succeeds or the step is not Issued.  The clock is read once per call: a
 * retry with an older reading can only use a timestamp no later than the
 * one it would otherwise use.
 *
 * Why a backward step is never reported falsely (two calls' readings
 * arriving in the other order): a call reports a step only when its reading
 * is below the clock word it loaded BEFORE reading the clock, and only when
 * its CAS replaced exactly that word.  That word holds a reading some call
 * took before installing it, so before this call loaded it, so before this
 * call read the clock: a lower reading means the clock really went back
 * (Linux's clock_gettime is coherent across CPUs).  A reading taken earlier
 * but installed later cannot be compared with a later reading: its CAS
 * fails, because the word it expects has changed.  Each step is reported
 * by the one call whose CAS lowers the word; later readings compare with
 * the lowered word.  The tag makes a word never recur (barring 2^18 installs
 * during one call's window), so a stale CAS cannot succeed by an ABA.
 *
 * *now_out gets the clock reading used.  start_sequence is next_run's: the
 * sequence a millisecond the clock opens starts at (snowflake.sequence_start),
 * drawn once per call by the caller; a retry reuses it.
 *
 * The guess (optional, one per caller and shard): the word this caller's
 * last successful CAS installed.  The first attempt computes from it and
 * CASes it without loading the word first.  Alone on a shard the guess is
 * the word, and the call saves a load; when another backend moved the word,
 * the failed CAS hands back the current word with the cache line already
 * held for writing, so the retry usually succeeds at once: one transfer of
 * the line per call instead of two (a shared copy for the load, then
 * ownership for the CAS).  Why it is safe: the word never recurs, so a CAS
 * that expects the guess succeeds only if the word stayed the guess since
 * this caller installed it; a seal or resume that came before that install
 * stored its lowered reserved before its own CAS, which came before ours
 * (a full barrier), and "reserved" is read after it, as after a load.  A
 * guess that gives anything but Issued is never acted on: the word is
 * loaded and the step computed again.
 */
struct StateGuess
{
	uint64_t	word;
	bool		valid;			/* word is what this caller's last CAS installed */
};

template <typename Ops>
SF_ALWAYS_INLINE AtomicStep
atomic_issue(Ops &ops, const Layout &l, int64_t shard, int64_t max_lead_ms,
			 int64_t max_count, int64_t *now_out, int64_t start_sequence = 0,
			 StateGuess *guess = nullptr) noexcept
{
	uint64_t	clock_word = ops.load_clock();
	int64_t		now = ops.now();
	int64_t		stepped_back = 0;
	ClockObservation seen = observe_clock(clock_word, now);

	if (seen.changed && ops.cas_clock(clock_word, seen.word))
		stepped_back = seen.stepped_back;
	*now_out = now;

	/*
	 * The state word last, just before its CAS: the fewer instructions
	 * between the load and the CAS, the less often another backend's CAS
	 * comes in between on a shared shard.
	 */
	bool		guessed = guess != nullptr && guess->valid;
	uint64_t	word = guessed ? guess->word : ops.load_state();
	int64_t		reserved = ops.load_reserved();

	for (;;)
	{
		AtomicStep	s = advance_word(l, shard, word, now, max_lead_ms, reserved, max_count,
									 start_sequence);

		s.step.stepped_back = stepped_back;
		if (s.step.outcome == Outcome::Issued)
		{
			if (ops.cas_state(word, s.word))
			{
				if (guess != nullptr)
					*guess = StateGuess{s.word, true};
				return s;
			}
			/* word is the current state now; reserved must be read after it */
		}
		else if (!guessed)
			return s;
		else
			word = ops.load_state();	/* decide only on a word read */
		guessed = false;
		reserved = ops.load_reserved();
	}
}

/*
 * Lowers a slot's reserved offset to the last timestamp used while calls may
 * still be issuing (the registry's release of a shard): stores the lower
 * reserved, then installs seal_word() with a CAS (a full barrier), retrying
 * if the word moved.  Any call whose CAS succeeds after the seal read the
 * state word at or after it, so it reads the lowered reserved (or a later,
 * durable raise) and stays below it; any call that read the word before
 * the seal fails its CAS (the word never recurs).  The caller must keep
 * every other writer of reserved out (the glue holds the slot's lock, which
 * every raise takes).
 *
 * Returns the slot's reserved offset afterwards: at least every timestamp
 * issued or issuable without a new reservation, at most "reserved" before.
 */
template <typename Ops>
int64_t
atomic_seal(Ops &ops, const Layout &l) noexcept
{
	int64_t		reserved = ops.load_reserved();
	uint64_t	word = ops.load_state();

	for (;;)
	{
		uint64_t	sealed = seal_word(l, word);
		int64_t		lowered = word_offset(l, sealed);

		if (sealed == word || lowered >= reserved)
		{
			ops.store_reserved(reserved);	/* undo an earlier round's lowering */
			return reserved;
		}
		ops.store_reserved(lowered);
		if (ops.cas_state(word, sealed))
			return lowered;
	}
}

}								/* namespace snowflake */

#endif							/* SNOWFLAKE_ATOMICGEN_HPP */
