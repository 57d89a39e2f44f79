/*-------------------------------------------------------------------------
 *
 * generator_test.cpp
 *		GoogleTest unit tests of src/core/generator.*: the state machine that
 *		issues IDs (next_id(), next_run(), resume_above(), reset_counters(),
 *		the random start sequence), driven by an injected clock.  The
 *		lock-free step (atomicgen.*) has its own atomicgen_test.cpp.
 *
 * Built into test/unit/core_test and run by "make unitcheck".  Expected
 * values are derived from the layout arithmetic, from timegm() or from
 * well-known constants, never copied from a run.
 *
 * Suites:
 *	 GeneratorTest       next_id() with an injected clock
 *	 GeneratorRandomTest randomized clock walks over next_id()
 *	 GeneratorMarkTest   no ID beyond the durable mark; resume_above()
 *	 GeneratorStepTest   backward-step detection and counters
 *	 GeneratorRunTest    runs (batches): next_run()
 *	 SequenceStartTest   the random start of each new millisecond
 *
 *-------------------------------------------------------------------------
 */
#include "core/generator.hpp"
#include "core/layout.hpp"
#include "unit_helpers.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <vector>

using snowflake::Decoded;
using snowflake::GeneratorState;
using snowflake::Layout;
using snowflake::Outcome;
using snowflake::Step;
using namespace snowflake_unit;

namespace
{

void
ExpectSameState(const GeneratorState &a, const GeneratorState &b)
{
	EXPECT_EQ(a.last_offset, b.last_offset);
	EXPECT_EQ(a.last_sequence, b.last_sequence);
}

/* A valid shard ID of the layout: k reduced modulo the number of shards. */
int64_t
ShardFor(const Layout &l, int64_t k)
{
	return k % (l.max_shard_id() + 1);
}

/* Offset (ms since the layout epoch) of an ID's timestamp. */
int64_t
OffsetOf(const Layout &l, int64_t id)
{
	return snowflake::decode(l, id).unix_ms - l.epoch_ms;
}

}								/* namespace */

/*===========================================================================
 * GeneratorTest: next_id() driven by an injected clock.
 *===========================================================================*/

namespace
{

/* A generator with its layout, shard and lead; "now" is the injected clock. */
struct Gen
{
	Layout		layout;
	int64_t		shard;
	int64_t		lead;
	GeneratorState state = snowflake::kFreshState;

	Step		step(int64_t now)
	{
		return snowflake::next_id(state, layout, shard, now, lead);
	}
};

/* Issues one ID at "now" and checks the invariants every issued ID obeys. */
::testing::AssertionResult
IssueOne(Gen &g, int64_t now, int64_t *id)
{
	const GeneratorState before = g.state;
	const Step	s = g.step(now);

	if (s.outcome != Outcome::Issued)
		return ::testing::AssertionFailure() << "not issued at now=" << now
			<< " outcome=" << (int) s.outcome << " wait_until=" << s.wait_until;
	const Decoded d = snowflake::decode(g.layout, s.id);
	const int64_t ts = d.unix_ms - g.layout.epoch_ms;

	if (s.id < 0)
		return ::testing::AssertionFailure() << "negative id " << s.id;
	if (d.shard != g.shard)
		return ::testing::AssertionFailure() << "shard " << d.shard << " != " << g.shard;
	if (g.state.last_offset != ts || g.state.last_sequence != d.sequence)
		return ::testing::AssertionFailure() << "state does not match the ID";
	if (ts < now || ts - now > g.lead)
		return ::testing::AssertionFailure() << "timestamp " << ts << " outside [now, now+lead]"
			<< " now=" << now << " lead=" << g.lead;
	if (before.last_offset >= 0 &&
		s.id <= snowflake::encode(g.layout, before.last_offset, g.shard, before.last_sequence))
		return ::testing::AssertionFailure() << "ID did not increase";
	const int64_t behind = before.last_offset >= now ? before.last_offset - now : 0;

	if (s.behind != behind)
		return ::testing::AssertionFailure() << "behind " << s.behind << " != " << behind;
	*id = s.id;
	return ::testing::AssertionSuccess();
}

}								/* namespace */

TEST(GeneratorTest, FreshStateAdvancingClock)
{
	for (const Layout &l : {DefaultLayout(), Layout{kDefaultEpoch, 0, 1},
							Layout{kDefaultEpoch, 20, 5}})
	{
		for (int64_t lead : {0, 1, 1000})
		{
			SCOPED_TRACE(testing::Message() << "shard_bits=" << l.shard_bits
						 << " sequence_bits=" << l.sequence_bits << " lead=" << lead);
			Gen			g{l, l.max_shard_id() / 3 * 2, lead};
			std::mt19937_64 rng(5);
			int64_t		prev = -1;
			int64_t		now = 0;

			for (int i = 0; i < 5000; i++)
			{
				const Step	s = g.step(now);

				ASSERT_EQ(s.outcome, Outcome::Issued);
				ASSERT_GT(s.id, prev);
				ASSERT_EQ(s.behind, 0);
				const Decoded d = snowflake::decode(l, s.id);

				ASSERT_EQ(d.unix_ms, l.epoch_ms + now);
				ASSERT_EQ(d.unix_ms - l.epoch_ms, OffsetOf(l, s.id));
				ASSERT_EQ(d.shard, g.shard);
				ASSERT_EQ(d.sequence, 0);
				ASSERT_EQ(g.state.last_offset, now);
				ASSERT_EQ(g.state.last_sequence, 0);
				prev = s.id;
				now += 1 + (int64_t) (rng() % 5);
			}
		}
	}
}

TEST(GeneratorTest, FirstIdAtEpochAndLargeClock)
{
	const Layout l = DefaultLayout();
	Gen			g{l, 3, 0};
	int64_t		id;

	ASSERT_TRUE(IssueOne(g, 0, &id));
	EXPECT_EQ(id, snowflake::encode(l, 0, 3, 0));
	EXPECT_EQ(snowflake::decode(l, id).unix_ms, l.epoch_ms);

	/* A realistic clock: 2025-06-01 on the default epoch. */
	Gen			h{l, l.max_shard_id(), 0};
	const int64_t now = UtcMs(2025, 6, 1) - l.epoch_ms;

	ASSERT_TRUE(IssueOne(h, now, &id));
	EXPECT_EQ(snowflake::decode(l, id).unix_ms, UtcMs(2025, 6, 1));
	EXPECT_EQ(snowflake::decode(l, id).shard, l.max_shard_id());
}

