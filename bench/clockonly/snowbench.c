/*-------------------------------------------------------------------------
 *
 * snowbench.c
 *		Two functions for bench/run.sh only, not part of the extension:
 *
 *		snowbench_clock()   reads the clock snowflake_nextval() reads
 *		                    (CLOCK_REALTIME, as Unix milliseconds, like
 *		                    sf_wall_ms() in src/core/clocks.hpp) and
 *		                    returns it: the floor of any generator that
 *		                    reads the wall clock once a call.
 *		snowbench_cpu_ns()  the CPU time this backend has used so far
 *		                    (CLOCK_THREAD_CPUTIME_ID, ns): read before and
 *		                    after a query, it measures the query's cost in
 *		                    the backend, which other work sharing the cores
 *		                    does not inflate the way it inflates elapsed time.
 *
 * Built and installed by bench/run.sh with the extension's PG_CONFIG, loaded
 * by CREATE EXTENSION snowbench on the scratch servers only.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <time.h>

#include "fmgr.h"

PG_MODULE_MAGIC;

PG_FUNCTION_INFO_V1(snowbench_clock);
PG_FUNCTION_INFO_V1(snowbench_cpu_ns);

/* Wall-clock Unix milliseconds, read exactly as the generator reads them. */
Datum
snowbench_clock(PG_FUNCTION_ARGS)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	PG_RETURN_INT64((int64) ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
}

/* CPU time of this backend (one thread per process), in nanoseconds. */
Datum
snowbench_cpu_ns(PG_FUNCTION_ARGS)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	PG_RETURN_INT64((int64) ts.tv_sec * 1000000000 + ts.tv_nsec);
}
