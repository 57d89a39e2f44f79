/*-------------------------------------------------------------------------
 *
 * hmac.cpp
 *		HMAC-SHA-256 with prepared key states, over libcrypto's SHA-256
 *		(see hmac.hpp for why SHA256_CTX).
 *
 *-------------------------------------------------------------------------
 */

/* SHA256_Init/Update/Final: deprecated in OpenSSL 3, kept on purpose (hmac.hpp) */
#define OPENSSL_SUPPRESS_DEPRECATED

#include "core/hmac.hpp"

#include <cstring>

#include <openssl/crypto.h>

namespace snowflake
{

namespace
{

constexpr size_t kBlock = 64;

/* The state after one block of (key ^ pad). */
void
pad_state(const uint8_t *key, size_t keylen, uint8_t pad, SHA256_CTX *out) noexcept
{
	uint8_t		block[kBlock];

	memset(block, pad, sizeof(block));
	for (size_t i = 0; i < keylen; i++)
		block[i] ^= key[i];
	SHA256_Init(out);
	SHA256_Update(out, block, sizeof(block));
	OPENSSL_cleanse(block, sizeof(block));
}

}								/* namespace */

void
hmac_sha256_prepare(const uint8_t *key, size_t keylen, HmacSha256Key *out) noexcept
{
	uint8_t		hashed[SHA256_DIGEST_LENGTH];

	if (keylen > kBlock)
	{
		SHA256(key, keylen, hashed);
		key = hashed;
		keylen = sizeof(hashed);
	}
	pad_state(key, keylen, 0x36, &out->inner);
	pad_state(key, keylen, 0x5c, &out->outer);
	OPENSSL_cleanse(hashed, sizeof(hashed));
}

void
hmac_sha256(const HmacSha256Key &key, const uint8_t *head, size_t headlen,
			const uint8_t *tail, size_t taillen, uint8_t out[32]) noexcept
{
	SHA256_CTX	ctx = key.inner;

	SHA256_Update(&ctx, head, headlen);
	if (taillen > 0)
		SHA256_Update(&ctx, tail, taillen);
	SHA256_Final(out, &ctx);
	ctx = key.outer;
	SHA256_Update(&ctx, out, SHA256_DIGEST_LENGTH);
	SHA256_Final(out, &ctx);
	/* ctx now holds the digest, no key state: SHA256_Final clears its block */
}

}								/* namespace snowflake */
