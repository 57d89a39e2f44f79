/*-------------------------------------------------------------------------
 *
 * textform_test.cpp
 *		GoogleTest unit tests of src/core/textform.*: the 13-character text
 *		form of an ID (to_text(), from_text()).
 *
 * Built into test/unit/core_test and run by "make unitcheck".
 *
 * Suites:
 *	 TextFormTest        round trips, order, strict parsing
 *
 *-------------------------------------------------------------------------
 */
#include "core/textform.hpp"

#include <gtest/gtest.h>

#include <cctype>
#include <cstdint>
#include <cstring>
#include <random>

using snowflake::TextProblem;

TEST(TextFormTest, RoundTripAndOrder)
{
	std::mt19937_64 rng(11);
	char		a[14], b[14];
	int64_t		back;
	size_t		bad;

	snowflake::to_text(0, a);
	EXPECT_STREQ(a, "0000000000000");
	snowflake::to_text(INT64_MAX, a);
	EXPECT_STREQ(a, "7ZZZZZZZZZZZZ");
	for (int i = 0; i < 100000; i++)
	{
		int64_t		x = (int64_t) (rng() >> 1);
		int64_t		y = (int64_t) (rng() >> (1 + rng() % 60));

		snowflake::to_text(x, a);
		snowflake::to_text(y, b);
		ASSERT_EQ(strlen(a), 13u);
		ASSERT_EQ(snowflake::from_text(a, 13, &back, &bad), TextProblem::None);
		ASSERT_EQ(back, x);
		/* byte order of the strings is the numeric order of the IDs */
		ASSERT_EQ(strcmp(a, b) < 0, x < y) << a << " " << b;
		for (char &c : a)
			c = (char) tolower(c);
		ASSERT_EQ(snowflake::from_text(a, 13, &back, &bad), TextProblem::None);
		ASSERT_EQ(back, x);
	}
}

TEST(TextFormTest, StrictParsing)
{
	int64_t		id = 42;
	size_t		bad = 99;

	EXPECT_EQ(snowflake::from_text("", 0, &id, &bad), TextProblem::WrongLength);
	EXPECT_EQ(snowflake::from_text("000000000000", 12, &id, &bad), TextProblem::WrongLength);
	EXPECT_EQ(snowflake::from_text("00000000000000", 14, &id, &bad), TextProblem::WrongLength);
	for (const char *text : {"000000000000I", "000000000000L", "000000000000O",
							 "000000000000U", "00000 0000000", "0000000000-00",
							 "000000000000\xc3"})
	{
		EXPECT_EQ(snowflake::from_text(text, 13, &id, &bad), TextProblem::BadCharacter) << text;
		EXPECT_EQ(text[bad], strpbrk(text, "ILOU -\xc3")[0]) << text;
	}
	EXPECT_EQ(snowflake::from_text("8000000000000", 13, &id, &bad), TextProblem::OutOfRange);
	EXPECT_EQ(snowflake::from_text("Z000000000000", 13, &id, &bad), TextProblem::OutOfRange);
	EXPECT_EQ(id, 42);
}
