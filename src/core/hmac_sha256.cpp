/*-------------------------------------------------------------------------
 *
 * hmac_sha256.cpp
 *		SHA-256 (FIPS 180-4) and HMAC-SHA-256 (RFC 2104) with prepared keys
 *		(see hmac_sha256.hpp).  Straight from the standards: no lookup
 *		indexed by data, so its time does not depend on the key or message.
 *
 *-------------------------------------------------------------------------
 */
#include "core/hmac_sha256.hpp"

#include <cstring>

namespace snowflake
{

namespace
{

const uint32_t kRound[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

const uint32_t kInitial[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
							  0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

inline uint32_t
rotr(uint32_t x, int n) noexcept
{
	return (x >> n) | (x << (32 - n));
}

/* One compression of a 64-byte block into state. */
void
compress(uint32_t state[8], const uint8_t block[64]) noexcept
{
	uint32_t	w[64];
	uint32_t	a = state[0], b = state[1], c = state[2], d = state[3];
	uint32_t	e = state[4], f = state[5], g = state[6], h = state[7];

	for (int i = 0; i < 16; i++)
		w[i] = ((uint32_t) block[4 * i] << 24) | ((uint32_t) block[4 * i + 1] << 16) |
			((uint32_t) block[4 * i + 2] << 8) | (uint32_t) block[4 * i + 3];
	for (int i = 16; i < 64; i++)
	{
		uint32_t	s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
		uint32_t	s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);

		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	for (int i = 0; i < 64; i++)
	{
		uint32_t	s1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
		uint32_t	ch = (e & f) ^ (~e & g);
		uint32_t	t1 = h + s1 + ch + kRound[i] + w[i];
		uint32_t	s0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
		uint32_t	maj = (a & b) ^ (a & c) ^ (b & c);
		uint32_t	t2 = s0 + maj;

		h = g;
		g = f;
		f = e;
		e = d + t1;
		d = c;
		c = b;
		b = a;
		a = t1 + t2;
	}
	state[0] += a;
	state[1] += b;
	state[2] += c;
	state[3] += d;
	state[4] += e;
	state[5] += f;
	state[6] += g;
	state[7] += h;
}

/* A running hash: a state, the bytes of a partial block, the total length. */
struct Hasher
{
	uint32_t	state[8];
	uint8_t		buf[64];
	size_t		buflen;
	uint64_t	total;

	void		start(const uint32_t from[8], uint64_t done) noexcept
	{
		memcpy(state, from, sizeof(state));
		buflen = 0;
		total = done;
	}

	void		update(const uint8_t *p, size_t len) noexcept
	{
		total += len;
		while (len > 0)
		{
			size_t		take = 64 - buflen < len ? 64 - buflen : len;

			memcpy(buf + buflen, p, take);
			buflen += take;
			p += take;
			len -= take;
			if (buflen == 64)
			{
				compress(state, buf);
				buflen = 0;
			}
		}
	}

	void		finish(uint8_t out[32]) noexcept
	{
		uint64_t	bits = total * 8;

		buf[buflen++] = 0x80;
		if (buflen > 56)
		{
			memset(buf + buflen, 0, 64 - buflen);
			compress(state, buf);
			buflen = 0;
		}
		memset(buf + buflen, 0, 56 - buflen);
		for (int i = 0; i < 8; i++)
			buf[56 + i] = (uint8_t) (bits >> (56 - 8 * i));
		compress(state, buf);
		for (int i = 0; i < 8; i++)
		{
			out[4 * i] = (uint8_t) (state[i] >> 24);
			out[4 * i + 1] = (uint8_t) (state[i] >> 16);
			out[4 * i + 2] = (uint8_t) (state[i] >> 8);
			out[4 * i + 3] = (uint8_t) state[i];
		}
	}
};

}								/* namespace */

void
sha256(const uint8_t *data, size_t len, uint8_t out[32]) noexcept
{
	Hasher		h;

	h.start(kInitial, 0);
	h.update(data, len);
	h.finish(out);
}

void
hmac_sha256_prepare(const uint8_t *key, size_t keylen, HmacSha256Key *out) noexcept
{
	uint8_t		block[64] = {0};
	uint8_t		pad[64];

	if (keylen > 64)
		sha256(key, keylen, block);
	else if (keylen > 0)
		memcpy(block, key, keylen);
	for (int i = 0; i < 64; i++)
		pad[i] = block[i] ^ 0x36;
	memcpy(out->inner, kInitial, sizeof(kInitial));
	compress(out->inner, pad);
	for (int i = 0; i < 64; i++)
		pad[i] = block[i] ^ 0x5c;
	memcpy(out->outer, kInitial, sizeof(kInitial));
	compress(out->outer, pad);
	memset(block, 0, sizeof(block));
	memset(pad, 0, sizeof(pad));
}

void
hmac_sha256(const HmacSha256Key &key, const uint8_t *head, size_t headlen,
			const uint8_t *tail, size_t taillen, uint8_t out[32]) noexcept
{
	Hasher		h;
	uint8_t		inner[32];

	h.start(key.inner, 64);
	h.update(head, headlen);
	if (taillen > 0)
		h.update(tail, taillen);
	h.finish(inner);
	h.start(key.outer, 64);
	h.update(inner, sizeof(inner));
	h.finish(out);
}

}								/* namespace snowflake */
