// Unit tests of the registry's etcd client codecs (src/etcd.cpp): the strict
// JSON reader on real etcd gateway answers and on garbage, base64, and the
// endpoint list.  No etcd and no network involved.

#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "registry/etcd.hpp"

using etcd::JsonFound;
using etcd::JsonType;

namespace
{

JsonFound
lookup(const std::string &doc, const char *path, std::string *out = nullptr,
	   JsonType *type = nullptr)
{
	char		buf[256];
	JsonType	t;
	JsonFound	f = etcd::json_lookup(doc.data(), doc.size(), path, &t, buf, sizeof(buf));

	if (f == JsonFound::Found)
	{
		if (out)
			*out = buf;
		if (type)
			*type = t;
	}
	return f;
}

const std::string kTxnCreated =
	R"({"header":{"cluster_id":"324952591200643719","member_id":"3319814642761637952",)"
	R"("revision":"2","raft_term":"2"},"succeeded":true,"responses":[{"response_put":)"
	R"({"header":{"revision":"2"}}},{"response_range":{"header":{"revision":"2"},"kvs":)"
	R"([{"key":"L3gvbQ==","create_revision":"3","mod_revision":"3","version":"1",)"
	R"("value":"MTIz"}],"count":"1"}}]})";

const std::string kTxnExists =
	R"({"header":{"revision":"2"},"responses":[{"response_range":{"header":{"revision":"2"},)"
	R"("kvs":[{"key":"L3gvaA==","create_revision":"2","mod_revision":"2","version":"1",)"
	R"("value":"bWU=","lease":"2324035551791995397"}],"count":"1"}}]})";

}								// namespace

TEST(EtcdJson, ReadsGatewayAnswers)
{
	std::string v;
	JsonType	t;
	int64_t		n = 0;

	EXPECT_EQ(lookup(kTxnCreated, "succeeded", nullptr, &t), JsonFound::Found);
	EXPECT_EQ(t, JsonType::True);
	EXPECT_EQ(lookup(kTxnCreated, "responses.1.response_range.kvs.0.value", &v), JsonFound::Found);
	EXPECT_EQ(v, "MTIz");
	EXPECT_EQ(lookup(kTxnCreated, "responses.0.response_range", &v), JsonFound::Absent);
	EXPECT_EQ(etcd::json_int64(kTxnCreated.data(), kTxnCreated.size(), "header.revision", &n),
			  JsonFound::Found);
	EXPECT_EQ(n, 2);

	// a failed compare: "succeeded" is left out (false is the default)
	EXPECT_EQ(lookup(kTxnExists, "succeeded"), JsonFound::Absent);
	EXPECT_EQ(etcd::json_int64(kTxnExists.data(), kTxnExists.size(),
							   "responses.0.response_range.kvs.0.lease", &n),
			  JsonFound::Found);
	EXPECT_EQ(n, INT64_C(2324035551791995397));

	// a keep-alive of an expired lease carries no TTL
	std::string gone = R"({"result":{"header":{"revision":"4"},"ID":"7"}})" "\n";
	EXPECT_EQ(lookup(gone, "result.TTL"), JsonFound::Absent);
	EXPECT_EQ(lookup(gone, "result.ID", &v), JsonFound::Found);
	EXPECT_EQ(v, "7");
}

TEST(EtcdJson, GarbageIsInvalid)
{
	const char *bad[] = {
		"", " ", "{", "}", "{\"a\":}", "{\"a\" 1}", "{\"a\":1,}", "[1,]", "[1 2]",
		"{\"a\":1} x", "nul", "tru", "01", "1.", "-", "1e", "\"abc", "\"a\\x\"",
		"\"\\u12G4\"", "{\"a\":\"\x01\"}", "<html>502 Bad Gateway</html>",
		"{\"a\":1}{\"b\":2}", "{'a':1}",
	};

	for (const char *doc : bad)
		EXPECT_EQ(lookup(doc, ""), JsonFound::Invalid) << "document: " << doc;

	// nesting deeper than the limit is refused, not a stack overflow
	std::string deep(100000, '[');
	EXPECT_EQ(lookup(deep, ""), JsonFound::Invalid);
	std::string ok = std::string(30, '[') + std::string(30, ']');
	EXPECT_EQ(lookup(ok, ""), JsonFound::Found);
}

