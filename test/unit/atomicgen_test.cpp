/*-------------------------------------------------------------------------
 *
 * atomicgen_test.cpp
 *		GoogleTest unit tests of the lock-free generator (src/atomicgen.*):
 *		the pure steps, and the very loops the PostgreSQL glue runs
 *		(atomic_issue, atomic_seal) on std::atomic words hammered by many
 *		std::threads with an injected clock.  Built and run under
 *		ThreadSanitizer (make tsancheck, part of make unitcheck).
 *
 * What the threaded tests check: every ID is unique; the installs form one
 * chain of strictly increasing words (so IDs increase in CAS order); each
 * thread's IDs increase; no ID carries a timestamp above the reserved
 * offset, also while a seal lowers it under running calls; batch
 * runs stay within one millisecond and never overlap; backward clock steps
 * are reported exactly once each, and never when the clock only moves
 * forward however the threads' readings interleave.
 *
 *-------------------------------------------------------------------------
 */
#include "core/atomicgen.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <vector>

using namespace snowflake;

namespace
{

constexpr Layout kLayout = {INT64_C(1704067200000), 10, 12};
constexpr int64_t kShard = 5;
constexpr int64_t kNoLimit = INT64_MAX / 2;
constexpr int64_t kBigLead = INT64_C(1) << 30;	/* the lead never binds */

/* The shared words of one slot, and the injected clock. */
struct World
{
	Layout		layout = kLayout;
	std::atomic<uint64_t> state{kFreshWord};
	std::atomic<uint64_t> clock{kNoClock};
	std::atomic<int64_t> reserved{kNoLimit};
	std::atomic<int64_t> wall{1000};
};

/* atomicgen.hpp's Ops on a World, as the glue does on a ShardSlot. */
struct TestOps
{
	World	   &w;
	unsigned	yield_mask = 0;		/* yield before some clock reads: widen windows */
	uint64_t	calls = 0;
	uint64_t	last_old = 0;		/* the last successful state CAS */
	uint64_t	last_new = 0;

	explicit TestOps(World &world) : w(world) {}

	uint64_t	load_clock() { return w.clock.load(std::memory_order_acquire); }
	uint64_t	load_state() { return w.state.load(std::memory_order_acquire); }
	int64_t		load_reserved() { return w.reserved.load(std::memory_order_relaxed); }
	void		store_reserved(int64_t v) { w.reserved.store(v, std::memory_order_relaxed); }
	int64_t		now()
	{
		if (yield_mask && (++calls & yield_mask) == 0)
			std::this_thread::yield();
		return w.wall.load(std::memory_order_acquire);
	}
	bool		cas_clock(uint64_t &expected, uint64_t desired)
	{
		return w.clock.compare_exchange_strong(expected, desired);
	}
	bool		cas_state(uint64_t &expected, uint64_t desired)
	{
		uint64_t	old = expected;
		bool		ok = w.state.compare_exchange_strong(expected, desired);

		if (ok)
		{
			last_old = old;
			last_new = desired;
		}
		return ok;
	}
};

/* One issued run, as a thread saw it. */
struct IdRun
{
	int64_t		id;
	int64_t		count;
	uint64_t	old_word;
	uint64_t	new_word;
};

/* Advances the injected clock by 1 ms every period until stopped. */
class Ticker
{
public:
	Ticker(World &w, std::chrono::microseconds period) : w_(w), period_(period)
	{
		thread_ = std::thread([this] {
			while (!stop_.load())
			{
				std::this_thread::sleep_for(period_);
				w_.wall.fetch_add(1);
			}
		});
	}
	~Ticker() { stop(); }
	void		stop()
	{
		stop_.store(true);
		if (thread_.joinable())
			thread_.join();
	}

private:
	World	   &w_;
	std::chrono::microseconds period_;
	std::atomic<bool> stop_{false};
	std::thread thread_;
};

/*
 * Checks what every threaded test relies on: IDs unique and of the shard,
 * each thread's increasing, runs inside one millisecond, and the successful
 * CASes forming one chain of strictly increasing words from "first" on.
 */
void
check_runs(const std::vector<std::vector<IdRun>> &per_thread, uint64_t first, uint64_t last)
{
	std::vector<IdRun> all;

	for (const auto &runs : per_thread)
	{
		for (size_t i = 0; i < runs.size(); i++)
		{
			const IdRun  &r = runs[i];
			Decoded		a = decode(kLayout, r.id);
			Decoded		b = decode(kLayout, r.id + r.count - 1);

			ASSERT_EQ(a.shard, kShard);
			ASSERT_EQ(a.unix_ms, b.unix_ms) << "a run crosses a millisecond";
			ASSERT_EQ(b.shard, kShard);
			ASSERT_LT(r.old_word, r.new_word);
			ASSERT_EQ(r.new_word, pack_state(kLayout, a.unix_ms - kLayout.epoch_ms,
											 b.sequence)) << "the word stands for the run's last ID";
			if (i > 0)
			{
				ASSERT_GT(r.id, runs[i - 1].id + runs[i - 1].count - 1)
					<< "a thread's IDs must increase";
			}
			all.push_back(r);
		}
	}
	std::sort(all.begin(), all.end(), [](const IdRun &a, const IdRun &b) { return a.id < b.id; });
	uint64_t	expect_old = first;

	for (size_t i = 0; i < all.size(); i++)
	{
		if (i > 0)
		{
			ASSERT_GT(all[i].id, all[i - 1].id + all[i - 1].count - 1) << "runs overlap";
		}
		/* in ID order, each CAS replaced exactly the word the previous one installed */
		ASSERT_EQ(all[i].old_word, expect_old) << "installs do not form one chain";
		expect_old = all[i].new_word;
	}
	ASSERT_EQ(expect_old, last) << "the final word is the last install";
}

}								/* namespace */

