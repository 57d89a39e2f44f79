/*-------------------------------------------------------------------------
 *
 * fastpath.cpp
 *		The PostgreSQL side of the lock-free generator (snowflake.generator
 *		= 'atomic'): atomicgen.hpp's loops run on a shard slot's
 *		pg_atomic_uint64 words (the step itself, inline, is in fastpath.hpp).
 *		The memory-ordering argument is in state.hpp.
 *
 *-------------------------------------------------------------------------
 */
#include "state/fastpath.hpp"

extern "C"
{
#include "postgres.h"
#include "storage/lwlock.h"
}

ShardSlot  *sf_guess_slot = NULL;
snowflake::StateGuess sf_guess = {0, false};

/* Sets up a slot's lock-free words from its (resumed) gen, on first use. */
void
sf_fastpath_init_slot(ShardSlot *slot)
{
	pg_atomic_init_u64(&slot->state,
					   snowflake::pack_state(sf_layout, slot->gen.last_offset,
											 slot->gen.last_sequence));
	pg_atomic_init_u64(&slot->clock, snowflake::kNoClock);
	pg_atomic_init_u64(&slot->reserved_offset, (uint64) (int64) -1);
	/* with a registry, nothing may be reserved before it publishes a mark */
	pg_atomic_init_u64(&slot->cap, (uint64) (sf_slot_caps ? (int64) -1 : PG_INT64_MAX));
	pg_atomic_init_u64(&slot->issued, 0);
	slot->issued_base = 0;
	pg_atomic_init_u64(&slot->sequence_exhausted, 0);
}

/* Counts a backward clock step in the slot's gen (sf_fastpath_step, rarely). */
void
sf_fastpath_note_step_back(ShardSlot *slot, int64 stepped_back, int64 reading)
{
	LWLockAcquire(slot->lock, LW_EXCLUSIVE);
	snowflake::note_step_back(slot->gen, stepped_back, reading);
	LWLockRelease(slot->lock);
}

/*
 * A consistent enough copy of a slot's state for snowflake_stats() and the
 * mark worker: gen under the lock, with the atomic generator's word and
 * counters in place of the fields it does not keep in gen.
 */
void
sf_slot_snapshot(ShardSlot *slot, snowflake::GeneratorState *gen, int64 *reserved,
				 TimestampTz *stats_reset)
{
	uint64		issued_base;

	LWLockAcquire(slot->lock, LW_SHARED);
	*gen = slot->gen;
	*reserved = sf_reserved(slot);
	if (stats_reset)
		*stats_reset = slot->stats_reset;
	issued_base = slot->issued_base;
	LWLockRelease(slot->lock);

	if (sf_generator == SF_GENERATOR_ATOMIC)
	{
		uint64		word = pg_atomic_read_u64(&slot->state);
		uint64		issued = sf_issued_total(slot);

		gen->last_offset = snowflake::word_offset(sf_layout, word);
		gen->last_sequence = snowflake::word_sequence(sf_layout, word);
		/* the sum only grows; the reset took it under the lock */
		gen->issued = issued > issued_base ? issued - issued_base : 0;
		gen->sequence_exhausted = pg_atomic_read_u64(&slot->sequence_exhausted);
	}
}

/*
 * The timestamp offset of a slot's last ID, and its sequence if asked for.
 * The lwlock generator's caller holds slot->lock or knows no call runs (the
 * settle at the postmaster's exit); the atomic generator's word needs no
 * lock.
 */
int64
sf_slot_last(ShardSlot *slot, int64 *sequence)
{
	if (sf_generator == SF_GENERATOR_ATOMIC)
	{
		uint64		word = pg_atomic_read_u64(&slot->state);

		if (sequence)
			*sequence = snowflake::word_sequence(sf_layout, word);
		return snowflake::word_offset(sf_layout, word);
	}
	if (sequence)
		*sequence = slot->gen.last_sequence;
	return slot->gen.last_offset;
}

/*
 * Resumes a slot strictly above "offset" and lowers its reserved_offset to
 * at most offset (a shard claimed from the registry, whose freshness mark is
 * offset).  Caller holds slot->lock exclusively, as every writer of
 * reserved_offset does.  The atomic generator lowers reserved_offset before
 * it raises the word with a CAS, so a call that read the old reserved_offset
 * fails its CAS (see atomic_seal).
 */
