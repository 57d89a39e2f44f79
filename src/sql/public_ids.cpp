/*-------------------------------------------------------------------------
 *
 * public_ids.cpp
 *		Public IDs in SQL: the setting snowflake.public_id_keys and
 *		snowflake_public_id() / snowflake_from_public_id(), over the cipher
 *		of publicid.cpp.
 *
 * Keeping the keys secret.  The setting is superuser-only (SHOW,
 * current_setting() and pg_settings refuse other roles), cannot be set with
 * ALTER SYSTEM (the keys would pass through SQL text, which the log,
 * pg_stat_activity and pg_stat_statements keep), and PostgreSQL itself never
 * gets to print it:
 *
 *	- a value that does not parse is refused with our own message
 *	  (GUC_check_errmsg), which says what is wrong and never quotes the value
 *	  (PostgreSQL's own "invalid value for parameter" message would);
 *	- a value that parses is replaced, in the variable, by one fixed mask,
 *	  and the parsed keys travel as the GUC's "extra".  The postmaster logs
 *	  "parameter ... changed to <the new value from the file>" at every
 *	  reload that changes a setting's variable; ours never changes, so that
 *	  line is never written;
 *	- the show hook prints the key versions, never a key.
 *
 * A parallel worker receives the leader's settings as their variables, so
 * ours arrives as the mask.  The worker is forked from the postmaster, which
 * parsed the same file (before any backend did), so the mask then stands
 * for the keys this process parsed last (sf_publicid_parsed).
 *
 * The SQL layer; it calls only the core (publicid.cpp) and settings.hpp.
 *
 *-------------------------------------------------------------------------
 */
#include <cstring>

#include "core/publicid.hpp"
#include "sql/public_ids.hpp"
#include "settings/guc.hpp"
#include "settings/settings.hpp"

extern "C"
{
#include "postgres.h"
#include "access/parallel.h"
#include "fmgr.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/guc.h"
}

extern "C"
{
PG_FUNCTION_INFO_V1(snowflake_public_id);
PG_FUNCTION_INFO_V1(snowflake_from_public_id);
}

/*---- settings ----*/

/* What the variable holds whatever the keys (see the header comment). */
#define SF_PUBLICID_MASK "(hidden)"

static char *sf_public_id_keys = NULL;

/* The keys in force in this backend (the GUC's extra), or NULL before the setting exists. */
static const snowflake::PublicIdKeys *sf_publicid_keys = NULL;

/* The keys this process parsed last, for a parallel worker's mask. */
static snowflake::PublicIdKeys sf_publicid_parsed;
static bool sf_publicid_parsed_valid = false;

/* Whether the last value checked was refused (for the rule at start). */
static bool sf_publicid_refused = false;

static void
sf_publicid_guc_free(void *p)
{
#if PG_VERSION_NUM >= 160000
	guc_free(p);
#else
	free(p);
#endif
}

