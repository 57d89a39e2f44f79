/*-------------------------------------------------------------------------
 *
 * backend_pg.hpp
 *		The registry backend on a PostgreSQL database (see backend_pg.cpp,
 *		the operations, over pgconn.hpp, the transport; what the settings
 *		and the view need of a connection string is in pgconn.hpp).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_BACKEND_PG_HPP
#define SNOWFLAKE_BACKEND_PG_HPP

#include "registry/backend.hpp"
#include "registry/pgconn.hpp"

extern const SfRegistryBackend sf_pg_backend;

/* The schema the registry's tables live in, and its version. */
#define SF_PG_SCHEMA "snowflake_registry"
#define SF_PG_SCHEMA_VERSION 1

#endif							/* SNOWFLAKE_BACKEND_PG_HPP */