/*---- the pure steps ----*/

TEST(AtomicWordTest, PackOrdersLikeIds)
{
	std::mt19937_64 rng(7);

	EXPECT_EQ(pack_state(kLayout, -1, 0), kFreshWord);
	EXPECT_EQ(word_offset(kLayout, kFreshWord), -1);
	EXPECT_EQ(word_sequence(kLayout, kFreshWord), 0);
	for (int i = 0; i < 20000; i++)
	{
		int64_t		o1 = (int64_t) (rng() % (uint64_t) kLayout.max_offset());
		int64_t		s1 = (int64_t) (rng() % 4096);
		int64_t		o2 = (i & 1) ? o1 : (int64_t) (rng() % (uint64_t) kLayout.max_offset());
		int64_t		s2 = (int64_t) (rng() % 4096);
		uint64_t	w1 = pack_state(kLayout, o1, s1);
		uint64_t	w2 = pack_state(kLayout, o2, s2);

		ASSERT_EQ(word_offset(kLayout, w1), o1);
		ASSERT_EQ(word_sequence(kLayout, w1), s1);
		ASSERT_EQ(w1 < w2, encode(kLayout, o1, kShard, s1) < encode(kLayout, o2, kShard, s2));
	}
	/* the widest word: shard_bits 0, last millisecond, last sequence */
	Layout		wide = {kLayout.epoch_ms, 0, 12};
	uint64_t	w = pack_state(wide, wide.max_offset(), wide.max_sequence());

	EXPECT_EQ(word_offset(wide, w), wide.max_offset());
	EXPECT_EQ(word_sequence(wide, w), wide.max_sequence());
	EXPECT_GT(w, pack_state(wide, wide.max_offset() - 1, wide.max_sequence()));
}

/* advance_word is next_run on the unpacked state: same outcomes, same IDs. */
TEST(AtomicWordTest, AdvanceWordAgreesWithNextRun)
{
	std::mt19937_64 rng(11);
	Layout		narrow = {kLayout.epoch_ms, 3, 4};	/* 16 IDs per ms: exhaustion is common */
	GeneratorState st = kFreshState;
	uint64_t	word = kFreshWord;
	int64_t		clock = 500;
	int64_t		reserved = 400;
	int			issued = 0, waits = 0, reservations = 0;

	for (int i = 0; i < 200000; i++)
	{
		int			r = (int) (rng() % 100);

		if (r < 30)
			clock += 1;
		else if (r < 31)
			clock -= (int64_t) (rng() % 50);
		if (rng() % 1000 == 0)
			reserved += 50;
		int64_t		lead = (rng() % 10 == 0) ? 0 : 20;
		int64_t		max_count = (rng() % 4 == 0) ? (int64_t) (rng() % 40) + 1 : 1;
		uint64_t	exhausted_before = st.sequence_exhausted;
		Step		a = next_run(st, narrow, 3, clock, lead, reserved, max_count);
		AtomicStep	b = advance_word(narrow, 3, word, clock, lead, reserved, max_count);

		ASSERT_EQ(a.outcome, b.step.outcome);
		if (a.outcome == Outcome::Issued)
		{
			ASSERT_EQ(a.id, b.step.id);
			ASSERT_EQ(a.count, b.step.count);
			ASSERT_EQ(a.behind, b.step.behind);
			ASSERT_EQ(b.exhausted, st.sequence_exhausted != exhausted_before);
			word = b.word;
			issued++;
		}
		else if (a.outcome == Outcome::Wait)
		{
			ASSERT_EQ(a.wait_until, b.step.wait_until);
			waits++;
		}
		else if (a.outcome == Outcome::NeedReservation)
		{
			ASSERT_EQ(a.wanted, b.step.wanted);
			reservations++;
		}
		ASSERT_EQ(word, pack_state(narrow, st.last_offset, st.last_sequence));
	}
	EXPECT_GT(issued, 1000);
	EXPECT_GT(waits, 100);
	EXPECT_GT(reservations, 10);
}

