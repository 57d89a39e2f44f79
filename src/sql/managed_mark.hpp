/*-------------------------------------------------------------------------
 *
 * managed_mark.hpp
 *		The SQL edition's high-water mark in a database restored here: for
 *		snowflake_adopt_database() (adopt.cpp).  See managed_mark.cpp.
 *
 * The SQL layer: it may call the state layer.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_MANAGED_MARK_HPP
#define SNOWFLAKE_MANAGED_MARK_HPP

#include "state/state.hpp"

extern "C"
{
#include "datatype/timestamp.h"
#include "nodes/pg_list.h"
}

/* What the SQL edition's installations of this database tell adopt. */
struct SfManagedMark
{
	List	   *generators;		/* their generator functions (OIDs) */
	bool		have_top;		/* a shard's cap was read */
	TimestampTz top_ts;			/* the time of the largest ID issued below a cap */
};

void		sf_managed_mark(TimestampTz limit_ts, int64 bound_ms, bool allow_future,
							SfManagedMark *mark);

#endif							/* SNOWFLAKE_MANAGED_MARK_HPP */