TEST(GeneratorTest, SameMillisecondCountsSequenceThenWaits)
{
	for (const Layout &l : {DefaultLayout(), Layout{kDefaultEpoch, 0, 1},
							Layout{kDefaultEpoch, 4, 4}})
	{
		SCOPED_TRACE(testing::Message() << "sequence_bits=" << l.sequence_bits);
		Gen			g{l, ShardFor(l, 1), 0};
		const int64_t now = 100;
		int64_t		prev = -1;

		for (int64_t seq = 0; seq <= l.max_sequence(); seq++)
		{
			const Step	s = g.step(now);

			ASSERT_EQ(s.outcome, Outcome::Issued);
			ASSERT_GT(s.id, prev);
			const Decoded d = snowflake::decode(l, s.id);

			ASSERT_EQ(d.unix_ms, l.epoch_ms + now);
			ASSERT_EQ(d.sequence, seq);
			ASSERT_EQ(d.shard, g.shard);
			ASSERT_EQ(s.behind, 0);
			prev = s.id;
		}

		/* Sequence used up, lead 0: wait for the next millisecond, state untouched. */
		const GeneratorState before = g.state;
		const Step	w = g.step(now);

		EXPECT_EQ(w.outcome, Outcome::Wait);
		EXPECT_EQ(w.wait_until, now + 1);
		EXPECT_EQ(w.behind, 0);
		ExpectSameState(g.state, before);
		/* Asking again changes nothing either. */
		EXPECT_EQ(g.step(now).outcome, Outcome::Wait);
		ExpectSameState(g.state, before);

		/* With a lead of 1 ms the same call borrows the next millisecond. */
		Gen			borrow = g;

		borrow.lead = 1;
		const Step	b = borrow.step(now);

		ASSERT_EQ(b.outcome, Outcome::Issued);
		EXPECT_GT(b.id, prev);
		EXPECT_EQ(snowflake::decode(l, b.id).unix_ms, l.epoch_ms + now + 1);
		EXPECT_EQ(snowflake::decode(l, b.id).sequence, 0);

		/* Lead 0 again, the clock reaches wait_until: issuing resumes at seq 0. */
		const Step	r = g.step(w.wait_until);

		ASSERT_EQ(r.outcome, Outcome::Issued);
		EXPECT_GT(r.id, prev);
		EXPECT_EQ(snowflake::decode(l, r.id).unix_ms, l.epoch_ms + now + 1);
		EXPECT_EQ(snowflake::decode(l, r.id).sequence, 0);
	}
}

TEST(GeneratorTest, BurstInFrozenMillisecondWithinLead)
{
	for (const Layout &l : {Layout{kDefaultEpoch, 10, 12}, Layout{kDefaultEpoch, 0, 1},
							Layout{kDefaultEpoch, 6, 6}})
	{
		SCOPED_TRACE(testing::Message() << "sequence_bits=" << l.sequence_bits);
		const int64_t space = l.max_sequence() + 1;
		const int64_t now = 5000;

		/* Lead large enough for ten sequence spaces. */
		for (int64_t lead : {9, 10, 50})
		{
			SCOPED_TRACE(testing::Message() << "lead=" << lead);
			Gen			g{l, ShardFor(l, 2), lead};
			std::set<int64_t> seen;
			int64_t		prev = -1;
			int64_t		max_ts = -1;

			for (int64_t i = 0; i < 10 * space; i++)
			{
				int64_t		id;

				ASSERT_TRUE(IssueOne(g, now, &id)) << "i=" << i;
				ASSERT_GT(id, prev);
				ASSERT_TRUE(seen.insert(id).second);
				const int64_t ts = OffsetOf(l, id);

				ASSERT_LE(ts - now, lead);
				/* Dense: the i-th ID is sequence i % space of ms now + i / space. */
				ASSERT_EQ(ts, now + i / space);
				ASSERT_EQ(snowflake::decode(l, id).sequence, i % space);
				max_ts = std::max(max_ts, ts);
				prev = id;
			}
			EXPECT_EQ(seen.size(), (size_t) (10 * space));
			EXPECT_EQ(max_ts, now + 9);
		}
	}
}

TEST(GeneratorTest, BurstStopsExactlyWhenLeadIsUsedUp)
{
	for (const Layout &l : {Layout{kDefaultEpoch, 10, 12}, Layout{kDefaultEpoch, 0, 1},
							Layout{kDefaultEpoch, 6, 6}})
	{
		for (int64_t lead : {0, 1, 3, 7})
		{
			SCOPED_TRACE(testing::Message() << "sequence_bits=" << l.sequence_bits
						 << " lead=" << lead);
			Gen			g{l, 0, lead};
			const int64_t now = 777;
			int64_t		issued = 0;
			int64_t		prev = -1;
			Step		s;

			for (;;)
			{
				s = g.step(now);
				if (s.outcome != Outcome::Issued)
					break;
				ASSERT_GT(s.id, prev);
				ASSERT_LE(OffsetOf(l, s.id) - now, lead);
				prev = s.id;
				issued++;
				ASSERT_LE(issued, 10 * (l.max_sequence() + 1) * (lead + 1));
			}
			EXPECT_EQ(issued, (lead + 1) * (INT64_C(1) << l.sequence_bits));
			ASSERT_EQ(s.outcome, Outcome::Wait);
			/* The next ID would be ms now + lead + 1: allowed once the clock reads now + 1. */
			EXPECT_EQ(s.wait_until, now + 1);
			EXPECT_EQ(g.state.last_offset, now + lead);
			EXPECT_EQ(g.state.last_sequence, l.max_sequence());

			/* One ms before wait_until still waits; at wait_until one ID is issued. */
			if (lead > 0)
			{
				EXPECT_EQ(g.step(s.wait_until - 1).outcome, Outcome::Wait);
			}
			int64_t		id;

			ASSERT_TRUE(IssueOne(g, s.wait_until, &id));
			EXPECT_GT(id, prev);
			EXPECT_EQ(OffsetOf(l, id), now + lead + 1);
			EXPECT_EQ(snowflake::decode(l, id).sequence, 0);
		}
	}
}