void
sf_slot_resume_above(ShardSlot *slot, int64 offset)
{
	if (sf_reserved(slot) > offset)
		sf_set_reserved(slot, offset);
	if (sf_generator == SF_GENERATOR_ATOMIC)
	{
		uint64		target = snowflake::pack_state(sf_layout, offset, sf_layout.max_sequence());
		uint64		word = pg_atomic_read_u64(&slot->state);

		while (offset >= 0 && word < target &&
			   !pg_atomic_compare_exchange_u64(&slot->state, &word, target))
			;
	}
	else
		snowflake::resume_above(slot->gen, sf_layout, offset);
}

/*
 * Moves a slot's position up to (offset, the last sequence) if it is lower,
 * without issuing an ID, so that its next ID lies at a later timestamp
 * (the commit watermark's idle shards, mark.cpp's sf_advance_shards).
 * Caller holds slot->lock exclusively and offset <= reserved_offset, so the
 * position stays under the durable mark; reserved_offset is left alone.
 * The atomic generator installs the word with a CAS (a full barrier) like
 * any step, so a call that read the older word fails its CAS and steps from
 * this one; the lwlock generator's calls hold the lock.
 */
void
sf_slot_advance(ShardSlot *slot, int64 offset)
{
	Assert(offset <= sf_reserved(slot));
	if (offset < 0)
		return;
	if (sf_generator == SF_GENERATOR_ATOMIC)
	{
		uint64		target = snowflake::pack_state(sf_layout, offset, sf_layout.max_sequence());
		uint64		word = pg_atomic_read_u64(&slot->state);

		while (word < target &&
			   !pg_atomic_compare_exchange_u64(&slot->state, &word, target))
			;
	}
	else
		snowflake::resume_above(slot->gen, sf_layout, offset);
}

/*
 * Lowers a slot's reserved_offset to the last timestamp issued while calls
 * may be running (the registry releasing a shard), and returns the new
 * reserved_offset: no call issues above it any more without a new
 * reservation.  Caller holds slot->lock exclusively.  The atomic generator
 * seals the state word (atomic_seal), so that the value can be one
 * millisecond above the last ID's.
 */
int64
sf_slot_seal(ShardSlot *slot)
{
	int64		last;

	if (sf_generator == SF_GENERATOR_ATOMIC)
	{
		SfSlotOps	ops = {slot};

		return snowflake::atomic_seal(ops, sf_layout);
	}
	last = slot->gen.last_offset;
	if (sf_reserved(slot) > last)
		sf_set_reserved(slot, last);
	return last;
}

/*
 * One import step (snowflake_nextval_at) on a slot of an import shard, with
 * either generator's representation of its position.  Caller holds
 * slot->lock exclusively; live calls never generate for an import shard, so
 * nothing else moves the state word meanwhile.
 */
snowflake::Step
sf_slot_import(ShardSlot *slot, int64 at_offset)
{
	snowflake::Step step;

	if (sf_generator == SF_GENERATOR_ATOMIC)
	{
		uint64		word = pg_atomic_read_u64(&slot->state);

		for (;;)
		{
			snowflake::GeneratorState st = snowflake::kFreshState;

			st.last_offset = snowflake::word_offset(sf_layout, word);
			st.last_sequence = snowflake::word_sequence(sf_layout, word);
			step = snowflake::next_import(st, sf_layout, slot->shard_id, at_offset,
										  sf_reserved(slot));
			if (step.outcome != snowflake::Outcome::Issued)
				return step;
			/* a full barrier, as every install of the word; a failure reloads word */
			if (pg_atomic_compare_exchange_u64(&slot->state, &word,
											   snowflake::pack_state(sf_layout, st.last_offset,
																	 st.last_sequence)))
				break;
		}
		sf_count_issued(slot, 1);
		return step;
	}
	return snowflake::next_import(slot->gen, sf_layout, slot->shard_id, at_offset,
								  sf_reserved(slot));
}
