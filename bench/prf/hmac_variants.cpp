/*
 * hmac_variants.cpp: what one public ID's PRF costs (10 rounds of
 * HMAC-SHA-256 over an 18-byte input under one prepared key) done each way
 * OpenSSL 3 allows, to choose src/core/hmac.cpp's (bench/README.md, "The
 * public IDs' PRF").
 *
 *   a. SHA256_CTX: the states after (key ^ ipad) and (key ^ opad) kept as
 *      plain structs and copied per round (what hmac.cpp does; the functions
 *      are deprecated in OpenSSL 3);
 *   b. EVP_MD_CTX: the same two states as prepared EVP digest contexts,
 *      EVP_MD_CTX_copy_ex() into a work context per round;
 *   c. EVP_MAC_CTX kept with its key, EVP_MAC_init(ctx, NULL, 0, NULL) per
 *      round (the key reused);
 *   d. EVP_MAC_CTX_dup() of a keyed context per round.
 *
 * Rounds interleave the four (the order rotating), each round timing N
 * public IDs of each with the thread's CPU clock; printed: each one's ns per
 * public ID, median [min-max] of the rounds, and each / a per round.  All
 * four must give the same MAC (checked first).
 *
 *   g++ -O2 -std=c++17 -o /tmp/hmac_variants bench/prf/hmac_variants.cpp -lcrypto
 *   /tmp/hmac_variants [rounds] [public IDs per round]
 */
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/sha.h>
#include <openssl/opensslv.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

namespace
{

const uint8_t kKey[16] = {0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77,
	0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff};
constexpr int kRounds = 10;		/* HMACs per public ID */

struct Variants
{
	SHA256_CTX	in, out;			/* a */
	EVP_MD_CTX *md_in, *md_out, *md_work;	/* b */
	EVP_MAC_CTX *mac;			/* c */
	EVP_MAC_CTX *keyed;			/* d: keyed, never used itself */
};

void
pads(uint8_t ipad[64], uint8_t opad[64])
{
	memset(ipad, 0x36, 64);
	memset(opad, 0x5c, 64);
	for (size_t i = 0; i < sizeof(kKey); i++)
	{
		ipad[i] ^= kKey[i];
		opad[i] ^= kKey[i];
	}
}

void
prepare(Variants *v)
{
	uint8_t		ipad[64], opad[64];
	EVP_MD	   *md = EVP_MD_fetch(NULL, "SHA256", NULL);
	EVP_MAC	   *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
	OSSL_PARAM	params[] = {
		OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *) "SHA256", 0),
		OSSL_PARAM_construct_end()};

	pads(ipad, opad);
	SHA256_Init(&v->in);
	SHA256_Update(&v->in, ipad, 64);
	SHA256_Init(&v->out);
	SHA256_Update(&v->out, opad, 64);
	v->md_in = EVP_MD_CTX_new();
	v->md_out = EVP_MD_CTX_new();
	v->md_work = EVP_MD_CTX_new();
	EVP_DigestInit_ex(v->md_in, md, NULL);
	EVP_DigestUpdate(v->md_in, ipad, 64);
	EVP_DigestInit_ex(v->md_out, md, NULL);
	EVP_DigestUpdate(v->md_out, opad, 64);
	v->mac = EVP_MAC_CTX_new(mac);
	EVP_MAC_init(v->mac, kKey, sizeof(kKey), params);
	v->keyed = EVP_MAC_CTX_new(mac);
	EVP_MAC_init(v->keyed, kKey, sizeof(kKey), params);
}

void
mac_a(Variants *v, const uint8_t *msg, size_t len, uint8_t out[32])
{
	SHA256_CTX	c = v->in;

	SHA256_Update(&c, msg, len);
	SHA256_Final(out, &c);
	c = v->out;
	SHA256_Update(&c, out, 32);
	SHA256_Final(out, &c);
}

void
mac_b(Variants *v, const uint8_t *msg, size_t len, uint8_t out[32])
{
	unsigned	n;

	EVP_MD_CTX_copy_ex(v->md_work, v->md_in);
	EVP_DigestUpdate(v->md_work, msg, len);
	EVP_DigestFinal_ex(v->md_work, out, &n);
	EVP_MD_CTX_copy_ex(v->md_work, v->md_out);
	EVP_DigestUpdate(v->md_work, out, 32);
	EVP_DigestFinal_ex(v->md_work, out, &n);
}