TEST(GeneratorTest, ClockStepsBackWithinAndBeyondLead)
{
	for (const Layout &l : {DefaultLayout(), Layout{kDefaultEpoch, 0, 1},
							Layout{kDefaultEpoch, 4, 4}})
	{
		for (int64_t lead : {1, 10, 1000})
		{
			/* Step back by 1, exactly the lead, lead + 1, and much more. */
			for (int64_t back : {INT64_C(1), lead, lead + 1, 3 * lead + 17})
			{
				SCOPED_TRACE(testing::Message() << "sequence_bits=" << l.sequence_bits
							 << " lead=" << lead << " back=" << back);
				Gen			g{l, ShardFor(l, 5), lead};
				const int64_t t0 = 100000;
				int64_t		prev;

				ASSERT_TRUE(IssueOne(g, t0, &prev));
				ASSERT_EQ(OffsetOf(l, prev), t0);

				const int64_t now = t0 - back;
				const GeneratorState before = g.state;
				const Step	s = g.step(now);

				EXPECT_EQ(s.behind, back);
				if (back <= lead)
				{
					/* Within the lead: IDs continue after the last one. */
					ASSERT_EQ(s.outcome, Outcome::Issued);
					EXPECT_GT(s.id, prev);
					EXPECT_GE(OffsetOf(l, s.id), t0);
					EXPECT_LE(OffsetOf(l, s.id) - now, lead);
					/* The sequence of ms t0 was not used up: same ms, next sequence. */
					EXPECT_EQ(OffsetOf(l, s.id), t0);
					EXPECT_EQ(snowflake::decode(l, s.id).sequence, 1);
					prev = s.id;

					/* Keep issuing at the stale clock until the lead is used up. */
					Step		t;
					int64_t		n = 0;

					while ((t = g.step(now)).outcome == Outcome::Issued)
					{
						ASSERT_GT(t.id, prev);
						ASSERT_LE(OffsetOf(l, t.id) - now, lead);
						prev = t.id;
						n++;
						ASSERT_LT(n, (lead + 2) * (l.max_sequence() + 1));
					}
					ASSERT_EQ(t.outcome, Outcome::Wait);
					EXPECT_EQ(g.state.last_offset, now + lead);
					EXPECT_EQ(t.wait_until, now + 1);
				}
				else
				{
					/* Beyond the lead: wait, and nothing changes. */
					ASSERT_EQ(s.outcome, Outcome::Wait);
					ExpectSameState(g.state, before);
					EXPECT_EQ(s.wait_until, t0 - lead);
					EXPECT_GT(s.wait_until, now);
					/* Still too early one ms before wait_until. */
					const Step	early = g.step(s.wait_until - 1);

					EXPECT_EQ(early.outcome, Outcome::Wait);
					ExpectSameState(g.state, before);
				}

				/* Once the injected clock reaches wait_until (or moves on), IDs resume. */
				const int64_t resume = s.outcome == Outcome::Wait ? s.wait_until :
					g.state.last_offset - lead + 1;
				int64_t		id;

				if (s.outcome == Outcome::Wait)
				{
					ASSERT_TRUE(IssueOne(g, resume, &id));
					EXPECT_GT(id, prev);
					EXPECT_GE(OffsetOf(l, id), t0);
					prev = id;
				}
				/* And the clock catching up fully gives fresh milliseconds again. */
				const int64_t later = std::max(resume, g.state.last_offset) + 1;

				ASSERT_TRUE(IssueOne(g, later, &id));
				EXPECT_GT(id, prev);
				EXPECT_EQ(OffsetOf(l, id), later);
				EXPECT_EQ(snowflake::decode(l, id).sequence, 0);
			}
		}
	}
}

TEST(GeneratorTest, ClockBackWithSequenceUsedUp)
{
	/* The last ms is full: stepping back by exactly the lead must wait one ms more. */
	const Layout l{kDefaultEpoch, 0, 1};
	const int64_t lead = 5;
	Gen			g{l, 0, lead};
	const int64_t t0 = 1000;
	int64_t		id;

	ASSERT_TRUE(IssueOne(g, t0, &id));
	ASSERT_TRUE(IssueOne(g, t0, &id));
	ASSERT_EQ(g.state.last_sequence, l.max_sequence());

	const GeneratorState before = g.state;
	const Step	s = g.step(t0 - lead);

	ASSERT_EQ(s.outcome, Outcome::Wait);
	EXPECT_EQ(s.behind, lead);
	EXPECT_EQ(s.wait_until, t0 + 1 - lead);
	ExpectSameState(g.state, before);

	int64_t		next;

	ASSERT_TRUE(IssueOne(g, s.wait_until, &next));
	EXPECT_GT(next, id);
	EXPECT_EQ(OffsetOf(l, next), t0 + 1);
}

TEST(GeneratorTest, LeadZeroIsClassicGenerator)
{
	const Layout l = DefaultLayout();
	Gen			g{l, 9, 0};
	int64_t		prev;
	const int64_t t0 = 50000;

	ASSERT_TRUE(IssueOne(g, t0, &prev));

	for (int64_t back : {1, 2, 10, 1000, 50000})
	{
		SCOPED_TRACE(back);
		const GeneratorState before = g.state;
		const Step	s = g.step(g.state.last_offset - back);

		ASSERT_EQ(s.outcome, Outcome::Wait);
		EXPECT_EQ(s.wait_until, g.state.last_offset);
		EXPECT_EQ(s.behind, back);
		ExpectSameState(g.state, before);
	}

	/* The clock catches up to the last ms: the same ms continues its sequence. */
	int64_t		id;

	ASSERT_TRUE(IssueOne(g, t0, &id));
	EXPECT_GT(id, prev);
	EXPECT_EQ(OffsetOf(l, id), t0);
	EXPECT_EQ(snowflake::decode(l, id).sequence, 1);
	prev = id;

	/* Never ahead of the clock. */
	std::mt19937_64 rng(11);
	int64_t		now = t0;

	for (int i = 0; i < 100000; i++)
	{
		now += (int64_t) (rng() % 3) - 1;	/* -1, 0 or +1 */
		const Step	s = g.step(now);

		if (s.outcome == Outcome::Issued)
		{
			ASSERT_GT(s.id, prev);
			ASSERT_EQ(OffsetOf(l, s.id), now);
			prev = s.id;
		}
		else
		{
			ASSERT_EQ(s.outcome, Outcome::Wait);
			ASSERT_GT(s.wait_until, now);
		}
	}
}

