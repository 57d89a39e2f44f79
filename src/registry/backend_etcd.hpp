/*-------------------------------------------------------------------------
 *
 * backend_etcd.hpp
 *		The registry backend on etcd (see backend_etcd.cpp).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_BACKEND_ETCD_HPP
#define SNOWFLAKE_BACKEND_ETCD_HPP

#include "registry/backend.hpp"

extern const SfRegistryBackend sf_etcd_backend;

#endif							/* SNOWFLAKE_BACKEND_ETCD_HPP */
