/*-------------------------------------------------------------------------
 *
 * guc.hpp
 *		Defining a snowflake.* setting, once: sf_define_setting() reads the
 *		setting's raw text from the configuration, defines the GUC and
 *		registers the check that, at server start, stops the server when
 *		that text was refused (see guc.cpp).  The only caller of PostgreSQL's
 *		DefineCustom*Variable in the extension.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_GUC_HPP
#define SNOWFLAKE_GUC_HPP

#include "settings/pg.hpp"

extern "C"
{
#include "utils/guc.h"
}

/*
 * What a string setting needs beyond the plain rule, if anything: how to
 * tell that its raw text was applied (NULL: the variable holds that text),
 * and, for a setting whose value must never be printed (a password, keys),
 * the errdetail and errhint of the error that then names no value.
 */
typedef struct SfStringStart
{
	bool		(*applied) (const char *raw);
	const char *hidden_detail;
	const char *hidden_hint;
} SfStringStart;

void		sf_define_setting(const char *name, const char *short_desc, const char *long_desc,
							  int *var, int boot, int min, int max, GucContext context,
							  int flags = 0, GucIntCheckHook check = NULL,
							  GucIntAssignHook assign = NULL, GucShowHook show = NULL);
void		sf_define_setting(const char *name, const char *short_desc, const char *long_desc,
							  bool *var, bool boot, GucContext context,
							  int flags = 0, GucBoolCheckHook check = NULL,
							  GucBoolAssignHook assign = NULL, GucShowHook show = NULL);
void		sf_define_setting(const char *name, const char *short_desc, const char *long_desc,
							  char **var, const char *boot, GucContext context,
							  int flags = 0, GucStringCheckHook check = NULL,
							  GucStringAssignHook assign = NULL, GucShowHook show = NULL,
							  const SfStringStart *start = NULL);
/* an enum: options ends with a {NULL} entry */
void		sf_define_setting(const char *name, const char *short_desc, const char *long_desc,
							  int *var, int boot, const struct config_enum_entry *options,
							  GucContext context, int flags = 0, GucEnumCheckHook check = NULL,
							  GucEnumAssignHook assign = NULL, GucShowHook show = NULL);

/*
 * Runs the start-time checks registered since the last call, in the order the
 * settings were defined: the first setting whose raw text was refused stops
 * the server.  Each group of settings calls it once its settings are defined
 * (before checks that combine them); sf_settings_finish() calls it last, so
 * no setting's check is ever skipped.
 */
void		sf_require_settings_applied(void);

#endif							/* SNOWFLAKE_GUC_HPP */