TEST(GeneratorTest, BehindMsReportsHowFarTheClockReadBehind)
{
	const Layout l = DefaultLayout();
	Gen			g{l, 0, 100};
	int64_t		id;

	ASSERT_TRUE(IssueOne(g, 1000, &id));
	EXPECT_EQ(g.step(1001).behind, 0);	/* clock ahead */
	EXPECT_EQ(g.state.last_offset, 1001);
	EXPECT_EQ(g.step(1001).behind, 0);	/* same ms */
	EXPECT_EQ(g.step(1000).behind, 1);
	EXPECT_EQ(g.step(960).behind, 41);
	EXPECT_EQ(g.step(901).behind, 100);	/* exactly the lead: still issued */
	EXPECT_EQ(g.state.last_offset, 1001);

	const Step	w = g.step(500);			/* beyond the lead: reported too */

	EXPECT_EQ(w.outcome, Outcome::Wait);
	EXPECT_EQ(w.behind, 501);
	EXPECT_EQ(w.wait_until, 901);
}

TEST(GeneratorTest, ClockBeforeEpoch)
{
	const Layout l = DefaultLayout();

	for (int64_t lead : {0, 1, 1000, 1000000})
	{
		for (int64_t now : {-1, -2, -1000, -86400000})
		{
			SCOPED_TRACE(testing::Message() << "lead=" << lead << " now=" << now);
			Gen			g{l, 0, lead};
			const Step	s = g.step(now);

			EXPECT_EQ(s.outcome, Outcome::ClockBeforeEpoch);
			EXPECT_EQ(g.state.last_offset, snowflake::kFreshState.last_offset);
			EXPECT_EQ(g.state.last_sequence, snowflake::kFreshState.last_sequence);
		}
	}
	/* Offset 0 is the epoch itself and is fine. */
	Gen			g{l, 0, 0};
	int64_t		id;

	ASSERT_TRUE(IssueOne(g, 0, &id));
	EXPECT_EQ(snowflake::decode(l, id).unix_ms, l.epoch_ms);
}

TEST(GeneratorTest, ExhaustedAtEndOfLayout)
{
	for (const Layout &l : {DefaultLayout(), Layout{kDefaultEpoch, 13, 12},
							Layout{kDefaultEpoch, 0, 1}})
	{
		SCOPED_TRACE(testing::Message() << "timestamp_bits=" << l.timestamp_bits());
		const int64_t end = l.max_offset();

		/* The clock past the last representable millisecond. */
		for (int64_t lead : {0, 10})
		{
			Gen			g{l, 1, lead};

			EXPECT_EQ(g.step(end + 1).outcome, Outcome::Exhausted);
			EXPECT_EQ(g.step(end + 1000).outcome, Outcome::Exhausted);
			EXPECT_EQ(g.state.last_offset, -1);
		}

		/* The last millisecond itself works, up to its last sequence. */
		Gen			g{l, l.max_shard_id(), 10};
		int64_t		prev = -1;

		for (int64_t seq = 0; seq <= l.max_sequence(); seq++)
		{
			int64_t		id;

			ASSERT_TRUE(IssueOne(g, end, &id));
			ASSERT_GT(id, prev);
			ASSERT_EQ(snowflake::decode(l, id).unix_ms, l.last_unix_ms());
			prev = id;
		}
		EXPECT_EQ(prev, INT64_MAX);

		/* No next millisecond to borrow, whatever the lead or the clock. */
		const GeneratorState before = g.state;

		EXPECT_EQ(g.step(end).outcome, Outcome::Exhausted);
		EXPECT_EQ(g.step(end - 3).outcome, Outcome::Exhausted);
		EXPECT_EQ(g.step(end + 1).outcome, Outcome::Exhausted);
		ExpectSameState(g.state, before);
	}
}

TEST(GeneratorTest, ShardsNeverCollide)
{
	const Layout l{kDefaultEpoch, 2, 3};
	std::set<int64_t> all;
	std::mt19937_64 rng(3);
	Gen			gens[] = {{l, 0, 4}, {l, 1, 4}, {l, 2, 4}, {l, 3, 4}};
	int64_t		now = 10;
	size_t		issued = 0;

	for (int i = 0; i < 200000; i++)
	{
		now += (int64_t) (rng() % 4 == 0);
		Gen		   &g = gens[rng() % 4];
		const Step	s = g.step(now);

		if (s.outcome == Outcome::Issued)
		{
			ASSERT_EQ(snowflake::decode(l, s.id).shard, g.shard);
			ASSERT_TRUE(all.insert(s.id).second);
			issued++;
		}
	}
	EXPECT_EQ(all.size(), issued);
	EXPECT_GT(issued, (size_t) 1000);
}

/*===========================================================================
 * GeneratorRandomTest: random clock walks.
 *===========================================================================*/

