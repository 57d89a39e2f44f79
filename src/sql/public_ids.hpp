/*-------------------------------------------------------------------------
 *
 * public_ids.hpp
 *		Public IDs in SQL: snowflake.public_id_keys and the functions that
 *		encode and decode (see public_ids.cpp).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_PUBLICID_SQL_HPP
#define SNOWFLAKE_PUBLICID_SQL_HPP

/* Defines snowflake.public_id_keys; from _PG_init, before the prefix is reserved. */
void		sf_publicid_define_settings(void);

#endif							/* SNOWFLAKE_PUBLICID_SQL_HPP */