TEST(AtomicWordTest, ObserveClock)
{
	ClockObservation o = observe_clock(kNoClock, 1000);

	EXPECT_TRUE(o.changed);
	EXPECT_EQ(o.stepped_back, 0) << "the first reading is no step";
	EXPECT_EQ(o.word & kClockMask, 1000u);
	uint64_t	w = o.word;

	o = observe_clock(w, 1000);
	EXPECT_FALSE(o.changed) << "the same millisecond changes nothing";
	o = observe_clock(w, 1005);
	EXPECT_TRUE(o.changed);
	EXPECT_EQ(o.stepped_back, 0);
	EXPECT_NE(o.word >> kClockBits, w >> kClockBits) << "each install bumps the tag";
	w = o.word;
	o = observe_clock(w, 705);
	EXPECT_TRUE(o.changed);
	EXPECT_EQ(o.stepped_back, 300);
	o = observe_clock(w, -5);
	EXPECT_FALSE(o.changed) << "readings before the epoch are not recorded";
	/* the tag wraps without touching the reading */
	uint64_t	top = (~UINT64_C(0) << kClockBits) | 77;

	o = observe_clock(top, 78);
	EXPECT_EQ(o.word, UINT64_C(78));
}

TEST(AtomicWordTest, SealWord)
{
	EXPECT_EQ(seal_word(kLayout, pack_state(kLayout, 100, 7)), pack_state(kLayout, 100, 4095));
	EXPECT_EQ(seal_word(kLayout, pack_state(kLayout, 100, 4095)), pack_state(kLayout, 101, 4095));
	EXPECT_EQ(seal_word(kLayout, kFreshWord), pack_state(kLayout, -1, 4095));
	uint64_t	end = pack_state(kLayout, kLayout.max_offset(), 4095);

	EXPECT_EQ(seal_word(kLayout, end), end) << "nothing follows the last word";
	for (uint64_t w : {kFreshWord, pack_state(kLayout, 5, 0), pack_state(kLayout, 5, 4095)})
		EXPECT_GT(seal_word(kLayout, w), w);
}

/*---- the loops, one thread ----*/

TEST(AtomicIssueTest, SingleThreadFollowsTheClock)
{
	World		w;
	TestOps		ops(w);
	int64_t		now = 0;
	int64_t		prev = -1;

	for (int i = 0; i < 10000; i++)
	{
		if (i % 1000 == 0)
			w.wall.fetch_add(1);
		AtomicStep	s = atomic_issue(ops, kLayout, kShard, 1000, 1, &now);

		ASSERT_EQ(s.step.outcome, Outcome::Issued);
		ASSERT_GT(s.step.id, prev);
		ASSERT_EQ(now, w.wall.load());
		ASSERT_EQ(s.step.stepped_back, 0);
		prev = s.step.id;
	}
	Decoded		d = decode(kLayout, prev);

	EXPECT_EQ(d.unix_ms - kLayout.epoch_ms, w.wall.load());
	EXPECT_EQ(d.sequence, 999);
}

