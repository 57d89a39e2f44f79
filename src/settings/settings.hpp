/*-------------------------------------------------------------------------
 *
 * settings.hpp
 *		The generator's snowflake.* settings and the layout they make (see
 *		settings.cpp), and the helpers every subsystem uses to define its own.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_SETTINGS_HPP
#define SNOWFLAKE_SETTINGS_HPP

#include "core/core.hpp"
#include "settings/pg.hpp"

/* snowflake.generator */
typedef enum SfGenerator
{
	SF_GENERATOR_ATOMIC,		/* lock-free fast path, LWLock only for the slow path */
	SF_GENERATOR_LWLOCK			/* every call under the slot's LWLock (reference) */
} SfGenerator;

/* The layout, fixed at server start. */
extern snowflake::Layout sf_layout;

extern int	sf_shard_id;
extern int	sf_max_clock_lead;
extern int	sf_max_clock_wait;
extern int	sf_max_shards;
extern bool sf_allow_on_standby;
extern int	sf_generator;
extern char *sf_shard_ids;
extern int	sf_datacenter_id;
extern char *sf_import_shards;

/* Changes of the settings a call's right to a shard depends on, in this backend. */
extern uint32 sf_settings_generation;

void		sf_settings_define(void);
void		sf_settings_finish(void);
bool		sf_shard_allowed(int64 shard);
bool		sf_import_shard(int64 shard);
int			sf_configured_shards(snowflake::ShardRange *out, int capacity);
void		sf_datacenter_shards(int64 *lo, int64 *hi);

/* The clock now, as a layout offset (units since the epoch; < 0 before it). */
#define sf_now_offset() (sf_layout.offset_of(sf_wall_ms()))
/* snowflake.max_clock_lead in layout units. */
#define sf_lead_units() (sf_layout.units(sf_max_clock_lead))

/* Memory for a check hook's "extra" (defining a setting: settings/guc.hpp). */
void	   *sf_guc_malloc(size_t size);

#endif							/* SNOWFLAKE_SETTINGS_HPP */