namespace
{

struct WalkStats
{
	int64_t		issued = 0;
	int64_t		strict_increases = 0;
	int64_t		waits = 0;
	int64_t		borrowed = 0;		/* IDs whose timestamp is ahead of the clock */
	int64_t		backward_steps = 0;
};

void
RandomWalk(const Layout &l, int64_t lead, uint64_t seed, int steps, WalkStats *stats)
{
	std::mt19937_64 rng(seed);
	Gen			g{l, ShardFor(l, (int64_t) seed), lead};
	const int64_t max_back = std::max<int64_t>(2 * lead, 3);
	int64_t		now = 1000000;
	int64_t		prev_id = -1;
	int64_t		prev_ts = -1;
	int64_t		prev_seq = -1;

	for (int i = 0; i < steps; i++)
	{
		/*
		 * Move the injected clock: mostly forward, often frozen (bursts),
		 * sometimes backward by up to 2 x lead, now and then a jump forward.
		 */
		const unsigned r = (unsigned) (rng() % 100);

		if (r < 60)
			now += 1 + (int64_t) (rng() % 3);
		else if (r < 88)
			;					/* frozen */
		else if (r < 95)
		{
			now -= 1 + (int64_t) (rng() % (uint64_t) max_back);
			stats->backward_steps++;
		}
		else
			now += 1 + (int64_t) (rng() % (uint64_t) (4 * lead + 10));

		/* A small burst of calls at this clock reading. */
		const int	calls = 1 + (int) (rng() % 4);

		for (int c = 0; c < calls; c++)
		{
			const GeneratorState before = g.state;
			const Step	s = g.step(now);

			ASSERT_EQ(s.behind, before.last_offset >= now ? before.last_offset - now : 0)
				<< "step " << i;
			if (s.outcome == Outcome::Issued)
			{
				const Decoded d = snowflake::decode(l, s.id);
				const int64_t ts = d.unix_ms - l.epoch_ms;

				ASSERT_GE(s.id, 0);
				ASSERT_GT(s.id, prev_id) << "step " << i << " now=" << now;
				ASSERT_GE(ts, now);
				ASSERT_LE(ts - now, lead) << "step " << i;
				ASSERT_GE(ts, prev_ts);
				ASSERT_EQ(d.shard, g.shard);
				/* No sequence number is skipped: new ms start at 0, same ms count on. */
				if (ts == prev_ts)
					ASSERT_EQ(d.sequence, prev_seq + 1);
				else
					ASSERT_EQ(d.sequence, 0);
				ASSERT_EQ(g.state.last_offset, ts);
				ASSERT_EQ(g.state.last_sequence, d.sequence);
				if (s.id > prev_id)
					stats->strict_increases++;
				if (ts > now)
					stats->borrowed++;
				stats->issued++;
				prev_id = s.id;
				prev_ts = ts;
				prev_seq = d.sequence;
			}
			else
			{
				ASSERT_EQ(s.outcome, Outcome::Wait) << "step " << i;
				ASSERT_EQ(g.state.last_offset, before.last_offset);
				ASSERT_EQ(g.state.last_sequence, before.last_sequence);
				ASSERT_GT(s.wait_until, now);
				ASSERT_LE(s.wait_until, g.state.last_offset + 1);
				/* wait_until is exact: one ms earlier still waits, at it an ID comes. */
				GeneratorState probe = g.state;

				ASSERT_EQ(snowflake::next_id(probe, l, g.shard, s.wait_until - 1, lead).outcome,
						  Outcome::Wait);
				ASSERT_EQ(snowflake::next_id(probe, l, g.shard, s.wait_until, lead).outcome,
						  Outcome::Issued);
				stats->waits++;
				/* Half the time the caller sleeps until wait_until, as the glue does. */
				if (rng() & 1)
					now = s.wait_until;
				break;
			}
		}
	}
}

}								/* namespace */

TEST(GeneratorRandomTest, RandomClockWalkNeverDecreasesOrDuplicates)
{
	struct Config
	{
		Layout		layout;
		int64_t		lead;
	};
	const Config configs[] = {
		{{kDefaultEpoch, 10, 12}, 1000},
		{{kDefaultEpoch, 10, 12}, 0},
		{{kDefaultEpoch, 0, 1}, 5},
		{{kDefaultEpoch, 6, 2}, 0},
		{{kDefaultEpoch, 13, 3}, 20},
	};
	uint64_t	seed = 1;

	for (const Config &c : configs)
	{
		SCOPED_TRACE(testing::Message() << "shard_bits=" << c.layout.shard_bits
					 << " sequence_bits=" << c.layout.sequence_bits << " lead=" << c.lead);
		WalkStats	stats;

		RandomWalk(c.layout, c.lead, seed++, 1000000, &stats);
		if (HasFatalFailure())
			return;
		EXPECT_EQ(stats.strict_increases, stats.issued);
		EXPECT_GT(stats.issued, 1000000);
		EXPECT_GT(stats.backward_steps, 50000);
		/* Small sequence spaces exercise both borrowing (if allowed) and waiting. */
		if (c.layout.sequence_bits <= 3)
		{
			EXPECT_GT(stats.waits, 0);
			if (c.lead > 0)
			{
				EXPECT_GT(stats.borrowed, 0);
			}
		}
		if (c.lead == 0)
		{
			EXPECT_EQ(stats.borrowed, 0);
		}
		EXPECT_GT(stats.waits, 0);
	}
}

/*-------------------------------------------------------------------------
 * Durable mark, backward-step detection and counters of next_id()
 *-------------------------------------------------------------------------
 */

TEST(GeneratorMarkTest, NoIdBeyondTheReservedMark)
{
	const Layout l = DefaultLayout();
	GeneratorState st = snowflake::kFreshState;
	const int64_t now = 5000;

	/* nothing reserved yet: the first ID asks for a reservation, state unchanged */
	Step s = snowflake::next_id(st, l, 1, now, 1000, -1);
	ASSERT_EQ(s.outcome, Outcome::NeedReservation);
	EXPECT_EQ(s.wanted, now);
	EXPECT_EQ(st.last_offset, -1);
	EXPECT_EQ(st.issued, 0u);

	/* reserved up to now + 2: a burst fills 3 ms and then asks again */
	const int64_t reserved = now + 2;
	uint64_t	issued = 0;
	int64_t		prev = -1;

	for (;;)
	{
		s = snowflake::next_id(st, l, 1, now, 1000, reserved);
		if (s.outcome != Outcome::Issued)
			break;
		EXPECT_GT(s.id, prev);
		EXPECT_LE(snowflake::decode(l, s.id).unix_ms - l.epoch_ms, reserved);
		prev = s.id;
		issued++;
	}
	EXPECT_EQ(s.outcome, Outcome::NeedReservation);
	EXPECT_EQ(s.wanted, reserved + 1);
	EXPECT_EQ(issued, 3u * (uint64_t) (l.max_sequence() + 1));
	EXPECT_EQ(st.issued, issued);
	EXPECT_EQ(st.sequence_exhausted, 2u);

	/* once the mark moves, generation continues above everything issued */
	s = snowflake::next_id(st, l, 1, now, 1000, reserved + 1000);
	ASSERT_EQ(s.outcome, Outcome::Issued);
	EXPECT_GT(s.id, prev);
}