TEST(AtomicIssueTest, ReservationAndRefusalsLeaveTheWordAlone)
{
	World		w;
	TestOps		ops(w);
	int64_t		now = 0;

	w.reserved.store(999);
	AtomicStep	s = atomic_issue(ops, kLayout, kShard, 1000, 1, &now);

	EXPECT_EQ(s.step.outcome, Outcome::NeedReservation);
	EXPECT_EQ(s.step.wanted, 1000);
	EXPECT_EQ(w.state.load(), kFreshWord);
	w.reserved.store(2000);
	w.wall.store(-3);
	s = atomic_issue(ops, kLayout, kShard, 1000, 1, &now);
	EXPECT_EQ(s.step.outcome, Outcome::ClockBeforeEpoch);
	EXPECT_EQ(w.state.load(), kFreshWord);
	/* a backward step beyond the lead: Wait, reported once */
	w.wall.store(1500);
	s = atomic_issue(ops, kLayout, kShard, 10, 1, &now);
	ASSERT_EQ(s.step.outcome, Outcome::Issued);
	w.wall.store(1400);
	s = atomic_issue(ops, kLayout, kShard, 10, 1, &now);
	EXPECT_EQ(s.step.outcome, Outcome::Wait);
	EXPECT_EQ(s.step.wait_until, 1490);
	EXPECT_EQ(s.step.stepped_back, 100);
	s = atomic_issue(ops, kLayout, kShard, 10, 1, &now);
	EXPECT_EQ(s.step.outcome, Outcome::Wait);
	EXPECT_EQ(s.step.stepped_back, 0) << "the same step is not reported twice";
}

TEST(AtomicIssueTest, SealLowersToTheLastTimestamp)
{
	World		w;
	TestOps		ops(w);
	int64_t		now = 0;

	w.reserved.store(5000);
	EXPECT_EQ(atomic_seal(ops, kLayout), -1) << "nothing issued: nothing to keep";
	EXPECT_EQ(w.reserved.load(), -1);
	w.reserved.store(5000);
	ASSERT_EQ(atomic_issue(ops, kLayout, kShard, 1000, 1, &now).step.outcome, Outcome::Issued);
	EXPECT_EQ(atomic_seal(ops, kLayout), 1000);
	EXPECT_EQ(w.reserved.load(), 1000);
	AtomicStep	s = atomic_issue(ops, kLayout, kShard, 1000, 1, &now);

	EXPECT_EQ(s.step.outcome, Outcome::NeedReservation)
		<< "after the seal, the same millisecond is used up";
	EXPECT_EQ(s.step.wanted, 1001);
	/* a reserved offset already at the last timestamp is not raised */
	w.reserved.store(1000);
	w.state.store(pack_state(kLayout, 1000, 4095));
	EXPECT_EQ(atomic_seal(ops, kLayout), 1000);
	EXPECT_EQ(w.reserved.load(), 1000);
}

TEST(AtomicIssueTest, GuessIsOnlyAShortcut)
{
	World		w;
	TestOps		ops(w);
	int64_t		now = 0;
	StateGuess	guess = {0, false};

	w.reserved.store(5000);
	AtomicStep	s = atomic_issue(ops, kLayout, kShard, 1000, 1, &now, 0, &guess);

	ASSERT_EQ(s.step.outcome, Outcome::Issued);
	EXPECT_TRUE(guess.valid);
	EXPECT_EQ(guess.word, w.state.load()) << "the guess is the word the CAS installed";

	/* another caller moved the word: the guess's CAS fails, the step is taken from the word */
	uint64_t	moved = pack_state(kLayout, 1000, 77);

	w.state.store(moved);
	s = atomic_issue(ops, kLayout, kShard, 1000, 1, &now, 0, &guess);
	ASSERT_EQ(s.step.outcome, Outcome::Issued);
	EXPECT_EQ(s.step.id, encode(kLayout, 1000, kShard, 78));
	EXPECT_EQ(guess.word, w.state.load());

	/* a seal after the guess: the call reads the lowered mark, as without a guess */
	EXPECT_EQ(atomic_seal(ops, kLayout), 1000);
	s = atomic_issue(ops, kLayout, kShard, 1000, 1, &now, 0, &guess);
	EXPECT_EQ(s.step.outcome, Outcome::NeedReservation);
	EXPECT_EQ(s.step.wanted, 1001);

	/*
	 * A stale guess that would refuse (its timestamp above the mark) is never
	 * acted on: the word is read, and it issues.
	 */
	World		w2;
	TestOps		ops2(w2);
	StateGuess	stale = {pack_state(kLayout, 1999, 5), true};

	w2.reserved.store(1500);
	w2.state.store(pack_state(kLayout, 999, 5));
	s = atomic_issue(ops2, kLayout, kShard, 2000, 1, &now, 0, &stale);
	ASSERT_EQ(s.step.outcome, Outcome::Issued);
	EXPECT_EQ(s.step.id, encode(kLayout, 1000, kShard, 0));
	EXPECT_EQ(stale.word, w2.state.load());
}

