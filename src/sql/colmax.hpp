/*-------------------------------------------------------------------------
 *
 * colmax.hpp
 *		The largest value of a bigint column, read without planning or
 *		running anything over the table (see colmax.cpp).
 *
 * The SQL layer.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_COLMAX_HPP
#define SNOWFLAKE_COLMAX_HPP

#include "state/state.hpp"

extern "C"
{
#include "nodes/pg_list.h"
}

/* What sf_column_max() found. */
enum SfColumnMax
{
	SF_MAX_NONE,				/* read: no row has a value */
	SF_MAX_FOUND,				/* read: *max is the largest value */
	SF_MAX_SKIPPED				/* nothing could be read (adopting only) */
};

SfColumnMax sf_column_max(Oid relid, const char *attname, Oid idtype, bool adopting,
						  List **seen, int64 *max);
List	   *sf_dependents(Oid refclassid, Oid refobjid, Oid classid, char deptype);
Oid			sf_extension_type(Oid ext);
bool		sf_id_type(Oid typid, Oid idtype);
char	   *sf_relation_name(Oid relid);

#endif							/* SNOWFLAKE_COLMAX_HPP */
