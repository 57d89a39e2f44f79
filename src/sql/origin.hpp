/*-------------------------------------------------------------------------
 *
 * origin.hpp
 *		Where a database's IDs came from: the check of the first generating
 *		call of a session, and snowflake_raise_floor() (adoption).
 *
 * The SQL layer: it may call the state layer (datadir, mark).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_ORIGIN_HPP
#define SNOWFLAKE_ORIGIN_HPP

#include "state/state.hpp"

extern "C"
{
#include "datatype/timestamp.h"
}

extern bool sf_origin_checked;
void		sf_check_origin_slow(Oid fn_oid);
Oid			sf_origin_table(Oid fn_oid);
void		sf_raise_floor_to(TimestampTz ts, bool allow_future);

/*
 * The first generating call of a backend checks where its database's IDs
 * came from; later calls pay one test of a backend-local flag, inline.
 */
static inline void
sf_check_origin(Oid fn_oid)
{
	if (!sf_origin_checked)
		sf_check_origin_slow(fn_oid);
}

#endif							/* SNOWFLAKE_ORIGIN_HPP */
