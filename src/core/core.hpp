/*-------------------------------------------------------------------------
 *
 * core.hpp
 *		The generator core, all of it: the layer at the bottom of the
 *		library, in plain C++ that never includes postgres.h.
 *
 *	layout.hpp		the bit layout, epochs and times, other systems' layouts
 *	generator.hpp	the state machine that issues IDs, with an injected clock
 *	atomicgen.hpp	the same step on one 64-bit word, lock-free
 *	textform.hpp	the 13-character text form
 *	shardlist.hpp	lists of shards ("0-63,128")
 *	records.hpp		the text of the records in pg_snowflake/
 *	statefile.hpp	writing those records durably (POSIX only)
 *	clocks.hpp		the wall and monotonic clocks
 *	publicid.hpp	public IDs: the keyed permutation and its text form
 *	hmac.hpp		HMAC-SHA-256 over OpenSSL's SHA-256, the public IDs' PRF
 *
 * Files of the core include only one another (and the C and C++ libraries
 * and OpenSSL's libcrypto, never PostgreSQL); everything above them (the
 * PostgreSQL glue in the other files of src/) may include them.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_CORE_HPP
#define SNOWFLAKE_CORE_HPP

#include "core/generator.hpp"
#include "core/layout.hpp"
#include "core/publicid.hpp"
#include "core/records.hpp"
#include "core/shardlist.hpp"
#include "core/textform.hpp"

#endif							/* SNOWFLAKE_CORE_HPP */
