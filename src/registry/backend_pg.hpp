/*-------------------------------------------------------------------------
 *
 * backend_pg.hpp
 *		The registry backend on a PostgreSQL database (see backend_pg.cpp),
 *		and what the settings and the view need of a libpq connection
 *		string: its check, and a form to show with no password in it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_BACKEND_PG_HPP
#define SNOWFLAKE_BACKEND_PG_HPP

#include "registry/backend.hpp"

extern const SfRegistryBackend sf_pg_backend;

/* The schema the registry's tables live in, and its version. */
#define SF_PG_SCHEMA "snowflake_registry"
#define SF_PG_SCHEMA_VERSION 1

/*
 * Whether target is meant for this backend: a postgresql:// or postgres://
 * URI, or a key=value connection string.
 */
bool		sf_pg_target_is(const char *target);

/* Checks a connection string with libpq's parser; false with err (no password in it). */
bool		sf_pg_target_check(const char *target, char *err, size_t errlen);

/* Whether a connection string holds a password (a keyword, or a URI's user:password@). */
bool		sf_pg_target_has_password(const char *target);

/* The connection string as key=value pairs, passwords masked. */
void		sf_pg_target_display(const char *target, char *buf, size_t buflen);

#endif							/* SNOWFLAKE_BACKEND_PG_HPP */
