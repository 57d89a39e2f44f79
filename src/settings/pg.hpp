/*-------------------------------------------------------------------------
 *
 * pg.hpp
 *		postgres.h, with C linkage, and the oldest version we build for.
 *		Every file above the core includes it (through settings.hpp or
 *		state.hpp), then the PostgreSQL headers it uses itself, in an
 *		extern "C" block of its own; the files of the core never do.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_PG_HPP
#define SNOWFLAKE_PG_HPP

extern "C"
{
#include "postgres.h"
/* the varlena macros, part of postgres.h in 15, in their own header since 16 */
#if PG_VERSION_NUM >= 160000
#include "varatt.h"
#endif
}

/*
 * PostgreSQL 15 is the oldest we support: the mark reaches standbys through a
 * custom WAL resource manager and shared memory is requested from
 * shmem_request_hook, both new in 15 (13 and 14 are past end of life).
 * 16 and later need no guards of their own except GUC memory (settings.cpp).
 */
#if PG_VERSION_NUM < 150000
#error "snowflake needs PostgreSQL 15 or later"
#endif

#endif							/* SNOWFLAKE_PG_HPP */
