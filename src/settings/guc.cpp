/*-------------------------------------------------------------------------
 *
 * guc.cpp
 *		Every snowflake.* setting is defined here, through one helper per
 *		type, so that none can miss the rule at server start.
 *
 * A value from postgresql.conf that fails a custom setting's checks is only
 * warned about when the library defines the setting, and the default is used
 * instead.  For settings that shape every ID that would silently change the
 * layout or the shard, so at server start a refused value stops the server;
 * one rule for every snowflake.* setting, reloadable ones included (a reload
 * cannot stop a running server: PostgreSQL then logs the bad value and keeps
 * the old one; ALTER SYSTEM runs the check hooks before it writes).
 *
 * sf_define_setting() does the three steps of that rule in one place: it
 * reads the setting's raw text from the configuration before the setting
 * exists, defines it (PostgreSQL applies the text, or warns and keeps the
 * default), and registers the comparison of the two that
 * sf_require_settings_applied() makes.  Only called at server start (see
 * _PG_init), from settings.cpp, seqstart.cpp, registry.cpp and public_ids.cpp.
 *
 *-------------------------------------------------------------------------
 */
#include <cstring>

#include "settings/guc.hpp"

extern "C"
{
#include "postgres.h"
#include "utils/builtins.h"
}

typedef enum SfGucKind
{
	SF_GUC_INT,
	SF_GUC_BOOL,
	SF_GUC_STRING,
	SF_GUC_ENUM
} SfGucKind;

/* A setting defined whose raw text is still to be compared with its value. */
typedef struct SfPendingCheck
{
	const char *name;
	char	   *raw;			/* from the configuration; NULL: not set there */
	SfGucKind	kind;
	void	   *var;
	int			flags;
	const struct config_enum_entry *options;
	SfStringStart start;
} SfPendingCheck;

/* room for every setting the extension has, and then some */
#define SF_MAX_SETTINGS 48

static SfPendingCheck sf_pending[SF_MAX_SETTINGS];
static int	sf_pending_count = 0;

/* The raw text of a setting from the configuration, before it is defined. */
static char *
sf_raw_setting(const char *name)
{
	const char *raw = GetConfigOption(name, true, false);

	return raw ? pstrdup(raw) : NULL;
}

/* Reads a setting's raw text, before its definition; returns its check to fill in. */
static SfPendingCheck *
sf_pending_check(const char *name, SfGucKind kind, void *var, int flags)
{
	SfPendingCheck *check;

	if (sf_pending_count >= SF_MAX_SETTINGS)
		elog(ERROR, "too many snowflake settings: raise SF_MAX_SETTINGS");
	check = &sf_pending[sf_pending_count++];
	memset(check, 0, sizeof(*check));
	check->name = name;
	check->raw = sf_raw_setting(name);
	check->kind = kind;
	check->var = var;
	check->flags = flags;
	return check;
}

void
sf_define_setting(const char *name, const char *short_desc, const char *long_desc,
				  int *var, int boot, int min, int max, GucContext context, int flags,
				  GucIntCheckHook check, GucIntAssignHook assign, GucShowHook show)
{
	(void) sf_pending_check(name, SF_GUC_INT, var, flags);
	DefineCustomIntVariable(name, short_desc, long_desc, var, boot, min, max, context, flags,
							check, assign, show);
}

void
sf_define_setting(const char *name, const char *short_desc, const char *long_desc,
				  bool *var, bool boot, GucContext context, int flags,
				  GucBoolCheckHook check, GucBoolAssignHook assign, GucShowHook show)
{
	(void) sf_pending_check(name, SF_GUC_BOOL, var, flags);
	DefineCustomBoolVariable(name, short_desc, long_desc, var, boot, context, flags,
							 check, assign, show);
}

void
sf_define_setting(const char *name, const char *short_desc, const char *long_desc,
				  char **var, const char *boot, GucContext context, int flags,
				  GucStringCheckHook check, GucStringAssignHook assign, GucShowHook show,
				  const SfStringStart *start)
{
	SfPendingCheck *pending = sf_pending_check(name, SF_GUC_STRING, var, flags);

	if (start != NULL)
		pending->start = *start;
	DefineCustomStringVariable(name, short_desc, long_desc, var, boot, context, flags,
							   check, assign, show);
}

void
sf_define_setting(const char *name, const char *short_desc, const char *long_desc,
				  int *var, int boot, const struct config_enum_entry *options,
				  GucContext context, int flags, GucEnumCheckHook check,
				  GucEnumAssignHook assign, GucShowHook show)
{
	SfPendingCheck *pending = sf_pending_check(name, SF_GUC_ENUM, var, flags);

	pending->options = options;
	DefineCustomEnumVariable(name, short_desc, long_desc, var, boot, options, context, flags,
							 check, assign, show);
}

/* Whether the setting now holds what its raw text says (raw is set). */
static bool
sf_raw_applied(const SfPendingCheck *check)
{
	const char *raw = check->raw;

	switch (check->kind)
	{
		case SF_GUC_INT:
			{
				int			parsed;

				return parse_int(raw, &parsed, check->flags & GUC_UNIT, NULL) &&
					parsed == *(int *) check->var;
			}
		case SF_GUC_BOOL:
			{
				bool		parsed;

				return parse_bool(raw, &parsed) && parsed == *(bool *) check->var;
			}
		case SF_GUC_STRING:
			{
				const char *value = *(char **) check->var;

				if (check->start.applied != NULL)
					return check->start.applied(raw);
				return value != NULL && strcmp(raw, value) == 0;
			}
		case SF_GUC_ENUM:
			for (const struct config_enum_entry *e = check->options; e->name != NULL; e++)
				if (e->val == *(int *) check->var)
					return pg_strcasecmp(raw, e->name) == 0;
			return false;
	}
	return false;
}

void
sf_require_settings_applied(void)
{
	for (int i = 0; i < sf_pending_count; i++)
	{
		const SfPendingCheck *check = &sf_pending[i];

		if (check->raw == NULL || sf_raw_applied(check))
			continue;
		if (check->start.hidden_detail != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid value for parameter \"%s\"", check->name),
					 errdetail("%s", check->start.hidden_detail),
					 errhint("%s", check->start.hidden_hint)));
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid value for parameter \"%s\": \"%s\"", check->name, check->raw),
				 errhint("See the warning above for the allowed values; the snowflake "
						 "extension refuses to start rather than fall back to a default.")));
	}
	sf_pending_count = 0;
}
