/*-------------------------------------------------------------------------
 *
 * fastpath.hpp
 *		A shard slot's lock-free words: the step of snowflake.generator =
 *		'atomic', and what reads or moves a slot's position for either
 *		generator (see fastpath.cpp).
 *
 * In the state layer, under shmem.cpp: it may call the core (atomicgen.hpp)
 * and the settings.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_FASTPATH_HPP
#define SNOWFLAKE_FASTPATH_HPP

#include "core/atomicgen.hpp"
#include "settings/seqstart.hpp"
#include "state/counters.hpp"
#include "state/state.hpp"

extern "C"
{
#include "datatype/timestamp.h"
#include "port/atomics.h"
}

void		sf_fastpath_init_slot(ShardSlot *slot);
void		sf_fastpath_note_step_back(ShardSlot *slot, int64 stepped_back, int64 reading);
void		sf_slot_snapshot(ShardSlot *slot, snowflake::GeneratorState *gen,
							 int64 *reserved, TimestampTz *stats_reset);
int64		sf_slot_last(ShardSlot *slot, int64 *sequence);
void		sf_slot_resume_above(ShardSlot *slot, int64 offset);
void		sf_slot_advance(ShardSlot *slot, int64 offset);
int64		sf_slot_seal(ShardSlot *slot);
snowflake::Step sf_slot_import(ShardSlot *slot, int64 at_offset);

/* atomicgen.hpp's operations on one slot, with PostgreSQL's atomics. */
struct SfSlotOps
{
	ShardSlot  *slot;

	uint64_t	load_clock() noexcept
	{
		return pg_atomic_read_u64(&slot->clock);
	}
	uint64_t	load_state() noexcept
	{
		uint64		word = pg_atomic_read_u64(&slot->state);

		/* reserved is read after the word (see atomic_seal) */
		pg_read_barrier();
		return word;
	}
	int64_t		load_reserved() noexcept
	{
		return sf_reserved(slot);
	}
	void		store_reserved(int64_t offset) noexcept
	{
		sf_set_reserved(slot, offset);
	}
	int64_t		now() noexcept
	{
		return sf_now_offset();
	}
	bool		cas_clock(uint64_t &expected, uint64_t desired) noexcept
	{
		return pg_atomic_compare_exchange_u64(&slot->clock, &expected, desired);
	}
	bool		cas_state(uint64_t &expected, uint64_t desired) noexcept
	{
		return pg_atomic_compare_exchange_u64(&slot->state, &expected, desired);
	}
};

/*
 * This backend's guess of a slot's state word (atomicgen.hpp's StateGuess):
 * the word its last successful step on sf_guess_slot installed.
 */
extern ShardSlot *sf_guess_slot;
extern snowflake::StateGuess sf_guess;

/*
 * One lock-free step: issues a run of up to max_count IDs into *step, or
 * says why not (Wait, NeedReservation and the refusals are handled by the
 * caller, as for the LWLock generator).  A millisecond the clock opens starts
 * at start_sequence (snowflake.sequence_start: sf_start_sequence(), drawn
 * again after a step that may have used it).  Takes the slot's lock only
 * to count a backward clock step.  Inline: it is most of a call, and inlined
 * into the caller its Step stays in registers.
 *
 * Returns true for the common case, a run issued with nothing to report
 * (no backward clock step): then step->outcome is Issued, step->stepped_back
 * 0, and step->id and step->count the run; the other fields are left as they
 * were.  Otherwise the whole step is copied out and false returned.  (Copying
 * the whole Step on every call made GCC 16 store it in pieces and reload it
 * in 16-byte halves, a store-forwarding stall per call; the four fields are
 * plain stores, and a caller that reads only id and count lets the compiler
 * drop the other two.)
 */
static pg_attribute_always_inline bool
sf_fastpath_step(ShardSlot *slot, int64 max_count, int64 *now, snowflake::Step *step,
				 int64 start_sequence)
{
	SfSlotOps	ops = {slot};
	int64_t		reading;

	if (unlikely(slot != sf_guess_slot))
	{
		sf_guess_slot = slot;
		sf_guess.valid = false;
	}

	snowflake::AtomicStep s = snowflake::atomic_issue(ops, sf_layout, slot->shard_id,
													  sf_lead_units(), max_count, &reading,
													  start_sequence, &sf_guess);

	*now = reading;
	if (unlikely(s.drew))
		sf_start_sequence_used();	/* the next unit opened gets a new draw */
	if (likely(s.step.outcome == snowflake::Outcome::Issued))
	{
		sf_count_issued(slot, (uint64) s.step.count);	/* no locked add (counters.cpp) */
		if (unlikely(s.exhausted))
			pg_atomic_fetch_add_u64(&slot->sequence_exhausted, 1);
		if (likely(s.step.stepped_back == 0))
		{
			step->outcome = snowflake::Outcome::Issued;
			step->stepped_back = 0;
			step->id = s.step.id;
			step->count = s.step.count;
			return true;
		}
	}
	if (unlikely(s.step.stepped_back > 0))
		sf_fastpath_note_step_back(slot, s.step.stepped_back, reading);
	*step = s.step;
	return false;
}

#endif							/* SNOWFLAKE_FASTPATH_HPP */