TEST(GeneratorMarkTest, LeadIsCheckedBeforeTheMark)
{
	const Layout l = DefaultLayout();
	GeneratorState st = snowflake::kFreshState;

	st.last_offset = 10000;
	st.last_sequence = l.max_sequence();
	/* beyond the lead: Wait, even though the mark does not cover it either */
	Step s = snowflake::next_id(st, l, 1, 8000, 1000, 9000);
	EXPECT_EQ(s.outcome, Outcome::Wait);
	EXPECT_EQ(s.wait_until, 10001 - 1000);
}

TEST(GeneratorMarkTest, ResumeAboveMarkAfterRestart)
{
	const Layout l = DefaultLayout();
	const int64_t mark = 20000;

	/* a restart: fresh state resumed above the mark; clock set back 3 s */
	for (int64_t lead : {0, 1000, 5000})
	{
		GeneratorState st = snowflake::kFreshState;

		snowflake::resume_above(st, l, mark);
		Step s = snowflake::next_id(st, l, 2, mark - 3000, lead, mark + 10000);
		if (lead < 3001)
		{
			ASSERT_EQ(s.outcome, Outcome::Wait) << "lead " << lead;
			EXPECT_EQ(s.wait_until, mark + 1 - lead);
			s = snowflake::next_id(st, l, 2, s.wait_until, lead, mark + 10000);
		}
		ASSERT_EQ(s.outcome, Outcome::Issued) << "lead " << lead;
		EXPECT_EQ(snowflake::decode(l, s.id).unix_ms - l.epoch_ms, mark + 1);
		EXPECT_EQ(snowflake::decode(l, s.id).sequence, 0);
		EXPECT_GT(s.id, snowflake::encode(l, mark, l.max_shard_id(), l.max_sequence()));
	}

	/* resuming never moves a state backwards */
	GeneratorState st = snowflake::kFreshState;

	st.last_offset = mark + 50;
	st.last_sequence = 7;
	snowflake::resume_above(st, l, mark);
	EXPECT_EQ(st.last_offset, mark + 50);
	EXPECT_EQ(st.last_sequence, 7);
}

TEST(GeneratorStepTest, BackwardStepsAreCountedOncePerStep)
{
	const Layout l = DefaultLayout();
	GeneratorState st = snowflake::kFreshState;

	ASSERT_EQ(snowflake::next_id(st, l, 1, 1000, 1000).outcome, Outcome::Issued);
	EXPECT_EQ(snowflake::next_id(st, l, 1, 1005, 1000).stepped_back, 0);

	/* one step back of 300 ms, then the clock runs forward again */
	Step s = snowflake::next_id(st, l, 1, 705, 1000);
	EXPECT_EQ(s.outcome, Outcome::Issued);
	EXPECT_EQ(s.stepped_back, 300);
	EXPECT_EQ(s.behind, 300);
	for (int64_t t = 705; t < 720; t++)
		EXPECT_EQ(snowflake::next_id(st, l, 1, t, 1000).stepped_back, 0);
	EXPECT_EQ(st.clock_steps_back, 1u);
	EXPECT_EQ(st.largest_step_back, 300);
	EXPECT_EQ(st.last_step_back, 300);
	EXPECT_EQ(st.last_step_back_at, 705);

	/* a second, larger step beyond the lead: seen on the Wait, not again on retries */
	/* (IDs are still at 1005: a reading of 0 is more than the lead behind) */
	s = snowflake::next_id(st, l, 1, 0, 1000);
	EXPECT_EQ(s.outcome, Outcome::Wait);
	EXPECT_EQ(s.stepped_back, 719);
	EXPECT_EQ(snowflake::next_id(st, l, 1, 0, 1000).stepped_back, 0);
	EXPECT_EQ(snowflake::next_id(st, l, 1, 1, 1000).stepped_back, 0);
	EXPECT_EQ(st.clock_steps_back, 2u);
	EXPECT_EQ(st.largest_step_back, 719);

	/* a smaller later step keeps the largest */
	(void) snowflake::next_id(st, l, 1, 10, 1000);
	(void) snowflake::next_id(st, l, 1, 0, 1000);
	EXPECT_EQ(st.largest_step_back, 719);
	EXPECT_EQ(st.last_step_back, 10);
}

TEST(GeneratorStepTest, ResetCountersKeepsTheGenerator)
{
	const Layout l = DefaultLayout();
	GeneratorState st = snowflake::kFreshState;

	for (int i = 0; i < 10000; i++)
		(void) snowflake::next_id(st, l, 1, 100, 1000);
	(void) snowflake::next_id(st, l, 1, 50, 1000);
	ASSERT_GT(st.issued, 0u);
	ASSERT_GT(st.sequence_exhausted, 0u);
	ASSERT_GT(st.clock_steps_back, 0u);

	const int64_t last_offset = st.last_offset;
	const int64_t last_sequence = st.last_sequence;

	snowflake::reset_counters(st);
	EXPECT_EQ(st.issued, 0u);
	EXPECT_EQ(st.sequence_exhausted, 0u);
	EXPECT_EQ(st.clock_steps_back, 0u);
	EXPECT_EQ(st.largest_step_back, 0);
	EXPECT_EQ(st.last_offset, last_offset);
	EXPECT_EQ(st.last_sequence, last_sequence);
}

