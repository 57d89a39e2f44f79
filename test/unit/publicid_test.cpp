/*-------------------------------------------------------------------------
 *
 * publicid_test.cpp
 *		GoogleTest unit tests of public IDs (src/core/publicid.cpp) and their
 *		PRF (src/core/hmac.cpp).
 *
 * Expected values come from the standards (RFC 4231's vectors), from
 * PostgreSQL's pg_hmac (OpenSSL's HMAC-SHA-256, linked from libpgcommon),
 * or are properties; the known answers of the cipher were computed once with
 * pg_hmac as the round function and pinned, and 96 more (four keys of 128 to
 * 512 bits, six IDs, four tweaks up to two SHA-256 blocks) were computed by
 * the cipher's own SHA-256 before it moved to OpenSSL's, so a change of the
 * construction (which would orphan every public ID already handed out)
 * fails here.
 *
 * Suites:
 *	 PublicIdHmac     HMAC-SHA-256 against vectors and pg_hmac
 *	 PublicIdCipher   permutation, inverse, known answers, unrelatedness
 *	 PublicIdText     the 14-character form
 *	 PublicIdKeyList  parsing snowflake.public_id_keys
 *
 *-------------------------------------------------------------------------
 */
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <set>
#include <string>

#include "core/publicid.hpp"

/* after GoogleTest: c.h's Max and Min macros would break its headers */
extern "C"
{
#include "postgres_fe.h"
#include "common/hmac.h"
}

using namespace snowflake;

namespace
{

std::string
hex(const uint8_t *p, size_t len)
{
	static const char digits[] = "0123456789abcdef";
	std::string s;

	for (size_t i = 0; i < len; i++)
	{
		s += digits[p[i] >> 4];
		s += digits[p[i] & 15];
	}
	return s;
}

std::string
hmac_hex(const std::string &key, const std::string &msg)
{
	HmacSha256Key k;
	uint8_t		out[32];

	hmac_sha256_prepare((const uint8_t *) key.data(), key.size(), &k);
	hmac_sha256(k, (const uint8_t *) msg.data(), msg.size(), nullptr, 0, out);
	return hex(out, 32);
}

/* The test key of the known answers: version 2. */
PublicIdKeys
test_keys()
{
	PublicIdKeys keys;
	char		err[256];

	EXPECT_TRUE(parse_public_id_keys("2:00112233445566778899aabbccddeeff,"
									 "1:ffeeddccbbaa99887766554433221100", &keys, err,
									 sizeof(err))) << err;
	return keys;
}

std::string
encode(const PublicIdKey &key, uint64_t id, const std::string &tweak = "")
{
	char		out[kPublicIdLength + 1];

	format_public_id(key.version,
					 public_id_encrypt(key, (const uint8_t *) tweak.data(), tweak.size(), id),
					 out);
	return out;
}

int
popcount64(uint64_t x)
{
	return __builtin_popcountll(x);
}

}								/* namespace */

/*---- PublicIdHmac ----*/

