/*-------------------------------------------------------------------------
 *
 * hmac.hpp
 *		HMAC-SHA-256 (RFC 2104) with the key's inner and outer states
 *		prepared once, over OpenSSL's libcrypto: the PRF of public IDs.
 *
 * Part of the core: plain C++ that never includes postgres.h, allocates or
 * throws.  SHA-256 itself is libcrypto's (its assembly: SHA-NI or AVX2 where
 * the CPU has them); PostgreSQL links the same library on every platform we
 * ship.
 *
 * Why OpenSSL's SHA256_CTX and not EVP_MAC.  A prepared key is two SHA-256
 * states, the one after (key ^ ipad) and the one after (key ^ opad); a round
 * copies one, hashes its input, copies the other and hashes the first digest.
 * SHA256_CTX is a plain struct: the key lives by value in the setting's
 * "extra" (which PostgreSQL copies and frees with free(), never running a
 * destructor), every copy is a memcpy, and nothing is allocated or can fail
 * per call.  OpenSSL 3 marks SHA256_Init/Update/Final deprecated in favour of
 * EVP, whose contexts are heap objects that a copy allocates again
 * (EVP_MD_CTX_copy_ex, EVP_MAC_CTX_dup, EVP_MAC_init with the kept key).
 * bench/prf/hmac_variants.cpp measures the four ways side by side (OpenSSL
 * 3.0.19, SHA-NI, 21 interleaved rounds): per public ID, SHA256_CTX 1,053 ns,
 * EVP_MD_CTX_copy_ex 1.50 times that, EVP_MAC_init 2.03 times,
 * EVP_MAC_CTX_dup 4.59 times.  The deprecated functions are in
 * every OpenSSL 3 release (3.0 to 3.6 here); hmac.cpp alone uses them.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_HMAC_HPP
#define SNOWFLAKE_HMAC_HPP

#include <cstddef>
#include <cstdint>

#include <openssl/sha.h>

namespace snowflake
{

/* A key ready for HMAC-SHA-256: the states after (key ^ ipad) and (key ^ opad). */
struct HmacSha256Key
{
	SHA256_CTX	inner;
	SHA256_CTX	outer;
};

/* Prepares a key of any length (one over 64 bytes is hashed first, as RFC 2104 says). */
void		hmac_sha256_prepare(const uint8_t *key, size_t keylen, HmacSha256Key *out) noexcept;

/* HMAC-SHA-256(key, head || tail): two copies of a prepared state, no allocation. */
void		hmac_sha256(const HmacSha256Key &key, const uint8_t *head, size_t headlen,
						const uint8_t *tail, size_t taillen, uint8_t out[32]) noexcept;

}								/* namespace snowflake */

#endif							/* SNOWFLAKE_HMAC_HPP */