/*-------------------------------------------------------------------------
 * Runs (batches): next_run()
 *-------------------------------------------------------------------------
 */

TEST(GeneratorRunTest, RunsEqualSingleSteps)
{
	const Layout l{snowflake::kDefaultEpochMs, 10, 6};	/* 64 per ms */
	std::mt19937_64 rng(7);

	for (int round = 0; round < 200; round++)
	{
		GeneratorState a = snowflake::kFreshState;
		GeneratorState b = snowflake::kFreshState;
		int64_t		now = 1000;

		for (int call = 0; call < 50; call++)
		{
			int64_t		want = 1 + (int64_t) (rng() % 150);

			now += (int64_t) (rng() % 3) - 1;	/* frozen, forward or back a ms */
			Step run = snowflake::next_run(a, l, 5, now, 3, snowflake::kNoReservation, want);

			if (run.outcome != Outcome::Issued)
			{
				EXPECT_EQ(snowflake::next_id(b, l, 5, now, 3).outcome, run.outcome);
				continue;
			}
			ASSERT_GE(run.count, 1);
			ASSERT_LE(run.count, want);
			/* a run never crosses a millisecond */
			EXPECT_EQ(snowflake::decode(l, run.id).unix_ms,
					  snowflake::decode(l, run.id + run.count - 1).unix_ms);
			for (int64_t k = 0; k < run.count; k++)
			{
				Step one = snowflake::next_id(b, l, 5, now, 3);

				ASSERT_EQ(one.outcome, Outcome::Issued);
				ASSERT_EQ(one.id, run.id + k);
			}
		}
		EXPECT_EQ(a.issued, b.issued);
		EXPECT_EQ(a.last_offset, b.last_offset);
		EXPECT_EQ(a.last_sequence, b.last_sequence);
	}
}

TEST(GeneratorRunTest, RunTakesTheRestOfTheMillisecond)
{
	const Layout l = DefaultLayout();
	GeneratorState st = snowflake::kFreshState;

	Step s = snowflake::next_run(st, l, 1, 100, 1000, snowflake::kNoReservation, 10);
	EXPECT_EQ(s.count, 10);
	s = snowflake::next_run(st, l, 1, 100, 1000, snowflake::kNoReservation, 100000);
	EXPECT_EQ(s.count, l.max_sequence() + 1 - 10);
	EXPECT_EQ(snowflake::decode(l, s.id).sequence, 10);
	s = snowflake::next_run(st, l, 1, 100, 1000, snowflake::kNoReservation, 100000);
	EXPECT_EQ(s.count, l.max_sequence() + 1);
	EXPECT_EQ(snowflake::decode(l, s.id).unix_ms - l.epoch_ms, 101);
	EXPECT_EQ(st.sequence_exhausted, 1u);
	/* a count below one still issues one ID */
	s = snowflake::next_run(st, l, 1, 200, 1000, snowflake::kNoReservation, 0);
	EXPECT_EQ(s.count, 1);
}

/*-------------------------------------------------------------------------
 * SequenceStartTest: the random start of each new millisecond
 *-------------------------------------------------------------------------
 */

TEST(SequenceStartTest, BoundIsASixteenthOfTheRange)
{
	EXPECT_EQ(snowflake::random_start_bound(DefaultLayout()), 256);
	EXPECT_EQ(snowflake::random_start_bound(Layout{kDefaultEpoch, 0, 24}), INT64_C(1) << 20);
	EXPECT_EQ(snowflake::random_start_bound(Layout{kDefaultEpoch, 10, 5}), 2);
	/* four sequence bits or fewer: no room to spare, always zero */
	for (int bits = 1; bits <= 4; bits++)
		EXPECT_EQ(snowflake::random_start_bound(Layout{kDefaultEpoch, 10, bits}), 1) << bits;
}

TEST(SequenceStartTest, DrawsStayBelowTheBoundAndCoverIt)
{
	for (int bits : {5, 8, 12, 16, 24})
	{
		const Layout l{kDefaultEpoch, 0, bits};
		const int64_t bound = snowflake::random_start_bound(l);
		snowflake::Xorshift64 rng{UINT64_C(0x1234567887654321)};
		std::vector<int64_t> hits((size_t) std::min<int64_t>(bound, 4096), 0);
		const int	draws = 200000;

		for (int i = 0; i < draws; i++)
		{
			int64_t		v = snowflake::draw_start_sequence(rng, l);

			ASSERT_GE(v, 0);
			ASSERT_LT(v, bound);
			if (bound <= 4096)
				hits[(size_t) v]++;
		}
		if (bound > 4096)
			continue;
		/* uniform: every value near draws / bound (at least half of it) */
		int64_t		lo = *std::min_element(hits.begin(), hits.end());
		int64_t		hi = *std::max_element(hits.begin(), hits.end());

		EXPECT_GE(lo, draws / bound / 2) << bits;
		EXPECT_LE(hi, draws / bound * 2) << bits;
	}
}

/* At low traffic (one call per millisecond) each ID starts its millisecond. */
TEST(SequenceStartTest, LowTrafficIdsTakeTheDrawnStart)
{
	const Layout l = DefaultLayout();
	GeneratorState st = snowflake::kFreshState;
	snowflake::Xorshift64 rng{42};
	std::set<int64_t> residues;
	int64_t		prev = -1;

	for (int64_t now = 1000; now < 3000; now++)
	{
		int64_t		start = snowflake::draw_start_sequence(rng, l);
		Step		s = snowflake::next_id(st, l, 7, now, 1000, snowflake::kNoReservation, start);

		ASSERT_EQ(s.outcome, Outcome::Issued);
		ASSERT_GT(s.id, prev);
		prev = s.id;
		Decoded		d = snowflake::decode(l, s.id);

		EXPECT_EQ(d.sequence, start);
		EXPECT_EQ(d.shard, 7);
		EXPECT_EQ(d.unix_ms - l.epoch_ms, now);
		residues.insert(s.id % 4096);
	}
	/* 2,000 draws from 256 values miss hardly any of them */
	EXPECT_GE(residues.size(), 250u);
	EXPECT_LE(residues.size(), 256u);
}

