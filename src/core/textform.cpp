/*-------------------------------------------------------------------------
 *
 * textform.cpp
 *		The text form of an ID (see textform.hpp).
 *
 *-------------------------------------------------------------------------
 */
#include "core/textform.hpp"

namespace snowflake
{

namespace
{
constexpr char kBase32[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/* The value of a Crockford base32 digit in either case, or -1. */
int
base32_value(char c) noexcept
{
	if (c >= 'a' && c <= 'z')
		c = (char) (c - 'a' + 'A');
	for (int i = 0; i < 32; i++)
		if (kBase32[i] == c)
			return i;
	return -1;
}
}								/* namespace */

void
to_text(int64_t id, char out[kTextLength + 1]) noexcept
{
	uint64_t	v = (uint64_t) id;

	for (int i = kTextLength - 1; i >= 0; i--)
	{
		out[i] = kBase32[v & 31];
		v >>= 5;
	}
	out[kTextLength] = '\0';
}

TextProblem
from_text(const char *text, size_t len, int64_t *id, size_t *bad_pos) noexcept
{
	uint64_t	v = 0;

	if (len != (size_t) kTextLength)
		return TextProblem::WrongLength;
	for (size_t i = 0; i < len; i++)
	{
		int			d = base32_value(text[i]);

		if (d < 0)
		{
			*bad_pos = i;
			return TextProblem::BadCharacter;
		}
		/* 13 digits hold 65 bits: the first may carry at most 3 (63 - 60) */
		if (i == 0 && d > 7)
			return TextProblem::OutOfRange;
		v = (v << 5) | (uint64_t) d;
	}
	*id = (int64_t) v;
	return TextProblem::None;
}

DecimalProblem
parse_decimal(const char *text, size_t len, int64_t *id, size_t *bad_pos) noexcept
{
	uint64_t	v = 0;

	if (len == 0)
		return DecimalProblem::Empty;
	if (text[0] == '-' && len > 1)
	{
		bool		digits = true;
		bool		zeros = true;

		for (size_t i = 1; i < len; i++)
		{
			digits = digits && text[i] >= '0' && text[i] <= '9';
			zeros = zeros && text[i] == '0';
		}
		/* "-0" is 0, as bigint reads it */
		if (zeros)
		{
			*id = 0;
			return DecimalProblem::None;
		}
		if (digits)
			return DecimalProblem::Negative;
	}
	for (size_t i = 0; i < len; i++)
	{
		if (text[i] < '0' || text[i] > '9')
		{
			*bad_pos = i;
			return DecimalProblem::BadCharacter;
		}
		/* v * 10 + d must stay at or below INT64_MAX */
		if (v > (uint64_t) (INT64_MAX - (text[i] - '0')) / 10)
			return DecimalProblem::OutOfRange;
		v = v * 10 + (uint64_t) (text[i] - '0');
	}
	*id = (int64_t) v;
	return DecimalProblem::None;
}

}								/* namespace snowflake */
