// Unit tests of what the settings and the view make of a PostgreSQL
// registry's connection string (src/registry/pgconn.cpp): which backend a value
// chooses, libpq's check of it, and the forms shown to users, which must
// never hold a password.  libpq parses; nothing connects.

#include <string>

#include <gtest/gtest.h>

#include "registry/pgconn.hpp"

namespace
{

std::string
shown(const char *target)
{
	char		buf[512];

	sf_pg_target_display(target, buf, sizeof(buf));
	return buf;
}

bool
check(const char *target, std::string *err)
{
	char		buf[256] = "";
	bool		ok = sf_pg_target_check(target, buf, sizeof(buf));

	*err = buf;
	return ok;
}

}								/* namespace */

TEST(PgTarget, ChoosesTheBackendByForm)
{
	EXPECT_TRUE(sf_pg_target_is("postgresql://reg.example.com/registry"));
	EXPECT_TRUE(sf_pg_target_is("postgres://reg.example.com/registry"));
	EXPECT_TRUE(sf_pg_target_is("host=reg dbname=registry"));
	EXPECT_TRUE(sf_pg_target_is("  host=reg"));
	EXPECT_FALSE(sf_pg_target_is("http://10.0.0.1:2379,http://10.0.0.2:2379"));
	EXPECT_FALSE(sf_pg_target_is("https://etcd.example.com:2379/?a=b"));
	EXPECT_FALSE(sf_pg_target_is("etcd1:2379"));
	EXPECT_FALSE(sf_pg_target_is(""));
}

TEST(PgTarget, ChecksWithLibpq)
{
	std::string err;

	EXPECT_TRUE(check("host=reg1,reg2 dbname=registry target_session_attrs=read-write", &err));
	EXPECT_TRUE(check("postgresql://u@reg1:5433,reg2/registry?sslmode=verify-full", &err));
	EXPECT_FALSE(check("host=reg port", &err));
	EXPECT_NE(err.find("missing \"=\" after \"port\""), std::string::npos) << err;
	EXPECT_FALSE(check("host=reg bogus_option=1", &err));
	EXPECT_NE(err.find("bogus_option"), std::string::npos) << err;
}

TEST(PgTarget, NeverShowsAPassword)
{
	std::string err;

	EXPECT_TRUE(sf_pg_target_has_password("host=reg password=hunter2"));
	EXPECT_TRUE(sf_pg_target_has_password("host=reg sslpassword=hunter2"));
	EXPECT_TRUE(sf_pg_target_has_password("postgresql://u:hunter2@reg/db"));
	EXPECT_FALSE(sf_pg_target_has_password("postgresql://u@reg/db"));
	EXPECT_FALSE(sf_pg_target_has_password("host=reg passfile=/etc/pgpass"));

	// libpq's own message would quote the string: not shown when it holds a password
	EXPECT_FALSE(check("postgresql://u:hunter2@[::1", &err));
	EXPECT_EQ(err.find("hunter2"), std::string::npos) << err;
	EXPECT_FALSE(check("password=hunter2 port", &err));
	EXPECT_EQ(err.find("hunter2"), std::string::npos) << err;

	std::string s = shown("host=reg dbname=registry password=hunter2");
	EXPECT_EQ(s.find("hunter2"), std::string::npos) << s;
	EXPECT_NE(s.find("password=********"), std::string::npos) << s;
	EXPECT_NE(s.find("host=reg"), std::string::npos) << s;
	EXPECT_NE(s.find("dbname=registry"), std::string::npos) << s;

	s = shown("postgresql://u:hunter2@reg:5433/registry?sslpassword=hunter3");
	EXPECT_EQ(s.find("hunter2"), std::string::npos) << s;
	EXPECT_EQ(s.find("hunter3"), std::string::npos) << s;
	EXPECT_NE(s.find("user=u"), std::string::npos) << s;
	EXPECT_NE(s.find("port=5433"), std::string::npos) << s;
}

TEST(PgTarget, QuotesWhatNeedsIt)
{
	EXPECT_EQ(shown("host=/tmp/a\\ b dbname=x"), "dbname=x host='/tmp/a b'");
	EXPECT_EQ(shown("application_name='it\\'s'"), "application_name='it\\'s'");
}
