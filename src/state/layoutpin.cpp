/*-------------------------------------------------------------------------
 *
 * layoutpin.cpp
 *		Recording the layout before its first use (see layoutpin.hpp).
 *
 * A value computed with the layout (a decoded time in an expression index,
 * generated column or CHECK, the bound of a partial index "id >= t", a
 * partition's bounds) is as stale as the layout it came from: a server
 * restarted with another layout would answer differently through the index
 * than through the table.  So the layout is recorded, in pg_snowflake/layout
 * and WAL, by the code the first ID uses (wal.cpp: sf_record_layout), before
 * any such value can be computed; a later start with another layout is
 * refused (datadir.cpp), which keeps every computation to the recorded one.
 * The record is not transactional: a call in a transaction that aborts pins
 * the layout all the same, which is all it does.
 *
 *-------------------------------------------------------------------------
 */
#include "state/layoutpin.hpp"
#include "state/wal.hpp"

extern "C"
{
#include "postgres.h"
#include "access/xlog.h"
#include "port/atomics.h"
}

bool		sf_layout_pinned = false;

/* The refusal while no layout is recorded and the clock reads earlier than the epoch. */
static void
sf_fail_unpinned_before_epoch(void)
{
	char		epoch[40], clock[40];

	snowflake::format_utc(sf_layout.epoch_ms, epoch, sizeof(epoch));
	snowflake::format_utc(sf_wall_ms(), clock, sizeof(clock));
	ereport(ERROR,
			(errcode(ERRCODE_SYSTEM_ERROR),
			 errmsg("could not use the snowflake ID layout: the clock reads earlier than "
					"snowflake.epoch"),
			 errdetail("snowflake.epoch is %s and the clock reads %s. The layout is recorded "
					   "at its first use, and an epoch ahead of the clock may be a mistake.",
					   epoch, clock),
			 errhint("Check the server's time synchronisation, or snowflake.epoch; decoding "
					 "works by itself once the clock passes the epoch.")));
}

/*
 * Records the layout unless it is recorded (after sf_require_ready(), which
 * errors out without the preload or with a refused layout).  Returns whether
 * it is recorded now: false on a standby, which records nothing (its
 * primary's record arrives through WAL), and, unless refuse_before_epoch
 * (then an error), while the clock reads earlier than the epoch.
 */
bool
sf_pin_layout(bool refuse_before_epoch)
{
	sf_require_ready();
	if (pg_atomic_read_u32(&sf_shared->layout_recorded) == 0)
	{
		if (RecoveryInProgress())
			return false;
		if (sf_now_offset() < 0)
		{
			if (refuse_before_epoch)
				sf_fail_unpinned_before_epoch();
			return false;
		}
		sf_record_layout();
	}
	sf_layout_pinned = true;
	return true;
}

/* sf_require_layout() past its one branch: the first call of a backend, or a refusal. */
void
sf_require_layout_slow(void)
{
	(void) sf_pin_layout(true);
}
