/*-------------------------------------------------------------------------
 *
 * clocks.hpp
 *		The clocks the generator reads: the wall clock (what IDs carry) and
 *		the monotonic clocks (to bound waits, and the registry's deadlines).
 *
 * Part of the core: plain POSIX, no postgres.h.  It may call nothing but
 * clock_gettime().
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_CLOCKS_HPP
#define SNOWFLAKE_CLOCKS_HPP

#include <cstdint>
#include <ctime>

/* Wall-clock Unix milliseconds: what IDs carry. */
static inline int64_t
sf_wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Monotonic microseconds: to bound and account for waits. */
static inline int64_t
sf_monotonic_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Nanoseconds of any clock (the registry: CLOCK_MONOTONIC, CLOCK_BOOTTIME). */
static inline int64_t
sf_clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#endif							/* SNOWFLAKE_CLOCKS_HPP */