/*---- the loops, many threads on one word ----*/

namespace
{

constexpr int kThreads = 8;

/*
 * Runs "calls" atomic_issue calls in each of kThreads threads; the odd
 * threads pass a guess of the word (StateGuess), as the PostgreSQL glue
 * does, the even ones load it: both kinds race on the same word.
 */
template <typename OnStep>
std::vector<std::vector<IdRun>>
hammer(World &w, int calls, int64_t lead, bool batches, OnStep on_step, unsigned yield_mask = 0)
{
	std::vector<std::vector<IdRun>> runs(kThreads);
	std::vector<std::thread> threads;
	std::atomic<int> ready{0};

	for (int t = 0; t < kThreads; t++)
		threads.emplace_back([&, t] {
			TestOps		ops(w);
			std::mt19937 rng((unsigned) t * 7919u + 1);
			int64_t		now;
			StateGuess	guess = {0, false};

			ops.yield_mask = yield_mask;
			ready.fetch_add(1);
			while (ready.load() < kThreads)
				std::this_thread::yield();
			for (int i = 0; i < calls; i++)
			{
				int64_t		max_count = batches ? (int64_t) (rng() % 3000) + 1 : 1;
				AtomicStep	s = atomic_issue(ops, w.layout, kShard, lead, max_count, &now, 0,
											 t % 2 == 1 ? &guess : nullptr);

				if (!on_step(t, s))
					break;
				if (s.step.outcome == Outcome::Issued)
					runs[t].push_back({s.step.id, s.step.count, ops.last_old, ops.last_new});
			}
		});
	for (auto &th : threads)
		th.join();
	return runs;
}

}								/* namespace */

TEST(AtomicThreadsTest, SingleIdsUniqueAndChained)
{
	World		w;
	Ticker		ticker(w, std::chrono::microseconds(200));
	std::atomic<int> steps{0};
	auto		runs = hammer(w, 20000, 1000, false, [&](int, const AtomicStep &s) {
		EXPECT_EQ(s.step.outcome, Outcome::Issued);
		if (s.step.stepped_back > 0)
			steps.fetch_add(1);
		return true;
	}, 63);

	ticker.stop();
	size_t		n = 0;

	for (auto &r : runs)
		n += r.size();
	EXPECT_EQ(n, (size_t) kThreads * 20000);
	EXPECT_EQ(steps.load(), 0) << "a clock that only moves forward shows no step";
	check_runs(runs, kFreshWord, w.state.load());
}

TEST(AtomicThreadsTest, BatchRunsNeverOverlap)
{
	World		w;
	Ticker		ticker(w, std::chrono::microseconds(100));
	std::atomic<int64_t> ids{0};
	auto		runs = hammer(w, 3000, kBigLead, true, [&](int, const AtomicStep &s) {
		EXPECT_EQ(s.step.outcome, Outcome::Issued);
		ids.fetch_add(s.step.count);
		return true;
	});

	ticker.stop();
	check_runs(runs, kFreshWord, w.state.load());
	/* a run is the rest of a millisecond at most: some were cut short */
	int64_t		requested_more = 0;

	for (auto &r : runs)
		for (auto &x : r)
			requested_more += decode(kLayout, x.id + x.count - 1).sequence == 4095;
	EXPECT_GT(requested_more, 0);
	EXPECT_GT(ids.load(), 3000 * kThreads);
}

/* The lead is used up: calls wait (here: give up) instead of running ahead. */
TEST(AtomicThreadsTest, LeadBoundUnderContention)
{
	World		w;
	std::atomic<int> waits{0};
	auto		runs = hammer(w, 20000, 3, false, [&](int, const AtomicStep &s) {
		if (s.step.outcome == Outcome::Wait)
		{
			waits.fetch_add(1);
			return false;
		}
		EXPECT_EQ(s.step.outcome, Outcome::Issued);
		return true;
	});

	/* the clock never moved: 4 milliseconds (now .. now + 3) of 4096 IDs */
	EXPECT_EQ(waits.load(), kThreads);
	check_runs(runs, kFreshWord, w.state.load());
	EXPECT_EQ(w.state.load(), pack_state(kLayout, w.wall.load() + 3, 4095));
}

