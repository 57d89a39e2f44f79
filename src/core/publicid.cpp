/*-------------------------------------------------------------------------
 *
 * publicid.cpp
 *		Public IDs: a keyed permutation of the 64-bit ID space (a balanced
 *		Feistel network over HMAC-SHA-256) and its text form.
 *
 * Design note.  A Snowflake ID tells its creation time, its shard and, from
 * two of them, how many IDs were issued in between.  A public ID hides all
 * three behind a key and stays reversible, so the database keeps the ordered
 * bigint and the outside world sees only an opaque string:
 *
 *	- the cipher is a balanced Feistel network on two 32-bit halves whose
 *	  round function is HMAC-SHA-256 (a standard PRF, computed by hmac.cpp over
 *	  OpenSSL's SHA-256, with the key's states computed once).  Luby and
 *	  Rackoff proved 4 rounds a strong pseudorandom permutation if the
 *	  round function is a PRF; on 32-bit
 *	  halves their bound is the birthday bound of 2^16 queries, and Patarin
 *	  showed that more rounds (6 and more) push it towards 2^32.  We take
 *	  10 rounds, as NIST SP 800-38G's FF1 does for every domain: FF1 is this
 *	  construction specialised to radix 2 with AES as the PRF; we use HMAC-
 *	  SHA-256, a PRF as standard, from the libcrypto PostgreSQL links.
 *	  The block is 64 bits, and that is the limit: an adversary who sees
 *	  about 2^32 (ID, public ID) pairs under one key is past every bound
 *	  (the README says so);
 *	- each PRF input carries a domain tag with the construction's version,
 *	  the key version, the round number, the half and the tweak with its
 *	  length, in a fixed layout, so no two rounds, keys or tweaks ever feed
 *	  the PRF the same bytes;
 *	- the text form is a key-version character and 13 characters of
 *	  Crockford's base32 alphabet (digits and lower-case letters without i,
 *	  l, o, u), 14 in all: URL-safe without escaping, readable aloud, and
 *	  decoded in either case.  The version character says which key to
 *	  decode with and nothing else.
 *
 *-------------------------------------------------------------------------
 */
#include "core/publicid.hpp"

#include <cstdio>
#include <cstring>

