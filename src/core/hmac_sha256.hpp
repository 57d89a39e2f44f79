/*-------------------------------------------------------------------------
 *
 * hmac_sha256.hpp
 *		SHA-256 (FIPS 180-4) and HMAC-SHA-256 (RFC 2104), with the key's
 *		inner and outer states computed once: the PRF of public IDs.
 *
 * Part of the core: plain C++ that never includes postgres.h, allocates or
 * throws.  Why not PostgreSQL's pg_hmac: through OpenSSL 3 it sets the key
 * up again at every pg_hmac_init (0.9 us of CPU per round measured here,
 * 9.5 us for a public ID's 10 rounds), it allocates, registers with a
 * resource owner and can fail; with the key's states kept from the reload a
 * round is two compressions (6.5 us a public ID, measured alike), and the
 * core needs no library.  The unit tests check this code against FIPS
 * 180-4's and RFC 4231's vectors and against pg_hmac on random inputs.
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
