/*-------------------------------------------------------------------------
 *
 * statefile_test.cpp
 *		GoogleTest unit tests of src/core/statefile.*: writing small files
 *		durably under ./pg_snowflake/ and reading them back, each test in a
 *		fresh temporary directory.
 *
 * Built into test/unit/core_test and run by "make unitcheck".
 *
 * Suites:
 *	 StateFileTest       write_file_durably(), read_small_file()
 *	 StateFileBoundaryTest  read_small_file() at the edges of its buffer
 *
 *-------------------------------------------------------------------------
 */
#include "core/layout.hpp"
#include "core/records.hpp"
#include "core/statefile.hpp"
#include "unit_helpers.hpp"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <ftw.h>
#include <iterator>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

using snowflake::Layout;
using namespace snowflake_unit;

/*===========================================================================
 * StateFileTest: durable small files under ./pg_snowflake/.
 *===========================================================================*/

namespace
{

int
RemoveEntry(const char *path, const struct stat *, int, struct FTW *)
{
	return remove(path);
}

/* Runs each test in a fresh temporary directory. */
class StateFileTest : public ::testing::Test
{
protected:
	void		SetUp() override
	{
		char		cwd[4096];

		ASSERT_NE(getcwd(cwd, sizeof(cwd)), nullptr);
		old_cwd_ = cwd;
		char		tmpl[] = "/tmp/snowflake_unit_XXXXXX";

		ASSERT_NE(mkdtemp(tmpl), nullptr) << strerror(errno);
		dir_ = tmpl;
		ASSERT_EQ(chdir(dir_.c_str()), 0) << strerror(errno);
	}

	void		TearDown() override
	{
		if (!old_cwd_.empty())
		{
			EXPECT_EQ(chdir(old_cwd_.c_str()), 0) << strerror(errno);
		}
		if (!dir_.empty())
			nftw(dir_.c_str(), RemoveEntry, 16, FTW_DEPTH | FTW_PHYS);
	}

	static std::string Slurp(const char *path)
	{
		std::ifstream in(path, std::ios::binary);

		return std::string(std::istreambuf_iterator<char>(in),
						   std::istreambuf_iterator<char>());
	}

	static bool Exists(const char *path)
	{
		struct stat st;

		return lstat(path, &st) == 0;
	}

	static void WriteRaw(const char *path, const std::string &data)
	{
		std::ofstream out(path, std::ios::binary | std::ios::trunc);

		out << data;
	}

	std::string old_cwd_;
	std::string dir_;
};

/* The same fixture, for buffer-boundary cases of read_small_file(). */
class StateFileBoundaryTest : public StateFileTest
{
};

}								/* namespace */

TEST_F(StateFileTest, WriteCreatesDirectoryAndFileWithExactBytes)
{
	snowflake::FileError err = {"", "", 0};
	const std::string data("format 1\nbinary\0bytes\xff no newline", 33);

	ASSERT_FALSE(Exists(snowflake::kStateDir));
	ASSERT_TRUE(snowflake::write_file_durably("layout", data.data(), data.size(), &err))
		<< err.operation << " " << err.path << ": " << strerror(err.err);

	struct stat st;

	ASSERT_EQ(stat(snowflake::kStateDir, &st), 0);
	EXPECT_TRUE(S_ISDIR(st.st_mode));
	EXPECT_EQ(st.st_mode & 0777, 0700u);
	ASSERT_EQ(stat(snowflake::kLayoutFile, &st), 0);
	EXPECT_TRUE(S_ISREG(st.st_mode));
	EXPECT_EQ(st.st_mode & 0077, 0u);		/* private to the owner */
	EXPECT_EQ((size_t) st.st_size, data.size());
	EXPECT_EQ(Slurp("pg_snowflake/layout"), data);
	EXPECT_FALSE(Exists("pg_snowflake/layout.tmp"));
}

