/*-------------------------------------------------------------------------
 *
 * wal.hpp
 *		What travels to standbys in WAL, through a custom resource manager:
 *		the durable mark, the layout, and the shards the primary generates
 *		for; their redo; and the check that keeps a standby off its
 *		primary's shards.
 *
 * It may call the core, the settings, datadir.cpp and shmem.cpp.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_WAL_HPP
#define SNOWFLAKE_WAL_HPP

#include "state/state.hpp"

extern "C"
{
#include "access/xlogdefs.h"
}

void		sf_wal_init(void);
void		sf_log_mark(int64 mark_ms);
void		sf_record_layout(void);
void		sf_check_standby_shard(int64 shard);
void		sf_log_import_reservation(int64 shard, int64 reserved_ms);
void		sf_log_live_from(int64 shard, int64 from_ms);

/* What the last shards record said, and when it was written (the mark worker's). */
typedef struct SfShardsLogged
{
	bool		done;
	int32		count;
	snowflake::ShardRange ranges[SF_MAX_PRIMARY_RANGES + 2];
	int64		at_ms;			/* wall clock */
	XLogRecPtr	important;		/* GetLastImportantRecPtr() just after it */
} SfShardsLogged;

void		sf_keep_shards_logged(SfShardsLogged *last);

#endif							/* SNOWFLAKE_WAL_HPP */
