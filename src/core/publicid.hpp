/*-------------------------------------------------------------------------
 *
 * publicid.hpp
 *		Public IDs: a keyed, reversible permutation of the 64-bit ID space
 *		and its fixed-length, URL-safe text form (see publicid.cpp and the
 *		README's "Public IDs").
 *
 * Part of the core: plain C++ that never includes postgres.h, allocates or
 * throws.  Its PRF is HMAC-SHA-256 (hmac.hpp, over OpenSSL's libcrypto).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_PUBLICID_HPP
#define SNOWFLAKE_PUBLICID_HPP

#include <cstddef>
#include <cstdint>

#include "core/hmac.hpp"

namespace snowflake
{

/* Rounds of the Feistel network (as NIST SP 800-38G's FF1). */
constexpr int kPublicIdRounds = 10;
/* The text form: one key-version character, then 13 of the ciphertext. */
constexpr int kPublicIdLength = 14;
/* Key versions are one character of the base32 alphabet. */
constexpr int kPublicIdMaxVersion = 31;
/* Keys: 128 to 512 bits, written in hex. */
constexpr int kPublicIdMinKeyBytes = 16;
constexpr int kPublicIdMaxKeyBytes = 64;
constexpr int kPublicIdMaxKeys = kPublicIdMaxVersion + 1;

/* A key, kept only as its prepared HMAC states. */
struct PublicIdKey
{
	int			version;
	HmacSha256Key hmac;
};

/* A parsed snowflake.public_id_keys: keys[0] encodes, every one decodes. */
struct PublicIdKeys
{
	int			count;
	PublicIdKey keys[kPublicIdMaxKeys];
};

/*
 * Parses "2:<hex>,1:<hex>" (spaces around items allowed; empty: no keys).
 * On failure writes the reason to err, which never quotes key material.
 */
bool		parse_public_id_keys(const char *text, PublicIdKeys *out,
								 char *err, size_t errlen) noexcept;

/*
 * Room for the versions of a full key list as text: 32 versions of up to 2
 * digits, each after a separator of up to 2 characters, and a NUL.
 */
constexpr size_t kPublicIdVersionsTextSize = kPublicIdMaxKeys * (2 + 2) + 1;

/*
 * Writes the key versions in order, separated by sep ("," or ", "), and a NUL
 * into out; never past outlen (a shorter buffer gets the versions that fit,
 * cut after a whole one, and "..."); returns false when it had to cut.
 */
bool		format_public_id_versions(const PublicIdKeys &keys, const char *sep, char *out,
									  size_t outlen) noexcept;

/* The key of a version, or nullptr. */
const PublicIdKey *find_public_id_key(const PublicIdKeys &keys, int version) noexcept;

/* The permutation and its inverse, under one key and tweak (any bytes). */
uint64_t	public_id_encrypt(const PublicIdKey &key, const uint8_t *tweak, size_t tweaklen,
							  uint64_t in) noexcept;
uint64_t	public_id_decrypt(const PublicIdKey &key, const uint8_t *tweak, size_t tweaklen,
							  uint64_t in) noexcept;

/* Writes the text form of (version, ciphertext) and a NUL into out[15]. */
void		format_public_id(int version, uint64_t block,
							 char out[kPublicIdLength + 1]) noexcept;

/*
 * Parses a text form (either case); false when it is not one: wrong length,
 * a character outside the alphabet, or a value above 2^64 - 1.
 */
bool		parse_public_id(const char *text, size_t len, int *version,
							uint64_t *block) noexcept;

}								/* namespace snowflake */

#endif							/* SNOWFLAKE_PUBLICID_HPP */
