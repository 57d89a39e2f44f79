/*-------------------------------------------------------------------------
 *
 * generator.cpp
 *		The generator's state machine (see generator.hpp).
 *
 *-------------------------------------------------------------------------
 */
#include "core/generator.hpp"

namespace snowflake
{

void
reset_counters(GeneratorState &st) noexcept
{
	st.issued = 0;
	st.sequence_exhausted = 0;
	st.clock_steps_back = 0;
	st.largest_step_back = 0;
	st.last_step_back = 0;
	st.last_step_back_at = 0;
}

void
resume_above(GeneratorState &st, const Layout &l, int64_t mark_offset) noexcept
{
	if (mark_offset > st.last_offset)
	{
		st.last_offset = mark_offset;
		st.last_sequence = l.max_sequence();
	}
}

Step
next_run(GeneratorState &st, const Layout &l, int64_t shard, int64_t now,
		 int64_t max_lead_ms, int64_t reserved_offset, int64_t max_count,
		 int64_t start_sequence) noexcept
{
	int64_t		ts;
	int64_t		seq;
	bool		exhausted = false;
	Step		step = {Outcome::Issued, 0, 0, 0, 0, 0, 0};

	if (st.last_clock != INT64_MIN && now < st.last_clock)
	{
		step.stepped_back = st.last_clock - now;
		st.clock_steps_back++;
		if (step.stepped_back > st.largest_step_back)
			st.largest_step_back = step.stepped_back;
		st.last_step_back = step.stepped_back;
		st.last_step_back_at = now;
	}
	st.last_clock = now;

	if (now > st.last_offset)
	{
		/* the clock moved on: a new millisecond, at the drawn start */
		ts = now;
		seq = (start_sequence > 0 && start_sequence <= l.max_sequence()) ? start_sequence : 0;
	}
	else
	{
		step.behind = st.last_offset - now;
		if (st.last_sequence < l.max_sequence())
		{
			ts = st.last_offset;
			seq = st.last_sequence + 1;
		}
		else
		{
			ts = st.last_offset + 1;
			seq = 0;
			exhausted = true;
		}
	}

	if (ts < 0)
	{
		step.outcome = Outcome::ClockBeforeEpoch;
		return step;
	}
	if (ts > l.max_offset())
	{
		step.outcome = Outcome::Exhausted;
		return step;
	}
	if (ts - now > max_lead_ms)
	{
		step.outcome = Outcome::Wait;
		step.wait_until = ts - max_lead_ms;
		return step;
	}
	if (ts > reserved_offset)
	{
		step.outcome = Outcome::NeedReservation;
		step.wanted = ts;
		return step;
	}

	int64_t		count = l.max_sequence() - seq + 1;

	if (max_count < count)
		count = max_count < 1 ? 1 : max_count;
	st.last_offset = ts;
	st.last_sequence = seq + count - 1;
	st.issued += (uint64_t) count;
	st.sequence_exhausted += exhausted;
	step.id = encode(l, ts, shard, seq);
	step.count = count;
	return step;
}

Step
next_id(GeneratorState &st, const Layout &l, int64_t shard, int64_t now,
		int64_t max_lead_ms, int64_t reserved_offset, int64_t start_sequence) noexcept
{
	return next_run(st, l, shard, now, max_lead_ms, reserved_offset, 1, start_sequence);
}

Step
next_import(GeneratorState &st, const Layout &l, int64_t shard, int64_t at_offset,
			int64_t reserved_offset) noexcept
{
	Step		s = {Outcome::Issued, 0, 1, 0, 0, 0, 0};
	int64_t		sequence;

	if (at_offset < st.last_offset)
	{
		s.outcome = Outcome::TimeDecreased;
		s.behind = st.last_offset - at_offset;
		return s;
	}
	if (at_offset == st.last_offset)
	{
		if (st.last_sequence >= l.max_sequence())
		{
			s.outcome = Outcome::UnitFull;
			return s;
		}
		sequence = st.last_sequence + 1;
	}
	else
		sequence = 0;
	if (at_offset > reserved_offset)
	{
		s.outcome = Outcome::NeedReservation;
		s.wanted = at_offset;
		return s;
	}
	st.last_offset = at_offset;
	st.last_sequence = sequence;
	st.issued++;
	s.id = encode(l, at_offset, shard, sequence);
	return s;
}

}								/* namespace snowflake */
