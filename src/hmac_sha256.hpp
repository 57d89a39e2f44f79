/*-------------------------------------------------------------------------
 *
 * hmac_sha256.hpp
 *		SHA-256 (FIPS 180-4) and HMAC-SHA-256 (RFC 2104), with the key's
 *		inner and outer states computed once: the PRF of public IDs.
 *
 * Part of the core: plain C++ that never includes postgres.h, allocates or
 * throws.  Why not PostgreSQL's pg_hmac: through OpenSSL 3 one pg_hmac_init
 * + update + final costs about 7 us here, so the 10 rounds of a public ID
 * would cost 70 us; with the key's states kept, a round is two compression
 * calls (about 0.3 us each).  The unit tests check this code against
 * RFC 4231's vectors and against pg_hmac (OpenSSL's) on random inputs.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_HMAC_SHA256_HPP
#define SNOWFLAKE_HMAC_SHA256_HPP

#include <cstddef>
#include <cstdint>

namespace snowflake
{

/* A key ready for HMAC-SHA-256: the states after (key ^ ipad) and (key ^ opad). */
struct HmacSha256Key
{
	uint32_t	inner[8];
	uint32_t	outer[8];
};

/* SHA-256 of data. */
void		sha256(const uint8_t *data, size_t len, uint8_t out[32]) noexcept;

/* Prepares a key of any length (one over 64 bytes is hashed first, as RFC 2104 says). */
void		hmac_sha256_prepare(const uint8_t *key, size_t keylen, HmacSha256Key *out) noexcept;

/* HMAC-SHA-256(key, head || tail). */
void		hmac_sha256(const HmacSha256Key &key, const uint8_t *head, size_t headlen,
						const uint8_t *tail, size_t taillen, uint8_t out[32]) noexcept;

}								/* namespace snowflake */

#endif							/* SNOWFLAKE_HMAC_SHA256_HPP */
