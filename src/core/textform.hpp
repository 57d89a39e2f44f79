/*-------------------------------------------------------------------------
 *
 * textform.hpp
 *		The text form of an ID: 13 characters of Crockford base32, fixed
 *		width, sorting like the IDs.
 *
 * Part of the core: plain C++ that never includes postgres.h, allocates or
 * throws (every function is noexcept and works on caller-owned memory), so it
 * can run inside the glue's LWLocks and be unit-tested without a server.
 * It may call nothing but the C++ standard library.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_TEXTFORM_HPP
#define SNOWFLAKE_TEXTFORM_HPP

#include <cstddef>
#include <cstdint>

namespace snowflake
{

/*
 * The text form of an ID: 13 characters of Crockford base32 (digits and
 * upper-case letters without I, L, O, U), fixed width, so that the strings
 * sort like the IDs.
 */
constexpr int kTextLength = 13;

/* Writes the text form of a non-negative ID and a NUL into out[14]. */
void to_text(int64_t id, char out[kTextLength + 1]) noexcept;

enum class TextProblem
{
	None,
	WrongLength,
	BadCharacter,				/* *bad_pos is its index */
	OutOfRange					/* above the largest bigint */
};

/* Parses a text form (either case); strict about everything else. */
TextProblem from_text(const char *text, size_t len, int64_t *id, size_t *bad_pos) noexcept;

/* What is wrong with the decimal form of an ID, if anything. */
enum class DecimalProblem
{
	None,
	Empty,
	BadCharacter,				/* *bad_pos is its index */
	Negative,					/* a minus sign before digits */
	OutOfRange					/* above the largest bigint */
};

/*
 * Parses the decimal form of an ID (the snowflake type's input): ASCII digits
 * only, no sign, no spaces, at most 9223372036854775807; "-0" (any number of
 * zeros after the minus) is 0, as bigint reads it.
 */
DecimalProblem parse_decimal(const char *text, size_t len, int64_t *id, size_t *bad_pos) noexcept;

}								/* namespace snowflake */

#endif							/* SNOWFLAKE_TEXTFORM_HPP */
