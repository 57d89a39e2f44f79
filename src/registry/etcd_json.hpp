/*-------------------------------------------------------------------------
 *
 * etcd_json.hpp
 *		The two codecs the etcd client needs, on PostgreSQL's own common/
 *		code: reading values out of a JSON answer (common/jsonapi.h) and
 *		base64 (common/base64.h).
 *
 * It owns no protocol: it validates a whole document and finds the value at
 * a dotted path.  It may call only PostgreSQL's common/ functions, which the
 * server exports and libpgcommon provides to the unit tests (built with
 * FRONTEND).  Nothing here throws; in the server, an error PostgreSQL's
 * parser would raise (a stack depth check, memory) is caught and becomes
 * Invalid, and all memory it takes is released before it returns.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_ETCD_JSON_HPP
#define SNOWFLAKE_ETCD_JSON_HPP

#include <cstddef>
#include <cstdint>

namespace etcd
{

enum class JsonFound
{
	Found,
	Absent,						/* the document is valid; the path is not in it */
	Invalid						/* not one well-formed JSON value, or too deep */
};

enum class JsonType
{
	String,
	Number,
	True,
	False,
	Null,
	Object,
	Array
};

/* Documents nested deeper than this are Invalid (checked before parsing). */
constexpr int kMaxJsonDepth = 64;

/*
 * Validates a whole JSON document and looks up a dotted path in it, such as
 * "responses.0.response_range.kvs.0.value" (array elements by index; "" is
 * the document itself; the first match counts).  A string is unescaped into
 * out; a number or literal is copied as written; objects and arrays copy
 * nothing.  A value that does not fit out is Invalid.
 */
JsonFound json_lookup(const char *doc, size_t len, const char *path, JsonType *type,
					  char *out, size_t outlen) noexcept;

/* An int64 at path, written as a JSON number or a string of digits. */
JsonFound json_int64(const char *doc, size_t len, const char *path, int64_t *value) noexcept;

/*
 * Calls fn for every string at a path whose segments may be "*" (any array
 * index), such as "kvs.*.key", in document order; stops when fn returns
 * false.  False when the document is invalid or a match is not a string.
 */
bool json_each_string(const char *doc, size_t len, const char *pattern,
					  bool (*fn)(void *arg, const char *value, size_t len), void *arg) noexcept;

/* Standard base64 with padding; returns the length written, or -1 if no room. */
long base64_encode(const void *data, size_t len, char *out, size_t outlen) noexcept;
/* Strict decoding; returns the length written (NUL added), or -1 on bad input or no room. */
long base64_decode(const char *text, size_t len, char *out, size_t outlen) noexcept;

}								/* namespace etcd */

#endif							/* SNOWFLAKE_ETCD_JSON_HPP */