TEST_F(StateFileTest, SecondWriteReplacesFile)
{
	snowflake::FileError err = {"", "", 0};
	const std::string first(500, 'a');
	const std::string second = "short\n";

	ASSERT_TRUE(snowflake::write_file_durably("layout", first.data(), first.size(), &err));
	EXPECT_EQ(Slurp(snowflake::kLayoutFile), first);
	ASSERT_TRUE(snowflake::write_file_durably("layout", second.data(), second.size(), &err));
	EXPECT_EQ(Slurp(snowflake::kLayoutFile), second);	/* nothing left of the first */
	ASSERT_TRUE(snowflake::write_file_durably("layout", "", 0, &err));
	EXPECT_EQ(Slurp(snowflake::kLayoutFile), "");
	EXPECT_FALSE(Exists("pg_snowflake/layout.tmp"));

	/* Other names live next to it. */
	ASSERT_TRUE(snowflake::write_file_durably("other", "x", 1, &err));
	EXPECT_EQ(Slurp("pg_snowflake/other"), "x");
	EXPECT_EQ(Slurp(snowflake::kLayoutFile), "");
}

TEST_F(StateFileTest, WriteReplacesStaleTemporaryFile)
{
	snowflake::FileError err = {"", "", 0};

	ASSERT_EQ(mkdir(snowflake::kStateDir, 0700), 0);
	WriteRaw("pg_snowflake/layout.tmp", std::string(100, 'z'));
	ASSERT_TRUE(snowflake::write_file_durably("layout", "new", 3, &err));
	EXPECT_EQ(Slurp(snowflake::kLayoutFile), "new");
	EXPECT_FALSE(Exists("pg_snowflake/layout.tmp"));
}

TEST_F(StateFileTest, ReadMissing)
{
	char		buf[64];
	size_t		len = 12345;
	snowflake::FileError err = {"", "", 0};

	EXPECT_EQ(snowflake::read_small_file(snowflake::kLayoutFile, buf, sizeof(buf), &len, &err),
			  snowflake::ReadResult::Missing);
	ASSERT_EQ(mkdir(snowflake::kStateDir, 0700), 0);
	EXPECT_EQ(snowflake::read_small_file(snowflake::kLayoutFile, buf, sizeof(buf), &len, &err),
			  snowflake::ReadResult::Missing);
}

TEST_F(StateFileTest, ReadOkReturnsContent)
{
	snowflake::FileError err = {"", "", 0};
	const std::string data = "hello\nworld\n";

	ASSERT_TRUE(snowflake::write_file_durably("layout", data.data(), data.size(), &err));

	char		buf[64];
	size_t		len = 0;

	memset(buf, 'X', sizeof(buf));
	ASSERT_EQ(snowflake::read_small_file(snowflake::kLayoutFile, buf, sizeof(buf), &len, &err),
			  snowflake::ReadResult::Ok);
	EXPECT_EQ(len, data.size());
	EXPECT_EQ(std::string(buf, len), data);
	EXPECT_EQ(buf[len], '\0');

	/* An empty file is Ok and empty. */
	ASSERT_TRUE(snowflake::write_file_durably("layout", "", 0, &err));
	len = 99;
	ASSERT_EQ(snowflake::read_small_file(snowflake::kLayoutFile, buf, sizeof(buf), &len, &err),
			  snowflake::ReadResult::Ok);
	EXPECT_EQ(len, 0u);
	EXPECT_EQ(buf[0], '\0');
}

TEST_F(StateFileTest, ReadTooLarge)
{
	snowflake::FileError err = {"", "", 0};
	const std::string data(100, 'q');

	ASSERT_TRUE(snowflake::write_file_durably("layout", data.data(), data.size(), &err));

	for (size_t buflen : {2, 10, 50, 100})
	{
		SCOPED_TRACE(buflen);
		std::vector<char> buf(buflen + 16, '#');
		size_t		len = 0;

		EXPECT_EQ(snowflake::read_small_file(snowflake::kLayoutFile, buf.data(), buflen, &len,
											 &err),
				  snowflake::ReadResult::TooLarge);
		/* Nothing written beyond the buffer. */
		for (size_t i = buflen; i < buf.size(); i++)
			ASSERT_EQ(buf[i], '#');
	}
	/* With room for the content and its terminator (and more), it is read. */
	std::vector<char> big(1024);
	size_t		len = 0;

	EXPECT_EQ(snowflake::read_small_file(snowflake::kLayoutFile, big.data(), big.size(), &len,
										 &err),
			  snowflake::ReadResult::Ok);
	EXPECT_EQ(len, data.size());
}

