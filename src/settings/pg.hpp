/*-------------------------------------------------------------------------
 *
 * pg.hpp
 *		The PostgreSQL headers the glue uses, included with C linkage in one
 *		place.  Every file above the core includes it (through settings.hpp
 *		or state.hpp); the files of the core (core.hpp) never do.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_PG_HPP
#define SNOWFLAKE_PG_HPP

extern "C"
{
#include "postgres.h"

#include "access/htup_details.h"
#include "access/parallel.h"
#include "access/twophase.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "access/xlog_internal.h"
#include "access/xloginsert.h"
#include "access/xlogreader.h"
#include "catalog/pg_control.h"
#include "common/controldata_utils.h"
#include "common/file_perm.h"
#include "lib/stringinfo.h"
#include "fmgr.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "postmaster/postmaster.h"
#if PG_VERSION_NUM >= 170000
#include "storage/procnumber.h"		/* MyProcNumber (state/counters.cpp) */
#else
#include "storage/backendid.h"		/* MyBackendId (state/counters.cpp) */
#endif
#include "storage/fd.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "tcop/utility.h"
#include "utils/backend_status.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/guc_tables.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"
#include "utils/wait_event.h"
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
