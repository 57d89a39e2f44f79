/*-------------------------------------------------------------------------
 *
 * layoutpin.hpp
 *		The layout pinned before anything that depends on it can be stored
 *		(issue 33): every SQL function whose result depends on the layout
 *		(the decoders, the time comparisons and bounds, the partition
 *		arithmetic) calls sf_require_layout() first.  The first such call
 *		of a backend records the layout in pg_snowflake/layout and WAL, as
 *		the first ID does (sf_record_layout()), unless it is recorded
 *		already; later calls of the backend cost one branch.  CREATE
 *		EXTENSION records it too (snowflake_record_layout()).
 *
 * On a standby nothing is recorded (it cannot write WAL, and stores nothing
 * of its own): it decodes with its settings until its primary's record
 * arrives through WAL (wal.cpp), which it checks then.  While the clock
 * reads earlier than snowflake.epoch and no layout is recorded, the calls
 * refuse instead: a layout whose epoch lies ahead of the clock may be a
 * mistake, and is never recorded (as the first ID refuses).
 *
 * It may call the core, the settings, shmem.cpp and wal.cpp.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_LAYOUTPIN_HPP
#define SNOWFLAKE_LAYOUTPIN_HPP

#include "state/state.hpp"

/* This backend saw the layout recorded (and matching: else sf_shared->refused). */
extern bool sf_layout_pinned;

void		sf_require_layout_slow(void);
bool		sf_pin_layout(bool refuse_before_epoch);

/*
 * Errors out unless the layout may be used: the library preloaded, no
 * refusal, and the layout recorded (recording it on the first call).
 */
static inline void
sf_require_layout(void)
{
	if (likely(sf_layout_pinned) && likely(!sf_shared->refused))
		return;
	sf_require_layout_slow();
}

#endif							/* SNOWFLAKE_LAYOUTPIN_HPP */