TEST_F(StateFileTest, ReadDirectoryFails)
{
	snowflake::FileError err = {nullptr, nullptr, 0};
	char		buf[64];
	size_t		len = 0;

	ASSERT_EQ(mkdir(snowflake::kStateDir, 0700), 0);
	EXPECT_EQ(snowflake::read_small_file(snowflake::kStateDir, buf, sizeof(buf), &len, &err),
			  snowflake::ReadResult::Failed);
	ASSERT_NE(err.operation, nullptr);
	EXPECT_STREQ(err.operation, "read");
	ASSERT_NE(err.path, nullptr);
	EXPECT_STREQ(err.path, snowflake::kStateDir);
	EXPECT_EQ(err.err, EISDIR);
}

TEST_F(StateFileTest, WriteFailsCleanlyWhenStateDirIsARegularFile)
{
	snowflake::FileError err = {nullptr, nullptr, 0};

	WriteRaw(snowflake::kStateDir, "I am not a directory");
	EXPECT_FALSE(snowflake::write_file_durably("layout", "data", 4, &err));
	ASSERT_NE(err.operation, nullptr);
	EXPECT_STREQ(err.operation, "open");
	ASSERT_NE(err.path, nullptr);
	EXPECT_TRUE(Contains(err.path, "pg_snowflake/layout")) << err.path;
	EXPECT_EQ(err.err, ENOTDIR);
	/* The file in the way is left alone. */
	EXPECT_EQ(Slurp(snowflake::kStateDir), "I am not a directory");

	/* Reading through it fails too, rather than claiming the file is missing. */
	char		buf[64];
	size_t		len = 0;
	snowflake::FileError rerr = {nullptr, nullptr, 0};

	EXPECT_EQ(snowflake::read_small_file(snowflake::kLayoutFile, buf, sizeof(buf), &len, &rerr),
			  snowflake::ReadResult::Failed);
	ASSERT_NE(rerr.operation, nullptr);
	EXPECT_STREQ(rerr.operation, "open");
	EXPECT_EQ(rerr.err, ENOTDIR);
}

TEST_F(StateFileTest, LayoutRecordSurvivesWriteAndRead)
{
	const Layout l{UtcMs(2024, 7, 1), 12, 10};
	char		rec[512];
	int			n = snowflake::format_layout_record(l, rec, sizeof(rec));
	snowflake::FileError err = {"", "", 0};

	ASSERT_GT(n, 0);
	ASSERT_TRUE(snowflake::write_file_durably("layout", rec, (size_t) n, &err));

	char		buf[1024];
	size_t		len = 0;
	Layout		back{0, 0, 0};

	ASSERT_EQ(snowflake::read_small_file(snowflake::kLayoutFile, buf, sizeof(buf), &len, &err),
			  snowflake::ReadResult::Ok);
	ASSERT_EQ(len, (size_t) n);
	ASSERT_TRUE(snowflake::parse_layout_record(buf, len, &back));
	EXPECT_TRUE(back == l);
}

/* A file of exactly buflen - 1 bytes fits, with its terminator. */
TEST_F(StateFileBoundaryTest, FileThatExactlyFitsTheBufferIsReadOk)
{
	snowflake::FileError err = {"", "", 0};
	const std::string data(9, 'q');

	ASSERT_TRUE(snowflake::write_file_durably("layout", data.data(), data.size(), &err));

	char		buf[10];		/* 9 bytes + NUL */
	size_t		len = 0;

	EXPECT_EQ(snowflake::read_small_file(snowflake::kLayoutFile, buf, sizeof(buf), &len, &err),
			  snowflake::ReadResult::Ok);
}

/* A non-empty file never reads as empty, however small the buffer. */
TEST_F(StateFileBoundaryTest, NonEmptyFileIntoOneByteBufferIsTooLarge)
{
	snowflake::FileError err = {"", "", 0};

	ASSERT_TRUE(snowflake::write_file_durably("layout", "abc", 3, &err));

	char		buf[1];
	size_t		len = 777;
	snowflake::ReadResult r =
		snowflake::read_small_file(snowflake::kLayoutFile, buf, sizeof(buf), &len, &err);

	EXPECT_EQ(r, snowflake::ReadResult::TooLarge)
		<< "got Ok with len=" << len << " for a 3-byte file";
}