TEST(PublicIdHmac, Rfc4231Vectors)
{
	EXPECT_EQ(hmac_hex(std::string(20, '\x0b'), "Hi There"),
			  "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
	EXPECT_EQ(hmac_hex("Jefe", "what do ya want for nothing?"),
			  "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
	EXPECT_EQ(hmac_hex(std::string(20, '\xaa'), std::string(50, '\xdd')),
			  "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
	/* a key longer than a block is hashed first */
	EXPECT_EQ(hmac_hex(std::string(131, '\xaa'),
					   "Test Using Larger Than Block-Size Key - Hash Key First"),
			  "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

/* Random keys and messages of every length around the block edges, against OpenSSL's. */
TEST(PublicIdHmac, AgreesWithPgHmac)
{
	std::mt19937_64 rng(29);
	pg_hmac_ctx *ctx = pg_hmac_create(PG_SHA256);

	ASSERT_NE(ctx, nullptr);
	for (int trial = 0; trial < 2000; trial++)
	{
		size_t		keylen = 1 + rng() % 150;
		size_t		headlen = rng() % 140;
		size_t		taillen = rng() % 140;
		uint8_t		key[150], msg[280], ours[32], theirs[32];
		HmacSha256Key k;

		for (auto &b : key)
			b = (uint8_t) rng();
		for (auto &b : msg)
			b = (uint8_t) rng();
		hmac_sha256_prepare(key, keylen, &k);
		hmac_sha256(k, msg, headlen, msg + headlen, taillen, ours);
		ASSERT_EQ(pg_hmac_init(ctx, key, keylen), 0);
		ASSERT_EQ(pg_hmac_update(ctx, msg, headlen + taillen), 0);
		ASSERT_EQ(pg_hmac_final(ctx, theirs, sizeof(theirs)), 0);
		ASSERT_EQ(hex(ours, 32), hex(theirs, 32))
			<< "keylen " << keylen << " headlen " << headlen << " taillen " << taillen;
	}
	pg_hmac_free(ctx);
}

/*---- PublicIdCipher ----*/

/* Computed once with pg_hmac as the PRF; stable across platforms (no floating point, fixed byte order). */
TEST(PublicIdCipher, KnownAnswers)
{
	PublicIdKeys keys = test_keys();

	ASSERT_EQ(keys.count, 2);
	EXPECT_EQ(encode(keys.keys[0], 1), "2cn7sn1cj625wk");
	EXPECT_EQ(encode(keys.keys[0], 2), "298g2cs2rrctzt");
	EXPECT_EQ(encode(keys.keys[0], 3), "22w69ka3y8zbn0");
	EXPECT_EQ(encode(keys.keys[0], UINT64_MAX), "21j4rp21mg1m10");	/* bigint -1 */
	EXPECT_EQ(encode(keys.keys[0], 1, "orders"), "23r11p5c9952w1");
}

/*
 * Four keys (versions 2, 0, 31, 17; 128, 256, 512 and 192 bits), six IDs
 * and four tweaks (none; short; 37 bytes, the longest whose round input fits
 * one SHA-256 block; 90 bytes, two blocks), as the cipher computed them with
 * its own SHA-256 (before 1.3 moved the PRF to OpenSSL's libcrypto): every
 * public ID handed out before decodes to the same ID after.
 */
TEST(PublicIdCipher, KnownAnswersAcrossKeysAndTweaks)
{
	const char *keysets[] = {
		"2:00112233445566778899aabbccddeeff",
		"0:000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
		"31:f0e1d2c3b4a5968778695a4b3c2d1e0f0f1e2d3c4b5a69788796a5b4c3d2e1f0"
		"00112233445566778899aabbccddeeffffeeddccbbaa99887766554433221100",
		"17:5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a",
	};
	const char *tweaks[] = {
		"", "orders", "a tweak of exactly 37 bytes, no more.",
		"a much longer tweak that spans more than one SHA-256 block of sixty-four bytes: "
		"0123456789",
	};
	struct
	{
		int			keyset;
		uint64_t	id;
		int			tweak;
		const char *expected;
	}			vectors[] = {
	{0, 0x0000000000000000ULL, 0, "2fnm0v619nnf6m"},
	{0, 0x0000000000000000ULL, 1, "2ef3d3bt4j3bcb"},
	{0, 0x0000000000000000ULL, 2, "2247pzea57bte2"},
	{0, 0x0000000000000000ULL, 3, "2bde8ne2fkbnt0"},
	{0, 0x000000000000002aULL, 0, "27xyfna6z955gr"},
	{0, 0x000000000000002aULL, 1, "2fwt2p3kb02nfv"},
	{0, 0x000000000000002aULL, 2, "21xk5hkhpn8tz4"},
	{0, 0x000000000000002aULL, 3, "2dfk5an70dn8hx"},
	{0, 0x0000010000000000ULL, 0, "29qbkk6hbjgrsj"},
	{0, 0x0000010000000000ULL, 1, "2bxf5rcqbe6ymh"},
	{0, 0x0000010000000000ULL, 2, "21njnbk5hn6ab5"},
	{0, 0x0000010000000000ULL, 3, "27knb5rn049c4s"},
	{0, 0x7fffffffffffffffULL, 0, "2fcdxqc0kd8a7r"},
	{0, 0x7fffffffffffffffULL, 1, "25pk79mek04te8"},
	{0, 0x7fffffffffffffffULL, 2, "2dq9jz82kc604m"},
	{0, 0x7fffffffffffffffULL, 3, "27mpa793fq9pjy"},
	{0, 0x8000000000000000ULL, 0, "26cgjrnwnbbg0b"},
	{0, 0x8000000000000000ULL, 1, "2eet3mte4jgh6z"},
	{0, 0x8000000000000000ULL, 2, "28zcw6hadkct93"},
	{0, 0x8000000000000000ULL, 3, "24fjd5q5s3f4yb"},
	{0, 0x112210f47de98115ULL, 0, "27g8cp2zhtm87f"},
	{0, 0x112210f47de98115ULL, 1, "27jc7jv4319hya"},
	{0, 0x112210f47de98115ULL, 2, "2649swd1ty7xy6"},
	{0, 0x112210f47de98115ULL, 3, "29kz92hdk6vdzd"},
	{1, 0x0000000000000000ULL, 0, "0ccdtwp03vrtcd"},
	{1, 0x0000000000000000ULL, 1, "0750kyy0hrhqd5"},
	{1, 0x0000000000000000ULL, 2, "0bedm0t8t9t3dk"},
	{1, 0x0000000000000000ULL, 3, "02hbp78qhtfv6p"},
	{1, 0x000000000000002aULL, 0, "0dxrh8ga0w2mta"},
	{1, 0x000000000000002aULL, 1, "0b2v5yjpz08yz5"},
	{1, 0x000000000000002aULL, 2, "02xbhdr8ew086n"},
	{1, 0x000000000000002aULL, 3, "0df6ggsm0jqcb6"},
	{1, 0x0000010000000000ULL, 0, "03py3c01mrx23f"},
	{1, 0x0000010000000000ULL, 1, "06z44rnbrg6xmy"},
	{1, 0x0000010000000000ULL, 2, "032q66ftyq2wj8"},
	{1, 0x0000010000000000ULL, 3, "0drxt0kksgm3rz"},
	{1, 0x7fffffffffffffffULL, 0, "0102n03dbxbm89"},
	{1, 0x7fffffffffffffffULL, 1, "07d7n6x39mzjtt"},
	{1, 0x7fffffffffffffffULL, 2, "00rqfbma73nwp7"},
	{1, 0x7fffffffffffffffULL, 3, "0bmgr3kbm24sxs"},
	{1, 0x8000000000000000ULL, 0, "019gw6axxa8zed"},
	{1, 0x8000000000000000ULL, 1, "0cn13400f5sx87"},
	{1, 0x8000000000000000ULL, 2, "05ysvwwdfv7m01"},
	{1, 0x8000000000000000ULL, 3, "06apzjv3skv0yg"},
	{1, 0x112210f47de98115ULL, 0, "07aehw5ph2v94x"},
	{1, 0x112210f47de98115ULL, 1, "0ahvreg2v63rvv"},
	{1, 0x112210f47de98115ULL, 2, "05ktrxqqracfgf"},
	{1, 0x112210f47de98115ULL, 3, "02ht80273gqyy6"},
	{2, 0x0000000000000000ULL, 0, "z3ngqdc8zef1d0"},
	{2, 0x0000000000000000ULL, 1, "z0t5s39vnrzjmx"},
	{2, 0x0000000000000000ULL, 2, "z0qjpryad77sgz"},
	{2, 0x0000000000000000ULL, 3, "zecdqdtxkbjd79"},
	{2, 0x000000000000002aULL, 0, "zb9xqqph98m3d3"},
	{2, 0x000000000000002aULL, 1, "z1q27g6zjyn14w"},
	{2, 0x000000000000002aULL, 2, "z0v2z0hxgprc1h"},
	{2, 0x000000000000002aULL, 3, "z1byewg24wf47m"},
	{2, 0x0000010000000000ULL, 0, "z7fpqkmsd1b5s1"},
	{2, 0x0000010000000000ULL, 1, "zavzva699w0jr3"},
	{2, 0x0000010000000000ULL, 2, "z8brqvbp2psj8v"},
	{2, 0x0000010000000000ULL, 3, "zf7g21q5tzvwc2"},
	{2, 0x7fffffffffffffffULL, 0, "z56m99jzb3btqk"},
	{2, 0x7fffffffffffffffULL, 1, "z1pds76c8sac7v"},
	{2, 0x7fffffffffffffffULL, 2, "z0dezqw4ej1b6c"},
	{2, 0x7fffffffffffffffULL, 3, "zdbrj5v4f2hhd9"},
	{2, 0x8000000000000000ULL, 0, "z9gxpw7hmej9c4"},
	{2, 0x8000000000000000ULL, 1, "z43dt2p9e5tke3"},
	{2, 0x8000000000000000ULL, 2, "z7rj5gtkex167s"},
	{2, 0x8000000000000000ULL, 3, "z01a5saktdcqqe"},
	{2, 0x112210f47de98115ULL, 0, "z8h3k21394y4n4"},
	{2, 0x112210f47de98115ULL, 1, "ze8k7550r8gnrj"},
	{2, 0x112210f47de98115ULL, 2, "zch8cq8vw1k23z"},
	{2, 0x112210f47de98115ULL, 3, "z225s2q3vhb81y"},
	{3, 0x0000000000000000ULL, 0, "hbywf4v2z3tna4"},
	{3, 0x0000000000000000ULL, 1, "h268jxh1mc8wz8"},
	{3, 0x0000000000000000ULL, 2, "hcej4sy7dx94vh"},
	{3, 0x0000000000000000ULL, 3, "haxw1nqkfzj3yn"},
	{3, 0x000000000000002aULL, 0, "h2z8afmft40wch"},
	{3, 0x000000000000002aULL, 1, "h2shxhx2rkextg"},
	{3, 0x000000000000002aULL, 2, "h5cd0v3tgnbh5y"},
	{3, 0x000000000000002aULL, 3, "hc5c4debg4ngfa"},
	{3, 0x0000010000000000ULL, 0, "hescnxte6zj6nt"},
	{3, 0x0000010000000000ULL, 1, "h44rw0whk7r5xr"},
	{3, 0x0000010000000000ULL, 2, "hckez4j3b67rn9"},
	{3, 0x0000010000000000ULL, 3, "h64v89qatmevqp"},
	{3, 0x7fffffffffffffffULL, 0, "hdp66r4q9ygpnr"},
	{3, 0x7fffffffffffffffULL, 1, "hdtwzrjw0s748n"},
	{3, 0x7fffffffffffffffULL, 2, "hcqbf50k9az5xm"},
	{3, 0x7fffffffffffffffULL, 3, "h539rkf6wprk9s"},
	{3, 0x8000000000000000ULL, 0, "ha3a6bxbgttgs0"},
	{3, 0x8000000000000000ULL, 1, "h4k7zf1p52mrj2"},
	{3, 0x8000000000000000ULL, 2, "h6snbj7w5d3t7k"},
	{3, 0x8000000000000000ULL, 3, "hfq6016w4darpk"},
	{3, 0x112210f47de98115ULL, 0, "h4r1a12qjr84rs"},
	{3, 0x112210f47de98115ULL, 1, "heq65zeev2xk6s"},
	{3, 0x112210f47de98115ULL, 2, "h5mbp13gb6z9a5"},
	{3, 0x112210f47de98115ULL, 3, "hdj8f8zy58wbwp"},
	};

	ASSERT_EQ(strlen(tweaks[2]), 37u);
	ASSERT_EQ(strlen(tweaks[3]), 90u);
	for (const auto &v : vectors)
	{
		PublicIdKeys keys;
		char		err[256];
		int			version;
		uint64_t	block;
		const std::string tweak = tweaks[v.tweak];

		ASSERT_TRUE(parse_public_id_keys(keysets[v.keyset], &keys, err, sizeof(err))) << err;
		EXPECT_EQ(encode(keys.keys[0], v.id, tweak), v.expected)
			<< "key " << v.keyset << " id " << v.id << " tweak " << v.tweak;
		ASSERT_TRUE(parse_public_id(v.expected, strlen(v.expected), &version, &block));
		EXPECT_EQ(version, keys.keys[0].version);
		EXPECT_EQ(public_id_decrypt(keys.keys[0], (const uint8_t *) tweak.data(), tweak.size(),
									block), v.id) << v.expected;
	}
}

TEST(PublicIdCipher, InverseAndPermutation)
{
	PublicIdKeys keys = test_keys();
	std::mt19937_64 rng(7);
	std::set<uint64_t> seen;
	const uint64_t edges[] = {0, 1, UINT32_MAX, (uint64_t) UINT32_MAX + 1, INT64_MAX,
		(uint64_t) INT64_MAX + 1, UINT64_MAX};

	for (uint64_t id : edges)
		for (int k = 0; k < keys.count; k++)
			EXPECT_EQ(public_id_decrypt(keys.keys[k], nullptr, 0,
										public_id_encrypt(keys.keys[k], nullptr, 0, id)), id);
	/* 20,000 random IDs round-trip; 50,000 consecutive ones never collide */
	for (int i = 0; i < 20000; i++)
	{
		uint64_t	id = rng();

		ASSERT_EQ(public_id_decrypt(keys.keys[0], (const uint8_t *) "t", 1,
									public_id_encrypt(keys.keys[0], (const uint8_t *) "t", 1, id)), id);
	}
	for (uint64_t id = 1000; id < 51000; id++)
		seen.insert(public_id_encrypt(keys.keys[0], nullptr, 0, id));
	EXPECT_EQ(seen.size(), 50000u);
}

/*
 * Consecutive IDs give unrelated ciphertexts: every output bit flips with
 * probability 1/2 between id and id+1, and the mean Hamming distance is 32.
 * With 20,000 pairs one bit's rate has a standard deviation of 0.0035, the
 * mean distance 0.028: the bounds below are over ten deviations away, so a
 * sound cipher never fails them and a weak one (too few rounds, a round
 * function that ignores its input) does.
 */
TEST(PublicIdCipher, ConsecutiveIdsUnrelated)
{
	PublicIdKeys keys = test_keys();
	const int	pairs = 20000;
	int			flips[64] = {0};
	long		distance = 0;
	uint64_t	prev = public_id_encrypt(keys.keys[0], nullptr, 0, 1ULL << 40);

	for (int i = 1; i <= pairs; i++)
	{
		uint64_t	cur = public_id_encrypt(keys.keys[0], nullptr, 0, (1ULL << 40) + i);
		uint64_t	diff = prev ^ cur;

		distance += popcount64(diff);
		for (int b = 0; b < 64; b++)
			flips[b] += (int) ((diff >> b) & 1);
		prev = cur;
	}
	EXPECT_NEAR((double) distance / pairs, 32.0, 0.5);
	for (int b = 0; b < 64; b++)
		EXPECT_NEAR((double) flips[b] / pairs, 0.5, 0.05) << "bit " << b;
}

/* Two keys, two versions of one key, two tweaks: unrelated permutations. */
TEST(PublicIdCipher, KeysVersionsAndTweaksSeparate)
{
	PublicIdKeys keys = test_keys();
	PublicIdKeys same;
	char		err[256];
	long		d_key = 0, d_version = 0, d_tweak = 0;
	const int	n = 5000;

	ASSERT_TRUE(parse_public_id_keys("3:00112233445566778899aabbccddeeff", &same, err,
									 sizeof(err)));
	for (int i = 0; i < n; i++)
	{
		uint64_t	a = public_id_encrypt(keys.keys[0], nullptr, 0, (uint64_t) i);

		d_key += popcount64(a ^ public_id_encrypt(keys.keys[1], nullptr, 0, (uint64_t) i));
		d_version += popcount64(a ^ public_id_encrypt(same.keys[0], nullptr, 0, (uint64_t) i));
		d_tweak += popcount64(public_id_encrypt(keys.keys[0], (const uint8_t *) "orders", 6, i) ^
							  public_id_encrypt(keys.keys[0], (const uint8_t *) "users", 5, i));
	}
	EXPECT_NEAR((double) d_key / n, 32.0, 0.5);
	EXPECT_NEAR((double) d_version / n, 32.0, 0.5);
	EXPECT_NEAR((double) d_tweak / n, 32.0, 0.5);
	/* the tweak's length is part of the input: "ab" + "" is not "a" + "b" */
	EXPECT_NE(public_id_encrypt(keys.keys[0], (const uint8_t *) "ab", 2, 5),
			  public_id_encrypt(keys.keys[0], (const uint8_t *) "ab", 1, 5));
}

/*---- PublicIdText ----*/

TEST(PublicIdText, FormatAndParse)
{
	std::mt19937_64 rng(11);
	const uint64_t edges[] = {0, 1, UINT64_MAX, 1ULL << 63, (1ULL << 60) - 1};

	for (int i = 0; i < 10000 + 5; i++)
	{
		uint64_t	block = i < 5 ? edges[i] : rng();
		int			version = (int) (rng() % 32);
		char		out[kPublicIdLength + 1];
		int			v;
		uint64_t	back;

		format_public_id(version, block, out);
		ASSERT_EQ(strlen(out), (size_t) kPublicIdLength);
		for (int c = 0; c < kPublicIdLength; c++)
			ASSERT_TRUE(strchr("0123456789abcdefghjkmnpqrstvwxyz", out[c]) != nullptr) << out;
		ASSERT_TRUE(strchr("0123456789abcdef", out[1]) != nullptr) << out;
		ASSERT_TRUE(parse_public_id(out, strlen(out), &v, &back)) << out;
		EXPECT_EQ(v, version);
		EXPECT_EQ(back, block);
		/* either case */
		for (char *p = out; *p; p++)
			*p = (char) toupper((unsigned char) *p);
		ASSERT_TRUE(parse_public_id(out, strlen(out), &v, &back)) << out;
		EXPECT_EQ(back, block);
	}
}

TEST(PublicIdText, RefusesMalformed)
{
	int			v;
	uint64_t	b;
	const char *bad[] = {
		"", "2", "2cn7sn1cj625w", "2cn7sn1cj625wkk",	/* lengths */
		"2cn7sn1cj625wi", "2cn7sn1cj625wl", "2cn7sn1cj625wo", "2cn7sn1cj625wu",	/* no aliases */
		"2cn7sn1cj625w-", "2cn7sn1cj625w ", "-cn7sn1cj625wk", "2cn7sn1cj625w\xc3",
		"2gn7sn1cj625wk",		/* first data character above f: over 2^64 - 1 */
		"2zzzzzzzzzzzzz"};

	for (const char *s : bad)
		EXPECT_FALSE(parse_public_id(s, strlen(s), &v, &b)) << "\"" << s << "\"";
	/* an embedded NUL is a character like any other */
	EXPECT_FALSE(parse_public_id("2cn7sn1cj6\0" "5wk", 14, &v, &b));
	EXPECT_TRUE(parse_public_id("2fzzzzzzzzzzzz", 14, &v, &b));
	EXPECT_EQ(b, UINT64_MAX);
}

/*---- PublicIdKeys ----*/

TEST(PublicIdKeyList, Parses)
{
	PublicIdKeys keys;
	char		err[256];
	const std::string k128(32, 'a'), k512(128, 'F');

	ASSERT_TRUE(parse_public_id_keys("", &keys, err, sizeof(err)));
	EXPECT_EQ(keys.count, 0);
	ASSERT_TRUE(parse_public_id_keys("  ", &keys, err, sizeof(err)));
	EXPECT_EQ(keys.count, 0);
	ASSERT_TRUE(parse_public_id_keys((" 31 : " + k512 + " , 0:" + k128 + " ").c_str(), &keys,
									 err, sizeof(err))) << err;
	ASSERT_EQ(keys.count, 2);
	EXPECT_EQ(keys.keys[0].version, 31);
	EXPECT_EQ(keys.keys[1].version, 0);
	EXPECT_EQ(find_public_id_key(keys, 0), &keys.keys[1]);
	EXPECT_EQ(find_public_id_key(keys, 5), nullptr);
}

/* Each refusal says why, and never quotes the key. */
TEST(PublicIdKeyList, RefusesWithoutQuotingKeys)
{
	const std::string secret = "0123456789abcdef0123456789abcdef";
	const std::string cases[] = {
		secret,						/* no version */
		"x:" + secret,
		"32:" + secret,				/* versions go to 31 */
		"100:" + secret,
		"1:" + secret + ",1:" + secret,	/* listed twice */
		"1:" + secret.substr(0, 30),	/* 120 bits */
		"1:" + secret + "0",		/* odd */
		"1:" + secret + secret + secret + secret + "00",	/* 520 bits */
		"1:" + secret.substr(0, 31) + "g",	/* not hex */
		"1:" + secret + ";2:" + secret,
		"1:" + secret + " 2:" + secret,
		"1:" + secret + ",",
		"1:",
	};

	for (const std::string &c : cases)
	{
		PublicIdKeys keys;
		char		err[256] = "";

		EXPECT_FALSE(parse_public_id_keys(c.c_str(), &keys, err, sizeof(err))) << c;
		EXPECT_NE(err[0], '\0') << c;
		EXPECT_EQ(std::string(err).find(secret.substr(0, 8)), std::string::npos) << err;
	}
}

/* The list of versions for SHOW and errors: all 32 fit; a shorter buffer is never overrun. */
TEST(PublicIdKeyList, VersionsTextBounded)
{
	std::string text;
	PublicIdKeys keys;
	char		err[256];

	for (int v = kPublicIdMaxVersion; v >= 0; v--)
		text += (text.empty() ? "" : ",") + std::to_string(v) + ":" + std::string(32, 'a');
	ASSERT_TRUE(parse_public_id_keys(text.c_str(), &keys, err, sizeof(err))) << err;
	ASSERT_EQ(keys.count, kPublicIdMaxKeys);

	std::string all;
	for (int v = kPublicIdMaxVersion; v >= 0; v--)
		all += (all.empty() ? "" : ", ") + std::to_string(v);

	char		full[kPublicIdVersionsTextSize];

	EXPECT_TRUE(format_public_id_versions(keys, ", ", full, sizeof(full)));
	EXPECT_EQ(std::string(full), all);
	EXPECT_TRUE(format_public_id_versions(keys, ",", full, sizeof(full)));
	EXPECT_EQ(std::string(full).find(' '), std::string::npos);

	/* every shorter size: nothing written past it, a cut after a whole version */
	for (size_t size = 0; size <= all.size() + 1; size++)
	{
		std::string buf(size + 16, '#');
		bool		whole = format_public_id_versions(keys, ", ", &buf[0], size);

		for (size_t i = size; i < buf.size(); i++)
			ASSERT_EQ(buf[i], '#') << "size " << size << " written at " << i;
		if (size == 0)
			continue;
		std::string got(buf.c_str());

		ASSERT_LT(got.size(), size);
		EXPECT_EQ(whole, size == all.size() + 1) << size;
		if (!whole && size >= 4)
		{
			ASSERT_GE(got.size(), 3u);
			EXPECT_EQ(got.substr(got.size() - 3), "...") << size;
			EXPECT_EQ(all.compare(0, got.size() - 3, got, 0, got.size() - 3), 0) << got;
			/* cut after a whole version: what precedes "..." ends the list or a separator follows it */
			size_t		kept = got.size() - 3;

			EXPECT_TRUE(kept == 0 || all[kept] == ',') << got;
		}
	}

	PublicIdKeys none;

	ASSERT_TRUE(parse_public_id_keys("", &none, err, sizeof(err)));
	EXPECT_TRUE(format_public_id_versions(none, ", ", full, sizeof(full)));
	EXPECT_EQ(std::string(full), "");
}
