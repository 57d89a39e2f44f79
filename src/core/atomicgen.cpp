/*-------------------------------------------------------------------------
 *
 * atomicgen.cpp
 *		The pure steps of the lock-free generator (see atomicgen.hpp).
 *
 *-------------------------------------------------------------------------
 */
#include "core/atomicgen.hpp"

namespace snowflake
{

AtomicStep
advance_word_slow(const Layout &l, int64_t shard, uint64_t word, int64_t now,
				  int64_t max_lead_ms, int64_t reserved_offset, int64_t max_count,
				  int64_t start_sequence) noexcept
{
	GeneratorState st = kFreshState;
	AtomicStep	s;

	/* the general case: whatever next_run decides */
	st.last_offset = word_offset(l, word);
	st.last_sequence = word_sequence(l, word);
	/* no last_clock: backward steps are the clock word's business */
	s.step = next_run(st, l, shard, now, max_lead_ms, reserved_offset, max_count, start_sequence);
	s.word = pack_state(l, st.last_offset, st.last_sequence);
	s.exhausted = st.sequence_exhausted != 0;
	s.drew = true;				/* whatever next_run did: draw again */
	return s;
}

void
note_step_back(GeneratorState &st, int64_t stepped_back, int64_t now) noexcept
{
	st.clock_steps_back++;
	if (stepped_back > st.largest_step_back)
		st.largest_step_back = stepped_back;
	st.last_step_back = stepped_back;
	st.last_step_back_at = now;
}

uint64_t
seal_word(const Layout &l, uint64_t word) noexcept
{
	int64_t		offset = word_offset(l, word);

	if (word_sequence(l, word) < l.max_sequence())
		return pack_state(l, offset, l.max_sequence());
	if (offset >= l.max_offset())
		return word;
	return pack_state(l, offset + 1, l.max_sequence());
}

}								/* namespace snowflake */