/* Zero start: the classic behaviour, every low-traffic ID a multiple of 4,096. */
TEST(SequenceStartTest, ZeroStartIsTheClassicGenerator)
{
	const Layout l = DefaultLayout();
	GeneratorState st = snowflake::kFreshState;

	for (int64_t now = 1000; now < 1100; now++)
	{
		Step		s = snowflake::next_id(st, l, 7, now, 1000, snowflake::kNoReservation, 0);

		ASSERT_EQ(s.outcome, Outcome::Issued);
		EXPECT_EQ(snowflake::decode(l, s.id).sequence, 0);
	}
}

/* A start outside the sequence range is ignored (zero), never trusted. */
TEST(SequenceStartTest, OutOfRangeStartIsIgnored)
{
	const Layout l = DefaultLayout();

	for (int64_t bad : {INT64_C(-1), l.max_sequence() + 1, INT64_MAX})
	{
		GeneratorState st = snowflake::kFreshState;
		Step		s = snowflake::next_id(st, l, 1, 100, 1000, snowflake::kNoReservation, bad);

		ASSERT_EQ(s.outcome, Outcome::Issued);
		EXPECT_EQ(snowflake::decode(l, s.id).sequence, 0) << bad;
	}
}

/*
 * Capacity: a millisecond the clock starts loses exactly its start; a
 * millisecond borrowed because the previous one ran out starts at zero, so a
 * saturated shard still issues 2^sequence_bits IDs per millisecond.
 */
TEST(SequenceStartTest, CapacityLossIsBoundedAndSaturationKeepsTheCeiling)
{
	const Layout l = DefaultLayout();
	GeneratorState st = snowflake::kFreshState;
	const int64_t start = 200;

	Step		s = snowflake::next_run(st, l, 1, 100, 1000, snowflake::kNoReservation,
										100000, start);

	ASSERT_EQ(s.outcome, Outcome::Issued);
	EXPECT_EQ(s.count, l.max_sequence() + 1 - start);
	EXPECT_EQ(snowflake::decode(l, s.id).sequence, start);
	/* the clock has not moved: the next run borrows ms 101, from zero, whatever the draw */
	s = snowflake::next_run(st, l, 1, 100, 1000, snowflake::kNoReservation, 100000, start);
	ASSERT_EQ(s.outcome, Outcome::Issued);
	EXPECT_EQ(snowflake::decode(l, s.id).unix_ms - l.epoch_ms, 101);
	EXPECT_EQ(snowflake::decode(l, s.id).sequence, 0);
	EXPECT_EQ(s.count, l.max_sequence() + 1);

	/*
	 * Sustained overload with a lead: the shard runs ahead by the lead and
	 * every later millisecond is borrowed, so only the first one loses its
	 * start and the ceiling binds exactly.  With max_clock_lead = 0 every
	 * millisecond is started by the clock and each loses its draw (1/32 of
	 * the range on average, 1/16 at most).
	 */
	for (int64_t lead : {INT64_C(10), INT64_C(0)})
	{
		GeneratorState sat = snowflake::kFreshState;
		snowflake::Xorshift64 rng{99};
		int64_t		issued_total = 0;
		int64_t		lost = 0;
		int64_t		prev = -1;

		for (int64_t now = 0; now < 1000; now++)
			for (;;)
			{
				int64_t		draw = snowflake::draw_start_sequence(rng, l);
				bool		fresh = now > sat.last_offset;
				Step		r = snowflake::next_run(sat, l, 1, now, lead, snowflake::kNoReservation,
													100000, draw);

				if (r.outcome == Outcome::Wait)
					break;
				ASSERT_EQ(r.outcome, Outcome::Issued);
				ASSERT_GT(r.id, prev);
				prev = r.id + r.count - 1;
				issued_total += r.count;
				if (fresh)
					lost += draw;
				EXPECT_EQ(snowflake::decode(l, r.id).sequence, fresh ? draw : 0);
			}
		/* the last millisecond issued is now + lead: 1,000 + lead in all */
		EXPECT_EQ(issued_total, (1000 + lead) * 4096 - lost) << lead;
		if (lead > 0)
			EXPECT_LT(lost, 256) << "only the first millisecond starts with the clock";
		else
		{
			EXPECT_GT(lost, 1000 * 256 / 2 / 2);	/* about 1/32 of 4,096 per ms */
			EXPECT_LT(lost, 1000 * 256 / 2 * 3 / 2);
		}
	}
}

/* Random starts keep every other guarantee: strictly increasing, bounded lead, runs. */
TEST(SequenceStartTest, RandomWalksStayStrictlyIncreasingWithBoundedLead)
{
	const Layout l{snowflake::kDefaultEpochMs, 10, 8};	/* 256 per ms, starts in [0, 16) */
	std::mt19937_64 walk(2026);

	for (int round = 0; round < 100; round++)
	{
		GeneratorState st = snowflake::kFreshState;
		snowflake::Xorshift64 rng{(uint64_t) round + 1};
		int64_t		now = 5000;
		int64_t		prev = -1;
		const int64_t lead = 5;

		for (int call = 0; call < 2000; call++)
		{
			int			r = (int) (walk() % 10);

			if (r < 4)
				now += 1;
			else if (r == 4)
				now -= (int64_t) (walk() % 4);	/* small backward steps */
			else if (r == 5)
				now += (int64_t) (walk() % 50);
			Step		s = snowflake::next_run(st, l, 3, now, lead, snowflake::kNoReservation,
											1 + (int64_t) (walk() % 300),
											snowflake::draw_start_sequence(rng, l));

			if (s.outcome == Outcome::Wait)
			{
				EXPECT_GT(s.wait_until, now);
				continue;
			}
			ASSERT_EQ(s.outcome, Outcome::Issued);
			ASSERT_GT(s.id, prev);
			prev = s.id + s.count - 1;
			Decoded		d = snowflake::decode(l, s.id);

			EXPECT_LE(d.unix_ms - l.epoch_ms - now, lead);
			EXPECT_EQ(snowflake::decode(l, prev).unix_ms, d.unix_ms);
		}
	}
}
