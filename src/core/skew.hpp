/*-------------------------------------------------------------------------
 *
 * skew.hpp
 *		The estimate of how far this server's clock is from the registry's
 *		(the skew guard, snowflake.registry_max_skew): each answer of the
 *		registry bounds its clock by the request's round trip, and the
 *		estimate is the intersection of the recent bounds.
 *
 * A sample says: this server's wall clock minus the registry's lay within
 * [lo_ms, hi_ms] when the answer came (the backend computes it from the
 * request's send and receive times and the time the answer carries: now()
 * of a PostgreSQL registry, etcd's Date header).  The estimate intersects
 * the samples of the last ten minutes, newest first, as far back as they
 * agree: a clock that stepped leaves the older samples behind.  As answers
 * come at different moments the intersection tightens.
 *
 * Part of the core: plain C++ that never includes postgres.h, allocates or
 * throws (every function is noexcept and works on caller-owned memory), so
 * it is unit-tested without a server (test/unit/skew_test.cpp).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_SKEW_HPP
#define SNOWFLAKE_SKEW_HPP

#include <cstdint>

namespace snowflake
{

/* Samples kept, and how long one counts (CLOCK_MONOTONIC ns). */
constexpr int kSkewSamples = 64;
constexpr int64_t kSkewWindowNs = INT64_C(600) * 1000000000;
/*
 * A sample's bounds are cut to +-kSkewLimitMs (about 285,000 years): no
 * real clock is that far off, and the arithmetic on them cannot overflow.
 */
constexpr int64_t kSkewLimitMs = INT64_C(1) << 53;

/* What one answer told: ours minus the registry's in [lo_ms, hi_ms], at at_ns. */
struct SkewSample
{
	int64_t		at_ns;			/* CLOCK_MONOTONIC */
	int64_t		lo_ms;
	int64_t		hi_ms;
};

/* The samples and the estimate; all zero is a valid empty one. */
struct SkewEstimate
{
	SkewSample	ring[kSkewSamples];	/* newest at next - 1 */
	int			next;
	int			count;			/* samples that still count */
	bool		known;			/* lo_ms and hi_ms hold an estimate */
	int64_t		lo_ms;			/* this server's clock minus the registry's ... */
	int64_t		hi_ms;			/* ... lies within [lo_ms, hi_ms] */
};

/*
 * Drops the samples (another registry server: another clock); the estimate
 * stays known until the next sample replaces it.
 */
void		skew_forget(SkewEstimate &e) noexcept;

/* Adds a sample taken at now_ns and narrows the estimate (then known). */
void		skew_add(SkewEstimate &e, int64_t now_ns, int64_t lo_ms, int64_t hi_ms) noexcept;

/* The middle of the estimate (ours minus the registry's), and its half width rounded up. */
int64_t		skew_mid_ms(const SkewEstimate &e) noexcept;
int64_t		skew_error_ms(const SkewEstimate &e) noexcept;

/*
 * Whether the clocks are surely more than max_ms apart (the whole estimate
 * beyond it); never with max_ms <= 0 (the guard off) or no estimate.
 */
bool		skew_beyond(const SkewEstimate &e, int64_t max_ms) noexcept;

}								/* namespace snowflake */

#endif							/* SNOWFLAKE_SKEW_HPP */