TEST(AtomicThreadsTest, MarkBound)
{
	World		w;
	Ticker		ticker(w, std::chrono::microseconds(100));
	int64_t		mark = w.wall.load() + 20;
	std::atomic<int> stopped{0};

	w.reserved.store(mark);
	auto		runs = hammer(w, 1000000, kBigLead, false, [&](int, const AtomicStep &s) {
		if (s.step.outcome == Outcome::NeedReservation)
		{
			EXPECT_GT(s.step.wanted, mark);
			stopped.fetch_add(1);
			return false;
		}
		EXPECT_EQ(s.step.outcome, Outcome::Issued);
		return true;
	});

	ticker.stop();
	EXPECT_EQ(stopped.load(), kThreads);
	for (auto &r : runs)
		for (auto &x : r)
			ASSERT_LE(decode(kLayout, x.id + x.count - 1).unix_ms - kLayout.epoch_ms, mark);
	check_runs(runs, kFreshWord, w.state.load());
}

/*
 * The mark moved by a slow path while others issue: durable first, then
 * reserved raised, as sf_move_mark does.  Every ID stays at or below the
 * durable mark of its time.
 */
TEST(AtomicThreadsTest, MarkMovedBySlowPath)
{
	World		w;
	Ticker		ticker(w, std::chrono::microseconds(100));
	std::mutex	file_lock;
	std::atomic<int64_t> durable{w.wall.load() + 5};
	std::atomic<int> moves{0};

	w.reserved.store(durable.load());
	auto		runs = hammer(w, 20000, kBigLead, false, [&](int, const AtomicStep &s) {
		if (s.step.outcome == Outcome::NeedReservation)
		{
			std::lock_guard<std::mutex> g(file_lock);

			if (durable.load() < s.step.wanted)
			{
				durable.store(s.step.wanted + 5);
				moves.fetch_add(1);
			}
			if (w.reserved.load() < durable.load())
				w.reserved.store(durable.load());
			return true;
		}
		EXPECT_EQ(s.step.outcome, Outcome::Issued);
		if (s.step.outcome == Outcome::Issued)
		{
			EXPECT_LE(decode(kLayout, s.step.id + s.step.count - 1).unix_ms - kLayout.epoch_ms,
					  durable.load());
		}
		return true;
	});

	ticker.stop();
	EXPECT_GT(moves.load(), 0);
	check_runs(runs, kFreshWord, w.state.load());
}

/*
 * The seal (a registry releasing a shard) racing with issuing calls:
 * whatever the interleaving, no ID (issued before or after the seal) carries
 * a timestamp above the lowered reserved offset the seal returns, because
 * after the seal every call needs a new reservation.  Many short rounds, to hit the window
 * between a call's read of reserved and its CAS.
 */
TEST(AtomicThreadsTest, SealRacingWithCalls)
{
	int			lowered_rounds = 0;

	for (int round = 0; round < 60; round++)
	{
		World		w;
		Ticker		ticker(w, std::chrono::microseconds(20));
		std::atomic<bool> sealed{false};
		std::atomic<int64_t> lowered{-2};
		std::atomic<int> started{0};
		std::atomic<int> after_seal{0};

		w.reserved.store(w.wall.load() + 100000);
		const int64_t before = w.reserved.load();
		std::thread settler([&] {
			while (started.load() < kThreads)
				std::this_thread::yield();
			std::this_thread::sleep_for(std::chrono::microseconds(300 + round * 37));
			TestOps		ops(w);

			lowered.store(atomic_seal(ops, w.layout));
			sealed.store(true);
		});
		auto		runs = hammer(w, 1000000, kBigLead, round % 2 == 1, [&](int, const AtomicStep &s) {
			started.fetch_add(1);
			if (s.step.outcome == Outcome::NeedReservation)
			{
				after_seal.fetch_add(1);
				return false;
			}
			EXPECT_EQ(s.step.outcome, Outcome::Issued);
			return true;
		}, 7);

		settler.join();
		ticker.stop();
		ASSERT_TRUE(sealed.load());
		int64_t		low = lowered.load();

		ASSERT_EQ(low, w.reserved.load());
		ASSERT_LE(low, before);
		if (low < before)
			lowered_rounds++;
		int64_t		max_ts = -1;

		for (auto &r : runs)
			for (auto &x : r)
				max_ts = std::max(max_ts, decode(kLayout, x.id + x.count - 1).unix_ms - kLayout.epoch_ms);
		ASSERT_LE(max_ts, low) << "an ID above the lowered mark, round " << round;
		/* the seal's own install follows the last run's */
		uint64_t	last = kFreshWord;

		for (auto &r : runs)
			for (auto &x : r)
				last = std::max(last, x.new_word);
		EXPECT_TRUE(w.state.load() == last || w.state.load() == seal_word(kLayout, last));
		check_runs(runs, kFreshWord, last);
	}
	EXPECT_GT(lowered_rounds, 50);
}