void
mac_c(Variants *v, const uint8_t *msg, size_t len, uint8_t out[32])
{
	size_t		n;

	EVP_MAC_init(v->mac, NULL, 0, NULL);
	EVP_MAC_update(v->mac, msg, len);
	EVP_MAC_final(v->mac, out, &n, 32);
}

void
mac_d(Variants *v, const uint8_t *msg, size_t len, uint8_t out[32])
{
	size_t		n;
	EVP_MAC_CTX *d = EVP_MAC_CTX_dup(v->keyed);

	EVP_MAC_update(d, msg, len);
	EVP_MAC_final(d, out, &n, 32);
	EVP_MAC_CTX_free(d);
}

typedef void (*MacFn) (Variants *, const uint8_t *, size_t, uint8_t *);

const struct
{
	const char *label;
	MacFn		fn;
}			kVariants[] = {
	{"a. SHA256_CTX copies (hmac.cpp)", mac_a},
	{"b. EVP_MD_CTX_copy_ex of prepared contexts", mac_b},
	{"c. EVP_MAC_init with the kept key", mac_c},
	{"d. EVP_MAC_CTX_dup of a keyed context", mac_d},
};
constexpr int kCount = 4;

int64_t
cpu_ns()
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ns per public ID: n public IDs of kRounds MACs each, the input changing with the output. */
double
time_one(Variants *v, MacFn fn, int n, volatile uint8_t *sink)
{
	uint8_t		msg[18] = {'s', 'f', 'p', 'u', 'b', 'i', 'd', 1, 2, 0};
	uint8_t		out[32];
	int64_t		t0 = cpu_ns();

	for (int i = 0; i < n; i++)
		for (int r = 0; r < kRounds; r++)
		{
			msg[9] = (uint8_t) r;
			fn(v, msg, sizeof(msg), out);
			memcpy(msg + 10, out, 4);
		}
	*sink ^= out[0];
	return (double) (cpu_ns() - t0) / n;
}

double
median(std::vector<double> x)
{
	std::sort(x.begin(), x.end());
	return x.size() % 2 ? x[x.size() / 2] : (x[x.size() / 2 - 1] + x[x.size() / 2]) / 2;
}

}								/* namespace */

int
main(int argc, char **argv)
{
	int			rounds = argc > 1 ? atoi(argv[1]) : 21;
	int			n = argc > 2 ? atoi(argv[2]) : 20000;
	Variants	v;
	volatile uint8_t sink = 0;
	std::vector<double> ns[kCount], ratio[kCount];
	uint8_t		ref[32], got[32];
	const uint8_t msg[18] = {1, 2, 3};

	prepare(&v);
	mac_a(&v, msg, sizeof(msg), ref);
	for (int k = 1; k < kCount; k++)
	{
		kVariants[k].fn(&v, msg, sizeof(msg), got);
		if (memcmp(ref, got, 32) != 0)
		{
			fprintf(stderr, "%s gives another MAC than a\n", kVariants[k].label);
			return 1;
		}
	}
	for (int k = 0; k < kCount; k++)
		(void) time_one(&v, kVariants[k].fn, n / 10, &sink);	/* warm-up */
	for (int r = 0; r < rounds; r++)
	{
		double		t[kCount];

		for (int j = 0; j < kCount; j++)
		{
			int			k = (j + r) % kCount;

			t[k] = time_one(&v, kVariants[k].fn, n, &sink);
		}
		for (int k = 0; k < kCount; k++)
		{
			ns[k].push_back(t[k]);
			ratio[k].push_back(t[k] / t[0]);
		}
	}
	printf("%s; %d rounds of %d public IDs (10 HMAC-SHA-256 each) per way, interleaved\n",
		   OPENSSL_VERSION_TEXT, rounds, n);
	printf("| way | CPU ns per public ID, median [min-max] | it / a, per round: median [min-max] |\n");
	printf("|---|---:|---:|\n");
	for (int k = 0; k < kCount; k++)
		printf("| %s | %.0f [%.0f-%.0f] | %.2f [%.2f-%.2f] |\n", kVariants[k].label,
			   median(ns[k]), *std::min_element(ns[k].begin(), ns[k].end()),
			   *std::max_element(ns[k].begin(), ns[k].end()), median(ratio[k]),
			   *std::min_element(ratio[k].begin(), ratio[k].end()),
			   *std::max_element(ratio[k].begin(), ratio[k].end()));
	return 0;
}