/* Parses the keys; refuses without quoting the value; leaves the mask in the variable. */
static bool
sf_publicid_check_keys(char **newval, void **extra, GucSource source)
{
	const char *value = *newval ? *newval : "";
	snowflake::PublicIdKeys *keys;
	char	   *mask;
	char		err[256];

	keys = (snowflake::PublicIdKeys *) sf_guc_malloc(sizeof(*keys));
	mask = (char *) sf_guc_malloc(sizeof(SF_PUBLICID_MASK));
	if (keys == NULL || mask == NULL)
	{
		if (keys)
			sf_publicid_guc_free(keys);
		if (mask)
			sf_publicid_guc_free(mask);
		GUC_check_errcode(ERRCODE_OUT_OF_MEMORY);
		GUC_check_errmsg("out of memory");
		return false;
	}
	strcpy(mask, SF_PUBLICID_MASK);
	keys->count = 0;
	sf_publicid_refused = true;
	if (strcmp(value, SF_PUBLICID_MASK) == 0)
	{
		/* the default; or a parallel worker receiving its leader's keys */
		if (source != PGC_S_DEFAULT && InitializingParallelWorker && sf_publicid_parsed_valid)
			*keys = sf_publicid_parsed;
		else if (source != PGC_S_DEFAULT && !InitializingParallelWorker)
		{
			sf_publicid_guc_free(keys);
			sf_publicid_guc_free(mask);
			GUC_check_errmsg("invalid value for parameter \"snowflake.public_id_keys\"");
			GUC_check_errdetail("The value must list keys as version:hexkey, separated by commas.");
			return false;
		}
	}
	else if (!snowflake::parse_public_id_keys(value, keys, err, sizeof(err)))
	{
		sf_publicid_guc_free(keys);
		sf_publicid_guc_free(mask);
		GUC_check_errmsg("invalid value for parameter \"snowflake.public_id_keys\"");
		err[0] = (char) pg_toupper((unsigned char) err[0]);
		GUC_check_errdetail("%s; the value is not shown because it holds keys.", err);
		GUC_check_errhint("Write snowflake.public_id_keys = 'version:hexkey, ...', such as "
						  "'2:<32 to 128 hex digits>,1:<...>': the first key encodes, every "
						  "one listed decodes.");
		return false;
	}
	else
	{
		sf_publicid_parsed = *keys;
		sf_publicid_parsed_valid = true;
	}
	sf_publicid_guc_free(*newval);
	*newval = mask;
	*extra = keys;
	sf_publicid_refused = false;
	return true;
}

static void
sf_publicid_assign_keys(const char *, void *extra)
{
	sf_publicid_keys = (const snowflake::PublicIdKeys *) extra;
}

/* SHOW and pg_settings: the key versions in order, never a key. */
static const char *
sf_publicid_show_keys(void)
{
	static char shown[snowflake::kPublicIdVersionsTextSize + 40];
	char		versions[snowflake::kPublicIdVersionsTextSize];

	if (sf_publicid_keys == NULL || sf_publicid_keys->count == 0)
		return "(none)";
	(void) snowflake::format_public_id_versions(*sf_publicid_keys, ",", versions,
												sizeof(versions));
	snprintf(shown, sizeof(shown), "versions %s (keys not shown)", versions);
	return shown;
}

/*
 * Whether the keys configured were applied: the variable holds the mask
 * whatever they are, so the check hook's verdict tells.
 */
static bool
sf_publicid_applied(const char *)
{
	return !sf_publicid_refused;
}

void
sf_publicid_define_settings(void)
{
	/* never printed (see the header comment) */
	static const SfStringStart keys_start = {
		sf_publicid_applied, "The value is not shown because it holds keys.",
		"See the warning above for what is wrong; the snowflake extension "
		"refuses to start rather than run without the keys."
	};

	/*
	 * superusers only; not through ALTER SYSTEM; never printed (see the
	 * header comment)
	 */
	sf_define_setting("snowflake.public_id_keys",
					  "Keys of public IDs: version:hexkey, comma-separated; the first "
					  "encodes, every one listed decodes.",
					  "Versions 0 to 31, keys of 128 to 512 bits in hex. Superusers "
					  "only; never shown: SHOW prints the key versions.",
					  &sf_public_id_keys, SF_PUBLICID_MASK, PGC_SIGHUP,
					  GUC_SUPERUSER_ONLY | GUC_NOT_IN_SAMPLE | GUC_DISALLOW_IN_AUTO_FILE,
					  sf_publicid_check_keys, sf_publicid_assign_keys, sf_publicid_show_keys,
					  &keys_start);
	/* at start nonsense stops the server, as for every snowflake.* setting */
	sf_require_settings_applied();
}

/*---- the cipher ----*/