TEST(EtcdJson, StringsAndNumbers)
{
	std::string v;
	JsonType	t;
	int64_t		n = 0;

	EXPECT_EQ(lookup(R"({"s":"a\"b\\c\/d\n\u00e9\ud83d\ude00"})", "s", &v), JsonFound::Found);
	EXPECT_EQ(v, "a\"b\\c/d\n\xc3\xa9\xf0\x9f\x98\x80");
	EXPECT_EQ(lookup(R"({"s":"\ud83d"})", "s", &v), JsonFound::Invalid);	// lone surrogate
	EXPECT_EQ(lookup(R"({"n":-12.5e3})", "n", &v, &t), JsonFound::Found);
	EXPECT_EQ(t, JsonType::Number);
	EXPECT_EQ(v, "-12.5e3");
	// keys match after unescaping; array indexes; a wrong type for an int
	EXPECT_EQ(lookup(R"({"k\u0065y":[10,[20,30]]})", "key.1.0", &v), JsonFound::Found);
	EXPECT_EQ(v, "20");
	EXPECT_EQ(etcd::json_int64("{\"n\":true}", 10, "n", &n), JsonFound::Invalid);
	EXPECT_EQ(etcd::json_int64("{\"n\":\"12x\"}", 11, "n", &n), JsonFound::Invalid);
	EXPECT_EQ(etcd::json_int64("{\"n\":\"99999999999999999999\"}", 26, "n", &n),
			  JsonFound::Invalid);
	// a value larger than the caller's buffer is an error, not a truncation
	std::string big = "{\"s\":\"" + std::string(1000, 'x') + "\"}";
	EXPECT_EQ(lookup(big, "s", &v), JsonFound::Invalid);
}

TEST(EtcdBase64, RoundTripsAndRejects)
{
	char		enc[64], dec[64];
	const char *cases[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar",
						   "/snowflake/default/shards/1023/holder"};

	for (const char *c : cases)
	{
		ASSERT_GE(etcd::base64_encode(c, strlen(c), enc, sizeof(enc)), 0);
		long		n = etcd::base64_decode(enc, strlen(enc), dec, sizeof(dec));

		ASSERT_EQ(n, (long) strlen(c));
		EXPECT_EQ(std::string(dec, n), c);
	}
	EXPECT_STREQ((etcd::base64_encode("foobar", 6, enc, sizeof(enc)), enc), "Zm9vYmFy");
	EXPECT_STREQ((etcd::base64_encode("fo", 2, enc, sizeof(enc)), enc), "Zm8=");
	EXPECT_EQ(etcd::base64_decode("Zm8", 3, dec, sizeof(dec)), -1);
	EXPECT_EQ(etcd::base64_decode("Zm=8", 4, dec, sizeof(dec)), -1);
	EXPECT_EQ(etcd::base64_decode("Z!8=", 4, dec, sizeof(dec)), -1);
	EXPECT_EQ(etcd::base64_decode("Zm8=Zm8=", 8, dec, sizeof(dec)), -1);
	EXPECT_EQ(etcd::base64_encode("foobar", 6, enc, 8), -1);	// no room
}

TEST(EtcdEndpoints, ParsesAndRejects)
{
	char		eps[etcd::kMaxEndpoints][etcd::kMaxEndpointLen + 1];
	char		err[256];
	int			n = 0;

	ASSERT_TRUE(etcd::parse_endpoints(" http://10.0.0.1:2379/, https://e2:2379 ,", eps,
									  etcd::kMaxEndpoints, &n, err, sizeof(err)));
	ASSERT_EQ(n, 2);
	EXPECT_STREQ(eps[0], "http://10.0.0.1:2379");
	EXPECT_STREQ(eps[1], "https://e2:2379");
	ASSERT_TRUE(etcd::parse_endpoints("", eps, etcd::kMaxEndpoints, &n, err, sizeof(err)));
	EXPECT_EQ(n, 0);
	EXPECT_FALSE(etcd::parse_endpoints("10.0.0.1:2379", eps, etcd::kMaxEndpoints, &n, err,
									   sizeof(err)));
	EXPECT_FALSE(etcd::parse_endpoints("ftp://x", eps, etcd::kMaxEndpoints, &n, err, sizeof(err)));
	EXPECT_FALSE(etcd::parse_endpoints("http://user:pw@x:2379", eps, etcd::kMaxEndpoints, &n,
									   err, sizeof(err)));
	/* the error never quotes an endpoint: it may hold a password */
	EXPECT_STREQ(err, "endpoint 1 holds user information (user:password@), which is not supported");
	EXPECT_FALSE(etcd::parse_endpoints("http://a:1,secret:pw@b", eps, etcd::kMaxEndpoints, &n,
									   err, sizeof(err)));
	EXPECT_STREQ(err, "endpoint 2 is not an http:// or https:// URL");
	EXPECT_FALSE(etcd::parse_endpoints("http://", eps, etcd::kMaxEndpoints, &n, err, sizeof(err)));
	EXPECT_FALSE(etcd::parse_endpoints("http://a,http://b,http://c,http://d,http://e,"
									   "http://f,http://g,http://h,http://i",
									   eps, etcd::kMaxEndpoints, &n, err, sizeof(err)));
}