/*
 * A clock that only moves forward, read by threads that are often
 * descheduled between loading the clock word and reading the clock: never a
 * step.  (A detector comparing with the highest reading published, instead
 * of the word loaded before the reading, reports steps here.)
 */
TEST(AtomicThreadsTest, NoFalseClockSteps)
{
	World		w;
	Ticker		ticker(w, std::chrono::microseconds(5));
	std::atomic<int> steps{0};
	auto		runs = hammer(w, 30000, 100000, false, [&](int, const AtomicStep &s) {
		if (s.step.stepped_back > 0)
			steps.fetch_add(1);
		EXPECT_EQ(s.step.outcome, Outcome::Issued);
		return true;
	}, 3);

	ticker.stop();
	EXPECT_EQ(steps.load(), 0);
	check_runs(runs, kFreshWord, w.state.load());
}

/* Backward steps under load: each reported exactly once, with its size. */
TEST(AtomicThreadsTest, ClockStepsReportedOnce)
{
	World		w;
	std::atomic<bool> done{false};
	std::mutex	m;
	std::vector<int64_t> reported;
	const std::vector<int64_t> steps = {30, 200, 5, 700, 1};
	std::vector<std::vector<IdRun>> runs(kThreads);
	std::vector<std::thread> threads;

	for (int t = 0; t < kThreads; t++)
		threads.emplace_back([&, t] {
			TestOps		ops(w);
			int64_t		now;

			ops.yield_mask = 15;
			while (!done.load())
			{
				AtomicStep	s = atomic_issue(ops, w.layout, kShard, 100000, 1, &now);

				if (s.step.stepped_back > 0)
				{
					std::lock_guard<std::mutex> g(m);

					reported.push_back(s.step.stepped_back);
				}
				ASSERT_EQ(s.step.outcome, Outcome::Issued);
				runs[t].push_back({s.step.id, s.step.count, ops.last_old, ops.last_new});
			}
		});

	auto		wait_for = [&](auto cond) {
		auto		deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);

		while (!cond() && std::chrono::steady_clock::now() < deadline)
			std::this_thread::sleep_for(std::chrono::microseconds(50));
		return cond();
	};
	for (size_t k = 0; k < steps.size(); k++)
	{
		/* move forward a few ms, then hold until the clock word has the reading */
		for (int i = 0; i < 5; i++)
		{
			w.wall.fetch_add(1);
			std::this_thread::sleep_for(std::chrono::microseconds(200));
		}
		int64_t		held = w.wall.load();

		ASSERT_TRUE(wait_for([&] { return (w.clock.load() & kClockMask) == (uint64_t) held; }));
		w.wall.store(held - steps[k]);
		ASSERT_TRUE(wait_for([&] {
			std::lock_guard<std::mutex> g(m);
			return reported.size() == k + 1;
		})) << "step " << k << " was not reported";
		std::this_thread::sleep_for(std::chrono::milliseconds(2));
	}
	done.store(true);
	for (auto &th : threads)
		th.join();
	EXPECT_EQ(reported, steps) << "each step once, with its size, in order";
	check_runs(runs, kFreshWord, w.state.load());
}

/*---- the random sequence start (snowflake.sequence_start = 'random') ----*/

/* With the same draws, the lock-free step still issues exactly next_run's IDs. */
TEST(AtomicSequenceStartTest, AdvanceWordAgreesWithNextRunWithRandomStarts)
{
	std::mt19937_64 rng(17);
	Xorshift64	draws{UINT64_C(0xDEADBEEF12345)};
	GeneratorState st = kFreshState;
	uint64_t	word = kFreshWord;
	int64_t		clock = 500;
	int			fresh_nonzero = 0;

	for (int i = 0; i < 100000; i++)
	{
		if (rng() % 3 == 0)
			clock += 1 + (int64_t) (rng() % 3);
		int64_t		start = draw_start_sequence(draws, kLayout);
		int64_t		max_count = (rng() % 4 == 0) ? (int64_t) (rng() % 5000) + 1 : 1;
		bool		fresh = clock > st.last_offset;
		Step		a = next_run(st, kLayout, 3, clock, 20, kNoLimit, max_count, start);
		AtomicStep	b = advance_word(kLayout, 3, word, clock, 20, kNoLimit, max_count, start);

		ASSERT_EQ(a.outcome, b.step.outcome);
		if (a.outcome != Outcome::Issued)
			continue;
		ASSERT_EQ(a.id, b.step.id);
		ASSERT_EQ(a.count, b.step.count);
		if (fresh)
		{
			ASSERT_EQ(decode(kLayout, a.id).sequence, start);
			fresh_nonzero += start != 0;
		}
		word = b.word;
		ASSERT_EQ(word, pack_state(kLayout, st.last_offset, st.last_sequence));
	}
	EXPECT_GT(fresh_nonzero, 1000);
}