/* Runs the cipher one way under a key and an optional tweak. */
static uint64
sf_publicid_cipher(const snowflake::PublicIdKey &key, text *tweak, uint64 in, bool encrypt)
{
	const uint8_t *tweak_bytes = tweak ? (const uint8_t *) VARDATA_ANY(tweak) : NULL;
	size_t		tweak_len = tweak ? VARSIZE_ANY_EXHDR(tweak) : 0;

	return encrypt ? snowflake::public_id_encrypt(key, tweak_bytes, tweak_len, in)
		: snowflake::public_id_decrypt(key, tweak_bytes, tweak_len, in);
}

/* The keys in force; errors out when there are none. */
static const snowflake::PublicIdKeys &
sf_publicid_require_keys(void)
{
	if (sf_publicid_keys == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("snowflake must be loaded via shared_preload_libraries"),
				 errhint("Add snowflake to shared_preload_libraries in postgresql.conf "
						 "and restart the server.")));
	if (sf_publicid_keys->count == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("snowflake.public_id_keys is not set"),
				 errdetail("Public IDs need a key."),
				 errhint("Put snowflake.public_id_keys = 'version:hexkey' (such as 1: and 32 "
						 "random hex digits, from openssl rand -hex 16) in a configuration file "
						 "only the server can read, include it from postgresql.conf, and "
						 "reload; see \"Public IDs\" in the README.")));
	return *sf_publicid_keys;
}

/*---- SQL-callable functions ----*/

/* snowflake_public_id(id bigint [, tweak text]): the public ID of an ID, under the first key. */
extern "C" Datum
snowflake_public_id(PG_FUNCTION_ARGS)
{
	int64		id = PG_GETARG_INT64(0);
	text	   *tweak = PG_NARGS() > 1 ? PG_GETARG_TEXT_PP(1) : NULL;
	const snowflake::PublicIdKeys &keys = sf_publicid_require_keys();
	char		out[snowflake::kPublicIdLength + 1];
	uint64		block;

	block = sf_publicid_cipher(keys.keys[0], tweak, (uint64) id, true);
	snowflake::format_public_id(keys.keys[0].version, block, out);
	PG_RETURN_TEXT_P(cstring_to_text(out));
}

/* snowflake_from_public_id(public_id text [, tweak text]): the ID of a public ID. */
extern "C" Datum
snowflake_from_public_id(PG_FUNCTION_ARGS)
{
	text	   *in = PG_GETARG_TEXT_PP(0);
	text	   *tweak = PG_NARGS() > 1 ? PG_GETARG_TEXT_PP(1) : NULL;
	const char *s = VARDATA_ANY(in);
	int			len = VARSIZE_ANY_EXHDR(in);
	const snowflake::PublicIdKeys &keys = sf_publicid_require_keys();
	const snowflake::PublicIdKey *key;
	int			version;
	uint64_t	block;

	if (!snowflake::parse_public_id(s, (size_t) len, &version, &block))
	{
		int			shown = pg_mbcliplen(s, len, 40);

		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("invalid public ID: \"%.*s%s\"", shown, s, shown < len ? "..." : ""),
				 errdetail("A public ID is %d characters of 0-9 and a-z without i, l, o and u "
						   "(either case): a key version, then %d characters of which the "
						   "first is 0-9 or a-f.", snowflake::kPublicIdLength,
						   snowflake::kPublicIdLength - 1)));
	}
	key = snowflake::find_public_id_key(keys, version);
	if (key == NULL)
	{
		char		listed[snowflake::kPublicIdVersionsTextSize];

		(void) snowflake::format_public_id_versions(keys, ", ", listed, sizeof(listed));
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("public ID \"%.*s\" has key version %d, which snowflake.public_id_keys "
						"does not list", len, s, version),
				 errdetail("snowflake.public_id_keys lists key versions %s.", listed),
				 errhint("The key was retired, or this server's keys are not those of the "
						 "server that made the public ID: list that key again and reload to "
						 "decode it.")));
	}
	PG_RETURN_INT64((int64) sf_publicid_cipher(*key, tweak, block, false));
}