namespace snowflake
{

namespace
{

const char kAlphabet[] = "0123456789abcdefghjkmnpqrstvwxyz";

/* The value of a base32 character in either case, or -1 (no aliases). */
int
digit_value(char c) noexcept
{
	if (c >= 'A' && c <= 'Z')
		c = (char) (c - 'A' + 'a');
	for (int i = 0; i < 32; i++)
		if (kAlphabet[i] == c)
			return i;
	return -1;
}

int
hex_value(char c) noexcept
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

bool
is_space(char c) noexcept
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

void
put_be32(uint8_t *p, uint32_t v) noexcept
{
	p[0] = (uint8_t) (v >> 24);
	p[1] = (uint8_t) (v >> 16);
	p[2] = (uint8_t) (v >> 8);
	p[3] = (uint8_t) v;
}

/* The domain tag: the construction and its version ("public ID, v1"). */
const uint8_t kTag[8] = {'s', 'f', 'p', 'u', 'b', 'i', 'd', 1};

/* The round function: 32 bits of HMAC-SHA-256(key, tag|ver|round|half|tlen || tweak). */
uint32_t
round_function(const PublicIdKey &key, int round, uint32_t half, const uint8_t *tweak,
			   size_t tweaklen) noexcept
{
	uint8_t		head[8 + 1 + 1 + 4 + 4];
	uint8_t		mac[32];

	memcpy(head, kTag, 8);
	head[8] = (uint8_t) key.version;
	head[9] = (uint8_t) round;
	put_be32(head + 10, half);
	put_be32(head + 14, (uint32_t) tweaklen);
	hmac_sha256(key.hmac, head, sizeof(head), tweak, tweaklen, mac);
	return ((uint32_t) mac[0] << 24) | ((uint32_t) mac[1] << 16) |
		((uint32_t) mac[2] << 8) | (uint32_t) mac[3];
}

void
set_err(char *err, size_t errlen, const char *text) noexcept
{
	if (errlen > 0)
		snprintf(err, errlen, "%s", text);
}

}								/* namespace */

bool
parse_public_id_keys(const char *text, PublicIdKeys *out, char *err, size_t errlen) noexcept
{
	const char *p = text ? text : "";
	int			item = 0;

	out->count = 0;
	while (is_space(*p))
		p++;
	if (*p == '\0')
		return true;			/* no keys */
	for (;;)
	{
		int			version = 0, digits = 0, hexlen = 0;
		uint8_t		bytes[kPublicIdMaxKeyBytes];
		const char *hex;
		PublicIdKey *key;

		item++;
		while (is_space(*p))
			p++;
		while (*p >= '0' && *p <= '9' && digits < 3)
		{
			version = version * 10 + (*p - '0');
			digits++;
			p++;
		}
		while (is_space(*p))
			p++;
		if (digits == 0 || *p != ':')
		{
			if (errlen > 0)
				snprintf(err, errlen, "item %d is not of the form version:hexkey "
						 "(such as 2:<32 to 128 hex digits>)", item);
			return false;
		}
		p++;
		if (version > kPublicIdMaxVersion || digits > 2)
		{
			if (errlen > 0)
				snprintf(err, errlen, "item %d: key versions go from 0 to %d", item,
						 kPublicIdMaxVersion);
			return false;
		}
		if (find_public_id_key(*out, version) != nullptr)
		{
			if (errlen > 0)
				snprintf(err, errlen, "key version %d is listed twice", version);
			return false;
		}
		while (is_space(*p))
			p++;
		hex = p;
		while (*p != '\0' && *p != ',' && !is_space(*p))
		{
			if (hex_value(*p) < 0)
			{
				if (errlen > 0)
					snprintf(err, errlen, "the key of version %d is not hexadecimal", version);
				return false;
			}
			hexlen++;
			p++;
		}
		if (hexlen % 2 != 0 || hexlen < 2 * kPublicIdMinKeyBytes ||
			hexlen > 2 * kPublicIdMaxKeyBytes)
		{
			if (errlen > 0)
				snprintf(err, errlen, "the key of version %d must be %d to %d hex digits "
						 "(%d to %d bits), an even number", version,
						 2 * kPublicIdMinKeyBytes, 2 * kPublicIdMaxKeyBytes,
						 8 * kPublicIdMinKeyBytes, 8 * kPublicIdMaxKeyBytes);
			return false;
		}
		key = &out->keys[out->count];
		key->version = version;
		for (int i = 0; i < hexlen / 2; i++)
			bytes[i] = (uint8_t) (hex_value(hex[2 * i]) * 16 + hex_value(hex[2 * i + 1]));
		hmac_sha256_prepare(bytes, (size_t) hexlen / 2, &key->hmac);
		memset(bytes, 0, sizeof(bytes));
		out->count++;
		while (is_space(*p))
			p++;
		if (*p == '\0')
			return true;
		if (*p != ',')
		{
			set_err(err, errlen, "keys are separated by commas");
			return false;
		}
		p++;
		/* at most one key per version, so the count is bounded (checked above) */
	}
}

bool
format_public_id_versions(const PublicIdKeys &keys, const char *sep, char *out,
						  size_t outlen) noexcept
{
	size_t		used = 0;

	if (outlen == 0)
		return keys.count == 0;
	out[0] = '\0';
	for (int i = 0; i < keys.count; i++)
	{
		char		item[16];
		int			n = snprintf(item, sizeof(item), "%s%d", i == 0 ? "" : sep,
								 keys.keys[i].version);

		size_t		after = i == keys.count - 1 ? 1 : 4;	/* the NUL, or room for "..." */

		if (n < 0 || (size_t) n >= sizeof(item) || used + (size_t) n + after > outlen)
		{
			if (used + 4 <= outlen)
				memcpy(out + used, "...", 4);
			return false;
		}
		memcpy(out + used, item, (size_t) n + 1);
		used += (size_t) n;
	}
	return true;
}

const PublicIdKey *
find_public_id_key(const PublicIdKeys &keys, int version) noexcept
{
	for (int i = 0; i < keys.count; i++)
		if (keys.keys[i].version == version)
			return &keys.keys[i];
	return nullptr;
}

uint64_t
public_id_encrypt(const PublicIdKey &key, const uint8_t *tweak, size_t tweaklen,
				  uint64_t in) noexcept
{
	uint32_t	left = (uint32_t) (in >> 32), right = (uint32_t) in;

	for (int round = 0; round < kPublicIdRounds; round++)
	{
		uint32_t	next = left ^ round_function(key, round, right, tweak, tweaklen);

		left = right;
		right = next;
	}
	return ((uint64_t) left << 32) | right;
}

uint64_t
public_id_decrypt(const PublicIdKey &key, const uint8_t *tweak, size_t tweaklen,
				  uint64_t in) noexcept
{
	uint32_t	left = (uint32_t) (in >> 32), right = (uint32_t) in;

	for (int round = kPublicIdRounds - 1; round >= 0; round--)
	{
		uint32_t	prev = right ^ round_function(key, round, left, tweak, tweaklen);

		right = left;
		left = prev;
	}
	return ((uint64_t) left << 32) | right;
}

void
format_public_id(int version, uint64_t block, char out[kPublicIdLength + 1]) noexcept
{
	out[0] = kAlphabet[version & 31];
	/* 13 characters hold 65 bits: the first one the top 4 */
	for (int i = kPublicIdLength - 1; i >= 1; i--)
	{
		out[i] = kAlphabet[block & 31];
		block >>= 5;
	}
	out[kPublicIdLength] = '\0';
}

bool
parse_public_id(const char *text, size_t len, int *version, uint64_t *block) noexcept
{
	uint64_t	value = 0;
	int			v;

	if (len != (size_t) kPublicIdLength)
		return false;
	if ((v = digit_value(text[0])) < 0)
		return false;
	for (int i = 1; i < kPublicIdLength; i++)
	{
		int			d = digit_value(text[i]);

		if (d < 0 || (i == 1 && d > 15))
			return false;
		value = (value << 5) | (uint64_t) d;
	}
	*version = v;
	*block = value;
	return true;
}

}								/* namespace snowflake */