/*
 * The glue draws a start only when a step may have used the last one
 * (AtomicStep::drew, sf_start_sequence in src/settings/seqstart.hpp): every
 * unit the clock opens must still start at a draw no other unit used.  Runs
 * the glue's way (a pending draw, replaced after a step that drew) and checks
 * that each opened unit's first sequence is the pending draw and that the
 * step said it drew, so the next unit gets a new one.
 */
TEST(AtomicSequenceStartTest, PendingDrawUsedByOneUnitOnly)
{
	std::mt19937_64 rng(27);
	Xorshift64	draws{UINT64_C(0x12345DEADBEEF)};
	uint64_t	word = kFreshWord;
	int64_t		clock = 500;
	int64_t		pending = -1;
	int			opened = 0, kept = 0;

	for (int i = 0; i < 100000; i++)
	{
		if (rng() % 3 == 0)
			clock += 1 + (int64_t) (rng() % 3);
		if (pending < 0)
			pending = draw_start_sequence(draws, kLayout);
		bool		fresh = clock > word_offset(kLayout, word);
		int64_t		max_count = (rng() % 4 == 0) ? (int64_t) (rng() % 5000) + 1 : 1;
		AtomicStep	b = advance_word(kLayout, 3, word, clock, 20, kNoLimit, max_count, pending);

		if (b.step.outcome != Outcome::Issued)
		{
			if (b.drew)
				pending = -1;
			continue;
		}
		if (fresh)
		{
			ASSERT_EQ(decode(kLayout, b.step.id).sequence, pending);
			ASSERT_TRUE(b.drew) << "a unit opened with the pending draw must use it up";
			opened++;
		}
		else
			kept += !b.drew;
		if (b.drew)
			pending = -1;
		word = b.word;
	}
	EXPECT_GT(opened, 1000);
	EXPECT_GT(kept, 1000) << "steps within an open unit keep the draw";
}

/* Many threads, each with its own draws: IDs unique, chained, per-thread increasing. */
TEST(AtomicSequenceStartTest, ThreadsWithRandomStartsStayUniqueAndChained)
{
	World		w;
	Ticker		ticker(w, std::chrono::microseconds(50));
	std::vector<std::vector<IdRun>> runs(kThreads);
	std::vector<std::thread> threads;
	std::atomic<int> ready{0};
	std::atomic<int> nonzero_starts{0};

	for (int t = 0; t < kThreads; t++)
		threads.emplace_back([&, t] {
			TestOps		ops(w);
			Xorshift64	draws{(uint64_t) t * 0x9E3779B97F4A7C15u + 1};
			int64_t		now;

			ready.fetch_add(1);
			while (ready.load() < kThreads)
				std::this_thread::yield();
			for (int i = 0; i < 5000; i++)
			{
				int64_t		start = draw_start_sequence(draws, kLayout);
				AtomicStep	s = atomic_issue(ops, w.layout, kShard, kBigLead, 1, &now, start);

				ASSERT_EQ(s.step.outcome, Outcome::Issued);
				runs[t].push_back({s.step.id, s.step.count, ops.last_old, ops.last_new});
				if (decode(kLayout, s.step.id).sequence > 0 &&
					word_offset(kLayout, ops.last_old) < word_offset(kLayout, ops.last_new))
					nonzero_starts.fetch_add(1);
				if (i % 64 == 0)
					std::this_thread::yield();
			}
		});
	for (auto &th : threads)
		th.join();
	ticker.stop();
	check_runs(runs, kFreshWord, w.state.load());
	EXPECT_GT(nonzero_starts.load(), 0) << "milliseconds opened by the clock start at the draw";
}
